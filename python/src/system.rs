//! The host figures psutil's module-level helpers report (`cpu_count`, `cpu_times`,
//! `cpu_stats`, `virtual_memory`, `swap_memory`, `getloadavg`, `users`, `pids`), as the raw values
//! the library reads: clock ticks, KiB, pages, utmp bytes. The psutil formulas, the named
//! tuples and the "since the last call" state of `cpu_percent` are the Python side's
//! (`tasksnap/_system.py`), so the arithmetic is Python's own float arithmetic, as psutil's.
//!
//! Everything is asked of one [`Host`] on the tree [`crate::host::options`] names (a fake tree
//! through `TASKSNAP_PROC_ROOT`, another /proc through `PROCFS_PATH`), opened once per tree:
//! this module never reads a file itself. Reads run with the GIL released.

use std::sync::Mutex;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tasksnap_collect::Host;

use crate::host::PerRoot;

/// The host every figure here is read from (no task source is ever opened on it).
static HOST: PerRoot<Mutex<Host>> = PerRoot::new(|opts| Mutex::new(Host::open(opts)));

/// `f` of the host (a panic while it was held leaves nothing half-written: it is only read).
fn with<T>(f: impl FnOnce(&Host) -> T) -> T {
    f(&HOST.get().lock().unwrap_or_else(|e| e.into_inner()))
}

/// Physical memory in bytes (`MemTotal`), psutil's `virtual_memory().total`, the
/// denominator of `memory_percent`; None when the kernel does not say.
#[pyfunction]
pub(crate) fn mem_total_bytes() -> Option<u64> {
    with(|h| h.mem_total_kib()).map(|k| k * 1024)
}

/// The error of a figure whose file could not be read (psutil raises the `OSError` of the
/// open; here the library says only that it could not read).
fn unreadable(what: &str) -> PyErr {
    PyOSError::new_err(format!(
        "{what} under {} could not be read",
        with(|h| h.proc_root().display().to_string())
    ))
}

/// CPUs online (`logical`), as `os.cpu_count()`, or physical cores (sysfs topology, else
/// /proc/cpuinfo); `None` when unknown.
#[pyfunction]
pub(crate) fn cpu_count(py: Python<'_>, logical: bool) -> Option<u64> {
    py.detach(|| {
        with(|h| {
            if logical {
                h.online_cpus()
            } else {
                h.physical_cores()
            }
        })
    })
}

/// One CPU line's fields, as many as the kernel printed (7 to 10), in clock ticks.
fn line_values(l: &tasksnap_collect::CpuLine) -> Vec<u64> {
    l.values()[..l.fields.min(10)].to_vec()
}

/// `(clock ticks per second, the aggregate cpu line's fields, each cpuN line's fields when
/// `percpu`, else none)`, ticks, from one read of /proc/stat.
#[pyfunction]
pub(crate) fn cpu_times(py: Python<'_>, percpu: bool) -> PyResult<(u64, Vec<u64>, Vec<Vec<u64>>)> {
    let (all, per) = py
        .detach(|| with(Host::cpu_lines))
        .ok_or_else(|| unreadable("stat"))?;
    let per = if percpu {
        per.iter().map(line_values).collect()
    } else {
        Vec::new()
    };
    Ok((with(Host::units).clock_ticks_per_s, line_values(&all), per))
}

/// `(ctxt, intr, softirq)` of /proc/stat: context switches, interrupts and soft interrupts
/// since boot (0 where the line is missing).
#[pyfunction]
pub(crate) fn cpu_stats(py: Python<'_>) -> PyResult<(u64, u64, u64)> {
    let c = py
        .detach(|| with(Host::stat_counters))
        .ok_or_else(|| unreadable("stat"))?;
    Ok((c.context_switches, c.interrupts, c.softirqs))
}

