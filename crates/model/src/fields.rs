//! One definition per field: every task attribute a front end shows as a value, once, with
//! its name, type, unit, the attribute group that carries it and how to get it from a
//! [`Task`]. dump's columns, the Python binding's `snapshot()` columns and ps's values take
//! them from here, so a field added once is there for all of them (each front end keeps its
//! own column names and formats; the value is this one).
//!
//! In the spirit of below's `Queriable` models: a flat, typed table rather than one match per
//! front end. Names carry their units (`_ns`, `_bytes`), as the model's fields do.

pub use crate::groups::Group;
use crate::{Base, Cgroup, Cred, Extra, Groups, Io, Login, Mem, Sched, Stat, Task, TaskId};

/// How a field's value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer ([`Value::Int`] or [`Value::UInt`]).
    Int,
    /// Bytes, not necessarily UTF-8 ([`Value::Bytes`]).
    Bytes,
}

/// The unit of a field's value (also in its name where it has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// No unit: a code, a level, a name.
    None,
    /// An identifier (pid, uid, CPU number).
    Id,
    /// A count of events or things.
    Count,
    /// Bytes.
    Bytes,
    /// A duration, nanoseconds.
    Ns,
    /// An instant, nanoseconds since boot (the boot-time clock).
    NsSinceBoot,
}

/// A field's value for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (counters, sizes, times).
    UInt(u64),
    /// Bytes, as the kernel gave them.
    Bytes(&'a [u8]),
}

/// Every byte value once, so that a one-byte code (the state letter) is a `'static` slice.
static BYTES: [u8; 256] = {
    let mut b = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        b[i] = i as u8;
        i += 1;
    }
    b
};

/// The one-byte text of `c`.
fn letter(c: u8) -> &'static [u8] {
    let i = usize::from(c);
    &BYTES[i..=i]
}

impl<'a> Value<'a> {
    /// The value as an `i64` (unsigned ones saturated), `None` for bytes.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(v),
            Value::UInt(v) => Some(i64::try_from(v).unwrap_or(i64::MAX)),
            _ => None,
        }
    }

    /// The value as a `u64` (negative ones `None`), `None` for bytes.
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::Int(v) => u64::try_from(v).ok(),
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    /// The value as bytes, `None` for integers.
    pub fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// One field.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Its name (units in it), unique in [`FIELDS`].
    pub name: &'static str,
    /// What it holds, for `--fields help` listings.
    pub help: &'static str,
    /// How its value is stored.
    pub kind: Kind,
    /// Its unit.
    pub unit: Unit,
    /// The group a query must ask for to have it.
    pub group: Group,
    /// Its value in a task; `None` when the group was not asked for or not readable.
    pub get: for<'a> fn(&'a Task) -> Option<Value<'a>>,
}

/// Fields are the same when their names are (names are unique in [`FIELDS`]).
impl PartialEq for Field {
    fn eq(&self, other: &Field) -> bool {
        self.name == other.name
    }
}

impl Eq for Field {}

impl std::hash::Hash for Field {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h);
    }
}

impl Field {
    /// Its value in `t` (`None`: not asked for or not readable).
    pub fn value<'a>(&self, t: &'a Task) -> Option<Value<'a>> {
        (self.get)(t)
    }
}

fn x(t: &Task) -> Option<&Extra> {
    t.extra.as_deref()
}

fn login(t: &Task) -> Option<&Login> {
    x(t).and_then(|x| x.login.as_deref())
}

/// `pid`: process id (thread group id).
pub const PID: Field = Field {
    name: "pid",
    help: "process id (thread group id)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Identity,
    get: |t| Some(Value::Int(t.id.tgid.into())),
};

/// `tid`: thread id.
pub const TID: Field = Field {
    name: "tid",
    help: "thread id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Identity,
    get: |t| Some(Value::Int(t.id.tid.into())),
};

/// `start_time_ns`: when the task started, ns since boot.
pub const START_TIME_NS: Field = Field {
    name: "start_time_ns",
    help: "when the task started, ns since boot",
    kind: Kind::Int,
    unit: Unit::NsSinceBoot,
    group: Group::Identity,
    get: |t| Some(Value::UInt(t.id.start_time_ns)),
};

/// `ppid`: parent process id.
pub const PPID: Field = Field {
    name: "ppid",
    help: "parent process id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.ppid.into())),
};

/// `pgid`: process group id.
pub const PGID: Field = Field {
    name: "pgid",
    help: "process group id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.pgid.into())),
};

