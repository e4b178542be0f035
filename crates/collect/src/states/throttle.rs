//! The /proc source's estimate of throttled time, for callers who may not load BPF: a
//! cgroup's own count of the time its CPU quota held it back (`cpu.stat.local`'s
//! `throttled_time` on cgroup v1, ns; `throttled_usec` on v2; `cpu.stat` where there is no
//! `.local`, Linux 6.8, commit 677ea015f231), shared among its threads that waited for a CPU
//! in the interval in proportion to their waits (schedstat's run delay, which counts the
//! throttled time too), each at most its own wait. `.local` counts a throttle by the group's
//! own quota or an ancestor's; plain `cpu.stat` only the group's own.
//!
//! Exact for one waiting thread per group; with several waiting at once the kernel counts a
//! throttle once per CPU, however many wait in it, so the estimate is a lower bound on their
//! sum (2 spinners in one group on 2 CPUs: about 20% low). Marked sampled, as the /proc
//! source's other estimates. A thread's cgroup is read from `/proc/TGID/task/TID/cgroup`
//! only while it waits (and again every [`CGROUP_EVERY`] samples); a group's file only while
//! one of its threads waits. Cgroup files are read beneath the hierarchy's root, never
//! through a link ([`tasksnap_sys::read_beneath`]): the path comes from a file a process
//! can move itself around in.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

/// A thread's cgroup is read again after this many samples in which it waited.
const CGROUP_EVERY: u32 = 10;

/// The hierarchy that holds the `cpu` controller, open.
#[derive(Debug)]
struct Hierarchy {
    root: OwnedFd,
    /// cgroup v2 (the `0::` line of /proc/PID/cgroup; times in µs).
    v2: bool,
}

/// What the estimate keeps of one thread.
#[derive(Debug, Default)]
struct Thread {
    /// Its run delay at the last sample.
    delay_ns: u64,
    /// Its estimated throttled time so far.
    throttled_ns: u64,
    /// Its cpu cgroup (relative to the hierarchy's root; `None`: unknown, or the root).
    group: Option<Arc<str>>,
    /// Samples it waited in since its cgroup was read (`None`: never read).
    age: Option<u32>,
}

/// The estimate's state between samples.
#[derive(Debug, Default)]
pub struct Estimate {
    hierarchy: Option<Hierarchy>,
    threads: HashMap<i32, Thread>,
    /// Each group's throttled time at the last sample that read it, ns.
    groups: HashMap<Arc<str>, u64>,
}

impl Estimate {
    /// The estimate for the /proc at `proc_root`, over the hierarchy its caller's mounts
    /// show with the `cpu` controller (none found: every thread's estimate stays 0).
    pub fn new(proc_root: &Path) -> Estimate {
        Estimate {
            hierarchy: find_hierarchy(proc_root),
            ..Estimate::default()
        }
    }

    /// Takes the run delays of one sample (thread id, process id, run delay ns) and gives each
    /// thread's estimated throttled time so far (at most its run delay), in the same order.
    pub fn update(&mut self, proc_root: &Path, threads: &[(i32, i32, u64)]) -> Vec<u64> {
        let Some(h) = &self.hierarchy else {
            return vec![0; threads.len()];
        };
        let v2 = h.v2;
        // The waits of this interval, by group.
        let mut waited: HashMap<Arc<str>, u64> = HashMap::new();
        let mut waits = Vec::with_capacity(threads.len());
        for &(tid, tgid, delay_ns) in threads {
            let t = self.threads.entry(tid).or_default();
            let wait = delay_ns.saturating_sub(t.delay_ns);
            t.delay_ns = delay_ns;
            if wait > 0 && t.age.is_none_or(|a| a >= CGROUP_EVERY) {
                t.group = cpu_group(proc_root, tgid, tid, v2);
                t.age = Some(0);
            }
            t.age = t.age.map(|a| a + u32::from(wait > 0));
            if let (true, Some(g)) = (wait > 0, &t.group) {
                *waited.entry(g.clone()).or_default() += wait;
            }
            waits.push(wait);
        }
        let mut buf = [0u8; 512];
        let mut share: HashMap<Arc<str>, (u64, u64)> = HashMap::new();
        for (g, sum) in waited {
            let Some(now) = throttled_ns(h, &g, &mut buf) else {
                continue;
            };
            if let Some(before) = self.groups.insert(g.clone(), now) {
                share.insert(g, (now.saturating_sub(before), sum));
            }
        }
        let live: std::collections::HashSet<i32> = threads.iter().map(|t| t.0).collect();
        self.threads.retain(|tid, _| live.contains(tid));
        threads
            .iter()
            .zip(waits)
            .map(|(&(tid, _, delay_ns), wait)| {
                let t = self.threads.get_mut(&tid).expect("kept above");
                if let Some((throttled, sum)) = t.group.as_ref().and_then(|g| share.get(g)) {
                    let part = (u128::from(*throttled) * u128::from(wait) / u128::from(*sum).max(1))
                        as u64;
                    t.throttled_ns = t.throttled_ns.saturating_add(part.min(wait));
                }
                t.throttled_ns.min(delay_ns)
            })
            .collect()
    }
}

/// The hierarchy with the `cpu` controller among the mounts `proc_root/self/mountinfo`
/// lists: a v1 one, else v2 when its root offers the controller.
fn find_hierarchy(proc_root: &Path) -> Option<Hierarchy> {
    let mounts = crate::cgroups::hierarchies(proc_root);
    if let Some(m) = mounts.iter().find(|m| !m.v2 && m.has("cpu")) {
        return open_root(&m.dir, false);
    }
    let v2 = mounts.iter().find(|m| {
        let controllers = std::fs::read_to_string(m.dir.join("cgroup.controllers"));
        m.v2 && controllers.is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
    })?;
    open_root(&v2.dir, true)
}

