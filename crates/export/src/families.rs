//! One definition of each metric family tasksnap writes: its name, unit and type. `serve`
//! ([`crate::encode`]) and `tasksnap dump --format openmetrics` (the CLI's dump, from a
//! recording) take their families from here, so a family has one name and type whichever
//! writes it: the per-task families ([`TASK_CPU`], ...) are a process's in both
//! (`tasksnap_process_cpu_seconds`) and a thread's in dump's `--what threads`. The cgroup
//! families are one per field of the model's cgroup table ([`cgroup_field`]), so serve's
//! `tasksnap_cgroup_*` and a dump of the cgroups name each field alike.
//!
//! A family's HELP text is its writer's, as what it writes differs: serve's sums a group's
//! processes since the exporter started (next to its rows in [`crate::encode`]), dump's is
//! its column's help (from the model's field table).
//!
//! Names are the OpenMetrics names: the scope's prefix, the stem, the unit's suffix
//! ([`Family::name`]); a counter's samples add `_total`. Metric names and their meaning are
//! documented in docs/serve.md and docs/record.md.

use std::borrow::Cow;

use tasksnap_model::{CgroupField, CgroupKind, CgroupUnit};

/// What a family's series are of: its name's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The host as serve sees it, and the exporter itself (`tasksnap_`).
    Host,
    /// A group of processes (`tasksnap_group_`).
    Group,
    /// One process (`tasksnap_process_`).
    Process,
    /// One thread (`tasksnap_thread_`).
    Thread,
    /// The machine-wide figures of a recording (`tasksnap_system_`).
    System,
    /// One cgroup (`tasksnap_cgroup_`).
    Cgroup,
}

impl Scope {
    /// The prefix of the names of this scope's families.
    pub fn prefix(self) -> &'static str {
        match self {
            Scope::Host => "tasksnap_",
            Scope::Group => "tasksnap_group_",
            Scope::Process => "tasksnap_process_",
            Scope::Thread => "tasksnap_thread_",
            Scope::System => "tasksnap_system_",
            Scope::Cgroup => "tasksnap_cgroup_",
        }
    }
}

/// A family's OpenMetrics type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Only grows (samples named with `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Labels with a constant value of 1 (samples named with `_info`).
    Info,
}

/// A family's unit, the last part of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds (`_seconds`).
    Seconds,
    /// Bytes (`_bytes`).
    Bytes,
}

impl Unit {
    /// The unit as a name's suffix and OpenMetrics' `# UNIT`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Bytes => "bytes",
        }
    }
}

/// One metric family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// Whose series.
    pub scope: Scope,
    /// The name between the scope's prefix and the unit.
    pub stem: Cow<'static, str>,
    /// Its unit, when it has one.
    pub unit: Option<Unit>,
    /// Its type.
    pub kind: Type,
}

impl Family {
    const fn new(scope: Scope, stem: &'static str, unit: Option<Unit>, kind: Type) -> Family {
        Family {
            scope,
            stem: Cow::Borrowed(stem),
            unit,
            kind,
        }
    }

    /// A family of the recording's machine-wide figures named at run time (one per vmstat
    /// counter, per pressure resource).
    pub fn system(stem: String, unit: Option<Unit>, kind: Type) -> Family {
        Family {
            scope: Scope::System,
            stem: Cow::Owned(stem),
            unit,
            kind,
        }
    }

    /// The same family for another scope (a per-task family for threads).
    pub fn of(&self, scope: Scope) -> Family {
        Family {
            scope,
            ..self.clone()
        }
    }

    /// Its name without the unit (what `prometheus-client`, which appends the unit, is
    /// given).
    pub fn base_name(&self) -> String {
        format!("{}{}", self.scope.prefix(), self.stem)
    }

    /// Its name, unit included: `# TYPE`'s, and the samples' (before `_total`).
    pub fn name(&self) -> String {
        match self.unit {
            Some(u) => format!("{}_{}", self.base_name(), u.name()),
            None => self.base_name(),
        }
    }

    /// The name of its samples, as a query names them: a counter's with `_total`, an info's
    /// with `_info`, a gauge's as the family.
    pub fn sample_name(&self) -> String {
        match self.kind {
            Type::Counter => format!("{}_total", self.name()),
            Type::Info => format!("{}_info", self.name()),
            Type::Gauge => self.name(),
        }
    }
}

