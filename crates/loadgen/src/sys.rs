//! Thin wrappers around the raw libc calls the `tasksnap-loadgen` binary
//! needs (fork/clone, prctl, signal masks, signalfd, poll, pipes, wait,
//! process groups and the terminal). Nearly every `unsafe` block of the
//! binary lives here, each with its justification.
//!
//! Functions marked "async-signal-safe" do not allocate and only make
//! syscalls, so they may run between fork and exec.

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A Linux process or thread id.
pub type Pid = libc::pid_t;

/// The wrappers the reading layer already has (async-signal-safe: a system call each, no
/// allocation): `read(2)` retried on EINTR, `close(2)`, `gettid(2)`.
pub use tasksnap_sys::{close as close_fd, gettid, read_fd};

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `getpid()`. Async-signal-safe.
pub fn getpid() -> Pid {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// `geteuid()`. Async-signal-safe.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Drops every privilege for `uid` (as its own gid, no supplementary groups). Async-signal-safe.
pub fn become_user(uid: u32) -> io::Result<()> {
    // SAFETY: plain syscalls with integer arguments and an empty group list.
    unsafe {
        cvt(libc::setgroups(0, std::ptr::null()))?;
        cvt(libc::setresgid(uid, uid, uid))?;
        cvt(libc::setresuid(uid, uid, uid))?;
    }
    Ok(())
}

/// `getppid()`. Async-signal-safe.
pub fn getppid() -> Pid {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

/// `getpgrp()`.
pub fn getpgrp() -> Pid {
    // SAFETY: getpgrp has no preconditions and cannot fail.
    unsafe { libc::getpgrp() }
}

/// `setpgid(0, 0)`: make the calling process a process-group leader.
pub fn setpgid_self() -> io::Result<()> {
    // SAFETY: plain syscall on the calling process.
    cvt(unsafe { libc::setpgid(0, 0) }).map(drop)
}

/// `_exit(code)`: leave immediately, without running destructors, atexit
/// handlers or flushing stdio buffers inherited from the parent.
/// Async-signal-safe.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Sleeps until killed. Async-signal-safe.
pub fn pause_forever() -> ! {
    loop {
        // SAFETY: pause has no preconditions; it returns only after a
        // caught signal, in which case we simply pause again.
        unsafe { libc::pause() };
    }
}

/// `prctl(PR_SET_NAME, name)`: sets the calling thread's comm; the kernel
/// keeps the first 15 bytes. Async-signal-safe.
pub fn set_comm(name: &CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string (at most 16 bytes)
    // from the pointer, which is valid for the duration of the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`: die when the parent thread exits.
/// Async-signal-safe.
pub fn set_pdeathsig_kill() {
    // SAFETY: plain prctl with integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
}

/// `prctl(PR_SET_CHILD_SUBREAPER, 1)`: orphaned descendants are reparented
/// to us instead of init, so we can reap them (zombies included).
pub fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// Builds a signal set from a list of signals. Async-signal-safe.
pub fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is a plain C struct for which all-zero bytes are a
    // valid value; sigemptyset initialises it properly anyway.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in signals {
        // SAFETY: as above; invalid signal numbers only make it return -1.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    set
}

/// Replaces the signal mask of the calling thread (the process, since the
/// callers are single-threaded). Async-signal-safe.
pub fn set_sigmask(set: &libc::sigset_t) -> io::Result<()> {
    // SAFETY: `set` points to an initialised sigset_t; the old mask is not
    // requested (null is allowed).
    cvt(unsafe { libc::sigprocmask(libc::SIG_SETMASK, set, std::ptr::null_mut()) }).map(drop)
}

/// Creates a `signalfd` (non-blocking, close-on-exec) for `set`.
pub fn signalfd(set: &libc::sigset_t) -> io::Result<OwnedFd> {
    // SAFETY: -1 asks for a new descriptor; `set` is a valid sigset_t.
    let fd = cvt(unsafe { libc::signalfd(-1, set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
    // SAFETY: signalfd returned a fresh descriptor that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads one pending signal from a non-blocking signalfd, if any.
pub fn read_signalfd(fd: RawFd) -> io::Result<Option<libc::c_int>> {
    // SAFETY: signalfd_siginfo is a plain C struct; all-zero is valid.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    loop {
        // SAFETY: `info` is a writable buffer of exactly `size` bytes.
        let n = unsafe { libc::read(fd, (&mut info as *mut libc::signalfd_siginfo).cast(), size) };
        if n == size as isize {
            return Ok(Some(info.ssi_signo as libc::c_int));
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ if n >= 0 => return Ok(None),
            _ => return Err(err),
        }
    }
}

/// `poll()`; EINTR is reported as "nothing ready".
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: the pointer/length pair describes a valid, writable slice.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n == -1 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(err);
    }
    Ok(n as usize)
}

/// A close-on-exec pipe: `(read end, write end)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    // SAFETY: `fds` points to two writable c_ints.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, both descriptors are fresh and owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes all of `buf` to a raw fd, retrying on EINTR. Async-signal-safe.
pub fn write_all_fd(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: the pointer/length pair describes a valid readable slice.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// `dup2(old, new)` and make sure `new` survives exec (dup2 onto itself
/// would keep FD_CLOEXEC). Async-signal-safe.
pub fn dup2_inheritable(old: RawFd, new: RawFd) -> io::Result<()> {
    if old == new {
        // SAFETY: plain fcntl on a descriptor we hold.
        cvt(unsafe { libc::fcntl(new, libc::F_SETFD, 0) }).map(drop)
    } else {
        // SAFETY: plain dup2 on descriptors we hold; dup2 clears FD_CLOEXEC
        // on the new descriptor.
        cvt(unsafe { libc::dup2(old, new) }).map(drop)
    }
}

/// `kill(pid, sig)`.
pub fn kill(pid: Pid, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall; callers never pass 0 or -1 as pid.
    cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// `tgkill(tgid, tid, sig)`: a signal for one thread.
pub fn tgkill(tgid: Pid, tid: Pid, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, sig) };
    cvt(r as libc::c_int).map(drop)
}

/// Sets the disposition of `sig` to `handler` (`SIG_IGN`, `SIG_DFL` or a function address).
pub fn set_handler(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: sigaction is a plain C struct for which all-zero bytes are valid (empty mask,
    // no flags); the kernel copies it during the call.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    // SAFETY: `act` is initialised; the old action is not requested.
    cvt(unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) }).map(drop)
}

/// `waitpid(pid, flags)`; `Ok(None)` when WNOHANG finds nothing to report.
pub fn waitpid(pid: Pid, flags: libc::c_int) -> io::Result<Option<(Pid, libc::c_int)>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        match r {
            -1 => {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            0 => return Ok(None),
            p => return Ok(Some((p, status))),
        }
    }
}

/// Waits until child `pid` has exited *without reaping it*
/// (`waitid(P_PID, pid, WEXITED | WNOWAIT)`), so it stays a zombie.
/// Async-signal-safe.
pub fn wait_exited_keep_zombie(pid: Pid) -> io::Result<()> {
    // SAFETY: siginfo_t is a plain C struct; all-zero is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is a valid writable siginfo_t.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits up to `timeout` for process `pid` (a child of ours, not yet
/// reaped) to exit, using `pidfd_open` + `poll`. Falls back to a short sleep
/// if pidfds are unavailable.
pub fn wait_exit_timeout(pid: Pid, timeout: std::time::Duration) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        std::thread::sleep(timeout.min(std::time::Duration::from_millis(1)));
        return Ok(());
    }
    // SAFETY: pidfd_open returned a fresh descriptor that nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let mut fds = [libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
        events: libc::POLLIN,
        revents: 0,
    }];
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    poll(&mut fds, ms).map(drop)
}

