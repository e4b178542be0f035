//! Reads the machine-wide figures (CPU time split, memory, load averages, uptime, pid_max,
//! sysctls, hidepid, the caller's capabilities and tty, tty drivers, and two per-task
//! oddities ps shows: a task's fd links and its security label) from a procfs root, through tasksnap-procfs's parsers,
//! and each CPU's NUMA node from a sysfs root. Front ends call these instead of
//! opening /proc files themselves; tests hand them fake trees. Each returns `None` when its
//! file cannot be read.

use std::path::Path;

use tasksnap_model::{CpuTicks, LoadAverages, Memory, SystemFigures};
use tasksnap_procfs::{sys, system};

fn read(root: &Path, file: &str) -> Option<Vec<u8>> {
    sys::read_small_file(&root.join(file)).ok()
}

/// `/proc/stat`'s aggregate `cpu` line.
pub fn cpu_ticks(root: &Path) -> Option<CpuTicks> {
    system::parse_cpu_line(&read(root, "stat")?)
}

/// Every machine-wide figure a recording keeps: /proc/stat (CPU lines and counters),
/// meminfo, loadavg, vmstat, and pressure (`/proc/pressure/{cpu,memory,io}`, absent before
/// Linux 4.20 or without `CONFIG_PSI`, or with `psi=0`). Six small reads.
pub fn figures(root: &Path) -> SystemFigures {
    let stat = read(root, "stat");
    let stat = stat.as_deref();
    SystemFigures {
        cpu: stat.and_then(system::parse_cpu_line),
        per_cpu: stat.map(system::parse_cpu_lines).unwrap_or_default(),
        counters: stat.and_then(system::parse_stat_counters),
        memory: memory(root),
        load: load_averages(root),
        vmstat: read(root, "vmstat")
            .map(|t| system::parse_vmstat(&t))
            .unwrap_or_default(),
        pressure: ["cpu", "memory", "io"]
            .iter()
            .filter_map(|r| {
                Some(system::parse_pressure(
                    r,
                    &read(root, &format!("pressure/{r}"))?,
                ))
            })
            .collect(),
    }
}

/// `/proc/meminfo`.
pub fn memory(root: &Path) -> Option<Memory> {
    Some(system::parse_meminfo(&read(root, "meminfo")?))
}

/// `MemTotal` of `/proc/meminfo`, KiB; `None` when unreadable or not there.
pub fn mem_total_kib(root: &Path) -> Option<u64> {
    let text = read(root, "meminfo")?;
    system::meminfo_has_total(&text).then(|| system::parse_meminfo(&text).total_kib)
}

/// `/proc/loadavg`.
pub fn load_averages(root: &Path) -> Option<LoadAverages> {
    Some(system::parse_loadavg(&read(root, "loadavg")?))
}

/// Seconds since boot, from `/proc/uptime`.
pub fn uptime_s(root: &Path) -> Option<f64> {
    system::parse_uptime(&read(root, "uptime")?)
}

/// The width of `kernel.pid_max` as printed (`/proc/sys/kernel/pid_max`).
pub fn pid_max_width(root: &Path) -> Option<usize> {
    system::parse_pid_max_width(&read(root, "sys/kernel/pid_max")?)
}

/// A sysctl's value, trimmed: `name` is its path under `sys/` (`kernel/task_delayacct`).
pub fn sysctl(root: &Path, name: &str) -> Option<String> {
    Some(system::parse_sysctl(&read(root, &format!("sys/{name}"))?))
}

/// The `hidepid=` option of the procfs mounted at /proc, from `root`/self/mounts.
pub fn hidepid(root: &Path) -> Option<String> {
    system::parse_hidepid(&read(root, "self/mounts")?, "/proc")
}

/// The calling process's effective capabilities (`root`/self/status `CapEff`).
pub fn own_effective_caps(root: &Path) -> Option<u64> {
    tasksnap_procfs::parse::parse_cap_eff(&read(root, "self/status")?)
}

/// One whole read of `root`/stat as every sampling tool does it (`std::fs::read`: growing
/// reads), for `doctor`'s timing.
pub fn read_proc_stat(root: &Path) -> Option<Vec<u8>> {
    std::fs::read(root.join("stat")).ok()
}

/// The article's baseline for `bench`: open and close `root`/PID/`file` of each pid.
pub fn open_close_each(root: &Path, pids: &[i32], file: &str) {
    for p in pids {
        let _ = std::fs::File::open(root.join(format!("{p}/{file}")));
    }
}

/// The article's baseline for `bench`: open, one read into `buf`, close, for `root`/PID/`file`
/// of each pid.
pub fn open_read_close_each(root: &Path, pids: &[i32], file: &str, buf: &mut [u8]) {
    use std::io::Read;
    for p in pids {
        if let Ok(mut f) = std::fs::File::open(root.join(format!("{p}/{file}"))) {
            let _ = f.read(buf);
        }
    }
}

