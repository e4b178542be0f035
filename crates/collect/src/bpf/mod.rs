//! The BPF backend: one pass of a task iterator (`iter/task`) returns a binary record per task
//! (layout in `record.h`, the single source of truth), instead of opening, reading and
//! parsing several /proc files per task.
//!
//! What the kernel gives the iterator directly: identity, base, credentials, CPU times,
//! faults, sizes and scheduler counters. What it does not (command lines, the executable, I/O
//! counters, wait channels, exact RSS, supplementary groups, the names of workqueue threads)
//! is filled from procfs for the tasks that need it ("valid bits": a group is either exact or
//! read from /proc, never left wrong). Tasks /proc shows that the iterator did not return are
//! read from /proc too (see [`BpfCollector::snapshot`]).
//!
//! The program is loaded once per process; every pass opens a fresh iterator file.

pub mod arena;
mod changes;
pub use crate::CHANGES_FULL_EVERY;
mod decode;
pub mod programs;

use std::collections::HashMap;

use tasksnap_model::{Groups, Query, Selector, Snapshot, SnapshotStats};

use crate::procfs::ProcfsCollector;
use crate::{sys, Collector, Error};

use tasksnap_bpf::skel::task_iter as skel;

/// `cmdline_how` of the copy by pid list.
const CMDLINES_COPIED: &str = "copied by pid list";
/// `cmdline_how` of lines read by the walk (and what it left copied by pid list).
const CMDLINES_WALKED: &str = "from the walk";

/// How many tasks may be missing from a pass (forks and exits while it runs) before the
/// /proc listing is consulted to find them.
const RECONCILE_SLACK: u64 = 64;

/// The command-line pass is given up, and /proc used instead, when one of its threads has
/// been blocked this long without running in between: it is queued on one target's mmap
/// lock (the procfs reader gives up one read at the same deadline). Blocked time, not wall
/// time: on a busy host the pass may take long and still be making progress (issue #16; see
/// crate::blocked).
const CMDLINE_PASS_STUCK: std::time::Duration = std::time::Duration::from_millis(20);

/// ... or when one of its threads has been blocked this long in all; and, when its threads
/// cannot be looked at, after this much wall time (the deadline it had before).
const CMDLINE_PASS_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// How often the caller looks at a command-line pass's threads while it waits for it.
const CMDLINE_PASS_TICK: std::time::Duration = std::time::Duration::from_millis(5);

/// A command-line pass under way (it runs while the main pass is read and decoded).
struct CmdlinePass {
    /// Raw output, one buffer per shard, decoded by the caller's thread.
    rx: std::sync::mpsc::Receiver<std::io::Result<Vec<Vec<u8>>>>,
    /// When it started (CLOCK_MONOTONIC ns).
    started_ns: u64,
    /// The threads doing it, for [`CmdlinePass::finish`]'s looks.
    threads: std::sync::Arc<crate::blocked::Threads>,
    /// Which program ran: the sleepable iterator or the copy by pid list.
    copy: bool,
}

/// How a command-line pass ended.
enum PassEnd {
    /// Its command lines by tgid.
    Lines(HashMap<i32, Vec<u8>>),
    /// Given up: a thread was blocked past the deadline (counted as a command-line timeout).
    Stuck,
    /// It failed (no descriptor for its iterator files, say): /proc reads them instead.
    Failed,
}

impl CmdlinePass {
    fn new(rx: std::sync::mpsc::Receiver<std::io::Result<Vec<Vec<u8>>>>, copy: bool) -> Self {
        CmdlinePass {
            rx,
            started_ns: sys::clock_ns(libc::CLOCK_MONOTONIC),
            threads: Default::default(),
            copy,
        }
    }

