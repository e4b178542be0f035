//! Reads one task's files from a procfs tree: only the files the requested groups need, through
//! paths relative to the root directory descriptor, into buffers reused across tasks.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use tasksnap_model::{
    Base, Cgroup, Cred, Group, Groups, Mem, Sched, Signals, SnapshotStats, Stat, Task, TaskId,
    TaskState, PF_KTHREAD,
};

use tasksnap_procfs::parse::{self, StatLine};
use tasksnap_sys::{self as sys, FdBatch};

use crate::units::Units;

/// One unit of work: a process, or one thread of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub tgid: i32,
    /// `Some(tid)` to read `tgid/task/tid`; `None` to read `tgid` itself.
    pub tid: Option<i32>,
    /// Expand into every thread of `tgid` (listing `tgid/task` on the worker).
    pub all_threads: bool,
    /// Read the thread whose tid is the tgid through `tgid/` (process-wide values).
    pub leader_as_process: bool,
}

/// How one task's read ended.
#[derive(Debug)]
pub enum Outcome {
    /// Read (possibly with some groups denied).
    Read(Box<Task>),
    /// The task exited while it was read.
    Vanished,
    /// A file had an impossible shape.
    Unparsable,
    /// The watchdog gave up on this reader while it was blocked.
    Abandoned,
    /// A file (its path under the root) could not be opened or read for want of descriptors
    /// or memory, even after the reader closed everything it held: the whole collection
    /// must fail (see [`crate::Error::Exhausted`]).
    Failed(String, io::Error),
}

/// Errors of one file read, classified the way procps treats them.
enum FileError {
    /// ENOENT/ESRCH: the task is gone.
    Gone,
    /// EACCES/EPERM and anything else about the task: this group is unavailable to us.
    Denied,
    /// EMFILE/ENFILE/ENOMEM: not about the task at all (see [`sys::is_exhaustion`]).
    Exhausted(io::Error),
}

fn classify(e: io::Error) -> FileError {
    if sys::is_exhaustion(&e) {
        return FileError::Exhausted(e);
    }
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => FileError::Gone,
        _ => FileError::Denied,
    }
}

/// Per-thread reading state: buffers and the descriptor batch.
#[derive(Debug)]
pub struct TaskReader {
    root_fd: RawFd,
    groups: Groups,
    units: Units,
    path: Vec<u8>,
    buf: Vec<u8>,
    cmd_buf: Vec<u8>,
    fds: FdBatch,
    /// Largest command line kept, bytes (procps keeps 128 KiB).
    pub max_cmdline_bytes: usize,
    /// Counters for this reader.
    pub stats: SnapshotStats,
    /// Read `stat` before `cmdline` to skip kernel threads and zombies. Off when filling in
    /// groups for tasks another backend already knows (it skips those tasks itself).
    pub stat_for_cmdline: bool,
    /// The last process's command line, reused for its other threads.
    cmdline_cache: Option<(i32, Vec<u8>)>,
}

/// A read that can block on the target's mmap lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    /// /proc/PID/cmdline (`get_mm_cmdline()` pins the pages of the argument area).
    Cmdline,
    /// /proc/PID/smaps_rollup (`show_smaps_rollup()` walks every mapping under the lock).
    Smaps,
    /// /proc/PID/environ (`environ_read()` copies the target's memory under the lock).
    Environ,
}

/// The ns links, in `NS_NAMES` order, as paths under a task's directory.
const NS_FILES: [&str; 8] = [
    "ns/cgroup",
    "ns/ipc",
    "ns/mnt",
    "ns/net",
    "ns/pid",
    "ns/time",
    "ns/user",
    "ns/uts",
];

/// Where in the reading of a task we are; lets a watchdog know a read may block.
pub trait Progress {
    /// Called before a read that can block on the target's mmap lock (`what`). Takes the
    /// task read so far into safe keeping, where a watchdog can take it if the read never
    /// returns.
    fn before_blocking(&mut self, task: Task, what: Blocking);
    /// Called after that read: gives the task back, or `None` when the watchdog took it (the
    /// reader was abandoned and must stop).
    fn after_blocking(&mut self) -> Option<Task>;
}

