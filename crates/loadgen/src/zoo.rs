//! The hostile zoo (`--zoo`): the few tasks every whole-host listing of the test suite must
//! survive, kept alive while `./x test` runs. Besides `--odd-names`, a zombie and a D-state
//! task (spawned by their own functions in [`crate::spawn`]), it holds what those lack:
//!
//! - names that are not UTF-8: comm and command line with bytes 0xff/0xfe, run as user nobody
//!   when the loadgen is root (another user named it: no caller can avoid meeting it);
//! - a comm and arguments with a newline and a carriage return;
//! - 64 KiB of arguments (16 arguments of 4 KiB);
//! - a process in a pid namespace of its own (root only: `unshare(CLONE_NEWPID)`), with a
//!   child there, so listings meet pids numbered twice.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::spawn::Spawner;
use crate::sys::{self, Pid};

/// The uid and gid the zoo's not-UTF-8 process runs as when the loadgen is root.
pub const NOBODY: u32 = 65534;

/// One zoo process whose name is given as bytes: (comm, argv).
type Named = (Vec<u8>, Vec<Vec<u8>>);

/// The zoo's byte-named processes: (comm, argv, run as nobody).
pub fn byte_specs() -> Vec<(Named, bool)> {
    let big: Vec<Vec<u8>> = std::iter::once(b"lg-bigargs".to_vec())
        .chain((0..16).map(|i| vec![b'a' + i as u8; 4096]))
        .collect();
    vec![
        (
            (
                b"lg-x\xff\xfe".to_vec(),
                vec![b"/tmp/x\xff".to_vec(), b"600\xfe".to_vec(), b"ok".to_vec()],
            ),
            true,
        ),
        (
            (
                b"nl\nna\rme".to_vec(),
                vec![b"nl\nname\r".to_vec(), b"cr\rlf\n".to_vec()],
            ),
            false,
        ),
        ((b"lg-bigargs".to_vec(), big), false),
    ]
}

impl Spawner {
    /// The byte-named processes of [`byte_specs`]; each re-executes the loadgen in its `odd`
    /// child mode, so its command line is exactly the argv given. Returns their pids.
    pub fn byte_named(&mut self) -> Result<Vec<Pid>> {
        let root = sys::geteuid() == 0;
        let mut out = Vec::new();
        for ((comm, argv), as_nobody) in byte_specs() {
            let args: Vec<&OsStr> = argv.iter().map(|a| OsStr::from_bytes(a)).collect();
            let uid = (as_nobody && root).then_some(NOBODY);
            out.push(self.exec_named(OsStr::from_bytes(&comm), &args, uid)?);
        }
        Ok(out)
    }

    /// A process (comm `lg-pidns`) that made a pid namespace; in it, its child (comm
    /// `lg-pidns-init`, pid 1 there) and a grandchild (`lg-pidns-child`, pid 2 there), all
    /// sleeping. Returns the outer process's pid, or `None` when the kernel refused the
    /// namespace (not root).
    pub fn pidns(&mut self) -> Result<Option<Pid>> {
        let (r, w) = sys::pipe()?;
        let wfd = w.as_raw_fd();
        let pid = self.fork(c"lg-pidns", None, move || {
            // SAFETY: unshare with a flag only changes which pid namespace our future
            // children are created in.
            if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
                let _ = sys::write_all_fd(wfd, b"e");
                sys::exit_now(1);
            }
            // SAFETY: we are single-threaded (a child of the single-threaded loadgen); the
            // child only makes async-signal-safe calls before pausing.
            match unsafe { libc::fork() } {
                -1 => {
                    let _ = sys::write_all_fd(wfd, b"e");
                    sys::exit_now(1)
                }
                0 => {
                    // pid 1 of the new namespace; its parent is outside it (getppid is 0).
                    sys::set_pdeathsig_kill();
                    sys::set_comm(c"lg-pidns-init");
                    // SAFETY: as above.
                    match unsafe { libc::fork() } {
                        0 => {
                            sys::set_pdeathsig_kill();
                            sys::set_comm(c"lg-pidns-child");
                            let _ = sys::write_all_fd(wfd, b"r");
                            sys::close_fd(wfd);
                            sys::pause_forever()
                        }
                        -1 => {
                            let _ = sys::write_all_fd(wfd, b"e");
                            sys::exit_now(1)
                        }
                        _ => {
                            sys::close_fd(wfd);
                            sys::pause_forever()
                        }
                    }
                }
                _ => {
                    sys::close_fd(wfd);
                    sys::pause_forever()
                }
            }
        })?;
        drop(w);
        let mut f = std::fs::File::from(r);
        let mut b = [0u8; 1];
        let got = std::io::Read::read(&mut f, &mut b).unwrap_or(0);
        if got == 1 && b[0] == b'r' {
            // The comms are set before the byte is written; give the reader a moment less
            // than a blink to see both tasks in /proc.
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                let kids = std::fs::read(format!("/proc/{pid}/task/{pid}/children"))
                    .map(|s| tasksnap_procfs::parse::parse_children(&s))
                    .unwrap_or_default();
                if !kids.is_empty() {
                    return Ok(Some(pid));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            bail!("the pid namespace's init did not come up");
        }
        // Not allowed here: the helper exits by itself.
        let _ = sys::waitpid(pid, 0);
        self.alive.remove(&pid);
        Ok(None)
    }
}
