//! Spinning processes in CPU cgroups with a quota, for the tests that measure throttling
//! (collect's states_throttle, the CLI's cgroups, serve and record): the hierarchy with the
//! `cpu` controller (cgroup v1's, or v2's where it has the controller), a cgroup made with a
//! quota and removed when its spinner is dropped, its twins in other v1 hierarchies (`cpuacct` of its own, so
//! its usage is counted; `memory`: [`SideGroup`]), and the kernel's throttled time of it.
//! Root only.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// Pins the calling thread to `cpu` (async-signal-safe: used between fork and exec).
pub fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays within it for cpu < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The cgroup mounts of this process's mount table: (mount point, `cgroup2`, super options).
fn cgroup_mounts() -> Vec<(PathBuf, bool, String)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mountinfo
        .lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let mut post = post.split(' ');
            let (fstype, _src, opts) = (post.next()?, post.next()?, post.next().unwrap_or(""));
            let dir = PathBuf::from(pre.split(' ').nth(4)?);
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some((dir, v2, opts.to_string()))
        })
        .collect()
}

/// The mount point of the v1 hierarchy that has `controller` (`None`: none has).
pub fn v1_hierarchy(controller: &str) -> Option<PathBuf> {
    cgroup_mounts()
        .into_iter()
        .find(|(_, v2, opts)| !v2 && opts.split(',').any(|o| o == controller))
        .map(|(dir, _, _)| dir)
}

/// Where CPU cgroups are made: a v1 hierarchy with the `cpu` controller, or the v2 one when
/// it has the controller. `None` on a host with neither.
pub fn cpu_hierarchy() -> Option<(PathBuf, bool)> {
    if let Some(dir) = v1_hierarchy("cpu") {
        return Some((dir, false));
    }
    cgroup_mounts().into_iter().find_map(|(dir, v2, _)| {
        let controllers = std::fs::read_to_string(dir.join("cgroup.controllers"));
        (v2 && controllers.is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu")))
            .then_some((dir, true))
    })
}

/// A CPU cgroup with a quota, and a spinning process in it; both gone when dropped.
#[derive(Debug)]
pub struct Spinner {
    child: Child,
    group: Option<PathBuf>,
}

impl Spinner {
    /// A spinner on `cpu` (any when `None`), in a new cgroup with `quota_pct` of a CPU per
    /// 100 ms period (no cgroup when `None`).
    pub fn start(name: &str, quota_pct: Option<u64>, cpu: Option<usize>) -> Spinner {
        let group = quota_pct.map(|pct| make_group(name, pct));
        let procs = group
            .as_ref()
            .map(|g| CString::new(g.join("cgroup.procs").into_os_string().into_encoded_bytes()))
            .transpose()
            .expect("a path without NUL");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]).process_group(0);
        // SAFETY: the closure runs in the child between fork and exec, and only makes system
        // calls (open, write, close, sched_setaffinity) on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(cpu) = cpu {
                    pin_to(cpu);
                }
                if let Some(p) = &procs {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(fd);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn a spinner");
        Spinner { child, group }
    }

    /// The spinner's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its cgroup's directory (`None`: made without a quota, so in none).
    pub fn group(&self) -> Option<&Path> {
        self.group.as_deref()
    }

    /// The kernel's throttled time of its cgroup so far, ns (`cpu.stat`: `throttled_time` ns
    /// on v1, `throttled_usec` on v2).
    pub fn throttled_ns(&self) -> u64 {
        let g = self.group.as_ref().expect("a spinner with a quota");
        let stat = std::fs::read_to_string(g.join("cpu.stat")).expect("cpu.stat");
        let field = |k: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
        };
        field("throttled_time ")
            .or_else(|| field("throttled_usec ").map(|us| us * 1000))
            .expect("throttled time in cpu.stat")
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        // SAFETY: kill with the spinner's own process group (it is its leader).
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        if let Some(g) = &self.group {
            // The group empties once the killed spinner is reaped.
            for _ in 0..100 {
                if std::fs::remove_dir(g).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A new cgroup with `pct` percent of a CPU per 100 ms period, named for this test process.
pub fn make_group(name: &str, pct: u64) -> PathBuf {
    let (root, v2) = cpu_hierarchy().expect("a cgroup hierarchy with the cpu controller");
    let dir = root.join(format!("tasksnap-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir(&dir);
    if v2 {
        // The controller must be enabled for the root's children.
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
    }
    std::fs::create_dir(&dir).expect("make a cgroup");
    let quota_us = pct * 1000;
    if v2 {
        write(&dir.join("cpu.max"), &format!("{quota_us} 100000"));
    } else {
        write(&dir.join("cpu.cfs_period_us"), "100000");
        write(&dir.join("cpu.cfs_quota_us"), &quota_us.to_string());
    }
    dir
}

/// The cgroup of the same name as a CPU cgroup in the v1 hierarchy of another controller,
/// where the cpu group's own hierarchy does not have it (`cpuacct`, a hierarchy of its own on
/// some hosts; `memory`), so that the group's use of it is counted; removed when dropped.
#[derive(Debug)]
pub struct SideGroup(Option<PathBuf>);

impl SideGroup {
    /// Made beside `cpu_group` in `controller`'s hierarchy, unless the cpu hierarchy has
    /// `file` itself (v2, or the controllers mounted together) or there is none.
    pub fn beside(cpu_group: &Path, controller: &str, file: &str) -> SideGroup {
        let (root, v2) = cpu_hierarchy().expect("cpu hierarchy");
        if v2 || std::fs::metadata(root.join(file)).is_ok() {
            return SideGroup(None);
        }
        let Some(h) = v1_hierarchy(controller) else {
            return SideGroup(None);
        };
        let dir = h.join(cpu_group.file_name().expect("name"));
        std::fs::create_dir(&dir).expect("make the side group");
        SideGroup(Some(dir))
    }

    /// Its directory (`None`: none was made).
    pub fn dir(&self) -> Option<&Path> {
        self.0.as_deref()
    }

    /// Moves `pid` into it.
    pub fn join(&self, pid: i32) {
        if let Some(d) = &self.0 {
            std::fs::write(d.join("cgroup.procs"), pid.to_string()).expect("join the side group");
        }
    }

    /// A file of the group: the side group's, else the cpu group's own.
    pub fn read(&self, cpu_group: &Path, file: &str) -> Option<String> {
        let dir = self.0.as_deref().unwrap_or(cpu_group);
        std::fs::read_to_string(dir.join(file)).ok()
    }
}

impl Drop for SideGroup {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            for _ in 0..100 {
                if std::fs::remove_dir(d).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Root (for `what`, which needs the cgroups) on a host with CPU cgroups; else the test is
/// skipped (a failure with TASKSNAP_REQUIRE_PRIVILEGED=1).
pub fn root_with_cpu_cgroups(what: &str) -> bool {
    if !crate::root_or_skip(what) {
        return false;
    }
    if cpu_hierarchy().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("TASKSNAP_REQUIRE_PRIVILEGED").is_none(),
        "no cgroup hierarchy with the cpu controller on this host"
    );
    eprintln!("skipped: no cgroup hierarchy with the cpu controller");
    false
}
