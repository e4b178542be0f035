//! Queries in the task_diag style: which tasks, and which attribute groups of each.

use serde::{Deserialize, Serialize};

/// Which tasks a query asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// Every process (thread-group leaders only).
    AllProcesses,
    /// Every thread of every process.
    AllThreads,
    /// One process, by pid.
    Pid(i32),
    /// The threads of one process.
    ThreadsOf(i32),
    /// The processes whose parent is this pid.
    ChildrenOf(i32),
    /// The processes of a session.
    Session(i32),
    /// The processes of a process group.
    ProcessGroup(i32),
}

/// Which attribute groups to collect. A collector reads only what these need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Groups {
    /// State, parents, tty, comm, nice, policy, threads (`/proc/PID/stat`).
    pub base: bool,
    /// Effective ids only (cheap: the owner of /proc/PID).
    pub cred_effective: bool,
    /// All ids and supplementary groups (`/proc/PID/status`).
    pub cred_full: bool,
    /// CPU times, faults, start time (`/proc/PID/stat`).
    pub stat: bool,
    /// Memory (`/proc/PID/statm`).
    pub mem: bool,
    /// Swap and locked memory, and exact RSS and size (`/proc/PID/status`).
    pub mem_status: bool,
    /// Locked memory (`Stat::locked_bytes`): free for the BPF backend, `status` for procfs.
    pub locked: bool,
    /// With `mem`: only RSS and size are wanted, so `status` (when read anyway) is enough and
    /// `statm` is skipped.
    pub mem_rss_only: bool,
    /// Command line (`/proc/PID/cmdline`; takes the target's mmap lock).
    pub cmdline: bool,
    /// Executable path (`/proc/PID/exe`).
    pub exe: bool,
    /// I/O counters (`/proc/PID/io`).
    pub io: bool,
    /// Scheduler accounting (`/proc/PID/schedstat`).
    pub sched: bool,
    /// Context switch counts (`/proc/PID/status`).
    pub sched_switches: bool,
    /// Wait channel (`/proc/PID/wchan`).
    pub wchan: bool,
    /// Control-group membership (`/proc/PID/cgroup`).
    pub cgroup: bool,
    /// Signal masks (`/proc/PID/status`).
    pub signals: bool,
    /// Code and stack addresses, RSS limit (`/proc/PID/stat`).
    pub layout: bool,
    /// Count of open file descriptors (the size the kernel reports for `/proc/PID/fd`).
    pub fds: bool,
    /// Environment (`/proc/PID/environ`; takes the target's mmap lock, needs ptrace read
    /// access).
    pub environ: bool,
    /// Namespace inode numbers (`/proc/PID/ns/*`).
    pub ns: bool,
    /// OOM killer score (`/proc/PID/oom_score`).
    pub oom_score: bool,
    /// OOM score adjustment (`/proc/PID/oom_score_adj`).
    pub oom_score_adj: bool,
    /// Autogroup id and nice (`/proc/PID/autogroup`).
    pub autogroup: bool,
    /// Audit login uid (`/proc/PID/loginuid`).
    pub loginuid: bool,
    /// PSS and USS (`/proc/PID/smaps_rollup`; takes the target's mmap lock).
    pub smaps: bool,
    /// Security label (`/proc/TGID/attr/current`).
    pub label: bool,
    /// What sd-login says (unit, slice, session, seat...: `Extra::login`), derived from
    /// `/proc/PID/cgroup` (read for it even when `cgroup` is not asked for) and systemd's
    /// runtime files.
    pub login: bool,
}

impl Groups {
    /// Every group.
    pub fn all() -> Groups {
        Groups {
            base: true,
            cred_effective: true,
            cred_full: true,
            stat: true,
            mem: true,
            mem_status: true,
            mem_rss_only: false,
            locked: true,
            cmdline: true,
            exe: true,
            io: true,
            sched: true,
            sched_switches: true,
            wchan: true,
            cgroup: true,
            signals: true,
            layout: true,
            fds: true,
            environ: true,
            ns: true,
            oom_score: true,
            oom_score_adj: true,
            autogroup: true,
            loginuid: true,
            smaps: true,
            label: true,
            login: true,
        }
    }

    /// True when /proc/PID/stat must be read.
    pub fn needs_stat_file(&self) -> bool {
        self.base || self.stat || self.layout
    }

    /// True when /proc/PID/cgroup must be read (for the `cgroup` group or for `login`).
    pub fn needs_cgroup_file(&self) -> bool {
        self.cgroup || self.login
    }

    /// True when /proc/PID/status must be read.
    pub fn needs_status_file(&self) -> bool {
        self.cred_full || self.mem_status || self.sched_switches || self.locked || self.signals
    }
}

/// A query: which tasks and which groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// Which tasks.
    pub selector: Selector,
    /// Which groups of each.
    pub groups: Groups,
    /// In thread listings, read each process's main thread through the process itself, so its
    /// row carries process-wide values (CPU times summed over the threads): what procps shows
    /// for the leader in `ps -L`. Off by default: then every row is exactly one thread.
    pub leader_as_process: bool,
}

impl Query {
    /// A query for `selector` with `groups`.
    pub fn new(selector: Selector, groups: Groups) -> Query {
        Query {
            selector,
            groups,
            leader_as_process: false,
        }
    }

    /// True when the answer is per thread rather than per process.
    pub fn wants_threads(&self) -> bool {
        matches!(self.selector, Selector::AllThreads | Selector::ThreadsOf(_))
    }
}
