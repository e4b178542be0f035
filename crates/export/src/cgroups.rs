//! The host's cgroups as `tasksnap_cgroup_*` series: one listing per collection (from
//! `Host::cgroups`) into each cgroup's values of the model's field table
//! ([`tasksnap_model::CGROUP_FIELDS`]) in base units, labelled by the cgroup's path and its
//! hierarchy, with the number of series bounded.
//!
//! A cgroup's counters are the kernel's own (they count from the cgroup's creation, and start
//! again when it is made anew). A limit that is none and a file that is not there have no
//! sample.
//!
//! Bounded: when the cgroups' series would pass the budget, the cgroups that used the least CPU
//! since the previous collection (then the least in all, then by path) are folded into one
//! `cgroup="other"` row per hierarchy. Its counters grow by what the folded cgroups' counters
//! grew since the previous collection (a cgroup first seen since then brings all it counted;
//! nothing counts at the first collection), so a rate over them stays right whichever
//! cgroups are folded; levels and limits are not summed. [`CgroupSeries::folded`] says how
//! many were folded.

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::{
    CgroupCounters, CgroupHierarchy, CgroupKind, CgroupListing, CgroupUnit, CgroupValue,
    CGROUP_FIELDS,
};

/// The `cgroup` label of the row the folded cgroups are shown as (a cgroup's path starts with
/// `/`, so no cgroup is called so).
pub const OTHER_CGROUP: &str = "other";

/// The `hierarchy` labels, v1's and v2's.
const HIERARCHIES: [&str; 2] = ["v1", "v2"];

/// One cgroup's row.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupRow {
    /// Its path as a label value ([`crate::label::value`]), or [`OTHER_CGROUP`].
    pub cgroup: String,
    /// `v1` or `v2`.
    pub hierarchy: &'static str,
    /// Each field of [`CGROUP_FIELDS`], in its order, in base units (seconds, bytes, counts);
    /// `None`: no sample (not read, a limit that is none, a level of `other`).
    pub values: Vec<Option<f64>>,
}

impl CgroupRow {
    /// The samples this row has.
    pub fn series(&self) -> usize {
        self.values.iter().filter(|v| v.is_some()).count()
    }
}

/// What one collection shows of the cgroups.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupSeries {
    /// The cgroups shown, by hierarchy and path, then `other` per hierarchy (once anything
    /// was folded into it).
    pub rows: Vec<CgroupRow>,
    /// Cgroups folded into `other` at this collection.
    pub folded: usize,
}

impl CgroupSeries {
    /// The series it shows: its rows' samples and the count of the folded.
    pub fn series(&self) -> usize {
        1 + self.rows.iter().map(CgroupRow::series).sum::<usize>()
    }
}

/// Which cgroup: v2 or not, and its path.
type Key = (bool, Vec<u8>);

/// Keeps what the fold needs between collections.
#[derive(Debug)]
pub struct Cgroups {
    /// At most this many series (0: no limit).
    max_series: usize,
    /// Every cgroup's counters at the previous collection, by field index.
    prev: HashMap<Key, Vec<Option<u64>>>,
    /// Whether a collection was taken in.
    seen: bool,
    /// `other`'s counters per hierarchy (v1, v2), in each field's unit, by field index
    /// (`None`: no folded cgroup had it); `None` until something was folded into it.
    other: [Option<Vec<Option<u64>>>; 2],
    last: Arc<CgroupSeries>,
}

/// A counter field's value in `c`.
fn counter(i: usize, c: &CgroupCounters) -> Option<u64> {
    let f = &CGROUP_FIELDS[i];
    (f.kind == CgroupKind::Counter)
        .then(|| f.number(c))
        .flatten()
}

/// The series `other` has at most, per hierarchy: one per counter field.
fn other_most() -> usize {
    CGROUP_FIELDS
        .iter()
        .filter(|f| f.kind == CgroupKind::Counter)
        .count()
}

/// The index of `h` in [`HIERARCHIES`].
fn hierarchy_index(h: &CgroupHierarchy) -> usize {
    match h {
        CgroupHierarchy::V1(_) => 0,
        CgroupHierarchy::V2 => 1,
    }
}

/// `v` of `unit` in base units: seconds for a time (divided by the whole units a second has,
/// so that 100000 us is 0.1 as written, not 0.09999999999999999), else as it is.
fn base(v: u64, unit: CgroupUnit) -> f64 {
    match unit.seconds() {
        Some(s) => v as f64 / (1.0 / s).round(),
        None => v as f64,
    }
}

/// `c`'s row: each field in base units.
fn row_of(c: &CgroupCounters) -> CgroupRow {
    let values = CGROUP_FIELDS
        .iter()
        .map(|f| match f.get(c)? {
            CgroupValue::Num(v) => Some(base(v, f.unit)),
            CgroupValue::Unlimited => None,
        })
        .collect();
    CgroupRow {
        cgroup: crate::label::value(&c.path).into_owned(),
        hierarchy: HIERARCHIES[hierarchy_index(&c.hierarchy)],
        values,
    }
}

