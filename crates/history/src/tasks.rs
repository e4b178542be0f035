//! Task rows as columns: the identity columns shared with thread rows, and every attribute
//! group of a [`Task`] except `cmdline` and `cgroup` (those go in names frames). Each number
//! is written as its difference from a reference row: the key's row for the same identity
//! in a delta, else the row written just before (threads of one process share most fields),
//! so that unchanged fields are one byte and zstd sees runs.

use tasksnap_model::{
    Base, Comm, Cred, Group, Groups, Io, Mem, Sched, Stat, Task, TaskId, TaskState,
};

use crate::wire::{put_d, put_i, put_u, Cols, ColsReader, Reader};
use crate::HistoryError;

// Column numbers of the task section of a sample frame.
pub(crate) const T_TGID: usize = 1;
const T_TID: usize = 2;
const T_START: usize = 3;
const T_PRESENT: usize = 4;
const T_STATE: usize = 5;
const T_IDS: usize = 6;
const T_SCHED_BASE: usize = 7;
const T_CPU: usize = 8;
const T_COMM: usize = 9;
const T_CRED: usize = 10;
const T_TIMES: usize = 11;
const T_FAULTS: usize = 12;
const T_STAT_MEM: usize = 13;
const T_MEM: usize = 14;
const T_IO: usize = 15;
const T_SCHED: usize = 16;
const T_BLOBS: usize = 17;
const T_LOCKED: usize = 18;
/// Indices (into the key's rows) of the key's tasks that are gone, delta-coded.
pub(crate) const T_GONE: usize = 19;
/// In a delta, which key row each row replaces ([`crate::wire::put_key_idx`]).
pub(crate) const T_KEY_IDX: usize = 31;

/// Writes identities as three columns: tgid as the difference from the previous one, tid as
/// the difference from its tgid, start time as the difference from the previous one.
pub(crate) fn put_id(c: &mut Cols, cols: [usize; 3], id: TaskId, prev: TaskId) {
    put_i(c.c(cols[0]), i64::from(id.tgid) - i64::from(prev.tgid));
    put_i(c.c(cols[1]), i64::from(id.tid) - i64::from(id.tgid));
    put_d(c.c(cols[2]), id.start_time_ns, prev.start_time_ns);
}

/// Inverse of [`put_id`].
pub(crate) fn get_id(
    c: &mut ColsReader<'_>,
    cols: [usize; 3],
    prev: TaskId,
) -> Result<TaskId, HistoryError> {
    let tgid = c.c(cols[0]).di32(prev.tgid)?;
    let tid = c.c(cols[1]).di32(tgid)?;
    let start_time_ns = c.c(cols[2]).d(prev.start_time_ns)?;
    Ok(TaskId {
        tgid,
        tid,
        start_time_ns,
    })
}

pub(crate) const TASK_ID_COLS: [usize; 3] = [T_TGID, T_TID, T_START];

/// True when two rows are the same apart from `cmdline` and `cgroup` (which names frames
/// carry) and `extra` (not recorded).
pub(crate) fn same_row(a: &Task, b: &Task) -> bool {
    let Task {
        id,
        base,
        cred,
        stat,
        mem,
        cmdline: _,
        locked_bytes,
        cmdline_timed_out,
        exe,
        io,
        sched,
        wchan,
        cgroup: _,
        // Not recorded by format 1: a replayed listing shows what ps shows for unreadable.
        signals: _,
        layout: _,
        // Not recorded (ps-only groups: a recording never asks for them).
        fds: _,
        environ: _,
        extra: _,
    } = a;
    *id == b.id
        && *base == b.base
        && *cred == b.cred
        && *stat == b.stat
        && *mem == b.mem
        && *locked_bytes == b.locked_bytes
        && *cmdline_timed_out == b.cmdline_timed_out
        && *exe == b.exe
        && *io == b.io
        && *sched == b.sched
        && *wchan == b.wchan
}

