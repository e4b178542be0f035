//! Turning the iterator's records into tasks: parsing the byte stream (layout from
//! `record.h` via the generated skeleton types), the kernel's derivations that /proc applies
//! (state letter, nice, thread-group sums, `cputime_adjust`), selection, and which groups a
//! record carries and which must come from /proc ([`procfs_groups`]); planning those reads
//! and merging them into the tasks is snapshot.rs's.

use std::collections::HashMap;

use tasksnap_model::{
    Base, Cred, Group, Groups, Io, Mem, Query, Sched, Selector, Signals, Stat, Task, TaskId, TaskState,
    PF_KTHREAD,
};

use tasksnap_bpf::skel::task_iter::types::{
    ts_base, ts_cred, ts_hdr, ts_io, ts_kname, ts_mem, ts_ns, ts_sched, ts_sig, ts_stat,
};
use crate::units::Units;

const TS_GROUP_BASE: u32 = 1;
const TS_GROUP_CRED: u32 = 2;
const TS_GROUP_STAT: u32 = 4;
const TS_GROUP_SCHED: u32 = 8;
const TS_GROUP_IO: u32 = 16;
pub(super) const TS_GROUP_KNAME: u32 = 32;
const TS_GROUP_MEM: u32 = 64;
const TS_GROUP_SIG: u32 = 256;
const TS_GROUP_NS: u32 = 512;
/// `ts_ns.flags`: the kernel has login uids (record.h).
const TS_NS_LOGINUID: u32 = 1;
/// `ts_mem.flags`: the RSS counters are exact sums (record.h).
const TS_MEM_EXACT: u32 = 1;

/// `PF_EXITING` (include/linux/sched.h): set at the start of `do_exit()`, kept by the
/// zombie (`ts_base.flags`).
pub const PF_EXITING: u32 = 0x4;

/// One task's record: its header, and where its blocks are in the pass's buffer (read on
/// demand, so that decoding a pass copies 48 bytes per task, not every block).
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub hdr: ts_hdr,
    blocks: &'a [u8],
}

impl Record<'_> {
    /// The block of group `bit`, when the record has it.
    fn block<T: Copy + Default>(&self, bit: u32) -> Option<T> {
        if self.hdr.groups & bit == 0 {
            return None;
        }
        // Blocks come in bit order; the offset is the sizes of the ones before.
        let mut at = 0;
        for (b, size) in BLOCK_SIZES {
            if b == bit {
                break;
            }
            if self.hdr.groups & b != 0 {
                at += size;
            }
        }
        take(self.blocks, &mut at).ok()
    }
    pub fn base(&self) -> Option<ts_base> {
        self.block(TS_GROUP_BASE)
    }
    pub fn cred(&self) -> Option<ts_cred> {
        self.block(TS_GROUP_CRED)
    }
    pub fn stat(&self) -> Option<ts_stat> {
        self.block(TS_GROUP_STAT)
    }
    pub fn sched(&self) -> Option<ts_sched> {
        self.block(TS_GROUP_SCHED)
    }
    pub fn io(&self) -> Option<ts_io> {
        self.block(TS_GROUP_IO)
    }
    /// A kernel thread's name as /proc shows it (record.h, struct ts_kname).
    pub fn kname(&self) -> Option<ts_kname> {
        self.block(TS_GROUP_KNAME)
    }
    /// What /proc/PID/statm is made of (record.h, struct ts_mem).
    pub fn mem(&self) -> Option<ts_mem> {
        self.block(TS_GROUP_MEM)
    }
    /// The signal masks of /proc/PID/status (record.h, struct ts_sig).
    pub fn sig(&self) -> Option<ts_sig> {
        self.block(TS_GROUP_SIG)
    }
    /// Namespaces, oom_score_adj and loginuid (record.h, struct ts_ns).
    pub fn ns(&self) -> Option<ts_ns> {
        self.block(TS_GROUP_NS)
    }
}

/// The group bits in record order, with their block sizes.
const BLOCK_SIZES: [(u32, usize); 9] = [
    (TS_GROUP_BASE, std::mem::size_of::<ts_base>()),
    (TS_GROUP_CRED, std::mem::size_of::<ts_cred>()),
    (TS_GROUP_STAT, std::mem::size_of::<ts_stat>()),
    (TS_GROUP_SCHED, std::mem::size_of::<ts_sched>()),
    (TS_GROUP_IO, std::mem::size_of::<ts_io>()),
    (TS_GROUP_KNAME, std::mem::size_of::<ts_kname>()),
    (TS_GROUP_MEM, std::mem::size_of::<ts_mem>()),
    (TS_GROUP_SIG, std::mem::size_of::<ts_sig>()),
    (TS_GROUP_NS, std::mem::size_of::<ts_ns>()),
];

/// Record bytes per task for `bits` (to size read buffers).
pub fn record_size(bits: u32) -> usize {
    std::mem::size_of::<ts_hdr>()
        + BLOCK_SIZES
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, size)| size)
            .sum::<usize>()
}

/// `ts_cmd_hdr` flag: read this command line from /proc.
const TS_CMD_UNREAD: u32 = 1;

/// Parses the command-line pass: tgid -> argument bytes, leaving out flagged ones.
pub fn cmdlines(buf: &[u8]) -> HashMap<i32, Vec<u8>> {
    let mut out = HashMap::with_capacity(buf.len() / 64);
    let mut at = 0;
    while at < buf.len() {
        let Ok(h) = take::<tasksnap_bpf::skel::task_iter::types::ts_cmd_hdr>(buf, &mut at) else {
            break;
        };
        let len = h.len as usize;
        let Some(data) = buf.get(at..at + len) else {
            break;
        };
        at += len;
        if h.flags & TS_CMD_UNREAD == 0 {
            out.insert(h.tgid as i32, data.to_vec());
        }
    }
    out
}

/// Parses output of the command-line copy (`copy_cmdlines`): records of a `ts_cmd_hdr` and
/// its bytes, each padded to 8, until a header with tgid 0 or the end; flagged ones are left
/// out. Bounds are checked: a bad length ends the parse. Returns how many bytes the whole
/// records took (a chunk's records, copied out back to back, parse the same way).
pub fn cmd_chunk(chunk: &[u8], out: &mut HashMap<i32, Vec<u8>>) -> usize {
    let mut at = 0;
    let mut whole = 0;
    while at < chunk.len() {
        let Ok(h) = take::<tasksnap_bpf::skel::task_iter::types::ts_cmd_hdr>(chunk, &mut at) else {
            break;
        };
        if h.tgid == 0 {
            break;
        }
        let len = h.len as usize;
        let Some(data) = chunk.get(at..at.saturating_add(len)) else {
            break;
        };
        if h.flags & TS_CMD_UNREAD == 0 {
            out.insert(h.tgid as i32, data.to_vec());
        }
        at = (at + len.next_multiple_of(8)).min(chunk.len());
        whole = at;
    }
    whole
}

