//! The host's cgroups table of a sample (format minor 4): column [`CGROUPS`] of a sample
//! frame holds the reading's [`CgroupListing`], when it has one, in identity order (the v2
//! hierarchy's records first, then v1's, each by path bytes; a second record of the same
//! identity is left out).
//!
//! * A key frame holds every record (tag 1); so does a delta whose key has no table.
//! * A delta holds the records that differ from the key's record of the same identity, the
//!   records that are new since the key, and which of the key's are gone (tag 2). Like the
//!   task rows, it is relative to the key, never to another delta: seeking decodes the key
//!   and one delta, and a damaged delta costs only its own sample. A cgroup whose counters
//!   are the key's (an idle one) costs nothing in a delta.
//! * An empty column is no table: a reading without one (the recorder was told not to read
//!   them) or a store written before minor 4, whose readings decode with `cgroups: None`. A
//!   reader of an older minor skips the column.
//!
//! A record is written as its difference from a reference record (the key's of the same
//! identity in a delta; the one before it in the frame, or an empty one): a mask of the
//! values that differ, then each of them (absent, unlimited, or a number as a varint of its
//! difference from the reference's), the hierarchy and the pressure lines when they differ.
//! A path in a full table is the bytes it shares with the path before it and the rest.
//! Every byte of a path is kept (a cgroup name need not be UTF-8).

use tasksnap_model::{
    CgroupCounters, CgroupHierarchy, CgroupListing, Limit, Pressure, PressureLine,
};

use crate::wire::{put_bytes, put_d, put_f, put_key_idx, put_u, Reader};
use crate::HistoryError;

/// The sample frame's column of the cgroups table.
pub(crate) const CGROUPS: usize = 36;

/// The numeric values of a record: [`SLOTS`] of them, each absent, unlimited or a number.
const SLOTS: usize = 18;
/// Mask bit of a record whose hierarchy differs from the reference's.
const HIERARCHY_BIT: u32 = SLOTS as u32;
/// Mask bit of a record whose pressure lines differ from the reference's.
const PRESSURE_BIT: u32 = SLOTS as u32 + 1;

type Slots = [Option<Limit>; SLOTS];

/// A record's identity: its hierarchy (v2 first) and path.
fn ident(c: &CgroupCounters) -> (u8, &[u8]) {
    let rank = match c.hierarchy {
        CgroupHierarchy::V2 => 0,
        CgroupHierarchy::V1(_) => 1,
    };
    (rank, &c.path)
}

/// The records of `l` in identity order, each identity once (the first found).
fn sorted(l: &CgroupListing) -> Vec<&CgroupCounters> {
    let mut v: Vec<&CgroupCounters> = l.cgroups.iter().collect();
    v.sort_by(|a, b| ident(a).cmp(&ident(b)));
    v.dedup_by(|a, b| ident(a) == ident(b));
    v
}

/// The record's numeric values, in slot order (every field but path, hierarchy, pressure).
fn slots(c: &CgroupCounters) -> Slots {
    let CgroupCounters {
        path: _,
        hierarchy: _,
        cpu_usage_ns,
        cpu_quota_us,
        cpu_period_us,
        cpu_periods,
        cpu_throttled_periods,
        cpu_throttled_ns,
        memory_current_bytes,
        memory_limit_bytes,
        oom_kills,
        memory_high_events,
        memory_max_events,
        memory_oom_events,
        swap_current_bytes,
        io_read_bytes,
        io_write_bytes,
        io_read_ops,
        io_write_ops,
        pids_current,
        pressure: _,
    } = c;
    let n = |v: &Option<u64>| v.map(Limit::At);
    [
        n(cpu_usage_ns),
        *cpu_quota_us,
        n(cpu_period_us),
        n(cpu_periods),
        n(cpu_throttled_periods),
        n(cpu_throttled_ns),
        n(memory_current_bytes),
        *memory_limit_bytes,
        n(oom_kills),
        n(memory_high_events),
        n(memory_max_events),
        n(memory_oom_events),
        n(swap_current_bytes),
        n(io_read_bytes),
        n(io_write_bytes),
        n(io_read_ops),
        n(io_write_ops),
        n(pids_current),
    ]
}

