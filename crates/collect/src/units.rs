//! The host's facts every source is handed, at the bottom of the crate: its units (clock
//! ticks per second, page size, boot time, the caller's boot clock: [`Units`]) and which
//! /proc tree is the running kernel's ([`is_kernel_proc`]). Sources take them from here;
//! nothing here reaches up (the boot clock is [`crate::clock`], which reads only /proc).

use std::path::Path;

use crate::clock::BootClock;

/// The running kernel's clock ticks per second (`CLK_TCK`, "USER_HZ"; 100 when sysconf
/// cannot say): the one place tasksnap asks. A [`Host`](crate::Host) fetches it once
/// ([`Units`]); a source made outside a host takes it from here.
pub fn clock_ticks_per_s() -> u64 {
    tasksnap_sys::sysconf(libc::_SC_CLK_TCK, 100).max(1)
}

/// The running kernel's page size, bytes (4096 when sysconf cannot say): the one place
/// tasksnap asks (see [`clock_ticks_per_s`]).
pub fn page_size_bytes() -> u64 {
    tasksnap_sys::sysconf(libc::_SC_PAGESIZE, 4096).max(1)
}

/// Whether `root` is the running kernel's /proc, the only tree the BPF programs (which read
/// the kernel itself) can answer for. A test's fake tree is read by the procfs sources only.
pub fn is_kernel_proc(root: &Path) -> bool {
    root == Path::new(tasksnap_sys::roots::PROC)
}

/// The host's units, fetched once when the [`Host`](crate::Host) opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Units {
    /// Clock ticks per second (`CLK_TCK`, "USER_HZ": what /proc's tick counts count).
    pub clock_ticks_per_s: u64,
    /// The page size, bytes (what /proc's page counts count).
    pub page_size_bytes: u64,
    /// When the machine booted, seconds since the epoch (`btime` of /proc/stat, on the
    /// kernel's boot clock: [`crate::clock`]; 0 when unreadable).
    pub boot_time_unix_s: u64,
    /// The caller's boot clock: start times /proc shows in it become the kernel's.
    pub boot: BootClock,
}

impl Units {
    /// This kernel's clock ticks and page size, the caller's boot clock, and `boot_time_unix_s`.
    pub fn of_this_kernel(boot_time_unix_s: u64) -> Units {
        Units {
            clock_ticks_per_s: clock_ticks_per_s(),
            page_size_bytes: page_size_bytes(),
            boot_time_unix_s,
            boot: BootClock::caller(),
        }
    }

    /// Nanoseconds in one clock tick.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.clock_ticks_per_s.max(1)
    }

    /// `ticks` clock ticks, ns (saturating).
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        ticks.saturating_mul(self.tick_ns())
    }

    /// A `starttime` as /proc shows it, on the kernel's boot clock, ns.
    pub fn start_ns(&self, ticks: u64) -> u64 {
        self.boot.from_proc_ticks(ticks, self.tick_ns())
    }
}
