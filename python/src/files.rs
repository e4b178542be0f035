//! psutil's `Process` methods that read a per-process file or make a system call no
//! snapshot group carries: `cwd`, `open_files`, `memory_maps`, `memory_full_info`'s extras,
//! `net_connections` (and the module-level one), `ionice` and `terminal`. Each asks the
//! library ([`tasksnap_collect::ProcessFiles`], through the host's roots) and hands back
//! plain tuples; `tasksnap/_files.py` makes psutil's named tuples of them.
//!
//! Every call first checks that `pid` is still the process the caller's `Process` stands for
//! (its start time, as `attrs` does), then turns the library's typed errors into psutil's
//! exceptions: `NoSuchProcess`, `ZombieProcess`, `AccessDenied`; a read given up on a
//! blocked mmap lock, or a stat of a path the process names given up on a file system that
//! does not answer, is a `ReadTimeout` saying so (an `AccessDenied` and a `TimeoutError`).

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use tasksnap_collect::Host;
use tasksnap_collect::{Endpoint, FilesError, Identity, ProcessFiles, SocketTable};

use crate::host::{self, PerRoot};
use crate::psutil::os_str;

/// The reader, on the roots the binding's hosts read.
static FILES: PerRoot<ProcessFiles> = PerRoot::new(|opts| Host::open(opts).process_files());

/// psutil's exception for `e` on `pid`, named `name` (what the caller's `Process` holds).
fn to_py(py: Python<'_>, pid: i32, name: Option<&Bound<'_, PyAny>>, e: FilesError) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let t = crate::types()?;
        Ok(match e {
            FilesError::Gone { .. } => {
                PyErr::from_value(t.no_such_process.bind(py).call1((pid, name))?)
            }
            FilesError::Zombie { ppid, .. } => {
                PyErr::from_value(t.zombie_process.bind(py).call1((pid, name, ppid))?)
            }
            FilesError::Denied { .. } => {
                PyErr::from_value(t.access_denied.bind(py).call1((pid, name))?)
            }
            e @ FilesError::TimedOut { .. } => {
                PyErr::from_value(t.read_timeout.bind(py).call1((pid, name, e.to_string()))?)
            }
            FilesError::Io { what, error } => match error.raw_os_error() {
                Some(errno) => PyOSError::new_err((errno, format!("{what}: {error}"))),
                None => PyOSError::new_err(format!("{what}: {error}")),
            },
        })
    })();
    made.unwrap_or_else(|e| e)
}

/// Why a call did not read: the library's error, or the pid now names another process.
enum Failed {
    Files(FilesError),
    Reused,
}

/// Checks that `pid` is the process the caller's `Process` stands for (its start time
/// from one read of `stat`, [`Identity`]: a snapshot of one process would cost ten times
/// the method it guards), then runs `read` on it; both without the interpreter's lock.
/// `NoSuchProcess` when the process is gone or its pid was reused.
fn read<T: Send>(
    py: Python<'_>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<&Bound<'_, PyAny>>,
    read: impl FnOnce(&ProcessFiles, &Identity) -> Result<T, FilesError> + Send,
) -> PyResult<T> {
    let files = FILES.get();
    let r = py.detach(|| {
        let id = files.identity(pid).map_err(Failed::Files)?;
        if expect_start_ns.is_some_and(|want| host::start_ticks(want) != id.start_ticks) {
            return Err(Failed::Reused);
        }
        read(&files, &id).map_err(Failed::Files)
    });
    r.map_err(|f| match f {
        Failed::Files(e) => to_py(py, pid, name, e),
        Failed::Reused => {
            let made = crate::types().and_then(|t| {
                t.no_such_process.bind(py).call1((
                    pid,
                    name,
                    "process no longer exists and its PID has been reused",
                ))
            });
            match made {
                Ok(e) => PyErr::from_value(e),
                Err(e) => e,
            }
        }
    })
}

/// `Process.cwd()`.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn cwd<'py>(
    py: Python<'py>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let p = read(py, pid, expect_start_ns, name.as_ref(), |f, _| f.cwd(pid))?;
    os_str(py, &p)
}

