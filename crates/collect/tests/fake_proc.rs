//! The procfs collector against fake /proc trees built from real kernel lines: odd comms,
//! kernel threads, zombies, truncated and missing files, unreadable files.

use std::fs;
use std::path::Path;

use tasksnap_collect::testing::procfs::{ProcfsCollector, Units};
use tasksnap_collect::testing::Collector;
use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, TaskState};

const UNITS: Units = Units {
    clock_ticks_per_s: 100,
    page_size_bytes: 4096,
    boot_time_unix_s: 0,
    boot: tasksnap_collect::BootClock::with_offset(0),
};

/// Writes one task directory with the given files.
fn task(root: &Path, rel: &str, files: &[(&str, &[u8])]) {
    let dir = root.join(rel);
    fs::create_dir_all(&dir).expect("mkdir");
    for (name, content) in files {
        fs::write(dir.join(name), content).expect("write");
    }
}

const STAT_BASH: &[u8] = b"4032 (bash) S 4020 4032 4032 34816 4070 4194560 1466 5066 0 3 2 1 9 6 20 0 1 0 2418 8986624 1280 18446744073709551615 94318090862592 94318091771469 140729152453424 0 0 0 65536 3686404 1266761467 1 0 0 17 1 0 0 0 0 0 94318091998448 94318092045980 94318124355584 140729152456591 140729152456596 140729152456596 140729152458734 0\n";
const STATUS_BASH: &[u8] = b"Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4032\nNgid:\t0\nPid:\t4032\nPPid:\t4020\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t256\nGroups:\t24 1000 \nVmPeak:\t    8840 kB\nVmSize:\t    8776 kB\nVmLck:\t       0 kB\nVmRSS:\t    5120 kB\nVmSwap:\t       0 kB\nThreads:\t1\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n";
const STAT_KTHREADD: &[u8] = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
const STAT_ZOMBIE: &[u8] = b"5000 (((a) b)) Z 4032 4032 4032 34816 4070 4227084 58 0 0 0 0 0 0 0 20 0 1 0 3001 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 9\n";
const STAT_MT: &[u8] = b"6000 (worker) S 1 6000 6000 0 -1 4194560 10 0 0 0 50 20 0 0 20 0 2 0 5000 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
const STAT_MT_T1: &[u8] = b"6001 (worker:io) D 1 6000 6000 0 -1 4194368 3 0 0 0 30 10 0 0 20 0 2 0 5001 100000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0\n";

fn build(root: &Path) {
    fs::write(root.join("stat"), b"cpu  1 2 3 4\nbtime 1763784000\n").expect("stat");
    task(
        root,
        "4032",
        &[
            ("stat", STAT_BASH),
            ("status", STATUS_BASH),
            ("statm", b"2194 1280 1024 227 0 258 0\n"),
            ("cmdline", b"-bash\0"),
            ("schedstat", b"5134790 211005 22\n"),
            ("wchan", b"do_wait"),
        ],
    );
    task(root, "4032/task/4032", &[("stat", STAT_BASH)]);
    task(root, "2", &[("stat", STAT_KTHREADD), ("cmdline", b"")]);
    task(root, "5000", &[("stat", STAT_ZOMBIE), ("cmdline", b"")]);
    task(
        root,
        "6000",
        &[
            ("stat", STAT_MT),
            ("cmdline", b"/usr/bin/worker\0--flag\0a b\0"),
        ],
    );
    task(root, "6000/task/6000", &[("stat", STAT_MT)]);
    task(root, "6000/task/6001", &[("stat", STAT_MT_T1)]);
    // Not tasks: must be ignored.
    fs::create_dir_all(root.join("self")).expect("mkdir");
    fs::create_dir_all(root.join("sys")).expect("mkdir");
    fs::write(root.join("uptime"), b"100.00 150.00\n").expect("uptime");
}

/// A fresh scratch directory holding the fake tree of [`build`].
fn fake_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path());
    dir
}

fn collector(root: &Path) -> ProcfsCollector {
    ProcfsCollector::with_root(root)
        .expect("open fake root")
        .with_units(UNITS)
}

