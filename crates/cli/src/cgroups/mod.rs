//! `tasksnap cgroups`: the host's cgroups with their own counters, one listing: two readings
//! of every cgroup (`Host::cgroups`) an interval apart, so that CPU use, throttling and
//! pressure are rates over it; processes, quota, memory and OOM kills as of the second.
//!
//! This module is the command line (clap) and the two readings; [`rows`] turns them into
//! rows, [`print`] writes them as text, JSON or CSV. Exit status: 0 when done, 2 on bad
//! arguments, 1 on a write error (a closed pipe is 0: `tasksnap cgroups | head`).

mod print;
mod rows;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Parser, ValueEnum};
use tasksnap_collect::Host;

/// The deepest `--depth` (the walk's own limit on one listing).
const MAX_DEPTH: usize = 64;

/// How the listing is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns for a terminal.
    Text,
    /// One JSON document: `interval_s`, `notes`, `cgroups` (numbers raw).
    Json,
    /// A header line and one line per cgroup (numbers raw).
    Csv,
}

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "tasksnap cgroups",
    about = "The host's cgroups (v2, and v1 merged by path) with their own counters: CPU use, \
             throttling, quota, memory, OOM kills, processes, CPU pressure",
    after_help = "CPU% and THR% are % of one CPU over the interval (usage and throttled time \
                  growth); PSI% is the growth of cpu.pressure's `some` total. See \
                  docs/cgroups.md."
)]
struct Args {
    /// Seconds between the two readings the rates come from.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0,
          value_parser = parse_interval)]
    interval_s: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Show cgroups down to this depth (the root is 0).
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u8).range(0..=MAX_DEPTH as i64))]
    depth: u8,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.01..=3600.0).contains(&v) => Ok(v),
        _ => Err("SECONDS must be a number from 0.01 to 3600".to_string()),
    }
}

/// Entry point: exit code 0 when done, 1 on a write error, 2 on bad arguments.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args: Args = match crate::output::parse_args("tasksnap cgroups", argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    crate::output::exit_code(run(&args))
}

fn run(args: &Args) -> Result<ExitCode> {
    let host = Host::from_env();
    let depth = usize::from(args.depth);
    let start = Instant::now();
    let before = host.cgroups(depth);
    std::thread::sleep(Duration::from_secs_f64(args.interval_s));
    let elapsed = start.elapsed();
    let after = host.cgroups(depth);
    for note in &after.notes {
        warn!("tasksnap cgroups: {note}");
    }
    let rows = rows::between(&before.cgroups, &after.cgroups, elapsed);
    print::write(args.output, &rows, elapsed, &after.notes)?;
    Ok(ExitCode::SUCCESS)
}