/// `isatty(fd)`.
pub fn isatty(fd: RawFd) -> bool {
    // SAFETY: plain query on a descriptor number.
    unsafe { libc::isatty(fd) == 1 }
}

/// `tcgetpgrp(fd)`.
pub fn tcgetpgrp(fd: RawFd) -> io::Result<Pid> {
    // SAFETY: plain query on a descriptor number.
    cvt(unsafe { libc::tcgetpgrp(fd) })
}

/// `tcsetpgrp(fd, pgrp)`; callers keep SIGTTOU blocked.
pub fn tcsetpgrp(fd: RawFd, pgrp: Pid) -> io::Result<()> {
    // SAFETY: plain ioctl wrapper on a descriptor number.
    cvt(unsafe { libc::tcsetpgrp(fd, pgrp) }).map(drop)
}

/// Everything a forked child needs to set itself up without allocating.
#[derive(Debug, Clone, Copy)]
pub struct ChildCtx {
    /// The forking process; a child whose parent already changed exits.
    pub parent: Pid,
    /// An open `/dev/null`, dup'ed onto the child's stdin and stdout so the
    /// load does not hold the loadgen's pipes open.
    pub devnull: RawFd,
}

/// Setup common to every forked child: die with the parent, unblock the
/// signals the loadgen keeps blocked, detach stdin/stdout, set the comm.
/// Async-signal-safe.
pub fn child_setup(ctx: &ChildCtx, comm: &CStr) {
    set_pdeathsig_kill();
    // The parent may have died before PR_SET_PDEATHSIG took effect.
    if getppid() != ctx.parent {
        exit_now(1);
    }
    let _ = set_sigmask(&sigset(&[]));
    let _ = dup2_inheritable(ctx.devnull, 0);
    let _ = dup2_inheritable(ctx.devnull, 1);
    set_comm(comm);
}

