//! The small, sequential parts of a sample frame (its META column): the snapshot's own fields
//! (times, backend, stats), the machine-wide figures, and the thread-state sample's mode,
//! time, notes and reasons table. Counters are written as differences from the key's (zero
//! in a key frame); the vmstat names and the reasons' frames only when they differ from the
//! key's.

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::states::Mode;
use tasksnap_model::{
    Backend, CpuTicks, LoadAverages, Memory, Pressure, PressureLine, SnapshotStats, StatCounters,
    SystemFigures,
};

use crate::wire::{put_bytes, put_d, put_f, put_u, Reader};
use crate::HistoryError;

pub(crate) fn put_backend(b: &mut Vec<u8>, x: Backend) {
    b.push(match x {
        Backend::Auto => 0,
        Backend::Bpf => 1,
        Backend::Procfs => 2,
        Backend::Service => 3,
    });
}

pub(crate) fn get_backend(r: &mut Reader<'_>) -> Result<Backend, HistoryError> {
    match r.byte()? {
        0 => Ok(Backend::Auto),
        1 => Ok(Backend::Bpf),
        2 => Ok(Backend::Procfs),
        3 => Ok(Backend::Service),
        _ => Err(HistoryError::Corrupt("unknown backend")),
    }
}

pub(crate) fn put_stats(b: &mut Vec<u8>, s: &SnapshotStats) {
    let SnapshotStats {
        vanished,
        partial,
        denied,
        unparsable,
        cmdline_timeouts,
        reconciled_by_listing,
    } = *s;
    for v in [vanished, partial, denied, unparsable, cmdline_timeouts] {
        put_u(b, v);
    }
    b.push(u8::from(reconciled_by_listing));
}

pub(crate) fn get_stats(r: &mut Reader<'_>) -> Result<SnapshotStats, HistoryError> {
    Ok(SnapshotStats {
        vanished: r.u()?,
        partial: r.u()?,
        denied: r.u()?,
        unparsable: r.u()?,
        cmdline_timeouts: r.u()?,
        reconciled_by_listing: r.bool()?,
    })
}

fn put_ticks(b: &mut Vec<u8>, t: &CpuTicks, r: Option<&CpuTicks>) {
    let r = r.map(CpuTicks::to_array).unwrap_or_default();
    for (v, r) in t.to_array().into_iter().zip(r) {
        put_d(b, v, r);
    }
}

fn get_ticks(rd: &mut Reader<'_>, r: Option<&CpuTicks>) -> Result<CpuTicks, HistoryError> {
    let r = r.map(CpuTicks::to_array).unwrap_or_default();
    let mut v = [0u64; 8];
    for (x, r) in v.iter_mut().zip(r) {
        *x = rd.d(r)?;
    }
    Ok(CpuTicks::from_array(v))
}

fn put_opt<T>(b: &mut Vec<u8>, v: &Option<T>, f: impl FnOnce(&mut Vec<u8>, &T)) {
    match v {
        None => b.push(0),
        Some(x) => {
            b.push(1);
            f(b, x)
        }
    }
}

fn get_opt<'a, T>(
    r: &mut Reader<'a>,
    f: impl FnOnce(&mut Reader<'a>) -> Result<T, HistoryError>,
) -> Result<Option<T>, HistoryError> {
    if r.bool()? {
        Ok(Some(f(r)?))
    } else {
        Ok(None)
    }
}

fn put_pressure_line(b: &mut Vec<u8>, l: &PressureLine) {
    let PressureLine { avg_pct, total_us } = *l;
    for x in avg_pct {
        put_f(b, x);
    }
    put_u(b, total_us);
}

fn get_pressure_line(r: &mut Reader<'_>) -> Result<PressureLine, HistoryError> {
    Ok(PressureLine {
        avg_pct: [r.f()?, r.f()?, r.f()?],
        total_us: r.u()?,
    })
}

