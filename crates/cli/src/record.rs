//! `tasksnap record`: the foreground recorder. Each interval it takes one reading of the host
//! through the sampler (tasksnap-collect), hands it to a [`Recorder`] (tasksnap-history: the
//! store's write protocol, key or delta frames into tasksnap-store), then says what it cost.
//!
//! A recording goes on across restarts: the first sample of a run carries each thread's
//! state-time totals on from the last sample recorded ([`tasksnap_states::carry`]), and a
//! wall clock that stepped back since is said and recorded as it is (the store keeps the
//! order of recording).
//!
//! Exit codes: 0 stopped cleanly (SIGINT, SIGTERM, SIGHUP, or `--count` reached); 1 an error
//! while recording (a full disk: what was written is kept and readable); 2 bad usage; 3 the
//! store cannot be used (another recorder holds it, it is not a store, a newer tasksnap
//! wrote it, or it is unsafe: a link, another user's directory, one group or others may
//! write to, a planted LOCK).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use tasksnap_collect::{Host, ReadingOptions, Readings};
use tasksnap_history::{Appended, Recorder, ReplayError};
use tasksnap_model::Backend;
use tasksnap_states::carry::Carry;
use tasksnap_store::{StoreError, WriterOptions};

use crate::when;

/// Records the host's tasks, threads, thread-state totals and system figures to a directory,
/// every interval, until stopped.
///
/// Each sample holds every process and thread (state, parents, ids, CPU times, faults,
/// memory, I/O, scheduler counters), each thread's time in each scheduler state and its
/// wait reasons (exact with BPF as root; the /proc fallback otherwise, marked as such), the
/// command line and cgroup once per task, /proc/stat, meminfo, loadavg, vmstat and
/// pressure, and the cgroups with their own counters (`--cgroup-depth`). Read it back with `tasksnap ps --replay DIR`, `top --replay`, `states --replay`
/// and `dump`.
#[derive(Debug, Parser)]
#[command(name = "tasksnap record")]
pub struct Args {
    /// The store directory (created if missing, mode 0700). It must be the recording user's,
    /// not writable by group or others, and not a symbolic link.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// Seconds between samples (0: one after the other, as fast as the host allows).
    #[arg(short = 'i', long, value_name = "SECONDS", default_value = "10", value_parser = parse_interval)]
    pub interval: Duration,

    /// Stop after N samples (default: until stopped by a signal).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Delete whole segments older than this while recording (e.g. 7d, 12h).
    #[arg(long, value_name = "DURATION", value_parser = when::parse_duration)]
    pub retain_for: Option<Duration>,

    /// Delete the oldest segments while the store is larger than this (e.g. 10G).
    #[arg(long, value_name = "BYTES", value_parser = when::parse_size)]
    pub max_size: Option<u64>,

    /// Seconds of samples per segment file (retention deletes whole segments).
    #[arg(long, value_name = "SECONDS", default_value = "3600", value_parser = parse_segment)]
    pub segment: Duration,

    /// A key frame (every task written in full) at least every N samples; the samples between
    /// hold only what changed since the key frame.
    #[arg(long, value_name = "N", default_value = "60", value_parser = clap::value_parser!(u32).range(1..))]
    pub key_every: u32,

    /// Where tasks and thread states come from: bpf (root), procfs, or auto.
    #[arg(long, value_name = "auto|bpf|procfs", default_value = "auto")]
    pub backend: Backend,

    /// Keep the kernel stacks of S waits too (D waits always).
    #[arg(long)]
    pub why_sleep: bool,

    /// Record the host's cgroups with their counters (CPU, throttling, memory, I/O, pids,
    /// pressure) every sample, down to this depth below each hierarchy's root (0: none).
    /// A delta stores only the cgroups that differ from its key frame.
    #[arg(long, value_name = "N", default_value = "3", value_parser = clap::value_parser!(u16).range(0..=64))]
    pub cgroup_depth: u16,

