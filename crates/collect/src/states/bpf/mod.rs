//! The exact source: loads states.bpf.c (programs on the sched_switch and sched_process_exit
//! tracepoints, and a task iterator), and turns one iterator pass, the exit ring buffer and
//! the off-CPU stack hash into a [`Sample`](tasksnap_model::states::Sample).
//!
//! Layouts come from states.h through the generated skeleton; nothing is restated here. The
//! program is loaded once per [`BpfSource`] and unloaded when it is dropped; nothing is pinned.
//!
//! Pids: the records carry each thread's numbers in the reader's pid namespace (what its /proc
//! and ps show), and only threads of that namespace (states.bpf.c, `reader_ns`); `-p` pids are
//! that namespace's too. The why hash is keyed by the global tid (`task->pid`), which the
//! records also carry for the join.
//!
//! Order of the reads in [`BpfSource::sample`](crate::StateSource::sample): the stack hash
//! first, then the iterator pass, whose records carry the blocked time of each thread's last
//! wait that is not in the hash yet (it goes in at the thread's next switch-out). A wait added
//! between the two reads is then in this sample's totals and in the next sample's reasons (a
//! lag of one interval), never counted twice.
//!
//! This module holds what every build has ([`Options`], the privilege check); the source
//! itself is `source.rs` when this build has the BPF programs, else `stub.rs`, whose
//! [`BpfSource::load`] says why there are none (chosen once for the whole crate, with the
//! BPF collector, by the `tasksnap_bpf::select!` in lib.rs).

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::states::Filter;

pub use crate::states_bpf::BpfSource;

/// Settings of the BPF source.
#[derive(Debug, Clone)]
pub struct Options {
    /// Which threads to report.
    pub filter: Filter,
    /// Keep the stacks of S waits too (D waits always).
    pub track_sleep: bool,
    /// Name what held the CPU of a thread that waited for one: each CPU logs its last runs
    /// and a wait's overlap with them is kept per (waiter, holder), given as run-queue
    /// reasons. Costs a few stores at every switch.
    pub track_holders: bool,
    /// Where to read symbols (normally /proc/kallsyms).
    pub kallsyms: PathBuf,
    /// The /proc to read stacks of waits that began before tracking from.
    pub proc_root: PathBuf,
    /// Seed every thread of the host at load (one pass over every task). Without it a
    /// thread is seeded the first time a sample reads it (the iterator creates its
    /// storage), which is what `tasksnap top` wants: it samples the processes on screen only.
    pub seed_all: bool,
    /// Read each sample incrementally (every thread of the host only, no filter): the
    /// threads that changed since the last sample, the others taken on in their state (see
    /// source.rs). What a sampler that reads every interval wants; costs a program run at
    /// each wakeup besides the one at each switch.
    pub incremental: bool,
    /// With `incremental`: hand out the sample the next one starts from instead of a copy
    /// of it (one copy of every thread's totals, not two). The caller gives it back as it was
    /// ([`StateSource::recycle`](crate::collector::StateSource::recycle)) before the next
    /// sample; one not given back makes the next sample a whole pass. What a sampler that
    /// keeps one reading wants.
    pub lend: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            filter: Filter::default(),
            track_sleep: false,
            track_holders: false,
            kallsyms: Path::new(tasksnap_sys::roots::PROC).join("kallsyms"),
            proc_root: PathBuf::from(tasksnap_sys::roots::PROC),
            seed_all: true,
            incremental: false,
            lend: false,
        }
    }
}

/// Whether the caller may load the accounting: root only ([`tasksnap_bpf::privileged`]).
/// Like the task-iterator backend ([`crate::bpf`]), it sees every thread regardless of
/// procfs permission checks (hidepid, ptrace access), so a non-root caller holding CAP_BPF
/// and CAP_PERFMON would see more than /proc shows it; such callers get the /proc fallback.
pub fn privileged() -> Result<(), Error> {
    tasksnap_bpf::privileged(
        "the BPF accounting sees every thread regardless of /proc permissions, so tasksnap \
         loads it only for root",
    )
    .map_err(|why| Error::BpfUnavailable(why.to_string()))
}

/// Whether the /proc at `root` belongs to the caller's pid namespace: its `self` names the
/// caller by the number getpid() gives (a /proc mounted for another namespace, such as the
/// host's inside `unshare --pid --fork`, names it otherwise, or not at all).
pub fn proc_is_readers(root: &std::path::Path) -> bool {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    std::fs::read_link(root.join("self"))
        .ok()
        .and_then(|p| p.to_str()?.parse::<i32>().ok())
        == Some(me)
}
