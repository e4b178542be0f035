//! The machine-wide part of `top`'s header, read from a handful of /proc files per refresh:
//! uptime, logged-in users, load averages, CPU time split (deltas of /proc/stat's `cpu`
//! line), memory and swap (/proc/meminfo), and tasksnap's own CPU use (getrusage).

use std::path::Path;

/// /proc/stat's aggregate `cpu` line, in ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick counted, saturating: the file is input, not a promise of sane numbers.
    fn total(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .iter()
        .fold(0u64, |a, &v| a.saturating_add(v))
    }
}

/// Parses the `cpu ` line of /proc/stat.
pub fn parse_cpu_line(stat: &str) -> Option<CpuTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTicks {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
    })
}

/// Memory figures from /proc/meminfo, KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub total_kib: u64,
    pub free_kib: u64,
    pub available_kib: u64,
    pub buff_cache_kib: u64,
    pub swap_total_kib: u64,
    pub swap_free_kib: u64,
}

/// Parses /proc/meminfo as procps does (buff/cache = Buffers + Cached + SReclaimable).
pub fn parse_meminfo(text: &str) -> Memory {
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

/// Everything the header shows besides the task counts.
#[derive(Debug, Clone, Default)]
pub struct System {
    pub uptime_s: f64,
    pub users: usize,
    pub loadavg: [f64; 3],
    /// CPU split over the last interval, percent: us, sy, ni, id, wa, hi, si, st.
    pub cpu_pct: [f64; 8],
    pub mem: Memory,
}

/// Reads the header's sources and turns CPU ticks into a split against `prev`.
#[derive(Debug, Default)]
pub struct SystemReader {
    prev: Option<CpuTicks>,
}

impl SystemReader {
    pub fn read(&mut self, proc_root: &Path) -> System {
        let read = |f: &str| std::fs::read_to_string(proc_root.join(f)).unwrap_or_default();
        let uptime_s = read("uptime")
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let la = read("loadavg");
        let mut loadavg = [0.0; 3];
        for (slot, v) in loadavg.iter_mut().zip(la.split_whitespace()) {
            *slot = v.parse().unwrap_or(0.0);
        }
        let mut cpu_pct = [0.0; 8];
        if let Some(now) = parse_cpu_line(&read("stat")) {
            let before = self.prev.unwrap_or_default();
            let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
            let total = d(now.total(), before.total()).max(1.0);
            cpu_pct = [
                d(now.user, before.user),
                d(now.system, before.system),
                d(now.nice, before.nice),
                d(now.idle, before.idle),
                d(now.iowait, before.iowait),
                d(now.irq, before.irq),
                d(now.softirq, before.softirq),
                d(now.steal, before.steal),
            ]
            .map(|v| v * 100.0 / total);
            self.prev = Some(now);
        }
        System {
            uptime_s,
            users: logged_in_users(),
            loadavg,
            cpu_pct,
            mem: parse_meminfo(&read("meminfo")),
        }
    }
}

/// USER_PROCESS records in utmp, as procps counts "users".
fn logged_in_users() -> usize {
    // struct utmp is 384 bytes on Linux (x86_64 and aarch64 glibc); ut_type is its first i16.
    const UTMP_SIZE: usize = 384;
    const USER_PROCESS: i16 = 7;
    std::fs::read("/var/run/utmp")
        .map(|b| {
            b.chunks_exact(UTMP_SIZE)
                .filter(|r| i16::from_ne_bytes([r[0], r[1]]) == USER_PROCESS)
                .count()
        })
        .unwrap_or(0)
}

/// This process's CPU time so far (user + system), ns.
pub fn own_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

/// CLOCK_BOOTTIME now, ns: the clock snapshots are stamped with.
pub fn boottime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_proc_stat_and_meminfo_lines() {
        let stat = "cpu  4705 356 584 3699 23 0 44 0 0 0\ncpu0 2352 178 292 1849 11 0 22 0 0 0\n";
        let c = parse_cpu_line(stat).expect("cpu line");
        assert_eq!(
            (c.user, c.nice, c.system, c.idle, c.softirq),
            (4705, 356, 584, 3699, 44)
        );
        let m = parse_meminfo(
            "MemTotal:       24684148 kB\nMemFree:        13849736 kB\n\
             MemAvailable:   23737268 kB\nBuffers:          123456 kB\n\
             Cached:          9876543 kB\nSReclaimable:     100000 kB\n\
             SwapTotal:             0 kB\nSwapFree:              0 kB\n",
        );
        assert_eq!(m.total_kib, 24_684_148);
        assert_eq!(m.buff_cache_kib, 123_456 + 9_876_543 + 100_000);
        assert_eq!(m.available_kib, 23_737_268);
    }
}
