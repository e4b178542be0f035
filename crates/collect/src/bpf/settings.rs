//! The BPF backend's settings: the environment, read once when a collector is made, and the
//! caller's choices ([`BpfCollector::use_walk`](super::BpfCollector::use_walk),
//! [`use_lockless`](super::BpfCollector::use_lockless),
//! and whether it serves a live view, which takes its first pass as fast as the machine allows
//! and every later one as cheaply), and how many reader threads a pass may use
//! ([`pass_shards`], which the descriptor budget and the arena's size count too).

/// What the passes may do.
#[derive(Debug, Clone, Default)]
pub(super) struct Settings {
    /// `TASKSNAP_NO_WALK` was set: full passes keep to the iterator whatever the caller says
    /// (tests and benchmarks compare the two).
    no_walk_env: bool,
    /// Keep to the iterator even when the walk is there (`use_walk(false)`).
    pub walk_off: bool,
    /// Read every command line through the mmap lock (`TASKSNAP_NO_LOCKLESS`, or
    /// `use_lockless(false)`).
    pub lockless_off: bool,
    /// One reader thread per pass: for periodic refreshes CPU time matters more than the
    /// latency of one pass, so the sharded passes (each walks every task) are not used.
    pub low_cpu: bool,
    /// Made for a live view ([`super::BpfCollector::for_live_view`]): `low_cpu` is set after
    /// the first pass.
    pub live_view: bool,
}

impl Settings {
    /// The settings the environment gives.
    pub fn from_env() -> Settings {
        Settings {
            no_walk_env: std::env::var_os("TASKSNAP_NO_WALK").is_some(),
            walk_off: false,
            lockless_off: std::env::var_os("TASKSNAP_NO_LOCKLESS").is_some(),
            low_cpu: false,
            live_view: false,
        }
    }

    /// Whether full passes may use the walk when it is there.
    pub fn walk_allowed(&self) -> bool {
        !self.walk_off && !self.no_walk_env
    }
}

/// Reader threads for a pass: as many as cores, at most 4. Each walks every task but reads
/// the fields of its share only, which is where the time goes (cache misses in the task,
/// signal, cred and mm structs of 50,000 tasks).
pub fn pass_shards() -> usize {
    tasksnap_sys::cores().clamp(1, 4)
}
