//! End-to-end tests of `--wakers K`: exactly the K processes the report names wake on
//! their timer (each one's voluntary context switches grow by about one per period), the
//! other `--procs` processes stay asleep (theirs do not move), the wakers are among the
//! processes the load holds, and contradictory arguments are refused.
//!
//! Only the load's own processes are compared: the machine is busy with other work. The
//! lower bound is loose on purpose (a saturated host delays wake-ups); the upper bound is
//! not: a waker never wakes more often than its period, whatever the host does.

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tasksnap_loadgen::{eventually, proc_text, read_stat, Load};

const BIN: &str = env!("CARGO_BIN_EXE_tasksnap-loadgen");

/// `voluntary_ctxt_switches` of `/proc/PID/status`: one per sleep the process went into.
fn voluntary_switches(pid: i32) -> u64 {
    proc_text(pid, "status")
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("voluntary_ctxt_switches of {pid}"))
}

#[test]
fn exactly_the_wakers_wake_once_per_period() {
    const PERIOD_MS: u64 = 20;
    let load = Load::spawn_with_binary(
        BIN,
        &[
            "--procs",
            "12",
            "--wakers",
            "4",
            "--wake-period-ms",
            "20",
            "--list-pids",
        ],
    )
    .expect("spawn wakers");
    let info = &load.info;
    assert_eq!(info.procs_count, 12);
    assert_eq!(info.procs.len(), 12);
    assert_eq!(info.wakers.len(), 4);
    assert_eq!(info.wake_period_ms, PERIOD_MS);
    let wakers: HashSet<i32> = info.wakers.iter().copied().collect();
    assert!(wakers.iter().all(|p| info.procs.contains(p)), "{info:?}");
    let sleepers: Vec<i32> = info
        .procs
        .iter()
        .copied()
        .filter(|p| !wakers.contains(p))
        .collect();
    assert_eq!(sleepers.len(), 8);
    for &p in &info.wakers {
        assert_eq!(read_stat(p).expect("waker").comm, b"lg-waker");
    }
    // A sleeper has reported its pid before it reaches pause(): wait until each sleeps.
    for &p in &sleepers {
        assert_eq!(read_stat(p).expect("sleeper").comm, b"lg-proc");
        assert!(
            eventually(Duration::from_secs(10), || proc_text(p, "wchan")
                .is_some_and(|w| w.contains("pause"))
                || proc_text(p, "syscall").is_some_and(
                    |s| s.split(' ').next() == Some(&libc::SYS_pause.to_string())
                )),
            "sleeper {p} never reached pause(): wchan {:?}",
            proc_text(p, "wchan")
        );
    }

    let before: Vec<(i32, u64)> = info
        .procs
        .iter()
        .map(|&p| (p, voluntary_switches(p)))
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let after: Vec<(i32, u64)> = info
        .procs
        .iter()
        .map(|&p| (p, voluntary_switches(p)))
        .collect();
    let elapsed = start.elapsed();
    let periods = elapsed.as_millis() as u64 / PERIOD_MS;
    for ((p, b), (_, a)) in before.iter().zip(&after) {
        let woke = a - b;
        if wakers.contains(p) {
            // About 100 in 2 s. A wake-up happens after each period's sleep: at most one
            // more than the whole periods in the window (the reads are not on a boundary).
            assert!(
                woke <= periods + 1,
                "waker {p} woke {woke} times in {elapsed:?} ({periods} periods of {PERIOD_MS} ms)"
            );
            assert!(
                woke * 5 >= periods * 2,
                "waker {p} woke only {woke} times in {elapsed:?} ({periods} periods)"
            );
        } else {
            assert_eq!(woke, 0, "sleeper {p} woke {woke} times in {elapsed:?}");
        }
    }
}

#[test]
fn wakers_must_be_among_the_procs_and_are_not_exec_children() {
    let err = Load::spawn_with_binary(BIN, &["--procs", "2", "--wakers", "3"])
        .expect_err("more wakers than processes must fail");
    assert!(format!("{err:#}").contains("without a report"), "{err:#}");
    let out = Command::new(BIN)
        .args([
            "--procs",
            "2",
            "--wakers",
            "1",
            "--exec-children",
            "--seconds",
            "0",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--exec-children"));
    let out = Command::new(BIN)
        .args(["--procs", "2", "--wakers", "1", "--wake-period-ms", "0"])
        .args(["--seconds", "0"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "a period of 0 ms is refused");
}
