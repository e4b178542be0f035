//! `tasksnap serve` counts every process that lived (issue 31): processes born and dead
//! between two collections add their CPU to their group's counter and count in
//! `tasksnap_group_exits_total` by how they ended. Needs root (exit records are BPF).

mod serve_common;

use std::time::{Duration, Instant};

use serve_common::{value, Server};
use tasksnap_loadgen::root_or_skip;

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
    if !root_or_skip("exit records (BPF)") {
        return;
    }
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
