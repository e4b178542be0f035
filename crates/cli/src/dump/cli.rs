//! `tasksnap dump`'s command line: which recording and window (`--dir`, `--from`, `--to`),
//! which table, format and fields, and where to (`--output`, stdout by default; with
//! `--partition`, a directory of hive-style Parquet partitions). The rows are
//! [`super::write`]'s; the readings come from tasksnap-history. `--what cgroups` of a window
//! whose readings hold no cgroups table (recorded before tasksnap kept them, or with
//! `--cgroup-depth 0`) writes an empty table and says so on stderr. Exit codes: 0 written; 1 the
//! recording could not be read or the output written (a `| head` that stops reading is not
//! an error); 2 bad usage.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use super::options::{Format, Options, What};

/// Writes a recording (`tasksnap record --dir DIR`) out as a table: one row per process
/// (or thread) per sample, or one row per sample of system figures.
#[derive(Debug, Parser)]
#[command(name = "tasksnap dump")]
pub struct Args {
    /// The recording's directory.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// The first sample to write: at or after this time (RFC 3339 UTC, epoch seconds, or
    /// -10m). Default: the recording's first.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub from: Option<u64>,

    /// The last sample to write: at or before this time. Default: the recording's last.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = crate::when::parse_time)]
    pub to: Option<u64>,

    /// Output format.
    #[arg(long, value_enum, default_value = "csv")]
    pub format: Format,

    /// Which table.
    #[arg(long, value_enum, default_value = "processes")]
    pub what: What,

    /// Only these columns, in this order (comma-separated); `--fields help` lists them.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub fields: Option<Vec<String>>,

    /// Write to FILE instead of stdout (Parquet needs a file or a pipe); with --partition,
    /// the directory to write the partitions in.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Parquet files in hive-style directories under --output DIR, one per host and UTC
    /// date: DIR/host=<host>/date=<YYYY-MM-DD>/part-<N>.parquet (new files only, never one
    /// replaced, so dumps of several hosts can share DIR). Parquet only.
    #[arg(long)]
    pub partition: bool,
}

/// `tasksnap dump ARGS`.
pub fn main(argv: &[OsString]) -> ExitCode {
    let args: Args = match crate::output::parse_args("tasksnap dump", argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    if args.fields.as_deref() == Some(&["help".to_string()][..]) {
        let mut text = format!("fields of --what {}:\n", args.what.name());
        for c in super::columns::columns(args.what) {
            text.push_str(&format!("  {:<24} {}\n", c.name, c.help));
        }
        let more = super::columns::more_columns(args.what);
        if !more.is_empty() {
            text.push_str("more fields, only when named:\n");
            for c in more {
                text.push_str(&format!("  {:<24} {}\n", c.name, c.help));
            }
        }
        return crate::output::print(&text);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if crate::output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            warn!("tasksnap dump: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let opts = Options {
        format: args.format,
        what: args.what,
        fields: args.fields.clone(),
    };
    // Bad fields are refused before anything is read or created.
    super::select::select(&opts)?;
    if args.partition && args.format != Format::Parquet {
        anyhow::bail!(super::write::PARTITION_FORMATS);
    }
    if args.partition && args.output.is_none() {
        anyhow::bail!("--partition needs --output DIR, the directory to write the partitions in");
    }
    let history = crate::recording::open("tasksnap dump", &args.dir)?;
    let (from, to) = crate::recording::window(&history, &args.dir, args.from, args.to)?;
    let mut readings = history.readings(from, to)?;
    // Whether a reading of the window has a cgroups table (for `--what cgroups`).
    let mut tables = false;
    if let (true, Some(dir)) = (args.partition, &args.output) {
        let root = partition_root(dir, history.store().directory())?;
        let mut items = readings
            .by_ref()
            .inspect(|r| tables |= r.cgroups.is_some())
            .map(Ok::<_, anyhow::Error>);
        super::write::write_partitioned(&mut items, &opts, root)?;
        warn_lost(args, readings.lost());
        warn_no_cgroups(args, tables);
        return Ok(());
    }
    // Never into the recording being read (it could overwrite a segment it reads), never
    // through a link; a file is replaced only once the dump is whole (crate::outfile).
    let mut output = match &args.output {
        Some(path) => Some(crate::outfile::create(
            path,
            Some(history.store().directory()),
        )?),
        None => None,
    };
    {
        let mut out: Box<dyn Write + '_> = match output.as_mut() {
            Some(o) => Box::new(std::io::BufWriter::with_capacity(1 << 20, o.file())),
            None => Box::new(std::io::BufWriter::with_capacity(
                1 << 20,
                std::io::stdout().lock(),
            )),
        };
        let mut items = readings
            .by_ref()
            .inspect(|r| tables |= r.cgroups.is_some())
            .map(Ok::<_, anyhow::Error>);
        super::write::write(&mut items, &opts, &mut out)?;
        out.flush()?;
    }
    if let (Some(o), Some(path)) = (output, &args.output) {
        // On disk, or an error now: a full disk is not a short file behind a success.
        o.finish()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    warn_lost(args, readings.lost());
    warn_no_cgroups(args, tables);
    Ok(())
}

/// `--what cgroups` of readings without a cgroups table: the (empty) table is written, and
/// this says why it is empty.
fn warn_no_cgroups(args: &Args, tables: bool) {
    if args.what == What::Cgroups && !tables {
        warn!(
            "tasksnap dump: the recording in {} holds no cgroups table in this window (it was \
             recorded by a tasksnap that did not keep them, or with --cgroup-depth 0): the \
             table is empty",
            args.dir.display()
        );
    }
}

fn warn_lost(args: &Args, lost: u64) {
    if lost > 0 {
        warn!(
            "tasksnap dump: {} damaged samples in {} were skipped",
            lost,
            args.dir.display()
        );
    }
}

/// The directory of a partitioned dump: created if missing (mode 0700), refused unless the
/// caller owns it and nobody else may write it (tasksnap-safefile's rule for a store: a dump
/// holds every user's command lines), and never the recording being read.
fn partition_root(
    dir: &std::path::Path,
    store: &tasksnap_safefile::Dir,
) -> anyhow::Result<tasksnap_safefile::Dir> {
    let root = tasksnap_safefile::Dir::create_private(dir, 0o700)
        .map_err(|e| anyhow::anyhow!("cannot use {}: {}", dir.display(), e.reason()))?;
    if root
        .same_dir(store)
        .with_context(|| format!("cannot use {}", dir.display()))?
    {
        anyhow::bail!(
            "refusing to write partitions into the recording being read ({}): write them \
             elsewhere",
            store.path().display()
        );
    }
    Ok(root)
}
