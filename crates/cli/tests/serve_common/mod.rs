//! Helpers of the `tasksnap serve` tests: starting an exporter on a free loopback port and
//! reading what it said, and a plain HTTP/1.1 client (one request per connection) for
//! scrapes and for Prometheus's query API.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

pub const TASKSNAP: &str = env!("CARGO_BIN_EXE_tasksnap");

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
        let mut child = cmd
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
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
