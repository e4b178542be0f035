//! Parsers of the machine-wide /proc files: `/proc/stat`'s `cpu` line, `/proc/meminfo`,
//! `/proc/loadavg`, `/proc/uptime`, `/proc/sys/kernel/pid_max` and other sysctls, and the
//! procfs mount's `hidepid` option, `/proc/tty/drivers`, and what psutil's host figures
//! read beyond those: every field of the CPU lines ([`CpuLine`]), the meminfo fields psutil
//! uses ([`MemInfo`]), the zones' low watermarks of `/proc/zoneinfo`, `/proc/cpuinfo`'s
//! cores per package, and a sysfs CPU list (`0-3,8`). (`btime` and `processes`
//! of `/proc/stat` are in [`crate::parse`] with the per-task files, which they date.) Pure
//! functions over bytes; lenient as procps is: a field that is not a number counts as 0,
//! never a panic, and sums saturate.

use tasksnap_model::{CpuTicks, LoadAverages, Memory, Pressure, PressureLine, StatCounters};

/// Parses the aggregate `cpu ` line of /proc/stat (not `cpu0`...); `None` when there is none.
/// The first eight fields of [`parse_cpu_line_full`].
pub fn parse_cpu_line(stat: &[u8]) -> Option<CpuTicks> {
    parse_cpu_line_full(stat).map(|l| l.ticks)
}

/// The `cpuN` lines of /proc/stat, in file order (the kernel lists online CPUs only, so N
/// may skip numbers). The first eight fields of [`parse_cpu_lines_full`].
pub fn parse_cpu_lines(stat: &[u8]) -> Vec<CpuTicks> {
    parse_cpu_lines_full(stat)
        .into_iter()
        .map(|l| l.ticks)
        .collect()
}

/// The first two words of each line of `text` that has two (a name and its value), in
/// file order.
fn name_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|line| {
        let mut it = line.split_whitespace();
        Some((it.next()?, it.next()?))
    })
}

/// The counters of /proc/stat after its CPU lines (`ctxt`, `processes`, `procs_running`,
/// `procs_blocked`, and the totals that open `intr` and `softirq`); `None` when none of them
/// is there. A value that is not a number is 0.
pub fn parse_stat_counters(stat: &[u8]) -> Option<StatCounters> {
    let stat = String::from_utf8_lossy(stat);
    let mut c = StatCounters::default();
    let mut any = false;
    for (k, v) in name_values(&stat) {
        let slot = match k {
            "ctxt" => &mut c.context_switches,
            "processes" => &mut c.forks,
            "procs_running" => &mut c.procs_running,
            "procs_blocked" => &mut c.procs_blocked,
            "intr" => &mut c.interrupts,
            "softirq" => &mut c.softirqs,
            _ => continue,
        };
        *slot = v.parse().unwrap_or(0);
        any = true;
    }
    any.then_some(c)
}

/// Every `name value` line of /proc/vmstat, in file order; lines that are not a name and a
/// number are skipped.
pub fn parse_vmstat(text: &[u8]) -> Vec<(String, u64)> {
    name_values(&String::from_utf8_lossy(text))
        .filter_map(|(name, v)| Some((name.to_string(), v.parse().ok()?)))
        .collect()
}