/// `sid`: session id.
pub const SID: Field = Field {
    name: "sid",
    help: "session id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.sid.into())),
};

/// `tty_nr`: controlling terminal as the kernel encodes it (0: none).
pub const TTY_NR: Field = Field {
    name: "tty_nr",
    help: "controlling terminal as the kernel encodes it (0: none)",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.tty_nr.into())),
};

/// `tpgid`: foreground process group of the terminal (-1: none).
pub const TPGID: Field = Field {
    name: "tpgid",
    help: "foreground process group of the terminal (-1: none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.tpgid.into())),
};

/// `flags`: kernel PF_* flags.
pub const FLAGS: Field = Field {
    name: "flags",
    help: "kernel PF_* flags",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.flags.into())),
};

/// `comm`: command name (at most 15 bytes).
pub const COMM: Field = Field {
    name: "comm",
    help: "command name (at most 15 bytes)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Bytes(&b.comm)),
};

/// `state`: scheduler state letter (R, S, D, ...).
pub const STATE: Field = Field {
    name: "state",
    help: "scheduler state letter (R, S, D, ...)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Base,
    get: |t| {
        t.base
            .as_ref()
            .map(|b| Value::Bytes(letter(b.state.letter())))
    },
};

/// `nice`: nice value, -20..19.
pub const NICE: Field = Field {
    name: "nice",
    help: "nice value, -20..19",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.nice.into())),
};

/// `priority`: kernel priority as /proc shows it.
pub const PRIORITY: Field = Field {
    name: "priority",
    help: "kernel priority as /proc shows it",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.priority.into())),
};

/// `policy`: scheduling policy (SCHED_* number).
pub const POLICY: Field = Field {
    name: "policy",
    help: "scheduling policy (SCHED_* number)",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.policy.into())),
};

/// `rt_priority`: real-time priority (0 for non-RT policies).
pub const RT_PRIORITY: Field = Field {
    name: "rt_priority",
    help: "real-time priority (0 for non-RT policies)",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.rt_priority.into())),
};

/// `num_threads`: threads in the process.
pub const NUM_THREADS: Field = Field {
    name: "num_threads",
    help: "threads in the process",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.num_threads.into())),
};

/// `processor`: CPU the task last ran on.
pub const PROCESSOR: Field = Field {
    name: "processor",
    help: "CPU the task last ran on",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Base,
    get: |t| t.base.as_ref().map(|b| Value::Int(b.processor.into())),
};

/// `euid`: effective user id.
pub const EUID: Field = Field {
    name: "euid",
    help: "effective user id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredEffective,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.euid.into())),
};

/// `egid`: effective group id.
pub const EGID: Field = Field {
    name: "egid",
    help: "effective group id",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredEffective,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.egid.into())),
};

/// `ruid`: real user id (the effective one when only that was read).
pub const RUID: Field = Field {
    name: "ruid",
    help: "real user id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.ruid.into())),
};

/// `suid`: saved set-user id (the effective one when only that was read).
pub const SUID: Field = Field {
    name: "suid",
    help: "saved set-user id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.suid.into())),
};

/// `fsuid`: filesystem user id (the effective one when only that was read).
pub const FSUID: Field = Field {
    name: "fsuid",
    help: "filesystem user id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.fsuid.into())),
};

/// `rgid`: real group id (the effective one when only that was read).
pub const RGID: Field = Field {
    name: "rgid",
    help: "real group id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.rgid.into())),
};

/// `sgid`: saved set-group id (the effective one when only that was read).
pub const SGID: Field = Field {
    name: "sgid",
    help: "saved set-group id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.sgid.into())),
};

/// `fsgid`: filesystem group id (the effective one when only that was read).
pub const FSGID: Field = Field {
    name: "fsgid",
    help: "filesystem group id (the effective one when only that was read)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::CredFull,
    get: |t| t.cred.as_ref().map(|c| Value::Int(c.fsgid.into())),
};

/// `utime_ns`: user CPU time, ns.
pub const UTIME_NS: Field = Field {
    name: "utime_ns",
    help: "user CPU time, ns",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.utime_ns)),
};

/// `stime_ns`: system CPU time, ns.
pub const STIME_NS: Field = Field {
    name: "stime_ns",
    help: "system CPU time, ns",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.stime_ns)),
};

/// `cutime_ns`: user CPU time of reaped children, ns.
pub const CUTIME_NS: Field = Field {
    name: "cutime_ns",
    help: "user CPU time of reaped children, ns",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.cutime_ns)),
};

