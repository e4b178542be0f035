//! The sources of thread-state totals: what [`crate::collector::StateSource`] answers with (a model
//! [`Sample`]: cumulative per-thread time in each scheduler state, keyed by `TaskId`).
//!
//! - [`bpf::BpfSource`] (root): exact. A sched_switch program charges each thread's time at
//!   its switch-outs (with the scheduler's own sched_info for the run and the run-queue wait);
//!   a task iterator reads the totals with the ongoing state counted up to the read; the
//!   kernel stacks of D waits (and S waits on request) name the reason.
//! - [`procfs::ProcfsSource`] (anyone): running exact from `/proc/TID/schedstat`, runnable
//!   from it too but with the waits still going on estimated (schedstat counts a wait when it
//!   ends), the rest of the off-CPU time split by sampling the state letter (and `wchan` for
//!   the reason); block I/O delay from delay accounting when it is on; throttled time
//!   estimated from the cgroups' own counts ([`throttle`]).
//!
//! [`symbolize`] names kernel addresses from /proc/kallsyms. Which source answers is
//! [`crate::choice::open_states`]'s rule; turning two samples into percentages is
//! tasksnap-states' (pure, no I/O).

pub mod bpf;
pub mod procfs;
pub mod symbolize;
mod throttle;

pub use tasksnap_model::states::{Mode, Sample, ThreadTotals};

/// Which processes a watched source's next sample reports ([`ThreadStates::sample_of`]):
/// said outright, because an empty list of rows on screen means nobody, never everybody.
///
/// [`ThreadStates::sample_of`]: crate::ThreadStates::sample_of
#[derive(Debug, Clone, Copy)]
pub enum Watched<'a> {
    /// Every thread of the host.
    Every,
    /// The threads of these processes only (none when the list is empty).
    Only(&'a [i32]),
}

/// Which threads to report: all when both lists are empty, otherwise the threads of the
/// listed processes and those whose command name is listed.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Process ids (thread group ids).
    pub pids: Vec<i32>,
    /// Command names (`comm`), matched exactly.
    pub comms: Vec<String>,
}

impl Filter {
    /// Whether a thread of process `tgid` named `comm` is reported.
    pub fn matches(&self, tgid: i32, comm: &str) -> bool {
        (self.pids.is_empty() && self.comms.is_empty())
            || self.pids.contains(&tgid)
            || self.comms.iter().any(|c| c == comm)
    }
}
