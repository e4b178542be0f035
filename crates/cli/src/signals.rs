//! The stop signals of the long-running commands (`states`, `record`): SIGINT, SIGTERM and
//! SIGHUP are blocked in every thread and taken only by [`wait`], which sleeps until the next
//! interval or until one arrives, so that a stop always ends a run at a clean point (the
//! partial interval printed, the last frame written whole).

use std::time::Duration;

/// The signals that end a run.
pub fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the stop signals in this thread and every thread started after (the sampler), so
/// that they are only ever taken by [`wait`].
pub fn block(set: &libc::sigset_t) {
    // SAFETY: changes this thread's signal mask with a valid set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, std::ptr::null_mut()) };
}

/// Sleeps `d`, or less when a stop signal arrives; true when one did.
pub fn wait(set: &libc::sigset_t, d: Duration) -> bool {
    let deadline = std::time::Instant::now() + d;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        // SAFETY: waits for one of the signals in `set` (blocked in this thread) for at most
        // `ts`; the siginfo pointer may be null.
        let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        if r > 0 {
            return true;
        }
        // EAGAIN: the time is up. EINTR (another signal, e.g. SIGWINCH): wait the rest.
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}
