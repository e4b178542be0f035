//! The BPF and procfs collectors against each other on a load this test spawns: every shared
//! field agrees (CPU times within a tick or two: they move), command lines are byte-identical,
//! and no task is missing either way. Root only; CI runs it with TASKSNAP_REQUIRE_PRIVILEGED=1.

use std::collections::HashMap;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_collect::testing::bpf::BpfCollector;
use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::Collector;
use tasksnap_loadgen::{Guard, Load};
use tasksnap_model::{CmdlineSource, Group, Groups, PassKind, PassReport, Query, Selector, Task};

/// The load generator with `args`, spawned.
fn spawn_load(args: &[&str]) -> Load {
    Load::spawn(args).expect("spawn the load generator (cargo build --workspace first)")
}

fn by_id(tasks: Vec<Task>) -> ById {
    tasks
        .into_iter()
        .map(|t| ((t.id.tgid, t.id.tid), t))
        .collect()
}

/// A freshly loaded BPF collector for each pass kind, the iterator's, then the walk's (its
/// arena prepared for `groups`), each with whether it walks; `cmdlines` as
/// [`BpfCollector::load_fresh`] takes it.
fn iterator_then_walk(
    cmdlines: bool,
    groups: Groups,
) -> impl Iterator<Item = (bool, BpfCollector)> {
    [false, true].into_iter().map(move |walk| {
        let mut bpf = BpfCollector::load_fresh(cmdlines, walk).expect("BPF loads as root");
        if walk {
            bpf.prepare_arena(&groups);
        }
        (walk, bpf)
    })
}

#[test]
fn both_backends_agree_on_a_spawned_load() {
    skip_unless_root!("BPF/procfs snapshot equivalence");
    let load = spawn_load(&tasksnap_loadgen::every_state_args(
        "20",
        "4",
        &["--mlocked", "2"],
    ));
    let pids = load.info.known_pids();
    let groups = Groups::of(&[
        Group::Base,
        Group::CredFull,
        Group::Stat,
        Group::Cmdline,
        Group::Sched,
        Group::Locked,
        Group::Io,
    ]);
    // Both BPF paths: the seq_file iterator (what a tasksnap that loads its own programs
    // uses) and the walk into an arena (what a pinned set gives).
    // With the walk, `prepare` gives the arena room for the command-line copy by pid list.
    for walk in [false, true] {
        let mut bpf = BpfCollector::load_fresh(true, walk).expect("BPF loads as root");
        assert!(
            bpf.cmdline_from_procfs.is_none(),
            "{:?}",
            bpf.cmdline_from_procfs
        );
        if walk {
            bpf.prepare_arena(&groups);
        }
        agree(&mut bpf, walk, &load, &pids, groups);
    }
}

/// The two queries a test makes of both backends under `walk`'s path (every process, leaders
/// as processes; every thread), each named for the messages.
fn queries(groups: Groups, walk: bool) -> [(String, Query); 2] {
    let how = if walk { "walk" } else { "iterator" };
    [
        (Selector::AllProcesses, "processes"),
        (Selector::AllThreads, "threads"),
    ]
    .map(|(selector, what)| {
        let mut q = Query::new(selector, groups);
        q.leader_as_process = true;
        (format!("{what} ({how})"), q)
    })
}

type ById = HashMap<(i32, i32), Task>;

/// For each BPF path (the iterator, then the walk) and each of [`queries`]: the query's name,
/// the query, and the snapshots by id of BPF (checked to come from that path) and of procfs.
fn each_pass(groups: Groups, mut check: impl FnMut(&str, &Query, &ById, &ById)) {
    let mut procfs = ProcfsCollector::new().expect("procfs");
    for (walk, mut bpf) in iterator_then_walk(false, groups) {
        for (what, q) in queries(groups, walk) {
            let b = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
            assert_eq!(
                bpf.report().kind == PassKind::Walk,
                walk,
                "{what}: {}",
                bpf.last_pass()
            );
            let p = by_id(procfs.snapshot(&q).expect("procfs snapshot").tasks);
            check(&what, &q, &b, &p);
        }
    }
}

/// The group `get` reads of a task, from BPF (`bt`) and from procfs (`pt`): both there.
fn both<'a, T: ?Sized>(
    bt: &'a Task,
    pt: &'a Task,
    get: impl Fn(&'a Task) -> Option<&'a T>,
    what: &str,
) -> (&'a T, &'a T) {
    let from = |t, source| get(t).unwrap_or_else(|| panic!("{what} from {source}"));
    (from(bt, "BPF"), from(pt, "procfs"))
}

