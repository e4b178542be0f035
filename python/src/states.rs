//! `tasksnap.states`: per-thread scheduler states over one interval, what psutil has no
//! equivalent of. Two samples from the library's thread-state source (`choice::open_states`:
//! the BPF accounting as root, exact; else /proc, sampled) and tasksnap-states' `between`,
//! as `tasksnap states` does.

use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tasksnap_collect::choice::open_states;
use tasksnap_collect::states::{bpf, procfs, Filter};
use tasksnap_model::{Backend, PassReport};
use tasksnap_states::{between, Rollup, State};

/// One thread's interval: pid, tid, name, the percentage of its alive time in each state
/// (running, runnable, sleeping, disk, stopped, other), the top off-CPU reason (its state
/// and kernel frames, innermost first, `None` when it never waited), and whether it exited.
type Row = (
    i32,
    i32,
    String,
    [f64; 6],
    Option<(&'static str, Vec<String>)>,
    bool,
);

/// Thread states of `pids` (every thread when empty) over `interval` seconds: the backend
/// that answered ("bpf" or "procfs"), and one row per thread.
#[pyfunction]
#[pyo3(signature = (pids, interval, backend="auto"))]
pub(crate) fn states(
    py: Python<'_>,
    pids: Vec<i32>,
    interval: f64,
    backend: &str,
) -> PyResult<(&'static str, Vec<Row>)> {
    let backend: Backend = backend
        .parse()
        .map_err(|e: tasksnap_model::UnknownBackend| {
            pyo3::exceptions::PyValueError::new_err(e.to_string())
        })?;
    if !(interval.is_finite() && interval > 0.0 && interval <= 3600.0) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "interval must be a number of seconds in (0, 3600], not {interval}"
        )));
    }
    let wait = Duration::from_secs_f64(interval);
    let (which, rows) = py
        .detach(move || -> Result<_, tasksnap_collect::Error> {
            let started = Instant::now();
            let filter = Filter {
                pids,
                comms: Vec::new(),
            };
            let choice = open_states(
                backend,
                bpf::Options {
                    filter: filter.clone(),
                    ..Default::default()
                },
                procfs::Options {
                    filter,
                    ..Default::default()
                },
            )?;
            let mut src = choice.source;
            let first = src.sample()?;
            std::thread::sleep(wait);
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
                        r.comm.clone(),
                        pct,
                        reason,
                        r.exited,
                    )
                })
                .collect();
            let mut report = PassReport::new(choice.backend, choice.why);
            report.phases = vec![("interval", wait)];
            crate::host::set_last(report, started.elapsed());
            Ok((choice.backend.name(), rows))
        })
        .map_err(crate::collect_error)?;
    Ok((which, rows))
}
