//! The exit source without BPF: the kernel's taskstats exit notifications (generic netlink
//! family "TASKSTATS", include/uapi/linux/taskstats.h, kernel/taskstats.c), one
//! [`Exit`] per process, the same shape as the BPF source's. Root (CAP_NET_ADMIN, which the
//! kernel requires to register a listener) in the initial pid and user namespaces.
//!
//! What the kernel sends (`taskstats_exit()`, called from do_exit() before the task becomes
//! a zombie, on the CPU it exits on, to the listeners of that CPU; checked on Linux 6.18):
//! - every exiting *thread* sends a TASKSTATS_TYPE_AGGR_PID with its own figures (its own
//!   utime, faults, I/O, context switches: not the group's); the last thread of a group (the
//!   group is dead) has `AGROUP` in `ac_flag` and carries the exit code (`ac_exitcode` is
//!   `task->exit_code`: a wait status, 0x0300 for exit(3), 9 for SIGKILL);
//! - a process whose group ever had a second thread (the kernel allocated
//!   `signal->stats`) sends, in the same message as its last thread's, a
//!   TASKSTATS_TYPE_AGGR_TGID: sums over every thread that exited since that allocation,
//!   those that exited before this source registered included. It has no version, pid or
//!   comm (`version` 0) and sums only some fields: CPU time (ac_utime, ac_stime,
//!   cpu_run_virtual_total) and context switches on 6.18, not faults or I/O; older kernels
//!   sum fewer (`fill_tgid_exit()`: the delay-accounting fields only).
//!
//! So one [`Exit`] is built per `AGROUP` record: identity, parent, ids, exit code from it,
//! comm from the group leader's record (the last thread may be another, with a thread name);
//! CPU and context switches per field the larger of the kernel's group sums and the sum of
//! the thread records seen here (the kernel's sums include threads that exited before the
//! source registered); faults and I/O the sum of the thread records seen. Records of threads
//! that exit while their group lives wait in [`Assembler`] until the group's end. When the
//! kernel's group sums show threads this source never saw (more context switches than the
//! records seen add up to), `threads_cut` says faults and I/O are short.
//!
//! What it lacks next to the BPF source: no command line (`cmdline_missing` is
//! [`CmdlineMissing::NotCaptured`]); the real uid and gid only (`euid`/`egid` repeat them);
//! no time in the message: the exit time is when this source's reader thread received it
//! (CLOCK_BOOTTIME, normally tens of µs after the exit), and the start is that minus the
//! group's elapsed time (`ac_tgetime`, µs of CLOCK_MONOTONIC: a suspend during the process's
//! life makes it late by the suspend). A start so derived can fall one clock tick from
//! /proc's: the sampler gives such an exit the identity of the live process it matches
//! (`crate::sampler`). Netlink has no ring buffer: when the socket's buffer is full the
//! kernel drops messages and the next read fails with ENOBUFS, without saying how many:
//! `dropped` counts those overruns (each at least one lost record), and records whose bytes
//! are not a taskstats record this source reads.
//!
//! Pids are the initial pid namespace's (`taskstats_exit()` fills with `init_pid_ns`), and
//! the kernel refuses listeners in any other pid or user namespace (`add_del_listener()`:
//! EINVAL), so the source refuses first and says why.
//!
//! The struct is read by offset: versions 12 to 14 and 16 on have the layout of version 12
//! up to `ac_tgetime` (fields are only appended); version 15 inserted fields in the middle
//! (reverted by version 16, kernel commit "taskstats: fix struct taskstats breaks backward
//! compatibility since version 15") and is refused, as are versions before 12 (no
//! `ac_tgid`, `ac_tgetime`). A record shorter than version 12's is refused, and nothing is
//! read past an attribute.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use tasksnap_model::{CmdlineMissing, Exit, ExitBatch, TaskId};

use super::common::{split_cputime, Handoff, Options};
use super::netlink::{self, Socket};
use crate::error::Error;

/// TASKSTATS_CMD_GET and TASKSTATS_CMD_NEW.
const CMD_GET: u8 = 1;
const CMD_NEW: u8 = 2;
/// TASKSTATS_CMD_ATTR_PID, _REGISTER_CPUMASK.
const CMD_ATTR_PID: u16 = 1;
const CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
/// TASKSTATS_TYPE_PID, _TGID, _STATS, _AGGR_PID, _AGGR_TGID.
const TYPE_PID: u16 = 1;
const TYPE_TGID: u16 = 2;
const TYPE_STATS: u16 = 3;
const TYPE_AGGR_PID: u16 = 4;
const TYPE_AGGR_TGID: u16 = 5;
/// TASKSTATS_GENL_VERSION.
const GENL_VERSION: u8 = 1;
/// `AGROUP` of include/uapi/linux/acct.h: the record of a group's last thread.
const AGROUP: u8 = 0x20;

