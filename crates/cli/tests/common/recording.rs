//! Recordings: where a test's store goes ([`store_dir`]), a store recorded by the binary
//! ([`record`], [`record_args`], [`start_recorder`]), a replayed thread's row as
//! `states --replay --json` gives it, and the Python with DuckDB that reads dumps
//! ([`duckdb_python`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use super::{ok, tasksnap, TASKSNAP};

/// The Python that has DuckDB (`TASKSNAP_DUCKDB_PYTHON`, which `./x test` sets up); `None`
/// (the check skipped, said) without it, a failure when privileged tests must run.
pub fn duckdb_python() -> Option<String> {
    match std::env::var("TASKSNAP_DUCKDB_PYTHON") {
        Ok(p) => Some(p),
        Err(_) if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") => {
            panic!("TASKSNAP_DUCKDB_PYTHON is not set (./x test sets it up)")
        }
        Err(_) => {
            eprintln!("SKIP: TASKSNAP_DUCKDB_PYTHON not set (./x test installs DuckDB)");
            None
        }
    }
}

/// A store's directory, `rec` in a temporary directory (removed on drop), not made yet.
pub fn store_dir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("rec");
    (t, dir)
}

/// `tasksnap record --dir DIR --interval SECONDS`, `--count N` when given, then `more`
/// (`--backend procfs`, `-q`...): the arguments, for a recorder run here or in the background.
pub fn record_args(dir: &Path, interval_s: &str, count: Option<u32>, more: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["record", "--dir", dir.to_str().expect("utf-8 path")]
        .into_iter()
        .chain(["--interval", interval_s])
        .map(str::to_owned)
        .collect();
    if let Some(n) = count {
        args.extend(["--count".to_owned(), n.to_string()]);
    }
    args.extend(more.iter().map(|&m| m.to_owned()));
    args
}

/// Records `count` samples `interval_s` seconds apart into `dir` and asserts the recorder
/// succeeded; returns its output (what it said is on stderr).
pub fn record(dir: &Path, interval_s: &str, count: u32, more: &[&str]) -> Output {
    let args = record_args(dir, interval_s, Some(count), more);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tasksnap(&args);
    ok(&out, "record");
    out
}

/// A quiet recorder (`-q`) started in the background: `count` samples `interval_s` seconds
/// apart into `dir`.
pub fn start_recorder(dir: &Path, interval_s: &str, count: u32) -> Child {
    Command::new(TASKSNAP)
        .args(record_args(dir, interval_s, Some(count), &["-q"]))
        .spawn()
        .expect("start the recorder")
}

/// The row of thread `tid` in `states --replay DIR --json -p TID -r 0` (the whole
/// recording), and the JSON it came in.
pub fn replayed_thread(dir: &str, tid: i32) -> serde_json::Value {
    let out = tasksnap(&[
        "states",
        "--replay",
        dir,
        "--json",
        "-p",
        &tid.to_string(),
        "-r",
        "0",
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&ok(&out, "states --replay")).expect("states json");
    v["threads"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["tid"] == tid))
        .cloned()
        .unwrap_or_else(|| panic!("thread {tid} not in {v}"))
}
