//! What `tasksnap bench` times of the BPF collector ([`Host::bpf_bench`](crate::Host::bpf_bench)):
//! its own paths (the iterator or the walk, command lines with or without the mmap lock), which
//! only a benchmark names; every other front end gets the collector behind its `Host`.

use tasksnap_bpf::Unavailable;
use tasksnap_model::{Groups, Query, Snapshot, Task};

use crate::bpf::BpfCollector;
use crate::collector::Collector;
use crate::error::Error;

/// The BPF collector, loaded with command lines, as a benchmark drives it.
#[derive(Debug)]
pub struct BpfBench(BpfCollector);

impl BpfBench {
    /// Loads the collector with command lines (or opens the pinned programs).
    pub(crate) fn load() -> Result<BpfBench, Unavailable> {
        BpfCollector::with_cmdline(true).map(BpfBench)
    }

    /// How long loading (or opening the pinned programs) took, ns.
    pub fn load_ns(&self) -> u64 {
        self.0.load_ns
    }

    /// Whether the programs are a pinned set (`tasksnap pin`), opened rather than loaded.
    pub fn pinned(&self) -> bool {
        self.0.pinned_at.is_some()
    }

    /// Whether the collector has the walk (a pinned set of Linux 6.8 or later).
    pub fn has_walk(&self) -> bool {
        self.0.has_walk()
    }

    /// Whether full passes may use the walk when it is there, or keep to the iterator.
    pub fn use_walk(&mut self, on: bool) {
        self.0.use_walk(on);
    }

    /// Whether command lines may be read without the mmap lock, or all copied through it.
    pub fn use_lockless(&mut self, on: bool) {
        self.0.use_lockless(on);
    }

    /// Makes the walk's memory for snapshots of `groups` (before capabilities would go).
    pub fn prepare_arena(&mut self, groups: &Groups) {
        self.0.prepare_arena(groups);
    }

    /// The raw bytes of one pass with base (and `cred`/`stat` when asked) records: the cost
    /// of the iterator alone.
    pub fn raw_pass(&mut self, cred: bool, stat: bool) -> Result<usize, Error> {
        self.0.raw_pass(cred, stat)
    }

    /// A snapshot, as the collector takes it for any front end.
    pub fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.0.snapshot(query)
    }

    /// Hands a snapshot's tasks back for the next one to reuse.
    pub fn recycle(&mut self, tasks: Vec<Task>) {
        self.0.recycle(tasks);
    }
}