const P_BASE: u64 = 1;
const P_CRED: u64 = 1 << 1;
const P_GROUPS: u64 = 1 << 2;
const P_EFFECTIVE_ONLY: u64 = 1 << 3;
const P_STAT: u64 = 1 << 4;
const P_MEM: u64 = 1 << 5;
const P_SWAP: u64 = 1 << 6;
const P_MEM_LOCKED: u64 = 1 << 7;
const P_LOCKED: u64 = 1 << 8;
const P_TIMED_OUT: u64 = 1 << 9;
const P_EXE: u64 = 1 << 10;
const P_IO: u64 = 1 << 11;
const P_SCHED: u64 = 1 << 12;
const P_VOL: u64 = 1 << 13;
const P_INVOL: u64 = 1 << 14;
const P_WCHAN: u64 = 1 << 15;
const P_KTHREAD: u64 = 1 << 16;

fn state_code(s: TaskState) -> u64 {
    match s {
        TaskState::Running => 0,
        TaskState::Sleeping => 1,
        TaskState::DiskSleep => 2,
        TaskState::Stopped => 3,
        TaskState::TracingStop => 4,
        TaskState::Dead => 5,
        TaskState::Zombie => 6,
        TaskState::Parked => 7,
        TaskState::Idle => 8,
        TaskState::Other(c) => 16 + u64::from(c),
    }
}

fn state_from(code: u64) -> Result<TaskState, HistoryError> {
    Ok(match code {
        0 => TaskState::Running,
        1 => TaskState::Sleeping,
        2 => TaskState::DiskSleep,
        3 => TaskState::Stopped,
        4 => TaskState::TracingStop,
        5 => TaskState::Dead,
        6 => TaskState::Zombie,
        7 => TaskState::Parked,
        8 => TaskState::Idle,
        16..=271 => TaskState::Other((code - 16) as u8),
        _ => return Err(HistoryError::Corrupt("unknown task state")),
    })
}

/// Writes a blob as "same as the reference" (0) or its length + 1 and bytes.
pub(crate) fn put_blob(b: &mut Vec<u8>, v: &[u8], r: Option<&[u8]>) {
    if r == Some(v) {
        put_u(b, 0);
    } else {
        put_u(b, v.len() as u64 + 1);
        b.extend_from_slice(v);
    }
}

/// Inverse of [`put_blob`]: the blob (or the reference's) handed to `f`.
pub(crate) fn get_blob<T>(
    rd: &mut Reader<'_>,
    r: Option<&[u8]>,
    f: impl FnOnce(&[u8]) -> T,
) -> Result<T, HistoryError> {
    match rd.u()? {
        0 => r
            .map(f)
            .ok_or(HistoryError::Corrupt("blob refers to a missing reference")),
        n => {
            let n = n - 1;
            if n > rd.left() as u64 {
                return Err(HistoryError::Truncated);
            }
            Ok(f(rd.take(n as usize)?))
        }
    }
}

/// The attribute groups a recording keeps: what [`put_task`] writes of a task (and names
/// frames its command line and cgroup), so what a reading read back can hold. Every other
/// group (descriptor count, environment, OOM scores, login uid, PSS/USS, security label,
/// sd-login's answers, autogroup, namespaces, signal masks, layout) reads back as `None`.
pub fn recorded_groups() -> Groups {
    let unrecorded = [
        Group::Fds,
        Group::Environ,
        Group::OomScore,
        Group::OomScoreAdj,
        Group::Loginuid,
        Group::Smaps,
        Group::Label,
        Group::Login,
        Group::Autogroup,
        Group::Ns,
        Group::Signals,
        Group::Layout,
    ];
    unrecorded.into_iter().fold(Groups::all(), Groups::without)
}

/// The presence bits of `t`'s row: which groups (and optional figures within them) it has.
fn presence(t: &Task) -> u64 {
    let mem = t.mem.as_deref();
    let sched = t.sched.as_deref();
    let cred = t.cred.as_ref();
    [
        (P_BASE, t.base.is_some()),
        (P_KTHREAD, t.base.as_ref().is_some_and(|b| b.kthread)),
        (P_CRED, cred.is_some()),
        (P_GROUPS, cred.is_some_and(|c| c.groups.is_some())),
        (P_EFFECTIVE_ONLY, cred.is_some_and(|c| c.effective_only)),
        (P_STAT, t.stat.is_some()),
        (P_MEM, mem.is_some()),
        (P_SWAP, mem.is_some_and(|m| m.swap_bytes.is_some())),
        (P_MEM_LOCKED, mem.is_some_and(|m| m.locked_bytes.is_some())),
        (P_LOCKED, t.locked_bytes.is_some()),
        (P_TIMED_OUT, t.cmdline_timed_out),
        (P_EXE, t.exe.is_some()),
        (P_IO, t.io.is_some()),
        (P_SCHED, sched.is_some()),
        (P_VOL, sched.is_some_and(|s| s.voluntary_switches.is_some())),
        (
            P_INVOL,
            sched.is_some_and(|s| s.involuntary_switches.is_some()),
        ),
        (P_WCHAN, t.wchan.is_some()),
    ]
    .into_iter()
    .filter(|&(_, on)| on)
    .fold(0, |p, (bit, _)| p | bit)
}

