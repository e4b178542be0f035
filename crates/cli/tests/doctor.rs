//! `tasksnap doctor` reports the host's facts and the cost of /proc, and its exit code says
//! whether something is wrong.

use std::process::Command;

const TASKSNAP: &str = env!("CARGO_BIN_EXE_tasksnap");

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
    } else {
        assert!(
            text.contains("bpf          unavailable: not root"),
            "{text}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_doctor_quietly() {
    use std::io::Read;
    let mut child = Command::new(TASKSNAP)
        .arg("doctor")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 8];
    child
        .stdout
        .as_mut()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("read");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.code().is_some(),
        "killed by a signal: {:?}",
        out.status
    );
}
