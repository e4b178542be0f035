//! Parsers of the machine-wide /proc files: `/proc/stat`'s `cpu` line, `/proc/meminfo`,
//! `/proc/loadavg`, `/proc/uptime`, `/proc/sys/kernel/pid_max` and other sysctls, and the
//! procfs mount's `hidepid` option, and `/proc/tty/drivers`. (`btime` and `processes`
//! of `/proc/stat` are in [`crate::parse`] with the per-task files, which they date.) Pure
//! functions over bytes; lenient as procps is: a field that is not a number counts as 0,
//! never a panic, and sums saturate.

use tasksnap_model::{CpuTicks, LoadAverages, Memory, Pressure, PressureLine, StatCounters};

/// Parses the aggregate `cpu ` line of /proc/stat (not `cpu0`...); `None` when there is none.
/// A field that is missing or not a number is 0.
pub fn parse_cpu_line(stat: &[u8]) -> Option<CpuTicks> {
    let stat = String::from_utf8_lossy(stat);
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    Some(cpu_fields(line))
}

/// The `cpuN` lines of /proc/stat, in file order (the kernel lists online CPUs only, so N
/// may skip numbers). Fields as [`parse_cpu_line`].
pub fn parse_cpu_lines(stat: &[u8]) -> Vec<CpuTicks> {
    String::from_utf8_lossy(stat)
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(cpu_fields)
        .collect()
}

/// The counters of /proc/stat after its CPU lines (`ctxt`, `processes`, `procs_running`,
/// `procs_blocked`, and the totals that open `intr` and `softirq`); `None` when none of them
/// is there. A value that is not a number is 0.
pub fn parse_stat_counters(stat: &[u8]) -> Option<StatCounters> {
    let stat = String::from_utf8_lossy(stat);
    let mut c = StatCounters::default();
    let mut any = false;
    for line in stat.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
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
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((name.to_string(), v))
        })
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

fn cpu_fields(line: &str) -> CpuTicks {
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    CpuTicks {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
    }
}

/// Parses /proc/meminfo as procps does (buff/cache = Buffers + Cached + SReclaimable,
/// saturating). Lines it does not know are ignored; a value that is not a number is 0.
pub fn parse_meminfo(text: &[u8]) -> Memory {
    let text = String::from_utf8_lossy(text);
    let mut m = Memory::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
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

/// A one-line identity sysctl (`kernel/hostname`, `kernel/random/boot_id`) as the bytes
/// the kernel holds: the first line without its newline, cut to `max_bytes`; `None` when
/// empty. The kernel prints the host name as it was set (`sethostname(2)` takes any bytes but
/// NUL), so nothing is trimmed or decoded.
pub fn parse_identity_line(text: &[u8], max_bytes: usize) -> Option<Vec<u8>> {
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = &line[..line.len().min(max_bytes)];
    (!line.is_empty()).then(|| line.to_vec())
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
    fn identity_lines_are_bytes_cut_to_their_bound() {
        use super::parse_identity_line as p;
        assert_eq!(p(b"build-07\n", 64), Some(b"build-07".to_vec()));
        assert_eq!(
            p(b"0f2c5a1e-2d0e-4c4e-9a53-6f1b0c7c2a11\n", 64),
            Some(b"0f2c5a1e-2d0e-4c4e-9a53-6f1b0c7c2a11".to_vec())
        );
        assert_eq!(p(b"a b\xff/..\nsecond\n", 64), Some(b"a b\xff/..".to_vec()));
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
}