/// `cstime_ns`: system CPU time of reaped children, ns.
pub const CSTIME_NS: Field = Field {
    name: "cstime_ns",
    help: "system CPU time of reaped children, ns",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.cstime_ns)),
};

/// `minflt`: minor page faults.
pub const MINFLT: Field = Field {
    name: "minflt",
    help: "minor page faults",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.minflt)),
};

/// `majflt`: major page faults.
pub const MAJFLT: Field = Field {
    name: "majflt",
    help: "major page faults",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.majflt)),
};

/// `cminflt`: minor page faults of reaped children.
pub const CMINFLT: Field = Field {
    name: "cminflt",
    help: "minor page faults of reaped children",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.cminflt)),
};

/// `cmajflt`: major page faults of reaped children.
pub const CMAJFLT: Field = Field {
    name: "cmajflt",
    help: "major page faults of reaped children",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.cmajflt)),
};

/// `cpu_ns`: user + system CPU time, ns.
pub const CPU_NS: Field = Field {
    name: "cpu_ns",
    help: "user + system CPU time, ns",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Stat,
    get: |t| {
        t.stat
            .as_ref()
            .map(|s| Value::UInt(s.utime_ns.saturating_add(s.stime_ns)))
    },
};

/// `rss_bytes`: resident set size, bytes (statm or status; /proc/PID/stat's when only that was read).
pub const RSS_BYTES: Field = Field {
    name: "rss_bytes",
    help: "resident set size, bytes (statm or status; /proc/PID/stat's when only that was read)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Mem,
    get: |t| match (t.mem.as_deref(), t.stat.as_ref()) {
        (Some(m), _) => Some(Value::UInt(m.rss_bytes)),
        (None, Some(s)) => Some(Value::UInt(s.rss_bytes)),
        _ => None,
    },
};

/// `vsize_bytes`: virtual memory size, bytes (/proc/PID/stat's when only that was read).
pub const VSIZE_BYTES: Field = Field {
    name: "vsize_bytes",
    help: "virtual memory size, bytes (/proc/PID/stat's when only that was read)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Mem,
    get: |t| match (t.mem.as_deref(), t.stat.as_ref()) {
        (Some(m), _) => Some(Value::UInt(m.vsize_bytes)),
        (None, Some(s)) => Some(Value::UInt(s.vsize_bytes)),
        _ => None,
    },
};

/// `stat_vsize_bytes`: virtual memory size, bytes, as /proc/PID/stat gives it (what ps's
/// VSZ, SZ and the sizes derived from them show: procps's VmSize, which is the same
/// figure; [`VSIZE_BYTES`] is statm's once that was read).
pub const STAT_VSIZE_BYTES: Field = Field {
    name: "stat_vsize_bytes",
    help: "virtual memory size, bytes, as /proc/PID/stat gives it",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Stat,
    get: |t| t.stat.as_ref().map(|s| Value::UInt(s.vsize_bytes)),
};

/// `shared_bytes`: resident shared (file-backed and shmem) bytes.
pub const SHARED_BYTES: Field = Field {
    name: "shared_bytes",
    help: "resident shared (file-backed and shmem) bytes",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Mem,
    get: |t| t.mem.as_deref().map(|m| Value::UInt(m.shared_bytes)),
};

/// `text_bytes`: text (code) bytes.
pub const TEXT_BYTES: Field = Field {
    name: "text_bytes",
    help: "text (code) bytes",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Mem,
    get: |t| t.mem.as_deref().map(|m| Value::UInt(m.text_bytes)),
};

/// `data_bytes`: data and stack bytes.
pub const DATA_BYTES: Field = Field {
    name: "data_bytes",
    help: "data and stack bytes",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Mem,
    get: |t| t.mem.as_deref().map(|m| Value::UInt(m.data_bytes)),
};

/// `swap_bytes`: swapped-out bytes.
pub const SWAP_BYTES: Field = Field {
    name: "swap_bytes",
    help: "swapped-out bytes",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::MemStatus,
    get: |t| t.mem.as_deref().and_then(|m| m.swap_bytes).map(Value::UInt),
};

/// `locked_bytes`: memory locked with mlock, bytes.
pub const LOCKED_BYTES: Field = Field {
    name: "locked_bytes",
    help: "memory locked with mlock, bytes",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Locked,
    get: |t| t.locked_bytes.map(Value::UInt),
};

