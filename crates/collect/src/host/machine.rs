//! A [`Host`]'s machine-wide figures (the /proc files of the machine, the utmp file, sysfs),
//! and what `doctor` and `bench` probe through it. Each figure is `None` (or empty) when its
//! file cannot be read.

use std::path::{Path, PathBuf};

use tasksnap_model::{CpuTicks, HostIdentity, LoadAverages, Memory, StatCounters, SystemFigures};
use tasksnap_procfs::system::{CpuLine, MemInfo};

use super::Host;
use crate::bpf_bench::BpfBench;
use crate::error::Error;
use crate::{machine, numa, probes, task_files};

/// `Host` methods that are [`machine`]'s function of the same name on the host's /proc root.
macro_rules! from_proc_root {
    ($($(#[$doc:meta])* $name:ident -> $ty:ty;)*) => {
        impl Host {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> $ty {
                    machine::$name(&self.opts.proc_root)
                }
            )*
        }
    };
}

from_proc_root! {
    /// `/proc/stat`'s aggregate `cpu` line.
    cpu_ticks -> Option<CpuTicks>;
    /// `/proc/meminfo`.
    memory -> Option<Memory>;
    /// `/proc/loadavg`.
    load_averages -> Option<LoadAverages>;
    /// Seconds since boot (`/proc/uptime`).
    uptime_s -> Option<f64>;
    /// The width of `kernel.pid_max` as printed.
    pid_max_width -> Option<usize>;
    /// `/proc/stat`'s aggregate `cpu` line with every field, and the `cpuN` lines.
    cpu_lines -> Option<(CpuLine, Vec<CpuLine>)>;
    /// `/proc/stat`'s counters after the CPU lines.
    stat_counters -> Option<StatCounters>;
    /// The `/proc/meminfo` fields psutil reads.
    meminfo_fields -> Option<MemInfo>;
    /// The zones' `low` watermarks of `/proc/zoneinfo`, summed, pages.
    zoneinfo_low_pages -> Option<u64>;
    /// Pages swapped in and out since boot (`/proc/vmstat`).
    swap_io_pages -> Option<(u64, u64)>;
}

impl Host {
    /// Every machine-wide figure a recording keeps (a replay: the recorded ones).
    pub fn system(&self) -> SystemFigures {
        match self.replayed() {
            Some(r) => r.system.clone(),
            None => machine::figures(&self.opts.proc_root),
        }
    }

    /// Which machine and boot this is: the host name and boot id under the host's /proc
    /// root (a fake tree's own), or a replay's recorded ones.
    pub fn identity(&self) -> HostIdentity {
        match self.replayed() {
            Some(r) => r.host.clone(),
            None => machine::identity(&self.opts.proc_root),
        }
    }

    /// `MemTotal`, KiB (a replay: the recorded one).
    pub fn mem_total_kib(&self) -> Option<u64> {
        match self.replayed() {
            Some(r) => r.system.memory.map(|m| m.total_kib),
            None => machine::mem_total_kib(&self.opts.proc_root),
        }
    }

    /// Users logged in: USER_PROCESS records of the utmp file, as procps counts them.
    pub fn users_logged_in(&self) -> usize {
        crate::machine::logged_in_users(&self.opts.utmp_path)
    }

    /// The load averages as glibc's `getloadavg(3)` gives them: `sysinfo(2)`'s fixed point
    /// on the running kernel, /proc/loadavg's two decimals on a fake tree.
    pub fn load_avg_precise(&self) -> Option<[f64; 3]> {
        if self.opts.is_this_kernel() {
            if let Some(si) = tasksnap_sys::sysinfo() {
                return Some(si.load_avg);
            }
        }
        self.load_averages().map(|l| l.avg)
    }

    /// Swap in all and free, bytes, from `sysinfo(2)` (psutil's answer when meminfo has no
    /// `SwapTotal`); `None` on a fake tree, whose figures the running kernel cannot give.
    pub fn sysinfo_swap_bytes(&self) -> Option<(u64, u64)> {
        if !self.opts.is_this_kernel() {
            return None;
        }
        tasksnap_sys::sysinfo().map(|s| (s.swap_total_bytes, s.swap_free_bytes))
    }

    /// The login sessions of the utmp file (USER_PROCESS records), in file order.
    pub fn user_sessions(&self) -> Vec<tasksnap_procfs::utmp::Record> {
        crate::machine::user_sessions(&self.opts.utmp_path)
    }

    /// The CPUs online (sysfs, else /proc/stat), as `sysconf(_SC_NPROCESSORS_ONLN)`.
    pub fn online_cpus(&self) -> Option<u64> {
        machine::online_cpus(&self.opts.sys_root, &self.opts.proc_root)
    }

    /// Physical cores (sysfs topology, else /proc/cpuinfo), as psutil counts them.
    pub fn physical_cores(&self) -> Option<u64> {
        machine::physical_cores(&self.opts.sys_root, &self.opts.proc_root)
    }

    /// The number of tasks (threads) on the system.
    pub fn task_count(&self) -> Option<u64> {
        machine::task_count(&self.opts.proc_root)
    }
}

impl Host {
    /// Reads one process's files and system calls that no snapshot group carries (psutil's
    /// `cwd`, `open_files`, `memory_maps`, `memory_full_info`'s extras, `net_connections`,
    /// `ionice`, `terminal`) under this host's /proc and /dev roots.
    pub fn process_files(&self) -> crate::process_files::ProcessFiles {
        crate::process_files::ProcessFiles::new(
            self.opts.proc_root.clone(),
            self.opts.dev_root.clone(),
        )
    }
}

/// Reads where a task's symbolic links point ([`Host::task_links`]).
#[derive(Debug, Clone)]
pub struct TaskLinks {
    proc_root: PathBuf,
}

impl TaskLinks {
    /// Where the symbolic link `name` (`fd/2`, `exe`) of process `pid` points.
    pub fn link(&self, pid: i32, name: &str) -> Option<PathBuf> {
        task_files::task_link(&self.proc_root, pid, name)
    }
}

/// What a terminal named on a command line is ([`Host::tty_named`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedTty {
    /// A character device: its number (`st_rdev`).
    Device(u32),
    /// Something that is not a character device.
    NotATerminal,
    /// Nothing of that name. `in_working_dir`: a file of that very name exists in the working
    /// directory (asked only of a one-character name, which procps's `-t` then takes as no
    /// terminal).
    Missing {
        /// See above.
        in_working_dir: bool,
    },
}

