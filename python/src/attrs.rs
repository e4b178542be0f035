//! psutil's process attributes: which task groups each needs, and each one's value as psutil
//! gives it (same units, same named tuples, same rules for zombies and unreadable files).
//!
//! One table, [`ATTRS`], names them; [`Attr::groups`] says what the library must read and
//! [`Ctx::value`] makes the Python value. `process_objects` answers `process_iter` in one
//! pass (psutil's cache of `Process` objects kept, each `info` made from the pass in the
//! same call), `processes` answers `pids()`; `process`, `threads` and `children`
//! answer a `Process`'s methods.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyType};
use pyo3::IntoPyObjectExt;
use tasksnap_collect::{FilesError, ProcessFiles};
use tasksnap_model::{Backend, Groups, Query, Selector, Snapshot, Task, TaskState};

use crate::host;

/// A psutil attribute tasksnap answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Attr {
    Pid,
    Ppid,
    Name,
    Username,
    Status,
    CpuTimes,
    MemoryInfo,
    Cmdline,
    NumThreads,
    CreateTime,
    IoCounters,
    Uids,
    Gids,
    Nice,
    NumCtxSwitches,
    CpuNum,
    // The attributes below are answered by a pass but have no column in `snapshot()`.
    Exe,
    Environ,
    NumFds,
    CpuPercent,
    MemoryPercent,
    CpuAffinity,
    Threads,
    Terminal,
}

/// Every attribute, by psutil's name.
pub(crate) const ATTRS: [(&str, Attr); 24] = [
    ("pid", Attr::Pid),
    ("ppid", Attr::Ppid),
    ("name", Attr::Name),
    ("username", Attr::Username),
    ("status", Attr::Status),
    ("cpu_times", Attr::CpuTimes),
    ("memory_info", Attr::MemoryInfo),
    ("cmdline", Attr::Cmdline),
    ("num_threads", Attr::NumThreads),
    ("create_time", Attr::CreateTime),
    ("io_counters", Attr::IoCounters),
    ("uids", Attr::Uids),
    ("gids", Attr::Gids),
    ("nice", Attr::Nice),
    ("num_ctx_switches", Attr::NumCtxSwitches),
    ("cpu_num", Attr::CpuNum),
    ("exe", Attr::Exe),
    ("environ", Attr::Environ),
    ("num_fds", Attr::NumFds),
    ("cpu_percent", Attr::CpuPercent),
    ("memory_percent", Attr::MemoryPercent),
    ("cpu_affinity", Attr::CpuAffinity),
    ("threads", Attr::Threads),
    ("terminal", Attr::Terminal),
];

impl Attr {
    pub(crate) fn parse(name: &str) -> Option<Attr> {
        ATTRS.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
    }

    pub(crate) fn name(self) -> &'static str {
        ATTRS
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether `snapshot()` has columns for the attribute (`fields` and columns.rs).
    pub(crate) fn columnar(self) -> bool {
        (self as usize) <= Attr::CpuNum as usize
    }

    /// What the library must read for this attribute (base and stat are always read: they
    /// hold the identity and the state every rule below looks at).
    fn add_groups(self, g: &mut Groups) {
        match self {
            Attr::Username | Attr::Uids | Attr::Gids => g.cred_effective = true,
            Attr::MemoryInfo | Attr::MemoryPercent => g.mem = true,
            // psutil guesses a denied executable from the first argument (see `exe_value`).
            Attr::Exe => {
                g.exe = true;
                if !caller_is_root() {
                    g.cmdline = true;
                }
            }
            Attr::Environ => g.environ = true,
            // As root the pass's count; otherwise the directory is listed per process, as
            // psutil does (see `Ctx::value`).
            Attr::NumFds => g.fds = caller_is_root(),
            Attr::Cmdline => g.cmdline = true,
            Attr::IoCounters => g.io = true,
            Attr::NumCtxSwitches => g.sched_switches = true,
            _ => {}
        }
    }

    /// The fields of the model's table (`tasksnap_model::fields`) whose values the attribute's
    /// are, in psutil's order (a named tuple's fields, or `snapshot()`'s columns); empty for
    /// the attributes made here from several (name, status, username, command line, start).
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Attr::Ppid => &["ppid"],
            Attr::NumThreads => &["num_threads"],
            Attr::Nice => &["nice"],
            Attr::CpuNum => &["processor"],
            Attr::Uids => &["ruid", "euid", "suid"],
            Attr::Gids => &["rgid", "egid", "sgid"],
            Attr::CpuTimes => &["utime_ns", "stime_ns", "cutime_ns", "cstime_ns"],
            Attr::MemoryInfo => &[
                "rss_bytes",
                "vsize_bytes",
                "shared_bytes",
                "text_bytes",
                "data_bytes",
            ],
            Attr::IoCounters => &[
                "syscr",
                "syscw",
                "read_bytes",
                "write_bytes",
                "rchar_bytes",
                "wchar_bytes",
            ],
            Attr::NumCtxSwitches => &["voluntary_switches", "involuntary_switches"],
            Attr::Pid
            | Attr::Name
            | Attr::Username
            | Attr::Status
            | Attr::Cmdline
            | Attr::CreateTime
            | Attr::Exe
            | Attr::Environ
            | Attr::NumFds
            | Attr::CpuPercent
            | Attr::MemoryPercent
            | Attr::CpuAffinity
            | Attr::Threads
            | Attr::Terminal => &[],
        }
    }

    /// [`Attr::fields`] looked up once.
    pub(crate) fn model_fields(self) -> &'static [&'static tasksnap_model::fields::Field] {
        static ALL: std::sync::OnceLock<Vec<Vec<&'static tasksnap_model::fields::Field>>> =
            std::sync::OnceLock::new();
        let all = ALL.get_or_init(|| {
            let mut v = vec![Vec::new(); ATTRS.len()];
            for (_, a) in ATTRS {
                v[a as usize] = a
                    .fields()
                    .iter()
                    .map(|n| tasksnap_model::fields::known(n))
                    .collect();
            }
            v
        });
        &all[self as usize]
    }

    /// Whether the attribute needs real (not only effective) ids.
    fn real_ids(self) -> bool {
        matches!(self, Attr::Username | Attr::Uids | Attr::Gids)
    }
}

/// The groups and id needs of a list of attributes.
pub(crate) fn groups_for(attrs: &[Attr]) -> (Groups, bool) {
    let mut g = Groups {
        base: true,
        stat: true,
        ..Groups::default()
    };
    for a in attrs {
        a.add_groups(&mut g);
    }
    (g, attrs.iter().any(|a| a.real_ids()))
}

/// Parses attribute names already checked by the Python side.
pub(crate) fn parse_attrs(names: &[String]) -> PyResult<Vec<Attr>> {
    names
        .iter()
        .map(|n| {
            Attr::parse(n).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("invalid attr name '{n}'"))
            })
        })
        .collect()
}

