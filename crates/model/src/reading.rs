//! A [`Reading`]: everything tasksnap knows about the host at one moment (its tasks, every
//! thread's state-time totals, the machine-wide figures) and the processes that exited
//! since the previous reading, which machine and boot it was taken on, and the host's cgroups
//! with their counters when they were read. The recorder takes one per
//! interval and stores it; replay hands the same type back, so that a front end shows the
//! past through the code it shows the present with.

use crate::states::Sample;
use crate::{CgroupListing, Exit, HostIdentity, Snapshot, SystemFigures, TaskId};

/// The host at one moment.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Every task (processes and their threads), with the groups that were read. Command lines
    /// and cgroups may be carried over from an earlier read of the same task identity.
    pub snapshot: Snapshot,
    /// Every thread's cumulative state-time totals, when a state source ran.
    pub states: Option<Sample>,
    /// The machine-wide figures.
    pub system: SystemFigures,
    /// The processes that exited since the previous reading (one per process, with its final
    /// figures), in the order the kernel sent them; empty when `exits_missing` says why.
    pub exits: Vec<Exit>,
    /// Exit records the kernel dropped since the previous reading (its buffer was full):
    /// processes that exited and are not in `exits`. From the taskstats source, the number
    /// of overruns (the kernel does not say how many records each lost: at least one).
    pub exits_dropped: u64,
    /// Why there is no exit source (not root, neither BPF nor taskstats, a recording from
    /// before exits were stored); `None` when one ran, so an empty `exits` means none exited.
    pub exits_missing: Option<String>,
    /// The machine and boot it was taken on (unknown parts `None`: a recording from before
    /// tasksnap kept them says nothing).
    pub host: HostIdentity,
    /// The host's cgroups with their own counters (`Host::cgroups`), when they were read:
    /// `None` when not (a recorder told not to, a recording from before tasksnap kept them).
    /// Read back from a recording, the records are in identity order (the v2 hierarchy's
    /// first, then v1's, each by path bytes).
    pub cgroups: Option<CgroupListing>,
}

impl Reading {
    /// A reading of `snapshot` alone: no thread states, no system figures, no exits (from an
    /// exit source that saw none), its host unknown, no cgroups.
    pub fn of(snapshot: Snapshot) -> Reading {
        Reading {
            snapshot,
            states: None,
            system: SystemFigures::default(),
            exits: Vec::new(),
            exits_dropped: 0,
            exits_missing: None,
            host: HostIdentity::default(),
            cgroups: None,
        }
    }

    /// The identities of this reading's exits. A process among them can also be a live row
    /// of the same reading: its exit record left the kernel when its last thread exited, but
    /// it stays in /proc (state Z) until its parent reaps it, and the walk that followed the
    /// drain saw it. A front end that counts a process's figures once (dump's rows, serve's
    /// group counters, top's exited view) takes the exit and skips that row; ps shows the
    /// zombie, as procps would have.
    pub fn exited_ids(&self) -> std::collections::HashSet<crate::TaskId> {
        self.exits.iter().map(|e| e.id).collect()
    }
}

/// What changed from one reading of a sampler to its next, for a consumer that keeps what it
/// made of the previous one (the history encoder compares only these rows with its key): a
/// task row or a thread's totals not listed are the previous reading's (a thread's totals
/// taken on in the same state: the time since went to its current state, and to its wait's
/// reason). Rows that went away may be listed (the sampler lists the tasks it knows left);
/// they are missing from the reading. A consumer that finds its rows from the list alone
/// checks that the counts add up (rows before + new - gone = rows now), as the encoder does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadingChanges {
    /// Task rows read again (or new, or given names, or gone) since the previous reading;
    /// `None`: every row may have changed (a whole pass, the first reading).
    pub tasks: Option<Vec<TaskId>>,
    /// Threads whose totals were read since the previous reading (changed, new, exited);
    /// `None`: every thread's were.
    pub threads: Option<Vec<TaskId>>,
}
