//! `tasksnap report`'s command line and run: which recording and window (`--dir`, `--from`,
//! `--to`, as `dump` takes them), how many top processes (`--top`), and where to (`-o FILE`
//! through [`crate::outfile`]: never truncated in place, never inside the recording; stdout
//! by default). Progress on stderr when it is a terminal, nothing otherwise. Exit codes: 0
//! written; 1 the recording could not be read or the page written; 2 bad usage.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use super::gather::Gatherer;
use super::page::{MomentView, Page, ProcView};
use super::{listing, moments, views};

/// Writes a recording's window (`tasksnap record --dir DIR`) as one HTML page: the host's
/// CPU, memory, load and pressure, CPU by group, the thread-state mix and D-state reasons,
/// the processes that exited, the top processes, and the moments worth looking at with
/// their listings. Self-contained: it fetches nothing.
#[derive(Debug, Parser)]
#[command(name = "tasksnap report")]
pub struct Args {
    /// The recording's directory.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// The window's first sample: at or after this time (RFC 3339 UTC, epoch seconds, or
    /// -10m). Default: the recording's first.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub from: Option<u64>,

    /// The window's last sample: at or before this time. Default: the recording's last.
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
    let history = crate::recording::open("tasksnap report", &args.dir)?;
    let (from, to) = crate::recording::window(&history, &args.dir, args.from, args.to)?;
    // Refused before anything is read: a link, another user's file, the recording itself.
    let output = match &args.output {
        Some(path) => Some(crate::outfile::create(
            path,
            Some(history.store().directory()),
        )?),
        None => None,
    };
    let bar = progress(history.sample_times(from, to)?.len(), "reading");
    let mut gatherer = Gatherer::default();
    let mut readings = history.readings(from, to)?;
    for r in readings.by_ref() {
        gatherer.reading(r);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let lost = readings.lost();
    let g = gatherer.finish();
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
    let bar = progress(chosen.len(), "listing moments");
    let mut users = tasksnap_sys::users::Names::default();
    let mut moment_views = Vec::with_capacity(chosen.len());
    let mut listings = listing::Readings::new(&history);
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
    let page = Page {
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
    }
    .render();
    write(args, output, page.as_bytes())
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