/// A /proc/pressure/RESOURCE file (Documentation/accounting/psi.rst):
/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and, for memory and io (and cpu since
/// Linux 5.13, where it is always zero outside cgroups), a `full` line.
pub fn parse_pressure(resource: &str, text: &[u8]) -> Pressure {
    let mut p = Pressure {
        resource: resource.to_string(),
        ..Pressure::default()
    };
    for line in String::from_utf8_lossy(text).lines() {
        let mut it = line.split_whitespace();
        let which = it.next();
        let mut pl = PressureLine::default();
        for kv in it {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            match k {
                "avg10" => pl.avg_pct[0] = v.parse().unwrap_or(0.0),
                "avg60" => pl.avg_pct[1] = v.parse().unwrap_or(0.0),
                "avg300" => pl.avg_pct[2] = v.parse().unwrap_or(0.0),
                "total" => pl.total_us = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        match which {
            Some("some") => p.some = Some(pl),
            Some("full") => p.full = Some(pl),
            _ => {}
        }
    }
    p
}

/// Every field of one CPU line of /proc/stat (`cpu` or `cpuN`), in clock ticks, and how many
/// fields the kernel printed: 7 before Linux 2.6.11, `steal` since, `guest` since 2.6.24,
/// `guest_nice` since 3.2 (psutil's `scputimes` has as many fields as the aggregate line).
/// `guest` and `guest_nice` are also counted in `user` and `nice` (kernel/sched/cputime.c,
/// `account_guest_time`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuLine {
    /// The first eight fields (user .. steal).
    pub ticks: CpuTicks,
    /// Running a guest's virtual CPU (9th field).
    pub guest: u64,
    /// Running a niced guest's virtual CPU (10th field).
    pub guest_nice: u64,
    /// How many numeric fields followed the name (at most 10 are kept).
    pub fields: usize,
}

impl CpuLine {
    /// The ten fields in /proc/stat's order (user, nice, system, idle, iowait, irq, softirq,
    /// steal, guest, guest_nice).
    pub fn values(&self) -> [u64; 10] {
        let t = &self.ticks;
        [
            t.user,
            t.nice,
            t.system,
            t.idle,
            t.iowait,
            t.irq,
            t.softirq,
            t.steal,
            self.guest,
            self.guest_nice,
        ]
    }
}

/// The aggregate `cpu ` line of /proc/stat with all its fields; `None` when there is none.
/// Fields are counted up to the first one that is not a number (psutil would fail on it;
/// here the line is cut there and the rest are 0).
pub fn parse_cpu_line_full(stat: &[u8]) -> Option<CpuLine> {
    let stat = String::from_utf8_lossy(stat);
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    Some(cpu_line(line))
}

/// The `cpuN` lines of /proc/stat with all their fields, in file order (online CPUs only).
pub fn parse_cpu_lines_full(stat: &[u8]) -> Vec<CpuLine> {
    String::from_utf8_lossy(stat)
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(cpu_line)
        .collect()
}

fn cpu_line(line: &str) -> CpuLine {
    let mut v = [0u64; 10];
    let mut fields = 0;
    for (slot, x) in v.iter_mut().zip(line.split_whitespace().skip(1)) {
        let Ok(x) = x.parse() else { break };
        *slot = x;
        fields += 1;
    }
    CpuLine {
        ticks: CpuTicks {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
        },
        guest: v[8],
        guest_nice: v[9],
        fields,
    }
}

/// The /proc/meminfo fields psutil's `virtual_memory()` and `swap_memory()` read, KiB
/// (`None`: the line is not there or its value is not a number). Which of them exist
/// depends on the kernel: `MemAvailable` since 3.14, `Shmem` since 2.6.32 (`MemShared` on
/// 2.4), `Active(file)`/`Inactive(file)` since 2.6.28, `SReclaimable` since 2.6.19;
/// `Inact_dirty`/`Inact_clean`/`Inact_laundry` are 2.4's split of `Inactive`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total_kib: Option<u64>,
    /// `MemFree`.
    pub free_kib: Option<u64>,
    /// `MemAvailable`.
    pub available_kib: Option<u64>,
    /// `Buffers`.
    pub buffers_kib: Option<u64>,
    /// `Cached`.
    pub cached_kib: Option<u64>,
    /// `SReclaimable`.
    pub slab_reclaimable_kib: Option<u64>,
    /// `Slab`.
    pub slab_kib: Option<u64>,
    /// `Shmem`.
    pub shmem_kib: Option<u64>,
    /// `MemShared` (Linux 2.4).
    pub mem_shared_kib: Option<u64>,
    /// `Active`.
    pub active_kib: Option<u64>,
    /// `Inactive`.
    pub inactive_kib: Option<u64>,
    /// `Inact_dirty` (Linux 2.4).
    pub inact_dirty_kib: Option<u64>,
    /// `Inact_clean` (Linux 2.4).
    pub inact_clean_kib: Option<u64>,
    /// `Inact_laundry` (Linux 2.4).
    pub inact_laundry_kib: Option<u64>,
    /// `Active(file)`.
    pub active_file_kib: Option<u64>,
    /// `Inactive(file)`.
    pub inactive_file_kib: Option<u64>,
    /// `SwapTotal`.
    pub swap_total_kib: Option<u64>,
    /// `SwapFree`.
    pub swap_free_kib: Option<u64>,
}

/// Parses the fields of /proc/meminfo that [`MemInfo`] keeps. A line whose value is not a
/// number leaves its field `None`; a name given twice keeps the last value (as a dict of the
/// lines would).
pub fn parse_meminfo_fields(text: &[u8]) -> MemInfo {
    let text = String::from_utf8_lossy(text);
    let mut m = MemInfo::default();
    for (k, v) in name_values(&text) {
        let slot = match k {
            "MemTotal:" => &mut m.total_kib,
            "MemFree:" => &mut m.free_kib,
            "MemAvailable:" => &mut m.available_kib,
            "Buffers:" => &mut m.buffers_kib,
            "Cached:" => &mut m.cached_kib,
            "SReclaimable:" => &mut m.slab_reclaimable_kib,
            "Slab:" => &mut m.slab_kib,
            "Shmem:" => &mut m.shmem_kib,
            "MemShared:" => &mut m.mem_shared_kib,
            "Active:" => &mut m.active_kib,
            "Inactive:" => &mut m.inactive_kib,
            "Inact_dirty:" => &mut m.inact_dirty_kib,
            "Inact_clean:" => &mut m.inact_clean_kib,
            "Inact_laundry:" => &mut m.inact_laundry_kib,
            "Active(file):" => &mut m.active_file_kib,
            "Inactive(file):" => &mut m.inactive_file_kib,
            "SwapTotal:" => &mut m.swap_total_kib,
            "SwapFree:" => &mut m.swap_free_kib,
            _ => continue,
        };
        *slot = v.parse().ok();
    }
    m
}

/// The sum of every zone's `low` watermark in /proc/zoneinfo, pages (what the kernel's
/// `si_mem_available()` keeps back, and what psutil's estimate of available memory on
/// kernels without `MemAvailable` subtracts): every line that starts with `low` once its
/// indentation is trimmed, second field. 0 when there is no such line; a value that is not
/// a number counts as 0; the sum saturates.
pub fn parse_zoneinfo_low_pages(text: &[u8]) -> u64 {
    String::from_utf8_lossy(text)
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("low"))
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .fold(0u64, u64::saturating_add)
}

