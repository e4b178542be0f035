//! The procfs collector: answers queries by reading `/proc/PID/...` files.
//!
//! What it does to stay lean (see docs/benchmarks.md for the numbers):
//! - reads only the files the requested [`Groups`] need, through paths relative to one
//!   directory descriptor, into buffers reused across tasks;
//! - takes the effective uid/gid from the owner of `/proc/PID` instead of parsing `status`;
//! - splits the tasks across reader threads, each with a private descriptor table so it can
//!   drop its files with one `close_range` per batch instead of one `close` per file;
//! - never lets one task stall the listing: a `cmdline` read that blocks on the target's mmap
//!   lock for longer than the deadline (20 ms of blocked time: waiting for a CPU does not
//!   count, see crate::blocked) is abandoned on its thread, the task is shown without its
//!   command line (`[comm]`, like procps) and counted; so is a `smaps_rollup` read (PSS,
//!   USS), which walks the target's mappings under the same lock (the task then shows 0);
//! - never lists fewer tasks because it ran out of descriptors: each reader holds at most what
//!   RLIMIT_NOFILE leaves it, and a collection that still runs out fails with
//!   [`Error::Exhausted`] instead of leaving tasks out (see pool.rs).

mod live;
mod pool;
mod reader;

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, SnapshotStats, Task};

use tasksnap_procfs::parse;

use crate::collector::Changes;
use crate::collector::Collector;
use crate::collector::LiveCollector;
use crate::error::Error;
pub use crate::units::Units;
pub(crate) use reader::Item;
use tasksnap_sys as sys;

/// Reads tasks from a procfs tree.
#[derive(Debug)]
pub struct ProcfsCollector {
    root: PathBuf,
    root_fd: OwnedFd,
    units: Units,
    workers: usize,
    cmdline_deadline: Duration,
    /// The system's own /proc, of the caller's pid namespace: a live view can follow
    /// processes by their CPU clocks ([`live`]).
    live_ok: bool,
    live: Option<live::Live>,
    /// What the last pass read: whether there was one, and whether command lines were asked
    /// for (for its report).
    last: Option<Groups>,
}

impl ProcfsCollector {
    /// A collector for the system's `/proc`.
    pub fn new() -> Result<ProcfsCollector, Error> {
        ProcfsCollector::with_root(tasksnap_sys::roots::PROC)
    }

    /// A collector for a tree laid out like `/proc` at `root` (tests use fake trees).
    pub fn with_root(root: impl AsRef<Path>) -> Result<ProcfsCollector, Error> {
        let root = root.as_ref().to_path_buf();
        let dir = File::open(&root).map_err(|source| root_error(&root, source))?;
        let workers = tasksnap_sys::cores().min(4);
        let live_ok = is_own_proc(&root);
        Ok(ProcfsCollector {
            root,
            root_fd: OwnedFd::from(dir),
            units: Units::of_this_kernel(0),
            workers,
            cmdline_deadline: Duration::from_millis(20),
            live_ok,
            live: None,
            last: None,
        })
    }

    #[cfg(any(test, feature = "testing"))]
    /// Sets the number of reader threads (at least 1).
    pub fn with_workers(mut self, n: usize) -> ProcfsCollector {
        self.workers = n.max(1);
        self
    }

    #[cfg(any(test, feature = "testing"))]
    /// Sets how long a command line read may block before it is abandoned.
    pub fn with_cmdline_deadline(mut self, d: Duration) -> ProcfsCollector {
        self.cmdline_deadline = d;
        self
    }

    /// Overrides the unit conversions (tests of fake trees from other machines).
    pub fn with_units(mut self, units: Units) -> ProcfsCollector {
        self.units = units;
        self
    }

    /// The root this collector reads.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Numeric entries of a directory (pids or tids), ascending.
    fn list_ids(dir: &Path) -> std::io::Result<Vec<i32>> {
        let mut ids: Vec<i32> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| parse::parse_task_dir_name(&e.file_name()))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn root_error(&self, source: std::io::Error) -> Error {
        root_error(&self.root, source)
    }