use Scope::{Group, Host, Process, System};
use Type::{Counter, Gauge, Info};
use Unit::{Bytes, Seconds};

/// A group's CPU time, by mode.
pub const GROUP_CPU: Family = Family::new(Group, "cpu", Some(Seconds), Counter);
/// A group's thread time by scheduler state.
pub const GROUP_STATE: Family = Family::new(Group, "state", Some(Seconds), Counter);
/// A group's D-state time by wait reason.
pub const GROUP_DISK_WAIT: Family = Family::new(Group, "disk_wait", Some(Seconds), Counter);
/// A group's processes.
pub const GROUP_PROCESSES: Family = Family::new(Group, "processes", None, Gauge);
/// A group's threads.
pub const GROUP_THREADS: Family = Family::new(Group, "threads", None, Gauge);
/// A group's threads by their state now.
pub const GROUP_THREADS_IN_STATE: Family = Family::new(Group, "threads_in_state", None, Gauge);
/// A group's memory, by kind.
pub const GROUP_MEMORY: Family = Family::new(Group, "memory", Some(Bytes), Gauge);
/// A group's storage I/O, by direction.
pub const GROUP_IO: Family = Family::new(Group, "io", Some(Bytes), Counter);
/// A group's page faults, by kind.
pub const GROUP_PAGE_FAULTS: Family = Family::new(Group, "page_faults", None, Counter);
/// A group's context switches, by kind.
pub const GROUP_CONTEXT_SWITCHES: Family = Family::new(Group, "context_switches", None, Counter);
/// A group's exited processes, by reason.
pub const GROUP_EXITS: Family = Family::new(Group, "exits", None, Counter);
/// When a group's oldest process started.
pub const GROUP_OLDEST_START_TIME: Family =
    Family::new(Group, "oldest_start_time", Some(Seconds), Gauge);

/// A task's CPU time since it started (serve: by mode; dump: user + system).
pub const TASK_CPU: Family = Family::new(Process, "cpu", Some(Seconds), Counter);
/// A process's CPU time in serve's last collection interval.
pub const TASK_INTERVAL_CPU: Family = Family::new(Process, "interval_cpu", Some(Seconds), Gauge);
/// A task's resident memory.
pub const TASK_RESIDENT_MEMORY: Family =
    Family::new(Process, "resident_memory", Some(Bytes), Gauge);
/// A task's virtual memory.
pub const TASK_VIRTUAL_MEMORY: Family = Family::new(Process, "virtual_memory", Some(Bytes), Gauge);
/// A process's threads.
pub const TASK_THREADS: Family = Family::new(Process, "threads", None, Gauge);
/// When a task started, Unix time.
pub const TASK_START_TIME: Family = Family::new(Process, "start_time", Some(Seconds), Gauge);
/// A task's nice value.
pub const TASK_NICE: Family = Family::new(Process, "nice", None, Gauge);
/// A task's minor page faults.
pub const TASK_MINOR_FAULTS: Family = Family::new(Process, "minor_faults", None, Counter);
/// A task's major page faults.
pub const TASK_MAJOR_FAULTS: Family = Family::new(Process, "major_faults", None, Counter);
/// Bytes a task read from storage.
pub const TASK_STORAGE_READ: Family = Family::new(Process, "storage_read", Some(Bytes), Counter);
/// Bytes a task wrote to storage.
pub const TASK_STORAGE_WRITTEN: Family =
    Family::new(Process, "storage_written", Some(Bytes), Counter);
/// A task's time on a CPU (schedstat).
pub const TASK_ON_CPU: Family = Family::new(Process, "on_cpu", Some(Seconds), Counter);
/// A task's time waiting on a run queue (schedstat).
pub const TASK_RUN_DELAY: Family = Family::new(Process, "run_delay", Some(Seconds), Counter);
/// A thread's time by scheduler state.
pub const TASK_STATE: Family = Family::new(Process, "state", Some(Seconds), Counter);

/// Processes on the host.
pub const PROCESSES: Family = Family::new(Host, "processes", None, Gauge);
/// Threads on the host.
pub const THREADS: Family = Family::new(Host, "threads", None, Gauge);
/// Processes and threads created since boot.
pub const FORKS: Family = Family::new(Host, "forks", None, Counter);
/// Exit records the kernel dropped since the exporter started.
pub const EXITS_DROPPED: Family = Family::new(Host, "exits_dropped", None, Counter);
/// Every thread's time by scheduler state.
pub const STATE: Family = Family::new(Host, "state", Some(Seconds), Counter);
/// Threads by their state now.
pub const THREADS_IN_STATE: Family = Family::new(Host, "threads_in_state", None, Gauge);

