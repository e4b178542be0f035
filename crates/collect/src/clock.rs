//! The boot clock every start time and stamp of tasksnap is on: the kernel's own
//! `CLOCK_BOOTTIME`, whatever time namespace the caller is in.
//!
//! A time namespace (Linux 5.6, `unshare --time --boottime S`, what a container restored on
//! another machine gets) offsets the boot-time clock its processes see, and /proc shows each
//! reader its own namespace's clock (checked on 6.18, `--boottime 864000`: /proc/uptime
//! 864,426 s instead of 426; `btime` of /proc/stat 864,000 s earlier; each task's `starttime`
//! 86,400,000 ticks more): `do_task_stat()` prints `nsec_to_clock_t(timens_add_boottime_ns(
//! task->start_boottime))`, fs/proc/stat.c subtracts the offset from the boot time
//! (`timens_sub_boottime()`), fs/proc/uptime.c adds it, and so does `clock_gettime()`. The
//! BPF programs read the kernel's own values (`task->start_boottime`,
//! `bpf_ktime_get_boot_ns()`), which no namespace moves. And a negative offset makes the
//! kernel print a task that started before the namespace's zero as a wrapped count
//! (`timens_add_boottime_ns()` adds in u64: kthreadd's 0.22 s less 600 s is 1,844,674,377,393
//! ticks), which read as it is ended in year 2611 (ps) or 2262 (a saturated timestamp).
//!
//! So every reader converts to the kernel's clock here, once: what /proc and `clock_gettime`
//! say, less the caller's offset (in u64 arithmetic modulo 2^64, the inverse of the kernel's,
//! which also undoes a wrap), and the boot time (`btime`) plus it. The figures are then the
//! same inside a namespace and outside it, BPF's and /proc's agree, and a start time is
//! never negative. Wall-clock times (start + boot time) are what they were for a caller
//! outside any namespace: `CLOCK_REALTIME` is not namespaced.
//!
//! The offset is the caller's own, from `/proc/self/timens_offsets` of the kernel's /proc
//! (the file shows the namespace its children get, which is the caller's own since it was
//! exec'ed in it; a process that calls `unshare(CLONE_NEWTIME)` itself and stays is not
//! covered), read once per process; 0 where the file is missing (no time namespaces, an
//! older kernel) or unreadable.

use std::sync::OnceLock;

use tasksnap_procfs::system::parse_boottime_offset_ns;

/// The caller's boot-time offset, and the conversions from what it sees to the kernel's
/// boot clock (see the module header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BootClock {
    /// What the caller's time namespace adds to the kernel's boot clock, ns (0 outside one).
    offset_ns: i64,
}

impl BootClock {
    /// The caller's, read once per process (see the module header).
    pub fn caller() -> BootClock {
        static CALLER: OnceLock<BootClock> = OnceLock::new();
        *CALLER.get_or_init(|| {
            let path = std::path::Path::new(tasksnap_sys::roots::PROC).join("self/timens_offsets");
            BootClock {
                offset_ns: std::fs::read(path)
                    .ok()
                    .and_then(|t| parse_boottime_offset_ns(&t))
                    .unwrap_or(0),
            }
        })
    }

    /// A clock whose caller's namespace adds `offset_ns` (tests).
    pub const fn with_offset(offset_ns: i64) -> BootClock {
        BootClock { offset_ns }
    }

    /// What the caller's time namespace adds to the kernel's boot clock, ns.
    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// The kernel's boot clock now, ns (`clock_gettime(CLOCK_BOOTTIME)` less the offset).
    pub fn now_ns(&self) -> u64 {
        self.from_caller_ns(tasksnap_sys::clock_ns(libc::CLOCK_BOOTTIME))
    }

    /// A time of the caller's boot clock, ns, on the kernel's.
    pub fn from_caller_ns(&self, ns: u64) -> u64 {
        ns.wrapping_sub(self.offset_ns as u64)
    }

