//! End-to-end tests of the `tasksnap-loadgen` binary, driven through the
//! library's [`Load`] handle or directly: task states read back from
//! `/proc/<pid>/stat` (Z, T, D), hostile comms and cmdlines, threads, and
//! teardown (drop, `kill_group`, SIGKILL of the loadgen itself, `--seconds`,
//! stdin EOF, SIGINT) leaving nothing behind.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tasksnap_loadgen::{
    eventually, every_state_args, find_binary, first_line, group_exists, group_members,
    kernel_comm, read_stat, Load, LoadInfo,
};

const BIN: &str = env!("CARGO_BIN_EXE_tasksnap-loadgen");

fn state(pid: i32) -> char {
    read_stat(pid)
        .unwrap_or_else(|e| panic!("stat of {pid}: {e}"))
        .state
}

fn assert_state(pid: i32, want: &[char], what: &str) {
    assert!(
        eventually(Duration::from_secs(2), || read_stat(pid)
            .is_ok_and(|s| want.contains(&s.state))),
        "{what} {pid}: state {:?}, wanted one of {want:?}",
        read_stat(pid).map(|s| s.state)
    );
}

/// Pids among `pids` that still exist in process group `pgid`, plus `-1`
/// if the group still has any member at all (`kill(-pgid, 0)`: cheap, unlike
/// a `/proc` scan when the machine runs tens of thousands of processes).
fn leftovers(pids: &[i32], pgid: i32) -> Vec<i32> {
    let mut left: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&p| read_stat(p).is_ok_and(|s| s.pgrp == pgid))
        .collect();
    if group_exists(pgid) {
        left.push(-1);
    }
    left
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return Some(st);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The load generator started with `args`, one space apart.
fn spawn_words(args: &str) -> Load {
    let args: Vec<&str> = args.split(' ').collect();
    Load::spawn_with_binary(BIN, &args).expect("spawn")
}

/// Runs the binary directly (not through `Load`) in its own process group
/// and reads its report.
fn spawn_raw(args: &[&str], stdin: Stdio) -> (Child, LoadInfo) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn loadgen");
    let line = first_line(child.stdout.take().expect("stdout")).expect("read report");
    let info: LoadInfo = serde_json::from_str(&line).expect("parse report");
    assert_eq!(info.pgid, child.id() as i32);
    (child, info)
}

