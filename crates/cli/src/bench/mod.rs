//! `tasksnap bench`: the task_diag article's table, measured on this machine in one run.
//!
//! Rows, each the median of `--runs` passes over every process: opening and closing
//! `/proc/PID/stat` only, reading `stat`, `status` and `cmdline` (open, one read, close, as the
//! article did), tasksnap's procfs collector, the BPF iterator's raw pass (base+cred, and
//! with command lines), the BPF collector's snapshot, and whole `ps` runs: procps against
//! tasksnap. Columns: median wall, µs per task, and per run the system calls and kernel
//! allocations counted with tracepoints ([`counters`]). `--spawn N` starts N sleeping
//! processes with tasksnap-loadgen first and removes them afterwards.

mod counters;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;
use tasksnap_collect::Host;
use tasksnap_model::{Backend, Groups, Query, Selector};

#[derive(Debug, Serialize)]
struct Row {
    what: String,
    median_ms: f64,
    us_per_task: Option<f64>,
    /// System calls per pass (counted; None when the counters could not be opened).
    syscalls: Option<u64>,
    /// Kernel allocations per pass (kmalloc + kmem_cache_alloc tracepoints).
    kernel_allocs: Option<u64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The median wall time of `runs` calls of `f`, and what they cost the kernel per run.
fn time_runs(
    runs: usize,
    counters: &mut Option<counters::Counters>,
    mut f: impl FnMut(),
) -> (f64, Option<counters::Reading>) {
    let before = counters.as_mut().map(|c| c.read());
    let ms = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );
    let after = counters.as_mut().map(|c| c.read());
    (ms, before.zip(after).map(|(b, a)| b.per_run(a, runs)))
}

/// µs per task, except for one-off costs (loading), where it means nothing.
fn syscalls_or_per_task(what: &str, ms: f64, n: f64) -> Option<f64> {
    (!what.contains("load") && !what.starts_with("spawn")).then_some(ms * 1e3 / n)
}

