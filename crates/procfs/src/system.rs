//! Parsers of the machine-wide /proc files: `/proc/stat`'s `cpu` line, `/proc/meminfo`,
//! `/proc/loadavg`, `/proc/uptime` and `/proc/sys/kernel/pid_max`. (`btime` and `processes`
//! of `/proc/stat` are in [`crate::parse`] with the per-task files, which they date.) Pure
//! functions over bytes; lenient as procps is: a field that is not a number counts as 0,
//! never a panic, and sums saturate.

use tasksnap_model::{CpuTicks, LoadAverages, Memory};

/// Parses the aggregate `cpu ` line of /proc/stat (not `cpu0`...); `None` when there is none.
/// A field that is missing or not a number is 0.
pub fn parse_cpu_line(stat: &[u8]) -> Option<CpuTicks> {
    let stat = String::from_utf8_lossy(stat);
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
