//! `tasksnap.cgroups` and `tasksnap.cgroups_table`: the host's cgroups with their own
//! counters, from tasksnap-collect's `Host::cgroups` (v2, and v1 merged by path): one
//! reading, or two an interval apart with the rates over it (the model's `cgroup_rates`,
//! as `tasksnap cgroups`' CPU%, THR% and PSI%). The counters are the model's cgroup field
//! table (`CGROUP_FIELDS`, [`cgroup_fields`]): a field added there is a field of the
//! `Cgroup` named tuple and a column of the table here, with no change to the binding.
//!
//! A row leaves as a plain tuple (`tasksnap/_passes.py` makes the named tuple): the path as
//! a `str` surrogate-escaped where it is not UTF-8 (as process names), the hierarchy, the v1
//! controllers, each field (an `int`, `math.inf` for a limit that is none, None when not
//! read), then the rates (None without an interval). The table holds the same values as
//! Arrow arrays ([`crate::arrow::Columns`]), the path as text with its `path_bytes` sibling
//! (snapshot()'s rule for names), a limit as a float column (inf for none).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, Float64Array, StringArray};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;
use tasksnap_collect::Host;
use tasksnap_model::{
    cgroup_rates, CgroupCounters, CgroupHierarchy, CgroupKind, CgroupRates, CgroupUnit,
    CgroupValue, CGROUP_FIELDS,
};

use crate::arrow::Columns;
use crate::columns::{text_and_bytes, unsigned};
use crate::interrupt::{self, sleep_unless};
use crate::psutil::os_str;

/// The deepest `depth` a call takes (`tasksnap cgroups --depth`'s limit too).
const MAX_DEPTH: usize = 64;

/// The rates' names (Python's `*_percent`), in the order of [`rates`].
const RATES: [&str; 3] = ["cpu_percent", "throttled_percent", "psi_cpu_some_percent"];

/// The rates of `r` in the order of [`RATES`].
fn rates(r: &CgroupRates) -> [Option<f64>; 3] {
    [r.cpu_pct, r.throttled_pct, r.psi_cpu_some_pct]
}

/// Every field of the model's cgroup table, in order: (name, kind, unit, help), kind
/// `counter`, `gauge` or `limit`, unit `ns`, `us`, `bytes` or `count`.
#[pyfunction]
pub(crate) fn cgroup_fields() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    CGROUP_FIELDS
        .iter()
        .map(|f| {
            let kind = match f.kind {
                CgroupKind::Counter => "counter",
                CgroupKind::Gauge => "gauge",
                CgroupKind::Limit => "limit",
            };
            let unit = match f.unit {
                CgroupUnit::Ns => "ns",
                CgroupUnit::Us => "us",
                CgroupUnit::Bytes => "bytes",
                CgroupUnit::Count => "count",
            };
            (f.name, kind, unit, f.help)
        })
        .collect()
}

/// The names of the rates that follow the fields.
#[pyfunction]
pub(crate) fn cgroup_rate_names() -> Vec<&'static str> {
    RATES.to_vec()
}

/// One reading (rates all None), or two `interval` apart.
type Reading = (Vec<CgroupCounters>, Vec<CgroupRates>);

/// Reads the cgroups down to `depth` on a call thread of its own (Ctrl-C interrupts the
/// interval), as `tasksnap cgroups` does: the interval runs from the first reading's start
/// to the second's.
fn read(py: Python<'_>, depth: usize, interval: Option<f64>) -> PyResult<Reading> {
    if depth > MAX_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "depth must be from 0 to {MAX_DEPTH}, not {depth}"
        )));
    }
    let wait = interval.map(interrupt::interval_arg).transpose()?;
    let read = interrupt::run(py, move |cancel: &AtomicBool| {
        let host = Host::open(crate::host::options());
        let Some(wait) = wait else {
            let now = host.cgroups(depth).cgroups;
            let none = vec![CgroupRates::default(); now.len()];
            return Some((now, none));
        };
        let started = Instant::now();
        let before = host.cgroups(depth);
        if !sleep_unless(wait, cancel) {
            return None;
        }
        let elapsed: Duration = started.elapsed();
        let after = host.cgroups(depth).cgroups;
        let r = cgroup_rates(&before.cgroups, &after, elapsed);
        Some((after, r))
    })?;
    // Cancelled: only after the caller returned, so never seen.
    read.ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("cancelled"))
}

