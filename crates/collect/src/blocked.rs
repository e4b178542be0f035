//! How long a thread of this process has been *blocked* (asleep in the kernel: neither on a
//! CPU nor waiting for one), for deadlines that must fire on a stuck read and not on a slow
//! machine.
//!
//! A command-line read can queue on the target's mmap lock for seconds; the procfs reader's
//! watchdog and the BPF command-line passes give up on such a read so that one process cannot
//! stall a listing. Counted in wall time, that deadline also fired on a reader that was merely
//! waiting for a CPU on a saturated host: the process was then shown as `[sleep]` although its
//! command line was there to read. So the watcher counts only the time the thread
//! spent blocked.
//!
//! It looks at the thread now and then, and only once the operation has lasted
//! [`LOOK_AFTER_NS`] (most reads end in microseconds and cost no look): first its state in
//! `/proc/self/task/TID/stat`, then its on-CPU and run-queue-wait times in
//! `/proc/self/task/TID/schedstat` (CONFIG_SCHED_INFO). Between two looks the thread was
//! blocked for at least `wall - Δon-CPU - Δrun-queue wait`, when the second look found it not
//! runnable. Kernel details this respects:
//! - schedstat's counters move only at accounting points: a running thread's on-CPU time at the
//!   scheduler tick or when it stops, a run-queue wait when the wait *ends*
//!   (`sched_info_arrive()`). A thread still waiting for a CPU therefore looks, from its
//!   counters alone, exactly like a blocked one; so a look that finds the thread runnable
//!   (state `R`: running or waiting for a CPU) adds nothing, and the time is counted from the
//!   start of the operation to a look that finds it not runnable: the thread was dequeued
//!   then, and dequeuing accounted all its time, so the formula is exact but for time that
//!   was accounted late (which only makes it smaller).
//! - the state is read before the counters: a thread that wakes between the two reads misses
//!   from the counters only what it did in that gap (microseconds).
//! - the stretch between the start of the operation and the first look is unknown and counts
//!   as not blocked, unless an earlier look at the same thread bounds it: an operation blocked
//!   from its start is given up at most [`LOOK_AFTER_NS`] plus one watcher tick after its deadline.
//!
//! When the thread cannot be looked at (no /proc of this process's pid namespace at `/proc`,
//! no descriptor to spare), the watcher falls back to wall time, as before.

use std::ffi::CString;

use tasksnap_procfs::parse;
use tasksnap_sys as sys;

/// An operation is looked at only once it has lasted this long (ns).
pub(crate) const LOOK_AFTER_NS: u64 = 1_000_000;

/// One look at a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Look {
    /// CLOCK_MONOTONIC ns, taken before the state was read.
    pub wall_ns: u64,
    /// Time on a CPU (schedstat's first field), ns.
    pub run_ns: u64,
    /// Time spent waiting for a CPU (schedstat's second field), ns.
    pub wait_ns: u64,
    /// State `R`: on a CPU or waiting for one.
    pub runnable: bool,
}

/// Reads a small file of this process's own /proc into `buf`.
fn read_own(path: &str, buf: &mut [u8]) -> Option<usize> {
    let c = CString::new(path).ok()?;
    let fd = sys::openat_ro(libc::AT_FDCWD, &c).ok()?;
    let n = sys::read_fd(fd, buf);
    sys::close(fd);
    n.ok()
}

/// Looks at thread `tid` of this process; `None` when it cannot be looked at.
pub(crate) fn look(tid: i32) -> Option<Look> {
    if tid <= 0 {
        return None;
    }
    let wall_ns = sys::clock_ns(libc::CLOCK_MONOTONIC);
    let mut buf = [0u8; 1024];
    let n = read_own(
        &format!("{}/self/task/{tid}/stat", sys::roots::PROC),
        &mut buf,
    )?;
    let state = parse::stat_state_letter(&buf[..n])?;
    let n = read_own(
        &format!("{}/self/task/{tid}/schedstat", sys::roots::PROC),
        &mut buf,
    )?;
    let v = parse::parse_schedstat(&buf[..n]).ok()?;
    Some(Look {
        wall_ns,
        run_ns: v.run_ns,
        wait_ns: v.run_delay_ns,
        runnable: state == b'R',
    })
}

