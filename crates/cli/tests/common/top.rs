//! `top -b` read back: its frames parsed ([`frames`]), the exited count of a "Tasks:" line,
//! a running `top -b --exited` read up to its first frame's column header ([`ExitedTop`]),
//! and a copy of sh under a name of its own, whose processes a test tells from any other.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{ChildStdout, Command, Stdio};

use super::{Guard, TASKSNAP};

/// One batch frame.
pub struct Frame {
    /// Its header lines, from the `top - ` line to the last before the column header.
    pub header: Vec<String>,
    /// The column header, split.
    pub columns: Vec<String>,
    /// Its rows, split into the columns (COMMAND, the last, joined back with single spaces).
    pub rows: Vec<Vec<String>>,
}

impl Frame {
    /// The row of `pid`, the first if there are several.
    pub fn row(&self, pid: i32) -> Option<&Vec<String>> {
        let pid = pid.to_string();
        self.rows.iter().find(|r| r.first() == Some(&pid))
    }

    /// The header line that starts with `start` (`Tasks:`, `replay `).
    pub fn header_line(&self, start: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|h| h.starts_with(start))
            .map(String::as_str)
    }
}

/// The frames of `top -b`'s output: each starts at a `top - ` line; blank lines between its
/// parts are passed over.
pub fn frames(out: &str) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    for line in out.lines() {
        if line.starts_with("top - ") {
            frames.push(Frame {
                header: vec![line.to_string()],
                columns: Vec::new(),
                rows: Vec::new(),
            });
            continue;
        }
        let Some(f) = frames.last_mut() else { continue };
        if line.trim().is_empty() {
            continue;
        }
        if f.columns.is_empty() && line.trim_start().starts_with("PID ") {
            f.columns = line.split_whitespace().map(str::to_string).collect();
        } else if f.columns.is_empty() {
            f.header.push(line.to_string());
        } else {
            let before_command = f.columns.len() - 1;
            let mut row: Vec<String> = line
                .split_whitespace()
                .take(before_command)
                .map(str::to_string)
                .collect();
            let command: Vec<&str> = line.split_whitespace().skip(before_command).collect();
            row.push(command.join(" "));
            f.rows.push(row);
        }
    }
    frames
}

/// The count of exited processes on a "Tasks:" line (`..., 0 zombie,   2 exited (0.4% CPU)`).
pub fn exited_count(tasks: &str) -> usize {
    tasks
        .find(" exited (")
        .and_then(|at| tasks[..at].rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no exited count in {tasks:?}"))
}

/// A copy of sh under a name of its own (its comm), in a temporary directory: what a test
/// spawns is told from every other `sh` on a busy host. The directory (removed on drop), the
/// copy's path and its name.
pub fn own_sh(tag: &str) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = format!("tsx{tag}{}", std::process::id() % 1_000_000);
    let path = dir.path().join(&name);
    std::fs::copy("/bin/sh", &path).expect("copy /bin/sh");
    (dir, path, name)
}

/// A running `top -b --exited -n 3 -d 1` (C locale, no `COLUMNS`), read up to its first
/// frame's column header: the exit records are loaded by then (with the warm-up refresh
/// before it). Killed on drop.
pub struct ExitedTop {
    top: Guard,
    out: BufReader<ChildStdout>,
    /// What it printed so far.
    pub text: String,
}

impl ExitedTop {
    pub fn start() -> ExitedTop {
        let mut top = Guard::spawn(
            Command::new(TASKSNAP)
                .args(["top", "-b", "--exited", "-n", "3", "-d", "1"])
                .env_remove("COLUMNS")
                .env("LC_ALL", "C")
                .stdout(Stdio::piped()),
        )
        .expect("start top");
        let mut out = BufReader::new(top.0.stdout.take().expect("top's stdout"));
        let mut text = String::new();
        loop {
            let mut line = String::new();
            let n = out.read_line(&mut line).expect("read top's output");
            assert!(n > 0, "top ended before its first frame: {text}");
            text.push_str(&line);
            if line.trim_start().starts_with("PID ") {
                break;
            }
        }
        ExitedTop { top, out, text }
    }

    /// Reads the rest, to top's end, which must be a success: all it printed.
    pub fn finish(mut self) -> String {
        self.out
            .read_to_string(&mut self.text)
            .expect("read top's output");
        let status = self.top.0.wait().expect("wait for top");
        assert!(status.success(), "top exited {status:?}\n{}", self.text);
        std::mem::take(&mut self.text)
    }
}
