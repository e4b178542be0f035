//! The exited processes of a sample (format minor 1): column [`EXITS`] of every sample frame,
//! key or delta alike, since a sample's exits are its own (what exited since the previous
//! reading), never carried from a key. Each exit is written whole, its identity and times as
//! differences from the exit before it (exits come in the order the kernel sent them, so
//! times rise and pids are close). A store written before minor 1 has no such column: its
//! samples decode with no exits and `exits_missing` saying so.
//!
//! Layout: a tag byte (0: no exit source, then why as text; 1: the source ran), then for 1
//! the dropped count, the number of exits and each exit's fields in [`put_exit`]'s order.

use tasksnap_model::{CmdlineMissing, Exit, Reading, TaskId};

use crate::wire::{put_bytes, put_d, put_i, put_u, Reader};
use crate::HistoryError;

/// The sample frame's column of exited processes.
pub(crate) const EXITS: usize = 33;

/// What a sample decoded from a store older than the exit records says of them.
pub const EXITS_NOT_RECORDED: &str = "recorded before tasksnap stored exited processes";

/// Fewest bytes one exit takes (a bound for the count, so nothing is allocated for a count
/// the column could not hold).
const EXIT_MIN_BYTES: usize = 24;

const F_THREADS_CUT: u8 = 1;
const F_KERNEL_THREAD: u8 = 1 << 1;

/// Writes the reading's exits (or why there are none) into the column `b`.
pub(crate) fn put_exits(b: &mut Vec<u8>, r: &Reading) {
    if let Some(why) = &r.exits_missing {
        b.push(0);
        put_bytes(b, why.as_bytes());
        return;
    }
    b.push(1);
    put_u(b, r.exits_dropped);
    put_u(b, r.exits.len() as u64);
    let mut prev: Option<&Exit> = None;
    for e in &r.exits {
        put_exit(b, e, prev);
        prev = Some(e);
    }
}

fn put_exit(b: &mut Vec<u8>, e: &Exit, prev: Option<&Exit>) {
    let (tgid, start, exit) =
        prev.map_or((0, 0, 0), |p| (p.id.tgid, p.start_time_ns, p.exit_time_ns));
    put_i(b, i64::from(e.id.tgid) - i64::from(tgid));
    put_i(b, i64::from(e.id.tid) - i64::from(e.id.tgid));
    put_i(b, i64::from(e.ppid) - i64::from(e.id.tgid));
    for v in [e.ruid, e.euid, e.rgid, e.egid] {
        put_u(b, u64::from(v));
    }
    put_bytes(b, &e.comm);
    put_bytes(b, &e.cmdline);
    b.push(match e.cmdline_missing {
        None => 0,
        Some(CmdlineMissing::NoMemory) => 1,
        Some(CmdlineMissing::Unreadable) => 2,
        Some(CmdlineMissing::Cut) => 3,
        Some(CmdlineMissing::NotCaptured) => 4,
    });
    put_d(b, e.start_time_ns, start);
    put_d(b, e.id.start_time_ns, e.start_time_ns);
    put_d(b, e.exit_time_ns, exit);
    put_u(b, u64::from(e.wait_status));
    for v in [
        e.utime_ns,
        e.stime_ns,
        e.cpu_ns,
        e.peak_rss_bytes,
        e.minflt,
        e.majflt,
        e.voluntary_ctxt_switches,
        e.nonvoluntary_ctxt_switches,
        e.rchar_bytes,
        e.wchar_bytes,
        e.read_bytes,
        e.write_bytes,
        e.cancelled_write_bytes,
    ] {
        put_u(b, v);
    }
    put_u(b, u64::from(e.threads_summed));
    b.push(
        if e.threads_cut { F_THREADS_CUT } else { 0 }
            | if e.kernel_thread { F_KERNEL_THREAD } else { 0 },
    );
}

/// The exits of a sample (`exits`, `exits_dropped`, `exits_missing`) from its column; an
/// empty column (a store from before exits were stored) gives none, with
/// [`EXITS_NOT_RECORDED`].
pub(crate) fn get_exits(
    r: &mut Reader<'_>,
) -> Result<(Vec<Exit>, u64, Option<String>), HistoryError> {
    if r.left() == 0 {
        return Ok((Vec::new(), 0, Some(EXITS_NOT_RECORDED.to_string())));
    }
    match r.byte()? {
        0 => Ok((Vec::new(), 0, Some(r.string()?))),
        1 => {
            let dropped = r.u()?;
            let n = r.count(r.left(), EXIT_MIN_BYTES)?;
            let mut exits: Vec<Exit> = Vec::with_capacity(n);
            for _ in 0..n {
                let e = get_exit(r, exits.last())?;
                exits.push(e);
            }
            Ok((exits, dropped, None))
        }
        _ => Err(HistoryError::Corrupt("unknown exits tag")),
    }
}

fn get_exit(r: &mut Reader<'_>, prev: Option<&Exit>) -> Result<Exit, HistoryError> {
    let (tgid, start, exit) =
        prev.map_or((0, 0, 0), |p| (p.id.tgid, p.start_time_ns, p.exit_time_ns));
    let tgid = r.di32(tgid)?;
    let tid = r.di32(tgid)?;
    let ppid = r.di32(tgid)?;
    let (ruid, euid, rgid, egid) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    let comm = r.bytes()?.to_vec();
    let cmdline = r.bytes()?.to_vec();
    let cmdline_missing = match r.byte()? {
        0 => None,
        1 => Some(CmdlineMissing::NoMemory),
        2 => Some(CmdlineMissing::Unreadable),
        3 => Some(CmdlineMissing::Cut),
        4 => Some(CmdlineMissing::NotCaptured),
        _ => return Err(HistoryError::Corrupt("unknown cmdline-missing tag")),
    };
    let start_time_ns = r.d(start)?;
    let id_start_time_ns = r.d(start_time_ns)?;
    let exit_time_ns = r.d(exit)?;
    let wait_status = r.u32()?;
    let mut v = [0u64; 13];
    for x in &mut v {
        *x = r.u()?;
    }
    let threads_summed = r.u32()?;
    let flags = r.byte()?;
    let [utime_ns, stime_ns, cpu_ns, peak_rss_bytes, minflt, majflt, voluntary_ctxt_switches, nonvoluntary_ctxt_switches, rchar_bytes, wchar_bytes, read_bytes, write_bytes, cancelled_write_bytes] =
        v;
    Ok(Exit {
        id: TaskId {
            tgid,
            tid,
            start_time_ns: id_start_time_ns,
        },
        ppid,
        ruid,
        euid,
        rgid,
        egid,
        comm,
        cmdline,
        cmdline_missing,
        start_time_ns,
        exit_time_ns,
        wait_status,
        utime_ns,
        stime_ns,
        cpu_ns,
        peak_rss_bytes,
        minflt,
        majflt,
        voluntary_ctxt_switches,
        nonvoluntary_ctxt_switches,
        rchar_bytes,
        wchar_bytes,
        read_bytes,
        write_bytes,
        cancelled_write_bytes,
        threads_summed,
        threads_cut: flags & F_THREADS_CUT != 0,
        kernel_thread: flags & F_KERNEL_THREAD != 0,
    })
}
