//! tasksnap-export: what `tasksnap serve` exposes to Prometheus. It owns:
//! - [`group`]: which group a process belongs to (`--group-by comm|user|cgroup|exe`, or a
//!   prometheus-process-exporter configuration read by [`config`]), alive or from its exit
//!   record;
//! - [`aggregate`]: readings (tasks, thread-state totals and the processes that exited, from
//!   `tasksnap_collect::sampler`) into per-group counters that only grow (an exited
//!   process's final figures included), with the series count bounded;
//! - [`cgroups`]: the host's cgroups (`Host::cgroups`) into the `tasksnap_cgroup_*` series,
//!   the least busy folded into `cgroup="other"` beyond a series budget;
//! - [`label`]: a name's bytes as a label value (lossless: distinct names stay distinct);
//! - [`families`]: the one definition of each metric family (name, unit, type) serve and
//!   `tasksnap dump --format openmetrics` write;
//! - [`encode`]: those counters as OpenMetrics text (the `prometheus-client` crate) and the
//!   Prometheus text format, once per collection, so that a scrape only copies bytes.
//!
//! No I/O but reading a configuration file and looking up user names; the HTTP side and
//! the collection timer are the CLI's.
#![deny(missing_docs)]

pub mod aggregate;
pub mod cgroups;
pub mod config;
pub mod encode;
pub mod families;
pub mod group;
pub mod label;

pub use aggregate::{Aggregator, Options};
pub use cgroups::{CgroupSeries, Cgroups};
pub use config::Config;
pub use encode::{expose, Cost, Exposition};
pub use group::Grouping;

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {why}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why (the OS error or the refusal: not a regular file, too large).
        why: String,
    },
    /// Not YAML, or not the expected shape.
    #[error("not a process-exporter configuration: {0}")]
    Syntax(String),
    /// Well-formed but unusable.
    #[error("{0}")]
    Invalid(String),
}
