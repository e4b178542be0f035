//! `tasksnap states`: for every thread, the share of each interval it spent running, waiting
//! for a CPU, sleeping, in D, stopped or otherwise, and the top reason it was off the CPU;
//! refreshed every interval as a table or JSON lines, optionally with an off-CPU flame graph.
//!
//! This module is the loop (sources, signals, intervals); [`args`] parses the command line,
//! [`print`] formats. The samples come from tasksnap-collect's thread-state sources (the BPF
//! accounting as root, exact; the /proc source otherwise, sampled where it must, and
//! labelled), opened by the [`Host`]; tasksnap-states turns them into intervals.
//!
//! Exit status: 0 when done (or interrupted), 2 on bad arguments, 1 on a runtime error: a
//! source that cannot run, `-p` pids none of which is a process the first sample found (as
//! `ps -p` exits 1 when nothing matched; pids that exit later are reported as exited), a
//! write error on stdout, or a flame graph that could not be written whole. Messages go to
//! stderr through [`warn`], which never fails (eprintln! panics when stderr is full).

mod args;
mod print;

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tasksnap_collect::{Host, StatesOptions, ThreadStates};
use tasksnap_states::flame::Flame;
use tasksnap_states::{between, Sample};

use args::Args;
use tasksnap_model::Backend;

