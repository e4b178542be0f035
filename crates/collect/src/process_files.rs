//! One process's files and syscalls that no snapshot group carries, read as psutil 7.2.2's
//! `Process` methods read them: the working directory, the regular files it has open (with
//! position and flags), its mappings (`smaps`), USS/PSS/swap (`smaps_rollup`, else `smaps`),
//! its sockets matched against the socket tables (and every process's, for the module-level
//! `net_connections`), its I/O priority (`ioprio_get`/`ioprio_set`) and its terminal's path
//! (`tty_nr` against the device numbers of `/dev/tty*` and `/dev/pts/*`, cached).
//!
//! A front end gets a [`ProcessFiles`] from [`crate::Host::process_files`]; every file read
//! is under that host's /proc and /dev roots, so tests run on fake trees (the paths a
//! process's links name are looked up in the caller's view, as psutil looks them up). The
//! parsers are tasksnap-procfs's [`proc_files`]. Errors are typed ([`FilesError`]) with
//! psutil's rules for telling a process that is gone from a zombie from a file the caller
//! may not read; [`ProcessFiles::identity`] is the one read of `stat` a caller checks a
//! pid's identity (start time) with before a read.
//!
//! Two kinds of call can block for as long as someone else decides, and both run on a
//! reader thread kept for them (`Reader`), watched by [`crate::blocked`] as the procfs
//! collector watches a command-line read; one blocked past the deadline is given up
//! ([`FilesError::TimedOut`]) instead of hanging the caller (the reader with it):
//! - reads of `smaps` and `smaps_rollup`, which take the target's mmap lock;
//! - stats of the paths a process's links name (`open_files` keeps the regular files, as
//!   psutil's `isfile_strict` does; a " (deleted)" suffix is kept when a file of that name
//!   exists): the target chose those paths, and on a FUSE mount whose server does not
//!   answer a stat never returns. Each path is first looked up in the kernel's caches only,
//!   on the caller's thread ([`sys::is_regular_file_cached`]: no wait possible, no thread
//!   hop); a call with a path the caches cannot answer for stats all its paths again in one
//!   job on the reader thread, under the deadline.
//!
//! Sockets are matched against the caller's network namespace, as psutil does (it reads
//! `/proc/net/*`): a process in another namespace shows no inet sockets. The inet tables are
//! read from `ROOT/net/{tcp,tcp6,udp,udp6}` (nothing in them is chosen by a user); unix
//! sockets are asked of the kernel over sock_diag ([`tasksnap_procfs::unix_diag`]) when the
//! roots are this kernel's, because `net/unix` prints socket names raw and a name can forge
//! another socket's row; `ROOT/net/unix` is read only on a fake tree or when sock_diag is
//! not there, and then its parser refuses every row of an inode listed twice.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tasksnap_procfs::parse;
use tasksnap_procfs::proc_files::{self, MapFigures, UnixRow};
use tasksnap_procfs::unix_diag;

use crate::blocked::{self, Count, Watch};
use tasksnap_sys as sys;

/// How long a read of `smaps`/`smaps_rollup` (or the stats of the paths a process names)
/// may be blocked (asleep in the kernel, on the target's mmap lock or a file system) before
/// it is given up. One process's read, asked for by a caller who waits for it: longer than
/// a listing's 20 ms per command line.
pub const SMAPS_DEADLINE: Duration = Duration::from_secs(1);

/// What a read of `smaps` blocks on ([`FilesError::TimedOut`]).
const ON_MMAP_LOCK: &str = "the process's memory map lock";
/// What a stat of a path a process names blocks on.
const ON_FILE_SYSTEM: &str = "the file system of a path the process names";

/// A look at a path: whether it is a regular file, or the error of the stat; `None` when the
/// look cannot tell without waiting for a file system ([`cached_stat`] only).
type StatFn = fn(&Path) -> Option<io::Result<bool>>;

/// Why a batch of stats stopped.
enum Stop {
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
fn full_stat(p: &Path) -> Option<io::Result<bool>> {
    Some(std::fs::metadata(p).map(|m| m.file_type().is_file()))
}

/// A look in the kernel's caches only ([`sys::is_regular_file_cached`]), which never waits.
fn cached_stat(p: &Path) -> Option<io::Result<bool>> {
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

/// A regular file a process has open: psutil's `popenfile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// Its path, as the fd link names it (cleaned as psutil does).
    pub path: Vec<u8>,
    /// The descriptor.
    pub fd: i32,
    /// The file position, bytes (psutil's `position`).
    pub position_bytes: u64,
    /// psutil's mode (`r`, `w`, `a`, `r+`, `a+`).
    pub mode: &'static str,
    /// The open flags.
    pub flags: u32,
}

/// One mapping of `smaps`, its path cleaned as psutil does (`[anon]` for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// `start-end`.
    pub addr: Vec<u8>,
    /// Permissions.
    pub perms: Vec<u8>,
    /// The path.
    pub path: Vec<u8>,
    /// Its figures, bytes.
    pub figures: MapFigures,
}

/// USS, PSS and swap of a process, bytes (psutil's extras of `memory_full_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmapsTotals {
    /// Private pages (every `Private_*` line).
    pub uss_bytes: u64,
    /// Proportional set size.
    pub pss_bytes: u64,
    /// Swapped out.
    pub swap_bytes: u64,
}

/// A process's descriptors and the targets of their links.
type FdLinks = Vec<(i32, Vec<u8>)>;

/// A socket table of `ROOT/net`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketTable {
    /// `net/tcp`.
    Tcp4,
    /// `net/tcp6`.
    Tcp6,
    /// `net/udp`.
    Udp4,
    /// `net/udp6`.
    Udp6,
    /// `net/unix`.
    Unix,
}

