//! The exit records (`Host::open_exits`) against processes this test spawns: one that burns
//! ~50 ms of CPU and exits 3, one killed by SIGKILL, one with three threads burning CPU
//! together. Each must appear once (not once per thread), with its exit code or signal, its
//! comm and command line, and the CPU its parent's wait4 rusage says (within 10%). Root
//! only; CI runs it with TASKSNAP_REQUIRE_PRIVILEGED=1, where a skip is a failure. And a
//! ring buffer of one page, not drained while 30 children exit: what it could not take is
//! counted.
//!
//! The children are this test binary run again with TASKSNAP_EXITS_CHILD set: the test
//! `child_role` then plays the role and exits; without it, it does nothing. Only what the
//! test spawned is compared (by pid and parent), so other processes exiting on a busy host
//! change nothing.

use std::time::{Duration, Instant};

use tasksnap_collect::testing::host::{Host, HostOptions};
use tasksnap_model::{Exit, ExitReason};

mod exits_common;

use exits_common::{exits_of, wait4, within_10_percent};

const ROLE: &str = "TASKSNAP_EXITS_CHILD";

/// The children's roles (run only in a child, with the variable set).
#[test]
fn child_role() {
    if let Ok(role) = std::env::var(ROLE) {
        exits_common::play(&role, "ex", 50_000_000, 200_000_000);
    }
}

/// Starts this binary in `role`.
fn spawn(role: &str) -> std::process::Child {
    exits_common::spawn(ROLE, role)
}

fn open() -> Option<tasksnap_collect::testing::exits::Exits> {
    if !tasksnap_loadgen::root_or_skip("exit records (BPF)") {
        return None;
    }
    Some(
        Host::open(HostOptions::default())
            .open_exits()
            .expect("load the exit program"),
    )
}

fn args_of(e: &Exit) -> Vec<String> {
    e.args()
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn a_process_that_exits_3_appears_once_with_its_code_comm_cmdline_and_cpu() {
    let Some(mut exits) = open() else { return };
    let child = spawn("cpu3");
    let pid = child.id() as i32;
    let (status, truth_ns) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3);
    let recs = exits_of(&mut exits, pid);
    assert_eq!(recs.len(), 1, "one record for pid {pid}: {recs:#?}");
    let e = &recs[0];
    assert_eq!(e.reason(), ExitReason::Code(3));
    assert_eq!(e.wait_status as i32, status);
    assert_eq!(e.comm, b"ex-cpu3");
    let exe = std::env::current_exe().expect("test binary path");
    let args = args_of(e);
    assert_eq!(args[0], exe.to_string_lossy(), "{args:?}");
    assert_eq!(
        &args[1..],
        ["--exact", "child_role", "--nocapture", "--test-threads=1"]
    );
    assert_eq!(e.cmdline_missing, None);
    assert!(e.exit_time_ns > e.start_time_ns);
    assert_eq!(e.utime_ns + e.stime_ns, e.cpu_ns);
    within_10_percent("exit 3", e.cpu_ns, truth_ns);
    assert!(e.peak_rss_bytes > 0 && e.minflt > 0, "{e:#?}");
}

#[test]
fn a_killed_process_appears_with_its_signal() {
    let Some(mut exits) = open() else { return };
    let child = spawn("sleep");
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill on our own child's process group (it leads it).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let (status, _) = wait4(child);
    assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
    let recs = exits_of(&mut exits, pid);
    assert_eq!(recs.len(), 1, "one record for pid {pid}: {recs:#?}");
    assert_eq!(
        recs[0].reason(),
        ExitReason::Signal {
            signal: 9,
            core_dumped: false
        }
    );
    assert_eq!(recs[0].reason().shell_status(), 137);
}

#[test]
fn a_multithreaded_process_appears_once_with_the_whole_groups_cpu() {
    let Some(mut exits) = open() else { return };
    let child = spawn("threads");
    let pid = child.id() as i32;
    let (status, truth_ns) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 5);
    let recs = exits_of(&mut exits, pid);
    assert_eq!(
        recs.len(),
        1,
        "one record for pid {pid}, not one per thread: {recs:#?}"
    );
    let e = &recs[0];
    assert_eq!(e.reason(), ExitReason::Code(5));
    assert_eq!(e.comm, b"ex-threads");
    assert!(truth_ns >= 200_000_000, "the group ran {truth_ns} ns");
    within_10_percent("three threads", e.cpu_ns, truth_ns);
}

