//! tasksnap-safefile: the one place tasksnap creates, replaces, reads and removes files in a
//! directory, so that a root tasksnap cannot be turned against its host by what another
//! user planted there (a symbolic link to /etc/shadow named like a lock file, a FIFO named
//! like a segment, a directory swapped under a recorder).
//!
//! The rules (docs/service.md, "Threat model"):
//! - A directory tasksnap writes into is opened once, without following a symbolic link
//!   ([`Dir::open_private`]), and refused unless the caller's effective user owns it, neither
//!   group nor others may write it, and every directory above it is owned by root or the
//!   caller and writable by nobody else unless sticky (as sshd's StrictModes checks a home).
//! - Every file in it is then named relative to that descriptor, with `O_NOFOLLOW`: new files
//!   with `O_CREAT|O_EXCL` ([`Dir::create_new`]), a file's new contents through a fresh
//!   temporary and `renameat` ([`Dir::replace`]), a lock file opened without truncation and
//!   checked to be a regular file of ours with one link ([`Dir::open_own`]), removal with
//!   `unlinkat` ([`Dir::remove`]). Nothing is truncated in place.
//! - Reads ([`Dir::open_read`]) refuse anything but a regular file, checked before opening
//!   and again with `fstat` after opening with `O_NONBLOCK|O_NOFOLLOW`, so a FIFO or a device
//!   named like a data file never blocks a reader or wakes a driver.
#![deny(missing_docs)]

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};
use rustix::io::Errno;

/// What a directory entry is (from `lstat`/`fstat`, never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else.
    Unknown,
}

impl Kind {
    fn of(st: &Stat) -> Kind {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::Regular,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            FileType::CharacterDevice => Kind::CharDevice,
            FileType::BlockDevice => Kind::BlockDevice,
            _ => Kind::Unknown,
        }
    }

    /// The kind of a file `std::fs` described (a caller that only looks, and names what it
    /// found).
    pub fn from_file_type(t: std::fs::FileType) -> Kind {
        use std::os::unix::fs::FileTypeExt;
        if t.is_file() {
            Kind::Regular
        } else if t.is_dir() {
            Kind::Directory
        } else if t.is_symlink() {
            Kind::Symlink
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_socket() {
            Kind::Socket
        } else if t.is_char_device() {
            Kind::CharDevice
        } else if t.is_block_device() {
            Kind::BlockDevice
        } else {
            Kind::Unknown
        }
    }

    /// "a FIFO", "a directory"...: for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Regular => "a regular file",
            Kind::Directory => "a directory",
            Kind::Symlink => "a symbolic link",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Unknown => "an unknown kind of file",
        }
    }
}

