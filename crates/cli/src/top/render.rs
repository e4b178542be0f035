//! Text of a `top` frame, shared by the batch output and the terminal UI: the header lines in
//! procps top's wording and widths, the column header and one line per task (procps top's
//! columns, RUNQ% added before TIME+), number scaling as top does it.

use super::system::System;
use super::view::{Line, StateCounts};

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

/// The column header for a pid column of `pid_width` (`wait`: the COMMAND column carries
/// the wait reason too; `cgroup`: a CGROUP column before it; `exited`: an EXIT column
/// before those, [`super::exited::exit_text`]).
pub fn column_header(pid_width: usize, wait: bool, cgroup: bool, exited: bool) -> String {
    format!(
        "{:>pid_width$} USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM RUNQ% DISK%     TIME+ {}{}{}",
        "PID",
        if exited {
            format!("{:>w$} ", "EXIT", w = super::exited::EXIT_WIDTH)
        } else {
            String::new()
        },
        if cgroup {
            format!("{:<CGROUP_WIDTH$} ", "CGROUP")
        } else {
            String::new()
        },
        if wait { "COMMAND: WAIT" } else { "COMMAND" }
    )
}

/// Width of the CGROUP column (`g`): longer memberships are cut, as ps cuts a cgroup column
/// that is not the last.
pub const CGROUP_WIDTH: usize = 27;

/// A KiB figure in `width` columns: the plain number when it fits, else the first of
/// MiB, GiB, TiB, PiB that fits with one decimal, as top scales memory.
pub fn scale_kib(kib: u64, width: usize) -> String {
    let s = kib.to_string();
    if s.len() <= width {
        return s;
    }
    let mut v = kib as f64;
    for unit in ['m', 'g', 't', 'p'] {
        v /= 1024.0;
        let s = format!("{v:.1}{unit}");
        if s.len() <= width {
            return s;
        }
    }
    let s = format!("{v:.0}p");
    if s.len() <= width {
        s
    } else {
        "+".into()
    }
}

/// TIME+ in 9 columns: minutes:seconds.hundredths, then coarser when it does not fit.
pub fn time_plus(ns: u64) -> String {
    let cs = ns / 10_000_000;
    let (mins, secs, hund) = (cs / 6000, (cs / 100) % 60, cs % 100);
    let s = format!("{mins}:{secs:02}.{hund:02}");
    if s.len() <= 9 {
        return s;
    }
    let s = format!("{mins}:{secs:02}");
    if s.len() <= 9 {
        return s;
    }
    format!("{},{:02}", mins / 60, mins % 60)
}

/// A %CPU-style figure in 5 columns.
fn pct(v: f64) -> String {
    if v >= 999.95 {
        format!("{v:5.0}")
    } else {
        format!("{v:5.1}")
    }
}

/// One task line. `user` is its user name, `command` what the COMMAND column shows (comm or
/// the command line), `tree` whether to draw the forest prefix. A process that exited
/// (`l.exit`) has no priority, nice or memory any more: `-` there.
pub fn line(l: &Line, pid_width: usize, user: &str, command: &str, tree: bool) -> String {
    let gone = l.exit.is_some();
    let or_gone = |s: String| if gone { "-".to_string() } else { s };
    let pr = if l.priority < -99 {
        "rt".to_string()
    } else {
        l.priority.to_string()
    };
    let mut user = user.to_string();
    if user.chars().count() > 8 {
        user = user.chars().take(7).collect::<String>() + "+";
    }
    let prefix = if tree && l.depth > 0 {
        format!("{}`- ", " ".repeat(4 * (l.depth - 1) + 1))
    } else {
        String::new()
    };
    format!(
        "{:>pid_width$} {:<8} {:>3} {:>3} {:>7} {:>6} {:>6} {} {} {} {} {} {:>9} {prefix}{command}",
        l.id.tid,
        user,
        or_gone(pr),
        or_gone(l.nice.to_string()),
        or_gone(scale_kib(l.virt_kib, 7)),
        or_gone(scale_kib(l.res_kib, 6)),
        l.shr_kib.map_or("-".to_string(), |v| scale_kib(v, 6)),
        l.state as char,
        pct(l.cpu_pct),
        if gone {
            "    -".to_string()
        } else {
            pct(l.mem_pct)
        },
        l.runq_pct.map_or("    -".to_string(), pct),
        l.disk_pct.map_or("    -".to_string(), pct),
        time_plus(l.time_ns),
    )
}

#[cfg(test)]
mod tests {
    use crate::top::render::*;

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
