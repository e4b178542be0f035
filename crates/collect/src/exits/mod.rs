//! Exit records: one [`Exit`](tasksnap_model::Exit) per process that exits, with the whole
//! group's final figures; [`Exits::drain`] hands over what arrived since the previous drain
//! and how many records were lost meanwhile. Front ends reach it through
//! [`Host::open_exits`](crate::Host::open_exits), and ask [`Exits::source`] which source runs.
//!
//! Two sources behind one interface, tried in this order by [`Exits::load`]:
//! - BPF (`source.rs`, mounted as `crate::exits_bpf` when this build has the BPF programs,
//!   else `stub.rs`, whose load says why there are none; chosen by the
//!   `tasksnap_bpf::select!` in lib.rs): a program at `sched_process_exit` (crates/bpf's
//!   `exits.bpf.c`) through a ring buffer. Root, Linux 6.16+ with BTF. Everything, the
//!   command line included.
//! - taskstats ([`taskstats`], over the generic netlink socket of [`netlink`]): the kernel's
//!   exit notifications (CONFIG_TASKSTATS), root (CAP_NET_ADMIN) in the initial pid
//!   namespace, any build. No command line, real ids only, times as received (its header
//!   says what it lacks).
//!
//! When neither runs, the error says both reasons ([`Error::ExitsUnavailable`]).
//!
//! What both sources share (their options, the reader's pid namespace, the CPU split, the
//! hand-off to the caller) is [`common`]'s.

pub mod common;
pub mod netlink;
pub mod taskstats;

pub use common::Options;

pub use crate::exits_bpf::BpfExits;
pub use taskstats::TaskstatsExits;

use tasksnap_model::ExitBatch;

use crate::error::Error;

/// Which source an [`Exits`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitSource {
    /// The BPF program at `sched_process_exit`.
    Bpf,
    /// The kernel's taskstats exit notifications.
    Taskstats,
}

impl ExitSource {
    /// Its name as front ends print it: "bpf", "taskstats".
    pub fn name(self) -> &'static str {
        match self {
            ExitSource::Bpf => "bpf",
            ExitSource::Taskstats => "taskstats",
        }
    }

    /// What a start-up line says of it: its name, and what it lacks.
    pub fn description(self) -> &'static str {
        match self {
            ExitSource::Bpf => "bpf",
            ExitSource::Taskstats => "taskstats, no command lines",
        }
    }

    /// Whether an exit's identity ([`tasksnap_model::Exit::id`]) is exact. Taskstats derives
    /// the start from the receipt time and may be a clock tick late: a caller that has the
    /// live processes gives the exit the identity of the one it matches
    /// ([`adopt_live_identities`]).
    pub fn exact_identity(self) -> bool {
        self == ExitSource::Bpf
    }
}

/// The exit source that runs.
#[derive(Debug)]
pub struct Exits {
    inner: Inner,
    /// Why the BPF program did not load, when [`Exits::load`] fell back to taskstats.
    bpf_refused: Option<String>,
}

#[derive(Debug)]
enum Inner {
    /// Boxed: the skeleton and ring buffer are large beside a socket and a thread handle.
    Bpf(Box<BpfExits>),
    Taskstats(TaskstatsExits),
}

impl Exits {
    /// The BPF source if it loads, else taskstats, else an error with both reasons.
    pub fn load(opts: Options) -> Result<Exits, Error> {
        let bpf = match Exits::load_bpf(opts) {
            Ok(e) => return Ok(e),
            Err(e) => strip(&e, "BPF accounting unavailable: "),
        };
        match Exits::load_taskstats(opts) {
            Ok(e) => Ok(Exits {
                bpf_refused: Some(bpf),
                ..e
            }),
            Err(ts) => Err(Error::ExitsUnavailable {
                bpf,
                taskstats: strip(&ts, "taskstats: "),
            }),
        }
    }

    /// The BPF source only.
    pub fn load_bpf(opts: Options) -> Result<Exits, Error> {
        Ok(Exits {
            inner: Inner::Bpf(Box::new(BpfExits::load(opts)?)),
            bpf_refused: None,
        })
    }

    /// The taskstats source only (what a host without BPF gets; tests call it directly).
    pub fn load_taskstats(opts: Options) -> Result<Exits, Error> {
        Ok(Exits {
            inner: Inner::Taskstats(TaskstatsExits::load(opts)?),
            bpf_refused: None,
        })
    }

    /// Which source runs.
    pub fn source(&self) -> ExitSource {
        match self.inner {
            Inner::Bpf(_) => ExitSource::Bpf,
            Inner::Taskstats(_) => ExitSource::Taskstats,
        }
    }

    /// Why the BPF program did not load, when [`Exits::load`] fell back to taskstats
    /// (`None` when BPF runs, or taskstats was asked for alone).
    pub fn bpf_refused(&self) -> Option<&str> {
        self.bpf_refused.as_deref()
    }

    /// How long loading took, ns.
    pub fn load_ns(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(b) => b.load_ns,
            Inner::Taskstats(t) => t.load_ns,
        }
    }

    /// The processes that exited since the previous drain (or the load), and how many exit
    /// records were lost meanwhile (BPF: records the full ring buffer refused; taskstats:
    /// socket overruns, each at least one record, and unreadable records).
    pub fn drain(&mut self) -> Result<ExitBatch, Error> {
        match &mut self.inner {
            Inner::Bpf(b) => b.drain(),
            Inner::Taskstats(t) => t.drain(),
        }
    }

    /// [`adopt_live_identities`] for a caller that keeps its processes otherwise: `leader_of`
    /// gives the identity of the live process with that tgid, if one was seen.
    pub fn adopt_identities(
        exits: &mut [tasksnap_model::Exit],
        leader_of: impl Fn(i32) -> Option<tasksnap_model::TaskId>,
    ) {
        for e in exits {
            let Some(live) = leader_of(e.id.tgid) else {
                continue;
            };
            if live.start_time_ns <= e.start_time_ns
                && e.start_time_ns - live.start_time_ns <= 1_000_000_000
            {
                e.id = live;
            }
        }
    }
}

/// An error's text without its variant's prefix, for a message that names the source itself.
fn strip(e: &Error, prefix: &str) -> String {
    let s = e.to_string();
    s.strip_prefix(prefix).map(str::to_string).unwrap_or(s)
}

/// Gives each exit whose identity is not exact ([`ExitSource::exact_identity`]) the
/// identity of the live process it is: the group leader of the same tgid in `tasks` (sorted
/// by tgid, tid), started no later than the exit's derived start and at most a second
/// before it (a pid reused since started after the exit, so it never matches).
pub fn adopt_live_identities(exits: &mut [tasksnap_model::Exit], tasks: &[tasksnap_model::Task]) {
    Exits::adopt_identities(exits, |tgid| leader_of(tasks, tgid));
}

/// The identity of the group leader of process `tgid` among `tasks` (sorted by tgid, tid).
pub fn leader_of(tasks: &[tasksnap_model::Task], tgid: i32) -> Option<tasksnap_model::TaskId> {
    tasks
        .binary_search_by_key(&(tgid, tgid), |t| (t.id.tgid, t.id.tid))
        .ok()
        .map(|i| tasks[i].id)
}
