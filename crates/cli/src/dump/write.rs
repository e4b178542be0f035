//! The loop from readings to rows to a format's sink: one output, or Parquet files in
//! hive-style partitions.

use std::io::Write;

use anyhow::bail;
use tasksnap_model::Reading;

use super::columns::Column;
use super::options::{Format, Options};
use super::select::select;
use super::sink::Sink;
use super::{csv_out, json_out, openmetrics, parquet_out, partition, rows};

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
