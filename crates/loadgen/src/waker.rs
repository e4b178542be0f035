//! `--wakers K`: processes that wake on a timer, so that a load can hold N processes of
//! which exactly K are active (the cost-against-activity benchmark, bench/curve.sh).
//!
//! Each waker (comm `lg-waker`, one of the `--procs` children) sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until its next deadline, wakes, bumps a
//! counter and sleeps again: one voluntary context switch per period and almost no CPU of
//! its own. Deadlines are absolute, so the period does not drift by the time each wake-up
//! takes; a waker that fell behind by more than a period (a saturated host) starts again
//! from now rather than bursting to catch up, so it never wakes more often than asked.
//! Each waker starts its own clock when the loadgen lets them go, so their phases are
//! spread by however long that takes to reach each of them rather than all aligned.
//!
//! The loop only makes system calls and touches its stack: it runs in a forked child of
//! the single-threaded loadgen (see [`crate::sleepers::fork_sleepers`]).

use crate::sys;

/// The default `--wake-period-ms`.
pub const DEFAULT_PERIOD_MS: u64 = 10;

/// Wakes every `period_ns` nanoseconds (at least 1 µs) until killed.
pub fn wake_forever(period_ns: u64) -> ! {
    let period_ns = period_ns.max(1_000);
    let mut wakes: u64 = 0;
    let mut next = sys::monotonic_ns();
    loop {
        next += period_ns;
        sys::sleep_until_monotonic_ns(next);
        // "Almost nothing": one addition the compiler may not drop.
        wakes = std::hint::black_box(wakes.wrapping_add(1));
        let now = sys::monotonic_ns();
        if now > next + period_ns {
            next = now;
        }
    }
}
