//! The native half of the `tasksnap` Python package (`tasksnap._tasksnap`): a front end like
//! the CLI's commands. It asks tasksnap-collect for tasks ([`host`]: one cached collector for
//! whole-system passes, chosen by the `Host` as `auto` chooses, and a procfs collector for one process),
//! turns tasks into psutil's values ([`values`], for the attributes of [`attrs`]' table, by
//! psutil's rules in [`psutil`]) for one process ([`process`]) or every one ([`iter`]), or
//! into columns ([`columns`], as Arrow arrays handed over through the C data interface:
//! [`arrow`]), and turns two thread-state samples into per-thread shares ([`states`],
//! tasksnap-states' `between`). One process's files are [`files`]; the host's figures
//! [`system`]; the host's cgroups and their counters [`cgroups`]. Long calls run through
//! [`interrupt`], so Ctrl-C interrupts them at once.
//!
//! It never reads /proc itself and never decides on a backend: the library does. What the
//! Python side owns (the `Process` class, argument checking, psutil's exceptions and named
//! tuples) lives in `tasksnap/`, which hands its classes over once through [`setup`].
#![deny(missing_docs)]

mod arrow;
mod attrs;
mod builders;
mod cgroups;
mod columns;
mod files;
mod host;
mod interrupt;
mod iter;
mod process;
mod psutil;
mod states;
mod system;
mod values;

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The Python classes the native half builds values and raises errors with, handed over by
/// `tasksnap/_common.py` (psutil's named tuples and exceptions are defined there, in
/// Python, so that they pickle and compare like psutil's).
#[derive(Debug)]
pub(crate) struct Types {
    pub pcputimes: Py<PyAny>,
    pub pmem: Py<PyAny>,
    pub pio: Py<PyAny>,
    pub pthread: Py<PyAny>,
    pub puids: Py<PyAny>,
    pub pgids: Py<PyAny>,
    pub pctxsw: Py<PyAny>,
    pub no_such_process: Py<PyAny>,
    pub zombie_process: Py<PyAny>,
    pub access_denied: Py<PyAny>,
    /// `ReadTimeout`: a read given up at the library's deadline (an `AccessDenied` and a
    /// `TimeoutError`).
    pub read_timeout: Py<PyAny>,
    /// `tuple.__new__`: a named tuple made through it skips the class's Python `__new__`.
    pub tuple_new: Py<PyAny>,
    /// The named tuple classes' allocator (`tp_alloc`, CPython's `PyType_GenericAlloc`),
    /// when every one of them is a plain tuple underneath (`__slots__ = ()`, as `NamedTuple`
    /// makes them): a named tuple is then allocated and filled directly, as
    /// `tuple.__new__(cls, items)` does inside, without the call, its argument tuples and
    /// the copy of the items.
    tuple_alloc: Option<pyo3::ffi::allocfunc>,
}

/// The classes of the last [`setup`]: a reload of the Python module that defines them
/// (`importlib.reload`) makes new classes and hands them over again, and its
/// `except NoSuchProcess` catches only the new ones. Each set is leaked: a reference handed
/// out before a reload may still be in use, and a module is reloaded a handful of times at
/// most.
static TYPES: AtomicPtr<Types> = AtomicPtr::new(std::ptr::null_mut());

/// The classes handed over by [`setup`]; an error when `_tasksnap` is used on its own.
pub(crate) fn types() -> PyResult<&'static Types> {
    let p = TYPES.load(Ordering::Acquire);
    // SAFETY: a non-null pointer in TYPES comes from Box::into_raw in `setup` and is never
    // freed, so it points to a live, initialised Types for the rest of the process; Types
    // is only read through shared references.
    unsafe { p.as_ref() }
        .ok_or_else(|| PyRuntimeError::new_err("tasksnap._tasksnap.setup() was not called"))
}

