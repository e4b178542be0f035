//! Reader threads and the watchdog that keeps one blocked task from stalling a listing.
//!
//! The items are split into contiguous ranges, one per reader thread. A reader publishes, in
//! its [`Slot`], the results it has so far and, while it is inside a read that can block on a
//! target's mmap lock (`cmdline`, `smaps_rollup`), the time that read started and the task read so far. The
//! calling thread is the watchdog: if a read has been *blocked* past the deadline (blocked
//! time, not wall time: a reader that waited for a CPU on a busy host is not stuck; see
//! [`crate::blocked`]), it abandons that reader (keeping its results, and the blocked task
//! without its command line) and starts a new reader for the rest of the range. The blocked
//! thread finishes its read whenever the kernel lets it, sees it was abandoned, and exits
//! without touching anything shared.
//!
//! Descriptors: a reader on a thread of its own unshares its descriptor table, keeps its root
//! at descriptor 3 and lets the files it opens pile up from 4 until one `close_range` drops
//! them. RLIMIT_NOFILE bounds descriptor *numbers* in every table, private ones included, so
//! each reader may hold `RLIMIT_NOFILE - 4` of them at most ([`fd_budget`]); with a limit of
//! 16 and a batch of 256, every open past the 12th failed with EMFILE and the task was counted
//! "denied" and left out. A reader that still runs out (EMFILE, ENFILE, ENOMEM)
//! closes what it holds and tries again; if even that fails, the whole collection fails with
//! [`crate::Error::Exhausted`]: never a short listing.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tasksnap_model::{Group, Groups, SnapshotStats, Task};

use super::reader::{Blocking, Item, Outcome, Progress, TaskReader};
use crate::blocked::{self, Count, Watch};
use crate::error::Error;
use crate::units::Units;
use tasksnap_sys::{self as sys, FdBatch};

/// Settings for one pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub groups: Groups,
    pub units: Units,
    pub workers: usize,
    pub cmdline_deadline: Duration,
    /// See [`TaskReader::stat_for_cmdline`].
    pub stat_for_cmdline: bool,
    /// Descriptors a reader may hold at once (set by [`read_all`]: see [`fd_budget`]).
    pub fd_budget: usize,
}

/// Descriptors a reader may hold before one `close_range` (fewer when RLIMIT_NOFILE is low:
/// see [`fd_budget`]).
const FD_BATCH: usize = 256;
/// Below this many items one reader thread is cheaper than starting more.
const MIN_ITEMS_PER_WORKER: usize = 128;
/// Descriptor number a reader with a private table keeps its copy of the root at.
const PRIVATE_ROOT_FD: RawFd = 3;

/// How many descriptors a reader with a private table may hold at once under an open-files
/// limit of `nofile`: the numbers from `PRIVATE_ROOT_FD + 1` up to `nofile - 1`, at most
/// [`FD_BATCH`]. 0 when not even one file can be opened (a limit of 4 or less).
pub(crate) fn fd_budget(nofile: u64) -> usize {
    let first = PRIVATE_ROOT_FD as u64 + 1;
    nofile.saturating_sub(first).min(FD_BATCH as u64) as usize
}

/// Reader threads this process has started: each is a fork to the kernel (`processes` in
/// /proc/stat), which a live view must not take for a new task (see live.rs).
pub(crate) static THREADS_STARTED: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Default)]
struct SlotState {
    abandoned: bool,
    finished: bool,
    /// Index of the item being read.
    current: usize,
    results: Vec<Task>,
    /// The task whose blocking read is in progress, as far as it was read.
    pending: Option<Task>,
    /// Which read that is.
    pending_what: Option<Blocking>,
    stats: SnapshotStats,
    /// What made this reader stop short: the whole collection fails.
    failure: Option<Error>,
}

#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
    /// CLOCK_MONOTONIC ns at which the current blocking read began; 0 when not blocked.
    blocked_since_ns: AtomicU64,
    /// The reader's thread id, for the watchdog's looks (0: on the caller's thread).
    tid: AtomicI32,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // A poisoned lock means a reader panicked; its data is still consistent enough to keep.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct SlotProgress<'a> {
    slot: &'a Slot,
}