/// Writes `t`'s row (not its identity) against the reference `r`.
pub(crate) fn put_task(c: &mut Cols, t: &Task, r: Option<&Task>) {
    let Task {
        id,
        base,
        cred,
        stat,
        mem,
        cmdline: _,
        locked_bytes,
        cmdline_timed_out: _,
        exe,
        io,
        sched,
        wchan,
        cgroup: _,
        // Not recorded by format 1: a replayed listing shows what ps shows for unreadable.
        signals: _,
        layout: _,
        // Not recorded: the recorder never asks for them, and an environment is private.
        fds: _,
        environ: _,
        // Namespaces, OOM scores, autogroup, login uid, PSS/USS: not recorded.
        extra: _,
    } = t;
    put_u(c.c(T_PRESENT), presence(t));
    if let Some(b) = base {
        put_base(c, b, r.and_then(|r| r.base.as_ref()));
    }
    if let Some(cr) = cred {
        put_cred(c.c(T_CRED), cr, r.and_then(|r| r.cred.as_ref()));
    }
    if let Some(s) = stat {
        put_stat(c, s, *id, r.and_then(|r| r.stat.as_ref()));
    }
    if let Some(m) = mem {
        put_mem(c.c(T_MEM), m, r.and_then(|r| r.mem.as_deref()));
    }
    if let Some(x) = locked_bytes {
        put_d(
            c.c(T_LOCKED),
            *x,
            r.and_then(|r| r.locked_bytes).unwrap_or(0),
        );
    }
    if let Some(x) = exe {
        put_blob(c.c(T_BLOBS), x, r.and_then(|r| r.exe.as_deref()));
    }
    if let Some(w) = wchan {
        put_blob(
            c.c(T_BLOBS),
            w.as_bytes(),
            r.and_then(|r| r.wchan.as_deref()).map(str::as_bytes),
        );
    }
    if let Some(io) = io {
        put_io(c.c(T_IO), io, r.and_then(|r| r.io.as_deref()));
    }
    if let Some(s) = sched {
        put_sched(c.c(T_SCHED), s, r.and_then(|r| r.sched.as_deref()));
    }
}

/// The base group's columns (state, ids, scheduling, processor, comm) against `rb`.
fn put_base(c: &mut Cols, b: &Base, rb: Option<&Base>) {
    let d = Base::default();
    let rb0 = rb.unwrap_or(&d);
    let Base {
        state,
        ppid,
        pgid,
        sid,
        tty_nr,
        tpgid,
        flags,
        comm,
        kthread: _,
        nice,
        priority,
        policy,
        rt_priority,
        num_threads,
        processor,
    } = b;
    put_u(c.c(T_STATE), state_code(*state));
    let ids = c.c(T_IDS);
    put_i(ids, i64::from(*ppid) - i64::from(rb0.ppid));
    put_i(ids, i64::from(*pgid) - i64::from(rb0.pgid));
    put_i(ids, i64::from(*sid) - i64::from(rb0.sid));
    put_i(ids, i64::from(*tpgid) - i64::from(rb0.tpgid));
    put_d(ids, u64::from(*tty_nr), u64::from(rb0.tty_nr));
    let s = c.c(T_SCHED_BASE);
    put_d(s, u64::from(*flags), u64::from(rb0.flags));
    put_i(s, i64::from(*nice) - i64::from(rb0.nice));
    put_i(s, i64::from(*priority) - i64::from(rb0.priority));
    put_d(s, u64::from(*policy), u64::from(rb0.policy));
    put_d(s, u64::from(*rt_priority), u64::from(rb0.rt_priority));
    put_d(s, u64::from(*num_threads), u64::from(rb0.num_threads));
    put_i(c.c(T_CPU), i64::from(*processor) - i64::from(rb0.processor));
    put_blob(c.c(T_COMM), comm, rb.map(|b| &b.comm[..]));
}

