//! `tasksnap serve` scraped by a real Prometheus (Debian's, unpacked by `./x test`) every
//! second on 127.0.0.1, asked through its HTTP API about processes this test spawns: the
//! target is up; a CPU hog's group burns one CPU; a task stuck in D spends its time in
//! `disk`; a group's state seconds add up to its thread count; and `promtool check metrics`
//! finds nothing wrong with the exposition.
//!
//! Rates are taken between two of Prometheus's samples of the counter and of
//! `tasksnap_last_collection_timestamp_seconds`, so that they are exact over the collections'
//! own interval rather than extrapolated by `rate()` from scrape times.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{per_second, tool, Prometheus, Server};
use tasksnap_loadgen::{root_or_skip, Load};

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
        // Per second of the collections' timestamps, which are the task walk's: the thread
        // states are read just after it, and on a host whose CPUs are all busy that gap moves
        // by a few hundred ms across the window (2.9% was seen under the churn suite).
        assert!(
            (sum - threads).abs() <= threads * 0.05,
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
