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
use tasksnap_collect::{BpfBench, Host};
use tasksnap_model::{Backend, Group, Groups, Query, Selector};

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

/// The median of timings (bench's rows; doctor's /proc reads).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
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

/// `tasksnap bench`'s options.
struct Args {
    /// Sleeping processes to start first.
    spawn: Option<usize>,
    runs: usize,
    json: bool,
}

impl Args {
    /// The options, or `None` on bad usage.
    fn parse(argv: &[OsString]) -> Option<Args> {
        let mut args = Args {
            spawn: None,
            runs: 5,
            json: false,
        };
        let mut it = argv.iter().map(|a| a.to_string_lossy().into_owned());
        while let Some(a) = it.next() {
            match a.as_str() {
                "--spawn" => args.spawn = Some(it.next()?.parse().ok()?),
                "--runs" => match it.next().and_then(|v| v.parse().ok()) {
                    Some(n) if n > 0 => args.runs = n,
                    _ => return None,
                },
                "--json" => args.json = true,
                _ => return None,
            }
        }
        Some(args)
    }
}

/// Starts `n` sleeping processes with tasksnap-loadgen (found next to tasksnap, else where
/// the tests build it); they are removed when the returned load drops.
fn spawn_load(n: usize) -> Result<tasksnap_loadgen::Load, ExitCode> {
    let bin: Option<PathBuf> = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(tasksnap_loadgen::BINARY_NAME)))
        .filter(|p| p.is_file())
        .or_else(tasksnap_loadgen::find_binary);
    let Some(bin) = bin else {
        warn!("tasksnap bench: --spawn needs tasksnap-loadgen next to tasksnap");
        return Err(ExitCode::from(1));
    };
    tasksnap_loadgen::Load::spawn_with_binary(bin, &["--procs", &n.to_string()]).map_err(|e| {
        warn!("tasksnap bench: could not spawn {n} processes: {e:#}");
        ExitCode::from(1)
    })
}

/// The rows measured so far, and how they are measured.
struct Bench {
    runs: usize,
    counters: Option<counters::Counters>,
    /// Processes on the host (µs per task divides by it).
    tasks: f64,
    rows: Vec<Row>,
}

impl Bench {
    /// The median wall time of `runs` calls of `f`, and what they cost the kernel per run.
    fn time(&mut self, f: impl FnMut()) -> (f64, Option<counters::Reading>) {
        time_runs(self.runs, &mut self.counters, f)
    }

    /// Adds a row.
    fn push(&mut self, what: &str, (ms, cost): (f64, Option<counters::Reading>)) {
        self.rows.push(Row {
            what: what.to_string(),
            median_ms: ms,
            us_per_task: syscalls_or_per_task(what, ms, self.tasks),
            syscalls: cost.map(|c| c.syscalls),
            kernel_allocs: cost.map(|c| c.kernel_allocs),
        })
    }

    /// Times `f` and adds its row.
    fn row(&mut self, what: &str, f: impl FnMut()) {
        let timing = self.time(f);
        self.push(what, timing);
    }
}

/// Entry point for `tasksnap bench ARGS...`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let Some(args) = Args::parse(argv) else {
        return usage();
    };
    let _load = match args.spawn.map(spawn_load).transpose() {
        Ok(l) => l,
        Err(code) => return code,
    };
    let mut procfs = Host::from_env();
    if let Err(e) = procfs.open_snapshots(Backend::Procfs, &Groups::default()) {
        warn!("tasksnap bench: {e}");
        return ExitCode::from(1);
    }
    let pids = procfs.list_pids().unwrap_or_default();
    let counters = match counters::Counters::open() {
        Ok(c) => Some(c),
        Err(why) => {
            warn!("tasksnap bench: system calls and kernel allocations not counted: {why}");
            None
        }
    };
    let mut bench = Bench {
        runs: args.runs,
        counters,
        tasks: pids.len().max(1) as f64,
        rows: Vec::new(),
    };
    proc_rows(&mut bench, &mut procfs, &pids);
    let bpf = match procfs.options().is_this_kernel() {
        true => Host::bpf_bench().map_err(|e| e.to_string()),
        false => Err("a fake /proc tree is read by the procfs collector only".to_string()),
    };
    match bpf {
        Err(why) => warn!("tasksnap bench: BPF rows left out: {why}"),
        Ok(mut bpf) => bpf_rows(&mut bench, &mut bpf),
    }
    ps_rows(&mut bench);
    print(&bench.rows, pids.len(), args.runs, args.json)
}

/// A whole pass over every process: base, credentials and stat, with or without command
/// lines.
fn pass(cmdline: bool) -> Query {
    Query::new(
        Selector::AllProcesses,
        Groups::of(&[Group::Base, Group::CredEffective, Group::Stat]).flag(Group::Cmdline, cmdline),
    )
}