/// The credentials' column: the effective ids against `rc`'s, the others against them.
fn put_cred(b: &mut Vec<u8>, cr: &Cred, rc: Option<&Cred>) {
    let z = |f: fn(&Cred) -> u32| u64::from(rc.map_or(0, f));
    let Cred {
        ruid,
        euid,
        suid,
        fsuid,
        rgid,
        egid,
        sgid,
        fsgid,
        groups,
        effective_only: _,
    } = cr;
    put_d(b, u64::from(*euid), z(|c| c.euid));
    put_d(b, u64::from(*ruid), u64::from(*euid));
    put_d(b, u64::from(*suid), u64::from(*euid));
    put_d(b, u64::from(*fsuid), u64::from(*euid));
    put_d(b, u64::from(*egid), z(|c| c.egid));
    put_d(b, u64::from(*rgid), u64::from(*egid));
    put_d(b, u64::from(*sgid), u64::from(*egid));
    put_d(b, u64::from(*fsgid), u64::from(*egid));
    if let Some(g) = groups {
        let rg = rc.and_then(|c| c.groups.as_ref());
        if rg == Some(g) {
            put_u(b, 0);
        } else {
            put_u(b, g.len() as u64 + 1);
            for &x in g {
                put_u(b, u64::from(x));
            }
        }
    }
}

/// The stat group's columns (times, faults, start time and sizes) against `rs`.
fn put_stat(c: &mut Cols, s: &Stat, id: TaskId, rs: Option<&Stat>) {
    let d = Stat::default();
    let rs = rs.unwrap_or(&d);
    let Stat {
        utime_ns,
        stime_ns,
        cutime_ns,
        cstime_ns,
        minflt,
        majflt,
        cminflt,
        cmajflt,
        start_time_ns,
        vsize_bytes,
        rss_bytes,
        // Not recorded in format 1 (replayed as unknown): added to the model after it.
        swap_bytes: _,
    } = s;
    let b = c.c(T_TIMES);
    put_d(b, *utime_ns, rs.utime_ns);
    put_d(b, *stime_ns, rs.stime_ns);
    put_d(b, *cutime_ns, rs.cutime_ns);
    put_d(b, *cstime_ns, rs.cstime_ns);
    let b = c.c(T_FAULTS);
    put_d(b, *minflt, rs.minflt);
    put_d(b, *majflt, rs.majflt);
    put_d(b, *cminflt, rs.cminflt);
    put_d(b, *cmajflt, rs.cmajflt);
    let b = c.c(T_STAT_MEM);
    put_d(b, *start_time_ns, id.start_time_ns);
    put_d(b, *vsize_bytes, rs.vsize_bytes);
    put_d(b, *rss_bytes, rs.rss_bytes);
}

/// The memory column against `rm`.
fn put_mem(b: &mut Vec<u8>, m: &Mem, rm: Option<&Mem>) {
    let z = |f: fn(&Mem) -> u64| rm.map_or(0, f);
    let Mem {
        vsize_bytes,
        rss_bytes,
        shared_bytes,
        text_bytes,
        data_bytes,
        swap_bytes,
        locked_bytes,
    } = m;
    put_d(b, *vsize_bytes, z(|m| m.vsize_bytes));
    put_d(b, *rss_bytes, z(|m| m.rss_bytes));
    put_d(b, *shared_bytes, z(|m| m.shared_bytes));
    put_d(b, *text_bytes, z(|m| m.text_bytes));
    put_d(b, *data_bytes, z(|m| m.data_bytes));
    if let Some(x) = swap_bytes {
        put_d(b, *x, rm.and_then(|m| m.swap_bytes).unwrap_or(0));
    }
    if let Some(x) = locked_bytes {
        put_d(b, *x, rm.and_then(|m| m.locked_bytes).unwrap_or(0));
    }
}

