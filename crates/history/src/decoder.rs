//! The decoder: keeps the last key sample's rows and the names given since that key, and
//! rebuilds each [`Reading`] from a key sample or from that key plus one delta.

use tasksnap_model::states::{Sample, ThreadMap, ThreadTotals};
use tasksnap_model::{HostIdentity, Reading, Snapshot, SystemFigures, Task, TaskId};

use crate::encoder::META;
use crate::exits::{get_exits, EXITS};
use crate::host::{get_host, HOST};
use crate::meta::{get_backend, get_mode, get_reasons, get_stats, get_system, Reasons};
use crate::names::{self, Names};
use crate::tasks::{get_id, get_task, TASK_ID_COLS, T_GONE, T_KEY_IDX, T_TGID};
use crate::threads::{extend, get_thread, get_thread_id, H_GONE, H_KEY_IDX, H_TGID};
use crate::wire::{get_key_idx, ColsReader, FrameType, Reader};
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
        if let Some(b) = base {
            let found = m.u()?;
            if found != b.taken_at {
                return Err(HistoryError::WrongKey {
                    expected: b.taken_at,
                    found,
                });
            }
        }
        let taken_at_unix_ns = m.u()?;
        let taken_at_boottime_ns = m.u()?;
        let boot_time_unix_s = m.u()?;
        let backend = get_backend(&mut m)?;
        let stats = get_stats(&mut m)?;
        let nrows = m.count(c.left(T_TGID).max(c.left(T_KEY_IDX)), 1)?;
        let ngone = m.count(c.left(T_GONE), 1)?;
        let system = get_system(&mut m, base.map(|b| &b.system))?;

        // Task rows.
        let mut rows: Vec<Task> = Vec::with_capacity(nrows.min(1 << 12));
        let mut prev_id = TaskId::default();
        let mut next = 0;
        for _ in 0..nrows {
            let in_base = match base {
                Some(b) => get_key_idx(c.c(T_KEY_IDX), &mut next, b.tasks.len())?
                    .and_then(|i| b.tasks.get(i)),
                None => None,
            };
            let id = match in_base {
                Some(bt) => bt.id,
                None => get_id(&mut c, TASK_ID_COLS, prev_id)?,
            };
            let t = get_task(&mut c, id, in_base.or(rows.last()))?;
            rows.push(t);
            prev_id = id;
        }

        // Thread rows.
        let mut new_base_threads = None;
        let states = match m.byte()? {
            0 => None,
            tag @ (1 | 2) => {
                let kth = if tag == 2 {
                    Some(
                        base.and_then(|b| b.threads.as_ref())
                            .ok_or(HistoryError::Corrupt("thread delta without key threads"))?,
                    )
                } else {
                    None
                };
                let mode = get_mode(&mut m)?;
                let at_ns = m.u()?;
                let n = m.count(m.left(), 1)?;
                let mut notes = Vec::with_capacity(n);
                for _ in 0..n {
                    notes.push(m.string()?);
                }
                let reasons = get_reasons(&mut m, kth.map(|k| &k.reasons))?;
                let ntrows = m.count(c.left(H_TGID).max(c.left(H_KEY_IDX)), 1)?;
                let ntgone = m.count(c.left(H_GONE), 1)?;
                let mut trows: Vec<(TaskId, ThreadTotals)> =
                    Vec::with_capacity(ntrows.min(1 << 12));
                let mut prev_id = TaskId::default();
                let mut next = 0;
                for _ in 0..ntrows {
                    let in_base = match kth {
                        Some(k) => get_key_idx(c.c(H_KEY_IDX), &mut next, k.rows.len())?
                            .and_then(|i| k.rows.get(i)),
                        None => None,
                    };
                    let id = match in_base {
                        Some(kt) => kt.0,
                        None => get_thread_id(&mut c, prev_id)?,
                    };
                    let t = get_thread(&mut c, id, in_base.or(trows.last()).map(|r| &r.1), at_ns)?;
                    trows.push((id, t));
                    prev_id = id;
                }
                let mut threads = ThreadMap::default();
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
                            let t = extend(kt, by).ok_or(HistoryError::Corrupt(
                                "omitted thread cannot be extended",
                            ))?;
                            threads.insert(*id, t);
                        }
                    }
                    None => {
                        if ntgone != 0 {
                            return Err(HistoryError::Corrupt("gone threads without key threads"));
                        }
                        threads.extend(trows.iter().map(|(id, t)| (*id, t.clone())));
                        if key {
                            new_base_threads = Some(BaseThreads {
                                at_ns,
                                rows: trows,
                                reasons: reasons.clone(),
                            });
                        }
                    }
                }
                Some(Sample {
                    mode,
                    at_ns,
                    threads,
                    reasons,
                    notes,
                })
            }
            _ => return Err(HistoryError::Corrupt("unknown states tag")),
        };

        let (exits, exits_dropped, exits_missing) = get_exits(c.c(EXITS))?;
        // A key without the column is from a store older than minor 2: unknown.
        let host = match (get_host(c.c(HOST))?, base) {
            (Some(h), _) => h,
            (None, Some(b)) => b.host.clone(),
            (None, None) => HostIdentity::default(),
        };

        // Tasks: a key's rows, or the base merged with the delta's.
        let mut tasks = match base {
            None => {
                if ngone != 0 {
                    return Err(HistoryError::Corrupt("gone tasks in a key"));
                }
                rows.clone()
            }
            Some(b) => {
                let gone = get_gone(c.c(T_GONE), ngone, b.tasks.len())?;
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
                rows = Vec::new();
                out
            }
        };
        for t in &mut tasks {
            if let Some((cmd, cg)) = self.names.get(&t.id) {
                t.cmdline.clone_from(cmd);
                t.cgroup.clone_from(cg);
            }
        }
        if key {
            if self.names_key != Some(taken_at_unix_ns) {
                self.names.clear();
                self.names_key = Some(taken_at_unix_ns);
            }
            self.base = Some(Base {
                taken_at: taken_at_unix_ns,
                tasks: rows,
                threads: new_base_threads,
                system: system.clone(),
                host: host.clone(),
            });
        }
        Ok(Reading {
            snapshot: Snapshot {
                taken_at_unix_ns,
                taken_at_boottime_ns,
                boot_time_unix_s,
                backend,
                tasks,
                stats,
            },
            states,
            system,
            exits,
            exits_dropped,
            exits_missing,
            host,
        })
    }
}
