//! The answer to a query: tasks, when they were taken, and what could not be read.

use serde::{Deserialize, Serialize};

use crate::{Backend, Task};

/// Counts of what went wrong, per snapshot. None of these is an error: tasks exit while they
/// are read, and some files are private to their owner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStats {
    /// Tasks listed but gone before all their files were read (ENOENT/ESRCH).
    pub vanished: u64,
    /// Tasks that exited after their first file was read: kept, with the groups read before
    /// they went.
    pub partial: u64,
    /// Attribute groups left empty because the caller may not read them (EACCES/EPERM).
    pub denied: u64,
    /// Files whose content could not be parsed (truncated or corrupt); the task is skipped.
    pub unparsable: u64,
    /// Reads abandoned because the task held its mmap lock past the deadline: command lines
    /// (the task is shown as `[comm]`), and `smaps_rollup` (PSS and USS shown as 0).
    pub cmdline_timeouts: u64,
    /// The BPF backend had to list /proc to find tasks its iterator did not return.
    pub reconciled_by_listing: bool,
}

/// A set of tasks collected together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Wall-clock time the collection started, ns since the Unix epoch.
    pub taken_at_unix_ns: u64,
    /// The kernel's boot-time clock (CLOCK_BOOTTIME of the initial time namespace, whatever
    /// the reader's) when the collection started, ns: compare with `Stat::start_time_ns` for
    /// elapsed times.
    pub taken_at_boottime_ns: u64,
    /// System boot time, seconds since the Unix epoch (`btime` of /proc/stat, of the kernel's
    /// boot clock: a reader in a time namespace has its offset taken off), so that it plus a
    /// start time is the moment a task started.
    pub boot_time_unix_s: u64,
    /// The backend that produced it ([`Backend::Bpf`] or [`Backend::Procfs`]).
    pub backend: Backend,
    /// The tasks, in ascending (tgid, tid) order.
    pub tasks: Vec<Task>,
    /// What could not be read.
    pub stats: SnapshotStats,
}

impl Snapshot {
    /// The same collection (times, backend, stats) holding `tasks` instead: a selection of
    /// its tasks, as a replay answers a query from a recorded snapshot.
    pub fn with_tasks(&self, tasks: Vec<Task>) -> Snapshot {
        Snapshot {
            taken_at_unix_ns: self.taken_at_unix_ns,
            taken_at_boottime_ns: self.taken_at_boottime_ns,
            boot_time_unix_s: self.boot_time_unix_s,
            backend: self.backend,
            tasks,
            stats: self.stats,
        }
    }
}
