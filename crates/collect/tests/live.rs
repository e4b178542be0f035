//! The procfs collector against real processes this test starts: pid reuse, a command line
//! read that blocks on the target's mmap lock, a non-dumpable process's owner, and agreement
//! with /proc for the test's own process.

use std::process::Command;
use std::time::{Duration, Instant};
use tasksnap_loadgen::{skip_unless_root, Guard};

use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::Collector;
use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, Task};

fn one(c: &mut ProcfsCollector, pid: i32, groups: Groups) -> Option<Task> {
    c.snapshot(&Query::new(Selector::Pid(pid), groups))
        .expect("snapshot")
        .tasks
        .into_iter()
        .next()
}

fn base() -> Groups {
    Groups::of(&[Group::Base, Group::Stat])
}

#[test]
fn a_reused_pid_is_a_different_task() {
    skip_unless_root!("pid reuse (writes /proc/sys/kernel/ns_last_pid)");
    let mut c = ProcfsCollector::new().expect("open /proc");
    for _attempt in 0..20 {
        let first = Guard(Command::new("sleep").arg("100").spawn().expect("spawn"));
        let pid = first.0.id() as i32;
        let before = one(&mut c, pid, base()).expect("first task");
        drop(first);
        // Start times are in clock ticks (10 ms): let at least two pass.
        std::thread::sleep(Duration::from_millis(30));
        // The next fork gets ns_last_pid + 1.
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).expect("ns_last_pid");
        let second = Guard(Command::new("sleep").arg("100").spawn().expect("spawn"));
        if second.0.id() as i32 != pid {
            continue; // something else forked in between; try again
        }
        let after = one(&mut c, pid, base()).expect("second task");
        assert_eq!(before.id.tgid, after.id.tgid);
        assert_ne!(
            before.id, after.id,
            "same pid, different start: a different task"
        );
        assert!(after.id.start_time_ns > before.id.start_time_ns);
        return;
    }
    panic!("could not get the same pid back in 20 attempts");
}

#[test]
fn effective_ids_of_a_non_dumpable_process_are_exact() {
    skip_unless_root!("non-dumpable owner (runs a process as nobody)");
    let exe = std::env::current_exe().expect("test binary");
    let child = Guard(
        Command::new(exe)
            .args([
                "--exact",
                "non_dumpable_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TASKSNAP_NON_DUMPABLE_CHILD", "1")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn child"),
    );
    let pid = child.0.id() as i32;
    // Files inside /proc/PID are root-owned when the task is not dumpable... once the child
    // has switched to nobody, which takes a while on a loaded machine: wait for it (5 s at
    // most) rather than for a fixed time.
    let euid = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
            })
    };
    let stat_owner = || {
        std::fs::metadata(format!("/proc/{pid}/stat"))
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
            .expect("stat")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while (euid().as_deref() != Some("65534") || stat_owner() != 0)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stat_owner = stat_owner();
    let mut c = ProcfsCollector::new().expect("open /proc");
    let cheap = one(&mut c, pid, Groups::of(&[Group::CredEffective])).expect("task");
    let full = one(&mut c, pid, Groups::of(&[Group::CredFull])).expect("task");
    let (cheap, full) = (cheap.cred.expect("cred"), full.cred.expect("cred"));
    assert_eq!(full.euid, 65534);
    assert_eq!(stat_owner, 0, "the premise: the process is not dumpable");
    // ...but the directory itself keeps the real euid (task_dump_owner()).
    assert_eq!(
        (cheap.euid, cheap.egid),
        (full.euid, full.egid),
        "stat owner {stat_owner}"
    );
}

#[test]
fn agrees_with_proc_for_this_process() {
    let mut c = ProcfsCollector::new().expect("open /proc");
    let me = std::process::id() as i32;
    let t = one(&mut c, me, Groups::all()).expect("self");
    let b = t.base.as_ref().expect("base");
    let comm = std::fs::read(format!("/proc/{me}/comm")).expect("comm");
    assert_eq!(&b.comm[..], comm.strip_suffix(b"\n").unwrap_or(&comm));
    assert_eq!(b.ppid as u32, std::os::unix::process::parent_id());
    assert_eq!(
        t.cmdline.as_deref(),
        Some(&std::fs::read(format!("/proc/{me}/cmdline")).expect("cmdline")[..])
    );
    let cred = t.cred.as_ref().expect("cred");
    // SAFETY: geteuid cannot fail.
    assert_eq!(cred.euid, unsafe { libc::geteuid() });
    let threads = c
        .snapshot(&Query::new(Selector::ThreadsOf(me), base()))
        .expect("threads");
    assert!(!threads.tasks.is_empty());
    assert!(threads.tasks.iter().all(|t| t.id.tgid == me));
}

/// Child side of the non-dumpable test: become nobody, then not dumpable, then wait.
#[test]
fn non_dumpable_child() {
    if std::env::var("TASKSNAP_NON_DUMPABLE_CHILD").is_err() {
        return;
    }
    // SAFETY: plain credential and prctl calls on this process; failures end the child.
    unsafe {
        if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
            std::process::exit(3);
        }
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    std::thread::sleep(Duration::from_secs(60));
}

