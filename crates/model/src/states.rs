//! Thread-state totals: the seven states a thread's time is charged to ([`State`]) and every
//! thread's cumulative time in each at one moment ([`Sample`], keyed by [`TaskId`] like the
//! tasks of a [`crate::Snapshot`]), as the scheduler-state sources produce them and
//! `interval::between` (tasksnap-states) subtracts them. No I/O here. The kernel-side
//! classification of `prev_state` bits is in the BPF layer's `compat.h`; the two must agree
//! (the workload tests check both against the same loads).

use crate::hash::IdMap;
use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::TaskId;

/// A thread's scheduler state, as tasksnap accounts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// On a CPU.
    Running,
    /// On a run queue waiting for a CPU (woken, or preempted).
    Runnable,
    /// Interruptible sleep (S).
    Sleeping,
    /// Uninterruptible sleep (D), TASK_NOLOAD idle excluded.
    Disk,
    /// Stopped or traced (T, t).
    Stopped,
    /// Parked, idle kernel threads (I), frozen, dead.
    Other,
    /// Runnable, but held off the CPU by CPU bandwidth control: its cgroup (or an ancestor)
    /// used its quota for the period (`cpu.cfs_quota_us`, `cpu.max`).
    Throttled,
}

/// Number of states.
pub const NSTATES: usize = 7;

impl State {
    /// Every state, in the order of the `ST_*` indices of states.h.
    pub const ALL: [State; NSTATES] = [
        State::Running,
        State::Runnable,
        State::Sleeping,
        State::Disk,
        State::Stopped,
        State::Other,
        State::Throttled,
    ];

    /// Every state in the order front ends show them: the two causes of a runnable wait
    /// (other threads, the quota) side by side after running.
    pub const SHOWN: [State; NSTATES] = [
        State::Running,
        State::Runnable,
        State::Throttled,
        State::Sleeping,
        State::Disk,
        State::Stopped,
        State::Other,
    ];

    /// Index into per-state arrays (`ST_*` in states.h).
    pub fn index(self) -> usize {
        self as usize
    }

    /// From an `ST_*` index; out of range is `Other`.
    pub fn from_index(i: u32) -> State {
        State::ALL.get(i as usize).copied().unwrap_or(State::Other)
    }

    /// Short lowercase name, as in JSON keys (`disk` -> `disk_pct`).
    pub fn name(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Runnable => "runnable",
            State::Sleeping => "sleeping",
            State::Disk => "disk",
            State::Stopped => "stopped",
            State::Other => "other",
            State::Throttled => "throttled",
        }
    }

    /// The state a `/proc/TID/stat` state letter stands for (fs/proc/array.c
    /// `task_state_array`). `R` is running or runnable: /proc cannot tell them apart, which is
    /// why the fallback takes both from schedstat instead.
    pub fn from_letter(c: u8) -> State {
        match c {
            b'R' => State::Running,
            b'S' => State::Sleeping,
            b'D' => State::Disk,
            b'T' | b't' => State::Stopped,
            // I (TASK_IDLE), P (parked), X/x (dead), Z (zombie), W, K: not waiting for
            // anything tasksnap can name.
            _ => State::Other,
        }
    }

    /// Whether time in this state is off the CPU for a reason worth a stack.
    pub fn is_blocked(self) -> bool {
        matches!(self, State::Sleeping | State::Disk)
    }
}

/// Where the figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The BPF accounting: every state exact.
    Bpf,
    /// /proc: running exact (schedstat); runnable the run-queue waits that ended (exact) plus
    /// an estimate of those still going on; the off-CPU split sampled at `sample_hz`;
    /// `delayacct` when block I/O delay was accounted.
    Procfs {
        /// State-letter samples per second.
        sample_hz: u32,
        /// Whether `kernel.task_delayacct` was on.
        delayacct: bool,
    },
}

