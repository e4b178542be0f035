//! A cgroup's rates between two readings of the hierarchies: CPU time used, time throttled
//! by the CPU quota, and growth of CPU pressure's `some` total, each as a percentage of the
//! interval (CPU use of one CPU, so above 100 on several). A record of the second reading is
//! matched with the first's of the same hierarchy kind and path. Pure arithmetic: a counter
//! that went backwards (a cgroup removed and made again) or is missing in either reading
//! gives no rate. Every front end's CPU%, THR% and PSI% of a cgroup come from here, as its
//! counters come from [`crate::CGROUP_FIELDS`].

use std::collections::HashMap;
use std::time::Duration;

use crate::{CgroupCounters, CgroupHierarchy};

/// One cgroup's rates over an interval; `None` where there is none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgroupRates {
    /// CPU time used over the interval, % of one CPU (`cpu_usage_ns`'s growth).
    pub cpu_pct: Option<f64>,
    /// Time throttled by the CPU quota over the interval, % of it (`cpu_throttled_ns`'s
    /// growth).
    pub throttled_pct: Option<f64>,
    /// Growth of `cpu.pressure`'s `some` total, % of the interval.
    pub psi_cpu_some_pct: Option<f64>,
}

/// A counter's growth between the readings as % of `elapsed_ns`.
fn pct(before: Option<u64>, after: Option<u64>, elapsed_ns: f64) -> Option<f64> {
    let grew = after?.checked_sub(before?)?;
    (elapsed_ns > 0.0).then(|| grew as f64 * 100.0 / elapsed_ns)
}

/// The `some` total of `cpu.pressure`, in nanoseconds.
fn psi_cpu_some_ns(c: &CgroupCounters) -> Option<u64> {
    let p = c.pressure_of("cpu")?.some?;
    Some(p.total_us.saturating_mul(1000))
}

/// The rates of each record of `after` (in its order) since `before`, `elapsed` apart.
pub fn cgroup_rates(
    before: &[CgroupCounters],
    after: &[CgroupCounters],
    elapsed: Duration,
) -> Vec<CgroupRates> {
    let key = |c: &CgroupCounters| (c.hierarchy == CgroupHierarchy::V2, c.path.clone());
    let earlier: HashMap<_, &CgroupCounters> = before.iter().map(|c| (key(c), c)).collect();
    let elapsed_ns = elapsed.as_nanos() as f64;
    after
        .iter()
        .map(|c| {
            let b = earlier.get(&key(c));
            let rate = |get: fn(&CgroupCounters) -> Option<u64>| {
                pct(b.and_then(|b| get(b)), get(c), elapsed_ns)
            };
            CgroupRates {
                cpu_pct: rate(|x| x.cpu_usage_ns),
                throttled_pct: rate(|x| x.cpu_throttled_ns),
                psi_cpu_some_pct: rate(psi_cpu_some_ns),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pressure, PressureLine};

    fn cg(path: &str, usage_ns: Option<u64>, throttled_ns: Option<u64>) -> CgroupCounters {
        let mut c = CgroupCounters::new(path.as_bytes().to_vec(), CgroupHierarchy::V1(vec![]));
        c.cpu_usage_ns = usage_ns;
        c.cpu_throttled_ns = throttled_ns;
        c
    }

    #[test]
    fn growth_over_the_interval_matched_by_hierarchy_and_path() {
        let mut v2_before = CgroupCounters::new(b"/a".to_vec(), CgroupHierarchy::V2);
        let some = |total_us| Pressure {
            resource: "cpu".into(),
            some: Some(PressureLine {
                avg_pct: [0.0; 3],
                total_us,
            }),
            full: None,
        };
        v2_before.pressure.push(some(1_000));
        let mut v2_after = v2_before.clone();
        v2_after.pressure[0] = some(501_000);
        let before = [
            cg("/a", Some(0), Some(0)),
            cg("/b", Some(1_000), None),
            cg("/c", Some(500_000_000), None),
            v2_before,
        ];
        let after = [
            cg("/a", Some(200_000_000), Some(800_000_000)),
            cg("/b", Some(2_000_001_000), None),
            cg("/c", Some(1), None),
            cg("/new", Some(5), None),
            v2_after,
        ];
        let r = cgroup_rates(&before, &after, Duration::from_secs(1));
        assert_eq!(r.len(), after.len());
        let near = |v: Option<f64>, want: f64| (v.expect("a rate") - want).abs() < 1e-9;
        assert!(near(r[0].cpu_pct, 20.0));
        assert!(near(r[0].throttled_pct, 80.0));
        assert!(near(r[1].cpu_pct, 200.0), "two CPUs");
        assert_eq!(r[1].throttled_pct, None, "not read");
        assert_eq!(r[2].cpu_pct, None, "went backwards");
        assert_eq!(r[3], CgroupRates::default(), "new");
        assert!(near(r[4].psi_cpu_some_pct, 50.0));
        assert_eq!(r[4].cpu_pct, None, "the v1 /a is another cgroup");
        assert_eq!(r[0].psi_cpu_some_pct, None);
    }
}