    /// Waits for its command lines, looking at its threads every few ms: it is given up
    /// when one of them is stuck (see [`CMDLINE_PASS_STUCK`]); the caller then reads /proc,
    /// where a watchdog abandons the one read that blocks.
    fn finish(self) -> PassEnd {
        let mut watch = crate::blocked::PassWatch::new(
            self.started_ns,
            CMDLINE_PASS_STUCK.as_nanos() as u64,
            CMDLINE_PASS_DEADLINE.as_nanos() as u64,
        );
        loop {
            match self.rx.recv_timeout(CMDLINE_PASS_TICK) {
                Ok(Ok(bufs)) => {
                    let mut out = HashMap::new();
                    for b in bufs {
                        if self.copy {
                            decode::cmd_chunk(&b, &mut out);
                        } else {
                            out.extend(decode::cmdlines(&b));
                        }
                    }
                    return PassEnd::Lines(out);
                }
                Ok(Err(_)) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return PassEnd::Failed
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            if watch.stuck(&self.threads.list(), now, crate::blocked::look) {
                return PassEnd::Stuck;
            }
        }
    }
}

pub use tasksnap_bpf::{quiet_libbpf, Unavailable};

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

/// Descriptors a loaded set of programs keeps open (programs, maps, links, BTF, and the
/// duplicates [`programs::Programs`] holds): 20 here without the walk and about 30 with it
/// (strace of `tasksnap ps -ef` and `tasksnap top`, Linux 6.18, libbpf 1.5), with some margin.
const DESCRIPTORS_LOADED: u64 = 22;
const DESCRIPTORS_LOADED_WITH_WALK: u64 = 32;

/// Descriptors a snapshot needs on top of the loaded programs, at most: an iterator file per
/// shard of the pass and of the command-line pass, the command-line pass's duplicates of the
/// program descriptors (`Programs::shared`, up to 8), and the few files the caller's thread
/// reads meanwhile (/proc/loadavg, the /proc listing, a procfs read of pid 1 on the caller's
/// thread). The procfs readers that fill in the rest have tables of their own.
fn descriptors_for_a_pass() -> u64 {
    let shards = {
        programs::pass_shards()
    };
    (shards + sys::cores().clamp(1, 8)) as u64 + 8 + 4
}

/// Whether this process can open the descriptors the backend needs (loading, with the walk
/// when `walk`, then a pass) under its open-files limit. Without them a pass would fail
/// half-way, or libbpf would (EMFILE, with its own messages on stderr): the backend is then
/// unavailable, with the reason, and `auto` uses procfs.
fn enough_descriptors(walk: bool) -> Result<(), Unavailable> {
    let loaded = if walk {
        DESCRIPTORS_LOADED_WITH_WALK
    } else {
        DESCRIPTORS_LOADED
    };
    tasksnap_bpf::loader::enough_descriptors(loaded + descriptors_for_a_pass(), sys::nofile_limit())
}

/// The iterator programs and the procfs reader used to fill in what they cannot give.
pub struct BpfCollector {
    progs: programs::Programs,
    /// Why command lines come from /proc, when they do.
    pub cmdline_from_procfs: Option<String>,
    procfs: ProcfsCollector,
    buf: Vec<u8>,
    /// Where the walk writes (created before capabilities are dropped: see
    /// [`Collector::prepare`]).
    arena: Option<arena::Arena>,
    /// The shards of the last pass when it was a walk into the arena (else it is in `buf`).
    walked: Option<Vec<arena::ShardOut>>,
    /// Why the last full pass did not use the walk, when it did not.
    pub walk_problem: Option<String>,
    /// A snapshot's task vector handed back for the next one (see [`Collector::recycle`]).
    spare: Vec<tasksnap_model::Task>,
    /// Keep to the iterator even when the walk is there ([`BpfCollector::use_walk`]).
    walk_off: bool,
    /// Read every command line through the mmap lock ([`BpfCollector::use_lockless`]).
    lockless_off: bool,
    /// How long loading (or opening the pinned programs) took, ns (reported by `-v` and
    /// `bench`).
    pub load_ns: u64,
    /// Where the pinned programs came from, when they were pinned ones.
    pub pinned_at: Option<std::path::PathBuf>,
    /// Why a pinned set that is there was not used.
    pub pin_problem: Option<String>,
    /// One reader thread per pass (see [`Collector::prefer_low_cpu`]).
    low_cpu: bool,
    /// The next walk runs as one shard (set by snapshot_impl: see `prefault_tasks`).
    one_shard: bool,
    /// Whether the next pass keeps its tasks' identities for a live view (changes.rs).
    track: bool,
    /// A live view's state between [`Collector::changes`] calls.
    delta: Option<changes::Delta>,
    /// The identities of a tracked walk's records, when it began, and the processes read
    /// from /proc because it passed over them; taken by snapshot_impl.
    captured: Option<(changes::Identities, u64, Vec<i32>)>,
    /// Whether the arena gets room for the command-line copy (asked for in `prepare`).
    cmd_region: bool,
    /// Set while a command-line copy writes into the arena (one abandoned at its deadline
    /// may still be running: the next snapshot then uses the iterator).
    cmd_busy: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// How the last snapshot's command lines were read, for `last_pass`.
    cmdline_how: Option<&'static str>,
    /// Whether the next walk reads command lines too (set by snapshot_impl).
    walk_lines: bool,
    /// How many processes the last copy by pid list was given.
    cmd_copied: std::cell::Cell<usize>,
    /// Where the last snapshot's time went, ms by phase, for `last_pass` (`-v`).
    phases_ms: Vec<(&'static str, f64)>,
    /// Lines the last command-line copy read without the mmap lock, and the paging levels
    /// of the direct map it found (0: none, every line copied), for `last_pass`.
    cmd_lockless: std::sync::Arc<std::sync::atomic::AtomicU64>,
    cmd_dmap_levels: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl std::fmt::Debug for BpfCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfCollector")
            .field("load_ns", &self.load_ns)
            .finish_non_exhaustive()
    }
}

impl BpfCollector {
    /// Loads the iterator, or says why it cannot be.
    pub fn new() -> Result<BpfCollector, Unavailable> {
        Self::with_cmdline(false)
    }

