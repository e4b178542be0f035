//! What the exit-record tests share (exits_bpf.rs, exits_taskstats.rs): the children they
//! spawn (the test binary run again with a role in an environment variable, played by each
//! binary's `child_role` test through [`play`]), reaping one with its rusage, draining a
//! source for one pid, one child's one exit record ([`exited`], [`killed`]) and what every
//! source must show of the three children ([`exit_3_shown`], [`sigkill_shown`],
//! [`threads_shown`]), a reading's exits of one child ([`exit_readings`], [`exits_in`]), and
//! the 10% comparison with the rusage.
#![allow(dead_code)] // Not every test binary that includes this module uses all of it.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use tasksnap_collect::testing::exits::Exits;
use tasksnap_collect::testing::host::{Host, ReadingOptions, Readings};
use tasksnap_model::{Exit, ExitReason, Reading};

/// A test binary's children: defines `ROLE` (the variable `$var` that gives a child its role),
/// the `child_role` test that plays it ([`play`] with `$prefix` and the CPU to burn), and
/// `spawn(role)`.
macro_rules! child_roles {
    ($var:literal, $prefix:literal, $cpu_ns:expr, $threads_cpu_ns:expr) => {
        const ROLE: &str = $var;

        /// The children's roles (run only in a child, with the variable set).
        #[test]
        fn child_role() {
            if let Ok(role) = std::env::var(ROLE) {
                $crate::exits_common::play(&role, $prefix, $cpu_ns, $threads_cpu_ns);
            }
        }

        /// Starts this binary in `role`.
        fn spawn(role: &str) -> std::process::Child {
            $crate::exits_common::spawn(ROLE, role)
        }
    };
}
pub(crate) use child_roles;

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

/// How a child ended: its wait status and the CPU its rusage says (user + system), ns.
pub struct Ended {
    pub status: i32,
    pub truth_ns: u64,
}

/// Runs this binary in `role` (variable `role_var`) to its exit with `code`; its exit record,
/// which must be the only one for it (not one per thread), and how it ended.
pub fn exited(exits: &mut Exits, role_var: &str, role: &str, code: i32) -> (Exit, Ended) {
    let child = spawn(role_var, role);
    let pid = child.id() as i32;
    let (status, truth_ns) = wait4(child);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == code,
        "{role}: wait status {status:#x}, not exit {code}"
    );
    let e = the_one_exit(exits, pid);
    (e, Ended { status, truth_ns })
}

/// Runs this binary in `role` (variable `role_var`), kills its group with SIGKILL after
/// 200 ms, and returns its exit record, which must be the only one for it.
pub fn killed(exits: &mut Exits, role_var: &str, role: &str) -> Exit {
    let child = spawn(role_var, role);
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill on our own child's process group (it leads it).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let (status, _) = wait4(child);
    assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
    the_one_exit(exits, pid)
}

/// The child that burns CPU and exits 3 (role `cpu3`) as every source shows it: its code and
/// wait status, its comm (`prefix`-cpu3), its times, the CPU its rusage says (within 10%),
/// its memory. Its record and how it ended, for what the source adds.
pub fn exit_3_shown(exits: &mut Exits, role_var: &str, prefix: &str) -> (Exit, Ended) {
    let (e, ended) = exited(exits, role_var, "cpu3", 3);
    assert_eq!(e.reason(), ExitReason::Code(3));
    assert_eq!(e.wait_status as i32, ended.status);
    assert_eq!(e.comm, format!("{prefix}-cpu3").as_bytes());
    assert!(e.exit_time_ns > e.start_time_ns);
    assert_eq!(e.utime_ns + e.stime_ns, e.cpu_ns);
    within_10_percent("exit 3", e.cpu_ns, ended.truth_ns);
    assert!(e.peak_rss_bytes > 0 && e.minflt > 0, "{e:#?}");
    (e, ended)
}

/// The child killed by SIGKILL (role `sleep`) as every source shows it: that signal.
pub fn sigkill_shown(exits: &mut Exits, role_var: &str) -> Exit {
    let e = killed(exits, role_var, "sleep");
    assert_eq!(
        e.reason(),
        ExitReason::Signal {
            signal: 9,
            core_dumped: false
        }
    );
    e
}

/// The child whose three threads burn CPU together (role `threads`) as every source shows
/// it: one record, exit 5, the leader's comm (`prefix`-threads, whichever thread was last:
/// the test harness names its threads), and the whole group's CPU, which ran at least
/// `min_ns`, within 10%.
pub fn threads_shown(exits: &mut Exits, role_var: &str, prefix: &str, min_ns: u64) -> Exit {
    let (e, Ended { truth_ns, .. }) = exited(exits, role_var, "threads", 5);
    assert_eq!(e.reason(), ExitReason::Code(5));
    assert_eq!(e.comm, format!("{prefix}-threads").as_bytes());
    assert!(truth_ns >= min_ns, "the group ran {truth_ns} ns");
    within_10_percent("three threads", e.cpu_ns, truth_ns);
    e
}

/// `host`'s readings with exits (no thread states), the first one read: no exits are
/// missing from them.
pub fn exit_readings(host: &Host) -> Readings {
    let mut readings = host
        .open_readings(ReadingOptions {
            states: false,
            exits: true,
            ..Default::default()
        })
        .expect("open the readings");
    assert_eq!(readings.exits_missing(), None);
    readings.read_mut().expect("first reading");
    readings
}

/// The exits in `r` of process `pid`, a child of this one.
pub fn exits_in(r: &Reading, pid: i32) -> Vec<Exit> {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    r.exits
        .iter()
        .filter(|e| e.id.tgid == pid && e.ppid == me)
        .cloned()
        .collect()
}

/// `pid`'s exit record from `exits` ([`exits_of`]): one, not one per thread.
fn the_one_exit(exits: &mut Exits, pid: i32) -> Exit {
    let mut found = exits_of(exits, pid);
    assert_eq!(
        found.len(),
        1,
        "one exit record for pid {pid}, not one per thread: {found:#?}"
    );
    found.remove(0)
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