impl TaskReader {
    /// A reader for the tree open at `root_fd`.
    pub fn new(root_fd: RawFd, groups: Groups, units: Units, fds: FdBatch) -> TaskReader {
        TaskReader {
            root_fd,
            groups,
            units,
            path: Vec::with_capacity(64),
            buf: vec![0; 4096],
            cmd_buf: Vec::new(),
            fds,
            max_cmdline_bytes: 128 * 1024,
            stats: SnapshotStats::default(),
            stat_for_cmdline: true,
            cmdline_cache: None,
        }
    }

    fn set_path(&mut self, tgid: i32, tid: Option<i32>, file: &str) -> CString {
        use std::io::Write;
        self.path.clear();
        // Writing into a Vec cannot fail.
        let _ = match tid {
            Some(tid) => write!(self.path, "{tgid}/task/{tid}"),
            None => write!(self.path, "{tgid}"),
        };
        if !file.is_empty() {
            self.path.push(b'/');
            self.path.extend_from_slice(file.as_bytes());
        }
        // The path holds only digits, '/' and ASCII names: never a NUL.
        CString::new(self.path.as_slice()).unwrap_or_default()
    }

    /// Runs `op`; when it failed for want of descriptors or memory, closes every descriptor
    /// the batch holds (all this reader keeps open besides its root) and runs it once more.
    fn retry<T>(
        &mut self,
        mut op: impl FnMut(&mut Self) -> Result<T, FileError>,
    ) -> Result<T, FileError> {
        match op(self) {
            Err(FileError::Exhausted(_)) => {
                self.fds.flush();
                op(self)
            }
            r => r,
        }
    }

    /// The outcome of a task whose `file` could not be read even after [`Self::retry`].
    fn failed(&mut self, tgid: i32, tid: Option<i32>, file: &str, e: io::Error) -> Outcome {
        self.set_path(tgid, tid, file);
        Outcome::Failed(String::from_utf8_lossy(&self.path).into_owned(), e)
    }

    /// [`Self::read_small_once`], retried once when descriptors ran out.
    fn read_small(&mut self, tgid: i32, tid: Option<i32>, file: &str) -> Result<usize, FileError> {
        self.retry(|r| r.read_small_once(tgid, tid, file))
    }

    /// Reads a whole small file into `self.buf`, returning its length. A read shorter than the
    /// buffer is the whole file: these seq_files produce their full text on the first read.
    fn read_small_once(
        &mut self,
        tgid: i32,
        tid: Option<i32>,
        file: &str,
    ) -> Result<usize, FileError> {
        let path = self.set_path(tgid, tid, file);
        let fd = sys::openat_ro(self.root_fd, &path).map_err(classify)?;
        let mut len = 0;
        let result = loop {
            if len == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match sys::read_fd(fd, &mut self.buf[len..]) {
                Ok(0) => break Ok(len),
                Ok(n) => {
                    len += n;
                    if len < self.buf.len() {
                        break Ok(len);
                    }
                }
                Err(e) => break Err(classify(e)),
            }
        };
        self.fds.done(fd);
        result
    }

    /// [`Self::read_small`] of a file whose absence or refusal says nothing about the task
    /// (a thread has no `autogroup`, a kernel without audit no `loginuid`, a kernel thread's
    /// `smaps_rollup` read fails with ESRCH): `Ok(None)` then, as for any unreadable file,
    /// which procps shows as its default. `Err` only when descriptors or memory ran out.
    fn read_optional(
        &mut self,
        tgid: i32,
        tid: Option<i32>,
        file: &str,
    ) -> Result<Option<usize>, io::Error> {
        match self.read_small(tgid, tid, file) {
            Ok(n) => Ok(Some(n)),
            Err(FileError::Exhausted(e)) => Err(e),
            Err(FileError::Denied) => {
                self.stats.denied += 1;
                Ok(None)
            }
            Err(FileError::Gone) => Ok(None),
        }
    }