    /// A start time /proc shows the caller (`starttime`, ticks of `tick_ns`), on the
    /// kernel's boot clock, ns, cut to a whole tick as every task identity is: the kernel's
    /// `start_boottime` so cut when the offset is whole ticks (`unshare` takes seconds) and
    /// the count did not wrap; a wrapped one (a task older than the namespace's zero) counts
    /// ticks from 2^64, which is no whole number of ticks, so it is one tick early when the
    /// start fell in the first 2^64 mod tick ns of its tick (about 448 µs of 10 ms).
    pub fn from_proc_ticks(&self, ticks: u64, tick_ns: u64) -> u64 {
        let tick_ns = tick_ns.max(1);
        self.from_caller_ns(ticks.wrapping_mul(tick_ns)) / tick_ns * tick_ns
    }

    /// The `starttime` /proc shows the caller for a start of `ns` on the kernel's boot clock
    /// (`nsec_to_clock_t(timens_add_boottime_ns(ns))`), ticks of `tick_ns`.
    pub fn to_proc_ticks(&self, ns: u64, tick_ns: u64) -> u64 {
        ns.wrapping_add(self.offset_ns as u64) / tick_ns.max(1)
    }

    /// The boot time /proc/stat shows the caller (`btime`, seconds since the epoch): the
    /// kernel's, seconds (the caller's boot is the kernel's moved by the offset).
    pub fn from_proc_btime_s(&self, btime_s: u64) -> u64 {
        let ns = i128::from(btime_s) * 1_000_000_000 + i128::from(self.offset_ns);
        u64::try_from(ns.div_euclid(1_000_000_000)).unwrap_or(0)
    }

    /// The uptime /proc/uptime shows the caller, seconds: the kernel's boot clock, seconds.
    pub fn from_proc_uptime_s(&self, uptime_s: f64) -> f64 {
        uptime_s - self.offset_ns as f64 / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 10_000_000;
    const S: i64 = 1_000_000_000;

    #[test]
    fn what_a_namespaced_caller_sees_is_the_kernels_clock_again() {
        // kthreadd started 0.22 s after boot; the kernel prints it for each offset as
        // nsec_to_clock_t(start + offset) in u64.
        let start_ns: u64 = 220_000_000;
        for offset in [0, 864_000 * S, -600 * S, 7 * S + 5_000_000, -1] {
            let c = BootClock::with_offset(offset);
            let shown = start_ns.wrapping_add(offset as u64) / TICK;
            assert_eq!(c.to_proc_ticks(start_ns, TICK), shown);
            let back = c.from_proc_ticks(shown, TICK);
            assert!(back.abs_diff(start_ns) <= TICK, "{offset}: {back}");
            assert_eq!(back % TICK, 0, "a whole tick");
            if offset % TICK as i64 == 0 && start_ns.checked_add_signed(offset).is_some() {
                assert_eq!(back, start_ns, "whole ticks, no wrap: exact");
            }
        }
        // What ps printed as year 2611 under `--boottime -300` (6.18): kthreadd's wrapped
        // count, for its start at 0.2205 s.
        let c = BootClock::with_offset(-300 * S);
        assert_eq!(c.to_proc_ticks(220_500_000, TICK), 1_844_674_377_393);
        assert_eq!(c.from_proc_ticks(1_844_674_377_393, TICK), 220_000_000);
        // Boot time and uptime: the caller's boot is the kernel's moved by the offset.
        let c = BootClock::with_offset(864_000 * S);
        assert_eq!(c.from_proc_btime_s(1_795_036_012), 1_795_900_012);
        assert!((c.from_proc_uptime_s(864_426.2) - 426.2).abs() < 1e-6);
        let c = BootClock::with_offset(-600 * S - 1);
        assert_eq!(c.from_proc_btime_s(1_795_900_612), 1_795_900_011);
        assert_eq!(BootClock::with_offset(i64::MIN).from_proc_btime_s(0), 0);
    }
}