/// Writes the machine-wide figures against the key's `r` (none in a key frame).
pub(crate) fn put_system(b: &mut Vec<u8>, s: &SystemFigures, r: Option<&SystemFigures>) {
    let SystemFigures {
        cpu,
        per_cpu,
        counters,
        memory,
        load,
        vmstat,
        pressure,
    } = s;
    put_opt(b, cpu, |b, c| {
        put_ticks(b, c, r.and_then(|r| r.cpu.as_ref()))
    });
    put_u(b, per_cpu.len() as u64);
    for (i, c) in per_cpu.iter().enumerate() {
        put_ticks(b, c, r.and_then(|r| r.per_cpu.get(i)));
    }
    put_opt(b, counters, |b, c| {
        let StatCounters {
            context_switches,
            forks,
            procs_running,
            procs_blocked,
            interrupts,
            softirqs,
        } = *c;
        let rc = r.and_then(|r| r.counters).unwrap_or_default();
        put_d(b, context_switches, rc.context_switches);
        put_d(b, forks, rc.forks);
        put_u(b, procs_running);
        put_u(b, procs_blocked);
        put_d(b, interrupts, rc.interrupts);
        put_d(b, softirqs, rc.softirqs);
    });
    put_opt(b, memory, |b, m| {
        let Memory {
            total_kib,
            free_kib,
            available_kib,
            buff_cache_kib,
            swap_total_kib,
            swap_free_kib,
        } = *m;
        let rm = r.and_then(|r| r.memory).unwrap_or_default();
        put_d(b, total_kib, rm.total_kib);
        put_d(b, free_kib, rm.free_kib);
        put_d(b, available_kib, rm.available_kib);
        put_d(b, buff_cache_kib, rm.buff_cache_kib);
        put_d(b, swap_total_kib, rm.swap_total_kib);
        put_d(b, swap_free_kib, rm.swap_free_kib);
    });
    put_opt(b, load, |b, l| {
        let LoadAverages { avg, tasks } = l;
        for &x in avg {
            put_f(b, x);
        }
        put_opt(b, tasks, |b, &t| put_u(b, t));
    });
    let rv = r.map(|r| &r.vmstat[..]);
    let same_names = rv.is_some_and(|rv| {
        rv.len() == vmstat.len() && rv.iter().zip(vmstat).all(|(a, b)| a.0 == b.0)
    });
    match rv {
        Some(rv) if same_names => {
            b.push(1);
            for (v, r) in vmstat.iter().zip(rv) {
                put_d(b, v.1, r.1);
            }
        }
        _ => {
            b.push(0);
            put_u(b, vmstat.len() as u64);
            for (name, v) in vmstat {
                put_bytes(b, name.as_bytes());
                put_u(b, *v);
            }
        }
    }
    put_u(b, pressure.len() as u64);
    for p in pressure {
        let Pressure {
            resource,
            some,
            full,
        } = p;
        put_bytes(b, resource.as_bytes());
        put_opt(b, some, put_pressure_line);
        put_opt(b, full, put_pressure_line);
    }
}

/// Inverse of [`put_system`].
pub(crate) fn get_system(
    rd: &mut Reader<'_>,
    r: Option<&SystemFigures>,
) -> Result<SystemFigures, HistoryError> {
    let cpu = get_opt(rd, |rd| get_ticks(rd, r.and_then(|r| r.cpu.as_ref())))?;
    let n = rd.count(rd.left(), 8)?;
    let mut per_cpu = Vec::with_capacity(n);
    for i in 0..n {
        per_cpu.push(get_ticks(rd, r.and_then(|r| r.per_cpu.get(i)))?);
    }
    let counters = get_opt(rd, |rd| {
        let rc = r.and_then(|r| r.counters).unwrap_or_default();
        Ok(StatCounters {
            context_switches: rd.d(rc.context_switches)?,
            forks: rd.d(rc.forks)?,
            procs_running: rd.u()?,
            procs_blocked: rd.u()?,
            interrupts: rd.d(rc.interrupts)?,
            softirqs: rd.d(rc.softirqs)?,
        })
    })?;
    let memory = get_opt(rd, |rd| {
        let rm = r.and_then(|r| r.memory).unwrap_or_default();
        Ok(Memory {
            total_kib: rd.d(rm.total_kib)?,
            free_kib: rd.d(rm.free_kib)?,
            available_kib: rd.d(rm.available_kib)?,
            buff_cache_kib: rd.d(rm.buff_cache_kib)?,
            swap_total_kib: rd.d(rm.swap_total_kib)?,
            swap_free_kib: rd.d(rm.swap_free_kib)?,
        })
    })?;
    let load = get_opt(rd, |rd| {
        let avg = [rd.f()?, rd.f()?, rd.f()?];
        let tasks = get_opt(rd, Reader::u)?;
        Ok(LoadAverages { avg, tasks })
    })?;
    let vmstat = match (rd.byte()?, r) {
        (1, Some(r)) => {
            let mut v = Vec::with_capacity(r.vmstat.len());
            for (name, x) in &r.vmstat {
                v.push((name.clone(), rd.d(*x)?));
            }
            v
        }
        (0, _) => {
            let n = rd.count(rd.left(), 2)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push((rd.string()?, rd.u()?));
            }
            v
        }
        _ => return Err(HistoryError::Corrupt("bad vmstat tag")),
    };
    let n = rd.count(rd.left(), 3)?;
    let mut pressure = Vec::with_capacity(n);
    for _ in 0..n {
        pressure.push(Pressure {
            resource: rd.string()?,
            some: get_opt(rd, get_pressure_line)?,
            full: get_opt(rd, get_pressure_line)?,
        });
    }
    Ok(SystemFigures {
        cpu,
        per_cpu,
        counters,
        memory,
        load,
        vmstat,
        pressure,
    })
}

