//! What the collection thread and the HTTP side of `tasksnap serve` share: the last
//! collection's exposition (swapped in whole, read by every scrape), the count of
//! connections evicted, and the stop both sides wait on.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use tasksnap_export::encode::Exposition;

/// What the collection thread hands the HTTP side.
#[derive(Debug)]
pub struct Shared {
    /// The last collection's exposition.
    pub exposition: RwLock<Arc<Exposition>>,
    /// Connections closed to make room for a newcomer (see conns.rs).
    pub evicted: AtomicU64,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    /// Nothing collected yet.
    pub(super) fn new() -> Shared {
        Shared {
            exposition: RwLock::new(Arc::new(Exposition {
                openmetrics: Arc::from(Vec::new()),
                prometheus: Arc::from(Vec::new()),
                series: 0,
            })),
            evicted: AtomicU64::new(0),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    pub(super) fn current(&self) -> Arc<Exposition> {
        match self.exposition.read() {
            Ok(e) => e.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Swaps in a new exposition. The lock is held for the swap only: the old one is
    /// dropped (its buffers freed) after it is released, so a scrape never waits on a free.
    pub(super) fn publish(&self, e: Exposition) {
        let mut e = Arc::new(e);
        match self.exposition.write() {
            Ok(mut slot) => std::mem::swap(&mut *slot, &mut e),
            Err(poisoned) => std::mem::swap(&mut *poisoned.into_inner(), &mut e),
        }
        drop(e);
    }

    pub(super) fn stop(&self) {
        if let Ok(mut s) = self.stop.lock() {
            *s = true;
        }
        self.wake.notify_all();
    }

    /// Sleeps until `deadline` or a stop; true on a stop.
    pub(super) fn sleep_until(&self, deadline: Instant) -> bool {
        let Ok(mut stopped) = self.stop.lock() else {
            return true;
        };
        loop {
            if *stopped {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stopped = match self.wake.wait_timeout(stopped, left) {
                Ok((s, _)) => s,
                Err(_) => return true,
            };
        }
    }
}
