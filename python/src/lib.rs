//! The native half of the `tasksnap` Python package (`tasksnap._tasksnap`): a front end like
//! the CLI's commands. It asks tasksnap-collect for tasks ([`host`]: one cached collector for
//! whole-system passes, chosen by `choice::open`, and a procfs collector for one process),
//! turns tasks into psutil's values ([`attrs`]) or into columns ([`columns`]), and turns two
//! thread-state samples into per-thread shares ([`states`], tasksnap-states' `between`).
//!
//! It never reads /proc itself and never decides on a backend: the library does. What the
//! Python side owns (the `Process` class, argument checking, psutil's exceptions and named
//! tuples) lives in `tasksnap/__init__.py`, which hands its classes over once through
//! [`setup`].
#![deny(missing_docs)]

mod attrs;
mod columns;
mod host;
mod states;

use std::sync::OnceLock;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// The Python classes the native half builds values and raises errors with, handed over by
/// `tasksnap/__init__.py` (psutil's named tuples and exceptions are defined there, in
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
    /// `tuple.__new__`: a named tuple made through it skips the class's Python `__new__`.
    pub tuple_new: Py<PyAny>,
}

static TYPES: OnceLock<Types> = OnceLock::new();

/// The classes handed over by [`setup`]; an error when `_tasksnap` is used on its own.
pub(crate) fn types() -> PyResult<&'static Types> {
    TYPES
        .get()
        .ok_or_else(|| PyRuntimeError::new_err("tasksnap._tasksnap.setup() was not called"))
}

impl Types {
    /// A named tuple of class `cls` holding `items`.
    pub fn make<'py, const N: usize>(
        &self,
        py: Python<'py>,
        cls: &Py<PyAny>,
        items: [Bound<'py, PyAny>; N],
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = PyTuple::new(py, items)?;
        self.tuple_new.bind(py).call1((cls.bind(py), t))
    }
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
    let t = Types {
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
        tuple_new,
    };
    // A second call (a reload of the Python module) keeps the first classes.
    let _ = TYPES.set(t);
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

#[pymodule]
fn _tasksnap(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(setup, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::processes, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::process, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::threads, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::children, m)?)?;
    m.add_function(wrap_pyfunction!(attrs::attr_names, m)?)?;
    m.add_function(wrap_pyfunction!(columns::snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(columns::column_names, m)?)?;
    m.add_function(wrap_pyfunction!(states::states, m)?)?;
    m.add_function(wrap_pyfunction!(host::last_report, m)?)?;
    m.add_function(wrap_pyfunction!(host::boot_time, m)?)?;
    Ok(())
}