fn agree(bpf: &mut BpfCollector, walk: bool, load: &Load, pids: &[i32], groups: Groups) {
    let mut procfs = ProcfsCollector::new().expect("procfs");
    for (what, q) in queries(groups, walk) {
        let b = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
        let pass = bpf.last_pass();
        assert_eq!(
            bpf.report().kind == PassKind::Walk,
            walk,
            "{what}: the pass taken was {pass}"
        );
        let how = if walk {
            CmdlineSource::Walk
        } else {
            CmdlineSource::Iterator
        };
        assert_eq!(bpf.report().cmdlines, Some(how), "{what}: {pass}");
        let p = by_id(procfs.snapshot(&q).expect("procfs snapshot").tasks);
        let mut checked = 0;
        let mut io_active = 0;
        for (key, pt) in &p {
            if !pids.contains(&key.0) {
                continue;
            }
            let bt = b
                .get(key)
                .unwrap_or_else(|| panic!("{what}: {key:?} missing from BPF"));
            assert_eq!(bt.id, pt.id, "identity of {key:?}");
            let (bb, pb) = both(bt, pt, |t| t.base.as_ref(), "base");
            assert_eq!(bb, pb, "base of {key:?}");
            assert_eq!(
                bt.cred
                    .as_ref()
                    .map(|c| (c.ruid, c.euid, c.suid, c.fsuid, c.rgid, c.egid)),
                pt.cred
                    .as_ref()
                    .map(|c| (c.ruid, c.euid, c.suid, c.fsuid, c.rgid, c.egid)),
                "cred of {key:?}"
            );
            assert_eq!(bt.cmdline, pt.cmdline, "cmdline of {key:?}");
            assert_eq!(bt.locked_bytes, pt.locked_bytes, "locked memory of {key:?}");
            let (bs, ps) = both(bt, pt, |t| t.stat.as_ref(), "stat");
            assert_eq!(
                (bs.start_time_ns, bs.vsize_bytes, bs.majflt),
                (ps.start_time_ns, ps.vsize_bytes, ps.majflt),
                "stat of {key:?}"
            );
            // Sleeping test processes barely move; allow two ticks for the ones that just ran.
            let tick = 10_000_000;
            assert!(
                bs.utime_ns.abs_diff(ps.utime_ns) <= 2 * tick,
                "utime of {key:?}: {} vs {}",
                bs.utime_ns,
                ps.utime_ns
            );
            assert!(
                bs.stime_ns.abs_diff(ps.stime_ns) <= 2 * tick,
                "stime of {key:?}: {} vs {}",
                bs.stime_ns,
                ps.stime_ns
            );
            assert!(bs.minflt.abs_diff(ps.minflt) <= 64, "minflt of {key:?}");
            // Swap: what status's VmSwap says (the same counter; /proc/PID/stat has none).
            let status =
                std::fs::read(format!("/proc/{}/task/{}/status", key.0, key.1)).expect("status");
            let status = String::from_utf8_lossy(&status);
            let vm_swap = status
                .lines()
                .find_map(|l| l.strip_prefix("VmSwap:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024);
            assert_eq!(bs.swap_bytes, Some(vm_swap.unwrap_or(0)), "swap of {key:?}");
            assert_eq!(ps.swap_bytes, None, "/proc/PID/stat has no swap figure");
            // I/O counters: from the kernel's task_io_accounting under BPF. The load sleeps,
            // so they do not move between the two snapshots (its leader, which may be woken,
            // gets some slack).
            let (bi, pi) = both(bt, pt, |t| t.io.as_ref(), "io");
            assert_eq!(
                (bi.read_bytes, bi.write_bytes, bi.cancelled_write_bytes),
                (pi.read_bytes, pi.write_bytes, pi.cancelled_write_bytes),
                "io bytes of {key:?}"
            );
            let (bytes_slack, calls_slack) = if key.0 == load.pid() {
                (4096, 16)
            } else {
                (0, 0)
            };
            assert!(
                bi.rchar_bytes.abs_diff(pi.rchar_bytes) <= bytes_slack
                    && bi.wchar_bytes.abs_diff(pi.wchar_bytes) <= bytes_slack
                    && bi.syscr.abs_diff(pi.syscr) <= calls_slack
                    && bi.syscw.abs_diff(pi.syscw) <= calls_slack,
                "io counts of {key:?}: bpf {bi:?} procfs {pi:?}"
            );
            io_active += usize::from(bi.rchar_bytes + bi.wchar_bytes > 0);
            checked += 1;
        }
        assert!(checked >= pids.len(), "{what}: checked only {checked}");
        assert!(
            io_active > 0,
            "{what}: no task of the load has I/O counts to compare"
        );
        assert_eq!(
            load.info.mlocked.len(),
            2,
            "the load has locked-memory processes"
        );
        for m in &load.info.mlocked {
            let t = &b[&(*m, *m)];
            assert!(
                t.locked_bytes.unwrap_or(0) > 0,
                "{what}: {m} has no locked memory: bpf {:?} procfs {:?}",
                t.locked_bytes,
                p[&(*m, *m)].locked_bytes
            );
        }
        // Nothing the BPF snapshot has is unknown to /proc (tasks that exited in between aside).
        for key in b.keys().filter(|k| pids.contains(&k.0)) {
            assert!(
                p.contains_key(key),
                "{what}: {key:?} only in the BPF snapshot"
            );
        }
    }
}

/// /proc/PID/statm's fields as pages: size resident shared text lib data dt.
fn statm(tgid: i32, tid: i32) -> Option<[u64; 7]> {
    let s = std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/statm")).ok()?;
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    v.try_into().ok()
}

/// The memory group (statm) from the pass, against /proc/PID/statm read right after it, on
/// a spawned load whose processes sleep (their counters do not move): every field equal.
/// On Linux 6.16+ statm adds each RSS counter's per-CPU deltas to its central value, which
/// /proc/PID/stat's rss (the central value only) shows is not the same thing: the test
/// also checks that, for some of the load, the central value differs from statm, so that
/// a pass which did not add the deltas would fail here rather than agree by chance.
#[test]
fn statm_from_the_pass_is_what_proc_shows() {
    skip_unless_root!("statm from the BPF pass against /proc");
    let sums = tasksnap_sys::kernel_release().is_some_and(|v| v >= (6, 16));
    let load = spawn_load(&[
        "--procs",
        "20",
        "--exec-children",
        "--threads",
        "4",
        "--zombies",
        "2",
        "--stopped",
        "2",
        "--mlocked",
        "2",
        "--list-pids",
    ]);
    let pids = load.info.known_pids();
    let groups = Groups::of(&[Group::Base, Group::Stat, Group::Mem]);
    for (walk, mut bpf) in iterator_then_walk(true, groups) {
        for (what, q) in queries(groups, walk) {
            let snap = bpf.snapshot(&q).expect("bpf snapshot");
            assert_eq!(bpf.report().kind == PassKind::Walk, walk, "{what}");
            // Back to back: statm of the load's tasks right after the pass.
            let mut rows = Vec::new();
            for t in snap.tasks.iter().filter(|t| pids.contains(&t.id.tgid)) {
                if let Some(s) = statm(t.id.tgid, t.id.tid) {
                    rows.push((t, s));
                }
            }
            assert!(
                rows.len() >= pids.len(),
                "{what}: only {} tasks",
                rows.len()
            );
            let page = 4096; // statm's unit on x86-64 and this test's machines
            let mut central_differs = 0;
            for (t, s) in &rows {
                let key = (t.id.tgid, t.id.tid);
                let m = t
                    .mem
                    .as_ref()
                    .unwrap_or_else(|| panic!("{what}: no mem for {key:?}"));
                let got = [
                    m.vsize_bytes / page,
                    m.rss_bytes / page,
                    m.shared_bytes / page,
                    m.text_bytes / page,
                    m.data_bytes / page,
                ];
                let want = [s[0], s[1], s[2], s[3], s[5]];
                assert_eq!(
                    got, want,
                    "{what}: statm of {key:?} (size resident shared text data)"
                );
                let central = t.stat.as_ref().expect("stat").rss_bytes / page;
                central_differs += usize::from(central != s[1]);
            }
            // Every process that faulted pages in keeps a delta below the batch on each CPU
            // it ran on; with 20+ processes some are non-zero.
            if sums && crate_cores() > 1 {
                assert!(
                    central_differs > 0,
                    "{what}: the counters' central values equal statm for all {} tasks: the \
                     test cannot tell a sum from a central value",
                    rows.len()
                );
            }
            eprintln!(
                "{what}: {} tasks equal to statm; {central_differs} of them have a central \
                 value that is not ({})",
                rows.len(),
                bpf.last_pass()
            );
        }
    }
}

fn crate_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn one_process_queries_use_the_pid_filter_and_agree() {
    skip_unless_root!("BPF one-process queries");
    let load =
        Load::spawn(&["--threads", "5", "--zombies", "1"]).expect("spawn the load generator");
    let threaded = load.info.threads_pid.expect("a threaded process");
    let zombie = load.info.zombies[0];
    // The load is reported ready as soon as its threads exist; on a busy host one may still
    // be on its way to its blocking wait. States are compared below, so wait until every
    // thread of the process is asleep (from there nothing moves until the load is killed).
    tasksnap_loadgen::wait_until("the threaded process to settle", || {
        std::fs::read_dir(format!("/proc/{threaded}/task")).is_ok_and(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .all(|tid| tasksnap_loadgen::read_stat(tid).is_ok_and(|st| st.state == 'S'))
        })
    });
    let groups = Groups::of(&[Group::Base, Group::Stat, Group::Cmdline]);
    let mut bpf = BpfCollector::with_cmdline(true).expect("BPF loads as root");
    let mut procfs = ProcfsCollector::new().expect("procfs");
    for sel in [
        Selector::Pid(threaded),
        Selector::ThreadsOf(threaded),
        Selector::Pid(zombie),
        Selector::Pid(1),
        Selector::Pid(999_999),
    ] {
        let q = Query::new(sel.clone(), groups);
        let b = bpf.snapshot(&q).expect("bpf").tasks;
        let p = procfs.snapshot(&q).expect("procfs").tasks;
        let ids = |t: &[Task]| t.iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(&b), ids(&p), "{sel:?}");
        for (x, y) in b.iter().zip(&p) {
            if sel == Selector::Pid(1) {
                // Not this test's: it may run between the two snapshots (on a busy host it
                // does), which moves its state, CPU and flags. What does not move is compared.
                let fixed = |t: &Task| {
                    t.base
                        .as_ref()
                        .map(|b| (b.ppid, b.pgid, b.sid, b.comm.clone(), b.kthread))
                };
                assert_eq!(fixed(x), fixed(y), "{sel:?}");
            } else {
                assert_eq!(x.base, y.base, "{sel:?}");
            }
            assert_eq!(x.cmdline, y.cmdline, "{sel:?}");
        }
    }
}