/// `(path, fd, position, mode, flags)`: psutil's `popenfile` fields.
type OpenFileRow<'py> = (Bound<'py, PyAny>, i32, u64, &'static str, u32);

/// `Process.open_files()`: `(path, fd, position, mode, flags)` each.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn open_files<'py>(
    py: Python<'py>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Vec<OpenFileRow<'py>>> {
    let files = read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
        f.open_files(pid)
    })?;
    files
        .into_iter()
        .map(|o| {
            Ok((
                os_str(py, &o.path)?,
                o.fd,
                o.position_bytes,
                o.mode,
                o.flags,
            ))
        })
        .collect()
}

/// `Process.memory_maps(grouped)`: `(path, rss, size, pss, shared_clean, shared_dirty,
/// private_clean, private_dirty, referenced, anonymous, swap)` each, grouped by path; or,
/// not grouped, `(addr, perms, path, ...)` per mapping.
#[pyfunction]
#[pyo3(signature = (pid, grouped=true, expect_start_ns=None, name=None))]
pub(crate) fn memory_maps<'py>(
    py: Python<'py>,
    pid: i32,
    grouped: bool,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Vec<Bound<'py, pyo3::types::PyTuple>>> {
    let row = |head: Vec<Bound<'py, PyAny>>, figures: [u64; 10]| -> PyResult<_> {
        let mut items = head;
        for v in figures {
            items.push(v.into_pyobject(py)?.into_any());
        }
        pyo3::types::PyTuple::new(py, items)
    };
    if grouped {
        let maps = read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
            f.memory_maps_grouped(pid)
        })?;
        maps.into_iter()
            .map(|(path, fig)| row(vec![os_str(py, &path)?], fig.to_array()))
            .collect()
    } else {
        let maps = read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
            f.memory_maps(pid)
        })?;
        maps.into_iter()
            .map(|m| {
                row(
                    vec![
                        os_str(py, &m.addr)?,
                        os_str(py, &m.perms)?,
                        os_str(py, &m.path)?,
                    ],
                    m.figures.to_array(),
                )
            })
            .collect()
    }
}

/// `memory_full_info()`'s extras: `(uss, pss, swap)`, bytes.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn memory_extras(
    py: Python<'_>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'_, PyAny>>,
) -> PyResult<(u64, u64, u64)> {
    let t = read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
        f.smaps_totals(pid)
    })?;
    Ok((t.uss_bytes, t.pss_bytes, t.swap_bytes))
}

fn tables(kind: &str) -> PyResult<&'static [SocketTable]> {
    SocketTable::for_kind(kind).ok_or_else(|| {
        let kinds: Vec<String> = SocketTable::KINDS
            .iter()
            .map(|k| format!("'{k}'"))
            .collect();
        PyValueError::new_err(format!(
            "invalid kind argument '{kind}'; valid ones are: ({})",
            kinds.join(", ")
        ))
    })
}

fn endpoint<'py>(py: Python<'py>, e: &Endpoint) -> PyResult<Bound<'py, PyAny>> {
    Ok(match e {
        Endpoint::None => pyo3::types::PyTuple::empty(py).into_any(),
        Endpoint::Inet(ip, port) => (ip.as_str(), *port).into_pyobject(py)?.into_any(),
        Endpoint::Unix(p) => os_str(py, p)?,
    })
}

/// A connection's fields: `(fd, family, type, laddr, raddr, status)`, plus `pid` when
/// `with_pid`. An inet address is a plain `(ip, port)` (`_files.py` makes it an `addr`).
type Conn<'py> = Bound<'py, pyo3::types::PyTuple>;

fn conns<'py>(
    py: Python<'py>,
    list: Vec<tasksnap_collect::Connection>,
    with_pid: bool,
) -> PyResult<Vec<Conn<'py>>> {
    list.into_iter()
        .map(|c| {
            let mut items: Vec<Bound<'py, PyAny>> = vec![
                c.fd.into_pyobject(py)?.into_any(),
                c.family.into_pyobject(py)?.into_any(),
                c.kind.into_pyobject(py)?.into_any(),
                endpoint(py, &c.local)?,
                endpoint(py, &c.remote)?,
                c.status.into_pyobject(py)?.into_any(),
            ];
            if with_pid {
                items.push(c.pid.into_pyobject(py)?.into_any());
            }
            pyo3::types::PyTuple::new(py, items)
        })
        .collect()
}