/// Inverse of [`slots`]: a number where a plain one is due, else corrupt.
fn from_slots(
    path: Vec<u8>,
    hierarchy: CgroupHierarchy,
    s: Slots,
    pressure: Vec<Pressure>,
) -> Result<CgroupCounters, HistoryError> {
    let n = |i: usize| match s[i] {
        None => Ok(None),
        Some(Limit::At(v)) => Ok(Some(v)),
        Some(Limit::Unlimited) => Err(HistoryError::Corrupt("an unlimited cgroup counter")),
    };
    Ok(CgroupCounters {
        path,
        hierarchy,
        cpu_usage_ns: n(0)?,
        cpu_quota_us: s[1],
        cpu_period_us: n(2)?,
        cpu_periods: n(3)?,
        cpu_throttled_periods: n(4)?,
        cpu_throttled_ns: n(5)?,
        memory_current_bytes: n(6)?,
        memory_limit_bytes: s[7],
        oom_kills: n(8)?,
        memory_high_events: n(9)?,
        memory_max_events: n(10)?,
        memory_oom_events: n(11)?,
        swap_current_bytes: n(12)?,
        io_read_bytes: n(13)?,
        io_write_bytes: n(14)?,
        io_read_ops: n(15)?,
        io_write_ops: n(16)?,
        pids_current: n(17)?,
        pressure,
    })
}

fn number(v: Option<Limit>) -> u64 {
    v.and_then(Limit::value).unwrap_or(0)
}

/// The reference of a record with none before it.
fn empty() -> CgroupCounters {
    CgroupCounters::new(Vec::new(), CgroupHierarchy::V2)
}

/// The total of `resource`'s `some` (`full`) line in `p`, 0 when it has none.
fn total_of(p: &[Pressure], resource: &str, full: bool) -> u64 {
    p.iter()
        .find(|x| x.resource == resource)
        .and_then(|x| if full { x.full } else { x.some })
        .map_or(0, |l| l.total_us)
}

fn put_line(b: &mut Vec<u8>, l: Option<PressureLine>, r: u64) {
    match l {
        None => b.push(0),
        Some(PressureLine { avg_pct, total_us }) => {
            b.push(1);
            for x in avg_pct {
                put_f(b, x);
            }
            put_d(b, total_us, r);
        }
    }
}

fn get_line(rd: &mut Reader<'_>, r: u64) -> Result<Option<PressureLine>, HistoryError> {
    if !rd.bool()? {
        return Ok(None);
    }
    Ok(Some(PressureLine {
        avg_pct: [rd.f()?, rd.f()?, rd.f()?],
        total_us: rd.d(r)?,
    }))
}

/// Writes `c` against the reference `r`.
fn put_record(b: &mut Vec<u8>, c: &CgroupCounters, r: &CgroupCounters) {
    let (cs, rs) = (slots(c), slots(r));
    let mut mask = 0u64;
    for (i, (a, x)) in cs.iter().zip(&rs).enumerate() {
        if a != x {
            mask |= 1 << i;
        }
    }
    if c.hierarchy != r.hierarchy {
        mask |= 1 << HIERARCHY_BIT;
    }
    if c.pressure != r.pressure {
        mask |= 1 << PRESSURE_BIT;
    }
    put_u(b, mask);
    for (i, (a, x)) in cs.into_iter().zip(rs).enumerate() {
        if mask & (1 << i) == 0 {
            continue;
        }
        match a {
            None => b.push(0),
            Some(Limit::Unlimited) => b.push(1),
            Some(Limit::At(v)) => {
                b.push(2);
                put_d(b, v, number(x));
            }
        }
    }
    if mask & (1 << HIERARCHY_BIT) != 0 {
        match &c.hierarchy {
            CgroupHierarchy::V2 => b.push(0),
            CgroupHierarchy::V1(ctl) => {
                b.push(1);
                put_u(b, ctl.len() as u64);
                for s in ctl {
                    put_bytes(b, s.as_bytes());
                }
            }
        }
    }
    if mask & (1 << PRESSURE_BIT) != 0 {
        put_u(b, c.pressure.len() as u64);
        for p in &c.pressure {
            put_bytes(b, p.resource.as_bytes());
            put_line(b, p.some, total_of(&r.pressure, &p.resource, false));
            put_line(b, p.full, total_of(&r.pressure, &p.resource, true));
        }
    }
}