/// Kernel threads' names come from the kernel (fs/proc/array.c proc_task_name()): full names
/// past comm's 15 bytes, and workqueue workers' descriptions. A worker's description changes
/// with the work it runs, so for workers only the part before it must match /proc.
#[test]
fn kernel_thread_names_match_proc() {
    skip_unless_root!("kernel thread names from the iterator");
    for walk in [false, true] {
        let mut bpf = BpfCollector::load_fresh(false, walk).expect("BPF loads as root");
        kernel_names_match(&mut bpf, walk);
    }
}

fn kernel_names_match(bpf: &mut BpfCollector, walk: bool) {
    const PF_WQ_WORKER: u32 = 0x20;
    let q = Query::new(Selector::AllProcesses, Groups::of(&[Group::Base]));
    let snap = bpf.snapshot(&q).expect("bpf snapshot");
    assert_eq!(
        bpf.report().kind == PassKind::Walk,
        walk,
        "{}",
        bpf.last_pass()
    );
    let (mut long, mut described, mut compared) = (0, 0, 0);
    for t in &snap.tasks {
        let Some(b) = t.base.as_ref().filter(|b| b.kthread) else {
            continue;
        };
        let Ok(mut proc_name) = std::fs::read(format!("/proc/{}/comm", t.id.tgid)) else {
            continue; // gone
        };
        if proc_name.last() == Some(&b'\n') {
            proc_name.pop();
        }
        let name = &b.comm;
        if b.flags & PF_WQ_WORKER == 0 {
            assert_eq!(
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(&proc_name),
                "kernel thread {}",
                t.id.tgid
            );
        } else {
            // "kworker/u8:4-events_unbound": the worker's own name is the part before the
            // first '+' or '-' after its "kworker/..." prefix.
            let base_of = |n: &[u8]| -> Vec<u8> {
                let start = n.iter().position(|&c| c == b'/').map_or(0, |i| i + 1);
                let end = n[start..]
                    .iter()
                    .position(|&c| c == b'+' || c == b'-')
                    .map_or(n.len(), |i| start + i);
                n[..end].to_vec()
            };
            assert_eq!(
                String::from_utf8_lossy(&base_of(name)),
                String::from_utf8_lossy(&base_of(&proc_name)),
                "workqueue worker {}",
                t.id.tgid
            );
            described += usize::from(name.len() > base_of(name).len());
        }
        long += usize::from(name.len() > 15);
        compared += 1;
    }
    assert!(compared > 10, "only {compared} kernel threads compared");
    assert!(
        long > 0,
        "no kernel thread name past 15 bytes: full names not read"
    );
    assert!(described > 0, "no workqueue worker with a description");
}