/// Why an attribute has no value for a task: psutil raises `ZombieProcess` (or, in
/// `as_dict`/`process_iter`, puts `ad_value`) for the first, `AccessDenied` for the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    Zombie,
    Denied,
    /// The process exited before this value was read (psutil: `NoSuchProcess`).
    Gone,
    /// The read waited on the process's mmap lock past the library's deadline (psutil would
    /// wait as long as the lock is held): `ReadTimeout` from a `Process` method,
    /// `ad_value` in `process_iter`/`as_dict`.
    TimedOut,
}

/// One field of the model's table as psutil has it: integers as integers, durations (ns) in
/// seconds; `None` when the task does not have it. psutil's `memory_info` is statm's (or
/// status's), so the memory fields are `None` without `Task::mem` (the table's `rss_bytes`
/// and `vsize_bytes` would give /proc/PID/stat's then).
pub(crate) fn field_value<'py>(
    py: Python<'py>,
    f: &tasksnap_model::fields::Field,
    t: &Task,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    use tasksnap_model::fields::{Group, Unit, Value};
    if f.group == Group::Mem && t.mem.is_none() {
        return Ok(None);
    }
    let Some(v) = f.value(t) else {
        return Ok(None);
    };
    Ok(Some(match (v, f.unit) {
        (Value::UInt(ns), Unit::Ns) => (ns as f64 / 1e9).into_bound_py_any(py)?,
        (Value::Int(n), _) => n.into_bound_py_any(py)?,
        (Value::UInt(n), _) => n.into_bound_py_any(py)?,
        (Value::Bytes(b), _) => os_str(py, b)?,
    }))
}

/// psutil's status string for a state letter (`psutil._pslinux.PROC_STATUSES`).
pub(crate) fn status_name(s: TaskState) -> &'static str {
    match s.letter() {
        b'R' => "running",
        b'S' => "sleeping",
        b'D' => "disk-sleep",
        b'T' => "stopped",
        b't' => "tracing-stop",
        b'Z' => "zombie",
        b'X' | b'x' => "dead",
        b'K' => "wake-kill",
        b'W' => "waking",
        b'I' => "idle",
        b'P' => "parked",
        _ => "?",
    }
}

/// A command line split as psutil splits /proc/PID/cmdline: on NULs when it ends with one,
/// else on spaces (a process that rewrote its arguments, setproctitle), one trailing
/// separator dropped, and a NUL-terminated line with one argument holding spaces split on
/// the spaces.
pub(crate) fn split_cmdline(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    let sep = if data.ends_with(b"\0") { b'\0' } else { b' ' };
    let data = data.strip_suffix(&[sep]).unwrap_or(data);
    let parts: Vec<&[u8]> = data.split(|&b| b == sep).collect();
    if sep == b'\0' && parts.len() == 1 && data.contains(&b' ') {
        return data.split(|&b| b == b' ').collect();
    }
    parts
}

/// psutil's `name()`: the comm, unless it is 15 bytes or more (the kernel cut it) and the
/// base name of the first argument starts with it, which is then the name.
fn long_name<'a>(comm: &'a [u8], cmdline: Option<&'a [u8]>) -> &'a [u8] {
    if comm.len() < 15 {
        return comm;
    }
    let Some(first) = cmdline.and_then(|c| split_cmdline(c).first().copied()) else {
        return comm;
    };
    let base = first.rsplit(|&b| b == b'/').next().unwrap_or(first);
    if base.starts_with(comm) {
        base
    } else {
        comm
    }
}

/// Text from the kernel's bytes as Python's file system encoding makes it (UTF-8 with
/// surrogate escapes, what psutil's `open_text` gives).
pub(crate) fn os_str<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    OsStr::from_bytes(b).into_bound_py_any(py)
}

/// A value [`Ctx::read_per_task`] read.
#[derive(Debug)]
enum PerTask {
    Count(usize),
    Cpus(Vec<usize>),
}

/// Whether this process runs as root (effective uid 0): procfs then lets it read every
/// process's files, and psutil raises no `AccessDenied` for them.
pub(crate) fn caller_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// psutil's guess of a denied executable: the first argument when it is an absolute path to
/// an executable regular file.
fn guess_exe(cmdline: &[u8]) -> Option<&[u8]> {
    let first = *split_cmdline(cmdline).first()?;
    if !first.starts_with(b"/") {
        return None;
    }
    let path = std::ffi::CString::new(first).ok()?;
    let regular = std::fs::metadata(OsStr::from_bytes(first)).is_ok_and(|m| m.is_file());
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    let executable = unsafe { libc::access(path.as_ptr(), libc::X_OK) } == 0;
    (regular && executable).then_some(first)
}

/// psutil's `environ()` of an environment block: `KEY=value` strings up to the first empty
/// one (or a NUL at the start), a string without `=` (or starting with it) skipped, a later
/// duplicate winning, a block that does not end in NUL cut at its last NUL.
fn environ_pairs(block: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut rest = block;
    while let Some(end) = rest.iter().position(|&b| b == 0) {
        if end == 0 {
            break;
        }
        let entry = &rest[..end];
        if let Some(eq) = entry.iter().position(|&b| b == b'=') {
            if eq > 0 {
                out.push((&entry[..eq], &entry[eq + 1..]));
            }
        }
        rest = &rest[end + 1..];
    }
    out
}

fn is_zombie(t: &Task) -> bool {
    t.base
        .as_ref()
        .is_some_and(|b| b.state == TaskState::Zombie)
}

/// What every value of one call needs (made once per call, not per value).
pub(crate) struct Ctx {
    types: &'static crate::Types,
    boot_time_s: f64,
    clk_tck: f64,
    users: HashMap<u32, Py<PyAny>>,
    /// psutil's status strings, made once per call (by state letter, ASCII).
    statuses: Vec<Py<PyAny>>,
    /// Command lines read only to complete 15-byte names, by (tgid, tid).
    name_lines: HashMap<(i32, i32), Vec<u8>>,
    /// The one process whose name was to be completed and which was gone by then: its
    /// name is `NoSuchProcess`, as psutil's `name()` raises when its `cmdline()` does.
    name_gone: Option<(i32, i32)>,
    /// Physical memory, bytes (`memory_percent`'s denominator, psutil's
    /// `virtual_memory().total`).
    mem_total_bytes: Option<u64>,
    /// `cpu_percent` by pid, made by `process_objects` from each object's last call.
    cpu_percent: HashMap<i32, f64>,
    /// `threads` by pid: (tid, user s, system s) from one pass of every thread.
    threads: HashMap<i32, Vec<(i32, f64, f64)>>,
    /// What a pass cannot carry, read once per process when the pass is made
    /// ([`Ctx::read_per_task`]): the CPU affinity, and the descriptor count without root.
    per_task: HashMap<(i32, Attr), Result<PerTask, Missing>>,
    /// The caller is root ([`caller_is_root`]).
    root: bool,
    /// A read of this call was given up at the library's deadline (the snapshot's count):
    /// a live process's environment left unread was given up, not refused.
    gave_up: bool,
    /// The reader of process files, for `exe` and `terminal` (taken once per call).
    files: std::sync::OnceLock<std::sync::Arc<ProcessFiles>>,
}