/// What loading the BPF task iterator here showed ([`Host::probe_bpf`], for `doctor`).
#[derive(Debug, Clone)]
pub struct BpfProbe {
    /// How long loading (or opening the pinned programs) took, ns.
    pub load_ns: u64,
    /// Where the pinned programs came from, when they were pinned ones.
    pub pinned_at: Option<PathBuf>,
    /// Why a pinned set that is there was not used.
    pub pin_problem: Option<String>,
    /// Why command lines come from /proc, when they do.
    pub cmdline_from_procfs: Option<String>,
    /// Whether full passes walk the task lists into a mapped arena.
    pub has_walk: bool,
    /// Why the walk is not there, when it is not.
    pub walk_problem: Option<String>,
}

impl Host {
    /// Loads the BPF task iterator (with command lines) to see whether it can run here and
    /// how, then lets it go: what `doctor` reports. Not a source of this host.
    pub fn probe_bpf(&self) -> Result<BpfProbe, crate::bpf::Unavailable> {
        if let Some(why) = (!self.opts.is_this_kernel()).then(|| {
            format!(
                "{} is not the running kernel's /proc",
                self.opts.proc_root.display()
            )
        }) {
            return Err(crate::bpf::Unavailable::Failed(why));
        }
        let b = crate::bpf::BpfCollector::with_cmdline(true)?;
        Ok(BpfProbe {
            load_ns: b.load_ns,
            pinned_at: b.pinned_at.clone(),
            pin_problem: b.pin_problem.clone(),
            cmdline_from_procfs: b.cmdline_from_procfs.clone(),
            has_walk: b.has_walk(),
            walk_problem: b.walk_problem.clone(),
        })
    }

    /// Loads the BPF collector with command lines for `bench` to time its own paths ([`BpfBench`]).
    /// The programs read the running kernel: a caller on a fake tree does without.
    pub fn bpf_bench() -> Result<BpfBench, crate::bpf::Unavailable> {
        BpfBench::load()
    }

    /// Pins the BPF task iterators in bpffs (root only), so that later runs open them
    /// instead of loading: `tasksnap pin`. Returns where.
    pub fn pin_programs() -> Result<PathBuf, crate::bpf::Unavailable> {
        crate::bpf::BpfCollector::pin()
    }

    /// Removes the pinned programs; `false` when nothing was pinned: `tasksnap unpin`.
    pub fn unpin_programs() -> Result<bool, crate::bpf::Unavailable> {
        crate::bpf::BpfCollector::unpin()
    }

    /// The caller's controlling tty (`tty_nr`), 0 when none.
    pub fn own_tty_nr(&self) -> u32 {
        task_files::own_tty_nr(&self.opts.proc_root)
    }

    /// A sysctl's value, trimmed (`kernel/task_delayacct`).
    pub fn sysctl(&self, name: &str) -> Option<String> {
        machine::sysctl(&self.opts.proc_root, name)
    }