/// Inverse of [`put_record`], the path given.
fn get_record(
    rd: &mut Reader<'_>,
    path: Vec<u8>,
    r: &CgroupCounters,
) -> Result<CgroupCounters, HistoryError> {
    let mask = rd.u()?;
    if mask >> (PRESSURE_BIT + 1) != 0 {
        return Err(HistoryError::Corrupt("unknown cgroup values"));
    }
    let mut s = slots(r);
    for (i, v) in s.iter_mut().enumerate() {
        if mask & (1 << i) == 0 {
            continue;
        }
        *v = match rd.byte()? {
            0 => None,
            1 => Some(Limit::Unlimited),
            2 => Some(Limit::At(rd.d(number(*v))?)),
            _ => return Err(HistoryError::Corrupt("unknown cgroup value tag")),
        };
    }
    let hierarchy = if mask & (1 << HIERARCHY_BIT) != 0 {
        match rd.byte()? {
            0 => CgroupHierarchy::V2,
            1 => {
                let n = rd.count(rd.left(), 1)?;
                let mut ctl = Vec::with_capacity(n);
                for _ in 0..n {
                    ctl.push(rd.string()?);
                }
                CgroupHierarchy::V1(ctl)
            }
            _ => return Err(HistoryError::Corrupt("unknown cgroup hierarchy")),
        }
    } else {
        r.hierarchy.clone()
    };
    let pressure = if mask & (1 << PRESSURE_BIT) != 0 {
        let n = rd.count(rd.left(), 3)?;
        let mut p = Vec::with_capacity(n);
        for _ in 0..n {
            let resource = rd.string()?;
            let some = get_line(rd, total_of(&r.pressure, &resource, false))?;
            let full = get_line(rd, total_of(&r.pressure, &resource, true))?;
            p.push(Pressure {
                resource,
                some,
                full,
            });
        }
        p
    } else {
        r.pressure.clone()
    };
    from_slots(path, hierarchy, s, pressure)
}

fn put_notes(b: &mut Vec<u8>, notes: &[String]) {
    put_u(b, notes.len() as u64);
    for n in notes {
        put_bytes(b, n.as_bytes());
    }
}

/// Writes the table of a key frame (or of a delta whose key has none) into the empty column
/// `b`; returns its records in identity order, for the deltas after a key.
pub(crate) fn put_full(b: &mut Vec<u8>, l: Option<&CgroupListing>) -> Option<Vec<CgroupCounters>> {
    let l = l?;
    let rows = sorted(l);
    b.push(1);
    put_notes(b, &l.notes);
    put_u(b, rows.len() as u64);
    let none = empty();
    let mut prev: &CgroupCounters = &none;
    for c in &rows {
        let shared = c
            .path
            .iter()
            .zip(&prev.path)
            .take_while(|(a, b)| a == b)
            .count();
        put_u(b, shared as u64);
        put_bytes(b, &c.path[shared..]);
        put_record(b, c, prev);
        prev = c;
    }
    Some(rows.into_iter().cloned().collect())
}

/// Writes the table of a delta against the key's records `key` (identity order) into the
/// empty column `b`: the records that differ from the key's, the new ones, the key's gone.
pub(crate) fn put_delta(
    b: &mut Vec<u8>,
    l: Option<&CgroupListing>,
    key: Option<&[CgroupCounters]>,
) {
    let (Some(l), Some(key)) = (l, key) else {
        put_full(b, l);
        return;
    };
    let cur = sorted(l);
    let mut rows: Vec<(Option<usize>, &CgroupCounters)> = Vec::new();
    let mut gone = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        match (key.get(i), cur.get(j)) {
            (None, None) => break,
            (Some(k), Some(&c)) if ident(k) == ident(c) => {
                if k != c {
                    rows.push((Some(i), c));
                }
                i += 1;
                j += 1;
            }
            (Some(k), Some(&c)) if ident(k) < ident(c) => {
                gone.push(i);
                i += 1;
            }
            (Some(_), None) => {
                gone.push(i);
                i += 1;
            }
            (_, Some(&c)) => {
                rows.push((None, c));
                j += 1;
            }
        }
    }
    b.push(2);
    put_notes(b, &l.notes);
    put_u(b, gone.len() as u64);
    let mut next = 0;
    for g in gone {
        put_u(b, (g - next) as u64);
        next = g + 1;
    }
    put_u(b, rows.len() as u64);
    let none = empty();
    let mut next = 0;
    for (ki, c) in rows {
        put_key_idx(b, ki, &mut next);
        if ki.is_none() {
            put_bytes(b, &c.path);
        }
        put_record(b, c, ki.map_or(&none, |i| &key[i]));
    }
}

/// The table in column `rd` (`None`: an empty column), a delta's against the key's records
/// `key`; and, for a full table, its records for the deltas after a key.
pub(crate) fn get_cgroups(
    rd: &mut Reader<'_>,
    key: Option<&[CgroupCounters]>,
) -> Result<Option<CgroupListing>, HistoryError> {
    if rd.left() == 0 {
        return Ok(None);
    }
    let tag = rd.byte()?;
    let n = rd.count(rd.left(), 1)?;
    let mut notes = Vec::with_capacity(n);
    for _ in 0..n {
        notes.push(rd.string()?);
    }
    let cgroups = match (tag, key) {
        (1, _) => get_full(rd)?,
        (2, Some(key)) => get_delta(rd, key)?,
        (2, None) => return Err(HistoryError::Corrupt("a cgroups delta without a key table")),
        _ => return Err(HistoryError::Corrupt("unknown cgroups tag")),
    };
    Ok(Some(CgroupListing { cgroups, notes }))
}