impl Ctx {
    fn new(py: Python<'_>, snap: &Snapshot, attrs: &[Attr]) -> PyResult<Ctx> {
        let mut users = HashMap::new();
        if attrs.contains(&Attr::Username) {
            let mut uids: Vec<u32> = snap
                .tasks
                .iter()
                .filter_map(|t| t.cred.as_ref().map(|c| c.ruid))
                .collect();
            uids.sort_unstable();
            uids.dedup();
            for (uid, name) in py.detach(|| host::user_names(uids)) {
                users.insert(uid, os_str(py, &name)?.unbind());
            }
        }
        let mem_total_bytes = if attrs.contains(&Attr::MemoryPercent) {
            crate::system::mem_total_bytes()
        } else {
            None
        };
        Ok(Ctx {
            types: crate::types()?,
            boot_time_s: snap.boot_time_unix_s as f64,
            clk_tck: host::clk_tck() as f64,
            users,
            mem_total_bytes,
            cpu_percent: HashMap::new(),
            threads: HashMap::new(),
            per_task: HashMap::new(),
            root: caller_is_root(),
            gave_up: snap.stats.cmdline_timeouts > 0,
            files: std::sync::OnceLock::new(),
            statuses: (0..128u8)
                .map(|c| {
                    PyString::intern(py, status_name(TaskState::from_letter(c)))
                        .into_any()
                        .unbind()
                })
                .collect(),
            name_lines: HashMap::new(),
            name_gone: None,
        })
    }

    /// The reader of process files of this call.
    fn files(&self) -> &ProcessFiles {
        self.files.get_or_init(crate::files::reader)
    }

