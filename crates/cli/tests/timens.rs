//! Start times for a caller in a time namespace whose clocks are offset (`unshare --time
//! --boottime S --monotonic S`, as a container restored on another machine has): /proc then
//! shows that caller its own boot clock (uptime, `btime`, each task's `starttime`, all moved
//! by the offset), while the BPF programs read the kernel's own. Every start time must be the
//! same wall-clock moment inside as outside, whatever the backend and whichever way the
//! offset goes (a negative one makes the kernel print a task that started before the
//! namespace's zero as a huge, wrapped tick count). Root only (a time namespace).

mod common;

use std::process::{Command, Output, Stdio};

use common::recording::store_dir;
use common::{sleeper, TASKSNAP};
use tasksnap_loadgen::skip_unless_root;

/// `args` run in a new time namespace with both clocks offset by `offset_s` (none: here).
fn run(offset_s: Option<i64>, args: &[&str]) -> Output {
    let mut cmd = match offset_s {
        Some(s) => {
            let s = s.to_string();
            let mut c = Command::new("unshare");
            c.args([
                "--fork",
                "--time",
                "--boottime",
                &s,
                "--monotonic",
                &s,
                "--",
            ]);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new(args[0]);
            c.args(&args[1..]);
            c
        }
    };
    cmd.env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env_remove("COLUMNS")
        .env_remove("PS_FORMAT")
        .env_remove("TASKSNAP_PROC_ROOT")
        .stdin(Stdio::null())
        .output()
        .expect("run")
}

fn ok(o: &Output, what: &str) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The rows of `ps -o pid,lstart,etimes`: (pid, lstart, etimes).
fn ps_rows(text: &str) -> Vec<(i32, String, i64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let pid = f.first()?.parse().ok()?;
            let etimes = f.last()?.parse().ok()?;
            Some((pid, f[1..f.len() - 1].join(" "), etimes))
        })
        .collect()
}

/// Seconds since this machine booted.
fn uptime_s() -> f64 {
    let t = std::fs::read_to_string("/proc/uptime").expect("uptime");
    t.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

/// The offsets tried: days ahead, and back as far as the machine's uptime allows (the kernel
/// refuses a clock made negative), when it has been up long enough.
fn offsets() -> Vec<i64> {
    let mut v = vec![864_000];
    let back = (uptime_s() as i64 - 30).min(600);
    if back >= 30 {
        v.push(-back);
    }
    v
}

/// Regression: with a boot time offset, kthreadd's start was days off with the BPF backend
/// (the kernel's own start beside the caller's shifted boot time) and, with a negative
/// offset, pid 1's and kthreadd's start from /proc was a wrapped tick count (year 2611 in
/// ps, 2262-04-11 in dump). ps's start and elapsed times are the same inside as outside.
#[test]
fn start_times_are_right_with_a_boot_time_offset() {
    skip_unless_root!("a time namespace");
    let (_sleeper, pid) = sleeper();
    let pids = format!("1,2,{pid}");
    let args = |backend: &'static str| {
        vec![
            TASKSNAP,
            "ps",
            "--backend",
            backend,
            "-o",
            "pid,lstart,etimes",
            "-p",
        ]
    };
    let mut base = args("procfs");
    base.push(&pids);
    let outside = ps_rows(&ok(&run(None, &base), "ps outside"));
    assert_eq!(outside.len(), 3, "{outside:?}");
    let mut failures = Vec::new();
    for offset in offsets() {
        for backend in ["procfs", "bpf"] {
            let mut a = args(backend);
            a.push(&pids);
            let inside = ps_rows(&ok(&run(Some(offset), &a), "ps inside"));
            for ((pid, start, etimes), (pid_o, start_o, etimes_o)) in inside.iter().zip(&outside) {
                assert_eq!(pid, pid_o);
                if start != start_o || (etimes - etimes_o).abs() > 2 {
                    failures.push(format!(
                        "--boottime {offset} --backend {backend}: pid {pid} started {start:?} \
                         ({etimes} s ago), outside {start_o:?} ({etimes_o} s ago)"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The `pid,start_time` rows of a recording made with `backend` (one sample), inside a time
/// namespace offset by `offset_s` or here.
fn recorded_starts(offset_s: Option<i64>, backend: &str, pids: &[i32]) -> Vec<(i64, String)> {
    let (_t, store) = store_dir();
    let s = store.to_str().expect("utf-8 path");
    let rec = [
        TASKSNAP,
        "record",
        "--dir",
        s,
        "--count",
        "1",
        "--quiet",
        "--backend",
        backend,
    ];
    ok(&run(offset_s, &rec), "record");
    let dump = [
        TASKSNAP,
        "dump",
        "--dir",
        s,
        "--format",
        "json",
        "--fields",
        "pid,start_time",
    ];
    let text = ok(&run(None, &dump), "dump");
    let mut rows: Vec<(i64, String)> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON row");
            (v["pid"].as_i64().expect("pid"), v["start_time"].to_string())
        })
        .filter(|(p, _)| pids.contains(&(*p as i32)))
        .collect();
    rows.sort();
    rows
}

/// Regression: the start times a recording keeps are the same moments whether the recorder ran
/// in a time namespace or not (a negative offset saturated pid 1's to 2262-04-11). /proc
/// gives them in whole ticks; a task older than a negative offset's zero has a wrapped count,
/// counted from 2^64 (no whole number of ticks), which can put it one tick early
/// (`tasksnap_collect::clock`): those may differ by 10 ms, the others not at all.
#[test]
fn recorded_start_times_are_right_with_a_boot_time_offset() {
    skip_unless_root!("a time namespace");
    let (_sleeper, pid) = sleeper();
    let pids = [1, 2, pid];
    let mut failures = Vec::new();
    let older = |offset: i64, start: &str| {
        offset < 0
            && humantime::parse_rfc3339(start.trim_matches('"')).is_ok_and(|t| {
                let boot =
                    std::time::SystemTime::now() - std::time::Duration::from_secs_f64(uptime_s());
                t < boot + std::time::Duration::from_secs(offset.unsigned_abs() + 5)
            })
    };
    let within_a_tick = |a: &str, b: &str| {
        let t = |s: &str| humantime::parse_rfc3339(s.trim_matches('"')).expect("a time");
        let (a, b) = (t(a), t(b));
        a.duration_since(b)
            .or(b.duration_since(a))
            .expect("ordered")
            <= std::time::Duration::from_millis(10)
    };
    for backend in ["procfs", "bpf"] {
        let outside = recorded_starts(None, backend, &pids);
        assert_eq!(outside.len(), 3, "{outside:?}");
        for offset in offsets() {
            let inside = recorded_starts(Some(offset), backend, &pids);
            let same = inside.len() == outside.len()
                && inside.iter().zip(&outside).all(|((p, a), (q, b))| {
                    p == q && (a == b || (older(offset, b) && within_a_tick(a, b)))
                });
            if !same {
                failures.push(format!(
                    "--boottime {offset} --backend {backend}: {inside:?}, outside {outside:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