/// A lower bound of the time the thread was blocked between `prev` (or `since_ns`, the start
/// of the operation, when later) and `now`; 0 without an earlier look or when `now` found the
/// thread runnable (see the module header).
pub(crate) fn blocked_between(prev: Option<&Look>, since_ns: u64, now: &Look) -> u64 {
    let Some(prev) = prev else { return 0 };
    if now.runnable {
        return 0;
    }
    let start = prev.wall_ns.max(since_ns);
    now.wall_ns
        .saturating_sub(start)
        .saturating_sub(now.run_ns.saturating_sub(prev.run_ns))
        .saturating_sub(now.wait_ns.saturating_sub(prev.wait_ns))
}

/// How blocked time adds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// Over the whole operation (one command-line read: what its deadline bounds).
    Total,
    /// Since the thread last ran (a pass over many processes: only a stretch without any
    /// progress means it is stuck).
    SinceProgress,
}

/// What a watcher keeps of one thread between looks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
    /// The operation being timed (its start, CLOCK_MONOTONIC ns).
    since_ns: u64,
    /// Blocked time counted for it so far.
    blocked_ns: u64,
    /// The looks its blocked time is counted from: the last one before it (if any) and its
    /// first (or, for [`Count::SinceProgress`], the one that last saw the thread progress).
    from: [Option<Look>; 2],
    /// The last look at the thread, whatever operation it was in.
    last: Option<Look>,
}

impl Watch {
    /// Counts `now` into the operation that began at `since_ns`; returns its blocked time.
    ///
    /// The time is counted from a look at the start of the operation to the latest look that
    /// found the thread not runnable, in one piece: a look that finds the thread runnable
    /// adds nothing, and the next one that does not accounts for the stretch before it too
    /// (its counters are complete then).
    pub(crate) fn add(&mut self, since_ns: u64, now: Look, count: Count) -> u64 {
        let progress = count == Count::SinceProgress
            && (now.runnable || self.last.is_some_and(|l| now.run_ns > l.run_ns));
        if self.since_ns != since_ns || self.from[1].is_none() {
            self.since_ns = since_ns;
            self.blocked_ns = 0;
            self.from = [self.last, Some(now)];
        } else if progress {
            // It ran in between (or is about to): where in the interval is unknown, so the
            // stretch without progress starts now.
            self.blocked_ns = 0;
            self.from = [None, Some(now)];
        }
        let bound = self
            .from
            .iter()
            .map(|b| blocked_between(b.as_ref(), since_ns, &now))
            .max()
            .unwrap_or(0);
        self.blocked_ns = self.blocked_ns.max(bound);
        self.last = Some(now);
        self.blocked_ns
    }

    /// Whether the thread, inside an operation that began at `since_ns` (CLOCK_MONOTONIC),
    /// has been blocked for longer than `deadline_ns` by `now_ns`. `look` is called to look at
    /// it (not before [`LOOK_AFTER_NS`]); when it gives nothing, wall time decides.
    pub(crate) fn expired(
        &mut self,
        since_ns: u64,
        now_ns: u64,
        deadline_ns: u64,
        count: Count,
        look: impl FnOnce() -> Option<Look>,
    ) -> bool {
        let wall = now_ns.saturating_sub(since_ns);
        if wall < LOOK_AFTER_NS.min(deadline_ns) {
            return false;
        }
        match look() {
            Some(l) => self.add(since_ns, l, count) > deadline_ns,
            None => wall > deadline_ns,
        }
    }
}

/// The threads working on one operation spread over several (a BPF command-line pass),
/// each listed while it works on it.
// Used by the BPF backend only; a build without it (lib.rs: `tasksnap_bpf::select!`)
// leaves this unused.
#[allow(dead_code)]
#[derive(Debug, Default)]
pub(crate) struct Threads(std::sync::Mutex<Vec<i32>>);

/// A thread's place in [`Threads`], given up when dropped.
#[allow(dead_code)] // as Threads
pub(crate) struct Entered<'a>(&'a Threads, i32);

#[allow(dead_code)] // as Threads
impl Threads {
    /// Lists the calling thread until the returned guard drops.
    pub(crate) fn enter(&self) -> Entered<'_> {
        let tid = sys::gettid();
        self.lock().push(tid);
        Entered(self, tid)
    }

    /// The threads at work now.
    pub(crate) fn list(&self) -> Vec<i32> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<i32>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.lock().retain(|&t| t != self.1);
    }
}

/// Watches the threads of an operation that reads many targets (a BPF command-line pass):
/// it is stuck when one of them has been blocked for `stuck_ns` without running in between
/// (queued on one target's mmap lock), or for `total_ns` altogether.
// Used by the BPF backend only; a build without it (lib.rs: `tasksnap_bpf::select!`)
// leaves this unused.
#[allow(dead_code)]
#[derive(Debug)]
pub(crate) struct PassWatch {
    since_ns: u64,
    stuck_ns: u64,
    total_ns: u64,
    /// Per thread: since it last ran, and in all.
    watches: std::collections::HashMap<i32, (Watch, Watch)>,
}