    /// psutil's status string for `s`, one string object per letter and call.
    fn status<'py>(&self, py: Python<'py>, s: TaskState) -> Bound<'py, PyAny> {
        match self.statuses.get(s.letter() as usize) {
            Some(v) => v.bind(py).clone(),
            None => PyString::intern(py, status_name(s)).into_any(),
        }
    }

    /// The values of `attr`'s N fields ([`Attr::fields`]), `None` unless the task has them
    /// all.
    fn fields<'py, const N: usize>(
        &self,
        py: Python<'py>,
        attr: Attr,
        t: &Task,
    ) -> PyResult<Option<[Bound<'py, PyAny>; N]>> {
        let mut out = Vec::with_capacity(N);
        for f in attr.model_fields() {
            match field_value(py, f, t)? {
                Some(v) => out.push(v),
                None => return Ok(None),
            }
        }
        Ok(out.try_into().ok())
    }

    /// The value of `attr` for `t`, as psutil returns it.
    fn value<'py>(
        &self,
        py: Python<'py>,
        attr: Attr,
        t: &Task,
    ) -> PyResult<Result<Bound<'py, PyAny>, Missing>> {
        let ty = self.types;
        // A value a zombie lacks is ZombieProcess for root; for anyone else it is what
        // the kernel refused first (psutil's open() fails with EACCES before it could see
        // the process is a zombie).
        let missing = if is_zombie(t) && self.root {
            Missing::Zombie
        } else {
            Missing::Denied
        };
        let base = t.base.as_ref();
        let v = match attr {
            Attr::Pid => t.id.tgid.into_bound_py_any(py)?,
            Attr::Ppid | Attr::NumThreads | Attr::Nice | Attr::CpuNum => {
                match field_value(py, attr.model_fields()[0], t)? {
                    Some(v) => v,
                    None => return Ok(Err(missing)),
                }
            }
            Attr::Name => match base {
                Some(_) if self.name_gone == Some((t.id.tgid, t.id.tid)) => {
                    return Ok(Err(Missing::Gone))
                }
                Some(b) => {
                    let line = t.cmdline.as_deref().or_else(|| {
                        self.name_lines
                            .get(&(t.id.tgid, t.id.tid))
                            .map(Vec::as_slice)
                    });
                    os_str(py, long_name(&b.comm, line))?
                }
                None => return Ok(Err(missing)),
            },
            Attr::Status => match base {
                Some(b) => self.status(py, b.state),
                None => return Ok(Err(missing)),
            },
            Attr::Username => match &t.cred {
                Some(c) => match self.users.get(&c.ruid) {
                    Some(n) => n.bind(py).clone(),
                    None => c.ruid.to_string().into_bound_py_any(py)?,
                },
                None => return Ok(Err(missing)),
            },
            Attr::Uids => match self.fields::<3>(py, attr, t)? {
                Some(v) => ty.make(py, &ty.puids, v)?,
                None => return Ok(Err(missing)),
            },
            Attr::Gids => match self.fields::<3>(py, attr, t)? {
                Some(v) => ty.make(py, &ty.pgids, v)?,
                None => return Ok(Err(missing)),
            },
            Attr::CpuTimes => match self.fields::<4>(py, attr, t)? {
                Some([user, system, children_user, children_system]) => ty.make(
                    py,
                    &ty.pcputimes,
                    [
                        user,
                        system,
                        children_user,
                        children_system,
                        // Block I/O delay ticks are not in tasksnap's model (docs/python.md).
                        0.0f64.into_bound_py_any(py)?,
                    ],
                )?,
                None => return Ok(Err(missing)),
            },
            Attr::CreateTime => {
                // psutil's arithmetic: ticks / CLK_TCK + btime, so both agree to the bit.
                let ticks = host::start_ticks(t.id.start_time_ns) as f64;
                (ticks / self.clk_tck + self.boot_time_s).into_bound_py_any(py)?
            }
            Attr::MemoryInfo => match self.fields::<5>(py, attr, t)? {
                Some([rss, vms, shared, text, data]) => ty.make(
                    py,
                    &ty.pmem,
                    [
                        rss,
                        vms,
                        shared,
                        text,
                        // lib and dirty: always 0 since Linux 2.6 (statm), as psutil says.
                        0u64.into_bound_py_any(py)?,
                        data,
                        0u64.into_bound_py_any(py)?,
                    ],
                )?,
                None => return Ok(Err(missing)),
            },
            Attr::Cmdline if t.cmdline.is_none() && t.cmdline_timed_out => {
                return Ok(Err(Missing::TimedOut))
            }
            Attr::Cmdline => match &t.cmdline {
                // A zombie has no memory, hence no arguments: psutil raises ZombieProcess.
                Some(c) if c.is_empty() && is_zombie(t) => return Ok(Err(Missing::Zombie)),
                Some(c) => {
                    let args = split_cmdline(c)
                        .into_iter()
                        .map(|a| os_str(py, a))
                        .collect::<PyResult<Vec<_>>>()?;
                    PyList::new(py, args)?.into_any()
                }
                None => return Ok(Err(missing)),
            },
            Attr::IoCounters => match self.fields::<6>(py, attr, t)? {
                Some(v) => ty.make(py, &ty.pio, v)?,
                None => return Ok(Err(missing)),
            },
            Attr::NumCtxSwitches => match self.fields::<2>(py, attr, t)? {
                Some(v) => ty.make(py, &ty.pctxsw, v)?,
                None => return Ok(Err(missing)),
            },
            Attr::Exe => match &t.exe {
                // A zombie's link is gone (psutil: ZombieProcess); a kernel thread has
                // none (psutil: "").
                Some(l) if l.is_empty() && is_zombie(t) => return Ok(Err(Missing::Zombie)),
                Some(l) => match self.files().clean_path(t.id.tgid, l) {
                    Ok(p) => os_str(py, &p)?,
                    Err(FilesError::TimedOut { .. }) => return Ok(Err(Missing::TimedOut)),
                    Err(FilesError::Gone { .. }) => return Ok(Err(Missing::Gone)),
                    Err(_) => return Ok(Err(Missing::Denied)),
                },
                // Denied: psutil guesses from the command line, which a zombie no longer
                // has (psutil: ZombieProcess, whoever asks).
                None if is_zombie(t) => return Ok(Err(Missing::Zombie)),
                None => match t.cmdline.as_deref().and_then(guess_exe) {
                    Some(g) => os_str(py, g)?,
                    None => return Ok(Err(missing)),
                },
            },
            // A kernel thread or zombie is left unread on purpose. A live process's
            // environment is unread when the kernel refused it (EACCES: another user's, or
            // root's too when the ptrace check fails, e.g. a reader in a user namespace
            // without CAP_SYS_PTRACE over the target's: cap_ptrace_access_check's EPERM,
            // which mm_access turns into EACCES), or when the read was given up: the
            // snapshot counts that (for one process, its own count).
            Attr::Environ
                if t.environ.is_none()
                    && self.gave_up
                    && !is_zombie(t)
                    && !t.base.as_ref().is_some_and(|b| b.kthread) =>
            {
                return Ok(Err(Missing::TimedOut))
            }
            Attr::Environ => match &t.environ {
                Some(block) => {
                    let d = PyDict::new(py);
                    for (k, v) in environ_pairs(block) {
                        d.set_item(os_str(py, k)?, os_str(py, v)?)?;
                    }
                    d.into_any()
                }
                None => return Ok(Err(missing)),
            },
            Attr::NumFds if self.root => match t.fds {
                Some(n) => n.into_bound_py_any(py)?,
                None => return Ok(Err(missing)),
            },
            Attr::NumFds => match self.per_task.get(&(t.id.tgid, Attr::NumFds)) {
                Some(Ok(PerTask::Count(n))) => n.into_bound_py_any(py)?,
                Some(Err(why)) => return Ok(Err(*why)),
                _ => return Ok(Err(Missing::Gone)),
            },
            Attr::CpuPercent => match self.cpu_percent.get(&t.id.tgid) {
                Some(p) => p.into_bound_py_any(py)?,
                None => return Ok(Err(missing)),
            },
            Attr::MemoryPercent => match (t.mem.as_ref(), self.mem_total_bytes) {
                (Some(m), Some(total)) if total > 0 => {
                    (m.rss_bytes as f64 / total as f64 * 100.0).into_bound_py_any(py)?
                }
                _ => return Ok(Err(missing)),
            },
            Attr::CpuAffinity => match self.per_task.get(&(t.id.tgid, Attr::CpuAffinity)) {
                Some(Ok(PerTask::Cpus(cpus))) => PyList::new(py, cpus)?.into_any(),
                Some(Err(why)) => return Ok(Err(*why)),
                _ => return Ok(Err(Missing::Gone)),
            },
            // The tty number the pass read, mapped as psutil maps it (None: no terminal).
            Attr::Terminal => match base {
                Some(b) => match self.files().terminal(u64::from(b.tty_nr)) {
                    Some(p) => os_str(py, &p)?,
                    None => py.None().into_bound(py),
                },
                None => return Ok(Err(missing)),
            },
            Attr::Threads => match self.threads.get(&t.id.tgid) {
                Some(list) => {
                    let out = PyList::empty(py);
                    for &(tid, user, system) in list {
                        out.append(ty.make(
                            py,
                            &ty.pthread,
                            [
                                tid.into_bound_py_any(py)?,
                                user.into_bound_py_any(py)?,
                                system.into_bound_py_any(py)?,
                            ],
                        )?)?;
                    }
                    out.into_any()
                }
                None => return Ok(Err(Missing::Gone)),
            },
        };
        Ok(Ok(v))
    }

    /// Reads, for each of `tasks`, what the asked attributes need beyond the pass (with a
    /// system call or a directory listing each), when the pass is made rather than when an
    /// `info` dict is: the CPU affinity (`sched_getaffinity`) and, without root, the
    /// descriptor count by listing (psutil's `num_fds`, which needs ptrace access). A
    /// process found gone is `Missing::Gone` ([`Ctx::gone`]); an error that says nothing of
    /// the process (out of descriptors or memory) is raised.
    fn read_per_task(&mut self, tasks: &[Task], attrs: &[Attr]) -> PyResult<()> {
        let affinity = attrs.contains(&Attr::CpuAffinity);
        let fds = attrs.contains(&Attr::NumFds) && !self.root;
        if !affinity && !fds {
            return Ok(());
        }
        let classify = |t: &Task, e: std::io::Error| -> PyResult<Missing> {
            match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => Ok(Missing::Denied),
                Some(libc::ESRCH) | Some(libc::ENOENT) if is_zombie(t) => Ok(Missing::Zombie),
                Some(libc::ESRCH) | Some(libc::ENOENT) => Ok(Missing::Gone),
                _ => Err(e.into()),
            }
        };
        for t in tasks {
            let pid = t.id.tgid;
            if affinity {
                let v = match self.files().cpu_affinity(pid) {
                    Ok(cpus) => Ok(PerTask::Cpus(cpus)),
                    Err(e) => Err(classify(t, e)?),
                };
                self.per_task.insert((pid, Attr::CpuAffinity), v);
            }
            if fds {
                let v = match self.files().fd_count(pid) {
                    Ok(n) => Ok(PerTask::Count(n)),
                    Err(e) => Err(classify(t, e)?),
                };
                self.per_task.insert((pid, Attr::NumFds), v);
            }
        }
        Ok(())
    }

    /// Whether a read of [`Ctx::read_per_task`] found `pid` gone (psutil's `process_iter`
    /// skips such a process).
    fn gone(&self, pid: i32) -> bool {
        [Attr::CpuAffinity, Attr::NumFds]
            .iter()
            .any(|a| matches!(self.per_task.get(&(pid, *a)), Some(Err(Missing::Gone))))
    }

    /// Reads every thread of every process (of `pid` alone when given) for the
    /// `threads` attribute: one more pass, of threads, with their CPU times.
    fn load_threads(
        &mut self,
        py: Python<'_>,
        attrs: &[Attr],
        backend: Backend,
        pid: Option<i32>,
    ) -> PyResult<()> {
        if !attrs.contains(&Attr::Threads) {
            return Ok(());
        }
        let groups = Groups {
            stat: true,
            ..Groups::default()
        };
        let snap = match pid {
            None => crate::interrupt::run(py, move |_| {
                host::counted_with_last(|| {
                    host::bulk(backend, Selector::AllThreads, groups, false, false)
                })
            })?,
            Some(pid) => {
                let q = Query::new(Selector::ThreadsOf(pid), groups);
                py.detach(|| host::one(&q, false))
            }
        }
        .map_err(crate::collect_error)?;
        for t in &snap.tasks {
            if let Some(st) = &t.stat {
                self.threads.entry(t.id.tgid).or_default().push((
                    t.id.tid,
                    st.utime_ns as f64 / 1e9,
                    st.stime_ns as f64 / 1e9,
                ));
            }
        }
        for list in self.threads.values_mut() {
            list.sort_unstable_by(|a, b| psutil_tid_order(a.0, b.0));
        }
        Ok(())
    }

    /// Reads the command lines of tasks whose 15-byte names they may complete, when the
    /// command line itself was not asked for.
    fn complete_names(
        &mut self,
        py: Python<'_>,
        snap: &Snapshot,
        attrs: &[Attr],
        whole: bool,
    ) -> PyResult<()> {
        if !attrs.contains(&Attr::Name) || attrs.contains(&Attr::Cmdline) {
            return Ok(());
        }
        let ids: Vec<(i32, i32)> = snap
            .tasks
            .iter()
            .filter(|t| {
                t.base
                    .as_ref()
                    .is_some_and(|b| b.comm.len() >= 15 && !b.kthread)
            })
            .map(|t| (t.id.tgid, t.id.tid))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let groups = Groups {
            cmdline: true,
            ..Groups::default()
        };
        let filled = if whole {
            py.detach(|| host::fill(&ids, groups))
                .map_err(crate::collect_error)?
        } else {
            // The process's own (a thread id's too, as psutil's Process(tid) reads it).
            let tasks = py
                .detach(|| host::one_task(ids[0].0, groups, false))
                .map_err(crate::collect_error)?
                .tasks;
            if tasks.is_empty() {
                self.name_gone = Some(ids[0]);
            }
            tasks
        };
        for t in filled {
            if let Some(c) = t.cmdline {
                self.name_lines.insert((t.id.tgid, t.id.tid), c);
            }
        }
        Ok(())
    }
}

