//! `tasksnap report`'s command line and run: which input and window (`--dir`, `--from`,
//! `--to`, as `dump` takes them), how many top processes (`--top`), and where to (`-o FILE`
//! through [`crate::outfile`]: never truncated in place, never inside the input directory;
//! stdout by default). `--dir` is a recording when it has a store's marker file, else a
//! Parquet dump's directory ([`super::parquet`]); either becomes [`super::frame::Frame`]s,
//! and the rest is one path. Progress on stderr when it is a terminal, nothing otherwise.
//! Exit codes: 0 written; 1 the input could not be read or the page written; 2 bad usage.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use super::gather::{Gathered, Gatherer};
use super::listing::Back;
use super::page::{MomentView, Page, ProcView};
use super::parquet::Dump;
use super::recorded::Framer;
use super::{listing, moments, views};

/// Writes a recording's window (`tasksnap record --dir DIR`), or a Parquet dump's of one
/// (`tasksnap dump --format parquet`), as one HTML page: the host's CPU, memory, load and
/// pressure, CPU by group, the thread-state mix and D-state reasons, the processes that
/// exited, the top processes, and the moments worth looking at with their listings.
/// Self-contained: it fetches nothing.
#[derive(Debug, Parser)]
#[command(name = "tasksnap report")]
pub struct Args {
    /// The recording's directory, or a directory of a Parquet dump's files (a file per
    /// table, `processes` at least; found down to 3 directories deep, known by their columns).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// The window's first sample: at or after this time (RFC 3339 UTC, epoch seconds, or
    /// -10m). Default: the input's first.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub from: Option<u64>,

    /// The window's last sample: at or before this time. Default: the input's last.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub to: Option<u64>,

    /// Processes in the top-processes table (by CPU over the window).
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub top: u16,

    /// Write to FILE (e.g. report.html) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `tasksnap report ARGS`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args: Args = match crate::output::parse_args("tasksnap report", argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if crate::output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            warn!("tasksnap report: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// A bar of `len` steps on stderr when it is a terminal; hidden otherwise.
fn progress(len: usize, what: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} samples, {eta} left")
    {
        bar.set_style(style);
    }
    bar.set_message(what);
    bar
}

fn run(args: &Args) -> anyhow::Result<()> {
    // A directory without a store's marker is a dump; a missing one is said as a recording's.
    let marker = args.dir.join(tasksnap_store::layout::MARKER_NAME);
    if std::fs::symlink_metadata(marker).is_err() && args.dir.is_dir() {
        return run_dump(args);
    }
    let history = crate::recording::open("tasksnap report", &args.dir)?;
    let (from, to) = crate::recording::window(&history, &args.dir, args.from, args.to)?;
    // Refused before anything is read: a link, another user's file, the recording itself.
    let output = create(args, history.store().directory())?;
    let bar = progress(history.sample_times(from, to)?.len(), "reading");
    let (mut framer, mut gatherer) = (Framer::default(), Gatherer::default());
    let mut readings = history.readings(from, to)?;
    for r in readings.by_ref() {
        gatherer.frame(&framer.frame(r));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let lost = readings.lost();
    let page = render(args, gatherer.finish(), lost, Vec::new(), |_| {
        Ok(Back::Recording(&history))
    })?;
    write(args, output, page.as_bytes())
}

/// [`run`] on a Parquet dump's directory.
fn run_dump(args: &Args) -> anyhow::Result<()> {
    let dump = Dump::open(&args.dir)?;
    let (from, to) = crate::recording::window_within(&args.dir, dump.bounds(), args.from, args.to)?;
    let output = create(args, dump.directory())?;
    let mut gatherer = Gatherer::default();
    dump.frames((from, to), &mut |f| gatherer.frame(&f))?;
    let notes = dump.notes.clone();
    let page = render(args, gatherer.finish(), 0, notes, |times| {
        Ok(Back::Rows(dump.rows_at(times)?))
    })?;
    write(args, output, page.as_bytes())
}

/// `-o FILE` opened (refused when it is a link, another user's file, or in `input`), or
/// `None` for stdout.
fn create(
    args: &Args,
    input: &tasksnap_safefile::Dir,
) -> anyhow::Result<Option<tasksnap_safefile::Output>> {
    args.output
        .as_ref()
        .map(|path| crate::outfile::create(path, Some(input)))
        .transpose()
}

/// The page of what was gathered (`lost`: damaged samples skipped; `notes`: what the input
/// lacks), the listings of its moments read back from what `back` gives for their times
/// and the times before them.
fn render<'h>(
    args: &Args,
    g: Gathered,
    lost: u64,
    notes: Vec<String>,
    back: impl FnOnce(&BTreeSet<u64>) -> anyhow::Result<Back<'h>>,
) -> anyhow::Result<String> {
    if g.times_ns.is_empty() {
        anyhow::bail!(
            "no sample of {} could be read in this window",
            args.dir.display()
        );
    }
    let top: Vec<usize> = (0..g.procs.len())
        .filter(|&k| g.procs[k].cpu_ns() > 0)
        .take(usize::from(args.top))
        .collect();
    let chosen = moments::choose(&g, &top);
    let times: BTreeSet<u64> = chosen
        .iter()
        .flat_map(|m| [Some(m.reading), m.reading.checked_sub(1)])
        .flatten()
        .map(|i| g.times_ns[i])
        .collect();
    let mut listings = listing::Readings::new(back(&times)?);
    let bar = progress(chosen.len(), "listing moments");
    let mut users = tasksnap_sys::users::Names::default();
    let mut moment_views = Vec::with_capacity(chosen.len());
    for m in &chosen {
        let at_ns = g.times_ns[m.reading];
        let prev = m.reading.checked_sub(1).map(|i| g.times_ns[i]);
        moment_views.push(MomentView {
            at_ns,
            why: m.why.clone(),
            listing: listings.listing(at_ns, prev, &mut users)?,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let charts = views::charts(&g);
    let procs = top
        .iter()
        .map(|&k| {
            let p = &g.procs[k];
            let user = p.uid.map_or_else(String::new, |u| match users.user(u) {
                Some(n) => super::escape::lossy(n),
                None => u.to_string(),
            });
            ProcView {
                proc: p,
                user,
                peak_ns: g.times_ns[p.peak_reading],
            }
        })
        .collect();
    Ok(Page {
        hostname: g.hostname.as_deref(),
        window: (g.times_ns[0], *g.times_ns.last().unwrap_or(&g.times_ns[0])),
        samples: g.times_ns.len(),
        lost,
        exits_dropped: g.exits_dropped,
        exits_known: g.exits_known,
        charts: &charts,
        procs,
        reasons: views::disk_reasons(&g, 10),
        moments: moment_views,
        notes,
    }
    .render())
}

/// The page to `-o FILE` (replaced whole once written and synced) or stdout.
fn write(
    args: &Args,
    output: Option<tasksnap_safefile::Output>,
    page: &[u8],
) -> anyhow::Result<()> {
    match (output, &args.output) {
        (Some(mut o), Some(path)) => {
            o.file()
                .write_all(page)
                .with_context(|| format!("cannot write {}", path.display()))?;
            o.finish()
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        _ => {
            let mut out = std::io::stdout().lock();
            out.write_all(page)?;
            out.flush()?;
        }
    }
    Ok(())
}
