//! One definition per cgroup counter: its name (with its unit), how it moves (a counter that
//! only grows, a level, a limit), its unit, a help line, and how to get it from a
//! [`CgroupCounters`]. `tasksnap cgroups`' JSON and CSV, dump's cgroups table, serve's
//! `tasksnap_cgroup_*` families and the Python binding's `cgroups()` take their columns from
//! here, so a counter added once is there for all of them. The shape of [`crate::fields`]
//! for tasks.

use crate::{CgroupCounters, Limit};

/// How a cgroup field moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupKind {
    /// Only grows while the cgroup lives (usage, throttled time, events, I/O): rates are
    /// differences between readings.
    Counter,
    /// A level at the moment of reading (memory in use, tasks).
    Gauge,
    /// A setting that may be "none" ([`CgroupValue::Unlimited`]: `max`, `-1`).
    Limit,
}

/// The unit of a cgroup field's value (also at the end of its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds (as the kernel's file gives them: quotas, periods, pressure totals).
    Us,
    /// Bytes.
    Bytes,
    /// A count of things or events.
    Count,
}

impl CgroupUnit {
    /// Seconds per unit (Prometheus wants base units), `None` for bytes and counts.
    pub fn seconds(self) -> Option<f64> {
        match self {
            CgroupUnit::Ns => Some(1e-9),
            CgroupUnit::Us => Some(1e-6),
            CgroupUnit::Bytes | CgroupUnit::Count => None,
        }
    }
}

/// A cgroup field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupValue {
    /// A number in the field's unit.
    Num(u64),
    /// A limit the kernel reports as none.
    Unlimited,
}

/// One cgroup field.
pub struct CgroupField {
    /// The column name, snake_case, ending in its unit (`cpu_usage_ns`).
    pub name: &'static str,
    /// How it moves.
    pub kind: CgroupKind,
    /// Its unit.
    pub unit: CgroupUnit,
    /// One line saying what it is, for a metric's HELP and the docs.
    pub help: &'static str,
    get: fn(&CgroupCounters) -> Option<CgroupValue>,
}

impl CgroupField {
    /// The value in `c`, `None` when not read (the file is not there or could not be read).
    pub fn get(&self, c: &CgroupCounters) -> Option<CgroupValue> {
        (self.get)(c)
    }

    /// The value as a number: `None` when not read or unlimited.
    pub fn number(&self, c: &CgroupCounters) -> Option<u64> {
        match self.get(c)? {
            CgroupValue::Num(v) => Some(v),
            CgroupValue::Unlimited => None,
        }
    }
}

impl std::fmt::Debug for CgroupField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

fn num(v: Option<u64>) -> Option<CgroupValue> {
    v.map(CgroupValue::Num)
}

fn limit(v: Option<Limit>) -> Option<CgroupValue> {
    v.map(|l| l.value().map_or(CgroupValue::Unlimited, CgroupValue::Num))
}

/// A pressure file's `some` (`full` when `full`) total of `resource`.
fn psi(c: &CgroupCounters, resource: &str, full: bool) -> Option<CgroupValue> {
    let p = c.pressure_of(resource)?;
    let line = if full { p.full } else { p.some };
    num(line.map(|l| l.total_us))
}

macro_rules! field {
    ($name:literal, $kind:ident, $unit:ident, $help:literal, $get:expr) => {
        CgroupField {
            name: $name,
            kind: CgroupKind::$kind,
            unit: CgroupUnit::$unit,
            help: $help,
            get: $get,
        }
    };
}

