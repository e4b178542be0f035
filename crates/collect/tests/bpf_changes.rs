//! `Collector::changes` through the BPF walk, on processes this test starts: a first call
//! has every task; later calls have the processes that ran (a busy one, one that was just
//! stopped, until its CPU's clock moves on) and not the ones asleep; a killed process is reported gone with the identity
//! it had; the values of a changed process agree with /proc. Root only; CI runs it with
//! TASKSNAP_REQUIRE_PRIVILEGED=1.

mod changes_common;
use changes_common::{assert_gone, changes_query, spawn, Kids};
use tasksnap_loadgen::skip_unless_root;

use std::collections::HashSet;
use std::time::Duration;
use tasksnap_loadgen::{cpu_clock_ns, settled_sleep, wait_until};

use tasksnap_collect::testing::bpf::BpfCollector;
use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::{Changes, Collector, LiveCollector};
use tasksnap_model::{Group, Groups, PassKind, Query, Selector, Task, TaskId};

fn find(c: &Changes, pid: u32) -> Option<&Task> {
    c.snapshot
        .tasks
        .iter()
        .find(|t| t.id.tgid == pid as i32 && t.id.is_leader())
}

/// The identities of every task /proc lists now (the threads `q` asks for).
fn alive(q: &Query) -> HashSet<TaskId> {
    let mut procfs = ProcfsCollector::new().expect("procfs");
    let ids = Query {
        groups: Groups::of(&[Group::Stat]),
        ..q.clone()
    };
    procfs
        .snapshot(&ids)
        .expect("procfs snapshot")
        .tasks
        .iter()
        .map(|t| t.id)
        .collect()
}

fn cpu_ns(t: &Task) -> u64 {
    t.stat.as_ref().map_or(0, |s| s.utime_ns + s.stime_ns)
}

