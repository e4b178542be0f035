//! The machine-wide figures, read from a procfs root through tasksnap-procfs's parsers: CPU
//! time split, memory, load averages, uptime, pid_max, sysctls, the mount's hidepid, the tty
//! driver table, and the users logged in (utmp). What a header, a recording and `doctor`
//! show of the machine. Each returns `None` (or empty) when its file cannot be read; tests
//! hand them fake trees. Front ends reach them through [`crate::Host`].

use std::path::Path;

use tasksnap_model::{
    CpuTicks, HostIdentity, LoadAverages, Memory, SystemFigures, BOOT_ID_MAX_BYTES,
    HOSTNAME_MAX_BYTES,
};
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

/// The host name and boot id (`sys/kernel/hostname`, `sys/kernel/random/boot_id` under
/// `root`): two small reads. The host name is the one of the UTS namespace the procfs mount
/// shows (the kernel answers for the reader's namespace, as `uname -n` does); each part is
/// `None` when its file cannot be read.
pub fn identity(root: &Path) -> HostIdentity {
    let line = |file: &str, max: usize| {
        read(root, file).and_then(|t| system::parse_identity_line(&t, max))
    };
    HostIdentity {
        hostname: line("sys/kernel/hostname", HOSTNAME_MAX_BYTES),
        boot_id: line("sys/kernel/random/boot_id", BOOT_ID_MAX_BYTES),
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

/// The tty driver table (`root`/tty/drivers), in procps's lookup order; empty when unreadable.
pub fn tty_drivers(root: &Path) -> Vec<system::TtyDriver> {
    system::parse_tty_drivers(&read(root, "tty/drivers").unwrap_or_default())
}

/// USER_PROCESS records in the utmp file at `path`, as procps counts "users"; 0 when
/// unreadable.
pub fn logged_in_users(path: &Path) -> usize {
    // struct utmp is 384 bytes on Linux (x86_64 and aarch64 glibc); ut_type is its first i16.
    const UTMP_SIZE: usize = 384;
    const USER_PROCESS: i16 = 7;
    std::fs::read(path)
        .map(|b| {
            b.chunks_exact(UTMP_SIZE)
                .filter(|r| i16::from_ne_bytes([r[0], r[1]]) == USER_PROCESS)
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn counts_user_processes_in_utmp() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("utmp");
        // Four records: a boot time (2), a user (7), a login process (6), a user (7).
        let mut b = Vec::new();
        for t in [2i16, 7, 6, 7] {
            let mut r = vec![0u8; 384];
            r[..2].copy_from_slice(&t.to_ne_bytes());
            b.extend(r);
        }
        std::fs::write(&path, &b).expect("utmp");
        assert_eq!(logged_in_users(&path), 2);
        assert_eq!(logged_in_users(&tmp.path().join("none")), 0);
    }
}
