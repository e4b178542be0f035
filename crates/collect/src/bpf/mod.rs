//! The BPF backend: one pass of a task iterator (`iter/task`) returns a binary record per task
//! (layout in `record.h`, the single source of truth), instead of opening, reading and
//! parsing several /proc files per task.
//!
//! What the kernel gives the iterator directly: identity, base, credentials, CPU times,
//! faults, sizes and scheduler counters. What it does not (command lines, the executable, I/O
//! counters, wait channels, exact RSS, supplementary groups, the names of workqueue threads)
//! is filled from procfs for the tasks that need it ("valid bits": a group is either exact or
//! read from /proc, never left wrong). Tasks /proc shows that the iterator did not return are
//! read from /proc too (see snapshot.rs).
//!
//! The program is loaded once per process; every pass opens a fresh iterator file.
//!
//! One file per job; this one owns the [`BpfCollector`] value (its parts, how it is made,
//! its public knobs):
//! - `programs.rs`: the programs as descriptors, loaded or pinned, and the descriptor budget;
//! - `settings.rs`: the environment, read once, and the reader threads of a pass;
//! - `passes.rs`: one pass over the tasks (iterator, walk into the arena, shards);
//!
//! Files depend one way: settings, decode and lap on none of the others; programs on
//! settings; arena on programs; passes on arena; cmdlines on passes; changes on passes;
//! snapshot on cmdlines and changes; each on snapshot; collector on cmdlines and programs;
//! changeset on none (changes uses it); pass_index on decode and arena (snapshot, changes,
//! cmdlines and collector use it).
//! - `arena.rs`: the walk's mapped arena;
//! - `cmdlines.rs`: how command lines are read (one plan decided before the pass);
//! - `decode.rs`: records to tasks;
//! - `pass_index.rs`: what a fill needs of the last pass's tasks (cgroups read once per
//!   css_set; the command-line copy's requests);
//! - `snapshot.rs`: a snapshot from a pass (reconciling with /proc, planning and merging the
//!   groups filled from it);
//! - `each.rs`: a one-shot snapshot handed over one task at a time;
//! - `lap.rs`: the phases of a snapshot timed for `-v`;
//! - `changes.rs`: a live view's changed-only reads;
//! - `changeset.rs`: a live view's change set (which processes to read again);
//! - `collector.rs`: `impl Collector for BpfCollector`.
//!
//! The BPF programs themselves, their loader and pins are in tasksnap-bpf. This module is
//! only compiled when the build has them (lib.rs); `bpf_stub.rs` stands in otherwise.

pub mod arena;
mod changes;
mod changeset;
mod cmdlines;
mod collector;
mod decode;
mod each;
mod kept;
mod lap;
mod pass_index;
mod passes;
pub mod programs;
mod settings;
mod snapshot;

pub use tasksnap_bpf::{quiet_libbpf, Unavailable};

use tasksnap_model::Group;
use crate::procfs::ProcfsCollector;
use programs::{enough_descriptors, Cmdlines};
use settings::Settings;

/// Whether the caller may load BPF programs: root only ([`tasksnap_bpf::privileged`] says
/// why): an iterator bypasses procfs's permission checks (hidepid, ptrace access to other
/// users' command lines), so a non-root caller holding CAP_BPF and CAP_PERFMON would see
/// more than /proc shows it. Until the backend filters for that, such a caller gets the
/// procfs backend.
pub fn privileged() -> Result<(), Unavailable> {
    tasksnap_bpf::privileged(
        "a BPF task iterator would bypass procfs's permission checks, so tasksnap uses it \
         only for root",
    )
}

/// The iterator programs and the procfs reader used to fill in what they cannot give.
pub struct BpfCollector {
    /// The programs (loaded or pinned).
    progs: programs::Programs,
    /// Reads what the programs cannot give.
    procfs: ProcfsCollector,
    /// The environment and the caller's choices ([`BpfCollector::use_walk`], ...).
    settings: Settings,
    /// The last pass's output, the arena and the memory kept for the next snapshot.
    out: kept::Output,
    /// The command-line copy's state and what the last snapshot's lines came from.
    cmd: kept::State,
    /// A live view's state between [`crate::Collector::changes`] calls.
    live: kept::Live,
    /// The tasks of the last pass, for the fills after it (pass_index.rs).
    pass_index: pass_index::PassIndex,
    /// Why command lines come from /proc, when they do.
    pub cmdline_from_procfs: Option<String>,
    /// Why the last full pass did not use the walk, when it did not.
    pub walk_problem: Option<String>,
    /// How long loading (or opening the pinned programs) took, ns (reported by `-v` and
    /// `bench`).
    pub load_ns: u64,
    /// Where the pinned programs came from, when they were pinned ones.
    pub pinned_at: Option<std::path::PathBuf>,
    /// Why a pinned set that is there was not used.
    pub pin_problem: Option<String>,
    /// What a fresh load was asked for: (command lines, the rare blocks' program); `None`
    /// for a pinned set, which opening again would give again ([`crate::Collector::serves`]).
    loaded_for: Option<(bool, bool)>,
}