/// `rchar_bytes`: bytes read through read()-like calls.
pub const RCHAR_BYTES: Field = Field {
    name: "rchar_bytes",
    help: "bytes read through read()-like calls",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.rchar_bytes)),
};

/// `wchar_bytes`: bytes written through write()-like calls.
pub const WCHAR_BYTES: Field = Field {
    name: "wchar_bytes",
    help: "bytes written through write()-like calls",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.wchar_bytes)),
};

/// `syscr`: read system calls.
pub const SYSCR: Field = Field {
    name: "syscr",
    help: "read system calls",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.syscr)),
};

/// `syscw`: write system calls.
pub const SYSCW: Field = Field {
    name: "syscw",
    help: "write system calls",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.syscw)),
};

/// `read_bytes`: bytes fetched from storage (/proc/PID/io).
pub const READ_BYTES: Field = Field {
    name: "read_bytes",
    help: "bytes fetched from storage (/proc/PID/io)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.read_bytes)),
};

/// `write_bytes`: bytes sent to storage (/proc/PID/io).
pub const WRITE_BYTES: Field = Field {
    name: "write_bytes",
    help: "bytes sent to storage (/proc/PID/io)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Io,
    get: |t| t.io.as_deref().map(|i| Value::UInt(i.write_bytes)),
};

/// `cancelled_write_bytes`: written bytes later truncated away.
pub const CANCELLED_WRITE_BYTES: Field = Field {
    name: "cancelled_write_bytes",
    help: "written bytes later truncated away",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Io,
    get: |t| {
        t.io.as_deref()
            .map(|i| Value::UInt(i.cancelled_write_bytes))
    },
};

/// `on_cpu_ns`: time on a CPU, ns (schedstat).
pub const ON_CPU_NS: Field = Field {
    name: "on_cpu_ns",
    help: "time on a CPU, ns (schedstat)",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Sched,
    get: |t| t.sched.as_deref().map(|s| Value::UInt(s.on_cpu_ns)),
};

/// `run_delay_ns`: time waiting on a run queue, ns (schedstat).
pub const RUN_DELAY_NS: Field = Field {
    name: "run_delay_ns",
    help: "time waiting on a run queue, ns (schedstat)",
    kind: Kind::Int,
    unit: Unit::Ns,
    group: Group::Sched,
    get: |t| t.sched.as_deref().map(|s| Value::UInt(s.run_delay_ns)),
};

/// `timeslices`: timeslices run on a CPU.
pub const TIMESLICES: Field = Field {
    name: "timeslices",
    help: "timeslices run on a CPU",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Sched,
    get: |t| t.sched.as_deref().map(|s| Value::UInt(s.timeslices)),
};

/// `voluntary_switches`: voluntary context switches.
pub const VOLUNTARY_SWITCHES: Field = Field {
    name: "voluntary_switches",
    help: "voluntary context switches",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::SchedSwitches,
    get: |t| {
        t.sched
            .as_deref()
            .and_then(|s| s.voluntary_switches)
            .map(Value::UInt)
    },
};

/// `involuntary_switches`: involuntary context switches.
pub const INVOLUNTARY_SWITCHES: Field = Field {
    name: "involuntary_switches",
    help: "involuntary context switches",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::SchedSwitches,
    get: |t| {
        t.sched
            .as_deref()
            .and_then(|s| s.involuntary_switches)
            .map(Value::UInt)
    },
};

/// `cmdline`: command line, raw (arguments NUL-terminated).
pub const CMDLINE: Field = Field {
    name: "cmdline",
    help: "command line, raw (arguments NUL-terminated)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Cmdline,
    get: |t| t.cmdline.as_deref().map(Value::Bytes),
};

/// `exe`: path of the executable.
pub const EXE: Field = Field {
    name: "exe",
    help: "path of the executable",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Exe,
    get: |t| t.exe.as_deref().map(Value::Bytes),
};

/// `wchan`: kernel function the task sleeps in (empty: running).
pub const WCHAN: Field = Field {
    name: "wchan",
    help: "kernel function the task sleeps in (empty: running)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Wchan,
    get: |t| t.wchan.as_deref().map(|w| Value::Bytes(w.as_bytes())),
};

/// `cgroup_v2_path`: cgroup v2 path.
pub const CGROUP_V2_PATH: Field = Field {
    name: "cgroup_v2_path",
    help: "cgroup v2 path",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Cgroup,
    get: |t| {
        t.cgroup
            .as_deref()
            .and_then(Cgroup::v2_path)
            .map(Value::Bytes)
    },
};