/// One snapshot of the fake tree at `root`.
fn snapshot(root: &Path, selector: Selector, groups: Groups) -> Snapshot {
    snapshot_with(&mut collector(root), selector, groups)
}

/// One snapshot from the collector `c`, kept for the test's next ones.
fn snapshot_with(c: &mut ProcfsCollector, selector: Selector, groups: Groups) -> Snapshot {
    c.snapshot(&Query::new(selector, groups)).expect("snapshot")
}

fn groups(f: impl FnOnce(&mut Groups)) -> Groups {
    let mut g = Groups::default();
    f(&mut g);
    g
}

#[test]
fn lists_processes_with_base_stat_and_cmdline() {
    let dir = fake_tree();
    let mut c = collector(dir.path());
    let snap = snapshot_with(
        &mut c,
        Selector::AllProcesses,
        groups(|g| {
            g.insert(Group::Base);
            g.insert(Group::Stat);
            g.insert(Group::Cmdline);
        }),
    );
    let pids: Vec<i32> = snap.tasks.iter().map(|t| t.id.tgid).collect();
    assert_eq!(pids, vec![2, 4032, 5000, 6000]);
    assert_eq!(snap.boot_time_unix_s, 1_763_784_000);
    assert_eq!(snap.stats.vanished, 0);

    let bash = &snap.tasks[1];
    let b = bash.base.as_ref().expect("base");
    assert_eq!(&b.comm[..], b"bash");
    assert_eq!(b.tty_nr, 34816);
    assert!(!b.kthread);
    let s = bash.stat.as_ref().expect("stat");
    assert_eq!(s.utime_ns, 20_000_000, "2 ticks at 100 Hz");
    assert_eq!(s.start_time_ns, 24_180_000_000);
    assert_eq!(bash.id.start_time_ns, 24_180_000_000);
    assert_eq!(s.rss_bytes, 1280 * 4096);
    assert_eq!(bash.cmdline.as_deref(), Some(&b"-bash\0"[..]));

    let kthreadd = &snap.tasks[0];
    assert!(kthreadd.base.as_ref().expect("base").kthread);
    assert_eq!(kthreadd.cmdline.as_deref(), Some(&b""[..]));

    let zombie = &snap.tasks[2];
    let zb = zombie.base.as_ref().expect("base");
    assert_eq!(zb.state, TaskState::Zombie);
    assert_eq!(&zb.comm[..], b"((a) b)");
    assert_eq!(zombie.cmdline.as_deref(), Some(&b""[..]));

    assert_eq!(
        snap.tasks[3].cmdline.as_deref(),
        Some(&b"/usr/bin/worker\0--flag\0a b\0"[..])
    );
}

#[test]
fn reads_only_the_files_the_groups_need() {
    let dir = fake_tree();
    // Remove everything but stat from 6000: a base-only query must not notice.
    fs::remove_file(dir.path().join("6000/cmdline")).expect("rm");
    let snap = snapshot(
        dir.path(),
        Selector::AllProcesses,
        groups(|g| g.insert(Group::Base)),
    );
    assert_eq!(snap.tasks.len(), 4);
    assert!(snap
        .tasks
        .iter()
        .all(|t| t.cmdline.is_none() && t.cred.is_none()));
    assert_eq!(snap.stats.vanished, 0);
}

#[test]
fn full_credentials_memory_and_sched_come_from_status_statm_schedstat() {
    let dir = fake_tree();
    let snap = snapshot(
        dir.path(),
        Selector::Pid(4032),
        groups(|g| {
            g.insert(Group::CredFull);
            g.insert(Group::Mem);
            g.insert(Group::MemStatus);
            g.insert(Group::Sched);
            g.insert(Group::SchedSwitches);
            g.insert(Group::Wchan);
        }),
    );
    assert_eq!(snap.tasks.len(), 1);
    let t = &snap.tasks[0];
    let cred = t.cred.as_ref().expect("cred");
    assert_eq!((cred.ruid, cred.euid, cred.fsgid), (1000, 1000, 1000));
    assert_eq!(cred.groups.as_deref(), Some(&[24, 1000][..]));
    assert!(!cred.effective_only);
    let mem = t.mem.as_ref().expect("mem");
    assert_eq!(mem.vsize_bytes, 2194 * 4096);
    assert_eq!(mem.shared_bytes, 1024 * 4096);
    assert_eq!(mem.locked_bytes, Some(0));
    let sched = t.sched.as_ref().expect("sched");
    assert_eq!(sched.on_cpu_ns, 5_134_790);
    assert_eq!(sched.run_delay_ns, 211_005);
    assert_eq!(sched.voluntary_switches, Some(120));
    assert_eq!(t.wchan.as_deref(), Some("do_wait"));
}

