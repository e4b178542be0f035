//! What a test runs as another user, staged where every user can reach it. A checkout, and
//! the target directory beside it, may sit in a directory only its owner can enter (a clone
//! under /root, mode 0700; CI builds in a fresh 0700 directory on purpose): a test that
//! drops to nobody and then executes its own binary, the tasksnap binary or anything else
//! from there fails with "Permission denied" before it tests anything. Every test that runs
//! a program of the build under another uid executes the path [`staged`] (or
//! [`this_test_binary`]) gives.
//!
//! The stage is one directory per test process, made with mkdtemp semantics (a new name,
//! created 0700 by this process, which owns it) and then opened to everyone to read and
//! search (0755: nobody else may write there), in the first of `$TMPDIR`, `/tmp` and
//! `/var/tmp` whose every ancestor others may search and that is not mounted `noexec`. A
//! file that others may already read and execute is hard-linked there (a test binary is
//! some 200 MB; a link costs nothing), any other one is copied and made 0755. The directory
//! is removed when the process that made it exits (an exit of a forked child does not).

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The directory files are staged in, and what it holds by source path.
struct Stage {
    dir: PathBuf,
    /// The process that made it: the only one that removes it.
    owner: u32,
    files: HashMap<PathBuf, PathBuf>,
}

static STAGE: Mutex<Option<Stage>> = Mutex::new(None);

/// A copy of (or link to) `path` that every user can execute, made once per test process
/// and removed at its exit. Panics when it cannot be made: the test could not run as
/// another user anyway.
pub fn staged(path: impl AsRef<Path>) -> PathBuf {
    let path = path.as_ref();
    try_staged(path).unwrap_or_else(|e| panic!("staging {} for another user: {e}", path.display()))
}

/// [`staged`] for the running test binary (`std::env::current_exe()`), for a test that
/// re-runs itself as another user.
pub fn this_test_binary() -> PathBuf {
    staged(std::env::current_exe().expect("the path of the test binary"))
}

fn try_staged(path: &Path) -> io::Result<PathBuf> {
    let source = std::fs::canonicalize(path)?;
    let mut held = STAGE.lock().unwrap_or_else(|e| e.into_inner());
    if held.is_none() {
        *held = Some(Stage::make()?);
        // SAFETY: registering a plain extern "C" function that takes nothing.
        unsafe { libc::atexit(remove_at_exit) };
    }
    let stage = held.as_mut().expect("made above");
    if let Some(done) = stage.files.get(&source) {
        return Ok(done.clone());
    }
    let to = stage.free_name(&source);
    place(&source, &to)?;
    stage.files.insert(source, to.clone());
    Ok(to)
}

impl Stage {
    /// A new, empty stage directory (see the module's header).
    fn make() -> io::Result<Stage> {
        let base = base_dir().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no temporary directory every user can reach ($TMPDIR, /tmp, /var/tmp)",
            )
        })?;
        let mut template = base
            .join("tasksnap-staged-XXXXXX")
            .into_os_string()
            .into_vec();
        template.push(0);
        // SAFETY: `template` is a writable NUL-terminated buffer ending in XXXXXX, which
        // mkdtemp replaces in place; it creates the directory 0700 or fails.
        let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(io::Error::last_os_error());
        }
        template.pop();
        let dir = PathBuf::from(OsString::from_vec(template));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        Ok(Stage {
            dir,
            owner: std::process::id(),
            files: HashMap::new(),
        })
    }

    /// Where `source` goes: its own file name, or that name with a number when another
    /// source of the same name is staged already.
    fn free_name(&self, source: &Path) -> PathBuf {
        let name = source
            .file_name()
            .map(OsString::from)
            .unwrap_or_else(|| "file".into());
        let mut to = self.dir.join(&name);
        let mut n = 1;
        while self.files.values().any(|p| *p == to) {
            let mut numbered = name.clone();
            numbered.push(format!(".{n}"));
            to = self.dir.join(numbered);
            n += 1;
        }
        to
    }
}

/// `source` at `to`: a hard link when others may read and execute it already and it is on
/// the same filesystem, else a copy made 0755.
fn place(source: &Path, to: &Path) -> io::Result<()> {
    let mode = std::fs::metadata(source)?.mode();
    if mode & 0o005 == 0o005 && std::fs::hard_link(source, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(source, to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))
}

/// The first of `$TMPDIR`, /tmp, /var/tmp that every user can reach and execute from.
fn base_dir() -> Option<PathBuf> {
    let tmpdir = std::env::var_os("TMPDIR").map(PathBuf::from);
    tmpdir
        .into_iter()
        .chain(["/tmp", "/var/tmp"].map(PathBuf::from))
        .filter(|d| d.is_absolute())
        .find(|d| searchable_by_others(d) && !noexec(d))
}

/// Whether `dir` and each directory above it let others search them (by their mode bits;
/// ACLs are not consulted).
fn searchable_by_others(dir: &Path) -> bool {
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.mode() & 0o001 != 0))
}

/// Whether `dir` is on a filesystem mounted `noexec`.
fn noexec(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: an all-zero statvfs is a valid value for statvfs to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return true;
    }
    st.f_flag & libc::ST_NOEXEC != 0
}

/// At exit: the stage goes, when this is the process that made it (a child forked by a test
/// that calls `exit` runs the parent's handlers too, and must leave the stage alone).
extern "C" fn remove_at_exit() {
    // try_lock: a thread that was staging when the process exited holds the lock.
    if let Ok(held) = STAGE.try_lock() {
        if let Some(s) = held.as_ref().filter(|s| s.owner == std::process::id()) {
            let _ = std::fs::remove_dir_all(&s.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_file_is_reachable_by_others_and_the_same_bytes() {
        let src = std::env::current_exe().expect("self");
        let a = staged(&src);
        assert_eq!(staged(&src), a, "staged once");
        let dir = a.parent().expect("the stage");
        let meta = std::fs::metadata(dir).expect("the stage");
        assert_eq!(meta.mode() & 0o7777, 0o755);
        // SAFETY: geteuid cannot fail.
        assert_eq!(meta.uid(), unsafe { libc::geteuid() });
        assert!(searchable_by_others(dir));
        assert_eq!(std::fs::metadata(&a).expect("staged").mode() & 0o005, 0o005);
        assert_eq!(
            std::fs::metadata(&a).expect("staged").len(),
            std::fs::metadata(&src).expect("source").len()
        );
    }

    #[test]
    fn a_file_others_cannot_read_is_copied_and_opened() {
        let dir = std::env::temp_dir().join(format!("tasksnap-reachable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let src = dir.join("secret-tool");
        std::fs::write(&src, b"#!/bin/sh\necho ok\n").expect("write");
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let to = staged(&src);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            std::fs::metadata(&to).expect("staged").mode() & 0o777,
            0o755
        );
        assert_eq!(std::fs::read(&to).expect("read"), b"#!/bin/sh\necho ok\n");
    }
}
