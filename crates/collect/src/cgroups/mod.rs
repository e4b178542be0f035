//! The host's cgroups and their own counters, one listing per call: the hierarchies from the
//! proc root's mount table ([`mounts`]), each walked from its mount point, one directory
//! descriptor at a time, and each directory's control files read relative to it
//! ([`files`]). v1 hierarchies that have the same path are merged into one record; the v2
//! hierarchy's records stand alone.
//!
//! Nothing is followed: every directory is opened with `O_DIRECTORY|O_NOFOLLOW` relative to
//! its parent's descriptor by a name the parent's listing gave (never `.` or `..`), every file
//! with `O_NOFOLLOW` relative to its directory, so a name planted in a delegated cgroup cannot
//! lead a read elsewhere. The walk stops at a depth and a count limit and says so in the
//! listing's notes. A cgroup removed while the walk is in it (its `cgroup.procs` gone) and
//! files that cannot be read are skipped silently.

mod files;
mod mounts;

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Dir, FileType, Mode, OFlags};
use tasksnap_model::{CgroupCounters, CgroupHierarchy, CgroupListing};

pub(crate) use files::key_value;
pub(crate) use mounts::{hierarchies, Mount};

use files::Kind;

/// The most cgroups one listing reads, over every hierarchy.
pub(crate) const MAX_CGROUPS: usize = 10_000;

/// The controllers whose files a v1 hierarchy is walked for.
const V1_READ: [&str; 5] = ["cpu", "cpuacct", "memory", "pids", "blkio"];

/// Where a walk is and what it found.
struct Walk {
    /// How deep to go (the root is depth 0).
    max_depth: usize,
    /// Records left before the count limit.
    budget: usize,
    /// Directories not entered for the depth limit.
    too_deep: usize,
    /// The limit on the count was reached.
    cut: bool,
    found: Vec<CgroupCounters>,
}

/// Every cgroup down to `max_depth` of the hierarchies `proc_root/self/mountinfo` shows: the
/// v2 hierarchy's first, then the v1 paths.
pub(crate) fn list(proc_root: &Path, max_depth: usize) -> CgroupListing {
    list_at_most(proc_root, max_depth, MAX_CGROUPS)
}

/// [`list`], reading at most `max_cgroups`.
fn list_at_most(proc_root: &Path, max_depth: usize, max_cgroups: usize) -> CgroupListing {
    let mounts = hierarchies(proc_root);
    let mut walk = Walk {
        max_depth,
        budget: max_cgroups,
        too_deep: 0,
        cut: false,
        found: Vec::new(),
    };
    for m in mounts.iter().filter(|m| m.v2) {
        walk_mount(&mut walk, m, Kind::V2, CgroupHierarchy::V2);
    }
    let v2_count = walk.found.len();
    for m in mounts.iter().filter(|m| !m.v2) {
        let kind = Kind::V1 {
            cpu: m.has("cpu"),
            cpuacct: m.has("cpuacct"),
            memory: m.has("memory"),
            pids: m.has("pids"),
            blkio: m.has("blkio"),
        };
        if V1_READ.iter().any(|c| m.has(c)) {
            walk_mount(
                &mut walk,
                m,
                kind,
                CgroupHierarchy::V1(m.controllers.clone()),
            );
        }
    }
    let mut notes = Vec::new();
    if mounts.is_empty() {
        notes.push(format!(
            "no cgroup hierarchy in {}",
            proc_root.join("self/mountinfo").display()
        ));
    }
    if walk.cut {
        notes.push(format!(
            "stopped after {max_cgroups} cgroups; the rest are not shown"
        ));
    }
    if walk.too_deep > 0 {
        notes.push(format!(
            "{} cgroups deeper than {max_depth} not shown",
            walk.too_deep
        ));
    }
    let v1 = walk.found.split_off(v2_count);
    let mut cgroups = walk.found;
    cgroups.extend(merge_by_path(v1));
    CgroupListing { cgroups, notes }
}