#[test]
fn effective_ids_come_from_the_owner_of_the_task_directory() {
    let dir = fake_tree();
    let snap = snapshot(
        dir.path(),
        Selector::Pid(4032),
        groups(|g| g.insert(Group::CredEffective)),
    );
    let cred = snap.tasks[0].cred.as_ref().expect("cred");
    // SAFETY: geteuid/getegid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    assert_eq!((cred.euid, cred.egid), (uid, gid));
    assert!(cred.effective_only);
}

#[test]
fn threads_are_read_from_the_task_directory() {
    let dir = fake_tree();
    let mut c = collector(dir.path());
    let snap = snapshot_with(
        &mut c,
        Selector::ThreadsOf(6000),
        groups(|g| {
            g.insert(Group::Base);
            g.insert(Group::Cmdline);
        }),
    );
    let ids: Vec<(i32, i32)> = snap.tasks.iter().map(|t| (t.id.tgid, t.id.tid)).collect();
    assert_eq!(ids, vec![(6000, 6000), (6000, 6001)]);
    let t1 = snap.tasks[1].base.as_ref().expect("base");
    assert_eq!(t1.state, TaskState::DiskSleep);
    assert_eq!(&t1.comm[..], b"worker:io");
    // Both threads share the process's command line.
    assert_eq!(snap.tasks[0].cmdline, snap.tasks[1].cmdline);

    let all = snapshot_with(
        &mut c,
        Selector::AllThreads,
        groups(|g| g.insert(Group::Base)),
    );
    let ids: Vec<(i32, i32)> = all.tasks.iter().map(|t| (t.id.tgid, t.id.tid)).collect();
    // 2 and 5000 have no task/ directory in the fake tree: counted as vanished, not errors.
    assert_eq!(ids, vec![(4032, 4032), (6000, 6000), (6000, 6001)]);
    assert_eq!(all.stats.vanished, 2);
}

#[test]
fn selectors_filter_by_parent_session_and_group() {
    let dir = fake_tree();
    let mut c = collector(dir.path());
    let pids = |c: &mut ProcfsCollector, s: Selector| -> Vec<i32> {
        snapshot_with(c, s, Groups::default())
            .tasks
            .iter()
            .map(|t| t.id.tgid)
            .collect()
    };
    assert_eq!(pids(&mut c, Selector::ChildrenOf(4032)), vec![5000]);
    assert_eq!(pids(&mut c, Selector::Session(4032)), vec![4032, 5000]);
    assert_eq!(pids(&mut c, Selector::ProcessGroup(6000)), vec![6000]);
    assert_eq!(pids(&mut c, Selector::Pid(999)), Vec::<i32>::new());
    assert!(pids(&mut c, Selector::ThreadsOf(999)).is_empty());
}

#[test]
fn missing_truncated_and_unreadable_files_are_counted_not_fatal() {
    let dir = fake_tree();
    // A task whose directory is listed but whose stat is gone: it exited mid-listing.
    task(dir.path(), "7000", &[]);
    // A truncated stat (cut inside the numbers) and a corrupt one.
    task(dir.path(), "7001", &[("stat", &STAT_BASH[..40])]);
    task(dir.path(), "7002", &[("stat", b"7002 (x) S 1 2 3 nope\n")]);
    let snap = snapshot(
        dir.path(),
        Selector::AllProcesses,
        groups(|g| {
            g.insert(Group::Base);
            g.insert(Group::CredFull);
        }),
    );
    let pids: Vec<i32> = snap.tasks.iter().map(|t| t.id.tgid).collect();
    assert_eq!(pids, vec![2, 4032, 5000, 6000], "bad tasks are skipped");
    assert_eq!(snap.stats.vanished, 1, "7000 has no files at all");
    assert_eq!(
        snap.stats.partial, 3,
        "no status for 2, 5000, 6000: kept without creds"
    );
    assert!(snap.tasks[0].cred.is_none() && snap.tasks[1].cred.is_some());
    assert_eq!(snap.stats.unparsable, 2);
}

