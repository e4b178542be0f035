//! The BPF backend of a build without the BPF programs (no clang, or TASKSNAP_NO_BPF set at
//! build time): the surface of `bpf/` (chosen in lib.rs by `tasksnap_bpf::select!`), whose
//! constructors say why there is no backend. No [`BpfCollector`] is ever made.

use tasksnap_model::{Groups, PassReport, Query, Snapshot};

use crate::collector::Collector;
use crate::error::Error;
use crate::collector::LiveCollector;

pub use tasksnap_bpf::{quiet_libbpf, Unavailable};


/// Whether the caller may load BPF programs: root only (see the real backend).
pub fn privileged() -> Result<(), Unavailable> {
    tasksnap_bpf::privileged(
        "a BPF task iterator would bypass procfs's permission checks, so tasksnap uses it \
         only for root",
    )
}

/// Root or not, this build cannot load anything: why.
fn not_built() -> Result<BpfCollector, Unavailable> {
    privileged()?;
    tasksnap_bpf::built("the BPF backend")?;
    Err(Unavailable::Failed(
        "this build has BPF programs, but this crate was built without them".into(),
    ))
}

/// The BPF collector: never made in this build.
#[derive(Debug)]
pub struct BpfCollector {
    /// Why command lines come from /proc, when they do.
    pub cmdline_from_procfs: Option<String>,
    /// Why the last full pass did not use the walk, when it did not.
    pub walk_problem: Option<String>,
    /// How long loading (or opening the pinned programs) took, ns.
    pub load_ns: u64,
    /// Where the pinned programs came from, when they were pinned ones.
    pub pinned_at: Option<std::path::PathBuf>,
    /// Why a pinned set that is there was not used.
    pub pin_problem: Option<String>,
    never: std::convert::Infallible,
}

impl BpfCollector {
    #[cfg(any(test, feature = "testing"))]
    /// Says why there is no BPF backend.
    pub fn new() -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    /// Says why there is no BPF backend.
    pub fn with_cmdline(_cmdline: bool) -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    /// Says why there is no BPF backend.
    pub fn for_groups(_groups: &tasksnap_model::Groups) -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    /// Says why there is no BPF backend.
    pub fn for_live_view() -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    /// Says why there is no BPF backend (so no query service).
    pub fn for_service() -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Says why there is no BPF backend.
    pub fn load_fresh(_cmdline: bool, _walk: bool) -> Result<BpfCollector, Unavailable> {
        not_built()
    }

    /// Says why there is nothing to pin.
    pub fn pin() -> Result<std::path::PathBuf, Unavailable> {
        not_built().map(|_| std::path::PathBuf::new())
    }

    /// Nothing was pinned by this build.
    pub fn unpin() -> Result<bool, Unavailable> {
        Ok(false)
    }

    /// No pinned set is usable without the backend.
    pub fn pinned_available() -> bool {
        false
    }

    /// Unreachable: no collector is made.
    pub fn use_walk(&mut self, _on: bool) {
        match self.never {}
    }

    /// Unreachable: no collector is made.
    pub fn use_lockless(&mut self, _on: bool) {
        match self.never {}
    }

    /// Unreachable: no collector is made.
    pub fn has_walk(&self) -> bool {
        match self.never {}
    }

    /// Unreachable: no collector is made.
    pub fn prepare_arena(&mut self, _groups: &Groups) {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Unreachable: no collector is made.
    pub fn last_pass(&self) -> String {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Unreachable: no collector is made.
    pub fn change_set_pid_max(&mut self, _pid_max: u32) {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Unreachable: no collector is made.
    pub fn list_any_change_set(&mut self) {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Unreachable: no collector is made.
    pub fn last_listed(&self) -> Option<usize> {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Unreachable: no collector is made.
    pub fn change_set_problem(&self) -> Option<&str> {
        match self.never {}
    }

    /// Unreachable: no collector is made.
    pub fn raw_pass(&mut self, _cred: bool, _stat: bool) -> Result<usize, Error> {
        match self.never {}
    }
}

impl Collector for BpfCollector {
    fn snapshot(&mut self, _query: &Query) -> Result<Snapshot, Error> {
        match self.never {}
    }

    fn fill(&self, _ids: &[(i32, i32)], _groups: Groups) -> Result<crate::collector::Filled, Error> {
        match self.never {}
    }

    fn report(&self) -> PassReport {
        match self.never {}
    }
}

impl LiveCollector for BpfCollector {
    fn changes(&mut self, _query: &Query) -> Result<crate::collector::Changes, Error> {
        match self.never {}
    }

    fn next_changes_full(&self, _query: &Query) -> bool {
        match self.never {}
    }
}