/// The names of every attribute a pass answers, in psutil's spelling, and whether
/// `snapshot()` has columns for it.
#[pyfunction]
pub(crate) fn attr_names() -> Vec<(&'static str, bool)> {
    ATTRS.iter().map(|(n, a)| (*n, a.columnar())).collect()
}

fn backend_arg(b: &str) -> PyResult<Backend> {
    b.parse::<Backend>()
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// The whole-system pass `process_iter(attrs)` needs: the parsed attributes, the snapshot
/// of every process with the groups they read, their names as interned dict keys, and the
/// backend asked for.
type Pass<'py> = (Vec<Attr>, Snapshot, Vec<Bound<'py, PyString>>, Backend);

fn pass_for<'py>(py: Python<'py>, attrs: &[String], backend: &str) -> PyResult<Pass<'py>> {
    let attrs = parse_attrs(attrs)?;
    let backend = backend_arg(backend)?;
    let (groups, real_ids) = groups_for(&attrs);
    let snap = crate::interrupt::run(py, move |_| {
        host::bulk(backend, Selector::AllProcesses, groups, real_ids, false)
    })?
    .map_err(crate::collect_error)?;
    let keys = attrs
        .iter()
        .map(|a| PyString::intern(py, a.name()))
        .collect();
    Ok((attrs, snap, keys, backend))
}

/// Python's cyclic garbage collector paused while this lives (when it was running).
///
/// `process_objects` makes about ten objects per process, most of them containers the
/// collector tracks (the info dict, the Process, the command line's list): at 50,000
/// processes, collections triggered meanwhile cost 200 ms of the 340 ms it took to make
/// them, traversing again and again everything already made (and whatever else the caller
/// holds: psutil's cache of Process objects, in the benchmark). None of these objects can
/// form a cycle while they are made, so the collector has nothing to find in them then.
/// The objects stay tracked: the next collection after the call looks at them once.
struct GcPaused<'py> {
    gc: Option<Bound<'py, PyModule>>,
}

impl<'py> GcPaused<'py> {
    fn new(py: Python<'py>) -> PyResult<GcPaused<'py>> {
        let gc = PyModule::import(py, "gc")?;
        if !gc.call_method0("isenabled")?.is_truthy()? {
            return Ok(GcPaused { gc: None });
        }
        gc.call_method0("disable")?;
        Ok(GcPaused { gc: Some(gc) })
    }
}

impl Drop for GcPaused<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc {
            // Nothing to do about a failure to re-enable it but not hide the call's result.
            let _ = gc.call_method0("enable");
        }
    }
}

