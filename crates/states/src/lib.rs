//! tasksnap-states: the analysis of thread-state totals, pure (no I/O): for every thread, how
//! much of an interval it spent running, waiting for a CPU, sleeping, in uninterruptible
//! sleep ("disk"), stopped, or otherwise, and why it was off the CPU.
//!
//! It owns:
//! - [`interval::between`]: two cumulative samples (model [`Sample`]s, keyed by `TaskId`)
//!   into per-thread (or per-process) shares of the interval, with the top reasons;
//! - [`flame`]: an off-CPU flame graph of the intervals;
//! - [`carry`]: a new run of a source made to go on from the totals recorded before it (what
//!   keeps a recording's state time continuous across a recorder restart).
//!
//! The samples themselves come from the sources in tasksnap-collect
//! (`tasksnap_collect::StateSource`: the BPF accounting, exact, or the /proc source, sampled
//! where it must be, chosen by `tasksnap_collect::choice::open_states`). Presentation
//! (tables, JSON) is the CLI's.
#![deny(missing_docs)]

pub mod carry;
pub mod flame;
pub mod interval;

pub use interval::{between, Interval, Rollup, Row};
pub use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};