/// Everything this crate refuses or fails with. Each message names the path and, for a
/// refusal, the fix.
#[derive(Debug, thiserror::Error)]
pub enum SafeError {
    /// An I/O error on `path`. The OS error is part of the message and deliberately not a
    /// `source`, so a printer of error chains does not say it twice.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        err: io::Error,
    },
    /// The path is a symbolic link where tasksnap follows none.
    #[error("{}: is a symbolic link; tasksnap does not follow a link here (name the real path)", path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// Something other than a regular file where one was expected.
    #[error("{}: is {}, not a regular file; refusing to use it", path.display(), kind.describe())]
    NotRegular {
        /// The entry.
        path: PathBuf,
        /// What it is.
        kind: Kind,
    },
    /// Something other than a directory where one was expected.
    #[error("{}: is {}, not a directory", path.display(), kind.describe())]
    NotDirectory {
        /// The entry.
        path: PathBuf,
        /// What it is.
        kind: Kind,
    },
    /// A directory (or file) owned by another user than the one running tasksnap.
    #[error(
        "{}: owned by uid {owner}, not by uid {expected} who runs tasksnap; refusing what \
         another user controls (use a directory you own, e.g. `install -d -m 0700 DIR`, or \
         `chown {expected} DIR`)",
        path.display()
    )]
    Owner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The caller's effective uid.
        expected: u32,
    },
    /// A directory others may write to.
    #[error(
        "{}: writable by {who} (mode {mode:04o}); refusing it, another user could swap its \
         files (`chmod go-w DIR`)",
        path.display()
    )]
    Writable {
        /// The directory.
        path: PathBuf,
        /// "group", "others" or "group and others".
        who: &'static str,
        /// Its permission bits.
        mode: u32,
    },
    /// A directory above the one asked for lets another user replace it.
    #[error(
        "{}: the directory {} above it is {why}; refusing it, whoever can write there can \
         swap what is below (use a path whose every directory is owned by root or uid \
         {expected} and writable by nobody else, or sticky like /tmp)",
        path.display(),
        ancestor.display()
    )]
    Ancestor {
        /// The directory asked for.
        path: PathBuf,
        /// The directory above it that failed.
        ancestor: PathBuf,
        /// What is wrong with it.
        why: String,
        /// The caller's effective uid.
        expected: u32,
    },
    /// A file of ours that has other names (a hard link planted to make us write elsewhere).
    #[error("{}: has {links} hard links; refusing a file that may be another file's second name (remove it)", path.display())]
    Linked {
        /// The file.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// Something other than a socket where a socket is to be bound: only a socket (an
    /// earlier run's) is replaced, never anything else.
    #[error(
        "{}: is {} (owned by uid {owner}), not a socket; refusing to replace it (remove it: \
         `rm {}`, if nothing needs it)",
        path.display(),
        kind.describe(),
        path.display()
    )]
    NotSocket {
        /// The entry.
        path: PathBuf,
        /// What it is.
        kind: Kind,
        /// Its owner.
        owner: u32,
    },
}

impl SafeError {
    fn io(path: impl Into<PathBuf>, err: impl Into<io::Error>) -> SafeError {
        SafeError::Io {
            path: path.into(),
            err: err.into(),
        }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SafeError::Io { path, .. }
            | SafeError::Symlink { path }
            | SafeError::NotRegular { path, .. }
            | SafeError::NotDirectory { path, .. }
            | SafeError::Owner { path, .. }
            | SafeError::Writable { path, .. }
            | SafeError::Ancestor { path, .. }
            | SafeError::Linked { path, .. }
            | SafeError::NotSocket { path, .. } => path,
        }
    }

    /// The message without the leading path, for a caller that names the path itself.
    pub fn reason(&self) -> String {
        let text = self.to_string();
        let named = format!("{}: ", self.path().display());
        match text.strip_prefix(&named) {
            Some(why) => why.to_string(),
            None => text,
        }
    }

    /// True for an I/O error saying the file is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, SafeError::Io { err, .. } if err.kind() == io::ErrorKind::NotFound)
    }

    /// The OS error number of an I/O error.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            SafeError::Io { err, .. } => err.raw_os_error(),
            _ => None,
        }
    }

    /// True when the error is a refusal (the path is unsafe to use), not an I/O failure.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, SafeError::Io { .. })
    }
}

impl From<SafeError> for io::Error {
    /// The message, with the kind of an I/O error kept (`NotFound` stays `NotFound`).
    fn from(e: SafeError) -> io::Error {
        let kind = match &e {
            SafeError::Io { err, .. } => err.kind(),
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e.to_string())
    }
}

/// What [`Dir::stat`] says of an entry (never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// What it is.
    pub kind: Kind,
    /// Its size.
    pub bytes: u64,
    /// Its owner.
    pub uid: u32,
    /// Its permission bits (with setuid, setgid, sticky).
    pub mode: u32,
    /// Its number of hard links.
    pub links: u64,
}

impl Meta {
    fn of(st: &Stat) -> Meta {
        Meta {
            kind: Kind::of(st),
            bytes: u64::try_from(st.st_size).unwrap_or(0),
            uid: st.st_uid,
            mode: st.st_mode & 0o7777,
            links: st.st_nlink,
        }
    }
}

