//! Text of a `top` frame, shared by the batch output and the terminal UI: the header lines in
//! procps top's wording and widths, and the figures of its columns as top writes them (memory
//! scaled, TIME+, percentages); the columns themselves are `columns.rs`'.

use std::fmt::Write as _;

use super::system::System;
use super::view::StateCounts;

/// What the header says about tasksnap itself.
#[derive(Debug, Clone, Default)]
pub struct OwnCost {
    /// tasksnap's CPU use over the last interval, percent of one CPU.
    pub cpu_pct: f64,
    /// Time to collect and compute the last refresh, ms.
    pub refresh_ms: f64,
    /// The backend and how it got ready.
    pub backend: String,
}

fn uptime_text(s: f64) -> String {
    let s = s as u64;
    let (days, hours, mins) = (s / 86_400, (s / 3600) % 24, (s / 60) % 60);
    let mut out = String::new();
    if days > 0 {
        out += &format!("{days} day{}, ", if days == 1 { "" } else { "s" });
    }
    if hours > 0 {
        out += &format!("{hours:2}:{mins:02}");
    } else {
        out += &format!("{mins} min");
    }
    out
}

/// The header lines (without a trailing newline each).
pub fn header(
    sys: &System,
    counts: &StateCounts,
    threads: bool,
    own: &OwnCost,
    clock: &str,
) -> Vec<String> {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let m = &sys.mem;
    let c = &sys.cpu_pct;
    vec![
        format!(
            "top - {clock} up {}, {:2} user{},  load average: {:.2}, {:.2}, {:.2}",
            uptime_text(sys.uptime_s),
            sys.users,
            if sys.users > 1 { "s" } else { "" },
            sys.loadavg[0],
            sys.loadavg[1],
            sys.loadavg[2]
        ),
        format!(
            "{}: {:3} total, {:3} running, {:3} sleeping, {:3} stopped, {:3} zombie",
            if threads { "Threads" } else { "Tasks" },
            counts.total,
            counts.running,
            counts.sleeping,
            counts.stopped,
            counts.zombie
        ),
        format!(
            "%Cpu(s):{:5.1} us,{:5.1} sy,{:5.1} ni,{:5.1} id,{:5.1} wa,{:5.1} hi,{:5.1} si,{:5.1} st",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        ),
        format!(
            "MiB Mem :{:9.1} total,{:9.1} free,{:9.1} used,{:9.1} buff/cache",
            mib(m.total_kib),
            mib(m.free_kib),
            mib(m.total_kib.saturating_sub(m.available_kib)),
            mib(m.buff_cache_kib)
        ),
        format!(
            "MiB Swap:{:9.1} total,{:9.1} free,{:9.1} used.{:9.1} avail Mem",
            mib(m.swap_total_kib),
            mib(m.swap_free_kib),
            mib(m.swap_total_kib.saturating_sub(m.swap_free_kib)),
            mib(m.available_kib)
        ),
        format!(
            "tasksnap: {:4.1}% CPU, {:.1} ms per refresh, {}",
            own.cpu_pct, own.refresh_ms, own.backend
        ),
    ]
}

/// Appends a KiB figure for `width` columns: the plain number when it fits, else the first
/// of MiB, GiB, TiB, PiB that fits with one decimal, as top scales memory.
pub fn write_kib(out: &mut String, kib: u64, width: usize) {
    let start = out.len();
    let fits = |out: &String| out.len() - start <= width;
    let _ = write!(out, "{kib}");
    if fits(out) {
        return;
    }
    let mut v = kib as f64;
    for unit in ['m', 'g', 't', 'p'] {
        v /= 1024.0;
        out.truncate(start);
        let _ = write!(out, "{v:.1}{unit}");
        if fits(out) {
            return;
        }
    }
    out.truncate(start);
    let _ = write!(out, "{v:.0}p");
    if !fits(out) {
        out.truncate(start);
        out.push('+');
    }
}

/// Appends TIME+ for 9 columns: minutes:seconds.hundredths, then coarser when it does not
/// fit.
pub fn write_time_plus(out: &mut String, ns: u64) {
    let start = out.len();
    let cs = ns / 10_000_000;
    let (mins, secs, hund) = (cs / 6000, (cs / 100) % 60, cs % 100);
    let _ = write!(out, "{mins}:{secs:02}.{hund:02}");
    if out.len() - start <= 9 {
        return;
    }
    out.truncate(start);
    let _ = write!(out, "{mins}:{secs:02}");
    if out.len() - start <= 9 {
        return;
    }
    out.truncate(start);
    let _ = write!(out, "{},{:02}", mins / 60, mins % 60);
}

/// Appends a %CPU-style figure (for 5 columns: one decimal below 1000).
pub fn write_pct(out: &mut String, v: f64) {
    if v >= 999.95 {
        let _ = write!(out, "{v:.0}");
    } else {
        let _ = write!(out, "{v:.1}");
    }
}

#[cfg(test)]
mod tests {
    use crate::top::render::*;

    fn scale_kib(kib: u64, width: usize) -> String {
        let mut s = String::new();
        write_kib(&mut s, kib, width);
        s
    }

    fn time_plus(ns: u64) -> String {
        let mut s = String::new();
        write_time_plus(&mut s, ns);
        s
    }

    #[test]
    fn numbers_scale_like_top() {
        assert_eq!(scale_kib(36300, 7), "36300");
        assert_eq!(scale_kib(12_345_678, 7), "11.8g");
        assert_eq!(scale_kib(123_456_789_012, 7), "115.0t");
        assert_eq!(scale_kib(1_234_567, 6), "1.2g");
        assert_eq!(time_plus(1_400_000_000), "0:01.40");
        assert_eq!(time_plus(361_940_000_000), "6:01.94");
        assert_eq!(time_plus(100_000 * 60 * 1_000_000_000), "100000:00");
        assert_eq!(uptime_text(2.0 * 3600.0 + 52.0 * 60.0), " 2:52");
        assert_eq!(uptime_text(86_400.0 + 300.0), "1 day, 5 min");
    }

    #[test]
    fn header_matches_procps_wording() {
        let h = header(
            &System::default(),
            &StateCounts {
                total: 84,
                running: 3,
                sleeping: 81,
                ..Default::default()
            },
            false,
            &OwnCost::default(),
            "07:10:28",
        );
        assert_eq!(
            h[1],
            "Tasks:  84 total,   3 running,  81 sleeping,   0 stopped,   0 zombie"
        );
        assert!(h[2].starts_with("%Cpu(s):  0.0 us,  0.0 sy,"), "{}", h[2]);
        assert!(h[0].starts_with("top - 07:10:28 up 0 min,  0 user,  load average: 0.00"));
    }
}
