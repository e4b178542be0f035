//! `tasksnap dump`'s writer side: recorded [`Reading`](tasksnap_model::Reading)s out as a
//! table of processes, threads, system figures or cgroups, in CSV, JSON Lines, Parquet or
//! OpenMetrics text (not cgroups). What is asked is [`options`]' (format, table, columns by
//! name), the columns chosen [`select`]'s from the catalogue of [`mod@columns`] (their cells
//! [`cells`]'), the rows [`rows`]' (an exited process's [`exit_rows`]'), the loop from
//! readings to rows to a format's [`sink`] [`mod@write`]'s; each format is its own module.
//! Reading the recording (`--dir`, `--from`, `--to`) is the caller's ([`cli`]): it hands
//! [`write::write`] an iterator of readings in time order, or [`write::write_partitioned`]
//! for Parquet files in hive-style directories ([`partition`]).
//!
//! Errors: an error item from the iterator stops the dump; what was written before it is
//! flushed (and a Parquet file closed, so it is readable) and the error is returned saying
//! so. OpenMetrics then leaves out its closing `# EOF`, so an importer refuses the cut
//! exposition instead of taking it for a whole one. Errors of `out` (a closed pipe) are
//! returned as the `std::io::Error` they are, for the caller to recognise.

pub(crate) mod cells;
mod cli;
mod clock;
mod columns;
mod csv_out;
mod exit_rows;
mod json_out;
mod openmetrics;
mod options;
mod parquet_out;
mod partition;
mod rows;
mod select;
mod sink;
#[cfg(test)]
mod tests;
mod write;

pub use cli::main;
/// What `tasksnap report` reads of a dump's Parquet files: the tables' columns and the Arrow
/// type each kind is written as.
pub(crate) use columns::{columns, more_columns, state_column, Kind};
pub(crate) use options::What;
pub(crate) use parquet_out::data_type;