/// Offsets of the fields read, bytes (version 12's layout; LP64 and every architecture
/// where the struct's explicit 8-byte alignments decide the padding).
mod off {
    pub const VERSION: usize = 0;
    pub const EXITCODE: usize = 4;
    pub const FLAG: usize = 8;
    pub const RUN_VIRTUAL: usize = 72;
    pub const COMM: usize = 80;
    pub const COMM_LEN: usize = 32;
    pub const UID: usize = 120;
    pub const GID: usize = 124;
    pub const PID: usize = 128;
    pub const PPID: usize = 132;
    pub const UTIME: usize = 152;
    pub const STIME: usize = 160;
    pub const MINFLT: usize = 168;
    pub const MAJFLT: usize = 176;
    pub const HIWATER_RSS: usize = 200;
    pub const HIWATER_VM: usize = 208;
    pub const READ_CHAR: usize = 216;
    pub const WRITE_CHAR: usize = 224;
    pub const READ_BYTES: usize = 248;
    pub const WRITE_BYTES: usize = 256;
    pub const CANCELLED: usize = 264;
    pub const NVCSW: usize = 272;
    pub const NIVCSW: usize = 280;
    pub const TGID: usize = 368;
    pub const TGETIME: usize = 376;
    pub const EXE_DEV: usize = 384;
    pub const EXE_INODE: usize = 392;
    /// The size of version 12's struct: every field above is inside it.
    pub const V12_LEN: usize = 400;
}

/// The inode numbers of the initial pid and user namespaces (PROC_PID_INIT_INO,
/// PROC_USER_INIT_INO of include/linux/proc_ns.h: fixed).
const INIT_PID_NS_INO: u64 = 0xEFFF_FFFC;
const INIT_USER_NS_INO: u64 = 0xEFFF_FFFD;

/// Two thread records with starts this close belong to the same group (the starts are
/// derived from receipt times, late by the delivery delay).
const SAME_GROUP_NS: u64 = 1_000_000_000;

/// Why a message is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not a TASKSTATS_CMD_NEW message (or no generic netlink header).
    NotAnEvent,
    /// No thread record (TASKSTATS_TYPE_AGGR_PID with its stats) in it.
    NoRecord,
    /// A stats attribute shorter than version 12's struct.
    Short(usize),
    /// A struct version whose layout this source does not read.
    Version(u16),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::NotAnEvent => write!(f, "not a taskstats event"),
            ParseError::NoRecord => write!(f, "no per-task record"),
            ParseError::Short(n) => write!(
                f,
                "a taskstats record of {n} bytes (version 12's is {})",
                off::V12_LEN
            ),
            ParseError::Version(v) => write!(
                f,
                "taskstats version {v}: tasksnap reads versions 12 to 14 and 16 on (15 moved \
                 fields; before 12 there is no thread group id)"
            ),
        }
    }
}

/// One thread's record (TASKSTATS_TYPE_AGGR_PID), the fields this source keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// `ac_exitcode`: a wait status.
    pub exit_code: u32,
    /// `ac_flag` (AGROUP, AXSIG, ACORE...).
    pub flag: u8,
    /// The thread's comm.
    pub comm: Vec<u8>,
    /// Real uid and gid.
    pub uid: u32,
    /// Real gid.
    pub gid: u32,
    /// Thread id, parent's process id, thread group id (initial pid namespace).
    pub pid: i32,
    /// Parent's process id.
    pub ppid: i32,
    /// Thread group id.
    pub tgid: i32,
    /// The group's elapsed time at this thread's exit, µs.
    pub tgetime_us: u64,
    /// This thread's CPU time, µs (tick samples).
    pub utime_us: u64,
    /// System CPU time, µs.
    pub stime_us: u64,
    /// This thread's precise runtime (sum_exec_runtime), ns.
    pub run_ns: u64,
    /// Faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Peak RSS and VM of the (shared) memory, KiB.
    pub hiwater_rss_kib: u64,
    /// Peak VM, KiB.
    pub hiwater_vm_kib: u64,
    /// I/O bytes (rchar, wchar, read_bytes, write_bytes, cancelled_write_bytes).
    pub io: [u64; 5],
    /// Voluntary and involuntary context switches.
    pub ctxt: [u64; 2],
    /// The executable's device and inode (0 for a kernel thread).
    pub exe: [u64; 2],
}

/// The kernel's sums over a dead group's threads (TASKSTATS_TYPE_AGGR_TGID).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupSums {
    /// CPU time, µs.
    pub utime_us: u64,
    /// System CPU time, µs.
    pub stime_us: u64,
    /// Precise runtime, ns.
    pub run_ns: u64,
    /// Voluntary and involuntary context switches.
    pub ctxt: [u64; 2],
}