/// Reads the mmap-lock storm's process with `groups` and a 20 ms deadline, 40 times and more
/// (up to 30 s) until one read met the lock held (on a host whose CPUs are all busy the storm
/// may take its time to hold the lock again): `abandoned` checks each snapshot and its one
/// task and says whether that read was abandoned. Some reads must be, and no snapshot may
/// wait for the lock. Returns how many were.
fn storm_reads(groups: Groups, mut abandoned: impl FnMut(&Snapshot, &Task) -> bool) -> usize {
    // The load generator's process whose mmap lock is held for seconds at a time.
    let storm = tasksnap_loadgen::Load::spawn(&["--mmap-lock-storm"])
        .expect("spawn the load generator (cargo build --workspace first)");
    let pid = storm.info.mmap_lock_storm.expect("the storm's pid");
    tasksnap_loadgen::wait_until("a blocked cmdline read", || {
        tasksnap_loadgen::cmdline_read_blocks(pid)
    });
    let mut c = ProcfsCollector::new()
        .expect("open /proc")
        .with_cmdline_deadline(Duration::from_millis(20));
    let q = Query::new(Selector::Pid(pid), groups);
    let mut timed_out = 0;
    let mut slowest = Duration::ZERO;
    let began = Instant::now();
    for n in 0.. {
        if n >= 40 && (timed_out > 0 || began.elapsed() > Duration::from_secs(30)) {
            break;
        }
        let start = Instant::now();
        let snap = c.snapshot(&q).expect("snapshot");
        slowest = slowest.max(start.elapsed());
        let t = snap.tasks.first().expect("the storm child is listed");
        if abandoned(&snap, t) {
            timed_out += 1;
        }
    }
    assert!(
        timed_out > 0,
        "no read ever blocked: the storm did not hold the lock"
    );
    // Blocked reads last as long as a 4 GiB populate (seconds); the listing must not.
    assert!(
        slowest < Duration::from_millis(400),
        "a snapshot took {slowest:?}"
    );
    timed_out
}

#[test]
fn a_blocked_cmdline_read_is_abandoned_at_the_deadline() {
    let groups = Groups::of(&[Group::Base, Group::Cmdline]);
    storm_reads(groups, |snap, t| {
        if t.cmdline_timed_out {
            assert!(t.cmdline.is_none());
            assert!(t.base.is_some(), "the rest of the task is still there");
            assert_eq!(snap.stats.cmdline_timeouts, 1);
        }
        t.cmdline_timed_out
    });
}

/// Reads the mmap-lock storm's process with `groups` ([`storm_reads`]): some reads must block
/// and be abandoned (then `has` is false for the task, its base is kept and no command line
/// was flagged). Returns how many reads were abandoned and how many gave the group.
fn abandoned_at_the_deadline(groups: Groups, has: impl Fn(&Task) -> bool) -> (usize, usize) {
    let mut read = 0;
    let timed_out = storm_reads(groups, |snap, t| {
        if snap.stats.cmdline_timeouts == 1 {
            assert!(!has(t), "an abandoned read left its group");
            assert!(!t.cmdline_timed_out, "no command line was read");
            assert!(t.base.is_some(), "the rest of the task is still there");
            true
        } else {
            read += usize::from(has(t));
            false
        }
    });
    (timed_out, read)
}

/// `smaps_rollup` (PSS, USS) walks the target's mappings under its mmap lock, as a command
/// line read takes it: a read blocked past the deadline is abandoned the same way, and the
/// task is listed without PSS/USS (procps would wait for as long as the lock is held).
#[test]
fn a_blocked_smaps_read_is_abandoned_at_the_deadline() {
    let groups = Groups::of(&[Group::Base, Group::Smaps]);
    let (timed_out, read) = abandoned_at_the_deadline(groups, |t| {
        t.extra.as_ref().is_some_and(|x| x.smaps_kb.is_some())
    });
    eprintln!("{timed_out} smaps_rollup reads abandoned, {read} read");
}

/// `environ` (BSD `e`) copies the target's memory under its mmap lock, as a command line
/// read does: a read blocked past the deadline is abandoned the same way, and the task is
/// listed without its environment.
#[test]
fn a_blocked_environ_read_is_abandoned_at_the_deadline() {
    let groups = Groups::of(&[Group::Base, Group::Environ]);
    let (timed_out, read) = abandoned_at_the_deadline(groups, |t| t.environ.is_some());
    eprintln!("{timed_out} environ reads abandoned, {read} read");
}

/// A few tasks without command lines are read on the caller's thread (no reader thread):
/// the caller's open descriptors must all survive it. (A reader clears its descriptor
/// table from 4 up, which on the caller's thread closed the caller's own files: the BPF
/// backend lost its programs after reading pid 1 from /proc.)
#[test]
fn reading_on_the_callers_thread_leaves_its_descriptors_open() {
    let files: Vec<std::fs::File> = (0..8)
        .map(|_| std::fs::File::open("/dev/null").expect("open /dev/null"))
        .collect();
    let mut c = ProcfsCollector::new().expect("procfs");
    let me = std::process::id() as i32;
    let t = one(&mut c, me, base()).expect("this process");
    assert_eq!(t.id.tgid, me);
    for f in &files {
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETFD only queries the descriptor's flags.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFD) };
        assert!(
            r >= 0,
            "descriptor {} was closed by the read",
            f.as_raw_fd()
        );
    }
}