impl Mode {
    /// Whether a state's figure is estimated (by sampling) in this mode. In /proc mode only
    /// running is exact: schedstat's run_delay counts a run-queue wait when it ends, so the
    /// part of a wait still going on at the end of an interval is estimated from the samples
    /// (see [`crate::interval`]), and runnable is not labelled exact.
    pub fn sampled(self, s: State) -> bool {
        match self {
            Mode::Bpf => false,
            Mode::Procfs { .. } => s != State::Running,
        }
    }

    /// `bpf` or `procfs`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Bpf => "bpf",
            Mode::Procfs { .. } => "procfs",
        }
    }
}

/// A map keyed by [`TaskId`], hashed with [`IdHasher`](crate::hash::IdHasher) (kernel-assigned keys).
pub type ThreadMap<V> = IdMap<TaskId, V>;

/// One thread's cumulative totals since tracking of it began.
#[derive(Debug, Clone, Default)]
pub struct ThreadTotals {
    /// The thread (tid, its process, its start time: a reused tid is another thread).
    pub id: TaskId,
    /// Command name as text: invalid UTF-8 replaced by U+FFFD; may hold any other byte the
    /// kernel allows except NUL (shown escaped).
    pub comm: Arc<str>,
    /// The comm's exact bytes when they are not valid UTF-8 (`comm` then has U+FFFD in
    /// their place); `None` when `comm` is exact, or the source kept text only (a
    /// recording's samples).
    pub comm_bytes: Option<Arc<[u8]>>,
    /// Whether it is a kernel thread.
    pub kernel_thread: bool,
    /// ns per state (`State::index`). BPF: all states. /proc: running and the ended run-queue
    /// waits (schedstat), and disk only as the block I/O delay from delay accounting.
    pub state_ns: [u64; NSTATES],
    /// State-letter samples per state (/proc only).
    pub samples: [u64; NSTATES],
    /// The state it was in at the read.
    pub current: Option<State>,
    /// Off-CPU ns per (state, reason id): the reasons table is [`Sample::reasons`].
    pub reasons: Vec<(State, u32, u64)>,
    /// The reason id of the wait the thread is in at the read, when that wait's time so far
    /// is in `reasons` (it then grows with the wait, like `state_ns` of `current`).
    pub wait_reason: Option<u32>,
    /// When these totals were read (the source's clock, ns).
    pub seen_at_ns: u64,
    /// The thread exited; these are its final totals.
    pub exited: bool,
}

/// Every reported thread's totals at one moment.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Which source, with its settings.
    pub mode: Mode,
    /// When it was taken (the source's clock, ns).
    pub at_ns: u64,
    /// Threads by identity.
    pub threads: ThreadMap<ThreadTotals>,
    /// Reason ids to kernel frames, innermost first, scheduler frames trimmed.
    pub reasons: HashMap<u32, Arc<[String]>>,
    /// What the source could not do, for the user (e.g. delay accounting off).
    pub notes: Vec<String>,
}

impl Sample {
    /// An empty sample.
    pub fn new(mode: Mode, at_ns: u64) -> Sample {
        Sample {
            mode,
            at_ns,
            threads: ThreadMap::default(),
            reasons: HashMap::new(),
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_map_to_states() {
        assert_eq!(State::from_letter(b'R'), State::Running);
        assert_eq!(State::from_letter(b'S'), State::Sleeping);
        assert_eq!(State::from_letter(b'D'), State::Disk);
        assert_eq!(State::from_letter(b'T'), State::Stopped);
        assert_eq!(State::from_letter(b't'), State::Stopped);
        assert_eq!(State::from_letter(b'I'), State::Other);
        assert_eq!(State::from_letter(b'Z'), State::Other);
        assert_eq!(State::from_letter(b'P'), State::Other);
    }

    #[test]
    fn indices_round_trip() {
        for s in State::ALL {
            assert_eq!(State::from_index(s.index() as u32), s);
        }
        assert_eq!(State::from_index(99), State::Other);
    }
}