/// One exit message: a thread's record, and the group's sums when it ended a group that had
/// threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The exiting thread.
    pub thread: Record,
    /// The group's sums.
    pub group: Option<GroupSums>,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

/// Whether this source reads a struct of `version`'s layout.
fn readable_version(version: u16) -> bool {
    (12..=14).contains(&version) || version >= 16
}

/// A thread record's stats attribute.
fn record(stats: &[u8]) -> Result<Record, ParseError> {
    if stats.len() < off::V12_LEN {
        return Err(ParseError::Short(stats.len()));
    }
    let version = u16::from_ne_bytes([stats[off::VERSION], stats[off::VERSION + 1]]);
    if !readable_version(version) {
        return Err(ParseError::Version(version));
    }
    let comm = &stats[off::COMM..off::COMM + off::COMM_LEN];
    let comm = comm.split(|&c| c == 0).next().unwrap_or_default();
    let u = |at| u64_at(stats, at);
    Ok(Record {
        exit_code: u32_at(stats, off::EXITCODE),
        flag: stats[off::FLAG],
        comm: comm[..comm.len().min(15)].to_vec(),
        uid: u32_at(stats, off::UID),
        gid: u32_at(stats, off::GID),
        pid: u32_at(stats, off::PID) as i32,
        ppid: u32_at(stats, off::PPID) as i32,
        tgid: u32_at(stats, off::TGID) as i32,
        tgetime_us: u(off::TGETIME),
        utime_us: u(off::UTIME),
        stime_us: u(off::STIME),
        run_ns: u(off::RUN_VIRTUAL),
        minflt: u(off::MINFLT),
        majflt: u(off::MAJFLT),
        hiwater_rss_kib: u(off::HIWATER_RSS),
        hiwater_vm_kib: u(off::HIWATER_VM),
        io: [
            u(off::READ_CHAR),
            u(off::WRITE_CHAR),
            u(off::READ_BYTES),
            u(off::WRITE_BYTES),
            u(off::CANCELLED),
        ],
        ctxt: [u(off::NVCSW), u(off::NIVCSW)],
        exe: [u(off::EXE_DEV), u(off::EXE_INODE)],
    })
}

/// The group's sums (version 0 on 6.18: the kernel never sets it; the thread record's
/// version, checked, says the layout).
fn group_sums(stats: &[u8]) -> Option<GroupSums> {
    (stats.len() >= off::V12_LEN).then(|| GroupSums {
        utime_us: u64_at(stats, off::UTIME),
        stime_us: u64_at(stats, off::STIME),
        run_ns: u64_at(stats, off::RUN_VIRTUAL),
        ctxt: [u64_at(stats, off::NVCSW), u64_at(stats, off::NIVCSW)],
    })
}

/// The stats attribute of a nest (AGGR_PID or AGGR_TGID).
fn stats_of(nest: &[u8]) -> Option<&[u8]> {
    netlink::attrs(nest)
        .find(|(t, _)| *t == TYPE_STATS)
        .map(|(_, v)| v)
}

/// Reads one generic netlink payload of the TASKSTATS family (genl header onwards).
pub fn parse(payload: &[u8]) -> Result<Message, ParseError> {
    let (cmd, attrs) = netlink::genl(payload).ok_or(ParseError::NotAnEvent)?;
    if cmd != CMD_NEW {
        return Err(ParseError::NotAnEvent);
    }
    let mut thread = None;
    let mut group = None;
    for (t, v) in netlink::attrs(attrs) {
        match t {
            TYPE_AGGR_PID => {
                // The nest's pid attribute repeats ac_pid (the initial namespace's).
                let _ = netlink::attrs(v).find(|(t, _)| *t == TYPE_PID);
                if let Some(s) = stats_of(v) {
                    thread = Some(record(s)?);
                }
            }
            TYPE_AGGR_TGID => {
                let _ = netlink::attrs(v).find(|(t, _)| *t == TYPE_TGID);
                group = stats_of(v).and_then(group_sums);
            }
            _ => {}
        }
    }
    let thread = thread.ok_or(ParseError::NoRecord)?;
    Ok(Message { thread, group })
}

/// Sums of a group's thread records seen so far.
#[derive(Debug, Clone, Default)]
struct Partial {
    /// The group's start, ns since boot (derived: see the module's header).
    start_ns: u64,
    /// The group leader's comm, uid and gid, when its record came.
    leader: Option<(Vec<u8>, u32, u32)>,
    utime_us: u64,
    stime_us: u64,
    run_ns: u64,
    minflt: u64,
    majflt: u64,
    io: [u64; 5],
    ctxt: [u64; 2],
    hiwater_rss_kib: u64,
    threads: u32,
    /// Arrival order, to let the oldest go when too many wait.
    seq: u64,
}

