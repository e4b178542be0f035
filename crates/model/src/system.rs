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
    /// The eight counters in /proc/stat's order (user, nice, system, idle, iowait, irq,
    /// softirq, steal).
    pub fn to_array(&self) -> [u64; 8] {
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
    }

    /// The counters from an array in /proc/stat's order (the inverse of [`Self::to_array`]).
    pub fn from_array(a: [u64; 8]) -> Self {
        let [user, nice, system, idle, iowait, irq, softirq, steal] = a;
        Self {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
        }
    }

    /// Every tick counted, saturating: the file is input, not a promise of sane numbers.
    pub fn total(&self) -> u64 {
        self.to_array()
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

/// The counters of /proc/stat besides the CPU lines (0 when the file does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatCounters {
    /// `ctxt`: context switches since boot.
    pub context_switches: u64,
    /// `processes`: forks (and clones) since boot.
    pub forks: u64,
    /// `procs_running`: tasks runnable now.
    pub procs_running: u64,
    /// `procs_blocked`: tasks in D waiting for I/O now.
    pub procs_blocked: u64,
    /// First field of `intr`: interrupts serviced since boot.
    pub interrupts: u64,
    /// First field of `softirq`: soft interrupts since boot.
    pub softirqs: u64,
}

/// One line of a pressure-stall file (`some` or `full` of /proc/pressure/{cpu,memory,io}).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PressureLine {
    /// `avg10`, `avg60`, `avg300`: percent of time stalled over those windows.
    pub avg_pct: [f64; 3],
    /// `total`: stalled time since boot, microseconds.
    pub total_us: u64,
}

/// A resource's pressure-stall figures (kernel 4.20+, `CONFIG_PSI`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pressure {
    /// `cpu`, `memory` or `io` (the file name).
    pub resource: String,
    /// Some tasks stalled.
    pub some: Option<PressureLine>,
    /// All non-idle tasks stalled (not for cpu before Linux 5.13).
    pub full: Option<PressureLine>,
}

/// The machine-wide figures of one moment, as a recording keeps them: raw counters, rates are
/// derived on read. Each part is `None` (or empty) when its file could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemFigures {
    /// The aggregate `cpu` line of /proc/stat.
    pub cpu: Option<CpuTicks>,
    /// The `cpuN` lines, in order.
    pub per_cpu: Vec<CpuTicks>,
    /// The other /proc/stat counters.
    pub counters: Option<StatCounters>,
    /// /proc/meminfo.
    pub memory: Option<Memory>,
    /// /proc/loadavg.
    pub load: Option<LoadAverages>,
    /// Every counter of /proc/vmstat, by name, in the file's order.
    pub vmstat: Vec<(String, u64)>,
    /// /proc/pressure/*, where the kernel has it.
    pub pressure: Vec<Pressure>,
}
