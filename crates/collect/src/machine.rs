//! The machine-wide figures, read from a procfs root through tasksnap-procfs's parsers: CPU
//! time split, memory, load averages, uptime, pid_max, sysctls, the mount's hidepid, the tty
//! driver table, and the users logged in (utmp). What a header, a recording and `doctor`
//! show of the machine, and what psutil's host helpers of the Python binding report (every
//! field of the CPU lines, the meminfo fields psutil reads, zoneinfo's watermarks, swap
//! traffic, online CPUs and physical cores from sysfs, the login sessions of utmp). Each returns `None` (or empty) when its file cannot be read; tests
//! hand them fake trees. Front ends reach them through [`crate::host::Host`].

use std::path::Path;

use tasksnap_model::{
    CpuTicks, HostIdentity, LoadAverages, Memory, StatCounters, SystemFigures, BOOT_ID_MAX_BYTES,
    HOSTNAME_MAX_BYTES,
};
use tasksnap_procfs::system::{CpuLine, MemInfo};
use tasksnap_procfs::{system, utmp};
use tasksnap_sys as sys;

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

/// The number of tasks (threads) on the system: the denominator of /proc/loadavg's 4th field.
pub fn task_count(root: &Path) -> Option<u64> {
    load_averages(root)?.tasks
}

/// [`task_count`] of the running kernel (what the BPF programs walk, whatever tree a host
/// reads). Only the BPF passes ask: a build without them has no caller.
#[allow(dead_code)] // see above
pub fn kernel_task_count() -> Option<u64> {
    task_count(Path::new(tasksnap_sys::roots::PROC))
}

/// `kernel.pid_max` of the running kernel: every pid is below it (the BPF change set's
/// bitmap is sized by it). Only the BPF passes ask.
#[allow(dead_code)] // see kernel_task_count
pub fn kernel_pid_max() -> Option<u32> {
    let text = read(Path::new(tasksnap_sys::roots::PROC), "sys/kernel/pid_max")?;
    std::str::from_utf8(&text).ok()?.trim().parse().ok()
}

/// Seconds since boot, from `/proc/uptime`, on the kernel's boot clock (the caller's
/// time namespace's offset taken off: [`crate::clock`]), as start times are.
pub fn uptime_s(root: &Path) -> Option<f64> {
    let s = system::parse_uptime(&read(root, "uptime")?)?;
    Some(crate::BootClock::caller().from_proc_uptime_s(s))
}

/// When the machine booted, seconds since the epoch: `btime` of `/proc/stat`, on the
/// kernel's boot clock (the caller's time namespace's offset taken off: [`crate::clock`]),
/// so that it and a start time make the moment the task started; `None` when unreadable.
pub fn boot_time_unix_s(root: &Path) -> Option<u64> {
    let btime = tasksnap_procfs::parse::parse_btime(&read(root, "stat")?).ok()?;
    Some(crate::BootClock::caller().from_proc_btime_s(btime))
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

/// The aggregate `cpu` line of `/proc/stat` with every field, and the `cpuN` lines, from
/// one read; `None` when the file cannot be read or has no `cpu` line.
pub fn cpu_lines(root: &Path) -> Option<(CpuLine, Vec<CpuLine>)> {
    let stat = read(root, "stat")?;
    Some((
        system::parse_cpu_line_full(&stat)?,
        system::parse_cpu_lines_full(&stat),
    ))
}

/// The counters of `/proc/stat` after its CPU lines (context switches, interrupts...).
pub fn stat_counters(root: &Path) -> Option<StatCounters> {
    system::parse_stat_counters(&read(root, "stat")?)
}

/// The fields of `/proc/meminfo` psutil reads ([`MemInfo`]).
pub fn meminfo_fields(root: &Path) -> Option<MemInfo> {
    Some(system::parse_meminfo_fields(&read(root, "meminfo")?))
}

/// The sum of the zones' `low` watermarks in `/proc/zoneinfo`, pages (0 when it lists
/// none); `None` when the file cannot be read (before Linux 2.6.13).
pub fn zoneinfo_low_pages(root: &Path) -> Option<u64> {
    Some(system::parse_zoneinfo_low_pages(&read(root, "zoneinfo")?))
}

/// Pages swapped in and out since boot (`pswpin`, `pswpout` of `/proc/vmstat`); `None`
/// when the file cannot be read or either counter is not in it (kernels without
/// `CONFIG_SWAP` have neither).
pub fn swap_io_pages(root: &Path) -> Option<(u64, u64)> {
    let vm = system::parse_vmstat(&read(root, "vmstat")?);
    let get = |name: &str| vm.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
    Some((get("pswpin")?, get("pswpout")?))
}

/// The CPUs online, as glibc's `sysconf(_SC_NPROCESSORS_ONLN)` counts them:
/// `devices/system/cpu/online` under the sysfs root, else the `cpuN` lines of the /proc
/// root's `stat` (glibc's own fallback). `None` when neither can be read.
pub fn online_cpus(sys_root: &Path, proc_root: &Path) -> Option<u64> {
    sys::read_small_file(&sys_root.join("devices/system/cpu/online"))
        .ok()
        .and_then(|t| system::parse_cpu_list_count(&t))
        .filter(|&n| n > 0)
        .or_else(|| {
            let n = system::parse_cpu_lines_full(&read(proc_root, "stat")?).len() as u64;
            (n > 0).then_some(n)
        })
}

/// Physical cores, as psutil's `cpu_count(logical=False)` counts them: the distinct
/// `topology/core_cpus_list` of the sysfs CPUs (`thread_siblings_list`, its older name,
/// where no CPU has the newer file: before Linux 5.7), each CPU's list naming the CPUs that
/// share its core; where sysfs has no topology (a container's, some arm boards), the cores
/// per package of `/proc/cpuinfo`. `None` when neither says.
pub fn physical_cores(sys_root: &Path, proc_root: &Path) -> Option<u64> {
    let cpus: Vec<std::path::PathBuf> = std::fs::read_dir(sys_root.join("devices/system/cpu"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.as_encoded_bytes();
                    n.starts_with(b"cpu") && n.get(3).is_some_and(u8::is_ascii_digit)
                })
                .map(|e| e.path().join("topology"))
                .collect()
        })
        .unwrap_or_default();
    for file in ["core_cpus_list", "thread_siblings_list"] {
        let lists: std::collections::HashSet<Vec<u8>> = cpus
            .iter()
            .filter_map(|t| sys::read_small_file(&t.join(file)).ok())
            .map(|l| l.trim_ascii().to_vec())
            .collect();
        if !lists.is_empty() {
            return Some(lists.len() as u64);
        }
    }
    system::parse_cpuinfo_cores(&read(proc_root, "cpuinfo")?)
}

