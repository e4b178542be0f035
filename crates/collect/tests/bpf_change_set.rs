//! `Collector::changes` through the BPF change set (tracepoints mark the processes that may
//! have changed; each refresh reads those by pid): on a churning load this test starts
//! (forks, execs, exits, threads coming and going, names set by the processes themselves),
//! and sleepers that do not run, the rows a caller holds by applying the changed-only reads are
//! a whole pass's, row for row, once the load is stopped; and a change the set could not hold
//! makes the next read a whole pass, never a wrong row. Root only; CI runs it with
//! TASKSNAP_REQUIRE_PRIVILEGED=1.

mod changes_common;
use changes_common::{changes_query, spawn, Kids};

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tasksnap_collect::testing::bpf::BpfCollector;
use tasksnap_collect::testing::{Changes, Collector, LiveCollector};
use tasksnap_loadgen::{settled_sleep, skip_unless_root, wait_until, Load};
use tasksnap_model::{Task, TaskId};

/// The rows a caller holds, as the sampler keeps them: a whole pass replaces them, a
/// changed-only read replaces its rows and removes the gone.
#[derive(Default)]
struct Held(HashMap<TaskId, Task>);

impl Held {
    fn apply(&mut self, c: Changes) {
        if c.full {
            self.0.clear();
        }
        for id in &c.gone {
            self.0.remove(id);
        }
        for t in c.snapshot.tasks {
            self.0.insert(t.id, t);
        }
    }
}

/// The rows of `tasks` in the process groups `groups`, by identity.
fn of_groups<'a>(
    tasks: impl Iterator<Item = &'a Task>,
    groups: &[i32],
) -> BTreeMap<(i32, i32, u64), &'a Task> {
    tasks
        .filter(|t| t.base.as_ref().is_some_and(|b| groups.contains(&b.pgid)))
        .map(|t| ((t.id.tgid, t.id.tid, t.id.start_time_ns), t))
        .collect()
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill takes no pointers; the group is this test's load.
    unsafe { libc::kill(-pgid, sig) };
}

/// Every task of process group `pgid` is stopped (T) or a zombie, as /proc says.
fn group_still(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(st) = tasksnap_loadgen::read_stat(tid) else {
                continue;
            };
            if st.pgrp == pgid && st.state != 'T' && st.state != 'Z' && st.state != 't' {
                return false;
            }
        }
    }
    true
}

#[test]
fn change_driven_rows_are_a_whole_pass_on_a_churning_load() {
    skip_unless_root!("the BPF change set");
    let mut bpf = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    assert!(bpf.has_walk(), "no walk: {:?}", bpf.walk_problem);
    // On a small host a quarter of the tasks may run between two reads: the walk would take
    // those, and this test is about the reads by list.
    bpf.list_any_change_set();
    let mut load = Load::spawn(&[
        "--churn",
        "--procs-per-sec",
        "200",
        "--threads-per-sec",
        "300",
    ])
    .expect("spawn the churn (cargo build -p tasksnap-loadgen first)");
    // Sleepers, each in a group of its own: processes that do not run keep their rows.
    let mut sleepers = Kids(Vec::new());
    for _ in 0..3 {
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", "exec sleep 1000"])
            .stdin(std::process::Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        sleepers.0.push(cmd.spawn().expect("spawn a sleeper"));
    }
    let sleeper_pids: Vec<i32> = sleepers.0.iter().map(|c| c.id() as i32).collect();
    wait_until("the sleepers to settle", || {
        sleeper_pids.iter().all(|&p| settled_sleep(p))
    });
    let groups: Vec<i32> = std::iter::once(load.pgid())
        .chain(sleeper_pids.iter().copied())
        .collect();
    let q = changes_query();
    let mut held = Held::default();

    // Refreshes while the load churns.
    let mut listed_reads = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        let c = bpf.changes(&q).expect("changes");
        if !c.full && bpf.last_listed().is_some() {
            listed_reads += 1;
        }
        held.apply(c);
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(
        listed_reads > 0,
        "no refresh read by the change set: {:?} ({})",
        bpf.change_set_problem(),
        bpf.last_pass()
    );

    // The load stops (every task of it in T, or a zombie its stopped parent has not reaped)
    // and the sleepers sleep: nothing of the test's changes any more. A reaped task is marked
    // when the kernel frees it, an RCU grace period later (seconds with lazy RCU): until
    // then a zombie or an exiting task is read again at every call, and found gone.
    signal_group(load.pgid(), libc::SIGSTOP);
    wait_until("the load to stop", || group_still(load.pgid()));
    std::thread::sleep(Duration::from_millis(300));
    let mut last = bpf.changes(&q).expect("changes");
    if last.full {
        held.apply(last);
        last = bpf.changes(&q).expect("changes");
    }
    assert!(!last.full, "two whole passes in a row");
    assert!(
        bpf.last_listed().is_some(),
        "the last refresh walked: {}",
        bpf.last_pass()
    );
    held.apply(last);

    let mut other = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    let whole = other.snapshot(&q).expect("a whole pass");
    let a = of_groups(held.0.values(), &groups);
    let b = of_groups(whole.tasks.iter(), &groups);
    signal_group(load.pgid(), libc::SIGCONT);
    let _ = load.stop();
    let only_held: Vec<_> = a.keys().filter(|k| !b.contains_key(k)).collect();
    let only_whole: Vec<_> = b.keys().filter(|k| !a.contains_key(k)).collect();
    assert!(
        only_held.is_empty() && only_whole.is_empty(),
        "tasks held but not in the whole pass: {only_held:?}; in the whole pass but not \
         held: {only_whole:?}"
    );
    assert!(b.len() > 5, "only {} tasks of the test's own", b.len());
    for (k, t) in &a {
        let w = b[k];
        assert_eq!(t.base, w.base, "{k:?}");
        assert_eq!(t.cred, w.cred, "{k:?}");
        assert_eq!(t.stat, w.stat, "{k:?}");
        assert_eq!(t.sched, w.sched, "{k:?}");
    }
    for &p in &sleeper_pids {
        assert!(a.values().any(|t| t.id.tid == p), "sleeper {p} is not held");
    }
}

#[test]
fn a_change_the_set_cannot_hold_makes_the_next_read_a_whole_pass() {
    skip_unless_root!("the BPF change set");
    let mut bpf = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    assert!(bpf.has_walk(), "no walk: {:?}", bpf.walk_problem);
    // A bitmap for pids below 64: every change of a process above is lost.
    bpf.change_set_pid_max(64);
    let q = changes_query();
    let first = bpf.changes(&q).expect("first changes");
    assert!(first.full);
    assert_eq!(
        bpf.change_set_problem(),
        None,
        "the change set did not load"
    );
    let _busy = Kids(vec![spawn("while :; do :; done")]);
    std::thread::sleep(Duration::from_millis(100));
    let second = bpf.changes(&q).expect("changes");
    assert!(
        second.full,
        "a read after lost changes was not a whole pass: {}",
        bpf.last_pass()
    );
    // With room for every pid, the next read is by the set again.
    let mut ok = BpfCollector::load_fresh(false, true).expect("load the BPF programs");
    ok.list_any_change_set();
    assert!(ok.changes(&q).expect("first changes").full);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!ok.changes(&q).expect("changes").full);
    assert!(ok.last_listed().is_some(), "{}", ok.last_pass());
}