/// The caller's effective uid: who must own what tasksnap writes into.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// An open directory: every file operation is relative to its descriptor, so renaming or
/// replacing the path afterwards does not redirect them.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

const SAFE_READ: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

/// An `openat` with `O_NOFOLLOW` of `path`'s name in a checked directory failed with `e`:
/// ELOOP is the kernel's answer when that name is a symbolic link, anything else is the I/O
/// error it is.
fn nofollow_error(path: PathBuf, e: Errno) -> SafeError {
    if e == Errno::LOOP {
        SafeError::Symlink { path }
    } else {
        SafeError::io(path, e)
    }
}

/// Turns an open error on `path` into a [`SafeError`], naming a link or a non-directory.
fn open_error(path: &Path, dir: bool, e: Errno) -> SafeError {
    if e == Errno::LOOP || (dir && e == Errno::NOTDIR) {
        if let Ok(st) = rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            return match Kind::of(&st) {
                Kind::Symlink => SafeError::Symlink {
                    path: path.to_path_buf(),
                },
                Kind::Directory | Kind::Regular if !dir => SafeError::io(path, e),
                kind if dir && kind != Kind::Directory => SafeError::NotDirectory {
                    path: path.to_path_buf(),
                    kind,
                },
                _ => SafeError::io(path, e),
            };
        }
    }
    SafeError::io(path, e)
}

/// Walks `path` one component at a time from `/` (or the working directory), refusing a
/// symbolic link that another user than root or the caller owns; with `create`, makes each
/// missing directory (bits `create`) relative to its parent, only in a parent owned by root
/// or the caller and writable by nobody else unless sticky. Returns an `O_PATH` descriptor
/// of the directory reached.
fn resolve(path: &Path, create: Option<u32>) -> Result<OwnedFd, SafeError> {
    let me = euid();
    let refuse = |at: &OwnedFd, why: String| SafeError::Ancestor {
        path: path.to_path_buf(),
        ancestor: fd_path(at, || path.to_path_buf()),
        why,
        expected: me,
    };
    let start = if path.is_absolute() { "/" } else { "." };
    let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut cur =
        rustix::fs::openat(CWD, start, step, Mode::empty()).map_err(|e| SafeError::io(path, e))?;
    for c in path.components() {
        let name = match c {
            std::path::Component::Normal(name) => name,
            std::path::Component::ParentDir => OsStr::new(".."),
            _ => continue,
        };
        match rustix::fs::statat(&cur, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if Kind::of(&st) == Kind::Symlink && st.st_uid != 0 && st.st_uid != me => {
                return Err(refuse(
                    &cur,
                    format!(
                        "where {} is a symbolic link owned by uid {}",
                        name.to_string_lossy(),
                        st.st_uid
                    ),
                ));
            }
            Ok(_) => {}
            Err(Errno::NOENT) if create.is_some() => {
                let st = rustix::fs::fstat(&cur).map_err(|e| SafeError::io(path, e))?;
                if st.st_uid != 0 && st.st_uid != me {
                    return Err(refuse(&cur, format!("owned by uid {}", st.st_uid)));
                }
                if st.st_mode & 0o1000 == 0 {
                    if let Some(who) = writable_by(st.st_mode) {
                        return Err(refuse(
                            &cur,
                            format!(
                                "writable by {who} without the sticky bit (mode {:04o})",
                                st.st_mode & 0o7777
                            ),
                        ));
                    }
                }
                let mode = Mode::from_raw_mode(create.unwrap_or(0o700));
                match rustix::fs::mkdirat(&cur, name, mode) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(SafeError::io(path, e)),
                }
            }
            Err(e) => return Err(SafeError::io(path, e)),
        }
        cur = rustix::fs::openat(&cur, name, step, Mode::empty())
            .map_err(|e| open_error(path, true, e))?;
    }
    Ok(cur)
}

/// The path the kernel has for an open descriptor (for messages), else `fallback`.
fn fd_path(fd: &impl AsFd, fallback: impl FnOnce() -> PathBuf) -> PathBuf {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
        .unwrap_or_else(|_| fallback())
}