/// The v1 records, one per path (first-found order), each hierarchy's counters merged.
fn merge_by_path(records: Vec<CgroupCounters>) -> Vec<CgroupCounters> {
    let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut out: Vec<CgroupCounters> = Vec::new();
    for r in records {
        match at.get(&r.path) {
            Some(&i) => out[i].merge(r),
            None => {
                at.insert(r.path.clone(), out.len());
                out.push(r);
            }
        }
    }
    out
}

/// Walks one mounted hierarchy from its mount point.
fn walk_mount(walk: &mut Walk, m: &Mount, kind: Kind, hierarchy: CgroupHierarchy) {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(root) = rustix::fs::openat(rustix::fs::CWD, &m.dir, flags, Mode::empty()) else {
        return;
    };
    walk_dir(walk, root, b"/".to_vec(), 0, kind, &hierarchy);
}

/// Reads the cgroup open at `dir` (its path `path`), then walks its children.
fn walk_dir(
    walk: &mut Walk,
    dir: OwnedFd,
    path: Vec<u8>,
    depth: usize,
    kind: Kind,
    hierarchy: &CgroupHierarchy,
) {
    if walk.budget == 0 {
        walk.cut = true;
        return;
    }
    let Some(record) = read_cgroup(dir.as_fd(), path.clone(), kind, hierarchy) else {
        return;
    };
    walk.budget -= 1;
    walk.found.push(record);
    // A directory's link count is 2 + its subdirectories on kernfs (kernfs_get_inode():
    // `subdirs + 2`) as on tmpfs and ext4: a leaf (most cgroups) is not listed, and one at
    // the depth limit is counted without its listing. Other counts (1 on btrfs) mean unknown.
    let subdirs = rustix::fs::fstat(&dir).map_or(None, |st| st.st_nlink.checked_sub(2));
    if subdirs == Some(0) {
        return;
    }
    if let Some(n) = subdirs.filter(|_| depth + 1 > walk.max_depth) {
        walk.too_deep += n as usize;
        return;
    }
    // The listing takes the descriptor (a borrowed one would be opened again, with a fcntl:
    // three system calls a directory); the children's names are taken first, then each is
    // opened relative to it.
    let Ok(mut listing) = Dir::new(dir) else {
        return;
    };
    let names: Vec<std::ffi::CString> = listing
        .by_ref()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_bytes();
            let maybe_dir = matches!(e.file_type(), FileType::Directory | FileType::Unknown);
            maybe_dir && name != b"." && name != b".."
        })
        .map(|e| e.file_name().to_owned())
        .collect();
    let Ok(dir) = listing.fd() else {
        return;
    };
    for name in names {
        if depth + 1 > walk.max_depth {
            walk.too_deep += 1;
            continue;
        }
        let Some(child) = open_child(dir, &name) else {
            continue;
        };
        let mut child_path = path.clone();
        if depth > 0 {
            child_path.push(b'/');
        }
        child_path.extend_from_slice(name.to_bytes());
        walk_dir(walk, child, child_path, depth + 1, kind, hierarchy);
    }
}

/// Opens the directory `name` of `parent`, never through a link (`None`: gone, not a
/// directory, a link).
fn open_child(parent: BorrowedFd<'_>, name: &std::ffi::CStr) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(parent, name, flags, Mode::empty()).ok()
}

/// The record of the cgroup open at `dir`, or `None` when it was removed (none of its files
/// could be read, and its `cgroup.procs`, which every cgroup has, is gone).
fn read_cgroup(
    dir: BorrowedFd<'_>,
    path: Vec<u8>,
    kind: Kind,
    hierarchy: &CgroupHierarchy,
) -> Option<CgroupCounters> {
    let mut c = CgroupCounters::new(path, hierarchy.clone());
    if files::read_counters(dir, kind, &mut c) {
        return Some(c);
    }
    // Nothing read (a hierarchy's root may have none of the files): gone or not?
    let procs = rustix::fs::statat(dir, "cgroup.procs", rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
    procs.ok().map(|_| c)
}

#[cfg(test)]
mod tests;