/// Forks a child that runs [`child_setup`], writes one byte to `ready` (if
/// given) and then runs `body`; the child `_exit`s when `body` returns (0)
/// or panics (101), never returning into the parent's code. Returns the
/// child's pid in the parent.
///
/// Callers must be single-threaded (the loadgen checks this at startup):
/// then the child is a consistent copy of the parent, no lock can be held
/// by a thread that vanished in the fork, and `body` may run ordinary,
/// even allocating, Rust code.
pub fn fork_child<F: FnOnce()>(
    ctx: &ChildCtx,
    comm: &CStr,
    ready: Option<RawFd>,
    body: F,
) -> io::Result<Pid> {
    // SAFETY: the caller is single-threaded (see above), so fork() yields a
    // consistent copy; the child never returns from this function.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            child_setup(ctx, comm);
            if let Some(fd) = ready {
                if write_all_fd(fd, b"r").is_err() {
                    exit_now(1);
                }
                close_fd(fd);
            }
            let code = match catch_unwind(AssertUnwindSafe(body)) {
                Ok(()) => 0,
                Err(_) => 101,
            };
            exit_now(code)
        }
        pid => Ok(pid),
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds. Async-signal-safe.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// Sleeps until `CLOCK_MONOTONIC` reads `deadline_ns` (`clock_nanosleep` with
/// `TIMER_ABSTIME`), again after a signal interrupted it. Async-signal-safe.
pub fn sleep_until_monotonic_ns(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec read during the call; the remainder pointer may
        // be null with TIMER_ABSTIME. clock_nanosleep returns the error number itself.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// `clone(CLONE_VFORK | SIGCHLD)` running `child(arg)` on a private stack:
/// the calling process sleeps (in `TASK_KILLABLE`, reported as `D`) until
/// the child exits or execs. Returns the child's pid once that happened.
///
/// There is no `CLONE_VM`: the child runs in a copy-on-write copy of our
/// memory, exactly like after fork(), so it cannot disturb the parent.
pub fn clone_vfork(
    child: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: usize,
) -> io::Result<Pid> {
    const STACK: usize = 64 * 1024;
    // SAFETY: anonymous private mapping with no address hint; checked below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `stack` is a fresh STACK-byte mapping and stacks grow down on
    // every Linux architecture Rust supports except hppa, so the child gets
    // its page-aligned top. The child only runs `child`, which makes
    // async-signal-safe syscalls. `arg` is an integer smuggled as a pointer
    // and never dereferenced.
    let pid = unsafe {
        libc::clone(
            child,
            stack.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VFORK | libc::SIGCHLD,
            arg as *mut libc::c_void,
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: the child exited or exec'ed (CLONE_VFORK), and it had its own
    // copy of the mapping anyway; nobody else uses `stack`.
    unsafe { libc::munmap(stack, STACK) };
    if pid == -1 {
        Err(err)
    } else {
        Ok(pid)
    }
}

/// `execve(path, argv, envp)` with NULL-terminated pointer arrays prepared
/// before fork; returns only on failure. Async-signal-safe.
pub fn execve(
    path: &CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    debug_assert!(envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: `path` is a C string; argv/envp are NULL-terminated arrays of
    // pointers to C strings that outlive the call (they were built before
    // fork and live in this process's copy of the parent's memory).
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    io::Error::last_os_error()
}