fn writable_by(mode: u32) -> Option<&'static str> {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => Some("group and others"),
        (true, false) => Some("group"),
        (false, true) => Some("others"),
        (false, false) => None,
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The name of a temporary for `name` made by [`Dir::replace`]: `.NAME.PID.N.tmp`.
fn temp_name(name: &OsStr, n: u64) -> OsString {
    let mut t = OsString::from(".");
    t.push(name);
    t.push(format!(".{}.{n}.tmp", std::process::id()));
    t
}

/// True when `candidate` is a temporary [`Dir::replace`] made for `name` (one a crash may
/// have left behind).
pub fn is_temp_of(candidate: &OsStr, name: &OsStr) -> bool {
    let c = candidate.as_bytes();
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(name.as_bytes());
    prefix.push(b'.');
    c.starts_with(&prefix) && c.ends_with(b".tmp")
}

impl Dir {
    /// Opens a directory to read from (following a link in `path`: the caller named it).
    pub fn open(path: &Path) -> Result<Dir, SafeError> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| open_error(path, true, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Opens a directory to write into: refused when `path` is a symbolic link, not a
    /// directory, not owned by the caller's effective uid, writable by group or others, or
    /// below a directory that is owned by another user than root or the caller, or writable
    /// by group or others without the sticky bit.
    pub fn open_private(path: &Path) -> Result<Dir, SafeError> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| open_error(path, true, e))?;
        let dir = Dir {
            fd,
            path: path.to_path_buf(),
        };
        dir.check_private()?;
        Ok(dir)
    }

    /// [`Dir::open_private`], creating the directory first when it is missing (and any
    /// missing directory above it), with permission bits `mode`. Missing directories are
    /// made one at a time relative to their parent's descriptor, and only in a parent that
    /// passes [`Dir::open_private`]'s rule for the directories above a store; a symbolic link
    /// on the way that another user than root or the caller owns is not followed (the
    /// kernel's `fs.protected_symlinks` rule, kept even where that is off).
    pub fn create_private(path: &Path, mode: u32) -> Result<Dir, SafeError> {
        match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => return Dir::open_private(path),
            Err(Errno::NOENT) => {}
            Err(e) => return Err(SafeError::io(path, e)),
        }
        resolve(path, Some(mode))?;
        Dir::open_private(path)
    }

    /// Opens a directory to create a user's output in: links on the way are followed only
    /// when root or the caller owns them (the `fs.protected_symlinks` rule, kept even where
    /// that is off), so another user's link cannot send the output elsewhere.
    pub fn open_trusted(path: &Path) -> Result<Dir, SafeError> {
        let at = resolve(path, None)?;
        let fd = rustix::fs::openat(
            &at,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| SafeError::io(path, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    fn check_private(&self) -> Result<(), SafeError> {
        let me = euid();
        let st = rustix::fs::fstat(&self.fd).map_err(|e| SafeError::io(&self.path, e))?;
        if st.st_uid != me {
            return Err(SafeError::Owner {
                path: self.path.clone(),
                owner: st.st_uid,
                expected: me,
            });
        }
        if let Some(who) = writable_by(st.st_mode) {
            return Err(SafeError::Writable {
                path: self.path.clone(),
                who,
                mode: st.st_mode & 0o7777,
            });
        }
        // Up the real chain (`..` of each directory, so links in the path do not matter)
        // to the root, where `..` is the directory itself.
        let mut child = st;
        let mut cur: OwnedFd = self
            .fd
            .try_clone()
            .map_err(|e| SafeError::io(&self.path, e))?;
        for level in 1..=4096u32 {
            let parent = rustix::fs::openat(
                &cur,
                "..",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| SafeError::io(&self.path, e))?;
            let pst = rustix::fs::fstat(&parent).map_err(|e| SafeError::io(&self.path, e))?;
            if pst.st_dev == child.st_dev && pst.st_ino == child.st_ino {
                return Ok(());
            }
            let why = if pst.st_uid != 0 && pst.st_uid != me {
                Some(format!("owned by uid {}", pst.st_uid))
            } else if pst.st_mode & 0o1000 == 0 {
                writable_by(pst.st_mode).map(|who| {
                    format!(
                        "writable by {who} without the sticky bit (mode {:04o})",
                        pst.st_mode & 0o7777
                    )
                })
            } else {
                None
            };
            if let Some(why) = why {
                let ancestor = fd_path(&parent, || {
                    let mut p = self.path.clone();
                    for _ in 0..level {
                        p.push("..");
                    }
                    p
                });
                return Err(SafeError::Ancestor {
                    path: self.path.clone(),
                    ancestor,
                    why,
                    expected: me,
                });
            }
            child = pst;
            cur = parent;
        }
        Ok(())
    }

    /// The path it was opened by (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path`/`name`, for messages.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// A second descriptor of the same directory.
    pub fn try_clone(&self) -> Result<Dir, SafeError> {
        Ok(Dir {
            fd: self
                .fd
                .try_clone()
                .map_err(|e| SafeError::io(&self.path, e))?,
            path: self.path.clone(),
        })
    }

    /// True when both are the same directory (device and inode, whatever the paths say).
    pub fn same_dir(&self, other: &Dir) -> Result<bool, SafeError> {
        let a = rustix::fs::fstat(&self.fd).map_err(|e| SafeError::io(&self.path, e))?;
        let b = rustix::fs::fstat(&other.fd).map_err(|e| SafeError::io(&other.path, e))?;
        Ok(a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    }

    /// The directory's own owner and mode.
    pub fn meta(&self) -> Result<Meta, SafeError> {
        rustix::fs::fstat(&self.fd)
            .map(|st| Meta::of(&st))
            .map_err(|e| SafeError::io(&self.path, e))
    }

    /// Sets the directory's permission bits (through its descriptor).
    pub fn chmod(&self, mode: u32) -> Result<(), SafeError> {
        rustix::fs::fchmod(&self.fd, Mode::from_raw_mode(mode))
            .map_err(|e| SafeError::io(&self.path, e))
    }

    /// fsync of the directory: entries created, renamed or removed in it survive a power cut.
    pub fn sync(&self) -> Result<(), SafeError> {
        rustix::fs::fsync(&self.fd).map_err(|e| SafeError::io(&self.path, e))
    }

    /// The names in the directory (without `.` and `..`), in no particular order.
    pub fn names(&self) -> Result<Vec<OsString>, SafeError> {
        let it = rustix::fs::Dir::read_from(&self.fd).map_err(|e| SafeError::io(&self.path, e))?;
        let mut out = Vec::new();
        for e in it {
            let e = e.map_err(|e| SafeError::io(&self.path, e))?;
            let name = e.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }

    /// What `name` is, without following a link; `None` when it is not there.
    pub fn stat(&self, name: impl AsRef<Path>) -> Result<Option<Meta>, SafeError> {
        let name = name.as_ref();
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Meta::of(&st))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(SafeError::io(self.join(name), e)),
        }
    }

    /// Opens `name` to read, only if it is a regular file: a link is
    /// [`SafeError::Symlink`], anything else [`SafeError::NotRegular`], a missing file an
    /// I/O error of kind `NotFound`. Never blocks on a FIFO, never opens a device.
    pub fn open_read(&self, name: impl AsRef<Path>) -> Result<File, SafeError> {
        let name = name.as_ref();
        let path = || self.join(name);
        // Looked at first, so a device is never opened; checked again once open, in case it
        // was swapped in between.
        let before = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| SafeError::io(path(), e))?;
        match Kind::of(&before) {
            Kind::Regular => {}
            Kind::Symlink => return Err(SafeError::Symlink { path: path() }),
            kind => return Err(SafeError::NotRegular { path: path(), kind }),
        }
        let fd = rustix::fs::openat(&self.fd, name, SAFE_READ, Mode::empty())
            .map_err(|e| nofollow_error(path(), e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| SafeError::io(path(), e))?;
        match Kind::of(&st) {
            Kind::Regular => Ok(File::from(fd)),
            kind => Err(SafeError::NotRegular { path: path(), kind }),
        }
    }

    /// Creates `name`, which must not exist (not even as a dangling link), for writing, with
    /// permission bits `mode` (less the umask); `append` opens it `O_APPEND`.
    pub fn create_new(
        &self,
        name: impl AsRef<Path>,
        mode: u32,
        append: bool,
    ) -> Result<File, SafeError> {
        let name = name.as_ref();
        let mut flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NOCTTY;
        if append {
            flags |= OFlags::APPEND;
        }
        rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))
            .map(File::from)
            .map_err(|e| SafeError::io(self.join(name), e))
    }

    /// Opens `name` for reading and writing, creating it (permission bits `mode`) when
    /// missing, never truncating: for a lock file. Refused unless it is a regular file owned
    /// by the caller with no other hard link.
    pub fn open_own(&self, name: impl AsRef<Path>, mode: u32) -> Result<File, SafeError> {
        let name = name.as_ref();
        let path = || self.join(name);
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDWR
                | OFlags::CREATE
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC
                | OFlags::NOCTTY,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| nofollow_error(path(), e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| SafeError::io(path(), e))?;
        let me = euid();
        match Kind::of(&st) {
            Kind::Regular => {}
            kind => return Err(SafeError::NotRegular { path: path(), kind }),
        }
        if st.st_uid != me {
            return Err(SafeError::Owner {
                path: path(),
                owner: st.st_uid,
                expected: me,
            });
        }
        if st.st_nlink != 1 {
            return Err(SafeError::Linked {
                path: path(),
                links: st.st_nlink,
            });
        }
        Ok(File::from(fd))
    }

    /// Starts replacing `name`: a new temporary (`.NAME.PID.N.tmp`, `O_CREAT|O_EXCL`, bits
    /// `mode`) to write, which [`Pending::commit`] syncs and renames over `name` (whatever
    /// `name` is: a link there is replaced, never followed). Dropped uncommitted, the
    /// temporary is removed and `name` is untouched.
    pub fn replace(&self, name: impl AsRef<Path>, mode: u32) -> Result<Pending, SafeError> {
        let name = name.as_ref().as_os_str().to_os_string();
        let mut last = None;
        for _ in 0..64 {
            let tmp = temp_name(&name, TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
            match self.create_new(&tmp, mode, false) {
                Ok(file) => {
                    return Ok(Pending {
                        dir: self.try_clone()?,
                        tmp,
                        name,
                        file,
                    })
                }
                Err(e) if e.raw_os_error() == Some(Errno::EXIST.raw_os_error()) => {
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| SafeError::io(self.join(&name), io::ErrorKind::AlreadyExists)))
    }

    /// Removes `name` (a file, or a link itself, never what it points to).
    pub fn remove(&self, name: impl AsRef<Path>) -> Result<(), SafeError> {
        let name = name.as_ref();
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|e| SafeError::io(self.join(name), e))
    }

    /// Removes `name` and, when it is a directory, everything below it, never following a
    /// link (a link is removed itself, never what it points to). At most 16 levels deep.
    pub fn remove_tree(&self, name: impl AsRef<Path>) -> Result<(), SafeError> {
        self.remove_tree_at(name.as_ref(), 16)
    }

    fn remove_tree_at(&self, name: &Path, depth: u32) -> Result<(), SafeError> {
        let path = self.join(name);
        let Some(meta) = self.stat(name)? else {
            return Err(SafeError::io(path, Errno::NOENT));
        };
        if meta.kind != Kind::Directory {
            return self.remove(name);
        }
        if depth == 0 {
            return Err(SafeError::io(path, io::Error::other("too deep to remove")));
        }
        let sub = self.open_child(name, path)?;
        for entry in sub.names()? {
            match sub.remove_tree_at(Path::new(&entry), depth - 1) {
                Err(e) if e.is_not_found() => {}
                r => r?,
            }
        }
        rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)
            .map_err(|e| SafeError::io(self.join(name), e))
    }

    /// The directory `name` in this one, opened without following a link (`path` names it in
    /// messages); no other check.
    fn open_child(&self, name: &Path, path: PathBuf) -> Result<Dir, SafeError> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| open_error(&path, true, e))?;
        Ok(Dir { fd, path })
    }

    /// Listens on a unix stream socket `name` in this directory, with permission bits `mode`
    /// (a service's socket: 0666 lets every local user connect). A socket left by an earlier
    /// run is removed first; anything else of that name is refused, never replaced. The
    /// socket is bound through this directory's descriptor (`/proc/self/fd/N/NAME`), so a
    /// directory renamed or replaced by a link since it was checked is not where it lands.
    pub fn bind_socket(
        &self,
        name: impl AsRef<Path>,
        mode: u32,
    ) -> Result<std::os::unix::net::UnixListener, SafeError> {
        use std::os::fd::AsRawFd;
        let name = name.as_ref();
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Socket => {
                rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
                    .map_err(|e| SafeError::io(self.join(name), e))?;
            }
            Ok(st) => {
                return Err(SafeError::NotSocket {
                    path: self.join(name),
                    kind: Kind::of(&st),
                    owner: st.st_uid,
                })
            }
            Err(Errno::NOENT) => {}
            Err(e) => return Err(SafeError::io(self.join(name), e)),
        }
        let through = Path::new("/proc/self/fd")
            .join(self.fd.as_raw_fd().to_string())
            .join(name);
        let listener = std::os::unix::net::UnixListener::bind(&through)
            .map_err(|e| SafeError::io(self.join(name), e))?;
        rustix::fs::chmodat(&self.fd, name, Mode::from_raw_mode(mode), AtFlags::empty())
            .map_err(|e| SafeError::io(self.join(name), e))?;
        Ok(listener)
    }

    /// Creates the directory `name` in this one (bits `mode`) if missing, and opens it with
    /// [`Dir::open_private`]'s checks.
    pub fn create_private_dir(&self, name: impl AsRef<Path>, mode: u32) -> Result<Dir, SafeError> {
        let name = name.as_ref();
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(SafeError::io(self.join(name), e)),
        }
        let path = self.join(name);
        let dir = self.open_child(name, path)?;
        dir.check_private()?;
        Ok(dir)
    }
}

