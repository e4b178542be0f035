//! This process and the kernel it runs on: thread ids, the open-files limit, I/O priority,
//! `sysinfo(2)`, `sysconf(3)`, the CPUs it may use, the kernel's release, huge-page advice.

use std::io;

/// `IOPRIO_WHO_PROCESS` (linux/ioprio.h): the priority of one thread, by its id.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// The class sits above the 13 bits of data (`IOPRIO_CLASS_SHIFT`).
const IOPRIO_CLASS_SHIFT: u32 = 13;

/// The I/O scheduling class and data of thread `tid` (`ioprio_get(IOPRIO_WHO_PROCESS)`),
/// split as `IOPRIO_PRIO_CLASS`/`IOPRIO_PRIO_DATA` do.
pub fn ioprio_get(tid: i32) -> io::Result<(u32, u32)> {
    // SAFETY: ioprio_get takes two integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_get,
            IOPRIO_WHO_PROCESS,
            tid as libc::c_long,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let v = r as u32;
    Ok((v >> IOPRIO_CLASS_SHIFT, v & ((1 << IOPRIO_CLASS_SHIFT) - 1)))
}

/// Sets the I/O scheduling class and data of thread `tid`
/// (`ioprio_set(IOPRIO_WHO_PROCESS, IOPRIO_PRIO_VALUE(class, data))`). The kernel checks
/// both (EINVAL) and the caller's right to (EPERM).
pub fn ioprio_set(tid: i32, class: i32, data: i32) -> io::Result<()> {
    // As C computes it in an int (the kernel refuses what is out of range, EINVAL).
    let value = class.wrapping_shl(IOPRIO_CLASS_SHIFT) | data;
    // SAFETY: ioprio_set takes three integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            tid as libc::c_long,
            value as libc::c_long,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The calling thread's id. Async-signal-safe.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The soft limit on open files (`RLIMIT_NOFILE`). It bounds descriptor *numbers*: no table,
/// private or shared, gets a descriptor at or above it (`alloc_fd()`, fs/file.c, checks the
/// number against `rlimit(RLIMIT_NOFILE)`, which all threads of the process share).
pub fn nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 1024;
    }
    r.rlim_cur
}

/// Raises the soft limit on open files to the hard one (often 1024 -> 524288) and returns
/// the soft limit now in force; `None` when the limits cannot be read.
pub fn raise_nofile_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r = raised;
            }
        }
    }
    Some(r.rlim_cur)
}

/// Whether `e` says that something every open or read needs ran out (EMFILE: the process's
/// descriptor numbers under RLIMIT_NOFILE; ENFILE: the system's open files; ENOMEM: kernel
/// memory), as opposed to anything about the task being read. Counting such a failure as
/// that task's trouble ("denied", "vanished") would make a listing silently short.
pub fn is_exhaustion(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOMEM)
    )
}

/// What `sysinfo(2)` says of the running kernel that the host figures use: the load averages
/// in the kernel's fixed point (`loads / 65536`, `SI_LOAD_SHIFT`: more digits than
/// /proc/loadavg's two decimals, and what glibc's `getloadavg(3)` returns since 2.33) and
/// swap, bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SysInfo {
    /// The 1, 5 and 15 minute load averages.
    pub load_avg: [f64; 3],
    /// Swap in all, bytes.
    pub swap_total_bytes: u64,
    /// Swap free, bytes.
    pub swap_free_bytes: u64,
}

/// `sysinfo(2)` of the running kernel (never a fake tree's); `None` when it fails.
pub fn sysinfo() -> Option<SysInfo> {
    // SAFETY: an all-zero `struct sysinfo` is a valid value (integers and padding only).
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `si` is a live, writable `struct sysinfo` the kernel fills in.
    if unsafe { libc::sysinfo(&mut si) } != 0 {
        return None;
    }
    let unit = u64::from(si.mem_unit.max(1));
    let load = |l: libc::c_ulong| l as f64 / f64::from(1u32 << 16);
    Some(SysInfo {
        load_avg: [load(si.loads[0]), load(si.loads[1]), load(si.loads[2])],
        swap_total_bytes: (si.totalswap as u64).saturating_mul(unit),
        swap_free_bytes: (si.freeswap as u64).saturating_mul(unit),
    })
}

/// `sysconf` value, or `default` when the system does not say.
pub fn sysconf(name: libc::c_int, default: u64) -> u64 {
    // SAFETY: sysconf takes a plain integer and has no memory effects.
    let v = unsafe { libc::sysconf(name) };
    if v > 0 {
        v as u64
    } else {
        default
    }
}

/// The CPUs this process may use (`std::thread::available_parallelism`, at least 1), read
/// once: the standard library reads the cgroup's CPU quota files on every call (three
/// files, nine system calls), and a snapshot asked several times.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The running kernel's major and minor version ("6.18.44-fc-v782" gives (6, 18)), from
/// `uname(2)`'s release (what /proc/sys/kernel/osrelease shows); `None` when it cannot be
/// parsed.
pub fn kernel_release() -> Option<(u32, u32)> {
    // SAFETY: an all-zero `struct utsname` is a valid value (arrays of chars).
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a live, writable `struct utsname` the kernel fills in.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: uname NUL-terminates each field inside its array (which was zeroed before).
    let release = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) };
    parse_release(release.to_str().ok()?)
}

/// The "major.minor" at the start of a kernel release string.
fn parse_release(s: &str) -> Option<(u32, u32)> {
    let mut it = s.trim().split(['.', '-', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Asks for transparent huge pages under the whole 2 MiB pages of `len` bytes at `ptr`
/// (`MADV_HUGEPAGE`): a buffer of tens of MB filled once then takes a fault per 2 MiB
/// instead of one per 4 KiB (about 5,000 faults for the 20 MB of 50,000 tasks, ~5 ms). Only
/// advice: where THP is off or `never`, nothing changes.
pub fn advise_huge_pages(ptr: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize).saturating_add(len) / HUGE * HUGE;
    if end <= start {
        return;
    }
    // SAFETY: madvise(MADV_HUGEPAGE) is advisory: it changes neither the contents nor the
    // protection of the range, which lies inside memory the caller owns.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_releases_parse_to_major_and_minor() {
        assert_eq!(super::parse_release("6.18.44-fc-v782\n"), Some((6, 18)));
        assert_eq!(super::parse_release("6.16-rc6"), Some((6, 16)));
        assert_eq!(super::parse_release("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(super::parse_release("garbage"), None);
    }
}
