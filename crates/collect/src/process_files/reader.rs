//! The reader thread ([`Reader`]) that runs what can block for as long as another process
//! decides, and [`ProcessFiles`]'s calls that run a job on it under a deadline watched by
//! [`crate::blocked`].

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::blocked::{self, Count, Watch};
use tasksnap_sys as sys;

use super::process::*;

/// Work for the [`Reader`] thread: it runs there and sends its own answer.
pub(super) type Job = Box<dyn FnOnce() + Send>;

/// A thread kept to run what can block for as long as another process decides (a read of
/// a file that takes a target's mmap lock, stats of paths a target names), so that a
/// blocked call can be given up: starting a thread per read cost more than the read (100 µs
/// against 50 µs for an `smaps_rollup` on a busy 2-core VM). One caller uses it at a time
/// (it is taken out of [`ProcessFiles::reader`] while in use); a caller that finds none
/// starts one. A reader given up on is dropped: its thread finishes the blocked call
/// whenever the kernel lets it, finds no more jobs and exits.
#[derive(Debug)]
pub(super) struct Reader {
    pub(super) jobs: mpsc::Sender<Job>,
    /// The thread's id, for [`blocked::look`] (0 until it has started).
    pub(super) tid: Arc<AtomicI32>,
}

impl Reader {
    pub(super) fn start() -> io::Result<Reader> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let tid = Arc::new(AtomicI32::new(0));
        let t = tid.clone();
        std::thread::Builder::new()
            .name("tasksnap-smaps".into())
            .spawn(move || {
                t.store(sys::gettid(), Ordering::Release);
                while let Ok(job) = inbox.recv() {
                    job();
                }
            })?;
        Ok(Reader { jobs, tid })
    }
}

impl ProcessFiles {
    /// Reads `path` on the reader thread, under the deadline ([`ProcessFiles::run_watched`]).
    pub(super) fn read_with_deadline(
        &self,
        path: &Path,
    ) -> Result<io::Result<Vec<u8>>, FilesError> {
        let owned = path.to_path_buf();
        self.run_watched(&path.display().to_string(), ON_MMAP_LOCK, move || {
            std::fs::read(owned)
        })
    }

    /// Runs `work` on the reader thread; gives up when that thread has been blocked for
    /// longer than the deadline ([`crate::blocked`]: time blocked, not time waiting for a
    /// CPU), saying it was `what` blocked `on` that.
    pub(super) fn run_watched<T: Send + 'static>(
        &self,
        what: &str,
        on: &'static str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, FilesError> {
        let ended = || FilesError::Io {
            what: what.to_string(),
            error: io::Error::other("the reading thread ended"),
        };
        let kept = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        let reader = match kept {
            Some(r) => r,
            None => Reader::start().map_err(|error| FilesError::Io {
                what: format!("a thread to read {what}"),
                error,
            })?,
        };
        let (reply, answer) = mpsc::channel();
        let since = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let job: Job = Box::new(move || {
            let _ = reply.send(work());
        });
        if reader.jobs.send(job).is_err() {
            return Err(ended());
        }
        let deadline_ns = self.smaps_deadline.as_nanos() as u64;
        let tick = (self.smaps_deadline / 4).max(Duration::from_millis(1));
        let mut watch = Watch::default();
        let done = |r, reader| {
            // Kept for the next read, unless another caller kept one meanwhile.
            let mut slot = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(reader);
            }
            Ok(r)
        };
        loop {
            // Most reads end in tens of microseconds: the caller yields its CPU until the
            // answer is there rather than sleeping (a wake-up on another CPU of a VM costs
            // as much as the read), for as long as a read is not looked at anyway.
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            if now.saturating_sub(since) < blocked::LOOK_AFTER_NS {
                match answer.try_recv() {
                    Ok(r) => return done(r, reader),
                    Err(mpsc::TryRecvError::Empty) => {
                        std::thread::yield_now();
                        continue;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => return Err(ended()),
                }
            } else {
                match answer.recv_timeout(tick) {
                    Ok(r) => return done(r, reader),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ended()),
                }
            }
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            let t = reader.tid.load(Ordering::Acquire);
            if watch.expired(since, now, deadline_ns, Count::Total, || blocked::look(t)) {
                return Err(FilesError::TimedOut {
                    what: what.to_string(),
                    on,
                    deadline_ms: self.smaps_deadline.as_millis() as u64,
                });
            }
        }
    }
}