/// The hierarchy's name and the v1 controllers (none for v2).
fn hierarchy(c: &CgroupCounters) -> (&'static str, &[String]) {
    match &c.hierarchy {
        CgroupHierarchy::V2 => ("v2", &[]),
        CgroupHierarchy::V1(list) => ("v1", list),
    }
}

/// The host's cgroups down to `depth` (the root is 0) as plain tuples: path, hierarchy,
/// controllers, each field of [`cgroup_fields`], then each rate of [`cgroup_rate_names`]
/// (over `interval` seconds; None without one).
#[pyfunction]
#[pyo3(signature = (depth, interval=None))]
pub(crate) fn cgroups<'py>(
    py: Python<'py>,
    depth: usize,
    interval: Option<f64>,
) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let (now, r) = read(py, depth, interval)?;
    now.iter()
        .zip(&r)
        .map(|(c, r)| {
            let (hier, controllers) = hierarchy(c);
            let mut items: Vec<Bound<'py, PyAny>> =
                Vec::with_capacity(3 + CGROUP_FIELDS.len() + RATES.len());
            items.push(os_str(py, &c.path)?);
            items.push(hier.into_bound_py_any(py)?);
            items.push(PyTuple::new(py, controllers)?.into_any());
            for f in CGROUP_FIELDS {
                items.push(match f.get(c) {
                    None => py.None().into_bound(py),
                    Some(CgroupValue::Num(n)) => n.into_bound_py_any(py)?,
                    Some(CgroupValue::Unlimited) => f64::INFINITY.into_bound_py_any(py)?,
                });
            }
            for v in rates(r) {
                items.push(v.into_bound_py_any(py)?);
            }
            PyTuple::new(py, items)
        })
        .collect()
}

/// The same reading as columns: `path`, `path_bytes`, `hierarchy`, `controllers`, each
/// field (a limit as float64, inf for none; the rest int64, uint64 beyond it), each rate.
#[pyfunction]
#[pyo3(signature = (depth, interval=None))]
pub(crate) fn cgroups_columns(
    py: Python<'_>,
    depth: usize,
    interval: Option<f64>,
) -> PyResult<Columns> {
    let (now, r) = read(py, depth, interval)?;
    let mut out: Vec<(String, ArrayRef)> = Vec::new();
    let (paths, exact) = text_and_bytes(now.iter().map(|c| Some(&c.path[..])));
    out.push(("path".into(), paths));
    out.push(("path_bytes".into(), exact));
    let hiers: StringArray = now.iter().map(|c| Some(hierarchy(c).0)).collect();
    out.push(("hierarchy".into(), Arc::new(hiers)));
    let mut controllers = ListBuilder::new(StringBuilder::new());
    for c in &now {
        for name in hierarchy(c).1 {
            controllers.values().append_value(name);
        }
        controllers.append(true);
    }
    out.push(("controllers".into(), Arc::new(controllers.finish())));
    for f in CGROUP_FIELDS {
        let column: ArrayRef = if f.kind == CgroupKind::Limit {
            let a: Float64Array = now
                .iter()
                .map(|c| match f.get(c)? {
                    CgroupValue::Num(n) => Some(n as f64),
                    CgroupValue::Unlimited => Some(f64::INFINITY),
                })
                .collect();
            Arc::new(a)
        } else {
            let values: Vec<Option<u64>> = now.iter().map(|c| f.number(c)).collect();
            unsigned(&values)
        };
        out.push((f.name.into(), column));
    }
    for (i, name) in RATES.iter().enumerate() {
        let a: Float64Array = r.iter().map(|r| rates(r)[i]).collect();
        out.push(((*name).into(), Arc::new(a)));
    }
    Columns::new(out, now.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the model's cgroup table reaches Python, in the table's order.
    #[test]
    fn every_cgroup_field_of_the_model_reaches_python() {
        let names: Vec<&str> = cgroup_fields().into_iter().map(|(n, ..)| n).collect();
        let model: Vec<&str> = CGROUP_FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(names, model);
    }
}
