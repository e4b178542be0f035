//! `tasksnap cgroups`: the host's cgroups with their own counters, one listing: two readings
//! of every cgroup (`Host::cgroups`) an interval apart, so that CPU use, throttling and
//! pressure are rates over it; tasks, quota, memory and OOM kills as of the second; and, from
//! the host's processes and a thread-state interval over the same time, each cgroup's own
//! processes and threads and their state mix ([`mix`]).
//!
//! This module is the command line (clap), the sources and the readings; [`rows`] turns them
//! into rows, [`print`] writes them as text, JSON or CSV. Exit status: 0 when done, 2 on bad
//! arguments, 1 on a write error (a closed pipe is 0: `tasksnap cgroups | head`).

mod mix;
pub(crate) mod print;
pub(crate) mod rows;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Parser, ValueEnum};
use tasksnap_collect::{Host, StatesOptions, ThreadStates};
use tasksnap_model::{Backend, Group, Groups, Query, Selector, Task};
use tasksnap_states::{between, Rollup, Sample};

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
    /// The thread-state mix (RUN, RUNQ, THRTL, D): `off` leaves the thread-state source
    /// unopened (it loads BPF programs as root).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = on_off,
          action = clap::ArgAction::Set)]
    states: bool,
}

fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err("on or off".to_string()),
    }
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
    let mut host = Host::from_env();
    let mut members = Members::open(&mut host, args.states);
    let _ = host.drop_loading_privileges();
    let depth = usize::from(args.depth);
    let first = members.sample_states();
    // The interval runs from one walk's start to the next's: a group's counters are read at
    // about the same place in each walk.
    let start = Instant::now();
    let before = host.cgroups(depth);
    std::thread::sleep(Duration::from_secs_f64(args.interval_s));
    let elapsed = start.elapsed();
    let after = host.cgroups(depth);
    let last = members.sample_states();
    for note in &after.notes {
        warn!("tasksnap cgroups: {note}");
    }
    let iv = first
        .zip(last)
        .map(|(a, b)| between(&a, &b, Rollup::Process));
    let procs = members.processes(&mut host);
    let mixes = mix::of(&after.cgroups, procs.as_deref(), iv.as_ref());
    let rows = rows::between(&before.cgroups, &after.cgroups, &mixes, elapsed);
    print::write(args.output, &rows, elapsed, &after.notes)?;
    Ok(ExitCode::SUCCESS)
}

/// The sources of who is in each cgroup: the host's processes with their cgroups, and the
/// thread-state source (none when it cannot open, or with `--states off`; the columns are
/// then `-`).
struct Members {
    states: Option<ThreadStates>,
    snapshots: bool,
}

impl Members {
    /// Opens both while the caller's privileges last (BPF loads as root).
    fn open(host: &mut Host, states: bool) -> Members {
        let groups = Groups::of(&[Group::Base, Group::Cgroup]);
        let snapshots = match host.open_snapshots(Backend::Auto, &groups) {
            Ok(()) => true,
            Err(e) => {
                warn!("tasksnap cgroups: no process listing ({e}): PROCS and THRDS are -");
                false
            }
        };
        let opts = StatesOptions {
            filter: Default::default(),
            track_sleep: false,
            track_holders: false,
            sample_hz: None,
            fds_left: None,
        };
        // The states of the running kernel's threads do not go with another tree's processes.
        let states = states && host.options().is_this_kernel();
        let states = match states.then(|| host.open_states(Backend::Auto, opts)) {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                warn!("tasksnap cgroups: no thread states ({e}): RUN, RUNQ, THRTL and D are -");
                None
            }
            None => None,
        };
        Members { states, snapshots }
    }

    /// A thread-state sample (none without the source, or when it fails: said once).
    fn sample_states(&mut self) -> Option<Sample> {
        match self.states.as_mut()?.sample() {
            Ok(s) => Some(s),
            Err(e) => {
                warn!("tasksnap cgroups: thread states: {e}");
                self.states = None;
                None
            }
        }
    }

    /// Every process, with its cgroups (`None` without a listing).
    fn processes(&self, host: &mut Host) -> Option<Vec<Task>> {
        if !self.snapshots {
            return None;
        }
        let groups = Groups::of(&[Group::Base, Group::Cgroup]);
        match host.snapshot(&Query::new(Selector::AllProcesses, groups)) {
            Ok(s) => Some(s.tasks),
            Err(e) => {
                warn!("tasksnap cgroups: process listing: {e}");
                None
            }
        }
    }
}
