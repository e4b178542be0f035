//! [`ProcessFiles`], the reader of one process's files under a host's roots: its errors
//! ([`FilesError`], psutil's rules for a process gone, a zombie, a file the caller may not
//! read), the identity check ([`ProcessFiles::identity`]), and the reads that are one file
//! or one system call each: the working directory, the I/O priority, the terminal's path.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use tasksnap_procfs::parse;

use super::reader::Reader;
use tasksnap_sys as sys;

/// How long a read of `smaps`/`smaps_rollup` (or the stats of the paths a process names)
/// may be blocked (asleep in the kernel, on the target's mmap lock or a file system) before
/// it is given up. One process's read, asked for by a caller who waits for it: longer than
/// a listing's 20 ms per command line.
pub const SMAPS_DEADLINE: Duration = Duration::from_secs(1);

/// What a read of `smaps` blocks on ([`FilesError::TimedOut`]).
pub(super) const ON_MMAP_LOCK: &str = "the process's memory map lock";
/// What a stat of a path a process names blocks on.
pub(super) const ON_FILE_SYSTEM: &str = "the file system of a path the process names";

/// A look at a path: whether it is a regular file, or the error of the stat; `None` when the
/// look cannot tell without waiting for a file system ([`cached_stat`] only).
pub(super) type StatFn = fn(&Path) -> Option<io::Result<bool>>;

/// Why a batch of stats stopped.
pub(super) enum Stop {
    /// The answer: an error.
    Failed(FilesError),
    /// A path the kernel's caches cannot answer for: the batch goes to the reader.
    Uncached,
}

impl From<FilesError> for Stop {
    fn from(e: FilesError) -> Stop {
        Stop::Failed(e)
    }
}

/// `stat(2)`, which may wait for a file system as long as it takes.
pub(super) fn full_stat(p: &Path) -> Option<io::Result<bool>> {
    Some(std::fs::metadata(p).map(|m| m.file_type().is_file()))
}

/// A look in the kernel's caches only ([`sys::is_regular_file_cached`]), which never waits.
pub(super) fn cached_stat(p: &Path) -> Option<io::Result<bool>> {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    sys::is_regular_file_cached(&c)
}

/// Why a process's file could not be read, as psutil tells the cases apart.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The process is gone (ESRCH, or its /proc directory vanished).
    #[error("process {pid} is gone")]
    Gone {
        /// The process.
        pid: i32,
    },
    /// The process is a zombie and the file has nothing for one (psutil's `ZombieProcess`).
    #[error("process {pid} is a zombie")]
    Zombie {
        /// The process.
        pid: i32,
        /// Its parent, from its `stat`.
        ppid: Option<i32>,
    },
    /// The caller may not read it (EACCES, EPERM).
    #[error("{what}: permission denied")]
    Denied {
        /// What was read or asked.
        what: String,
        /// The errno.
        errno: i32,
    },
    /// A read blocked on the target's mmap lock, or a stat on a file system, for longer
    /// than the deadline.
    #[error("{what}: blocked on {on} for more than {deadline_ms} ms; given up")]
    TimedOut {
        /// What was read.
        what: String,
        /// What it was blocked on.
        on: &'static str,
        /// The deadline.
        deadline_ms: u64,
    },
    /// Anything else, with its errno kept.
    #[error("{what}: {error}")]
    Io {
        /// What was read or asked.
        what: String,
        /// Why.
        error: io::Error,
    },
}

/// What a process's `stat` says that a caller checks before reading its files: whether it
/// is still the process it stands for (its start time), a zombie, its parent and terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Start time, clock ticks since boot on the kernel's boot clock ([`crate::clock`]: what
    /// /proc shows a caller in a time namespace, less its offset), as the snapshots' are.
    pub start_ticks: u64,
    /// State `Z`.
    pub zombie: bool,
    /// The parent.
    pub ppid: i32,
    /// The controlling terminal's device number (kernel encoding), 0 for none.
    pub tty_nr: u64,
}