    /// After each sample, print to stderr where its time went (sampler phases, encoding,
    /// writing) and its size.
    #[arg(long)]
    pub timings: bool,

    /// Say nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    when::parse_duration_within(
        s,
        Duration::ZERO,
        Duration::from_secs(86_400),
        "at most a day (86400 seconds)",
    )
}

fn parse_segment(s: &str) -> Result<Duration, String> {
    when::parse_duration_within(
        s,
        Duration::from_secs(1),
        Duration::from_secs(7 * 86_400),
        "between 1 second and 7 days",
    )
}

/// `tasksnap record ARGS`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args: Args = match crate::output::parse_args("tasksnap record", argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    run(&args)
}

/// What a run cost, for the closing line.
#[derive(Debug, Default)]
struct Tally {
    samples: u64,
    keys: u64,
    missed: u64,
    cpu_ns: u64,
    /// Exited processes stored, and exit records the kernel dropped (its buffer was full).
    exits: u64,
    exits_dropped: u64,
}

fn run(args: &Args) -> ExitCode {
    let signals = crate::signals::stop_signals();
    crate::signals::block(&signals);
    let opts = WriterOptions {
        segment_span_ns: args.segment.as_nanos() as u64,
        retain_for_ns: args.retain_for.map(|d| d.as_nanos() as u64),
        max_size_bytes: args.max_size,
    };
    // The store first: a second recorder stops here, before loading anything.
    let mut recorder = match Recorder::create(&args.dir, opts, args.key_every) {
        Ok(r) => r,
        Err(e) => {
            warn!("tasksnap record: {e}");
            return ExitCode::from(match e {
                StoreError::Io { .. } | StoreError::Full { .. } => 1,
                _ => 3,
            });
        }
    };
    say_warnings(&mut recorder);
    let carry = carry_on(&recorder);
    let bytes0 = recorder.bytes_on_disk();
    let cpu0 = own_cpu_ns();
    let mut host = Host::from_env();
    let opened = host.open_readings(ReadingOptions {
        backend: args.backend,
        track_sleep: args.why_sleep,
        exits: true,
        ..ReadingOptions::default()
    });
    let sampler = match opened {
        Ok(s) => s,
        Err(e) => {
            warn!("tasksnap record: {e}");
            let _ = recorder.finish();
            return ExitCode::from(1);
        }
    };
    let open_cpu_ns = own_cpu_ns().saturating_sub(cpu0);
    // Loaded: a recorder that runs for weeks keeps only what reading /proc needs (as top
    // and ps do), not the power to load programs.
    let dropped = host.drop_loading_privileges();
    if let (Err(e), Backend::Bpf) = (dropped, sampler.report().backend) {
        warn!("tasksnap record: could not drop capabilities: {e}");
    }
    if !args.quiet {
        let (states, why) = sampler.states_report();
        warn!(
            "tasksnap record: recording to {} every {} (tasks: {}; thread states: {}, {}; \
             exits: {}; cgroups: {}); stop with Ctrl-C",
            args.dir.display(),
            humantime::format_duration(args.interval),
            sampler.report().why,
            states.map(|b| b.name()).unwrap_or("off"),
            why,
            sampler.exits_source().map_or("none", |s| s.description()),
            match args.cgroup_depth {
                0 => "off".to_string(),
                d => format!("to depth {d}"),
            },
        );
    }
    let mut run = Run {
        args,
        host,
        recorder,
        sampler,
        carry,
        tally: Tally::default(),
        // Said once: at the first sample when there is no exit source, or when one stops.
        exits_missing_said: args.quiet,
        cgroups_read: Duration::ZERO,
    };
    let start = Instant::now();
    let code = run.record(&signals, start);
    let Run {
        recorder,
        sampler,
        tally,
        ..
    } = run;
    let bytes = recorder.bytes_on_disk().saturating_sub(bytes0);
    if let Err(e) = recorder.finish() {
        warn!("tasksnap record: closing the store: {e}");
        return ExitCode::from(1);
    }
    if !args.quiet {
        say_cost(&tally, start.elapsed().as_secs_f64(), bytes, open_cpu_ns);
        if sampler.exits_missing().is_none() {
            warn!(
                "tasksnap record: {} processes that exited stored, {} exit records lost",
                tally.exits, tally.exits_dropped
            );
        }
    }
    code
}