impl SocketTable {
    /// The tables psutil reads for a `kind` of `net_connections` (`inet`, `tcp4`, `all`...),
    /// in its order; `None` for a kind psutil refuses.
    pub fn for_kind(kind: &str) -> Option<&'static [SocketTable]> {
        use SocketTable::*;
        Some(match kind {
            "all" => &[Tcp4, Tcp6, Udp4, Udp6, Unix],
            "tcp" => &[Tcp4, Tcp6],
            "tcp4" => &[Tcp4],
            "tcp6" => &[Tcp6],
            "udp" => &[Udp4, Udp6],
            "udp4" => &[Udp4],
            "udp6" => &[Udp6],
            "unix" => &[Unix],
            "inet" => &[Tcp4, Tcp6, Udp4, Udp6],
            "inet4" => &[Tcp4, Udp4],
            "inet6" => &[Tcp6, Udp6],
            _ => return None,
        })
    }

    /// Every kind psutil accepts, in its order (its error message lists them so).
    pub const KINDS: [&'static str; 11] = [
        "all", "tcp", "tcp4", "udp", "udp4", "inet", "inet4", "inet6", "tcp6", "udp6", "unix",
    ];

    fn file(self) -> &'static str {
        match self {
            SocketTable::Tcp4 => "net/tcp",
            SocketTable::Tcp6 => "net/tcp6",
            SocketTable::Udp4 => "net/udp",
            SocketTable::Udp6 => "net/udp6",
            SocketTable::Unix => "net/unix",
        }
    }

    /// `(AF_*, SOCK_*)`; a unix socket's type comes from its row.
    fn family_type(self) -> (i32, i32) {
        match self {
            SocketTable::Tcp4 => (libc::AF_INET, libc::SOCK_STREAM),
            SocketTable::Tcp6 => (libc::AF_INET6, libc::SOCK_STREAM),
            SocketTable::Udp4 => (libc::AF_INET, libc::SOCK_DGRAM),
            SocketTable::Udp6 => (libc::AF_INET6, libc::SOCK_DGRAM),
            SocketTable::Unix => (libc::AF_UNIX, 0),
        }
    }
}

/// One end of a connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// No address (psutil's empty tuple; a unix socket's remote end, `""`).
    None,
    /// An IP (as psutil prints it) and a port.
    Inet(String, u16),
    /// A unix socket's path (empty when unnamed).
    Unix(Vec<u8>),
}

/// A socket: psutil's `pconn` (and `sconn`, with `pid`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Connection {
    /// The descriptor; -1 when no process seen owns it.
    pub fd: i32,
    /// `AF_INET`, `AF_INET6`, `AF_UNIX`.
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, `SOCK_SEQPACKET`...
    pub kind: i32,
    /// Local end.
    pub local: Endpoint,
    /// Remote end.
    pub remote: Endpoint,
    /// psutil's status (`LISTEN`, `ESTABLISHED`..., `NONE` for all but TCP).
    pub status: &'static str,
    /// The process that holds it (system-wide listing), when one seen does.
    pub pid: Option<i32>,
}

/// Reads one process's files under a host's roots ([`crate::Host::process_files`]).
#[derive(Debug)]
pub struct ProcessFiles {
    proc_root: PathBuf,
    dev_root: PathBuf,
    smaps_deadline: Duration,
    /// Whether unix sockets are asked of the kernel (sock_diag): the roots are this
    /// kernel's. A fake tree's `net/unix` is read instead.
    unix_by_diag: bool,
    /// How paths are stat'ed on the reader thread, when the caches cannot tell.
    stat: StatFn,
    /// Whether the caches are asked first, on the caller's thread.
    cached_first: bool,
    /// Terminal paths by device number, built on first use and again when a device number
    /// is not in it (a pseudo-terminal opened since).
    terminals: Mutex<Option<HashMap<u64, Vec<u8>>>>,
    /// The thread `smaps` reads run on, while none is in use ([`Reader`]).
    reader: Mutex<Option<Reader>>,
}

