//! The few raw system calls and file helpers the /proc readers make (openat relative to a
//! directory descriptor, small-file reads, rlimits, clocks, core count, huge-page advice,
//! the terminal size, the local time, a process's I/O priority),
//! wrapped once so the crates above are safe code. Each wrapper returns `std::io::Error` with the raw errno kept, so
//! callers can tell "task exited" (ENOENT, ESRCH) from "not allowed" (EACCES, EPERM).

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// Opens `path` relative to the directory `dirfd`, read-only, close-on-exec. The caller owns
/// the returned descriptor and must hand it to [`FdBatch`] (or close it).
pub fn openat_ro(dirfd: RawFd, path: &CStr) -> io::Result<RawFd> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; openat
    // does not retain the pointer.
    let fd = unsafe {
        libc::openat(
            dirfd,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// One `read(2)` into `buf`; retries on EINTR. Async-signal-safe (no allocation): the load
/// generator uses it between fork and exec.
pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a valid writable region of `buf.len()` bytes owned by the caller.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `readlinkat(2)` into `buf`, returning the length (truncated at `buf.len()`).
pub fn readlinkat(dirfd: RawFd, path: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `path` is NUL-terminated; `buf` is writable for `buf.len()` bytes.
    let n = unsafe { libc::readlinkat(dirfd, path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Owner (uid, gid) of `path` relative to `dirfd`, without following a final symlink.
pub fn owner_at(dirfd: RawFd, path: &CStr) -> io::Result<(u32, u32)> {
    stat_at(dirfd, path).map(|st| (st.st_uid, st.st_gid))
}

/// The size stat(2) reports for `path` relative to `dirfd` (not following a last symlink).
/// For a `/proc/PID/fd` directory that is the number of open descriptors since Linux 6.2
/// ("proc: report open files as size in stat() for /proc/pid/fd", fs/proc/fd.c
/// `proc_fd_getattr`); 0 before.
pub fn size_at(dirfd: RawFd, path: &CStr) -> io::Result<u64> {
    stat_at(dirfd, path).map(|st| st.st_size.max(0) as u64)
}

fn stat_at(dirfd: RawFd, path: &CStr) -> io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `path` is NUL-terminated and `st` points to writable memory sized for `stat`.
    let rc = unsafe {
        libc::fstatat(
            dirfd,
            path.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat returned 0, so it filled the whole structure.
    Ok(unsafe { st.assume_init() })
}

/// Inode number of `path` relative to `dirfd`, following a final symlink: for a
/// /proc/PID/ns/NAME link, the namespace's number (what `ls -l` shows in `net:[4026531833]`).
pub fn inode_at(dirfd: RawFd, path: &CStr) -> io::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `path` is NUL-terminated and `st` points to writable memory sized for `stat`.
    let rc = unsafe { libc::fstatat(dirfd, path.as_ptr(), st.as_mut_ptr(), 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat returned 0, so it filled the whole structure.
    let st = unsafe { st.assume_init() };
    Ok(st.st_ino)
}

/// Closes a descriptor, ignoring errors (a close error on a read-only procfs file carries no
/// information we could act on). Async-signal-safe.
pub fn close(fd: RawFd) {
    // SAFETY: the caller passes a descriptor it owns and never uses again.
    unsafe {
        libc::close(fd);
    }
}

/// Gives the calling thread a private copy of the file descriptor table (`unshare(CLONE_FILES)`),
/// so it may close ranges of descriptors without touching other threads' files.
pub fn unshare_files() -> io::Result<()> {
    // SAFETY: unshare takes only flags; CLONE_FILES affects the calling thread alone.
    let rc = unsafe { libc::unshare(libc::CLONE_FILES) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Moves descriptor `fd` to number `to` in the calling thread's table (`dup2`).
pub fn dup2(fd: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: dup2 only manipulates descriptor numbers; `to` is replaced atomically.
    let rc = unsafe { libc::dup2(fd, to) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Closes every descriptor from `first` upward (`close_range(2)`, Linux 5.9).
pub fn close_from(first: RawFd) -> io::Result<()> {
    // SAFETY: close_range takes plain integers. It is only called on a thread whose descriptor
    // table is private (see `unshare_files`), where every descriptor >= `first` is ours.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, u32::MAX, 0u32) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

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

/// Whether `path` is a mounted procfs (`statfs(2)` says `PROC_SUPER_MAGIC`), as opposed to a
/// fake tree or another file system.
pub fn is_procfs(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a zeroed statfs is a valid buffer for statfs(2) to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a buffer of the right type.
    let ok = unsafe { libc::statfs(path.as_ptr(), &mut st) } == 0;
    ok && st.f_type == libc::PROC_SUPER_MAGIC
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

/// Descriptors opened by one reader thread, closed in bulk.
///
/// Closing costs one system call per file. A reader thread with a private descriptor table
/// (after [`unshare_files`]) instead lets descriptors accumulate and drops them all with one
/// `close_range`, which turns "open, read, close" into "open, read" plus 1/`limit` of a call.
/// Without a private table every descriptor is closed at once, as usual.
#[derive(Debug)]
pub struct FdBatch {
    /// Lowest descriptor number this thread's files can get, when the table is private.
    private_from: Option<RawFd>,
    open: usize,
    limit: usize,
}

impl FdBatch {
    /// A batch for a thread whose table is private from `private_from` up, or a plain one.
    pub fn new(private_from: Option<RawFd>, limit: usize) -> FdBatch {
        FdBatch {
            private_from,
            open: 0,
            limit: limit.max(1),
        }
    }

    /// Takes ownership of a descriptor the caller has finished with.
    pub fn done(&mut self, fd: RawFd) {
        match self.private_from {
            None => close(fd),
            Some(first) => {
                self.open += 1;
                if self.open >= self.limit {
                    self.flush_from(first);
                }
            }
        }
    }

    fn flush_from(&mut self, first: RawFd) {
        if close_from(first).is_err() {
            // close_range missing (pre-5.9 kernel): fall back to closing one by one from now on.
            for fd in first..first + self.open as RawFd {
                close(fd);
            }
            self.private_from = None;
        }
        self.open = 0;
    }

    /// Closes everything still held.
    pub fn flush(&mut self) {
        if let Some(first) = self.private_from {
            if self.open > 0 {
                self.flush_from(first);
            }
        }
    }
}

impl Drop for FdBatch {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The CPUs this process may use (`std::thread::available_parallelism`, at least 1), read
/// once: the standard library reads the cgroup's CPU quota files on every call (three
/// files, nine system calls), and a snapshot asked several times.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A whole small file such as /proc/stat or /proc/loadavg. procfs reports their size as 0,
/// so `std::fs::read` starts with 32-byte reads and doubles (nine reads for /proc/stat
/// here); a 16 KiB buffer takes them in one read and the end-of-file read.
pub fn read_small_file(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut v = Vec::with_capacity(16 << 10);
    std::fs::File::open(path)?.read_to_end(&mut v)?;
    Ok(v)
}

/// The running kernel's major and minor version ("6.18.44-fc-v782" gives (6, 18)), from
/// /proc/sys/kernel/osrelease; `None` when it cannot be read or parsed.
pub fn kernel_release() -> Option<(u32, u32)> {
    let s = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    parse_release(&s)
}

/// The "major.minor" at the start of a kernel release string.
fn parse_release(s: &str) -> Option<(u32, u32)> {
    let mut it = s.trim().split(['.', '-', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The size of the terminal on `fd` in character cells, `(columns, rows)`, as `TIOCGWINSZ`
/// gives it; `None` when `fd` is not a terminal. Either figure may be 0 (a pty nobody sized):
/// callers decide what an unsized terminal means.
pub fn terminal_size(fd: RawFd) -> Option<(u16, u16)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the valid struct we pass and keeps no pointer.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (rc != -1).then_some((ws.ws_col, ws.ws_row))
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

/// `struct open_how` (linux/openat2.h; libc's is `non_exhaustive`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Whether `path` (absolute, or relative to the working directory) is a regular file, asked
/// only of the kernel's caches, so that the call cannot wait for a file system:
/// `openat2(O_PATH, RESOLVE_CACHED)` fails with EAGAIN where the walk would have to leave
/// RCU mode (a name not in the dentry cache, one to revalidate: a FUSE or NFS dentry whose
/// timeout passed, an automount), and `statx(AT_STATX_DONT_SYNC)` of the descriptor takes
/// the attributes the kernel holds instead of asking the server (FUSE, NFS, CIFS honour
/// it). `None`: the caches cannot tell (EAGAIN), or this kernel or sandbox cannot ask so
/// (before 5.12 openat2 rejects the flag: EINVAL; filtered: ENOSYS, EPERM); the caller
/// then stats the slow way, where it can afford to wait. `Some(Err)` is what the cached
/// walk found (ENOENT of a cached negative dentry, EACCES, ENOTDIR, ELOOP...).
pub fn is_regular_file_cached(path: &CStr) -> Option<io::Result<bool>> {
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_CACHED,
    };
    let undecided = |e: &io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EAGAIN | libc::EINVAL | libc::ENOSYS | libc::EPERM | libc::E2BIG)
        )
    };
    // SAFETY: `path` is NUL-terminated; `how` is a valid open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return if undecided(&e) { None } else { Some(Err(e)) };
    }
    let fd = fd as RawFd;
    let mut stx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `fd` is the descriptor just opened, the empty path is NUL-terminated and
    // `stx` is writable memory sized for a statx.
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC,
            libc::STATX_TYPE,
            stx.as_mut_ptr(),
        )
    };
    let e = io::Error::last_os_error();
    close(fd);
    if rc < 0 {
        return if undecided(&e) { None } else { Some(Err(e)) };
    }
    // SAFETY: statx returned 0, so it filled the structure (zeroed before anyway).
    let stx = unsafe { stx.assume_init() };
    if stx.stx_mask & libc::STATX_TYPE == 0 {
        return None;
    }
    Some(Ok(u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFREG))
}

#[cfg(test)]
mod release_tests {
    #[test]
    fn kernel_releases_parse_to_major_and_minor() {
        assert_eq!(super::parse_release("6.18.44-fc-v782\n"), Some((6, 18)));
        assert_eq!(super::parse_release("6.16-rc6"), Some((6, 16)));
        assert_eq!(super::parse_release("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(super::parse_release("garbage"), None);
    }

    #[test]
    fn a_cached_look_tells_files_from_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").expect("test");
        let c = |p: &std::path::Path| {
            std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))
                .expect("test")
        };
        // Just made: in the caches (unless this kernel cannot look so: then None).
        let Some(r) = super::is_regular_file_cached(&c(&file)) else {
            eprintln!("SKIP: no cached lookups here");
            return;
        };
        assert!(r.expect("a file"));
        assert!(!super::is_regular_file_cached(&c(dir.path()))
            .expect("cached")
            .expect("a directory"));
        let gone = dir.path().join("gone");
        let _ = std::fs::metadata(&gone); // a negative dentry
        match super::is_regular_file_cached(&c(&gone)) {
            None => {}
            Some(r) => assert_eq!(r.expect_err("not there").raw_os_error(), Some(libc::ENOENT)),
        }
    }
}