    /// Loads the iterator and, when `cmdline`, the sleepable command-line iterator too (when
    /// that one cannot load, command lines come from /proc and `cmdline_from_procfs` says why).
    pub fn with_cmdline(cmdline: bool) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(false)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable(e.to_string()))?;
        Self::load(procfs, cmdline)
    }

    /// For a live view (`top`): the pinned programs, else a fresh load that includes the
    /// walk (its verification, ~20 ms, is paid once; loading it in the same load as the
    /// rest parses the kernel's BTF once, before the view holds any rows).
    pub fn for_live_view() -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(true)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable(e.to_string()))?;
        Self::load_with(procfs, false, true)
    }

    fn load(procfs: ProcfsCollector, cmdline: bool) -> Result<BpfCollector, Unavailable> {
        Self::load_with(procfs, cmdline, false)
    }

    /// The pinned programs when `tasksnap pin` left a usable set, else a fresh load (with
    /// the walk when `walk`).
    fn load_with(
        procfs: ProcfsCollector,
        cmdline: bool,
        walk: bool,
    ) -> Result<BpfCollector, Unavailable> {
        // A pinned set that cannot be used (being replaced or removed right now, or not
        // root-only: never trusted then) is passed over for a fresh load, and `-v` says why.
        let (progs, pin_problem) = match programs::Programs::open_pinned() {
            Ok(Some(p)) => (p, None),
            Ok(None) => (programs::Programs::load(cmdline, walk)?, None),
            Err(why) => (programs::Programs::load(cmdline, walk)?, Some(why.0)),
        };
        let mut c = Self::from_programs(procfs, progs, cmdline);
        c.pin_problem = pin_problem;
        Ok(c)
    }

    fn from_programs(
        procfs: ProcfsCollector,
        progs: programs::Programs,
        cmdline: bool,
    ) -> BpfCollector {
        let (load_ns, pinned_at) = match &progs.origin {
            programs::Origin::Loaded { load_ns } => (*load_ns, None),
            programs::Origin::Pinned { dir, open_ns } => (*open_ns, Some(dir.clone())),
        };
        let cmdline_from_procfs = if !cmdline {
            Some("not asked for".into())
        } else {
            progs.cmdline_unavailable.clone()
        };
        let walk_problem = progs.walk_unavailable.clone();
        BpfCollector {
            progs,
            cmdline_from_procfs,
            procfs,
            buf: Vec::new(),
            arena: None,
            walked: None,
            walk_problem,
            spare: Vec::new(),
            walk_off: false,
            lockless_off: std::env::var_os("TASKSNAP_NO_LOCKLESS").is_some(),
            load_ns,
            pinned_at,
            pin_problem: None,
            low_cpu: false,
            one_shard: false,
            track: false,
            delta: None,
            captured: None,
            cmd_region: false,
            cmd_busy: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            cmdline_how: None,
            phases_ms: Vec::new(),
            cmd_lockless: Default::default(),
            cmd_dmap_levels: Default::default(),
            walk_lines: false,
            cmd_copied: std::cell::Cell::new(0),
        }
    }

    /// Loads the programs afresh, whether or not a pinned set is there, with the walk when
    /// `walk` (tests and benchmarks compare the two paths).
    pub fn load_fresh(cmdline: bool, walk: bool) -> Result<BpfCollector, Unavailable> {
        privileged()?;
        enough_descriptors(walk)?;
        let procfs = ProcfsCollector::new().map_err(|e| Unavailable(e.to_string()))?;
        let progs = programs::Programs::load(cmdline, walk)?;
        Ok(Self::from_programs(procfs, progs, cmdline))
    }

    /// Whether full passes may use the walk when it is there (the default), or must keep to
    /// the iterator (`bench` times both in one run).
    pub fn use_walk(&mut self, on: bool) {
        self.walk_off = !on;
    }

    /// Whether command lines may be read without the mmap lock (the default, on x86-64),
    /// or must all be copied through it (tests and benchmarks compare the two;
    /// TASKSNAP_NO_LOCKLESS=1 sets it off too).
    pub fn use_lockless(&mut self, on: bool) {
        self.lockless_off = !on;
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
        programs::Programs::load(true, true)?.pin()
    }

    /// Removes every pinned set (`tasksnap unpin`); true when there was one.
    pub fn unpin() -> Result<bool, Unavailable> {
        privileged()?;
        // The slot locks of the pinned arenas go too (a run holding one keeps its lock).
        if let Ok(entries) = std::fs::read_dir(arena::LOCK_DIR) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        match programs::remove_pins(std::path::Path::new(programs::PIN_ROOT)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Unavailable(format!("{}: {e}", programs::PIN_ROOT))),
        }
    }

    /// One pass with `groups` over every task (split across `shards` reader threads), or
    /// over one process's threads; raw records into `self.buf`.
    fn pass_of(&mut self, groups: u32, process: Option<i32>) -> Result<(), Error> {
        let fail = |source: std::io::Error| {
            if sys::is_exhaustion(&source) {
                // Out of descriptors for the iterator files: a clear error, not a listing
                // without the tasks (see `DESCRIPTORS_FOR_A_PASS`).
                Error::exhausted("cannot read the BPF task iterator", source)
            } else {
                Error::Root {
                    path: "bpf task iterator".into(),
                    source,
                }
            }
        };
        self.buf.clear();
        self.walked = None;
        // TASKSNAP_NO_WALK=1 keeps to the iterator (tests compare the two; benchmarks too).
        let walk = !self.walk_off && std::env::var_os("TASKSNAP_NO_WALK").is_none();
        if walk && process.is_none() && self.progs.walker.is_some() {
            match self.walk(groups) {
                Ok(()) => return Ok(()),
                Err(why) => self.walk_problem = Some(why),
            }
        }
        if let Some(pid) = process {
            let bufs =
                programs::read_sharded(&self.progs, groups, 1, 0, None, |p| p.process_iter(pid))
                    .map_err(fail)?;
            self.buf = bufs.into_iter().next().unwrap_or_default();
            return Ok(());
        }
        // Size the buffers once for the tasks there are (and some that may fork meanwhile).
        let per_task = decode::record_size(groups) as u64;
        let tasks = crate::task_count(std::path::Path::new("/proc")).unwrap_or(1024);
        let want = (tasks + tasks / 8 + 64) * per_task;
        if self.low_cpu {
            let mut buf = std::mem::take(&mut self.buf);
            buf.reserve(want as usize);
            let r = programs::read_into(&self.progs, groups, |p| p.task_iter(), &mut buf);
            self.buf = buf;
            return r.map_err(fail);
        }
        let shards = programs::pass_shards();
        let bufs = programs::read_sharded(&self.progs, groups, shards, want as usize, None, |p| {
            p.task_iter()
        })
        .map_err(fail)?;
        let mut bufs = bufs.into_iter();
        self.buf = bufs.next().unwrap_or_default();
        for b in bufs {
            self.buf.extend_from_slice(&b);
        }
        Ok(())
    }

    /// Makes sure the arena holds a pass of `groups` over the tasks there are now (and a
    /// quarter more), creating a bigger one when it does not (which needs CAP_BPF: after
    /// capabilities are dropped the arena there is stays).
    fn ensure_arena(&mut self, groups: u32, shards: usize) -> Result<(), String> {
        let tasks = crate::task_count(std::path::Path::new("/proc")).unwrap_or(1024);
        // Kernel threads' records carry their name too.
        let per_task = decode::record_size(groups) + 16;
        let walk_need = arena::chunks_for(tasks, per_task, shards);
        let Some(walker) = &self.progs.walker else {
            return Err("no walk".into());
        };
        // The command-line copy's region follows the walk's chunks (processes are at most
        // the tasks).
        let region = (self.cmd_region && walker.cmd_prog.is_some())
            .then(|| arena::CmdRegion::at(walk_need, tasks, programs::pass_shards()));
        let need = region.map_or(walk_need, |r| r.end());
        // Only the walk's chunks are mapped here: the copy's requests go in by map updates
        // and its output is read through a mapping of its own.
        let fits = |a: &arena::Arena| a.entries >= need && a.chunks() >= walk_need;
        if !self.arena.as_ref().is_some_and(fits) {
            if let Err(e) = walker.arena(need, walk_need, &mut self.arena) {
                // A smaller arena there is stays: the walk says when it overflows.
                if self.arena.is_none() {
                    return Err(format!("no arena for the walk: {e}"));
                }
            }
        }
        if let Some(a) = &mut self.arena {
            if fits(a) {
                a.walk_chunks = walk_need;
                a.cmd = region;
            } else {
                a.walk_chunks = a.chunks();
                a.cmd = None;
            }
        }
        Ok(())
    }

    /// One pass over every task by the walk into the arena; `Err` says why the caller must
    /// use the iterator instead (no arena, or more tasks than it holds).
    fn walk(&mut self, groups: u32) -> Result<(), String> {
        let shards = if self.low_cpu || self.one_shard {
            1
        } else {
            programs::pass_shards()
        };
        self.ensure_arena(groups, shards)?;
        let (Some(walker), Some(arena)) = (&self.progs.walker, &self.arena) else {
            return Err("no walk".into());
        };
        let how = arena::WalkMode {
            lines: self.walk_lines,
            ..Default::default()
        };
        let outs = walker
            .walk(arena, groups, shards, how)
            .map_err(|e| format!("the walk failed: {e}"))?;
        if let Some(o) = outs.iter().find(|o| o.overflow > 0) {
            return Err(format!(
                "the walk's arena ({} chunks) was full: {} tasks did not fit",
                arena.chunks(),
                o.overflow
            ));
        }
        self.walked = Some(outs);
        Ok(())
    }

    /// The command-line pass, on its own thread under `deadline`: it takes each target's mmap
    /// lock, and one process stuck in mmap must not stall the listing. `None` when there is
    /// no command-line iterator or the pass missed the deadline (the abandoned thread finishes
    /// on its own); the caller then reads command lines from /proc, where a watchdog
    /// abandons the one read that blocks.
    fn start_cmdline_pass(&self) -> Option<CmdlinePass> {
        if !self.progs.has_cmdline() {
            return None;
        }
        let shards = sys::cores().clamp(1, 8);
        let (tx, rx) = std::sync::mpsc::channel();
        // The pass runs on its own threads so that the caller can give up at the deadline
        // (they finish on their own): they get duplicates of the descriptors.
        let progs = self.progs.shared()?;
        let pass = CmdlinePass::new(rx, false);
        let threads = pass.threads.clone();
        std::thread::Builder::new()
            .name("tasksnap-cmdline".into())
            .spawn(move || {
                let r = programs::read_sharded(&progs, 0, shards, 1 << 20, Some(&threads), |p| {
                    p.cmdline_iter()
                        .unwrap_or_else(|| Err(std::io::Error::other("no command-line iterator")))
                });
                let _ = tx.send(r);
            })
            .ok()?;
        Some(pass)
    }

    /// Whether the next full pass can get its command lines from the copy by pid list: a
    /// walk with the copy program, an arena with room for it, and no earlier copy still
    /// writing into it.
    fn can_copy_cmdlines(&self) -> bool {
        let walk = !self.walk_off && std::env::var_os("TASKSNAP_NO_WALK").is_none();
        walk && self
            .progs
            .walker
            .as_ref()
            .is_some_and(|w| w.cmd_prog.is_some())
            && self.arena.as_ref().is_some_and(|a| a.cmd.is_some())
            && !self.cmd_busy.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The command lines the last walk read, by tgid (flagged ones left out: the copy and
    /// then /proc take those), decoded on a thread of their own while the caller assembles
    /// the tasks; `None` when the walk read none.
    fn walk_lines_job(&self) -> Option<std::thread::JoinHandle<HashMap<i32, Vec<u8>>>> {
        let outs = self.walked.as_deref()?;
        let arena = self.arena.as_ref()?;
        let region = arena.cmd?;
        let mut views = Vec::new();
        for o in outs.iter().filter(|o| o.lines > 0) {
            if o.lines_first < region.out_chunk || o.lines_last >= region.end() {
                return None;
            }
            // Only the chunks written are mapped (a mapping counts whole in RSS).
            let range = o.lines_first..=o.lines_last;
            views.push((
                arena.view(o.lines_first, range.clone().count()).ok()?,
                range,
            ));
        }
        if views.is_empty() {
            return None;
        }
        let lines: usize = outs.iter().map(|o| o.lines as usize).sum();
        std::thread::Builder::new()
            .name("tasksnap-lines".into())
            .spawn(move || {
                let mut out = HashMap::with_capacity(lines);
                let mut bytes = Vec::new();
                for (view, range) in views {
                    bytes.clear();
                    arena::take_lines(&view, range, &mut bytes);
                    decode::cmd_chunk(&bytes, &mut out);
                }
                out
            })
            .ok()
    }

    /// Whether the next full pass will be a walk (the walk is there, with an arena, and not
    /// turned off), and not one of a live view that asked to spare the CPU.
    fn can_walk(&self) -> bool {
        !self.walk_off
            && !self.low_cpu
            && std::env::var_os("TASKSNAP_NO_WALK").is_none()
            && self.progs.walker.is_some()
            && self.arena.is_some()
    }

    /// The vector the next snapshot's tasks go into, sized for the tasks there are (and an
    /// eighth more) and faulted in on a thread of its own while the walk runs. At 50,000
    /// tasks it is ~20 MB, and its page faults (2 MiB pages zeroed: see
    /// `sys::advise_huge_pages`) were up to a third of the CPU of `ps -e -o ...`, on the
    /// main thread after the walk. `None` when the recycled vector is big enough already
    /// (a live view's), or no thread can be had.
    fn prefault_tasks(&mut self) -> Option<std::thread::JoinHandle<Vec<tasksnap_model::Task>>> {
        let tasks = crate::task_count(std::path::Path::new("/proc"))? as usize;
        let want = tasks + tasks / 8 + 64;
        if self.spare.capacity() >= want {
            return None;
        }
        let mut v = std::mem::take(&mut self.spare);
        std::thread::Builder::new()
            .name("tasksnap-prefault".into())
            .spawn(move || {
                v.clear();
                v.reserve(want);
                let bytes = v.capacity() * std::mem::size_of::<tasksnap_model::Task>();
                let ptr = v.as_mut_ptr().cast::<u8>();
                sys::advise_huge_pages(ptr.cast_const(), bytes);
                for off in (0..bytes).step_by(4096) {
                    // SAFETY: `off` is inside the vector's allocation (its capacity: no Task
                    // is made or read here, and pushes overwrite these bytes). Volatile, so
                    // that the touch is not optimised away.
                    unsafe { ptr.add(off).write_volatile(0) };
                }
                v
            })
            .ok()
    }

    /// The command-line copy for the processes of a walk's `records` (kernel threads have
    /// none), on its own threads under the same deadline as the iterator's pass: each shard
    /// takes an equal, contiguous share of the list. `None` when it cannot start (the caller
    /// then uses the iterator).
    fn start_cmdline_copy(
        &self,
        records: &[decode::Record<'_>],
        have: Option<&HashMap<i32, Vec<u8>>>,
    ) -> Option<CmdlinePass> {
        use std::sync::atomic::Ordering;
        if !self.can_copy_cmdlines() {
            return None;
        }
        let arena = self.arena.as_ref()?;
        let region = arena.cmd?;
        let prog = self
            .progs
            .walker
            .as_ref()?
            .cmd_prog
            .as_ref()?
            .try_clone()
            .ok()?;
        let reqs: Vec<arena::CmdRequest> = records
            .iter()
            .filter(|r| r.hdr.tid == r.hdr.tgid && r.hdr.groups & decode::TS_GROUP_KNAME == 0)
            .filter(|r| have.is_none_or(|h| !h.contains_key(&(r.hdr.tgid as i32))))
            .map(|r| arena::CmdRequest {
                pid: r.hdr.global_tid,
                tgid: r.hdr.tgid,
                start_boottime_ns: r.hdr.start_boottime_ns,
            })
            .collect();
        self.cmd_copied.set(reqs.len());
        if reqs.is_empty() || reqs.len() > region.capacity() {
            return None;
        }
        arena.put_cmd_requests(&region, &reqs).ok()?;
        let view = arena
            .view(region.out_chunk, region.shards * region.out_per_shard)
            .ok()?;
        let n = reqs.len();
        let shards = region.shards.min(n.max(1));
        let busy = self.cmd_busy.clone();
        busy.store(true, Ordering::Release);
        self.cmd_lockless.store(0, Ordering::Relaxed);
        let (lockless, levels) = (self.cmd_lockless.clone(), self.cmd_dmap_levels.clone());
        let locked = self.lockless_off;
        let (tx, rx) = std::sync::mpsc::channel();
        let pass = CmdlinePass::new(rx, true);
        let threads = pass.threads.clone();
        let spawned = std::thread::Builder::new()
            .name("tasksnap-cmdline".into())
            .spawn(move || {
                let per = n.div_ceil(shards);
                let (lockless, levels, threads) = (&*lockless, &*levels, &*threads);
                let r = std::thread::scope(|s| {
                    let one = |shard: usize| {
                        let _listed = threads.enter();
                        let mut out = Vec::with_capacity(per * 64);
                        let (first, end) = ((shard * per).min(n), ((shard + 1) * per).min(n));
                        arena::copy_cmdlines(&prog, &view, shard, first, end, locked, &mut out).map(
                            |c| {
                                lockless.fetch_add(c.lockless, Ordering::Relaxed);
                                levels.store(c.dmap_levels, Ordering::Relaxed);
                                out
                            },
                        )
                    };
                    let handles: Vec<_> = (1..shards).map(|k| s.spawn(move || one(k))).collect();
                    let mut all = vec![one(0)?];
                    for h in handles {
                        all.push(h.join().unwrap_or_else(|_| {
                            Err(std::io::Error::other("a copy thread panicked"))
                        })?);
                    }
                    Ok(all)
                });
                busy.store(false, Ordering::Release);
                let _ = tx.send(r);
            });
        if spawned.is_err() {
            self.cmd_busy.store(false, Ordering::Release);
            return None;
        }
        Some(pass)
    }

    /// The raw bytes of one pass with base (and `cred`/`stat` when asked) records: the cost of
    /// the iterator alone, for `bench`.
    pub fn raw_pass(&mut self, cred: bool, stat: bool) -> Result<usize, Error> {
        self.pass(1 | if cred { 2 } else { 0 } | if stat { 4 } else { 0 })?;
        if let Some(outs) = &self.walked {
            return Ok(outs
                .iter()
                .map(|o| (o.last + 1 - o.first) * arena::CHUNK_BYTES)
                .sum());
        }
        Ok(self.buf.len())
    }

    /// One pass with `groups` over every task.
    fn pass(&mut self, groups: u32) -> Result<(), Error> {
        self.pass_of(groups, None)
    }
}

/// Times the phases of a snapshot (reported by `-v`).
struct Lap {
    last: std::time::Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Lap {
    fn new() -> Lap {
        Lap {
            last: std::time::Instant::now(),
            phases: Vec::with_capacity(10),
        }
    }

    /// Ends the phase `name` now.
    fn mark(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.phases
            .push((name, now.duration_since(self.last).as_secs_f64() * 1e3));
        self.last = now;
    }
}

/// The records of the last pass: from the arena when it was a walk, else from `buf`.
fn pass_records<'a>(
    buf: &'a [u8],
    arena: Option<&'a arena::Arena>,
    walked: Option<&[arena::ShardOut]>,
) -> Result<Vec<decode::Record<'a>>, String> {
    let (Some(arena), Some(outs)) = (arena, walked) else {
        return decode::records(buf);
    };
    let n: u32 = outs.iter().map(|o| o.records).sum();
    let mut out: Vec<decode::Record<'a>> = Vec::with_capacity(n as usize);
    crate::sys::advise_huge_pages(
        out.as_ptr().cast(),
        out.capacity() * std::mem::size_of::<decode::Record<'a>>(),
    );
    for o in outs {
        for i in o.first..=o.last.min(arena.chunks() - 1) {
            decode::chunk_records(arena.chunk(i), &mut out)?;
        }
    }
    Ok(out)
}

impl Collector for BpfCollector {
    fn name(&self) -> &'static str {
        "bpf"
    }

    /// One iterator pass, assembled into the tasks the query selects; then the groups the
    /// kernel cannot give are read from /proc for those tasks only, and any task /proc lists
    /// that the iterator did not return is read from /proc entirely. (On this kind of VM the
    /// iterator does not return pid 1: reconciling with the /proc listing keeps every task
    /// /proc shows in the snapshot.)
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.snapshot_impl(query)
    }

    fn prefer_low_cpu(&mut self) {
        self.low_cpu = true;
    }

    fn last_pass(&self) -> String {
        #[allow(unused_mut)]
        let mut pass = self.last_pass_only();
        if let Some(how) = self.cmdline_how {
            pass = format!("{pass}; command lines {how}");
            use std::sync::atomic::Ordering;
            let copy_lockless = self.cmd_lockless.load(Ordering::Relaxed);
            let copy_levels = self.cmd_dmap_levels.load(Ordering::Relaxed);
            if how == CMDLINES_WALKED {
                let outs = self.walked.as_deref().unwrap_or_default();
                let lockless: u32 = outs.iter().map(|o| o.lines_lockless).sum();
                let levels = outs.iter().map(|o| o.dmap_levels).max().unwrap_or(0);
                pass = format!(
                    "{pass}: {lockless} read without the mmap lock ({levels}-level page \
                     tables), {} copied by pid list ({copy_lockless} of them without the lock)",
                    self.cmd_copied.get()
                );
            } else if how == CMDLINES_COPIED {
                pass = if copy_levels == 0 {
                    format!("{pass} (all through the mmap lock)")
                } else {
                    format!(
                        "{pass} ({copy_lockless} without the mmap lock, {copy_levels}-level \
                         page tables)"
                    )
                };
            }
        }
        pass
    }

    fn last_phases(&self) -> String {
        let phases: Vec<String> = self
            .phases_ms
            .iter()
            .map(|(name, ms)| format!("{name} {ms:.1}"))
            .collect();
        phases.join(", ")
    }

    fn recycle(&mut self, mut tasks: Vec<tasksnap_model::Task>) {
        tasks.clear();
        // A live view on changed-only walks gets a few dozen tasks per refresh: the vector
        // of a whole pass (18 MB at 50,000 tasks) is not kept for them; the next whole
        // pass, CHANGES_FULL_EVERY refreshes later, faults its memory in again.
        if self.delta.is_some() && tasks.capacity() > 4096 {
            return;
        }
        self.spare = tasks;
    }

    fn prepare(&mut self, groups: &Groups) {
        if self.progs.walker.is_some() {
            self.cmd_region = groups.cmdline;
            let bits = decode::group_bits(groups);
            if let Err(why) = self.ensure_arena(bits, programs::pass_shards()) {
                self.walk_problem = Some(why);
            }
        }
    }

    fn changes(&mut self, query: &Query) -> Result<crate::Changes, Error> {
        self.changes_impl(query)
    }

    fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<crate::ChangeSummary, Error> {
        self.changes_into_impl(query, sink)
    }

    fn next_changes_full(&self, query: &Query) -> bool {
        !self.changes_continue(query)
    }

    /// Loads the walk when the programs came without it (a fresh load: `ps` does not pay
    /// for its verification, a live view does once), then makes its arena.
    fn prepare_live(&mut self, groups: &Groups) {
        if self.progs.walker.is_none() && !self.walk_off {
            match programs::Programs::load(false, true) {
                Ok(p) => match p.walker.as_ref().and_then(|w| w.try_clone()) {
                    Some(w) => {
                        self.progs.walker = Some(w);
                        self.walk_problem = None;
                    }
                    None => {
                        self.walk_problem = p.walk_unavailable.clone();
                    }
                },
                Err(why) => self.walk_problem = Some(why.0),
            }
        }
        self.prepare(groups);
    }
}