#[test]
fn exits_a_full_buffer_cannot_take_are_counted() {
    if !tasksnap_loadgen::root_or_skip("exit records (BPF)") {
        return;
    }
    // One page of ring buffer (five records) and room for five exits waiting for a drain:
    // nothing is drained while 30 children exit, so most of their records are dropped (by
    // the kernel, its buffer full before the reader thread woke, or by the reader, its five
    // places taken); every one of them is either drained or counted (the count also takes
    // other processes' exits on a busy host: it can only be larger).
    let mut exits =
        tasksnap_collect::testing::exits::Exits::load(tasksnap_collect::testing::exits::Options {
            ring_buffer_bytes: 4096,
            max_pending_exits: 5,
            ..tasksnap_collect::testing::exits::Options::default()
        })
        .expect("load the exit program");
    let pids: Vec<i32> = (0..30)
        .map(|_| {
            let child = spawn("true");
            let pid = child.id() as i32;
            wait4(child);
            pid
        })
        .collect();
    let batch = exits.drain().expect("drain");
    let of_ours = |b: &tasksnap_model::ExitBatch| {
        b.exits.iter().filter(|e| pids.contains(&e.id.tgid)).count() as u64
    };
    let mut ours = of_ours(&batch);
    let mut dropped = batch.dropped;
    assert!(ours <= 5, "{ours} exits kept where five fit");
    // A record leaves the kernel at its process's last switch, which can come after its
    // parent reaped it (wait4 returns at the zombie): the last ones may be the next drain's.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ours + dropped < 30 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let b = exits.drain().expect("drain");
        ours += of_ours(&b);
        dropped += b.dropped;
    }
    assert!(
        ours + dropped >= 30,
        "{ours} drained + {dropped} dropped < 30 exited"
    );
}

#[test]
fn a_reading_carries_the_processes_that_exited_since_the_previous_one() {
    if !tasksnap_loadgen::root_or_skip("exit records (BPF)") {
        return;
    }
    let host = Host::open(HostOptions::default());
    let mut readings = host
        .open_readings(tasksnap_collect::testing::host::ReadingOptions {
            states: false,
            exits: true,
            ..Default::default()
        })
        .expect("open the readings");
    assert_eq!(readings.exits_missing(), None);
    readings.read_mut().expect("first reading");
    let child = spawn("cpu3");
    let pid = child.id() as i32;
    let (status, _) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3);
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let ours = |r: &tasksnap_model::Reading| -> Vec<Exit> {
        r.exits
            .iter()
            .filter(|e| e.id.tgid == pid && e.ppid == me)
            .cloned()
            .collect()
    };
    // The record may take a moment to reach the ring buffer after wait4 returns.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = Vec::new();
    while found.is_empty() && Instant::now() < deadline {
        let r = readings.read_mut().expect("reading");
        assert_eq!(r.exits_missing, None);
        found = ours(r);
        if found.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(found.len(), 1, "one exit for pid {pid}: {found:#?}");
    assert_eq!(found[0].reason(), ExitReason::Code(3));
    assert_eq!(found[0].comm, b"ex-cpu3");
    // Once: the next reading has only what exited since.
    let r = readings.read_mut().expect("reading");
    assert!(ours(r).is_empty(), "{:#?}", ours(r));
}

#[test]
fn a_reading_without_the_exit_source_says_why() {
    let host = Host::open(HostOptions::default());
    let mut readings = host
        .open_readings(tasksnap_collect::testing::host::ReadingOptions {
            states: false,
            ..Default::default()
        })
        .expect("open the readings");
    let r = readings.read_mut().expect("reading");
    assert!(r.exits.is_empty());
    assert_eq!(
        r.exits_missing.as_deref(),
        Some("exit records not asked for")
    );
}