/// Reads one process's files under a host's roots ([`crate::Host::process_files`]).
#[derive(Debug)]
pub struct ProcessFiles {
    pub(super) proc_root: PathBuf,
    pub(super) dev_root: PathBuf,
    pub(super) smaps_deadline: Duration,
    /// Whether unix sockets are asked of the kernel (sock_diag): the roots are this
    /// kernel's. A fake tree's `net/unix` is read instead.
    pub(super) unix_by_diag: bool,
    /// How paths are stat'ed on the reader thread, when the caches cannot tell.
    pub(super) stat: StatFn,
    /// Whether the caches are asked first, on the caller's thread.
    pub(super) cached_first: bool,
    /// Terminal paths by device number, built on first use and again when a device number
    /// is not in it (a pseudo-terminal opened since).
    pub(super) terminals: Mutex<Option<HashMap<u64, Vec<u8>>>>,
    /// The thread `smaps` reads run on, while none is in use ([`Reader`]).
    pub(super) reader: Mutex<Option<Reader>>,
}

pub(super) fn io_kind(e: &io::Error) -> Option<i32> {
    e.raw_os_error()
}

impl ProcessFiles {
    /// Reads under `proc_root` and `dev_root`.
    pub fn new(proc_root: PathBuf, dev_root: PathBuf) -> ProcessFiles {
        ProcessFiles {
            unix_by_diag: crate::units::is_kernel_proc(&proc_root),
            proc_root,
            dev_root,
            smaps_deadline: SMAPS_DEADLINE,
            stat: full_stat,
            cached_first: true,
            terminals: Mutex::new(None),
            reader: Mutex::new(None),
        }
    }

    /// How many descriptors process `pid` has open, by listing `PID/fd` as psutil's
    /// `num_fds()` does (another user's process is `PermissionDenied`, as for psutil).
    pub fn fd_count(&self, pid: i32) -> io::Result<usize> {
        crate::task_files::fd_count(&self.proc_root, pid)
    }

    /// The CPUs task `pid` may run on (`sched_getaffinity(2)`), ascending.
    pub fn cpu_affinity(&self, pid: i32) -> io::Result<Vec<usize>> {
        crate::task_files::cpu_affinity(pid)
    }

    /// The same with another deadline for `smaps` reads and stats.
    pub fn with_smaps_deadline(mut self, d: Duration) -> ProcessFiles {
        self.smaps_deadline = d;
        self
    }

    /// The same with another `stat` (a slow one, to test the deadline), every path sent to
    /// it (the caches never asked).
    #[cfg(test)]
    pub(super) fn with_stat(mut self, stat: StatFn) -> ProcessFiles {
        self.stat = stat;
        self.cached_first = false;
        self
    }

    pub(super) fn pid_dir(&self, pid: i32) -> PathBuf {
        self.proc_root.join(pid.to_string())
    }

    /// `pid`'s [`Identity`], from one read of its `stat`.
    pub fn identity(&self, pid: i32) -> Result<Identity, FilesError> {
        let path = self.pid_dir(pid).join("stat");
        let data = sys::read_small_file(&path).map_err(|e| match io_kind(&e) {
            Some(libc::ENOENT) | Some(libc::ESRCH) => FilesError::Gone { pid },
            _ => self.classify(pid, &path, e),
        })?;
        let st = parse::parse_stat(&data).map_err(|e| FilesError::Io {
            what: path.display().to_string(),
            error: io::Error::new(io::ErrorKind::InvalidData, e.0),
        })?;
        let tick_ns = 1_000_000_000 / crate::units::clock_ticks_per_s();
        Ok(Identity {
            start_ticks: crate::BootClock::caller().from_proc_ticks(st.start_ticks, tick_ns)
                / tick_ns,
            zombie: st.state == b'Z',
            ppid: st.ppid,
            // The kernel writes it as a signed int; a device number is its 32 bits.
            tty_nr: u64::from(st.tty_nr as u32),
        })
    }

    /// [`FilesError::Zombie`] when `pid`'s `stat` says it is one.
    pub(super) fn zombie(&self, pid: i32) -> Option<FilesError> {
        let stat = sys::read_small_file(&self.pid_dir(pid).join("stat")).ok()?;
        (parse::stat_state_letter(&stat)? == b'Z').then(|| FilesError::Zombie {
            pid,
            ppid: parse::parse_stat(&stat).ok().map(|s| s.ppid),
        })
    }

    /// psutil's translation of an error (`wrap_exceptions`): EACCES/EPERM deny; ESRCH is a
    /// zombie or gone; ENOENT a zombie, or gone when `PID/stat` is, else an error.
    pub(super) fn classify(&self, pid: i32, what: &Path, e: io::Error) -> FilesError {
        let what = what.display().to_string();
        match io_kind(&e) {
            Some(libc::EACCES) | Some(libc::EPERM) => FilesError::Denied {
                what,
                errno: e.raw_os_error().unwrap_or(0),
            },
            Some(libc::ESRCH) => self.zombie(pid).unwrap_or(FilesError::Gone { pid }),
            Some(libc::ENOENT) => {
                if let Some(z) = self.zombie(pid) {
                    z
                } else if !self.pid_dir(pid).join("stat").exists() {
                    FilesError::Gone { pid }
                } else {
                    FilesError::Io { what, error: e }
                }
            }
            _ => FilesError::Io { what, error: e },
        }
    }

