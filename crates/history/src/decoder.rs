//! The decoder: keeps the last key sample's rows and the names given since that key, and
//! rebuilds each [`Reading`] from a key sample or from that key plus one delta.

use tasksnap_model::states::{Sample, ThreadMap, ThreadTotals};
use tasksnap_model::{
    Backend, CgroupCounters, HostIdentity, Reading, Snapshot, SnapshotStats, SystemFigures, Task,
    TaskId,
};

use crate::cgroups::{get_cgroups, CGROUPS};
use crate::encoder::META;
use crate::exits::{get_exits, EXITS};
use crate::host::{get_host, HOST};
use crate::meta::{get_backend, get_mode, get_reasons, get_stats, get_system, Reasons};
use crate::names::{self, Names};
use crate::tasks::{get_id, get_task, TASK_ID_COLS, T_GONE, T_KEY_IDX, T_TGID};
use crate::threads::{extend, get_thread, get_thread_id, H_GONE, H_KEY_IDX, H_TGID};
use crate::wire::{get_key_row, ColsReader, FrameType, Reader};
use crate::HistoryError;

#[derive(Debug)]
struct BaseThreads {
    at_ns: u64,
    rows: Vec<(TaskId, ThreadTotals)>,
    reasons: Reasons,
}

/// The last key sample, rows without names.
#[derive(Debug)]
struct Base {
    taken_at: u64,
    tasks: Vec<Task>,
    threads: Option<BaseThreads>,
    system: SystemFigures,
    host: HostIdentity,
    /// Its cgroups table (`None`: the key had none).
    cgroups: Option<Vec<CgroupCounters>>,
}

/// Rebuilds readings from payloads. Give it, in store order, the names payloads
/// ([`Decoder::apply_names`]) and sample payloads ([`Decoder::apply_sample`]) from a key
/// onwards; to seek, give it the key's names and sample, the names payloads in between, and
/// the target delta sample (the samples in between may be skipped).
#[derive(Debug, Default)]
pub struct Decoder {
    base: Option<Base>,
    names: ThreadMap<Names>,
    names_key: Option<u64>,
}

/// Reads `n` gone indices (delta-coded, ascending) into a mask of `len` rows.
fn get_gone(r: &mut Reader<'_>, n: usize, len: usize) -> Result<Vec<bool>, HistoryError> {
    let mut gone = vec![false; len];
    let mut next = 0usize;
    for _ in 0..n {
        let d = usize::try_from(r.u()?).map_err(|_| HistoryError::Corrupt("gone index"))?;
        let i = next
            .checked_add(d)
            .filter(|&i| i < len)
            .ok_or(HistoryError::Corrupt("gone index past the key's rows"))?;
        if let Some(g) = gone.get_mut(i) {
            *g = true;
        }
        next = i + 1;
    }
    Ok(gone)
}

impl Decoder {
    /// A decoder with no key yet.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Applies a names payload (frame kind [`crate::KIND_NAMES`]); `key` is the frame's key
    /// flag. A key's names replace all names; a delta's add to those of its key.
    pub fn apply_names(&mut self, key: bool, payload: &[u8]) -> Result<(), HistoryError> {
        let (is_key, key_at, entries) = names::decode(payload)?;
        if is_key != key {
            return Err(HistoryError::WrongFrame);
        }
        if key {
            self.names = entries.into_iter().collect();
            self.names_key = Some(key_at);
        } else {
            match self.names_key {
                None => return Err(HistoryError::NoKey),
                Some(k) if k != key_at => {
                    return Err(HistoryError::WrongKey {
                        expected: k,
                        found: key_at,
                    })
                }
                Some(_) => self.names.extend(entries),
            }
        }
        Ok(())
    }

