//! Collectors: the code that answers a [`Query`] with a [`Snapshot`].
//!
//! A collector owns its data source and nothing else: it knows how to read tasks, not how to
//! show them. [`procfs::ProcfsCollector`] reads `/proc` (or any tree laid out like it, which is
//! how tests feed it fake kernels).
#![deny(missing_docs)]

mod blocked;
// The one place the no-BPF build differs: without the BPF programs (no clang, or
// TASKSNAP_NO_BPF at build time), `bpf` is a stub whose constructors say why.
tasksnap_bpf::select! {
    built {
        pub mod bpf;
    }
    missing {
        #[path = "bpf_stub.rs"]
        pub mod bpf;
    }
}
pub mod caps;
pub mod choice;
pub mod procfs;
pub mod system;
/// The raw system calls live in the reading layer; this alias keeps `crate::sys` paths (the
/// BPF modules use them) pointing there.
use tasksnap_procfs::sys;

pub use tasksnap_model::{Query, Snapshot};

/// A live view's [`Collector::changes`] is a whole pass at least once in this many calls
/// (both backends: see `bpf/changes.rs` and `procfs/live.rs`).
pub const CHANGES_FULL_EVERY: u32 = 20;

/// The number of tasks (threads) on the system: the denominator of /proc/loadavg's 4th field.
/// (Here, not in `choice`, so that the backends do not depend on the module that chooses
/// between them.)
pub fn task_count(proc_root: &std::path::Path) -> Option<u64> {
    system::load_averages(proc_root)?.tasks
}

/// What can make a whole collection fail. Per-task trouble (a task exiting mid-read, a file
/// the caller may not read) is never an error: it is counted in [`tasksnap_model::SnapshotStats`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The procfs root could not be opened or listed.
    #[error("cannot read {path}: {source}")]
    Root {
        /// The root directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A system facility the collector needs is missing.
    #[error("{0}")]
    Unsupported(String),
    /// Something every read needs ran out even after the collector closed every descriptor
    /// it held: descriptor numbers under the process's open-files limit (EMFILE), the
    /// system's open files (ENFILE) or kernel memory (ENOMEM). The tasks it could not open
    /// are not "denied": a listing without them would be silently short, so the whole
    /// collection fails instead.
    #[error("{what}: {error}{hint}")]
    Exhausted {
        /// What could not be opened or read.
        what: String,
        /// The error (EMFILE, ENFILE or ENOMEM).
        error: std::io::Error,
        /// What to do about it, when something can be said (the open-files limit in force).
        hint: String,
    },
}

impl Error {
    /// An [`Error::Exhausted`] for `what`, saying the open-files limit when the error is
    /// EMFILE.
    pub fn exhausted(what: impl Into<String>, error: std::io::Error) -> Error {
        let hint = if error.raw_os_error() == Some(libc::EMFILE) {
            format!(
                " (the open-files limit, RLIMIT_NOFILE, is {}: raise it with `ulimit -n`)",
                sys::nofile_limit()
            )
        } else {
            String::new()
        };
        Error::Exhausted {
            what: what.into(),
            error,
            hint,
        }
    }
}

/// What [`Collector::changes`] found since its previous call.
#[derive(Debug)]
pub struct Changes {
    /// Every task the query selects when `full`; else only the tasks that changed or
    /// appeared since the previous call (the tasks of a process whose records changed, in
    /// the shape the query asks for).
    pub snapshot: Snapshot,
    /// True when `snapshot` has every task: the caller replaces what it kept.
    pub full: bool,
    /// Threads gone since the previous call (when not `full`).
    pub gone: Vec<tasksnap_model::TaskId>,
}

/// What [`Collector::changes_into`] found, besides the tasks it handed over.
#[derive(Debug, Clone, Default)]
pub struct ChangeSummary {
    /// True when every task the query selects was handed over.
    pub full: bool,
    /// Threads gone since the previous call (when not `full`).
    pub gone: Vec<tasksnap_model::TaskId>,
    /// Tasks handed over.
    pub tasks: usize,
}

/// Something that answers queries.
pub trait Collector {
    /// A short name for messages and snapshots ("procfs", "bpf").
    fn name(&self) -> &'static str;
    /// Collects the tasks `query` selects, with the groups it asks for.
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error>;
    /// For periodic refreshes (`top`): CPU time matters more than the latency of one
    /// snapshot, so work that only buys latency by repeating itself on several cores (the
    /// BPF backend's sharded passes each walk every task) is not done.
    fn prefer_low_cpu(&mut self) {}
    /// Gets ready for snapshots of `groups` while the caller still holds the privileges it
    /// started with (the BPF backend creates the memory its walk writes into, which needs
    /// CAP_BPF); called before capabilities are dropped. Failing here is not an error: the
    /// snapshots then take a slower path.
    fn prepare(&mut self, _groups: &tasksnap_model::Groups) {}
    /// Hands a snapshot's tasks back once they are no longer needed, so that the next
    /// snapshot can reuse the vector's memory (a periodic refresh then does not fault in and
    /// unmap tens of megabytes every time). Dropping them is always fine too.
    fn recycle(&mut self, tasks: Vec<tasksnap_model::Task>) {
        drop(tasks);
    }
    /// How the last snapshot was taken, for `--verbose` (e.g. which BPF pass ran and why).
    fn last_pass(&self) -> String {
        String::new()
    }
    /// Where the last snapshot's time went, phase by phase, for `--verbose` (empty when the
    /// backend does not time its phases).
    fn last_phases(&self) -> String {
        String::new()
    }
    /// For a live view that keeps every task between refreshes: what changed since the last
    /// call. The BPF backend's walk can skip the processes that did not change, in the
    /// kernel; the default takes a whole snapshot every time.
    fn changes(&mut self, query: &Query) -> Result<Changes, Error> {
        Ok(Changes {
            snapshot: self.snapshot(query)?,
            full: true,
            gone: Vec::new(),
        })
    }
    /// [`Collector::changes`], handing each task to `sink` instead of collecting them: a
    /// whole pass then never holds every task at once (the BPF walk's; the default
    /// collects and then hands them over).
    fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<ChangeSummary, Error> {
        let ch = self.changes(query)?;
        let summary = ChangeSummary {
            full: ch.full,
            gone: ch.gone,
            tasks: ch.snapshot.tasks.len(),
        };
        for t in ch.snapshot.tasks {
            sink(t);
        }
        Ok(summary)
    }
    /// Whether the next [`Collector::changes`] with `query` will be a whole snapshot: a
    /// caller that rebuilds everything from one can free what it holds first (the peak
    /// memory of a live view is a whole pass).
    fn next_changes_full(&self, _query: &Query) -> bool {
        true
    }
    /// Like [`Collector::prepare`], for a live view about to call [`Collector::changes`]
    /// for a while: loads what makes those calls cheap (the BPF backend's walk, when no
    /// pinned set brought it) while the caller still holds its privileges.
    fn prepare_live(&mut self, groups: &tasksnap_model::Groups) {
        self.prepare(groups);
    }
}