/// Physical cores from /proc/cpuinfo, as psutil counts them when sysfs has no topology:
/// each block (blocks end at an empty line) that has both `physical id` and `cpu cores`
/// gives its package's core count, and the counts of distinct packages are summed. `None`
/// when no block says (e.g. arm64, whose cpuinfo has neither).
pub fn parse_cpuinfo_cores(text: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(text);
    let mut packages: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let (mut package, mut cores) = (None, None);
    for line in text.lines() {
        let line = line.trim().to_ascii_lowercase();
        if line.is_empty() {
            if let (Some(p), Some(c)) = (package, cores) {
                packages.insert(p, c);
            }
            (package, cores) = (None, None);
            continue;
        }
        let slot = if line.starts_with("physical id") {
            &mut package
        } else if line.starts_with("cpu cores") {
            &mut cores
        } else {
            continue;
        };
        if let Some((_, v)) = line.split_once("\t:") {
            if let Ok(v) = v.trim().parse() {
                *slot = Some(v);
            }
        }
    }
    let sum = packages.values().fold(0u64, |a, &c| a.saturating_add(c));
    (sum > 0).then_some(sum)
}

/// How many CPUs a sysfs CPU list names (`0-3,8-11`, `/sys/devices/system/cpu/online`):
/// what glibc's `get_nprocs()` (`sysconf(_SC_NPROCESSORS_ONLN)`) counts. `None` when the
/// text is not such a list; a range is at most 2^22 CPUs (the kernel's `NR_CPUS` limit).
pub fn parse_cpu_list_count(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    if text.is_empty() {
        return Some(0);
    }
    let mut n = 0u64;
    for part in text.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?),
            None => {
                let a = part.parse::<u64>().ok()?;
                (a, a)
            }
        };
        if b < a || b - a >= 1 << 22 {
            return None;
        }
        n = n.saturating_add(b - a + 1);
    }
    Some(n)
}