debug_showing!(BpfCollector, load_ns);

impl BpfCollector {
    #[cfg(any(test, feature = "testing"))]
    /// Loads the iterator, or says why it cannot be.
    pub fn new() -> Result<BpfCollector, Unavailable> {
        Self::with_cmdline(false)
    }

    /// Loads the iterator and, when `cmdline`, the sleepable command-line iterator too (when
    /// that one cannot load, command lines come from /proc and `cmdline_from_procfs` says why).
    pub fn with_cmdline(cmdline: bool) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(false)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable::Failed(e.to_string()))?;
        Self::load_with(procfs, cmdline.into(), false, false)
    }

    /// For a query's `groups`: [`Self::with_cmdline`] for its command lines, with the
    /// iterator that writes the signal and namespace blocks when it asks for those (a
    /// pinned set has not got it: /proc gives them then).
    pub fn for_groups(groups: &tasksnap_model::Groups) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(false)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable::Failed(e.to_string()))?;
        Self::load_with(procfs, groups.has(Group::Cmdline).into(), false, decode::wants_rare(groups))
    }

    /// For the query service (`tasksnap serve`'s socket): every program a pass of any groups
    /// may use (the walk, the command-line copy, the rare blocks) in one load, paid once for
    /// the service's life; its passes keep to the fastest shape (sharded), as `ps`'s do.
    pub fn for_service() -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(true)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable::Failed(e.to_string()))?;
        Self::load_with(procfs, Cmdlines::All, true, true)
    }

    /// For a live view (`top`): the pinned programs, else a fresh load that includes the
    /// walk (its verification, ~20 ms, is paid once; loading it in the same load as the
    /// rest parses the kernel's BTF once, before the view holds any rows).
    pub fn for_live_view() -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(true)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable::Failed(e.to_string()))?;
        // With the command-line copy: the fill of new processes copies their lines. Its
        // room in the arena is there from the first pass (which may come before
        // `prepare`): made only then, a second arena would replace the first, both mapped
        // for a moment (`top`'s peak RSS at 50,000 processes went from 67 to 91 MB).
        let mut c = Self::load_with(procfs, Cmdlines::Copy, true, false)?;
        c.settings.live_view = true;
        c.cmd.region_wanted = true;
        Ok(c)
    }

    /// The pinned programs when `tasksnap pin` left a usable set, else a fresh load (with
    /// the walk when `walk`).
    fn load_with(
        procfs: ProcfsCollector,
        cmdline: Cmdlines,
        walk: bool,
        rare: bool,
    ) -> Result<BpfCollector, Unavailable> {
        // A pinned set that cannot be used (being replaced or removed right now, or not
        // root-only: never trusted then) is passed over for a fresh load, and `-v` says why.
        let (progs, pin_problem) = match programs::Programs::open_pinned() {
            Ok(Some(p)) => (p, None),
            Ok(None) => (programs::Programs::load(cmdline, walk, rare)?, None),
            Err(why) => (
                programs::Programs::load(cmdline, walk, rare)?,
                Some(why.to_string()),
            ),
        };
        let mut c = Self::from_programs(procfs, progs, cmdline, rare);
        c.pin_problem = pin_problem;
        Ok(c)
    }

    fn from_programs(
        procfs: ProcfsCollector,
        progs: programs::Programs,
        cmdline: Cmdlines,
        rare: bool,
    ) -> BpfCollector {
        let loaded_for = match &progs.origin {
            // Command-line snapshots take the sleepable iterator (or the lines walk).
            programs::Origin::Loaded { .. } => Some((cmdline == Cmdlines::All, rare)),
            programs::Origin::Pinned { .. } => None,
        };
        let (load_ns, pinned_at) = match &progs.origin {
            programs::Origin::Loaded { load_ns } => (*load_ns, None),
            programs::Origin::Pinned { dir, open_ns } => (*open_ns, Some(dir.clone())),
        };
        let cmdline_from_procfs = if cmdline != Cmdlines::All {
            Some("not asked for".into())
        } else {
            progs.cmdline_unavailable.clone()
        };
        let walk_problem = progs.walk_unavailable.clone();
        BpfCollector {
            progs,
            procfs,
            settings: Settings::from_env(),
            out: kept::Output::default(),
            cmd: kept::State::default(),
            live: kept::Live {
                set_off: std::env::var_os("TASKSNAP_NO_CHANGE_SET").is_some(),
                ..kept::Live::default()
            },
            pass_index: Default::default(),
            cmdline_from_procfs,
            walk_problem,
            load_ns,
            pinned_at,
            pin_problem: None,
            loaded_for,
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// Loads the programs afresh, whether or not a pinned set is there, with the walk when
    /// `walk` (tests and benchmarks compare the two paths), and the iterator that writes
    /// the signal and namespace blocks.
    pub fn load_fresh(cmdline: bool, walk: bool) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(walk)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable::Failed(e.to_string()))?;
        let progs = programs::Programs::load(cmdline.into(), walk, true)?;
        Ok(Self::from_programs(procfs, progs, cmdline.into(), true))
    }

    /// Whether full passes may use the walk when it is there (the default), or must keep to
    /// the iterator (`bench` times both in one run).
    pub fn use_walk(&mut self, on: bool) {
        self.settings.walk_off = !on;
    }

    /// Whether command lines may be read without the mmap lock (the default, on x86-64),
    /// or must all be copied through it (tests and benchmarks compare the two;
    /// TASKSNAP_NO_LOCKLESS=1 sets it off too).
    pub fn use_lockless(&mut self, on: bool) {
        self.settings.lockless_off = !on;
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether a live view's refreshes may read only the processes its change set names
    /// (the default, when the kernel takes its programs), or must walk every task to find
    /// what ran (benchmarks compare the two; TASKSNAP_NO_CHANGE_SET=1 sets it off too).
    pub fn use_change_set(&mut self, on: bool) {
        self.live.set_off = !on;
        if !on {
            self.live.set = None;
            self.live.set_tried = false;
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// Makes the change set's bitmap hold pids below `pid_max` only (a test forces its
    /// overflow with it); takes effect at its load, before the first whole pass.
    pub fn change_set_pid_max(&mut self, pid_max: u32) {
        self.live.set_pid_max = Some(pid_max);
    }

    #[cfg(any(test, feature = "testing"))]
    /// Reads a change set of any size by pid list (up to what one request chunk holds),
    /// however many of the known threads it names: a test on a small host, where a busy
    /// minute may name a quarter of them, checks the reads by list.
    pub fn list_any_change_set(&mut self) {
        self.live.list_any = true;
    }

    #[cfg(any(test, feature = "testing"))]
    /// How many processes the last refresh read by the change set's list, `None` when it
    /// walked (or was a whole pass).
    pub fn last_listed(&self) -> Option<usize> {
        self.live.delta.as_ref().and_then(|d| d.listed)
    }

    #[cfg(any(test, feature = "testing"))]
    /// Why a live view has no change set, when it has none (it walks to find what ran).
    pub fn change_set_problem(&self) -> Option<&str> {
        self.live.set_problem.as_deref()
    }

    /// Whether this collector has the walk (a pinned set of Linux 6.8 or later).
    pub fn has_walk(&self) -> bool {
        self.progs.walker.is_some()
    }

    /// Whether a pinned set of this build's programs is there for the caller (root) to use.
    pub fn pinned_available() -> bool {
        privileged().is_ok() && programs::pin_dir().is_dir()
    }

    /// Loads the programs afresh and pins them (root only) so that later runs open them
    /// instead of loading: `tasksnap pin`. Returns the pin directory.
    pub fn pin() -> Result<std::path::PathBuf, Unavailable> {
        privileged()?;
        programs::Programs::load(Cmdlines::All, true, false)?.pin()
    }

    /// Removes every pinned set (`tasksnap unpin`); true when there was one.
    pub fn unpin() -> Result<bool, Unavailable> {
        privileged()?;
        // The slot locks of the pinned arenas go too (a run holding one keeps its lock).
        // Only in a directory of root's that nobody else may write to, never through a link.
        if let Ok(dir) = tasksnap_safefile::Dir::open_private(std::path::Path::new(arena::LOCK_DIR)) {
            // Only the locks: the query socket of a running `tasksnap serve` lives there too.
            for name in dir.names().unwrap_or_default() {
                let n = name.as_encoded_bytes();
                if n.starts_with(b"arena-") && n.ends_with(b".lock") {
                    let _ = dir.remove(&name);
                }
            }
        }
        match programs::remove_pins(std::path::Path::new(programs::PIN_ROOT)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Unavailable::Failed(format!("{}: {e}", programs::PIN_ROOT))),
        }
    }
}
