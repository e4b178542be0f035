//! Readings into per-group counters: what `tasksnap serve` exposes, updated once per
//! collection and read by every scrape.
//!
//! Counters only grow. A group's CPU, I/O, faults and context switches are the sums of its
//! processes' (threads', for switches) increases since the previous collection, plus the
//! final figures of its processes that exited since (the reading's exit records): a process
//! that exits takes nothing away, and one born since the previous collection brings all it
//! did (everything it did was after that collection). A process that was there before but
//! not seen (a reused pid, a read that failed) brings only what it does from now on, and so
//! does everything at the first collection: the counters count from when the exporter
//! started, as a rate over them needs. Thread-state time of exited threads comes from the
//! state sources, which keep an exited thread's final totals (see
//! `tasksnap_collect::StateSource`).
//!
//! An exited process (one [`Exit`] of the reading, collections after the first) adds:
//! - seen alive at the previous collection (or at the one before, and missing from the
//!   previous one because it died between that reading's exit drain and its walk): its final
//!   figures less those already counted, each clamped at 0 (I/O only if it was read alive:
//!   from nothing, the exit's would be all the process ever did). CPU is clamped as a whole
//!   too: the exit splits its precise runtime into user and system as the kernel does, and a
//!   split that moved time from one mode to the other since the last collection adds to each
//!   mode at most the whole's increase. Context switches are counted per thread while alive, and
//!   the exit gives the whole group's: a process counted from its birth (new when first seen)
//!   adds its group total less what its threads added; one already running when first seen
//!   adds none at exit (its total includes threads that ended before the exporter saw them,
//!   which cannot be told apart), so such a process's switches since the last collection are
//!   the one figure still lost;
//! - never seen alive, started after the exporter's first collection: all of its final
//!   figures (all it did was after the counters started);
//! - never seen alive, started before the first collection (alive all along but missing from
//!   every collection): none of its figures (they include what it did before the counters
//!   started, and the exit cannot split them), but its exit.
//!
//! Each counts once in `exits` by [`ExitReason`] (exit, signal, core) of the group it was in
//! when last seen, or the one its record gives ([`Grouper::assign_exits`]) when it was never
//! seen alive or its comm changed since (an exec or `PR_SET_NAME`, which may change its
//! group; not by cgroup, which an exec keeps): the name an exit is grouped by is the one it
//! exited with, and a live row of the same reading with another comm (read before the
//! rename) does not override it. A process can be both an exit and a live (zombie) row of the same
//! reading (its record left the kernel, its parent had not reaped it): the exit counts, the
//! row adds nothing (its figures are remembered, so a zombie left unreaped adds nothing later
//! either). Exits of the first collection are before the counters start and count nothing.
//! Exit records the kernel dropped are counted ([`System::exits_dropped`]); their processes'
//! figures are missing.
//!
//! State seconds come from [`tasksnap_states::interval::thread_deltas`], the same per-thread
//! split `tasksnap states` shows: exact with the BPF source, sampled (running exact) with
//! /proc. The sum over a group's states is the time its threads were alive. A thread of a
//! process that exited is charged to the group its exit was counted in (a process born and
//! dead since the last collection is in no assignment).
//!
//! Series are bounded: with `max_series`, the groups that did the least in the last interval
//! (CPU, then threads) are folded into one `other` group when the total would pass it, and
//! the number folded is reported; a group's wait reasons are its first
//! `reasons_per_group` plus `other`; a group shows an exit reason only once one of its
//! processes ended that way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tasksnap_model::states::{Mode, Sample, State, ThreadMap, ThreadTotals, NSTATES};
use tasksnap_model::{Exit, ExitReason, Reading, Task, TaskId};
use tasksnap_states::interval::ThreadDelta;

use crate::group::{Assignment, Grouper, Grouping, PidMap};

/// The `reason` label of each [`Counters::exits`] slot.
pub const EXIT_REASONS: [&str; 3] = ["exit", "signal", "core"];

/// The [`Counters::exits`] slot of an exit: it called exit, a signal ended it, a signal
/// ended it with a core dump.
pub fn exit_reason_index(r: ExitReason) -> usize {
    match r {
        ExitReason::Code(_) => 0,
        ExitReason::Signal {
            core_dumped: false, ..
        } => 1,
        ExitReason::Signal {
            core_dumped: true, ..
        } => 2,
    }
}

/// The name of the group the folded ones are shown as.
pub const OTHER_GROUP: &str = "other";

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

/// Cumulative (or, as [`Group::delta`], one interval's) counters of a group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// User CPU time, ns.
    pub cpu_user_ns: u64,
    /// System CPU time, ns.
    pub cpu_system_ns: u64,
    /// Thread time per state ([`State::index`]), ns.
    pub state_ns: [u64; NSTATES],
    /// Uninterruptible (D) time by wait reason, ns.
    pub disk_reasons: Vec<(Arc<str>, u64)>,
    /// D time of the reasons not named.
    pub disk_other_ns: u64,
    /// Bytes read from storage.
    pub read_bytes: u64,
    /// Bytes written to storage.
    pub write_bytes: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
    /// Processes that exited, by [`EXIT_REASONS`].
    pub exits: [u64; 3],
}

impl Counters {
    fn add_reason(&mut self, label: &Arc<str>, ns: u64, named: usize) {
        if let Some(r) = self.disk_reasons.iter_mut().find(|r| r.0 == *label) {
            r.1 = r.1.saturating_add(ns);
        } else if self.disk_reasons.len() < named {
            self.disk_reasons.push((label.clone(), ns));
        } else {
            self.disk_other_ns = self.disk_other_ns.saturating_add(ns);
        }
    }

    fn add(&mut self, d: &Counters, named: usize) {
        self.cpu_user_ns = self.cpu_user_ns.saturating_add(d.cpu_user_ns);
        self.cpu_system_ns = self.cpu_system_ns.saturating_add(d.cpu_system_ns);
        for i in 0..NSTATES {
            self.state_ns[i] = self.state_ns[i].saturating_add(d.state_ns[i]);
        }
        for (label, ns) in &d.disk_reasons {
            self.add_reason(label, *ns, named);
        }
        self.disk_other_ns = self.disk_other_ns.saturating_add(d.disk_other_ns);
        self.read_bytes = self.read_bytes.saturating_add(d.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(d.write_bytes);
        self.minor_faults = self.minor_faults.saturating_add(d.minor_faults);
        self.major_faults = self.major_faults.saturating_add(d.major_faults);
        self.voluntary_switches = self.voluntary_switches.saturating_add(d.voluntary_switches);
        self.involuntary_switches = self
            .involuntary_switches
            .saturating_add(d.involuntary_switches);
        for (t, d) in self.exits.iter_mut().zip(d.exits) {
            *t = t.saturating_add(d);
        }
    }
}

/// A group's figures at the last collection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gauges {
    /// Processes.
    pub processes: u64,
    /// Threads.
    pub threads: u64,
    /// Threads per current state.
    pub in_state: [u64; NSTATES],
    /// Resident memory of its processes, bytes.
    pub resident_bytes: u64,
    /// Virtual memory of its processes, bytes.
    pub virtual_bytes: u64,
    /// Swapped-out memory of its processes, bytes, where the backend reads it (BPF).
    pub swap_bytes: Option<u64>,
    /// Start time of its oldest process, Unix seconds.
    pub oldest_start_unix_s: Option<f64>,
    /// Whether I/O counters were read (not for another user's process without privileges).
    pub has_io: bool,
    /// Whether context switches were read.
    pub has_switches: bool,
}

/// One group.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// Its name (the `group` label).
    pub name: Arc<str>,
    /// Since the exporter started.
    pub total: Counters,
    /// In the last interval.
    pub delta: Counters,
    /// Now.
    pub now: Gauges,
    /// Collections in a row it had no process and no exit in.
    empty_for: u32,
    /// Since when (boot time, ns) it has had none.
    empty_since_ns: u64,
}

/// The series every group shows: CPU (user, system), state seconds, the `other` wait
/// reason, processes and threads, threads per state, resident and virtual memory, minor and
/// major faults (exit reasons only once seen: [`Group::series`]).
const GROUP_SERIES_ALWAYS: usize = 2 + NSTATES + 1 + 2 + NSTATES + 2 + 2;

impl Group {
    /// The series this group shows.
    pub fn series(&self) -> usize {
        GROUP_SERIES_ALWAYS
            + self.total.disk_reasons.len()
            + usize::from(self.now.swap_bytes.is_some())
            + if self.now.has_io { 2 } else { 0 }
            + if self.now.has_switches { 2 } else { 0 }
            + usize::from(self.now.oldest_start_unix_s.is_some())
            + self.total.exits.iter().filter(|&&n| n > 0).count()
    }

    /// The most series a group can show with `reasons` wait reasons named: swap, I/O, context
    /// switches, the oldest start time and every exit reason all present.
    pub fn most_series(reasons: usize) -> usize {
        GROUP_SERIES_ALWAYS + reasons + 1 + 2 + 2 + 1 + EXIT_REASONS.len()
    }
}

/// A process shown on its own (`top_n`).
#[derive(Debug, Clone, PartialEq)]
pub struct TopProcess {
    /// Process id.
    pub pid: i32,
    /// Comm, as a label value ([`crate::label::value`]).
    pub comm: String,
    /// User CPU since it started, ns.
    pub cpu_user_ns: u64,
    /// System CPU since it started, ns.
    pub cpu_system_ns: u64,
    /// CPU in the last interval, ns.
    pub cpu_delta_ns: u64,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// Threads.
    pub threads: u64,
}

/// Host-wide figures.
#[derive(Debug, Clone, Default)]
pub struct System {
    /// Processes now.
    pub processes: u64,
    /// Threads now.
    pub threads: u64,
    /// Forks since boot (/proc/stat `processes`).
    pub forks: Option<u64>,
    /// Every thread's time per state since the exporter started, ns.
    pub state_ns: [u64; NSTATES],
    /// Threads per current state.
    pub in_state: [u64; NSTATES],
    /// How state time is measured (`None`: no state source).
    pub state_mode: Option<Mode>,
    /// Exit records the kernel dropped (its buffer was full) since the exporter started;
    /// `None` when there is no exit source (`Reading::exits_missing`), so that exited
    /// processes' last figures are not counted.
    pub exits_dropped: Option<u64>,
}