/// The tty driver table (`root`/tty/drivers), in procps's lookup order; empty when unreadable.
pub fn tty_drivers(root: &Path) -> Vec<system::TtyDriver> {
    system::parse_tty_drivers(&read(root, "tty/drivers").unwrap_or_default())
}

/// Where the symbolic link `root`/PID/`name` (`fd/2`, `exe`) points.
pub fn task_link(root: &Path, pid: i32, name: &str) -> Option<std::path::PathBuf> {
    std::fs::read_link(root.join(pid.to_string()).join(name)).ok()
}

/// The calling process's controlling tty (`tty_nr` of `root`/self/stat), 0 when none or
/// unreadable (procps's `cached_tty`).
pub fn own_tty_nr(root: &Path) -> u32 {
    std::fs::read(root.join("self/stat"))
        .ok()
        .and_then(|b| tasksnap_procfs::parse::parse_stat(&b).ok())
        .map_or(0, |st| st.tty_nr as u32)
}

/// The NUMA node of each CPU, by CPU number, from a sysfs root's
/// `devices/system/node/nodeN/cpuM` entries; -1 for a CPU in no node. What procps shows for
/// `ps -o numa` through libnuma's `numa_node_of_cpu()` (which tries the nodes in order and
/// answers -1 when none has the CPU, as on a kernel without CONFIG_NUMA, where the directory
/// is missing). Empty when the directory cannot be read.
pub fn cpu_nodes(sys_root: &Path) -> Vec<i32> {
    let number = |name: &std::ffi::OsStr, prefix: &str| -> Option<usize> {
        let digits = name.to_str()?.strip_prefix(prefix)?;
        (!digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    let mut nodes: Vec<(usize, std::path::PathBuf)> =
        std::fs::read_dir(sys_root.join("devices/system/node"))
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let e = e.ok()?;
                Some((number(&e.file_name(), "node")?, e.path()))
            })
            .collect();
    nodes.sort();
    let mut map: Vec<i32> = Vec::new();
    for (node, dir) in nodes {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            // Far beyond any machine: a hostile name must not allocate gigabytes.
            let Some(cpu) = number(&e.file_name(), "cpu").filter(|&c| c < 1 << 16) else {
                continue;
            };
            if map.len() <= cpu {
                map.resize(cpu + 1, -1);
            }
            if map[cpu] < 0 {
                map[cpu] = i32::try_from(node).unwrap_or(-1);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nodes, as a two-socket host's sysfs has them (plus the entries that are not CPUs).
    #[test]
    fn cpus_map_to_their_nodes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().join("devices/system/node");
        for (node, cpus) in [("node0", &[0, 1][..]), ("node1", &[2, 3, 5][..])] {
            std::fs::create_dir_all(base.join(node)).expect("mkdir");
            for c in cpus {
                std::fs::create_dir(base.join(node).join(format!("cpu{c}"))).expect("cpu");
            }
            for other in ["cpulist", "cpumap", "memory0", "cpuidle"] {
                std::fs::write(base.join(node).join(other), "").expect("file");
            }
        }
        std::fs::write(base.join("online"), "0-1\n").expect("online");
        std::fs::create_dir(base.join("node1/cpu99999999999")).expect("odd name");
        assert_eq!(cpu_nodes(tmp.path()), vec![0, 0, 1, 1, -1, 1]);
        // No node directory (a kernel without CONFIG_NUMA): nothing, so every CPU is -1.
        assert!(cpu_nodes(&tmp.path().join("nowhere")).is_empty());
    }

    /// A fake root of real 6.18 files.
    #[test]
    fn reads_a_fake_tree() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("sys/kernel")).expect("mkdir");
        std::fs::write(root.join("sys/kernel/pid_max"), "4194304\n").expect("pid_max");
        std::fs::write(root.join("uptime"), "5321.40 10400.19\n").expect("uptime");
        std::fs::write(root.join("loadavg"), "0.52 0.33 0.20 3/210 12345\n").expect("loadavg");
        std::fs::write(
            root.join("stat"),
            "cpu  51415 0 11390 48463 862 0 155 223 0 0\ncpu0 24251 0 5200 26454 190 0 46 110 0 0\n",
        )
        .expect("stat");
        std::fs::write(
            root.join("meminfo"),
            "MemTotal:       24684148 kB\nMemFree:        13849736 kB\n",
        )
        .expect("meminfo");
        assert_eq!(pid_max_width(root), Some(7));
        assert_eq!(uptime_s(root), Some(5321.40));
        assert_eq!(load_averages(root).map(|l| l.tasks), Some(Some(210)));
        assert_eq!(cpu_ticks(root).map(|c| c.idle), Some(48463));
        assert_eq!(mem_total_kib(root), Some(24_684_148));
        assert_eq!(memory(root).map(|m| m.free_kib), Some(13_849_736));
        let empty = tempfile::tempdir().expect("tempdir");
        assert_eq!(mem_total_kib(empty.path()), None);
        assert_eq!(uptime_s(empty.path()), None);
    }
}