#[test]
fn small_load_states_names_and_clean_drop() {
    let load =
        Load::spawn_with_binary(BIN, &every_state_args("20", "5", &["--pipe-pingpong", "0"]))
            .expect("spawn load");
    let info = load.info.clone();
    let pgid = load.pgid();
    assert_eq!(info.pgid, pgid);
    assert_eq!(info.leader, load.pid());

    // Plain processes: sleeping, named lg-proc, in the group.
    assert_eq!(info.procs_count, 20);
    assert_eq!(info.procs.len(), 20);
    for &p in &info.procs {
        assert_state(p, &['S'], "proc");
        let st = read_stat(p).expect("stat");
        assert_eq!(st.comm, b"lg-proc");
        assert_eq!(st.ppid, info.leader);
    }

    // Threads: 5 extra threads in one process.
    let tpid = info.threads_pid.expect("threads_pid");
    assert_eq!(info.thread_tids.len(), 5);
    let mut tasks: Vec<i32> = std::fs::read_dir(format!("/proc/{tpid}/task"))
        .expect("task dir")
        .map(|e| {
            e.expect("entry")
                .file_name()
                .to_str()
                .expect("utf8")
                .parse()
                .expect("tid")
        })
        .collect();
    tasks.sort_unstable();
    let mut want = info.thread_tids.clone();
    want.push(tpid);
    want.sort_unstable();
    assert_eq!(tasks, want);
    for &tid in &info.thread_tids {
        assert_state(tid, &['S'], "thread");
        let comm = std::fs::read(format!("/proc/{tpid}/task/{tid}/comm")).expect("comm");
        assert!(comm.starts_with(b"lg-thr-"), "{comm:?}");
    }

    // Zombies: state Z, children of the never-reaping zombie parent.
    let zparent = info.zombie_parent.expect("zombie_parent");
    assert_eq!(info.zombies.len(), 2);
    for &z in &info.zombies {
        assert_eq!(state(z), 'Z', "zombie {z}");
        let st = read_stat(z).expect("stat");
        assert_eq!(st.ppid, zparent);
        assert_eq!(st.pgrp, pgid);
    }

    // Stopped: state T.
    assert_eq!(info.stopped.len(), 2);
    for &s in &info.stopped {
        assert_eq!(state(s), 'T', "stopped {s}");
    }

    // D state.
    assert_eq!(info.dstate.len(), 1);
    for &d in &info.dstate {
        assert_eq!(state(d), 'D', "dstate {d}");
    }
    for &h in &info.dstate_helpers {
        assert_eq!(read_stat(h).expect("helper").ppid, info.dstate[0]);
    }

    // Ping-pong: two live processes doing context switches.
    assert_eq!(info.pingpong.len(), 2);
    for &p in &info.pingpong {
        assert!(matches!(state(p), 'S' | 'R'), "pingpong {p}");
    }

    // Odd names: comm truncated to 15 bytes, cmdline exactly the argv.
    assert!(info.odd.len() >= 10);
    for odd in &info.odd {
        let mut want_comm = kernel_comm(&odd.comm);
        want_comm.push(b'\n');
        let comm = std::fs::read(format!("/proc/{}/comm", odd.pid)).expect("comm");
        assert_eq!(comm, want_comm, "comm of {:?}", odd.comm);
        let mut want_cmdline = Vec::new();
        for a in &odd.argv {
            want_cmdline.extend_from_slice(a.as_bytes());
            want_cmdline.push(0);
        }
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", odd.pid)).expect("cmdline");
        assert_eq!(cmdline, want_cmdline, "cmdline of {:?}", odd.comm);
        let st = read_stat(odd.pid).expect("stat");
        assert_eq!(st.comm, kernel_comm(&odd.comm));
        assert_eq!(st.pgrp, pgid);
    }
    let comms: Vec<&str> = info.odd.iter().map(|o| o.comm.as_str()).collect();
    for must in ["a b", "((a) b)", ") x (", "a\nb", "a\tb", "naïve✓日本", ""] {
        assert!(comms.contains(&must), "missing odd comm {must:?}");
    }
    assert!(info
        .odd
        .iter()
        .any(|o| o.argv.iter().any(|a| a.len() >= 5000)));
    assert!(info
        .odd
        .iter()
        .any(|o| o.argv.iter().skip(1).any(String::is_empty)));

    // Everything reported is in the group, and the group holds nothing else
    // besides the vfork helper(s).
    let members = group_members(pgid);
    let mut known = info.known_pids();
    known.sort_unstable();
    for p in &known {
        assert!(members.contains(p), "{p} not in group {pgid}");
    }
    assert_eq!(members, known);

    let start = Instant::now();
    drop(load);
    assert!(
        eventually(Duration::from_secs(2), || leftovers(&members, pgid)
            .is_empty()),
        "leftovers after drop: {:?}",
        leftovers(&members, pgid)
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(!group_exists(pgid));
}

#[test]
fn find_binary_and_spawn() {
    assert!(find_binary().is_some(), "find_binary found nothing");
    let mut load = Load::spawn(&["--procs", "3"]).expect("spawn");
    assert_eq!(load.info.procs_count, 3);
    assert!(
        load.info.procs.is_empty(),
        "pids listed without --list-pids"
    );
    assert_eq!(group_members(load.pgid()).len(), 4);
    load.stop().expect("stop");
    assert!(!group_exists(load.pgid()));
}

#[test]
fn kill_group_leaves_nothing() {
    let mut load = spawn_words("--procs 5 --stopped 2 --dstate --threads 3");
    let pgid = load.pgid();
    let members = group_members(pgid);
    assert!(members.len() >= 10);
    let start = Instant::now();
    load.kill_group().expect("kill_group");
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(leftovers(&members, pgid).is_empty());
}

#[test]
fn sigkill_of_loadgen_takes_children_down() {
    let load = spawn_words(
        "--procs 5 --stopped 2 --dstate --threads 2 --odd-names --zombies 1 --list-pids",
    );
    let info = load.info.clone();
    // SAFETY: the loadgen is our un-reaped child (owned by `load`).
    unsafe { libc::kill(load.pid(), libc::SIGKILL) };
    // Every task must die through PR_SET_PDEATHSIG. Orphans become zombies
    // of init, which reaps them when it gets to it: accept Z or gone.
    let all = info.known_pids();
    assert!(
        eventually(Duration::from_secs(2), || all.iter().all(
            |&p| read_stat(p).map_or(true, |s| s.state == 'Z' || s.pgrp != info.pgid)
        )),
        "still alive: {:?}",
        all.iter()
            .filter_map(|&p| read_stat(p).ok())
            .filter(|s| s.state != 'Z')
            .collect::<Vec<_>>()
    );
    drop(load);
}

#[test]
fn seconds_flag_exits_zero_and_reaps_everything() {
    let (mut child, info) = spawn_raw(
        &[
            "--procs",
            "4",
            "--zombies",
            "3",
            "--stopped",
            "1",
            "--dstate",
            "--threads",
            "2",
            "--seconds",
            "0.3",
        ],
        Stdio::null(),
    );
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("loadgen exits");
    assert!(status.success(), "{status:?}");
    // The loadgen reaps everything (zombies included, as subreaper) before
    // exiting: nothing may be left at all.
    assert!(!group_exists(info.pgid), "{:?}", group_members(info.pgid));
}

#[test]
fn stdin_eof_and_sigint_end_the_load() {
    let (mut child, info) = spawn_raw(
        &["--procs", "3", "--zombies", "1", "--until-stdin-eof"],
        Stdio::piped(),
    );
    assert!(wait_timeout(&mut child, Duration::from_millis(300)).is_none());
    drop(child.stdin.take());
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("exit on EOF");
    assert!(status.success(), "{status:?}");
    assert!(!group_exists(info.pgid), "{:?}", group_members(info.pgid));

    let (mut child, info) = spawn_raw(&["--procs", "3", "--stopped", "1"], Stdio::null());
    // SAFETY: our un-reaped child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("exit on SIGINT");
    assert!(status.success(), "{status:?}");
    assert!(!group_exists(info.pgid), "{:?}", group_members(info.pgid));
}

#[test]
fn bad_arguments_fail_cleanly() {
    let err = Load::spawn_with_binary(BIN, &["--procs", "2", "--seconds=-1"])
        .expect_err("negative seconds must fail");
    assert!(format!("{err:#}").contains("without a report"), "{err:#}");
}

/// Scale check, ignored by default: needs `kernel.pid_max` above ~60000
/// (`sysctl -w kernel.pid_max=4194304`) and several GB of RAM. Run with
/// `cargo test -p tasksnap-loadgen --release -- --ignored --nocapture`.
#[test]
#[ignore]
fn fifty_thousand_procs() {
    let start = Instant::now();
    let load = Load::spawn_with_binary(BIN, &["--procs", "50000"]).expect("spawn 50k");
    let spawned = start.elapsed();
    assert_eq!(load.info.procs_count, 50_000);
    assert_eq!(group_members(load.pgid()).len(), 50_001);
    let pgid = load.pgid();
    let start = Instant::now();
    drop(load);
    let torn_down = start.elapsed();
    assert!(!group_exists(pgid));
    eprintln!("50k procs: spawn {spawned:?}, teardown {torn_down:?}");
}

/// `--zoo`: the byte-named processes carry exactly their bytes (comm and command line), the
/// one that is not UTF-8 belongs to nobody when we are root, the zombie and the D-state task
/// are in their states, the pid namespace holds two tasks (as root), and all of it goes with
/// the load.
#[test]
fn zoo_holds_its_hostile_tasks_and_leaves_nothing() {
    let mut load = Load::spawn_with_binary(BIN, &["--zoo"]).expect("spawn the zoo");
    let info = load.info.clone();
    assert_eq!(info.byte_named.len(), 3, "{info:?}");
    let root = own_euid() == 0;
    let comm = |pid: i32| std::fs::read(format!("/proc/{pid}/comm")).expect("comm");
    let cmdline = |pid: i32| std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    let bad = info.byte_named[0];
    assert_eq!(comm(bad), b"lg-x\xff\xfe\n");
    assert_eq!(cmdline(bad), b"/tmp/x\xff\x00600\xfe\x00ok\x00");
    // status begins with the name: bytes, not text.
    let owner =
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{bad}/status")).expect("status"))
            .lines()
            .find_map(|l| {
                l.strip_prefix("Uid:")
                    .map(|v| v.split_whitespace().next().map(String::from))
            })
            .flatten();
    if root {
        assert_eq!(
            owner.as_deref(),
            Some("65534"),
            "the not-UTF-8 process runs as nobody"
        );
    }
    assert_eq!(comm(info.byte_named[1]), b"nl\nna\rme\n");
    assert_eq!(cmdline(info.byte_named[1]), b"nl\nname\r\0cr\rlf\n\0");
    assert!(cmdline(info.byte_named[2]).len() > 64 * 1024);
    assert_state(info.zombies[0], &['Z'], "zoo zombie");
    assert_state(info.dstate[0], &['D'], "zoo D-state task");
    assert!(!info.odd.is_empty());
    if root {
        let outer = info.pidns.expect("a pid namespace as root");
        let kids = std::fs::read(format!("/proc/{outer}/task/{outer}/children")).expect("children");
        let init: i32 = String::from_utf8_lossy(&kids)
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the namespace's init");
        let status = String::from_utf8_lossy(
            &std::fs::read(format!("/proc/{init}/status")).expect("status"),
        )
        .into_owned();
        let nspid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .expect("NSpid");
        assert_eq!(
            nspid.split_whitespace().last(),
            Some("1"),
            "pid 1 in its own namespace: {nspid}"
        );
    }
    let pgid = load.pgid();
    let members = group_members(pgid);
    load.stop().expect("stop");
    assert!(leftovers(&members, pgid).is_empty());
}

fn own_euid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).and_then(|u| u.parse().ok()))
        })
        .unwrap_or(u32::MAX)
}