fn usage() -> ExitCode {
    warn!("usage: tasksnap bench [--spawn N] [--runs R] [--json]");
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
                warn!("tasksnap bench: --spawn needs tasksnap-loadgen next to tasksnap");
                return ExitCode::from(1);
            };
            match tasksnap_loadgen::Load::spawn_with_binary(bin, &["--procs", &n.to_string()]) {
                Ok(l) => Some(l),
                Err(e) => {
                    warn!("tasksnap bench: could not spawn {n} processes: {e:#}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let mut procfs = Host::from_env();
    if let Err(e) = procfs.open_snapshots(Backend::Procfs, &Groups::default()) {
        warn!("tasksnap bench: {e}");
        return ExitCode::from(1);
    }
    let pids = procfs.list_pids().unwrap_or_default();
    let n = pids.len().max(1) as f64;
    let mut counters = match counters::Counters::open() {
        Ok(c) => Some(c),
        Err(why) => {
            warn!("tasksnap bench: system calls and kernel allocations not counted: {why}");
            None
        }
    };
    let mut rows = Vec::new();
    let mut push = |what: &str, (ms, cost): (f64, Option<counters::Reading>)| {
        let what = what.to_string();
        rows.push(Row {
            what: what.clone(),
            median_ms: ms,
            us_per_task: syscalls_or_per_task(&what, ms, n),
            syscalls: cost.map(|c| c.syscalls),
            kernel_allocs: cost.map(|c| c.kernel_allocs),
        })
    };
    let mut buf = vec![0u8; 1 << 16];
    let files = ["stat", "status", "cmdline"];
    push(
        "/proc/PID/stat open+close",
        time_runs(runs, &mut counters, || {
            procfs.open_close_each(&pids, "stat")
        }),
    );
    for f in files {
        push(
            &format!("/proc/PID/{f} open+read+close"),
            time_runs(runs, &mut counters, || {
                procfs.open_read_close_each(&pids, f, &mut buf)
            }),
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
        time_runs(runs, &mut counters, || {
            let _ = procfs.snapshot(&q(false));
        }),
    );
    push(
        "tasksnap procfs collector + cmdline",
        time_runs(runs, &mut counters, || {
            let _ = procfs.snapshot(&q(true));
        }),
    );
    let bpf = match procfs.options().is_this_kernel() {
        true => Host::bpf_bench().map_err(|e| e.to_string()),
        false => Err("a fake /proc tree is read by the procfs collector only".to_string()),
    };
    match bpf {
        Err(why) => warn!("tasksnap bench: BPF rows left out: {why}"),
        Ok(mut bpf) => {
            let how = if bpf.pinned() {
                "BPF programs: open the pinned set (once per process)"
            } else {
                "BPF programs: load (once per process; `tasksnap pin` avoids it)"
            };
            push(how, (bpf.load_ns() as f64 / 1e6, None));
            // Both full-pass paths when the walk is there (a pinned set), side by side.
            let paths: &[(bool, &str)] = if bpf.has_walk() {
                &[(false, "iterator"), (true, "walk")]
            } else {
                &[(false, "iterator")]
            };
            for &(walk, name) in paths {
                bpf.use_walk(walk);
                push(
                    &format!("BPF raw pass ({name}) base+cred"),
                    time_runs(runs, &mut counters, || {
                        let _ = bpf.raw_pass(true, false);
                    }),
                );
                push(
                    &format!("BPF raw pass ({name}) base+cred+stat"),
                    time_runs(runs, &mut counters, || {
                        let _ = bpf.raw_pass(true, true);
                    }),
                );
            }
            push(
                "BPF collector snapshot base+cred+stat",
                time_runs(runs, &mut counters, || {
                    let _ = bpf.snapshot(&q(false));
                }),
            );
            // As a repeating caller (a live view) takes them: the task vector handed back
            // and reused, so the row above minus its page faults (~20 MB at 50,000 tasks).
            push(
                "BPF collector snapshot base+cred+stat, vector reused",
                time_runs(runs, &mut counters, || {
                    if let Ok(s) = bpf.snapshot(&q(false)) {
                        bpf.recycle(s.tasks);
                    }
                }),
            );
            // The command-line region of the arena (made before capabilities would go).
            bpf.prepare_arena(&q(true).groups);
            if bpf.has_walk() {
                for (lockless, how) in [
                    (true, "lock-free, in the walk"),
                    (false, "copied through the mmap lock"),
                ] {
                    bpf.use_lockless(lockless);
                    push(
                        &format!("BPF collector snapshot + cmdline ({how})"),
                        time_runs(runs, &mut counters, || {
                            let _ = bpf.snapshot(&q(true));
                        }),
                    );
                }
                bpf.use_lockless(true);
            } else {
                push(
                    "BPF collector snapshot + cmdline (sleepable iterator)",
                    time_runs(runs, &mut counters, || {
                        let _ = bpf.snapshot(&q(true));
                    }),
                );
            }
        }
    }
    // Whole runs, as a user types them: procps against tasksnap (auto backend). Their
    // counts include starting the process from here: glibc's posix_spawn() child resets
    // every signal's handler one rt_sigaction at a time (~130 system calls on this VM) before
    // the exec. A run of `true` shows that share, to subtract for the process's own.
    let spawned = time_runs(runs, &mut counters, || {
        let _ = std::process::Command::new("true")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    });
    push("spawn and exit of `true` (part of each row below)", spawned);
    let me = std::env::current_exe().ok();
    for args in [&["-ef"][..], &["-e", "-o", "pid,ppid,user,stat,comm"][..]] {
        let line = args.join(" ");
        let mut run_one = |program: &std::path::Path, label: String| {
            let mut ok = true;
            let timing = time_runs(runs, &mut counters, || {
                let status = std::process::Command::new(program)
                    .args(if label.starts_with("tasksnap") {
                        &["ps"][..]
                    } else {
                        &[][..]
                    })
                    .args(args)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
                ok &= status.is_ok_and(|s| s.success());
            });
            if ok {
                push(&label, timing);
            } else {
                warn!("tasksnap bench: `{label}` failed; row left out");
            }
        };
        run_one(std::path::Path::new("ps"), format!("procps ps {line}"));
        if let Some(me) = &me {
            run_one(me, format!("tasksnap ps {line}"));
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
                warn!("tasksnap bench: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        say!("{} processes, median of {runs} runs", pids.len());
        say!(
            "{:<62} {:>10} {:>8} {:>10} {:>10}",
            "what",
            "median ms",
            "µs/task",
            "syscalls",
            "kallocs"
        );
        let dash = |v: Option<u64>| v.map_or("-".to_string(), |s| s.to_string());
        for r in &rows {
            say!(
                "{:<62} {:>10.1} {:>8} {:>10} {:>10}",
                r.what,
                r.median_ms,
                r.us_per_task.map_or("-".to_string(), |u| format!("{u:.2}")),
                dash(r.syscalls),
                dash(r.kernel_allocs)
            );
        }
    }
    ExitCode::SUCCESS
}
