//! `tasksnap serve` scraped by a real Prometheus (Debian's, unpacked by `./x test`) every
//! second on 127.0.0.1, asked through its HTTP API about processes this test spawns: the
//! target is up; a CPU hog's group burns one CPU; a task stuck in D spends its time in
//! `disk`; a group's state seconds add up to its thread count; and `promtool check metrics`
//! finds nothing wrong with the exposition. And the cgroup series: a spinner in a CPU cgroup
//! with a 20% quota that the test makes (and removes) shows its cgroup throttled and using
//! about its quota, and `--cgroup-depth 0` shows no cgroup series.
//!
//! Rates are taken between two of Prometheus's samples of the counter and of
//! `tasksnap_last_collection_timestamp_seconds`, so that they are exact over the collections'
//! own interval rather than extrapolated by `rate()` from scrape times.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tasksnap_loadgen::cpu_cgroup::{self, SideGroup, Spinner};
use tasksnap_loadgen::skip_unless_root;

use common::serve::{per_second, tool, Config, Prometheus, Server};
use common::text;
use tasksnap_loadgen::Load;

#[test]
fn prometheus_scrapes_it_and_the_figures_hold() {
    skip_unless_root!("BPF state accounting, exact");
    let (Some(prometheus), Some(promtool)) =
        (tool("TASKSNAP_PROMETHEUS"), tool("TASKSNAP_PROMTOOL"))
    else {
        return;
    };
    let load = Load::spawn(&["--busy", "1", "--dstate", "--threads", "15"]).expect("load");
    let groups = Groups::of(&load);
    // One group per process of this load, named with its pid: other tests' loads on the host
    // (the same comms) stay out of them. A process-exporter configuration does it, as a user
    // switching from process-exporter would.
    let config = Config::new(
        "process_names:\n  - comm: [lg-busy, lg-dstate, lg-threads]\n    name: '{{.Comm}}-{{.PID}}'\n",
    );
    let server = Server::start(&[
        "--interval",
        "1",
        "--backend",
        "bpf",
        "--config",
        config.path(),
        "--no-children",
    ]);
    assert!(
        server.started.contains("thread states: bpf"),
        "{}",
        server.started
    );
    // The hog's true CPU clock, sampled while Prometheus scrapes: on a busy host it gets what
    // the other runnable tasks leave it, not a whole CPU.
    let hog_clock = CpuClock::sample(load.info.busy[0]);
    let prom = Prometheus::start(&prometheus, server.addr);
    // Enough samples for a 10 s window.
    prom.wait_for("up{job=\"tasksnap\"} offset 12s");
    assert_eq!(prom.query("up{job=\"tasksnap\"}"), Some(1.0));
    assert_eq!(
        prom.query("min_over_time(up{job=\"tasksnap\"}[10s])"),
        Some(1.0),
        "a scrape failed in the last 10 s"
    );
    the_hog_burns_what_its_clock_says(&prom, &groups.busy, &hog_clock);
    let disk = over_10_s(
        &prom,
        "tasksnap_group_state_seconds_total",
        &groups.dstate,
        ",state=\"disk\"",
    )
    .expect("the D task's disk time");
    assert!(
        (0.9..=1.1).contains(&disk),
        "the D task spent {disk} s/s in D"
    );
    states_add_up_to_the_threads(&prom, &groups);
    // Prometheus asked for OpenMetrics; the plain text format passes promtool's linter.
    promtool_finds_nothing_wrong(&promtool, &server.scrape());
    hog_clock.stop();
    drop(prom);
    drop(load);
    let (code, said) = server.terminate();
    assert_eq!(code, Some(0), "{said}");
}

/// The groups the configuration makes of the load's processes: `COMM-PID`.
struct Groups {
    busy: String,
    dstate: String,
    threads: String,
}

impl Groups {
    fn of(load: &Load) -> Groups {
        Groups {
            busy: format!("lg-busy-{}", load.info.busy[0]),
            dstate: format!("lg-dstate-{}", load.info.dstate[0]),
            threads: format!(
                "lg-threads-{}",
                load.info.threads_pid.expect("threads process")
            ),
        }
    }
}

/// Per second of `family{group="GROUP"MORE}` (summed) over the last 10 s of collections.
fn over_10_s(prom: &Prometheus, family: &str, group: &str, more: &str) -> Option<f64> {
    prom.query(&per_second(
        &format!("{family}{{group=\"{group}\"{more}}}"),
        10,
    ))
}

/// A process's CPU clock, sampled every 200 ms by a thread of its own until stopped.
struct CpuClock {
    samples: Arc<Mutex<Vec<(Instant, u64)>>>,
    on: Arc<AtomicBool>,
    sampler: JoinHandle<()>,
}