fn io_kind(e: &io::Error) -> Option<i32> {
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
    fn with_stat(mut self, stat: StatFn) -> ProcessFiles {
        self.stat = stat;
        self.cached_first = false;
        self
    }

    fn pid_dir(&self, pid: i32) -> PathBuf {
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
    fn zombie(&self, pid: i32) -> Option<FilesError> {
        let stat = sys::read_small_file(&self.pid_dir(pid).join("stat")).ok()?;
        (parse::stat_state_letter(&stat)? == b'Z').then(|| FilesError::Zombie {
            pid,
            ppid: parse::parse_stat(&stat).ok().map(|s| s.ppid),
        })
    }

    /// psutil's translation of an error (`wrap_exceptions`): EACCES/EPERM deny; ESRCH is a
    /// zombie or gone; ENOENT a zombie, or gone when `PID/stat` is, else an error.
    fn classify(&self, pid: i32, what: &Path, e: io::Error) -> FilesError {
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
    fn still_there(&self, pid: i32) -> Result<(), FilesError> {
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

    /// The descriptors of `pid` and where each link points, skipping those gone meanwhile
    /// (`true` in the second place when one was) and those that are not links.
    fn fd_links(&self, pid: i32) -> Result<(FdLinks, bool), FilesError> {
        let dir = self.pid_dir(pid).join("fd");
        let entries = std::fs::read_dir(&dir).map_err(|e| self.classify(pid, &dir, e))?;
        let mut out = Vec::new();
        let mut vanished = false;
        for entry in entries {
            let entry = entry.map_err(|e| self.classify(pid, &dir, e))?;
            let Some(fd) = std::str::from_utf8(entry.file_name().as_bytes())
                .ok()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            match std::fs::read_link(entry.path()) {
                Ok(p) => out.push((fd, p.into_os_string().into_vec())),
                Err(e) => match io_kind(&e) {
                    Some(libc::ENOENT) | Some(libc::ESRCH) => vanished = true,
                    Some(libc::EINVAL) | Some(libc::ENAMETOOLONG) => {}
                    _ => return Err(self.classify(pid, &entry.path(), e)),
                },
            }
        }
        Ok((out, vanished))
    }

    /// The regular files `pid` has open (psutil's `open_files()`): links to an absolute path
    /// that is a regular file, with position and flags from `fdinfo`.
    pub fn open_files(&self, pid: i32) -> Result<Vec<OpenFile>, FilesError> {
        let (links, mut vanished) = self.fd_links(pid)?;
        // Like psutil, each path is looked at from the caller's view (`isfile_strict`): a
        // path the caller may not look up is denied, not skipped. The target chose these
        // paths: see the module header for how a look that would wait is bounded.
        let what = self.pid_dir(pid).join("fd").display().to_string();
        let regular = self.stat_batch(&what, move |stat| {
            let mut out = Vec::new();
            for (fd, raw) in &links {
                let path = clean(stat, raw)?;
                if path.starts_with(b"/") && stat_strict(stat, path)? == Some(true) {
                    out.push((*fd, path.to_vec()));
                }
            }
            Ok(out)
        })?;
        let mut out = Vec::new();
        for (fd, path) in regular {
            let info = self.pid_dir(pid).join("fdinfo").join(fd.to_string());
            let text = match sys::read_small_file(&info) {
                Ok(t) => t,
                Err(e) if matches!(io_kind(&e), Some(libc::ENOENT) | Some(libc::ESRCH)) => {
                    vanished = true;
                    continue;
                }
                Err(e) => return Err(self.classify(pid, &info, e)),
            };
            let Some((position_bytes, flags)) = proc_files::parse_fdinfo(&text) else {
                continue;
            };
            let Some(mode) = proc_files::open_mode(flags) else {
                continue;
            };
            out.push(OpenFile {
                path,
                fd,
                position_bytes,
                mode,
                flags,
            });
        }
        if vanished {
            self.still_there(pid)?;
        }
        Ok(out)
    }

    /// Reads `PID/name` (`smaps`, `smaps_rollup`) on a watched thread (see the module header).
    fn read_watched(&self, pid: i32, name: &str) -> Result<Vec<u8>, FilesError> {
        let path = self.pid_dir(pid).join(name);
        match self.read_with_deadline(&path) {
            Ok(Ok(b)) => Ok(b),
            Ok(Err(e)) => Err(self.classify(pid, &path, e)),
            Err(e) => Err(e),
        }
    }

    /// Every mapping of `pid` (psutil's `memory_maps(grouped=False)`); a zombie's empty
    /// `smaps` is [`FilesError::Zombie`].
    pub fn memory_maps(&self, pid: i32) -> Result<Vec<Mapped>, FilesError> {
        let data = self.read_watched(pid, "smaps")?;
        if data.trim_ascii().is_empty() {
            if let Some(z) = self.zombie(pid) {
                return Err(z);
            }
            return Ok(Vec::new());
        }
        let maps = proc_files::parse_smaps(&data);
        let paths = self.clean_all(pid, maps.iter().map(|m| m.path.clone()).collect())?;
        Ok(maps
            .into_iter()
            .zip(paths)
            .map(|(m, path)| Mapped {
                path: if path.is_empty() {
                    b"[anon]".to_vec()
                } else {
                    path
                },
                addr: m.addr,
                perms: m.perms,
                figures: m.figures,
            })
            .collect())
    }

    /// A link target `pid` named that a pass read (its `exe`), cleaned as psutil cleans it
    /// ([`clean`]): cut at a NUL; a " (deleted)" suffix stat'ed as [`ProcessFiles::cwd`]'s
    /// is, with the kernel's caches first and else under the deadline.
    pub fn clean_path(&self, pid: i32, raw: &[u8]) -> Result<Vec<u8>, FilesError> {
        let cut = raw.split(|&b| b == 0).next().unwrap_or_default();
        if !cut.ends_with(proc_files::DELETED) {
            return Ok(cut.to_vec());
        }
        Ok(self
            .clean_all(pid, vec![cut.to_vec()])?
            .pop()
            .unwrap_or_default())
    }

    /// Each of `raws` (links or mappings of `pid`) cleaned as psutil does ([`clean`]),
    /// through [`ProcessFiles::stat_batch`] (only the paths with a " (deleted)" suffix are
    /// stat'ed).
    fn clean_all(&self, pid: i32, raws: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, FilesError> {
        let what = self.pid_dir(pid).display().to_string();
        self.stat_batch(&what, move |stat| {
            raws.iter().map(|r| Ok(clean(stat, r)?.to_vec())).collect()
        })
    }

    /// Runs `batch` (stats of paths `pid` named, for `what`) with a look in the kernel's
    /// caches on the caller's thread; when a path is not there to see, again with the full
    /// stat on the reader thread, given up after the deadline ([`ON_FILE_SYSTEM`]).
    fn stat_batch<T: Send + 'static>(
        &self,
        what: &str,
        batch: impl Fn(StatFn) -> Result<T, Stop> + Send + 'static,
    ) -> Result<T, FilesError> {
        if self.cached_first {
            match batch(cached_stat) {
                Ok(t) => return Ok(t),
                Err(Stop::Failed(e)) => return Err(e),
                Err(Stop::Uncached) => {}
            }
        }
        let stat = self.stat;
        match self.run_watched(what, ON_FILE_SYSTEM, move || batch(stat))? {
            Ok(t) => Ok(t),
            Err(Stop::Failed(e)) => Err(e),
            // The full stat always answers; a test's may not.
            Err(Stop::Uncached) => Err(FilesError::Io {
                what: what.to_string(),
                error: io::Error::from_raw_os_error(libc::EAGAIN),
            }),
        }
    }

    /// The mappings grouped by path, figures summed, in order of first appearance
    /// (psutil's `memory_maps(grouped=True)`).
    pub fn memory_maps_grouped(&self, pid: i32) -> Result<Vec<(Vec<u8>, MapFigures)>, FilesError> {
        let mut out: Vec<(Vec<u8>, MapFigures)> = Vec::new();
        let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
        for m in self.memory_maps(pid)? {
            match at.get(&m.path) {
                Some(&i) => out[i].1.add(&m.figures),
                None => {
                    at.insert(m.path.clone(), out.len());
                    out.push((m.path, m.figures));
                }
            }
        }
        Ok(out)
    }

    /// USS, PSS and swap (psutil's extras of `memory_full_info()`): from `smaps_rollup`, or
    /// from `smaps` when that says ESRCH/ENOENT (which it does for some live processes).
    pub fn smaps_totals(&self, pid: i32) -> Result<SmapsTotals, FilesError> {
        let data = match self.read_watched(pid, "smaps_rollup") {
            Ok(d) => d,
            Err(FilesError::Gone { .. } | FilesError::Zombie { .. }) => {
                self.read_watched(pid, "smaps")?
            }
            Err(FilesError::Io { error, .. })
                if matches!(io_kind(&error), Some(libc::ENOENT) | Some(libc::ESRCH)) =>
            {
                self.read_watched(pid, "smaps")?
            }
            Err(e) => return Err(e),
        };
        let (uss_bytes, pss_bytes, swap_bytes) = proc_files::parse_smaps_totals(&data);
        Ok(SmapsTotals {
            uss_bytes,
            pss_bytes,
            swap_bytes,
        })
    }

    /// Socket inodes of `pid`: inode -> (pid, fd) in descriptor order.
    fn socket_inodes(
        &self,
        pid: i32,
        into: &mut HashMap<u64, Vec<(i32, i32)>>,
    ) -> Result<(), FilesError> {
        let (links, _) = self.fd_links(pid)?;
        for (fd, link) in links {
            if let Some(inode) = proc_files::socket_inode(&link) {
                into.entry(inode).or_default().push((pid, fd));
            }
        }
        Ok(())
    }

    /// The sockets of `pid` in `tables` (psutil's `Process.net_connections(kind)`).
    pub fn connections(
        &self,
        pid: i32,
        tables: &[SocketTable],
    ) -> Result<Vec<Connection>, FilesError> {
        let mut inodes = HashMap::new();
        self.socket_inodes(pid, &mut inodes)?;
        if inodes.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.match_tables(tables, &inodes, Some(pid))?;
        self.still_there(pid)?;
        Ok(out)
    }

    /// Every socket of the host's tables (psutil's `net_connections(kind)`): each with the
    /// process and descriptor that hold it, when a process the caller may look into does.
    pub fn all_connections(&self, tables: &[SocketTable]) -> Result<Vec<Connection>, FilesError> {
        let mut inodes = HashMap::new();
        let dir = std::fs::read_dir(&self.proc_root).map_err(|error| FilesError::Io {
            what: self.proc_root.display().to_string(),
            error,
        })?;
        for entry in dir.flatten() {
            let Some(pid) = std::str::from_utf8(entry.file_name().as_bytes())
                .ok()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            match self.socket_inodes(pid, &mut inodes) {
                // Running out of descriptors or memory would shorten the listing silently:
                // an error instead.
                Err(FilesError::Io { error, what }) if sys::is_exhaustion(&error) => {
                    return Err(FilesError::Io { what, error });
                }
                // Gone or not ours to look into: its sockets are listed without a holder
                // (psutil's).
                _ => {}
            }
        }
        self.match_tables(tables, &inodes, None)
    }

    fn match_tables(
        &self,
        tables: &[SocketTable],
        inodes: &HashMap<u64, Vec<(i32, i32)>>,
        only: Option<i32>,
    ) -> Result<Vec<Connection>, FilesError> {
        let mut out: Vec<Connection> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut push = |c: Connection| {
            if seen.insert(c.clone()) {
                out.push(c);
            }
        };
        for &table in tables {
            let (family, kind) = table.family_type();
            if table == SocketTable::Unix {
                for row in self.unix_rows()? {
                    let holders = inodes.get(&row.inode).map(Vec::as_slice).unwrap_or(&[]);
                    // A unix socket may be held by many descriptors: one row for each.
                    let holders: Vec<(Option<i32>, i32)> = if holders.is_empty() {
                        vec![(None, -1)]
                    } else {
                        holders.iter().map(|&(p, f)| (Some(p), f)).collect()
                    };
                    for (pid, fd) in holders {
                        if only.is_some() && pid != only {
                            continue;
                        }
                        push(Connection {
                            fd,
                            family,
                            kind: row.kind as i32,
                            local: Endpoint::Unix(row.path.clone()),
                            remote: Endpoint::Unix(Vec::new()),
                            status: "NONE",
                            pid: if only.is_some() { None } else { pid },
                        });
                    }
                }
                continue;
            }
            let path = self.proc_root.join(table.file());
            let data = match sys::read_small_file(&path) {
                Ok(d) => d,
                // No IPv6 here: psutil skips its tables.
                Err(e)
                    if io_kind(&e) == Some(libc::ENOENT)
                        && matches!(table, SocketTable::Tcp6 | SocketTable::Udp6) =>
                {
                    continue
                }
                Err(error) => {
                    return Err(FilesError::Io {
                        what: path.display().to_string(),
                        error,
                    })
                }
            };
            {
                for row in proc_files::parse_inet_table(&data) {
                    // psutil takes the first holder of an inet socket only.
                    let (pid, fd) = match inodes.get(&row.inode).and_then(|h| h.first()) {
                        Some(&(p, f)) => (Some(p), f),
                        None => (None, -1),
                    };
                    if only.is_some() && pid != only {
                        continue;
                    }
                    let status = if kind == libc::SOCK_STREAM {
                        // psutil has no name for another state (it would raise).
                        let Some(s) = proc_files::tcp_status(row.state) else {
                            continue;
                        };
                        s
                    } else {
                        "NONE"
                    };
                    let end = |a: Option<(std::net::IpAddr, u16)>| match a {
                        Some((ip, port)) => Endpoint::Inet(proc_files::ip_text(ip), port),
                        None => Endpoint::None,
                    };
                    push(Connection {
                        fd,
                        family,
                        kind,
                        local: end(row.local),
                        remote: end(row.remote),
                        status,
                        pid: if only.is_some() { None } else { pid },
                    });
                }
            }
        }
        Ok(out)
    }

    /// The unix sockets of the caller's network namespace: asked of the kernel (sock_diag)
    /// when the roots are this kernel's; else, or when sock_diag is not there (no netlink
    /// allowed, no unix_diag in the kernel, an answer that does not hold together), the rows
    /// of `ROOT/net/unix` its parser can trust (see [`proc_files::parse_unix_table`]).
    fn unix_rows(&self) -> Result<Vec<UnixRow>, FilesError> {
        if self.unix_by_diag {
            // A dump the table's changes interrupted is asked again, once.
            for _ in 0..2 {
                match unix_diag::unix_sockets() {
                    Ok(rows) => return Ok(rows),
                    Err(unix_diag::UnixDiagError::Interrupted) => continue,
                    Err(_) => break,
                }
            }
        }
        let path = self.proc_root.join(SocketTable::Unix.file());
        let data = sys::read_small_file(&path).map_err(|error| FilesError::Io {
            what: path.display().to_string(),
            error,
        })?;
        Ok(proc_files::parse_unix_table(&data))
    }

    /// psutil's translation of a syscall's error on `pid`.
    fn syscall_error(&self, pid: i32, what: &str, e: io::Error) -> FilesError {
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

    fn terminal_map(&self) -> HashMap<u64, Vec<u8>> {
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

/// `stat(path)` as psutil's `isfile_strict`/`path_exists_strict` take it: whether it is a
/// regular file, `None` when it cannot be looked up, but denied (EACCES, EPERM) is an
/// error, not "not there".
fn stat_strict(stat: StatFn, path: &[u8]) -> Result<Option<bool>, Stop> {
    match stat(Path::new(std::ffi::OsStr::from_bytes(path))) {
        None => Err(Stop::Uncached),
        Some(Ok(regular)) => Ok(Some(regular)),
        Some(Err(e)) if matches!(io_kind(&e), Some(libc::EACCES) | Some(libc::EPERM)) => {
            Err(Stop::Failed(FilesError::Denied {
                what: String::from_utf8_lossy(path).into_owned(),
                errno: e.raw_os_error().unwrap_or(0),
            }))
        }
        Some(Err(_)) => Ok(None),
    }
}

/// psutil's cleaning of a link's path: whether a file named with the " (deleted)" suffix
/// exists is asked of the caller's file system, strictly ([`stat_strict`]).
fn clean(stat: StatFn, raw: &[u8]) -> Result<&[u8], Stop> {
    let mut denied = None;
    let path = proc_files::clean_link(raw, |p| match stat_strict(stat, p) {
        Ok(m) => m.is_some(),
        Err(e) => {
            denied = Some(e);
            true
        }
    });
    match denied {
        Some(e) => Err(e),
        None => Ok(path),
    }
}

/// Work for the [`Reader`] thread: it runs there and sends its own answer.
type Job = Box<dyn FnOnce() + Send>;

/// A thread kept to run what can block for as long as another process decides (a read of
/// a file that takes a target's mmap lock, stats of paths a target names), so that a
/// blocked call can be given up: starting a thread per read cost more than the read (100 µs
/// against 50 µs for an `smaps_rollup` on a busy 2-core VM). One caller uses it at a time
/// (it is taken out of [`ProcessFiles::reader`] while in use); a caller that finds none
/// starts one. A reader given up on is dropped: its thread finishes the blocked call
/// whenever the kernel lets it, finds no more jobs and exits.
#[derive(Debug)]
struct Reader {
    jobs: mpsc::Sender<Job>,
    /// The thread's id, for [`blocked::look`] (0 until it has started).
    tid: Arc<AtomicI32>,
}

impl Reader {
    fn start() -> io::Result<Reader> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let tid = Arc::new(AtomicI32::new(0));
        let t = tid.clone();
        std::thread::Builder::new()
            .name("tasksnap-smaps".into())
            .spawn(move || {
                t.store(sys::gettid(), Ordering::Release);
                while let Ok(job) = inbox.recv() {
                    job();
                }
            })?;
        Ok(Reader { jobs, tid })
    }
}

impl ProcessFiles {
    /// Reads `path` on the reader thread, under the deadline ([`ProcessFiles::run_watched`]).
    fn read_with_deadline(&self, path: &Path) -> Result<io::Result<Vec<u8>>, FilesError> {
        let owned = path.to_path_buf();
        self.run_watched(&path.display().to_string(), ON_MMAP_LOCK, move || {
            std::fs::read(owned)
        })
    }

    /// Runs `work` on the reader thread; gives up when that thread has been blocked for
    /// longer than the deadline ([`crate::blocked`]: time blocked, not time waiting for a
    /// CPU), saying it was `what` blocked `on` that.
    fn run_watched<T: Send + 'static>(
        &self,
        what: &str,
        on: &'static str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, FilesError> {
        let ended = || FilesError::Io {
            what: what.to_string(),
            error: io::Error::other("the reading thread ended"),
        };
        let kept = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        let reader = match kept {
            Some(r) => r,
            None => Reader::start().map_err(|error| FilesError::Io {
                what: format!("a thread to read {what}"),
                error,
            })?,
        };
        let (reply, answer) = mpsc::channel();
        let since = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let job: Job = Box::new(move || {
            let _ = reply.send(work());
        });
        if reader.jobs.send(job).is_err() {
            return Err(ended());
        }
        let deadline_ns = self.smaps_deadline.as_nanos() as u64;
        let tick = (self.smaps_deadline / 4).max(Duration::from_millis(1));
        let mut watch = Watch::default();
        let done = |r, reader| {
            // Kept for the next read, unless another caller kept one meanwhile.
            let mut slot = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(reader);
            }
            Ok(r)
        };
        loop {
            // Most reads end in tens of microseconds: the caller yields its CPU until the
            // answer is there rather than sleeping (a wake-up on another CPU of a VM costs
            // as much as the read), for as long as a read is not looked at anyway.
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            if now.saturating_sub(since) < blocked::LOOK_AFTER_NS {
                match answer.try_recv() {
                    Ok(r) => return done(r, reader),
                    Err(mpsc::TryRecvError::Empty) => {
                        std::thread::yield_now();
                        continue;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => return Err(ended()),
                }
            } else {
                match answer.recv_timeout(tick) {
                    Ok(r) => return done(r, reader),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Err(ended()),
                }
            }
            let now = sys::clock_ns(libc::CLOCK_MONOTONIC);
            let t = reader.tid.load(Ordering::Acquire);
            if watch.expired(since, now, deadline_ns, Count::Total, || blocked::look(t)) {
                return Err(FilesError::TimedOut {
                    what: what.to_string(),
                    on,
                    deadline_ms: self.smaps_deadline.as_millis() as u64,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::fs::symlink;

    /// This machine's /proc/self/stat of `cat`, its state and pid changed as a test needs.
    fn stat_line(pid: i32, state: char) -> String {
        format!(
            "{pid} (cat) {state} 2585766 2585766 2554076 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 \
             5338170 3133440 362 18446744073709551615 94816437612544 94816437632425 \
             140732304158992 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94816437648432 94816437650048 \
             94817155207168 140732304161460 140732304161480 140732304161480 140732304162795 0\n"
        )
    }

    struct Tree {
        dir: tempfile::TempDir,
    }

    impl Tree {
        fn new() -> Tree {
            let t = Tree {
                dir: tempfile::tempdir().expect("tempdir"),
            };
            std::fs::create_dir_all(t.proc().join("net")).expect("test");
            std::fs::create_dir_all(t.dir.path().join("dev/pts")).expect("test");
            t
        }
        fn proc(&self) -> PathBuf {
            self.dir.path().join("proc")
        }
        fn files(&self) -> ProcessFiles {
            ProcessFiles::new(self.proc(), self.dir.path().join("dev"))
                .with_smaps_deadline(Duration::from_millis(40))
        }
        /// A process directory with its stat, an empty fd/ and fdinfo/.
        fn process(&self, pid: i32, state: char) -> PathBuf {
            let d = self.proc().join(pid.to_string());
            std::fs::create_dir_all(d.join("fd")).expect("test");
            std::fs::create_dir_all(d.join("fdinfo")).expect("test");
            std::fs::write(d.join("stat"), stat_line(pid, state)).expect("test");
            d
        }
        fn real_file(&self, name: &[u8], body: &[u8]) -> PathBuf {
            let p = self.dir.path().join(std::ffi::OsStr::from_bytes(name));
            std::fs::write(&p, body).expect("test");
            p
        }
    }

    #[test]
    fn cwd_is_cleaned_and_a_zombie_or_gone_process_says_so() {
        let t = Tree::new();
        let d = t.process(10, 'S');
        // A name that is not UTF-8, with the kernel's suffix of an unlinked directory.
        symlink(
            OsStr::from_bytes(b"/nowhere/\xff dir (deleted)"),
            d.join("cwd"),
        )
        .expect("test");
        assert_eq!(t.files().cwd(10).expect("test"), b"/nowhere/\xff dir");
        // A live process whose link cannot be read: "" (psutil's fallback).
        t.process(11, 'S');
        assert_eq!(t.files().cwd(11).expect("test"), b"");
        t.process(12, 'Z');
        assert!(matches!(
            t.files().cwd(12),
            Err(FilesError::Zombie {
                pid: 12,
                ppid: Some(2585766)
            })
        ));
        assert!(matches!(
            t.files().cwd(13),
            Err(FilesError::Gone { pid: 13 })
        ));
    }

    #[test]
    fn open_files_are_the_regular_files_with_fdinfo() {
        let t = Tree::new();
        let d = t.process(20, 'S');
        let plain = t.real_file(b"plain", b"0123456789");
        let odd = t.real_file(b"new\nline \xfe", b"");
        symlink(&plain, d.join("fd/3")).expect("test");
        symlink(&odd, d.join("fd/4")).expect("test");
        symlink("socket:[5551]", d.join("fd/5")).expect("test");
        symlink(t.dir.path(), d.join("fd/6")).expect("test"); // a directory: not listed
        std::fs::write(
            d.join("fdinfo/3"),
            "pos:\t7\nflags:\t0102002\nmnt_id:\t31\nino:\t9\n",
        )
        .expect("test");
        std::fs::write(
            d.join("fdinfo/4"),
            "pos:\t0\nflags:\t0100001\nmnt_id:\t31\n",
        )
        .expect("test");
        let mut got = t.files().open_files(20).expect("test");
        got.sort_by_key(|f| f.fd);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            (got[0].fd, got[0].position_bytes, got[0].mode, got[0].flags),
            (3, 7, "a+", 0o102002)
        );
        assert_eq!(got[0].path, plain.as_os_str().as_bytes());
        assert_eq!((got[1].fd, got[1].mode), (4, "w"));
        assert_eq!(got[1].path, odd.as_os_str().as_bytes());

        // The descriptor closed between its link and its fdinfo, the process still there:
        // the file is left out (psutil's `_raise_if_not_alive` finds the process).
        let d = t.process(21, 'S');
        symlink(&plain, d.join("fd/3")).expect("test");
        assert_eq!(t.files().open_files(21).expect("test"), vec![]);
        // The process exited: gone.
        std::fs::remove_dir_all(&d).expect("test");
        assert!(matches!(
            t.files().open_files(21),
            Err(FilesError::Gone { pid: 21 })
        ));
    }

    #[test]
    fn sockets_are_matched_by_inode_as_psutil_does() {
        let t = Tree::new();
        let d = t.process(30, 'S');
        symlink("socket:[5551]", d.join("fd/3")).expect("test");
        symlink("socket:[5551]", d.join("fd/4")).expect("test"); // dup of a unix socket
        symlink("socket:[7001]", d.join("fd/5")).expect("test");
        symlink("socket:[7001]", d.join("fd/6")).expect("test"); // dup of a TCP socket
        let lo = format!("{:08X}", u32::from_ne_bytes([127, 0, 0, 1]));
        std::fs::write(
            t.proc().join("net/tcp"),
            format!(
                "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                 \x20  0: {lo}:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7001 1 000000006138feb2 100 0 0 10 0\n\
                 \x20  1: {lo}:07E9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7002 1 000000006138feb2 100 0 0 10 0\n\
                 \x20  2: {lo}:07EA {lo}:9\n"
            ),
        )
        .expect("test");
        std::fs::write(
            t.proc().join("net/unix"),
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             000000002c03658f: 00000003 00000000 00000000 0001 03 5551 /run/x.sock\n\
             000000002c036590: 00000003 00000000 00000000 0002 03 5552\n",
        )
        .expect("test");
        let f = t.files();
        // No tcp6/udp/udp6 files: the IPv6 ones are skipped, udp is an error (psutil).
        let tcp = f
            .connections(30, SocketTable::for_kind("tcp").expect("test"))
            .expect("test");
        assert_eq!(
            tcp.len(),
            1,
            "the first descriptor of an inet socket only: {tcp:?}"
        );
        assert_eq!(tcp[0].fd, 5);
        assert_eq!(tcp[0].status, "LISTEN");
        assert_eq!(tcp[0].local, Endpoint::Inet("127.0.0.1".into(), 0x7E8));
        assert_eq!(tcp[0].remote, Endpoint::None);
        assert!(f
            .connections(30, SocketTable::for_kind("inet").expect("test"))
            .is_err());
        let unix = f
            .connections(30, SocketTable::for_kind("unix").expect("test"))
            .expect("test");
        assert_eq!(unix.iter().map(|c| c.fd).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(unix[0].local, Endpoint::Unix(b"/run/x.sock".to_vec()));
        assert_eq!(unix[0].kind, libc::SOCK_STREAM);
        // The host's: every row, the unheld ones with fd -1 and no pid.
        let all = f
            .all_connections(&[SocketTable::Tcp4, SocketTable::Unix])
            .expect("test");
        assert_eq!(all.len(), 5, "{all:?}");
        assert!(all
            .iter()
            .any(|c| c.fd == -1 && c.pid.is_none() && c.status == "LISTEN"));
        assert!(all.iter().filter(|c| c.pid == Some(30)).count() == 3);
        // A process without sockets has none, whatever the tables hold.
        t.process(31, 'S');
        assert!(f
            .connections(31, SocketTable::for_kind("all").expect("test"))
            .expect("test")
            .is_empty());
    }

    #[test]
    fn maps_group_by_path_and_totals_fall_back_to_smaps() {
        let t = Tree::new();
        let d = t.process(40, 'S');
        let block = |addr: &str, path: &str, rss: u64| {
            format!(
                "{addr} r--p 00000000 fe:00 247741                     {path}\n\
                 Size:                 12 kB\nRss:                  {rss} kB\nPss:                  {rss} kB\n\
                 Private_Clean:        {rss} kB\nPrivate_Hugetlb:       0 kB\nSwap:                  1 kB\n\
                 SwapPss:               1 kB\nVmFlags: rd mr mw me \n"
            )
        };
        let smaps = block("1000-4000", "/usr/bin/sed", 8)
            + &block("4000-7000", "", 4)
            + &block("7000-a000", "/usr/bin/sed", 4);
        std::fs::write(d.join("smaps"), &smaps).expect("test");
        let f = t.files();
        let flat = f.memory_maps(40).expect("test");
        assert_eq!(flat.len(), 3);
        assert_eq!(flat[1].path, b"[anon]");
        let grouped = f.memory_maps_grouped(40).expect("test");
        assert_eq!(grouped.len(), 2);
        assert_eq!(grouped[0].0, b"/usr/bin/sed");
        assert_eq!(grouped[0].1.rss_bytes, 12 * 1024);
        assert_eq!(grouped[0].1.size_bytes, 24 * 1024);
        // No smaps_rollup (ENOENT): smaps, summed.
        let totals = f.smaps_totals(40).expect("test");
        assert_eq!(totals.uss_bytes, 16 * 1024);
        assert_eq!(totals.pss_bytes, 16 * 1024);
        assert_eq!(totals.swap_bytes, 3 * 1024);
        // A zombie's smaps is empty.
        let z = t.process(41, 'Z');
        std::fs::write(z.join("smaps"), "").expect("test");
        assert!(matches!(f.memory_maps(41), Err(FilesError::Zombie { .. })));
    }

    /// A read that blocks (here the open of a FIFO with no writer, asleep in the kernel as a
    /// reader queued on an mmap lock is) is given up near its deadline, not waited for.
    #[test]
    fn a_blocked_smaps_read_is_given_up() {
        let t = Tree::new();
        let d = t.process(50, 'S');
        let fifo = d.join("smaps");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).expect("test");
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        let r = t.files().memory_maps(50);
        let took = started.elapsed();
        assert!(
            matches!(
                r,
                Err(FilesError::TimedOut {
                    deadline_ms: 40,
                    ..
                })
            ),
            "{r:?}"
        );
        assert!(took < Duration::from_secs(2), "given up after {took:?}");
        let msg = r.expect_err("timed out").to_string();
        assert!(
            msg.contains("blocked on the process's memory map lock"),
            "{msg}"
        );
        // The reader given up on is not kept; the next read gets a new one, which is kept.
        let f = t.files();
        assert!(matches!(
            f.memory_maps(50),
            Err(FilesError::TimedOut { .. })
        ));
        assert!(f.reader.lock().expect("test").is_none());
        let d = t.process(51, 'S');
        std::fs::write(
            d.join("smaps"),
            "1000-2000 r--p 00000000 00:00 0 \nRss: 4 kB\n",
        )
        .expect("test");
        assert_eq!(f.memory_maps(51).expect("test").len(), 1);
        let tid = f
            .reader
            .lock()
            .expect("test")
            .as_ref()
            .map(|r| r.tid.clone());
        assert_eq!(f.memory_maps(51).expect("test").len(), 1);
        let again = f
            .reader
            .lock()
            .expect("test")
            .as_ref()
            .map(|r| r.tid.clone());
        assert!(
            tid.zip(again).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)),
            "the reader thread is kept between reads"
        );
        // Let the abandoned readers go: a writer that opens and closes gives each end of
        // file.
        for _ in 0..2 {
            // SAFETY: `c` is a valid NUL-terminated path; the descriptor is closed at once.
            unsafe {
                let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    }

    /// Hostile smaps figures (`Rss: 18014398509481983 kB` in two mappings of one path)
    /// saturate when grouped; they panicked in a debug build.
    #[test]
    fn hostile_figures_saturate_when_grouped() {
        let t = Tree::new();
        let d = t.process(45, 'S');
        let block = |addr: &str| {
            format!(
                "{addr} r--p 00000000 fe:00 1 /x\nRss: 18014398509481983 kB\n\
                 Private_Dirty: 18014398509481983 kB\nSwap: 18446744073709551615 kB\n"
            )
        };
        std::fs::write(d.join("smaps"), block("1000-2000") + &block("2000-3000")).expect("test");
        let f = t.files();
        let grouped = f.memory_maps_grouped(45).expect("test");
        assert_eq!(grouped.len(), 1);
        assert_eq!(grouped[0].1.rss_bytes, u64::MAX);
        assert_eq!(grouped[0].1.private_dirty_bytes, u64::MAX);
        assert_eq!(grouped[0].1.swap_bytes, u64::MAX);
        let totals = f.smaps_totals(45).expect("test");
        assert_eq!((totals.uss_bytes, totals.swap_bytes), (u64::MAX, u64::MAX));
    }

    /// A stat that does not return (a FUSE server that does not answer), here one that
    /// sleeps: blocked, not waiting for a CPU.
    fn slow_stat(p: &Path) -> Option<io::Result<bool>> {
        std::thread::sleep(Duration::from_millis(600));
        full_stat(p)
    }

    /// The stats of the paths a process names are given up near the deadline, for
    /// `open_files` and for the " (deleted)" check of `cwd` and `memory_maps`; a path
    /// without that suffix costs no stat at all.
    #[test]
    fn a_blocked_stat_of_a_path_the_process_names_is_given_up() {
        let t = Tree::new();
        let d = t.process(60, 'S');
        let plain = t.real_file(b"plain", b"x");
        symlink(&plain, d.join("fd/3")).expect("test");
        std::fs::write(d.join("fdinfo/3"), "pos:\t0\nflags:\t0100000\n").expect("test");
        symlink("/nowhere/dir (deleted)", d.join("cwd")).expect("test");
        std::fs::write(
            d.join("smaps"),
            "1000-2000 r--p 00000000 00:00 0 /usr/lib/x\nRss: 4 kB\n\
             2000-3000 r--p 00000000 00:00 0 /tmp/gone (deleted)\nRss: 4 kB\n",
        )
        .expect("test");
        let f = t.files().with_stat(slow_stat);
        let started = std::time::Instant::now();
        let r = f.open_files(60);
        assert!(
            matches!(
                &r,
                Err(FilesError::TimedOut {
                    on: ON_FILE_SYSTEM,
                    deadline_ms: 40,
                    ..
                })
            ),
            "{r:?}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        let msg = r.expect_err("timed out").to_string();
        assert!(msg.contains("blocked on the file system"), "{msg}");
        assert!(matches!(f.cwd(60), Err(FilesError::TimedOut { .. })));
        assert!(matches!(
            f.memory_maps(60),
            Err(FilesError::TimedOut {
                on: ON_FILE_SYSTEM,
                ..
            })
        ));
        // No suffix, no stat: the slow one is never called.
        let d = t.process(61, 'S');
        symlink("/nowhere/dir", d.join("cwd")).expect("test");
        let started = std::time::Instant::now();
        assert_eq!(f.cwd(61).expect("test"), b"/nowhere/dir");
        assert!(started.elapsed() < Duration::from_millis(500));
        // The ordinary stat answers as before; paths in the kernel's caches (just made) are
        // looked at on the caller's thread, without the reader.
        let f = t.files();
        let got = f.open_files(60).expect("test");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, plain.as_os_str().as_bytes());
        assert_eq!(f.cwd(60).expect("test"), b"/nowhere/dir");
        if cached_stat(&plain).is_some() {
            assert!(f.reader.lock().expect("test").is_none(), "no hop");
        }
        // Uncached (here: the cached look is skipped), the reader's full stat answers.
        let f = t.files().with_stat(full_stat);
        assert_eq!(f.open_files(60).expect("test"), got);
        assert!(f.reader.lock().expect("test").is_some());
    }

    /// On a fake tree `net/unix` is read, and a row forged by a socket's name (a newline,
    /// then a well-formed row naming socket 5551 with a path of the binder's choosing) is
    /// refused with the row it copies.
    #[test]
    fn a_fake_trees_forged_unix_row_is_refused() {
        let t = Tree::new();
        let d = t.process(70, 'S');
        symlink("socket:[5551]", d.join("fd/3")).expect("test");
        symlink("socket:[5553]", d.join("fd/4")).expect("test");
        std::fs::write(
            t.proc().join("net/unix"),
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             000000002c03658f: 00000003 00000000 00000000 0001 01 5551 /run/victim.sock\n\
             000000002c036590: 00000002 00000000 00000000 0002 01 6001 @e\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 5551 /forged/path\n\
             000000002c036591: 00000003 00000000 00000000 0001 01 5553 /run/other.sock\n",
        )
        .expect("test");
        let unix = t
            .files()
            .connections(70, &[SocketTable::Unix])
            .expect("test");
        assert_eq!(unix.len(), 1, "{unix:?}");
        assert_eq!(unix[0].fd, 4);
        assert_eq!(unix[0].local, Endpoint::Unix(b"/run/other.sock".to_vec()));
    }

    /// On this kernel unix sockets are asked of sock_diag: a socket whose abstract name
    /// forges a row of `/proc/net/unix` for another socket (here ours, as the review's
    /// reproduction does to a victim's) changes nothing of that socket's path. psutil is
    /// fooled by it, so the truth is what this compares with.
    #[test]
    fn a_socket_name_cannot_forge_another_sockets_path() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("victim.sock");
        let victim = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let fd = victim.as_raw_fd();
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("test");
        let inode = proc_files::socket_inode(link.as_os_str().as_bytes()).expect("a socket");
        let forged =
            format!("e\n0000000000000000: 00000002 00000000 00010000 0001 01 {inode} /forged/path");
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(forged.as_bytes()).expect("test");
        let _forger = std::os::unix::net::UnixDatagram::bind_addr(&addr).expect("bind");
        let f = ProcessFiles::new(PathBuf::from("/proc"), PathBuf::from("/dev"));
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let unix = f.connections(me, &[SocketTable::Unix]).expect("test");
        let victims: Vec<&Connection> = unix.iter().filter(|c| c.fd == fd).collect();
        assert_eq!(
            victims.iter().map(|c| &c.local).collect::<Vec<_>>(),
            vec![&Endpoint::Unix(path.as_os_str().as_bytes().to_vec())],
            "{unix:?}"
        );
        assert!(
            !unix
                .iter()
                .any(|c| c.local == Endpoint::Unix(b"/forged/path".to_vec())),
            "{unix:?}"
        );
        let all = f.all_connections(&[SocketTable::Unix]).expect("test");
        assert!(
            !all.iter()
                .any(|c| c.local == Endpoint::Unix(b"/forged/path".to_vec())),
            "the host's listing neither"
        );
    }

    #[test]
    fn terminals_are_found_by_device_number() {
        let t = Tree::new();
        let dev = t.dir.path().join("dev");
        symlink("/dev/null", dev.join("ttyFAKE")).expect("test");
        symlink("/dev/zero", dev.join("notatty")).expect("test");
        let f = t.files();
        let null = (1 << 8) | 3; // 1:3
        let zero = (1 << 8) | 5; // 1:5
        assert_eq!(
            f.terminal(null),
            Some(dev.join("ttyFAKE").into_os_string().into_vec())
        );
        assert_eq!(f.terminal(zero), None, "only tty* and pts/*");
        assert_eq!(f.terminal(0), None);
        // A terminal that appears later is found (the map is built again on a miss).
        symlink("/dev/zero", dev.join("pts/7")).expect("test");
        assert_eq!(
            f.terminal(zero),
            Some(dev.join("pts/7").into_os_string().into_vec())
        );
    }
}
