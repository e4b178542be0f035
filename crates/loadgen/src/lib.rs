//! Library half of `tasksnap-loadgen`: the JSON schema the binary prints
//! ([`LoadInfo`]), small `/proc` readers used to check task states, and
//! [`Load`], an RAII handle that runs the binary, parses its one-line JSON
//! report and tears the whole process group down on drop; [`planted`], what the
//! hostile-directory tests plant around a store; and [`reachable`], what a test runs as
//! another user, staged where that user can reach it.
//!
//! The binary itself (src/main.rs and its modules) owns the forking; this
//! library never forks except through [`std::process::Command`].
//!
//! Typical use from another crate's integration tests (add
//! `tasksnap-loadgen` as a dev-dependency and build the binary first with
//! `cargo build -p tasksnap-loadgen`, since cargo does not build binaries of
//! dependencies):
//!
//! ```no_run
//! let load = tasksnap_loadgen::Load::spawn(&["--procs", "10", "--zombies", "1"])?;
//! for &pid in &load.info.zombies {
//!     assert_eq!(tasksnap_loadgen::read_stat(pid)?.state, 'Z');
//! }
//! drop(load); // SIGTERM to the loadgen, then SIGKILL to the group as a backstop
//! # anyhow::Ok(())
//! ```
#![deny(missing_docs)]

pub mod cpu_cgroup;
pub mod planted;
pub mod reachable;
mod spawned;

pub use spawned::{Guard, ProcessGroup};

use std::io::{self, BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub mod fake_proc;

/// File name of the load generator binary.
pub const BINARY_NAME: &str = "tasksnap-loadgen";

/// Environment variable that, when set, overrides [`find_binary`].
pub const BINARY_ENV: &str = "TASKSNAP_LOADGEN_BIN";

/// Kernel `TASK_COMM_LEN`: comm holds at most `TASK_COMM_LEN - 1` bytes.
pub const TASK_COMM_LEN: usize = 16;

/// How long [`Load::stop`] lets the loadgen clean up after itself before
/// falling back to `kill(-pgid, SIGKILL)`: 30 s plus 1 ms per task (tearing
/// down 50k processes takes several seconds).
fn graceful_timeout(info: &LoadInfo) -> Duration {
    Duration::from_secs(30) + Duration::from_millis(info.procs_count as u64)
}

/// How long [`Load::stop`] and [`Load::kill_group`] wait for the group to be
/// empty once everything was SIGKILLed: 5 s plus 1 ms per task.
fn group_gone_timeout(info: &LoadInfo) -> Duration {
    Duration::from_secs(5) + Duration::from_millis(info.procs_count as u64)
}

/// One process with a hostile comm and cmdline (spawned by `--odd-names`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OddTask {
    /// Process id.
    pub pid: i32,
    /// The name passed to `prctl(PR_SET_NAME)`, untruncated; see
    /// [`kernel_comm`] for what `/proc/<pid>/comm` holds.
    pub comm: String,
    /// The exact argv passed to `execve`, as `/proc/<pid>/cmdline` shows it.
    pub argv: Vec<String>,
}