/// The bytes of whole records at the start of a copy's output chunk (see [`cmd_chunk`]).
pub fn cmd_chunk_len(chunk: &[u8]) -> usize {
    let mut at = 0;
    let hdr = std::mem::size_of::<tasksnap_bpf::skel::task_iter::types::ts_cmd_hdr>();
    while let Ok(h) = take::<tasksnap_bpf::skel::task_iter::types::ts_cmd_hdr>(chunk, &mut at.clone()) {
        let end = at + hdr + (h.len as usize).next_multiple_of(8);
        if h.tgid == 0 || end > chunk.len() {
            break;
        }
        at = end;
    }
    at
}

/// The iterator blocks a query needs. Base is always asked for: it is small and tells which
/// tasks have no user memory (no command line to read).
pub fn group_bits(g: &Groups) -> u32 {
    let mut bits = TS_GROUP_BASE;
    if g.has(Group::CredEffective) || g.has(Group::CredFull) {
        bits |= TS_GROUP_CRED;
    }
    if g.has(Group::Stat) {
        bits |= TS_GROUP_STAT;
    }
    if g.has(Group::Sched) || g.has(Group::SchedSwitches) {
        bits |= TS_GROUP_SCHED;
    }
    if g.has(Group::Io) {
        bits |= TS_GROUP_IO;
    }
    if mem_from_pass(g) {
        bits |= TS_GROUP_MEM;
    }
    if g.has(Group::Signals) {
        bits |= TS_GROUP_SIG;
    }
    if g.intersects(const { Groups::of(&[Group::Ns, Group::OomScoreAdj, Group::Loginuid]) }) {
        bits |= TS_GROUP_NS;
    }
    bits
}

/// Whether the pass gives the memory group (`statm`) for `g`. Only where the kernel's
/// statm adds the per-CPU deltas of the RSS counters, which the pass adds too (Linux 6.16,
/// commit 82241a83, "mm: fix the inaccurate memory statistics issue for users"; record.h
/// and compat.h say how). Kernels 6.2 to 6.15 print the counters' central values instead,
/// unless their stable series took that fix (it was marked for stable), and the pass cannot
/// tell which: those, and kernels before 6.2, read statm from /proc as before. So does
/// `mem_status` (status is read anyway), and any task whose record says the deltas could
/// not be added (`TS_MEM_EXACT` clear: more than 2,000 CPUs, or a kernel without
/// `bpf_map_lookup_percpu_elem`, Linux 5.19).
pub fn mem_from_pass(g: &Groups) -> bool {
    g.has(Group::Mem) && !g.has(Group::MemStatus) && statm_sums_percpu()
}

/// Whether this kernel's /proc/PID/statm sums the per-CPU RSS counters (Linux 6.16+).
/// `TASKSNAP_STATM_FROM_PROC=1` says no (a test compares both ways).
fn statm_sums_percpu() -> bool {
    static SUMS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUMS.get_or_init(|| {
        std::env::var_os("TASKSNAP_STATM_FROM_PROC").is_none()
            && tasksnap_sys::kernel_release().is_some_and(|v| v >= (6, 16))
    })
}

/// The memory group as /proc/PID/statm prints it (fs/proc/task_mmu.c `task_statm()`), from
/// a record's block; `None` when its counters are not exact (read statm from /proc).
fn to_mem(m: &ts_mem, page: u64) -> Option<Box<Mem>> {
    if m.flags & TS_MEM_EXACT == 0 {
        return None;
    }
    // get_mm_counter_sum(): percpu_counter_sum_positive(), each counter clamped at 0.
    let pos = |v: i64| v.max(0) as u64;
    let shared = pos(m.file) + pos(m.shmem);
    // PAGE_ALIGN(end_code) - (start_code & PAGE_MASK), in pages.
    let mask = !(page - 1);
    let text = (m.end_code.wrapping_add(page - 1) & mask).wrapping_sub(m.start_code & mask) / page;
    Some(Box::new(Mem {
        vsize_bytes: m.total_vm * page,
        rss_bytes: (shared + pos(m.anon)) * page,
        shared_bytes: shared * page,
        text_bytes: text * page,
        data_bytes: (m.data_vm + m.stack_vm) * page,
        swap_bytes: None,
        locked_bytes: None,
    }))
}

/// Why the records of a pass could not be parsed. The stream is the kernel's: any of these
/// means the programs and this build disagree on record.h's layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A record's offset does not fit in a `usize`.
    #[error("record offset overflow")]
    OffsetOverflow,
    /// The stream ends inside a record (at this byte).
    #[error("truncated iterator record at byte {0}")]
    Truncated(usize),
    /// A record header has group bits this build does not know.
    #[error("unknown record groups {0:#x} in the arena")]
    UnknownGroups(u32),
    /// An arena record runs past the end of its chunk (at this byte).
    #[error("arena record past its chunk at byte {0}")]
    PastChunk(usize),
}

/// Reads one plain-old-data block at `*at`, advancing it.
fn take<T: Copy + Default>(buf: &[u8], at: &mut usize) -> Result<T, RecordError> {
    let size = std::mem::size_of::<T>();
    let end = at.checked_add(size).ok_or(RecordError::OffsetOverflow)?;
    let bytes = buf.get(*at..end).ok_or(RecordError::Truncated(*at))?;
    // SAFETY: T is one of the record.h structs generated by libbpf-cargo: repr(C), made of
    // integers and byte arrays only, so every bit pattern is a valid value; `bytes` holds
    // exactly size_of::<T>() bytes and read_unaligned copes with any alignment.
    let v = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) };
    *at = end;
    Ok(v)
}

/// Parses every record of one pass (a truncated last record is an error: the stream is
/// the kernel's, any inconsistency means a mismatch of layouts).
pub fn records(buf: &[u8]) -> Result<Vec<Record<'_>>, RecordError> {
    let mut out = Vec::with_capacity(buf.len() / record_size(TS_GROUP_BASE));
    let mut at = 0;
    while at < buf.len() {
        let hdr: ts_hdr = take(buf, &mut at)?;
        let len = record_size(hdr.groups) - std::mem::size_of::<ts_hdr>();
        let blocks = buf.get(at..at + len).ok_or(RecordError::Truncated(at))?;
        at += len;
        out.push(Record { hdr, blocks });
    }
    Ok(out)
}