#[test]
fn an_unreadable_file_leaves_its_group_empty() {
    let dir = fake_tree();
    // A directory where io should be: read() fails with EISDIR, which (like EACCES for
    // another user's io) means "this group is not available", not "the task is gone".
    fs::create_dir_all(dir.path().join("4032/io")).expect("mkdir");
    let snap = snapshot(
        dir.path(),
        Selector::Pid(4032),
        groups(|g| {
            g.insert(Group::Base);
            g.insert(Group::Io);
        }),
    );
    assert_eq!(snap.tasks.len(), 1, "the task is still listed");
    assert!(snap.tasks[0].io.is_none());
    assert!(snap.tasks[0].base.is_some());
    assert_eq!(snap.stats.denied, 1);
    assert_eq!(snap.stats.vanished, 0);
}

#[test]
fn a_missing_root_is_an_error() {
    let err = ProcfsCollector::with_root("/nonexistent/proc").expect_err("must fail");
    assert!(err.to_string().contains("/nonexistent/proc"), "{err}");
}

/// The cgroup group comes parsed (a hybrid host's lines, from this project's CI machine), the
/// label is the process's printable part, also on a thread's row, and `login` alone reads the
/// cgroup to answer, then leaves it out (not asked for).
#[test]
fn cgroup_label_and_login_come_parsed_from_the_collector() {
    let dir = fake_tree();
    let cgroup: &[u8] = b"12:pids:/user.slice/user-1000.slice/session-3.scope\n1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n0::/user.slice/user-1000.slice/session-3.scope\n";
    task(dir.path(), "6000", &[("cgroup", cgroup)]);
    task(
        dir.path(),
        "6000/attr",
        &[("current", b"unconfined_u:unconfined_r:unconfined_t:s0\0")],
    );
    task(dir.path(), "6000/task/6001", &[("cgroup", cgroup)]);
    let mut c = collector(dir.path());
    let snap = snapshot_with(
        &mut c,
        Selector::ThreadsOf(6000),
        groups(|g| {
            g.insert(Group::Cgroup);
            g.insert(Group::Label);
        }),
    );
    let t1 = snap
        .tasks
        .iter()
        .find(|t| t.id.tid == 6001)
        .expect("thread");
    let cg = t1.cgroup.as_deref().expect("parsed cgroup");
    assert_eq!(cg.raw(), cgroup);
    assert_eq!(
        cg.v2_path(),
        Some(&b"/user.slice/user-1000.slice/session-3.scope"[..])
    );
    let v1: Vec<_> = cg.lines().map(|l| (l.hierarchy, l.controllers)).collect();
    assert_eq!(
        v1,
        [
            (&b"12"[..], &b"pids"[..]),
            (b"1", b"name=systemd"),
            (b"0", b"")
        ]
    );
    for t in &snap.tasks {
        let label = t.extra.as_ref().and_then(|x| x.label.as_deref());
        assert_eq!(
            label,
            Some(&b"unconfined_u:unconfined_r:unconfined_t:s0"[..]),
            "{:?}",
            t.id
        );
    }

    let snap = snapshot_with(
        &mut c,
        Selector::Pid(6000),
        groups(|g| g.set(Group::Login, true)),
    );
    let t = &snap.tasks[0];
    assert!(t.cgroup.is_none(), "read for login only, not kept");
    assert!(t.extra.as_ref().is_some_and(|x| x.login.is_some()));
    // Without `login` asked for, no answers.
    let snap = snapshot_with(
        &mut c,
        Selector::Pid(6000),
        groups(|g| g.set(Group::Cgroup, true)),
    );
    assert!(snap.tasks[0]
        .extra
        .as_ref()
        .is_none_or(|x| x.login.is_none()));
}
