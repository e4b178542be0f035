//! What a thread-state source is asked for ([`Filter`]) and the interface every source
//! answers through ([`Source`]). The totals themselves are model types
//! ([`tasksnap_model::states`]), shared with the task snapshots.

pub use tasksnap_model::states::{Mode, Sample, ThreadHasher, ThreadMap, ThreadTotals};

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

/// Something that can take samples.
pub trait Source {
    /// Cumulative totals of every thread the filter selects, now.
    fn sample(&mut self) -> Result<Sample, crate::Error>;
}
