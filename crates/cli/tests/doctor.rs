//! `tasksnap doctor` reports the host's facts and the cost of /proc, and its exit code says
//! whether something is wrong.

mod common;

use std::process::Command;
use tasksnap_loadgen::skip_unless_root;

use common::TASKSNAP;

#[test]
fn doctor_reports_the_facts_tasksnap_depends_on() {
    let out = Command::new(TASKSNAP)
        .arg("doctor")
        .output()
        .expect("run doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    for key in [
        "kernel",
        "btf",
        "privileges",
        "bpf",
        "exits",
        "hidepid",
        "delayacct",
        "tasks",
        "/proc/stat",
        "per task",
        "ps backend",
        "problem",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(key)),
            "no {key:?} line in:\n{text}"
        );
    }
    let problems = text.lines().filter(|l| l.starts_with("problem ")).count();
    // The exit code follows the problems found.
    assert_eq!(out.status.success(), problems == 0, "{text}");
    // The task count is the machine's, not a placeholder.
    let procs: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("tasks"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a process count");
    assert!(procs > 1);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert!(text.contains("bpf          usable"), "{text}");
        assert!(text.contains("exits        bpf:"), "{text}");
    } else {
        assert!(
            text.contains("bpf          unavailable: not root"),
            "{text}"
        );
        assert!(text.contains("exits        none:"), "{text}");
    }
}

#[test]
fn doctor_says_the_taskstats_exit_source_when_it_is_the_one() {
    skip_unless_root!("the taskstats exit source");
    let out = Command::new(TASKSNAP)
        .arg("doctor")
        .env("TASKSNAP_EXITS", "taskstats")
        .output()
        .expect("run doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    let exits = text
        .lines()
        .find(|l| l.starts_with("exits "))
        .unwrap_or_else(|| panic!("no exits line in:\n{text}"));
    assert!(
        exits.contains("taskstats:") && exits.contains("no command line"),
        "{exits}"
    );
}

#[test]
fn a_closed_pipe_ends_doctor_quietly() {
    let out = common::ps::close_stdout_after(&["doctor"], 8);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.code().is_some(),
        "killed by a signal: {:?}",
        out.status
    );
}
