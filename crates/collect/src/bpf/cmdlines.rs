//! Command lines: how a snapshot reads them, decided once before its pass
//! ([`CmdlinePlan`]), and the ways there are: the walk's lines read without the mmap lock,
//! the copy by pid list (`copy_cmdlines`) for what the walk left, and the sleepable iterator
//! (`iter.s/task`) when there is no walk. Each runs on threads of its own under a deadline
//! that counts blocked time ([`CmdlinePass::finish`]); what none gives is read from /proc by
//! the caller (snapshot.rs).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use tasksnap_model::{Group, Groups, Query, SnapshotStats, Task};

use super::lap::Lap;
use super::kept::{Source, State};
use super::pass_index::cmd_request;
use super::{arena, decode, BpfCollector};
use tasksnap_sys as sys;

/// How a snapshot reads its command lines, decided before its pass from the query and what
/// this collector has; replaces flags set and reset around the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CmdlinePlan {
    /// Not asked for.
    NotAsked,
    /// One process asked for: the sleepable iterator once its tasks are made (and /proc for
    /// what it does not give).
    After,
    /// The sleepable iterator, started before the pass and running while it is read.
    Iterator,
    /// The walk reads them (without the mmap lock when `lockless`), and the copy by pid list
    /// takes what it left; should the walk or the copy not run, the sleepable iterator.
    Walk {
        /// Whether the walk reads lines itself (x86-64, not `TASKSNAP_NO_LOCKLESS`).
        lockless: bool,
    },
}

impl Source {
    /// How `-v` says it.
    pub fn text(self) -> &'static str {
        match self {
            Source::Walk => "from the walk",
            Source::Copied => "copied by pid list",
            Source::Iterator => "read by the sleepable iterator",
        }
    }
}

impl State {
    /// Forgets the last snapshot's figures, before a new one.
    pub fn reset(&mut self) {
        self.how = None;
        self.copied.set(0);
        self.lockless.store(0, Ordering::Relaxed);
    }
}

/// The command-line pass is given up, and /proc used instead, when one of its threads has
/// been blocked this long without running in between: it is queued on one target's mmap
/// lock (the procfs reader gives up one read at the same deadline). Blocked time, not wall
/// time: on a busy host the pass may take long and still be making progress (see
/// crate::blocked).
const CMDLINE_PASS_STUCK: std::time::Duration = std::time::Duration::from_millis(20);

/// ... or when one of its threads has been blocked this long in all; and, when its threads
/// cannot be looked at, after this much wall time (the deadline it had before).
const CMDLINE_PASS_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// How often the caller looks at a command-line pass's threads while it waits for it.
const CMDLINE_PASS_TICK: std::time::Duration = std::time::Duration::from_millis(5);

/// A command-line pass under way (it runs while the main pass is read and decoded).
pub(super) struct CmdlinePass {
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
pub(super) enum PassEnd {
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

impl BpfCollector {
    /// How the next snapshot with `groups` reads its command lines.
    pub(super) fn cmdline_plan(&self, groups: &Groups, one_process: Option<i32>) -> CmdlinePlan {
        if !groups.has(Group::Cmdline) {
            CmdlinePlan::NotAsked
        } else if one_process.is_some() {
            CmdlinePlan::After
        } else if self.can_copy_cmdlines() {
            CmdlinePlan::Walk {
                lockless: !self.settings.lockless_off,
            }
        } else {
            CmdlinePlan::Iterator
        }
    }

    /// Attaches command lines to `tasks`: the walk's `walk_lines`, and those of `started`
    /// (or, when neither is there, of a sleepable iterator pass run now). Returns whether
    /// some are still missing (flagged, or born after the pass), for /proc to read.
    pub(super) fn attach_cmdlines(
        &mut self,
        tasks: &mut [Task],
        query: &Query,
        started: Option<CmdlinePass>,
        walk_lines: Option<HashMap<i32, Vec<u8>>>,
        stats: &mut SnapshotStats,
        lap: &mut Lap,
    ) -> bool {
        let pass = self.cmdline_pass_or_start(started, walk_lines.is_some());
        let Some(mut cmds) = gather_cmdlines(&mut self.cmd, pass, walk_lines, stats, lap) else {
            return true;
        };
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
        tasks.iter().any(|t| t.cmdline.is_none())
    }

    /// The pass that reads the command lines: `started`, or, when neither it nor the walk's
    /// lines are there, a sleepable iterator pass started now.
    pub(super) fn cmdline_pass_or_start(
        &self,
        started: Option<CmdlinePass>,
        walk_lines: bool,
    ) -> Option<CmdlinePass> {
        match started {
            Some(p) => Some(p),
            None if walk_lines => None,
            None => self.start_cmdline_pass(),
        }
    }

