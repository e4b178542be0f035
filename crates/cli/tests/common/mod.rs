//! What the CLI's integration tests share, in one place: running the binary under test
//! ([`tasksnap`], [`tasksnap_within`], [`on_tree`]) and checking how it ended ([`ok`],
//! [`text`]), counting a store's samples ([`samples`]), processes that live between two
//! samples or frames ([`two_short_lived`]), and, by subject, the ps oracle ([`ps`]), ps's
//! specifier lists ([`specs`]), `serve` and a Prometheus scraping it ([`serve`]), recordings
//! ([`recording`]) and top's batch output ([`top`]). A test binary includes it with `mod common;`
//! and takes what it uses.
#![allow(dead_code)] // Not every test binary uses all of it.

pub mod ps;
pub mod recording;
pub mod serve;
pub mod specs;
pub mod top;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[allow(unused_imports)] // Not every test binary that includes this module needs them.
pub use tasksnap_loadgen::{root_or_skip, Guard};
use tasksnap_loadgen::{settled_sleep, wait_until, ProcessGroup};

/// The binary under test.
pub const TASKSNAP: &str = env!("CARGO_BIN_EXE_tasksnap");

/// Runs tasksnap with `args` to its end (stdin closed, no `COLUMNS`), whatever its exit.
pub fn tasksnap(args: &[&str]) -> Output {
    Command::new(TASKSNAP)
        .args(args)
        .stdin(Stdio::null())
        .env_remove("COLUMNS")
        .output()
        .expect("run tasksnap")
}

/// [`tasksnap`], which must succeed.
pub fn tasksnap_ok(args: &[&str]) -> Output {
    let out = tasksnap(args);
    ok(&out, &format!("tasksnap {args:?}"));
    out
}

/// [`tasksnap`] with a deadline, its stdout and stderr in files (a pipe left open by
/// something it started cannot hold it up): `None`, after SIGKILL, when it has not exited
/// within `limit` (it hangs).
pub fn tasksnap_within(args: &[&str], limit: Duration) -> Option<Output> {
    let t = tempfile::tempdir().expect("tempdir");
    let (o, e) = (t.path().join("out"), t.path().join("err"));
    let mut child = Command::new(TASKSNAP)
        .args(args)
        .stdin(Stdio::null())
        .env_remove("COLUMNS")
        .stdout(std::fs::File::create(&o).expect("out"))
        .stderr(std::fs::File::create(&e).expect("err"))
        .spawn()
        .expect("run tasksnap");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Output {
        status,
        stdout: std::fs::read(&o).expect("stdout"),
        stderr: std::fs::read(&e).expect("stderr"),
    })
}

/// [`tasksnap_within`] a minute: a hang fails the test rather than stalling it.
pub fn tasksnap_in_a_minute(args: &[&str]) -> Output {
    tasksnap_within(args, Duration::from_secs(60)).expect("tasksnap finished")
}

/// tasksnap reading the fake /proc tree at `root` (`TASKSNAP_PROC_ROOT`, with the page size
/// the tree says), stdin closed: the command, for arguments and more environment.
pub fn on_tree(root: &Path) -> Command {
    let mut c = Command::new(TASKSNAP);
    c.env("TASKSNAP_PROC_ROOT", root)
        .env_remove("TASKSNAP_PAGE_SIZE")
        .stdin(Stdio::null());
    c
}

/// /dev/full, open for writing: every write to it fails (ENOSPC).
pub fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full")
}

/// A command line's arguments, as typed: one space apart (so `"-p "` gives `-p` and `""`).
pub fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// Bytes a command printed, as text (lossy: for messages and assertions).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `out`'s stdout, after asserting that `what` succeeded (its stderr in the failure).
pub fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} exited {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Asserts that `out` ended with exit code `code` and said `said` on stderr; returns what it
/// said.
pub fn failed_saying(out: &Output, code: i32, said: &str, what: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert!(err.contains(said), "{what}: {said:?} not in {err:?}");
    err
}

/// How many samples the store in `dir` holds (the system table has a row per sample), or
/// why dump could not say (no store yet, a damaged one). Dump gets a minute: a hang fails.
pub fn sample_count(dir: &Path) -> Result<usize, String> {
    let dir = dir.to_str().expect("utf-8 path");
    let args = ["dump", "--dir", dir, "--what", "system", "--fields", "time"];
    let out = tasksnap_in_a_minute(&args);
    if !out.status.success() {
        return Err(format!(
            "dump exited {:?}: {}",
            out.status,
            text(&out.stderr)
        ));
    }
    Ok(text(&out.stdout).lines().count().saturating_sub(1))
}

/// [`sample_count`], which must succeed.
pub fn samples(dir: &Path) -> usize {
    sample_count(dir).unwrap_or_else(|e| panic!("samples of {}: {e}", dir.display()))
}

/// [`sample_count`] of a store being recorded: 0 until dump can read it.
pub fn samples_so_far(dir: &Path) -> usize {
    sample_count(dir).unwrap_or(0)
}

/// Two processes of `sh` (a path, or `"sh"`) that live `seconds`: one ends with `exit CODE`,
/// the other kills itself with SIGKILL. Waits for both and checks that they ended so; their
/// pids, the one that exited first.
pub fn two_short_lived(sh: impl AsRef<OsStr>, seconds: &str, code: i32) -> (u32, u32) {
    let spawn = |script: String| {
        Command::new(sh.as_ref())
            .args(["-c", &script])
            .spawn()
            .expect("spawn sh")
    };
    let mut coded = spawn(format!("sleep {seconds}; exit {code}"));
    let mut killed = spawn(format!("sleep {seconds}; kill -9 $$"));
    assert_eq!(coded.wait().expect("wait").code(), Some(code));
    assert!(killed.wait().expect("wait").code().is_none());
    (coded.id(), killed.id())
}

/// A `sleep 1000` in a process group of its own, settled asleep, and its pid.
pub fn sleeper() -> (ProcessGroup, i32) {
    let g = ProcessGroup::spawn(1, &["sleep", "1000"]).expect("spawn sleep");
    let pid = g.pids()[0];
    wait_until("the sleeper to settle", || settled_sleep(pid));
    (g, pid)
}
