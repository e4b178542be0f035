//! `Collector::changes` over procfs, on processes this test starts: a first call has every
//! task; later calls have the processes that ran and not the ones asleep (the process CPU
//! clock did not move), a killed process is reported gone with the identity it had, a new
//! one comes, and a process re-parented when its parent went away comes with its new
//! parent though it did not run. No privileges needed.

mod changes_common;
use changes_common::{assert_gone, changes_query, spawn};

use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tasksnap_loadgen::{cpu_clock_ns, first_line, proc_text, settled_sleep, wait_until};

use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::{Changes, LiveCollector};
use tasksnap_model::{Group, Groups, Query, Selector, Task};

/// Children killed (and reaped) when the test ends, however it ends; and pids of
/// grandchildren, killed with SIGKILL.
struct Kids(Vec<Child>, Vec<i32>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        for &p in &self.1 {
            // SAFETY: kill on a process this test started (its pid cannot have been reused
            // while this test ran: nothing reaped it but its new parent, after this).
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
}

fn find(c: &Changes, pid: i32) -> Option<&Task> {
    c.snapshot
        .tasks
        .iter()
        .find(|t| t.id.tgid == pid && t.id.is_leader())
}

fn ppid(t: &Task) -> i32 {
    t.base.as_ref().map_or(0, |b| b.ppid)
}

#[test]
fn changes_follow_what_ran_what_went_away_and_who_was_re_parented() {
    let mut kids = Kids(
        vec![spawn("exec sleep 1000"), spawn("exec sleep 1000")],
        Vec::new(),
    );
    let sleepers: Vec<i32> = kids.0.iter().map(|c| c.id() as i32).collect();
    // A parent that leaves a sleeping child behind when its stdin closes.
    let mut parent = Command::new("/bin/sh")
        .args([
            "-c",
            "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; read x",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the parent");
    let line = first_line(parent.stdout.take().expect("stdout")).expect("the grandchild's pid");
    let orphan: i32 = line.trim().parse().expect("a pid");
    kids.1.push(orphan);
    let parent_pid = parent.id() as i32;
    // Everything asleep for good before the first call: the sleepers and the grandchild in
    // their nanosleep, the parent in its read.
    wait_until("the sleepers to settle", || {
        sleepers.iter().chain([&orphan]).all(|&p| settled_sleep(p))
            && tasksnap_loadgen::read_stat(parent_pid)
                .ok()
                .map(|st| st.state)
                == Some('S')
            && proc_text(parent_pid, "comm").as_deref() == Some("sh\n")
    });

    let q = changes_query();
    let mut procfs = ProcfsCollector::new().expect("procfs");
    assert!(procfs.next_changes_full(&q));
    let first = procfs.changes(&q).expect("first changes");
    assert!(first.full, "the first call has every task");
    assert!(!procfs.next_changes_full(&q));
    let first_ids: Vec<_> = sleepers
        .iter()
        .map(|&p| find(&first, p).expect("a sleeper in the first call").id)
        .collect();
    assert_eq!(
        ppid(find(&first, orphan).expect("the grandchild")),
        parent_pid
    );

    kids.0.push(spawn("while :; do :; done"));
    let busy = kids.0.last().map(|c| c.id() as i32).expect("busy child");
    std::thread::sleep(Duration::from_millis(200));
    let c1 = procfs.changes(&q).expect("changes");
    assert!(!c1.full);
    let b1 = find(&c1, busy).expect("a new process is in the changes");
    // Only what changed: not the sleepers. (The sizes of the two calls are not compared:
    // on a busy host more than half the tasks may have run, or be new, in between.)
    for &p in &sleepers {
        assert!(find(&c1, p).is_none(), "sleeper {p} did not run");
    }
    // It ran since that call (by its CPU clock; on a busy host it may wait long for a CPU),
    // so the next call has it.
    let ran = cpu_clock_ns(busy).expect("the CPU clock");
    wait_until("the busy process to run", || {
        cpu_clock_ns(busy).expect("the CPU clock") >= ran + 50_000_000
    });
    let c2 = procfs.changes(&q).expect("changes");
    let b2 = find(&c2, busy).expect("the busy process ran again");
    let cpu = |t: &Task| t.stat.as_ref().map_or(0, |s| s.utime_ns + s.stime_ns);
    assert!(cpu(b2) > cpu(b1), "{} <= {}", cpu(b2), cpu(b1));

    // A sleeper killed and reaped: gone, with the identity it had; the other is not.
    let mut victim = kids.0.remove(0);
    victim.kill().expect("kill a sleeper");
    victim.wait().expect("reap it");
    let c3 = procfs.changes(&q).expect("changes");
    assert!(!c3.full);
    assert_gone(&c3, first_ids[0], first_ids[1]);
    assert!(find(&c3, sleepers[0]).is_none());

    // The parent exits and is reaped: its child, asleep, is re-parented without running,
    // and comes with its new parent.
    drop(parent.stdin.take());
    parent.wait().expect("reap the parent");
    let c4 = procfs.changes(&q).expect("changes");
    assert!(!c4.full);
    let o = find(&c4, orphan).expect("the re-parented child is in the changes");
    assert_ne!(ppid(o), parent_pid);
    assert!(c4.gone.iter().any(|id| id.tgid == parent_pid));

    // Within a bounded number of calls, a whole read again.
    let full_again = (0..=tasksnap_collect::testing::CHANGES_FULL_EVERY)
        .any(|_| procfs.changes(&q).expect("changes").full);
    assert!(full_again, "no whole read within the period");
}

#[test]
fn a_fake_tree_gets_whole_snapshots() {
    // The clocks take the caller's pids: any other tree is read whole every time.
    let dir = std::env::temp_dir().join(format!("tasksnap-changes-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("1")).expect("fake tree");
    std::fs::write(
        dir.join("1/stat"),
        b"1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 1 1 0 0 20 0 1 0 5 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
    )
    .expect("stat");
    std::fs::create_dir_all(dir.join("1/task/1")).expect("task dir");
    std::fs::copy(dir.join("1/stat"), dir.join("1/task/1/stat")).expect("task stat");
    let mut c = ProcfsCollector::with_root(&dir).expect("fake procfs");
    let q = Query::new(Selector::AllThreads, Groups::of(&[Group::Base]));
    for _ in 0..3 {
        let ch = c.changes(&q).expect("changes");
        assert!(ch.full);
        assert_eq!(ch.snapshot.tasks.len(), 1);
        assert!(c.next_changes_full(&q));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