    /// Reads `tgid/cmdline` (the process's, shared by its threads), up to the size cap, into
    /// the reused buffer, and returns an exactly sized copy: 50,000 command lines must not each
    /// keep a 4 KiB read buffer alive.
    fn read_cmdline(&mut self, tgid: i32) -> Result<Vec<u8>, FileError> {
        let path = self.set_path(tgid, None, "cmdline");
        let fd = sys::openat_ro(self.root_fd, &path).map_err(classify)?;
        let mut out = std::mem::take(&mut self.cmd_buf);
        out.clear();
        let mut chunk = 4096usize;
        let result = loop {
            let start = out.len();
            let want = chunk.min(self.max_cmdline_bytes.saturating_sub(start));
            if want == 0 {
                break Ok(());
            }
            out.resize(start + want, 0);
            match sys::read_fd(fd, &mut out[start..]) {
                Ok(n) => {
                    out.truncate(start + n);
                    if n == 0 {
                        break Ok(());
                    }
                    // get_mm_cmdline() fills the whole request unless the arguments end
                    // (or the target's memory cannot be read), so a short read is the end.
                    if n < want {
                        break Ok(());
                    }
                    chunk = (chunk * 4).min(1 << 20);
                }
                Err(e) => {
                    out.truncate(start);
                    break Err(classify(e));
                }
            }
        };
        self.fds.done(fd);
        let copy = out.as_slice().to_vec();
        self.cmd_buf = out;
        result.map(|()| copy)
    }

    /// Runs `read` with `task` in the watchdog's keeping (`what` may block on the target's
    /// mmap lock): the result, with `task` back; [`Outcome::Abandoned`] when the watchdog
    /// took the task and abandoned this reader (which must stop).
    fn guarded<R>(
        &mut self,
        task: &mut Task,
        what: Blocking,
        progress: &mut dyn Progress,
        read: impl FnOnce(&mut Self) -> R,
    ) -> Result<R, Outcome> {
        let id = task.id;
        progress.before_blocking(std::mem::replace(task, Task::new(id)), what);
        let r = read(self);
        *task = progress.after_blocking().ok_or(Outcome::Abandoned)?;
        Ok(r)
    }

    /// Reads one task. `tid` is `Some` for a thread read through `tgid/task/tid`.
    pub fn read(&mut self, tgid: i32, tid: Option<i32>, progress: &mut dyn Progress) -> Outcome {
        match self.read_task(tgid, tid, progress) {
            Ok(task) => Outcome::Read(Box::new(task)),
            Err(outcome) => outcome,
        }
    }

    /// [`TaskReader::read`]: the task, or how its read ended otherwise.
    fn read_task(
        &mut self,
        tgid: i32,
        tid: Option<i32>,
        progress: &mut dyn Progress,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        let the_tid = tid.unwrap_or(tgid);
        let mut task = Task::new(TaskId {
            tgid,
            tid: the_tid,
            start_time_ns: 0,
        });
        let at = (tgid, tid);
        let st = self.read_stat_line(tgid, tid)?;
        // Set once any file of the task was read: from then on the task existed when listed.
        let mut seen = st.is_some();
        if let Some(line) = &st {
            self.fill_from_stat(&mut task, line);
        }
        // The cgroup file and the command line, read below, prove it as well (a task gone
        // fails their open): a fill of names alone (the recorder's first sample, 50,000
        // processes) then costs two files per process, not a stat besides.
        if st.is_none()
            && !g.needs_status_file()
            && !g.has(Group::CredEffective)
            && !g.needs_cgroup_file()
            && !g.has(Group::Cmdline)
        {
            self.prove_exists(tgid, tid)?;
        }
        // status gives the exact RSS too: then statm is only read for text/data/shared.
        let mut rss_from_status = false;
        let task = self.read_status(task, at, &mut seen, &mut rss_from_status)?;
        let task = self.read_owner(task, at, &mut seen)?;
        let task = self.read_counters(task, at, seen, rss_from_status)?;
        let task = self.read_place(task, at, seen)?;
        let task = self.read_ids(task, at)?;
        // Kernel threads and zombies have no user memory (no command line, nothing to sum).
        let no_mm = st.as_ref().is_some_and(|l| {
            l.flags & PF_KTHREAD != 0 || TaskState::from_letter(l.state) == TaskState::Zombie
        });
        let task = self.read_task_cmdline(task, at, seen, no_mm, progress)?;
        self.read_user_memory(task, at, no_mm, progress)
    }