impl Types {
    /// A named tuple of class `cls` (one of the classes handed over) holding `items`, which
    /// are numbers: the tuple cannot be part of a reference cycle, so it is taken off the
    /// cyclic garbage collector's lists at once, as CPython's collector does itself with
    /// such tuples the first time it meets them (`_PyTuple_MaybeUntrack`).
    pub fn make<'py, const N: usize>(
        &self,
        py: Python<'py>,
        cls: &Py<PyAny>,
        items: [Bound<'py, PyAny>; N],
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(alloc) = self.tuple_alloc else {
            let t = PyTuple::new(py, items)?;
            return self.tuple_new.bind(py).call1((cls.bind(py), t));
        };
        // SAFETY: `cls` is one of the named tuple classes `setup` checked: a heap type that
        // subclasses tuple with tuple's own instance layout (same basic and item sizes, no
        // __dict__ or other slot), whose tp_alloc is `alloc`. tp_alloc(cls, N) returns a new
        // reference to a zeroed tuple of N slots (or NULL with an exception set), exactly
        // what tuple's own tp_new for a subclass fills (tuple_subtype_new). PyTuple_SetItem
        // takes over each item's reference (also when it fails) and only accepts a tuple
        // whose reference count is 1, which a fresh one is; a tuple left with NULL slots by
        // a failure is freed by tuple's deallocator, which skips them.
        unsafe {
            let tp = cls.as_ptr().cast::<pyo3::ffi::PyTypeObject>();
            let obj = alloc(tp, N as pyo3::ffi::Py_ssize_t);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            let obj = Bound::from_owned_ptr(py, obj);
            for (i, item) in items.into_iter().enumerate() {
                let rc = pyo3::ffi::PyTuple_SetItem(
                    obj.as_ptr(),
                    i as pyo3::ffi::Py_ssize_t,
                    item.into_ptr(),
                );
                if rc != 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast());
            Ok(obj)
        }
    }
}

/// The allocator of the named tuple classes `classes`, when all of them are tuples
/// underneath (see `Types::tuple_alloc`); `None` sends every one through `tuple.__new__`.
fn tuple_alloc(py: Python<'_>, classes: &[&Py<PyAny>]) -> PyResult<Option<pyo3::ffi::allocfunc>> {
    let tuple = py.get_type::<PyTuple>();
    let size = |o: &Bound<'_, PyAny>, name: &str| -> PyResult<isize> { o.getattr(name)?.extract() };
    let mut found: Option<pyo3::ffi::allocfunc> = None;
    for cls in classes {
        let c = cls.bind(py);
        let Ok(t) = c.cast::<pyo3::types::PyType>() else {
            return Ok(None);
        };
        // No instance __dict__ or __weakref__ either: every class of the MRO up to tuple
        // says `__slots__ = ()` (Python 3.11's managed dicts would not show in the sizes).
        let mut slotless = true;
        for k in t.mro().iter() {
            if k.is(&tuple) || k.is(py.get_type::<pyo3::types::PyAny>()) {
                continue;
            }
            let slots = k.getattr("__dict__")?.get_item("__slots__").ok();
            slotless &= slots.is_some_and(|s| s.len().ok() == Some(0));
        }
        let same_layout = slotless
            && t.is_subclass(&tuple)?
            && size(c, "__basicsize__")? == size(tuple.as_any(), "__basicsize__")?
            && size(c, "__itemsize__")? == size(tuple.as_any(), "__itemsize__")?;
        // The classes are made by Python code (heap types): PyType_GetSlot answers for them
        // in every Python the stable ABI covers.
        let heap = t.getattr("__flags__")?.extract::<u64>()? & (1 << 9) != 0; // Py_TPFLAGS_HEAPTYPE
        if !same_layout || !heap {
            return Ok(None);
        }
        // SAFETY: `t` is a live heap type object; PyType_GetSlot only reads its slot table
        // and returns the tp_alloc function pointer (or NULL), which has the allocfunc
        // signature; transmuting a possibly-NULL function pointer to Option<fn> is the
        // documented representation of a nullable function pointer.
        let alloc = unsafe {
            let p = pyo3::ffi::PyType_GetSlot(t.as_ptr().cast(), pyo3::ffi::Py_tp_alloc);
            std::mem::transmute::<*mut std::ffi::c_void, Option<pyo3::ffi::allocfunc>>(p)
        };
        let Some(alloc) = alloc else {
            return Ok(None);
        };
        if found.is_some_and(|f| !std::ptr::fn_addr_eq(f, alloc)) {
            return Ok(None);
        }
        found = Some(alloc);
    }
    Ok(found)
}

