//! The command line of `tasksnap states` (clap), and what it means for the library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgGroup, Parser, ValueEnum};
use tasksnap_collect::StatesFilter as Filter;
use tasksnap_model::Backend;
use tasksnap_states::interval::SortKey;
use tasksnap_states::{Rollup, State};

/// For every thread, the share of each interval it spent running, waiting for a CPU
/// (runnable), sleeping (S), in uninterruptible sleep (D, "disk"), stopped, or otherwise,
/// and the top reason it was off the CPU.
///
/// As root the figures are exact (BPF on the scheduler tracepoints); otherwise running is
/// exact (/proc schedstat) and the rest is sampled from /proc or estimated, marked `~`
/// (runnable counts the run-queue waits that ended exactly, and estimates those still going
/// on).
#[derive(Debug, Parser)]
#[command(name = "tasksnap states", group(ArgGroup::new("rollup").args(["threads", "processes", "commands"])))]
pub struct Args {
    /// Only these processes (comma-separated pids, as the caller's pid namespace numbers
    /// them). A pid that matches no process is an error.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',',
          value_parser = clap::value_parser!(i32).range(1..))]
    pub pids: Vec<i32>,

    /// Only threads with this command name (comma-separated, exact).
    #[arg(
        short = 'C',
        long = "command",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub comms: Vec<String>,

    /// One row per thread (the default).
    #[arg(long)]
    pub threads: bool,

    /// One row per process, its threads summed.
    #[arg(long)]
    pub processes: bool,

    /// One row per command name.
    #[arg(long)]
    pub commands: bool,

    /// Seconds per interval.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value = "1", value_parser = parse_interval)]
    pub interval: Duration,

    /// Stop after COUNT intervals (default: until interrupted).
    #[arg(short = 'n', long = "count", value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Sort rows by: offcpu (RUNQ%+THR%+DISK%+STOP%), run, runq, throttled, sleep, disk,
    /// stop, other, pid, tid, comm.
    #[arg(long, value_enum, default_value = "offcpu")]
    pub sort: SortArg,

    /// One JSON object per interval per line instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Write an off-CPU flame graph (SVG) of all intervals to FILE at the end.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,

    /// Keep the reasons of S waits too (D waits always).
    #[arg(long)]
    pub why_sleep: bool,

    /// Where the figures come from: bpf (root; exact), procfs (sampled off-CPU split), auto.
    #[arg(long, value_name = "auto|bpf|procfs", default_value = "auto")]
    pub mode: Backend,

    /// State samples per second in procfs mode.
    #[arg(long, value_name = "HZ", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub sample_hz: u32,

    /// Print to stderr how long each interval's sample, computation and printing took.
    #[arg(long)]
    pub timings: bool,

    /// Table rows per interval (0: all); the totals row covers every row either way.
    #[arg(short = 'r', long, value_name = "N", default_value_t = 25)]
    pub rows: usize,

    /// Show one window of a recording (`tasksnap record --dir DIR`) instead of the host:
    /// from --from to --to (default: the whole recording), as one interval.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,

    /// With --replay: the window's start (RFC 3339 UTC, epoch seconds, or -10m).
    #[arg(long, value_name = "TIME", requires = "replay", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub from: Option<u64>,

    /// With --replay: the window's end.
    #[arg(long, value_name = "TIME", requires = "replay", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub to: Option<u64>,
}

/// `--sort`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SortArg {
    /// RUNQ% + THR% + DISK% + STOP%: off the CPU, not by choice.
    Offcpu,
    /// RUN%.
    Run,
    /// RUNQ%.
    Runq,
    /// THR%.
    Throttled,
    /// SLEEP%.
    Sleep,
    /// DISK%.
    Disk,
    /// STOP%.
    Stop,
    /// OTHER%.
    Other,
    /// Process id.
    Pid,
    /// Thread id.
    Tid,
    /// Command name.
    Comm,
}

impl SortArg {
    pub fn key(self) -> SortKey {
        match self {
            SortArg::Offcpu => SortKey::Offcpu,
            SortArg::Run => SortKey::State(State::Running),
            SortArg::Runq => SortKey::State(State::Runnable),
            SortArg::Throttled => SortKey::State(State::Throttled),
            SortArg::Sleep => SortKey::State(State::Sleeping),
            SortArg::Disk => SortKey::State(State::Disk),
            SortArg::Stop => SortKey::State(State::Stopped),
            SortArg::Other => SortKey::State(State::Other),
            SortArg::Pid => SortKey::Pid,
            SortArg::Tid => SortKey::Tid,
            SortArg::Comm => SortKey::Comm,
        }
    }
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = crate::input::duration(s, crate::input::Spelling::Seconds)
        .ok_or_else(|| format!("not a number of seconds: {s}"))?;
    if !(0.05..=86_400.0).contains(&d.as_secs_f64()) {
        return Err("the interval must be between 0.05 and 86400 seconds".into());
    }
    Ok(d)
}

impl Args {
    pub fn filter(&self) -> Filter {
        Filter {
            pids: self.pids.clone(),
            comms: self.comms.clone(),
        }
    }

    pub fn rollup(&self) -> Rollup {
        if self.processes {
            Rollup::Process
        } else if self.commands {
            Rollup::Command
        } else {
            Rollup::Thread
        }
    }
}

/// Parses `tasksnap states ARGS` ([`crate::output::parse_args`]).
pub fn parse(argv: &[OsString]) -> Result<Args, ExitCode> {
    crate::output::parse_args("tasksnap states", argv)
}
