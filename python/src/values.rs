//! A task's attributes as psutil's values (same units, same named tuples, same rules for
//! zombies and unreadable files): [`Ctx`] holds what every value of one call needs, made once
//! per call, and [`Ctx::value`] makes one attribute's value for one task, or says why it is
//! missing ([`Missing`]).

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use pyo3::IntoPyObjectExt;
use tasksnap_collect::{FilesError, ProcessFiles};
use tasksnap_model::{Backend, Group, Groups, Query, Selector, Snapshot, Task, TaskState};

use crate::attrs::{caller_is_root, Attr};
use crate::host;
use crate::psutil::{environ_pairs, guess_exe, long_name, os_str, split_cmdline, status_name};

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

/// A value, or why there is none.
type Made<'py> = Result<Bound<'py, PyAny>, Missing>;

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

/// A value [`Ctx::read_per_task`] read.
#[derive(Debug)]
enum PerTask {
    Count(usize),
    Cpus(Vec<usize>),
}

pub(crate) fn is_zombie(t: &Task) -> bool {
    t.base
        .as_ref()
        .is_some_and(|b| b.state == TaskState::Zombie)
}

/// What every value of one call needs (made once per call, not per value).
pub(crate) struct Ctx {
    types: &'static crate::Types,
    boot_time_s: f64,
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
    pub(crate) cpu_percent: HashMap<i32, f64>,
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
    pub(crate) fn new(py: Python<'_>, snap: &Snapshot, attrs: &[Attr]) -> PyResult<Ctx> {
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

    /// The value of `attr` for `t`, as psutil returns it.
    pub(crate) fn value<'py>(&self, py: Python<'py>, attr: Attr, t: &Task) -> PyResult<Made<'py>> {
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
            Attr::Pid => Some(t.id.tgid.into_bound_py_any(py)?),
            _ if attr.spec().plain => self.plain(py, attr, t)?,
            Attr::Name => return self.name(py, t, missing),
            Attr::Status => base.map(|b| self.status(py, b.state)),
            Attr::Username => match &t.cred {
                Some(c) => Some(match self.users.get(&c.ruid) {
                    Some(n) => n.bind(py).clone(),
                    None => c.ruid.to_string().into_bound_py_any(py)?,
                }),
                None => None,
            },
            Attr::CreateTime => Some(
                host::create_time_s(t.id.start_time_ns, self.boot_time_s).into_bound_py_any(py)?,
            ),
            Attr::Cmdline => return cmdline(py, t, missing),
            Attr::Exe => return self.exe(py, t, missing),
            Attr::Environ => return self.environ(py, t, missing),
            Attr::NumFds if self.root => t.fds.map(|n| n.into_bound_py_any(py)).transpose()?,
            Attr::NumFds | Attr::CpuAffinity => return self.per_task_value(py, attr, t),
            Attr::CpuPercent => self
                .cpu_percent
                .get(&t.id.tgid)
                .map(|p| p.into_bound_py_any(py))
                .transpose()?,
            Attr::MemoryPercent => match (t.mem.as_ref(), self.mem_total_bytes) {
                (Some(m), Some(total)) if total > 0 => {
                    Some((m.rss_bytes as f64 / total as f64 * 100.0).into_bound_py_any(py)?)
                }
                _ => None,
            },
            // The tty number the pass read, mapped as psutil maps it (None: no terminal).
            Attr::Terminal => match base {
                Some(b) => Some(match self.files().terminal(u64::from(b.tty_nr)) {
                    Some(p) => os_str(py, &p)?,
                    None => py.None().into_bound(py),
                }),
                None => None,
            },
            Attr::Threads => return self.threads_value(py, t),
            // Plain attributes ([`crate::attrs::Spec::plain`]), made above.
            Attr::Ppid
            | Attr::CpuTimes
            | Attr::MemoryInfo
            | Attr::NumThreads
            | Attr::IoCounters
            | Attr::Uids
            | Attr::Gids
            | Attr::Nice
            | Attr::NumCtxSwitches
            | Attr::CpuNum => None,
        };
        Ok(v.ok_or(missing))
    }

    /// A plain attribute's value ([`crate::attrs::Spec::plain`]): its one field's, or
    /// psutil's named tuple of its fields' (`None` unless the task has them all).
    fn plain<'py>(
        &self,
        py: Python<'py>,
        attr: Attr,
        t: &Task,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ty = self.types;
        let zero = || 0u64.into_bound_py_any(py);
        Ok(match attr {
            Attr::Uids => self.tuple::<3>(py, attr, t, &ty.puids)?,
            Attr::Gids => self.tuple::<3>(py, attr, t, &ty.pgids)?,
            Attr::IoCounters => self.tuple::<6>(py, attr, t, &ty.pio)?,
            Attr::NumCtxSwitches => self.tuple::<2>(py, attr, t, &ty.pctxsw)?,
            Attr::CpuTimes => match self.fields::<4>(py, attr, t)? {
                Some([user, system, children_user, children_system]) => Some(ty.make(
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
                )?),
                None => None,
            },
            Attr::MemoryInfo => match self.fields::<5>(py, attr, t)? {
                // lib and dirty: always 0 since Linux 2.6 (statm), as psutil says.
                Some([rss, vms, shared, text, data]) => Some(ty.make(
                    py,
                    &ty.pmem,
                    [rss, vms, shared, text, zero()?, data, zero()?],
                )?),
                None => None,
            },
            _ => field_value(py, attr.fields()[0], t)?,
        })
    }

    /// psutil's named tuple `class` of `attr`'s N fields, `None` unless the task has them
    /// all.
    fn tuple<'py, const N: usize>(
        &self,
        py: Python<'py>,
        attr: Attr,
        t: &Task,
        class: &Py<PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.fields::<N>(py, attr, t)? {
            Some(v) => Ok(Some(self.types.make(py, class, v)?)),
            None => Ok(None),
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
        for f in attr.fields() {
            match field_value(py, f, t)? {
                Some(v) => out.push(v),
                None => return Ok(None),
            }
        }
        Ok(out.try_into().ok())
    }

    /// `name`: the comm, completed from the command line when the kernel cut it.
    fn name<'py>(&self, py: Python<'py>, t: &Task, missing: Missing) -> PyResult<Made<'py>> {
        let Some(b) = &t.base else {
            return Ok(Err(missing));
        };
        if self.name_gone == Some((t.id.tgid, t.id.tid)) {
            return Ok(Err(Missing::Gone));
        }
        let line = t.cmdline.as_deref().or_else(|| {
            self.name_lines
                .get(&(t.id.tgid, t.id.tid))
                .map(Vec::as_slice)
        });
        Ok(Ok(os_str(py, long_name(&b.comm, line))?))
    }

    /// `exe`: the link cleaned as psutil cleans it, or psutil's guess when it is denied.
    fn exe<'py>(&self, py: Python<'py>, t: &Task, missing: Missing) -> PyResult<Made<'py>> {
        Ok(Ok(match &t.exe {
            // A zombie's link is gone (psutil: ZombieProcess); a kernel thread has none
            // (psutil: "").
            Some(l) if l.is_empty() && is_zombie(t) => return Ok(Err(Missing::Zombie)),
            Some(l) => match self.files().clean_path(t.id.tgid, l) {
                Ok(p) => os_str(py, &p)?,
                Err(FilesError::TimedOut { .. }) => return Ok(Err(Missing::TimedOut)),
                Err(FilesError::Gone { .. }) => return Ok(Err(Missing::Gone)),
                Err(_) => return Ok(Err(Missing::Denied)),
            },
            // Denied: psutil guesses from the command line, which a zombie no longer has
            // (psutil: ZombieProcess, whoever asks).
            None if is_zombie(t) => return Ok(Err(Missing::Zombie)),
            None => match t.cmdline.as_deref().and_then(guess_exe) {
                Some(g) => os_str(py, g)?,
                None => return Ok(Err(missing)),
            },
        }))
    }

    /// `environ` as a dict.
    ///
    /// A kernel thread or zombie is left unread on purpose. A live process's environment is
    /// unread when the kernel refused it (EACCES: another user's, or root's too when the
    /// ptrace check fails, e.g. a reader in a user namespace without CAP_SYS_PTRACE over the
    /// target's: cap_ptrace_access_check's EPERM, which mm_access turns into EACCES), or when
    /// the read was given up: the snapshot counts that (for one process, its own count).
    fn environ<'py>(&self, py: Python<'py>, t: &Task, missing: Missing) -> PyResult<Made<'py>> {
        let Some(block) = &t.environ else {
            let kthread = t.base.as_ref().is_some_and(|b| b.kthread);
            if self.gave_up && !is_zombie(t) && !kthread {
                return Ok(Err(Missing::TimedOut));
            }
            return Ok(Err(missing));
        };
        let d = PyDict::new(py);
        for (k, v) in environ_pairs(block) {
            d.set_item(os_str(py, k)?, os_str(py, v)?)?;
        }
        Ok(Ok(d.into_any()))
    }

    /// A value [`Ctx::read_per_task`] read (`num_fds` without root, `cpu_affinity`).
    fn per_task_value<'py>(&self, py: Python<'py>, attr: Attr, t: &Task) -> PyResult<Made<'py>> {
        Ok(match self.per_task.get(&(t.id.tgid, attr)) {
            Some(Ok(PerTask::Count(n))) => Ok(n.into_bound_py_any(py)?),
            Some(Ok(PerTask::Cpus(cpus))) => Ok(PyList::new(py, cpus)?.into_any()),
            Some(Err(why)) => Err(*why),
            None => Err(Missing::Gone),
        })
    }

    /// `threads`: psutil's `pthread` of each thread the pass of threads read.
    fn threads_value<'py>(&self, py: Python<'py>, t: &Task) -> PyResult<Made<'py>> {
        let ty = self.types;
        let Some(list) = self.threads.get(&t.id.tgid) else {
            return Ok(Err(Missing::Gone));
        };
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
        Ok(Ok(out.into_any()))
    }

    /// Reads, for each of `tasks`, what the asked attributes need beyond the pass (with a
    /// system call or a directory listing each), when the pass is made rather than when an
    /// `info` dict is: the CPU affinity (`sched_getaffinity`) and, without root, the
    /// descriptor count by listing (psutil's `num_fds`, which needs ptrace access). A
    /// process found gone is `Missing::Gone` ([`Ctx::gone`]); an error that says nothing of
    /// the process (out of descriptors or memory) is raised.
    pub(crate) fn read_per_task(&mut self, tasks: &[Task], attrs: &[Attr]) -> PyResult<()> {
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
    pub(crate) fn gone(&self, pid: i32) -> bool {
        [Attr::CpuAffinity, Attr::NumFds]
            .iter()
            .any(|a| matches!(self.per_task.get(&(pid, *a)), Some(Err(Missing::Gone))))
    }

    /// Reads every thread of every process (of `pid` alone when given) for the
    /// `threads` attribute: one more pass, of threads, with their CPU times.
    pub(crate) fn load_threads(
        &mut self,
        py: Python<'_>,
        attrs: &[Attr],
        backend: Backend,
        pid: Option<i32>,
    ) -> PyResult<()> {
        if !attrs.contains(&Attr::Threads) {
            return Ok(());
        }
        let groups = Groups::of(&[Group::Stat]);
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
            list.sort_unstable_by(|a, b| crate::psutil::tid_order(a.0, b.0));
        }
        Ok(())
    }

    /// Reads the command lines of tasks whose 15-byte names they may complete, when the
    /// command line itself was not asked for.
    pub(crate) fn complete_names(
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
        let groups = Groups::of(&[Group::Cmdline]);
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

/// `cmdline`: the command line split as psutil splits it.
fn cmdline<'py>(py: Python<'py>, t: &Task, missing: Missing) -> PyResult<Made<'py>> {
    Ok(match &t.cmdline {
        None if t.cmdline_timed_out => Err(Missing::TimedOut),
        // A zombie has no memory, hence no arguments: psutil raises ZombieProcess.
        Some(c) if c.is_empty() && is_zombie(t) => Err(Missing::Zombie),
        Some(c) => {
            let args = split_cmdline(c)
                .into_iter()
                .map(|a| os_str(py, a))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, args)?.into_any())
        }
        None => Err(missing),
    })
}