/// Parses one arena chunk of the walk (record.h): whole records up to a header whose groups
/// is 0, or to the chunk's end. Unknown group bits or a record past the chunk's end are
/// errors, as in [`records`].
pub fn chunk_records<'a>(
    chunk: &'a [u8],
    out: &mut Vec<Record<'a>>,
) -> Result<(), RecordError> {
    const KNOWN: u32 = TS_GROUP_BASE
        | TS_GROUP_CRED
        | TS_GROUP_STAT
        | TS_GROUP_SCHED
        | TS_GROUP_IO
        | TS_GROUP_KNAME
        | TS_GROUP_MEM
        | TS_GROUP_SIG
        | TS_GROUP_NS;
    let hdr_size = std::mem::size_of::<ts_hdr>();
    let mut at = 0;
    while at + hdr_size <= chunk.len() {
        let hdr: ts_hdr = take(chunk, &mut at)?;
        if hdr.groups == 0 {
            break;
        }
        if hdr.groups & !KNOWN != 0 {
            return Err(RecordError::UnknownGroups(hdr.groups));
        }
        let len = record_size(hdr.groups) - hdr_size;
        let blocks = chunk.get(at..at + len).ok_or(RecordError::PastChunk(at))?;
        at += len;
        out.push(Record { hdr, blocks });
    }
    Ok(())
}

/// fs/proc/array.c `task_state_index()`: the letter /proc shows for `__state | exit_state`.
fn state_letter(state: u32, exit_state: u32) -> u8 {
    const TASK_REPORT: u32 = 0x7f;
    const TASK_IDLE: u32 = 0x0402; // TASK_UNINTERRUPTIBLE | TASK_NOLOAD
    const TASK_RTLOCK_WAIT: u32 = 0x1000;
    let mut s = (state | exit_state) & TASK_REPORT;
    if state & TASK_IDLE == TASK_IDLE {
        s = TASK_REPORT + 1;
    }
    if state == TASK_RTLOCK_WAIT {
        s = 0x2; // TASK_UNINTERRUPTIBLE
    }
    let index = if s == 0 { 0 } else { 32 - s.leading_zeros() } as usize;
    *b"RSDTtXZPI".get(index).unwrap_or(&b'?')
}

/// kernel/sched/cputime.c `cputime_adjust()`, read-only: splits the precise runtime between
/// user and system in the ratio of the tick samples, never below what was last reported.
fn cputime_adjust(utime: u64, stime: u64, rtime: u64, prev_u: u64, prev_s: u64) -> (u64, u64) {
    if prev_s.saturating_add(prev_u) >= rtime {
        return (prev_u, prev_s);
    }
    let mut st;
    if stime == 0 {
        st = 0;
    } else if utime == 0 {
        st = rtime;
    } else {
        st = ((stime as u128 * rtime as u128) / (stime as u128 + utime as u128)) as u64;
        st = st.min(rtime);
    }
    if st < prev_s {
        st = prev_s;
    }
    let mut ut = rtime - st;
    if ut < prev_u {
        ut = prev_u;
        st = rtime - ut;
    }
    (ut, st)
}

fn comm_bytes(raw: &[u8]) -> tasksnap_model::Comm {
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    tasksnap_model::Comm::from_slice(&raw[..end])
}

fn to_base(b: &ts_base) -> Base {
    let comm = comm_bytes(&b.comm.map(|c| c as u8));
    Base {
        state: TaskState::from_letter(state_letter(b.state, b.exit_state)),
        ppid: b.ppid as i32,
        pgid: b.pgid as i32,
        sid: b.sid as i32,
        tty_nr: b.tty_nr,
        tpgid: b.tpgid,
        flags: b.flags,
        comm,
        kthread: b.flags & PF_KTHREAD != 0,
        nice: b.static_prio - 120,
        priority: b.prio - 100,
        policy: b.policy,
        rt_priority: b.rt_priority,
        num_threads: b.nr_threads.max(0) as u32,
        processor: b.cpu,
    }
}

fn to_cred(c: &ts_cred) -> Cred {
    Cred {
        ruid: c.uid,
        euid: c.euid,
        suid: c.suid,
        fsuid: c.fsuid,
        rgid: c.gid,
        egid: c.egid,
        sgid: c.sgid,
        fsgid: c.fsgid,
        groups: None,
        effective_only: false,
    }
}

fn to_sched(s: &ts_sched) -> Box<Sched> {
    Box::new(Sched {
        on_cpu_ns: s.sum_exec_runtime_ns,
        run_delay_ns: s.run_delay_ns,
        timeslices: s.pcount,
        voluntary_switches: Some(s.nvcsw),
        involuntary_switches: Some(s.nivcsw),
    })
}

/// /proc/PID/task/TID/io: the thread's own counters.
fn thread_io(i: &ts_io) -> Box<Io> {
    Box::new(Io {
        rchar_bytes: i.rchar,
        wchar_bytes: i.wchar,
        syscr: i.syscr,
        syscw: i.syscw,
        read_bytes: i.read_bytes,
        write_bytes: i.write_bytes,
        cancelled_write_bytes: i.cancelled_write_bytes,
    })
}

/// /proc/PID/io (fs/proc/base.c do_io_accounting()): what exited threads left in the signal
/// struct plus every live thread's counters.
fn process_io(leader: &ts_io, threads: impl Iterator<Item = ts_io>) -> Box<Io> {
    let mut io = Io {
        rchar_bytes: leader.sig_rchar,
        wchar_bytes: leader.sig_wchar,
        syscr: leader.sig_syscr,
        syscw: leader.sig_syscw,
        read_bytes: leader.sig_read_bytes,
        write_bytes: leader.sig_write_bytes,
        cancelled_write_bytes: leader.sig_cancelled_write_bytes,
    };
    for t in threads {
        io.rchar_bytes += t.rchar;
        io.wchar_bytes += t.wchar;
        io.syscr += t.syscr;
        io.syscw += t.syscw;
        io.read_bytes += t.read_bytes;
        io.write_bytes += t.write_bytes;
        io.cancelled_write_bytes += t.cancelled_write_bytes;
    }
    Box::new(io)
}