#[test]
fn changed_only_walks_follow_what_ran_and_what_went_away() {
    skip_unless_root!("BPF changed-only walks");
    let mut bpf = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    assert!(
        bpf.has_walk(),
        "the walk did not load: {:?}",
        bpf.walk_problem
    );
    // `exec sleep`: the process is the sleep itself, asleep from the start.
    let mut kids = Kids(vec![
        spawn("exec sleep 1000"),
        spawn("exec sleep 1000"),
        spawn("exec sleep 1000"),
    ]);
    let sleepers: Vec<u32> = kids.0.iter().map(|c| c.id()).collect();
    wait_until("the sleepers to settle", || {
        sleepers.iter().all(|&p| settled_sleep(p as i32))
    });
    let q = changes_query();

    let first = bpf.changes(&q).expect("first changes");
    assert!(first.full, "the first call has every task");
    let first_ids: Vec<_> = sleepers
        .iter()
        .map(|&p| find(&first, p).expect("a sleeper in the first call").id)
        .collect();

    kids.0.push(spawn("while :; do :; done"));
    let busy = kids.0.last().map(|c| c.id()).expect("busy child");
    std::thread::sleep(Duration::from_millis(200));
    let c1 = bpf.changes(&q).expect("changes");
    assert!(!c1.full, "{}", bpf.last_pass());
    assert!(
        bpf.report().kind == PassKind::ChangedOnlyWalk,
        "{}",
        bpf.last_pass()
    );
    let b1 = find(&c1, busy).expect("a new, busy process is in the changes");
    // The sleepers did not run. (A CPU that went idle right after one of them slept keeps
    // a stale clock until it wakes, and the walk writes that one meanwhile: more, never
    // less. So: within a few seconds, a call without any of them.)
    let asleep = |c: &Changes| sleepers.iter().all(|&p| find(c, p).is_none());
    let quiet = asleep(&c1)
        || (0..30).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            asleep(&bpf.changes(&q).expect("changes"))
        });
    // That call had none of the sleepers: only what changed, not everything. (The sizes of
    // the two calls are not compared: on a busy host, with tasks coming and going, more of
    // them may be new or have run than there were at first.)
    assert!(
        quiet,
        "sleepers that did not run are still changes after 3 s"
    );

    // It ran since the last call (by its CPU clock; on a busy host it may wait long for a
    // CPU), so the next call has it.
    let ran = cpu_clock_ns(busy as i32).expect("the CPU clock");
    wait_until("the busy process to run", || {
        cpu_clock_ns(busy as i32).expect("the CPU clock") >= ran + 50_000_000
    });
    let c2 = bpf.changes(&q).expect("changes");
    let b2 = find(&c2, busy).expect("the busy process ran again");
    assert!(cpu_ns(b2) > cpu_ns(b1), "{} <= {}", cpu_ns(b2), cpu_ns(b1));
    // Its values are /proc's (CPU time moves: within 100 ms).
    let mut procfs = ProcfsCollector::new().expect("procfs");
    let p = procfs
        .snapshot(&Query::new(Selector::Pid(busy as i32), q.groups))
        .expect("procfs snapshot");
    let pt = p.tasks.first().expect("busy in /proc");
    assert_eq!(pt.id, b2.id);
    assert_eq!(
        pt.base.as_ref().map(|b| b.ppid),
        b2.base.as_ref().map(|b| b.ppid)
    );
    assert!(cpu_ns(pt).abs_diff(cpu_ns(b2)) < 100_000_000);

    // Stopped: it ran to stop, so it is a change once, in state T; then it is not.
    // SAFETY: kill on a child of this test.
    unsafe { libc::kill(busy as i32, libc::SIGSTOP) };
    // It stops once it gets a CPU to take the signal.
    wait_until("the busy process to stop", || {
        tasksnap_loadgen::read_stat(busy as i32)
            .ok()
            .map(|st| st.state)
            == Some('T')
    });
    let c3 = bpf.changes(&q).expect("changes");
    let b3 = find(&c3, busy).expect("the process that stopped");
    assert_eq!(b3.base.as_ref().map(|b| b.state.letter()), Some(b'T'));
    // It does not run any more, so it stops being a change once its CPU's task clock has
    // moved past its last run. An idle CPU's clock is not updated while it sleeps (NOHZ),
    // so until that CPU does something the walk keeps writing the process: more than it
    // must, never less. Give the CPU a few seconds.
    let quiet = (0..30).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        find(&bpf.changes(&q).expect("changes"), busy).is_none()
    });
    assert!(quiet, "a stopped process is still a change after 3 s");
    // SAFETY: as above.
    unsafe { libc::kill(busy as i32, libc::SIGCONT) };

    // A sleeper killed and reaped: gone, with the identity it had.
    let mut victim = kids.0.remove(0);
    victim.kill().expect("kill a sleeper");
    victim.wait().expect("reap it");
    let mut c5 = bpf.changes(&q).expect("changes");
    if c5.full {
        // The periodic whole pass came now: it replaces everything, the victim not in it.
        assert!(find(&c5, sleepers[0]).is_none());
        c5 = bpf.changes(&q).expect("changes");
        assert!(c5.full || !c5.gone.contains(&first_ids[1]));
        return;
    }
    assert_gone(&c5, first_ids[0], first_ids[1]);

    // Within a bounded number of calls, a whole pass again (for what changes in a task that
    // does not run).
    let full_again = (0..=tasksnap_collect::testing::CHANGES_FULL_EVERY)
        .any(|_| bpf.changes(&q).expect("changes").full);
    assert!(full_again, "no whole pass within the period");
}