/// Hands over the named tuple classes and exceptions (a dict keyed by their psutil names).
#[pyfunction]
fn setup(py: Python<'_>, classes: &Bound<'_, PyDict>) -> PyResult<()> {
    let get = |name: &str| -> PyResult<Py<PyAny>> {
        classes
            .get_item(name)?
            .map(Bound::unbind)
            .ok_or_else(|| PyValueError::new_err(format!("setup: missing {name}")))
    };
    let tuple_new = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
    let mut t = Types {
        pcputimes: get("pcputimes")?,
        pmem: get("pmem")?,
        pio: get("pio")?,
        pthread: get("pthread")?,
        puids: get("puids")?,
        pgids: get("pgids")?,
        pctxsw: get("pctxsw")?,
        no_such_process: get("NoSuchProcess")?,
        zombie_process: get("ZombieProcess")?,
        access_denied: get("AccessDenied")?,
        read_timeout: get("ReadTimeout")?,
        tuple_new,
        tuple_alloc: None,
    };
    t.tuple_alloc = tuple_alloc(
        py,
        &[
            &t.pcputimes,
            &t.pmem,
            &t.pio,
            &t.pthread,
            &t.puids,
            &t.pgids,
            &t.pctxsw,
        ],
    )?;
    // A second call (a reload of the Python module) hands over the new classes.
    TYPES.store(Box::into_raw(Box::new(t)), Ordering::Release);
    Ok(())
}

/// A collection error as a Python exception: the library's typed error, its text kept.
pub(crate) fn collect_error(e: tasksnap_collect::Error) -> PyErr {
    match e {
        tasksnap_collect::Error::Unsupported(msg)
        | tasksnap_collect::Error::BpfUnavailable(msg) => PyRuntimeError::new_err(msg),
        other => PyOSError::new_err(other.to_string()),
    }
}

/// The backend a call names (`auto`, `bpf` or `procfs`), or `ValueError`.
pub(crate) fn backend_arg(b: &str) -> PyResult<tasksnap_model::Backend> {
    b.parse::<tasksnap_model::Backend>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _tasksnap(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(setup, m)?)?;
    m.add_class::<arrow::Columns>()?;
    m.add_function(wrap_pyfunction!(iter::process_objects, m)?)?;
    m.add_function(wrap_pyfunction!(process::process, m)?)?;
    m.add_function(wrap_pyfunction!(process::threads, m)?)?;
    m.add_function(wrap_pyfunction!(process::children, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::attr_names, m)?)?;
    m.add_function(wrap_pyfunction!(columns::snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(columns::column_names, m)?)?;
    m.add_function(wrap_pyfunction!(columns::field_names, m)?)?;
    m.add_function(wrap_pyfunction!(states::states, m)?)?;
    m.add_function(wrap_pyfunction!(cgroups::cgroups, m)?)?;
    m.add_function(wrap_pyfunction!(cgroups::cgroups_columns, m)?)?;
    m.add_function(wrap_pyfunction!(cgroups::cgroup_fields, m)?)?;
    m.add_function(wrap_pyfunction!(cgroups::cgroup_rate_names, m)?)?;
    m.add_function(wrap_pyfunction!(host::last_report, m)?)?;
    m.add_function(wrap_pyfunction!(host::boot_time, m)?)?;
    m.add_function(wrap_pyfunction!(system::mem_total_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(host::env_proc_root, m)?)?;
    m.add_function(wrap_pyfunction!(host::set_proc_root, m)?)?;
    m.add_function(wrap_pyfunction!(host::py_start_ticks, m)?)?;
    m.add_function(wrap_pyfunction!(host::create_time, m)?)?;
    m.add_function(wrap_pyfunction!(host::env_backend, m)?)?;
    m.add_function(wrap_pyfunction!(psutil::cpu_percent, m)?)?;
    for f in [
        wrap_pyfunction!(system::cpu_count, m)?,
        wrap_pyfunction!(system::cpu_times, m)?,
        wrap_pyfunction!(system::cpu_stats, m)?,
        wrap_pyfunction!(system::meminfo, m)?,
        wrap_pyfunction!(system::zoneinfo_low_pages, m)?,
        wrap_pyfunction!(system::swap_io_pages, m)?,
        wrap_pyfunction!(system::getloadavg, m)?,
        wrap_pyfunction!(system::sysinfo_swap_bytes, m)?,
        wrap_pyfunction!(system::users, m)?,
        wrap_pyfunction!(system::pids, m)?,
    ] {
        m.add_function(f)?;
    }
    files::add(m)?;
    Ok(())
}