impl BpfCollector {
    /// What the last pass was, without the command lines.
    fn last_pass_only(&self) -> String {
        if let Some(outs) = &self.walked {
            let records: u32 = outs.iter().map(|o| o.records).sum();
            let chunks: usize = outs.iter().map(|o| o.last + 1 - o.first).sum();
            let (size, slot, reused) = self
                .arena
                .as_ref()
                .map_or((0, 0, false), |a| (a.chunks(), a.slot(), a.reused));
            let what = if self
                .delta
                .as_ref()
                .is_some_and(|d| d.last_was_changed_only())
            {
                "changed-only walk"
            } else {
                "walk"
            };
            return format!(
                "{what} into the arena: {records} records in {chunks} of {size} chunks, {} \
                 shard(s); slot {slot}, {}",
                outs.len(),
                if reused {
                    "reused from an earlier run"
                } else {
                    "created by this run"
                }
            );
        }
        match &self.walk_problem {
            Some(why) => format!("task iterator (no walk: {why})"),
            None => "task iterator".into(),
        }
    }

    /// Reads from /proc, for `tasks`, the groups the kernel cannot give; drops the base
    /// group when only the collector needed it.
    fn fill_from_procfs(
        &mut self,
        tasks: &mut [tasksnap_model::Task],
        query: &Query,
        fill_groups: Groups,
        stats: &mut SnapshotStats,
    ) -> Result<(), Error> {
        let fill = decode::procfs_groups(&fill_groups);
        if fill != Groups::default() {
            let only_cmdline = fill
                == Groups {
                    cmdline: true,
                    ..Groups::default()
                };
            let ids: Vec<(i32, i32)> = tasks
                .iter()
                .filter(|t| !only_cmdline || (t.cmdline.is_none() && !decode::no_mm(t)))
                .map(|t| (t.id.tgid, t.id.tid))
                .collect();
            let (filled, fill_stats) = self.procfs.try_fill(&ids, fill)?;
            stats.denied += fill_stats.denied;
            stats.cmdline_timeouts += fill_stats.cmdline_timeouts;
            decode::merge(tasks, filled, &fill);
        }
        if !query.groups.base {
            for t in tasks.iter_mut() {
                t.base = None;
            }
        }
        Ok(())
    }