impl Partial {
    fn add(&mut self, r: &Record) {
        if r.pid == r.tgid {
            self.leader = Some((r.comm.clone(), r.uid, r.gid));
        }
        self.utime_us = self.utime_us.saturating_add(r.utime_us);
        self.stime_us = self.stime_us.saturating_add(r.stime_us);
        self.run_ns = self.run_ns.saturating_add(r.run_ns);
        self.minflt = self.minflt.saturating_add(r.minflt);
        self.majflt = self.majflt.saturating_add(r.majflt);
        for (a, b) in self.io.iter_mut().zip(r.io) {
            *a = a.saturating_add(b);
        }
        for (a, b) in self.ctxt.iter_mut().zip(r.ctxt) {
            *a = a.saturating_add(b);
        }
        self.hiwater_rss_kib = self.hiwater_rss_kib.max(r.hiwater_rss_kib);
        self.threads = self.threads.saturating_add(1);
    }
}

/// Builds one [`Exit`] per process from the thread records (see the module's header). Pure:
/// tests feed it messages.
#[derive(Debug)]
pub struct Assembler {
    pending: HashMap<i32, Partial>,
    /// `pending`'s groups by arrival (`Partial::seq`): the oldest is dropped first when it is
    /// full, found in O(log n) (a scan of 65,536 per record in a storm of thread exits).
    order: BTreeMap<u64, i32>,
    max_pending: usize,
    tick_ns: u64,
    seq: u64,
}

impl Assembler {
    /// An assembler cutting identities to ticks of `tick_ns`, keeping at most
    /// `max_pending` groups whose threads exited before them.
    pub fn new(tick_ns: u64, max_pending: usize) -> Assembler {
        Assembler {
            pending: HashMap::new(),
            order: BTreeMap::new(),
            max_pending: max_pending.max(1),
            tick_ns: tick_ns.max(1),
            seq: 0,
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// Groups waiting for their last thread.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Takes one message received at `received_ns` (CLOCK_BOOTTIME): the process's
    /// [`Exit`] when it ended one.
    pub fn take(&mut self, m: &Message, received_ns: u64) -> Option<Exit> {
        let r = &m.thread;
        let start_ns = received_ns.saturating_sub(r.tgetime_us.saturating_mul(1000));
        self.seq += 1;
        let waiting = self.pending.remove(&r.tgid);
        if let Some(p) = &waiting {
            self.order.remove(&p.seq);
        }
        let mut part = match waiting {
            // An entry of another group with the same id (its end was lost) is dropped.
            Some(p) if p.start_ns.abs_diff(start_ns) <= SAME_GROUP_NS => p,
            _ => Partial {
                start_ns,
                ..Partial::default()
            },
        };
        part.add(r);
        if r.flag & AGROUP == 0 {
            if self.pending.len() >= self.max_pending {
                if let Some((_, oldest)) = self.order.pop_first() {
                    self.pending.remove(&oldest);
                }
            }
            part.seq = self.seq;
            self.order.insert(self.seq, r.tgid);
            self.pending.insert(r.tgid, part);
            return None;
        }
        Some(self.exit_of(r, m.group, &part, received_ns))
    }

    fn exit_of(&self, r: &Record, g: Option<GroupSums>, p: &Partial, received_ns: u64) -> Exit {
        let g = g.unwrap_or_default();
        let utime_us = g.utime_us.max(p.utime_us);
        let stime_us = g.stime_us.max(p.stime_us);
        let run_ns = g.run_ns.max(p.run_ns);
        let ctxt = [g.ctxt[0].max(p.ctxt[0]), g.ctxt[1].max(p.ctxt[1])];
        // Threads the kernel summed that no record here showed: faults and I/O are short.
        let threads_cut = g.ctxt[0].saturating_add(g.ctxt[1]) > p.ctxt[0].saturating_add(p.ctxt[1]);
        let cpu_ns = if run_ns > 0 {
            run_ns
        } else {
            utime_us.saturating_add(stime_us).saturating_mul(1000)
        };
        let (utime_ns, stime_ns) = split_cputime(
            cpu_ns,
            utime_us.saturating_mul(1000),
            stime_us.saturating_mul(1000),
        );
        let (comm, uid, gid) = p
            .leader
            .clone()
            .unwrap_or_else(|| (r.comm.clone(), r.uid, r.gid));
        let start = p.start_ns;
        Exit {
            id: TaskId {
                tgid: r.tgid,
                tid: r.tgid,
                start_time_ns: start / self.tick_ns * self.tick_ns,
            },
            ppid: r.ppid,
            ruid: uid,
            euid: uid,
            rgid: gid,
            egid: gid,
            comm,
            cmdline: Vec::new(),
            cmdline_missing: Some(CmdlineMissing::NotCaptured),
            start_time_ns: start,
            exit_time_ns: received_ns,
            wait_status: r.exit_code,
            utime_ns,
            stime_ns,
            cpu_ns,
            peak_rss_bytes: p.hiwater_rss_kib.saturating_mul(1024),
            minflt: p.minflt,
            majflt: p.majflt,
            voluntary_ctxt_switches: ctxt[0],
            nonvoluntary_ctxt_switches: ctxt[1],
            rchar_bytes: p.io[0],
            wchar_bytes: p.io[1],
            read_bytes: p.io[2],
            write_bytes: p.io[3],
            cancelled_write_bytes: p.io[4],
            threads_summed: p.threads,
            threads_cut,
            kernel_thread: r.exe == [0, 0] && r.hiwater_rss_kib == 0 && r.hiwater_vm_kib == 0,
        }
    }
}

/// The taskstats exit source: a listener registered for every CPU, read by a thread of its
/// own (which stamps each message as it comes, so exit times are not the drain's), drained
/// by [`TaskstatsExits::drain`].
#[derive(Debug)]
pub struct TaskstatsExits {
    /// What the reader thread hands over (more exits waiting for a drain than
    /// [`Options::max_pending_exits`] are counted as dropped).
    handoff: Arc<Handoff>,
    /// Stops and joins the reader when dropped.
    _stop: crate::exits::common::Stop,
    /// How long opening and registering took, ns.
    pub load_ns: u64,
}

/// Why the caller's namespaces cannot have taskstats exit notifications, if they cannot.
fn namespaces_refused() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    for (ns, init, what) in [
        ("self/ns/pid", INIT_PID_NS_INO, "pid"),
        ("self/ns/user", INIT_USER_NS_INO, "user"),
    ] {
        let link = std::path::Path::new(tasksnap_sys::roots::PROC).join(ns);
        match std::fs::metadata(&link) {
            Ok(m) if m.ino() == init => {}
            Ok(_) => {
                return Some(format!(
                    "not in the initial {what} namespace: taskstats reports the initial \
                     namespaces' pids and ids, and the kernel registers listeners only there"
                ))
            }
            Err(e) => return Some(format!("{}: {e}", link.display())),
        }
    }
    None
}

/// The possible CPUs as a cpulist ("0-63"), from sysfs; the configured count otherwise.
fn possible_cpus() -> String {
    let from_sysfs = std::fs::read(
        std::path::Path::new(tasksnap_sys::roots::SYS).join("devices/system/cpu/possible"),
    )
    .ok()
    .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    .filter(|s| {
        !s.is_empty()
            && s.len() < 4096
            && s.bytes()
                .all(|c| c.is_ascii_digit() || c == b',' || c == b'-')
    });
    from_sysfs.unwrap_or_else(|| {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
        format!("0-{}", n - 1)
    })
}

fn unavailable(what: &str, e: io::Error) -> Error {
    let why = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => "needs CAP_NET_ADMIN: ",
        Some(libc::ENOENT) => "a kernel without CONFIG_TASKSTATS: ",
        Some(libc::EPROTONOSUPPORT) | Some(libc::EAFNOSUPPORT) => "no generic netlink: ",
        _ => "",
    };
    Error::Unsupported(format!("taskstats: {why}{what}: {e}"))
}

