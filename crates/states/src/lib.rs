//! tasksnap-states: for every thread, how much of each interval it spent running, waiting for
//! a CPU, sleeping, in uninterruptible sleep ("disk"), stopped, or otherwise, and why it was
//! off the CPU.
//!
//! Two sources produce cumulative per-thread totals ([`sample::Sample`]):
//! - [`bpf::BpfSource`] (root): exact. A sched_switch program charges each thread's time at
//!   its switch-outs (with the scheduler's own sched_info for the run and the run-queue wait);
//!   a task iterator reads the totals with the ongoing state counted up to the read; the
//!   kernel stacks of D waits (and S waits on request) name the reason.
//! - [`fallback::ProcfsSource`] (anyone): running exact from `/proc/TID/schedstat`, runnable
//!   from it too but with the waits still going on estimated (schedstat counts a wait when it
//!   ends), the rest of the off-CPU time split by sampling the state letter (and `wchan` for
//!   the reason); block I/O delay from delay accounting when it is on.
//!
//! [`interval::between`] turns two samples into per-thread percentages (pure, no I/O);
//! [`symbolize`] names kernel addresses from /proc/kallsyms; [`flame`] writes an off-CPU flame
//! graph. Presentation (tables, JSON) is the CLI's.

pub mod bpf;
pub mod fallback;
pub mod flame;
pub mod interval;
pub mod sample;
pub mod symbolize;

pub use interval::{between, Interval, Rollup, Row};
pub use sample::{Filter, Mode, Sample, Source, ThreadTotals};
pub use tasksnap_model::states::{State, NSTATES};

/// What can go wrong while taking a sample.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The BPF accounting cannot run here; the message says why.
    #[error("BPF accounting unavailable: {0}")]
    BpfUnavailable(String),
    /// A BPF map or iterator operation failed while sampling.
    #[error("BPF: {0}")]
    Bpf(String),
    /// A file that must be readable is not (e.g. the /proc root itself).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}
