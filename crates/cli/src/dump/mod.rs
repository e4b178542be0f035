//! `tasksnap dump`'s writer side: recorded [`Reading`]s out as a table of processes, threads
//! or system figures, in CSV, JSON Lines, Parquet or OpenMetrics text. It owns the choice of
//! columns (`--fields`) and the loop from readings to rows to a format; the columns are
//! [`mod@columns`]' (their cells [`cells`]'), the rows [`rows`]' (an exited process's
//! [`exit_rows`]'), each format is its own module. Reading the recording (`--dir`, `--from`,
//! `--to`) is the caller's: it hands [`write`] an iterator of readings in time order, or
//! [`write_partitioned`] for Parquet files in hive-style directories ([`partition`]).
//!
//! Errors: an error item from the iterator stops the dump; what was written before it is
//! flushed (and a Parquet file closed, so it is readable) and the error is returned saying
//! so. OpenMetrics then leaves out its closing `# EOF`, so an importer refuses the cut
//! exposition instead of taking it for a whole one. Errors of `out` (a closed pipe) are
//! returned as the `std::io::Error` they are, for the caller to recognise.

mod cells;
mod cli;
mod clock;
mod columns;
mod csv_out;
mod exit_rows;
mod json_out;
mod openmetrics;
mod parquet_out;
mod partition;
mod rows;
#[cfg(test)]
mod tests;

use std::io::Write;

use anyhow::bail;
use tasksnap_model::Reading;

pub use cells::Value;
pub use cli::main;
pub use columns::{columns, Column};

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// CSV with a header row (RFC 4180 quoting).
    Csv,
    /// JSON Lines: one object per row.
    Json,
    /// Apache Parquet (zstd), for DuckDB, polars, pandas.
    Parquet,
    /// OpenMetrics text with timestamps, for backfilling a Prometheus TSDB.
    #[value(name = "openmetrics")]
    OpenMetrics,
}

/// Which table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum What {
    /// One row per process per reading.
    #[default]
    Processes,
    /// One row per thread per reading, with the time spent in each state since the last.
    Threads,
    /// One row per reading: CPU, memory, load, vmstat and pressure figures.
    System,
}

impl What {
    /// The name `--what` takes.
    pub fn name(self) -> &'static str {
        match self {
            What::Processes => "processes",
            What::Threads => "threads",
            What::System => "system",
        }
    }
}

/// What to write.
#[derive(Debug, Clone)]
pub struct Options {
    /// The format.
    pub format: Format,
    /// The table.
    pub what: What,
    /// The columns, in order; `None` for all of the table's. (OpenMetrics: the metrics to
    /// write; `time` and the identifying labels are always there.)
    pub fields: Option<Vec<String>>,
}

/// A format's writer: fed rows of the chosen columns, then finished.
trait Sink {
    /// Called before the rows of each reading (a partitioned dump picks the file of the
    /// reading's host and date).
    fn begin_reading(&mut self, _reading: &Reading) -> anyhow::Result<()> {
        Ok(())
    }
    /// Writes one row (the chosen columns' values, in order).
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()>;
    /// Writes what is buffered and the format's ending; `complete` is false when the input
    /// failed and the dump stops early.
    fn finish(&mut self, complete: bool) -> anyhow::Result<()>;
}