/// The /proc rows: opening files per process as the article did, then tasksnap's procfs
/// collector.
fn proc_rows(bench: &mut Bench, procfs: &mut Host, pids: &[i32]) {
    let mut buf = vec![0u8; 1 << 16];
    bench.row("/proc/PID/stat open+close", || {
        procfs.open_close_each(pids, "stat")
    });
    for f in ["stat", "status", "cmdline"] {
        bench.row(&format!("/proc/PID/{f} open+read+close"), || {
            procfs.open_read_close_each(pids, f, &mut buf)
        });
    }
    bench.row("tasksnap procfs collector base+cred+stat", || {
        let _ = procfs.snapshot(&pass(false));
    });
    bench.row("tasksnap procfs collector + cmdline", || {
        let _ = procfs.snapshot(&pass(true));
    });
}

/// The BPF rows: loading, the raw passes of each path, and the collector's snapshots.
fn bpf_rows(bench: &mut Bench, bpf: &mut BpfBench) {
    let how = if bpf.pinned() {
        "BPF programs: open the pinned set (once per process)"
    } else {
        "BPF programs: load (once per process; `tasksnap pin` avoids it)"
    };
    bench.push(how, (bpf.load_ns() as f64 / 1e6, None));
    // Both full-pass paths when the walk is there (a pinned set), side by side.
    let paths: &[(bool, &str)] = if bpf.has_walk() {
        &[(false, "iterator"), (true, "walk")]
    } else {
        &[(false, "iterator")]
    };
    for &(walk, name) in paths {
        bpf.use_walk(walk);
        bench.row(&format!("BPF raw pass ({name}) base+cred"), || {
            let _ = bpf.raw_pass(true, false);
        });
        bench.row(&format!("BPF raw pass ({name}) base+cred+stat"), || {
            let _ = bpf.raw_pass(true, true);
        });
    }
    bench.row("BPF collector snapshot base+cred+stat", || {
        let _ = bpf.snapshot(&pass(false));
    });
    // As a repeating caller (a live view) takes them: the task vector handed back and
    // reused, so the row above minus its page faults (~20 MB at 50,000 tasks).
    bench.row(
        "BPF collector snapshot base+cred+stat, vector reused",
        || {
            if let Ok(s) = bpf.snapshot(&pass(false)) {
                bpf.recycle(s.tasks);
            }
        },
    );
    // The command-line region of the arena (made before capabilities would go).
    bpf.prepare_arena(&pass(true).groups);
    if bpf.has_walk() {
        for (lockless, how) in [
            (true, "lock-free, in the walk"),
            (false, "copied through the mmap lock"),
        ] {
            bpf.use_lockless(lockless);
            bench.row(&format!("BPF collector snapshot + cmdline ({how})"), || {
                let _ = bpf.snapshot(&pass(true));
            });
        }
        bpf.use_lockless(true);
    } else {
        bench.row(
            "BPF collector snapshot + cmdline (sleepable iterator)",
            || {
                let _ = bpf.snapshot(&pass(true));
            },
        );
    }
}

/// Whole runs, as a user types them: procps against tasksnap (auto backend). Their counts
/// include starting the process from here: glibc's posix_spawn() child resets every
/// signal's handler one rt_sigaction at a time (~130 system calls on this VM) before the
/// exec. A run of `true` shows that share, to subtract for the process's own.
fn ps_rows(bench: &mut Bench) {
    bench.row("spawn and exit of `true` (part of each row below)", || {
        let _ = std::process::Command::new("true")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    });
    let me = std::env::current_exe().ok();
    for args in [&["-ef"][..], &["-e", "-o", "pid,ppid,user,stat,comm"][..]] {
        let line = args.join(" ");
        let mut run_one = |program: &std::path::Path, label: String| {
            let mut ok = true;
            let timing = bench.time(|| {
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
                bench.push(&label, timing);
            } else {
                warn!("tasksnap bench: `{label}` failed; row left out");
            }
        };
        run_one(std::path::Path::new("ps"), format!("procps ps {line}"));
        if let Some(me) = &me {
            run_one(me, format!("tasksnap ps {line}"));
        }
    }
}

/// Prints the rows: a table, or JSON with `json`.
fn print(rows: &[Row], processes: usize, runs: usize, json: bool) -> ExitCode {
    if json {
        match serde_json::to_string_pretty(&serde_json::json!({
            "processes": processes,
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
        say!("{processes} processes, median of {runs} runs");
        say!(
            "{:<62} {:>10} {:>8} {:>10} {:>10}",
            "what",
            "median ms",
            "µs/task",
            "syscalls",
            "kallocs"
        );
        let dash = |v: Option<u64>| v.map_or("-".to_string(), |s| s.to_string());
        for r in rows {
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
