//! The taskstats exit source (`Exits::load_taskstats`, what a host without BPF gets) against
//! processes this test spawns: one that burns ~200 ms of CPU and exits 3, one killed by
//! SIGKILL, one with three threads burning CPU together until one calls exit_group. Each
//! must appear once (one exit per process, not per thread), with its exit code or signal,
//! its comm, and the CPU its parent's rusage says (within 10%); a zombie's exit gets the
//! identity of its live row. Root only; CI runs it with TASKSNAP_REQUIRE_PRIVILEGED=1, where a
//! skip is a failure.
//!
//! The children are this test binary run again with TASKSNAP_EXITS_TS_CHILD set: the test
//! `child_role` then plays the role and exits; without it, it does nothing. Only what the
//! test spawned is compared (by pid and parent), so other processes exiting on a busy host
//! change nothing.

use std::time::{Duration, Instant};
use tasksnap_loadgen::skip_unless_root;

use tasksnap_collect::testing::exits::{ExitSource, Exits, Options};
use tasksnap_model::{Backend, CmdlineMissing, Exit, ExitReason, Group, Groups, Query, Selector};

mod exits_common;

use exits_common::{exit_3_shown, exit_readings, exits_in, sigkill_shown, threads_shown, wait4};

exits_common::child_roles!("TASKSNAP_EXITS_TS_CHILD", "ts", 200_000_000, 300_000_000);

fn open() -> Option<Exits> {
    if !tasksnap_loadgen::root_or_skip("exit records (taskstats)") {
        return None;
    }
    let exits = Exits::load_taskstats(Options::default()).expect("register a taskstats listener");
    assert_eq!(exits.source(), ExitSource::Taskstats);
    Some(exits)
}

#[test]
fn a_process_that_exits_3_appears_once_with_its_code_comm_and_cpu() {
    let Some(mut exits) = open() else { return };
    let (e, ended) = exit_3_shown(&mut exits, ROLE, "ts");
    assert!(e.cmdline.is_empty());
    assert_eq!(e.cmdline_missing, Some(CmdlineMissing::NotCaptured));
    let truth_ns = ended.truth_ns;
    assert!(truth_ns >= 200_000_000, "the child ran {truth_ns} ns");
    // SAFETY: getuid cannot fail.
    assert_eq!(e.ruid, unsafe { libc::getuid() });
    assert!(!e.kernel_thread);
    // The harness runs the role on a thread of its own: two threads, both seen.
    assert!(e.threads_summed >= 2 && !e.threads_cut, "{e:#?}");
}

#[test]
fn a_killed_process_appears_with_its_signal() {
    let Some(mut exits) = open() else { return };
    let e = sigkill_shown(&mut exits, ROLE);
    assert_eq!(e.comm, b"ts-sleep");
}

#[test]
fn a_multithreaded_process_appears_once_with_the_whole_groups_cpu() {
    let Some(mut exits) = open() else { return };
    let e = threads_shown(&mut exits, ROLE, "ts", 300_000_000);
    // The harness's own thread, the role's thread and its two spinners at least.
    assert!(e.threads_summed >= 3, "{e:#?}");
    assert!(
        !e.threads_cut,
        "every thread exited while we listened: {e:#?}"
    );
}

#[test]
fn a_zombies_exit_takes_the_identity_of_its_live_row() {
    let Some(mut exits) = open() else { return };
    let child = spawn("cpu3");
    let pid = child.id() as i32;
    // Not reaped: the exit comes, and the zombie stays in /proc until wait4 below.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got: Vec<Exit> = Vec::new();
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    while got.is_empty() && Instant::now() < deadline {
        got.extend(
            exits
                .drain()
                .expect("drain")
                .exits
                .into_iter()
                .filter(|e| e.id.tgid == pid && e.ppid == me),
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(got.len(), 1, "{got:#?}");
    let mut host = tasksnap_collect::Host::open(Default::default());
    host.open_snapshots(Backend::Procfs, &Groups::default())
        .expect("procfs");
    let snap = host
        .snapshot(&Query::new(Selector::Pid(pid), Groups::of(&[Group::Base])))
        .expect("snapshot");
    let (status, _) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3);
    let mut tasks = snap.tasks;
    tasks.sort_by_key(|t| (t.id.tgid, t.id.tid));
    let zombie = tasks
        .iter()
        .find(|t| t.id.tgid == pid && t.id.tid == pid)
        .expect("the zombie's row")
        .id;
    let e = &mut got[0];
    // Derived from the receipt time: at most a tick (10 ms at 100 Hz) and the delivery
    // delay off the row's start.
    assert!(
        e.start_time_ns.abs_diff(zombie.start_time_ns) < 50_000_000,
        "derived start {} ns, the row's {} ns",
        e.start_time_ns,
        zombie.start_time_ns
    );
    tasksnap_collect::testing::exits::adopt_live_identities(std::slice::from_mut(e), &tasks);
    assert_eq!(e.id, zombie);
}

#[test]
fn a_reading_carries_taskstats_exits_with_the_identity_of_their_rows() {
    skip_unless_root!("exit records (taskstats)");
    let host = tasksnap_collect::Host::open(tasksnap_collect::HostOptions {
        exits_taskstats_only: true,
        ..Default::default()
    });
    let mut readings = exit_readings(&host);
    assert_eq!(readings.exits_source(), Some(ExitSource::Taskstats));
    let child = spawn("cpu3");
    let pid = child.id() as i32;
    // Not reaped until the exit came: the reading that carries it also has the zombie's
    // row (the drain comes before the walk), and both must be the same identity.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = None;
    while seen.is_none() && Instant::now() < deadline {
        let r = readings.read_mut().expect("reading");
        let ours = exits_in(r, pid);
        if !ours.is_empty() {
            let row = r
                .snapshot
                .tasks
                .iter()
                .find(|t| t.id.tgid == pid && t.id.tid == pid)
                .map(|t| t.id);
            seen = Some((ours, row));
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let (status, _) = wait4(child);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3);
    let (ours, row) = seen.expect("the exit came");
    assert_eq!(ours.len(), 1, "{ours:#?}");
    assert_eq!(ours[0].reason(), ExitReason::Code(3));
    assert_eq!(ours[0].comm, b"ts-cpu3");
    let row = row.expect("the zombie's row in the same reading");
    assert_eq!(
        ours[0].id, row,
        "the exit and the zombie row are one process"
    );
}
