//! Helpers of the `tasksnap serve` tests: starting an exporter on a free loopback port and
//! reading what it said, a plain HTTP/1.1 client (one request per connection) for scrapes
//! and for Prometheus's query API, and a Prometheus server (Debian's, unpacked by
//! `./x test`) scraping an exporter.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use super::TASKSNAP;

/// A running `tasksnap serve`, stopped (SIGKILL) when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    /// What it said before it started answering.
    pub started: String,
    pub stderr: BufReader<ChildStderr>,
}

impl Server {
    /// Starts `tasksnap serve --listen 127.0.0.1:0 ARGS` and waits for its start line (which
    /// comes after its first collection), taking the port from it.
    pub fn start(args: &[&str]) -> Server {
        Server::start_limited(args, None)
    }

    /// [`Server::start`] with its open-files limit (soft and hard) set to `nofile`.
    pub fn start_limited(args: &[&str], nofile: Option<u64>) -> Server {
        let mut cmd = Command::new(TASKSNAP);
        if let Some(n) = nofile {
            // SAFETY: setrlimit is async-signal-safe and touches only the child.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    let lim = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Server::spawn(
            cmd.arg("serve")
                // The exporter alone: a query socket at the shared default path would be
                // found by other tests' non-root ps (the service has tests of its own).
                .args(["--listen", "127.0.0.1:0", "--no-query-socket"])
                .args(args),
        )
    }

    /// Starts `cmd`, a `tasksnap serve` listening on a port of its choosing, and waits for
    /// its start line (which comes after its first collection), taking the port from it.
    pub fn spawn(cmd: &mut Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tasksnap serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read the start line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split("/metrics").next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no address in the start line: {line:?}")
            });
        Server {
            child,
            addr,
            started: line,
            stderr,
        }
    }

    /// `GET /metrics` in the Prometheus text format.
    pub fn scrape(&self) -> String {
        let r = get(self.addr, "/metrics", &[]);
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    /// Stops it with SIGTERM and returns its exit code and the rest of what it said.
    pub fn terminate(mut self) -> (Option<i32>, String) {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        let mut rest = String::new();
        let _ = self.stderr.read_to_string(&mut rest);
        (status.code(), rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

/// One request on a fresh connection (`Connection: close`), read to the end.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("send");
    read_reply(&mut s)
}

/// Reads a whole `Connection: close` response.
pub fn read_reply(s: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the response");
    parse_reply(&raw)
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers: head.to_string(),
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes a query parameter.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Sample lines (`name{labels} value`) whose name and labels start with `prefix`.
pub fn series<'a>(exposition: &'a str, prefix: &str) -> Vec<&'a str> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#') && l.starts_with(prefix))
        .collect()
}

/// The value of the one sample line whose name and labels are exactly `key`.
pub fn value(exposition: &str, key: &str) -> Option<f64> {
    exposition.lines().find_map(|l| {
        let (k, v) = l.rsplit_once(' ')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

/// The path in `var` (set by `./x test`), or None (the test is skipped) when unset, unless
/// CI forbids skipping.
pub fn tool(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(p) if std::path::Path::new(&p).exists() => Some(p),
        _ if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") => {
            panic!("{var} is not set to an existing file (./x test unpacks Debian's prometheus)")
        }
        _ => {
            eprintln!("SKIP: {var} not set (./x test unpacks Debian's prometheus)");
            None
        }
    }
}

/// A configuration file for `serve --config` (process-exporter's YAML), in a directory of
/// its own that goes when it drops.
pub struct Config {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Config {
    pub fn new(yaml: &str) -> Config {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("process-exporter.yml");
        std::fs::write(&path, yaml).expect("write the configuration");
        Config { _dir: dir, path }
    }

    /// Its path, for `--config`.
    pub fn path(&self) -> &str {
        self.path.to_str().expect("utf-8 path")
    }
}

/// A Prometheus server scraping one target every second, stopped when dropped.
pub struct Prometheus {
    child: Child,
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

impl Prometheus {
    /// Starts `binary` scraping `target` every second and waits until it is ready.
    pub fn start(binary: &str, target: std::net::SocketAddr) -> Prometheus {
        Prometheus::start_with_rules(binary, target, &[])
    }

    /// [`Prometheus::start`] with these rule files loaded, evaluated every second.
    pub fn start_with_rules(
        binary: &str,
        target: std::net::SocketAddr,
        rules: &[&std::path::Path],
    ) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        let rule_files: String = rules
            .iter()
            .map(|r| format!("  - '{}'\n", r.display()))
            .collect();
        let rule_files = if rules.is_empty() {
            String::new()
        } else {
            format!("rule_files:\n{rule_files}")
        };
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n\
                 \x20 evaluation_interval: 1s\n{rule_files}\
                 scrape_configs:\n  - job_name: tasksnap\n    static_configs:\n\
                 \x20     - targets: ['{target}']\n"
            ),
        )
        .expect("write the config");
        let port = free_port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            addr: format!("127.0.0.1:{port}").parse().expect("addr"),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if std::net::TcpStream::connect(p.addr).is_ok()
                && get(p.addr, "/-/ready", &[]).status == 200
            {
                break;
            }
            assert!(Instant::now() < deadline, "prometheus did not get ready");
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The one value of an instant query (`None`: an empty result).
    pub fn query(&self, q: &str) -> Option<f64> {
        self.query_at(q, None)
    }

    /// [`Prometheus::query`] evaluated at `time` (Unix seconds), so that several queries
    /// read the same scrapes.
    pub fn query_at(&self, q: &str, time: Option<f64>) -> Option<f64> {
        let at = time.map_or(String::new(), |t| format!("&time={t:.3}"));
        let v = self.api(&format!("/api/v1/query?query={}{at}", encode(q)));
        let result = v["data"]["result"].as_array().expect("a vector");
        assert!(result.len() <= 1, "{q}: more than one series: {v}");
        let s = result.first()?["value"][1].as_str()?.to_string();
        s.parse().ok()
    }

    /// The series of an instant query (any number of them).
    pub fn series(&self, q: &str) -> Vec<serde_json::Value> {
        let v = self.api(&format!("/api/v1/query?query={}", encode(q)));
        let result = v["data"]["result"].as_array();
        result
            .unwrap_or_else(|| panic!("{q}: not a vector: {v}"))
            .clone()
    }

    /// A successful answer of the HTTP API at `path`.
    pub fn api(&self, path: &str) -> serde_json::Value {
        let r = get(self.addr, path, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("json");
        assert_eq!(v["status"], "success", "{path}: {}", r.body);
        v
    }

    /// Waits until `q` has a value.
    pub fn wait_for(&self, q: &str) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(v) = self.query(q) {
                return v;
            }
            assert!(Instant::now() < deadline, "no value for {q}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// Seconds per second of `selector` (summed) over the last `window` seconds of collections.
pub fn per_second(selector: &str, window: u32) -> String {
    format!(
        "(sum({selector}) - sum({selector} offset {window}s)) / \
         scalar(tasksnap_last_collection_timestamp_seconds - \
         tasksnap_last_collection_timestamp_seconds offset {window}s)"
    )
}