impl CpuClock {
    fn sample(pid: i32) -> CpuClock {
        let samples = Arc::new(Mutex::new(Vec::<(Instant, u64)>::new()));
        let on = Arc::new(AtomicBool::new(true));
        let sampler = {
            let (clock, on) = (samples.clone(), on.clone());
            std::thread::spawn(move || {
                while on.load(Ordering::Relaxed) {
                    if let Some(ns) = tasksnap_loadgen::cpu_clock_ns(pid) {
                        clock.lock().expect("clock").push((Instant::now(), ns));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        };
        CpuClock {
            samples,
            on,
            sampler,
        }
    }

    /// CPUs it burned over about the last `seconds`.
    fn cpus_over_last(&self, seconds: u64) -> f64 {
        let samples = self.samples.lock().expect("clock");
        let (t1, c1) = *samples.last().expect("clock samples");
        let from = t1 - Duration::from_secs(seconds);
        let &(t0, c0) = samples
            .iter()
            .find(|(t, _)| *t >= from)
            .expect("clock samples");
        (c1 - c0) as f64 / 1e9 / (t1 - t0).as_secs_f64()
    }

    fn stop(self) {
        self.on.store(false, Ordering::Relaxed);
        self.sampler.join().expect("the clock sampler");
    }
}

/// The CPUs the hog's group burned by the exporter are what its own clock says, over about
/// the same 10 s (the exporter's window ends at its last collection, up to a second ago).
fn the_hog_burns_what_its_clock_says(prom: &Prometheus, busy: &str, clock: &CpuClock) {
    let hog = over_10_s(prom, "tasksnap_group_cpu_seconds_total", busy, "").expect("the hog's CPU");
    let truth = clock.cpus_over_last(11);
    assert!(
        (hog - truth).abs() <= 0.1_f64.max(truth * 0.2),
        "the hog burned {hog} CPUs by the exporter, {truth:.3} by its own clock"
    );
}

/// The time by state of a group's threads adds up to its threads: 1 (lg-busy), 1
/// (lg-dstate), 16 (lg-threads: a main thread and 15 more).
fn states_add_up_to_the_threads(prom: &Prometheus, groups: &Groups) {
    for (group, threads) in [
        (&groups.busy, 1.0),
        (&groups.dstate, 1.0),
        (&groups.threads, 16.0),
    ] {
        let n = prom
            .query(&format!("tasksnap_group_threads{{group=\"{group}\"}}"))
            .expect("threads");
        assert_eq!(n, threads, "{group}");
        let sum = over_10_s(prom, "tasksnap_group_state_seconds_total", group, "")
            .expect("state seconds");
        // Per second of the collections' timestamps, which are the task walk's: the thread
        // states are read just after it, and on a host whose CPUs are all busy that gap moves
        // by a few hundred ms across the window (2.9% was seen under the churn suite).
        assert!(
            (sum - threads).abs() <= threads * 0.05,
            "{group}: its states add up to {sum} threads, not {threads}"
        );
    }
}

/// `promtool check metrics` says nothing of `exposition`.
fn promtool_finds_nothing_wrong(promtool: &str, exposition: &str) {
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("feed promtool");
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// A spinner allowed 20% of a CPU in a cgroup this test makes: Prometheus, scraping the
/// exporter at its default `--cgroup-depth`, sees the cgroup's throttled time grow and its CPU
/// use at about the quota (it may get less on a busy host, never much more), and its quota and
/// period as set; an exporter started with `--cgroup-depth 0`, scraped by a second Prometheus,
/// has no cgroup series there (the first has them).
#[test]
fn a_throttled_cgroup_as_prometheus_sees_it() {
    if !cpu_cgroup::root_with_cpu_cgroups("CPU cgroups") {
        return;
    }
    let Some(prometheus) = tool("TASKSNAP_PROMETHEUS") else {
        return;
    };
    let spinner = Spinner::start("serve20", Some(20), None);
    let group = spinner.group().expect("group").to_path_buf();
    let acct = SideGroup::beside(&group, "cpuacct", "cpuacct.usage");
    acct.join(spinner.pid());
    // Declared after `acct`, dropped before it: the spinner is killed, then the groups go.
    let spinner = spinner;
    let name = format!("/{}", group.file_name().expect("name").to_string_lossy());
    let server = Server::start(&["--interval", "1", "--backend", "procfs"]);
    let prom = Prometheus::start(&prometheus, server.addr);
    // And one with the cgroup families off, scraped by a Prometheus of its own meanwhile.
    let off = Server::start(&[
        "--interval",
        "1",
        "--backend",
        "procfs",
        "--cgroup-depth",
        "0",
    ]);
    let prom_off = Prometheus::start(&prometheus, off.addr);
    let cg = format!("{{cgroup=\"{name}\"}}");
    let throttled = format!("tasksnap_cgroup_cpu_throttled_seconds_total{cg}");
    prom.wait_for(&format!("{throttled} offset 11s"));
    let grew = prom
        .query(&per_second(&throttled, 10))
        .expect("throttled seconds per second");
    assert!(grew > 0.05, "throttled {grew} s/s");
    let usage = format!("tasksnap_cgroup_cpu_usage_seconds_total{cg}");
    let cpus = prom
        .query(&per_second(&usage, 10))
        .expect("CPU seconds per second");
    assert!((0.1..=0.25).contains(&cpus), "{name} used {cpus} CPUs");
    let quota = prom.query(&format!("tasksnap_cgroup_cpu_quota_seconds{cg}"));
    let period = prom.query(&format!("tasksnap_cgroup_cpu_period_seconds{cg}"));
    assert_eq!((quota, period), (Some(0.02), Some(0.1)));
    // Off: no cgroup series and no count of the folded, the rest as before.
    let any_cgroup = "count({__name__=~\"tasksnap_cgroups?_.+\"})";
    assert!(prom.query(any_cgroup).is_some_and(|n| n > 4.0));
    prom_off.wait_for("tasksnap_processes offset 2s");
    assert_eq!(prom_off.query(any_cgroup), None);
    drop(prom_off);
    drop(prom);
    let (code, said) = server.terminate();
    assert_eq!(code, Some(0), "{said}");
    drop(spinner);
}
