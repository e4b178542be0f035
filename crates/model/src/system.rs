//! Machine-wide figures (not per task): the CPU time split of `/proc/stat`'s `cpu` line,
//! memory and swap, load averages, uptime. Plain values, no I/O: the reading layer
//! (`tasksnap-procfs`) parses them and `tasksnap-collect` reads them; front ends (top's
//! header, ps's %MEM and START, doctor) only show them.

/// The aggregate `cpu` line of /proc/stat, in clock ticks since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// User mode.
    pub user: u64,
    /// User mode at a positive nice.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick counted, saturating: the file is input, not a promise of sane numbers.
    pub fn total(&self) -> u64 {
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

/// Memory figures from /proc/meminfo, KiB (0 when the file does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `MemTotal`.
    pub total_kib: u64,
    /// `MemFree`.
    pub free_kib: u64,
    /// `MemAvailable`.
    pub available_kib: u64,
    /// buff/cache as procps counts it: `Buffers + Cached + SReclaimable`.
    pub buff_cache_kib: u64,
    /// `SwapTotal`.
    pub swap_total_kib: u64,
    /// `SwapFree`.
    pub swap_free_kib: u64,
}

/// /proc/loadavg.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadAverages {
    /// The 1, 5 and 15 minute load averages (0 for a field that is not a number).
    pub avg: [f64; 3],
    /// The tasks (threads) on the system: the denominator of the 4th field (`3/210`).
    pub tasks: Option<u64>,
}
