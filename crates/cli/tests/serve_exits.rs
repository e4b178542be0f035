//! `tasksnap serve` counts every process that lived: processes born and dead
//! between two collections add their CPU to their group's counter and count in
//! `tasksnap_group_exits_total` by how they ended, as read from the exposition and as a
//! real Prometheus's increase over a window. Needs root (exit records are BPF).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tasksnap_loadgen::skip_unless_root;

use common::serve::{tool, value, Prometheus, Server};

/// Forks a child named `comm` that burns `cpu` of CPU time and exits 0, or kills itself
/// with SIGKILL when `kill`; returns its wait status and its rusage (user + system, ns).
fn burn(comm: &str, cpu: Duration, kill: bool) -> (i32, u64) {
    let mut name = [0u8; 16];
    name[..comm.len()].copy_from_slice(comm.as_bytes());
    let cpu_ns = cpu.as_nanos() as i64;
    // SAFETY: the child calls only async-signal-safe functions (prctl, clock_gettime, kill,
    // _exit) on memory it owns, so forking a multithreaded test process is sound; the parent
    // waits for the pid it forked.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            loop {
                libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
                if ts.tv_sec * 1_000_000_000 + ts.tv_nsec >= cpu_ns {
                    break;
                }
            }
            if kill {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            libc::_exit(0);
        }
        let mut status = 0;
        let mut ru: libc::rusage = std::mem::zeroed();
        let got = libc::wait4(pid, &mut status, 0, &mut ru);
        assert_eq!(got, pid, "wait4: {}", std::io::Error::last_os_error());
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        (status, ns(ru.ru_utime) + ns(ru.ru_stime))
    }
}

fn collections(e: &str) -> f64 {
    value(e, "tasksnap_collections_total").unwrap_or(0.0)
}

/// Scrapes until a collection taken after `min` collections is shown.
fn scrape_after(s: &Server, min: f64) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let e = s.scrape();
        if collections(&e) > min {
            return e;
        }
        assert!(Instant::now() < deadline, "no new collection: {e}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn processes_living_between_two_collections_count_in_their_group() {
    skip_unless_root!("exit records (BPF)");
    // A comm no other process has: the group is the test's own.
    let comm = format!("tsx31-{}", std::process::id() % 100_000_000);
    let group = format!("group=\"{comm}\"");
    let s = Server::start(&["--interval", "2"]);
    let e = s.scrape();
    assert!(e.contains("exits=\"bpf\""), "no exit source: {}", s.started);
    assert!(
        value(&e, "tasksnap_exits_dropped_total").is_some(),
        "no dropped counter: {e}"
    );
    // Right after a collection: the children live and die before the next (mostly; one
    // caught alive by a collection is counted alive, then to its exit).
    let e = scrape_after(&s, collections(&e));
    let before = collections(&e);
    let mut truth_ns = 0;
    let mut codes = 0;
    let mut killed = 0;
    for i in 0..23 {
        let (status, ns) = burn(&comm, Duration::from_millis(50), i >= 20);
        truth_ns += ns;
        if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL {
            killed += 1;
        } else if libc::WIFEXITED(status) {
            codes += 1;
        }
    }
    assert_eq!((codes, killed), (20, 3));
    // Their records are in the ring buffer before wait4 returns (sent at exit); the second
    // collection from now has surely drained them.
    let reaped = collections(&s.scrape());
    let e = scrape_after(&s, reaped + 1.0);
    assert!(collections(&e) > before);
    let cpu = |mode: &str| {
        value(
            &e,
            &format!("tasksnap_group_cpu_seconds_total{{{group},mode=\"{mode}\"}}"),
        )
        .unwrap_or(0.0)
    };
    let counted = cpu("user") + cpu("system");
    let truth = truth_ns as f64 / 1e9;
    assert!(
        (counted - truth).abs() <= truth * 0.10,
        "group CPU {counted:.3} s, the children's rusage {truth:.3} s: {e}"
    );
    let exits = |reason: &str| {
        value(
            &e,
            &format!("tasksnap_group_exits_total{{{group},reason=\"{reason}\"}}"),
        )
    };
    let running = value(
        &e,
        &format!("tasksnap_group_state_seconds_total{{{group},state=\"running\"}}"),
    )
    .unwrap_or(0.0);
    // Their threads' running time too, where it is exact (the BPF state source keeps an
    // exited thread's totals; the exit's group is its threads').
    if e.contains("state_seconds=\"exact\"") {
        assert!(
            (running - truth).abs() <= truth * 0.10,
            "the group's running seconds {running:.3}, the children's rusage {truth:.3} s"
        );
    }
    assert_eq!(exits("exit"), Some(20.0), "{e}");
    assert_eq!(exits("signal"), Some(3.0), "{e}");
    assert_eq!(exits("core"), None, "{e}");
    // Counters stay: a later collection shows the same (the group has no process left,
    // and keeps its series while it had exits).
    let later = scrape_after(&s, collections(&e));
    let again = value(
        &later,
        &format!("tasksnap_group_exits_total{{{group},reason=\"exit\"}}"),
    );
    assert!(again.is_none_or(|v| v == 20.0), "{later}");
}

