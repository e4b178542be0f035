//! Descriptors and files: opening, reading and statting relative to a directory
//! descriptor, closing in bulk on a private descriptor table, whole small files, and asking
//! only the kernel's caches whether a path is a regular file. Each wrapper returns
//! `std::io::Error` with the raw errno kept, so callers can tell "task exited" (ENOENT,
//! ESRCH) from "not allowed" (EACCES, EPERM).

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Opens `path` relative to the directory `dirfd` with `flags`, close-on-exec.
fn openat(dirfd: RawFd, path: &CStr, flags: libc::c_int) -> io::Result<RawFd> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; openat
    // does not retain the pointer.
    let fd = unsafe { libc::openat(dirfd, path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// Opens `path` relative to the directory `dirfd`, read-only, close-on-exec. The caller owns
/// the returned descriptor and must hand it to [`FdBatch`] (or close it).
pub fn openat_ro(dirfd: RawFd, path: &CStr) -> io::Result<RawFd> {
    openat(dirfd, path, libc::O_RDONLY | libc::O_NOCTTY)
}

/// Opens the directory `path` relative to the directory `dirfd`, read-only, close-on-exec
/// (anything else there is refused with ENOTDIR).
pub fn openat_dir(dirfd: RawFd, path: &CStr) -> io::Result<OwnedFd> {
    let fd = openat(dirfd, path, libc::O_RDONLY | libc::O_DIRECTORY)?;
    // SAFETY: openat just returned this descriptor, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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

/// A whole small file such as /proc/stat or /proc/loadavg. procfs reports their size as 0,
/// so `std::fs::read` starts with 32-byte reads and doubles (nine reads for /proc/stat
/// here); a 16 KiB buffer takes them in one read and the end-of-file read.
pub fn read_small_file(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut v = Vec::with_capacity(16 << 10);
    std::fs::File::open(path)?.read_to_end(&mut v)?;
    Ok(v)
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

/// `struct open_how` (linux/openat2.h; libc's is `non_exhaustive`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Reads the file `path` beneath the directory `dirfd` into `buf` (what fits), refusing any
/// walk out of it or through a symbolic link (`openat2` with `RESOLVE_BENEATH` and
/// `RESOLVE_NO_SYMLINKS`, Linux 5.6): for paths taken from files others can influence (a
/// cgroup path read from /proc), so that no name can lead the read elsewhere. A kernel
/// without `openat2` refuses (ENOSYS).
pub fn read_beneath(dirfd: RawFd, path: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    let how = OpenHow {
        flags: (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `path` is NUL-terminated; `how` is a valid open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat2 just returned this descriptor, owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    read_fd(std::os::fd::AsRawFd::as_raw_fd(&fd), buf)
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
mod tests {
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