/// `fds`: open file descriptors.
pub const FDS: Field = Field {
    name: "fds",
    help: "open file descriptors",
    kind: Kind::Int,
    unit: Unit::Count,
    group: Group::Fds,
    get: |t| t.fds.map(|n| Value::UInt(n.into())),
};

/// `oom_score`: OOM killer score.
pub const OOM_SCORE: Field = Field {
    name: "oom_score",
    help: "OOM killer score",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::OomScore,
    get: |t| x(t).and_then(|x| x.oom_score).map(|v| Value::Int(v.into())),
};

/// `oom_score_adj`: OOM score adjustment.
pub const OOM_SCORE_ADJ: Field = Field {
    name: "oom_score_adj",
    help: "OOM score adjustment",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::OomScoreAdj,
    get: |t| {
        x(t).and_then(|x| x.oom_score_adj)
            .map(|v| Value::Int(v.into()))
    },
};

/// `loginuid`: audit login uid (-1: unset).
pub const LOGINUID: Field = Field {
    name: "loginuid",
    help: "audit login uid (-1: unset)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Loginuid,
    get: |t| x(t).and_then(|x| x.loginuid).map(|v| Value::Int(v.into())),
};

/// `pss_bytes`: proportional set size, bytes (smaps_rollup).
pub const PSS_BYTES: Field = Field {
    name: "pss_bytes",
    help: "proportional set size, bytes (smaps_rollup)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Smaps,
    get: |t| {
        x(t).and_then(|x| x.smaps_kb)
            .map(|(p, _)| Value::UInt(p.saturating_mul(1024)))
    },
};

/// `uss_bytes`: unique set size, bytes (smaps_rollup).
pub const USS_BYTES: Field = Field {
    name: "uss_bytes",
    help: "unique set size, bytes (smaps_rollup)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Smaps,
    get: |t| {
        x(t).and_then(|x| x.smaps_kb)
            .map(|(_, u)| Value::UInt(u.saturating_mul(1024)))
    },
};

/// `label`: security label of the process.
pub const LABEL: Field = Field {
    name: "label",
    help: "security label of the process",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Label,
    get: |t| x(t).and_then(|x| x.label.as_deref()).map(Value::Bytes),
};

/// `systemd_unit`: systemd unit (sd-login).
pub const SYSTEMD_UNIT: Field = Field {
    name: "systemd_unit",
    help: "systemd unit (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| login(t).and_then(|l| l.unit.as_deref()).map(Value::Bytes),
};

/// `systemd_user_unit`: systemd user unit (sd-login).
pub const SYSTEMD_USER_UNIT: Field = Field {
    name: "systemd_user_unit",
    help: "systemd user unit (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| {
        login(t)
            .and_then(|l| l.user_unit.as_deref())
            .map(Value::Bytes)
    },
};

/// `systemd_slice`: systemd slice (sd-login).
pub const SYSTEMD_SLICE: Field = Field {
    name: "systemd_slice",
    help: "systemd slice (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| login(t).and_then(|l| l.slice.as_deref()).map(Value::Bytes),
};

/// `login_session`: systemd session (sd-login).
pub const LOGIN_SESSION: Field = Field {
    name: "login_session",
    help: "systemd session (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| {
        login(t)
            .and_then(|l| l.session.as_deref())
            .map(Value::Bytes)
    },
};

/// `systemd_machine`: systemd machine (sd-login).
pub const SYSTEMD_MACHINE: Field = Field {
    name: "systemd_machine",
    help: "systemd machine (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| {
        login(t)
            .and_then(|l| l.machine.as_deref())
            .map(Value::Bytes)
    },
};

/// `systemd_seat`: systemd seat (sd-login).
pub const SYSTEMD_SEAT: Field = Field {
    name: "systemd_seat",
    help: "systemd seat (sd-login)",
    kind: Kind::Bytes,
    unit: Unit::None,
    group: Group::Login,
    get: |t| login(t).and_then(|l| l.seat.as_deref()).map(Value::Bytes),
};

/// `owner_uid`: uid owning the session or user slice (sd-login).
pub const OWNER_UID: Field = Field {
    name: "owner_uid",
    help: "uid owning the session or user slice (sd-login)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Login,
    get: |t| {
        login(t)
            .and_then(|l| l.owner_uid)
            .map(|u| Value::Int(u.into()))
    },
};