/// The wall time of serve's last collection.
pub const COLLECT: Family = Family::new(Host, "collect", Some(Seconds), Gauge);
/// The CPU time serve's collections took.
pub const COLLECT_CPU: Family = Family::new(Host, "collect_cpu", Some(Seconds), Counter);
/// serve's collections.
pub const COLLECTIONS: Family = Family::new(Host, "collections", None, Counter);
/// serve's failed collections.
pub const COLLECTION_ERRORS: Family = Family::new(Host, "collection_errors", None, Counter);
/// Connections serve closed at its connection cap.
pub const CONNECTIONS_EVICTED: Family = Family::new(Host, "connections_evicted", None, Counter);
/// When serve's figures were collected.
pub const LAST_COLLECTION_TIMESTAMP: Family =
    Family::new(Host, "last_collection_timestamp", Some(Seconds), Gauge);
/// Groups folded into `other`.
pub const GROUPS_FOLDED: Family = Family::new(Host, "groups_folded", None, Gauge);
/// Cgroups folded into `cgroup="other"`.
pub const CGROUPS_FOLDED: Family = Family::new(Host, "cgroups_folded", None, Gauge);
/// What reads tasks, thread states and exits.
pub const SOURCE: Family = Family::new(Host, "source", None, Info);
/// The exporter's version.
pub const BUILD: Family = Family::new(Host, "build", None, Info);

/// Every family `tasksnap serve` writes (the per-process ones with `--top-n`, the cgroup ones
/// unless `--cgroup-depth 0`): what the Grafana dashboard and the Prometheus rules shipped in
/// packaging/ may name (crates/cli/tests/serve_dashboard.rs holds them to it, and a live
/// exposition to this list).
pub fn served() -> Vec<Family> {
    let mut all = vec![
        GROUP_CPU,
        GROUP_STATE,
        GROUP_DISK_WAIT,
        GROUP_PROCESSES,
        GROUP_THREADS,
        GROUP_THREADS_IN_STATE,
        GROUP_MEMORY,
        GROUP_IO,
        GROUP_PAGE_FAULTS,
        GROUP_CONTEXT_SWITCHES,
        GROUP_EXITS,
        GROUP_OLDEST_START_TIME,
        TASK_CPU,
        TASK_INTERVAL_CPU,
        TASK_RESIDENT_MEMORY,
        TASK_THREADS,
        PROCESSES,
        THREADS,
        FORKS,
        EXITS_DROPPED,
        STATE,
        THREADS_IN_STATE,
        COLLECT,
        COLLECT_CPU,
        COLLECTIONS,
        COLLECTION_ERRORS,
        CONNECTIONS_EVICTED,
        LAST_COLLECTION_TIMESTAMP,
        GROUPS_FOLDED,
        CGROUPS_FOLDED,
        SOURCE,
        BUILD,
    ];
    all.extend(tasksnap_model::CGROUP_FIELDS.iter().map(cgroup_field));
    all
}

/// /proc/stat CPU time by mode, clock ticks.
pub const SYSTEM_CPU_TICKS: Family = Family::new(System, "cpu_ticks", None, Counter);
/// CPUs of /proc/stat.
pub const SYSTEM_CPUS: Family = Family::new(System, "cpus", None, Gauge);
/// Threads on the system (/proc/loadavg).
pub const SYSTEM_TASKS: Family = Family::new(System, "tasks", None, Gauge);
/// Processes that exited since the previous reading.
pub const SYSTEM_EXITS: Family = Family::new(System, "exits", None, Gauge);
/// Exit records dropped since the previous reading.
pub const SYSTEM_EXITS_DROPPED: Family = Family::new(System, "exits_dropped", None, Gauge);

/// A machine-wide figure named after its column (`context_switches`, `mem_total_bytes`,
/// `load1`, `vmstat_pgfault`, ...): the column's name is the family's.
pub fn system_figure(column: &str, kind: Type) -> Family {
    Family::system(column.to_string(), None, kind)
}