/// A recording run: the host (its cgroups are read each sample), the store, the sampler, and
/// what it has cost so far.
struct Run<'a> {
    args: &'a Args,
    host: Host,
    recorder: Recorder,
    sampler: Readings,
    carry: Carry,
    tally: Tally,
    /// The missing exit source was said (or is never to be: `--quiet`).
    exits_missing_said: bool,
    /// Time the last sample's cgroups took to read.
    cgroups_read: Duration,
}

impl Run<'_> {
    /// Samples every interval from `start` until `--count` samples, a stop signal or an
    /// error; the exit code.
    fn record(&mut self, signals: &libc::sigset_t, start: Instant) -> ExitCode {
        let interval = self.args.interval;
        let mut next = start;
        loop {
            if let Err(code) = self.sample() {
                return code;
            }
            if self.args.count.is_some_and(|n| self.tally.samples >= n) {
                return ExitCode::SUCCESS;
            }
            // The next tick on the schedule; ticks already past are skipped and counted (a
            // sample that took longer than the interval).
            next += interval;
            let now = Instant::now();
            if !interval.is_zero() && next < now {
                let behind = now.duration_since(next).as_nanos() / interval.as_nanos().max(1);
                self.tally.missed += behind as u64 + 1;
                next += interval * (behind as u32 + 1);
            }
            if crate::signals::wait(signals, next.saturating_duration_since(Instant::now())) {
                return ExitCode::SUCCESS;
            }
        }
    }

    /// Takes one reading and appends it to the store; on an error, said, the exit code.
    fn sample(&mut self) -> Result<(), ExitCode> {
        let c0 = own_cpu_ns();
        let depth = usize::from(self.args.cgroup_depth);
        let (reading, changes) = match self.sampler.read_changed() {
            Ok((r, changes)) => {
                self.carry.apply(r);
                let c0 = Instant::now();
                r.cgroups = (depth > 0).then(|| self.host.cgroups(depth));
                self.cgroups_read = c0.elapsed();
                // What the first walk left out (too deep, too many), said once.
                if let (0, false, Some(l)) = (self.tally.samples, self.args.quiet, &r.cgroups) {
                    for n in &l.notes {
                        warn!("tasksnap record: cgroups: {n}");
                    }
                }
                (r, changes)
            }
            Err(e) => {
                warn!("tasksnap record: {e}");
                return Err(ExitCode::from(1));
            }
        };
        if let (Some(why), false) = (&reading.exits_missing, self.exits_missing_said) {
            warn!("tasksnap record: processes that exit between samples are not recorded: {why}");
            self.exits_missing_said = true;
        }
        let tally = &mut self.tally;
        if reading.exits_dropped > 0 && tally.exits_dropped == 0 {
            warn!(
                "tasksnap record: {} exit records were lost before this sample (a buffer was \
                 full: the kernel's, or the pending exits'); each sample stores how many",
                reading.exits_dropped
            );
        }
        tally.exits += reading.exits.len() as u64;
        tally.exits_dropped += reading.exits_dropped;
        let result = self.recorder.append_changed(reading, Some(changes));
        // The thread states back as the sampler's source read them: it reads the next
        // sample from them.
        self.carry.restore(reading);
        let cpu_ns = own_cpu_ns().saturating_sub(c0);
        tally.cpu_ns += cpu_ns;
        if let (true, Ok(a)) = (self.args.timings, &result) {
            say_timings(&self.sampler, &self.recorder, self.cgroups_read, a, cpu_ns);
        }
        say_warnings(&mut self.recorder);
        let appended = match result {
            Ok(a) => a,
            Err(e) => {
                warn!(
                    "tasksnap record: {e}; stopped after {} samples (all of them are kept in {})",
                    tally.samples,
                    self.args.dir.display()
                );
                return Err(ExitCode::from(1));
            }
        };
        tally.samples += 1;
        tally.keys += u64::from(appended.key);
        Ok(())
    }
}