fn get_full(rd: &mut Reader<'_>) -> Result<Vec<CgroupCounters>, HistoryError> {
    let n = rd.count(rd.left(), 3)?;
    let mut rows: Vec<CgroupCounters> = Vec::with_capacity(n);
    let none = empty();
    for _ in 0..n {
        let prev = rows.last().unwrap_or(&none);
        let shared = usize::try_from(rd.u()?)
            .ok()
            .filter(|&s| s <= prev.path.len())
            .ok_or(HistoryError::Corrupt("cgroup path prefix"))?;
        let mut path = prev.path[..shared].to_vec();
        path.extend_from_slice(rd.bytes()?);
        let c = get_record(rd, path, prev)?;
        rows.push(c);
    }
    Ok(rows)
}

fn get_delta(
    rd: &mut Reader<'_>,
    key: &[CgroupCounters],
) -> Result<Vec<CgroupCounters>, HistoryError> {
    let ngone = rd.count(rd.left(), 1)?;
    // Per key record: kept (0), gone (1), replaced (2).
    let mut fate = vec![0u8; key.len()];
    let mut next = 0usize;
    for _ in 0..ngone {
        let i = usize::try_from(rd.u()?)
            .ok()
            .and_then(|d| next.checked_add(d))
            .filter(|&i| i < key.len())
            .ok_or(HistoryError::Corrupt("gone cgroup past the key's"))?;
        fate[i] = 1;
        next = i + 1;
    }
    let n = rd.count(rd.left(), 2)?;
    let mut rows = Vec::with_capacity(key.len() + n);
    let none = empty();
    let mut next = 0;
    for _ in 0..n {
        let ki = crate::wire::get_key_idx(rd, &mut next, key.len())?;
        let (path, r) = match ki {
            Some(i) => {
                fate[i] = 2;
                (key[i].path.clone(), &key[i])
            }
            None => (rd.bytes()?.to_vec(), &none),
        };
        rows.push(get_record(rd, path, r)?);
    }
    rows.extend(
        key.iter()
            .zip(&fate)
            .filter(|(_, &f)| f == 0)
            .map(|(k, _)| k.clone()),
    );
    rows.sort_by(|a, b| ident(a).cmp(&ident(b)));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(path: &[u8], v1: bool, usage: Option<u64>) -> CgroupCounters {
        let h = if v1 {
            CgroupHierarchy::V1(vec!["cpu".into(), "cpuacct".into()])
        } else {
            CgroupHierarchy::V2
        };
        let mut c = CgroupCounters::new(path.to_vec(), h);
        c.cpu_usage_ns = usage;
        c.cpu_quota_us = Some(Limit::Unlimited);
        c.memory_limit_bytes = Some(Limit::At(1 << 30));
        c
    }

    #[test]
    fn a_table_and_its_delta_round_trip() {
        let mut p = rec(b"/a\xff", false, Some(5));
        p.pressure.push(Pressure {
            resource: "cpu".into(),
            some: Some(PressureLine {
                avg_pct: [0.5, 0.0, 0.0],
                total_us: 77,
            }),
            full: None,
        });
        let l = CgroupListing {
            cgroups: vec![rec(b"/b", true, None), p, rec(b"/", false, Some(9))],
            notes: vec!["depth 3 reached".into()],
        };
        let mut b = Vec::new();
        let key = put_full(&mut b, Some(&l)).expect("a table");
        let got = get_cgroups(&mut Reader::new(&b), None).expect("decodes");
        let mut want = l.clone();
        want.cgroups.sort_by(|a, b| ident(a).cmp(&ident(b)));
        assert_eq!(got.as_ref(), Some(&want));
        assert_eq!(key, want.cgroups);

        // One grows, one goes, one is new, one stays: the delta holds two records.
        let mut next = want.clone();
        next.cgroups[1].cpu_usage_ns = Some(6);
        next.cgroups.remove(0);
        next.cgroups.push(rec(b"/c", true, Some(1)));
        let mut d = Vec::new();
        put_delta(&mut d, Some(&next), Some(&key));
        let got = get_cgroups(&mut Reader::new(&d), Some(&key)).expect("decodes");
        assert_eq!(got, Some(next));
        assert_eq!(get_cgroups(&mut Reader::new(&[]), Some(&key)), Ok(None));
    }

    #[test]
    fn hostile_tables_are_refused() {
        for bad in [&[3u8, 0][..], &[2, 0, 0, 0][..], &[1, 0, 1, 9, 0, 0][..]] {
            assert!(get_cgroups(&mut Reader::new(bad), None).is_err(), "{bad:?}");
        }
    }
}
