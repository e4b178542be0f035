//! The procfs collector under a low open-files limit, in a child process of its
//! own (the limit is per process): every task this test spawned is in the snapshot at every
//! limit from 5 up, and at 4, where not one file can be opened next to /proc, the snapshot is
//! an [`Error::Exhausted`], never a short list. Before the fix each reader held up to 256
//! descriptors and counted every EMFILE past the limit as "denied", leaving the task out.

use std::process::{Command, Stdio};
use tasksnap_loadgen::ProcessGroup;

use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::Collector;
use tasksnap_collect::Error;
use tasksnap_model::{Group, Groups, Query, Selector};

/// Child side: drops every inherited descriptor past stderr, sets RLIMIT_NOFILE to
/// TASKSNAP_NOFILE_CHILD, takes snapshots and prints what it found: one line per query,
/// `ok TID...` or `exhausted MESSAGE` or `error MESSAGE`.
#[test]
fn nofile_child() {
    let Some(limit) = std::env::var("TASKSNAP_NOFILE_CHILD")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    // SAFETY: this child process owns every descriptor past 2 (inherited ones it does not
    // use: the test harness's output goes to stdout/stderr), and sets its own limit.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let r = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &r), 0);
    }
    let groups = Groups::of(&[
        Group::Base,
        Group::Stat,
        Group::Cmdline,
        Group::CredEffective,
    ]);
    let mut out = String::new();
    for sel in [Selector::AllProcesses, Selector::AllThreads] {
        let r = ProcfsCollector::new().and_then(|mut c| {
            let mut q = Query::new(sel, groups);
            q.leader_as_process = true;
            c.snapshot(&q)
        });
        match r {
            Ok(s) => {
                out.push_str("ok");
                for t in &s.tasks {
                    out.push_str(&format!(" {}", t.id.tid));
                }
            }
            Err(e @ Error::Exhausted { .. }) => out.push_str(&format!("exhausted {e}")),
            Err(e) => out.push_str(&format!("error {e}")),
        }
        out.push('\n');
    }
    // The harness prints its own lines: ours are marked.
    for l in out.lines() {
        println!("NOFILE-CHILD {l}");
    }
}

fn child_under(limit: u64) -> Vec<String> {
    let exe = std::env::current_exe().expect("test binary");
    let o = Command::new(exe)
        .args(["--exact", "nofile_child", "--nocapture", "--test-threads=1"])
        .env("TASKSNAP_NOFILE_CHILD", limit.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<String> = text
        .lines()
        .filter_map(|l| Some(l.split_once("NOFILE-CHILD ")?.1.to_owned()))
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "child under --nofile={limit}: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    lines
}

#[test]
fn procfs_snapshots_under_a_low_open_files_limit_are_whole_or_an_error() {
    // More sleepers than a reader's budget at the higher limits tried, two files each.
    let sleepers = ProcessGroup::spawn(150, &["sleep", "1000"]).expect("spawn");
    let threads = ProcessGroup::spawn(
        1,
        &["sh", "-c", "sleep 1000 & sleep 1000 & sleep 1000 & wait"],
    )
    .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut pids: Vec<i32> = sleepers.pids();
    pids.extend(threads.pids());
    for limit in [5, 6, 8, 16, 64, 128, 256] {
        for line in child_under(limit) {
            let listed: std::collections::HashSet<i32> = line
                .strip_prefix("ok ")
                .unwrap_or_else(|| panic!("--nofile={limit}: {line}"))
                .split(' ')
                .filter_map(|t| t.parse().ok())
                .collect();
            let missing: Vec<i32> = pids
                .iter()
                .copied()
                .filter(|p| !listed.contains(p))
                .collect();
            assert!(
                missing.is_empty(),
                "--nofile={limit}: {} of {} spawned processes missing: {missing:?}",
                missing.len(),
                pids.len()
            );
        }
    }
    // stdin, stdout, stderr and /proc: not one file more.
    for line in child_under(4) {
        assert!(
            line.starts_with("exhausted ") && line.contains("RLIMIT_NOFILE"),
            "--nofile=4: {line}"
        );
    }
}