/// `process_iter(attrs, ad_value)` as `Process` objects of class `cls` (tasksnap's), sorted by
/// pid, made here in one go. As psutil, a process already in `cache` (pid -> `Process` of
/// the previous call) with the same start time is the same object again; the others are
/// new, with `_pid`, `_start_ns` and `_name` (the name when asked for, else None). Each
/// gets its `info` dict made here (`attrs`, an unreadable one `ad_value`) when `with_info`,
/// else `{}`: made with Python's cyclic collector paused ([`GcPaused`]), which costs less
/// than making them when first read, where the collector runs over whatever the caller
/// holds as often as they are made (psutil's cache of 20,000 objects in the benchmark: 51
/// ms to read every `info` of 20,000 processes against 21 ms with the collector paused).
/// `cache` then holds this call's processes only.
///
/// With `num_cpus` (psutil's `cpu_count()`, given when `cpu_percent` is asked), each
/// object's `cpu_percent` is psutil's "since the last call": its `_cpu_last` (the timer and
/// CPU seconds of its last call, or None) against this pass, 0.0 on a first call; `_cpu_last`
/// is then this pass's, for the next call of either `process_iter` or `Process.cpu_percent`.
#[pyfunction]
#[pyo3(signature = (cls, attrs, ad_value, with_info, cache, backend="auto", num_cpus=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn process_objects<'py>(
    py: Python<'py>,
    cls: Bound<'py, PyType>,
    attrs: Vec<String>,
    ad_value: Bound<'py, PyAny>,
    with_info: bool,
    cache: Bound<'py, PyDict>,
    backend: &str,
    num_cpus: Option<u32>,
) -> PyResult<Bound<'py, PyList>> {
    let (attrs, snap, keys, backend) = pass_for(py, &attrs, backend)?;
    // psutil's timer: monotonic seconds times the CPU count, read as the pass ends.
    let cpus = f64::from(num_cpus.unwrap_or(1).max(1));
    let timer_s =
        num_cpus.map(|_| tasksnap_sys::clock_ns(libc::CLOCK_MONOTONIC) as f64 / 1e9 * cpus);
    let mut ctx = Ctx::new(py, &snap, &attrs)?;
    ctx.complete_names(py, &snap, &attrs, true)?;
    ctx.load_threads(py, &attrs, backend, None)?;
    let mut tasks = snap.tasks;
    tasks.retain(|t| t.id.is_leader());
    // A process found gone by a read beyond the pass is left out, as psutil's loop skips
    // one that raises NoSuchProcess.
    ctx.read_per_task(&tasks, &attrs)?;
    tasks.retain(|t| !ctx.gone(t.id.tgid));
    let cpu_last = PyString::intern(py, "_cpu_last");
    let [pid_attr, start_attr, name_attr, info_attr] =
        ["_pid", "_start_ns", "_name", "_info"].map(|n| PyString::intern(py, n));
    let name_key = attrs
        .iter()
        .position(|a| *a == Attr::Name)
        .map(|i| keys[i].clone());
    let new = ObjectNew::of(&cls)?;
    let none = py.None().into_bound(py);
    let _paused = GcPaused::new(py)?;
    let seen = PyDict::new(py);
    let mut out = Vec::with_capacity(tasks.len());
    for t in &tasks {
        let pid = t.id.tgid.into_pyobject(py)?;
        // The same process: same pid and start time; a reused pid is a new Process.
        let same = match cache.get_item(&pid)? {
            Some(p) if same_process(&p, t)? => Some(p),
            _ => None,
        };
        let p = match same {
            Some(p) => p,
            None => {
                let p = new.call(py, &cls)?;
                p.setattr(&pid_attr, &pid)?;
                p.setattr(&start_attr, t.id.start_time_ns)?;
                p.setattr(&name_attr, &none)?;
                p
            }
        };
        // psutil's cpu_percent since this object's last call (a new object: its first call,
        // 0.0), then this pass's figures kept for the next one.
        if let (Some(timer_s), Some(st)) = (timer_s, &t.stat) {
            let proc_s = cpu_ticks_s(st);
            let last = p.getattr(&cpu_last).ok();
            let pct = match last.and_then(|v| v.extract::<(f64, f64)>().ok()) {
                Some((st1, pt1)) => psutil_cpu_percent(proc_s - pt1, timer_s - st1, cpus),
                None => 0.0,
            };
            ctx.cpu_percent.insert(t.id.tgid, pct);
            p.setattr(&cpu_last, (timer_s, proc_s))?;
        }
        let info = PyDict::new(py);
        if with_info {
            for (a, k) in attrs.iter().zip(&keys) {
                match ctx.value(py, *a, t)? {
                    Ok(v) => info.set_item(k, v)?,
                    Err(_) => info.set_item(k, &ad_value)?,
                }
            }
            if let Some(k) = &name_key {
                if let Some(n) = info.get_item(k)? {
                    p.setattr(&name_attr, n)?;
                }
            }
        }
        p.setattr(&info_attr, info)?;
        seen.set_item(pid, &p)?;
        out.push(p);
    }
    cache.clear();
    cache.update(seen.as_mapping())?;
    PyList::new(py, out)
}

/// psutil's order of a process's threads: their ids sorted as text (it sorts the names of
/// /proc/PID/task), so 1 comes before 59 and 2016626 between them.
fn psutil_tid_order(a: i32, b: i32) -> std::cmp::Ordering {
    a.to_string().cmp(&b.to_string())
}

/// Whether the cached `Process` `p` is `t`'s process: same start time (in clock ticks, so
/// that a pass of the other backend agrees); a reused pid is another process, as in psutil.
fn same_process(p: &Bound<'_, PyAny>, t: &Task) -> PyResult<bool> {
    let start: Option<u64> = p.getattr("_start_ns").ok().and_then(|v| v.extract().ok());
    Ok(start.is_some_and(|ns| host::start_ticks(ns) == host::start_ticks(t.id.start_time_ns)))
}

/// A process's user + system CPU seconds as psutil counts them: each in whole clock ticks
/// (/proc's unit), so that a pass of either backend (the BPF one has nanoseconds) gives the
/// same figure, and `cpu_percent` does not jump when `auto` changes backend between calls.
fn cpu_ticks_s(st: &tasksnap_model::Stat) -> f64 {
    let ticks = host::ns_to_ticks(st.utime_ns).saturating_add(host::ns_to_ticks(st.stime_ns));
    ticks as f64 / host::clk_tck() as f64
}

/// psutil's `cpu_percent` from the CPU seconds a process used and the timer's seconds
/// (monotonic seconds times `num_cpus`) between two calls: the share of one CPU, rounded to
/// one decimal as Python's `round(x, 1)` does (correctly rounded from the exact value).
pub(crate) fn psutil_cpu_percent(delta_proc_s: f64, delta_timer_s: f64, num_cpus: f64) -> f64 {
    if delta_timer_s == 0.0 {
        return 0.0;
    }
    let pct = delta_proc_s / delta_timer_s * 100.0 * num_cpus;
    format!("{pct:.1}").parse().unwrap_or(pct)
}

/// `object.__new__(cls)` for a plain class (`Process`): its `tp_alloc` called directly,
/// which is all `object.__new__` does for a class that is not abstract, given no arguments;
/// or, for any other class, the call itself.
struct ObjectNew(Option<pyo3::ffi::allocfunc>);

