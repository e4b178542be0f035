//! A `Process`'s reads: its attributes (`process`, also `pid_exists` and `as_dict`), its
//! threads and its children, each from a procfs read of that one process checked against
//! the start time the caller's object knows (a different one: the pid was reused).

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;
use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, Task};

use crate::attrs::{groups_for, parse_attrs, Attr};
use crate::host;
use crate::psutil::os_str;
use crate::values::{Ctx, Missing};

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
fn checked_process(
    py: Python<'_>,
    pid: i32,
    groups: Groups,
    real_ids: bool,
    expect_start_ns: Option<u64>,
    name: Option<&Bound<'_, PyAny>>,
    thread_ids: bool,
) -> PyResult<Snapshot> {
    // Base and stat always: the state (zombie rules) and the start time (identity).
    let groups = groups.with(Group::Base).with(Group::Stat);
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
    let snap = checked_process(
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
    ctx.load_threads(py, &attrs, tasksnap_model::Backend::Procfs, Some(pid))?;
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
                    || checked_process(
                        py,
                        pid,
                        Groups::default(),
                        false,
                        Some(t.id.start_time_ns),
                        None,
                        thread_ids,
                    )
                    .is_err();
                return Err(missing_error(py, pid, t, *a, why, gone, name.as_ref())?);
            }
        }
    }
    Ok((t.id.start_time_ns, info))
}

/// psutil's exception for attribute `attr` of process `pid` (read as `t`) missing for
/// `why`: `ReadTimeout` for a read given up, `NoSuchProcess` when the process is `gone`,
/// `ZombieProcess`, else `AccessDenied`. psutil's exceptions carry the name its object knows
/// (`name`: what its last name() gave, as a kernel worker renames itself as it takes other
/// work), else the name read now.
fn missing_error(
    py: Python<'_>,
    pid: i32,
    t: &Task,
    attr: Attr,
    why: Missing,
    gone: bool,
    name: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyErr> {
    let comm = match (name, &t.base) {
        (Some(n), _) if !n.is_none() => Some(n.clone()),
        (_, Some(b)) => Some(os_str(py, &b.comm)?),
        _ => None,
    };
    let types = crate::types()?;
    let e = if why == Missing::TimedOut {
        let msg = match attr {
            Attr::Exe => format!(
                "/proc/{pid}/exe: blocked on the file system of the path it names past the \
                 deadline; given up"
            ),
            a => format!(
                "/proc/{pid}/{}: blocked on the process's memory map lock past the deadline; \
                 given up",
                if a == Attr::Environ {
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
    Ok(PyErr::from_value(e))
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
    let groups = Groups::of(&[Group::Stat]);
    checked_process(py, pid, groups, false, expect_start_ns, name.as_ref(), true)?;
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
    tasks.sort_by(|a, b| crate::psutil::tid_order(a.id.tid, b.id.tid));
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
    let backend = crate::backend_arg(backend)?;
    checked_process(
        py,
        pid,
        Groups::default(),
        false,
        expect_start_ns,
        name.as_ref(),
        true,
    )?;
    let groups = Groups::of(&[Group::Base, Group::Stat]);
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
}
