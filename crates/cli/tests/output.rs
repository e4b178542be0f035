//! Where tasksnap's output goes wrong: a full disk (`/dev/full`), a closed standard output,
//! a reader that goes away, and arguments a command does not take. Each test is named after
//! the defect it keeps fixed.

mod common;

use std::process::{Command, Stdio};

use common::ps::*;
use common::*;

/// Runs tasksnap with `args`, stdout on /dev/full.
fn to_dev_full(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(TASKSNAP)
        .args(args)
        .stdout(dev_full())
        .stderr(Stdio::piped())
        .output()
        .expect("run tasksnap");
    (out.status.code(), text(&out.stderr))
}

/// `tasksnap --help`, `ps --help`, `ps L`, `ps -V` and `top -h` to /dev/full panicked
/// ("failed printing to stdout").
#[test]
fn help_to_dev_full_panics() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["ps", "--help"],
        &["ps", "L"],
        &["ps", "-V"],
        &["top", "-h"],
        &["states", "--help"],
    ] {
        let (code, err) = to_dev_full(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("write error"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `states ... >/dev/full`, `doctor >/dev/full` and `bench --json >/dev/full` exited 0
/// silently; ps and top's listings are checked too.
#[test]
fn write_errors_ignored() {
    for args in [
        &["doctor"][..],
        &["ps", "-ef"],
        &["ps", "--output", "json", "-e"],
        &["top", "-b", "-n", "1", "--backend", "procfs"],
        &[
            "states",
            "--mode",
            "procfs",
            "-p",
            "1",
            "--count",
            "1",
            "--interval",
            "0.2",
        ],
    ] {
        let (code, err) = to_dev_full(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("write error"), "{args:?}: {err}");
    }
}

/// `tasksnap ps -ef >&-` exited 0 with nothing printed (procps: "ps: write error", exit 1).
#[test]
fn ps_to_a_closed_stdout_exits_0() {
    let out = Command::new("sh")
        .args(["-c", &format!("exec {TASKSNAP} ps -ef >&-")])
        .stderr(Stdio::piped())
        .output()
        .expect("run sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("write error"), "{err}");
}

/// `doctor --x` and `pin extra` silently ignored what they were given.
#[test]
fn unknown_arguments_silently_ignored() {
    for args in [&["doctor", "--x"][..], &["pin", "extra"], &["unpin", "-f"]] {
        let out = run(TASKSNAP, &[], args, "C");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.code, Some(2), "{args:?}: {err}");
        assert!(err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} did something");
    }
}

/// Messages on a stderr that cannot be written (a full disk) panicked in `eprintln!`
/// (status 101); a message that cannot be written is dropped and the status stays.
#[test]
fn messages_to_a_full_stderr_panic() {
    for (args, want) in [
        (&["nosuch"][..], 2),
        (&["top", "-n", "0"], 1),
        (&["states", "-p", "99999999", "-n", "1"], 1),
        (&["doctor", "--x"], 2),
    ] {
        let status = Command::new(TASKSNAP)
            .args(args)
            .stdout(Stdio::null())
            .stderr(dev_full())
            .status()
            .expect("run tasksnap");
        assert_eq!(status.code(), Some(want), "{args:?}");
    }
}