impl TaskstatsExits {
    /// Registers a taskstats listener for every possible CPU and starts its reader, or says
    /// why it cannot (not in the initial namespaces, no CAP_NET_ADMIN, a kernel without
    /// CONFIG_TASKSTATS or with a struct version this source does not read).
    pub fn load(opts: Options) -> Result<TaskstatsExits, Error> {
        let start = monotonic_ns();
        if let Some(why) = namespaces_refused() {
            return Err(Error::Unsupported(format!("taskstats: {why}")));
        }
        let mut sock = Socket::open().map_err(|e| unavailable("generic netlink socket", e))?;
        let family = sock
            .resolve("TASKSTATS")
            .map_err(|e| unavailable("resolving the TASKSTATS family", e))?;
        // Our own record first: it checks the privilege and the struct's version before
        // anything is registered.
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let mut a = Vec::new();
        netlink::put_attr(&mut a, CMD_ATTR_PID, &(me as u32).to_ne_bytes());
        let replies = sock
            .request(family, CMD_GET, GENL_VERSION, &a, &mut |_| {})
            .map_err(|e| unavailable("asking for this process's record", e))?;
        let own = replies
            .iter()
            .flat_map(|d| {
                netlink::messages(d)
                    .filter(|(kind, _, _, _)| *kind == family)
                    .map(|(_, _, _, p)| parse(p))
                    .collect::<Vec<_>>()
            })
            .next()
            .unwrap_or(Err(ParseError::NoRecord));
        if let Err(e) = own {
            return Err(Error::Unsupported(format!("taskstats: {e}")));
        }
        // A full socket drops messages (ENOBUFS): room for 4 MiB of records (each queued
        // message costs ~1.5 KiB of buffer: kernel memory, not this process's RSS); the
        // reader empties it as they come.
        sock.set_receive_buffer(4 << 20);
        let cpus = possible_cpus();
        let mut mask = cpus.clone().into_bytes();
        mask.push(0);
        let mut a = Vec::new();
        netlink::put_attr(&mut a, CMD_ATTR_REGISTER_CPUMASK, &mask);
        let mut early: Vec<Vec<u8>> = Vec::new();
        let mut early_drops = 0u64;
        sock.request(family, CMD_GET, GENL_VERSION, &a, &mut |d| {
            if d.is_empty() {
                early_drops += 1;
            } else {
                early.push(d.to_vec());
            }
        })
        .map_err(|e| unavailable(&format!("registering a listener for CPUs {cpus}"), e))?;
        let (mut stop, stop_rd) =
            crate::exits::common::Stop::new().map_err(|e| unavailable("eventfd", e))?;
        let handoff = Handoff::new(opts.max_pending_exits);
        handoff.put(&mut Vec::new(), early_drops);
        let tick_ns = 1_000_000_000 / opts.clock_ticks_per_s.clamp(1, 1_000_000_000);
        let reader = Reader {
            sock,
            family,
            stop: stop_rd,
            handoff: handoff.clone(),
            asm: Assembler::new(tick_ns, 65_536),
        };
        let handle = std::thread::Builder::new()
            .name("exits-taskstats".into())
            .spawn(move || reader.run(early))
            .map_err(|e| unavailable("starting the reader thread", e))?;
        stop.started(handle);
        Ok(TaskstatsExits {
            handoff,
            _stop: stop,
            load_ns: monotonic_ns().saturating_sub(start),
        })
    }

