//! The cgroup hierarchies a mount table shows: each v1 mount (fstype `cgroup`, its
//! controllers among the super options) and the v2 mount (`cgroup2`), one entry per
//! hierarchy (a hierarchy mounted twice is the same device: the first mount is kept).
//! The table is untrusted bytes: malformed lines are skipped.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// The v1 controllers (and `name=`) a super option may name; other options (`rw`,
/// `clone_children`, `xattr`, `release_agent=`...) are not controllers.
const V1_CONTROLLERS: &[&str] = &[
    "blkio",
    "cpu",
    "cpuacct",
    "cpuset",
    "devices",
    "freezer",
    "hugetlb",
    "memory",
    "misc",
    "net_cls",
    "net_prio",
    "perf_event",
    "pids",
    "rdma",
];

/// One mounted hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Where it is mounted.
    pub dir: PathBuf,
    /// cgroup v2.
    pub v2: bool,
    /// v1: its controllers, as the super options name them (`name=systemd` too).
    pub controllers: Vec<String>,
}

impl Mount {
    /// Whether a v1 hierarchy has `controller`.
    pub fn has(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }
}

/// The hierarchies `proc_root/self/mountinfo` lists (none when it cannot be read).
pub(crate) fn hierarchies(proc_root: &Path) -> Vec<Mount> {
    match tasksnap_sys::read_small_file(&proc_root.join("self/mountinfo")) {
        Ok(text) => parse_mountinfo(&text),
        Err(_) => Vec::new(),
    }
}

/// The cgroup mounts of a mountinfo text (proc(5): `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS
/// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS`), one per device.
pub(crate) fn parse_mountinfo(text: &[u8]) -> Vec<Mount> {
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == b"-") else {
            continue;
        };
        let (Some(device), Some(dir), Some(fstype), Some(opts)) = (
            fields.get(2),
            fields.get(4).filter(|_| dash > 5),
            fields.get(dash + 1),
            fields.get(dash + 3),
        ) else {
            continue;
        };
        let v2 = match *fstype {
            b"cgroup2" => true,
            b"cgroup" => false,
            _ => continue,
        };
        if seen.contains(device) {
            continue;
        }
        seen.push(device);
        let controllers = if v2 {
            Vec::new()
        } else {
            String::from_utf8_lossy(opts)
                .split(',')
                .filter(|o| V1_CONTROLLERS.contains(o) || o.starts_with("name="))
                .map(str::to_string)
                .collect()
        };
        out.push(Mount {
            dir: PathBuf::from(OsString::from_vec(unescape(dir))),
            v2,
            controllers,
        });
    }
    out
}

/// A mountinfo path with its octal escapes (`\040` for a space) undone.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| {
            field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3'
        });
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's /proc/self/mountinfo (the cgroup lines and a few others).
    const MOUNTINFO: &[u8] = b"\
23 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn finds_each_hierarchy_with_its_controllers() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 6);
        assert_eq!(m[0].dir, Path::new("/sys/fs/cgroup/cpu"));
        assert_eq!(m[0].controllers, ["cpu"]);
        assert!(!m[0].v2);
        assert_eq!(m[4].controllers, ["name=systemd"]);
        assert!(m[5].v2 && m[5].controllers.is_empty());
    }

    #[test]
    fn shared_hierarchies_escapes_and_garbage() {
        let text = b"\
1 0 0:29 / /a\\040b rw shared:5 - cgroup cgroup rw,cpu,cpuacct,clone_children,xattr
2 0 0:29 / /again rw - cgroup cgroup rw,cpu,cpuacct
3 0 0:40 / /c rw - cgroup2 cgroup2 rw,nsdelegate
garbage - cgroup
4 0 0:41 / - cgroup
\xff\xfe - - -
5 0 0:42 / /d\\777 rw - cgroup cgroup rw,memory
";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0].dir, Path::new("/a b"));
        assert_eq!(m[0].controllers, ["cpu", "cpuacct"]);
        assert!(m[1].v2);
        assert_eq!(m[2].dir, Path::new("/d\\777"));
    }
}