pub(crate) fn put_mode(b: &mut Vec<u8>, m: Mode) {
    match m {
        Mode::Bpf => b.push(0),
        Mode::Procfs {
            sample_hz,
            delayacct,
        } => {
            b.push(1);
            put_u(b, u64::from(sample_hz));
            b.push(u8::from(delayacct));
        }
    }
}

pub(crate) fn get_mode(r: &mut Reader<'_>) -> Result<Mode, HistoryError> {
    match r.byte()? {
        0 => Ok(Mode::Bpf),
        1 => Ok(Mode::Procfs {
            sample_hz: r.u32()?,
            delayacct: r.bool()?,
        }),
        _ => Err(HistoryError::Corrupt("unknown state mode")),
    }
}

pub(crate) type Reasons = HashMap<u32, Arc<[String]>>;

fn put_frames(b: &mut Vec<u8>, id: u32, f: &[String]) {
    put_u(b, u64::from(id));
    put_u(b, f.len() as u64);
    for s in f {
        put_bytes(b, s.as_bytes());
    }
}

/// Writes the reasons table: all of it against no key (ids ascending), else the key's ids
/// that are gone and the entries that are new or differ.
pub(crate) fn put_reasons(b: &mut Vec<u8>, cur: &Reasons, key: Option<&Reasons>) {
    let mut ids: Vec<u32> = cur.keys().copied().collect();
    ids.sort_unstable();
    match key {
        None => {
            put_u(b, ids.len() as u64);
            for id in ids {
                put_frames(b, id, &cur[&id]);
            }
        }
        Some(k) => {
            let mut gone: Vec<u32> = k
                .keys()
                .filter(|id| !cur.contains_key(id))
                .copied()
                .collect();
            gone.sort_unstable();
            put_u(b, gone.len() as u64);
            for id in gone {
                put_u(b, u64::from(id));
            }
            let changed: Vec<u32> = ids
                .into_iter()
                .filter(|id| k.get(id).is_none_or(|f| **f != *cur[id]))
                .collect();
            put_u(b, changed.len() as u64);
            for id in changed {
                put_frames(b, id, &cur[&id]);
            }
        }
    }
}

fn get_frames(r: &mut Reader<'_>, into: &mut Reasons) -> Result<(), HistoryError> {
    let id = r.u32()?;
    let n = r.count(r.left(), 1)?;
    let mut f = Vec::with_capacity(n);
    for _ in 0..n {
        f.push(r.string()?);
    }
    into.insert(id, Arc::from(f));
    Ok(())
}

/// Inverse of [`put_reasons`].
pub(crate) fn get_reasons(
    r: &mut Reader<'_>,
    key: Option<&Reasons>,
) -> Result<Reasons, HistoryError> {
    let mut out = match key {
        None => Reasons::new(),
        Some(k) => {
            let mut out = k.clone();
            let n = r.count(r.left(), 1)?;
            for _ in 0..n {
                out.remove(&r.u32()?);
            }
            out
        }
    };
    let n = r.count(r.left(), 2)?;
    for _ in 0..n {
        get_frames(r, &mut out)?;
    }
    Ok(out)
}