    /// The processes that exited since the previous drain, and the overruns and unreadable
    /// records meanwhile (see the module's header); an error when the reader stopped.
    pub fn drain(&mut self) -> Result<ExitBatch, Error> {
        self.handoff
            .take()
            .map_err(|why| Error::Unsupported(format!("taskstats reader stopped: {why}")))
    }
}

/// The reader thread's state.
struct Reader {
    sock: Socket,
    family: u16,
    stop: OwnedFd,
    handoff: Arc<Handoff>,
    asm: Assembler,
}

impl Reader {
    fn run(mut self, early: Vec<Vec<u8>>) {
        // The thread was started before the host dropped its capabilities (which is per
        // thread): it needs none to read its socket, so it keeps none.
        if let Err(e) = crate::caps::keep_only(0) {
            self.handoff
                .fail(format!("could not drop its capabilities: {e}"));
            return;
        }
        let now = boottime_ns();
        for d in &early {
            self.datagram(d, now);
        }
        let mut buf = vec![0u8; 64 * 1024];
        let (fd, stop) = (self.sock.raw_fd(), self.stop.as_raw_fd());
        let handoff = self.handoff.clone();
        crate::exits::common::read_until_stopped(fd, stop, &handoff, || {
            self.read_all(&mut buf).map_err(|e| e.to_string())
        });
        // No deregistration: it needs CAP_NET_ADMIN, which this thread dropped. Closing the
        // socket ends the listener (the kernel drops a listener whose port is gone at its
        // next send, send_cpu_listeners()).
    }

    /// Reads every datagram queued.
    fn read_all(&mut self, buf: &mut [u8]) -> io::Result<()> {
        loop {
            match self.sock.recv(buf) {
                Ok(Some(n)) => {
                    let now = boottime_ns();
                    let d = buf[..n].to_vec();
                    self.datagram(&d, now);
                }
                Ok(None) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.handoff.put(&mut Vec::new(), 1);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn datagram(&mut self, d: &[u8], received_ns: u64) {
        let mut exits = Vec::new();
        let mut bad = 0u64;
        for (kind, _, _, payload) in netlink::messages(d) {
            if kind != self.family {
                continue;
            }
            match parse(payload) {
                Ok(m) => exits.extend(self.asm.take(&m, received_ns)),
                Err(ParseError::NotAnEvent) => {}
                Err(_) => bad += 1,
            }
        }
        self.handoff.put(&mut exits, bad);
    }
}

fn monotonic_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_MONOTONIC)
}

fn boottime_ns() -> u64 {
    crate::BootClock::caller().now_ns()
}

#[cfg(test)]
mod tests {
    use crate::exits::taskstats::*;

