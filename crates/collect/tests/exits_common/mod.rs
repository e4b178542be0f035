//! What the exit-record tests share (exits_bpf.rs, exits_taskstats.rs): the children they
//! spawn (the test binary run again with a role in an environment variable, played by each
//! binary's `child_role` test through [`play`]), reaping one with its rusage, draining a
//! source for one pid, and the 10% comparison with the rusage.
#![allow(dead_code)] // Not every test binary that includes this module uses all of it.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use tasksnap_collect::testing::exits::Exits;
use tasksnap_model::Exit;

/// The process's own CPU time, ns.
fn process_cpu_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Names the process (its main thread: the harness runs the role on another thread, and
/// PR_SET_NAME would name that one; /proc/self/comm is the group leader's).
fn set_comm(name: &str) {
    std::fs::write("/proc/self/comm", name).expect("write /proc/self/comm");
}

fn spin_until_process_cpu(ns: u64) {
    let mut x = 0u64;
    while process_cpu_ns() < ns {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

/// Plays `role` in a child and ends it: `cpu3` burns `cpu_ns` and exits 3 (comm
/// `PREFIX-cpu3`); `sleep` sleeps a minute (to be killed); `true` exits 0 at once; `threads`
/// spins three threads until the process has `threads_cpu_ns` and exits 5 while the others
/// still spin (the group's last thread may be any of the three).
pub fn play(role: &str, prefix: &str, cpu_ns: u64, threads_cpu_ns: u64) -> ! {
    match role {
        "cpu3" => {
            set_comm(&format!("{prefix}-cpu3"));
            spin_until_process_cpu(cpu_ns);
            // SAFETY: _exit ends the process at once (no test-harness teardown).
            unsafe { libc::_exit(3) };
        }
        "sleep" => {
            set_comm(&format!("{prefix}-sleep"));
            std::thread::sleep(Duration::from_secs(60));
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        "true" => {
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        "threads" => {
            set_comm(&format!("{prefix}-threads"));
            for _ in 0..2 {
                std::thread::spawn(|| spin_until_process_cpu(u64::MAX));
            }
            spin_until_process_cpu(threads_cpu_ns);
            // SAFETY: as above.
            unsafe { libc::_exit(5) };
        }
        other => panic!("unknown role {other}"),
    }
}

/// Starts this binary in `role` (given in the variable `role_var`), leading its own process
/// group (reaped by [`wait4`]).
pub fn spawn(role_var: &str, role: &str) -> std::process::Child {
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(role_var, role)
        .process_group(0)
        .spawn()
        .expect("spawn the child")
}

/// Waits for `child`; its wait status and rusage CPU (user + system), ns.
pub fn wait4(child: std::process::Child) -> (i32, u64) {
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it and status.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (status, tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Drains until `pid`'s exit came and a little after (a second one for it would come by
/// then); returns every exit of `pid` with this process as parent.
pub fn exits_of(exits: &mut Exits, pid: i32) -> Vec<Exit> {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let mut found = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut settle: Option<Instant> = None;
    while Instant::now() < deadline {
        let batch = exits.drain().expect("drain");
        found.extend(
            batch
                .exits
                .into_iter()
                .filter(|e| e.id.tgid == pid && e.ppid == me),
        );
        if !found.is_empty() && settle.is_none() {
            settle = Some(Instant::now() + Duration::from_millis(300));
        }
        if settle.is_some_and(|s| Instant::now() > s) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found
}

/// Asserts that `got_ns` of CPU is within 10% of the rusage's `truth_ns`.
pub fn within_10_percent(what: &str, got_ns: u64, truth_ns: u64) {
    let diff = got_ns.abs_diff(truth_ns) as f64;
    eprintln!("{what}: exit {got_ns} ns, rusage {truth_ns} ns");
    assert!(
        diff <= 0.10 * truth_ns as f64,
        "{what}: the exit says {got_ns} ns of CPU, wait4 rusage {truth_ns} ns"
    );
}
