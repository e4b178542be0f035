//! What a source of tasks or thread states is: the three traits every backend answers
//! ([`Collector`], [`LiveCollector`], [`StateSource`]) and what they hand back. A [`Host`]
//! keeps one of each kind behind it; no front end sees them.
//!
//! [`Host`]: crate::host::Host

use std::collections::HashMap;

use tasksnap_model::states::Sample;
use tasksnap_model::{Groups, PassReport, Query, Snapshot, SnapshotStats, Task, TaskId};

use crate::error::Error;

/// A live view's [`Collector::changes`] is a whole pass at least once in this many calls
/// (both backends: see `bpf/changes.rs` and `procfs/live.rs`).
pub const CHANGES_FULL_EVERY: u32 = 20;

/// What [`LiveCollector::changes`] found since its previous call.
#[derive(Debug)]
pub struct Changes {
    /// Every task the query selects when `full`; else only the tasks that changed or
    /// appeared since the previous call (the tasks of a process whose records changed, in
    /// the shape the query asks for).
    pub snapshot: Snapshot,
    /// True when `snapshot` has every task: the caller replaces what it kept.
    pub full: bool,
    /// Threads gone since the previous call (when not `full`).
    pub gone: Vec<TaskId>,
}

impl Changes {
    /// Hands every task to `sink` in order and says what was handed over: what
    /// [`LiveCollector::changes_into`] does with the answer of a `changes`.
    pub fn into_sink(self, sink: &mut dyn FnMut(Task)) -> ChangeSummary {
        let summary = ChangeSummary {
            full: self.full,
            gone: self.gone,
            tasks: self.snapshot.tasks.len(),
        };
        for t in self.snapshot.tasks {
            sink(t);
        }
        summary
    }
}

/// What [`LiveCollector::changes_into`] found, besides the tasks it handed over.
#[derive(Debug, Clone, Default)]
pub struct ChangeSummary {
    /// True when every task the query selects was handed over.
    pub full: bool,
    /// Threads gone since the previous call (when not `full`).
    pub gone: Vec<TaskId>,
    /// Tasks handed over.
    pub tasks: usize,
}

/// Tasks read for a list of ids ([`Collector::fill`]), by (tgid, tid), and what could not be
/// read.
pub type Filled = (HashMap<(i32, i32), Task>, SnapshotStats);

/// Answers queries with whole snapshots: what `ps`, `bench` and any one-off reader use.
pub trait Collector: Send {
    /// Collects the tasks `query` selects, with the groups it asks for.
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error>;
    /// [`Collector::snapshot`], handing each task to `sink` (in the snapshot's order)
    /// instead of returning them; the snapshot returned has none. By default the snapshot is
    /// taken whole, then handed over, and its vector kept for the next
    /// ([`Collector::recycle`]).
    fn snapshot_each(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(&Task),
    ) -> Result<Snapshot, Error> {
        let mut snap = self.snapshot(query)?;
        let tasks = std::mem::take(&mut snap.tasks);
        for t in &tasks {
            sink(t);
        }
        self.recycle(tasks);
        Ok(snap)
    }
    /// Reads `groups` for the tasks `ids` (tgid, tid) only, e.g. the command lines and
    /// memory of the rows a screen shows, with the same deadline on a target's mmap lock as
    /// a snapshot's reads. Tasks gone are absent; a command line given up at the deadline
    /// is marked `cmdline_timed_out`.
    fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<Filled, Error>;
    /// What this collector is and how its last pass went. Its `why` is empty: why the
    /// collector answers is the [`Chosen`](crate::choice::Chosen) holding it
    /// ([`report_of`](crate::choice::report_of)), or [`Collector::answered_otherwise`].
    fn report(&self) -> PassReport;
    /// Why the last pass was answered otherwise than this collector was chosen to (the query
    /// service's client reading /proc when the service did not answer); `None` (the
    /// default) when it answered as chosen.
    fn answered_otherwise(&self) -> Option<&str> {
        None
    }
    /// Whether this collector, as opened, reads `groups` as well as one opened again for
    /// them would: false only when opening again would load something they need that this
    /// one did not (the BPF collector's command-line iterator or the program that writes
    /// the rare blocks). A front end that keeps a collector between calls of different
    /// groups (the Python binding) opens again only then, so a load is paid once.
    fn serves(&self, groups: &Groups) -> bool {
        let _ = groups;
        true
    }
    /// Hands a snapshot's tasks back once they are no longer needed, so that the next
    /// snapshot can reuse the vector's memory (a periodic refresh then does not fault in and
    /// unmap tens of megabytes every time). Dropping them is always fine too.
    fn recycle(&mut self, tasks: Vec<Task>) {
        drop(tasks);
    }
}

/// A live view's collector (`top`): it keeps what it saw between calls, so that a refresh
/// reads only what changed where the backend can tell (the BPF walk skips, in the kernel,
/// the processes that did not change), and it favours CPU time over the latency of one
/// pass after its first.
pub trait LiveCollector: Collector {
    /// What changed since the last call (every task, the first time).
    fn changes(&mut self, query: &Query) -> Result<Changes, Error>;
    /// [`LiveCollector::changes`], handing each task to `sink` instead of collecting them:
    /// a whole pass then never holds every task at once (the BPF walk's; the default
    /// collects and then hands them over).
    fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(Task),
    ) -> Result<ChangeSummary, Error> {
        Ok(self.changes(query)?.into_sink(sink))
    }
    /// Whether the next call with `query` will be a whole pass: a caller that rebuilds
    /// everything from one can free what it holds first (the peak memory of a live view is
    /// a whole pass).
    fn next_changes_full(&self, query: &Query) -> bool;
    /// Loads what makes later calls cheap (the BPF walk and the memory it writes into)
    /// while the caller still holds the privileges it started with; called once, before
    /// they are dropped. Failing is not an error: the calls then take a slower path.
    fn prepare(&mut self, _groups: &Groups) {}
    /// What this source keeps between calls, by part (nothing, by default).
    fn held(&self, _held: &mut crate::footprint::Held) {}
}

/// A source of thread-state totals (`states`, top's DISK% and wait reasons): cumulative
/// per-thread time in each scheduler state, keyed by `TaskId` like the tasks of a
/// [`Snapshot`]. Turning two samples into percentages is tasksnap-states' (pure).
pub trait StateSource {
    /// Cumulative totals of every thread the source's filter selects, now.
    fn sample(&mut self) -> Result<Sample, Error>;

    /// The threads whose totals the last [`StateSource::sample`] read (changed, new or
    /// exited); every other thread's are the sample before's, taken on in the same state.
    /// `None`: every thread's were read (the default, and a whole pass).
    fn changed(&self) -> Option<&[tasksnap_model::TaskId]> {
        None
    }

    /// Gives back a sample this source returned, once the caller is done with it: a source
    /// that copies a sample it keeps reuses its memory for the next one (faulting in the
    /// memory of 100,000 threads' totals anew was a fifth of a sample). Dropped by default.
    fn recycle(&mut self, _old: Sample) {}
    /// Bytes this source keeps between samples (its own totals, buffers), 0 when it keeps
    /// none.
    fn held_bytes(&self) -> usize {
        0
    }
}