/// Parses /proc/meminfo as procps does (buff/cache = Buffers + Cached + SReclaimable,
/// saturating). Lines it does not know are ignored; a value that is not a number is 0.
pub fn parse_meminfo(text: &[u8]) -> Memory {
    let text = String::from_utf8_lossy(text);
    let mut m = Memory::default();
    for (k, v) in name_values(&text) {
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "MemTotal:" => m.total_kib = v,
            "MemFree:" => m.free_kib = v,
            "MemAvailable:" => m.available_kib = v,
            "Buffers:" | "Cached:" | "SReclaimable:" => {
                m.buff_cache_kib = m.buff_cache_kib.saturating_add(v)
            }
            "SwapTotal:" => m.swap_total_kib = v,
            "SwapFree:" => m.swap_free_kib = v,
            _ => {}
        }
    }
    m
}

/// Whether `MemTotal` is in a /proc/meminfo text at all (a `Memory` of zeros cannot tell).
pub fn meminfo_has_total(text: &[u8]) -> bool {
    String::from_utf8_lossy(text).lines().any(|l| {
        l.starts_with("MemTotal:")
            && l.split_whitespace()
                .nth(1)
                .is_some_and(|v| v.parse::<u64>().is_ok())
    })
}

/// Parses /proc/loadavg (`0.52 0.33 0.20 3/210 12345`): the three averages (0 where not a
/// number) and the task count after the `/` of the 4th field.
pub fn parse_loadavg(text: &[u8]) -> LoadAverages {
    let text = String::from_utf8_lossy(text);
    let mut avg = [0.0; 3];
    for (slot, v) in avg.iter_mut().zip(text.split_whitespace()) {
        *slot = v.parse().unwrap_or(0.0);
    }
    let tasks = text
        .split_whitespace()
        .nth(3)
        .and_then(|f| f.split('/').nth(1))
        .and_then(|t| t.parse().ok());
    LoadAverages { avg, tasks }
}

/// The first number of /proc/uptime: seconds since boot (with hundredths).
pub fn parse_uptime(text: &[u8]) -> Option<f64> {
    String::from_utf8_lossy(text)
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The boot-time clock's offset of a time namespace, ns, from `/proc/PID/timens_offsets`
/// (Linux 5.6: `<clock> <seconds> <nanoseconds>` per line, the clock named `boottime` since
/// 5.7, its id `7` before), added by the kernel to everything it shows that namespace of that
/// clock; `None` when the text has no such line or a field is not a number.
pub fn parse_boottime_offset_ns(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    text.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        if !matches!(f.next()?, "boottime" | "7") {
            return None;
        }
        let secs: i64 = f.next()?.parse().ok()?;
        let nanos: i64 = f.next()?.parse().ok()?;
        secs.checked_mul(1_000_000_000)?.checked_add(nanos)
    })
}

/// The width of `kernel.pid_max` (`/proc/sys/kernel/pid_max`) as printed: procps sizes pid
/// columns with it (`procps_pid_length()`). `None` when the file is empty.
pub fn parse_pid_max_width(text: &[u8]) -> Option<usize> {
    let n = String::from_utf8_lossy(text).trim().len();
    (n > 0).then_some(n)
}

/// A sysctl's value (`/proc/sys/...`), trimmed, lossy UTF-8.
pub fn parse_sysctl(text: &[u8]) -> String {
    String::from_utf8_lossy(text).trim().to_string()
}