    fn items_for(&self, selector: &Selector, leader_as_process: bool) -> Result<Vec<Item>, Error> {
        let proc_item = |tgid| Item {
            tgid,
            tid: None,
            all_threads: false,
            leader_as_process,
        };
        Ok(match selector {
            Selector::Pid(pid) => vec![proc_item(*pid)],
            Selector::ThreadsOf(pid) => {
                match Self::list_ids(&self.root.join(pid.to_string()).join("task")) {
                    Ok(tids) => tids
                        .into_iter()
                        .map(|tid| Item {
                            tgid: *pid,
                            tid: if leader_as_process && tid == *pid {
                                None
                            } else {
                                Some(tid)
                            },
                            all_threads: false,
                            leader_as_process,
                        })
                        .collect(),
                    Err(e) if sys::is_exhaustion(&e) => {
                        let dir = self.root.join(pid.to_string()).join("task");
                        return Err(Error::exhausted(
                            format!("cannot list {}", dir.display()),
                            e,
                        ));
                    }
                    // The process is gone (or never was): an empty answer, not an error.
                    Err(_) => Vec::new(),
                }
            }
            Selector::AllThreads => Self::list_ids(&self.root)
                .map_err(|e| self.root_error(e))?
                .into_iter()
                .map(|tgid| Item {
                    tgid,
                    tid: None,
                    all_threads: true,
                    leader_as_process,
                })
                .collect(),
            Selector::AllProcesses
            | Selector::ChildrenOf(_)
            | Selector::Session(_)
            | Selector::ProcessGroup(_) => Self::list_ids(&self.root)
                .map_err(|e| self.root_error(e))?
                .into_iter()
                .map(proc_item)
                .collect(),
        })
    }

    #[cfg(any(test, feature = "testing"))]
    /// [`ProcfsCollector::try_fill`] for a caller that does without what could not be read:
    /// when the reads ran out of descriptors or memory the answer is empty (every task
    /// missing, none "denied"), and the caller is expected to ask again later.
    pub fn fill(
        &self,
        ids: &[(i32, i32)],
        groups: Groups,
    ) -> (std::collections::HashMap<(i32, i32), Task>, SnapshotStats) {
        self.try_fill(ids, groups).unwrap_or_default()
    }

    /// Reads `groups` for tasks another backend already listed and returns them keyed by
    /// (tgid, tid). `no_mm` tasks (kernel threads, zombies) are given an empty command line
    /// without a read. Used by the BPF backend for what the kernel cannot give it directly.
    /// `Err` when the reads ran out of descriptors or memory ([`Error::Exhausted`]).
    #[allow(clippy::type_complexity)]
    pub fn try_fill(
        &self,
        ids: &[(i32, i32)],
        groups: Groups,
    ) -> Result<(std::collections::HashMap<(i32, i32), Task>, SnapshotStats), Error> {
        let items: Vec<Item> = ids
            .iter()
            .map(|&(tgid, tid)| Item {
                tgid,
                tid: (tid != tgid).then_some(tid),
                all_threads: false,
                leader_as_process: false,
            })
            .collect();
        // The other backend skips kernel threads and zombies itself: no stat before cmdline.
        let (tasks, stats) = self.read_items(items, groups, false)?;
        Ok((
            tasks
                .into_iter()
                .map(|t| ((t.id.tgid, t.id.tid), t))
                .collect(),
            stats,
        ))
    }

    /// The numeric entries of the root directory: every process visible in this procfs.
    pub fn list_pids(&self) -> Result<Vec<i32>, Error> {
        Self::list_ids(&self.root).map_err(|e| self.root_error(e))
    }

    /// Unit conversions in use.
    pub fn units(&self) -> Units {
        self.units
    }

