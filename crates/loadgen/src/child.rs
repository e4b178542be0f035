//! The loadgen's re-executed child modes. A child started by exec'ing
//! `/proc/self/exe` is recognised by the `TASKSNAP_LOADGEN_CHILD`
//! environment variable rather than by a subcommand, so that its argv (and
//! thus `/proc/<pid>/cmdline`) can be entirely arbitrary:
//!
//! - `odd`: set the comm from `TASKSNAP_LOADGEN_COMM` with
//!   `prctl(PR_SET_NAME)`, become the user `TASKSNAP_LOADGEN_UID` if set, print `ready` on
//!   stdout, pause forever;
//! - `proc` (`--exec-children`): set comm `lg-proc`, write its pid to fd
//!   [`READY_FD`], pause forever.
//!
//! `PR_SET_PDEATHSIG` was set between fork and exec by the parent side and
//! survives exec.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;

use crate::sys;

/// Environment variable selecting a child mode.
pub const CHILD_ENV: &str = "TASKSNAP_LOADGEN_CHILD";
/// Environment variable holding the comm of an `odd` child.
pub const COMM_ENV: &str = "TASKSNAP_LOADGEN_COMM";
/// Environment variable holding the uid an `odd` child becomes once named (the zoo's
/// not-UTF-8 process runs as another user).
pub const UID_ENV: &str = "TASKSNAP_LOADGEN_UID";
/// Value of [`CHILD_ENV`] for hostile-name children.
pub const MODE_ODD: &str = "odd";
/// The complete environment of a `proc` child.
pub const PROC_ENV: &CStr = c"TASKSNAP_LOADGEN_CHILD=proc";
/// The loadgen's own executable, for re-execution.
pub const SELF_EXE: &CStr = c"/proc/self/exe";
/// [`SELF_EXE`] as a `&str`, for `Command`.
pub const SELF_EXE_STR: &str = "/proc/self/exe";
/// Descriptor on which a `proc` child reports readiness.
pub const READY_FD: i32 = 3;

/// Runs child mode `mode`; never returns.
pub fn run(mode: &OsStr) -> ! {
    let _ = sys::set_sigmask(&sys::sigset(&[]));
    match mode.as_bytes() {
        b"proc" => {
            sys::set_comm(c"lg-proc");
            if sys::write_all_fd(READY_FD, &sys::getpid().to_ne_bytes()).is_err() {
                sys::exit_now(1);
            }
            sys::close_fd(READY_FD);
            sys::pause_forever()
        }
        b"odd" => {
            let comm = std::env::var_os(COMM_ENV).unwrap_or_default();
            let Ok(comm) = CString::new(comm.as_bytes()) else {
                sys::exit_now(2)
            };
            sys::set_comm(&comm);
            if let Some(uid) = std::env::var(UID_ENV).ok().and_then(|u| u.parse().ok()) {
                if sys::become_user(uid).is_err() {
                    sys::exit_now(3);
                }
            }
            if sys::write_all_fd(1, b"ready\n").is_err() {
                sys::exit_now(1);
            }
            // Let go of the parent's pipe.
            if let Ok(null) = std::fs::File::open("/dev/null") {
                use std::os::fd::AsRawFd;
                let _ = sys::dup2_inheritable(null.as_raw_fd(), 1);
            }
            sys::pause_forever()
        }
        _ => {
            eprintln!("tasksnap-loadgen: unknown child mode {mode:?}");
            sys::exit_now(2)
        }
    }
}