    /// The task's `stat` line when the groups need it (or a command line needs the state):
    /// a task that is gone, unreadable or unparsable here is not listed.
    fn read_stat_line(&mut self, tgid: i32, tid: Option<i32>) -> Result<Option<StatLine>, Outcome> {
        let g = self.groups;
        if g.needs_stat_file() || (g.has(Group::Cmdline) && self.stat_for_cmdline) {
            match self.read_small(tgid, tid, "stat") {
                Ok(n) => match parse::parse_stat(&self.buf[..n]) {
                    Ok(line) => return Ok(Some(line)),
                    Err(_) => {
                        self.stats.unparsable += 1;
                        return Err(Outcome::Unparsable);
                    }
                },
                Err(FileError::Gone) => {
                    self.stats.vanished += 1;
                    return Err(Outcome::Vanished);
                }
                // stat is world-readable; failing here means the task is unusable.
                Err(FileError::Denied) => {
                    self.stats.denied += 1;
                    return Err(Outcome::Vanished);
                }
                Err(FileError::Exhausted(e)) => return Err(self.failed(tgid, tid, "stat", e)),
            }
        }
        Ok(None)
    }

    /// What the `stat` line gives: the start time, and the base, stat and layout groups.
    fn fill_from_stat(&self, task: &mut Task, line: &StatLine) {
        let g = self.groups;
        task.id.start_time_ns = self.units.start_ns(line.start_ticks);
        if g.has(Group::Base) {
            task.base = Some(Base {
                state: parse::state_of(line),
                ppid: line.ppid,
                pgid: line.pgrp,
                sid: line.session,
                tty_nr: line.tty_nr as u32,
                tpgid: line.tpgid,
                flags: line.flags,
                comm: tasksnap_model::Comm::from_slice(&line.comm),
                kthread: line.flags & PF_KTHREAD != 0,
                nice: line.nice,
                priority: line.priority,
                policy: line.policy,
                rt_priority: line.rt_priority,
                num_threads: line.num_threads.max(0) as u32,
                processor: line.processor,
            });
        }
        if g.has(Group::Stat) {
            let u = self.units;
            task.stat = Some(Stat {
                utime_ns: u.ticks_to_ns(line.utime_ticks),
                stime_ns: u.ticks_to_ns(line.stime_ticks),
                cutime_ns: u.ticks_to_ns(line.cutime_ticks.max(0) as u64),
                cstime_ns: u.ticks_to_ns(line.cstime_ticks.max(0) as u64),
                minflt: line.minflt,
                majflt: line.majflt,
                cminflt: line.cminflt,
                cmajflt: line.cmajflt,
                start_time_ns: task.id.start_time_ns,
                vsize_bytes: line.vsize_bytes,
                rss_bytes: line.rss_pages.saturating_mul(u.page_size_bytes),
                // /proc/PID/stat has no swap figure (status does: `Mem::swap_bytes`).
                swap_bytes: None,
            });
        }
        if g.has(Group::Layout) {
            task.layout = Some(Box::new(line.layout));
        }
    }

    /// Looks at the task's directory, when no file read proves the task exists.
    fn prove_exists(&mut self, tgid: i32, tid: Option<i32>) -> Result<(), Outcome> {
        // Nothing else proves the task exists: look at its directory.
        let looked = self.retry(|r| {
            let path = r.set_path(tgid, tid, "");
            sys::owner_at(r.root_fd, &path).map_err(classify)
        });
        match looked {
            Ok(_) => {}
            Err(FileError::Exhausted(e)) => return Err(self.failed(tgid, tid, "", e)),
            Err(_) => {
                self.stats.vanished += 1;
                return Err(Outcome::Vanished);
            }
        }
        Ok(())
    }

