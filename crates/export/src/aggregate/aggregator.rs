//! What the aggregator is asked ([`Options`]: how to group and bound) and what it keeps
//! between collections ([`Aggregator`]'s fields, each step of an update in its own module),
//! with what that keeping costs ([`Aggregator::footprint`]).

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::states::{ThreadMap, NSTATES};
use tasksnap_model::TaskId;

use super::counters::{Group, System, TopProcess};
use super::previous::{Footprint, Pending, Prev, ThreadPrev};
use crate::group::{Assignment, Grouper, Grouping, PidMap};

/// How an [`Aggregator`] groups and bounds.
#[derive(Debug, Clone)]
pub struct Options {
    /// How processes are grouped.
    pub grouping: Grouping,
    /// Per-process series for the K processes that used the most CPU in the last interval
    /// (0: none).
    pub top_n: usize,
    /// At most this many series in all (0: no limit).
    pub max_series: usize,
    /// Wait reasons named per group (the rest are `other`).
    pub reasons_per_group: usize,
    /// A group without a process or an exit stays (its counters at their last values) this
    /// long, ns, and for two collections at least: a group of short-lived processes (a cron
    /// job's) lives between two collections, and a scraper that polls less often than the
    /// exporter collects must still see its final counters. Default 5 minutes.
    pub keep_empty_ns: u64,
}

/// [`Options::keep_empty_ns`]'s default: 5 minutes, two scrapes at Prometheus's slowest
/// usual interval (2 minutes).
pub const KEEP_EMPTY_NS: u64 = 300_000_000_000;

impl Default for Options {
    fn default() -> Options {
        Options {
            grouping: Grouping::Comm,
            top_n: 0,
            max_series: 0,
            reasons_per_group: 5,
            keep_empty_ns: KEEP_EMPTY_NS,
        }
    }
}

/// Keeps the counters between collections.
#[derive(Debug)]
pub struct Aggregator {
    pub(super) opts: Options,
    pub(super) grouper: Grouper,
    pub(super) groups: Vec<Group>,
    pub(super) index: HashMap<Arc<str>, usize>,
    pub(super) other: Group,
    /// Groups folded into `other` at the last collection.
    pub(super) folded: usize,
    /// Groups shown, in order.
    pub(super) shown: Vec<Arc<str>>,
    /// Every process's counters at the last collection, in (tgid, tid) order.
    pub(super) prev: Vec<(TaskId, Prev)>,
    /// Every other thread's context switches (voluntary, involuntary) at the last
    /// collection, in (tgid, tid) order.
    pub(super) threads: Vec<(TaskId, (u64, u64))>,
    /// Every thread's state totals at the last collection, updated in place.
    pub(super) states_prev: ThreadMap<ThreadPrev>,
    /// The last sample's time (`None`: no sample to start an interval from).
    pub(super) states_prev_at: Option<u64>,
    /// The group index of each process of this collection, by pid (kept for its allocation).
    pub(super) group_at: PidMap<usize>,
    pub(super) group_prev: Assignment,
    pub(super) prev_boottime_ns: Option<u64>,
    /// When the first collection was taken (boot time, ns): the counters start there.
    pub(super) first_boottime_ns: Option<u64>,
    /// Processes that went missing at the last collection, waiting for their exit records.
    pub(super) pending: Vec<Pending>,
    pub(super) top: Vec<TopProcess>,
    pub(super) system: System,
    pub(super) collections: u64,
    /// Series the same exposition shows beside the groups' (the cgroups'): `max_series`
    /// bounds them all ([`Aggregator::show_beside`]).
    pub(super) beside: usize,
}

impl Aggregator {
    /// What this aggregator holds per task (see [`Footprint`]), by part.
    pub fn footprint(&self) -> Footprint {
        use std::mem::size_of;
        let list = |cap: usize, each: usize| cap * each;
        // A hash table's slot is its entry and a control byte.
        let table = |cap: usize, each: usize| cap * (each + 1);
        let process_bytes = list(self.prev.capacity(), size_of::<(TaskId, Prev)>());
        let thread_bytes = list(self.threads.capacity(), size_of::<(TaskId, (u64, u64))>());
        let thread_state_bytes = table(
            self.states_prev.capacity(),
            size_of::<(TaskId, ThreadPrev)>(),
        ) + self
            .states_prev
            .values()
            .map(|p| {
                p.samples
                    .as_ref()
                    .map_or(0, |_| size_of::<[u64; NSTATES]>())
                    + size_of_val(&*p.reasons)
            })
            .sum::<usize>();
        let grouped_bytes = table(self.group_at.capacity(), size_of::<(i32, usize)>())
            + self.grouper.footprint_bytes()
            + list(self.group_prev.len(), size_of::<(i32, Arc<str>)>());
        let pending_bytes = list(self.pending.capacity(), size_of::<Pending>());
        let group_bytes = list(self.groups.capacity(), size_of::<Group>())
            + table(self.index.capacity(), size_of::<(Arc<str>, usize)>())
            + self.groups.iter().map(|g| g.name.len()).sum::<usize>();
        Footprint {
            processes: self.prev.len(),
            threads: self.threads.len(),
            thread_states: self.states_prev.len(),
            grouped: self.grouper.remembered().max(self.group_prev.len()),
            pending: self.pending.len(),
            bytes: process_bytes
                + thread_bytes
                + thread_state_bytes
                + grouped_bytes
                + pending_bytes,
            process_bytes,
            thread_bytes,
            thread_state_bytes,
            grouped_bytes,
            pending_bytes,
            group_bytes,
        }
    }
}