#[test]
fn copied_command_lines_are_what_proc_shows() {
    use std::os::unix::ffi::OsStrExt;
    use std::process::{Command, Stdio};
    skip_unless_root!("command-line copy against /proc");
    let spawn = |cmd: &mut Command| {
        Guard(
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn"),
        )
    };
    // Stops itself: no child process is left behind when the test kills it.
    let script = "kill -STOP $$";
    let long = "L".repeat(5000);
    let children = [
        // Spaces, a newline, an empty argument, bytes that are not UTF-8.
        spawn(
            Command::new("sh")
                .args(["-c", script, "sh", "a b", "line\nbreak", ""])
                .arg(std::ffi::OsStr::from_bytes(b"\xff\xfe-not-utf8")),
        ),
        // Longer than the copy takes (4095 bytes): flagged, read from /proc.
        spawn(Command::new("sh").args(["-c", script, "sh", &long])),
        // Rewrites its arguments in place (setproctitle): /proc reads on into the
        // environment, so the copy flags it for a /proc read.
        spawn(Command::new("perl").args(["-e", "$0 = 'rewritten ' . ('x' x 40); sleep 60"])),
        // Argument areas of about 4,000 bytes, below environments of two sizes: at least
        // one crosses a page boundary (checked below), which the lock-free read takes in
        // two pieces.
        spawn(
            Command::new("sh")
                .args(["-c", script, "sh", &"p".repeat(3990)])
                .env("TASKSNAP_TEST_PAD", "x"),
        ),
        spawn(
            Command::new("sh")
                .args(["-c", script, "sh", &"q".repeat(3990)])
                .env("TASKSNAP_TEST_PAD", "y".repeat(2100)),
        ),
    ];
    // A zombie: exited, not reaped until the test ends.
    let zombie = spawn(&mut Command::new("true"));
    let pid_of = |c: &Guard| c.0.id() as i32;
    let mut pids: Vec<i32> = children.iter().map(pid_of).collect();
    pids.push(pid_of(&zombie));
    // Let perl rewrite its name, the shells stop themselves (before its exec a child's
    // command line is this test's) and the zombie die: on a busy host this takes a while.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let state = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')')?.1.trim_start().chars().next())
    };
    loop {
        let renamed = std::fs::read(format!("/proc/{}/cmdline", pids[2]))
            .is_ok_and(|c| c.starts_with(b"rewritten"));
        let dead = state(pids[pids.len() - 1]) == Some('Z');
        let stopped = [0, 1, 3, 4].iter().all(|&k| state(pids[k]) == Some('T'));
        if renamed && dead && stopped {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "children did not settle"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let groups = Groups::of(&[Group::Base, Group::Cmdline]);
    let mut bpf = BpfCollector::load_fresh(true, true).expect("BPF loads as root");
    bpf.prepare_arena(&groups);
    let mut q = Query::new(Selector::AllProcesses, groups);
    q.leader_as_process = true;
    // Through the mmap lock: every line copied by pid list (the path of kernels where
    // the lock-free read finds no direct map, and of the pages it cannot read).
    bpf.use_lockless(false);
    let locked = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
    let report = bpf.report();
    assert!(
        report.cmdlines == Some(CmdlineSource::Copied) && report.cmdlines_lockless == 0,
        "{}",
        report.pass
    );
    bpf.use_lockless(true);
    // A copy given up because a thread of it waited on some process's mmap lock past the
    // deadline (on a busy host, any process of the system may be holding its lock) keeps
    // writing into the arena until it gets the lock; meanwhile the next snapshot takes the
    // iterator instead. Wait for it (a few seconds at most).
    let walked =
        |r: &PassReport| r.kind == PassKind::Walk && r.cmdlines == Some(CmdlineSource::Walk);
    let mut snap = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
    let mut report = bpf.report();
    for _ in 0..50 {
        if walked(&report) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        snap = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
        report = bpf.report();
    }
    assert!(walked(&report), "{}", report.pass);
    // /proc/PID/stat's arg_start and arg_end (fields 48 and 49, Linux 3.5).
    let crosses = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        let after = &stat[stat.rfind(')').expect("comm") + 2..];
        let f: Vec<u64> = after
            .split(' ')
            .map(|x| x.trim().parse().unwrap_or(0))
            .collect();
        let (start, end) = (f[45], f[46]);
        start / 4096 != (end - 1) / 4096
    };
    assert!(
        crosses(pids[3]) || crosses(pids[4]),
        "neither long argument area crosses a page"
    );
    // On x86-64 the walk reads the lines without the mmap lock, except those it cannot
    // (flagged ones, pages that are not present): nearly all of them here.
    // The pass covers every process of the host, whose lines this test does not control (a
    // harness's long argument area whose second page is not present is copied through the
    // lock): the count is held against this test's own lines, however the others went.
    if cfg!(target_arch = "x86_64") {
        let lockless = report.cmdlines_lockless as usize;
        let with_lines = |own: bool| {
            snap.values()
                .filter(|t| pids.contains(&t.id.tgid) == own)
                .filter(|t| t.cmdline.as_ref().is_some_and(|c| !c.is_empty()))
                .count()
        };
        let (own, others) = (with_lines(true), with_lines(false));
        assert!(
            lockless > 0 && lockless * 10 >= own * 9,
            "{lockless} lines read lock-free, {own} of this test's and {others} others: {}",
            report.pass
        );
    }
    for pid in pids {
        let want = std::fs::read(format!("/proc/{pid}/cmdline")).expect("read /proc cmdline");
        for (how, snap) in [("lock-free", &snap), ("locked", &locked)] {
            let got = snap
                .get(&(pid, pid))
                .unwrap_or_else(|| panic!("{pid} missing"))
                .cmdline
                .clone();
            assert_eq!(
                got.as_deref(),
                Some(want.as_slice()),
                "{how} cmdline of {pid}: {:?} vs /proc {:?}",
                got.as_deref().map(String::from_utf8_lossy),
                String::from_utf8_lossy(&want)
            );
        }
    }
}