    /// Reads `status` when the groups need it.
    fn read_status(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        seen: &mut bool,
        rss_from_status: &mut bool,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.needs_status_file() {
            let r = self.read_small(tgid, tid, "status");
            if let Some(n) = self.settle(r, &mut task, *seen, (tgid, tid, "status"))? {
                match parse::parse_status(&self.buf[..n]) {
                    Ok(s) => {
                        *seen = true;
                        *rss_from_status = self.fill_from_status(&mut task, &s);
                    }
                    Err(_) => {
                        self.stats.unparsable += 1;
                        return Err(Outcome::Unparsable);
                    }
                }
            }
        }

        Ok(task)
    }

    /// What the `status` file gives: credentials, locked memory, the RSS and swap (then
    /// `statm` is not read for them: the result), signals and context switches.
    fn fill_from_status(&self, task: &mut Task, s: &parse::StatusFields) -> bool {
        let g = self.groups;
        let mut rss_from_status = false;
        if g.has(Group::CredFull) || g.has(Group::CredEffective) {
            if let (Some(u), Some(gr)) = (s.uids, s.gids) {
                task.cred = Some(Cred {
                    ruid: u[0],
                    euid: u[1],
                    suid: u[2],
                    fsuid: u[3],
                    rgid: gr[0],
                    egid: gr[1],
                    sgid: gr[2],
                    fsgid: gr[3],
                    groups: s.groups.clone(),
                    effective_only: false,
                });
            }
        }
        if g.has(Group::Locked) {
            task.locked_bytes = Some(s.vm_lck_kb.unwrap_or(0) * 1024);
        }
        if g.has(Group::Mem) && g.mem_rss_only {
            // status has the exact RSS too: no statm read needed.
            let mem = task.mem.get_or_insert_with(|| Box::new(empty_mem()));
            mem.rss_bytes = s.vm_rss_kb.unwrap_or(0) * 1024;
            mem.vsize_bytes = s.vm_size_kb.unwrap_or(0) * 1024;
            rss_from_status = true;
        }
        if g.has(Group::MemStatus) {
            let mem = task.mem.get_or_insert_with(|| Box::new(empty_mem()));
            mem.swap_bytes = s.vm_swap_kb.map(|k| k * 1024).or(Some(0));
            mem.locked_bytes = s.vm_lck_kb.map(|k| k * 1024).or(Some(0));
            // Kernel threads and zombies have no Vm lines: zero, as statm says.
            mem.rss_bytes = s.vm_rss_kb.unwrap_or(0) * 1024;
            mem.vsize_bytes = s.vm_size_kb.unwrap_or(0) * 1024;
            rss_from_status = true;
        }
        if g.has(Group::Signals) {
            let [pnd, shd, blk, ign, cgt] = s.signals;
            task.signals = Some(Box::new(Signals {
                pending: pnd.unwrap_or(0),
                // A status without ShdPnd (Linux 2.4): procps then shows
                // SigPnd for the process too.
                shared_pending: shd.or(pnd).unwrap_or(0),
                blocked: blk.unwrap_or(0),
                ignored: ign.unwrap_or(0),
                caught: cgt.unwrap_or(0),
            }));
        }
        if g.has(Group::SchedSwitches) {
            let sc = task.sched.get_or_insert_with(|| Box::new(empty_sched()));
            sc.voluntary_switches = s.voluntary_switches;
            sc.involuntary_switches = s.involuntary_switches;
        }
        rss_from_status
    }

    /// The effective ids from the owner of the task's directory, when `status` gave none.
    fn read_owner(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        seen: &mut bool,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.has(Group::CredEffective) && task.cred.is_none() {
            // The owner of the /proc/PID directory is the task's euid/egid, even for a
            // non-dumpable task: task_dump_owner() (fs/proc/base.c) applies the "make
            // non-dumpable tasks owned by root" rule to every file *except* the 0555 per-process
            // directories, kept so that stat(/proc/PID) stays the cheap way to get the euid.
            // (Kernel threads are owned by root either way.)
            let owner = self.retry(|r| {
                let path = r.set_path(tgid, tid, "");
                sys::owner_at(r.root_fd, &path).map_err(classify)
            });
            if let Some((uid, gid)) = self.settle(owner, &mut task, *seen, (tgid, tid, ""))? {
                *seen = true;
                task.cred = Some(Cred::from_owner(uid, gid))
            }
        }

        Ok(task)
    }