/// `autogroup_id`: autogroup id (-1: the line did not match).
pub const AUTOGROUP_ID: Field = Field {
    name: "autogroup_id",
    help: "autogroup id (-1: the line did not match)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Autogroup,
    get: |t| {
        x(t).and_then(|x| x.autogroup)
            .map(|a| Value::Int(a.0.into()))
    },
};

/// `autogroup_nice`: autogroup nice value.
pub const AUTOGROUP_NICE: Field = Field {
    name: "autogroup_nice",
    help: "autogroup nice value",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Autogroup,
    get: |t| {
        x(t).and_then(|x| x.autogroup)
            .map(|a| Value::Int(a.1.into()))
    },
};

/// `ns_cgroup_inode`: inode of the cgroup namespace (0: hidden or none).
pub const NS_CGROUP_INODE: Field = Field {
    name: "ns_cgroup_inode",
    help: "inode of the cgroup namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[0])),
};

/// `ns_ipc_inode`: inode of the ipc namespace (0: hidden or none).
pub const NS_IPC_INODE: Field = Field {
    name: "ns_ipc_inode",
    help: "inode of the ipc namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[1])),
};

/// `ns_mnt_inode`: inode of the mnt namespace (0: hidden or none).
pub const NS_MNT_INODE: Field = Field {
    name: "ns_mnt_inode",
    help: "inode of the mnt namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[2])),
};

/// `ns_net_inode`: inode of the net namespace (0: hidden or none).
pub const NS_NET_INODE: Field = Field {
    name: "ns_net_inode",
    help: "inode of the net namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[3])),
};

/// `ns_pid_inode`: inode of the pid namespace (0: hidden or none).
pub const NS_PID_INODE: Field = Field {
    name: "ns_pid_inode",
    help: "inode of the pid namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[4])),
};

/// `ns_time_inode`: inode of the time namespace (0: hidden or none).
pub const NS_TIME_INODE: Field = Field {
    name: "ns_time_inode",
    help: "inode of the time namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[5])),
};

/// `ns_user_inode`: inode of the user namespace (0: hidden or none).
pub const NS_USER_INODE: Field = Field {
    name: "ns_user_inode",
    help: "inode of the user namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[6])),
};

/// `ns_uts_inode`: inode of the uts namespace (0: hidden or none).
pub const NS_UTS_INODE: Field = Field {
    name: "ns_uts_inode",
    help: "inode of the uts namespace (0: hidden or none)",
    kind: Kind::Int,
    unit: Unit::Id,
    group: Group::Ns,
    get: |t| x(t).and_then(|x| x.ns).map(|n| Value::UInt(n[7])),
};

/// `sig_pending`: signals pending for the thread (SigPnd), bit n-1 for signal n.
pub const SIG_PENDING: Field = Field {
    name: "sig_pending",
    help: "signals pending for the thread (SigPnd), bit n-1 for signal n",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Signals,
    get: |t| t.signals.as_deref().map(|s| Value::UInt(s.pending)),
};

/// `sig_shared_pending`: signals pending for the process (ShdPnd), bit n-1 for signal n.
pub const SIG_SHARED_PENDING: Field = Field {
    name: "sig_shared_pending",
    help: "signals pending for the process (ShdPnd), bit n-1 for signal n",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Signals,
    get: |t| t.signals.as_deref().map(|s| Value::UInt(s.shared_pending)),
};

/// `sig_blocked`: blocked signals (SigBlk), bit n-1 for signal n.
pub const SIG_BLOCKED: Field = Field {
    name: "sig_blocked",
    help: "blocked signals (SigBlk), bit n-1 for signal n",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Signals,
    get: |t| t.signals.as_deref().map(|s| Value::UInt(s.blocked)),
};

/// `sig_ignored`: ignored signals (SigIgn), bit n-1 for signal n.
pub const SIG_IGNORED: Field = Field {
    name: "sig_ignored",
    help: "ignored signals (SigIgn), bit n-1 for signal n",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Signals,
    get: |t| t.signals.as_deref().map(|s| Value::UInt(s.ignored)),
};

/// `sig_caught`: caught signals (SigCgt), bit n-1 for signal n.
pub const SIG_CAUGHT: Field = Field {
    name: "sig_caught",
    help: "caught signals (SigCgt), bit n-1 for signal n",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Signals,
    get: |t| t.signals.as_deref().map(|s| Value::UInt(s.caught)),
};

