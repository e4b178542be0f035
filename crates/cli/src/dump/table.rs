//! The dump's tables: which columns `processes`, `threads` and `system` have (name, type,
//! meaning, and the OpenMetrics family each numeric one becomes), and the rows a recorded
//! [`Reading`] makes of them. Format-free: the writers (csv, json, parquet, openmetrics) only
//! lay out the [`Value`]s produced here.
//!
//! The state-time columns of `threads` come from `tasksnap_states::interval::between` with
//! [`Rollup::Thread`], the code the `states` command uses, between the previous reading of
//! the dump that had a state sample and this one; so summing a thread's rows over a stretch
//! of readings gives what `states` reports from the first of them to the last. The first
//! reading of a dump (and a reading without a state sample) has no interval: its
//! state-time columns are null; a thread of the snapshot that has no time in an interval
//! (`between` drops such rows) has zeros and `exited` false. A thread a later interval saw but that the reading's snapshot
//! does not hold (it exited during the interval) still gets a row, with the state-time
//! columns, `pid`, `tid`, `comm`, `exited` and `time`, the rest null; so no state time is
//! lost from the sums.
//!
//! A process that exited since the previous reading (the reading's `exits`, from the exit
//! records) gets one row of `processes` in that reading, after the live ones, with its final
//! figures in the columns live rows use (so summing `cpu_seconds` by `comm` counts it) and
//! `exit_time`, `exit_code` or `exit_signal` set; the columns an exit record does not carry
//! (state, memory now, nice, cgroup, ...) are null there. Live rows have those three null. A
//! zombie whose exit is in the same reading is listed once, as its exit row.
//!
//! Every table ends with `host`, `host_bytes` and `boot_id`: the machine and boot the
//! reading was taken on (the recording's `HostIdentity`), the same on every row of a reading,
//! null for a recording from before tasksnap kept them.

use std::collections::HashMap;

use tasksnap_model::states::{Sample, State};
use tasksnap_model::{
    fields, Base, Cred, Exit, ExitReason, HostIdentity, Io, Reading, Snapshot, Stat, Task,
};
use tasksnap_states::interval::{between, Rollup, Row};
use tasksnap_sys::users::Names;

use super::What;

/// A column's type, as every format stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A UTC instant (Parquet `TIMESTAMP(MICROS, UTC)`, text RFC 3339).
    Time,
    /// A signed 64-bit integer.
    Int,
    /// A 64-bit float.
    Float,
    /// UTF-8 text (invalid bytes of the source replaced by U+FFFD).
    Text,
    /// Exact bytes (Parquet `BYTE_ARRAY` without a string annotation, text lower-case hex).
    Bytes,
    /// A boolean.
    Bool,
}

/// One cell. Any column may be null: a group the recorder could not read, a figure the
/// kernel did not report.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Unknown.
    Null,
    /// ns since the Unix epoch, UTC.
    Time(i64),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text.
    Text(String),
    /// Bytes that are not valid UTF-8, as they are.
    Bytes(Vec<u8>),
    /// A flag.
    Bool(bool),
}

/// OpenMetrics metric types the dump writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only grows (the sample name gets `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
}