    /// The memory and scheduler counters and the I/O figures (`statm`, `schedstat`, `io`).
    fn read_counters(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        seen: bool,
        rss_from_status: bool,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.has(Group::Mem) && !(rss_from_status && g.mem_rss_only) {
            let r = self.read_small(tgid, tid, "statm");
            if let Some(n) = self.settle(r, &mut task, seen, (tgid, tid, "statm"))? {
                match parse::parse_statm(&self.buf[..n]) {
                    Ok(v) => {
                        let p = self.units.page_size_bytes;
                        let mem = task.mem.get_or_insert_with(|| Box::new(empty_mem()));
                        mem.vsize_bytes = v[0] * p;
                        mem.rss_bytes = v[1] * p;
                        mem.shared_bytes = v[2] * p;
                        mem.text_bytes = v[3] * p;
                        mem.data_bytes = v[5] * p;
                    }
                    Err(_) => self.stats.unparsable += 1,
                }
            }
        }

        if g.has(Group::Sched) {
            let r = self.read_small(tgid, tid, "schedstat");
            if let Some(n) = self.settle(r, &mut task, seen, (tgid, tid, "schedstat"))? {
                if let Ok(v) = parse::parse_schedstat(&self.buf[..n]) {
                    let sc = task.sched.get_or_insert_with(|| Box::new(empty_sched()));
                    sc.on_cpu_ns = v.run_ns;
                    sc.run_delay_ns = v.run_delay_ns;
                    sc.timeslices = v.timeslices;
                }
            }
        }

        if g.has(Group::Io) {
            let r = self.read_small(tgid, tid, "io");
            if let Some(n) = self.settle(r, &mut task, seen, (tgid, tid, "io"))? {
                match parse::parse_io(&self.buf[..n]) {
                    Ok(io) => task.io = Some(Box::new(io)),
                    Err(_) => self.stats.unparsable += 1,
                }
            }
        }

        Ok(task)
    }

    /// Where the task waits and lives: `wchan`, `cgroup`, the size of its `fd` directory.
    fn read_place(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        seen: bool,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.has(Group::Wchan) {
            let r = self.read_small(tgid, tid, "wchan");
            if let Some(n) = self.settle(r, &mut task, seen, (tgid, tid, "wchan"))? {
                let w = parse::parse_wchan(&self.buf[..n]);
                task.wchan = Some(String::from_utf8_lossy(w).into_owned());
            }
        }

        if g.needs_cgroup_file() {
            // Parsed once here; the raw text stays inside for recordings. Read for `login`
            // alone too: the snapshot derives the sd-login answers from it, then drops it.
            let r = self.read_small(tgid, tid, "cgroup");
            if let Some(n) = self.settle(r, &mut task, seen, (tgid, tid, "cgroup"))? {
                task.cgroup = Some(Box::new(Cgroup::parse(self.buf[..n].to_vec())));
            }
        }

        if g.has(Group::Fds) {
            // procps (newer than 4.0.2) stats the fd directory and takes its size; a stat
            // that fails is 0 there. The size needs no ptrace access (proc_fd_getattr).
            let size = self.retry(|r| {
                let path = r.set_path(tgid, tid, "fd");
                sys::size_at(r.root_fd, &path).map_err(classify)
            });
            if let Some(n) = self.settle(size, &mut task, seen, (tgid, tid, "fd"))? {
                task.fds = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
        }

        Ok(task)
    }

    /// Namespaces, the OOM scores, autogroup and login uid, the security label, the
    /// executable's path.
    fn read_ids(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.has(Group::Ns) {
            // procps stat()s /proc/TID/ns/NAME: the same task as TGID/task/TID/ns/NAME.
            let mut inums = [0u64; 8];
            for (slot, file) in inums.iter_mut().zip(NS_FILES) {
                let r = self.retry(|r| {
                    let path = r.set_path(tgid, tid, file);
                    sys::inode_at(r.root_fd, &path).map_err(classify)
                });
                match r {
                    Ok(ino) => *slot = ino,
                    Err(FileError::Exhausted(e)) => return Err(self.failed(tgid, tid, file, e)),
                    // Hidden (EACCES: the links need ptrace read access), absent (ENOENT: a
                    // zombie has only its pid and user namespaces; no time namespace before
                    // Linux 5.6) or gone: 0, which procps prints as "-".
                    Err(_) => {}
                }
            }
            task.extra_mut().ns = Some(inums);
        }

        for (asked, file) in [
            (g.has(Group::OomScore), "oom_score"),
            (g.has(Group::OomScoreAdj), "oom_score_adj"),
            (g.has(Group::Autogroup), "autogroup"),
            (g.has(Group::Loginuid), "loginuid"),
        ] {
            if !asked {
                continue;
            }
            let n = match self.read_optional(tgid, tid, file) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) => return Err(self.failed(tgid, tid, file, e)),
            };
            let text = &self.buf[..n];
            let x = task.extra.get_or_insert_with(Box::default);
            match file {
                "oom_score" => x.oom_score = parse::parse_oom(text),
                "oom_score_adj" => x.oom_score_adj = parse::parse_oom(text),
                "autogroup" => x.autogroup = Some(parse::parse_autogroup(text)),
                _ => x.loginuid = Some(parse::parse_loginuid(text)),
            }
        }