    /// A version-16 stats struct (560 bytes, as Linux 6.18 sends) with the given fields.
    fn stats(version: u16, r: &Record) -> Vec<u8> {
        let mut b = vec![0u8; 560];
        let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(&mut b, off::VERSION, &version.to_ne_bytes());
        put(&mut b, off::EXITCODE, &r.exit_code.to_ne_bytes());
        b[off::FLAG] = r.flag;
        put(&mut b, off::COMM, &r.comm);
        put(&mut b, off::UID, &r.uid.to_ne_bytes());
        put(&mut b, off::GID, &r.gid.to_ne_bytes());
        put(&mut b, off::PID, &(r.pid as u32).to_ne_bytes());
        put(&mut b, off::PPID, &(r.ppid as u32).to_ne_bytes());
        put(&mut b, off::TGID, &(r.tgid as u32).to_ne_bytes());
        for (at, v) in [
            (off::TGETIME, r.tgetime_us),
            (off::UTIME, r.utime_us),
            (off::STIME, r.stime_us),
            (off::RUN_VIRTUAL, r.run_ns),
            (off::MINFLT, r.minflt),
            (off::MAJFLT, r.majflt),
            (off::HIWATER_RSS, r.hiwater_rss_kib),
            (off::HIWATER_VM, r.hiwater_vm_kib),
            (off::READ_CHAR, r.io[0]),
            (off::WRITE_CHAR, r.io[1]),
            (off::READ_BYTES, r.io[2]),
            (off::WRITE_BYTES, r.io[3]),
            (off::CANCELLED, r.io[4]),
            (off::NVCSW, r.ctxt[0]),
            (off::NIVCSW, r.ctxt[1]),
            (off::EXE_DEV, r.exe[0]),
            (off::EXE_INODE, r.exe[1]),
        ] {
            put(&mut b, at, &v.to_ne_bytes());
        }
        b
    }

    fn nest(kind: u16, id: i32, stats: &[u8]) -> Vec<u8> {
        let mut inner = Vec::new();
        netlink::put_attr(&mut inner, kind - 3, &(id as u32).to_ne_bytes());
        netlink::put_attr(&mut inner, TYPE_STATS, stats);
        let mut a = Vec::new();
        netlink::put_attr(&mut a, kind, &inner);
        a
    }

    /// A genl payload: header, the thread's nest, the group's nest if any.
    fn message(thread: &[u8], pid: i32, group: Option<&[u8]>) -> Vec<u8> {
        let mut p = vec![CMD_NEW, 1, 0, 0];
        p.extend(nest(TYPE_AGGR_PID, pid, thread));
        if let Some(g) = group {
            p.extend(nest(TYPE_AGGR_TGID, pid, g));
        }
        p
    }

    fn rec(pid: i32, tgid: i32, flag: u8) -> Record {
        Record {
            exit_code: 3 << 8,
            flag,
            comm: b"worker".to_vec(),
            uid: 1000,
            gid: 100,
            pid,
            ppid: 1,
            tgid,
            tgetime_us: 2_000_000,
            utime_us: 30_000,
            stime_us: 10_000,
            run_ns: 41_000_000,
            minflt: 10,
            majflt: 1,
            hiwater_rss_kib: 2048,
            hiwater_vm_kib: 8192,
            io: [1, 2, 3, 4, 5],
            ctxt: [7, 3],
            exe: [8, 1234],
        }
    }