#[test]
fn a_whole_pass_handed_over_task_by_task_is_the_snapshot() {
    skip_unless_root!("BPF whole pass into a sink");
    let kids = Kids(vec![spawn("exec sleep 1000"), spawn("exec sleep 1000")]);
    // Their values are compared between the two passes: each done with its exec.
    wait_until("the sleepers to settle", || {
        kids.0.iter().all(|c| settled_sleep(c.id() as i32))
    });
    let q = changes_query();
    let mut live = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    let before = alive(&q);
    let mut streamed = Vec::new();
    let summary = live
        .changes_into(&q, &mut |t| streamed.push(t))
        .expect("changes_into");
    assert!(summary.full);
    assert_eq!(summary.tasks, streamed.len());
    assert!(
        live.report().kind == PassKind::Walk,
        "a whole walk: {}",
        live.last_pass()
    );
    let mut other = BpfCollector::load_fresh(false, false).expect("load the BPF programs");
    let snap = other.snapshot(&q).expect("snapshot");
    let after = alive(&q);
    // The same tasks: every task alive before and after both passes (same identity: tgid,
    // tid and start time, so a reused pid is another task) is in both, and neither has a
    // task the other lacks among those. Tasks that came or went meanwhile are not compared:
    // on a busy host hundreds may (the two passes are taken at different moments).
    let ids = |v: &[Task]| -> HashSet<TaskId> { v.iter().map(|t| t.id).collect() };
    let (a, b) = (ids(&streamed), ids(&snap.tasks));
    assert_eq!(a.len(), streamed.len(), "a task streamed twice");
    let stable: HashSet<TaskId> = before.intersection(&after).copied().collect();
    let not_streamed: Vec<_> = stable.difference(&a).collect();
    let not_in_snapshot: Vec<_> = stable.difference(&b).collect();
    assert!(
        not_streamed.is_empty() && not_in_snapshot.is_empty(),
        "of {} tasks alive throughout, {not_streamed:?} were not streamed and \
         {not_in_snapshot:?} not in the snapshot",
        stable.len()
    );
    assert!(
        stable.len() > 10,
        "only {} tasks alive throughout",
        stable.len()
    );
    for k in &kids.0 {
        let pid = k.id() as i32;
        let s = streamed.iter().find(|t| t.id.tid == pid).expect("streamed");
        let o = snap
            .tasks
            .iter()
            .find(|t| t.id.tid == pid)
            .expect("in the snapshot");
        assert_eq!(s.id, o.id);
        assert_eq!(s.base, o.base);
        assert_eq!(s.cred, o.cred);
        assert_eq!(s.stat, o.stat);
    }
}

/// Regression: a process the changed-only walk wrote and that exited before the roll that
/// followed (the walk's count said some task went away) was both handed over and said gone
/// in one call; a caller that applies the call (the sampler: the rows replaced, the gone
/// ones removed) kept its row (read right after its fork, with its parent's name) until the
/// next whole pass, and the exporter grouped its exit by that row's name. Under a fork storm,
/// no call has a task in both, and once the storm is over no child of it is left held.
#[test]
fn a_process_exiting_between_the_walk_and_the_roll_leaves_no_ghost_row() {
    skip_unless_root!("BPF changed-only walks");
    let mut bpf = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    assert!(bpf.has_walk(), "no walk: {:?}", bpf.walk_problem);
    let q = changes_query();
    // Children that live a moment each: a shell running /bin/true in a loop.
    let storm = Kids(vec![spawn("while :; do /bin/true; done")]);
    let shell = storm.0[0].id() as i32;
    let mut held: std::collections::HashMap<TaskId, Task> = Default::default();
    let mut apply = |c: Changes| -> usize {
        if c.full {
            held.clear();
        }
        for id in &c.gone {
            held.remove(id);
        }
        let both = c
            .snapshot
            .tasks
            .iter()
            .filter(|t| c.gone.contains(&t.id))
            .count();
        for t in c.snapshot.tasks {
            held.insert(t.id, t);
        }
        both
    };
    // From a whole pass, changed-only walks (fewer than the period's) while the storm runs
    // (a whole pass, should one come early, starts the rows over: apply() clears them).
    while !{
        let c = bpf.changes(&q).expect("changes");
        let full = c.full;
        apply(c);
        full
    } {}
    let mut both = 0;
    for _ in 0..tasksnap_collect::testing::CHANGES_FULL_EVERY - 4 {
        std::thread::sleep(Duration::from_millis(20));
        let c = bpf.changes(&q).expect("changes");
        both += apply(c);
    }
    // SAFETY: kill takes no pointers; the shell is this test's child.
    unsafe { libc::kill(shell, libc::SIGKILL) };
    drop(storm);
    // The storm's children, as their rows say (a child is its shell's when read), that no
    // longer exist.
    let children = |held: &std::collections::HashMap<TaskId, Task>| -> Vec<TaskId> {
        held.values()
            .filter(|t| t.base.as_ref().is_some_and(|b| b.ppid == shell))
            .filter(|t| std::fs::metadata(format!("/proc/{}", t.id.tid)).is_err())
            .map(|t| t.id)
            .collect()
    };
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(50));
        let c = bpf.changes(&q).expect("changes");
        both += apply(c);
    }
    let ghosts = children(&held);
    assert!(
        both == 0 && ghosts.is_empty(),
        "{both} tasks both handed over and gone in one call; rows of exited children still \
         held: {ghosts:?}"
    );
}