        if g.has(Group::Label) {
            // The process's label, also on a thread's row: procps reads /proc/TGID/attr/current.
            let read = match self.read_optional(tgid, None, "attr/current") {
                Ok(n) => n,
                Err(e) => return Err(self.failed(tgid, tid, "attr/current", e)),
            };
            if let Some(n) = read {
                task.extra_mut().label = Some(parse::parse_attr_current(&self.buf[..n]).to_vec());
            }
        }

        if g.has(Group::Exe) {
            let mut link = vec![0u8; 4096];
            let read = self.retry(|r| {
                let path = r.set_path(tgid, None, "exe");
                sys::readlinkat(r.root_fd, &path, &mut link).map_err(classify)
            });
            match read {
                Ok(n) => {
                    link.truncate(n);
                    task.exe = Some(link);
                }
                // A kernel thread or zombie has no exe: that is an answer, not an exit.
                Err(FileError::Gone) => task.exe = Some(Vec::new()),
                Err(FileError::Denied) => self.stats.denied += 1,
                Err(FileError::Exhausted(e)) => return Err(self.failed(tgid, None, "exe", e)),
            }
        }

        Ok(task)
    }

    /// The command line (a thread's is its process's, kept from the previous read), behind
    /// the watchdog since it takes the target's mmap lock.
    fn read_task_cmdline(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        seen: bool,
        no_mm: bool,
        progress: &mut dyn Progress,
    ) -> Result<Task, Outcome> {
        if self.groups.has(Group::Cmdline) {
            let cached = match (&self.cmdline_cache, tid) {
                (Some((t, c)), Some(_)) if *t == tgid => Some(c.clone()),
                _ => None,
            };
            if let Some(c) = cached {
                task.cmdline = Some(c);
            } else if no_mm {
                // Kernel threads and zombies have no user memory: their cmdline is empty, and
                // reading it would cost two system calls for nothing.
                task.cmdline = Some(Vec::new());
            } else {
                let r = self.guarded(&mut task, Blocking::Cmdline, progress, |me| {
                    me.retry(|r| r.read_cmdline(tgid))
                })?;
                if let Some(c) = self.settle(r, &mut task, seen, (tgid, None, "cmdline"))? {
                    if tid.is_some() {
                        self.cmdline_cache = Some((tgid, c.clone()));
                    }
                    task.cmdline = Some(c)
                }
            }
        }

        Ok(task)
    }

    /// The environment and `smaps_rollup`, behind the watchdog since both take the target's
    /// mmap lock.
    fn read_user_memory(
        &mut self,
        mut task: Task,
        (tgid, tid): (i32, Option<i32>),
        no_mm: bool,
        progress: &mut dyn Progress,
    ) -> Result<Task, Outcome> {
        let g = self.groups;
        if g.has(Group::Environ) && no_mm {
            // Kernel threads and zombies have no memory to copy an environment from: the
            // open fails with ESRCH (`__mem_open` finds no mm), which is not the task
            // going away. Left unread (None), as a denied one is; the task stays listed.
        } else if g.has(Group::Environ) {
            // Needs ptrace read access (another user's is EACCES); procps keeps at most
            // 128 KiB of it. environ_read() copies from the target's memory under its mmap
            // lock, like the command line: behind the same watchdog, so one stuck process
            // costs its row the environment, not the listing.
            const MAX_ENVIRON_BYTES: usize = 128 * 1024 - 1;
            let r = self.guarded(&mut task, Blocking::Environ, progress, |me| {
                me.read_small(tgid, tid, "environ")
            })?;
            match r {
                Ok(n) => {
                    task.environ = Some(Box::new(self.buf[..n.min(MAX_ENVIRON_BYTES)].to_vec()))
                }
                // ESRCH is also a task without memory (a zombie, a kernel thread) when its
                // state was not read first (a BPF pass's fill reads no stat): left unread. A
                // task that did go is seen by the files read before this one, or by the
                // pass the fill completes.
                Err(FileError::Gone) => {}
                Err(FileError::Denied) => self.stats.denied += 1,
                Err(FileError::Exhausted(e)) => return Err(self.failed(tgid, tid, "environ", e)),
            }
        }

        if g.has(Group::Smaps) {
            // Kernel threads and zombies have no memory to sum: their read fails (ESRCH),
            // which procps shows as 0, as it does here without a read.
            if !no_mm {
                let r = self.guarded(&mut task, Blocking::Smaps, progress, |me| {
                    me.read_optional(tgid, tid, "smaps_rollup")
                })?;
                match r {
                    Ok(Some(n)) => {
                        task.extra_mut().smaps_kb = Some(parse::parse_smaps_rollup(&self.buf[..n]))
                    }
                    Ok(None) => {}
                    Err(e) => return Err(self.failed(tgid, tid, "smaps_rollup", e)),
                }
            }
        }

        Ok(task)
    }

    /// What a read of the task's `file` gave: `Some` its value; `None` when denied (counted:
    /// the group stays unread); the task's outcome when it is gone ([`Self::gone`], which
    /// keeps what `task` holds when `seen`) or descriptors or memory ran out.
    fn settle<T>(
        &mut self,
        r: Result<T, FileError>,
        task: &mut Task,
        seen: bool,
        (tgid, tid, file): (i32, Option<i32>, &str),
    ) -> Result<Option<T>, Outcome> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(FileError::Gone) => {
                let task = std::mem::replace(task, Task::new(task.id));
                Err(self.gone(task, seen))
            }
            Err(FileError::Denied) => {
                self.stats.denied += 1;
                Ok(None)
            }
            Err(FileError::Exhausted(e)) => Err(self.failed(tgid, tid, file, e)),
        }
    }

    /// A task whose file disappeared: if an earlier file already proved it existed when the
    /// listing was taken, keep what was read (procps does the same); otherwise it never made it.
    fn gone(&mut self, task: Task, seen: bool) -> Outcome {
        if seen {
            self.stats.partial += 1;
            Outcome::Read(Box::new(task))
        } else {
            self.stats.vanished += 1;
            Outcome::Vanished
        }
    }

    /// Closes any descriptors still batched.
    pub fn flush(&mut self) {
        self.fds.flush();
    }
}

fn empty_mem() -> Mem {
    Mem {
        vsize_bytes: 0,
        rss_bytes: 0,
        shared_bytes: 0,
        text_bytes: 0,
        data_bytes: 0,
        swap_bytes: None,
        locked_bytes: None,
    }
}

fn empty_sched() -> Sched {
    Sched {
        on_cpu_ns: 0,
        run_delay_ns: 0,
        timeslices: 0,
        voluntary_switches: None,
        involuntary_switches: None,
    }
}
