//! The query service's memory budget (`serve --query-memory-budget`): what its callers make it
//! hold, counted against one limit so that new work waits or is turned away instead of growing
//! the service. Counted: every pass alive (kept for a live view's next request, or held by the
//! connections still sending answers from it, however slowly their clients read), each
//! connection's plan of its answer, and each chunk of an answer from before its rows are cut
//! until its bytes went to the kernel. Not counted: the collector's own working memory (one
//! pass being taken, bounded by the host) and the kernel's socket buffers (at most
//! `SO_SNDBUF` a connection).
//!
//! A [`Charge`] is taken before the memory is (from an estimate), adjusted to what was made,
//! and given back when dropped, wherever the thing it pays for goes. Nothing is ever charged
//! past the limit: [`MemoryBudget::peak_bytes`] says so, and serve's stop line reports it.
//!
//! And the memory goes back to the system after a burst: glibc keeps what its arenas freed
//! (serve raises `M_TRIM_THRESHOLD` for its collections, and each connection thread mallocs in
//! an arena of its own), so [`give_back`] trims every arena once the service is idle.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The smallest budget serve accepts: a pass of a small host and a few answers in flight.
pub const MIN_BUDGET_BYTES: u64 = 16 << 20;

/// The bytes the service may hold for its callers, and what it holds.
#[derive(Debug)]
pub struct MemoryBudget {
    limit_bytes: usize,
    used: Mutex<usize>,
    freed: Condvar,
    peak_bytes: AtomicUsize,
    /// Bytes given back since the heap was last trimmed.
    released_bytes: AtomicU64,
}

/// Bytes charged to the budget, given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl MemoryBudget {
    /// A budget of `limit_bytes`.
    pub fn new(limit_bytes: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit_bytes: usize::try_from(limit_bytes).unwrap_or(usize::MAX),
            used: Mutex::new(0),
            freed: Condvar::new(),
            peak_bytes: AtomicUsize::new(0),
            released_bytes: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        // Nothing panics while holding it: the count is whole if something did elsewhere.
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limit.
    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    /// What is charged now.
    #[cfg(test)]
    pub fn used_bytes(&self) -> usize {
        *self.lock()
    }

    /// The most ever charged at once (never over the limit).
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes.load(Ordering::Relaxed)
    }

    /// Adds `bytes` to `used` when the total stays within `ceiling` (at most the limit).
    fn add(&self, used: &mut usize, bytes: usize, ceiling: usize) -> bool {
        let ceiling = ceiling.min(self.limit_bytes);
        match used.checked_add(bytes) {
            Some(total) if total <= ceiling => {
                *used = total;
                self.peak_bytes.fetch_max(total, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    /// `bytes` charged when the budget has room for them below `ceiling` now.
    pub fn try_charge(self: &Arc<Self>, bytes: usize, ceiling: usize) -> Option<Charge> {
        let mut used = self.lock();
        self.add(&mut used, bytes, ceiling)
            .then(|| self.charge_of(bytes))
    }

    /// `bytes` charged as soon as the budget has room for them (below the limit), waiting for
    /// charges to be given back until `deadline`; `None` at the deadline.
    pub fn charge_by(self: &Arc<Self>, bytes: usize, deadline: Instant) -> Option<Charge> {
        let mut used = self.lock();
        loop {
            if self.add(&mut used, bytes, usize::MAX) {
                return Some(self.charge_of(bytes));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn charge_of(self: &Arc<Self>, bytes: usize) -> Charge {
        Charge {
            budget: self.clone(),
            bytes,
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut used = self.lock();
        *used = used.saturating_sub(bytes);
        drop(used);
        self.released_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.freed.notify_all();
    }

    /// Bytes given back since the last call.
    pub fn take_released(&self) -> u64 {
        self.released_bytes.swap(0, Ordering::Relaxed)
    }
}

impl Charge {
    /// The bytes charged.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Charges `bytes` instead: less is always possible; more only when the budget has room
    /// (below `ceiling`) for the difference now (`false`: unchanged).
    pub fn resize(&mut self, bytes: usize, ceiling: usize) -> bool {
        if bytes <= self.bytes {
            let less = self.bytes - bytes;
            self.bytes = bytes;
            self.budget.release(less);
            return true;
        }
        let mut used = self.budget.lock();
        if self.budget.add(&mut used, bytes - self.bytes, ceiling) {
            self.bytes = bytes;
            true
        } else {
            false
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Gives the heap's free memory back to the system: every glibc arena trimmed, free pages
/// inside them too (`malloc_trim(0)`, which ignores `M_TRIM_THRESHOLD`). A few ms for a few
/// hundred MB; called when the service goes idle after a burst.
pub fn give_back() {
    // SAFETY: malloc_trim takes a padding size and only walks glibc's own arenas, under
    // their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use crate::service::server::memory::*;
    use std::time::Duration;

    #[test]
    fn charges_never_go_past_the_limit_and_come_back_when_dropped() {
        let b = MemoryBudget::new(100);
        let a = b.try_charge(60, usize::MAX).expect("room");
        assert!(b.try_charge(41, usize::MAX).is_none());
        // A ceiling below the limit (the passes' share) is honoured too.
        assert!(b.try_charge(30, 80).is_none());
        let mut c = b.try_charge(40, usize::MAX).expect("room");
        assert_eq!(b.used_bytes(), 100);
        assert!(!c.resize(41, usize::MAX));
        assert!(c.resize(10, usize::MAX));
        assert_eq!(b.used_bytes(), 70);
        drop(a);
        assert_eq!(b.used_bytes(), 10);
        drop(c);
        assert_eq!(b.used_bytes(), 0);
        assert_eq!(b.peak_bytes(), 100);
        assert_eq!(b.take_released(), 100);
        assert_eq!(b.take_released(), 0);
        assert!(b.try_charge(usize::MAX, usize::MAX).is_none());
    }

    #[test]
    fn a_waiting_charge_is_made_when_another_is_given_back() {
        let b = MemoryBudget::new(100);
        let held = b.try_charge(90, usize::MAX).expect("room");
        let t = {
            let b = b.clone();
            std::thread::spawn(move || {
                b.charge_by(50, Instant::now() + Duration::from_secs(30))
                    .map(|c| c.bytes())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert_eq!(t.join().expect("joined"), Some(50));
        // And one that never gets room gives up at its deadline.
        let _full = b.try_charge(100, usize::MAX).expect("room");
        assert!(b.charge_by(1, Instant::now()).is_none());
    }

    #[test]
    fn many_threads_charging_at_once_stay_within_the_limit() {
        let b = MemoryBudget::new(1000);
        let threads: Vec<_> = (0..8)
            .map(|k| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let want = 1 + (i * 37 + k * 11) % 300;
                        if let Some(mut c) = b.try_charge(want, usize::MAX) {
                            let _ = c.resize(want / 2 + (i % 7) * 40, usize::MAX);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("joined");
        }
        assert!(b.peak_bytes() <= 1000, "{}", b.peak_bytes());
        assert_eq!(b.used_bytes(), 0);
    }
}