    #[test]
    fn a_single_threaded_exit_is_one_record_with_its_figures() {
        let mut r = rec(500, 500, AGROUP);
        r.comm = b"cc1".to_vec();
        let m = parse(&message(&stats(16, &r), 500, None)).expect("parse");
        assert_eq!(m.thread, r);
        assert_eq!(m.group, None);
        let mut a = Assembler::new(10_000_000, 16);
        let now = 100_000_000_000;
        let e = a.take(&m, now).expect("an exit");
        assert_eq!(e.id.tgid, 500);
        assert_eq!(e.id.tid, 500);
        assert_eq!(e.comm, b"cc1");
        assert_eq!(e.reason(), tasksnap_model::ExitReason::Code(3));
        assert_eq!(e.exit_time_ns, now);
        assert_eq!(e.start_time_ns, now - 2_000_000_000);
        assert_eq!(e.id.start_time_ns, 98_000_000_000);
        assert_eq!(e.cpu_ns, 41_000_000);
        assert_eq!(e.utime_ns + e.stime_ns, e.cpu_ns);
        assert_eq!(e.utime_ns, 30_750_000);
        assert_eq!(e.peak_rss_bytes, 2048 * 1024);
        assert_eq!((e.minflt, e.majflt), (10, 1));
        assert_eq!(
            [e.rchar_bytes, e.wchar_bytes, e.read_bytes, e.write_bytes],
            [1, 2, 3, 4]
        );
        assert_eq!(e.cancelled_write_bytes, 5);
        assert_eq!((e.ruid, e.euid, e.rgid, e.egid), (1000, 1000, 100, 100));
        assert_eq!(e.cmdline_missing, Some(CmdlineMissing::NotCaptured));
        assert_eq!(
            (e.threads_summed, e.threads_cut, e.kernel_thread),
            (1, false, false)
        );
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn a_group_is_one_exit_with_the_leaders_comm_and_the_kernels_cpu_sums() {
        let mut a = Assembler::new(10_000_000, 16);
        // The leader exits first (pthread_exit), then a thread, then the last thread.
        let mut leader = rec(600, 600, 0);
        leader.comm = b"server".to_vec();
        leader.exit_code = 0;
        let t1 = rec(601, 600, 0);
        let mut last = rec(602, 600, AGROUP);
        last.exit_code = 7 << 8;
        for (r, t) in [(&leader, 1u64), (&t1, 2)] {
            let m = parse(&message(&stats(16, r), r.pid, None)).expect("parse");
            assert_eq!(a.take(&m, 100_000_000_000 + t * 1000), None);
        }
        assert_eq!(a.pending(), 1);
        // The kernel's sums cover a fourth thread that exited before we listened.
        let g = Record {
            utime_us: 200_000,
            stime_us: 0,
            run_ns: 210_000_000,
            ctxt: [40, 12],
            ..Record::default()
        };
        let m = parse(&message(&stats(16, &last), 602, Some(&stats(0, &g)))).expect("parse");
        assert_eq!(
            m.group,
            Some(GroupSums {
                utime_us: 200_000,
                stime_us: 0,
                run_ns: 210_000_000,
                ctxt: [40, 12]
            })
        );
        let e = a.take(&m, 100_000_003_000).expect("the group's exit");
        assert_eq!(e.id.tgid, 600);
        assert_eq!(e.comm, b"server");
        assert_eq!(e.reason(), tasksnap_model::ExitReason::Code(7));
        assert_eq!(e.cpu_ns, 210_000_000);
        assert_eq!(
            (e.voluntary_ctxt_switches, e.nonvoluntary_ctxt_switches),
            (40, 12)
        );
        assert_eq!(e.minflt, 30);
        assert_eq!(e.threads_summed, 3);
        assert!(e.threads_cut, "the kernel summed threads not seen here");
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn hostile_records_are_refused_not_read_past() {
        let r = rec(700, 700, AGROUP);
        let full = stats(16, &r);
        // Versions 15 and 11 are refused; 12, 14 and 17 read.
        for v in [15u16, 11, 0] {
            assert_eq!(
                parse(&message(&stats(v, &r), 700, None)),
                Err(ParseError::Version(v))
            );
        }
        for v in [12u16, 14, 17] {
            assert!(parse(&message(&stats(v, &r), 700, None)).is_ok());
        }
        // A stats attribute shorter than version 12's struct.
        assert_eq!(
            parse(&message(&full[..399], 700, None)),
            Err(ParseError::Short(399))
        );
        // A whole version-12 struct exactly.
        assert!(parse(&message(&full[..400], 700, None)).is_ok());
        // Truncated anywhere: never a panic, never a record read from outside the bytes.
        let m = message(&full, 700, None);
        for cut in 0..m.len() {
            let got = parse(&m[..cut]);
            assert!(got.is_err(), "cut at {cut}: {got:?}");
        }
        // A nest whose length claims more than there is.
        let mut bad = m.clone();
        bad[4..6].copy_from_slice(&u16::MAX.to_ne_bytes());
        assert_eq!(parse(&bad), Err(ParseError::NoRecord));
        // Not an event (a GET), and no genl header.
        let mut get = m.clone();
        get[0] = CMD_GET;
        assert_eq!(parse(&get), Err(ParseError::NotAnEvent));
        assert_eq!(parse(&[2, 1]), Err(ParseError::NotAnEvent));
        // A comm with no NUL in its 32 bytes is cut to 15.
        let mut long = full.clone();
        long[off::COMM..off::COMM + 32].fill(b'x');
        let m = parse(&message(&long, 700, None)).expect("parse");
        assert_eq!(m.thread.comm, vec![b'x'; 15]);
        // A short group attribute: no sums, the thread still read.
        let m = parse(&message(&full, 700, Some(&full[..100]))).expect("parse");
        assert_eq!(m.group, None);
    }

    #[test]
    fn waiting_groups_are_bounded_and_a_reused_id_starts_afresh() {
        let mut a = Assembler::new(10_000_000, 2);
        for (i, pid) in [801, 802, 803].into_iter().enumerate() {
            let r = rec(pid + 1000, pid, 0);
            let m = parse(&message(&stats(16, &r), r.pid, None)).expect("parse");
            assert_eq!(a.take(&m, 10_000_000_000 + i as u64), None);
        }
        assert_eq!(a.pending(), 2, "the oldest went");
        // Group 803's end, but 60 s later with a start that does not match: another group
        // with the same id. Its figures are its own.
        let mut r = rec(803, 803, AGROUP);
        r.tgetime_us = 1_000;
        let m = parse(&message(&stats(16, &r), 803, None)).expect("parse");
        let e = a.take(&m, 70_000_000_000).expect("exit");
        assert_eq!(e.threads_summed, 1);
        assert_eq!(e.minflt, 10);
    }
}