    /// The `hidepid=` option of the procfs mounted at /proc.
    pub fn hidepid(&self) -> Option<String> {
        machine::hidepid(&self.opts.proc_root)
    }

    /// The caller's effective capabilities, as /proc/self/status shows them.
    pub fn own_effective_caps(&self) -> Option<u64> {
        task_files::own_effective_caps(&self.opts.proc_root)
    }

    /// The processes of the /proc root, by pid, ascending.
    pub fn list_pids(&self) -> Result<Vec<i32>, Error> {
        crate::procfs::ProcfsCollector::with_root(&self.opts.proc_root)?.list_pids()
    }

    /// `bench`/`doctor` baselines over this host's /proc root (see [`crate::probes`]).
    pub fn read_proc_stat(&self) -> Option<Vec<u8>> {
        probes::read_proc_stat(&self.opts.proc_root)
    }

    /// Opens and closes `file` of each of `pids` (a `bench` baseline).
    pub fn open_close_each(&self, pids: &[i32], file: &str) {
        probes::open_close_each(&self.opts.proc_root, pids, file)
    }

    /// Opens, reads once into `buf` and closes `file` of each of `pids` (a `bench` baseline).
    pub fn open_read_close_each(&self, pids: &[i32], file: &str, buf: &mut [u8]) {
        probes::open_read_close_each(&self.opts.proc_root, pids, file, buf)
    }

    /// Where the symbolic link `name` (`fd/2`, `exe`) of process `pid` points.
    pub fn task_link(&self, pid: i32, name: &str) -> Option<PathBuf> {
        task_files::task_link(&self.opts.proc_root, pid, name)
    }

    /// A reader of task links under this host's /proc root, detached from the host so that
    /// a formatting thread can hold its own (ps's terminal names read `fd/2` and `fd/255`).
    pub fn task_links(&self) -> TaskLinks {
        TaskLinks {
            proc_root: self.opts.proc_root.clone(),
        }
    }

    /// The tty driver table, in procps's lookup order.
    pub fn tty_drivers(&self) -> Vec<tasksnap_procfs::system::TtyDriver> {
        machine::tty_drivers(&self.opts.proc_root)
    }

    /// The NUMA node of each CPU, by CPU number (from the sysfs root).
    pub fn cpu_nodes(&self) -> Vec<i32> {
        numa::cpu_nodes(&self.opts.sys_root)
    }

    /// What systemd's sd-login says of tasks here: the cgroup layout under the sysfs root,
    /// pid 1 of the /proc root, systemd's runtime files under the run root.
    pub fn login(&self) -> crate::login::Login {
        crate::login::Login::new(
            crate::login::detect_hierarchy(&self.opts.sys_root.join("fs/cgroup")),
            &self.opts.proc_root,
            &self.opts.run_root.join("systemd"),
        )
    }

    /// What the terminal `name` (`ps -t`: a path, or a name under the device root as procps
    /// looks for it: `pts/NAME`, `NAME`, `ttyNAME`, `ptyNAME`, `NAMEnsole`) is.
    pub fn tty_named(&self, name: &str) -> NamedTty {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let found = if name.starts_with('/') {
            std::fs::metadata(name).ok()
        } else {
            let dev = &self.opts.dev_root;
            [
                dev.join(format!("pts/{name}")),
                dev.join(name),
                dev.join(format!("tty{name}")),
                dev.join(format!("pty{name}")),
                dev.join(format!("{name}nsole")),
            ]
            .iter()
            .find_map(|p| std::fs::metadata(p).ok())
        };
        match found {
            Some(m) if m.file_type().is_char_device() => NamedTty::Device(m.rdev() as u32),
            Some(_) => NamedTty::NotATerminal,
            None => NamedTty::Missing {
                in_working_dir: name.len() == 1 && std::fs::metadata(name).is_ok(),
            },
        }
    }

    /// The id of the running kernel's tracepoint `name` (`kmem/kmalloc`), from tracefs, for
    /// perf counters of it (`bench`).
    pub fn tracepoint_id(name: &str) -> Result<u64, Error> {
        let path = Path::new(tasksnap_sys::roots::SYS)
            .join("kernel/tracing/events")
            .join(name)
            .join("id");
        let unreadable = |error: std::io::Error| Error::Io {
            path: path.display().to_string(),
            error,
        };
        std::fs::read_to_string(&path)
            .map_err(unreadable)?
            .trim()
            .parse()
            .map_err(|e| unreadable(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
    }

    /// The kernel's BTF file under the sysfs root, for `doctor`.
    pub fn btf_path(&self) -> PathBuf {
        self.opts.sys_root.join("kernel/btf/vmlinux")
    }
}
