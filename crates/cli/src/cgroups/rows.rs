//! The rows of `tasksnap cgroups`: each cgroup of the second reading with its rates over the
//! interval (the model's [`cgroup_rates`]), sorted by CPU% descending, then path.

use std::time::Duration;

use tasksnap_model::{cgroup_rates, CgroupCounters, CgroupHierarchy};

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
}

/// The rows, sorted: CPU% descending (none last), then path, v2 before v1.
pub fn between<'a>(
    before: &[CgroupCounters],
    after: &'a [CgroupCounters],
    elapsed: Duration,
) -> Vec<Row<'a>> {
    let mut rows: Vec<Row<'a>> = after
        .iter()
        .zip(cgroup_rates(before, after, elapsed))
        .map(|(c, r)| Row {
            c,
            cpu_pct: r.cpu_pct,
            throttled_pct: r.throttled_pct,
            psi_cpu_some_pct: r.psi_cpu_some_pct,
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
        let rows = between(&before, &after, Duration::from_secs(1));
        let paths: Vec<&[u8]> = rows.iter().map(|r| r.c.path.as_slice()).collect();
        assert_eq!(paths, [&b"/b"[..], b"/a", b"/c", b"/new"]);
        assert!((rows[1].cpu_pct.expect("a") - 20.0).abs() < 1e-9);
        assert!((rows[1].throttled_pct.expect("a") - 80.0).abs() < 1e-9);
        assert_eq!(rows[2].cpu_pct, None, "went backwards");
        assert_eq!(rows[3].cpu_pct, None, "new");
        assert_eq!(rows[0].throttled_pct, None);
    }
}