/// `rsslim_bytes`: soft RSS limit, bytes (u64::MAX: unlimited).
pub const RSSLIM_BYTES: Field = Field {
    name: "rsslim_bytes",
    help: "soft RSS limit, bytes (u64::MAX: unlimited)",
    kind: Kind::Int,
    unit: Unit::Bytes,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.rsslim_bytes)),
};

/// `start_code`: start of the text segment.
pub const START_CODE: Field = Field {
    name: "start_code",
    help: "start of the text segment",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.start_code)),
};

/// `end_code`: end of the text segment.
pub const END_CODE: Field = Field {
    name: "end_code",
    help: "end of the text segment",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.end_code)),
};

/// `start_stack`: start of the main thread's stack.
pub const START_STACK: Field = Field {
    name: "start_stack",
    help: "start of the main thread's stack",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.start_stack)),
};

/// `kstkesp`: saved stack pointer.
pub const KSTKESP: Field = Field {
    name: "kstkesp",
    help: "saved stack pointer",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.kstkesp)),
};

/// `kstkeip`: saved instruction pointer.
pub const KSTKEIP: Field = Field {
    name: "kstkeip",
    help: "saved instruction pointer",
    kind: Kind::Int,
    unit: Unit::None,
    group: Group::Layout,
    get: |t| t.layout.as_deref().map(|l| Value::UInt(l.kstkeip)),
};

/// Every field, in the model's order (identity, base, credentials, times, memory, I/O,
/// scheduling, names, the rare files).
pub static FIELDS: &[Field] = &[
    PID,
    TID,
    START_TIME_NS,
    PPID,
    PGID,
    SID,
    TTY_NR,
    TPGID,
    FLAGS,
    COMM,
    STATE,
    NICE,
    PRIORITY,
    POLICY,
    RT_PRIORITY,
    NUM_THREADS,
    PROCESSOR,
    EUID,
    EGID,
    RUID,
    SUID,
    FSUID,
    RGID,
    SGID,
    FSGID,
    UTIME_NS,
    STIME_NS,
    CUTIME_NS,
    CSTIME_NS,
    MINFLT,
    MAJFLT,
    CMINFLT,
    CMAJFLT,
    CPU_NS,
    RSS_BYTES,
    VSIZE_BYTES,
    STAT_VSIZE_BYTES,
    SHARED_BYTES,
    TEXT_BYTES,
    DATA_BYTES,
    SWAP_BYTES,
    LOCKED_BYTES,
    RCHAR_BYTES,
    WCHAR_BYTES,
    SYSCR,
    SYSCW,
    READ_BYTES,
    WRITE_BYTES,
    CANCELLED_WRITE_BYTES,
    ON_CPU_NS,
    RUN_DELAY_NS,
    TIMESLICES,
    VOLUNTARY_SWITCHES,
    INVOLUNTARY_SWITCHES,
    CMDLINE,
    EXE,
    WCHAN,
    CGROUP_V2_PATH,
    FDS,
    OOM_SCORE,
    OOM_SCORE_ADJ,
    LOGINUID,
    PSS_BYTES,
    USS_BYTES,
    LABEL,
    SYSTEMD_UNIT,
    SYSTEMD_USER_UNIT,
    SYSTEMD_SLICE,
    LOGIN_SESSION,
    SYSTEMD_MACHINE,
    SYSTEMD_SEAT,
    OWNER_UID,
    AUTOGROUP_ID,
    AUTOGROUP_NICE,
    NS_CGROUP_INODE,
    NS_IPC_INODE,
    NS_MNT_INODE,
    NS_NET_INODE,
    NS_PID_INODE,
    NS_TIME_INODE,
    NS_USER_INODE,
    NS_UTS_INODE,
    SIG_PENDING,
    SIG_SHARED_PENDING,
    SIG_BLOCKED,
    SIG_IGNORED,
    SIG_CAUGHT,
    RSSLIM_BYTES,
    START_CODE,
    END_CODE,
    START_STACK,
    KSTKESP,
    KSTKEIP,
];

/// The field named `name`.
pub fn field(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.name == name)
}

/// The field named `name`, for front ends that name fields of this table in their own
/// tables (a misspelt name is a bug there, caught by their tests).
///
/// # Panics
/// When there is no such field.
pub fn known(name: &str) -> &'static Field {
    field(name).unwrap_or_else(|| panic!("no field {name:?} in tasksnap_model::fields"))
}