impl ObjectNew {
    fn of(cls: &Bound<'_, PyType>) -> PyResult<ObjectNew> {
        let py = cls.py();
        let object = py.get_type::<PyAny>();
        const HEAPTYPE: u64 = 1 << 9; // Py_TPFLAGS_HEAPTYPE
        const ABSTRACT: u64 = 1 << 20; // Py_TPFLAGS_IS_ABSTRACT
        let flags: u64 = cls.getattr("__flags__")?.extract()?;
        let plain = flags & HEAPTYPE != 0
            && flags & ABSTRACT == 0
            && cls.getattr("__new__")?.is(object.getattr("__new__")?)
            && cls.is_subclass(&object)?;
        if !plain {
            return Ok(ObjectNew(None));
        }
        // SAFETY: `cls` is a live heap type (checked above), for which PyType_GetSlot is
        // defined in every Python of the stable ABI; it returns the tp_alloc function (or
        // NULL), which has the allocfunc signature, and Option<fn> is how a nullable
        // function pointer is represented.
        let alloc = unsafe {
            let p = pyo3::ffi::PyType_GetSlot(cls.as_ptr().cast(), pyo3::ffi::Py_tp_alloc);
            std::mem::transmute::<*mut std::ffi::c_void, Option<pyo3::ffi::allocfunc>>(p)
        };
        Ok(ObjectNew(alloc))
    }

    fn call<'py>(&self, py: Python<'py>, cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
        let Some(alloc) = self.0 else {
            return py.get_type::<PyAny>().call_method1("__new__", (cls,));
        };
        // SAFETY: `alloc` is `cls`'s own tp_alloc (ObjectNew::of, same class): called with
        // the type and 0 items it returns a new reference to a zeroed instance (its slots
        // empty, as object.__new__ leaves them) or NULL with an exception set.
        unsafe {
            let obj = alloc(cls.as_ptr().cast(), 0);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, obj))
        }
    }
}

/// `NoSuchProcess(pid, name, msg)`. `name` is what the caller's `Process` holds, passed
/// through untouched (a name that is not valid UTF-8 is a surrogate-escaped `str`, which
/// would not convert to Rust text).
fn no_such(
    py: Python<'_>,
    pid: i32,
    name: Option<&Bound<'_, PyAny>>,
    msg: Option<&str>,
) -> PyResult<PyErr> {
    let e = crate::types()?
        .no_such_process
        .bind(py)
        .call1((pid, name, msg))?;
    Ok(PyErr::from_value(e))
}

/// The one task of `pid` from a procfs query, checked against the start time the caller
/// knows (a different one: the pid was reused). With `thread_ids`, a thread id that is not
/// a process is read as psutil's `Process(tid)` reads it ([`host::one_task`]); without, it
/// is no process (`pid_exists`).
fn the_one(
    py: Python<'_>,
    pid: i32,
    groups: Groups,
    real_ids: bool,
    expect_start_ns: Option<u64>,
    name: Option<&Bound<'_, PyAny>>,
    thread_ids: bool,
) -> PyResult<Snapshot> {
    // Base and stat always: the state (zombie rules) and the start time (identity).
    let groups = Groups {
        base: true,
        stat: true,
        ..groups
    };
    let q = Query::new(Selector::Pid(pid), groups);
    let snap = py
        .detach(|| match host::one(&q, real_ids) {
            Ok(s) if s.tasks.is_empty() && thread_ids => host::one_task(pid, groups, real_ids),
            other => other,
        })
        .map_err(crate::collect_error)?;
    let Some(t) = snap.tasks.first() else {
        return Err(no_such(py, pid, name, None)?);
    };
    if let Some(want) = expect_start_ns {
        if host::start_ticks(want) != host::start_ticks(t.id.start_time_ns) {
            return Err(no_such(
                py,
                pid,
                name,
                Some("process no longer exists and its PID has been reused"),
            )?);
        }
    }
    Ok(snap)
}

/// A `Process`'s attributes: `(start_time_ns, info)` for `pid`. An unreadable attribute is
/// `ad_value` when `use_ad`, else raises `ZombieProcess` or `AccessDenied` as psutil does; a
/// process gone (or a pid reused since `expect_start_ns`) raises `NoSuchProcess`.
///
/// `thread_ids`: a thread id that is not a process is read as the process psutil's
/// `Process(tid)` is (/proc/TID); false for `pid_exists`, which says no to it, as psutil's.
#[pyfunction]
#[pyo3(signature = (pid, attrs, ad_value, use_ad, expect_start_ns=None, name=None, thread_ids=true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn process<'py>(
    py: Python<'py>,
    pid: i32,
    attrs: Vec<String>,
    ad_value: Bound<'py, PyAny>,
    use_ad: bool,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
    thread_ids: bool,
) -> PyResult<(u64, Bound<'py, PyDict>)> {
    let attrs = parse_attrs(&attrs)?;
    let (groups, real_ids) = groups_for(&attrs);
    let snap = the_one(
        py,
        pid,
        groups,
        real_ids,
        expect_start_ns,
        name.as_ref(),
        thread_ids,
    )?;
    let mut ctx = Ctx::new(py, &snap, &attrs)?;
    ctx.complete_names(py, &snap, &attrs, false)?;
    ctx.load_threads(py, &attrs, Backend::Procfs, Some(pid))?;
    ctx.read_per_task(&snap.tasks[..snap.tasks.len().min(1)], &attrs)?;
    let Some(t) = snap.tasks.first() else {
        return Err(no_such(py, pid, name.as_ref(), None)?);
    };
    let info = PyDict::new(py);
    for a in &attrs {
        match ctx.value(py, *a, t)? {
            Ok(v) => info.set_item(a.name(), v)?,
            // A process gone is NoSuchProcess for as_dict too, as psutil's.
            Err(why) if use_ad && why != Missing::Gone => info.set_item(a.name(), &ad_value)?,
            Err(why) => {
                // A file that vanished under the read: the process exited mid-call.
                let gone = why == Missing::Gone
                    || snap.stats.vanished > 0
                    || the_one(
                        py,
                        pid,
                        Groups::default(),
                        false,
                        Some(t.id.start_time_ns),
                        None,
                        thread_ids,
                    )
                    .is_err();
                // psutil's exceptions carry the name its object knows (what its last name()
                // gave: a kernel worker renames itself as it takes other work), else the
                // name read now.
                let comm = match (&name, &t.base) {
                    (Some(n), _) if !n.is_none() => Some(n.clone()),
                    (_, Some(b)) => Some(os_str(py, &b.comm)?),
                    _ => None,
                };
                let types = crate::types()?;
                let e = if why == Missing::TimedOut {
                    let msg = match a {
                        Attr::Exe => format!(
                            "/proc/{pid}/exe: blocked on the file system of the path it names \
                             past the deadline; given up"
                        ),
                        a => format!(
                            "/proc/{pid}/{}: blocked on the process's memory map lock past the \
                             deadline; given up",
                            if *a == Attr::Environ {
                                "environ"
                            } else {
                                "cmdline"
                            }
                        ),
                    };
                    types.read_timeout.bind(py).call1((pid, comm, msg))?
                } else if gone {
                    types.no_such_process.bind(py).call1((pid, comm))?
                } else if why == Missing::Zombie {
                    let ppid = t.base.as_ref().map(|b| b.ppid);
                    types.zombie_process.bind(py).call1((pid, comm, ppid))?
                } else {
                    types.access_denied.bind(py).call1((pid, comm))?
                };
                return Err(PyErr::from_value(e));
            }
        }
    }
    Ok((t.id.start_time_ns, info))
}

