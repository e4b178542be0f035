//! The rows of `tasksnap cgroups`: each cgroup of the second reading with its rates over the
//! interval (the model's [`cgroup_rates`]), sorted by CPU% descending, then path
//! ([`between`]) or in tree order ([`tree_order`]).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tasksnap_model::{cgroup_rates, CgroupCounters, CgroupHierarchy};

use super::mix::Mix;

/// One cgroup and its rates.
#[derive(Debug)]
pub struct Row<'a> {
    /// The second reading.
    pub c: &'a CgroupCounters,
    /// CPU time used over the interval, % of one CPU.
    pub cpu_pct: Option<f64>,
    /// Time throttled over the interval, % of the interval.
    pub throttled_pct: Option<f64>,
    /// Growth of `cpu.pressure`'s `some` total, % of the interval.
    pub psi_cpu_some_pct: Option<f64>,
    /// Its own processes, threads and their state mix.
    pub mix: Mix,
}

/// The rows in tree order (top's cgroup view): the v2 hierarchy's, then the v1 paths'; each
/// cgroup followed by its children, the children of one parent by CPU% (none last), then
/// path. A row whose parent is not listed goes under its hierarchy's root, or first.
pub fn tree_order(rows: Vec<Row<'_>>) -> Vec<Row<'_>> {
    let parent = |p: &[u8]| -> Option<Vec<u8>> {
        if p == b"/" {
            return None;
        }
        let cut = p.iter().rposition(|&b| b == b'/')?;
        Some(if cut == 0 {
            b"/".to_vec()
        } else {
            p[..cut].to_vec()
        })
    };
    let key = |r: &Row| (r.c.hierarchy == CgroupHierarchy::V2, r.c.path.clone());
    let listed: HashSet<_> = rows.iter().map(key).collect();
    let mut children: HashMap<Option<(bool, Vec<u8>)>, Vec<usize>> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        let v2 = r.c.hierarchy == CgroupHierarchy::V2;
        let up = parent(&r.c.path)
            .map(|p| (v2, p))
            .filter(|k| listed.contains(k));
        children.entry(up).or_default().push(i);
    }
    let cpu = |i: &usize| rows[*i].cpu_pct.unwrap_or(-1.0);
    for list in children.values_mut() {
        list.sort_by(|a, b| {
            cpu(b)
                .total_cmp(&cpu(a))
                .then_with(|| {
                    (rows[*b].c.hierarchy == CgroupHierarchy::V2)
                        .cmp(&(rows[*a].c.hierarchy == CgroupHierarchy::V2))
                })
                .then_with(|| rows[*a].c.path.cmp(&rows[*b].c.path))
        });
    }
    let mut roots = children.remove(&None).unwrap_or_default();
    roots.sort_by_key(|&i| {
        (
            rows[i].c.hierarchy != CgroupHierarchy::V2,
            rows[i].c.path.clone(),
        )
    });
    let mut order = Vec::with_capacity(rows.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        if let Some(kids) = children.get(&Some(key(&rows[i]))) {
            stack.extend(kids.iter().rev());
        }
    }
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The rows, sorted: CPU% descending (none last), then path, v2 before v1.
pub fn between<'a>(
    before: &[CgroupCounters],
    after: &'a [CgroupCounters],
    mixes: &[Mix],
    elapsed: Duration,
) -> Vec<Row<'a>> {
    let mut rows: Vec<Row<'a>> = after
        .iter()
        .zip(cgroup_rates(before, after, elapsed))
        .zip(
            mixes
                .iter()
                .copied()
                .chain(std::iter::repeat(Mix::default())),
        )
        .map(|((c, r), mix)| Row {
            c,
            cpu_pct: r.cpu_pct,
            throttled_pct: r.throttled_pct,
            psi_cpu_some_pct: r.psi_cpu_some_pct,
            mix,
        })
        .collect();
    rows.sort_by(|a, b| {
        let cpu = |r: &Row| r.cpu_pct.unwrap_or(-1.0);
        cpu(b)
            .total_cmp(&cpu(a))
            .then_with(|| a.c.path.cmp(&b.c.path))
            .then_with(|| {
                (b.c.hierarchy == CgroupHierarchy::V2).cmp(&(a.c.hierarchy == CgroupHierarchy::V2))
            })
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(path: &str, usage_ns: Option<u64>, throttled_ns: Option<u64>) -> CgroupCounters {
        let mut c = CgroupCounters::new(path.as_bytes().to_vec(), CgroupHierarchy::V1(vec![]));
        c.cpu_usage_ns = usage_ns;
        c.cpu_throttled_ns = throttled_ns;
        c
    }

    #[test]
    fn rates_over_the_interval_sorted_by_cpu() {
        let before = [
            cg("/a", Some(0), Some(0)),
            cg("/b", Some(1_000), None),
            cg("/c", Some(500_000_000), None),
        ];
        let after = [
            cg("/a", Some(200_000_000), Some(800_000_000)),
            cg("/b", Some(1_000_000_000), None),
            cg("/c", Some(1), None),
            cg("/new", Some(5), None),
        ];
        let rows = between(&before, &after, &[], Duration::from_secs(1));
        let paths: Vec<&[u8]> = rows.iter().map(|r| r.c.path.as_slice()).collect();
        assert_eq!(paths, [&b"/b"[..], b"/a", b"/c", b"/new"]);
        assert!((rows[1].cpu_pct.expect("a") - 20.0).abs() < 1e-9);
        assert!((rows[1].throttled_pct.expect("a") - 80.0).abs() < 1e-9);
        assert_eq!(rows[2].cpu_pct, None, "went backwards");
        assert_eq!(rows[3].cpu_pct, None, "new");
        assert_eq!(rows[0].throttled_pct, None);
    }

    #[test]
    fn tree_order_puts_children_under_parents_busiest_first() {
        let before = [
            cg("/", Some(0), None),
            cg("/a", Some(0), None),
            cg("/a/x", Some(0), None),
            cg("/b", Some(0), None),
            cg("/b/y", Some(0), None),
        ];
        let after = [
            cg("/", Some(900), None),
            cg("/a", Some(100), None),
            cg("/a/x", Some(50), None),
            cg("/b", Some(500), None),
            cg("/b/y", Some(400), None),
            cg("/orphan/deep", Some(1), None),
        ];
        let rows = tree_order(between(&before, &after, &[], Duration::from_secs(1)));
        let paths: Vec<&[u8]> = rows.iter().map(|r| r.c.path.as_slice()).collect();
        assert_eq!(
            paths,
            [&b"/"[..], b"/b", b"/b/y", b"/a", b"/a/x", b"/orphan/deep"]
        );
    }
}