/// Entry point: exit code 0 when done (or interrupted), 1 on a runtime error, 2 on bad
/// arguments.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args = match args::parse(argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            warn!("tasksnap states: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Whether a process with this pid exists in the caller's pid namespace (kill(2) with signal
/// 0 checks without sending anything; EPERM means it exists but is not ours).
fn process_exists(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; pid > 0 names one process.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The `-p` pids that have no thread in the first sample. When none of them has (and no `-C`
/// name could match anything else), that is an error, as `ps -p` exits 1 when nothing
/// matched: a pid that does not exist, or that exited before the first sample, or one whose
/// threads this source cannot see (the sample's notes say why, e.g. pid 1 under BPF on some
/// VMs). When only some are missing, each is a warning and the rest are shown.
fn check_pids(args: &Args, first: &Sample) -> Result<()> {
    let mut missing: Vec<i32> = args
        .pids
        .iter()
        .copied()
        .filter(|&p| !first.threads.values().any(|t| t.id.tgid == p))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    let why = |p: i32| {
        if process_exists(p) {
            let mut s = format!("process {p}: none of its threads can be read here");
            for n in first
                .notes
                .iter()
                .filter(|n| n.starts_with(&format!("pid {p} ")))
            {
                s.push_str(&format!(" ({n})"));
            }
            s
        } else {
            format!("no such process: {p}")
        }
    };
    let mut asked = args.pids.clone();
    asked.sort_unstable();
    asked.dedup();
    if missing.len() == asked.len() && args.comms.is_empty() {
        let all: Vec<String> = missing.iter().map(|&p| why(p)).collect();
        anyhow::bail!("{}", all.join("; "));
    }
    for p in missing {
        warn!("tasksnap states: {}", why(p));
    }
    Ok(())
}

/// Writes the flame graph to `file` (created at the start) and makes sure it is on disk: the
/// buffer flushed and the file synced, so that a full disk or a failing device is an error
/// here rather than a short file behind a success. fsync on a file that cannot be synced
/// (a pipe, /dev/full: EINVAL) is not an error; everything before it was checked.
fn write_flame(f: &Flame, title: &str, mut file: tasksnap_safefile::Output) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(file.file());
    f.write_svg(title, &mut out)?;
    out.into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    file.finish()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// The two recorded samples that bound `--from` .. `--to` in the recording at `dir` (the
/// ones in force then), with the threads `-p`/`-C` select.
fn replay_window(
    args: &Args,
    dir: &std::path::Path,
) -> Result<(Vec<tasksnap_model::states::Sample>, (u64, u64))> {
    let history = crate::recording::open("tasksnap states", dir)?;
    let (first, last) = history.bounds()?;
    if first == last {
        anyhow::bail!(
            "{}: the recording holds one sample ({}); an interval needs two",
            dir.display(),
            crate::when::rfc3339(first)
        );
    }
    let from = args.from.unwrap_or(first);
    let to = args.to.unwrap_or(last);
    if from >= to {
        anyhow::bail!(
            "--from ({}) must be before --to ({})",
            crate::when::rfc3339(from),
            crate::when::rfc3339(to)
        );
    }
    crate::recording::overlaps(dir, (from, to), (first, last))?;
    // A window that overlaps the recording is the part of it that was recorded, as in
    // `dump` (`--from -1h` on a recording 20 minutes old is its first 20 minutes).
    let (from, to) = (from.max(first), to.min(last));
    let filter = args.filter();
    let mut out = Vec::new();
    let mut wall = Vec::new();
    for (t, given) in [(from, args.from), (to, args.to)] {
        // Without --from/--to: the first and the last sample recorded, which after a clock
        // step back are not the earliest and the latest.
        let r = match given {
            Some(_) => history.reading_at(t)?,
            None if t == first => history
                .readings(first, last)?
                .next()
                .ok_or_else(|| anyhow::anyhow!("{}: no readable sample", dir.display()))?,
            None => history.reading_at(u64::MAX)?,
        };
        wall.push(r.snapshot.taken_at_unix_ns);
        let Some(mut s) = r.states else {
            anyhow::bail!(
                "{}: the sample at {} holds no thread states (recorded without them)",
                dir.display(),
                crate::when::rfc3339(r.snapshot.taken_at_unix_ns)
            );
        };
        s.threads.retain(|id, t| filter.matches(id.tgid, &t.comm));
        out.push(s);
    }
    if out[0].at_ns == out[1].at_ns {
        anyhow::bail!(
            "{}: one sample covers {} .. {}: the window needs two (the recording's interval is \
             longer than the window)",
            dir.display(),
            crate::when::rfc3339(from),
            crate::when::rfc3339(to)
        );
    }
    Ok((out, (wall[0], wall[1])))
}

/// The host's thread-state source, open, with privileges dropped.
fn open_source(args: &Args) -> Result<ThreadStates> {
    let mut host = Host::from_env();
    let opts = StatesOptions {
        filter: args.filter(),
        track_sleep: args.why_sleep,
        track_holders: true,
        sample_hz: Some(args.sample_hz),
        fds_left: None,
    };
    let opened = host.open_states(args.mode, opts);
    let source = match args.mode {
        Backend::Bpf => opened.context("--mode bpf")?,
        _ => opened?,
    };
    let (backend, why) = source.report();
    if args.mode == Backend::Auto && backend == Backend::Procfs {
        warn!(
            "tasksnap states: using /proc ({why}; running exact, the rest sampled at {} Hz)",
            args.sample_hz
        );
    }
    // Loaded: what loading needed goes.
    let _ = host.drop_loading_privileges();
    Ok(source)
}

fn run(args: &Args) -> Result<()> {
    let signals = crate::signals::stop_signals();
    crate::signals::block(&signals);
    // The flame graph's file is created first: a path that cannot be written fails now, not
    // after the intervals. Never inside the recording replayed (a missing one is said below).
    let flame_file = match args.flamegraph.as_ref() {
        Some(path) => {
            let store = args
                .replay
                .as_ref()
                .and_then(|d| tasksnap_safefile::Dir::open(d).ok());
            Some(crate::outfile::create(path, store.as_ref())?)
        }
        None => None,
    };
    let replay = args
        .replay
        .as_ref()
        .map(|dir| replay_window(args, dir))
        .transpose()?;
    let window = replay.as_ref().map(|r| r.1);
    let mut src = match replay {
        Some((samples, _)) => Host::replay_states(samples),
        None => open_source(args)?,
    };
    let mut prev = src.sample().context("first sample")?;
    if args.replay.is_none() {
        check_pids(args, &prev)?;
    }
    let mut flame = args.flamegraph.as_ref().map(|_| Flame::default());
    let mut printer = print::Printer::new(args);
    printer.window_unix_ns = window;
    let mut done = 0u64;
    let mut modes = None;
    loop {
        // A replay's window is one interval, shown at once.
        let stopped = match args.replay {
            Some(_) => true,
            None => crate::signals::wait(&signals, args.interval),
        };
        let t0 = std::time::Instant::now();
        let cur = src.sample().context("sample")?;
        let t1 = std::time::Instant::now();
        let mut iv = between(&prev, &cur, args.rollup());
        iv.sort(args.sort.key());
        modes.get_or_insert(iv.mode);
        if let Some(f) = flame.as_mut() {
            f.add(&iv);
        }
        let t2 = std::time::Instant::now();
        printer.interval(&iv);
        if args.timings {
            let ms = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64() * 1e3;
            let t3 = std::time::Instant::now();
            warn!(
                "tasksnap states: timings: {} threads in the sample; sample {:.2} ms, intervals \
                 {:.2} ms, print {:.2} ms, total {:.2} ms",
                cur.threads.len(),
                ms(t0, t1),
                ms(t1, t2),
                ms(t2, t3),
                ms(t0, t3)
            );
        }
        prev = cur;
        done += 1;
        if stopped || args.count.is_some_and(|n| done >= n) {
            break;
        }
    }
    if let (Some(f), Some(path), Some(file)) = (flame, args.flamegraph.as_ref(), flame_file) {
        let mode = modes.map_or("", |m| m.name());
        let title = format!(
            "tasksnap states: off-CPU time by command, state and kernel stack ({done} interval{}, {mode})",
            if done == 1 { "" } else { "s" }
        );
        write_flame(&f, &title, file)
            .with_context(|| format!("cannot write {} (it is incomplete)", path.display()))?;
        if f.is_empty() {
            warn!(
                "tasksnap states: no off-CPU stacks were recorded; {} is an empty graph{}",
                path.display(),
                if args.why_sleep {
                    ""
                } else {
                    " (only D waits keep stacks unless --why-sleep)"
                }
            );
        }
    }
    Ok(())
}