    /// The thread group of task `id`, from its status file (`None`: no such task); `Err`
    /// when the file could not be opened for want of descriptors or memory.
    fn tgid_of(&self, id: i32) -> Result<Option<i32>, Error> {
        let path = self.root.join(id.to_string()).join("status");
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if sys::is_exhaustion(&e) => {
                return Err(Error::exhausted(
                    format!("cannot read {}", path.display()),
                    e,
                ))
            }
            Err(_) => return Ok(None),
        };
        Ok(parse::parse_status_tgid(&text))
    }

    #[cfg(any(test, feature = "testing"))]
    /// System boot time, seconds since the epoch (`btime` of the tree's `stat`); 0 when it
    /// cannot be read.
    pub fn boot_time(&self) -> u64 {
        self.try_boot_time().unwrap_or(0)
    }

    /// [`ProcfsCollector::boot_time`], or `Err` when the tree's `stat` could not be opened
    /// for want of descriptors or memory: a snapshot's start times would all be wrong. On
    /// the kernel's boot clock ([`crate::clock`]), as the start times are.
    pub fn try_boot_time(&self) -> Result<u64, Error> {
        let path = self.root.join("stat");
        match tasksnap_sys::read_small_file(&path) {
            Ok(b) => Ok(parse::parse_btime(&b).map_or(0, |s| self.units.boot.from_proc_btime_s(s))),
            Err(e) if sys::is_exhaustion(&e) => Err(Error::exhausted(
                format!("cannot read {}", path.display()),
                e,
            )),
            Err(_) => Ok(0),
        }
    }
}

/// Why `root` could not be opened or listed: out of descriptors or memory is not about the
/// root ([`Error::Exhausted`]).
fn root_error(root: &Path, source: std::io::Error) -> Error {
    if sys::is_exhaustion(&source) {
        return Error::exhausted(format!("cannot list {}", root.display()), source);
    }
    Error::Root {
        path: root.display().to_string(),
        error: source,
    }
}

/// Whether `root` is this system's /proc for the caller's pid namespace: `self` there is
/// the caller (the process CPU clocks [`live`] probes take the caller's pid numbers).
fn is_own_proc(root: &Path) -> bool {
    crate::units::is_kernel_proc(root)
        && std::fs::read_link(root.join("self"))
            .ok()
            .and_then(|p| parse::parse_self_link(&p))
            .and_then(|pid| u32::try_from(pid).ok())
            == Some(std::process::id())
}

impl ProcfsCollector {
    /// Reads `groups` of `items` on the reader threads, with the command-line deadline
    /// (`stat_for_cmdline`: read `stat` first to skip kernel threads and zombies).
    fn read_items(
        &self,
        items: Vec<Item>,
        groups: Groups,
        stat_for_cmdline: bool,
    ) -> Result<(Vec<Task>, SnapshotStats), Error> {
        pool::read_all(
            self.root.clone(),
            self.root_fd.as_raw_fd(),
            items,
            pool::Config {
                groups,
                units: self.units,
                workers: self.workers,
                cmdline_deadline: self.cmdline_deadline,
                stat_for_cmdline,
                fd_budget: 0,
            },
        )
    }

    /// A live view's refresh through [`live`]: only the processes that ran, appeared or
    /// must be read again.
    fn live_changes(&mut self, query: &Query, mut live: live::Live) -> Result<Changes, Error> {
        self.last = Some(query.groups);
        let full = live.next_is_full();
        let plan = live.plan(&mut live::System { procfs: self }, full);
        let started_before = pool::THREADS_STARTED.load(std::sync::atomic::Ordering::Relaxed);
        if full && plan.read.is_empty() {
            // Not even /proc could be listed: say why, as a snapshot would.
            self.list_pids()?;
        }
        let (mut tasks, mut stats) = self.read_items(live.items(&plan.read), query.groups, true)?;
        let grew = live.grew(&plan.read, &tasks);
        if !grew.is_empty() {
            // Read as one thread, found with more: read again, every thread.
            tasks.retain(|t| grew.binary_search(&t.id.tgid).is_err());
            let items = grew.iter().map(|&tgid| live.item(tgid, true)).collect();
            let (more, more_stats) = self.read_items(items, query.groups, true)?;
            tasks.extend(more);
            pool::add_stats(&mut stats, &more_stats);
        }
        let started = pool::THREADS_STARTED.load(std::sync::atomic::Ordering::Relaxed);
        live.own_forks(started.saturating_sub(started_before));
        let mut gone = plan.gone;
        live.absorb(&plan.read, &tasks, full, &mut gone);
        tasks.sort_unstable_by_key(|t| (t.id.tgid, t.id.tid));
        self.live = Some(live);
        Ok(Changes {
            snapshot: live::snapshot(tasks, stats, self.try_boot_time()?, self.units.boot),
            full,
            gone,
        })
    }
}