/// Per-thread CPU times and faults, as /proc/PID/task/TID/stat derives them.
fn thread_stat(s: &ts_stat, start_ns: u64, page: u64) -> Stat {
    let cpu_ns = cputime_adjust(
        s.utime_ns,
        s.stime_ns,
        s.sum_exec_runtime_ns,
        s.prev_utime_ns,
        s.prev_stime_ns,
    );
    to_stat(s, cpu_ns, (s.min_flt, s.maj_flt), start_ns, page)
}

/// The `Stat` of the block `s` with the CPU split `(utime, stime)` and the faults
/// `(minflt, majflt)` given: a thread's own, or its process's sums. The children's figures
/// and the sizes are the block's as they are.
fn to_stat(s: &ts_stat, cpu_ns: (u64, u64), faults: (u64, u64), start_ns: u64, page: u64) -> Stat {
    Stat {
        utime_ns: cpu_ns.0,
        stime_ns: cpu_ns.1,
        cutime_ns: s.cutime_ns,
        cstime_ns: s.cstime_ns,
        minflt: faults.0,
        majflt: faults.1,
        cminflt: s.cmin_flt,
        cmajflt: s.cmaj_flt,
        start_time_ns: start_ns,
        vsize_bytes: s.total_vm_pages * page,
        rss_bytes: s.rss_pages * page,
        swap_bytes: Some(s.swap_pages * page),
    }
}

/// Whole-process CPU times and faults, as /proc/PID/stat derives them: the sums over the live
/// threads plus what exited threads left in the signal struct (thread_group_cputime()), then
/// cputime_adjust against the process's last reported split.
fn process_stat(
    leader: &ts_stat,
    threads: impl Iterator<Item = ts_stat>,
    start_ns: u64,
    page: u64,
) -> Stat {
    let (mut u, mut s, mut r) = (
        leader.sig_utime_ns,
        leader.sig_stime_ns,
        leader.sig_sum_sched_runtime_ns,
    );
    let (mut minf, mut majf) = (leader.sig_min_flt, leader.sig_maj_flt);
    for t in threads {
        u += t.utime_ns;
        s += t.stime_ns;
        r += t.sum_exec_runtime_ns;
        minf += t.min_flt;
        majf += t.maj_flt;
    }
    let cpu_ns = cputime_adjust(u, s, r, leader.sig_prev_utime_ns, leader.sig_prev_stime_ns);
    to_stat(leader, cpu_ns, (minf, majf), start_ns, page)
}

/// Tasks for the query from one pass's records: per thread, or per process with thread-group
/// sums, in (tgid, tid) order, with `extras` (tasks read from /proc because the iterator did
/// not return them) merged in at their places. With `parallel`, a long pass is assembled
/// in two halves at once, straight into their places in the vector.
pub fn assemble(
    records: &[Record<'_>],
    mut extras: Vec<Task>,
    query: &Query,
    groups: &Groups,
    units: Units,
    recycled: Vec<Task>,
    parallel: bool,
) -> Vec<Task> {
    let sorted = by_process(records);
    extras.sort_by_key(|t| (t.id.tgid, t.id.tid));
    let plan = plan_parts(&sorted, &extras, query);
    let total: usize = plan.iter().map(|p| p.1).sum();

    // Sized once: growing a vector of 50,000 tasks by doubling copies it many times over.
    // A recycled vector (a periodic refresh's previous snapshot) keeps its pages: no fresh
    // page faults, no munmap, for the biggest allocation of a pass.
    let mut out = recycled;
    out.clear();
    out.reserve(total);
    tasksnap_sys::advise_huge_pages(
        out.as_ptr().cast(),
        out.capacity() * std::mem::size_of::<Task>(),
    );
    let mut extras: Vec<Option<Task>> = extras.into_iter().map(Some).collect();
    let fill = |plan: &[(Part, usize)],
                extras: &mut [Option<Task>],
                slots: &mut [std::mem::MaybeUninit<Task>]| {
        let mut slots = Slots {
            rest: slots,
            made: 0,
        };
        let mut x = 0;
        for (part, _) in plan {
            match *part {
                Part::Extra => {
                    if let Some(t) = extras.get_mut(x).and_then(Option::take) {
                        slots.put(t);
                    }
                    x += 1;
                }
                Part::Process(a, b) => {
                    assemble_group(&sorted[a..b], query, groups, units, &mut slots);
                }
            }
        }
        slots.made
    };
    let (plan_a, plan_b) = plan.split_at(halves(&plan, total, parallel));
    let count_a: usize = plan_a.iter().map(|p| p.1).sum();
    let extras_a = plan_a.iter().filter(|p| matches!(p.0, Part::Extra)).count();
    let (xa, xb) = extras.split_at_mut(extras_a);
    let (slots_a, slots_b) = out.spare_capacity_mut()[..total].split_at_mut(count_a);
    let (made_a, made_b) = if plan_b.is_empty() {
        (fill(plan_a, xa, slots_a), 0)
    } else {
        std::thread::scope(|s| {
            let b = std::thread::Builder::new()
                .name("tasksnap-assemble".into())
                .spawn_scoped(s, || fill(plan_b, xb, slots_b));
            match b {
                Ok(b) => {
                    let a = fill(plan_a, xa, slots_a);
                    (a, b.join().unwrap_or(usize::MAX))
                }
                // No thread: the tasks are made again one by one, below.
                Err(_) => (0, usize::MAX),
            }
        })
    };
    if made_a == count_a && made_b == total - count_a {
        // SAFETY: the first `total` slots of the spare capacity were all written: `fill`
        // writes slots in order from the first and returns how many, and the halves are
        // the two parts of slots 0..total, each filled to its end.
        unsafe { out.set_len(total) };
    } else {
        // No second thread, or a plan that did not match what was made (a bug in
        // group_tasks): whatever was written is leaked, not used, and the tasks are made
        // again one by one.
        debug_assert!(
            made_b == usize::MAX,
            "planned {total}, made {made_a} + {made_b}"
        );
        out = Vec::with_capacity(total);
        let mut extras = extras.into_iter().flatten();
        for (part, _) in &plan {
            match *part {
                Part::Extra => out.extend(extras.next()),
                Part::Process(a, b) => {
                    assemble_group(&sorted[a..b], query, groups, units, &mut out)
                }
            }
        }
    }
    out
}

/// The plan of [`assemble`]: each process (a range of `sorted`, which [`by_process`] ordered)
/// and each extra task (`extras`, sorted by tgid, tid), in order, with the tasks each gives.
fn plan_parts(sorted: &[&Record<'_>], extras: &[Task], query: &Query) -> Vec<(Part, usize)> {
    let mut plan: Vec<(Part, usize)> = Vec::with_capacity(sorted.len() + extras.len());
    let mut next_extra = 0;
    for members in sorted.chunk_by(|a, b| a.hdr.tgid == b.hdr.tgid) {
        let tgid = members[0].hdr.tgid as i32;
        while extras.get(next_extra).is_some_and(|e| e.id.tgid < tgid) {
            plan.push((Part::Extra, 1));
            next_extra += 1;
        }
        let start = members.as_ptr() as usize - sorted.as_ptr() as usize;
        let start = start / std::mem::size_of::<&Record>();
        plan.push((
            Part::Process(start, start + members.len()),
            group_tasks(members, query),
        ));
    }
    plan.extend((next_extra..extras.len()).map(|_| (Part::Extra, 1)));
    plan
}

/// Where [`assemble`] cuts its plan in two halves made on two threads: at the first part
/// where half the `total` tasks are planned; the whole plan (no second half) when the pass
/// is small, not `parallel`, or there is one core.
fn halves(plan: &[(Part, usize)], total: usize, parallel: bool) -> usize {
    if parallel && total >= PARALLEL_TASKS && tasksnap_sys::cores() >= 2 {
        let mut planned = 0;
        plan.iter()
            .position(|p| {
                planned += p.1;
                planned > total / 2
            })
            .unwrap_or(plan.len())
    } else {
        plan.len()
    }
}

/// Where [`assemble_group`] makes the tasks: each one is made in its place (a task is 400
/// bytes: made on the stack and moved, it was copied two or three times over).
pub trait Place {
    /// A new task with identity `id`, in its place, for the caller to fill in; `None`
    /// when there is no room.
    fn next(&mut self, id: TaskId) -> Option<&mut Task>;
}

impl Place for Vec<Task> {
    fn next(&mut self, id: TaskId) -> Option<&mut Task> {
        self.push(Task::new(id));
        self.last_mut()
    }
}

/// A run of uninitialized slots, filled from the first.
struct Slots<'s> {
    rest: &'s mut [std::mem::MaybeUninit<Task>],
    /// Slots written.
    made: usize,
}

impl Slots<'_> {
    /// Puts a made task in the next slot (dropped when there is none: the count says so).
    fn put(&mut self, t: Task) {
        let rest = std::mem::take(&mut self.rest);
        if let Some((first, tail)) = rest.split_first_mut() {
            first.write(t);
            self.rest = tail;
            self.made += 1;
        }
    }
}