    /// Gone when `ROOT/PID` is (psutil's `_raise_if_not_alive`).
    pub(super) fn still_there(&self, pid: i32) -> Result<(), FilesError> {
        match std::fs::metadata(self.pid_dir(pid)) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.classify(pid, &self.pid_dir(pid), e)),
        }
    }

    /// The working directory (psutil's `cwd()`): "" when the link cannot be read but the
    /// process is there and not a zombie (a kernel thread, say).
    pub fn cwd(&self, pid: i32) -> Result<Vec<u8>, FilesError> {
        let link = self.pid_dir(pid).join("cwd");
        match std::fs::read_link(&link) {
            Ok(p) => {
                let mut cleaned = self.clean_all(pid, vec![p.into_os_string().into_vec()])?;
                Ok(cleaned.pop().unwrap_or_default())
            }
            Err(e) if matches!(io_kind(&e), Some(libc::ENOENT) | Some(libc::ESRCH)) => {
                if std::fs::symlink_metadata(self.pid_dir(pid)).is_ok() {
                    if let Some(z) = self.zombie(pid) {
                        return Err(z);
                    }
                    return Ok(Vec::new());
                }
                Err(self.classify(pid, &link, e))
            }
            Err(e) => Err(self.classify(pid, &link, e)),
        }
    }

    /// psutil's translation of a syscall's error on `pid`.
    pub(super) fn syscall_error(&self, pid: i32, what: &str, e: io::Error) -> FilesError {
        match io_kind(&e) {
            Some(libc::EACCES) | Some(libc::EPERM) => FilesError::Denied {
                what: what.to_string(),
                errno: e.raw_os_error().unwrap_or(0),
            },
            Some(libc::ESRCH) => self.zombie(pid).unwrap_or(FilesError::Gone { pid }),
            _ => FilesError::Io {
                what: what.to_string(),
                error: e,
            },
        }
    }

    /// The I/O scheduling class and level of `pid` (psutil's `ionice()`). A system call on
    /// the running kernel, whatever the roots.
    pub fn ionice(&self, pid: i32) -> Result<(u32, u32), FilesError> {
        sys::ioprio_get(pid).map_err(|e| self.syscall_error(pid, "ioprio_get", e))
    }

    /// Sets them (psutil's `ionice(ioclass, value)`); the kernel checks the values
    /// (EINVAL: an [`FilesError::Io`]) and the caller's right (EPERM: denied).
    pub fn set_ionice(&self, pid: i32, class: i32, value: i32) -> Result<(), FilesError> {
        sys::ioprio_set(pid, class, value).map_err(|e| self.syscall_error(pid, "ioprio_set", e))
    }

    /// The path of the terminal whose device number is `tty_nr` (a task's `stat`), as
    /// psutil maps it: `DEV/tty*` then `DEV/pts/*` by `st_rdev`, the later of two with the
    /// same number winning; `None` for 0 or a number no such device has.
    pub fn terminal(&self, tty_nr: u64) -> Option<Vec<u8>> {
        if tty_nr == 0 {
            return None;
        }
        let mut cache = self.terminals.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.as_ref().and_then(|m| m.get(&tty_nr)) {
            return Some(p.clone());
        }
        let map = self.terminal_map();
        let found = map.get(&tty_nr).cloned();
        *cache = Some(map);
        found
    }

    pub(super) fn terminal_map(&self) -> HashMap<u64, Vec<u8>> {
        use std::os::unix::fs::MetadataExt;
        let mut map = HashMap::new();
        let mut add = |dir: &Path, keep: &dyn Fn(&[u8]) -> bool| {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                if !keep(name.as_bytes()) {
                    continue;
                }
                let path = e.path();
                if let Ok(m) = std::fs::metadata(&path) {
                    map.insert(m.rdev(), path.into_os_string().into_vec());
                }
            }
        };
        add(&self.dev_root, &|n| n.starts_with(b"tty"));
        add(&self.dev_root.join("pts"), &|n| !n.starts_with(b"."));
        map
    }
}
