//! What the aggregator keeps of the last collection per task, the start of the next
//! interval: a process's counters ([`Prev`]), another thread's context switches, a thread's
//! state totals ([`ThreadPrev`]), the processes missing from it waiting for their exit
//! records ([`Pending`]); the lists updated in place ([`InPlace`]), and what they hold
//! ([`Footprint`]).

use std::sync::Arc;

use tasksnap_model::states::{State, ThreadTotals, NSTATES};
use tasksnap_model::TaskId;

/// What a process's counters were at the collection it was last seen in (its main thread's
/// row; its other threads' are [`Aggregator::threads`](super::aggregator::Aggregator::threads)).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Prev {
    /// The process's.
    pub(super) proc: Option<ProcPrev>,
    /// The main thread's own (voluntary, involuntary).
    pub(super) switches: Option<(u64, u64)>,
    /// The main thread's only: the context switches counted for all of the process's threads
    /// (voluntary, involuntary), when counted from its birth (see the module's header).
    pub(super) counted_switches: Option<(u64, u64)>,
    /// The main thread's only: its comm's [`comm_hash`], to tell whether its exit record
    /// comes after an exec.
    pub(super) comm_hash: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ProcPrev {
    pub(super) user_ns: u64,
    pub(super) system_ns: u64,
    pub(super) read_bytes: u64,
    pub(super) write_bytes: u64,
    pub(super) minor: u64,
    pub(super) major: u64,
    /// Whether `read_bytes` and `write_bytes` were read (else they are 0, not a figure an
    /// exit's I/O can be counted from).
    pub(super) io: bool,
}

/// A process seen at the previous collection and missing from the last one with no exit
/// record yet: it died after that reading's exit drain, and its record comes with the next.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) id: TaskId,
    pub(super) prev: Prev,
    pub(super) group: Option<Arc<str>>,
}

/// A comm's bytes hashed (FNV-1a), to compare without keeping them.
pub(super) fn comm_hash(comm: &[u8]) -> u64 {
    comm.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Where an entry of an [`InPlace`] list is: its place in the list, or among those added.
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot {
    Old(usize),
    New(usize),
}

/// A list of per-task entries in (tgid, tid) order, updated in place by a walk of the next
/// collection's tasks in the same order: an entry seen again is overwritten where it is,
/// entries not seen are dropped, new ones are merged in at the end. No second list is built
/// (the old one held while the new one grew: twice the list at every collection).
pub(super) struct InPlace<'a, T: Copy> {
    pub(super) list: &'a mut Vec<(TaskId, T)>,
    /// The next entry not yet met.
    pub(super) at: usize,
    /// New entries, in order.
    pub(super) added: Vec<(TaskId, T)>,
}

/// The identity an entry of an [`InPlace`] list is given to drop it (no task has it).
const DROPPED: TaskId = TaskId {
    tgid: i32::MIN,
    tid: i32::MIN,
    start_time_ns: 0,
};

