//! Clocks: any clock by id (vDSO), a thread's and a process's CPU time, and the local time
//! zone's wall clock.

/// The calling thread's CPU time, ns (`CLOCK_THREAD_CPUTIME_ID`); `None` if the clock fails.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Current time of `clock` in ns (vDSO: no system call).
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The CPU time (ns) of every thread of process `tgid`, those that exited included, from
/// the kernel's process CPU clock (`MAKE_PROCESS_CPUCLOCK(tgid, CPUCLOCK_SCHED)`, as
/// `clock_getcpuclockid(3)` builds it; a system call, not the vDSO). `None` when no process of
/// the caller's pid namespace has that number (a thread id is not a process: EINVAL). Any
/// process may read any other's clock (`pid_for_clock()`, kernel/time/posix-cpu-timers.c).
pub fn process_cpu_ns(tgid: i32) -> Option<u64> {
    if tgid <= 0 {
        return None;
    }
    // include/linux/posix-timers_types.h: the pid, inverted, above three bits saying which
    // clock (CPUCLOCK_SCHED = 2) and that it is per process (bit 2 clear).
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    let clock = ((!tgid) << 3) | CPUCLOCK_SCHED;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an unknown clock id only makes the call
    // fail with EINVAL.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64),
    )
}

/// `unix_s` (seconds since the Unix epoch) broken down in the local time zone, as
/// `localtime_r(3)` does (reading `TZ` and /etc/localtime); `None` when it cannot be
/// represented.
pub fn local_time(unix_s: i64) -> Option<libc::tm> {
    let tt = unix_s as libc::time_t;
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    // SAFETY: `tt` and `tm` are valid for the call; localtime_r keeps neither pointer.
    if unsafe { libc::localtime_r(&tt, tm.as_mut_ptr()) }.is_null() {
        return None;
    }
    // SAFETY: localtime_r succeeded, so it filled `tm` (which was zeroed before anyway).
    Some(unsafe { tm.assume_init() })
}

/// The wall clock now in the local time zone, `HH:MM:SS`, as top's and states' headers print
/// it; `--:--:--` when the local time cannot be had.
pub fn local_clock() -> String {
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    match local_time(now_s) {
        Some(tm) => format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec),
        None => "--:--:--".into(),
    }
}
