//! `tasksnap bench`: the task_diag article's table, measured on this machine in one run.
//!
//! Rows, each the median of `--runs` passes over every process: opening and closing
//! `/proc/PID/stat` only, reading `stat`, `status` and `cmdline` (open, one read, close, as the
//! article did), tasksnap's procfs collector, the BPF iterator's raw pass (base+cred, and
//! with command lines) and the BPF collector's snapshot. Columns: median wall, µs per task,
//! and system calls where they follow from the method (a raw /proc read is exactly open,
//! read, close). `--spawn N` starts N sleeping processes with tasksnap-loadgen first and
//! removes them afterwards. Kernel allocation counts (kmem tracepoints) are not measured yet.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;
use tasksnap_collect::bpf::BpfCollector;
use tasksnap_collect::procfs::ProcfsCollector;
use tasksnap_collect::Collector;
use tasksnap_model::{Groups, Query, Selector};

#[derive(Debug, Serialize)]
struct Row {
    what: String,
    median_ms: f64,
    us_per_task: Option<f64>,
    /// System calls per pass when they follow from the method; None when not measured.
    syscalls: Option<u64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn time_runs(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

/// µs per task, except for one-off costs (loading), where it means nothing.
fn syscalls_or_per_task(what: &str, ms: f64, n: f64) -> Option<f64> {
    (!what.contains("load")).then_some(ms * 1e3 / n)
}

fn usage() -> ExitCode {
    eprintln!("usage: tasksnap bench [--spawn N] [--runs R] [--json]");
    ExitCode::from(2)
}

/// Entry point for `tasksnap bench ARGS...`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let mut spawn: Option<usize> = None;
    let mut runs = 5usize;
    let mut json = false;
    let mut it = argv.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        match a.as_str() {
            "--spawn" => match it.next().and_then(|v| v.parse().ok()) {
                Some(n) => spawn = Some(n),
                None => return usage(),
            },
            "--runs" => match it.next().and_then(|v| v.parse().ok()) {
                Some(n) if n > 0 => runs = n,
                _ => return usage(),
            },
            "--json" => json = true,
            _ => return usage(),
        }
    }
    let _load = match spawn {
        None => None,
        Some(n) => {
            let bin: Option<PathBuf> = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.join(tasksnap_loadgen::BINARY_NAME)))
                .filter(|p| p.is_file())
                .or_else(tasksnap_loadgen::find_binary);
            let Some(bin) = bin else {
                eprintln!("tasksnap bench: --spawn needs tasksnap-loadgen next to tasksnap");
                return ExitCode::from(1);
            };
            match tasksnap_loadgen::Load::spawn_with_binary(bin, &["--procs", &n.to_string()]) {
                Ok(l) => Some(l),
                Err(e) => {
                    eprintln!("tasksnap bench: could not spawn {n} processes: {e:#}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let mut procfs = match ProcfsCollector::new() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tasksnap bench: {e}");
            return ExitCode::from(1);
        }
    };
    let pids = procfs.list_pids().unwrap_or_default();
    let n = pids.len().max(1) as f64;
    let mut rows = Vec::new();
    let mut push = |what: &str, ms: f64, syscalls: Option<u64>| {
        let what = what.to_string();
        rows.push(Row {
            what: what.clone(),
            median_ms: ms,
            us_per_task: syscalls_or_per_task(&what, ms, n),
            syscalls,
        })
    };
    let mut buf = vec![0u8; 1 << 16];
    let files = ["stat", "status", "cmdline"];
    push(
        "/proc/PID/stat open+close",
        time_runs(runs, || {
            for p in &pids {
                let _ = std::fs::File::open(format!("/proc/{p}/stat"));
            }
        }),
        Some(2 * pids.len() as u64),
    );
    for f in files {
        push(
            &format!("/proc/PID/{f} open+read+close"),
            time_runs(runs, || {
                for p in &pids {
                    if let Ok(mut file) = std::fs::File::open(format!("/proc/{p}/{f}")) {
                        let _ = file.read(&mut buf);
                    }
                }
            }),
            Some(3 * pids.len() as u64),
        );
    }
    let q = |cmdline: bool| {
        Query::new(
            Selector::AllProcesses,
            Groups {
                base: true,
                cred_effective: true,
                stat: true,
                cmdline,
                ..Groups::default()
            },
        )
    };
    push(
        "tasksnap procfs collector base+cred+stat",
        time_runs(runs, || {
            let _ = procfs.snapshot(&q(false));
        }),
        None,
    );
    push(
        "tasksnap procfs collector + cmdline",
        time_runs(runs, || {
            let _ = procfs.snapshot(&q(true));
        }),
        None,
    );
    match BpfCollector::with_cmdline(true) {
        Err(why) => eprintln!("tasksnap bench: BPF rows left out: {why}"),
        Ok(mut bpf) => {
            push(
                "BPF program load (once per process)",
                bpf.load_ns as f64 / 1e6,
                None,
            );
            push(
                "BPF iterator raw pass base+cred",
                time_runs(runs, || {
                    let _ = bpf.raw_pass(true, false);
                }),
                None,
            );
            push(
                "BPF iterator raw pass base+cred+stat",
                time_runs(runs, || {
                    let _ = bpf.raw_pass(true, true);
                }),
                None,
            );
            push(
                "BPF collector snapshot base+cred+stat",
                time_runs(runs, || {
                    let _ = bpf.snapshot(&q(false));
                }),
                None,
            );
            push(
                "BPF collector snapshot + cmdline",
                time_runs(runs, || {
                    let _ = bpf.snapshot(&q(true));
                }),
                None,
            );
        }
    }
    if json {
        match serde_json::to_string_pretty(&serde_json::json!({
            "processes": pids.len(),
            "runs": runs,
            "rows": rows,
        })) {
            Ok(s) => say!("{s}"),
            Err(e) => {
                eprintln!("tasksnap bench: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        say!("{} processes, median of {runs} runs", pids.len());
        say!(
            "{:<44} {:>10} {:>10} {:>10}",
            "what",
            "median ms",
            "µs/task",
            "syscalls"
        );
        for r in &rows {
            say!(
                "{:<44} {:>10.1} {:>10} {:>10}",
                r.what,
                r.median_ms,
                r.us_per_task.map_or("-".to_string(), |u| format!("{u:.2}")),
                r.syscalls.map_or("-".to_string(), |s| s.to_string())
            );
        }
    }
    ExitCode::SUCCESS
}
