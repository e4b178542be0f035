//! The fast path of `--procs` and `--wakers`: forking many sleeping children in a tight
//! loop ([`fork_sleepers`]), each of which reports its pid and then pauses, wakes on a
//! timer ([`crate::waker`]) or executes the loadgen's child mode ([`Sleeper`]).
//!
//! Same single-threaded precondition as [`crate::sys::fork_child`]: the children run only
//! async-signal-safe code from [`crate::sys`].

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

use crate::sys::{
    child_setup, close_fd, dup2_inheritable, execve, exit_now, getpid, pause_forever, read_fd,
    write_all_fd, ChildCtx,
};
use crate::waker;

/// What a child forked by [`fork_sleepers`] does once set up.
#[derive(Debug, Clone, Copy)]
pub enum Sleeper<'a> {
    /// Report its pid on the ready pipe, then pause() forever.
    Pause,
    /// Report its pid on the ready pipe, close `go_w`, wait for end of file on `go_r` (the
    /// parent's signal that every task is in place), then wake every `period_ns` for as long
    /// as it lives ([`crate::waker::wake_forever`]).
    Wake {
        period_ns: u64,
        go_r: RawFd,
        go_w: RawFd,
    },
    /// Move the ready pipe to descriptor `ready_fd` and exec `path` (which
    /// must report its pid there); argv/envp are NULL-terminated.
    Exec {
        path: &'a CStr,
        argv: &'a [*const libc::c_char],
        envp: &'a [*const libc::c_char],
        ready_fd: RawFd,
    },
}

/// Forks `n` sleeping children as fast as possible; each runs
/// [`crate::sys::child_setup`] and reports its pid (native-endian `pid_t`, an atomic
/// pipe write) on `ready`. Returns how many were forked and the error that
/// stopped the loop early, if any.
///
/// The loop deliberately stores nothing: after each fork every page the
/// parent writes takes a copy-on-write fault, so pids travel through the
/// pipe instead of a Vec (which would cost one fault per fork), leaving
/// only the stack page. Same single-threaded precondition as [`crate::sys::fork_child`].
pub fn fork_sleepers(
    ctx: &ChildCtx,
    comm: &CStr,
    ready: RawFd,
    n: usize,
    how: Sleeper<'_>,
) -> (usize, Option<io::Error>) {
    for i in 0..n {
        // SAFETY: the caller is single-threaded (see `sys::fork_child`), so the
        // child is a consistent copy; it never returns from `sleeper_child`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            sleeper_child(ctx, comm, ready, how);
        }
        if pid < 0 {
            return (i, Some(io::Error::last_os_error()));
        }
    }
    (n, None)
}

#[cold]
#[inline(never)]
fn sleeper_child(ctx: &ChildCtx, comm: &CStr, ready: RawFd, how: Sleeper<'_>) -> ! {
    child_setup(ctx, comm);
    match how {
        Sleeper::Pause => {
            if write_all_fd(ready, &getpid().to_ne_bytes()).is_err() {
                exit_now(1);
            }
            close_fd(ready);
            pause_forever()
        }
        Sleeper::Wake {
            period_ns,
            go_r,
            go_w,
        } => {
            if write_all_fd(ready, &getpid().to_ne_bytes()).is_err() {
                exit_now(1);
            }
            close_fd(ready);
            // Only the parent may hold the write end, or end of file never comes.
            close_fd(go_w);
            let mut byte = [0u8; 1];
            while matches!(read_fd(go_r, &mut byte), Ok(n) if n > 0) {}
            close_fd(go_r);
            waker::wake_forever(period_ns)
        }
        Sleeper::Exec {
            path,
            argv,
            envp,
            ready_fd,
        } => {
            if dup2_inheritable(ready, ready_fd).is_ok() {
                let _ = execve(path, argv, envp);
            }
            exit_now(127)
        }
    }
}
