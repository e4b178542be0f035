//! A process's descriptors: the regular files it has open ([`ProcessFiles::open_files`],
//! with position and flags) and the cleaning of the paths its links name, stat'ed strictly
//! as psutil does (in the caches first, else on the reader thread under the deadline).

use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use tasksnap_procfs::proc_files;
use tasksnap_sys as sys;

use super::process::*;

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

/// A process's descriptors and the targets of their links.
pub(super) type FdLinks = Vec<(i32, Vec<u8>)>;

/// `stat(path)` as psutil's `isfile_strict`/`path_exists_strict` take it: whether it is a
/// regular file, `None` when it cannot be looked up, but denied (EACCES, EPERM) is an
/// error, not "not there".
pub(super) fn stat_strict(stat: StatFn, path: &[u8]) -> Result<Option<bool>, Stop> {
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
pub(super) fn clean(stat: StatFn, raw: &[u8]) -> Result<&[u8], Stop> {
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

impl ProcessFiles {
    /// The descriptors of `pid` and where each link points, skipping those gone meanwhile
    /// (`true` in the second place when one was) and those that are not links.
    pub(super) fn fd_links(&self, pid: i32) -> Result<(FdLinks, bool), FilesError> {
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
    pub(super) fn clean_all(
        &self,
        pid: i32,
        raws: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, FilesError> {
        let what = self.pid_dir(pid).display().to_string();
        self.stat_batch(&what, move |stat| {
            raws.iter().map(|r| Ok(clean(stat, r)?.to_vec())).collect()
        })
    }

    /// Runs `batch` (stats of paths `pid` named, for `what`) with a look in the kernel's
    /// caches on the caller's thread; when a path is not there to see, again with the full
    /// stat on the reader thread, given up after the deadline ([`ON_FILE_SYSTEM`]).
    pub(super) fn stat_batch<T: Send + 'static>(
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
}