    /// Applies a sample payload (frame kind [`crate::KIND_SAMPLE`]) and returns its reading.
    /// A key becomes the base of the deltas after it; a delta is decoded against that base
    /// ([`HistoryError::NoKey`] without one). On error the decoder keeps its previous base.
    pub fn apply_sample(&mut self, key: bool, payload: &[u8]) -> Result<Reading, HistoryError> {
        let mut rd = Reader::new(payload);
        match (rd.header()?, key) {
            (FrameType::KeySample, true) | (FrameType::DeltaSample, false) => {}
            _ => return Err(HistoryError::WrongFrame),
        }
        let base = if key {
            None
        } else {
            Some(self.base.as_ref().ok_or(HistoryError::NoKey)?)
        };
        let mut c = ColsReader::read(&mut rd)?;
        let mut m = c.c(META).clone();
        let head = get_head(&mut m, &c, base)?;
        let mut rows = get_task_rows(&mut c, base, head.nrows)?;
        let key_threads = base.and_then(|b| b.threads.as_ref());
        let (states, new_base_threads) = get_states(&mut m, &mut c, key_threads, key)?;
        let (exits, exits_dropped, exits_missing) = get_exits(c.c(EXITS))?;
        // A key without the column is from a store older than minor 2: unknown.
        let host = match (get_host(c.c(HOST))?, base) {
            (Some(h), _) => h,
            (None, Some(b)) => b.host.clone(),
            (None, None) => HostIdentity::default(),
        };
        // A store older than minor 4 has no such column: no table.
        let key_cgroups = base.and_then(|b| b.cgroups.as_deref());
        let cgroups = get_cgroups(c.c(CGROUPS), key_cgroups)?;
        // Tasks: a key's rows, or the base merged with the delta's.
        let mut tasks = match base {
            None if head.ngone != 0 => return Err(HistoryError::Corrupt("gone tasks in a key")),
            None => rows.clone(),
            Some(b) => merge_tasks(c.c(T_GONE), b, std::mem::take(&mut rows), head.ngone)?,
        };
        for t in &mut tasks {
            if let Some((cmd, cg)) = self.names.get(&t.id) {
                t.cmdline.clone_from(cmd);
                t.cgroup.clone_from(cg);
            }
        }
        if key {
            if self.names_key != Some(head.taken_at_unix_ns) {
                self.names.clear();
                self.names_key = Some(head.taken_at_unix_ns);
            }
            self.base = Some(Base {
                taken_at: head.taken_at_unix_ns,
                tasks: rows,
                threads: new_base_threads,
                system: head.system.clone(),
                host: host.clone(),
                cgroups: cgroups.as_ref().map(|l| l.cgroups.clone()),
            });
        }
        Ok(Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: head.taken_at_unix_ns,
                taken_at_boottime_ns: head.taken_at_boottime_ns,
                boot_time_unix_s: head.boot_time_unix_s,
                backend: head.backend,
                tasks,
                stats: head.stats,
            },
            states,
            system: head.system,
            exits,
            exits_dropped,
            exits_missing,
            host,
            cgroups,
        })
    }
}

/// What a sample frame's meta column says before its thread states.
struct Head {
    taken_at_unix_ns: u64,
    taken_at_boottime_ns: u64,
    boot_time_unix_s: u64,
    backend: Backend,
    stats: SnapshotStats,
    /// Task rows in the frame.
    nrows: usize,
    /// The key's task rows gone (a delta's).
    ngone: usize,
    system: SystemFigures,
}

/// The head of a sample frame from its meta column `m`; a delta's names the key `base` it
/// was written against.
fn get_head(
    m: &mut Reader<'_>,
    c: &ColsReader<'_>,
    base: Option<&Base>,
) -> Result<Head, HistoryError> {
    if let Some(b) = base {
        let found = m.u()?;
        if found != b.taken_at {
            return Err(HistoryError::WrongKey {
                expected: b.taken_at,
                found,
            });
        }
    }
    Ok(Head {
        taken_at_unix_ns: m.u()?,
        taken_at_boottime_ns: m.u()?,
        boot_time_unix_s: m.u()?,
        backend: get_backend(m)?,
        stats: get_stats(m)?,
        nrows: m.count(c.left(T_TGID).max(c.left(T_KEY_IDX)), 1)?,
        ngone: m.count(c.left(T_GONE), 1)?,
        system: get_system(m, base.map(|b| &b.system))?,
    })
}

/// The frame's `nrows` task rows, each against its key row (a delta's) or the row before.
fn get_task_rows(
    c: &mut ColsReader<'_>,
    base: Option<&Base>,
    nrows: usize,
) -> Result<Vec<Task>, HistoryError> {
    let mut rows: Vec<Task> = Vec::with_capacity(nrows.min(1 << 12));
    let mut prev_id = TaskId::default();
    let mut next = 0;
    for _ in 0..nrows {
        let in_base = get_key_row(c.c(T_KEY_IDX), &mut next, base.map(|b| &b.tasks[..]))?;
        let id = match in_base {
            Some(bt) => bt.id,
            None => get_id(c, TASK_ID_COLS, prev_id)?,
        };
        let t = get_task(c, id, in_base.or(rows.last()))?;
        rows.push(t);
        prev_id = id;
    }
    Ok(rows)
}