/// `--timings`: where a sample's time went (`cgroups`: reading the cgroups), and its size.
fn say_timings(
    sampler: &Readings,
    recorder: &Recorder,
    cgroups: Duration,
    a: &Appended,
    cpu_ns: u64,
) {
    let mut line = String::new();
    for &(name, d) in sampler.phases().iter().chain(&[("cgroups", cgroups)]) {
        line.push_str(&format!("{name} {:.1} ms, ", d.as_secs_f64() * 1e3));
    }
    warn!(
        "tasksnap record: {}{line}encode {:.1} ms, write {:.1} ms; {} payload {} B (names {} \
         B); CPU {:.1} ms",
        if a.key { "key: " } else { "" },
        a.encode.as_secs_f64() * 1e3,
        a.write.as_secs_f64() * 1e3,
        if a.key { "key" } else { "delta" },
        a.sample_bytes,
        a.names_bytes,
        cpu_ns as f64 / 1e6
    );
    let mut held = sampler.footprint();
    for (part, bytes) in recorder.held() {
        held.add(part, bytes);
    }
    warn!(
        "tasksnap record: held {:.1} MB: {}",
        held.total() as f64 / 1e6,
        held.line()
    );
}

/// The closing line: samples, bytes written and the CPU they took over `wall_s` seconds.
fn say_cost(tally: &Tally, wall_s: f64, bytes: u64, open_cpu_ns: u64) {
    let per = |v: u64| v as f64 / tally.samples.max(1) as f64;
    warn!(
        "tasksnap record: {} samples ({} key) in {:.1} s; {:.1} MB written ({:.1} KB per \
         sample); own CPU {:.1} ms per sample ({:.2}% of a CPU), {:.0} ms to start{}",
        tally.samples,
        tally.keys,
        wall_s,
        bytes as f64 / 1e6,
        per(bytes) / 1e3,
        per(tally.cpu_ns) / 1e6,
        if wall_s > 0.0 {
            tally.cpu_ns as f64 / 1e9 / wall_s * 100.0
        } else {
            0.0
        },
        open_cpu_ns as f64 / 1e6,
        if tally.missed > 0 {
            format!(
                "; {} ticks missed (a sample took longer than the interval)",
                tally.missed
            )
        } else {
            String::new()
        }
    );
}

/// What the store met that did not stop recording (a segment retention could not delete, an
/// entry named like a segment that is not a regular file, left alone, the clock stepping
/// back), each said once, even with -q.
fn say_warnings(recorder: &mut Recorder) {
    for w in recorder.take_warnings() {
        warn!("tasksnap record: warning: {w}");
    }
}

/// What the run carries on from: the last sample recorded in the store (the lock is held, so
/// nothing is appended meanwhile). A new store, or one whose end does not read, carries
/// nothing (said, for the latter: the interval spanning the restart then counts only the
/// new run's time).
fn carry_on(recorder: &Recorder) -> Carry {
    match recorder.last_recorded() {
        Ok(r) => Carry::after(&r),
        Err(ReplayError::Empty { .. }) => Carry::none(),
        Err(e) => {
            warn!(
                "tasksnap record: warning: the last sample recorded does not read ({e}); \
                 the interval spanning this restart will hold only what this run counts"
            );
            Carry::none()
        }
    }
}

/// CPU time this process used so far (all threads), ns.
fn own_cpu_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}