impl Progress for SlotProgress<'_> {
    fn before_blocking(&mut self, task: Task, what: Blocking) {
        let mut st = self.slot.lock();
        st.pending = Some(task);
        st.pending_what = Some(what);
        self.slot.blocked_since_ns.store(
            sys::clock_ns(libc::CLOCK_MONOTONIC).max(1),
            Ordering::Release,
        );
    }

    fn after_blocking(&mut self) -> Option<Task> {
        let mut st = self.slot.lock();
        self.slot.blocked_since_ns.store(0, Ordering::Release);
        if st.abandoned {
            return None;
        }
        st.pending.take()
    }
}

/// Ends a reader that cannot go on: records why (the collection fails) and says it is done.
fn fail(slot: &Slot, done: &mpsc::Sender<usize>, id: usize, e: Error) {
    let mut st = slot.lock();
    st.failure = Some(e);
    st.finished = true;
    drop(st);
    let _ = done.send(id);
}

/// The root descriptor a reader reads under, its descriptor batch, and whether the root is
/// a duplicate of its own to close at the end.
///
/// A reader on its own thread gets a private descriptor table: its files can then be closed
/// in batches, and its copy of the root stays valid even if the thread outlives the
/// collector (an abandoned reader). Only on a thread of its own: on the caller's, the table
/// it would unshare and then empty from descriptor 4 up is the caller's (which would lose
/// its BPF programs that way).
fn reader_root(
    root: &Path,
    root_fd: RawFd,
    own_thread: bool,
    fd_budget: usize,
) -> Result<(RawFd, FdBatch, bool), Error> {
    if own_thread
        && sys::unshare_files().is_ok()
        && sys::dup2(root_fd, PRIVATE_ROOT_FD).is_ok()
        && sys::close_from(PRIVATE_ROOT_FD + 1).is_ok()
    {
        Ok((
            PRIVATE_ROOT_FD,
            FdBatch::new(Some(PRIVATE_ROOT_FD + 1), fd_budget),
            false,
        ))
    } else if !own_thread {
        // On the caller's thread the reader cannot outlive the collector: its root will do
        // (and the caller's table, shared with everything else, is spared a descriptor).
        Ok((root_fd, FdBatch::new(None, 1), false))
    } else {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) only creates a new descriptor for an open one.
        let dup = unsafe { libc::fcntl(root_fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            let e = std::io::Error::last_os_error();
            let what = format!("cannot duplicate the descriptor of {}", root.display());
            let e = if sys::is_exhaustion(&e) {
                Error::exhausted(what, e)
            } else {
                Error::Root {
                    path: root.display().to_string(),
                    error: e,
                }
            };
            return Err(e);
        }
        Ok((dup, FdBatch::new(None, 1), true))
    }
}

#[allow(clippy::too_many_arguments)]
fn run_reader(
    root: PathBuf,
    root_fd: RawFd,
    items: Arc<Vec<Item>>,
    range: std::ops::Range<usize>,
    cfg: Config,
    slot: Arc<Slot>,
    id: usize,
    done: mpsc::Sender<usize>,
    own_thread: bool,
) {
    if own_thread {
        slot.tid.store(sys::gettid(), Ordering::Release);
    }
    let (my_root, batch, own_dup) = match reader_root(&root, root_fd, own_thread, cfg.fd_budget) {
        Ok(r) => r,
        Err(e) => return fail(&slot, &done, id, e),
    };
    let mut reader = TaskReader::new(my_root, cfg.groups, cfg.units, batch);
    reader.stat_for_cmdline = cfg.stat_for_cmdline;
    let mut progress = SlotProgress { slot: &slot };
    let mut expanded: Vec<i32> = Vec::new();

    for index in range {
        {
            let mut st = slot.lock();
            if st.abandoned {
                return;
            }
            st.current = index;
        }
        let item = items[index];
        expanded.clear();
        if item.all_threads {
            let dir = root.join(item.tgid.to_string()).join("task");
            let mut listed = list_tids(&dir, &mut expanded);
            if listed.as_ref().is_err_and(sys::is_exhaustion) {
                // Out of descriptors (or memory): close what the batch holds and try again.
                reader.flush();
                listed = list_tids(&dir, &mut expanded);
            }
            match listed {
                Ok(()) => {}
                Err(e) if sys::is_exhaustion(&e) => {
                    let what = format!("cannot list {}", dir.display());
                    return fail(&slot, &done, id, Error::exhausted(what, e));
                }
                Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                    reader.stats.denied += 1;
                    continue;
                }
                Err(_) => {
                    reader.stats.vanished += 1;
                    continue;
                }
            }
            expanded.sort_unstable();
        }
        let mut one = |tid: Option<i32>| -> bool {
            let outcome = reader.read(item.tgid, tid, &mut progress);
            let mut st = slot.lock();
            if st.abandoned || matches!(outcome, Outcome::Abandoned) {
                return false;
            }
            st.stats = reader.stats;
            match outcome {
                Outcome::Read(task) => st.results.push(*task),
                Outcome::Failed(path, e) => {
                    let what = format!("cannot read {}", root.join(path).display());
                    st.failure = Some(Error::exhausted(what, e));
                    st.finished = true;
                    return false;
                }
                _ => {}
            }
            true
        };
        if item.all_threads {
            for &tid in &expanded {
                let which = if item.leader_as_process && tid == item.tgid {
                    None
                } else {
                    Some(tid)
                };
                if !one(which) {
                    return stopped(&slot, &done, id);
                }
            }
        } else if !one(item.tid) {
            return stopped(&slot, &done, id);
        }
    }
    reader.flush();
    if own_dup {
        sys::close(my_root);
    }
    let mut st = slot.lock();
    st.stats = reader.stats;
    st.finished = true;
    drop(st);
    let _ = done.send(id);
}