/// Signal masks from the pass (record.h's ts_sig, both the iterator and the walk) against
/// /proc/PID/status, and the layout group (filled from /proc/PID/stat) as the procfs
/// collector reads it, on a load with signals blocked, ignored, caught and pending for the
/// process and for each thread (`--signals`), zombies and stopped tasks.
#[test]
fn signal_masks_from_the_pass_are_what_status_shows() {
    skip_unless_root!("signal masks from the BPF pass against /proc");
    let load = spawn_load(&[
        "--procs",
        "3",
        "--threads",
        "3",
        "--signals",
        "--zombies",
        "2",
        "--stopped",
        "1",
        "--list-pids",
    ]);
    let pids = load.info.known_pids();
    let signals_pid = load.info.signals.expect("the --signals process");
    let groups = Groups::of(&[Group::Base, Group::Signals, Group::Layout]);
    each_pass(groups, |what, q, b, p| {
        let mut checked = 0;
        for (key, pt) in p.iter().filter(|(k, _)| pids.contains(&k.0)) {
            let bt = &b[key];
            assert!(
                pt.signals.is_some(),
                "{what}: no masks from /proc for {key:?}"
            );
            assert_eq!(bt.signals, pt.signals, "{what}: masks of {key:?}");
            assert!(
                pt.layout.is_some(),
                "{what}: no layout from /proc for {key:?}"
            );
            assert_eq!(bt.layout, pt.layout, "{what}: layout of {key:?}");
            checked += 1;
        }
        assert!(checked >= pids.len(), "{what}: checked only {checked}");
        // The masks are not all zero: the test would prove little otherwise.
        let s = b[&(signals_pid, signals_pid)]
            .signals
            .as_deref()
            .copied()
            .expect("masks");
        assert_eq!(s.shared_pending, 1 << 39, "{what}: {s:?}");
        assert_eq!(s.pending, 1 << (libc::SIGTERM - 1), "{what}: {s:?}");
        assert_ne!(s.ignored & (1 << (libc::SIGHUP - 1)), 0, "{what}: {s:?}");
        assert_ne!(s.caught & (1 << (libc::SIGUSR2 - 1)), 0, "{what}: {s:?}");
        if let Some(tid) = load.info.signal_thread.filter(|_| q.wants_threads()) {
            let t = b[&(signals_pid, tid)]
                .signals
                .as_deref()
                .copied()
                .expect("masks");
            assert_eq!(t.pending, 1 << (libc::SIGUSR1 - 1), "{what}: {t:?}");
            assert_eq!(t.blocked, s.blocked, "{what}: {t:?}");
        }
    });
}

