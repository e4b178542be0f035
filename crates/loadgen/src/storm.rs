//! `tasksnap-loadgen exit-storm PER_SEC SECONDS [WORKER_NAME CHILD_NAME]`: processes that
//! exit as fast as asked, for the exit records' storm benchmark (bench/exits.sh storm). One
//! worker per online CPU, each paced to its share of PER_SEC: `fork()` a child that `_exit`s
//! at once, reap it, again. A worker is a small process (a few MB mapped), so a fork's
//! page-table copy is cheap. Prints the processes made (in thousands: each worker reports its
//! count as its exit status) and the seconds taken (`{"exits":N,"seconds":S}`) on stdout.
//! With names, each worker names itself WORKER_NAME and each child renames itself CHILD_NAME
//! right after its fork (`PR_SET_NAME`), so a reader that catches a child before its rename
//! sees its parent's name: the exporter's test that exits take the name they exit with.

use std::time::{Duration, Instant};

/// The comms of a named storm: its workers', its children's (each at most 15 bytes).
pub type Names = (std::ffi::CString, std::ffi::CString);

/// Runs the storm and returns (processes that exited, seconds).
pub fn run(per_sec: u64, seconds: f64, names: Option<&Names>) -> std::io::Result<(u64, f64)> {
    // SAFETY: sysconf has no memory effects.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u64;
    let per_worker = (per_sec / cpus).max(1);
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..cpus {
        // SAFETY: the child only runs `worker` (no locks are held here: the loadgen is one
        // thread at this point) and then `_exit`s.
        match unsafe { libc::fork() } {
            -1 => return Err(std::io::Error::last_os_error()),
            0 => {
                if let Some((own, _)) = names {
                    set_name(own);
                }
                let n = worker(per_worker, seconds, names.map(|n| &*n.1));
                // The count travels in the exit code's place: the pipe-free way to report
                // a number to the parent. 255 means "at least this many thousands".
                // SAFETY: ends the worker at once, as a forked child must.
                unsafe { libc::_exit((n / 1000).min(255) as i32) }
            }
            pid => workers.push(pid),
        }
    }
    let mut total = 0;
    for pid in workers {
        let mut status = 0;
        // SAFETY: status is a valid out-pointer; pid is our child.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid && libc::WIFEXITED(status) {
            total += libc::WEXITSTATUS(status) as u64 * 1000;
        }
    }
    Ok((total, start.elapsed().as_secs_f64()))
}

/// Names the calling thread (its process's comm, for a single-threaded process).
fn set_name(name: &std::ffi::CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from the valid
    // pointer; prctl is async-signal-safe.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// One worker: `per_sec` forked children a second for `seconds`, each renamed `child` (when
/// given) first; returns how many exited.
fn worker(per_sec: u64, seconds: f64, child: Option<&std::ffi::CStr>) -> u64 {
    let start = Instant::now();
    let end = Duration::from_secs_f64(seconds);
    let mut made = 0u64;
    loop {
        let elapsed = start.elapsed();
        if elapsed >= end {
            return made;
        }
        let due = (elapsed.as_secs_f64() * per_sec as f64) as u64;
        if made >= due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        // SAFETY: the worker is one thread; the child calls only prctl and `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            if let Some(name) = child {
                set_name(name);
            }
            // SAFETY: see above.
            unsafe { libc::_exit(0) }
        }
        if pid > 0 {
            let mut status = 0;
            // SAFETY: status is a valid out-pointer; pid is our child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            made += 1;
        }
    }
}