/// What a process's counters were at the collection it was last seen in (its main thread's
/// row; its other threads' are [`Aggregator::threads`]).
#[derive(Debug, Clone, Copy, Default)]
struct Prev {
    /// The process's.
    proc: Option<ProcPrev>,
    /// The main thread's own (voluntary, involuntary).
    switches: Option<(u64, u64)>,
    /// The main thread's only: the context switches counted for all of the process's threads
    /// (voluntary, involuntary), when counted from its birth (see the module's header).
    counted_switches: Option<(u64, u64)>,
    /// The main thread's only: its comm's [`comm_hash`], to tell whether its exit record
    /// comes after an exec.
    comm_hash: u64,
}

/// Where an entry of an [`InPlace`] list is: its place in the list, or among those added.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Old(usize),
    New(usize),
}

/// A list of per-task entries in (tgid, tid) order, updated in place by a walk of the next
/// collection's tasks in the same order: an entry seen again is overwritten where it is,
/// entries not seen are dropped, new ones are merged in at the end. No second list is built
/// (the old one held while the new one grew: twice the list at every collection).
struct InPlace<'a, T: Copy> {
    list: &'a mut Vec<(TaskId, T)>,
    /// The next entry not yet met.
    at: usize,
    /// New entries, in order.
    added: Vec<(TaskId, T)>,
}

/// The identity an entry of an [`InPlace`] list is given to drop it (no task has it).
const DROPPED: TaskId = TaskId {
    tgid: i32::MIN,
    tid: i32::MIN,
    start_time_ns: 0,
};

