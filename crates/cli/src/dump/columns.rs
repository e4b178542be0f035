//! The dump's column catalogue: which columns `processes`, `threads`, `system` and `cgroups`
//! have (name,
//! type, meaning, and the OpenMetrics family each numeric one becomes) and what each is
//! computed from ([`Source`]); the rows are [`super::rows`]'.
//!
//! A task column that is a field of the model's table (`tasksnap_model::fields`) takes its
//! name, help and type from there, and the catalogue says only where the dump differs (a
//! title, a shorter help, its family): the field table is the one definition. Every other
//! field of the table is a column too, chosen by name (`--fields`, [`more_columns`]), but
//! for those of the groups a recording does not keep (`tasksnap_history::recorded_groups`),
//! which would only ever be null. The columns that are the dump's own (the user's name, the
//! command line joined, CPU seconds, times as instants, the state seconds of `threads`, an
//! exited process's figures) say which fields of the table they show another way
//! ([`Source::shows`]).
//!
//! The `cgroups` table's counters are the model's cgroup field table
//! (`tasksnap_model::CGROUP_FIELDS`), one column per field under its name (its unit at the
//! end), UINT64; a limit field has a `<name>_unlimited` flag beside it, since its number is
//! null both when it was not read and when the kernel says there is none.
//!
//! Every table ends with `host`, `host_bytes` and `boot_id`: the machine and boot the
//! reading was taken on (the recording's `HostIdentity`), the same on every row of a reading,
//! null for a recording from before tasksnap kept them.

use tasksnap_export::families::{self, Family, Scope, Type};
use tasksnap_model::states::{State, NSTATES};
use tasksnap_model::{fields, CgroupKind, CgroupUnit, CGROUP_FIELDS};

use super::options::What;

/// A column's type, as every format stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A UTC instant (Parquet `TIMESTAMP(MICROS, UTC)`, text RFC 3339).
    Time,
    /// A signed 64-bit integer.
    Int,
    /// An unsigned 64-bit integer (Parquet `UINT64`).
    UInt,
    /// A 64-bit float.
    Float,
    /// UTF-8 text (invalid bytes of the source replaced by U+FFFD).
    Text,
    /// Exact bytes (Parquet `BYTE_ARRAY` without a string annotation, text lower-case hex).
    Bytes,
    /// A boolean.
    Bool,
}

/// How a numeric column becomes OpenMetrics samples.
#[derive(Debug, Clone)]
pub struct Metric {
    /// Its family (`tasksnap_export::families`).
    pub family: Family,
    /// A label that tells this column apart from the others of its family (e.g. `state`).
    pub label: Option<(&'static str, &'static str)>,
    /// The family's HELP text when several columns share it (else the column's help).
    pub family_help: Option<&'static str>,
    /// Multiplier from the column's unit to the family's (1e-9 for ns to seconds).
    pub scale: f64,
    /// The column holds per-interval amounts: the samples are their running sum since the
    /// start of the dump (a counter).
    pub accumulate: bool,
}