/// `Process.threads()`: `pthread(id, user_time, system_time)` for each thread of `pid`.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn threads<'py>(
    py: Python<'py>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let groups = Groups {
        stat: true,
        ..Groups::default()
    };
    the_one(py, pid, groups, false, expect_start_ns, name.as_ref(), true)?;
    let q = Query::new(Selector::ThreadsOf(pid), groups);
    let snap = py
        .detach(|| host::one(&q, false))
        .map_err(crate::collect_error)?;
    if snap.tasks.is_empty() {
        return Err(no_such(py, pid, name.as_ref(), None)?);
    }
    let types = crate::types()?;
    let out = PyList::empty(py);
    let mut tasks: Vec<&Task> = snap.tasks.iter().collect();
    tasks.sort_by(|a, b| psutil_tid_order(a.id.tid, b.id.tid));
    for t in tasks {
        let Some(s) = &t.stat else { continue };
        out.append(types.make(
            py,
            &types.pthread,
            [
                t.id.tid.into_bound_py_any(py)?,
                (s.utime_ns as f64 / 1e9).into_bound_py_any(py)?,
                (s.stime_ns as f64 / 1e9).into_bound_py_any(py)?,
            ],
        )?)?;
    }
    Ok(out)
}

/// `Process.children(recursive)`: `(pid, start_time_ns)` of each child (each descendant),
/// from one whole-system pass.
#[pyfunction]
#[pyo3(signature = (pid, recursive, expect_start_ns=None, name=None, backend="auto"))]
pub(crate) fn children<'py>(
    py: Python<'py>,
    pid: i32,
    recursive: bool,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
    backend: &str,
) -> PyResult<Vec<(i32, u64)>> {
    let backend = backend_arg(backend)?;
    the_one(
        py,
        pid,
        Groups::default(),
        false,
        expect_start_ns,
        name.as_ref(),
        true,
    )?;
    let groups = Groups {
        base: true,
        stat: true,
        ..Groups::default()
    };
    let snap = crate::interrupt::run(py, move |_| {
        host::bulk(backend, Selector::AllProcesses, groups, false, false)
    })?
    .map_err(crate::collect_error)?;
    let mut leaders: Vec<&Task> = snap.tasks.iter().filter(|t| t.id.is_leader()).collect();
    leaders.sort_unstable_by_key(|t| t.id.tgid);
    let mut by_parent: HashMap<i32, Vec<(i32, u64)>> = HashMap::new();
    for t in &leaders {
        if let Some(b) = &t.base {
            by_parent
                .entry(b.ppid)
                .or_default()
                .push((t.id.tgid, t.id.start_time_ns));
        }
    }
    let own_start = snap
        .tasks
        .iter()
        .find(|t| t.id.tgid == pid && t.id.is_leader())
        .map(|t| host::start_ticks(t.id.start_time_ns));
    Ok(descendants(&by_parent, pid, own_start, recursive))
}

/// psutil's `children()` from `{parent: [(child, start ns)]}` (children in pid order): the
/// children of `pid`, or with `recursive` every descendant, in psutil's order (a depth-first
/// walk with a stack: each process's children listed together, the last one's descendants
/// first); a child that started before `pid` (`own_start_ticks`) is a reused pid, left out
/// with its descendants, and a cycle is walked once.
fn descendants(
    by_parent: &HashMap<i32, Vec<(i32, u64)>>,
    pid: i32,
    own_start_ticks: Option<u64>,
    recursive: bool,
) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        if !seen.insert(p) {
            continue;
        }
        for &(c, start) in by_parent.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if own_start_ticks.is_some_and(|own| host::start_ticks(start) < own) {
                continue;
            }
            out.push((c, start));
            todo.push(c);
        }
        if !recursive {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdlines_split_as_psutil_splits_them() {
        assert_eq!(
            split_cmdline(b"sleep\x0010\x00"),
            vec![&b"sleep"[..], b"10"]
        );
        assert_eq!(split_cmdline(b""), Vec::<&[u8]>::new());
        // setproctitle: spaces, no NUL.
        assert_eq!(
            split_cmdline(b"sshd: bob [priv]"),
            vec![&b"sshd:"[..], b"bob", b"[priv]"]
        );
        // One NUL-terminated argument with spaces.
        assert_eq!(
            split_cmdline(b"nginx: worker\x00"),
            vec![&b"nginx:"[..], b"worker"]
        );
        // An empty argument survives.
        assert_eq!(split_cmdline(b"a\x00\x00b\x00"), vec![&b"a"[..], b"", b"b"]);
    }

    #[test]
    fn long_names_come_from_the_first_argument() {
        let comm = b"gnome-keyring-d";
        assert_eq!(
            long_name(comm, Some(b"/usr/bin/gnome-keyring-daemon\x00--start\x00")),
            b"gnome-keyring-daemon"
        );
        assert_eq!(long_name(comm, Some(b"/usr/bin/other\x00")), comm);
        assert_eq!(long_name(b"short", Some(b"/bin/shorter\x00")), b"short");
        assert_eq!(long_name(comm, None), comm);
    }

    #[test]
    fn descendants_in_psutil_order() {
        // 1 -> {10, 20}, 10 -> {11}, 20 -> {21, 22}, 22 -> {1} (a cycle), 30 started
        // before 1 (a reused pid: left out with its child 31).
        let tick = 1_000_000_000 / host::clk_tck();
        let mut m: HashMap<i32, Vec<(i32, u64)>> = HashMap::new();
        m.insert(0, vec![(1, 5 * tick)]);
        m.insert(1, vec![(10, 6 * tick), (20, 6 * tick), (30, tick)]);
        m.insert(10, vec![(11, 7 * tick)]);
        m.insert(20, vec![(21, 7 * tick), (22, 7 * tick)]);
        m.insert(22, vec![(1, 5 * tick)]);
        m.insert(30, vec![(31, 8 * tick)]);
        let pids = |v: Vec<(i32, u64)>| v.into_iter().map(|(p, _)| p).collect::<Vec<_>>();
        assert_eq!(pids(descendants(&m, 1, Some(5), false)), vec![10, 20]);
        assert_eq!(
            pids(descendants(&m, 1, Some(5), true)),
            vec![10, 20, 21, 22, 1, 11]
        );
    }

    #[test]
    fn every_attr_round_trips_by_name() {
        for (n, a) in ATTRS {
            assert_eq!(Attr::parse(n), Some(a));
            assert_eq!(a.name(), n);
        }
        assert_eq!(Attr::parse("cwd"), None);
    }
}
