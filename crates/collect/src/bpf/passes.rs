//! One pass over the tasks: the task iterator (`iter/task`, read by one reader thread per
//! shard, or attached to one process), or with a walker the walk into the arena (`walk_tasks`,
//! see arena.rs), which a full pass prefers; plus the records of the last pass and the task
//! vector made ready for the next snapshot meanwhile.

use std::fs::File;
use std::io;

use tasksnap_model::Task;

use super::settings::pass_shards;
use super::kept::Output;
use super::{arena, decode, programs, BpfCollector};
use tasksnap_bpf::skel::task_iter as skel;
use tasksnap_sys as sys;
use crate::error::Error;

/// Why the walk (or a changed-only walk after it) could not give a pass: the caller then
/// takes the iterator instead, and says why in its report.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// The programs have no walk (not in the pinned set, or not loaded yet).
    #[error("no walk")]
    NoWalk,
    /// The arena the walk writes into could not be made.
    #[error("no arena for the walk: {0}")]
    NoArena(#[source] std::io::Error),
    /// The walk itself failed.
    #[error("the walk failed: {0}")]
    Failed(#[source] std::io::Error),
    /// More tasks than the arena holds.
    #[error("the walk's arena ({chunks} chunks) was full: {overflow} tasks did not fit")]
    Full {
        /// The arena's chunks.
        chunks: usize,
        /// Tasks that did not fit.
        overflow: u32,
    },
    /// The roll (every tid, to find the threads gone) failed.
    #[error("the roll failed: {0}")]
    RollFailed(#[source] std::io::Error),
    /// The roll did not fit in the arena.
    #[error("the roll did not fit in the arena")]
    RollFull,
    /// The change set lost changes: a whole pass reads everything.
    #[error(transparent)]
    ChangesLost(#[from] super::changeset::Lost),
    /// The records written could not be parsed.
    #[error(transparent)]
    Records(#[from] decode::RecordError),
    /// A read from /proc the walk's pass needs failed (descriptors or memory ran out).
    #[error(transparent)]
    Procfs(#[from] Box<Error>),
}

impl Output {
    /// The records of the last pass (from the arena when it was a walk).
    pub fn records(&self) -> Result<Vec<decode::Record<'_>>, decode::RecordError> {
        pass_records(&self.buf, self.arena.as_ref(), self.walked.as_deref())
    }
}

/// How a full pass runs, decided by its caller before it starts (snapshot.rs).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shape {
    /// A walk runs as one shard (the other core faults in the task vector meanwhile: see
    /// [`BpfCollector::prefault_tasks`]).
    pub one_shard: bool,
    /// A walk reads command lines too, without the mmap lock (cmdlines.rs).
    pub lines: bool,
}

impl BpfCollector {
    /// One pass with `groups` over every task (split across `shards` reader threads), or
    /// over one process's threads; raw records into `self.out.buf`.
    pub(super) fn pass_of(
        &mut self,
        groups: u32,
        process: Option<i32>,
        shape: Shape,
    ) -> Result<(), Error> {
        let fail = |source: std::io::Error| {
            if sys::is_exhaustion(&source) {
                // Out of descriptors for the iterator files: a clear error, not a listing
                // without the tasks (see `DESCRIPTORS_FOR_A_PASS`).
                Error::exhausted("cannot read the BPF task iterator", source)
            } else {
                Error::Root {
                    path: "bpf task iterator".into(),
                    error: source,
                }
            }
        };
        self.out.buf.clear();
        self.out.walked = None;
        // TASKSNAP_NO_WALK=1 keeps to the iterator (tests compare the two; benchmarks too).
        let walk = self.settings.walk_allowed();
        if walk && process.is_none() && self.progs.walker.is_some() {
            match self.walk(groups, shape) {
                Ok(()) => return Ok(()),
                Err(why) => self.walk_problem = Some(why.to_string()),
            }
        }
        if let Some(pid) = process {
            let bufs =
                read_sharded(&self.progs, groups, 1, 0, None, |p| p.process_iter(pid))
                    .map_err(fail)?;
            self.out.buf = bufs.into_iter().next().unwrap_or_default();
            return Ok(());
        }
        // Size the buffers once for the tasks there are (and some that may fork meanwhile).
        let per_task = decode::record_size(groups) as u64;
        let tasks = crate::machine::kernel_task_count().unwrap_or(1024);
        let want = (tasks + tasks / 8 + 64) * per_task;
        if self.settings.low_cpu {
            let mut buf = std::mem::take(&mut self.out.buf);
            buf.reserve(want as usize);
            let r = read_into(&self.progs, groups, |p| p.task_iter(), &mut buf);
            self.out.buf = buf;
            return r.map_err(fail);
        }
        let shards = pass_shards();
        let bufs = read_sharded(&self.progs, groups, shards, want as usize, None, |p| {
            p.task_iter()
        })
        .map_err(fail)?;
        let mut bufs = bufs.into_iter();
        self.out.buf = bufs.next().unwrap_or_default();
        for b in bufs {
            self.out.buf.extend_from_slice(&b);
        }
        Ok(())
    }

    /// Makes sure the arena holds a pass of `groups` over the tasks there are now (and a
    /// quarter more), creating a bigger one when it does not (which needs CAP_BPF: after
    /// capabilities are dropped the arena there is stays).
    pub(super) fn ensure_arena(&mut self, groups: u32, shards: usize) -> Result<(), WalkError> {
        let tasks = crate::machine::kernel_task_count().unwrap_or(1024);
        // Kernel threads' records carry their name too.
        let per_task = decode::record_size(groups) + 16;
        let walk_need = arena::chunks_for(tasks, per_task, shards);
        let Some(walker) = &self.progs.walker else {
            return Err(WalkError::NoWalk);
        };
        // The command-line copy's region follows the walk's chunks (processes are at most
        // the tasks).
        let region = (self.cmd.region_wanted && walker.cmd_prog.is_some())
            .then(|| arena::CmdRegion::at(walk_need, tasks, pass_shards()));
        let need = region.map_or(walk_need, |r| r.end());
        // Only the walk's chunks are mapped here: the copy's requests go in by map updates
        // and its output is read through a mapping of its own.
        let fits = |a: &arena::Arena| a.entries >= need && a.chunks() >= walk_need;
        if !self.out.arena.as_ref().is_some_and(fits) {
            if let Err(e) = walker.arena(need, walk_need, &mut self.out.arena) {
                // A smaller arena there is stays: the walk says when it overflows.
                if self.out.arena.is_none() {
                    return Err(WalkError::NoArena(e));
                }
            }
        }
        if let Some(a) = &mut self.out.arena {
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
    fn walk(&mut self, groups: u32, shape: Shape) -> Result<(), WalkError> {
        let shards = if self.settings.low_cpu || shape.one_shard {
            1
        } else {
            pass_shards()
        };
        self.ensure_arena(groups, shards)?;
        let (Some(walker), Some(arena)) = (&self.progs.walker, &self.out.arena) else {
            return Err(WalkError::NoWalk);
        };
        let how = arena::WalkMode {
            lines: shape.lines,
            ..Default::default()
        };
        self.out.walked = Some(walk_checked(walker, arena, groups, shards, how)?);
        Ok(())
    }

    /// Whether the next full pass will be a walk (the walk is there, with an arena, and not
    /// turned off), and not one of a live view that asked to spare the CPU.
    pub(super) fn can_walk(&self) -> bool {
        self.settings.walk_allowed()
            && !self.settings.low_cpu
            && self.progs.walker.is_some()
            && self.out.arena.is_some()
    }

    /// The vector the next snapshot's tasks go into, sized for the tasks there are (and an
    /// eighth more) and faulted in on a thread of its own while the walk runs. At 50,000
    /// tasks it is ~20 MB, and its page faults (2 MiB pages zeroed: see
    /// `sys::advise_huge_pages`) were up to a third of the CPU of `ps -e -o ...`, on the
    /// main thread after the walk. `None` when the recycled vector is big enough already
    /// (a live view's), or no thread can be had.
    pub(super) fn prefault_tasks(&mut self) -> Option<std::thread::JoinHandle<Vec<Task>>> {
        let tasks = crate::machine::kernel_task_count()? as usize;
        let want = tasks + tasks / 8 + 64;
        if self.out.spare.capacity() >= want {
            return None;
        }
        let mut v = std::mem::take(&mut self.out.spare);
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

    /// The raw bytes of one pass with base (and `cred`/`stat` when asked) records: the cost of
    /// the iterator alone, for `bench`.
    pub fn raw_pass(&mut self, cred: bool, stat: bool) -> Result<usize, Error> {
        self.pass(1 | if cred { 2 } else { 0 } | if stat { 4 } else { 0 })?;
        if let Some(outs) = &self.out.walked {
            return Ok(outs
                .iter()
                .map(|o| (o.last + 1 - o.first) * arena::CHUNK_BYTES)
                .sum());
        }
        Ok(self.out.buf.len())
    }

    /// One pass with `groups` over every task.
    pub(super) fn pass(&mut self, groups: u32) -> Result<(), Error> {
        self.pass_of(groups, None, Shape::default())
    }
}

/// Reads one iterator file to its end into a buffer of `want` bytes' capacity.
fn read_all(mut f: File, want: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(want.max(64 << 10));
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// One pass read by the calling thread into `buf` (cleared; its capacity is kept from pass to
/// pass, so a periodic refresh does not fault in a fresh buffer every time).
pub fn read_into(
    progs: &programs::Programs,
    groups: u32,
    open: impl Fn(&programs::Programs) -> io::Result<File>,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    use std::io::Read;
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() } as u32;
    let cfg = skel::types::ts_reader_cfg {
        groups,
        nshards: 1,
        ..Default::default()
    };
    progs.register(tid, &cfg)?;
    buf.clear();
    let r = open(progs).and_then(|mut f| f.read_to_end(buf));
    progs.unregister(tid);
    r.map(|_| ())
}

/// One pass split over `shards` reader threads (the calling thread alone when 1): each
/// registers its thread id with `groups` and its shard, opens a fresh iterator with `open`,
/// and reads it to the end. The buffers come back in shard order. Each reader is listed in
/// `watched`, when given, while it reads (a watcher then tells a stuck pass from a slow one).
pub(crate) fn read_sharded(
    progs: &programs::Programs,
    groups: u32,
    shards: usize,
    want_bytes: usize,
    watched: Option<&crate::blocked::Threads>,
    open: impl Fn(&programs::Programs) -> io::Result<File> + Sync,
) -> io::Result<Vec<Vec<u8>>> {
    let one = |shard: usize| -> io::Result<Vec<u8>> {
        let _listed = watched.map(|w| w.enter());
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() } as u32;
        let cfg = skel::types::ts_reader_cfg {
            groups,
            shard: shard as u32,
            nshards: shards as u32,
            ..Default::default()
        };
        progs.register(tid, &cfg)?;
        let r = open(progs).and_then(|f| read_all(f, want_bytes / shards.max(1)));
        progs.unregister(tid);
        r
    };
    if shards <= 1 {
        return Ok(vec![one(0)?]);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..shards)
            .map(|shard| s.spawn(move || one(shard)))
            .collect();
        let mut out = vec![one(0)?];
        for h in handles {
            out.push(
                h.join()
                    .map_err(|_| io::Error::other("an iterator reader thread panicked"))??,
            );
        }
        Ok(out)
    })
}

/// A walk into `arena` as `how` says; `Err` says why the caller must use the iterator
/// instead (the walk failed, or more tasks than the arena holds).
pub(super) fn walk_checked(
    walker: &programs::Walker,
    arena: &arena::Arena,
    groups: u32,
    shards: usize,
    how: arena::WalkMode,
) -> Result<Vec<arena::ShardOut>, WalkError> {
    let outs = walker
        .walk(arena, groups, shards, how)
        .map_err(WalkError::Failed)?;
    if let Some(o) = outs.iter().find(|o| o.overflow > 0) {
        return Err(WalkError::Full {
            chunks: arena.chunks(),
            overflow: o.overflow,
        });
    }
    Ok(outs)
}

/// The records of the last pass: from the arena when it was a walk, else from `buf`.
pub(super) fn pass_records<'a>(
    buf: &'a [u8],
    arena: Option<&'a arena::Arena>,
    walked: Option<&[arena::ShardOut]>,
) -> Result<Vec<decode::Record<'a>>, decode::RecordError> {
    let (Some(arena), Some(outs)) = (arena, walked) else {
        return decode::records(buf);
    };
    let n: u32 = outs.iter().map(|o| o.records).sum();
    let mut out: Vec<decode::Record<'a>> = Vec::with_capacity(n as usize);
    tasksnap_sys::advise_huge_pages(
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

#[cfg(test)]
mod tests {
    use crate::bpf::passes::*;
    use crate::bpf::{arena, decode};
    use tasksnap_loadgen::root_or_skip;
    use tasksnap_model::{Group, Groups};

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
        let groups = Groups::of(&[Group::Base, Group::Cmdline]);
        let mut c = BpfCollector::load_fresh(true, true).expect("BPF loads as root");
        c.prepare_arena(&groups);
        c.pass(decode::group_bits(&groups)).expect("walk");
        let records = c.out.records().expect("records");
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
        let a = c.out.arena.as_ref().expect("arena");
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
        let recs = c.out.records().expect("records");
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