fn open_root(dir: &Path, v2: bool) -> Option<Hierarchy> {
    let path = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let root = tasksnap_sys::openat_dir(libc::AT_FDCWD, &path).ok()?;
    Some(Hierarchy { root, v2 })
}

/// A thread's cpu cgroup, relative to the hierarchy's root (`None`: the root itself, which
/// has no quota, or unreadable): the v1 line whose controllers include `cpu`, or the v2 line.
fn cpu_group(proc_root: &Path, tgid: i32, tid: i32, v2: bool) -> Option<Arc<str>> {
    let text = std::fs::read(proc_root.join(format!("{tgid}/task/{tid}/cgroup"))).ok()?;
    let text = String::from_utf8(text).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let ours = if v2 {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "cpu")
        };
        let rel = path.trim_start_matches('/');
        (ours && !rel.is_empty()).then(|| Arc::from(rel))
    })
}

/// The group's throttled time so far, ns, from `cpu.stat.local` (else `cpu.stat`).
fn throttled_ns(h: &Hierarchy, group: &str, buf: &mut [u8]) -> Option<u64> {
    let (key, scale) = if h.v2 {
        ("throttled_usec", 1000)
    } else {
        ("throttled_time", 1)
    };
    ["cpu.stat.local", "cpu.stat"].iter().find_map(|file| {
        let path = CString::new(format!("{group}/{file}")).ok()?;
        let n = tasksnap_sys::read_beneath(h.root.as_raw_fd(), &path, buf).ok()?;
        crate::cgroups::key_value(&buf[..n], key).map(|v| v.saturating_mul(scale))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's lines (v1 `cpu.stat.local` on Linux 6.18; v2 `cpu.stat` of
    /// Documentation/admin-guide/cgroup-v2.rst's fields) in a fake hierarchy, and a
    /// /proc/TID/cgroup of each kind.
    fn fake(v2: bool) -> (tempfile::TempDir, Estimate) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("cg");
        std::fs::create_dir_all(root.join("app")).expect("group");
        let proc_ = dir.path().join("proc");
        for (tid, grp) in [(10, "/app"), (11, "/app"), (12, "/")] {
            let d = proc_.join(format!("10/task/{tid}"));
            std::fs::create_dir_all(&d).expect("task dir");
            let line = if v2 {
                format!("0::{grp}\n")
            } else {
                format!("12:cpu,cpuacct:{grp}\n2:memory:/other\n0::/\n")
            };
            std::fs::write(d.join("cgroup"), line).expect("cgroup");
        }
        let est = Estimate {
            hierarchy: open_root(&root, v2),
            ..Estimate::default()
        };
        (dir, est)
    }

    fn set_throttled(dir: &Path, v2: bool, ns: u64) {
        let root = dir.join("cg/app");
        if v2 {
            let text = format!(
                "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnice_usec 0\nnr_periods 10\n\
                 nr_throttled 8\nthrottled_usec {}\nnr_bursts 0\nburst_usec 0\n",
                ns / 1000
            );
            std::fs::write(root.join("cpu.stat"), text).expect("cpu.stat");
        } else {
            std::fs::write(
                root.join("cpu.stat.local"),
                format!("throttled_time {ns}\n"),
            )
            .expect("cpu.stat.local");
        }
    }

    #[test]
    fn a_groups_throttled_time_is_shared_by_the_waits_of_its_threads() {
        for v2 in [false, true] {
            let (dir, mut est) = fake(v2);
            let proc_ = dir.path().join("proc");
            // Whole microseconds: v2 counts in them.
            const US: u64 = 1000;
            set_throttled(dir.path(), v2, 1000 * US);
            // First sample: the baseline.
            let got = est.update(&proc_, &[(10, 10, 0), (11, 10, 0), (12, 10, 0)]);
            assert_eq!(got, vec![0, 0, 0]);
            let got = est.update(
                &proc_,
                &[(10, 10, 100 * US), (11, 10, 100 * US), (12, 10, 50)],
            );
            assert_eq!(
                got,
                vec![0, 0, 0],
                "the group's baseline is taken at its first wait"
            );
            // 300 us throttled, waits of 300 and 100: 225 and 75; the root's thread none.
            set_throttled(dir.path(), v2, 1300 * US);
            let got = est.update(
                &proc_,
                &[(10, 10, 400 * US), (11, 10, 200 * US), (12, 10, 80)],
            );
            assert_eq!(got, vec![225 * US, 75 * US, 0], "v2 {v2}");
            // More throttled than waited: each at most its own wait.
            set_throttled(dir.path(), v2, 1310 * US);
            let got = est.update(
                &proc_,
                &[(10, 10, 401 * US), (11, 10, 200 * US), (12, 10, 80)],
            );
            assert_eq!(got, vec![226 * US, 75 * US, 0], "v2 {v2}");
        }
    }

    #[test]
    fn a_name_that_leaves_the_hierarchy_is_not_followed() {
        let (dir, est) = fake(false);
        let h = est.hierarchy.as_ref().expect("hierarchy");
        std::fs::write(dir.path().join("cpu.stat.local"), "throttled_time 5\n").expect("file");
        std::os::unix::fs::symlink(dir.path(), dir.path().join("cg/link")).expect("link");
        let mut buf = [0u8; 64];
        assert_eq!(throttled_ns(h, "..", &mut buf), None);
        assert_eq!(throttled_ns(h, "link", &mut buf), None);
    }
}
