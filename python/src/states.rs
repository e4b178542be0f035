//! `tasksnap.states`: per-thread scheduler states over one interval, what psutil has no
//! equivalent of. Two samples from the library's thread-state source (opened by the `Host`:
//! the BPF accounting as root, exact; else /proc, sampled) and tasksnap-states' `between`,
//! as `tasksnap states` does.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tasksnap_collect::StatesFilter as Filter;
use tasksnap_collect::{Host, StatesOptions};
use tasksnap_model::states::NSTATES;
use tasksnap_model::{Backend, PassReport};
use tasksnap_states::{between, Rollup, State};

use crate::interrupt::{self, sleep_unless};
use crate::psutil::os_str;

/// One thread's interval: pid, tid, name (its exact bytes), the percentage of its alive time in each state
/// ([`State::ALL`]: running, runnable, sleeping, disk, stopped, other, throttled), the top
/// off-CPU reason (its state
/// and kernel frames, innermost first, `None` when it never waited), and whether it exited.
type Row = (
    i32,
    i32,
    Vec<u8>,
    [f64; NSTATES],
    Option<(&'static str, Vec<String>)>,
    bool,
);

/// A [`Row`] with its name made a Python `str`.
type PyRow<'py> = (
    i32,
    i32,
    Bound<'py, PyAny>,
    [f64; NSTATES],
    Option<(&'static str, Vec<String>)>,
    bool,
);

/// Thread states of `pids` (every thread when None; none for an empty list) over `interval`
/// seconds: the backend that answered ("bpf" or "procfs"), and one row per thread.
///
/// The two samples and the wait between them run through [`interrupt::run`]: Ctrl-C raises
/// `KeyboardInterrupt` at once, and the sampler stops at its next slice of the interval.
#[pyfunction]
#[pyo3(signature = (pids, interval, backend="auto"))]
pub(crate) fn states<'py>(
    py: Python<'py>,
    pids: Option<Vec<i32>>,
    interval: f64,
    backend: &str,
) -> PyResult<(&'static str, Vec<PyRow<'py>>)> {
    let backend: Backend = backend
        .parse()
        .map_err(|e: tasksnap_model::UnknownBackend| {
            pyo3::exceptions::PyValueError::new_err(e.to_string())
        })?;
    let wait = interrupt::interval_arg(interval)?;
    let result = interrupt::run(py, move |cancel| sample_twice(pids, wait, backend, cancel))?;
    match result {
        // The name as psutil gives names: surrogate-escaped where it is not UTF-8.
        Ok(Some((which, rows))) => Ok((
            which,
            rows.into_iter()
                .map(|(pid, tid, name, pct, reason, exited)| {
                    Ok((pid, tid, os_str(py, &name)?, pct, reason, exited))
                })
                .collect::<PyResult<_>>()?,
        )),
        // Cancelled: only after the caller returned, so never seen.
        Ok(None) => Err(pyo3::exceptions::PyRuntimeError::new_err("cancelled")),
        Err(e) => Err(crate::collect_error(e)),
    }
}

/// The sampler thread's work: open the source, sample, wait, sample, `between`. `None` when
/// cancelled. An empty `pids` selects no thread: the interval passes and no row comes back.
fn sample_twice(
    pids: Option<Vec<i32>>,
    wait: Duration,
    backend: Backend,
    cancel: &AtomicBool,
) -> Result<Option<(&'static str, Vec<Row>)>, tasksnap_collect::Error> {
    let started = Instant::now();
    let pids = match pids {
        Some(p) if p.is_empty() => {
            return Ok(sleep_unless(wait, cancel).then(|| (backend.name(), Vec::new())));
        }
        Some(p) => p,
        // The library's filter: no pid means every thread.
        None => Vec::new(),
    };
    let filter = Filter {
        pids,
        comms: Vec::new(),
    };
    let host = Host::open(crate::host::options());
    let mut src = host.open_states(
        backend,
        StatesOptions {
            filter,
            track_holders: true,
            ..StatesOptions::default()
        },
    )?;
    // Loaded: this call's thread reads without what loading needed.
    crate::host::opened();
    let (which, why) = src.report();
    let why = why.to_string();
    let first = src.sample()?;
    if !sleep_unless(wait, cancel) {
        return Ok(None);
    }
    let second = src.sample()?;
    let iv = between(&first, &second, Rollup::Thread);
    let rows: Vec<Row> = iv
        .rows
        .iter()
        .map(|r| {
            let pct = State::ALL.map(|s| r.pct(s));
            let reason = r
                .top_reason
                .as_ref()
                .map(|x| (x.state.name(), x.frames.to_vec()));
            (
                r.pid,
                r.tid.unwrap_or(r.pid),
                match &r.comm_bytes {
                    Some(b) => b.to_vec(),
                    None => r.comm.clone().into_bytes(),
                },
                pct,
                reason,
                r.exited,
            )
        })
        .collect();
    let mut report = PassReport::new(which, why);
    report.phases = vec![("interval", wait)];
    crate::host::set_last(report, started.elapsed());
    Ok(Some((which.name(), rows)))
}