/// The /proc/meminfo fields psutil reads, KiB, by their meminfo names (a field the file does
/// not have is not in the dict), with `page_size` (bytes).
#[pyfunction]
pub(crate) fn meminfo(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let m = py
        .detach(|| with(Host::meminfo_fields))
        .ok_or_else(|| unreadable("meminfo"))?;
    let d = PyDict::new(py);
    for (name, v) in [
        ("MemTotal", m.total_kib),
        ("MemFree", m.free_kib),
        ("MemAvailable", m.available_kib),
        ("Buffers", m.buffers_kib),
        ("Cached", m.cached_kib),
        ("SReclaimable", m.slab_reclaimable_kib),
        ("Slab", m.slab_kib),
        ("Shmem", m.shmem_kib),
        ("MemShared", m.mem_shared_kib),
        ("Active", m.active_kib),
        ("Inactive", m.inactive_kib),
        ("Inact_dirty", m.inact_dirty_kib),
        ("Inact_clean", m.inact_clean_kib),
        ("Inact_laundry", m.inact_laundry_kib),
        ("Active(file)", m.active_file_kib),
        ("Inactive(file)", m.inactive_file_kib),
        ("SwapTotal", m.swap_total_kib),
        ("SwapFree", m.swap_free_kib),
    ] {
        if let Some(v) = v {
            d.set_item(name, v)?;
        }
    }
    d.set_item("page_size", with(Host::units).page_size_bytes)?;
    Ok(d)
}

/// The zones' low watermarks of /proc/zoneinfo, summed, pages; `None` when it cannot be
/// read. Only the estimate of available memory on kernels without `MemAvailable` needs it
/// (the file is the largest of these, and the slowest for the kernel to write).
#[pyfunction]
pub(crate) fn zoneinfo_low_pages(py: Python<'_>) -> Option<u64> {
    py.detach(|| with(Host::zoneinfo_low_pages))
}

/// `(pswpin, pswpout)` of /proc/vmstat, pages; `None` when either is missing.
#[pyfunction]
pub(crate) fn swap_io_pages(py: Python<'_>) -> Option<(u64, u64)> {
    py.detach(|| with(Host::swap_io_pages))
}

/// The 1, 5 and 15 minute load averages as `os.getloadavg()` (glibc: `sysinfo(2)`) gives
/// them; /proc/loadavg's on a fake tree.
#[pyfunction]
pub(crate) fn getloadavg(py: Python<'_>) -> PyResult<(f64, f64, f64)> {
    let l = py
        .detach(|| with(Host::load_avg_precise))
        .ok_or_else(|| unreadable("loadavg"))?;
    Ok((l[0], l[1], l[2]))
}

/// Swap in all and free, bytes, from `sysinfo(2)`; `None` on a fake tree.
#[pyfunction]
pub(crate) fn sysinfo_swap_bytes(py: Python<'_>) -> Option<(u64, u64)> {
    py.detach(|| with(Host::sysinfo_swap_bytes))
}

/// One login session as the Python side takes it: user, terminal, host (the bytes of the
/// file), login time in seconds since the epoch, pid.
type Session<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    i32,
    i32,
);

/// The login sessions of the utmp file: `(user, terminal, host, seconds, pid)`, the strings
/// as the bytes the file holds (the Python side decodes them as psutil does).
#[pyfunction]
pub(crate) fn users(py: Python<'_>) -> Vec<Session<'_>> {
    py.detach(|| with(Host::user_sessions))
        .into_iter()
        .map(|r| {
            (
                PyBytes::new(py, &r.user),
                PyBytes::new(py, &r.line),
                PyBytes::new(py, &r.host),
                r.time_s,
                r.pid,
            )
        })
        .collect()
}

/// The pids /proc lists, ascending: psutil's `pids()` (a listing, not a pass: a process is
/// listed whether or not its files can be read).
#[pyfunction]
pub(crate) fn pids(py: Python<'_>) -> PyResult<Vec<i32>> {
    py.detach(|| with(Host::list_pids))
        .map_err(crate::collect_error)
}