/// Namespaces, oom_score_adj and loginuid come from the pass (the `ts_ns` block), for every
/// task: the same as /proc shows, through the iterator and the walk, per process and per
/// thread, for a load (threads, zombies: only their pid and user namespaces are left) and
/// for processes in other namespaces, with an OOM adjustment and with a login uid.
#[test]
fn namespaces_oom_adjustment_and_login_uid_from_the_pass_are_what_proc_shows() {
    skip_unless_root!("namespaces from the BPF pass against /proc");
    use std::process::{Command, Stdio};
    let load = spawn_load(&[
        "--procs",
        "4",
        "--threads",
        "3",
        "--zombies",
        "2",
        "--list-pids",
    ]);
    let spawn = |argv: &[&str]| {
        Guard(
            Command::new(argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn"),
        )
    };
    let odd = [
        spawn(&[
            "unshare", "--net", "--uts", "--ipc", "--mount", "--cgroup", "sleep", "100",
        ]),
        spawn(&["unshare", "--user", "sleep", "100"]),
        spawn(&["choom", "-n", "300", "--", "sleep", "100"]),
        spawn(&[
            "sh",
            "-c",
            "echo 4242 > /proc/self/loginuid && exec sleep 100",
        ]),
    ];
    let mut pids = load.info.known_pids();
    pids.extend(odd.iter().map(|c| c.0.id() as i32));
    tasksnap_loadgen::wait_until("the odd processes to settle", || {
        odd.iter()
            .all(|c| tasksnap_loadgen::settled_sleep(c.0.id() as i32))
    });
    let groups = Groups::of(&[Group::Base, Group::Ns, Group::OomScoreAdj, Group::Loginuid]);
    each_pass(groups, |what, _, b, p| {
        let (mut checked, mut distinct, mut adjusted, mut logged, mut zombies) = (0, 0, 0, 0, 0);
        for (key, pt) in p.iter().filter(|(k, _)| pids.contains(&k.0)) {
            let bt = &b[key];
            let (bx, px) = (bt.extra.as_deref(), pt.extra.as_deref());
            let get =
                |x: Option<&tasksnap_model::Extra>| x.map(|x| (x.ns, x.oom_score_adj, x.loginuid));
            assert_eq!(
                get(bx),
                get(px),
                "{what}: {key:?} {:?} {:?}",
                bt.base,
                pt.base
            );
            let x = bx.expect("extra from the pass");
            let ns = x.ns.expect("namespaces");
            distinct += usize::from(
                ns[3]
                    != p[&(load.pid(), load.pid())]
                        .extra
                        .as_ref()
                        .and_then(|x| x.ns)
                        .expect("ns")[3],
            );
            adjusted += usize::from(x.oom_score_adj == Some(300));
            logged += usize::from(x.loginuid == Some(4242));
            zombies += usize::from(ns[3] == 0 && ns[4] != 0 && ns[6] != 0);
            checked += 1;
        }
        assert!(checked >= pids.len(), "{what}: only {checked} compared");
        assert!(
            distinct > 0 && adjusted > 0 && logged > 0 && zombies > 0,
            "{what}: nothing to tell a wrong block from a right one: \
                 {distinct} in another netns, {adjusted} adjusted, {logged} logged in, \
                 {zombies} zombies"
        );
    });
}

/// The groups the BPF pass does not read (the security label, the parsed cgroup and the
/// sd-login answers derived from it) come from its /proc fill: the same as the procfs
/// collector gives, per process and per thread, through the iterator and the walk; and
/// `login` alone leaves no cgroup behind (it was read only to derive the answers).
#[test]
fn label_cgroup_and_login_from_the_proc_fill_are_what_procfs_gives() {
    skip_unless_root!("label, cgroup and login through the BPF backend's /proc fill");
    let load = spawn_load(&["--procs", "3", "--threads", "2", "--list-pids"]);
    let pids = load.info.known_pids();
    let mut procfs = ProcfsCollector::new().expect("procfs");
    for (cgroup, label, login) in [(true, true, true), (false, false, true)] {
        let groups = Groups::of(&[Group::Base])
            .flag(Group::Cgroup, cgroup)
            .flag(Group::Label, label)
            .flag(Group::Login, login);
        for (walk, mut bpf) in iterator_then_walk(false, groups) {
            for selector in [Selector::AllProcesses, Selector::AllThreads] {
                let q = Query::new(selector.clone(), groups);
                let b = by_id(bpf.snapshot(&q).expect("bpf snapshot").tasks);
                let p = by_id(procfs.snapshot(&q).expect("procfs snapshot").tasks);
                let mut checked = 0;
                for (key, pt) in p.iter().filter(|(k, _)| pids.contains(&k.0)) {
                    let bt = &b[key];
                    let get = |t: &Task| {
                        let x = t.extra.as_deref();
                        (
                            t.cgroup.clone(),
                            x.and_then(|x| x.label.clone()),
                            x.and_then(|x| x.login.clone()),
                        )
                    };
                    assert_eq!(get(bt), get(pt), "{selector:?} walk={walk}: {key:?}");
                    let (cg, _, answers) = get(bt);
                    assert_eq!(cg.is_some(), cgroup, "{key:?}");
                    assert!(answers.is_some(), "{key:?}: no sd-login answers");
                    checked += 1;
                }
                assert!(
                    checked >= pids.len(),
                    "{selector:?}: only {checked} compared"
                );
            }
        }
    }
}

/// A collector loaded without the command-line iterator (or without the rare blocks'
/// program) says a query of those is better served by loading again; one loaded with them
/// serves everything less. The Python binding keeps its collector on this answer, so a
/// wrong `true` reads command lines from /proc forever and a wrong `false` reloads on
/// every call.
#[test]
fn a_fresh_load_serves_what_it_was_loaded_for() {
    skip_unless_root!("Collector::serves of a fresh BPF load");
    if BpfCollector::pinned_available() {
        eprintln!("skipped: a pinned set serves every query (tasksnap pin is in force)");
        return;
    }
    let plain = Groups::of(&[Group::Base, Group::Stat]);
    let cmdline = plain.with(Group::Cmdline);
    let rare = plain.with(Group::Signals);
    let without = BpfCollector::for_groups(&plain).expect("BPF loads as root");
    assert!(without.serves(&plain));
    assert!(without.serves(&plain.with(Group::Io)));
    assert!(!without.serves(&cmdline));
    assert!(!without.serves(&rare));
    drop(without);
    let with = BpfCollector::for_groups(&cmdline.with(Group::Signals)).expect("BPF loads as root");
    for g in [plain, cmdline, rare, Groups::default()] {
        assert!(with.serves(&g), "{g:?}");
    }
    // load_fresh loads the rare blocks' program always.
    let fresh = BpfCollector::load_fresh(false, false).expect("BPF loads as root");
    assert!(fresh.serves(&rare) && !fresh.serves(&cmdline));
}

/// A snapshot handed over one task at a time (`snapshot_each`: assembled as it goes, each
/// thread lent its process's command line) has the tasks a whole snapshot has, in its
/// order, with the same command lines (a zombie's empty, an odd name's exact bytes), names,
/// states, parents and credentials, on both BPF paths and for processes and threads.
#[test]
fn a_snapshot_handed_over_task_by_task_is_the_whole_one() {
    skip_unless_root!("BPF snapshot handed over task by task");
    let load = spawn_load(&tasksnap_loadgen::every_state_args("10", "4", &[]));
    let pids = load.info.known_pids();
    let groups = Groups::of(&[
        Group::Base,
        Group::CredEffective,
        Group::Stat,
        Group::Cmdline,
    ]);
    type Seen = (
        tasksnap_model::TaskId,
        Option<Vec<u8>>,
        Option<(Vec<u8>, char, i32)>,
    );
    let ours = |tasks: &[Task]| -> Vec<(Seen, Option<tasksnap_model::Cred>)> {
        tasks
            .iter()
            .filter(|t| pids.contains(&t.id.tgid))
            .map(|t| {
                let b = t
                    .base
                    .as_ref()
                    .map(|b| (b.comm[..].to_vec(), char::from(b.state.letter()), b.ppid));
                ((t.id, t.cmdline.clone(), b), t.cred.clone())
            })
            .collect()
    };
    for (walk, mut bpf) in iterator_then_walk(true, groups) {
        for (what, mut q) in queries(groups, walk) {
            q.leader_as_process = false;
            let mut each: Vec<Task> = Vec::new();
            let snap = bpf
                .snapshot_each(&q, &mut |t| each.push(t.clone()))
                .expect("bpf snapshot_each");
            assert!(snap.tasks.is_empty(), "{what}");
            assert!(
                each.is_sorted_by_key(|t| (t.id.tgid, t.id.tid)),
                "{what}: in the snapshot's order"
            );
            let whole = bpf.snapshot(&q).expect("bpf snapshot").tasks;
            let (a, b) = (ours(&each), ours(&whole));
            assert!(
                a.len() >= pids.len(),
                "{what}: {} tasks of the load",
                a.len()
            );
            assert!(
                a.iter().all(|((_, line, _), _)| line.is_some()),
                "{what}: every task of the load has its command line"
            );
            assert_eq!(a, b, "{what}");
        }
    }
}
