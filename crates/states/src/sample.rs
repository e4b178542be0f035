//! Cumulative per-thread totals at one moment ([`Sample`]): what a [`Source`] returns each
//! time it is asked, and what [`crate::interval::between`] subtracts. No I/O here.

use std::collections::HashMap;
use std::sync::Arc;

use crate::state::{State, NSTATES};

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

/// A thread's identity: tids are reused, so the start time goes with it.
pub type ThreadKey = (i32, u64);

/// Hashes thread identities (a tid and a start time, both spread well) with one multiply per
/// word instead of SipHash: the thread maps are keyed by them and hold every thread of the
/// host, and SipHash was a visible part of an interval at 10,000 threads. Nothing
/// attacker-controlled chooses these keys (the kernel assigns tids and start times).
#[derive(Debug, Default, Clone, Copy)]
pub struct ThreadHasher(u64);

impl std::hash::Hasher for ThreadHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }
}

/// A map keyed by [`ThreadKey`] with [`ThreadHasher`].
pub type ThreadMap<V> = HashMap<ThreadKey, V, std::hash::BuildHasherDefault<ThreadHasher>>;

/// One thread's cumulative totals since tracking of it began.
#[derive(Debug, Clone, Default)]
pub struct ThreadTotals {
    /// Thread id.
    pub tid: i32,
    /// Process (thread group) id.
    pub tgid: i32,
    /// Start time, ns since boot (with `tid`, the identity).
    pub start_ns: u64,
    /// Command name; may hold any byte the kernel allows except NUL (shown escaped).
    pub comm: String,
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

/// Something that can take samples.
pub trait Source {
    /// Cumulative totals of every thread the filter selects, now.
    fn sample(&mut self) -> Result<Sample, crate::Error>;
}
