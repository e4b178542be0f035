//! Queries in the task_diag style: which tasks, and which attribute groups of each.

use serde::{Deserialize, Serialize};

use crate::Groups;

/// Which tasks a query asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// Every process (thread-group leaders only).
    AllProcesses,
    /// Every thread of every process.
    AllThreads,
    /// One process, by pid.
    Pid(i32),
    /// The threads of one process.
    ThreadsOf(i32),
    /// The processes whose parent is this pid.
    ChildrenOf(i32),
    /// The processes of a session.
    Session(i32),
    /// The processes of a process group.
    ProcessGroup(i32),
}

/// A query: which tasks and which groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// Which tasks.
    pub selector: Selector,
    /// Which groups of each.
    pub groups: Groups,
    /// In thread listings, read each process's main thread through the process itself, so its
    /// row carries process-wide values (CPU times summed over the threads): what procps shows
    /// for the leader in `ps -L`. Off by default: then every row is exactly one thread.
    pub leader_as_process: bool,
}

impl Query {
    /// A query for `selector` with `groups`.
    pub fn new(selector: Selector, groups: Groups) -> Query {
        Query {
            selector,
            groups,
            leader_as_process: false,
        }
    }

    /// True when the answer is per thread rather than per process.
    pub fn wants_threads(&self) -> bool {
        matches!(self.selector, Selector::AllThreads | Selector::ThreadsOf(_))
    }
}