    /// Tasks /proc shows that a pass's `records` do not have, read from /proc (the tgids
    /// read come back too). On this kind of VM that is pid 1 and its threads: init is
    /// protected (even root gets EACCES on /proc/1/ns/pid), and both `iter/task` and the
    /// walk pass over it. So pid 1 is checked directly; a full /proc listing (45 ms at
    /// 50,000 tasks) is only taken when the kernel's task count says more are missing.
    fn missing_from(
        procfs: &mut ProcfsCollector,
        records: &[decode::Record<'_>],
        query: &Query,
        groups: Groups,
        one_process: Option<i32>,
        stats: &mut SnapshotStats,
    ) -> Result<(Vec<tasksnap_model::Task>, Vec<i32>), Error> {
        let has_tgid = |p: i32| records.iter().any(|r| r.hdr.tgid as i32 == p);
        let mut extra_threads = 0u64;
        let mut missing: Vec<i32> = Vec::new();
        if !has_tgid(1) {
            missing.push(1);
            extra_threads += std::fs::read_dir("/proc/1/task").map_or(0, |d| d.count() as u64);
        }
        // The kernel's task count is global: inside a pid namespace it cannot tell what is
        // missing, so the listing is always taken there.
        let in_namespace = records.first().is_some_and(|r| r.hdr.ns_level > 0);
        let total = crate::task_count(std::path::Path::new("/proc")).unwrap_or(0);
        let have = records.len() as u64 + extra_threads;
        if let Some(p) = one_process {
            // One process asked for: /proc is consulted for it alone if the iterator was
            // silent (pid 1 here, or a pid that is gone).
            missing = if has_tgid(p) { Vec::new() } else { vec![p] };
        } else if in_namespace || have + RECONCILE_SLACK < total {
            let seen_tgids: std::collections::HashSet<i32> =
                records.iter().map(|r| r.hdr.tgid as i32).collect();
            missing = procfs
                .list_pids()?
                .into_iter()
                .filter(|p| !seen_tgids.contains(p))
                .collect();
            stats.reconciled_by_listing = true;
        }
        let wanted = |pid: i32| match query.selector {
            Selector::Pid(p) | Selector::ThreadsOf(p) => p == pid,
            _ => true,
        };
        missing.retain(|&p| wanted(p));
        let extras = Self::read_from_procfs(procfs, &missing, query, groups)?;
        Ok((extras, missing))
    }

    /// The tasks of processes `pids` from /proc, as `query` wants them (threads or not).
    fn read_from_procfs(
        procfs: &mut ProcfsCollector,
        pids: &[i32],
        query: &Query,
        groups: Groups,
    ) -> Result<Vec<tasksnap_model::Task>, Error> {
        let mut extras = Vec::new();
        for &pid in pids {
            let sel = if query.wants_threads() {
                Selector::ThreadsOf(pid)
            } else {
                Selector::Pid(pid)
            };
            let mut q = Query::new(sel, groups);
            q.leader_as_process = query.leader_as_process;
            extras.extend(procfs.snapshot(&q)?.tasks);
        }
        Ok(extras)
    }

    fn snapshot_impl(&mut self, query: &Query) -> Result<Snapshot, Error> {
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = sys::clock_ns(libc::CLOCK_BOOTTIME);
        let mut groups = query.groups;
        if matches!(
            query.selector,
            Selector::ChildrenOf(_) | Selector::Session(_) | Selector::ProcessGroup(_)
        ) {
            groups.base = true;
        }
        let one_process = match query.selector {
            Selector::Pid(p) | Selector::ThreadsOf(p) => Some(p),
            _ => None,
        };
        // The command-line pass (the slow one: it copies from every process's memory)
        // starts first and runs on its own threads while the main pass is read and decoded.
        // With the walk, the walk reads them too (without the mmap lock, where it can), and
        // the copy by pid list takes the processes it left, once it is done.
        let copy = groups.cmdline && one_process.is_none() && self.can_copy_cmdlines();
        let cmdline_pass = if groups.cmdline && one_process.is_none() && !copy {
            self.start_cmdline_pass()
        } else {
            None
        };
        self.cmdline_how = None;
        self.cmd_copied.set(0);
        self.cmd_lockless
            .store(0, std::sync::atomic::Ordering::Relaxed);
        let mut lap = Lap::new();
        self.walk_lines = copy && !self.lockless_off;
        // Without command lines, a second walk shard gains ~1 ms at 50,000 tasks (each
        // shard follows the whole task list, and that is most of its cost): the walk runs
        // as one, and the other core faults the task vector in meanwhile.
        let prefault = (!self.walk_lines && one_process.is_none() && self.can_walk())
            .then(|| self.prefault_tasks())
            .flatten();
        self.one_shard = prefault.is_some();
        let passed = self.pass_of(decode::group_bits(&groups), one_process);
        self.walk_lines = false;
        self.one_shard = false;
        lap.mark("pass");
        let spare = prefault
            .and_then(|j| j.join().ok())
            .unwrap_or_else(|| std::mem::take(&mut self.spare));
        passed?;
        lap.mark("prefault wait");
        let units = self.procfs.units();
        let records = pass_records(&self.buf, self.arena.as_ref(), self.walked.as_deref())
            .map_err(Error::Unsupported)?;
        lap.mark("records");

        if self.track {
            if let Some(outs) = &self.walked {
                let began = outs.iter().map(|o| o.started_ns).min().unwrap_or(0);
                self.captured = Some((changes::identities(&records), began, Vec::new()));
            }
        }
        let mut stats = SnapshotStats::default();

        let (extras, missing) = Self::missing_from(
            &mut self.procfs,
            &records,
            query,
            groups,
            one_process,
            &mut stats,
        )?;
        if let Some(c) = &mut self.captured {
            c.2 = missing;
        }
        lap.mark("reconcile");
        // The walk's lines are decoded meanwhile; without them (no direct map: every line is
        // copied) the copy starts now and runs while the tasks are assembled. Both start
        // after the reconciliation, which reads from /proc: that and the decoding allocate,
        // and with one malloc arena (main.rs) they took turns on its lock (50-120 futex
        // calls per `ps -ef` under strace).
        let lines_job = if copy { self.walk_lines_job() } else { None };
        let cmdline_pass = match cmdline_pass {
            Some(p) => Some(p),
            None if copy && lines_job.is_none() && self.walked.is_some() => {
                self.start_cmdline_copy(&records, None)
            }
            None => None,
        };
        lap.mark("lines start");
        // In two halves at once, unless the walk's lines are being decoded meanwhile (that
        // thread has the other core).
        let parallel = !self.low_cpu && lines_job.is_none();
        let mut tasks = decode::assemble(&records, extras, query, &groups, units, spare, parallel);
        decode::filter(&mut tasks, query);
        lap.mark("assemble");

        // Command lines from the walk, the copy or the sleepable iterator, when they are
        // there and finish in time. What the walk left (pages it could not read without
        // the lock, flagged lines) is copied by pid list now.
        let walk_lines = lines_job.and_then(|j| j.join().ok());
        let cmdline_pass = match cmdline_pass {
            None if walk_lines.is_some() => self.start_cmdline_copy(&records, walk_lines.as_ref()),
            p => p,
        };
        drop(records);
        lap.mark("walk lines");
        let mut fill_groups = groups;
        if groups.cmdline {
            let pass = match cmdline_pass {
                Some(p) => Some(p),
                None if walk_lines.is_some() => None,
                None => self.start_cmdline_pass(),
            };
            self.cmdline_how = if walk_lines.is_some() {
                Some(CMDLINES_WALKED)
            } else {
                pass.as_ref().map(|p| {
                    if p.copy {
                        CMDLINES_COPIED
                    } else {
                        "read by the sleepable iterator"
                    }
                })
            };
            let passed = pass.map(CmdlinePass::finish).and_then(|end| match end {
                PassEnd::Lines(lines) => Some(lines),
                PassEnd::Stuck => {
                    stats.cmdline_timeouts += 1;
                    None
                }
                PassEnd::Failed => None,
            });
            let cmds = match (walk_lines, passed) {
                (Some(mut w), Some(p)) => {
                    w.extend(p);
                    Some(w)
                }
                (w, p) => w.or(p),
            };
            lap.mark("command lines");
            if let Some(mut cmds) = cmds {
                let per_thread = query.wants_threads();
                for t in tasks.iter_mut() {
                    if decode::no_mm(t) {
                        t.cmdline = Some(Vec::new());
                    } else if per_thread {
                        // Threads share their process's command line.
                        t.cmdline = cmds.get(&t.id.tgid).cloned();
                    } else {
                        t.cmdline = cmds.remove(&t.id.tgid);
                    }
                }
                // What is still missing (flagged, or born after the pass) is read from /proc.
                fill_groups.cmdline = tasks.iter().any(|t| t.cmdline.is_none());
            }
        }

        lap.mark("attach");
        self.fill_from_procfs(&mut tasks, query, fill_groups, &mut stats)?;
        lap.mark("procfs");
        self.phases_ms = lap.phases;
        debug_assert!(tasks.is_sorted_by_key(|t| (t.id.tgid, t.id.tid)));
        Ok(Snapshot {
            taken_at_unix_ns,
            taken_at_boottime_ns,
            boot_time_unix_s: self.procfs.try_boot_time()?,
            backend: "bpf",
            tasks,
            stats,
        })
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    fn root_or_skip(what: &str) -> bool {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return true;
        }
        if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") {
            panic!("{what} needs root and TASKSNAP_REQUIRE_PRIVILEGED=1 forbids skipping it");
        }
        eprintln!("SKIP {what}: the BPF backend needs root");
        false
    }