/// The I/O column against `ri`.
fn put_io(b: &mut Vec<u8>, io: &Io, ri: Option<&Io>) {
    let z = |f: fn(&Io) -> u64| ri.map_or(0, f);
    let Io {
        rchar_bytes,
        wchar_bytes,
        syscr,
        syscw,
        read_bytes,
        write_bytes,
        cancelled_write_bytes,
    } = io;
    put_d(b, *rchar_bytes, z(|x| x.rchar_bytes));
    put_d(b, *wchar_bytes, z(|x| x.wchar_bytes));
    put_d(b, *syscr, z(|x| x.syscr));
    put_d(b, *syscw, z(|x| x.syscw));
    put_d(b, *read_bytes, z(|x| x.read_bytes));
    put_d(b, *write_bytes, z(|x| x.write_bytes));
    put_d(b, *cancelled_write_bytes, z(|x| x.cancelled_write_bytes));
}

/// The scheduler accounting column against `rs`.
fn put_sched(b: &mut Vec<u8>, s: &Sched, rs: Option<&Sched>) {
    let Sched {
        on_cpu_ns,
        run_delay_ns,
        timeslices,
        voluntary_switches,
        involuntary_switches,
    } = s;
    put_d(b, *on_cpu_ns, rs.map_or(0, |x| x.on_cpu_ns));
    put_d(b, *run_delay_ns, rs.map_or(0, |x| x.run_delay_ns));
    put_d(b, *timeslices, rs.map_or(0, |x| x.timeslices));
    if let Some(x) = voluntary_switches {
        put_d(b, *x, rs.and_then(|s| s.voluntary_switches).unwrap_or(0));
    }
    if let Some(x) = involuntary_switches {
        put_d(b, *x, rs.and_then(|s| s.involuntary_switches).unwrap_or(0));
    }
}

/// Inverse of [`put_task`]: the row of `id` against the reference `r` (`cmdline` and
/// `cgroup` left `None`).
pub(crate) fn get_task(
    c: &mut ColsReader<'_>,
    id: TaskId,
    r: Option<&Task>,
) -> Result<Task, HistoryError> {
    let p = c.c(T_PRESENT).u()?;
    if p >= P_KTHREAD << 1 {
        return Err(HistoryError::Corrupt("unknown task presence bits"));
    }
    let has = |bit: u64| p & bit != 0;
    let mut t = Task::new(id);
    if has(P_BASE) {
        t.base = Some(get_base(
            c,
            r.and_then(|r| r.base.as_ref()),
            has(P_KTHREAD),
        )?);
    }
    if has(P_CRED) {
        t.cred = Some(get_cred(c.c(T_CRED), r.and_then(|r| r.cred.as_ref()), p)?);
    }
    if has(P_STAT) {
        t.stat = Some(get_stat(c, id, r.and_then(|r| r.stat.as_ref()))?);
    }
    if has(P_MEM) {
        let m = get_mem(c.c(T_MEM), r.and_then(|r| r.mem.as_deref()), p)?;
        t.mem = Some(Box::new(m));
    }
    if has(P_LOCKED) {
        t.locked_bytes = Some(
            c.c(T_LOCKED)
                .d(r.and_then(|r| r.locked_bytes).unwrap_or(0))?,
        );
    }
    t.cmdline_timed_out = has(P_TIMED_OUT);
    if has(P_EXE) {
        t.exe = Some(get_blob(
            c.c(T_BLOBS),
            r.and_then(|r| r.exe.as_deref()),
            <[u8]>::to_vec,
        )?);
    }
    if has(P_WCHAN) {
        let w = get_blob(
            c.c(T_BLOBS),
            r.and_then(|r| r.wchan.as_deref()).map(str::as_bytes),
            |w| std::str::from_utf8(w).map(str::to_owned),
        )?;
        t.wchan = Some(w.map_err(|_| HistoryError::Corrupt("wchan is not UTF-8"))?);
    }
    if has(P_IO) {
        let io = get_io(c.c(T_IO), r.and_then(|r| r.io.as_deref()))?;
        t.io = Some(Box::new(io));
    }
    if has(P_SCHED) {
        let s = get_sched(c.c(T_SCHED), r.and_then(|r| r.sched.as_deref()), p)?;
        t.sched = Some(Box::new(s));
    }
    Ok(t)
}