/// The one JSON line the loadgen prints on stdout once every task exists
/// and is in its intended state. Fields that do not apply are omitted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadInfo {
    /// Process group of the whole load (== `leader`).
    pub pgid: i32,
    /// Pid of the loadgen process itself.
    pub leader: i32,
    /// Number of plain sleeping processes (`--procs`).
    pub procs_count: usize,
    /// Their pids; only filled with `--list-pids`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub procs: Vec<i32>,
    /// `--wakers`: the pids (sorted, always listed) of the `--procs` processes that wake
    /// every `wake_period_ms` (comm `lg-waker`); they count in `procs_count` and `procs`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wakers: Vec<i32>,
    /// `--wake-period-ms` when there are `wakers`.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub wake_period_ms: u64,
    /// Process holding the `--threads` extra threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_pid: Option<i32>,
    /// Tids of the extra threads (the main thread `threads_pid` excluded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thread_tids: Vec<i32>,
    /// Processes with hostile comm/cmdline (`--odd-names`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub odd: Vec<OddTask>,
    /// Zombie pids (state Z), children of `zombie_parent`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zombies: Vec<i32>,
    /// The loadgen child that never reaps `zombies`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zombie_parent: Option<i32>,
    /// Processes with locked memory (`--mlocked`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mlocked: Vec<i32>,
    /// Processes stopped with SIGSTOP (state T).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<i32>,
    /// Tasks in uninterruptible sleep (state D).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dstate: Vec<i32>,
    /// Helper processes that keep the `dstate` tasks blocked (vfork children).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dstate_helpers: Vec<i32>,
    /// `--mmap-lock-storm`: the process whose mmap lock is held for seconds at a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmap_lock_storm: Option<i32>,
    /// The two `--pipe-pingpong` processes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pingpong: Vec<i32>,
    /// `--churn`: the process that keeps starting and reaping short-lived processes
    /// (comm `lg-churn`; absent with `--procs-per-sec 0`). Its children come and go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub churn_procs_pid: Option<i32>,
    /// `--churn`: at most this many children of `churn_procs_pid` exist at once.
    #[serde(skip_serializing_if = "is_zero")]
    pub churn_max_procs: usize,
    /// `--churn`: the process whose threads come and go (comm `lg-thrchurn`; absent with
    /// `--threads-per-sec 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub churn_threads_pid: Option<i32>,
    /// `--churn`: at most this many threads besides its main one exist at once in
    /// `churn_threads_pid`.
    #[serde(skip_serializing_if = "is_zero")]
    pub churn_max_threads: usize,
    /// `--signals`: the process with blocked, ignored, caught and pending signals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<i32>,
    /// `--signals`: its extra thread (a signal pending for it alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_thread: Option<i32>,
    /// `--busy`: processes spinning on a CPU forever (comm `lg-busy`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<i32>,
    /// `--zoo`: the processes named with bytes (not UTF-8, newline and CR, 64 KiB of
    /// arguments).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub byte_named: Vec<i32>,
    /// `--zoo` as root: the process that made a pid namespace (its child is pid 1 there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pidns: Option<i32>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl LoadInfo {
    /// Every process pid named in the report (thread tids excluded),
    /// including the leader. `procs` is only complete with `--list-pids`; the
    /// short-lived children of `--churn` are not named.
    pub fn known_pids(&self) -> Vec<i32> {
        let mut v = vec![self.leader];
        v.extend(&self.procs);
        if self.procs.is_empty() {
            v.extend(&self.wakers);
        }
        v.extend(self.threads_pid);
        v.extend(self.odd.iter().map(|o| o.pid));
        v.extend(&self.zombies);
        v.extend(self.zombie_parent);
        v.extend(&self.stopped);
        v.extend(&self.mlocked);
        v.extend(&self.dstate);
        v.extend(&self.dstate_helpers);
        v.extend(&self.pingpong);
        v.extend(self.churn_procs_pid);
        v.extend(self.churn_threads_pid);
        v.extend(&self.busy);
        v.extend(self.signals);
        v.extend(&self.byte_named);
        v.extend(self.pidns);
        v
    }
}

/// What `/proc/<pid>/comm` holds (minus the trailing newline) after
/// `prctl(PR_SET_NAME, name)`: the first 15 bytes, possibly cutting a UTF-8
/// sequence in half.
pub fn kernel_comm(name: &str) -> Vec<u8> {
    let b = name.as_bytes();
    b[..b.len().min(TASK_COMM_LEN - 1)].to_vec()
}

/// The few fields of `/proc/<pid>/stat` the tests care about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 1.
    pub pid: i32,
    /// Field 2 without the parentheses, raw bytes.
    pub comm: Vec<u8>,
    /// Field 3: R, S, D, T, t, Z, X, I, ...
    pub state: char,
    /// Field 4.
    pub ppid: i32,
    /// Field 5.
    pub pgrp: i32,
}