/// The columns `opts` asks for: all of the table's, or `opts.fields` in their order. An
/// unknown or repeated name is an error listing the valid ones.
pub fn select(opts: &Options) -> anyhow::Result<Vec<Column>> {
    let defaults = columns(opts.what);
    let om = opts.format == Format::OpenMetrics;
    let Some(fields) = &opts.fields else {
        return Ok(if om {
            defaults
                .into_iter()
                .filter(|c| c.name == "time" || c.label || c.metric.is_some())
                .collect()
        } else {
            defaults
        });
    };
    // Named, the model's other task fields can be chosen too.
    let mut all = defaults;
    all.extend(columns::more_columns(opts.what));
    let valid = |pick: &dyn Fn(&Column) -> bool| {
        all.iter()
            .filter(|c| pick(c))
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if fields.is_empty() {
        bail!(
            "no fields chosen; the fields of {} are: {}",
            opts.what.name(),
            valid(&|_| true)
        );
    }
    let mut chosen: Vec<Column> = Vec::with_capacity(fields.len());
    for name in fields {
        let Some(c) = all.iter().find(|c| c.name == *name) else {
            bail!(
                "unknown field `{name}` for --what {}; the fields are: {}",
                opts.what.name(),
                valid(&|_| true)
            );
        };
        if chosen.iter().any(|x| x.name == *name) {
            bail!("field `{name}` is listed twice");
        }
        if om && c.metric.is_none() && !c.label && c.name != "time" {
            bail!(
                "field `{name}` has no OpenMetrics series; the metric fields of {} are: {}",
                opts.what.name(),
                valid(&|c| c.metric.is_some())
            );
        }
        chosen.push(c.clone());
    }
    if !om {
        // A text column brings its `_bytes` sibling, right after it, unless chosen too:
        // no choice of columns loses the exact bytes of a name.
        let mut i = 0;
        while i < chosen.len() {
            if let Some(s) = columns::sibling(&chosen[i]) {
                if !chosen.iter().any(|x| x.name == s) {
                    if let Some(c) = all.iter().find(|c| c.name == s) {
                        chosen.insert(i + 1, c.clone());
                    }
                }
            }
            i += 1;
        }
    }
    if om {
        // Timestamps and the labels that tell series apart are not optional there.
        let required: Vec<Column> = all
            .iter()
            .filter(|c| (c.name == "time" || c.label) && !chosen.iter().any(|x| x.name == c.name))
            .cloned()
            .collect();
        chosen.splice(0..0, required);
    }
    Ok(chosen)
}

/// Writes every reading of `readings` (in time order) to `out`. Returns rows written.
pub fn write(
    readings: &mut dyn Iterator<Item = anyhow::Result<Reading>>,
    opts: &Options,
    out: &mut dyn Write,
) -> anyhow::Result<u64> {
    let cols = select(opts)?;
    let mut sink: Box<dyn Sink + '_> = match opts.format {
        Format::Csv => Box::new(csv_out::CsvSink::new(&cols, out)?),
        Format::Json => Box::new(json_out::JsonSink::new(&cols, out)),
        Format::Parquet => Box::new(parquet_out::ParquetSink::new(&cols, out)?),
        Format::OpenMetrics => Box::new(openmetrics::OpenMetricsSink::new(&cols, out)),
    };
    drive(readings, opts, &cols, sink.as_mut())
}

/// Writes every reading of `readings` (in time order) as Parquet files in hive-style
/// partitions under `root` (see [`partition`]: `host=<h>/date=<YYYY-MM-DD>/part-<N>.parquet`).
/// Returns rows written and the files made. Only [`Format::Parquet`] is partitioned.
pub fn write_partitioned(
    readings: &mut dyn Iterator<Item = anyhow::Result<Reading>>,
    opts: &Options,
    root: tasksnap_safefile::Dir,
) -> anyhow::Result<(u64, Vec<std::path::PathBuf>)> {
    if opts.format != Format::Parquet {
        bail!(PARTITION_FORMATS);
    }
    let cols = select(opts)?;
    let mut sink = partition::Partitions::new(root, &cols);
    let rows = drive(readings, opts, &cols, &mut sink)?;
    Ok((rows, sink.written().to_vec()))
}

/// Why `--partition` refuses a format.
pub const PARTITION_FORMATS: &str = "--partition writes Parquet only (one file per host and \
     day, for DuckDB, Spark or polars to read as one table): add --format parquet";

/// The loop from readings to rows to `sink`.
fn drive(
    readings: &mut dyn Iterator<Item = anyhow::Result<Reading>>,
    opts: &Options,
    cols: &[Column],
    sink: &mut dyn Sink,
) -> anyhow::Result<u64> {
    let mut producer = rows::Producer::new(opts.what, cols);
    let mut rows = 0u64;
    for item in readings {
        match item {
            Ok(reading) => {
                sink.begin_reading(&reading)?;
                producer.reading(reading, &mut |row| {
                    sink.row(row)?;
                    rows += 1;
                    Ok(())
                })?
            }
            Err(e) => {
                let flushed = match sink.finish(false) {
                    Ok(()) => format!("the {rows} rows before it were written and flushed"),
                    Err(f) => format!("writing the {rows} rows before it failed too: {f:#}"),
                };
                return Err(e.context(format!(
                    "reading the recording failed; the dump stops there ({flushed})"
                )));
            }
        }
    }
    sink.finish(true)?;
    Ok(rows)
}
