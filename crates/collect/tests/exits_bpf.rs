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
use tasksnap_loadgen::skip_unless_root;

use tasksnap_collect::testing::host::{Host, HostOptions};
use tasksnap_model::{Exit, ExitReason};

mod exits_common;

use exits_common::{exit_3_shown, exit_readings, exits_in, sigkill_shown, threads_shown, wait4};

exits_common::child_roles!("TASKSNAP_EXITS_CHILD", "ex", 50_000_000, 200_000_000);

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
    let (e, _) = exit_3_shown(&mut exits, ROLE, "ex");
    let exe = std::env::current_exe().expect("test binary path");
    let args = args_of(&e);
    assert_eq!(args[0], exe.to_string_lossy(), "{args:?}");
    assert_eq!(
        &args[1..],
        ["--exact", "child_role", "--nocapture", "--test-threads=1"]
    );
    assert_eq!(e.cmdline_missing, None);
}

#[test]
fn a_killed_process_appears_with_its_signal() {
    let Some(mut exits) = open() else { return };
    let e = sigkill_shown(&mut exits, ROLE);
    assert_eq!(e.reason().shell_status(), 137);
}

#[test]
fn a_multithreaded_process_appears_once_with_the_whole_groups_cpu() {
    let Some(mut exits) = open() else { return };
    threads_shown(&mut exits, ROLE, "ex", 200_000_000);
}

#[test]
fn exits_a_full_buffer_cannot_take_are_counted() {
    skip_unless_root!("exit records (BPF)");
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
    skip_unless_root!("exit records (BPF)");
    let host = Host::open(HostOptions::default());
    let mut readings = exit_readings(&host);
    let child = spawn("cpu3");
    let pid = child.id() as i32;
    let (status, _) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3);
    // The record may take a moment to reach the ring buffer after wait4 returns.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = Vec::new();
    while found.is_empty() && Instant::now() < deadline {
        let r = readings.read_mut().expect("reading");
        assert_eq!(r.exits_missing, None);
        found = exits_in(r, pid);
        if found.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(found.len(), 1, "one exit for pid {pid}: {found:#?}");
    assert_eq!(found[0].reason(), ExitReason::Code(3));
    assert_eq!(found[0].comm, b"ex-cpu3");
    // Once: the next reading has only what exited since.
    let r = readings.read_mut().expect("reading");
    let again = exits_in(r, pid);
    assert!(again.is_empty(), "{again:#?}");
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
