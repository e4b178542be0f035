//! Long calls answer Ctrl-C. A call that may take a while (a whole-system pass, the interval
//! of `states()`) runs its work on a thread of its own, while the caller's thread waits for
//! it with the GIL released and looks for signals every [`POLL`]: a `KeyboardInterrupt`
//! (or whatever a signal handler raises) comes at once, not when the work ends. The work is
//! then told to stop through its cancel flag (the `states()` interval checks it between
//! slices, [`sleep_unless`]; a pass runs to its end, which its deadlines bound, and its answer
//! is dropped).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// How often the waiting thread looks for a signal (and a cancelled work for its flag).
pub(crate) const POLL: Duration = Duration::from_millis(50);

thread_local! {
    /// Set on the threads [`run`] starts: what they change of themselves (their
    /// capabilities) ends with them, never reaching the interpreter's threads.
    static CALL_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is one [`run`] started for a call.
pub(crate) fn on_call_thread() -> bool {
    CALL_THREAD.with(|c| c.get())
}

/// Runs `work` on a thread of its own and waits for its answer, raising what a signal
/// handler raises meanwhile. `work` gets the cancel flag, set when the caller was
/// interrupted. When no thread can be started, `work` runs here with the GIL released.
pub(crate) fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> T + Send + 'static,
{
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = Arc::clone(&cancel);
    // The work goes into the thread through a slot, so that it can still run here when the
    // thread cannot be started.
    let slot = Arc::new(std::sync::Mutex::new(Some(work)));
    let theirs = Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .name("tasksnap-call".into())
        .spawn(move || {
            CALL_THREAD.with(|c| c.set(true));
            let work = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(work) = work {
                // The receiver is gone only when the caller was interrupted: nobody to tell.
                let _ = tx.send(work(&flag));
            }
        });
    if spawned.is_err() {
        let work = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(work) = work else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "tasksnap: the call's work was lost",
            ));
        };
        let never = AtomicBool::new(false);
        return Ok(py.detach(|| work(&never)));
    }
    let mut rx = rx;
    loop {
        // The receiver is not Sync: it goes into the GIL-free closure and comes back.
        let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        match got {
            Ok(answer) => return Ok(answer),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "tasksnap: the call's thread ended without an answer (it panicked)",
                ))
            }
        }
    }
}

/// An interval of `seconds` a call waits (`states()`, `cgroups()`): in (0, 3600], else
/// `ValueError`.
pub(crate) fn interval_arg(seconds: f64) -> PyResult<Duration> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "interval must be a number of seconds in (0, 3600], not {seconds}"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Sleeps `wait` in slices of [`POLL`]; false when `cancel` was set meanwhile.
pub(crate) fn sleep_unless(wait: Duration, cancel: &AtomicBool) -> bool {
    let end = Instant::now() + wait;
    loop {
        if cancel.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(POLL));
    }
}