/// What a column holds, computed per row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Source {
    /// A task field of the model's table, its value as it is.
    Model(&'static fields::Field),
    /// A bytes field of the model's table as text (invalid UTF-8 replaced).
    ModelText(&'static fields::Field),
    /// The exact bytes of a [`Source::ModelText`] when they are not valid UTF-8.
    ModelBytes(&'static fields::Field),
    Time,
    Pid,
    Tid,
    User,
    UserBytes,
    Comm,
    CommBytes,
    Args,
    ArgsBytes,
    CpuSeconds,
    StartTime,
    Cgroup,
    CgroupBytes,
    Exited,
    AliveS,
    StateS(State),
    TopReason,
    TopReasonState,
    TopReasonS,
    CpuTicks(usize),
    Ncpus,
    Counter(usize),
    Memory(usize),
    Load(usize),
    Tasks,
    Vmstat(&'static str),
    /// (resource, `some` = false / `full` = true, avg10 = false / total = true)
    Pressure(usize, bool, bool),
    ExitTime,
    ExitCode,
    ExitSignal,
    ExitPeakRss,
    /// (`false`: exits stored, `true`: exit records dropped) in the reading.
    Exits(bool),
    Host,
    HostBytes,
    BootId,
    /// A cgroup's path as text (invalid UTF-8 replaced), and its exact bytes.
    CgroupPath,
    CgroupPathBytes,
    /// `v2` or `v1`.
    CgroupHierarchy,
    /// The v1 controllers, comma-separated.
    CgroupControllers,
    /// The field of [`CGROUP_FIELDS`] at this index: its number.
    CgroupField(usize),
    /// Whether the (limit) field of [`CGROUP_FIELDS`] at this index is none.
    CgroupUnlimited(usize),
}

impl Source {
    /// Whether this column shows the model's field `f`, as it is or another way (`args` the
    /// command line, `cpu_seconds` `cpu_ns`, `pid` a process's tid too, ...): `--fields` does
    /// not offer `f` again, and an exited process's row has the column when its exit record
    /// holds what it shows.
    pub(super) fn shows(self, f: &fields::Field) -> bool {
        use tasksnap_model::fields::{
            CGROUP_V2_PATH, CMDLINE, COMM, CPU_NS, EUID, PID, START_TIME_NS, TID,
        };
        match self {
            Source::Model(m) | Source::ModelText(m) | Source::ModelBytes(m) => m == f,
            // A process's tid is its pid.
            Source::Pid => *f == PID || *f == TID,
            Source::Tid => *f == TID,
            Source::User | Source::UserBytes => *f == EUID,
            Source::Comm | Source::CommBytes => *f == COMM,
            Source::Args | Source::ArgsBytes => *f == CMDLINE,
            Source::CpuSeconds => *f == CPU_NS,
            Source::StartTime => *f == START_TIME_NS,
            Source::Cgroup | Source::CgroupBytes => *f == CGROUP_V2_PATH,
            _ => false,
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone)]
pub struct Column {
    /// Its name in every format.
    pub name: String,
    /// Its type.
    pub kind: Kind,
    /// What it holds.
    pub help: String,
    /// Its OpenMetrics family, for numeric columns that make sense as series.
    pub metric: Option<Metric>,
    /// Whether OpenMetrics uses it as a label identifying the series.
    pub label: bool,
    pub(super) source: Source,
}

/// The `_bytes` sibling of the text column `of`.
///
/// Names are the bytes they are: a text column whose source is the task's own bytes
/// (`comm`, `args`, `user`, `cgroup`) is valid UTF-8 (invalid sequences replaced by
/// U+FFFD), and its sibling `<name>_bytes` ([`Kind::Bytes`]) holds the exact bytes the
/// text was decoded from when they were not valid UTF-8, null otherwise.
fn bytes_col(of: &str, source: Source) -> Column {
    col(
        &format!("{of}_bytes"),
        Kind::Bytes,
        &format!(
            "the exact bytes of {of} when they are not valid UTF-8 (hex in CSV and JSON, \
             binary in Parquet); null otherwise"
        ),
        source,
    )
}

/// The name of the `_bytes` sibling of a text column that has one (see [`bytes_col`]), or of
/// the `_unlimited` flag of a cgroup limit: choosing the column brings the sibling along, so
/// no choice of columns loses bytes or says a limit is unknown when it is none.
pub fn sibling(c: &Column) -> Option<String> {
    if let Source::CgroupField(i) = c.source {
        return CGROUP_FIELDS
            .get(i)
            .filter(|f| f.kind == CgroupKind::Limit)
            .map(|f| format!("{}_unlimited", f.name));
    }
    matches!(
        c.source,
        Source::User
            | Source::Comm
            | Source::Args
            | Source::Cgroup
            | Source::Host
            | Source::CgroupPath
            | Source::ModelText(_)
    )
    .then(|| format!("{}_bytes", c.name))
}

fn col(name: &str, kind: Kind, help: &str, source: Source) -> Column {
    Column {
        name: name.to_string(),
        kind,
        help: help.to_string(),
        metric: None,
        label: false,
        source,
    }
}

/// The column of the model's field `f`: its name, help and type (a bytes field as text).
fn model(f: &'static fields::Field) -> Column {
    let kind = match f.kind {
        fields::Kind::Int => Kind::Int,
        fields::Kind::Bytes => Kind::Text,
    };
    col(f.name, kind, f.help, Source::Model(f))
}

/// A column of the model's field `f` (its name, help and type) computed by the dump:
/// `source` [`Source::shows`] `f`.
fn shown_as(f: &'static fields::Field, source: Source) -> Column {
    Column { source, ..model(f) }
}

impl Column {
    /// The column under another name than its field's.
    fn titled(mut self, name: &str) -> Column {
        self.name = name.to_string();
        self
    }

    /// The column with another help than its field's.
    fn helped(mut self, help: &str) -> Column {
        self.help = help.to_string();
        self
    }

    fn metric(mut self, family: Family, scale: f64) -> Column {
        self.metric = Some(Metric {
            family,
            label: None,
            family_help: None,
            scale,
            accumulate: false,
        });
        self
    }

    fn labelled(mut self, label: (&'static str, &'static str), help: &'static str) -> Column {
        if let Some(m) = &mut self.metric {
            m.label = Some(label);
            m.family_help = Some(help);
        }
        self
    }

    fn accumulated(mut self) -> Column {
        if let Some(m) = &mut self.metric {
            m.accumulate = true;
        }
        self
    }

    fn label(mut self) -> Column {
        self.label = true;
        self
    }
}

/// The state columns' names, in [`State::SHOWN`] order.
const STATE_COLUMNS: [&str; NSTATES] = [
    "running_s",
    "runnable_s",
    "throttled_s",
    "sleeping_s",
    "disk_s",
    "stopped_s",
    "other_s",
];

/// The name of the `threads` column of the seconds in state `s`.
pub fn state_column(s: State) -> &'static str {
    let i = State::SHOWN.iter().position(|&x| x == s).unwrap_or(0);
    STATE_COLUMNS[i]
}

/// The /proc/vmstat counters the system table keeps, and whether each is a gauge (`nr_*`:
/// pages now) rather than an event counter.
const VMSTAT: [(&str, bool); 14] = [
    ("pgfault", false),
    ("pgmajfault", false),
    ("pgpgin", false),
    ("pgpgout", false),
    ("pswpin", false),
    ("pswpout", false),
    ("pgscan_kswapd", false),
    ("pgscan_direct", false),
    ("pgsteal_kswapd", false),
    ("pgsteal_direct", false),
    ("oom_kill", false),
    ("thp_fault_alloc", false),
    ("nr_dirty", true),
    ("nr_writeback", true),
];

/// The resources of /proc/pressure the system table keeps.
pub(super) const PRESSURE: [&str; 3] = ["cpu", "memory", "io"];

const CPU_MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// Every column of `what`, in their default order.
pub fn columns(what: What) -> Vec<Column> {
    let mut v = match what {
        What::Processes => task_columns(false),
        What::Threads => task_columns(true),
        What::System => system_columns(),
        What::Cgroups => cgroup_columns(),
    };
    v.extend(identity_columns());
    v
}

/// The columns every table ends with: which machine and boot the reading was taken on, so
/// that dumps of several hosts (or of both sides of a reboot) can be read together. Null
/// for a recording from before tasksnap kept them. In OpenMetrics both are labels: series of
/// two hosts (or two boots, where pids start over) stay apart, and there is one value per
/// recording segment at most, so they add no cardinality within a host's boot.
fn identity_columns() -> [Column; 3] {
    [
        col(
            "host",
            Kind::Text,
            "host name of the machine the reading was taken on (the kernel's nodename); null \
             when the recording did not keep it",
            Source::Host,
        )
        .label(),
        bytes_col("host", Source::HostBytes),
        col(
            "boot_id",
            Kind::Text,
            "the kernel's boot id (/proc/sys/kernel/random/boot_id) when the reading was \
             taken: another value is another boot; null when the recording did not keep it",
            Source::BootId,
        )
        .label(),
    ]
}

/// The default columns of `processes` (`threads`: true for `threads`): the identity, the
/// common columns, then an exited process's (`processes`) or the interval's state time
/// (`threads`).
fn task_columns(threads: bool) -> Vec<Column> {
    let mut v = vec![
        col(
            "time",
            Kind::Time,
            "when the reading was taken (UTC)",
            Source::Time,
        ),
        shown_as(&fields::PID, Source::Pid).label(),
    ];
    if threads {
        v.push(shown_as(&fields::TID, Source::Tid).label());
    }
    let scope = if threads {
        Scope::Thread
    } else {
        Scope::Process
    };
    v.extend(common_task_columns(scope));
    if threads {
        v.extend(thread_state_columns());
    } else {
        v.extend(exit_columns());
    }
    v
}

/// The columns of both task tables, a task's families in `scope`. A row per column: a field
/// of the model's table with what the dump says differently, or a column of the dump's own.
fn common_task_columns(scope: Scope) -> Vec<Column> {
    use families::*;
    use Kind::{Float, Text, Time};
    let fam = |f: Family| f.of(scope);
    let user = col(
        "user",
        Text,
        "effective user name (the uid in digits when the system has no name for it)",
        Source::User,
    );
    vec![
        model(&fields::PPID),
        model(&fields::EUID).titled("uid"),
        // A process's series are told apart by its user too; a thread's tid is enough.
        if scope == Scope::Thread {
            user
        } else {
            user.label()
        },
        bytes_col("user", Source::UserBytes),
        col("comm", Text, "command name", Source::Comm).label(),
        bytes_col("comm", Source::CommBytes),
        col(
            "args",
            Text,
            "command line, arguments joined by spaces; empty for kernel threads",
            Source::Args,
        ),
        bytes_col("args", Source::ArgsBytes),
        model(&fields::STATE),
        col(
            "cpu_seconds",
            Float,
            "user + system CPU time since the task started, seconds",
            Source::CpuSeconds,
        )
        .metric(fam(TASK_CPU), 1.0),
        model(&fields::RSS_BYTES)
            .helped("resident set size, bytes")
            .metric(fam(TASK_RESIDENT_MEMORY), 1.0),
        model(&fields::VSIZE_BYTES)
            .helped("virtual memory size, bytes")
            .metric(fam(TASK_VIRTUAL_MEMORY), 1.0),
        model(&fields::NUM_THREADS)
            .titled("threads")
            .metric(fam(TASK_THREADS), 1.0),
        col(
            "start_time",
            Time,
            "when the task started (UTC)",
            Source::StartTime,
        )
        .metric(fam(TASK_START_TIME), 1e-9),
        model(&fields::NICE)
            .helped("nice value")
            .metric(fam(TASK_NICE), 1.0),
        model(&fields::PRIORITY),
        model(&fields::MINFLT).metric(fam(TASK_MINOR_FAULTS), 1.0),
        model(&fields::MAJFLT).metric(fam(TASK_MAJOR_FAULTS), 1.0),
        model(&fields::READ_BYTES).metric(fam(TASK_STORAGE_READ), 1.0),
        model(&fields::WRITE_BYTES).metric(fam(TASK_STORAGE_WRITTEN), 1.0),
        col(
            "cgroup",
            Text,
            "cgroup v2 path (else the /proc/PID/cgroup lines joined by ';')",
            Source::Cgroup,
        ),
        bytes_col("cgroup", Source::CgroupBytes),
        model(&fields::ON_CPU_NS).metric(fam(TASK_ON_CPU), 1e-9),
        model(&fields::RUN_DELAY_NS).metric(fam(TASK_RUN_DELAY), 1e-9),
    ]
}

/// The columns only an exited process's row fills (`processes`).
fn exit_columns() -> [Column; 4] {
    [
        col(
            "exit_time",
            Kind::Time,
            "when the process exited (UTC), in the first reading after its exit; null \
             while alive",
            Source::ExitTime,
        ),
        col(
            "exit_code",
            Kind::Int,
            "the code it exited with (0-255); null while alive and when a signal ended it",
            Source::ExitCode,
        ),
        col(
            "exit_signal",
            Kind::Int,
            "the signal that ended it; null while alive and when it exited with a code",
            Source::ExitSignal,
        ),
        col(
            "peak_rss_bytes",
            Kind::Int,
            "the most resident memory the process ever had (getrusage's ru_maxrss), bytes; \
             on its exit row only, null while alive",
            Source::ExitPeakRss,
        ),
    ]
}

/// The interval's state time of a thread (`threads`).
fn thread_state_columns() -> Vec<Column> {
    use Kind::{Bool, Float, Text};
    let mut v = vec![
        col(
            "exited",
            Bool,
            "the thread exited during the interval ending at this reading",
            Source::Exited,
        ),
        col(
            "alive_s",
            Float,
            "seconds the thread was alive in the interval since the previous reading",
            Source::AliveS,
        ),
    ];
    let family = families::TASK_STATE.of(Scope::Thread);
    for (s, name) in State::SHOWN.into_iter().zip(STATE_COLUMNS) {
        v.push(
            col(
                name,
                Float,
                &format!(
                    "seconds {} in the interval since the previous reading",
                    s.name()
                ),
                Source::StateS(s),
            )
            .metric(family.clone(), 1.0)
            .labelled(
                ("state", s.name()),
                "seconds in each state since the start of the dump (states' intervals summed)",
            )
            .accumulated(),
        );
    }
    v.extend([
        col(
            "top_reason",
            Text,
            "kernel frames of the wait with the most off-CPU time in the interval",
            Source::TopReason,
        ),
        col(
            "top_reason_state",
            Text,
            "the state of that wait",
            Source::TopReasonState,
        ),
        col(
            "top_reason_s",
            Float,
            "seconds of that wait in the interval",
            Source::TopReasonS,
        ),
    ]);
    v
}

/// Whether the model's field `f` is of a group a recording never keeps: a column of it
/// would only ever be null, so the dump has none.
pub(super) fn unrecorded(f: &fields::Field) -> bool {
    !f.group.asked(tasksnap_history::recorded_groups())
}

/// The fields of the model's table (`tasksnap_model::fields`) that `processes` and `threads`
/// do not show by default, by their table names: chosen with `--fields`, listed by
/// `--fields help`. A field added to the table is here without a change to the dump. Those a
/// default column shows already (as it is, or as `start_time`, `args`, `cgroup`,
/// `cpu_seconds`...: [`Source::shows`]) are left out, and so are those of the groups a
/// recording does not keep ([`unrecorded`]).
pub fn more_columns(what: What) -> Vec<Column> {
    if matches!(what, What::System | What::Cgroups) {
        return Vec::new();
    }
    let shown = columns(what);
    let mut v = Vec::new();
    for f in fields::FIELDS {
        if unrecorded(f) || shown.iter().any(|c| c.source.shows(f)) {
            continue;
        }
        match f.kind {
            fields::Kind::Int => v.push(col(f.name, Kind::Int, f.help, Source::Model(f))),
            fields::Kind::Bytes => {
                v.push(col(f.name, Kind::Text, f.help, Source::ModelText(f)));
                v.push(bytes_col(f.name, Source::ModelBytes(f)));
            }
        }
    }
    v
}

/// The `cgroups` table's columns: the cgroup's identity, then every field of the model's
/// cgroup table in its order (a limit with its `_unlimited` flag). No OpenMetrics families:
/// [`super::select`] refuses that format for this table.
fn cgroup_columns() -> Vec<Column> {
    use Kind::{Bool, Text, Time};
    let mut v = vec![
        col(
            "time",
            Time,
            "when the reading was taken (UTC)",
            Source::Time,
        ),
        col(
            "path",
            Text,
            "the cgroup's path below its hierarchy's root (`/` is the root)",
            Source::CgroupPath,
        ),
        bytes_col("path", Source::CgroupPathBytes),
        col(
            "hierarchy",
            Text,
            "v2, or v1 (the v1 hierarchies that have this path, merged)",
            Source::CgroupHierarchy,
        ),
        col(
            "controllers",
            Text,
            "the controllers of the v1 hierarchies merged, comma-separated; null for v2",
            Source::CgroupControllers,
        ),
    ];
    for (i, f) in CGROUP_FIELDS.iter().enumerate() {
        let unit = match f.unit {
            CgroupUnit::Ns => ", ns",
            CgroupUnit::Us => ", microseconds",
            CgroupUnit::Bytes => ", bytes",
            CgroupUnit::Count => "",
        };
        let null = match f.kind {
            CgroupKind::Limit => "null when not read or none",
            CgroupKind::Counter | CgroupKind::Gauge => "null when not read",
        };
        let help = format!("{}{unit}; {null}", f.help);
        v.push(col(f.name, Kind::UInt, &help, Source::CgroupField(i)));
        if f.kind == CgroupKind::Limit {
            v.push(col(
                &format!("{}_unlimited", f.name),
                Bool,
                &format!("{} is none (`max`, -1); null when not read", f.name),
                Source::CgroupUnlimited(i),
            ));
        }
    }
    v
}

/// The `system` table's columns: /proc/stat, meminfo, loadavg, the reading's exits,
/// vmstat and pressure.
fn system_columns() -> Vec<Column> {
    use Kind::{Float, Int, Time};
    use Type::{Counter, Gauge};
    let mut v = vec![col(
        "time",
        Time,
        "when the reading was taken (UTC)",
        Source::Time,
    )];
    for (i, m) in CPU_MODES.into_iter().enumerate() {
        v.push(
            col(
                &format!("cpu_{m}_ticks"),
                Int,
                &format!("/proc/stat cpu {m} time since boot, clock ticks (USER_HZ)"),
                Source::CpuTicks(i),
            )
            .metric(families::SYSTEM_CPU_TICKS, 1.0)
            .labelled(("mode", m), "/proc/stat cpu time since boot, clock ticks"),
        );
    }
    v.push(
        col("ncpus", Int, "cpuN lines in /proc/stat", Source::Ncpus)
            .metric(families::SYSTEM_CPUS, 1.0),
    );
    let counters = [
        ("context_switches", "context switches since boot", Counter),
        ("forks", "forks since boot", Counter),
        ("procs_running", "tasks runnable", Gauge),
        ("procs_blocked", "tasks blocked on I/O", Gauge),
        ("interrupts", "interrupts since boot", Counter),
        ("softirqs", "soft interrupts since boot", Counter),
    ];
    for (i, (name, help, t)) in counters.into_iter().enumerate() {
        let family = families::system_figure(name, t);
        v.push(col(name, Int, help, Source::Counter(i)).metric(family, 1.0));
    }
    let memory = [
        ("mem_total_bytes", "MemTotal"),
        ("mem_free_bytes", "MemFree"),
        ("mem_available_bytes", "MemAvailable"),
        ("buff_cache_bytes", "Buffers + Cached + SReclaimable"),
        ("swap_total_bytes", "SwapTotal"),
        ("swap_free_bytes", "SwapFree"),
    ];
    for (i, (name, help)) in memory.into_iter().enumerate() {
        let family = families::system_figure(name, Gauge);
        v.push(col(name, Int, &format!("{help}, bytes"), Source::Memory(i)).metric(family, 1.0));
    }
    for (i, name) in ["load1", "load5", "load15"].into_iter().enumerate() {
        let family = families::system_figure(name, Gauge);
        v.push(col(name, Float, "load average", Source::Load(i)).metric(family, 1.0));
    }
    v.extend(exit_count_columns());
    v.extend(vmstat_and_pressure_columns());
    v
}

/// The system table's `tasks` and its counts of the reading's exits.
fn exit_count_columns() -> [Column; 3] {
    [
        col(
            "tasks",
            Kind::Int,
            "threads on the system (/proc/loadavg)",
            Source::Tasks,
        )
        .metric(families::SYSTEM_TASKS, 1.0),
        col(
            "exits",
            Kind::Int,
            "processes that exited since the previous reading (each has a row in --what \
             processes); null when the recorder had no exit source",
            Source::Exits(false),
        )
        .metric(families::SYSTEM_EXITS, 1.0),
        col(
            "exits_dropped",
            Kind::Int,
            "exit records the kernel dropped since the previous reading (its buffer was \
             full): processes that exited and have no row; null when there was no exit source",
            Source::Exits(true),
        )
        .metric(families::SYSTEM_EXITS_DROPPED, 1.0),
    ]
}

/// The system table's /proc/vmstat and /proc/pressure columns.
fn vmstat_and_pressure_columns() -> Vec<Column> {
    use Kind::{Float, Int};
    let mut v = Vec::new();
    for (name, gauge) in VMSTAT {
        let column = format!("vmstat_{name}");
        let t = if gauge { Type::Gauge } else { Type::Counter };
        let family = families::system_figure(&column, t);
        v.push(
            col(
                &column,
                Int,
                &format!("/proc/vmstat {name}"),
                Source::Vmstat(name),
            )
            .metric(family, 1.0),
        );
    }
    for (r, res) in PRESSURE.into_iter().enumerate() {
        for (full, kind) in [(false, "some"), (true, "full")] {
            v.push(
                col(
                    &format!("pressure_{res}_{kind}_avg10"),
                    Float,
                    &format!("/proc/pressure/{res} {kind} avg10, percent"),
                    Source::Pressure(r, full, false),
                )
                .metric(families::pressure_avg10(res), 1.0)
                .labelled(("kind", kind), "pressure stall over the last 10 s, percent"),
            );
            v.push(
                col(
                    &format!("pressure_{res}_{kind}_total_us"),
                    Int,
                    &format!("/proc/pressure/{res} {kind} total, microseconds"),
                    Source::Pressure(r, full, true),
                )
                .metric(families::pressure_stalled(res), 1e-6)
                .labelled(("kind", kind), "pressure stall time since boot, seconds"),
            );
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::dump::columns::*;

    #[test]
    fn names_are_unique_and_required_ones_are_there() {
        for what in [What::Processes, What::Threads, What::System, What::Cgroups] {
            let cols = columns(what);
            let mut names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{what:?}");
        }
        let procs: Vec<String> = columns(What::Processes)
            .into_iter()
            .map(|c| c.name)
            .collect();
        for n in [
            "time",
            "pid",
            "ppid",
            "uid",
            "user",
            "comm",
            "args",
            "state",
            "cpu_seconds",
            "rss_bytes",
            "vsize_bytes",
            "threads",
        ] {
            assert!(procs.iter().any(|p| p == n), "{n}");
        }
        let threads: Vec<String> = columns(What::Threads).into_iter().map(|c| c.name).collect();
        for n in STATE_COLUMNS.into_iter().chain(["tid", "top_reason"]) {
            assert!(threads.iter().any(|p| p == n), "{n}");
        }
    }

    /// Every field of the model's table is a column of both task tables (shown by a default
    /// column, as it is or another way, or chosen by its name), unless a recording never
    /// keeps its group: the exceptions are the unrecorded groups, and nothing else.
    #[test]
    fn every_field_of_the_model_is_a_column_but_the_unrecorded() {
        for what in [What::Processes, What::Threads] {
            let mut all = columns(what);
            all.extend(more_columns(what));
            for f in fields::FIELDS {
                let shown = all.iter().any(|c| c.source.shows(f));
                assert_eq!(
                    shown,
                    !unrecorded(f),
                    "{} in --what {}: a field of a recorded group is a column, and only \
                     those",
                    f.name,
                    what.name()
                );
            }
        }
    }
}
