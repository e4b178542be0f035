//! What a [`BpfCollector`](super::BpfCollector) keeps from one snapshot to the next: the
//! last pass's output and reusable memory ([`Output`]), the command-line copy's state
//! ([`State`]), and a live view's state between changed-only reads ([`Live`], with its
//! change set). The
//! collector's methods that use them are in passes.rs, cmdlines.rs and changes.rs.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::Arc;

use tasksnap_model::hash::IdMap;
use tasksnap_model::{Query, Task};

use super::{arena, decode};

/// What the last pass left, and memory kept from one snapshot to the next.
#[derive(Default)]
pub(super) struct Output {
    /// The iterator's records (when the pass was not a walk).
    pub buf: Vec<u8>,
    /// Where the walk writes (created before capabilities are dropped: see
    /// [`crate::Collector::prepare`]).
    pub arena: Option<arena::Arena>,
    /// The shards of the last pass when it was a walk into the arena (else it is in `buf`).
    pub walked: Option<Vec<arena::ShardOut>>,
    /// A snapshot's task vector handed back for the next one (see
    /// [`crate::Collector::recycle`]).
    pub spare: Vec<Task>,
    /// Where the last snapshot's time went, ms by phase, for `last_phases` (`-v`).
    pub phases_ms: Vec<(&'static str, f64)>,
}

/// Where the last snapshot's command lines came from (for `last_pass`, `-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// Read by the walk (and what it left copied by pid list).
    Walk,
    /// Copied by pid list.
    Copied,
    /// Read by the sleepable iterator.
    Iterator,
}

/// The command-line copy's state, and what the last snapshot's lines came from.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Whether the arena gets room for the command-line copy (asked for in `prepare`).
    pub region_wanted: bool,
    /// Set while a command-line copy writes into the arena (one abandoned at its deadline
    /// may still be running: the next snapshot then uses the iterator).
    pub busy: Arc<AtomicBool>,
    /// How the last snapshot's command lines were read, for `last_pass`.
    pub how: Option<Source>,
    /// How many processes the last copy by pid list was given.
    pub copied: std::cell::Cell<usize>,
    /// Lines the last command-line copy read without the mmap lock, and the paging levels
    /// of the direct map it found (0: none, every line copied), for `last_pass`.
    pub lockless: Arc<AtomicU64>,
    pub dmap_levels: Arc<AtomicU32>,
}

/// A live view's state, kept by the collector between [`Collector::changes`] calls.
#[derive(Default)]
pub(super) struct Live {
    /// Whether the next pass keeps its tasks' identities for a live view.
    pub track: bool,
    /// The state between calls, once a live view has begun.
    pub delta: Option<Delta>,
    /// The identities of a tracked walk's records, when it began, and the processes read
    /// from /proc because it passed over them; taken by walk_snapshot.
    pub captured: Option<(Identities, u64, Vec<i32>)>,
    /// The change set (changeset.rs), once loaded for a live view.
    pub set: Option<super::changeset::ChangeSet>,
    /// Whether loading it was tried (it is tried once), and why there is none.
    pub set_tried: bool,
    pub set_problem: Option<String>,
    /// Whether a change set may be used (`use_change_set`, TASKSNAP_NO_CHANGE_SET).
    pub set_off: bool,
    /// The pid limit its bitmap is made for, when not kernel.pid_max (a test's overflow).
    pub set_pid_max: Option<u32>,
    /// The processes the last take named (kept for its memory).
    pub pids: Vec<u32>,
    /// Whether a set of any size is read by pid list (a test's choice; else only one that
    /// names few enough of the known threads).
    pub list_any: bool,
    /// Processes the last read found dead and not yet gone (a zombie, or a thread past
    /// `do_exit()`'s PF_EXITING), read again at every call until they are: see
    /// [`super::changes`]'s `lingering`.
    pub lingering: Vec<u32>,
}

/// A thread's identity as the walk gives it: tgid and start time (boot-time ns), by tid.
pub(super) type Identities = IdMap<u32, (u32, u64)>;

/// What the changed-only walks of one live view need between calls.
#[derive(Debug)]
pub(super) struct Delta {
    /// The query the records were taken for: another one starts over.
    pub groups: u32,
    pub leader_as_process: bool,
    /// When the last pass began (CLOCK_MONOTONIC, ns).
    pub since_ns: u64,
    /// Every thread the caller holds.
    pub known: Identities,
    /// Calls since the last whole pass.
    pub since_full: u32,
    /// Processes the walk passes over (pid 1 on this VM), read from /proc every call.
    pub hidden: Vec<i32>,
    /// How many processes the last call read by the change set's list (`None`: it walked).
    pub listed: Option<usize>,
}

impl Delta {
    /// The state after a whole pass for `query` (its record groups `bits`) that began at
    /// `since_ns` and held the threads `known`, `hidden` read from /proc.
    pub fn after_whole_pass(
        bits: u32,
        query: &Query,
        since_ns: u64,
        known: Identities,
        hidden: Vec<i32>,
    ) -> Delta {
        Delta {
            groups: bits,
            leader_as_process: query.leader_as_process,
            since_ns,
            known,
            since_full: 0,
            hidden,
            listed: None,
        }
    }
}

/// The identities of a pass's records.
pub(super) fn identities(records: &[decode::Record<'_>]) -> Identities {
    let mut known = Identities::with_capacity_and_hasher(records.len(), Default::default());
    for r in records {
        known.insert(r.hdr.tid, (r.hdr.tgid, r.hdr.start_boottime_ns));
    }
    known
}

impl Delta {
    /// Whether the last call was a changed-only walk (else a whole pass).
    pub(super) fn last_was_changed_only(&self) -> bool {
        self.since_full > 0
    }
}