    /// The command-line pass, on its own thread under `deadline`: it takes each target's mmap
    /// lock, and one process stuck in mmap must not stall the listing. `None` when there is
    /// no command-line iterator or the pass missed the deadline (the abandoned thread finishes
    /// on its own); the caller then reads command lines from /proc, where a watchdog
    /// abandons the one read that blocks.
    pub(super) fn start_cmdline_pass(&self) -> Option<CmdlinePass> {
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
                let r = super::passes::read_sharded(&progs, 0, shards, 1 << 20, Some(&threads), |p| {
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
        let walk = self.settings.walk_allowed();
        walk && self
            .progs
            .walker
            .as_ref()
            .is_some_and(|w| w.cmd_prog.is_some())
            && self.out.arena.as_ref().is_some_and(|a| a.cmd.is_some())
            && !self.cmd.busy.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The command lines the last walk read, by tgid (flagged ones left out: the copy and
    /// then /proc take those), decoded on a thread of their own while the caller assembles
    /// the tasks; `None` when the walk read none.
    pub(super) fn walk_lines_job(&self) -> Option<std::thread::JoinHandle<HashMap<i32, Vec<u8>>>> {
        let outs = self.out.walked.as_deref()?;
        let arena = self.out.arena.as_ref()?;
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

    /// The command-line copy for the processes of a walk's `records` (kernel threads have
    /// none) that `have` lacks: [`BpfCollector::start_copy_of`].
    pub(super) fn start_cmdline_copy(
        &self,
        records: &[decode::Record<'_>],
        have: Option<&HashMap<i32, Vec<u8>>>,
    ) -> Option<CmdlinePass> {
        if !self.can_copy_cmdlines() {
            return None;
        }
        let reqs: Vec<arena::CmdRequest> = records
            .iter()
            .filter(|r| have.is_none_or(|h| !h.contains_key(&(r.hdr.tgid as i32))))
            .filter_map(cmd_request)
            .collect();
        self.start_copy_of(reqs)
    }

    /// The command lines of the processes `ids` of the last pass, copied by pid list, when
    /// the copy can run and finishes in time: what it could not read (flagged lines, a
    /// process gone) is left out, for /proc. A live view's fill of new processes.
    pub(super) fn copy_lines_of(&self, ids: &[(i32, i32)]) -> Option<HashMap<i32, Vec<u8>>> {
        if !self.can_copy_cmdlines() {
            return None;
        }
        match self.start_copy_of(self.pass_index.cmd_requests(ids))?.finish() {
            PassEnd::Lines(lines) => Some(lines),
            PassEnd::Stuck | PassEnd::Failed => None,
        }
    }

    /// The command-line copy for `reqs`, on its own threads under the same deadline as the
    /// iterator's pass: each shard takes an equal, contiguous share of the list. `None` when
    /// it cannot start (the caller then uses the iterator, or /proc).
    fn start_copy_of(&self, reqs: Vec<arena::CmdRequest>) -> Option<CmdlinePass> {
        use std::sync::atomic::Ordering;
        let arena = self.out.arena.as_ref()?;
        let region = arena.cmd?;
        let prog = self
            .progs
            .walker
            .as_ref()?
            .cmd_prog
            .as_ref()?
            .try_clone()
            .ok()?;
        self.cmd.copied.set(reqs.len());
        if reqs.is_empty() || reqs.len() > region.capacity() {
            return None;
        }
        arena.put_cmd_requests(&region, &reqs).ok()?;
        let view = arena
            .view(region.out_chunk, region.shards * region.out_per_shard)
            .ok()?;
        let n = reqs.len();
        let shards = region.shards.min(n.max(1));
        let busy = self.cmd.busy.clone();
        busy.store(true, Ordering::Release);
        self.cmd.lockless.store(0, Ordering::Relaxed);
        let (lockless, levels) = (self.cmd.lockless.clone(), self.cmd.dmap_levels.clone());
        let locked = self.settings.lockless_off;
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
            self.cmd.busy.store(false, Ordering::Release);
            return None;
        }
        Some(pass)
    }
}

/// The command lines of a pass by tgid: the walk's `walk_lines` and those of `pass`, when
/// it finishes in time (`None`: there are none, /proc is read for every one); says in `cmd`
/// where they came from.
pub(super) fn gather_cmdlines(
    cmd: &mut State,
    pass: Option<CmdlinePass>,
    walk_lines: Option<HashMap<i32, Vec<u8>>>,
    stats: &mut SnapshotStats,
    lap: &mut Lap,
) -> Option<HashMap<i32, Vec<u8>>> {
    cmd.how = if walk_lines.is_some() {
        Some(Source::Walk)
    } else {
        pass.as_ref().map(|p| {
            if p.copy {
                Source::Copied
            } else {
                Source::Iterator
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
    cmds
}