impl Cgroups {
    /// No collection yet; at most `max_series` series (0: no limit).
    pub fn new(max_series: usize) -> Cgroups {
        Cgroups {
            max_series,
            prev: HashMap::new(),
            seen: false,
            other: [None, None],
            last: Arc::new(CgroupSeries::default()),
        }
    }

    /// What the last collection shows.
    pub fn shown(&self) -> Arc<CgroupSeries> {
        self.last.clone()
    }

    /// Takes in one listing.
    pub fn update(&mut self, listing: &CgroupListing) {
        let cgroups = &listing.cgroups;
        let now: Vec<Vec<Option<u64>>> = cgroups
            .iter()
            .map(|c| (0..CGROUP_FIELDS.len()).map(|i| counter(i, c)).collect())
            .collect();
        let keys: Vec<Key> = cgroups
            .iter()
            .map(|c| (c.hierarchy == CgroupHierarchy::V2, c.path.clone()))
            .collect();
        let prev = std::mem::take(&mut self.prev);
        let seen = self.seen;
        // What counter `i` of cgroup `k` grew since the previous collection.
        let grew = |k: usize, i: usize| -> Option<u64> {
            let v = now[k][i]?;
            Some(match prev.get(&keys[k]).map(|p| p[i]) {
                Some(Some(p)) if v >= p => v - p,
                // Made anew since (the counter started again), or first seen since.
                _ if seen => v,
                _ => 0,
            })
        };
        let usage = CGROUP_FIELDS
            .iter()
            .position(|f| f.name == "cpu_usage_ns")
            .expect("cpu_usage_ns is a cgroup field");
        let busy: Vec<(u64, u64)> = (0..cgroups.len())
            .map(|k| (grew(k, usage).unwrap_or(0), now[k][usage].unwrap_or(0)))
            .collect();
        let mut order: Vec<usize> = (0..cgroups.len()).collect();
        order.sort_unstable_by(|&a, &b| busy[b].cmp(&busy[a]).then_with(|| keys[a].cmp(&keys[b])));
        let (shown, fold) = self.choose(cgroups, order);
        for &k in &fold {
            let other = self.other[usize::from(keys[k].0)]
                .get_or_insert_with(|| vec![None; CGROUP_FIELDS.len()]);
            for (i, total) in other.iter_mut().enumerate() {
                if let Some(g) = grew(k, i) {
                    *total = Some(total.unwrap_or(0).saturating_add(g));
                }
            }
        }
        let mut shown: Vec<(&Key, CgroupRow)> =
            shown.into_iter().map(|(k, r)| (&keys[k], r)).collect();
        shown.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut rows: Vec<CgroupRow> = shown.into_iter().map(|(_, r)| r).collect();
        rows.extend(self.other_rows());
        self.last = Arc::new(CgroupSeries {
            rows,
            folded: fold.len(),
        });
        self.prev = keys.into_iter().zip(now).collect();
        self.seen = true;
    }

    /// The cgroups shown (their index in `cgroups` and row) and those folded, taking them in
    /// `order` (busiest first) until the budget is spent: the rest are folded.
    fn choose(
        &self,
        cgroups: &[CgroupCounters],
        order: Vec<usize>,
    ) -> (Vec<(usize, CgroupRow)>, Vec<usize>) {
        let unlimited = self.max_series == 0;
        // Room for the count of the folded and `other` at its largest.
        let mut budget = self
            .max_series
            .saturating_sub(1 + HIERARCHIES.len() * other_most());
        let mut shown = Vec::with_capacity(cgroups.len());
        let mut fold = Vec::new();
        for k in order {
            if !fold.is_empty() {
                fold.push(k);
                continue;
            }
            let row = row_of(&cgroups[k]);
            let s = row.series();
            if unlimited || s <= budget {
                budget = budget.saturating_sub(s);
                shown.push((k, row));
            } else {
                fold.push(k);
            }
        }
        (shown, fold)
    }

    /// `other`'s rows: its counters in base units, per hierarchy that has one.
    fn other_rows(&self) -> Vec<CgroupRow> {
        let mut rows = Vec::new();
        for (h, totals) in self.other.iter().enumerate() {
            let Some(totals) = totals else { continue };
            let values = CGROUP_FIELDS
                .iter()
                .zip(totals)
                .map(|(f, &t)| {
                    let t = t.filter(|_| f.kind == CgroupKind::Counter)?;
                    Some(base(t, f.unit))
                })
                .collect();
            rows.push(CgroupRow {
                cgroup: OTHER_CGROUP.to_string(),
                hierarchy: HIERARCHIES[h],
                values,
            });
        }
        rows
    }
}

#[cfg(test)]
mod tests;
