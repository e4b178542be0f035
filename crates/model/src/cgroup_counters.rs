//! One cgroup's own counters, as its control files give them at one moment: CPU usage and
//! bandwidth (quota, period, throttling), memory use, limit, swap and events (high, max, OOM,
//! OOM kills), I/O bytes and operations, the number of tasks, and pressure stalls. One record per cgroup directory of a hierarchy (cgroup v2),
//! or per path with the v1 hierarchies that have it merged. Raw counters only: rates are a
//! front end's arithmetic between two readings.
//!
//! Every field is an `Option`: `None` means the file is not there (a controller not bound to
//! this hierarchy, a kernel without it) or could not be read, never zero. A limit that the
//! kernel reports as none (`max`, `-1`, v1's huge page-rounded `LONG_MAX`) is
//! [`Limit::Unlimited`], not a number.

use crate::Pressure;

/// A limit as a control file states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit (`max` on v2; `-1` for a v1 CPU quota; `9223372036854771712`, `LONG_MAX`
    /// rounded down to a page, for a v1 memory limit).
    Unlimited,
    /// This many units (the field's name says which).
    At(u64),
}

impl Limit {
    /// The value, or `None` when unlimited.
    pub fn value(self) -> Option<u64> {
        match self {
            Limit::Unlimited => None,
            Limit::At(v) => Some(v),
        }
    }
}

/// Which hierarchy a record comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupHierarchy {
    /// The unified hierarchy (cgroup v2).
    V2,
    /// cgroup v1: the controllers of every v1 hierarchy that has this path, merged, sorted
    /// (`cpu`, `cpuacct`, `memory`, `pids`...; a named hierarchy as `name=systemd`).
    V1(Vec<String>),
}

/// One cgroup's counters at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupCounters {
    /// The path relative to its hierarchy's root, starting with `/` (`/` is the root); raw
    /// bytes, since a directory name need not be UTF-8.
    pub path: Vec<u8>,
    /// The hierarchy (v2, or the v1 controllers merged for this path).
    pub hierarchy: CgroupHierarchy,
    /// CPU time used by the group's tasks so far (v1 `cpuacct.usage`; v2 `cpu.stat`
    /// `usage_usec` × 1000).
    pub cpu_usage_ns: Option<u64>,
    /// The CPU bandwidth quota per period (v1 `cpu.cfs_quota_us`; v2 `cpu.max`'s first field).
    pub cpu_quota_us: Option<Limit>,
    /// The CPU bandwidth period (v1 `cpu.cfs_period_us`; v2 `cpu.max`'s second field).
    pub cpu_period_us: Option<u64>,
    /// Periods with runnable tasks so far (`cpu.stat` `nr_periods`).
    pub cpu_periods: Option<u64>,
    /// Periods in which the quota ran out (`cpu.stat` `nr_throttled`).
    pub cpu_throttled_periods: Option<u64>,
    /// Time throttled so far (v1 `cpu.stat` `throttled_time`; v2 `throttled_usec` × 1000).
    pub cpu_throttled_ns: Option<u64>,
    /// Memory in use (v1 `memory.usage_in_bytes`; v2 `memory.current`).
    pub memory_current_bytes: Option<u64>,
    /// The memory limit (v1 `memory.limit_in_bytes`; v2 `memory.max`).
    pub memory_limit_bytes: Option<Limit>,
    /// Tasks killed by the OOM killer in this group (v1 `memory.oom_control`, v2
    /// `memory.events`: `oom_kill`).
    pub oom_kills: Option<u64>,
    /// Times the usage went over `memory.high` and the group was throttled and reclaimed
    /// (v2 `memory.events` `high`; v1 has no such limit).
    pub memory_high_events: Option<u64>,
    /// Times the usage was about to go over the limit (v2 `memory.events` `max`; v1
    /// `memory.failcnt`, the times a charge hit the limit).
    pub memory_max_events: Option<u64>,
    /// Times the limit was hit and reclaim failed, so the OOM killer was invoked (v2
    /// `memory.events` `oom`).
    pub memory_oom_events: Option<u64>,
    /// Swap in use (v2 `memory.swap.current`; v1 `memory.memsw.usage_in_bytes` less
    /// `memory.usage_in_bytes`, where swap accounting is on).
    pub swap_current_bytes: Option<u64>,
    /// Bytes read from block devices so far, all devices (v2 `io.stat` `rbytes`; v1
    /// `blkio.throttle.io_service_bytes_recursive` `Read`).
    pub io_read_bytes: Option<u64>,
    /// Bytes written to block devices so far (`wbytes`; v1 `Write`).
    pub io_write_bytes: Option<u64>,
    /// Read operations so far (`rios`; v1 `blkio.throttle.io_serviced_recursive` `Read`).
    pub io_read_ops: Option<u64>,
    /// Write operations so far (`wios`; v1 `Write`).
    pub io_write_ops: Option<u64>,
    /// Tasks in the group and its descendants (`pids.current`).
    pub pids_current: Option<u64>,
    /// Pressure stalls (`cpu.pressure`, `memory.pressure`, `io.pressure`), where the files
    /// exist (v2 only); `resource` names each.
    pub pressure: Vec<Pressure>,
}