/// The groups a query needs to have every field of `fields`.
pub fn groups_for<'a>(fields: impl IntoIterator<Item = &'a Field>) -> Groups {
    let mut g = Groups::default();
    for f in fields {
        f.group.ask(&mut g);
    }
    g
}

/// A task with every group the table names filled (every field of [`FIELDS`] has a value), for
/// tests of what carries fields: a front end's columns, a codec's round trip.
pub fn example_task() -> Task {
    let mut t = Task::new(TaskId {
        tgid: 7,
        tid: 7,
        start_time_ns: 10,
    });
    t.base = Some(Base::default());
    t.cred = Some(Cred {
        ruid: 1,
        euid: 2,
        suid: 3,
        fsuid: 4,
        rgid: 5,
        egid: 6,
        sgid: 7,
        fsgid: 8,
        groups: Some(vec![]),
        effective_only: false,
    });
    t.stat = Some(Stat::default());
    t.mem = Some(Box::new(Mem {
        vsize_bytes: 1,
        rss_bytes: 2,
        shared_bytes: 3,
        text_bytes: 4,
        data_bytes: 5,
        swap_bytes: Some(6),
        locked_bytes: Some(7),
    }));
    t.locked_bytes = Some(7);
    t.io = Some(Box::new(Io {
        rchar_bytes: 1,
        wchar_bytes: 2,
        syscr: 3,
        syscw: 4,
        read_bytes: 5,
        write_bytes: 6,
        cancelled_write_bytes: 7,
    }));
    t.sched = Some(Box::new(Sched {
        on_cpu_ns: 1,
        run_delay_ns: 2,
        timeslices: 3,
        voluntary_switches: Some(4),
        involuntary_switches: Some(5),
    }));
    t.cmdline = Some(b"a\0".to_vec());
    t.exe = Some(b"/bin/a".to_vec());
    t.wchan = Some(String::new());
    t.cgroup = Some(Box::new(Cgroup::parse(b"0::/user.slice\n".to_vec())));
    t.fds = Some(3);
    t.signals = Some(Box::default());
    t.layout = Some(Box::default());
    let x = t.extra_mut();
    x.oom_score = Some(1);
    x.oom_score_adj = Some(0);
    x.loginuid = Some(-1);
    x.smaps_kb = Some((1, 2));
    x.label = Some(b"unconfined".to_vec());
    x.autogroup = Some((12, 0));
    x.ns = Some([1, 2, 3, 4, 5, 6, 7, 8]);
    x.login = Some(Box::new(Login {
        unit: Some(b"a.service".to_vec()),
        user_unit: Some(b"b.service".to_vec()),
        slice: Some(b"user.slice".to_vec()),
        session: Some(b"3".to_vec()),
        owner_uid: Some(1000),
        machine: Some(b"m".to_vec()),
        seat: Some(b"seat0".to_vec()),
    }));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_carry_no_spaces() {
        let mut names: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a name is defined twice");
        assert!(names.iter().all(|n| !n.is_empty()
            && n.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')));
    }

    #[test]
    fn every_field_is_there_when_its_group_is_and_only_then() {
        let full = example_task();
        for f in FIELDS {
            let v = f
                .value(&full)
                .unwrap_or_else(|| panic!("{} missing", f.name));
            match f.kind {
                Kind::Int => assert!(v.as_i64().is_some(), "{}: {v:?}", f.name),
                Kind::Bytes => assert!(v.as_bytes().is_some(), "{}: {v:?}", f.name),
            }
            // The query built from the field asks for its group...
            let g = groups_for([f]);
            assert!(f.group.asked(g), "{}", f.name);
            // ... and an empty task (no group read) has no value, but for the identity.
            let empty = Task::new(full.id);
            assert_eq!(
                f.value(&empty).is_some(),
                f.group == Group::Identity,
                "{}",
                f.name
            );
        }
        assert!(groups_for(FIELDS).has(Group::Cmdline));
        assert_eq!(known("rss_bytes").value(&full), Some(Value::UInt(2)));
        // The namespace fields follow NS_NAMES, the index ps's columns use.
        for (i, n) in crate::NS_NAMES.iter().enumerate() {
            let f = known(&format!("ns_{n}_inode"));
            assert_eq!(f.value(&full), Some(Value::UInt(i as u64 + 1)), "{n}");
        }
        assert_eq!(
            known("state")
                .value(&full)
                .and_then(|v| v.as_bytes().map(<[u8]>::to_vec)),
            Some(b"S".to_vec())
        );
    }
}