/// Inverse of [`put_base`].
fn get_base(
    c: &mut ColsReader<'_>,
    rb: Option<&Base>,
    kthread: bool,
) -> Result<Base, HistoryError> {
    let d = Base::default();
    let rb0 = rb.unwrap_or(&d);
    let state = state_from(c.c(T_STATE).u()?)?;
    let ids = c.c(T_IDS);
    let ppid = ids.di32(rb0.ppid)?;
    let pgid = ids.di32(rb0.pgid)?;
    let sid = ids.di32(rb0.sid)?;
    let tpgid = ids.di32(rb0.tpgid)?;
    let tty_nr = ids.d32(rb0.tty_nr)?;
    let s = c.c(T_SCHED_BASE);
    let flags = s.d32(rb0.flags)?;
    let nice = s.di32(rb0.nice)?;
    let priority = s.di32(rb0.priority)?;
    let policy = s.d32(rb0.policy)?;
    let rt_priority = s.d32(rb0.rt_priority)?;
    let num_threads = s.d32(rb0.num_threads)?;
    let processor = c.c(T_CPU).di32(rb0.processor)?;
    let comm = get_blob(c.c(T_COMM), rb.map(|b| &b.comm[..]), Comm::from_slice)?;
    Ok(Base {
        state,
        ppid,
        pgid,
        sid,
        tty_nr,
        tpgid,
        flags,
        comm,
        kthread,
        nice,
        priority,
        policy,
        rt_priority,
        num_threads,
        processor,
    })
}

/// Inverse of [`put_cred`] (`p`: the row's presence bits).
fn get_cred(b: &mut Reader<'_>, rc: Option<&Cred>, p: u64) -> Result<Cred, HistoryError> {
    let z = |f: fn(&Cred) -> u32| rc.map_or(0, f);
    let euid = b.d32(z(|c| c.euid))?;
    let ruid = b.d32(euid)?;
    let suid = b.d32(euid)?;
    let fsuid = b.d32(euid)?;
    let egid = b.d32(z(|c| c.egid))?;
    let rgid = b.d32(egid)?;
    let sgid = b.d32(egid)?;
    let fsgid = b.d32(egid)?;
    let groups = if p & P_GROUPS != 0 {
        Some(get_groups(b, rc)?)
    } else {
        None
    };
    Ok(Cred {
        ruid,
        euid,
        suid,
        fsuid,
        rgid,
        egid,
        sgid,
        fsgid,
        groups,
        effective_only: p & P_EFFECTIVE_ONLY != 0,
    })
}

/// The supplementary groups: the reference's (0), or their count + 1 and each.
fn get_groups(b: &mut Reader<'_>, rc: Option<&Cred>) -> Result<Vec<u32>, HistoryError> {
    match b.u()? {
        0 => rc
            .and_then(|c| c.groups.clone())
            .ok_or(HistoryError::Corrupt("groups refer to a missing reference")),
        n => {
            let n = n - 1;
            if n > b.left() as u64 {
                return Err(HistoryError::Truncated);
            }
            let mut g = Vec::with_capacity(n as usize);
            for _ in 0..n {
                g.push(b.u32()?);
            }
            Ok(g)
        }
    }
}

/// Inverse of [`put_stat`].
fn get_stat(c: &mut ColsReader<'_>, id: TaskId, rs: Option<&Stat>) -> Result<Stat, HistoryError> {
    let d = Stat::default();
    let rs = rs.unwrap_or(&d);
    let b = c.c(T_TIMES);
    let utime_ns = b.d(rs.utime_ns)?;
    let stime_ns = b.d(rs.stime_ns)?;
    let cutime_ns = b.d(rs.cutime_ns)?;
    let cstime_ns = b.d(rs.cstime_ns)?;
    let b = c.c(T_FAULTS);
    let minflt = b.d(rs.minflt)?;
    let majflt = b.d(rs.majflt)?;
    let cminflt = b.d(rs.cminflt)?;
    let cmajflt = b.d(rs.cmajflt)?;
    let b = c.c(T_STAT_MEM);
    Ok(Stat {
        utime_ns,
        stime_ns,
        cutime_ns,
        cstime_ns,
        minflt,
        majflt,
        cminflt,
        cmajflt,
        start_time_ns: b.d(id.start_time_ns)?,
        vsize_bytes: b.d(rs.vsize_bytes)?,
        rss_bytes: b.d(rs.rss_bytes)?,
        swap_bytes: None,
    })
}

