//! What a dump is asked for: the output format, the table and the columns by name.

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
    /// One row per cgroup per reading: its hierarchy and every counter of the model's
    /// cgroup field table.
    Cgroups,
}

impl What {
    /// The name `--what` takes.
    pub fn name(self) -> &'static str {
        match self {
            What::Processes => "processes",
            What::Threads => "threads",
            What::System => "system",
            What::Cgroups => "cgroups",
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