impl LiveCollector for ProcfsCollector {
    fn changes(&mut self, query: &Query) -> Result<Changes, Error> {
        let live = match self.live.take() {
            Some(l) if l.follows(query) => Some(l),
            _ if self.live_ok => live::Live::new(query),
            _ => None,
        };
        match live {
            Some(l) => self.live_changes(query, l),
            None => Ok(Changes {
                snapshot: self.snapshot(query)?,
                full: true,
                gone: Vec::new(),
            }),
        }
    }

    fn next_changes_full(&self, query: &Query) -> bool {
        match &self.live {
            Some(l) if l.follows(query) => l.next_is_full(),
            _ => true,
        }
    }
}

impl Collector for ProcfsCollector {
    /// The same reads as a snapshot's, for the listed tasks only.
    fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<crate::collector::Filled, Error> {
        self.try_fill(ids, groups)
    }

    fn report(&self) -> tasksnap_model::PassReport {
        use tasksnap_model::{Backend, CmdlineSource, PassKind, PassReport};
        PassReport {
            kind: if self.last.is_some() {
                PassKind::Procfs
            } else {
                PassKind::None
            },
            cmdlines: self
                .last
                .is_some_and(|g| g.has(Group::Cmdline))
                .then_some(CmdlineSource::Procfs),
            ..PassReport::new(Backend::Procfs, String::new())
        }
    }

    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.last = Some(query.groups);
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = self.units.boot.now_ns();
        let mut groups: Groups = query.groups;
        let filter = match query.selector {
            Selector::ChildrenOf(_) | Selector::Session(_) | Selector::ProcessGroup(_) => {
                groups.insert(Group::Base);
                true
            }
            _ => false,
        };
        let mut items = self.items_for(&query.selector, query.leader_as_process)?;
        if let Selector::Pid(pid) = query.selector {
            // /proc/N exists for every thread id N, not only for processes (it is merely left
            // out of the directory listing): a thread id is not a process.
            if self.tgid_of(pid)?.is_some_and(|tgid| tgid != pid) {
                items.clear();
            }
        }
        let (mut tasks, stats) = self.read_items(items, groups, true)?;
        if filter {
            tasks.retain(|t| {
                let Some(b) = &t.base else { return false };
                match query.selector {
                    Selector::ChildrenOf(p) => b.ppid == p,
                    Selector::Session(s) => b.sid == s,
                    Selector::ProcessGroup(g) => b.pgid == g,
                    _ => true,
                }
            });
            if !query.groups.has(Group::Base) {
                for t in &mut tasks {
                    t.base = None;
                }
            }
        }
        tasks.sort_unstable_by_key(|t| (t.id.tgid, t.id.tid));
        if query.groups.has(Group::Login) {
            crate::login::Login::system(&self.root)
                .fill(&mut tasks, query.groups.has(Group::Cgroup));
        }
        Ok(Snapshot {
            taken_at_unix_ns,
            taken_at_boottime_ns,
            boot_time_unix_s: self.try_boot_time()?,
            backend: tasksnap_model::Backend::Procfs,
            tasks,
            stats,
        })
    }
}