/// Inverse of [`put_mem`] (`p`: the row's presence bits).
fn get_mem(b: &mut Reader<'_>, rm: Option<&Mem>, p: u64) -> Result<Mem, HistoryError> {
    let z = |f: fn(&Mem) -> u64| rm.map_or(0, f);
    let vsize_bytes = b.d(z(|m| m.vsize_bytes))?;
    let rss_bytes = b.d(z(|m| m.rss_bytes))?;
    let shared_bytes = b.d(z(|m| m.shared_bytes))?;
    let text_bytes = b.d(z(|m| m.text_bytes))?;
    let data_bytes = b.d(z(|m| m.data_bytes))?;
    let swap_bytes = if p & P_SWAP != 0 {
        Some(b.d(rm.and_then(|m| m.swap_bytes).unwrap_or(0))?)
    } else {
        None
    };
    let locked_bytes = if p & P_MEM_LOCKED != 0 {
        Some(b.d(rm.and_then(|m| m.locked_bytes).unwrap_or(0))?)
    } else {
        None
    };
    Ok(Mem {
        vsize_bytes,
        rss_bytes,
        shared_bytes,
        text_bytes,
        data_bytes,
        swap_bytes,
        locked_bytes,
    })
}

/// Inverse of [`put_io`].
fn get_io(b: &mut Reader<'_>, ri: Option<&Io>) -> Result<Io, HistoryError> {
    let z = |f: fn(&Io) -> u64| ri.map_or(0, f);
    Ok(Io {
        rchar_bytes: b.d(z(|x| x.rchar_bytes))?,
        wchar_bytes: b.d(z(|x| x.wchar_bytes))?,
        syscr: b.d(z(|x| x.syscr))?,
        syscw: b.d(z(|x| x.syscw))?,
        read_bytes: b.d(z(|x| x.read_bytes))?,
        write_bytes: b.d(z(|x| x.write_bytes))?,
        cancelled_write_bytes: b.d(z(|x| x.cancelled_write_bytes))?,
    })
}

/// Inverse of [`put_sched`] (`p`: the row's presence bits).
fn get_sched(b: &mut Reader<'_>, rs: Option<&Sched>, p: u64) -> Result<Sched, HistoryError> {
    let on_cpu_ns = b.d(rs.map_or(0, |x| x.on_cpu_ns))?;
    let run_delay_ns = b.d(rs.map_or(0, |x| x.run_delay_ns))?;
    let timeslices = b.d(rs.map_or(0, |x| x.timeslices))?;
    let voluntary_switches = if p & P_VOL != 0 {
        Some(b.d(rs.and_then(|s| s.voluntary_switches).unwrap_or(0))?)
    } else {
        None
    };
    let involuntary_switches = if p & P_INVOL != 0 {
        Some(b.d(rs.and_then(|s| s.involuntary_switches).unwrap_or(0))?)
    } else {
        None
    };
    Ok(Sched {
        on_cpu_ns,
        run_delay_ns,
        timeslices,
        voluntary_switches,
        involuntary_switches,
    })
}

#[cfg(test)]
mod tests {
    use tasksnap_model::fields::{self, example_task};
    use tasksnap_model::{Backend, Reading, Snapshot, SnapshotStats};

    use super::recorded_groups;
    use crate::{Decoder, Encoder};

    /// A field reads back as it was written exactly when [`recorded_groups`] has its group,
    /// and as `None` otherwise: the set the front ends are told is the codec's.
    #[test]
    fn the_recorded_groups_are_what_a_recording_reads_back() {
        let t = example_task();
        let reading = Reading::of(Snapshot {
            taken_at_unix_ns: 1_000,
            taken_at_boottime_ns: 500,
            boot_time_unix_s: 1,
            backend: Backend::Procfs,
            tasks: vec![t.clone()],
            stats: SnapshotStats::default(),
        });
        let e = Encoder::new(1).encode(&reading, true);
        let mut d = Decoder::new();
        d.apply_names(e.key, e.names.as_deref().expect("a key's names"))
            .expect("names");
        let back = d.apply_sample(e.key, &e.sample).expect("sample");
        let b = &back.snapshot.tasks[0];
        let recorded = recorded_groups();
        for f in fields::FIELDS {
            let kept = f.group.asked(recorded);
            let want = if kept { f.value(&t) } else { None };
            assert_eq!(f.value(b), want, "{} (recorded: {kept})", f.name);
        }
    }
}