/// How a numeric column becomes OpenMetrics samples.
#[derive(Debug, Clone)]
pub struct Metric {
    /// Family name (without `_total`).
    pub family: String,
    /// Counter or gauge.
    pub kind: MetricType,
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
enum Field {
    /// A task field of the model's table (`tasksnap_model::fields`), its value as it is.
    Model(&'static fields::Field),
    /// A bytes field of the model's table as text (invalid UTF-8 replaced).
    ModelText(&'static fields::Field),
    /// The exact bytes of a [`Field::ModelText`] when they are not valid UTF-8.
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
    field: Field,
}

/// The `_bytes` sibling of the text column `of`.
///
/// Names are the bytes they are: a text column whose source is the task's own bytes
/// (`comm`, `args`, `user`, `cgroup`) is valid UTF-8 (invalid sequences replaced by
/// U+FFFD), and its sibling `<name>_bytes` ([`Kind::Bytes`]) holds the exact bytes the
/// text was decoded from when they were not valid UTF-8, null otherwise.
fn bytes_col(of: &str, field: Field) -> Column {
    col(
        &format!("{of}_bytes"),
        Kind::Bytes,
        &format!(
            "the exact bytes of {of} when they are not valid UTF-8 (hex in CSV and JSON, \
             binary in Parquet); null otherwise"
        ),
        field,
    )
}

/// The name of the `_bytes` sibling of a text column that has one (see [`bytes_col`]):
/// choosing the column brings the sibling along, so no choice of columns loses bytes.
pub fn sibling(c: &Column) -> Option<String> {
    matches!(
        c.field,
        Field::User | Field::Comm | Field::Args | Field::Cgroup | Field::Host | Field::ModelText(_)
    )
    .then(|| format!("{}_bytes", c.name))
}

fn col(name: &str, kind: Kind, help: &str, field: Field) -> Column {
    Column {
        name: name.to_string(),
        kind,
        help: help.to_string(),
        metric: None,
        label: false,
        field,
    }
}

impl Column {
    fn metric(mut self, family: &str, kind: MetricType, scale: f64) -> Column {
        self.metric = Some(Metric {
            family: family.to_string(),
            kind,
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

/// The state columns' names, in [`State::ALL`] order.
const STATE_COLUMNS: [&str; 6] = [
    "running_s",
    "runnable_s",
    "sleeping_s",
    "disk_s",
    "stopped_s",
    "other_s",
];

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

const PRESSURE: [&str; 3] = ["cpu", "memory", "io"];

const CPU_MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// Every column of `what`, in their default order.
pub fn columns(what: What) -> Vec<Column> {
    let mut v = match what {
        What::Processes => task_columns(false),
        What::Threads => task_columns(true),
        What::System => system_columns(),
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
            Field::Host,
        )
        .label(),
        bytes_col("host", Field::HostBytes),
        col(
            "boot_id",
            Kind::Text,
            "the kernel's boot id (/proc/sys/kernel/random/boot_id) when the reading was \
             taken: another value is another boot; null when the recording did not keep it",
            Field::BootId,
        )
        .label(),
    ]
}

/// The value of an identity column ([`identity_columns`]), `None` for any other field.
fn identity_value(f: Field, h: &HostIdentity) -> Option<Value> {
    let v = match f {
        Field::Host => h.hostname.as_deref().map_or(Value::Null, text),
        Field::HostBytes => h.hostname.as_deref().map_or(Value::Null, exact),
        Field::BootId => h.boot_id.as_deref().map_or(Value::Null, text),
        _ => return None,
    };
    Some(v)
}

fn task_columns(threads: bool) -> Vec<Column> {
    use Kind::*;
    use MetricType::*;
    let p = if threads {
        "tasksnap_thread_"
    } else {
        "tasksnap_process_"
    };
    let fam = |s: &str| format!("{p}{s}");
    let mut v = vec![
        col(
            "time",
            Time,
            "when the reading was taken (UTC)",
            Field::Time,
        ),
        col("pid", Int, "process id (thread group id)", Field::Pid).label(),
    ];
    if threads {
        v.push(col("tid", Int, "thread id", Field::Tid).label());
    }
    v.extend([
        col("ppid", Int, "parent process id", model("ppid")),
        col("uid", Int, "effective user id", model("euid")),
        {
            let user = col(
                "user",
                Text,
                "effective user name (the uid in digits when the system has no name for it)",
                Field::User,
            );
            // A process's series are told apart by its user too; a thread's tid is enough.
            if threads {
                user
            } else {
                user.label()
            }
        },
        bytes_col("user", Field::UserBytes),
        col("comm", Text, "command name", Field::Comm).label(),
        bytes_col("comm", Field::CommBytes),
        col(
            "args",
            Text,
            "command line, arguments joined by spaces; empty for kernel threads",
            Field::Args,
        ),
        bytes_col("args", Field::ArgsBytes),
        col(
            "state",
            Text,
            "scheduler state letter (R, S, D, ...)",
            model("state"),
        ),
        col(
            "cpu_seconds",
            Float,
            "user + system CPU time since the task started, seconds",
            Field::CpuSeconds,
        )
        .metric(&fam("cpu_seconds"), Counter, 1.0),
        col(
            "rss_bytes",
            Int,
            "resident set size, bytes",
            model("rss_bytes"),
        )
        .metric(&fam("resident_memory_bytes"), Gauge, 1.0),
        col(
            "vsize_bytes",
            Int,
            "virtual memory size, bytes",
            model("vsize_bytes"),
        )
        .metric(&fam("virtual_memory_bytes"), Gauge, 1.0),
        col(
            "threads",
            Int,
            "threads in the process",
            model("num_threads"),
        )
        .metric(&fam("threads"), Gauge, 1.0),
        col(
            "start_time",
            Time,
            "when the task started (UTC)",
            Field::StartTime,
        )
        .metric(&fam("start_time_seconds"), Gauge, 1e-9),
        col("nice", Int, "nice value", model("nice")).metric(&fam("nice"), Gauge, 1.0),
        col(
            "priority",
            Int,
            "kernel priority as /proc shows it",
            model("priority"),
        ),
        col("minflt", Int, "minor page faults", model("minflt")).metric(
            &fam("minor_faults"),
            Counter,
            1.0,
        ),
        col("majflt", Int, "major page faults", model("majflt")).metric(
            &fam("major_faults"),
            Counter,
            1.0,
        ),
        col(
            "read_bytes",
            Int,
            "bytes fetched from storage (/proc/PID/io)",
            model("read_bytes"),
        )
        .metric(&fam("storage_read_bytes"), Counter, 1.0),
        col(
            "write_bytes",
            Int,
            "bytes sent to storage (/proc/PID/io)",
            model("write_bytes"),
        )
        .metric(&fam("storage_written_bytes"), Counter, 1.0),
        col(
            "cgroup",
            Text,
            "cgroup v2 path (else the /proc/PID/cgroup lines joined by ';')",
            Field::Cgroup,
        ),
        bytes_col("cgroup", Field::CgroupBytes),
        col(
            "on_cpu_ns",
            Int,
            "time on a CPU, ns (schedstat)",
            model("on_cpu_ns"),
        )
        .metric(&fam("on_cpu_seconds"), Counter, 1e-9),
        col(
            "run_delay_ns",
            Int,
            "time waiting on a run queue, ns (schedstat)",
            model("run_delay_ns"),
        )
        .metric(&fam("run_delay_seconds"), Counter, 1e-9),
    ]);
    if !threads {
        v.extend([
            col(
                "exit_time",
                Time,
                "when the process exited (UTC), in the first reading after its exit; null \
                 while alive",
                Field::ExitTime,
            ),
            col(
                "exit_code",
                Int,
                "the code it exited with (0-255); null while alive and when a signal ended it",
                Field::ExitCode,
            ),
            col(
                "exit_signal",
                Int,
                "the signal that ended it; null while alive and when it exited with a code",
                Field::ExitSignal,
            ),
            col(
                "peak_rss_bytes",
                Int,
                "the most resident memory the process ever had (getrusage's ru_maxrss), bytes; \
                 on its exit row only, null while alive",
                Field::ExitPeakRss,
            ),
        ]);
    }
    if threads {
        v.push(col(
            "exited",
            Bool,
            "the thread exited during the interval ending at this reading",
            Field::Exited,
        ));
        v.push(col(
            "alive_s",
            Float,
            "seconds the thread was alive in the interval since the previous reading",
            Field::AliveS,
        ));
        for (s, name) in State::ALL.into_iter().zip(STATE_COLUMNS) {
            v.push(
                col(
                    name,
                    Float,
                    &format!(
                        "seconds {} in the interval since the previous reading",
                        s.name()
                    ),
                    Field::StateS(s),
                )
                .metric(&fam("state_seconds"), Counter, 1.0)
                .labelled(
                    ("state", s.name()),
                    "seconds in each state since the start of the dump (states' intervals summed)",
                )
                .accumulated(),
            );
        }
        v.push(col(
            "top_reason",
            Text,
            "kernel frames of the wait with the most off-CPU time in the interval",
            Field::TopReason,
        ));
        v.push(col(
            "top_reason_state",
            Text,
            "the state of that wait",
            Field::TopReasonState,
        ));
        v.push(col(
            "top_reason_s",
            Float,
            "seconds of that wait in the interval",
            Field::TopReasonS,
        ));
    }
    v
}

/// The fields of the model's table (`tasksnap_model::fields`) that `processes` and `threads`
/// do not show by default, by their table names: chosen with `--fields`, listed by
/// `--fields help`. A field added to the table is here without a change to the dump. Those a
/// default column shows already (as it is, or as `start_time`, `args`, `cgroup`,
/// `cpu_seconds`) are left out, and so are those of the groups a recording does not keep
/// (tasksnap-history's task columns: no descriptor count, OOM scores, login uid, PSS/USS,
/// security label, sd-login answers, autogroup, namespaces, signal masks or layout), which
/// would only ever be null.
pub fn more_columns(what: What) -> Vec<Column> {
    if what == What::System {
        return Vec::new();
    }
    let shown = columns(what);
    let elsewhere = [
        "pid",
        "tid",
        "comm",
        "cmdline",
        "start_time_ns",
        "cgroup_v2_path",
        "cpu_ns",
    ];
    let mut v = Vec::new();
    for f in fields::FIELDS {
        let unrecorded = matches!(
            f.group,
            fields::Group::Fds
                | fields::Group::OomScore
                | fields::Group::OomScoreAdj
                | fields::Group::Loginuid
                | fields::Group::Smaps
                | fields::Group::Label
                | fields::Group::Login
                | fields::Group::Autogroup
                | fields::Group::Ns
                | fields::Group::Signals
                | fields::Group::Layout
        );
        if unrecorded
            || elsewhere.contains(&f.name)
            || shown
                .iter()
                .any(|c| c.name == f.name || c.field == Field::Model(f))
        {
            continue;
        }
        match f.kind {
            fields::Kind::Int => v.push(col(f.name, Kind::Int, f.help, Field::Model(f))),
            fields::Kind::Bytes => {
                v.push(col(f.name, Kind::Text, f.help, Field::ModelText(f)));
                v.push(bytes_col(f.name, Field::ModelBytes(f)));
            }
        }
    }
    v
}

fn system_columns() -> Vec<Column> {
    use Kind::*;
    use MetricType::*;
    let mut v = vec![col(
        "time",
        Time,
        "when the reading was taken (UTC)",
        Field::Time,
    )];
    for (i, m) in CPU_MODES.into_iter().enumerate() {
        v.push(
            col(
                &format!("cpu_{m}_ticks"),
                Int,
                &format!("/proc/stat cpu {m} time since boot, clock ticks (USER_HZ)"),
                Field::CpuTicks(i),
            )
            .metric("tasksnap_system_cpu_ticks", Counter, 1.0)
            .labelled(("mode", m), "/proc/stat cpu time since boot, clock ticks"),
        );
    }
    v.push(
        col("ncpus", Int, "cpuN lines in /proc/stat", Field::Ncpus).metric(
            "tasksnap_system_cpus",
            Gauge,
            1.0,
        ),
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
        v.push(col(name, Int, help, Field::Counter(i)).metric(
            &format!("tasksnap_system_{name}"),
            t,
            1.0,
        ));
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
        v.push(
            col(name, Int, &format!("{help}, bytes"), Field::Memory(i)).metric(
                &format!("tasksnap_system_{name}"),
                Gauge,
                1.0,
            ),
        );
    }
    for (i, name) in ["load1", "load5", "load15"].into_iter().enumerate() {
        v.push(col(name, Float, "load average", Field::Load(i)).metric(
            &format!("tasksnap_system_{name}"),
            Gauge,
            1.0,
        ));
    }
    v.push(
        col(
            "tasks",
            Int,
            "threads on the system (/proc/loadavg)",
            Field::Tasks,
        )
        .metric("tasksnap_system_tasks", Gauge, 1.0),
    );
    v.push(
        col(
            "exits",
            Int,
            "processes that exited since the previous reading (each has a row in --what \
             processes); null when the recorder had no exit source",
            Field::Exits(false),
        )
        .metric("tasksnap_system_exits", Gauge, 1.0),
    );
    v.push(
        col(
            "exits_dropped",
            Int,
            "exit records the kernel dropped since the previous reading (its buffer was \
             full): processes that exited and have no row; null when there was no exit source",
            Field::Exits(true),
        )
        .metric("tasksnap_system_exits_dropped", Gauge, 1.0),
    );
    for (name, gauge) in VMSTAT {
        let t = if gauge { Gauge } else { Counter };
        v.push(
            col(
                &format!("vmstat_{name}"),
                Int,
                &format!("/proc/vmstat {name}"),
                Field::Vmstat(name),
            )
            .metric(&format!("tasksnap_system_vmstat_{name}"), t, 1.0),
        );
    }
    for (r, res) in PRESSURE.into_iter().enumerate() {
        for (full, kind) in [(false, "some"), (true, "full")] {
            v.push(
                col(
                    &format!("pressure_{res}_{kind}_avg10"),
                    Float,
                    &format!("/proc/pressure/{res} {kind} avg10, percent"),
                    Field::Pressure(r, full, false),
                )
                .metric(&format!("tasksnap_system_pressure_{res}_avg10"), Gauge, 1.0)
                .labelled(("kind", kind), "pressure stall over the last 10 s, percent"),
            );
            v.push(
                col(
                    &format!("pressure_{res}_{kind}_total_us"),
                    Int,
                    &format!("/proc/pressure/{res} {kind} total, microseconds"),
                    Field::Pressure(r, full, true),
                )
                .metric(
                    &format!("tasksnap_system_pressure_{res}_stalled_seconds"),
                    Counter,
                    1e-6,
                )
                .labelled(("kind", kind), "pressure stall time since boot, seconds"),
            );
        }
    }
    v
}

/// A column of the model's field table.
fn model(name: &str) -> Field {
    Field::Model(fields::known(name))
}

/// A value of the model's field table as a cell: integers as they are, bytes as text.
fn model_value(v: fields::Value<'_>) -> Value {
    match v {
        fields::Value::Int(n) => Value::Int(n),
        fields::Value::UInt(n) => int(n),
        fields::Value::Bytes(b) => text(b),
    }
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn text(bytes: &[u8]) -> Value {
    Value::Text(String::from_utf8_lossy(bytes).into_owned())
}

/// Appends `bytes` as lower-case hex (how CSV and JSON carry a `_bytes` column).
pub fn hex_into(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// A moment, ns since the epoch, as a time column's value; null past what a timestamp holds
/// (year 2262: only a damaged or hostile recording has one), never a made-up moment there.
fn unix_time(ns: u128) -> Value {
    i64::try_from(ns).map_or(Value::Null, Value::Time)
}

/// The `_bytes` sibling's value: the bytes when they are not valid UTF-8, else null.
fn exact(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(_) => Value::Null,
        Err(_) => Value::Bytes(bytes.to_vec()),
    }
}

fn secs(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e9)
}

/// A command line, NUL-separated, as one space-separated line (bytes).
fn args_line(cmdline: &[u8]) -> Vec<u8> {
    let trimmed = cmdline.strip_suffix(&[0]).unwrap_or(cmdline);
    trimmed
        .iter()
        .map(|&b| if b == 0 { b' ' } else { b })
        .collect()
}

/// The cgroup v2 path, else the lines of /proc/PID/cgroup joined by `;` (bytes).
fn cgroup_line(c: &tasksnap_model::Cgroup) -> Vec<u8> {
    match c.v2_path() {
        Some(p) => p.to_vec(),
        None => c.text_lines().collect::<Vec<_>>().join(&b';'),
    }
}

/// What the state columns of one row are computed from.
#[derive(Clone, Copy)]
enum Interval<'a> {
    /// No interval ends at this reading (the first of the dump, or no state sample).
    None,
    /// The interval exists; this thread has no time in it.
    Empty,
    /// The thread's row of the interval.
    Row(&'a Row),
}

/// Turns readings into rows of the chosen columns.
#[derive(Debug)]
pub struct Producer {
    what: What,
    fields: Vec<Field>,
    names: Names,
    prev: Option<Sample>,
}

impl Producer {
    /// A producer of `cols` (a selection of [`columns`]`(what)`, in output order).
    pub fn new(what: What, cols: &[Column]) -> Producer {
        Producer {
            what,
            fields: cols.iter().map(|c| c.field).collect(),
            names: Names::default(),
            prev: None,
        }
    }

    /// Calls `emit` with each row `reading` makes, in (pid, tid) order.
    pub fn reading(
        &mut self,
        mut reading: Reading,
        emit: &mut dyn FnMut(&[Value]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut row = Vec::with_capacity(self.fields.len());
        // Every row of the reading carries its identity (taken out: the reading is ours).
        let host = &std::mem::take(&mut reading.host);
        let snap = &reading.snapshot;
        match self.what {
            What::System => {
                row.extend(self.fields.iter().map(|&f| {
                    identity_value(f, host).unwrap_or_else(|| system_value(f, &reading))
                }));
                emit(&row)?;
            }
            What::Processes => {
                // A zombie whose exit is in this reading is its exit row, not also a live one.
                let exited = reading.exited_ids();
                let live = |t: &&Task| t.id.is_leader() && !exited.contains(&t.id);
                for t in snap.tasks.iter().filter(live) {
                    row.clear();
                    for &f in &self.fields {
                        let v = identity_value(f, host).unwrap_or_else(|| {
                            task_value(f, snap, Some(t), Interval::None, &mut self.names)
                        });
                        row.push(v);
                    }
                    emit(&row)?;
                }
                for e in &reading.exits {
                    let t = exit_task(e);
                    row.clear();
                    for &f in &self.fields {
                        row.push(
                            identity_value(f, host)
                                .unwrap_or_else(|| exit_value(f, snap, e, &t, &mut self.names)),
                        );
                    }
                    emit(&row)?;
                }
            }
            What::Threads => {
                let rows = match (&self.prev, &reading.states) {
                    (Some(prev), Some(cur)) => Some(thread_rows(prev, cur)),
                    _ => None,
                };
                let mut used = vec![false; rows.as_ref().map_or(0, |r| r.0.len())];
                for t in &snap.tasks {
                    let iv = match &rows {
                        None => Interval::None,
                        Some((rows, by_id)) => match by_id.get(&(t.id.tgid, t.id.tid)) {
                            Some(&i) => {
                                used[i] = true;
                                Interval::Row(&rows[i])
                            }
                            None => Interval::Empty,
                        },
                    };
                    row.clear();
                    for &f in &self.fields {
                        row.push(
                            identity_value(f, host).unwrap_or_else(|| {
                                task_value(f, snap, Some(t), iv, &mut self.names)
                            }),
                        );
                    }
                    emit(&row)?;
                }
                if let Some((rows, _)) = &rows {
                    // Threads that had time in the interval but are gone from the snapshot.
                    for (r, _) in rows.iter().zip(&used).filter(|(_, &u)| !u) {
                        row.clear();
                        for &f in &self.fields {
                            row.push(identity_value(f, host).unwrap_or_else(|| {
                                task_value(f, snap, None, Interval::Row(r), &mut self.names)
                            }));
                        }
                        emit(&row)?;
                    }
                }
            }
        }
        if let Some(s) = reading.states.take() {
            self.prev = Some(s);
        }
        Ok(())
    }
}

/// The interval's thread rows in (pid, tid) order, with an index by (pid, tid). Two threads
/// of one interval with the same ids (a tid reused within it) are summed into one row.
fn thread_rows(prev: &Sample, cur: &Sample) -> (Vec<Row>, HashMap<(i32, i32), usize>) {
    let mut iv = between(prev, cur, Rollup::Thread);
    iv.rows.sort_by_key(|r| (r.pid, r.tid));
    let mut rows: Vec<Row> = Vec::with_capacity(iv.rows.len());
    let mut by_id = HashMap::with_capacity(iv.rows.len());
    for r in iv.rows {
        let key = (r.pid, r.tid.unwrap_or(r.pid));
        match by_id.get(&key) {
            Some(&i) => {
                let same: &mut Row = &mut rows[i];
                for (a, b) in same.ns.iter_mut().zip(r.ns) {
                    *a = a.saturating_add(b);
                }
                same.alive_ns = same.alive_ns.saturating_add(r.alive_ns);
                same.exited &= r.exited;
                let bigger = r.top_reason.as_ref().map_or(0, |x| x.ns)
                    > same.top_reason.as_ref().map_or(0, |x| x.ns);
                if bigger {
                    same.top_reason = r.top_reason;
                }
            }
            None => {
                by_id.insert(key, rows.len());
                rows.push(r);
            }
        }
    }
    (rows, by_id)
}

fn task_value(
    f: Field,
    snap: &Snapshot,
    task: Option<&Task>,
    iv: Interval<'_>,
    names: &mut Names,
) -> Value {
    let base = task.and_then(|t| t.base.as_ref());
    let row = match iv {
        Interval::Row(r) => Some(r),
        _ => None,
    };
    let state_value = |ns: Option<u64>| match iv {
        Interval::None => Value::Null,
        _ => secs(ns.unwrap_or(0)),
    };
    match f {
        Field::Model(m) | Field::ModelText(m) => task
            .and_then(|t| m.value(t))
            .map_or(Value::Null, model_value),
        Field::ModelBytes(m) => task
            .and_then(|t| m.value(t))
            .and_then(|v| v.as_bytes().map(exact))
            .unwrap_or(Value::Null),
        Field::Time => unix_time(snap.taken_at_unix_ns.into()),
        Field::Pid => match (task, row) {
            (Some(t), _) => Value::Int(t.id.tgid.into()),
            (None, Some(r)) => Value::Int(r.pid.into()),
            _ => Value::Null,
        },
        Field::Tid => match (task, row) {
            (Some(t), _) => Value::Int(t.id.tid.into()),
            (None, Some(r)) => Value::Int(r.tid.unwrap_or(r.pid).into()),
            _ => Value::Null,
        },
        Field::Comm => match (base, row) {
            (Some(b), _) => text(&b.comm),
            (None, Some(r)) => Value::Text(r.comm.clone()),
            _ => Value::Null,
        },
        Field::CommBytes => match (base, row) {
            (Some(b), _) => exact(&b.comm),
            // A thread gone from the snapshot: what the state sample kept (nothing when
            // it came from a recording, which keeps a thread's comm as text).
            (None, Some(r)) => r
                .comm_bytes
                .as_deref()
                .map_or(Value::Null, |b| Value::Bytes(b.to_vec())),
            _ => Value::Null,
        },
        Field::User => match task.and_then(|t| t.cred.as_ref()) {
            Some(c) => match names.user(c.euid) {
                Some(n) => text(n),
                None => Value::Text(c.euid.to_string()),
            },
            None => Value::Null,
        },
        Field::UserBytes => task
            .and_then(|t| t.cred.as_ref())
            .and_then(|c| names.user(c.euid))
            .map_or(Value::Null, exact),
        Field::Args => match (task.and_then(|t| t.cmdline.as_deref()), base) {
            (Some(c), _) => text(&args_line(c)),
            (None, Some(b)) if b.kthread => Value::Text(String::new()),
            _ => Value::Null,
        },
        Field::ArgsBytes => task
            .and_then(|t| t.cmdline.as_deref())
            .map_or(Value::Null, |c| exact(&args_line(c))),
        Field::CpuSeconds => task
            .and_then(|t| fields::CPU_NS.value(t))
            .and_then(|v| v.as_u64())
            .map_or(Value::Null, secs),
        Field::StartTime => match task {
            Some(t) if snap.boot_time_unix_s > 0 => unix_time(
                u128::from(snap.boot_time_unix_s) * 1_000_000_000 + u128::from(t.id.start_time_ns),
            ),
            _ => Value::Null,
        },
        Field::Cgroup => task
            .and_then(|t| t.cgroup.as_deref())
            .map_or(Value::Null, |c| text(&cgroup_line(c))),
        Field::CgroupBytes => task
            .and_then(|t| t.cgroup.as_deref())
            .map_or(Value::Null, |c| exact(&cgroup_line(c))),
        Field::Exited => match iv {
            Interval::None => Value::Null,
            Interval::Empty => Value::Bool(false),
            Interval::Row(r) => Value::Bool(r.exited),
        },
        Field::AliveS => state_value(row.map(|r| r.alive_ns)),
        Field::StateS(s) => state_value(row.map(|r| r.ns[s.index()])),
        Field::TopReason => row
            .and_then(|r| r.top_reason.as_ref())
            .map_or(Value::Null, |x| Value::Text(x.text(8))),
        Field::TopReasonState => row
            .and_then(|r| r.top_reason.as_ref())
            .map_or(Value::Null, |x| Value::Text(x.state.name().to_string())),
        Field::TopReasonS => row
            .and_then(|r| r.top_reason.as_ref())
            .map_or(Value::Null, |x| secs(x.ns)),
        _ => Value::Null,
    }
}

/// The model's fields an exit record holds (see [`exit_task`]): an exited process's row has
/// these, and null in every other model column.
const EXIT_MODEL_FIELDS: [&str; 18] = [
    "ppid",
    "ruid",
    "euid",
    "rgid",
    "egid",
    "utime_ns",
    "stime_ns",
    "cpu_ns",
    "minflt",
    "majflt",
    "rchar_bytes",
    "wchar_bytes",
    "read_bytes",
    "write_bytes",
    "cancelled_write_bytes",
    "voluntary_switches",
    "involuntary_switches",
    "start_time_ns",
];

/// An exited process as a task of the model, so that the columns live rows use read its final
/// figures the same way. Only the fields of [`EXIT_MODEL_FIELDS`] (and comm, args, user,
/// start time) mean anything: the rest are zeros that [`exit_value`] shows as null.
fn exit_task(e: &Exit) -> Task {
    let mut t = Task::new(e.id);
    t.base = Some(Base {
        ppid: e.ppid,
        comm: e.comm.iter().copied().collect(),
        kthread: e.kernel_thread,
        ..Base::default()
    });
    t.cred = Some(Cred {
        ruid: e.ruid,
        euid: e.euid,
        rgid: e.rgid,
        egid: e.egid,
        // Not in the record: shown as null (not in EXIT_MODEL_FIELDS).
        suid: 0,
        fsuid: 0,
        sgid: 0,
        fsgid: 0,
        groups: None,
        effective_only: false,
    });
    t.stat = Some(Stat {
        utime_ns: e.utime_ns,
        stime_ns: e.stime_ns,
        minflt: e.minflt,
        majflt: e.majflt,
        start_time_ns: e.start_time_ns,
        ..Stat::default()
    });
    t.io = Some(Box::new(Io {
        rchar_bytes: e.rchar_bytes,
        wchar_bytes: e.wchar_bytes,
        read_bytes: e.read_bytes,
        write_bytes: e.write_bytes,
        cancelled_write_bytes: e.cancelled_write_bytes,
        syscr: 0,
        syscw: 0,
    }));
    t.sched = Some(Box::new(tasksnap_model::Sched {
        voluntary_switches: Some(e.voluntary_ctxt_switches),
        involuntary_switches: Some(e.nonvoluntary_ctxt_switches),
        on_cpu_ns: 0,
        run_delay_ns: 0,
        timeslices: 0,
    }));
    // An empty command line the record could not read is unknown, not empty.
    t.cmdline = (!e.cmdline.is_empty() || e.cmdline_missing.is_none()).then(|| e.cmdline.clone());
    t
}

/// One cell of an exited process's row (`t` is [`exit_task`]`(e)`).
fn exit_value(f: Field, snap: &Snapshot, e: &Exit, t: &Task, names: &mut Names) -> Value {
    let known = match f {
        Field::Model(m) | Field::ModelText(m) | Field::ModelBytes(m) => {
            EXIT_MODEL_FIELDS.contains(&m.name)
        }
        Field::Time
        | Field::Pid
        | Field::User
        | Field::UserBytes
        | Field::Comm
        | Field::CommBytes
        | Field::Args
        | Field::ArgsBytes
        | Field::CpuSeconds
        | Field::StartTime => true,
        Field::ExitTime => {
            return if snap.boot_time_unix_s > 0 {
                unix_time(
                    u128::from(snap.boot_time_unix_s) * 1_000_000_000 + u128::from(e.exit_time_ns),
                )
            } else {
                Value::Null
            };
        }
        Field::ExitCode => {
            return match e.reason() {
                ExitReason::Code(c) => Value::Int(c.into()),
                ExitReason::Signal { .. } => Value::Null,
            };
        }
        Field::ExitSignal => {
            return match e.reason() {
                ExitReason::Code(_) => Value::Null,
                ExitReason::Signal { signal, .. } => Value::Int(signal.into()),
            };
        }
        Field::ExitPeakRss => return int(e.peak_rss_bytes),
        _ => false,
    };
    if known {
        task_value(f, snap, Some(t), Interval::None, names)
    } else {
        Value::Null
    }
}

fn system_value(f: Field, r: &Reading) -> Value {
    let s = &r.system;
    match f {
        Field::Time => unix_time(r.snapshot.taken_at_unix_ns.into()),
        Field::CpuTicks(i) => s.cpu.map_or(Value::Null, |c| {
            int([
                c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal,
            ][i])
        }),
        Field::Ncpus => {
            if s.per_cpu.is_empty() {
                Value::Null
            } else {
                int(s.per_cpu.len() as u64)
            }
        }
        Field::Counter(i) => s.counters.map_or(Value::Null, |c| {
            int([
                c.context_switches,
                c.forks,
                c.procs_running,
                c.procs_blocked,
                c.interrupts,
                c.softirqs,
            ][i])
        }),
        Field::Memory(i) => s.memory.map_or(Value::Null, |m| {
            int([
                m.total_kib,
                m.free_kib,
                m.available_kib,
                m.buff_cache_kib,
                m.swap_total_kib,
                m.swap_free_kib,
            ][i]
                .saturating_mul(1024))
        }),
        Field::Load(i) => s.load.map_or(Value::Null, |l| Value::Float(l.avg[i])),
        Field::Tasks => s.load.and_then(|l| l.tasks).map_or(Value::Null, int),
        Field::Exits(_) if r.exits_missing.is_some() => Value::Null,
        Field::Exits(false) => int(r.exits.len() as u64),
        Field::Exits(true) => int(r.exits_dropped),
        Field::Vmstat(name) => s
            .vmstat
            .iter()
            .find(|(n, _)| n == name)
            .map_or(Value::Null, |&(_, v)| int(v)),
        Field::Pressure(res, full, total) => s
            .pressure
            .iter()
            .find(|p| p.resource == PRESSURE[res])
            .and_then(|p| if full { p.full } else { p.some })
            .map_or(Value::Null, |l| {
                if total {
                    int(l.total_us)
                } else {
                    Value::Float(l.avg_pct[0])
                }
            }),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::Cgroup;

    #[test]
    fn names_are_unique_and_required_ones_are_there() {
        for what in [What::Processes, What::Threads, What::System] {
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
        for n in [
            "tid",
            "running_s",
            "runnable_s",
            "sleeping_s",
            "disk_s",
            "stopped_s",
            "other_s",
            "top_reason",
        ] {
            assert!(threads.iter().any(|p| p == n), "{n}");
        }
    }

    #[test]
    fn command_lines_and_cgroups_as_text() {
        assert_eq!(
            text(&args_line(b"sleep\x0010\x00")),
            Value::Text("sleep 10".into())
        );
        assert_eq!(
            text(&args_line(b"a\xffb")),
            Value::Text("a\u{fffd}b".into())
        );
        assert_eq!(
            exact(&args_line(b"a\xffb\x00c\x00")),
            Value::Bytes(b"a\xffb c".to_vec())
        );
        assert_eq!(exact(&args_line(b"sleep\x0010\x00")), Value::Null);
        assert_eq!(args_line(b""), b"");
        assert_eq!(
            cgroup_line(&Cgroup::parse(b"0::/user.slice/x.scope\n".to_vec())),
            b"/user.slice/x.scope"
        );
        assert_eq!(
            cgroup_line(&Cgroup::parse(b"4:memory:/a\n3:cpu:/b\n".to_vec())),
            b"4:memory:/a;3:cpu:/b"
        );
        assert_eq!(
            exact(&cgroup_line(&Cgroup::parse(b"0::/a\xfe\n".to_vec()))),
            Value::Bytes(b"/a\xfe".to_vec())
        );
    }
}