/// An identity sysctl (`kernel/hostname`, `kernel/random/boot_id`) as the bytes the kernel
/// holds: the text without the one newline the kernel appends (`proc_dostring()` prints the
/// string, then `\n`), cut to `max_bytes`; `None` when empty. The kernel prints the host name
/// as it was set (`sethostname(2)` takes any bytes; the file ends at a NUL), so a newline
/// inside it, or a last one of its own, is part of it: nothing else is trimmed or decoded.
pub fn parse_identity_line(text: &[u8], max_bytes: usize) -> Option<Vec<u8>> {
    let value = text.strip_suffix(b"\n").unwrap_or(text);
    let value = &value[..value.len().min(max_bytes)];
    (!value.is_empty()).then(|| value.to_vec())
}

/// Whether a boolean sysctl (`kernel.task_delayacct`...) reads exactly `1` (trimmed).
pub fn parse_sysctl_on(text: &[u8]) -> bool {
    std::str::from_utf8(text).is_ok_and(|s| s.trim() == "1")
}

/// The `hidepid=` option of the procfs mounted at `mount_point`, from a `/proc/self/mounts`
/// text (`proc /proc proc rw,nosuid,nodev,noexec,relatime,hidepid=invisible 0 0`); `None`
/// when that mount has none.
pub fn parse_hidepid(mounts: &[u8], mount_point: &str) -> Option<String> {
    let mounts = String::from_utf8_lossy(mounts);
    let opts: Vec<&str> = mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(mount_point))
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    opts.iter()
        .flat_map(|o| o.split(','))
        .find(|o| o.starts_with("hidepid="))
        .map(str::to_string)
}

/// One line of /proc/tty/drivers: a driver's device name and its minor range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtyDriver {
    /// The name under /dev (`pts`, `ttyS`), at most 15 characters; a trailing `%d` (devfs
    /// style) removed.
    pub name: String,
    /// The name ended in `%d`.
    pub devfs: bool,
    /// Major device number.
    pub major: u32,
    /// First minor.
    pub minor_first: u32,
    /// Last minor (the first when no range is given).
    pub minor_last: u32,
}