    /// Children that stop themselves, with argument areas of ~3,000 bytes: 24 of them fill
    /// more than one output chunk.
    struct Stopped(Vec<std::process::Child>);

    impl Stopped {
        fn spawn(n: usize) -> Stopped {
            use std::process::{Command, Stdio};
            Stopped(
                (0..n)
                    .map(|i| {
                        Command::new("sh")
                            .args([
                                "-c",
                                "kill -STOP $$",
                                "sh",
                                &char::from(b'a' + i as u8).to_string().repeat(3000),
                            ])
                            .stdin(Stdio::null())
                            .spawn()
                            .expect("spawn")
                    })
                    .collect(),
            )
        }

        fn pids(&self) -> Vec<i32> {
            self.0.iter().map(|c| c.id() as i32).collect()
        }
    }

    impl Drop for Stopped {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// A run that fills its output chunks stops with its current chunk one past them, on
    /// the next shard's first chunk: the copy's and the lines walk's end-of-run terminators
    /// must not be written there (the copy's was, and erased the other shard's first ~650
    /// lines at 50,000 processes).
    #[test]
    fn a_full_run_leaves_the_next_shards_first_chunk_alone() {
        if !root_or_skip("BPF output chunk bounds") {
            return;
        }
        let kids = Stopped::spawn(24);
        let pids = kids.pids();
        let groups = Groups {
            base: true,
            cmdline: true,
            ..Groups::default()
        };
        let mut c = BpfCollector::load_fresh(true, true).expect("BPF loads as root");
        c.prepare(&groups);
        c.pass(decode::group_bits(&groups)).expect("walk");
        let records = pass_records(&c.buf, c.arena.as_ref(), c.walked.as_deref()).expect("records");
        let reqs: Vec<arena::CmdRequest> = records
            .iter()
            .filter(|r| r.hdr.tid == r.hdr.tgid && pids.contains(&(r.hdr.tgid as i32)))
            .map(|r| arena::CmdRequest {
                pid: r.hdr.global_tid,
                tgid: r.hdr.tgid,
                start_boottime_ns: r.hdr.start_boottime_ns,
            })
            .collect();
        assert_eq!(reqs.len(), pids.len(), "the walk found the children");
        let a = c.arena.as_ref().expect("arena");
        let region = a.cmd.expect("command-line region");
        let walker = c.progs.walker.as_ref().expect("walk");
        a.put_cmd_requests(&region, &reqs).expect("requests");
        let first = region.out_chunk;
        let view = a.view(first, 2).expect("view");

        // The copy, given one output chunk.
        a.fill_chunk(first + 1, 0xab).expect("sentinel");
        let mut args = skel::types::ts_cmd_args {
            key: a.slot(),
            req_chunk: region.req_chunk as u32,
            req_first: 0,
            req_end: reqs.len() as u32,
            first_chunk: first as u32,
            nchunks: 1,
            ..Default::default()
        };
        arena::run(walker.cmd_prog.as_ref().expect("copy"), &mut args).expect("copy");
        assert!(
            args.next < args.req_end,
            "24 lines of 3,000 bytes fill a chunk"
        );
        assert!(
            view.chunk(first + 1).iter().all(|&b| b == 0xab),
            "the copy wrote past its chunks"
        );

        // The walk with lines, given one output chunk (x86-64: elsewhere it writes none).
        a.fill_chunk(first + 1, 0xab).expect("sentinel");
        let mut args = skel::types::ts_walk_args {
            key: a.slot(),
            groups: decode::group_bits(&groups),
            nshards: 1,
            first_chunk: 0,
            nchunks: a.walk_chunks as u32,
            args_first_chunk: first as u32,
            args_nchunks: 1,
            ..Default::default()
        };
        arena::run(walker.lines_prog.as_ref().expect("lines walk"), &mut args).expect("walk");
        if cfg!(target_arch = "x86_64") {
            assert!(
                args.args_cur_chunk as usize > first,
                "the lines filled their chunk"
            );
        }
        assert!(
            view.chunk(first + 1).iter().all(|&b| b == 0xab),
            "the walk wrote lines past its chunks"
        );
    }

    #[test]
    #[ignore = "diagnostic: prints which /proc tasks the iterator does not return"]
    fn which_tasks_does_the_iterator_miss() {
        let mut c = BpfCollector::new().expect("load");
        c.pass(1).expect("pass");
        let recs = pass_records(&c.buf, c.arena.as_ref(), c.walked.as_deref()).expect("records");
        let seen: std::collections::HashSet<u32> = recs.iter().map(|r| r.hdr.tgid).collect();
        let pids = c.procfs.list_pids().expect("pids");
        let missing: Vec<i32> = pids
            .into_iter()
            .filter(|p| !seen.contains(&(*p as u32)))
            .collect();
        eprintln!(
            "{} records; missing from the pass ({}): {missing:?}",
            recs.len(),
            c.last_pass()
        );
        for r in recs.iter().take(3) {
            eprintln!("{:?}", r.hdr);
        }
    }
}