// Used by the BPF backend only; a build without it (lib.rs: `tasksnap_bpf::select!`)
// leaves this unused.
#[allow(dead_code)]
impl PassWatch {
    /// A watch over an operation that began at `since_ns` (CLOCK_MONOTONIC).
    pub(crate) fn new(since_ns: u64, stuck_ns: u64, total_ns: u64) -> PassWatch {
        PassWatch {
            since_ns,
            stuck_ns,
            total_ns,
            watches: Default::default(),
        }
    }

    /// Whether the operation is stuck, given what `threads` look like now (`look` per
    /// thread). A thread that cannot be looked at leaves the decision to wall time against
    /// `total_ns`, the deadline the operation had before blocked time was counted.
    pub(crate) fn stuck(
        &mut self,
        threads: &[i32],
        now_ns: u64,
        mut look: impl FnMut(i32) -> Option<Look>,
    ) -> bool {
        let wall = now_ns.saturating_sub(self.since_ns);
        if wall < LOOK_AFTER_NS {
            return false;
        }
        self.watches.retain(|t, _| threads.contains(t));
        threads.iter().any(|&tid| match look(tid) {
            Some(l) => {
                let (progress, total) = self.watches.entry(tid).or_default();
                let stuck = progress.add(self.since_ns, l, Count::SinceProgress) > self.stuck_ns;
                stuck | (total.add(self.since_ns, l, Count::Total) > self.total_ns)
            }
            None => wall > self.total_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(wall_ms: u64, run_ms: u64, wait_ms: u64, runnable: bool) -> Look {
        Look {
            wall_ns: wall_ms * MS,
            run_ns: run_ms * MS,
            wait_ns: wait_ms * MS,
            runnable,
        }
    }

    /// Regression, the wrong row: a reader that spent its 20 ms waiting for a CPU and running
    /// is not stuck, however long ago its read began.
    #[test]
    fn cmdline_deadline_ignores_time_spent_waiting_for_a_cpu() {
        let deadline = 20 * MS;
        let mut w = Watch::default();
        let since = 100 * MS;
        // Looks every 5 ms: the reader is runnable (waiting for a CPU) at each, its wait
        // accounted only when it gets one; 60 ms of wall time go by.
        let mut t = 100;
        let mut expired = false;
        for k in 0..12 {
            t += 5;
            let runnable = k % 3 != 2;
            let l = at(t, k, 4 * k, runnable);
            expired |= w.expired(since, t * MS, deadline, Count::Total, || Some(l));
        }
        assert!(!expired, "a reader that only waited for a CPU was given up");
        // The old rule would have fired: 60 ms of wall time against a 20 ms deadline.
        assert!((t - 100) * MS > deadline);

        // Not runnable at a look, but the interval was all run and run-queue wait: nothing
        // blocked either.
        let mut w = Watch::default();
        w.add(0, at(10, 1, 1, true), Count::Total);
        assert_eq!(w.add(0, at(40, 16, 16, false), Count::Total), 0);
    }

    #[test]
    fn a_read_blocked_on_the_mmap_lock_is_given_up_near_the_deadline() {
        let deadline = 20 * MS;
        let mut w = Watch::default();
        let since = 1000 * MS;
        // First look at 1 ms (unknown before it), then every 5 ms, blocked in D throughout.
        let mut given_up_at = None;
        for k in 0..20u64 {
            let t = 1001 + 5 * k;
            let l = at(t, 3, 2, false);
            if w.expired(since, t * MS, deadline, Count::Total, || Some(l)) {
                given_up_at = Some(t - 1000);
                break;
            }
        }
        let after = given_up_at.expect("a blocked read is given up");
        assert!(
            (20..=26).contains(&after),
            "given up {after} ms into the read"
        );
    }

    #[test]
    fn blocked_time_is_wall_minus_run_minus_wait() {
        let prev = at(100, 10, 5, false);
        // 50 ms later: ran 7, waited 13, asleep now: blocked at least 30.
        assert_eq!(
            blocked_between(Some(&prev), 0, &at(150, 17, 18, false)),
            30 * MS
        );
        // The operation began after the previous look: only its part counts.
        assert_eq!(
            blocked_between(Some(&prev), 120 * MS, &at(150, 10, 5, false)),
            30 * MS
        );
        // Runnable now: its wait is not accounted yet, so nothing is counted.
        assert_eq!(blocked_between(Some(&prev), 0, &at(150, 10, 5, true)), 0);
        // Without an earlier look, nothing is known.
        assert_eq!(blocked_between(None, 0, &at(150, 10, 5, false)), 0);
        // Counters that moved more than the wall time (accounted late): never negative.
        assert_eq!(blocked_between(Some(&prev), 0, &at(110, 30, 5, false)), 0);
    }

    #[test]
    fn a_new_operation_starts_from_zero_and_progress_resets_a_pass() {
        let mut w = Watch::default();
        w.add(0, at(0, 0, 0, false), Count::Total);
        assert_eq!(w.add(0, at(15, 0, 0, false), Count::Total), 15 * MS);
        // Another read on the same thread: its own count, bounded by the earlier look.
        assert_eq!(w.add(20 * MS, at(30, 0, 0, false), Count::Total), 10 * MS);

        let mut w = Watch::default();
        w.add(0, at(0, 0, 0, false), Count::SinceProgress);
        assert_eq!(w.add(0, at(15, 0, 0, false), Count::SinceProgress), 15 * MS);
        // It ran 1 ms in the next 15 (when, is unknown): the count starts again from here.
        assert_eq!(w.add(0, at(30, 1, 0, false), Count::SinceProgress), 0);
        assert_eq!(w.add(0, at(40, 1, 0, false), Count::SinceProgress), 10 * MS);
    }

    /// A watcher that was late (a busy host) and found the thread runnable once still counts
    /// the blocked stretch before, at the next look that finds it blocked again.
    #[test]
    fn a_runnable_look_does_not_hide_the_blocked_stretch_before_it() {
        let mut w = Watch::default();
        let since = 0;
        w.add(since, at(1, 0, 0, false), Count::Total);
        // Woken (lock granted to another reader first, say), waiting for a CPU: nothing yet.
        assert_eq!(w.add(since, at(30, 0, 0, true), Count::Total), 0);
        // Blocked again; in all it ran 1 ms and waited 2: 40 - 1 - 1 - 2 = 36 ms blocked.
        assert_eq!(w.add(since, at(41, 1, 2, false), Count::Total), 37 * MS);
    }

    #[test]
    fn without_a_look_wall_time_decides() {
        let mut w = Watch::default();
        assert!(!w.expired(0, 15 * MS, 20 * MS, Count::Total, || None));
        assert!(w.expired(0, 25 * MS, 20 * MS, Count::Total, || None));
        // Not looked at before LOOK_AFTER.
        let mut looked = false;
        w.expired(0, LOOK_AFTER_NS / 2, 20 * MS, Count::Total, || {
            looked = true;
            None
        });
        assert!(!looked);
    }

    #[test]
    fn a_pass_is_stuck_on_one_blocked_stretch_not_on_a_busy_cpu() {
        let mut p = PassWatch::new(0, 20 * MS, 1500 * MS);
        // Two threads, looked at every 5 ms: one runs, the other waits for a CPU; 3 s go by.
        let mut stuck = false;
        for k in 1..600u64 {
            let t = 5 * k;
            stuck |= p.stuck(&[10, 11], t * MS, |tid| {
                Some(if tid == 10 {
                    at(t, t - k, k, true)
                } else {
                    at(t, k, t - k, k % 2 == 0)
                })
            });
        }
        assert!(!stuck, "a busy pass is not a stuck one");
        // A thread that stops running for 25 ms (the mmap lock): stuck.
        let mut p = PassWatch::new(0, 20 * MS, 1500 * MS);
        let stuck_at = (1..20u64).find(|k| {
            let t = 5 * k;
            p.stuck(&[10], t * MS, |_| Some(at(t, 1, 1, false)))
        });
        assert_eq!(stuck_at, Some(6), "stuck once blocked for more than 20 ms");
        // Unable to look: the old wall-clock deadline.
        let mut p = PassWatch::new(0, 20 * MS, 1500 * MS);
        assert!(!p.stuck(&[10], 1000 * MS, |_| None));
        assert!(p.stuck(&[10], 1600 * MS, |_| None));
    }

    #[test]
    fn threads_are_listed_while_they_work() {
        let th = Threads::default();
        {
            let _in = th.enter();
            assert_eq!(th.list(), vec![sys::gettid()]);
        }
        assert!(th.list().is_empty());
    }

    #[test]
    fn looks_at_a_live_thread_of_this_process() {
        let l = look(sys::gettid()).expect("this thread can be looked at");
        assert!(l.runnable, "the thread looking at itself is running");
        assert!(look(-1).is_none());
    }
}