/// Parses /proc/tty/drivers as procps does (`dev_to_tty`'s driver table): only its first 9,999
/// bytes, scanning for " /dev/" (the second column); lines without a minor are skipped. The
/// result is in procps's lookup order: later lines first, since procps prepends each line to
/// its list.
pub fn parse_tty_drivers(text: &[u8]) -> Vec<TtyDriver> {
    let text = &text[..text.len().min(9999)];
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::new();
    // Like procps, scan for " /dev/" (the second column); later lines win, since
    // procps prepends each line to its list.
    let mut rest: &str = &text;
    while let Some(at) = rest.find(" /dev/") {
        rest = &rest[at + 6..];
        let Some(end) = rest.find(' ') else { break };
        let mut name = &rest[..end];
        let mut devfs = false;
        if name.len() >= 3 && name.ends_with("%d") {
            name = &name[..name.len() - 2];
            devfs = true;
        }
        let name: String = name.chars().take(15).collect();
        let after = rest[end..].trim_start_matches(' ');
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let major: u32 = after[..digits].parse().unwrap_or(0);
        let after = after[digits..].trim_start_matches(' ');
        let range: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        let mut parts = range.splitn(2, '-');
        let first = parts.next().and_then(|s| s.parse::<u32>().ok());
        let last = parts.next().and_then(|s| s.parse::<u32>().ok());
        rest = &rest[end..];
        let Some(first) = first else { continue };
        out.push(TtyDriver {
            name,
            devfs,
            major,
            minor_first: first,
            minor_last: last.unwrap_or(first),
        });
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn boottime_offsets_read_as_the_kernel_prints_them() {
        use super::parse_boottime_offset_ns as p;
        // Linux 6.18, `unshare --time --boottime 864000 --monotonic 432000`.
        let t = b"monotonic      432000         0\nboottime       864000         0\n";
        assert_eq!(p(t), Some(864_000_000_000_000));
        assert_eq!(
            p(b"monotonic 0 0\nboottime -600 500\n"),
            Some(-599_999_999_500)
        );
        // Linux 5.6 names clocks by id (CLOCK_BOOTTIME is 7).
        assert_eq!(p(b"1 5 0\n7 12 3\n"), Some(12_000_000_003));
        assert_eq!(p(b"monotonic 1 0\n"), None);
        assert_eq!(p(b"boottime x 0\n"), None);
        assert_eq!(p(b"boottime 9223372036854775807 0\n"), None);
        assert_eq!(p(b"\xff"), None);
    }

    #[test]
    fn identity_lines_are_bytes_cut_to_their_bound() {
        use super::parse_identity_line as p;
        assert_eq!(p(b"build-07\n", 64), Some(b"build-07".to_vec()));
        assert_eq!(
            p(b"0f2c5a1e-2d0e-4c4e-9a53-6f1b0c7c2a11\n", 64),
            Some(b"0f2c5a1e-2d0e-4c4e-9a53-6f1b0c7c2a11".to_vec())
        );
        assert_eq!(p(b"a b\xff/..\n", 64), Some(b"a b\xff/..".to_vec()));
        // A newline is a byte of a host name like any other: only the kernel's
        // own last one goes, so a name ending in one keeps it.
        assert_eq!(p(b"a\nb\n", 64), Some(b"a\nb".to_vec()));
        assert_eq!(p(b"a\n\n", 64), Some(b"a\n".to_vec()));
        assert_eq!(p(b"\n\n", 64), Some(b"\n".to_vec()));
        assert_eq!(p(b"no newline", 64), Some(b"no newline".to_vec()));
        assert_eq!(p(&[b'x'; 100], 64), Some(vec![b'x'; 64]));
        assert_eq!(p(b"\n", 64), None);
        assert_eq!(p(b"", 64), None);
    }

    use super::*;

    #[test]
    fn parses_cpus_counters_vmstat_and_pressure() {
        // Lines from Linux 6.18 (intr and softirq cut short).
        let stat = b"cpu  4705 356 584 3699 23 0 44 0 0 0\ncpu0 2352 178 292 1849 11 0 22 0 0 0\n\
            cpu1 2353 178 292 1850 12 0 22 0 0 0\nintr 17632335 0 0 0\nctxt 31424001\n\
            btime 1763888000\nprocesses 4381398\nprocs_running 1\nprocs_blocked 0\n\
            softirq 10304464 0 1434353 4\n";
        let cpus = parse_cpu_lines(stat);
        assert_eq!(cpus.len(), 2);
        assert_eq!((cpus[0].user, cpus[1].iowait), (2352, 12));
        let c = parse_stat_counters(stat).expect("counters");
        assert_eq!(
            (
                c.context_switches,
                c.forks,
                c.procs_running,
                c.interrupts,
                c.softirqs
            ),
            (31_424_001, 4_381_398, 1, 17_632_335, 10_304_464)
        );
        assert_eq!(parse_stat_counters(b"cpu 1 2 3\n"), None);
        let vm = parse_vmstat(b"nr_free_pages 300210\nbogus\nnr_zone_inactive_anon x\npgfault 9\n");
        assert_eq!(
            vm,
            vec![("nr_free_pages".into(), 300_210), ("pgfault".into(), 9)]
        );
        let p = parse_pressure(
            "cpu",
            b"some avg10=1.07 avg60=5.03 avg300=7.39 total=6370629713\n\
              full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        );
        let some = p.some.expect("some");
        assert_eq!((some.avg_pct[0], some.total_us), (1.07, 6_370_629_713));
        assert_eq!(p.full.map(|f| f.total_us), Some(0));
        assert_eq!(parse_pressure("io", b"\xff garbage=\n").some, None);
    }

    #[test]
    fn parses_real_proc_stat_meminfo_loadavg_uptime() {
        let stat = b"cpu  4705 356 584 3699 23 0 44 0 0 0\ncpu0 2352 178 292 1849 11 0 22 0 0 0\n";
        let c = parse_cpu_line(stat).expect("cpu line");
        assert_eq!(
            (c.user, c.nice, c.system, c.idle, c.softirq),
            (4705, 356, 584, 3699, 44)
        );
        let meminfo = b"MemTotal:       24684148 kB\nMemFree:        13849736 kB\n\
             MemAvailable:   23737268 kB\nBuffers:          123456 kB\n\
             Cached:          9876543 kB\nSReclaimable:     100000 kB\n\
             SwapTotal:             0 kB\nSwapFree:              0 kB\n";
        let m = parse_meminfo(meminfo);
        assert_eq!(m.total_kib, 24_684_148);
        assert_eq!(m.buff_cache_kib, 123_456 + 9_876_543 + 100_000);
        assert_eq!(m.available_kib, 23_737_268);
        assert!(meminfo_has_total(meminfo));
        assert!(!meminfo_has_total(b"MemFree: 1 kB\n"));
        let la = parse_loadavg(b"0.52 0.33 0.20 3/210 12345\n");
        assert_eq!(la.avg, [0.52, 0.33, 0.20]);
        assert_eq!(la.tasks, Some(210));
        assert_eq!(parse_loadavg(b"x").tasks, None);
        assert_eq!(parse_uptime(b"1234.56 2345.67\n"), Some(1234.56));
        assert_eq!(parse_uptime(b""), None);
        assert_eq!(parse_pid_max_width(b"4194304\n"), Some(7));
        assert_eq!(parse_pid_max_width(b"\n"), None);
        assert_eq!(parse_sysctl(b"2\n"), "2");
        assert!(parse_sysctl_on(b"1\n"));
        assert!(!parse_sysctl_on(b"0\n"));
        let mounts = b"sysfs /sys sysfs rw,nosuid 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime,hidepid=invisible 0 0\n";
        assert_eq!(
            parse_hidepid(mounts, "/proc").as_deref(),
            Some("hidepid=invisible")
        );
        assert_eq!(
            parse_hidepid(b"proc /proc proc rw,relatime 0 0\n", "/proc"),
            None
        );
    }

    #[test]
    fn parses_psutils_cpu_lines_meminfo_zoneinfo_cpuinfo_and_cpu_lists() {
        // Lines from this machine's Linux 6.18 (intr and softirq cut short).
        let stat = b"cpu  4991571 352086 1964720 3169725 42778 0 8778 8069 0 0\n\
            cpu0 2456089 173162 968894 1652574 11664 0 2068 3941 0 0\n\
            cpu1 2535481 178924 995825 1517150 31114 0 6709 4127 7 9\n\
            intr 168436227 0 0\nctxt 562172362\nbtime 1795746189\n";
        let all = parse_cpu_line_full(stat).expect("cpu line");
        assert_eq!(all.fields, 10);
        assert_eq!(
            all.values(),
            [4991571, 352086, 1964720, 3169725, 42778, 0, 8778, 8069, 0, 0]
        );
        let per = parse_cpu_lines_full(stat);
        assert_eq!(per.len(), 2);
        assert_eq!((per[1].guest, per[1].guest_nice), (7, 9));
        // A 2.6.9 kernel printed 7 fields; a field that is not a number ends the line.
        let old = parse_cpu_line_full(b"cpu  10 20 30 40 50 60 70\n").expect("old");
        assert_eq!((old.fields, old.ticks.softirq, old.guest), (7, 70, 0));
        let bad = parse_cpu_line_full(b"cpu  1 2 x 4\n").expect("bad");
        assert_eq!((bad.fields, bad.ticks.nice, bad.ticks.idle), (2, 2, 0));
        assert_eq!(parse_cpu_line_full(b"intr 1\n"), None);

        let meminfo = b"MemTotal:       24684084 kB\nMemFree:        19313960 kB\n\
            MemAvailable:   23356116 kB\nBuffers:          107760 kB\n\
            Cached:          3940500 kB\nSwapCached:            0 kB\n\
            Active:          1923852 kB\nInactive:        2785672 kB\n\
            Active(anon):       1580 kB\nInactive(anon):   668604 kB\n\
            Active(file):    1922272 kB\nInactive(file):  2117068 kB\n\
            SwapTotal:             0 kB\nSwapFree:              0 kB\n\
            Shmem:              8872 kB\nSlab:             498032 kB\n\
            SReclaimable:     404096 kB\nHugePages_Total:       0\n";
        let m = parse_meminfo_fields(meminfo);
        assert_eq!(m.total_kib, Some(24_684_084));
        assert_eq!(m.available_kib, Some(23_356_116));
        assert_eq!(
            (m.active_kib, m.inactive_kib),
            (Some(1_923_852), Some(2_785_672))
        );
        assert_eq!(
            (m.active_file_kib, m.inactive_file_kib),
            (Some(1_922_272), Some(2_117_068))
        );
        assert_eq!((m.shmem_kib, m.slab_kib), (Some(8872), Some(498_032)));
        assert_eq!(m.slab_reclaimable_kib, Some(404_096));
        assert_eq!((m.swap_total_kib, m.swap_free_kib), (Some(0), Some(0)));
        assert_eq!((m.mem_shared_kib, m.inact_dirty_kib), (None, None));
        // A 2.4 kernel's split of Inactive; a value that is not a number is not there.
        let m = parse_meminfo_fields(
            b"MemTotal: 1000 kB\nMemShared: 5 kB\nInact_dirty: 1 kB\nInact_clean: 2 kB\n\
              Inact_laundry: 3 kB\nMemFree: x kB\n",
        );
        assert_eq!(
            (
                m.mem_shared_kib,
                m.inact_dirty_kib,
                m.inact_clean_kib,
                m.inact_laundry_kib
            ),
            (Some(5), Some(1), Some(2), Some(3))
        );
        assert_eq!((m.free_kib, m.inactive_kib), (None, None));

        let zoneinfo = b"Node 0, zone      DMA\n  per-node stats\n      nr_inactive_anon 167151\n\
            pages free     3840\n        boost    0\n        min      10\n        low      13\n\
            high     16\nNode 0, zone    DMA32\n  pages free     200000\n        min      2000\n\
            low      2888\nNode 0, zone   Normal\n        low      20163\n\
            Node 0, zone  Movable\n        low      32\nNode 0, zone   Device\n        low      0\n";
        assert_eq!(parse_zoneinfo_low_pages(zoneinfo), 13 + 2888 + 20163 + 32);
        assert_eq!(parse_zoneinfo_low_pages(b"Node 0, zone DMA\n  min 1\n"), 0);
        assert_eq!(parse_zoneinfo_low_pages(b"  low x\n  low 5\n"), 5);

        let cpuinfo = b"processor\t: 0\nvendor_id\t: GenuineIntel\nphysical id\t: 0\n\
            siblings\t: 2\ncore id\t\t: 0\ncpu cores\t: 2\n\nprocessor\t: 1\n\
            physical id\t: 0\ncpu cores\t: 2\n\nprocessor\t: 2\nphysical id\t: 1\n\
            cpu cores\t: 4\n\n";
        assert_eq!(parse_cpuinfo_cores(cpuinfo), Some(6));
        // arm64: neither line; a block not closed by an empty line does not count.
        assert_eq!(
            parse_cpuinfo_cores(b"processor\t: 0\nBogoMIPS\t: 50.00\n\n"),
            None
        );
        assert_eq!(
            parse_cpuinfo_cores(b"physical id\t: 0\ncpu cores\t: 2\n"),
            None
        );

        assert_eq!(parse_cpu_list_count(b"0-1\n"), Some(2));
        assert_eq!(parse_cpu_list_count(b"0-3,8,10-11\n"), Some(7));
        assert_eq!(parse_cpu_list_count(b"\n"), Some(0));
        assert_eq!(parse_cpu_list_count(b"3-1\n"), None);
        assert_eq!(parse_cpu_list_count(b"0-99999999\n"), None);
        assert_eq!(parse_cpu_list_count(b"a\n"), None);
    }
}