impl Place for Slots<'_> {
    fn next(&mut self, id: TaskId) -> Option<&mut Task> {
        // More than planned would be a bug in group_tasks: the count then says so.
        let rest = std::mem::take(&mut self.rest);
        let (first, tail) = rest.split_first_mut()?;
        self.rest = tail;
        self.made += 1;
        Some(first.write(Task::new(id)))
    }
}

/// Tasks from which [`assemble`] works in two halves at once.
const PARALLEL_TASKS: usize = 4096;

/// One part of [`assemble`]'s plan.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// A process: its records are `sorted[start..end]`.
    Process(usize, usize),
    /// The next extra task.
    Extra,
}

/// The records in (tgid, tid) order, so that each process's are together. A stable sort:
/// walk order is a few runs in pid order (one more each time pids wrapped around), which it
/// merges in linear time.
fn by_process<'r, 'a>(records: &'r [Record<'a>]) -> Vec<&'r Record<'a>> {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by_key(|r| (r.hdr.tgid, r.hdr.tid));
    sorted
}

/// [`assemble`], handing each task to `sink` as it is made instead of collecting them (a
/// live view's whole pass then never holds 50,000 tasks at once).
pub fn assemble_each(
    records: &[Record<'_>],
    mut extras: Vec<Task>,
    query: &Query,
    groups: &Groups,
    units: Units,
    sink: &mut dyn FnMut(Task),
) {
    // Group the records by process: sort by (tgid, tid) and walk the runs (cheaper than a
    // map of vectors at 50,000 processes).
    let sorted = by_process(records);
    extras.sort_by_key(|t| (t.id.tgid, t.id.tid));
    let mut extras = extras.into_iter().peekable();
    let mut made: Vec<Task> = Vec::new();
    for members in sorted.chunk_by(|a, b| a.hdr.tgid == b.hdr.tgid) {
        let tgid = members[0].hdr.tgid as i32;
        // (`peek` first: `next_if` moves a task out and back in on every miss.)
        while extras.peek().is_some_and(|e| e.id.tgid < tgid) {
            if let Some(e) = extras.next() {
                sink(e);
            }
        }
        assemble_group(members, query, groups, units, &mut made);
        for t in made.drain(..) {
            sink(t);
        }
    }
    for e in extras {
        sink(e);
    }
}

/// How many tasks [`assemble_group`] makes of `members`.
fn group_tasks(members: &[&Record<'_>], query: &Query) -> usize {
    let tgid = members[0].hdr.tgid;
    if !members.iter().any(|r| r.hdr.tid == tgid) {
        0
    } else if query.wants_threads() {
        members.len()
    } else {
        1
    }
}

/// The tasks of one process from its records (`members`: every one with the same tgid, in
/// tid order), per thread or as the process with thread-group sums, as `query` wants. A
/// process whose leader has no record gives none.
pub fn assemble_group<'a, R: std::borrow::Borrow<Record<'a>>>(
    members: &[R],
    query: &Query,
    groups: &Groups,
    units: Units,
    place: &mut dyn Place,
) {
    let members = || members.iter().map(|r| r.borrow());
    let tick_ns = 1_000_000_000 / units.clock_ticks_per_s.max(1);
    // /proc reports start times in clock ticks: truncate so identities match across backends.
    let start = |r: &Record| r.hdr.start_boottime_ns / tick_ns * tick_ns;
    let page = units.page_size_bytes;
    let Some(first) = members().next() else {
        return;
    };
    let tgid = first.hdr.tgid;
    let Some(leader) = members().find(|r| r.hdr.tid == tgid) else {
        return;
    };
    let process_stat = || {
        leader.stat().map(|ls| {
            // Summed straight from the records: no vector per process.
            let threads = members().filter_map(|r| r.stat());
            process_stat(&ls, threads, start(leader), page)
        })
    };
    let process_io = || {
        if !groups.has(Group::Io) {
            return None;
        }
        leader
            .io()
            .map(|li| process_io(&li, members().filter_map(|r| r.io())))
    };
    let id = |r: &Record| TaskId {
        tgid: r.hdr.tgid as i32,
        tid: r.hdr.tid as i32,
        start_time_ns: start(r),
    };
    if !query.wants_threads() {
        if let Some(t) = place.next(id(leader)) {
            fill_task(t, leader, process_stat(), process_io(), groups, page);
        }
        return;
    }
    for r in members() {
        let as_process = r.hdr.tid == tgid && query.leader_as_process;
        let stat = if as_process {
            process_stat()
        } else {
            r.stat().map(|s| thread_stat(&s, start(r), page))
        };
        let io = if as_process {
            process_io()
        } else if groups.has(Group::Io) {
            r.io().as_ref().map(thread_io)
        } else {
            None
        };
        let Some(t) = place.next(id(r)) else {
            return;
        };
        fill_task(t, r, stat, io, groups, page);
        if as_process {
            // /proc/PID/stat of the leader reports the group's thread count.
            if let (Some(b), Some(lb)) = (&mut t.base, leader.base()) {
                b.num_threads = lb.nr_threads.max(0) as u32;
            }
        }
    }
}

/// Fills in task `t` (just made, identity only) from record `r`, with its `stat` and `io`.
fn fill_task(
    t: &mut Task,
    r: &Record<'_>,
    stat: Option<Stat>,
    io: Option<Box<Io>>,
    groups: &Groups,
    page: u64,
) {
    let base = r.base();
    t.base = base.as_ref().map(to_base);
    if let (Some(b), Some(k)) = (&mut t.base, r.kname()) {
        b.comm = comm_bytes(&k.name.map(|c| c as u8));
    }
    t.cred = r.cred().as_ref().map(to_cred);
    t.stat = if groups.has(Group::Stat) { stat } else { None };
    if groups.has(Group::Locked) {
        t.locked_bytes = base.as_ref().map(|b| b.locked_vm_pages * page);
    }
    t.sched = if groups.has(Group::Sched) || groups.has(Group::SchedSwitches) {
        r.sched().as_ref().map(to_sched)
    } else {
        None
    };
    t.io = io;
    if mem_from_pass(groups) {
        t.mem = r.mem().and_then(|m| to_mem(&m, page));
    }
    if groups.has(Group::Signals) {
        // Every row's own masks: a process row's ShdPnd is its group's, as /proc/PID/status.
        t.signals = r.sig().map(|s| {
            Box::new(Signals {
                pending: s.pending,
                shared_pending: s.shared_pending,
                blocked: s.blocked,
                ignored: s.ignored,
                caught: s.caught,
            })
        });
    }
    if let Some(n) = r.ns() {
        fill_ns(t, &n, groups);
    }
}

/// The groups of a `ts_ns` block `groups` asks for, as /proc shows them: a namespace the task
/// has not (0) is a link that does not resolve; the login uid as procps reads it (a C `int`);
/// none without CONFIG_AUDIT (no loginuid file).
fn fill_ns(t: &mut Task, n: &ts_ns, groups: &Groups) {
    let x = t.extra_mut();
    if groups.has(Group::Ns) {
        x.ns = Some(n.inum.map(u64::from));
    }
    if groups.has(Group::OomScoreAdj) {
        x.oom_score_adj = Some(n.oom_score_adj);
    }
    if groups.has(Group::Loginuid) && n.flags & TS_NS_LOGINUID != 0 {
        x.loginuid = Some(n.loginuid as i32);
    }
}

/// Keeps the tasks the selector names.
pub fn filter(tasks: &mut Vec<Task>, query: &Query) {
    let ppid = |t: &Task| t.base.as_ref().map_or(-1, |b| b.ppid);
    match query.selector {
        Selector::AllProcesses | Selector::AllThreads => {}
        Selector::Pid(p) => tasks.retain(|t| t.id.tgid == p && t.id.tid == p),
        Selector::ThreadsOf(p) => tasks.retain(|t| t.id.tgid == p),
        Selector::ChildrenOf(p) => tasks.retain(|t| ppid(t) == p),
        Selector::Session(s) => tasks.retain(|t| t.base.as_ref().is_some_and(|b| b.sid == s)),
        Selector::ProcessGroup(g) => tasks.retain(|t| t.base.as_ref().is_some_and(|b| b.pgid == g)),
    }
}

/// Kernel threads and zombies: no user memory, hence no command line.
pub fn no_mm(t: &Task) -> bool {
    t.base
        .as_ref()
        .is_some_and(|b| b.kthread || b.state == TaskState::Zombie)
}

/// [`no_mm`] of the task record `r` gives.
pub fn record_no_mm(r: &Record<'_>) -> bool {
    r.base().is_some_and(|b| {
        let b = to_base(&b);
        b.kthread || b.state == TaskState::Zombie
    })
}

/// Whether `g` asks for what only dump_task_rare writes (signal masks; namespaces,
/// oom_score_adj and loginuid).
pub fn wants_rare(g: &Groups) -> bool {
    g.intersects(const { Groups::of(&[Group::Signals, Group::Ns, Group::OomScoreAdj, Group::Loginuid]) })
}

/// The groups that must come from /proc.
pub fn procfs_groups(g: &Groups) -> Groups {
    g.only(FROM_PROCFS)
}

/// The groups that come from /proc when asked for (the BPF pass does not give them, or not
/// for every task).
const FROM_PROCFS: Groups = Groups::of(&[
    Group::Cmdline,
    Group::Exe,
    Group::Wchan,
    // The iterator does not read cgroup paths (they would need the kernfs names walked
    // up to the hierarchy's root for every task).
    Group::Cgroup,
    // Derived from the cgroup read from /proc (`Login::fill` after the fill).
    Group::Login,
    // The security label: a file of its own, which the iterator does not read.
    Group::Label,
    // Neither is in the iterator's record.
    Group::Fds,
    Group::Environ,
    // statm: from the pass where it can give it exactly (`mem_from_pass`); the tasks
    // it did not give it for are read (snapshot.rs `fill_plan`). I/O counters come from
    // the iterator (TS_GROUP_IO).
    Group::Mem,
    Group::MemStatus,
    // Supplementary groups are only in status.
    Group::CredFull,
    // Code and stack addresses as /proc/PID/stat shows them to this reader (masked
    // without ptrace access: do_task_stat()), and the RSS limit with them.
    Group::Layout,
    // Namespaces, oom_score_adj and loginuid come from the pass (TS_GROUP_NS) when
    // dump_task_rare ran (below); the OOM score (oom_badness() over the task's memory and the machine's), the
    // autogroup and smaps_rollup (a walk of every mapping) from /proc.
    Group::OomScore,
    Group::Autogroup,
    Group::Smaps,
    // The rare blocks (`wants_rare`): only dump_task_rare writes them; `fill_plan`
    // (snapshot.rs) reads them only for the tasks whose record lacks them.
    Group::Signals,
    Group::Ns,
    Group::OomScoreAdj,
    Group::Loginuid,
]);

#[cfg(test)]
mod tests {
    use crate::bpf::decode::*;

    #[test]
    fn state_letters_follow_task_state_index() {
        assert_eq!(state_letter(0, 0), b'R');
        assert_eq!(state_letter(0x1, 0), b'S');
        assert_eq!(state_letter(0x2, 0), b'D');
        assert_eq!(state_letter(0x102, 0), b'D', "TASK_KILLABLE (vfork parent)");
        assert_eq!(state_letter(0x402, 0), b'I', "TASK_IDLE");
        assert_eq!(state_letter(0x4, 0), b'T');
        assert_eq!(state_letter(0x8, 0), b't');
        assert_eq!(state_letter(0, 0x20), b'Z', "EXIT_ZOMBIE");
        assert_eq!(state_letter(0x40, 0), b'P');
    }

    #[test]
    fn statm_is_derived_from_the_block_as_task_statm_does() {
        let m = ts_mem {
            total_vm: 1000,
            data_vm: 300,
            stack_vm: 33,
            // PAGE_ALIGN(end_code) - (start_code & PAGE_MASK): 0x401000..0x404000, 3 pages.
            start_code: 0x401234,
            end_code: 0x403001,
            file: 200,
            anon: 500,
            shmem: -3, // a sum below 0 is 0 (percpu_counter_sum_positive())
            swap: 7,
            flags: TS_MEM_EXACT,
            cpus: 2,
        };
        let got = to_mem(&m, 4096).expect("exact");
        assert_eq!(got.vsize_bytes, 1000 * 4096);
        assert_eq!(got.rss_bytes, 700 * 4096);
        assert_eq!(got.shared_bytes, 200 * 4096);
        assert_eq!(got.text_bytes, 3 * 4096);
        assert_eq!(got.data_bytes, 333 * 4096);
        assert_eq!((got.swap_bytes, got.locked_bytes), (None, None));
        // Deltas not added: nothing, so that statm is read from /proc.
        assert!(to_mem(&ts_mem { flags: 0, ..m }, 4096).is_none());
        // No mm (kernel thread, zombie): zeros, as statm prints.
        let none = to_mem(
            &ts_mem {
                flags: TS_MEM_EXACT,
                ..ts_mem::default()
            },
            4096,
        )
        .expect("exact");
        assert_eq!((none.vsize_bytes, none.rss_bytes, none.text_bytes), (0, 0, 0));
    }

    #[test]
    fn cputime_adjust_splits_runtime_and_never_goes_back() {
        // 3 user ticks, 1 system tick, 100 ms of real runtime: 75/25.
        assert_eq!(cputime_adjust(30, 10, 100, 0, 0), (75, 25));
        assert_eq!(cputime_adjust(0, 10, 100, 0, 0), (0, 100));
        assert_eq!(cputime_adjust(10, 0, 100, 0, 0), (100, 0));
        // Already reported more than the runtime: report the old split.
        assert_eq!(cputime_adjust(30, 10, 100, 60, 50), (60, 50));
        // Never below what was reported.
        assert_eq!(cputime_adjust(30, 10, 100, 0, 40), (60, 40));
    }

    fn hdr_bytes(tid: u32, groups: u32) -> Vec<u8> {
        let h = ts_hdr {
            tid,
            tgid: tid,
            groups,
            ..Default::default()
        };
        // SAFETY: ts_hdr is a repr(C) struct of integers: viewing it as bytes reads
        // initialized memory of exactly its size.
        unsafe {
            std::slice::from_raw_parts(
                (&h as *const ts_hdr).cast::<u8>(),
                std::mem::size_of::<ts_hdr>(),
            )
        }
        .to_vec()
    }

    #[test]
    fn arena_chunks_parse_to_their_terminator_and_refuse_garbage() {
        let chunk_len = 4096;
        let base = record_size(TS_GROUP_BASE);
        // Two base records, a terminator, then leftovers of an older pass.
        let mut chunk = Vec::new();
        for tid in [7, 9] {
            chunk.extend(hdr_bytes(tid, TS_GROUP_BASE));
            chunk.resize(chunk.len() + base - std::mem::size_of::<ts_hdr>(), 0);
        }
        chunk.extend(hdr_bytes(0, 0));
        chunk.extend(hdr_bytes(11, TS_GROUP_BASE));
        chunk.resize(chunk_len, 0xff);
        let mut out = Vec::new();
        chunk_records(&chunk, &mut out).expect("parses");
        assert_eq!(out.iter().map(|r| r.hdr.tid).collect::<Vec<_>>(), [7, 9]);

        // Unknown group bits: refused, not guessed at.
        let mut bad = hdr_bytes(3, 1 << 7);
        bad.resize(chunk_len, 0);
        assert!(chunk_records(&bad, &mut Vec::new()).is_err());

        // A record running past its chunk: refused.
        let mut cut = hdr_bytes(5, TS_GROUP_BASE);
        cut.extend([0u8; 8]);
        assert!(chunk_records(&cut, &mut Vec::new()).is_err());
    }

    /// The bytes of a repr(C) record block.
    fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
        // SAFETY: the record blocks are repr(C) structs of integers and byte arrays:
        // viewing one as bytes reads initialized memory of exactly its size.
        unsafe {
            std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>())
        }
        .to_vec()
    }

    /// A base+stat record of thread `tid` of process `tgid` that ran `ms` milliseconds.
    fn record_bytes(tgid: u32, tid: u32, ms: u64) -> Vec<u8> {
        let mut out = bytes_of(&ts_hdr {
            tid,
            tgid,
            groups: TS_GROUP_BASE | TS_GROUP_STAT,
            start_boottime_ns: u64::from(tid) * 1_000_000_000,
            ..Default::default()
        });
        out.extend(bytes_of(&ts_base {
            ppid: tgid / 2,
            nr_threads: 1,
            ..Default::default()
        }));
        out.extend(bytes_of(&ts_stat {
            utime_ns: ms * 1_000_000,
            sum_exec_runtime_ns: ms * 1_000_000,
            min_flt: ms,
            ..Default::default()
        }));
        out
    }

    /// The two halves made at once give what one pass makes: the same tasks in the same
    /// places, extras included, thread-group sums across the split, for a walk whose pids
    /// wrapped around (two runs in pid order) with a process whose leader is missing.
    #[test]
    fn assembling_in_two_halves_matches_one_pass() {
        let mut buf = Vec::new();
        // Forked after the wrap-around: 5,000..9,999 came first in the walk.
        let order = (5_000u32..10_000).chain(2..5_000);
        for tgid in order {
            if tgid == 4_321 {
                // Its leader is gone: its thread alone gives no task.
                buf.extend(record_bytes(tgid, tgid + 100_000, 5));
                continue;
            }
            buf.extend(record_bytes(tgid, tgid, 10));
            if tgid % 7 == 0 {
                for k in 1..=2 {
                    buf.extend(record_bytes(tgid, tgid + 200_000 + k, 20));
                }
            }
        }
        let records = records(&buf).expect("records parse");
        let units = Units {
            clock_ticks_per_s: 100,
            page_size_bytes: 4096,
            boot_time_unix_s: 0,
            boot: crate::BootClock::with_offset(0),
        };
        let groups = Groups::of(&[Group::Base, Group::Stat]);
        let extra = |pid: i32| {
            Task::new(TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: 0,
            })
        };
        for selector in [Selector::AllProcesses, Selector::AllThreads] {
            let mut query = Query::new(selector.clone(), groups);
            query.leader_as_process = true;
            let make = |parallel| {
                let extras = vec![extra(20_000), extra(1), extra(7_500)];
                assemble(
                    &records,
                    extras,
                    &query,
                    &groups,
                    units,
                    Vec::new(),
                    parallel,
                )
            };
            let (one, two) = (make(false), make(true));
            assert_eq!(one, two, "{selector:?}");
            assert!(one.is_sorted_by_key(|t| (t.id.tgid, t.id.tid)));
            let threads = if query.wants_threads() { 1_428 * 2 } else { 0 };
            assert_eq!(one.len(), 9_997 + 3 + threads, "{selector:?}");
            assert!(one.iter().all(|t| t.id.tgid != 4_321));
            let p = one.iter().find(|t| t.id.tid == 7_000).expect("7000");
            assert_eq!(
                p.stat.as_ref().map(|s| s.utime_ns),
                Some(50_000_000),
                "a process's time is its threads' sum"
            );
        }
    }

    /// The signal block comes after every other (record.h's bit order) and fills
    /// `Task::signals` only when the masks were asked for.
    #[test]
    fn signal_masks_decode_after_the_other_blocks() {
        let mut buf = bytes_of(&ts_hdr {
            tid: 7,
            tgid: 7,
            groups: TS_GROUP_BASE | TS_GROUP_MEM | TS_GROUP_SIG,
            ..Default::default()
        });
        buf.extend(bytes_of(&ts_base {
            nr_threads: 1,
            ..Default::default()
        }));
        buf.extend(bytes_of(&ts_mem {
            total_vm: 99,
            ..Default::default()
        }));
        let masks = ts_sig {
            pending: 0x4000,
            shared_pending: 1 << 39,
            blocked: 0x80_0000_4200,
            ignored: 0x1007,
            caught: 0x1_0000_0c40,
        };
        buf.extend(bytes_of(&masks));
        let recs = records(&buf).expect("parses");
        assert_eq!(recs[0].mem().map(|m| m.total_vm), Some(99));
        let units = Units {
            clock_ticks_per_s: 100,
            page_size_bytes: 4096,
            boot_time_unix_s: 0,
            boot: crate::BootClock::with_offset(0),
        };
        let make = |signals| {
            let groups = Groups::of(&[Group::Base]).flag(Group::Signals, signals);
            let q = Query::new(Selector::AllProcesses, groups);
            assemble(&recs, Vec::new(), &q, &groups, units, Vec::new(), false)
        };
        assert_eq!(
            make(true)[0].signals.as_deref().copied(),
            Some(Signals {
                pending: 0x4000,
                shared_pending: 1 << 39,
                blocked: 0x80_0000_4200,
                ignored: 0x1007,
                caught: 0x1_0000_0c40,
            })
        );
        assert_eq!(make(false)[0].signals, None);
    }

    /// A `ts_cmd_hdr` (tgid, len, flags, pad) as the copy writes it.
    fn cmd_hdr(tgid: u32, len: u32, flags: u32) -> Vec<u8> {
        [tgid, len, flags, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    }

    #[test]
    fn copied_command_lines_parse_with_padding_and_refuse_garbage() {
        let mut chunk = Vec::new();
        // "a\0b c\0" (6 bytes, padded to 8), an empty line, a flagged one, a terminator,
        // then leftovers of an older run that must not be read.
        chunk.extend(cmd_hdr(10, 6, 0));
        chunk.extend(b"a\0b c\0\xff\xff");
        chunk.extend(cmd_hdr(11, 0, 0));
        chunk.extend(cmd_hdr(12, 0, TS_CMD_UNREAD));
        chunk.extend(cmd_hdr(0, 0, 0));
        chunk.extend(cmd_hdr(13, 3, 0));
        chunk.extend(b"old\0\0\0\0\0");
        let mut out = HashMap::new();
        cmd_chunk(&chunk, &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[&10], b"a\0b c\0");
        assert_eq!(out[&11], b"");
        assert!(!out.contains_key(&12), "flagged: read from /proc instead");

        // A length past the chunk's end ends the chunk; what came before stays.
        let mut cut = cmd_hdr(20, 2, 0);
        cut.extend(b"x\0\0\0\0\0\0\0");
        cut.extend(cmd_hdr(21, u32::MAX, 0));
        cut.extend(b"short");
        let mut out = HashMap::new();
        cmd_chunk(&cut, &mut out);
        assert_eq!(out.keys().copied().collect::<Vec<_>>(), [20]);

        // A header cut short: nothing, no panic.
        let mut out = HashMap::new();
        cmd_chunk(&cmd_hdr(30, 1, 0)[..10], &mut out);
        assert!(out.is_empty());
    }
}