impl<'a, T: Copy> InPlace<'a, T> {
    pub(super) fn new(list: &'a mut Vec<(TaskId, T)>) -> InPlace<'a, T> {
        InPlace {
            list,
            at: 0,
            added: Vec::new(),
        }
    }

    /// Drops the entries before `key` (their tasks are gone), passing each to `gone`.
    pub(super) fn skip_to(&mut self, key: (i32, i32), mut gone: impl FnMut(TaskId, T)) {
        while let Some(e) = self.list.get_mut(self.at) {
            if (e.0.tgid, e.0.tid) >= key {
                break;
            }
            let (id, v) = *e;
            e.0 = DROPPED;
            gone(id, v);
            self.at += 1;
        }
    }

    /// The entry of `id` and its place, if it is the next one (dropped unless kept again).
    pub(super) fn take(&mut self, id: TaskId) -> Option<(usize, T)> {
        let e = self.list.get_mut(self.at).filter(|e| e.0 == id)?;
        let v = e.1;
        e.0 = DROPPED;
        self.at += 1;
        Some((self.at - 1, v))
    }

    /// Keeps `v` for `id`: where its entry was (`at`, from [`InPlace::take`]), or as new.
    pub(super) fn keep(&mut self, at: Option<usize>, id: TaskId, v: T) -> Slot {
        match at {
            Some(i) => {
                self.list[i] = (id, v);
                Slot::Old(i)
            }
            None => {
                self.added.push((id, v));
                Slot::New(self.added.len() - 1)
            }
        }
    }

    pub(super) fn get_mut(&mut self, s: Slot) -> &mut T {
        match s {
            Slot::Old(i) => &mut self.list[i].1,
            Slot::New(i) => &mut self.added[i].1,
        }
    }

    /// Drops the entries never met (passing each to `gone`) and merges the new ones in.
    pub(super) fn finish(mut self, mut gone: impl FnMut(TaskId, T)) {
        self.skip_to((i32::MAX, i32::MAX), &mut gone);
        self.list.retain(|e| e.0 != DROPPED);
        if self.added.is_empty() {
            return;
        }
        if self.list.is_empty() {
            *self.list = std::mem::take(&mut self.added);
            return;
        }
        // Both in order, keys distinct (an old entry of a key met again with another
        // identity was dropped): merged from the back, in the list's own allocation.
        let key = |e: &(TaskId, T)| (e.0.tgid, e.0.tid);
        let (n, m) = (self.list.len(), self.added.len());
        self.list.extend_from_slice(&self.added);
        let (mut i, mut j) = (n, m);
        for k in (0..n + m).rev() {
            if j == 0 {
                break;
            }
            if i > 0 && key(&self.list[i - 1]) > key(&self.added[j - 1]) {
                self.list[k] = self.list[i - 1];
                i -= 1;
            } else {
                self.list[k] = self.added[j - 1];
                j -= 1;
            }
        }
    }
}

/// A thread's state totals at the last collection: the start of its next interval. Only what
/// [`ThreadDelta::new`] reads of a previous sample (88 bytes a thread; the sample's own row,
/// with its name, is 192).
///
/// [`ThreadDelta::new`]: tasksnap_states::interval::ThreadDelta::new
#[derive(Debug, Clone, Default)]
pub(super) struct ThreadPrev {
    /// ns per state.
    pub(super) state_ns: [u64; NSTATES],
    /// State-letter samples per state (the /proc source only; `None` when all 0).
    pub(super) samples: Option<Box<[u64; NSTATES]>>,
    /// When the totals were read (the source's clock, ns).
    pub(super) seen_at_ns: u64,
    /// Off-CPU ns per (state, reason id).
    pub(super) reasons: Box<[(State, u32, u64)]>,
    /// The collection that last saw the thread ([`Aggregator::collections`], truncated): a
    /// thread no longer in the source's sample is forgotten.
    ///
    /// [`Aggregator::collections`]: super::aggregator::Aggregator::collections
    pub(super) seen_in: u32,
}

impl ThreadPrev {
    /// Keeps `t`'s totals, reusing this entry's allocations.
    pub(super) fn set(&mut self, t: &ThreadTotals, seen_in: u32) {
        self.state_ns = t.state_ns;
        if t.samples == [0; NSTATES] {
            self.samples = None;
        } else if let Some(b) = self.samples.as_mut() {
            **b = t.samples;
        } else {
            self.samples = Some(Box::new(t.samples));
        }
        self.seen_at_ns = t.seen_at_ns;
        if *self.reasons != t.reasons[..] {
            self.reasons = t.reasons.clone().into_boxed_slice();
        }
        self.seen_in = seen_in;
    }

    /// The totals as the state source gave them (without the name, which no delta reads).
    pub(super) fn totals(&self, cur: &ThreadTotals) -> ThreadTotals {
        ThreadTotals {
            id: cur.id,
            comm: cur.comm.clone(),
            state_ns: self.state_ns,
            samples: self.samples.as_deref().copied().unwrap_or_default(),
            reasons: self.reasons.to_vec(),
            seen_at_ns: self.seen_at_ns,
            ..ThreadTotals::default()
        }
    }
}

/// What an [`Aggregator`] holds between collections that grows with the host's tasks, not
/// its groups: entry counts and their bytes (capacity included).
///
/// [`Aggregator`]: super::aggregator::Aggregator
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Processes whose counters are kept (CPU, I/O, faults, switches), one per process seen.
    pub processes: usize,
    /// Threads other than a process's main one whose context switches are kept.
    pub threads: usize,
    /// Threads whose state totals are kept (the start of the next interval).
    pub thread_states: usize,
    /// Processes whose group is remembered (the grouper's answer per identity and comm, and
    /// the last collection's assignment).
    pub grouped: usize,
    /// Processes missing from the last collection, waiting one more for their exit records.
    pub pending: usize,
    /// Bytes of all of the above, allocations' capacity included (not the groups, which
    /// are bounded by `--max-series`): the sum of the five parts below.
    pub bytes: usize,
    /// Of `bytes`: the processes' counters.
    pub process_bytes: usize,
    /// Of `bytes`: the other threads' context switches.
    pub thread_bytes: usize,
    /// Of `bytes`: the threads' state totals.
    pub thread_state_bytes: usize,
    /// Of `bytes`: the grouper's answers, the last assignment and the pid-to-group table.
    pub grouped_bytes: usize,
    /// Of `bytes`: the processes waiting for their exit records.
    pub pending_bytes: usize,
    /// Not in `bytes`: the groups' counters, their names and the index by name.
    pub group_bytes: usize,
}

impl Footprint {
    /// (part, bytes): the five parts of [`Footprint::bytes`], then the groups'.
    pub fn parts(&self) -> [(&'static str, usize); 6] {
        [
            ("process counters", self.process_bytes),
            ("thread switches", self.thread_bytes),
            ("thread states (interval start)", self.thread_state_bytes),
            ("groups of processes", self.grouped_bytes),
            ("pending exits", self.pending_bytes),
            ("groups", self.group_bytes),
        ]
    }
}