/// The family of a cgroup field of the model's table ([`tasksnap_model::CGROUP_FIELDS`]), in
/// base units: the field's name less its unit (`_ns` and `_us` become seconds, `_bytes` stays
/// bytes) and, for a counter, less a `_total` its samples add back (`cpu_throttled_ns`:
/// `tasksnap_cgroup_cpu_throttled_seconds`, samples `..._total`; `psi_io_some_total_us`:
/// `tasksnap_cgroup_psi_io_some_seconds`); a limit is a gauge.
pub fn cgroup_field(f: &CgroupField) -> Family {
    let (suffix, unit) = match f.unit {
        CgroupUnit::Ns => ("_ns", Some(Seconds)),
        CgroupUnit::Us => ("_us", Some(Seconds)),
        CgroupUnit::Bytes => ("_bytes", Some(Bytes)),
        CgroupUnit::Count => ("", None),
    };
    let kind = match f.kind {
        CgroupKind::Counter => Counter,
        CgroupKind::Gauge | CgroupKind::Limit => Gauge,
    };
    let stem = f.name.strip_suffix(suffix).unwrap_or(f.name);
    let stem = match kind {
        Counter => stem.strip_suffix("_total").unwrap_or(stem),
        _ => stem,
    };
    Family {
        scope: Scope::Cgroup,
        stem: Cow::Borrowed(stem),
        unit,
        kind,
    }
}

/// The 10-second pressure stall average of `resource`, percent.
pub fn pressure_avg10(resource: &str) -> Family {
    Family::system(format!("pressure_{resource}_avg10"), None, Gauge)
}

/// The pressure stall time of `resource` since boot.
pub fn pressure_stalled(resource: &str) -> Family {
    Family::system(
        format!("pressure_{resource}_stalled"),
        Some(Seconds),
        Counter,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefix_stem_and_unit() {
        assert_eq!(TASK_CPU.name(), "tasksnap_process_cpu_seconds");
        assert_eq!(TASK_CPU.base_name(), "tasksnap_process_cpu");
        assert_eq!(
            TASK_STATE.of(Scope::Thread).name(),
            "tasksnap_thread_state_seconds"
        );
        assert_eq!(GROUP_MEMORY.name(), "tasksnap_group_memory_bytes");
        assert_eq!(FORKS.name(), "tasksnap_forks");
        assert_eq!(
            pressure_stalled("io").name(),
            "tasksnap_system_pressure_io_stalled_seconds"
        );
        assert_eq!(
            system_figure("mem_total_bytes", Gauge).name(),
            "tasksnap_system_mem_total_bytes"
        );
    }

    #[test]
    fn cgroup_fields_are_in_base_units() {
        let family = |name: &str| {
            let f = tasksnap_model::cgroup_field(name).expect(name);
            let fam = cgroup_field(f);
            (fam.name(), fam.kind)
        };
        let want = [
            ("cpu_usage_ns", "tasksnap_cgroup_cpu_usage_seconds", Counter),
            (
                "cpu_throttled_ns",
                "tasksnap_cgroup_cpu_throttled_seconds",
                Counter,
            ),
            ("cpu_quota_us", "tasksnap_cgroup_cpu_quota_seconds", Gauge),
            ("cpu_periods", "tasksnap_cgroup_cpu_periods", Counter),
            (
                "memory_current_bytes",
                "tasksnap_cgroup_memory_current_bytes",
                Gauge,
            ),
            (
                "memory_limit_bytes",
                "tasksnap_cgroup_memory_limit_bytes",
                Gauge,
            ),
            ("io_read_bytes", "tasksnap_cgroup_io_read_bytes", Counter),
            ("oom_kills", "tasksnap_cgroup_oom_kills", Counter),
            ("pids_current", "tasksnap_cgroup_pids_current", Gauge),
            (
                "psi_io_some_total_us",
                "tasksnap_cgroup_psi_io_some_seconds",
                Counter,
            ),
        ];
        for (field, name, kind) in want {
            assert_eq!(family(field), (name.to_string(), kind), "{field}");
        }
        // Every field has a family of its own.
        let names: std::collections::HashSet<String> = tasksnap_model::CGROUP_FIELDS
            .iter()
            .map(|f| cgroup_field(f).name())
            .collect();
        assert_eq!(names.len(), tasksnap_model::CGROUP_FIELDS.len());
    }
}