/// `Process.net_connections(kind)`.
#[pyfunction]
#[pyo3(signature = (pid, kind="inet", expect_start_ns=None, name=None))]
pub(crate) fn net_connections<'py>(
    py: Python<'py>,
    pid: i32,
    kind: &str,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Vec<Conn<'py>>> {
    let t = tables(kind)?;
    let list = read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
        f.connections(pid, t)
    })?;
    conns(py, list, false)
}

/// The module-level `net_connections(kind)`: `(..., pid)` each.
#[pyfunction]
#[pyo3(signature = (kind="inet"))]
pub(crate) fn all_net_connections<'py>(py: Python<'py>, kind: &str) -> PyResult<Vec<Conn<'py>>> {
    let t = tables(kind)?;
    let list = py
        .detach(|| FILES.get().all_connections(t))
        .map_err(|e| to_py(py, 0, None, e))?;
    conns(py, list, true)
}

/// `Process.ionice()`: `(ioclass, value)`.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn ionice_get(
    py: Python<'_>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'_, PyAny>>,
) -> PyResult<(u32, u32)> {
    read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
        f.ionice(pid)
    })
}

/// `Process.ionice(ioclass, value)` (the arguments checked by `_files.py` as psutil does;
/// the kernel checks the rest).
#[pyfunction]
#[pyo3(signature = (pid, ioclass, value, expect_start_ns=None, name=None))]
pub(crate) fn ionice_set(
    py: Python<'_>,
    pid: i32,
    ioclass: i32,
    value: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    read(py, pid, expect_start_ns, name.as_ref(), |f, _| {
        f.set_ionice(pid, ioclass, value)
    })
}

/// `Process.terminal()`: the path of its controlling terminal, or `None`.
#[pyfunction]
#[pyo3(signature = (pid, expect_start_ns=None, name=None))]
pub(crate) fn terminal<'py>(
    py: Python<'py>,
    pid: i32,
    expect_start_ns: Option<u64>,
    name: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    // A zombie keeps its tty_nr in stat: psutil answers for it too.
    let path = read(py, pid, expect_start_ns, name.as_ref(), |f, id| {
        Ok(f.terminal(id.tty_nr))
    })?;
    match path {
        Some(p) => Ok(Some(os_str(py, &p)?)),
        None => Ok(None),
    }
}

/// The reader on the tree read now: `values.rs` cleans a pass's `exe` paths with it
/// (`ProcessFiles::clean_path`, as psutil cleans them) and maps its terminals (`terminal`).
pub(crate) fn reader() -> std::sync::Arc<ProcessFiles> {
    FILES.get()
}

/// The path of the terminal whose device number is `tty_nr` (a task's `stat` field, as a
/// whole-system pass carries it), or `None`: `terminal()` without reading the process
/// again, for `process_iter`.
#[pyfunction]
pub(crate) fn tty_path(py: Python<'_>, tty_nr: u64) -> PyResult<Option<Bound<'_, PyAny>>> {
    match py.detach(|| FILES.get().terminal(tty_nr)) {
        Some(p) => Ok(Some(os_str(py, &p)?)),
        None => Ok(None),
    }
}

/// Adds this module's functions to `_tasksnap` (one line in lib.rs).
pub(crate) fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cwd, m)?)?;
    m.add_function(wrap_pyfunction!(open_files, m)?)?;
    m.add_function(wrap_pyfunction!(memory_maps, m)?)?;
    m.add_function(wrap_pyfunction!(memory_extras, m)?)?;
    m.add_function(wrap_pyfunction!(net_connections, m)?)?;
    m.add_function(wrap_pyfunction!(all_net_connections, m)?)?;
    m.add_function(wrap_pyfunction!(ionice_get, m)?)?;
    m.add_function(wrap_pyfunction!(ionice_set, m)?)?;
    m.add_function(wrap_pyfunction!(terminal, m)?)?;
    m.add_function(wrap_pyfunction!(tty_path, m)?)?;
    Ok(())
}
