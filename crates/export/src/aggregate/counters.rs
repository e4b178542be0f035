//! A group's figures: the counters that only grow ([`Counters`], since the exporter started
//! and over the last interval), the gauges of the last collection ([`Gauges`]), the
//! host-wide ones ([`System`]), and those of a process shown on its own ([`TopProcess`]).

use std::sync::Arc;

use tasksnap_model::states::{Mode, NSTATES};

/// Cumulative (or, as [`Group::delta`], one interval's) counters of a group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// User CPU time, ns.
    pub cpu_user_ns: u64,
    /// System CPU time, ns.
    pub cpu_system_ns: u64,
    /// Thread time per state ([`State::index`](tasksnap_model::states::State::index)), ns.
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
    /// Processes that exited, by [`super::EXIT_REASONS`].
    pub exits: [u64; 3],
}

impl Counters {
    pub(super) fn add_reason(&mut self, label: &Arc<str>, ns: u64, named: usize) {
        if let Some(r) = self.disk_reasons.iter_mut().find(|r| r.0 == *label) {
            r.1 = r.1.saturating_add(ns);
        } else if self.disk_reasons.len() < named {
            self.disk_reasons.push((label.clone(), ns));
        } else {
            self.disk_other_ns = self.disk_other_ns.saturating_add(ns);
        }
    }

    pub(super) fn add(&mut self, d: &Counters, named: usize) {
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
    pub(super) empty_for: u32,
    /// Since when (boot time, ns) it has had none.
    pub(super) empty_since_ns: u64,
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