/// The most of a utmp file read: 16 MiB, some 43,000 records (a real one holds one per
/// terminal); a larger file is someone's garbage, and its start is what is read.
const UTMP_MAX_BYTES: u64 = 16 << 20;

/// The login sessions (USER_PROCESS records) of the utmp file at `path`, in file order;
/// empty when it cannot be read. Only a regular file is read (opened without blocking, so a
/// FIFO planted there never hangs the reader), and at most [`UTMP_MAX_BYTES`] of it.
pub fn user_sessions(path: &Path) -> Vec<utmp::Record> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    else {
        return Vec::new();
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if f.take(UTMP_MAX_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    utmp::parse_user_sessions(&bytes)
}

/// USER_PROCESS records in the utmp file at `path`, as procps counts "users"; 0 when
/// unreadable.
pub fn logged_in_users(path: &Path) -> usize {
    user_sessions(path).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes each (path below `root`, text) file of a fake tree, making its directories.
    fn write_tree(root: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = root.join(name);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("mkdir");
            }
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    /// A fake root of real 6.18 files.
    #[test]
    fn reads_a_fake_tree() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        write_tree(
            root,
            &[
                ("sys/kernel/pid_max", "4194304\n"),
                ("uptime", "5321.40 10400.19\n"),
                ("loadavg", "0.52 0.33 0.20 3/210 12345\n"),
                (
                    "stat",
                    "cpu  51415 0 11390 48463 862 0 155 223 0 0\n\
                     cpu0 24251 0 5200 26454 190 0 46 110 0 0\n",
                ),
                (
                    "meminfo",
                    "MemTotal:       24684148 kB\nMemFree:        13849736 kB\n",
                ),
            ],
        );
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

    /// A fake tree of this machine's files (Linux 6.18, two CPUs of one core each), then the
    /// fallbacks: no `online`, no topology, an older kernel's sibling lists.
    #[test]
    fn reads_psutils_figures_from_a_fake_tree() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (proc_root, sys_root) = (tmp.path().join("proc"), tmp.path().join("sys"));
        let cpu = sys_root.join("devices/system/cpu");
        for n in 0..2 {
            std::fs::create_dir_all(cpu.join(format!("cpu{n}/topology"))).expect("mkdir");
            std::fs::write(
                cpu.join(format!("cpu{n}/topology/core_cpus_list")),
                format!("{n}\n"),
            )
            .expect("core_cpus_list");
        }
        std::fs::create_dir_all(cpu.join("cpufreq")).expect("mkdir");
        std::fs::write(cpu.join("online"), "0-1\n").expect("online");
        write_tree(
            &proc_root,
            &[
                (
                    "stat",
                    "cpu  4991571 352086 1964720 3169725 42778 0 8778 8069 0 0\n\
                     cpu0 2456089 173162 968894 1652574 11664 0 2068 3941 0 0\n\
                     cpu1 2535481 178924 995825 1517150 31114 0 6709 4127 0 0\n\
                     intr 168436227 0 0 0\nctxt 562172362\nbtime 1795746189\nprocesses 16459857\n\
                     softirq 38792987 0 4523426 4\n",
                ),
                (
                    "vmstat",
                    "nr_free_pages 4828490\npswpin 12\npswpout 34\npgfault 9\n",
                ),
                (
                    "zoneinfo",
                    "Node 0, zone      DMA\n  pages free     3840\n        min      10\n        low      13\n\
                     Node 0, zone   Normal\n        low      20163\n",
                ),
                (
                    "meminfo",
                    "MemTotal:       24684084 kB\nMemFree:        19313960 kB\nShmem:              8872 kB\n",
                ),
                ("cpuinfo", "processor\t: 0\nphysical id\t: 0\ncpu cores\t: 4\n\n"),
            ],
        );

        let (all, per) = cpu_lines(&proc_root).expect("cpu lines");
        assert_eq!((all.fields, all.ticks.user, per.len()), (10, 4991571, 2));
        assert_eq!(per[1].ticks.iowait, 31114);
        let c = stat_counters(&proc_root).expect("counters");
        assert_eq!(
            (c.context_switches, c.interrupts, c.softirqs),
            (562172362, 168436227, 38792987)
        );
        assert_eq!(swap_io_pages(&proc_root), Some((12, 34)));
        assert_eq!(zoneinfo_low_pages(&proc_root), Some(13 + 20163));
        let m = meminfo_fields(&proc_root).expect("meminfo");
        assert_eq!(
            (m.total_kib, m.shmem_kib, m.buffers_kib),
            (Some(24684084), Some(8872), None)
        );
        assert_eq!(online_cpus(&sys_root, &proc_root), Some(2));
        assert_eq!(physical_cores(&sys_root, &proc_root), Some(2));

        // Two hyperthreads of one core: one distinct list.
        for n in 0..2 {
            std::fs::write(cpu.join(format!("cpu{n}/topology/core_cpus_list")), "0-1\n")
                .expect("core_cpus_list");
        }
        assert_eq!(physical_cores(&sys_root, &proc_root), Some(1));
        // Before 5.7: only thread_siblings_list.
        for n in 0..2 {
            let t = cpu.join(format!("cpu{n}/topology"));
            std::fs::remove_file(t.join("core_cpus_list")).expect("rm");
            std::fs::write(t.join("thread_siblings_list"), format!("{n}\n")).expect("siblings");
        }
        assert_eq!(physical_cores(&sys_root, &proc_root), Some(2));
        // No topology (a container's sysfs): cpuinfo's packages; no `online`: the cpuN lines.
        std::fs::remove_dir_all(&sys_root).expect("rm");
        assert_eq!(physical_cores(&sys_root, &proc_root), Some(4));
        assert_eq!(online_cpus(&sys_root, &proc_root), Some(2));
        std::fs::write(proc_root.join("vmstat"), "pswpin 1\n").expect("vmstat");
        assert_eq!(swap_io_pages(&proc_root), None);
        let empty = tempfile::tempdir().expect("tempdir");
        assert_eq!(physical_cores(empty.path(), empty.path()), None);
        assert_eq!(online_cpus(empty.path(), empty.path()), None);
        assert_eq!(cpu_lines(empty.path()), None);
    }

    #[test]
    fn reads_login_sessions_of_a_regular_file_only() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("utmp");
        let mut r = vec![0u8; utmp::RECORD_BYTES];
        r[..2].copy_from_slice(&7i16.to_ne_bytes());
        r[4..8].copy_from_slice(&4242i32.to_ne_bytes());
        r[8..13].copy_from_slice(b"pts/3");
        r[44..49].copy_from_slice(b"alice");
        r[76..78].copy_from_slice(b":0");
        r[340..344].copy_from_slice(&1_763_889_000i32.to_ne_bytes());
        std::fs::write(&path, &r).expect("utmp");
        let s = user_sessions(&path);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].user.as_slice(), s[0].host.as_slice(), s[0].pid),
            (&b"alice"[..], &b":0"[..], 4242)
        );
        // A FIFO in its place is not opened for a blocking read, nor read.
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(user_sessions(&fifo).is_empty());
        assert!(user_sessions(tmp.path()).is_empty());
    }
}
