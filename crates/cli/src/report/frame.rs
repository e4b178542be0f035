//! What the report reads of one sample, whichever its input: a recording's reading
//! ([`super::recorded`]) or the rows of a Parquet dump of the same moment
//! ([`super::parquet`]). [`super::gather`] and [`super::listing`] read only these, so a page
//! made from a dump is drawn by the same code as one made from the recording it came from.

use tasksnap_model::states::NSTATES;
use tasksnap_model::SystemFigures;

/// A process at one sample: a live one, or one that exited since the sample before.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcRow {
    /// Its pid.
    pub pid: i32,
    /// With the pid, what tells it from another process of the same pid: its start time
    /// (a recording's boot-clock ns, a dump's start instant in µs). Only compared.
    pub start_key: u64,
    /// When it started, Unix ns (`None` when unknown).
    pub start_unix_ns: Option<u64>,
    /// user + system CPU since it started, ns.
    pub cpu_ns: Option<u64>,
    /// RSS now, bytes; an exited one's peak.
    pub rss_bytes: Option<u64>,
    /// Effective user id.
    pub uid: Option<u32>,
    /// Its state letter (`ps`'s `S`).
    pub state: Option<u8>,
    /// Its threads.
    pub threads: Option<u32>,
    /// Command name, bytes as recorded.
    pub comm: Option<Vec<u8>>,
    /// Command line, arguments joined by spaces (empty: a kernel thread's).
    pub args: Option<Vec<u8>>,
    /// The cgroup as one line (v2 path, else v1 lines joined).
    pub cgroup: Option<Vec<u8>>,
    /// When it exited, Unix ns: set on the row of a process that exited since the sample
    /// before (its final figures), `None` on a live one's.
    pub exit_unix_ns: Option<u64>,
}

/// The thread-state mix of the interval ending at a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StateMix {
    /// ns per state (`State::index`), summed over the threads alive in the interval.
    pub ns: [u64; NSTATES],
    /// Whether the interval had thread states (both ends had a state sample).
    pub known: bool,
}

/// What the input says of exit records at a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExitRecords {
    /// Whether an exit source ran (processes that exited since the sample before are rows).
    pub known: bool,
    /// Exit records the kernel dropped since the sample before.
    pub dropped: u64,
}

/// One sample.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// When it was taken, Unix ns.
    pub at_unix_ns: u64,
    /// The host's name, as recorded.
    pub hostname: Option<Vec<u8>>,
    /// The host's figures (`None`: the input has none of this sample).
    pub system: Option<SystemFigures>,
    /// The processes: live ones, then those that exited since the sample before.
    pub procs: Vec<ProcRow>,
    /// The thread-state mix of the interval ending here.
    pub states: StateMix,
    /// D-state ns of the interval ending here per wait reason (kernel frames as text).
    pub disk_reasons: Vec<(String, u64)>,
    /// Exit records.
    pub exits: ExitRecords,
}
