//! `tasksnap serve` scraped by a real Prometheus (Debian's, unpacked by `./x test`) every
//! second on 127.0.0.1, asked through its HTTP API about processes this test spawns: the
//! target is up; a CPU hog's group burns one CPU; a task stuck in D spends its time in
//! `disk`; a group's state seconds add up to its thread count; and `promtool check metrics`
//! finds nothing wrong with the exposition.
//!
//! Rates are taken between two of Prometheus's samples of the counter and of
//! `tasksnap_last_collection_timestamp_seconds`, so that they are exact over the collections'
//! own interval rather than extrapolated by `rate()` from scrape times.

mod serve_common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serve_common::{encode, get, Server};
use tasksnap_loadgen::{root_or_skip, Load};

fn tool(var: &str) -> Option<String> {
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

struct Prometheus {
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

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

impl Prometheus {
    fn start(binary: &str, target: std::net::SocketAddr) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n\
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
    fn query(&self, q: &str) -> Option<f64> {
        let r = get(
            self.addr,
            &format!("/api/v1/query?query={}", encode(q)),
            &[],
        );
        assert_eq!(r.status, 200, "{q}: {}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("json");
        assert_eq!(v["status"], "success", "{q}: {}", r.body);
        let result = &v["data"]["result"];
        let result = result.as_array().expect("a vector");
        assert!(result.len() <= 1, "{q}: more than one series: {}", r.body);
        let s = result.first()?["value"][1].as_str()?.to_string();
        s.parse().ok()
    }

    /// Waits until `q` has a value.
    fn wait_for(&self, q: &str) -> f64 {
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
fn per_second(selector: &str, window: u32) -> String {
    format!(
        "(sum({selector}) - sum({selector} offset {window}s)) / \
         scalar(tasksnap_last_collection_timestamp_seconds - \
         tasksnap_last_collection_timestamp_seconds offset {window}s)"
    )
}

#[test]
fn prometheus_scrapes_it_and_the_figures_hold() {
    if !root_or_skip("BPF state accounting, exact") {
        return;
    }
    let (Some(prometheus), Some(promtool)) =
        (tool("TASKSNAP_PROMETHEUS"), tool("TASKSNAP_PROMTOOL"))
    else {
        return;
    };
    let load = Load::spawn(&["--busy", "1", "--dstate", "--threads", "15"]).expect("load");
    // One group per process of this load, named with its pid: other tests' loads on the host
    // (the same comms) stay out of them. A process-exporter configuration does it, as a user
    // switching from process-exporter would.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("process-exporter.yml");
    std::fs::write(
        &config,
        "process_names:\n  - comm: [lg-busy, lg-dstate, lg-threads]\n    name: '{{.Comm}}-{{.PID}}'\n",
    )
    .expect("write the configuration");
    let server = Server::start(&[
        "--interval",
        "1",
        "--backend",
        "bpf",
        "--config",
        config.to_str().expect("utf-8"),
        "--no-children",
    ]);
    let busy = format!("lg-busy-{}", load.info.busy[0]);
    let dstate = format!("lg-dstate-{}", load.info.dstate[0]);
    let threads = format!(
        "lg-threads-{}",
        load.info.threads_pid.expect("threads process")
    );
    assert!(
        server.started.contains("thread states: bpf"),
        "{}",
        server.started
    );
    // The hog's true CPU clock, sampled while Prometheus scrapes: on a busy host it gets what
    // the other runnable tasks leave it, not a whole CPU.
    let hog_pid = load.info.busy[0];
    let hog_clock = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(Instant, u64)>::new()));
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (clock, on) = (hog_clock.clone(), sampling.clone());
        std::thread::spawn(move || {
            while on.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(ns) = tasksnap_loadgen::cpu_clock_ns(hog_pid) {
                    clock.lock().expect("clock").push((Instant::now(), ns));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let prom = Prometheus::start(&prometheus, server.addr);
    // Enough samples for a 10 s window.
    prom.wait_for("up{job=\"tasksnap\"} offset 12s");
    assert_eq!(prom.query("up{job=\"tasksnap\"}"), Some(1.0));
    assert_eq!(
        prom.query("min_over_time(up{job=\"tasksnap\"}[10s])"),
        Some(1.0),
        "a scrape failed in the last 10 s"
    );

    let hog = prom
        .query(&per_second(
            &format!("tasksnap_group_cpu_seconds_total{{group=\"{busy}\"}}"),
            10,
        ))
        .expect("the hog's CPU");
    // Its own clock over about the same 10 s (the exporter's window ends at its last
    // collection, up to a second ago).
    let truth = {
        let samples = hog_clock.lock().expect("clock");
        let (t1, c1) = *samples.last().expect("clock samples");
        let from = t1 - Duration::from_secs(11);
        let &(t0, c0) = samples
            .iter()
            .find(|(t, _)| *t >= from)
            .expect("clock samples");
        (c1 - c0) as f64 / 1e9 / (t1 - t0).as_secs_f64()
    };
    assert!(
        (hog - truth).abs() <= 0.1_f64.max(truth * 0.2),
        "the hog burned {hog} CPUs by the exporter, {truth:.3} by its own clock"
    );

    let disk = prom
        .query(&per_second(
            &format!("tasksnap_group_state_seconds_total{{group=\"{dstate}\",state=\"disk\"}}"),
            10,
        ))
        .expect("the D task's disk time");
    assert!(
        (0.9..=1.1).contains(&disk),
        "the D task spent {disk} s/s in D"
    );

    // The time by state of a group's threads adds up to its threads: 1 (lg-busy), 1
    // (lg-dstate), 16 (lg-threads: a main thread and 15 more).
    for (group, threads) in [(&busy, 1.0), (&dstate, 1.0), (&threads, 16.0)] {
        let n = prom
            .query(&format!("tasksnap_group_threads{{group=\"{group}\"}}"))
            .expect("threads");
        assert_eq!(n, threads, "{group}");
        let sum = prom
            .query(&per_second(
                &format!("tasksnap_group_state_seconds_total{{group=\"{group}\"}}"),
                10,
            ))
            .expect("state seconds");
        assert!(
            (sum - threads).abs() <= threads * 0.02,
            "{group}: its states add up to {sum} threads, not {threads}"
        );
    }

    // Prometheus asked for OpenMetrics; the plain text format passes promtool's linter.
    let text = server.scrape();
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    {
        use std::io::Write;
        let mut stdin = check.stdin.take().expect("stdin");
        stdin.write_all(text.as_bytes()).expect("feed promtool");
    }
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    sampler.join().expect("the clock sampler");
    drop(prom);
    drop(load);
    let (code, said) = server.terminate();
    assert_eq!(code, Some(0), "{said}");
}
