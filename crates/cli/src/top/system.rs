//! The machine-wide part of `top`'s header, per refresh: uptime, logged-in users, load
//! averages, CPU time split (deltas of /proc/stat's `cpu` line), memory and swap (all read by
//! the [`Host`], parsed by tasksnap-procfs), and tasksnap's own CPU use
//! (getrusage).

use tasksnap_collect::Host;
pub use tasksnap_model::{CpuTicks, Memory};

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
    pub fn read(&mut self, host: &Host) -> System {
        let uptime_s = host.uptime_s().unwrap_or(0.0);
        let loadavg = host.load_averages().unwrap_or_default().avg;
        let mut cpu_pct = [0.0; 8];
        if let Some(now) = host.cpu_ticks() {
            cpu_pct = cpu_split(&self.prev.unwrap_or_default(), &now);
            self.prev = Some(now);
        }
        System {
            uptime_s,
            users: host.users_logged_in(),
            loadavg,
            cpu_pct,
            mem: host.memory().unwrap_or_default(),
        }
    }
}

/// The CPU split between two readings of /proc/stat's `cpu` line, percent: us, sy, ni, id,
/// wa, hi, si, st (against zeros: since boot).
pub fn cpu_split(before: &CpuTicks, now: &CpuTicks) -> [f64; 8] {
    let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
    let total = d(now.total(), before.total()).max(1.0);
    [
        d(now.user, before.user),
        d(now.system, before.system),
        d(now.nice, before.nice),
        d(now.idle, before.idle),
        d(now.iowait, before.iowait),
        d(now.irq, before.irq),
        d(now.softirq, before.softirq),
        d(now.steal, before.steal),
    ]
    .map(|v| v * 100.0 / total)
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

/// The kernel's boot clock now, ns: the clock snapshots are stamped with (the caller's
/// time namespace's offset taken off: `tasksnap_collect::clock`).
pub fn boottime_ns() -> u64 {
    tasksnap_collect::BootClock::caller().now_ns()
}

#[cfg(test)]
mod proptests;