impl<'a, T: Copy> InPlace<'a, T> {
    fn new(list: &'a mut Vec<(TaskId, T)>) -> InPlace<'a, T> {
        InPlace {
            list,
            at: 0,
            added: Vec::new(),
        }
    }

    /// Drops the entries before `key` (their tasks are gone), passing each to `gone`.
    fn skip_to(&mut self, key: (i32, i32), mut gone: impl FnMut(TaskId, T)) {
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
    fn take(&mut self, id: TaskId) -> Option<(usize, T)> {
        let e = self.list.get_mut(self.at).filter(|e| e.0 == id)?;
        let v = e.1;
        e.0 = DROPPED;
        self.at += 1;
        Some((self.at - 1, v))
    }

    /// Keeps `v` for `id`: where its entry was (`at`, from [`InPlace::take`]), or as new.
    fn keep(&mut self, at: Option<usize>, id: TaskId, v: T) -> Slot {
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

    fn get_mut(&mut self, s: Slot) -> &mut T {
        match s {
            Slot::Old(i) => &mut self.list[i].1,
            Slot::New(i) => &mut self.added[i].1,
        }
    }

    /// Drops the entries never met (passing each to `gone`) and merges the new ones in.
    fn finish(mut self, mut gone: impl FnMut(TaskId, T)) {
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
#[derive(Debug, Clone, Default)]
struct ThreadPrev {
    /// ns per state.
    state_ns: [u64; NSTATES],
    /// State-letter samples per state (the /proc source only; `None` when all 0).
    samples: Option<Box<[u64; NSTATES]>>,
    /// When the totals were read (the source's clock, ns).
    seen_at_ns: u64,
    /// Off-CPU ns per (state, reason id).
    reasons: Box<[(State, u32, u64)]>,
    /// The collection that last saw the thread ([`Aggregator::collections`], truncated): a
    /// thread no longer in the source's sample is forgotten.
    seen_in: u32,
}

impl ThreadPrev {
    /// Keeps `t`'s totals, reusing this entry's allocations.
    fn set(&mut self, t: &ThreadTotals, seen_in: u32) {
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
    fn totals(&self, cur: &ThreadTotals) -> ThreadTotals {
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
    /// Bytes of all of the above, allocations' capacity included (not the group names,
    /// which are per group).
    pub bytes: usize,
}

/// A comm's bytes hashed (FNV-1a), to compare without keeping them.
fn comm_hash(comm: &[u8]) -> u64 {
    comm.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A process seen at the previous collection and missing from the last one with no exit
/// record yet: it died after that reading's exit drain, and its record comes with the next.
#[derive(Debug, Clone)]
struct Pending {
    id: TaskId,
    prev: Prev,
    group: Option<Arc<str>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct ProcPrev {
    user_ns: u64,
    system_ns: u64,
    read_bytes: u64,
    write_bytes: u64,
    minor: u64,
    major: u64,
    /// Whether `read_bytes` and `write_bytes` were read (else they are 0, not a figure an
    /// exit's I/O can be counted from).
    io: bool,
}

/// Keeps the counters between collections.
#[derive(Debug)]
pub struct Aggregator {
    opts: Options,
    grouper: Grouper,
    groups: Vec<Group>,
    index: HashMap<Arc<str>, usize>,
    other: Group,
    /// Groups folded into `other` at the last collection.
    folded: usize,
    /// Groups shown, in order.
    shown: Vec<Arc<str>>,
    /// Every process's counters at the last collection, in (tgid, tid) order.
    prev: Vec<(TaskId, Prev)>,
    /// Every other thread's context switches (voluntary, involuntary) at the last
    /// collection, in (tgid, tid) order.
    threads: Vec<(TaskId, (u64, u64))>,
    /// Every thread's state totals at the last collection, updated in place.
    states_prev: ThreadMap<ThreadPrev>,
    /// The last sample's time (`None`: no sample to start an interval from).
    states_prev_at: Option<u64>,
    /// The group index of each process of this collection, by pid (kept for its allocation).
    group_at: PidMap<usize>,
    group_prev: Assignment,
    prev_boottime_ns: Option<u64>,
    /// When the first collection was taken (boot time, ns): the counters start there.
    first_boottime_ns: Option<u64>,
    /// Processes that went missing at the last collection, waiting for their exit records.
    pending: Vec<Pending>,
    top: Vec<TopProcess>,
    system: System,
    collections: u64,
}

/// Adds to `g`'s interval what exit `e` brings beyond `counted`, what was counted of it
/// alive (see the module's header): its final figures less those, each clamped at 0, and one
/// exit of its reason.
fn add_exit(g: &mut Group, e: &Exit, counted: &Prev, live_switches: bool) {
    let d = &mut g.delta;
    if let Some(b) = counted.proc {
        // Each mode's increase, neither more than the whole's: the exit's split of its
        // runtime may differ from the live split (time moved from one mode to the other).
        let cpu = e
            .utime_ns
            .saturating_add(e.stime_ns)
            .saturating_sub(b.user_ns.saturating_add(b.system_ns));
        let du = e.utime_ns.saturating_sub(b.user_ns).min(cpu);
        let ds = e.stime_ns.saturating_sub(b.system_ns).min(cpu - du);
        d.cpu_user_ns = d.cpu_user_ns.saturating_add(du);
        d.cpu_system_ns = d.cpu_system_ns.saturating_add(ds);
        // I/O only from a figure read alive (or from birth): from one never read, the exit
        // would bring all the process ever did, before the counters started too.
        if b.io {
            d.read_bytes = d
                .read_bytes
                .saturating_add(e.read_bytes.saturating_sub(b.read_bytes));
            d.write_bytes = d
                .write_bytes
                .saturating_add(e.write_bytes.saturating_sub(b.write_bytes));
            // The kernel's I/O accounting, read at exit.
            g.now.has_io = true;
        }
        d.minor_faults = d
            .minor_faults
            .saturating_add(e.minflt.saturating_sub(b.minor));
        d.major_faults = d
            .major_faults
            .saturating_add(e.majflt.saturating_sub(b.major));
    }
    if let (true, Some((v, iv))) = (live_switches, counted.counted_switches) {
        d.voluntary_switches = d
            .voluntary_switches
            .saturating_add(e.voluntary_ctxt_switches.saturating_sub(v));
        d.involuntary_switches = d
            .involuntary_switches
            .saturating_add(e.nonvoluntary_ctxt_switches.saturating_sub(iv));
        g.now.has_switches = true;
    }
    let slot = &mut d.exits[exit_reason_index(e.reason())];
    *slot = slot.saturating_add(1);
}

/// A cheap, stable name for a wait reason: its two innermost kernel frames (`unknown` when
/// the source named none).
fn reason_label(frames: Option<&[String]>) -> Arc<str> {
    let key: Vec<&str> = frames
        .unwrap_or(&[])
        .iter()
        .take(2)
        .map(String::as_str)
        .collect();
    if key.is_empty() {
        Arc::from("unknown")
    } else {
        Arc::from(crate::label::value(key.join(" <- ").as_bytes()))
    }
}

/// The state a task was in: its state letter, except that R (running or waiting for a CPU,
/// which /proc cannot tell apart) asks the state source, which can.
fn current_state(t: &Task, states: Option<&Sample>) -> State {
    let letter = t.base.as_ref().map_or(b'?', |b| b.state.letter());
    if letter == b'R' {
        if let Some(s) = states
            .and_then(|s| s.threads.get(&t.id))
            .and_then(|x| x.current)
        {
            return s;
        }
    }
    State::from_letter(letter)
}

impl Aggregator {
    /// An aggregator with no collection yet.
    pub fn new(opts: Options) -> Aggregator {
        Aggregator {
            grouper: Grouper::new(opts.grouping.clone()),
            opts,
            groups: Vec::new(),
            index: HashMap::new(),
            other: Group {
                name: Arc::from(OTHER_GROUP),
                ..Group::default()
            },
            folded: 0,
            shown: Vec::new(),
            prev: Vec::new(),
            threads: Vec::new(),
            states_prev: ThreadMap::default(),
            states_prev_at: None,
            group_at: PidMap::default(),
            group_prev: Assignment::default(),
            prev_boottime_ns: None,
            first_boottime_ns: None,
            pending: Vec::new(),
            top: Vec::new(),
            system: System::default(),
            collections: 0,
        }
    }

    /// Collections taken in.
    pub fn collections(&self) -> u64 {
        self.collections
    }

    /// The index of the group `name`, made if new.
    fn group(&mut self, name: &Arc<str>) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.groups.push(Group {
            name: name.clone(),
            ..Group::default()
        });
        self.index.insert(name.clone(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Takes in one reading, its tasks in (tgid, tid) order (as the sampler gives them).
    /// Its thread-state totals are read and left in it, for its sampler to reuse their memory
    /// (`StateSource::recycle`): what the next interval starts from is kept per thread,
    /// smaller ([`Footprint`]).
    pub fn update(&mut self, r: &mut Reading) {
        let named = self.opts.reasons_per_group;
        let tasks = &r.snapshot.tasks;
        let group_of = self.grouper.assign(tasks, r.snapshot.boot_time_unix_s);
        for g in &mut self.groups {
            g.delta = Counters::default();
            g.now = Gauges::default();
        }
        // The group index of each assigned process, in the assignment's (pid) order. A name
        // is hashed once per run of processes sharing it (the grouper hands out one `Arc`
        // per name), not once per process and again per thread.
        let mut entry_group: Vec<usize> = Vec::with_capacity(group_of.len());
        let mut last: Option<(&Arc<str>, usize)> = None;
        for (_, name) in group_of.entries() {
            let gi = match last {
                Some((n, gi)) if Arc::ptr_eq(n, name) => gi,
                _ => self.group(name),
            };
            last = Some((name, gi));
            entry_group.push(gi);
        }
        // Whether a task not seen at the last collection started after it: then all it did
        // is new. At the first collection nothing is (the counters start there).
        let prev_at = self.prev_boottime_ns;
        let is_new = |id: &TaskId| prev_at.is_some_and(|at| id.start_time_ns >= at);
        let states = r.states.take();
        let mut cpu_deltas: Vec<(u64, usize)> = Vec::new();
        let exits_on = r.exits_missing.is_none();
        let mut system = System {
            forks: r.system.counters.as_ref().map(|c| c.forks),
            state_ns: self.system.state_ns,
            state_mode: states.as_ref().map(|s| s.mode),
            exits_dropped: exits_on.then(|| {
                let before = self.system.exits_dropped.unwrap_or(0);
                before.saturating_add(r.exits_dropped)
            }),
            ..System::default()
        };
        // The processes whose exit this reading holds: their live (zombie) rows add nothing.
        let exited = if r.exits.is_empty() {
            HashSet::new()
        } else {
            r.exited_ids()
        };
        // Their tgids: the leader of a process is looked up only for these.
        let exited_tgids: HashSet<i32> = exited.iter().map(|id| id.tgid).collect();
        // Whether the tasks carry context switches (the BPF backend): exits add theirs only
        // then, or a group's counter would count its exited processes and nothing else.
        let live_switches = tasks.iter().any(|t| {
            t.sched
                .as_ref()
                .is_some_and(|s| s.voluntary_switches.is_some())
        });
        // The group each exited process was counted in, for its threads' state time.
        let mut exit_groups = PidMap::default();
        if prev_at.is_some() {
            exit_groups = self.count_exits(
                &r.exits,
                tasks,
                &group_of,
                r.snapshot.boot_time_unix_s,
                live_switches,
            );
        }
        // Tasks come in (tgid, tid) order, as do the groups and the previous counters: one
        // walk of the three, no hashing.
        // (tgid, its group, whether it is one of the reading's exits)
        let mut cur: Option<(i32, Option<usize>, bool)> = None;
        let mut groups_at = group_of.entries().iter().zip(&entry_group).peekable();
        // The last collection's lists, updated in place.
        let mut prev_list = std::mem::take(&mut self.prev);
        let mut threads_list = std::mem::take(&mut self.threads);
        let mut old_prev = InPlace::new(&mut prev_list);
        let mut old_threads = InPlace::new(&mut threads_list);
        // Processes of the last collection missing from this one.
        let mut vanished: Vec<(TaskId, Prev)> = Vec::new();
        let mut gone = |id: TaskId, p: Prev| {
            if id.is_leader() && (p.proc.is_some() || p.counted_switches.is_some()) {
                vanished.push((id, p));
            }
        };
        // Where the current process's main thread's entry is.
        let mut leader_slot: Option<Slot> = None;
        for (i, t) in tasks.iter().enumerate() {
            let state = current_state(t, states.as_ref());
            system.threads += 1;
            system.in_state[state.index()] += 1;
            if t.id.is_leader() {
                system.processes += 1;
            }
            let (gi, dead) = match cur {
                Some((tgid, gi, dead)) if tgid == t.id.tgid => (gi, dead),
                _ => {
                    while groups_at.next_if(|e| e.0 .0 < t.id.tgid).is_some() {}
                    let gi = groups_at.next_if(|e| e.0 .0 == t.id.tgid).map(|e| *e.1);
                    // By the leader's identity, wherever its row is: after a pid wrap a
                    // thread's tid can be below its tgid, and its row first.
                    let dead = exited_tgids.contains(&t.id.tgid)
                        && tasks
                            .binary_search_by_key(&(t.id.tgid, t.id.tgid), |x| {
                                (x.id.tgid, x.id.tid)
                            })
                            .is_ok_and(|j| exited.contains(&tasks[j].id));
                    cur = Some((t.id.tgid, gi, dead));
                    leader_slot = None;
                    (gi, dead)
                }
            };
            let Some(gi) = gi else { continue };
            let g = &mut self.groups[gi];
            g.now.threads += 1;
            g.now.in_state[state.index()] += 1;
            let key = (t.id.tgid, t.id.tid);
            let (known, at) = if t.id.is_leader() {
                old_prev.skip_to(key, &mut gone);
                match old_prev.take(t.id) {
                    Some((at, p)) => (Some(p), Some(at)),
                    None => (None, None),
                }
            } else {
                old_threads.skip_to(key, |_, _| {});
                match old_threads.take(t.id) {
                    Some((at, sw)) => (
                        Some(Prev {
                            switches: Some(sw),
                            ..Prev::default()
                        }),
                        Some(at),
                    ),
                    None => (None, None),
                }
            };
            let mut now = Prev::default();
            let mut switched = (0, 0);
            if let Some(sw) = t.sched.as_ref() {
                if let (Some(v), Some(iv)) = (sw.voluntary_switches, sw.involuntary_switches) {
                    g.now.has_switches = true;
                    let before = match known.and_then(|k| k.switches) {
                        Some(p) => p,
                        None if is_new(&t.id) => (0, 0),
                        None => (v, iv),
                    };
                    if !dead {
                        switched = (v.saturating_sub(before.0), iv.saturating_sub(before.1));
                        g.delta.voluntary_switches += switched.0;
                        g.delta.involuntary_switches += switched.1;
                    }
                    now.switches = Some((v, iv));
                }
            }
            if t.id.is_leader() {
                g.now.processes += 1;
                if let Some(st) = t.stat.as_ref() {
                    g.now.resident_bytes += st.rss_bytes;
                    g.now.virtual_bytes += st.vsize_bytes;
                    if let Some(sw) = st.swap_bytes {
                        g.now.swap_bytes = Some(g.now.swap_bytes.unwrap_or(0) + sw);
                    }
                    let start = r.snapshot.boot_time_unix_s as f64 + st.start_time_ns as f64 / 1e9;
                    g.now.oldest_start_unix_s =
                        Some(g.now.oldest_start_unix_s.map_or(start, |o| o.min(start)));
                    let io = t.io.as_deref();
                    g.now.has_io |= io.is_some();
                    let p = ProcPrev {
                        user_ns: st.utime_ns,
                        system_ns: st.stime_ns,
                        read_bytes: io.map_or(0, |io| io.read_bytes),
                        write_bytes: io.map_or(0, |io| io.write_bytes),
                        minor: st.minflt,
                        major: st.majflt,
                        io: io.is_some(),
                    };
                    let before = match known.and_then(|k| k.proc) {
                        Some(b) => b,
                        None if is_new(&t.id) => ProcPrev::default(),
                        None => p,
                    };
                    // A zombie whose exit this reading holds: the exit counted it.
                    if !dead {
                        let du = p.user_ns.saturating_sub(before.user_ns);
                        let ds = p.system_ns.saturating_sub(before.system_ns);
                        g.delta.cpu_user_ns += du;
                        g.delta.cpu_system_ns += ds;
                        g.delta.read_bytes += p.read_bytes.saturating_sub(before.read_bytes);
                        g.delta.write_bytes += p.write_bytes.saturating_sub(before.write_bytes);
                        g.delta.minor_faults += p.minor.saturating_sub(before.minor);
                        g.delta.major_faults += p.major.saturating_sub(before.major);
                        if self.opts.top_n > 0 {
                            cpu_deltas.push((du + ds, i));
                        }
                    }
                    now.proc = Some(p);
                }
                now.comm_hash = comm_hash(t.base.as_ref().map_or(&[], |b| &b.comm));
                // Switches counted from its birth (see the module's header), this thread's
                // included; its other threads add theirs below.
                now.counted_switches = match known {
                    Some(k) => k.counted_switches,
                    None if is_new(&t.id) => Some((0, 0)),
                    None => None,
                }
                .map(|c| {
                    (
                        c.0.saturating_add(switched.0),
                        c.1.saturating_add(switched.1),
                    )
                });
            } else if let Some(c) =
                leader_slot.and_then(|s| old_prev.get_mut(s).counted_switches.as_mut())
            {
                c.0 = c.0.saturating_add(switched.0);
                c.1 = c.1.saturating_add(switched.1);
            }
            if !t.id.is_leader() {
                if let Some(sw) = now.switches {
                    old_threads.keep(at, t.id, sw);
                }
            } else if now.proc.is_some() || now.switches.is_some() || now.counted_switches.is_some()
            {
                leader_slot = Some(old_prev.keep(at, t.id, now));
            }
        }
        old_prev.finish(&mut gone);
        old_threads.finish(|_, _| {});
        self.prev = prev_list;
        self.threads = threads_list;
        // Processes missing from this collection wait one more for their exit records (only
        // with an exit source, and not those whose record came with this reading).
        self.pending = if exits_on {
            vanished
                .into_iter()
                .filter(|(id, _)| !exited.contains(id))
                .map(|(id, prev)| Pending {
                    id,
                    prev,
                    group: self.group_prev.get(id.tgid).cloned(),
                })
                .collect()
        } else {
            Vec::new()
        };
        // Thread states over the interval, charged to the group the thread's process is in
        // now, or was in (a process that exited since). The previous totals are kept per
        // thread in place: each thread's entry is read, then overwritten with this sample's.
        let seen_in = self.collections as u32;
        let mut states_prev = std::mem::take(&mut self.states_prev);
        if let Some(cur) = states.as_ref() {
            // Threads come in hash order: a binary search of the assignment per thread was
            // most of the aggregation (a cache miss per step at 50,000 processes).
            let mut group_at = std::mem::take(&mut self.group_at);
            group_at.clear();
            group_at.extend(
                group_of
                    .entries()
                    .iter()
                    .zip(&entry_group)
                    .map(|(e, &gi)| (e.0, gi)),
            );
            let mut labels: HashMap<u32, Arc<str>> = HashMap::new();
            // The interval starts at the last sample when it was of the same source.
            let start_ns = self.states_prev_at;
            if start_ns.is_none() {
                states_prev.clear();
            }
            use std::collections::hash_map::Entry;
            for (id, t) in &cur.threads {
                let slot = states_prev.entry(*id);
                if let Some(start_ns) = start_ns {
                    let p = match &slot {
                        Entry::Occupied(o) => Some(o.get()),
                        Entry::Vacant(_) => None,
                    };
                    self.charge_states(
                        t,
                        p,
                        cur,
                        start_ns,
                        &group_at,
                        &exit_groups,
                        &mut labels,
                        &mut system,
                    );
                }
                match slot {
                    Entry::Occupied(mut o) => o.get_mut().set(t, seen_in),
                    Entry::Vacant(v) => v.insert(ThreadPrev::default()).set(t, seen_in),
                }
            }
            // Threads the source no longer reports (they exited, and their final totals
            // were counted) are forgotten; every entry is one of this sample's otherwise.
            if states_prev.len() > cur.threads.len() {
                states_prev.retain(|_, p| p.seen_in == seen_in);
            }
            self.group_at = group_at;
            self.states_prev_at = Some(cur.at_ns);
        } else {
            states_prev.clear();
            self.states_prev_at = None;
        }
        self.states_prev = states_prev;
        for g in &mut self.groups {
            let d = std::mem::take(&mut g.delta);
            g.total.add(&d, named);
            g.delta = d;
        }
        self.fold();
        // Groups without a process or an exit go after two collections in a row (their
        // exited threads' last state time is in by then) and `keep_empty_ns`.
        let now_ns = r.snapshot.taken_at_boottime_ns;
        let keep_ns = self.opts.keep_empty_ns;
        self.groups.retain_mut(|g| {
            if g.now.processes == 0 && g.delta.exits == [0; 3] {
                if g.empty_for == 0 {
                    g.empty_since_ns = now_ns;
                }
                g.empty_for += 1;
            } else {
                g.empty_for = 0;
            }
            g.empty_for < 2 || now_ns.saturating_sub(g.empty_since_ns) < keep_ns
        });
        self.index = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), i))
            .collect();
        self.top = self.pick_top(tasks, cpu_deltas);
        self.system = system;
        // The sample is not kept: what the next interval needs of it is in `states_prev`. It
        // goes back into the reading, whose sampler reuses its memory for the next one.
        r.states = states;
        self.group_prev = group_of;
        self.prev_boottime_ns = Some(r.snapshot.taken_at_boottime_ns);
        self.first_boottime_ns
            .get_or_insert(r.snapshot.taken_at_boottime_ns);
        self.collections += 1;
    }

    /// Charges one thread's share of the interval (from `prev`, its totals at the last
    /// sample, to `t`) to the host and to the group of its process, as it is now or was when
    /// it exited (a process born and dead since the last collection is in no assignment).
    #[allow(clippy::too_many_arguments)]
    fn charge_states(
        &mut self,
        t: &ThreadTotals,
        prev: Option<&ThreadPrev>,
        cur: &Sample,
        start_ns: u64,
        group_at: &PidMap<usize>,
        exit_groups: &PidMap<usize>,
        labels: &mut HashMap<u32, Arc<str>>,
        system: &mut System,
    ) {
        // As `interval::thread_deltas`: a thread that exited before it was first seen, with
        // nothing to its name, was not alive in the interval.
        if t.exited && prev.is_none() && t.state_ns.iter().sum::<u64>() == 0 {
            return;
        }
        let ns = match cur.mode {
            // Exact: the totals' increase (`ThreadDelta::new`'s arithmetic, without
            // making the previous totals a sample's row).
            Mode::Bpf => {
                let mut ns = t.state_ns;
                if let Some(p) = prev {
                    for (n, b) in ns.iter_mut().zip(p.state_ns) {
                        *n = n.saturating_sub(b);
                    }
                }
                ns
            }
            Mode::Procfs { .. } => {
                let p = prev.map(|p| p.totals(t));
                ThreadDelta::new(t, p.as_ref(), cur.mode, start_ns).ns
            }
        };
        if ns.iter().sum::<u64>() == 0 {
            return;
        }
        for (total, n) in system.state_ns.iter_mut().zip(ns) {
            *total = total.saturating_add(n);
        }
        let pid = t.id.tgid;
        let gi = match group_at.get(&pid).or_else(|| exit_groups.get(&pid)) {
            Some(&gi) => Some(gi),
            None => self.group_prev.get(pid).cloned().map(|n| self.group(&n)),
        };
        let Some(gi) = gi else {
            return;
        };
        let g = &mut self.groups[gi];
        for (total, n) in g.delta.state_ns.iter_mut().zip(ns) {
            *total = total.saturating_add(n);
        }
        // D time by reason (`ThreadDelta::reasons`: each at most its state's time).
        for &(state, id, total) in &t.reasons {
            if state != State::Disk {
                continue;
            }
            let before = prev
                .and_then(|p| p.reasons.iter().find(|r| r.0 == state && r.1 == id))
                .map_or(0, |r| r.2);
            let d = total.saturating_sub(before).min(ns[state.index()]);
            if d == 0 {
                continue;
            }
            let label = labels
                .entry(id)
                .or_insert_with(|| reason_label(cur.reasons.get(&id).map(|f| &f[..])));
            g.delta.add_reason(label, d, usize::MAX);
        }
    }

    /// What this aggregator holds per task (see [`Footprint`]).
    pub fn footprint(&self) -> Footprint {
        use std::mem::size_of;
        let list = |cap: usize, each: usize| cap * each;
        // A hash table's slot is its entry and a control byte.
        let table = |cap: usize, each: usize| cap * (each + 1);
        let bytes = list(self.prev.capacity(), size_of::<(TaskId, Prev)>())
            + list(self.threads.capacity(), size_of::<(TaskId, (u64, u64))>())
            + table(
                self.states_prev.capacity(),
                size_of::<(TaskId, ThreadPrev)>(),
            )
            + self
                .states_prev
                .values()
                .map(|p| {
                    p.samples
                        .as_ref()
                        .map_or(0, |_| size_of::<[u64; NSTATES]>())
                        + size_of_val(&*p.reasons)
                })
                .sum::<usize>()
            + table(self.group_at.capacity(), size_of::<(i32, usize)>())
            + list(self.pending.capacity(), size_of::<Pending>())
            + self.grouper.footprint_bytes()
            + list(self.group_prev.len(), size_of::<(i32, Arc<str>)>());
        Footprint {
            processes: self.prev.len(),
            threads: self.threads.len(),
            thread_states: self.states_prev.len(),
            grouped: self.grouper.remembered().max(self.group_prev.len()),
            pending: self.pending.len(),
            bytes,
        }
    }

    /// Adds each exit's final figures, less what was counted of it alive, to its group's
    /// interval (see the module's header), and says which group each went to. Called before
    /// the walk of the live tasks, while `prev` and `group_prev` are still the previous
    /// collection's.
    fn count_exits(
        &mut self,
        exits: &[Exit],
        tasks: &[Task],
        live: &Assignment,
        boot_time_unix_s: u64,
        live_switches: bool,
    ) -> PidMap<usize> {
        let first_at = self.first_boottime_ns.unwrap_or(0);
        let key = |id: &TaskId| (id.tgid, id.tid);
        // What was counted of it alive and its group then, for the processes seen alive.
        let mut counted: Vec<(&Exit, Prev, Option<Arc<str>>)> = Vec::new();
        // Those grouped from their records: never seen alive, or renamed since.
        let mut regroup: Vec<(&Exit, Prev)> = Vec::new();
        for e in exits {
            let at_prev = self
                .prev
                .binary_search_by_key(&key(&e.id), |(id, _)| key(id))
                .ok()
                .map(|i| &self.prev[i])
                .filter(|(id, _)| *id == e.id)
                .map(|(_, p)| (*p, self.group_prev.get(e.id.tgid).cloned()));
            let seen = at_prev.or_else(|| {
                self.pending
                    .binary_search_by_key(&key(&e.id), |p| key(&p.id))
                    .ok()
                    .map(|i| &self.pending[i])
                    .filter(|p| p.id == e.id)
                    .map(|p| (p.prev, p.group.clone()))
            });
            // An exec since it was seen (a new comm) may have moved it to another group,
            // except by cgroup, which an exec does not change.
            let renamed = |p: &Prev| {
                comm_hash(&e.comm) != p.comm_hash && !matches!(self.opts.grouping, Grouping::Cgroup)
            };
            match seen {
                Some((p, g)) if !renamed(&p) => counted.push((e, p, g)),
                Some((p, _)) => regroup.push((e, p)),
                None => {
                    // All of it when it started after the counters did; none of it otherwise.
                    let from_birth = e.start_time_ns >= first_at;
                    let p = Prev {
                        proc: from_birth.then_some(ProcPrev {
                            io: true,
                            ..ProcPrev::default()
                        }),
                        counted_switches: from_birth.then_some((0, 0)),
                        ..Prev::default()
                    };
                    regroup.push((e, p));
                }
            }
        }
        let records: Vec<&Exit> = regroup.iter().map(|(e, _)| *e).collect();
        let grouped = self
            .grouper
            .assign_exits(&records, live, &self.group_prev, boot_time_unix_s);
        for ((e, p), g) in regroup.into_iter().zip(grouped) {
            // Its zombie row in this reading, if read with its names, groups it as alive; not
            // a row with another comm than the record's, read before the process renamed
            // itself (a walk that did not read it again): an exit takes its name at exit.
            let row = tasks
                .binary_search_by_key(&key(&e.id), |t| key(&t.id))
                .ok()
                .filter(|&i| tasks[i].id == e.id)
                .filter(|&i| tasks[i].base.as_ref().is_some_and(|b| *b.comm == *e.comm));
            let g = row.and_then(|_| live.get(e.id.tgid).cloned()).or(g);
            counted.push((e, p, g));
        }
        let mut groups = PidMap::default();
        for (e, p, g) in counted {
            let Some(name) = g else { continue };
            let gi = self.group(&name);
            add_exit(&mut self.groups[gi], e, &p, live_switches);
            groups.insert(e.id.tgid, gi);
        }
        groups
    }

    fn pick_top(&self, tasks: &[Task], mut deltas: Vec<(u64, usize)>) -> Vec<TopProcess> {
        let k = self.opts.top_n.min(deltas.len());
        if k == 0 {
            return Vec::new();
        }
        let key = |d: &(u64, usize)| (std::cmp::Reverse(d.0), tasks[d.1].id.tgid);
        deltas.select_nth_unstable_by_key(k - 1, key);
        deltas.truncate(k);
        deltas.sort_unstable_by_key(key);
        deltas
            .into_iter()
            .map(|(d, i)| {
                use tasksnap_model::fields::{self, Value};
                let t = &tasks[i];
                // Plain task fields, from the model's table (0, or 1 thread, when absent).
                let get = |f: &fields::Field| f.value(t).and_then(Value::as_u64);
                TopProcess {
                    pid: t.id.tgid,
                    comm: crate::label::value(
                        fields::COMM
                            .value(t)
                            .and_then(Value::as_bytes)
                            .unwrap_or(&[]),
                    )
                    .into_owned(),
                    cpu_user_ns: get(&fields::UTIME_NS).unwrap_or(0),
                    cpu_system_ns: get(&fields::STIME_NS).unwrap_or(0),
                    cpu_delta_ns: d,
                    resident_bytes: get(&fields::RSS_BYTES).unwrap_or(0),
                    threads: get(&fields::NUM_THREADS).unwrap_or(1),
                }
            })
            .collect()
    }

    /// Chooses the groups shown; the rest go into `other`, whose counters grow by what they
    /// did in the interval.
    fn fold(&mut self) {
        let mut names: Vec<(&Arc<str>, &Group)> =
            self.groups.iter().map(|g| (&g.name, g)).collect();
        names.sort_unstable_by(|a, b| {
            let busy = |g: &Group| g.delta.cpu_user_ns + g.delta.cpu_system_ns;
            busy(b.1)
                .cmp(&busy(a.1))
                .then(b.1.now.threads.cmp(&a.1.now.threads))
                .then(a.0.cmp(b.0))
        });
        let fixed = fixed_series(self.opts.top_n);
        let limit = self.opts.max_series;
        let all: usize = names.iter().map(|(_, g)| g.series()).sum();
        if limit == 0 || fixed + all <= limit {
            self.folded = 0;
            self.shown = names.iter().map(|(n, _)| (*n).clone()).collect();
            self.shown.sort_unstable();
            return;
        }
        // Room for `other` at its largest.
        let other_series = Group::most_series(self.opts.reasons_per_group);
        let mut budget = limit.saturating_sub(fixed + other_series);
        let mut shown = Vec::new();
        let mut other_delta = Counters::default();
        let mut other_now = Gauges::default();
        let mut folded = 0;
        for (name, g) in names {
            let s = g.series();
            if s <= budget && &**name != OTHER_GROUP {
                budget -= s;
                shown.push(name.clone());
                continue;
            }
            folded += 1;
            other_delta.add(&g.delta, self.opts.reasons_per_group);
            let n = &mut other_now;
            n.processes += g.now.processes;
            n.threads += g.now.threads;
            for s in 0..NSTATES {
                n.in_state[s] += g.now.in_state[s];
            }
            n.resident_bytes += g.now.resident_bytes;
            n.virtual_bytes += g.now.virtual_bytes;
            if let Some(sw) = g.now.swap_bytes {
                n.swap_bytes = Some(n.swap_bytes.unwrap_or(0) + sw);
            }
            n.oldest_start_unix_s = match (n.oldest_start_unix_s, g.now.oldest_start_unix_s) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            n.has_io |= g.now.has_io;
            n.has_switches |= g.now.has_switches;
        }
        self.other
            .total
            .add(&other_delta, self.opts.reasons_per_group);
        self.other.delta = other_delta;
        self.other.now = other_now;
        shown.sort_unstable();
        self.shown = shown;
        self.folded = folded;
    }

    /// What the last collection shows.
    pub fn view(&self) -> View<'_> {
        let mut groups: Vec<(&str, &Group)> = self
            .shown
            .iter()
            .filter_map(|n| self.index.get(n).map(|&i| (&**n, &self.groups[i])))
            .collect();
        if self.folded > 0 {
            groups.push((OTHER_GROUP, &self.other));
        }
        View {
            groups,
            folded: self.folded,
            top: &self.top,
            system: &self.system,
        }
    }
}

/// Series that do not depend on the groups: the host-wide ones, the exporter's own, and the
/// per-process ones.
pub fn fixed_series(top_n: usize) -> usize {
    // processes, threads, forks, exits dropped, 6 state seconds, 6 threads in state; collect
    // seconds, collect CPU, collections, collection errors, connections evicted, last
    // collection time, groups folded, source info, build info.
    4 + 2 * NSTATES + 9 + top_n * 5
}

/// The figures of the last collection, for encoding.
#[derive(Debug)]
pub struct View<'a> {
    /// Groups shown, by name (`other` last when some were folded).
    pub groups: Vec<(&'a str, &'a Group)>,
    /// Groups folded into `other`.
    pub folded: usize,
    /// The busiest processes.
    pub top: &'a [TopProcess],
    /// Host-wide figures.
    pub system: &'a System,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::states::ThreadTotals;
    use tasksnap_model::{Backend, Base, Snapshot, SnapshotStats, Stat};

    fn task(pid: i32, tid: i32, start_ns: u64, comm: &str, cpu_ns: u64) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid,
            start_time_ns: start_ns,
        });
        t.base = Some(Base {
            comm: comm.as_bytes().into(),
            num_threads: 1,
            ..Base::default()
        });
        t.stat = Some(Stat {
            utime_ns: cpu_ns,
            stime_ns: cpu_ns / 2,
            start_time_ns: start_ns,
            rss_bytes: 4096,
            ..Stat::default()
        });
        t
    }

    fn reading(at_ns: u64, tasks: Vec<Task>, states: Option<Sample>) -> Reading {
        Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: at_ns,
                taken_at_boottime_ns: at_ns,
                boot_time_unix_s: 1_000,
                backend: Backend::Procfs,
                tasks,
                stats: SnapshotStats::default(),
            },
            states,
            system: Default::default(),
            exits: Vec::new(),
            exits_dropped: 0,
            exits_missing: None,
            host: Default::default(),
        }
    }

    fn sample(at_ns: u64, threads: &[(i32, i32, u64, [u64; NSTATES], bool)]) -> Sample {
        let mut s = Sample::new(Mode::Bpf, at_ns);
        for &(pid, tid, start, ns, exited) in threads {
            let id = TaskId {
                tgid: pid,
                tid,
                start_time_ns: start,
            };
            s.threads.insert(
                id,
                ThreadTotals {
                    id,
                    state_ns: ns,
                    exited,
                    seen_at_ns: at_ns,
                    ..ThreadTotals::default()
                },
            );
        }
        s
    }

    const S: u64 = 1_000_000_000;

    fn group<'a>(a: &'a Aggregator, name: &str) -> Option<&'a Group> {
        a.groups.iter().find(|g| &*g.name == name)
    }

    #[test]
    fn cpu_counts_from_the_start_and_never_goes_back() {
        let mut a = Aggregator::new(Options::default());
        // At the first collection, a has run 10 s: not counted (the counters start here).
        a.update(&mut reading(
            100 * S,
            vec![task(10, 10, S, "a", 10 * S)],
            None,
        ));
        let g = group(&a, "a").expect("group a");
        assert_eq!(g.total.cpu_user_ns, 0);
        // b is born after it and ran 2 s user; a ran 1 s more user; c was there before but
        // unseen (not counted backwards).
        a.update(&mut reading(
            110 * S,
            vec![
                task(10, 10, S, "a", 11 * S),
                task(20, 20, 105 * S, "a", 2 * S),
                task(30, 30, 50 * S, "c", 7 * S),
            ],
            None,
        ));
        let g = group(&a, "a").expect("group a");
        assert_eq!(g.total.cpu_user_ns, 3 * S);
        assert_eq!(g.total.cpu_system_ns, S / 2 + S);
        assert_eq!(g.now.processes, 2);
        assert_eq!(group(&a, "c").expect("c").total.cpu_user_ns, 0);
        // b exits: a's counter keeps what b did.
        a.update(&mut reading(
            120 * S,
            vec![task(10, 10, S, "a", 12 * S)],
            None,
        ));
        assert_eq!(group(&a, "a").expect("a").total.cpu_user_ns, 4 * S);
        assert_eq!(group(&a, "a").expect("a").now.processes, 1);
        // c's group is empty: kept, its counters as they were, for keep_empty_ns (so a
        // scraper slower than the collections sees them), then gone.
        assert!(group(&a, "c").is_some());
        a.update(&mut reading(
            130 * S,
            vec![task(10, 10, S, "a", 12 * S)],
            None,
        ));
        assert!(group(&a, "c").is_some(), "kept for a slow scraper");
        a.update(&mut reading(
            120 * S + KEEP_EMPTY_NS - 1,
            vec![task(10, 10, S, "a", 12 * S)],
            None,
        ));
        assert!(
            group(&a, "c").is_some(),
            "kept until keep_empty_ns has passed"
        );
        a.update(&mut reading(
            120 * S + KEEP_EMPTY_NS,
            vec![task(10, 10, S, "a", 12 * S)],
            None,
        ));
        assert!(group(&a, "c").is_none());
    }

    #[test]
    fn state_time_follows_threads_into_their_group_even_after_exit() {
        let mut a = Aggregator::new(Options::default());
        let z = [0u64; NSTATES];
        let tasks = || vec![task(10, 10, S, "a", 0), task(10, 11, S, "a", 0)];
        a.update(&mut reading(
            100 * S,
            tasks(),
            Some(sample(
                100 * S,
                &[(10, 10, S, z, false), (10, 11, S, z, false)],
            )),
        ));
        // Thread 11 ran 1 s and was in D 1 s; thread 10 slept 2 s. Then the process exits:
        // its threads' final totals still count for its group.
        let mut run_d = z;
        run_d[State::Running.index()] = S;
        run_d[State::Disk.index()] = S;
        let mut sleep = z;
        sleep[State::Sleeping.index()] = 2 * S;
        a.update(&mut reading(
            102 * S,
            vec![],
            Some(sample(
                102 * S,
                &[(10, 10, S, sleep, true), (10, 11, S, run_d, true)],
            )),
        ));
        let g = group(&a, "a").expect("group a");
        assert_eq!(g.total.state_ns[State::Running.index()], S);
        assert_eq!(g.total.state_ns[State::Disk.index()], S);
        assert_eq!(g.total.state_ns[State::Sleeping.index()], 2 * S);
        assert_eq!(g.total.state_ns.iter().sum::<u64>(), 4 * S);
        assert_eq!(a.system.state_ns.iter().sum::<u64>(), 4 * S);
    }

    #[test]
    fn max_series_folds_the_least_busy_groups_into_other() {
        let opts = Options {
            max_series: fixed_series(0) + 2 * 40,
            ..Options::default()
        };
        let mut a = Aggregator::new(opts);
        let tasks = |k: u64| -> Vec<Task> {
            (1..=20)
                .map(|i| task(i, i, S, &format!("g{i}"), k * i as u64 * S))
                .collect()
        };
        a.update(&mut reading(100 * S, tasks(1), None));
        a.update(&mut reading(110 * S, tasks(2), None));
        let v = a.view();
        let names: Vec<&str> = v.groups.iter().map(|(n, _)| *n).collect();
        // The busiest (g20, then g19...) are shown while they fit, and the rest are one
        // `other` holding their processes and CPU.
        assert!(names.contains(&"g20"), "{names:?}");
        assert!(!names.contains(&"g1"), "{names:?}");
        assert_eq!(names.last(), Some(&OTHER_GROUP));
        let shown: usize = v.groups.iter().map(|(_, g)| g.series()).sum();
        assert!(
            fixed_series(0) + shown <= fixed_series(0) + 2 * 40,
            "{shown}"
        );
        let other = v.groups.last().expect("other").1;
        assert_eq!(other.now.processes as usize, v.folded);
        let folded_cpu: u64 = (1..=v.folded as u64).map(|i| i * S).sum();
        assert_eq!(other.total.cpu_user_ns, folded_cpu);
        // The count of series does not grow with the processes.
        let more: Vec<Task> = (1..=2000)
            .map(|i| task(i, i, S, &format!("g{}", i % 20 + 1), 3 * S))
            .collect();
        a.update(&mut reading(120 * S, more, None));
        let v = a.view();
        let shown: usize = v.groups.iter().map(|(_, g)| g.series()).sum();
        assert!(
            fixed_series(0) + shown <= fixed_series(0) + 2 * 40,
            "{shown}"
        );
    }

    #[test]
    fn top_n_are_the_busiest_in_the_interval() {
        let mut a = Aggregator::new(Options {
            top_n: 2,
            ..Options::default()
        });
        a.update(&mut reading(
            100 * S,
            vec![
                task(1, 1, S, "x", 100 * S),
                task(2, 2, S, "y", 0),
                task(3, 3, S, "z", 0),
            ],
            None,
        ));
        a.update(&mut reading(
            110 * S,
            vec![
                task(1, 1, S, "x", 100 * S),
                task(2, 2, S, "y", 4 * S),
                task(3, 3, S, "z", 2 * S),
            ],
            None,
        ));
        let pids: Vec<i32> = a.view().top.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![2, 3]);
    }

    /// Regression (issue 29): a --top-n process's comm label replaced control characters
    /// with `?`; it is the label value of the comm's bytes now.
    #[test]
    fn top_n_comms_are_label_values_never_replaced() {
        let mut a = Aggregator::new(Options {
            top_n: 2,
            ..Options::default()
        });
        let named = |cpu| {
            let mut cr = task(1, 1, S, "", cpu);
            cr.base.as_mut().expect("base").comm = b"cr\r\xffname"[..].into();
            vec![cr, task(2, 2, S, "nl\nname", cpu)]
        };
        a.update(&mut reading(100 * S, named(0), None));
        a.update(&mut reading(110 * S, named(S), None));
        let comms: Vec<&str> = a.view().top.iter().map(|p| p.comm.as_str()).collect();
        assert_eq!(comms, vec!["cr\\x0d\\xffname", "nl\nname"]);
    }
    // Exits (issue 31).

    use tasksnap_model::{Io, Sched};

    /// A process with I/O and context switches too (what the BPF backend reads).
    fn full(pid: i32, tid: i32, start_ns: u64, comm: &str, cpu_ns: u64, k: u64) -> Task {
        let mut t = task(pid, tid, start_ns, comm, cpu_ns);
        if let Some(st) = t.stat.as_mut() {
            st.minflt = 10 * k;
            st.majflt = k;
        }
        t.io = Some(Box::new(Io {
            rchar_bytes: 0,
            wchar_bytes: 0,
            syscr: 0,
            syscw: 0,
            read_bytes: 1000 * k,
            write_bytes: 2000 * k,
            cancelled_write_bytes: 0,
        }));
        t.sched = Some(Box::new(Sched {
            on_cpu_ns: cpu_ns,
            run_delay_ns: 0,
            timeslices: 0,
            voluntary_switches: Some(100 * k),
            involuntary_switches: Some(10 * k),
        }));
        t
    }

    /// An exit whose final figures are `full`'s at `k`, CPU user `user_ns`, system half.
    fn exit(pid: i32, start_ns: u64, comm: &str, user_ns: u64, k: u64, status: u32) -> Exit {
        Exit {
            id: TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: start_ns,
            },
            ppid: 1,
            comm: comm.as_bytes().to_vec(),
            start_time_ns: start_ns,
            wait_status: status,
            utime_ns: user_ns,
            stime_ns: user_ns / 2,
            cpu_ns: user_ns + user_ns / 2,
            minflt: 10 * k,
            majflt: k,
            read_bytes: 1000 * k,
            write_bytes: 2000 * k,
            voluntary_ctxt_switches: 100 * k,
            nonvoluntary_ctxt_switches: 10 * k,
            ..Exit::default()
        }
    }

    fn with_exits(mut r: Reading, exits: Vec<Exit>) -> Reading {
        r.exits = exits;
        r
    }

    /// Every counter of every group, by group name, to check that none went down.
    fn totals(a: &Aggregator) -> Vec<(String, Vec<u64>)> {
        a.groups
            .iter()
            .map(|g| {
                let t = &g.total;
                let mut v = vec![
                    t.cpu_user_ns,
                    t.cpu_system_ns,
                    t.read_bytes,
                    t.write_bytes,
                    t.minor_faults,
                    t.major_faults,
                    t.voluntary_switches,
                    t.involuntary_switches,
                ];
                v.extend(t.exits);
                (g.name.to_string(), v)
            })
            .collect()
    }

    /// Updates `a` and checks that no counter of a group that is still there went down.
    fn step(a: &mut Aggregator, mut r: Reading) {
        let before = totals(a);
        a.update(&mut r);
        for (name, now) in totals(a) {
            if let Some((_, was)) = before.iter().find(|(n, _)| *n == name) {
                for (w, n) in was.iter().zip(&now) {
                    assert!(n >= w, "{name}: {was:?} -> {now:?}");
                }
            }
        }
    }

    fn figures(g: &Group) -> (u64, u64, u64, u64, u64, u64, u64, u64) {
        let t = &g.total;
        (
            t.cpu_user_ns,
            t.cpu_system_ns,
            t.minor_faults,
            t.major_faults,
            t.read_bytes,
            t.write_bytes,
            t.voluntary_switches,
            t.involuntary_switches,
        )
    }

    /// What `exit(.., user_ns, k, ..)` holds, as `figures` orders it.
    fn all_of(user_ns: u64, k: u64) -> (u64, u64, u64, u64, u64, u64, u64, u64) {
        (
            user_ns,
            user_ns / 2,
            10 * k,
            k,
            1000 * k,
            2000 * k,
            100 * k,
            10 * k,
        )
    }

    #[test]
    fn a_process_seen_alive_then_exited_counts_its_final_figures_exactly() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        // b is born after the first collection, seen at the second with 2 s of user CPU...
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "b", 2 * S, 3)],
                None,
            ),
        );
        assert_eq!(figures(group(&a, "b").expect("b")), all_of(2 * S, 3));
        // ... and exits before the third with 5 s: the counter reaches the final figures,
        // not the last ones seen.
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init()], None),
                vec![exit(20, 105 * S, "b", 5 * S, 7, 0)],
            ),
        );
        let b = group(&a, "b").expect("b");
        assert_eq!(figures(b), all_of(5 * S, 7));
        assert_eq!(b.total.exits, [1, 0, 0]);
        assert_eq!(b.now.processes, 0);
        // An exit-only group is kept while it has exits, and shows its exits series.
        assert_eq!(b.series(), GROUP_SERIES_ALWAYS + 2 + 2 + 1);
    }

    #[test]
    fn a_process_never_seen_alive_counts_all_of_its_figures() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        // Born and dead between two collections: its group is made from its record. One
        // exited, one was killed, one dumped core.
        step(
            &mut a,
            with_exits(
                reading(110 * S, vec![init()], None),
                vec![
                    exit(30, 101 * S, "short", S, 1, 3 << 8),
                    exit(31, 102 * S, "short", 2 * S, 2, 9),
                    exit(32, 103 * S, "short", 3 * S, 3, 0x80 | 11),
                ],
            ),
        );
        let g = group(&a, "short").expect("short");
        assert_eq!(figures(g), all_of(6 * S, 6));
        assert_eq!(g.total.exits, [1, 1, 1]);
        // One that was alive before the exporter's first collection and never seen: its
        // figures include what it did before the counters started, so only its exit counts.
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init()], None),
                vec![exit(40, 50 * S, "old", 9 * S, 9, 0)],
            ),
        );
        let g = group(&a, "old").expect("old");
        assert_eq!(figures(g), (0, 0, 0, 0, 0, 0, 0, 0));
        assert_eq!(g.total.exits, [1, 0, 0]);
    }

    #[test]
    fn the_first_collections_exits_are_before_the_counters_start() {
        let mut a = Aggregator::new(Options::default());
        let mut r = with_exits(
            reading(100 * S, vec![full(1, 1, S, "init", 0, 0)], None),
            vec![exit(30, 99 * S, "short", S, 1, 0)],
        );
        r.exits_dropped = 4;
        step(&mut a, r);
        assert!(group(&a, "short").is_none());
        // Drops are the source's own figure: counted from when the exporter opened it.
        assert_eq!(a.view().system.exits_dropped, Some(4));
        let mut r = reading(110 * S, vec![full(1, 1, S, "init", 0, 0)], None);
        r.exits_dropped = 1;
        step(&mut a, r);
        assert_eq!(a.view().system.exits_dropped, Some(5));
        // No exit source: said as none.
        let mut r = reading(120 * S, vec![full(1, 1, S, "init", 0, 0)], None);
        r.exits_missing = Some("not root".into());
        step(&mut a, r);
        assert_eq!(a.view().system.exits_dropped, None);
    }

    #[test]
    fn a_zombie_whose_thread_row_comes_first_counts_once() {
        // After a pid wrap a thread's tid can be below its process's: tid 5 of process 20
        // sorts before the leader's row. The exit still replaces the leader's figures.
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        let thread = |k| full(20, 5, 106 * S, "z", 0, k);
        step(&mut a, reading(100 * S, vec![init()], None));
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), thread(0), full(20, 20, 105 * S, "z", S, 1)],
                None,
            ),
        );
        step(
            &mut a,
            with_exits(
                reading(
                    120 * S,
                    vec![init(), thread(0), full(20, 20, 105 * S, "z", 4 * S, 4)],
                    None,
                ),
                vec![exit(20, 105 * S, "z", 4 * S, 4, 0)],
            ),
        );
        let z = group(&a, "z").expect("z");
        assert_eq!(figures(z), all_of(4 * S, 4));
        assert_eq!(z.total.exits, [1, 0, 0]);
    }

    #[test]
    fn a_zombie_that_is_also_an_exit_counts_once() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "z", S, 1)],
                None,
            ),
        );
        // Its exit record and its unreaped zombie row in one reading: the final figures
        // count, the row adds nothing on top.
        let zombie = || full(20, 20, 105 * S, "z", 4 * S, 4);
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init(), zombie()], None),
                vec![exit(20, 105 * S, "z", 4 * S, 4, 0)],
            ),
        );
        let z = group(&a, "z").expect("z");
        assert_eq!(figures(z), all_of(4 * S, 4));
        assert_eq!(z.total.exits, [1, 0, 0]);
        // Left unreaped: nothing more.
        step(&mut a, reading(130 * S, vec![init(), zombie()], None));
        let z = group(&a, "z").expect("z");
        assert_eq!(figures(z), all_of(4 * S, 4));
        assert_eq!(z.total.exits, [1, 0, 0]);
        // Never seen before its zombie row: counted once too.
        step(
            &mut a,
            with_exits(
                reading(
                    140 * S,
                    vec![init(), full(21, 21, 131 * S, "z", 2 * S, 2)],
                    None,
                ),
                vec![exit(21, 131 * S, "z", 2 * S, 2, 0)],
            ),
        );
        let z = group(&a, "z").expect("z");
        assert_eq!(figures(z), all_of(6 * S, 6));
        assert_eq!(z.total.exits, [2, 0, 0]);
    }

    #[test]
    fn a_process_missing_before_its_exit_record_is_counted_from_where_it_was_seen() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "p", 2 * S, 2)],
                None,
            ),
        );
        // It died after the third reading's drain, before its walk: missing, no record yet.
        step(&mut a, reading(120 * S, vec![init()], None));
        assert_eq!(figures(group(&a, "p").expect("p")), all_of(2 * S, 2));
        // The record comes with the fourth: counted from the second's figures, once.
        step(
            &mut a,
            with_exits(
                reading(130 * S, vec![init()], None),
                vec![exit(20, 105 * S, "p", 3 * S, 3, 0)],
            ),
        );
        let p = group(&a, "p").expect("p");
        assert_eq!(figures(p), all_of(3 * S, 3));
        assert_eq!(p.total.exits, [1, 0, 0]);
    }

    #[test]
    fn exit_figures_below_what_was_counted_add_nothing_and_cpu_moves_between_modes() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        // Seen with 4 s user and 2 s system.
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "m", 4 * S, 5)],
                None,
            ),
        );
        // The exit's split gives 3.5 s user, 3 s system (6.5 s in all) and fewer faults
        // than were read alive: system grows by the whole's 0.5 s, user stays, nothing
        // goes down.
        let mut e = exit(20, 105 * S, "m", 0, 1, 0);
        e.utime_ns = 3 * S + S / 2;
        e.stime_ns = 3 * S;
        step(
            &mut a,
            with_exits(reading(120 * S, vec![init()], None), vec![e]),
        );
        let m = group(&a, "m").expect("m");
        assert_eq!(m.total.cpu_user_ns, 4 * S);
        assert_eq!(m.total.cpu_system_ns, 2 * S + S / 2);
        assert_eq!(m.total.minor_faults, 50);
        assert_eq!(m.total.exits, [1, 0, 0]);
    }

    #[test]
    fn switches_of_a_process_counted_from_birth_reach_its_group_total() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        // Two threads, 300 + 200 voluntary switches.
        let mut t2 = full(20, 21, 106 * S, "w", 0, 2);
        t2.stat = None;
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "w", S, 3), t2],
                None,
            ),
        );
        assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 500);
        // Thread 21 ends (after 250 switches, 50 never seen) and the process exits with 900
        // in all (threads' and the dead thread's, as the kernel sums them).
        step(
            &mut a,
            reading(
                120 * S,
                vec![init(), full(20, 20, 105 * S, "w", S, 4)],
                None,
            ),
        );
        assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 600);
        let mut e = exit(20, 105 * S, "w", S, 4, 0);
        e.voluntary_ctxt_switches = 900;
        step(
            &mut a,
            with_exits(reading(130 * S, vec![init()], None), vec![e]),
        );
        assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 900);
        // A process already running at the first collection: its group total includes
        // threads that ended before the exporter saw them, so its exit adds no switches.
        let mut a = Aggregator::new(Options::default());
        step(
            &mut a,
            reading(100 * S, vec![init(), full(30, 30, 50 * S, "o", S, 1)], None),
        );
        step(
            &mut a,
            reading(110 * S, vec![init(), full(30, 30, 50 * S, "o", S, 2)], None),
        );
        let mut e = exit(30, 50 * S, "o", 2 * S, 2, 0);
        e.voluntary_ctxt_switches = 100_000;
        step(
            &mut a,
            with_exits(reading(120 * S, vec![init()], None), vec![e]),
        );
        let o = group(&a, "o").expect("o");
        assert_eq!(o.total.voluntary_switches, 100);
        // Its CPU is exact: the process's own figure alive and at exit.
        assert_eq!(o.total.cpu_user_ns, S);
    }

    #[test]
    fn exits_never_seen_alive_join_their_parents_cgroup_group() {
        let mut a = Aggregator::new(Options {
            grouping: Grouping::Cgroup,
            ..Options::default()
        });
        let shell = || {
            let mut t = full(10, 10, S, "sh", 0, 0);
            t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
                b"0::/system.slice/cron.service\n".to_vec(),
            )));
            t
        };
        step(&mut a, reading(100 * S, vec![shell()], None));
        // sh -> bash (exited too) -> curl; and an orphan reparented to pid 1.
        let mut bash = exit(11, 101 * S, "bash", S, 1, 0);
        bash.ppid = 10;
        let mut curl = exit(12, 102 * S, "curl", S, 1, 0);
        curl.ppid = 11;
        let orphan = exit(13, 103 * S, "orphan", S, 1, 0);
        step(
            &mut a,
            with_exits(
                reading(110 * S, vec![shell()], None),
                vec![curl, bash, orphan],
            ),
        );
        let g = group(&a, "/system.slice/cron.service").expect("cron's group");
        assert_eq!(g.total.exits, [2, 0, 0]);
        assert_eq!(g.total.cpu_user_ns, 2 * S);
        let all: u64 = a
            .groups
            .iter()
            .map(|g| g.total.exits.iter().sum::<u64>())
            .sum();
        assert_eq!(all, 2, "the orphan has no group");
    }

    #[test]
    fn exits_fold_into_other_with_their_group() {
        let opts = Options {
            max_series: fixed_series(0) + 2 * 40,
            ..Options::default()
        };
        let mut a = Aggregator::new(opts);
        let tasks = |k: u64| -> Vec<Task> {
            (1..=20)
                .map(|i| task(i, i, S, &format!("g{i}"), k * i as u64 * S))
                .collect()
        };
        step(&mut a, reading(100 * S, tasks(1), None));
        step(
            &mut a,
            with_exits(
                reading(110 * S, tasks(2), None),
                vec![exit(100, 101 * S, "g1", S / 10, 0, 9)],
            ),
        );
        let v = a.view();
        let names: Vec<&str> = v.groups.iter().map(|(n, _)| *n).collect();
        assert!(!names.contains(&"g1"), "{names:?}");
        let other = v.groups.last().expect("other").1;
        assert_eq!(other.total.exits, [0, 1, 0]);
        let shown: usize = v.groups.iter().map(|(_, g)| g.series()).sum();
        assert!(
            fixed_series(0) + shown <= fixed_series(0) + 2 * 40,
            "{shown}"
        );
    }
    #[test]
    fn an_exec_between_the_last_collection_and_the_exit_regroups_the_rest() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        // Seen as the forked shell, then it execs curl and exits: what it did since goes
        // to curl, from the figures seen as sh.
        step(
            &mut a,
            reading(
                110 * S,
                vec![init(), full(20, 20, 105 * S, "sh", S, 1)],
                None,
            ),
        );
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init()], None),
                vec![exit(20, 105 * S, "curl", 3 * S, 2, 0)],
            ),
        );
        assert_eq!(figures(group(&a, "sh").expect("sh")), all_of(S, 1));
        let curl = group(&a, "curl").expect("curl");
        assert_eq!(curl.total.cpu_user_ns, 2 * S);
        assert_eq!(curl.total.minor_faults, 10);
        assert_eq!(curl.total.exits, [1, 0, 0]);
    }
    #[test]
    fn exits_are_grouped_by_the_name_they_exit_with_not_a_stale_row() {
        // Issue 42: a child seen right after its fork (its parent's comm), renamed, then
        // exited, its record in a reading that still holds the row read before the rename
        // (a walk that did not read it again): its exit goes by the name it exited with.
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        let parent = || full(10, 10, S, "parent", S, 1);
        step(&mut a, reading(100 * S, vec![init(), parent()], None));
        let forked = || full(20, 20, 105 * S, "parent", 0, 0);
        step(
            &mut a,
            reading(110 * S, vec![init(), parent(), forked()], None),
        );
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init(), parent(), forked()], None),
                vec![exit(20, 105 * S, "child", 2 * S, 2, 0)],
            ),
        );
        assert_eq!(group(&a, "parent").expect("parent").total.exits, [0, 0, 0]);
        let child = group(&a, "child").expect("child");
        assert_eq!(child.total.exits, [1, 0, 0]);
        assert_eq!(child.total.cpu_user_ns, 2 * S);
        // A zombie row read after the rename groups the exit as alive, as before.
        step(
            &mut a,
            reading(
                130 * S,
                vec![init(), parent(), full(21, 21, 125 * S, "parent", 0, 0)],
                None,
            ),
        );
        step(
            &mut a,
            with_exits(
                reading(
                    140 * S,
                    vec![init(), parent(), full(21, 21, 125 * S, "child", S, 1)],
                    None,
                ),
                vec![exit(21, 125 * S, "child", S, 1, 0)],
            ),
        );
        assert_eq!(group(&a, "parent").expect("parent").total.exits, [0, 0, 0]);
        assert_eq!(group(&a, "child").expect("child").total.exits, [2, 0, 0]);
    }

    #[test]
    fn state_time_of_a_process_born_and_dead_between_collections_is_its_groups() {
        let mut a = Aggregator::new(Options::default());
        let z = [0u64; NSTATES];
        let init = || task(1, 1, S, "init", 0);
        step(
            &mut a,
            reading(
                100 * S,
                vec![init()],
                Some(sample(100 * S, &[(1, 1, S, z, false)])),
            ),
        );
        // Pid 30 lived 0.3 s between the two collections: 0.2 s running, 0.1 s runnable.
        let mut ran = z;
        ran[State::Running.index()] = S / 5;
        ran[State::Runnable.index()] = S / 10;
        step(
            &mut a,
            with_exits(
                reading(
                    110 * S,
                    vec![init()],
                    Some(sample(
                        110 * S,
                        &[(1, 1, S, z, false), (30, 30, 101 * S, ran, true)],
                    )),
                ),
                vec![exit(30, 101 * S, "short", S / 5, 0, 0)],
            ),
        );
        let g = group(&a, "short").expect("short");
        assert_eq!(g.total.state_ns[State::Running.index()], S / 5);
        assert_eq!(g.total.state_ns[State::Runnable.index()], S / 10);
    }
    #[test]
    fn io_not_read_alive_is_not_counted_at_exit() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        step(&mut a, reading(100 * S, vec![init()], None));
        let mut unread = full(20, 20, 105 * S, "u", S, 1);
        unread.io = None;
        step(&mut a, reading(110 * S, vec![init(), unread], None));
        step(
            &mut a,
            with_exits(
                reading(120 * S, vec![init()], None),
                vec![exit(20, 105 * S, "u", 2 * S, 5, 0)],
            ),
        );
        let u = group(&a, "u").expect("u");
        assert_eq!((u.total.read_bytes, u.total.write_bytes), (0, 0));
        assert_eq!(u.total.cpu_user_ns, 2 * S);
    }

    /// Processes of `threads` threads each (pids `first..first + n`, their threads' tids
    /// above 1,000,000), with context switches and state totals, born at `born_ns`.
    fn crowd(first: i32, n: i32, threads: i32, born_ns: u64, k: u64) -> Vec<Task> {
        let mut v = Vec::new();
        for pid in first..first + n {
            v.push(full(pid, pid, born_ns, "crowd", k * S / 100, k));
            for j in 1..threads {
                let mut t = full(pid, 1_000_000 + pid * 16 + j, born_ns, "crowd", 0, k);
                t.stat = None;
                v.push(t);
            }
        }
        v.sort_unstable_by_key(|t| (t.id.tgid, t.id.tid));
        v
    }

    fn states_of(at_ns: u64, tasks: &[Task], exited: &[Task]) -> Sample {
        let mut ns = [0u64; NSTATES];
        ns[State::Sleeping.index()] = at_ns / 2;
        let rows: Vec<(i32, i32, u64, [u64; NSTATES], bool)> = tasks
            .iter()
            .map(|t| (t.id.tgid, t.id.tid, t.id.start_time_ns, ns, false))
            .chain(
                exited
                    .iter()
                    .map(|t| (t.id.tgid, t.id.tid, t.id.start_time_ns, ns, true)),
            )
            .collect();
        sample(at_ns, &rows)
    }

    /// Regression (issue 32): the exporter holds per group what it exports; per task only
    /// the figures the next interval starts from, for the tasks alive now. Processes that come
    /// and go, with exit records and without, leave nothing behind, and nothing piles up.
    #[test]
    fn processes_that_come_and_go_leave_no_per_task_state() {
        let mut a = Aggregator::new(Options::default());
        let init = || full(1, 1, S, "init", 0, 0);
        let base = |at_ns| {
            let tasks = vec![init()];
            let st = states_of(at_ns, &tasks, &[]);
            reading(at_ns, tasks, Some(st))
        };
        step(&mut a, base(100 * S));
        let idle = a.footprint();
        assert_eq!(
            (
                idle.processes,
                idle.threads,
                idle.thread_states,
                idle.pending
            ),
            (1, 0, 1, 0),
            "{idle:?}"
        );
        let mut bytes_after_cycle = Vec::new();
        for cycle in 0..6u64 {
            let at = 110 * S + cycle * 30 * S;
            // 200 processes of 3 threads each come...
            let born = at - S;
            let crowd = crowd(1000 + cycle as i32 * 1000, 200, 3, born, cycle + 1);
            let mut tasks = vec![init()];
            tasks.extend(crowd.iter().cloned());
            let st = states_of(at, &tasks, &[]);
            step(&mut a, reading(at, tasks, Some(st)));
            let f = a.footprint();
            assert_eq!(
                (f.processes, f.threads, f.thread_states),
                (201, 400, 601),
                "{f:?}"
            );
            // ...and go: half with their exit records, half without (missing, then
            // waited for one collection).
            let exits: Vec<Exit> = crowd
                .iter()
                .filter(|t| t.id.is_leader() && t.id.tgid % 2 == 0)
                .map(|t| exit(t.id.tgid, born, "crowd", S, cycle + 2, 0))
                .collect();
            let tasks = vec![init()];
            let st = states_of(at + 10 * S, &tasks, &crowd);
            step(
                &mut a,
                with_exits(reading(at + 10 * S, tasks, Some(st)), exits),
            );
            let f = a.footprint();
            // The exited threads' final totals are held while the source reports them.
            assert_eq!(
                (f.processes, f.threads, f.thread_states),
                (1, 0, 601),
                "{f:?}"
            );
            assert_eq!(f.pending, 100, "those without a record wait: {f:?}");
            step(&mut a, base(at + 20 * S));
            let f = a.footprint();
            assert_eq!(
                (f.processes, f.threads, f.thread_states, f.pending),
                (1, 0, 1, 0),
                "{f:?}"
            );
            assert!(f.grouped <= 1, "{f:?}");
            bytes_after_cycle.push(f.bytes);
        }
        // The lists keep their allocations for the next crowd, and no more: six crowds cost
        // what the first two did (a hash table's capacity moves with its deleted slots).
        let first = bytes_after_cycle[..2].iter().max().copied().unwrap_or(0);
        assert!(
            bytes_after_cycle.iter().all(|&b| b <= first),
            "{bytes_after_cycle:?}"
        );
        // Their group's counters stay (per group, bounded by the groups).
        let g = group(&a, "crowd").expect("crowd");
        assert_eq!(g.total.exits, [600, 0, 0]);
        assert_eq!(g.now.processes, 0);
    }

    /// Thread-state time is the same whether the previous totals are a whole sample or the
    /// per-thread entries kept: a thread's interval is from its last totals, a thread new
    /// in the interval brings all it has, one that exited its final totals, once.
    #[test]
    fn state_time_follows_each_thread_from_its_last_totals() {
        let mut a = Aggregator::new(Options::default());
        let z = [0u64; NSTATES];
        let with = |run: u64, sleep: u64| {
            let mut ns = z;
            ns[State::Running.index()] = run;
            ns[State::Sleeping.index()] = sleep;
            ns
        };
        let tasks = |pids: &[i32]| {
            pids.iter()
                .map(|&p| task(p, p, S, "w", 0))
                .collect::<Vec<_>>()
        };
        step(
            &mut a,
            reading(
                100 * S,
                tasks(&[1, 2]),
                Some(sample(
                    100 * S,
                    &[
                        (1, 1, S, with(5 * S, 5 * S), false),
                        (2, 2, S, with(S, 0), false),
                    ],
                )),
            ),
        );
        // 1 ran 2 s and slept 8 s more; 2 exited after 1 s more running; 3 is new (3 s).
        step(
            &mut a,
            reading(
                110 * S,
                tasks(&[1, 3]),
                Some(sample(
                    110 * S,
                    &[
                        (1, 1, S, with(7 * S, 13 * S), false),
                        (2, 2, S, with(2 * S, 0), true),
                        (3, 3, S, with(3 * S, 0), false),
                    ],
                )),
            ),
        );
        let w = group(&a, "w").expect("w");
        assert_eq!(w.total.state_ns[State::Running.index()], 2 * S + S + 3 * S);
        assert_eq!(w.total.state_ns[State::Sleeping.index()], 8 * S);
        // The exited thread's final totals are kept while the source reports them (a second
        // report adds nothing), then forgotten; 1's next interval starts from 110 s's totals.
        assert_eq!(a.footprint().thread_states, 3);
        step(
            &mut a,
            reading(
                120 * S,
                tasks(&[1, 3]),
                Some(sample(
                    120 * S,
                    &[
                        (1, 1, S, with(8 * S, 22 * S), false),
                        (3, 3, S, with(3 * S, 10 * S), false),
                    ],
                )),
            ),
        );
        assert_eq!(a.footprint().thread_states, 2);
        let w = group(&a, "w").expect("w");
        assert_eq!(w.total.state_ns[State::Running.index()], 7 * S);
        assert_eq!(
            w.total.state_ns[State::Sleeping.index()],
            8 * S + 9 * S + 10 * S
        );
    }

    /// What docs/serve.md says the exporter holds per task ("What serve holds per task"):
    /// a process's counters, another thread's switches, a thread's state totals.
    #[test]
    fn per_task_entries_stay_as_small_as_documented() {
        use std::mem::size_of;
        assert!(size_of::<(TaskId, Prev)>() <= 128);
        assert!(size_of::<(TaskId, (u64, u64))>() <= 32);
        assert!(size_of::<(TaskId, ThreadPrev)>() <= 104);
        assert!(size_of::<(TaskId, tasksnap_model::Comm, Option<Arc<str>>)>() <= 56);
    }
}