/// Regression: children that rename themselves right after their fork were now and then (28 of
/// 89,024 in a storm) counted in their parent's group: a child read alive before its rename
/// and exited before the next collection could keep that row (the walk handed it over and
/// said it gone in one call, when it died between the walk and the roll after it), and the
/// exit went by the row's name. Every exit goes by the name it exited with: the workers'
/// group counts their own exits only.
#[test]
fn exits_are_grouped_by_the_name_they_exit_with() {
    skip_unless_root!("exit records (BPF)");
    let loadgen = tasksnap_loadgen::find_binary()
        .expect("tasksnap-loadgen not built: cargo build -p tasksnap-loadgen");
    let id = std::process::id() % 100_000;
    let (workers, children) = (format!("tsxw{id}"), format!("tsxc{id}"));
    let s = Server::start(&["--interval", "0.2"]);
    let e = s.scrape();
    assert!(e.contains("exits=\"bpf\""), "no exit source: {}", s.started);
    let out = std::process::Command::new(loadgen)
        .args(["exit-storm", "3000", "4", &workers, &children])
        .output()
        .expect("run the storm");
    common::ok(&out, "the exit storm");
    // The workers have exited and been reaped: two collections from now have their records.
    let e = scrape_after(&s, collections(&s.scrape()) + 2.0);
    let exits = |group: &str| {
        value(
            &e,
            &format!("tasksnap_group_exits_total{{group=\"{group}\",reason=\"exit\"}}"),
        )
        .unwrap_or(0.0)
    };
    // SAFETY: sysconf has no memory effects; the storm has one worker per online CPU.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64;
    assert!(exits(&children) > 1000.0, "{e}");
    assert_eq!(
        exits(&workers),
        cpus,
        "children counted as their parent: {e}"
    );
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A stream of short processes (30 ms of CPU each, one after another) named `comm`, each
/// with when it was reaped (Unix seconds) and its rusage (ns), until stopped.
struct Stream {
    stop: Arc<AtomicBool>,
    reaped: Arc<Mutex<Vec<(f64, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stream {
    fn start(comm: &str) -> Stream {
        let stop = Arc::new(AtomicBool::new(false));
        let reaped = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, reaped, comm) = (stop.clone(), reaped.clone(), comm.to_string());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (_, ns) = burn(&comm, Duration::from_millis(30), false);
                    reaped.lock().expect("reaped").push((unix_now(), ns));
                }
            })
        };
        Stream {
            stop,
            reaped,
            thread: Some(thread),
        }
    }

    /// Stops it; what was reaped.
    fn finish(mut self) -> Vec<(f64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("the forking thread");
        }
        std::mem::take(&mut *self.reaped.lock().expect("reaped"))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn prometheus_sees_a_groups_short_lived_processes_in_its_increase() {
    skip_unless_root!("exit records (BPF)");
    let Some(prometheus) = tool("TASKSNAP_PROMETHEUS") else {
        return;
    };
    let comm = format!("tsxp-{}", std::process::id() % 100_000_000);
    let group = format!("group=\"{comm}\"");
    let server = Server::start(&["--interval", "1"]);
    let prom = Prometheus::start(&prometheus, server.addr);
    // Processes of 30 ms each, forked one after another for the whole test: nearly all are
    // born and dead between two collections.
    let stream = Stream::start(&comm);
    let cpu = format!("tasksnap_group_cpu_seconds_total{{{group}}}");
    let exits = format!("tasksnap_group_exits_total{{{group}}}");
    let stamp = "tasksnap_last_collection_timestamp_seconds";
    // The group's series for 12 s: a 10 s window within them.
    prom.wait_for(&format!("sum({cpu} offset 12s)"));
    // A second ago, so that every scrape before it is in.
    let at = Some(unix_now() - 1.0);
    let q = |expr: &str| {
        prom.query_at(expr, at)
            .unwrap_or_else(|| panic!("no value: {expr}"))
    };
    let counted = q(&format!("sum({cpu}) - sum({cpu} offset 10s)"));
    let exited = q(&format!("sum({exits}) - sum({exits} offset 10s)"));
    let (t0, t1) = (q(&format!("{stamp} offset 10s")), q(stamp));
    let reaped = stream.finish();
    // The truth: the processes reaped between the two collections (an exit is drained by the
    // first collection after it, and wait4 returns after the exit: at most one process at
    // each end of the window is on the other side).
    let inside: Vec<u64> = reaped
        .iter()
        .filter(|(t, _)| *t > t0 && *t <= t1)
        .map(|(_, ns)| *ns)
        .collect();
    let truth = inside.iter().sum::<u64>() as f64 / 1e9;
    assert!(
        inside.len() >= 20,
        "only {} processes in the window",
        inside.len()
    );
    assert!(
        (counted - truth).abs() <= truth * 0.10,
        "Prometheus's increase of the group's CPU {counted:.3} s, their rusage {truth:.3} s \
         ({} processes, collections {t0:.3} to {t1:.3})",
        inside.len()
    );
    assert!(
        (exited - inside.len() as f64).abs() <= 2.0,
        "{exited} exits counted, {} processes reaped in the window",
        inside.len()
    );
    drop(prom);
    let (code, said) = server.terminate();
    assert_eq!(code, Some(0), "{said}");
}