/// A delta's tasks: the key's rows in order, each replaced by the delta's row of the same
/// identity or left out when gone, and the delta's new rows merged in.
fn merge_tasks(
    gone_col: &mut Reader<'_>,
    b: &Base,
    rows: Vec<Task>,
    ngone: usize,
) -> Result<Vec<Task>, HistoryError> {
    let gone = get_gone(gone_col, ngone, b.tasks.len())?;
    let mut out = Vec::with_capacity(b.tasks.len() + rows.len());
    let mut new = rows.into_iter().peekable();
    for (bt, &g) in b.tasks.iter().zip(&gone) {
        while let Some(t) = new.next_if(|t| t.id < bt.id) {
            out.push(t);
        }
        if let Some(t) = new.next_if(|t| t.id == bt.id) {
            out.push(t);
        } else if !g {
            out.push(bt.clone());
        }
    }
    out.extend(new);
    Ok(out)
}

/// The frame's thread states (`None`: the reading had none), and, for a key, its threads as
/// the base of the deltas after it. `key_threads`: the key's, for a delta.
fn get_states(
    m: &mut Reader<'_>,
    c: &mut ColsReader<'_>,
    key_threads: Option<&BaseThreads>,
    key: bool,
) -> Result<(Option<Sample>, Option<BaseThreads>), HistoryError> {
    let kth = match m.byte()? {
        0 => return Ok((None, None)),
        1 => None,
        2 => Some(key_threads.ok_or(HistoryError::Corrupt("thread delta without key threads"))?),
        _ => return Err(HistoryError::Corrupt("unknown states tag")),
    };
    let mode = get_mode(m)?;
    let at_ns = m.u()?;
    let n = m.count(m.left(), 1)?;
    let mut notes = Vec::with_capacity(n);
    for _ in 0..n {
        notes.push(m.string()?);
    }
    let reasons = get_reasons(m, kth.map(|k| &k.reasons))?;
    let ntrows = m.count(c.left(H_TGID).max(c.left(H_KEY_IDX)), 1)?;
    let ntgone = m.count(c.left(H_GONE), 1)?;
    let trows = get_thread_rows(c, kth, ntrows, at_ns)?;
    let mut threads = ThreadMap::default();
    let mut new_base = None;
    match kth {
        Some(k) => {
            let gone = get_gone(c.c(H_GONE), ntgone, k.rows.len())?;
            threads.reserve(k.rows.len() + trows.len());
            threads.extend(trows);
            let by = at_ns.wrapping_sub(k.at_ns);
            for ((id, kt), &g) in k.rows.iter().zip(&gone) {
                if g || threads.contains_key(id) {
                    continue;
                }
                let t = extend(kt, by)
                    .ok_or(HistoryError::Corrupt("omitted thread cannot be extended"))?;
                threads.insert(*id, t);
            }
        }
        None => {
            if ntgone != 0 {
                return Err(HistoryError::Corrupt("gone threads without key threads"));
            }
            threads.extend(trows.iter().map(|(id, t)| (*id, t.clone())));
            if key {
                new_base = Some(BaseThreads {
                    at_ns,
                    rows: trows,
                    reasons: reasons.clone(),
                });
            }
        }
    }
    let sample = Sample {
        mode,
        at_ns,
        threads,
        reasons,
        notes,
    };
    Ok((Some(sample), new_base))
}

/// The frame's `ntrows` thread rows, each against its key row (`kth`, a delta's) or the
/// row before.
fn get_thread_rows(
    c: &mut ColsReader<'_>,
    kth: Option<&BaseThreads>,
    ntrows: usize,
    at_ns: u64,
) -> Result<Vec<(TaskId, ThreadTotals)>, HistoryError> {
    let mut trows: Vec<(TaskId, ThreadTotals)> = Vec::with_capacity(ntrows.min(1 << 12));
    let mut prev_id = TaskId::default();
    let mut next = 0;
    for _ in 0..ntrows {
        let in_base = get_key_row(c.c(H_KEY_IDX), &mut next, kth.map(|k| &k.rows[..]))?;
        let id = match in_base {
            Some(kt) => kt.0,
            None => get_thread_id(c, prev_id)?,
        };
        let t = get_thread(c, id, in_base.or(trows.last()).map(|r| &r.1), at_ns)?;
        trows.push((id, t));
        prev_id = id;
    }
    Ok(trows)
}