/// Reads `/proc/<pid>/stat` (works for thread ids too) and keeps the [`ProcStat`] fields,
/// parsed by the one stat parser (tasksnap-procfs: the comm ends at the *last* `)`, so
/// hostile names are handled).
pub fn read_stat(pid: i32) -> io::Result<ProcStat> {
    let buf = std::fs::read(format!("/proc/{pid}/stat"))?;
    let st = tasksnap_procfs::parse::parse_stat(&buf).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unparsable /proc/{pid}/stat: {e}"),
        )
    })?;
    Ok(ProcStat {
        pid: st.pid,
        comm: st.comm,
        state: char::from(st.state),
        ppid: st.ppid,
        pgrp: st.pgrp,
    })
}

/// Pids of all processes (zombies included) whose process group is `pgid`,
/// found by scanning `/proc`. Sorted. This reads every `/proc/<pid>/stat`
/// (about a second with 50k processes); [`group_exists`] is O(1).
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<i32> = dir
        .filter_map(|e| tasksnap_procfs::parse::parse_task_dir_name(&e.ok()?.file_name()))
        .filter(|&pid| read_stat(pid).is_ok_and(|s| s.pgrp == pgid))
        .collect();
    out.sort_unstable();
    out
}

/// True while the process group `pgid` has at least one member (zombies
/// count until reaped).
pub fn group_exists(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks existence/permission; nothing is sent.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Locates the `tasksnap-loadgen` binary: `$TASKSNAP_LOADGEN_BIN`, then
/// `$CARGO_BIN_EXE_tasksnap-loadgen` if set at run time, then a file named
/// `tasksnap-loadgen` in the directories above the current executable
/// (`target/<profile>/deps/..` and `target/<profile>/`), which is where cargo
/// puts it once `cargo build -p tasksnap-loadgen` (or this crate's own tests)
/// ran with the same target directory and profile.
pub fn find_binary() -> Option<PathBuf> {
    for var in [BINARY_ENV, "CARGO_BIN_EXE_tasksnap-loadgen"] {
        if let Some(p) = std::env::var_os(var) {
            let p = PathBuf::from(p);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join(BINARY_NAME))
        .find(|cand| cand.is_file())
}

/// A running load. Dropping it tears the whole process group down.
#[derive(Debug)]
pub struct Load {
    /// What the loadgen reported.
    pub info: LoadInfo,
    child: Child,
    stdin: Option<ChildStdin>,
    finished: bool,
}

impl Load {
    /// Runs the binary found by [`find_binary`] with `args` (loadgen flags,
    /// e.g. `["--procs", "10"]`) and waits for its JSON report.
    pub fn spawn(args: &[&str]) -> Result<Load> {
        let bin = find_binary().with_context(|| {
            format!(
                "{BINARY_NAME} binary not found: run `cargo build -p tasksnap-loadgen` \
                 with the same target dir/profile, or set {BINARY_ENV}"
            )
        })?;
        Self::spawn_with_binary(bin, args)
    }

    /// Like [`Load::spawn`] with an explicit binary path (inside this crate's
    /// tests: `env!("CARGO_BIN_EXE_tasksnap-loadgen")`).
    ///
    /// The loadgen is started in a fresh process group (so `pgid == pid`)
    /// with `--until-stdin-eof` added: if the calling process dies, the
    /// stdin pipe closes and the loadgen cleans up by itself.
    pub fn spawn_with_binary(binary: impl AsRef<Path>, args: &[&str]) -> Result<Load> {
        let binary = binary.as_ref();
        let mut cmd = Command::new(binary);
        cmd.args(args);
        if !args.contains(&"--until-stdin-eof") {
            cmd.arg("--until-stdin-eof");
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", binary.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        // From here on, `load`'s Drop cleans up whatever happens.
        let mut load = Load {
            info: LoadInfo::default(),
            child,
            stdin,
            finished: false,
        };
        let stdout = stdout.context("loadgen stdout was not captured")?;
        let line = first_line(stdout).context("reading the loadgen JSON line")?;
        if line.trim().is_empty() {
            let status = load.child.wait().ok();
            load.finished = true;
            bail!("loadgen exited without a report (status {status:?})");
        }
        load.info = serde_json::from_str(line.trim_end())
            .with_context(|| format!("parsing loadgen report {line:?}"))?;
        let pid = load.pid();
        if load.info.pgid != pid || load.info.leader != pid {
            bail!(
                "loadgen reported pgid {} / leader {} but its pid is {pid}",
                load.info.pgid,
                load.info.leader
            );
        }
        Ok(load)
    }

    /// Pid of the loadgen process.
    pub fn pid(&self) -> i32 {
        // Pids fit in i32 on Linux (pid_max <= 2^22).
        self.child.id() as i32
    }

    /// Process group of the load (always equal to [`Load::pid`]).
    pub fn pgid(&self) -> i32 {
        self.pid()
    }

    /// Orderly teardown (also what `Drop` does): close the loadgen's stdin and
    /// send it SIGTERM so that it SIGKILLs and reaps every task of its group
    /// (it is a child subreaper, so orphaned zombies are reaped too), wait for
    /// it; then, as a backstop, `kill(-pgid, SIGKILL)` if anything of the
    /// group is left, and wait until the group is empty.
    pub fn stop(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let pid = self.pid();
        drop(self.stdin.take());
        // SAFETY: `pid` is our un-reaped child, so the pid cannot be recycled.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let start = Instant::now();
        let mut exited = false;
        let grace = graceful_timeout(&self.info);
        while start.elapsed() < grace {
            if self.child.try_wait()?.is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.kill_group_inner(exited)
    }

    /// Immediate teardown: `kill(-pgid, SIGKILL)` (the loadgen included),
    /// wait for the loadgen and then for the group to be empty. Note that
    /// zombies whose parent died this way are reparented to init; whether
    /// and when they are reaped depends on init.
    pub fn kill_group(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.kill_group_inner(false)
    }

    fn kill_group_inner(&mut self, reaped: bool) -> Result<()> {
        let pgid = self.pgid();
        // The loadgen was started with process_group(0), so its pid is the
        // pgid. Before it is reaped the number cannot be reused; afterwards
        // only kill while the group still exists.
        if pgid > 1 && (!reaped || group_exists(pgid)) {
            // SAFETY: plain syscall; pgid > 1 so this never targets our
            // own group (0) or every process (-1).
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        if !reaped {
            self.child.wait()?;
        }
        let start = Instant::now();
        let timeout = group_gone_timeout(&self.info);
        while group_exists(pgid) {
            if start.elapsed() > timeout {
                bail!(
                    "process group {pgid} still has members: {:?}",
                    group_members(pgid)
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("tasksnap-loadgen: cleanup of load {}: {e:#}", self.pid());
        }
    }
}

/// One round of the seed's mmap-lock queue: maps the first `len` bytes of the open file `fd`
/// read-only with `MAP_POPULATE` (which faults every page in while holding the process's mmap
/// lock for reading, after taking it for writing to map) and unmaps them (writing again).
/// Threads doing this in a loop queue on the lock as the seed's query threads did. True when
/// the mapping was made.
pub fn map_populated_once(fd: std::os::fd::RawFd, len: usize) -> bool {
    // SAFETY: maps `len` bytes of a file the caller keeps open, read-only and private; the
    // mapping is unmapped at once and never dereferenced.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_POPULATE,
            fd,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, len);
    }
    true
}

/// `/proc/PID/FILE` as text (lossy), or None when it cannot be read.
pub fn proc_text(pid: i32, file: &str) -> Option<String> {
    std::fs::read(format!("/proc/{pid}/{file}"))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// For a test that needs root (BPF, other users' /proc files): true as root; otherwise it
/// says why the test is skipped, or fails it when CI set `TASKSNAP_REQUIRE_PRIVILEGED=1`
/// (where a skipped privileged test is a failure).
pub fn root_or_skip(what: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") {
        panic!("{what} needs root and TASKSNAP_REQUIRE_PRIVILEGED=1 forbids skipping it");
    }
    eprintln!("SKIP {what}: needs root (run as root, or it is checked in CI)");
    false
}

/// The first line of a test that needs root: returns from the test, skipped, unless
/// [`root_or_skip`] says it may run.
///
/// ```no_run
/// # fn a_test() {
/// tasksnap_loadgen::skip_unless_root!("the BPF backend");
/// // ... what needs root
/// # }
/// ```
#[macro_export]
macro_rules! skip_unless_root {
    ($what:expr) => {
        if !$crate::root_or_skip($what) {
            return;
        }
    };
}

/// Whether `pid` is a `sleep` that has finished starting: its image is sleep's (comm and
/// command line; an exec is not atomic for /proc, and the dynamic loader maps libraries
/// after it) and it is blocked in its nanosleep, from where nothing moves until it is killed.
/// Right after the fork it is still exec'ing and loading, which on a busy host takes long:
/// tests that compare two views of a spawned sleeper wait for this first.
pub fn settled_sleep(pid: i32) -> bool {
    let in_nanosleep = proc_text(pid, "wchan").is_some_and(|w| w.contains("nanosleep"))
        || std::fs::read(format!("/proc/{pid}/syscall"))
            .ok()
            .and_then(|s| tasksnap_procfs::parse::parse_syscall_nr(&s))
            .is_some_and(|n| n == libc::SYS_clock_nanosleep || n == libc::SYS_nanosleep);
    proc_text(pid, "comm").as_deref() == Some("sleep\n")
        && proc_text(pid, "cmdline").is_some_and(|c| c.starts_with("sleep\0"))
        && read_stat(pid).is_ok_and(|st| st.state == 'S')
        && in_nanosleep
}

/// The arguments of a load with a task in every state a listing must show: `procs` sleeping
/// processes, `threads` threads in one of them, the odd names, 2 zombies, 2 stopped
/// processes, a D-state task and `--list-pids`, then `more` (`--mlocked 2`, `--signals`...).
pub fn every_state_args<'a>(procs: &'a str, threads: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--procs",
        procs,
        "--threads",
        threads,
        "--odd-names",
        "--zombies",
        "2",
        "--stopped",
        "2",
        "--dstate",
        "--list-pids",
    ];
    args.extend_from_slice(more);
    args
}

/// Polls `f` every 5 ms until it returns true (then true) or `timeout` has passed (then
/// false): for a test that checks how long something takes, not only that it happens.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The first line a child writes to `out` (its piped stdout), newline included; empty when
/// it closed `out` without writing.
pub fn first_line(out: impl io::Read) -> io::Result<String> {
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    Ok(line)
}

/// Waits (up to 30 s, polling every 10 ms) until `cond` holds; panics naming `what` when it
/// does not. For tests: a deadline generous enough for a saturated host.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The CPU time of process `pid` so far, ns, from its CPU clock (exact and up to date, unlike
/// /proc's tick-based times); None when the process is gone or not ours to ask.
pub fn cpu_clock_ns(pid: i32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls write only the values they are given.
    let ok = unsafe {
        libc::clock_getcpuclockid(pid, &mut clock) == 0 && libc::clock_gettime(clock, &mut ts) == 0
    };
    ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Whether one read of `/proc/PID/cmdline` blocked for over 100 ms (the target's mmap lock
/// was held: see `--mmap-lock-storm`).
pub fn cmdline_read_blocks(pid: i32) -> bool {
    let t = Instant::now();
    let _ = std::fs::read(format!("/proc/{pid}/cmdline"));
    t.elapsed() > Duration::from_millis(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_truncation() {
        assert_eq!(
            kernel_comm("abcdefghijklmnopqrstuvwxyz"),
            b"abcdefghijklmno"
        );
        assert_eq!(kernel_comm("naïve✓日本"), "naïve✓日本".as_bytes());
        assert_eq!(kernel_comm("éééééééé").len(), 15);
    }

    #[test]
    fn info_roundtrip_omits_empty() {
        let info = LoadInfo {
            pgid: 5,
            leader: 5,
            ..LoadInfo::default()
        };
        let s = serde_json::to_string(&info).expect("serialize");
        assert_eq!(s, r#"{"pgid":5,"leader":5,"procs_count":0}"#);
        let back: LoadInfo = serde_json::from_str(&s).expect("deserialize");
        assert_eq!(back, info);
    }
}