/// Every cgroup field, in column order.
pub static CGROUP_FIELDS: &[CgroupField] = &[
    field!(
        "cpu_usage_ns",
        Counter,
        Ns,
        "CPU time used by the cgroup's tasks",
        |c| num(c.cpu_usage_ns)
    ),
    field!(
        "cpu_quota_us",
        Limit,
        Us,
        "CPU bandwidth quota per period",
        |c| limit(c.cpu_quota_us)
    ),
    field!("cpu_period_us", Gauge, Us, "CPU bandwidth period", |c| num(
        c.cpu_period_us
    )),
    field!(
        "cpu_periods",
        Counter,
        Count,
        "Bandwidth periods with runnable tasks",
        |c| num(c.cpu_periods)
    ),
    field!(
        "cpu_throttled_periods",
        Counter,
        Count,
        "Bandwidth periods in which the quota ran out",
        |c| num(c.cpu_throttled_periods)
    ),
    field!(
        "cpu_throttled_ns",
        Counter,
        Ns,
        "Time the cgroup was throttled by its CPU quota",
        |c| num(c.cpu_throttled_ns)
    ),
    field!("memory_current_bytes", Gauge, Bytes, "Memory in use", |c| {
        num(c.memory_current_bytes)
    }),
    field!("memory_limit_bytes", Limit, Bytes, "Memory limit", |c| {
        limit(c.memory_limit_bytes)
    }),
    field!("swap_current_bytes", Gauge, Bytes, "Swap in use", |c| num(
        c.swap_current_bytes
    )),
    field!(
        "memory_high_events",
        Counter,
        Count,
        "Times usage went over memory.high",
        |c| num(c.memory_high_events)
    ),
    field!(
        "memory_max_events",
        Counter,
        Count,
        "Times usage was about to go over the memory limit",
        |c| num(c.memory_max_events)
    ),
    field!(
        "memory_oom_events",
        Counter,
        Count,
        "Times the memory limit was hit and the OOM killer invoked",
        |c| num(c.memory_oom_events)
    ),
    field!(
        "oom_kills",
        Counter,
        Count,
        "Tasks killed by the OOM killer",
        |c| num(c.oom_kills)
    ),
    field!(
        "io_read_bytes",
        Counter,
        Bytes,
        "Bytes read from block devices",
        |c| num(c.io_read_bytes)
    ),
    field!(
        "io_write_bytes",
        Counter,
        Bytes,
        "Bytes written to block devices",
        |c| num(c.io_write_bytes)
    ),
    field!(
        "io_read_ops",
        Counter,
        Count,
        "Block device read operations",
        |c| num(c.io_read_ops)
    ),
    field!(
        "io_write_ops",
        Counter,
        Count,
        "Block device write operations",
        |c| num(c.io_write_ops)
    ),
    field!(
        "pids_current",
        Gauge,
        Count,
        "Tasks (threads) in the cgroup and its descendants",
        |c| num(c.pids_current)
    ),
    field!(
        "psi_cpu_some_total_us",
        Counter,
        Us,
        "Time some tasks stalled on CPU",
        |c| psi(c, "cpu", false)
    ),
    field!(
        "psi_cpu_full_total_us",
        Counter,
        Us,
        "Time all non-idle tasks stalled on CPU",
        |c| psi(c, "cpu", true)
    ),
    field!(
        "psi_memory_some_total_us",
        Counter,
        Us,
        "Time some tasks stalled on memory",
        |c| psi(c, "memory", false)
    ),
    field!(
        "psi_memory_full_total_us",
        Counter,
        Us,
        "Time all non-idle tasks stalled on memory",
        |c| psi(c, "memory", true)
    ),
    field!(
        "psi_io_some_total_us",
        Counter,
        Us,
        "Time some tasks stalled on I/O",
        |c| psi(c, "io", false)
    ),
    field!(
        "psi_io_full_total_us",
        Counter,
        Us,
        "Time all non-idle tasks stalled on I/O",
        |c| psi(c, "io", true)
    ),
];

/// The field named `name`.
pub fn cgroup_field(name: &str) -> Option<&'static CgroupField> {
    CGROUP_FIELDS.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CgroupHierarchy, Pressure, PressureLine};

    #[test]
    fn names_are_unique_and_end_in_their_unit() {
        let mut seen = std::collections::HashSet::new();
        for f in CGROUP_FIELDS {
            assert!(seen.insert(f.name), "{} twice", f.name);
            let suffix = match f.unit {
                CgroupUnit::Ns => "_ns",
                CgroupUnit::Us => "_us",
                CgroupUnit::Bytes => "_bytes",
                CgroupUnit::Count => "",
            };
            assert!(f.name.ends_with(suffix), "{}", f.name);
        }
    }

    #[test]
    fn values_limits_and_pressure() {
        let mut c = CgroupCounters::new(b"/a".to_vec(), CgroupHierarchy::V2);
        c.cpu_quota_us = Some(Limit::Unlimited);
        c.memory_limit_bytes = Some(Limit::At(4096));
        c.cpu_usage_ns = Some(7);
        c.pressure.push(Pressure {
            resource: "io".into(),
            some: Some(PressureLine {
                avg_pct: [0.0; 3],
                total_us: 9,
            }),
            full: None,
        });
        let get = |n: &str| cgroup_field(n).expect(n).get(&c);
        assert_eq!(get("cpu_quota_us"), Some(CgroupValue::Unlimited));
        assert_eq!(cgroup_field("cpu_quota_us").expect("q").number(&c), None);
        assert_eq!(get("memory_limit_bytes"), Some(CgroupValue::Num(4096)));
        assert_eq!(get("cpu_usage_ns"), Some(CgroupValue::Num(7)));
        assert_eq!(get("psi_io_some_total_us"), Some(CgroupValue::Num(9)));
        assert_eq!(get("psi_io_full_total_us"), None);
        assert_eq!(get("swap_current_bytes"), None);
    }
}