/// A reader that stopped early: when it failed (rather than being abandoned), the watchdog
/// must hear of it now.
fn stopped(slot: &Slot, done: &mpsc::Sender<usize>, id: usize) {
    if slot.lock().failure.is_some() {
        let _ = done.send(id);
    }
}

/// The thread ids of a task directory (`/proc/PID/task`), into `out`.
fn list_tids(dir: &std::path::Path, out: &mut Vec<i32>) -> std::io::Result<()> {
    out.clear();
    for e in std::fs::read_dir(dir)? {
        match e {
            Ok(e) => out.extend(tasksnap_procfs::parse::parse_task_dir_name(&e.file_name())),
            // The process exited while listed: what was listed stands.
            Err(e) if !sys::is_exhaustion(&e) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads every item, in parallel where it pays, and returns the tasks (unordered) and counts;
/// `Err` when a reader ran out of descriptors or memory (see the module header).
pub(crate) fn read_all(
    root: PathBuf,
    root_fd: RawFd,
    items: Vec<Item>,
    mut cfg: Config,
) -> Result<(Vec<Task>, SnapshotStats), Error> {
    cfg.fd_budget = fd_budget(sys::nofile_limit());
    let n = items.len();
    let items = Arc::new(items);
    let workers = cfg.workers.min(n / MIN_ITEMS_PER_WORKER).max(1);
    let (tx, rx) = mpsc::channel::<usize>();

    // (slot, end of its range)
    let mut slots: Vec<(Arc<Slot>, usize)> = Vec::new();
    let mut active = 0usize;
    let spawn = |start: usize, end: usize, slots: &mut Vec<(Arc<Slot>, usize)>| {
        let slot = Arc::new(Slot::default());
        slot.lock().results.reserve_exact(end - start);
        let id = slots.len();
        slots.push((slot.clone(), end));
        let (r, it, t, s) = (root.clone(), items.clone(), tx.clone(), slot.clone());
        // The thread is there for the watchdog, which abandons a command-line (or environ,
        // or smaps_rollup) read stuck on its target's mmap lock. Without those, a few tasks
        // (pid 1, which the BPF walk passes over here, and what it could not fill) are read
        // right here: a thread costs ~15 system calls of its own.
        let g = &cfg.groups;
        let spawned = if g
            .intersects(const { Groups::of(&[Group::Cmdline, Group::Environ, Group::Smaps]) })
            || n >= MIN_ITEMS_PER_WORKER
        {
            std::thread::Builder::new()
                .name("tasksnap-procfs".into())
                .spawn(move || run_reader(r, root_fd, it, start..end, cfg, s, id, t, true))
        } else {
            Err(std::io::Error::other("read here"))
        };
        if spawned.is_ok() {
            THREADS_STARTED.fetch_add(1, Ordering::Relaxed);
        }
        if spawned.is_err() {
            // No thread to be had (or none wanted): read this range on the calling thread,
            // without a watchdog.
            run_reader(
                root.clone(),
                root_fd,
                items.clone(),
                start..end,
                cfg,
                slot,
                id,
                tx.clone(),
                false,
            );
        }
    };
    for w in 0..workers {
        let (start, end) = (n * w / workers, n * (w + 1) / workers);
        spawn(start, end, &mut slots);
        active += 1;
    }

    let deadline_ns = cfg.cmdline_deadline.as_nanos() as u64;
    let tick = (cfg.cmdline_deadline / 4).max(Duration::from_millis(1));
    let mut tasks = Vec::with_capacity(n);
    let mut stats = SnapshotStats::default();
    let mut harvested = vec![false; slots.len()];
    let mut watches: Vec<Watch> = vec![Watch::default(); slots.len()];

    while active > 0 {
        match rx.recv_timeout(tick) {
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let mut i = 0;
        while i < slots.len() {
            if harvested.get(i).copied().unwrap_or(false) {
                i += 1;
                continue;
            }
            let (slot, end) = (slots[i].0.clone(), slots[i].1);
            // Looked at without the slot's lock: the reader takes it when its read returns.
            let since = slot.blocked_since_ns.load(Ordering::Acquire);
            let tid = slot.tid.load(Ordering::Acquire);
            watches.resize_with(slots.len(), Watch::default);
            let expired = since != 0
                && watches[i].expired(since, now, deadline_ns, Count::Total, || blocked::look(tid));
            let mut st = slot.lock();
            if let Some(e) = st.failure.take() {
                drop(st);
                // Stop every reader still going: their results are of no use now.
                for (s, _) in &slots {
                    s.lock().abandoned = true;
                }
                return Err(e);
            }
            if st.finished {
                // Move out and drop the reader's vector at once: no second copy lingers.
                tasks.extend(std::mem::take(&mut st.results));
                add_stats(&mut stats, &st.stats);
                harvested[i] = true;
                active -= 1;
            } else {
                // Still the same read (the reader clears the time under this lock).
                if expired && slot.blocked_since_ns.load(Ordering::Acquire) == since {
                    abandon(&mut st, &mut tasks, &mut stats);
                    harvested[i] = true;
                    let next = st.current + 1;
                    drop(st);
                    active -= 1;
                    if next < end {
                        spawn(next, end, &mut slots);
                        harvested.push(false);
                        active += 1;
                    }
                }
            }
            i += 1;
        }
    }
    Ok((tasks, stats))
}

/// Gives up a reader stuck past the deadline: what it read so far is kept, and the task it
/// was reading too, without what the stuck read was to give.
fn abandon(st: &mut SlotState, tasks: &mut Vec<Task>, stats: &mut SnapshotStats) {
    st.abandoned = true;
    tasks.extend(std::mem::take(&mut st.results));
    add_stats(stats, &st.stats);
    if let Some(mut t) = st.pending.take() {
        // A stuck cmdline read leaves the command line out; a stuck environ or smaps_rollup
        // read (after it) the environment or PSS/USS, and the command line stays.
        if st.pending_what == Some(Blocking::Cmdline) {
            t.cmdline = None;
            t.cmdline_timed_out = true;
        }
        tasks.push(t);
    }
    stats.cmdline_timeouts += 1;
}

pub(crate) fn add_stats(total: &mut SnapshotStats, s: &SnapshotStats) {
    total.vanished += s.vanished;
    total.denied += s.denied;
    total.unparsable += s.unparsable;
    total.cmdline_timeouts += s.cmdline_timeouts;
    total.partial += s.partial;
}

#[cfg(test)]
mod tests {
    use crate::procfs::pool::*;

    /// Regression: a reader held up to 256 descriptors whatever the limit, so under
    /// `--nofile=16` every open past the 12th failed.
    #[test]
    fn readers_hold_no_more_descriptors_than_the_open_files_limit_leaves() {
        // Descriptors 0-2 and the root at 3 stay: the rest of the numbers are the budget.
        assert_eq!(fd_budget(4), 0);
        assert_eq!(fd_budget(5), 1);
        assert_eq!(fd_budget(16), 12);
        assert_eq!(fd_budget(256), 252);
        assert_eq!(fd_budget(1 << 20), FD_BATCH);
        assert_eq!(fd_budget(0), 0);
    }
}