/// Opens a file a user named to read (a configuration): links in `path` are followed (the
/// user named it), but only a regular file is opened, with `O_NONBLOCK`, so a FIFO or a
/// device (`/dev/zero`, a terminal) is refused instead of blocking or never ending.
pub fn open_regular(path: &Path) -> Result<File, SafeError> {
    let before =
        rustix::fs::statat(CWD, path, AtFlags::empty()).map_err(|e| SafeError::io(path, e))?;
    match Kind::of(&before) {
        Kind::Regular => {}
        kind => {
            return Err(SafeError::NotRegular {
                path: path.to_path_buf(),
                kind,
            })
        }
    }
    let fd = rustix::fs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| SafeError::io(path, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| SafeError::io(path, e))?;
    match Kind::of(&st) {
        Kind::Regular => Ok(File::from(fd)),
        kind => Err(SafeError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// Splits a path a user named for output into its directory (`.` when none) and file
/// name; `None` when it names no file (`/`, `..`, a trailing `/`).
pub fn split_path(path: &Path) -> Option<(PathBuf, OsString)> {
    if path.as_os_str().as_bytes().ends_with(b"/") {
        return None;
    }
    let name = path.file_name()?.to_os_string();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some((parent, name))
}

/// A file a user named for output, opened by [`Dir::open_output`].
#[derive(Debug)]
pub enum Output {
    /// A new file or a regular file being replaced: written to a temporary, renamed into
    /// place by [`Output::finish`].
    Replace(Pending),
    /// A FIFO or character device of the caller's or root's (a pipe, /dev/null): written in
    /// place.
    Stream {
        /// The open file.
        file: File,
        /// Its path, for messages.
        path: PathBuf,
    },
}

impl Output {
    /// The file to write to.
    pub fn file(&mut self) -> &mut File {
        match self {
            Output::Replace(p) => p.file(),
            Output::Stream { file, .. } => file,
        }
    }

    /// Makes the output final: a replacement is synced and renamed into place; a stream is
    /// synced where that means something (EINVAL from a pipe or device is not an error).
    pub fn finish(self) -> Result<(), SafeError> {
        match self {
            Output::Replace(p) => p.commit(),
            Output::Stream { file, path } => match file.sync_all() {
                Err(e) if e.raw_os_error() == Some(Errno::INVAL.raw_os_error()) => Ok(()),
                r => r.map_err(|e| SafeError::io(path, e)),
            },
        }
    }
}

impl Dir {
    /// Opens `name` in this directory for a user's output (`dump -o`, `--flamegraph`):
    /// - missing, or a regular file: [`Output::Replace`], a new temporary (bits `mode`) that
    ///   [`Output::finish`] renames over `name`, so the old contents stay whole until the new
    ///   ones are, and a hard link to another file is never written through;
    /// - a FIFO or a character device: [`Output::Stream`], opened for writing in place
    ///   without creating or truncating;
    /// - a symbolic link ([`SafeError::Symlink`]), a directory, a socket or a block device
    ///   ([`SafeError::NotRegular`]), or anything owned by another user than the caller or
    ///   root ([`SafeError::Owner`]): refused.
    pub fn open_output(&self, name: impl AsRef<Path>, mode: u32) -> Result<Output, SafeError> {
        let name = name.as_ref();
        let path = || self.join(name);
        let Some(meta) = self.stat(name)? else {
            return Ok(Output::Replace(self.replace(name, mode)?));
        };
        let me = euid();
        if meta.kind == Kind::Symlink {
            return Err(SafeError::Symlink { path: path() });
        }
        if meta.uid != me && meta.uid != 0 {
            return Err(SafeError::Owner {
                path: path(),
                owner: meta.uid,
                expected: me,
            });
        }
        match meta.kind {
            Kind::Regular => Ok(Output::Replace(self.replace(name, mode)?)),
            Kind::Fifo | Kind::CharDevice => {
                let fd = rustix::fs::openat(
                    &self.fd,
                    name,
                    OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
                    Mode::empty(),
                )
                .map_err(|e| SafeError::io(path(), e))?;
                let st = rustix::fs::fstat(&fd).map_err(|e| SafeError::io(path(), e))?;
                match Kind::of(&st) {
                    Kind::Fifo | Kind::CharDevice if st.st_uid == me || st.st_uid == 0 => {
                        Ok(Output::Stream {
                            file: File::from(fd),
                            path: path(),
                        })
                    }
                    kind => Err(SafeError::NotRegular { path: path(), kind }),
                }
            }
            kind => Err(SafeError::NotRegular { path: path(), kind }),
        }
    }
}

/// A file being replaced ([`Dir::replace`]).
#[derive(Debug)]
pub struct Pending {
    dir: Dir,
    /// The temporary's name; empty once renamed.
    tmp: OsString,
    name: OsString,
    file: File,
}

impl Pending {
    /// The temporary to write to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The final path (for messages).
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// Syncs the temporary, renames it over the final name, syncs the directory.
    pub fn commit(mut self) -> Result<(), SafeError> {
        let path = self.path();
        self.file.sync_all().map_err(|e| SafeError::io(&path, e))?;
        rustix::fs::renameat(&self.dir.fd, &self.tmp, &self.dir.fd, &self.name)
            .map_err(|e| SafeError::io(&path, e))?;
        self.tmp.clear();
        self.dir.sync()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.tmp.is_empty() {
            let _ = rustix::fs::unlinkat(&self.dir.fd, &self.tmp, AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests;