impl CgroupCounters {
    /// A record with nothing read yet.
    pub fn new(path: Vec<u8>, hierarchy: CgroupHierarchy) -> CgroupCounters {
        CgroupCounters {
            path,
            hierarchy,
            cpu_usage_ns: None,
            cpu_quota_us: None,
            cpu_period_us: None,
            cpu_periods: None,
            cpu_throttled_periods: None,
            cpu_throttled_ns: None,
            memory_current_bytes: None,
            memory_limit_bytes: None,
            oom_kills: None,
            memory_high_events: None,
            memory_max_events: None,
            memory_oom_events: None,
            swap_current_bytes: None,
            io_read_bytes: None,
            io_write_bytes: None,
            io_read_ops: None,
            io_write_ops: None,
            pids_current: None,
            pressure: Vec::new(),
        }
    }

    /// The quota as a number of CPUs (quota / period; `None`: unlimited or unknown).
    pub fn cpu_quota_cpus(&self) -> Option<f64> {
        let quota = self.cpu_quota_us?.value()?;
        let period = self.cpu_period_us.filter(|&p| p > 0)?;
        Some(quota as f64 / period as f64)
    }

    /// The pressure figures of `resource` (`cpu`, `memory`, `io`), if read.
    pub fn pressure_of(&self, resource: &str) -> Option<&Pressure> {
        self.pressure.iter().find(|p| p.resource == resource)
    }

    /// Takes every counter `other` has and this record lacks (merging v1 hierarchies that
    /// have the same path); the hierarchies' controllers are joined.
    pub fn merge(&mut self, other: CgroupCounters) {
        fn take<T>(mine: &mut Option<T>, theirs: Option<T>) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        if let (CgroupHierarchy::V1(mine), CgroupHierarchy::V1(theirs)) =
            (&mut self.hierarchy, other.hierarchy)
        {
            mine.extend(theirs);
            mine.sort();
            mine.dedup();
        }
        take(&mut self.cpu_usage_ns, other.cpu_usage_ns);
        take(&mut self.cpu_quota_us, other.cpu_quota_us);
        take(&mut self.cpu_period_us, other.cpu_period_us);
        take(&mut self.cpu_periods, other.cpu_periods);
        take(&mut self.cpu_throttled_periods, other.cpu_throttled_periods);
        take(&mut self.cpu_throttled_ns, other.cpu_throttled_ns);
        take(&mut self.memory_current_bytes, other.memory_current_bytes);
        take(&mut self.memory_limit_bytes, other.memory_limit_bytes);
        take(&mut self.oom_kills, other.oom_kills);
        take(&mut self.memory_high_events, other.memory_high_events);
        take(&mut self.memory_max_events, other.memory_max_events);
        take(&mut self.memory_oom_events, other.memory_oom_events);
        take(&mut self.swap_current_bytes, other.swap_current_bytes);
        take(&mut self.io_read_bytes, other.io_read_bytes);
        take(&mut self.io_write_bytes, other.io_write_bytes);
        take(&mut self.io_read_ops, other.io_read_ops);
        take(&mut self.io_write_ops, other.io_write_ops);
        take(&mut self.pids_current, other.pids_current);
        for p in other.pressure {
            if self.pressure_of(&p.resource).is_none() {
                self.pressure.push(p);
            }
        }
    }
}

/// What one walk of the hierarchies found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupListing {
    /// One record per cgroup (v2) or per v1 path, in the order found.
    pub cgroups: Vec<CgroupCounters>,
    /// What was left out and why (a depth or count limit reached, no hierarchy mounted).
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_takes_what_is_missing_and_joins_controllers() {
        let mut cpu = CgroupCounters::new(b"/a".to_vec(), CgroupHierarchy::V1(vec!["cpu".into()]));
        cpu.cpu_quota_us = Some(Limit::At(20_000));
        cpu.cpu_period_us = Some(100_000);
        let mut acct =
            CgroupCounters::new(b"/a".to_vec(), CgroupHierarchy::V1(vec!["cpuacct".into()]));
        acct.cpu_usage_ns = Some(5);
        acct.cpu_quota_us = Some(Limit::Unlimited);
        cpu.merge(acct);
        assert_eq!(cpu.cpu_usage_ns, Some(5));
        assert_eq!(cpu.cpu_quota_us, Some(Limit::At(20_000)));
        assert_eq!(cpu.cpu_quota_cpus(), Some(0.2));
        assert_eq!(
            cpu.hierarchy,
            CgroupHierarchy::V1(vec!["cpu".into(), "cpuacct".into()])
        );
    }

    #[test]
    fn an_unlimited_or_periodless_quota_has_no_cpus() {
        let mut c = CgroupCounters::new(b"/".to_vec(), CgroupHierarchy::V2);
        assert_eq!(c.cpu_quota_cpus(), None);
        c.cpu_quota_us = Some(Limit::Unlimited);
        c.cpu_period_us = Some(100_000);
        assert_eq!(c.cpu_quota_cpus(), None);
        c.cpu_quota_us = Some(Limit::At(50_000));
        c.cpu_period_us = Some(0);
        assert_eq!(c.cpu_quota_cpus(), None);
    }
}
