//! [`Host`]: the one thing a front end (ps, top, states, record, serve, doctor, bench, the
//! Python binding) uses from tasksnap-collect. Read this module to know what a front end may
//! do; everything else in the crate is how it is done.
//!
//! A `Host` is the machine as tasksnap sees it, or a recording of one:
//!
//! - **where it is** ([`HostOptions`]): the /proc root (and /sys, /dev, /run, utmp) every
//!   read goes through, so a test can run any front end on a fake tree
//!   ([`HostOptions::from_env`] is the one place the binary and the Python binding take a
//!   fake tree from the environment);
//! - **its units** ([`Units`]), fetched once: clock ticks per second, page size, boot time;
//! - **its sources**, opened on demand and chosen by the rules of [`crate::choice`]: tasks as
//!   one-off snapshots ([`Host::open_snapshots`]) or a live view's changes
//!   ([`Host::open_live`]), answered by the host itself; thread-state totals
//!   ([`Host::open_states`], and top's per-process [`Host::open_waits`]) and whole readings
//!   for a sampler ([`Host::open_readings`]), handed back as [`ThreadStates`] and
//!   [`Readings`] to keep beside the host (the BPF accounting is tied to its thread, the
//!   host is not); or, for a recording, the recorded [`Reading`] ([`Host::replay`]) and
//!   thread-state samples ([`Host::replay_states`]);
//! - **its privileges**: loading BPF programs needs capabilities nothing later needs; a front
//!   end calls [`Host::ready`] once every source it needs is open and prepared, and the host
//!   drops them (keeping [`crate::caps::KEPT`]) exactly once. Front ends never call `caps`;
//! - **its machine-wide figures** ([`Host::system`], [`Host::uptime_s`],
//!   [`Host::users_logged_in`]...).
//!
//! A front end's whole use of it, `ps` for instance:
//!
//! ```no_run
//! # use tasksnap_collect::Host;
//! # use tasksnap_model::{Backend, Groups, Query, Selector};
//! # fn main() -> Result<(), tasksnap_collect::Error> {
//! let groups = Groups { base: true, stat: true, ..Groups::default() };
//! let mut host = Host::from_env(); // this machine, or the test's fake tree
//! host.open_snapshots(Backend::Auto, &groups)?; // BPF or /proc, by choice's rules
//! let _ = host.ready(); // loading is over: its capabilities go
//! let snap = host.snapshot(&Query::new(Selector::AllProcesses, groups))?;
//! let page_size = host.units().page_size_bytes;
//! # let _ = (snap, page_size);
//! # Ok(())
//! # }
//! ```
//!
//! Inside, the task sources sit behind the crate's traits ([`Collector`], [`LiveCollector`],
//! [`StateSource`]) in one enum, so that a new source (a root service answering over a
//! socket) is one more variant that no front end sees.

use std::io;
use std::path::{Path, PathBuf};

use tasksnap_model::{
    Backend, CpuTicks, Groups, LoadAverages, Memory, PassReport, Query, Reading, Snapshot,
    SystemFigures, Task,
};

use crate::procfs::Units as ProcfsUnits;
use crate::replay::{ReplayCollector, ReplayStates};
pub use crate::sampler::Options as ReadingOptions;
use crate::sampler::Sampler;
use crate::states::bpf::BpfSource;
use crate::{
    caps, choice, system, ChangeSummary, Collector, Error, Filled, LiveCollector, Sample,
    StateSource,
};

/// Where a [`Host`] reads, and what it takes as given. The default is this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostOptions {
    /// The procfs root (`/proc`). Any other root is read by the procfs sources only: the BPF
    /// programs read the running kernel, not a tree.
    pub proc_root: PathBuf,
    /// The sysfs root (`/sys`): NUMA nodes, cgroup mounts.
    pub sys_root: PathBuf,
    /// The device directory (`/dev`): terminal names.
    pub dev_root: PathBuf,
    /// The runtime directory (`/run`): systemd's sessions and machines.
    pub run_root: PathBuf,
    /// The utmp file (`/var/run/utmp`): logged-in users.
    pub utmp_path: PathBuf,
    /// The page size, bytes, in place of the running kernel's (a fake tree from a machine
    /// with 16 or 64 KiB pages).
    pub page_size_bytes: Option<u64>,
}

impl Default for HostOptions {
    fn default() -> HostOptions {
        HostOptions {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            dev_root: PathBuf::from("/dev"),
            run_root: PathBuf::from("/run"),
            utmp_path: PathBuf::from("/var/run/utmp"),
            page_size_bytes: None,
        }
    }
}

/// The running kernel's own /proc: what a process reads of itself (its descriptors, its
/// sockets' owners), whatever tree a [`Host`] reads tasks from.
pub const KERNEL_PROC: &str = "/proc";

/// The environment variable naming a fake /proc tree ([`HostOptions::from_env`]).
pub const PROC_ROOT_ENV: &str = "TASKSNAP_PROC_ROOT";
/// The environment variable naming a page size in bytes ([`HostOptions::from_env`]).
pub const PAGE_SIZE_ENV: &str = "TASKSNAP_PAGE_SIZE";

impl HostOptions {
    /// The machine's paths, with a fake tree when the environment names one: `TASKSNAP_PROC_ROOT`
    /// (the /proc root; `sys`, `dev`, `run` and `utmp` inside it are then the /sys, /dev and
    /// /run roots and the utmp file) and `TASKSNAP_PAGE_SIZE` (bytes). This is how the tests run every front
    /// end of the binary and of the Python binding on a fake tree.
    ///
    /// Why this is safe: the bytes of /proc are hostile input already (any user names its
    /// processes, and their command lines), so a tree of the caller's own making shows nothing
    /// a process of the caller could not. With a fake root the BPF sources are never used
    /// (they would read the kernel, not the tree). What the variables must not do is let a
    /// user read files through a tasksnap running with more privilege than theirs: a setuid
    /// or file-capability binary runs in secure-execution mode (`AT_SECURE`, what glibc's
    /// `secure_getenv` checks), and then both variables are ignored.
    pub fn from_env() -> HostOptions {
        if secure_execution() {
            return HostOptions::default();
        }
        HostOptions::from_values(
            std::env::var_os(PROC_ROOT_ENV).as_deref(),
            std::env::var_os(PAGE_SIZE_ENV).as_deref(),
        )
    }

    /// [`HostOptions::from_env`] given the variables' values: an empty root is none; a page
    /// size that is not a power of two of at least 1 KiB is ignored.
    pub fn from_values(
        proc_root: Option<&std::ffi::OsStr>,
        page_size: Option<&std::ffi::OsStr>,
    ) -> HostOptions {
        let mut o = HostOptions::default();
        if let Some(root) = proc_root.filter(|r| !r.is_empty()) {
            let root = PathBuf::from(root);
            o.sys_root = root.join("sys");
            o.dev_root = root.join("dev");
            o.run_root = root.join("run");
            o.utmp_path = root.join("utmp");
            o.proc_root = root;
        }
        o.page_size_bytes = page_size
            .and_then(|v| v.to_str())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&b| b >= 1024 && b.is_power_of_two());
        o
    }

    /// Whether these are the running kernel's own trees (the BPF sources may answer).
    pub fn is_this_kernel(&self) -> bool {
        choice::is_kernel_proc(&self.proc_root)
    }
}

/// Whether the process runs in secure-execution mode (setuid, setgid or file capabilities).
fn secure_execution() -> bool {
    // SAFETY: getauxval reads the process's auxiliary vector; it has no preconditions.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// The running kernel's clock ticks per second (`CLK_TCK`, "USER_HZ"; 100 when sysconf
/// cannot say): the one place tasksnap asks. A [`Host`] fetches it once ([`Units`]); a
/// source made outside a host takes it from here.
pub fn clock_ticks_per_s() -> u64 {
    tasksnap_procfs::sys::sysconf(libc::_SC_CLK_TCK, 100).max(1)
}

/// The running kernel's page size, bytes (4096 when sysconf cannot say): the one place
/// tasksnap asks (see [`clock_ticks_per_s`]).
pub fn page_size_bytes() -> u64 {
    tasksnap_procfs::sys::sysconf(libc::_SC_PAGESIZE, 4096).max(1)
}

/// The host's units, fetched once when the [`Host`] opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Units {
    /// Clock ticks per second (`CLK_TCK`, "USER_HZ": what /proc's tick counts count).
    pub clock_ticks_per_s: u64,
    /// The page size, bytes (what /proc's page counts count).
    pub page_size_bytes: u64,
    /// When the machine booted, seconds since the epoch (`btime` of /proc/stat; 0 when
    /// unreadable).
    pub boot_time_unix_s: u64,
}

impl Units {
    /// The conversions a procfs source applies.
    fn procfs(&self) -> ProcfsUnits {
        ProcfsUnits {
            clk_tck: self.clock_ticks_per_s,
            page_size: self.page_size_bytes,
        }
    }
}

/// Where a host's tasks come from (one of the crate's task sources).
enum Tasks {
    /// Nothing opened yet.
    None,
    /// One-off snapshots (ps, bench, the Python binding).
    Snapshots(Box<dyn Collector>),
    /// A live view's changes (top, and the sampler's).
    Live(Box<dyn LiveCollector>),
    /// A recorded reading.
    Replay(Box<ReplayCollector>),
}

/// A thread-state source ([`Host::open_states`], [`Host::open_waits`],
/// [`Host::replay_states`]): cumulative per-thread time in each scheduler state. Kept beside
/// its [`Host`] (it is tied to the thread that opened it: the BPF accounting's ring buffer
/// is not `Send`).
pub struct ThreadStates {
    source: StatesSource,
    backend: Backend,
    why: String,
}

/// The source behind [`ThreadStates`].
enum StatesSource {
    /// Any source of the crate's trait.
    Any(Box<dyn StateSource>),
    /// The BPF accounting with one iterator per process watched (top's DISK%).
    Watched(Box<BpfSource>),
}

impl std::fmt::Debug for ThreadStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadStates")
            .field("backend", &self.backend)
            .field("why", &self.why)
            .finish_non_exhaustive()
    }
}

impl ThreadStates {
    /// Cumulative totals of every thread the source's filter selects, now.
    pub fn sample(&mut self) -> Result<Sample, Error> {
        match &mut self.source {
            StatesSource::Any(s) => s.sample(),
            StatesSource::Watched(s) => s.sample(),
        }
    }

    /// The totals of the threads of `pids` (every process when empty), now: a watched
    /// source ([`Host::open_waits`]) reads only those; any other reads what its filter
    /// selects.
    pub fn sample_of(&mut self, pids: &[i32]) -> Result<Sample, Error> {
        if let StatesSource::Watched(s) = &mut self.source {
            s.watch(pids);
        }
        self.sample()
    }

    /// Which source it is ([`Backend::Bpf`] or [`Backend::Procfs`]; [`Backend::Auto`] for a
    /// replay), and why that one.
    pub fn report(&self) -> (Backend, &str) {
        (self.backend, &self.why)
    }
}

/// Whole readings of the host for a long-running sampler ([`Host::open_readings`]: what
/// `record` stores and `serve` exposes). Kept beside its [`Host`], like [`ThreadStates`].
pub struct Readings(Sampler);

impl std::fmt::Debug for Readings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Readings {
    /// One reading of the whole host, updated in place by the next call (see
    /// [`Sampler::read_mut`]).
    pub fn read_mut(&mut self) -> Result<&mut Reading, Error> {
        self.0.read_mut()
    }

    /// What reads the tasks, and how its last pass went.
    pub fn report(&self) -> PassReport {
        self.0.report()
    }

    /// Which source reads thread states (`None` when not asked for), and why that one.
    pub fn states_report(&self) -> (Option<Backend>, &str) {
        self.0.states_report()
    }

    /// Where the last reading's time went, phase by phase.
    pub fn phases(&self) -> &[(&'static str, std::time::Duration)] {
        self.0.phases()
    }
}

/// How a thread-state source reads ([`Host::open_states`]).
#[derive(Debug, Clone, Default)]
pub struct StatesOptions {
    /// Which threads.
    pub filter: crate::states::Filter,
    /// Keep the kernel stacks (BPF) or wchan (/proc) of S waits too (D waits always).
    pub track_sleep: bool,
    /// The /proc source's state-letter samples per second (`None`: its default).
    pub sample_hz: Option<u32>,
    /// Descriptors the /proc source leaves for everything else (`None`: its default).
    pub fds_left: Option<usize>,
}

/// The machine (or a recording of it) as a front end sees it. See the module header.
pub struct Host {
    opts: HostOptions,
    units: Units,
    tasks: Tasks,
    /// The effective capabilities after [`Host::ready`] dropped them (once), or the errno
    /// of the failure.
    dropped: Option<Result<u64, i32>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("opts", &self.opts)
            .field("units", &self.units)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// The machine `opts` describes, with its units read; no source is open yet.
    pub fn open(opts: HostOptions) -> Host {
        let units = Units {
            clock_ticks_per_s: tasksnap_procfs::sys::sysconf(libc::_SC_CLK_TCK, 100).max(1),
            page_size_bytes: opts
                .page_size_bytes
                .unwrap_or_else(|| tasksnap_procfs::sys::sysconf(libc::_SC_PAGESIZE, 4096).max(1)),
            boot_time_unix_s: system::read_proc_stat(&opts.proc_root)
                .and_then(|s| tasksnap_procfs::parse::parse_btime(&s).ok())
                .unwrap_or(0),
        };
        Host {
            opts,
            units,
            tasks: Tasks::None,
            dropped: None,
        }
    }

    /// This machine, or the fake tree the environment names ([`HostOptions::from_env`]).
    pub fn from_env() -> Host {
        Host::open(HostOptions::from_env())
    }

    /// A recording: `reading` answers every snapshot (`why` says which, for `-v`); no /proc,
    /// no BPF, nothing to drop. The units are this machine's (a recording keeps none).
    pub fn replay(reading: Reading, why: String) -> Host {
        Host {
            opts: HostOptions::default(),
            units: Units {
                clock_ticks_per_s: clock_ticks_per_s(),
                page_size_bytes: page_size_bytes(),
                boot_time_unix_s: reading.snapshot.boot_time_unix_s,
            },
            tasks: Tasks::Replay(Box::new(ReplayCollector::new(reading, why))),
            dropped: Some(Ok(0)),
        }
    }

    /// The recorded reading a replay host answered with, given back.
    pub fn into_replayed(self) -> Option<Reading> {
        match self.tasks {
            Tasks::Replay(r) => Some(r.into_reading()),
            _ => None,
        }
    }

    /// Keeps libbpf's own messages (a program that fails to load, BTF it could not find)
    /// off the terminal: a front end that draws a screen says why BPF is missing itself.
    pub fn quiet_bpf_messages() {
        crate::bpf::quiet_libbpf();
    }

    /// Whether `task` is one `selector` names (a replay's own filtering of a recorded
    /// reading, as a snapshot's query filters).
    pub fn selects(selector: &tasksnap_model::Selector, task: &Task) -> bool {
        crate::replay::selects(selector, task)
    }

    /// A recording's thread-state samples, answered one per [`ThreadStates::sample`] call.
    pub fn replay_states(samples: Vec<Sample>) -> ThreadStates {
        ThreadStates {
            source: StatesSource::Any(Box::new(ReplayStates::new(samples))),
            backend: Backend::Auto,
            why: "replay".into(),
        }
    }

    /// Where this host reads.
    pub fn options(&self) -> &HostOptions {
        &self.opts
    }

    /// The procfs root every read goes through.
    pub fn proc_root(&self) -> &Path {
        &self.opts.proc_root
    }

    /// The sysfs root.
    pub fn sys_root(&self) -> &Path {
        &self.opts.sys_root
    }

    /// The device directory.
    pub fn dev_root(&self) -> &Path {
        &self.opts.dev_root
    }

    /// Clock ticks per second, page size, boot time.
    pub fn units(&self) -> Units {
        self.units
    }

    // ---- opening sources (while privileged), then `ready` ----

    /// Opens the task source for snapshots of `groups` (`ps`, `bench`): `backend` by the
    /// rules of [`choice::open`], ready to take them (a BPF one has made its memory).
    pub fn open_snapshots(&mut self, backend: Backend, groups: &Groups) -> Result<(), Error> {
        let c = choice::open(backend, groups, &self.opts.proc_root, self.units.procfs())?;
        self.tasks = Tasks::Snapshots(c);
        Ok(())
    }

    /// Opens the task source of a live view (`top`): BPF whenever it loads
    /// ([`choice::open_live`]). Call [`Host::prepare_live`] before [`Host::ready`].
    pub fn open_live(&mut self, backend: Backend) -> Result<(), Error> {
        let c = choice::open_live(backend, &self.opts.proc_root, self.units.procfs())?;
        self.tasks = Tasks::Live(c);
        Ok(())
    }

    /// Loads what makes a live view's later refreshes cheap (the BPF walk and its memory),
    /// while still privileged. Failing is not an error: refreshes then take a slower path.
    pub fn prepare_live(&mut self, groups: &Groups) {
        if let Tasks::Live(c) = &mut self.tasks {
            c.prepare(groups);
        }
    }

    /// Opens a thread-state source ([`choice::open_states`]: BPF when it loads with `Auto`).
    pub fn open_states(
        &self,
        backend: Backend,
        opts: StatesOptions,
    ) -> Result<ThreadStates, Error> {
        let bpf = crate::states::bpf::Options {
            filter: opts.filter.clone(),
            track_sleep: opts.track_sleep,
            proc_root: self.opts.proc_root.clone(),
            ..Default::default()
        };
        let mut procfs = crate::states::procfs::Options {
            filter: opts.filter,
            track_sleep: opts.track_sleep,
            proc_root: self.opts.proc_root.clone(),
            ..Default::default()
        };
        if let Some(hz) = opts.sample_hz {
            procfs.sample_hz = hz;
        }
        if let Some(n) = opts.fds_left {
            procfs.fds_left = n;
        }
        let c = choice::open_states(backend, bpf, procfs)?;
        Ok(ThreadStates {
            source: StatesSource::Any(c.source),
            backend: c.backend,
            why: c.why,
        })
    }

    /// Loads top's per-process thread-state accounting (DISK% and wait reasons: BPF only,
    /// threads seeded as they come on screen: [`ThreadStates::sample_of`]), or says why it
    /// cannot run.
    pub fn open_waits(&self) -> Result<ThreadStates, Error> {
        if let Some(why) = (!self.opts.is_this_kernel()).then(|| {
            format!(
                "{} is not the running kernel's /proc",
                self.opts.proc_root.display()
            )
        }) {
            return Err(Error::BpfUnavailable(why));
        }
        // Threads are seeded when they first come on screen, not all at load: a pass over
        // 50,000 tasks would cost a refresh's worth of time and 10 MB of peak memory.
        let opts = crate::states::bpf::Options {
            seed_all: false,
            proc_root: self.opts.proc_root.clone(),
            ..Default::default()
        };
        let s = BpfSource::load(opts)?;
        let why = format!("loaded in {:.1} ms", s.load_ns as f64 / 1e6);
        Ok(ThreadStates {
            source: StatesSource::Watched(Box::new(s)),
            backend: Backend::Bpf,
            why,
        })
    }

    /// Opens the sources of whole readings (`record`, `serve`): a live task source, thread
    /// states, the machine-wide figures (see [`crate::sampler`]).
    pub fn open_readings(&self, opts: ReadingOptions) -> Result<Readings, Error> {
        let opts = ReadingOptions {
            proc_root: self.opts.proc_root.clone(),
            ..opts
        };
        Ok(Readings(Sampler::open_with(opts, self.units.procfs())?))
    }

    /// Every source this front end needs is open and prepared: the capabilities only loading
    /// needed are dropped (all but [`caps::KEPT`]), once; later calls change nothing.
    /// Capabilities are per thread: call this on the thread that starts the others. Returns
    /// the effective set after the drop, or why it could not be dropped.
    pub fn ready(&mut self) -> io::Result<u64> {
        self.ready_keeping(caps::KEPT)
    }

    /// [`Host::ready`] for a front end that only reads (an exporter): kill and renice go
    /// too ([`caps::KEPT_READING`]).
    pub fn ready_to_read_only(&mut self) -> io::Result<u64> {
        self.ready_keeping(caps::KEPT_READING)
    }

    fn ready_keeping(&mut self, keep: u64) -> io::Result<u64> {
        let first = self.dropped.get_or_insert_with(|| {
            caps::keep_only(keep).map_err(|e| e.raw_os_error().unwrap_or(libc::EPERM))
        });
        (*first).map_err(io::Error::from_raw_os_error)
    }

    /// [`Host::ready`] for a thread that needs no privilege at all (an exporter's HTTP
    /// side, once its collection thread has its own): every capability goes.
    pub fn drop_all_privileges_of_this_thread() -> io::Result<u64> {
        caps::keep_only(0)
    }

    /// [`Host::ready`] for another thread of this process that has loaded nothing (a
    /// terminal thread): the same set is dropped there.
    pub fn ready_this_thread() -> io::Result<u64> {
        caps::keep_only(caps::KEPT)
    }

    // ---- tasks ----

    fn collector(&self) -> Result<&dyn Collector, Error> {
        match &self.tasks {
            Tasks::Snapshots(c) => Ok(c.as_ref()),
            Tasks::Live(c) => Ok(c.as_ref() as &dyn Collector),
            Tasks::Replay(r) => Ok(r.as_ref()),
            Tasks::None => Err(not_open("tasks")),
        }
    }

    fn collector_mut(&mut self) -> Result<&mut dyn Collector, Error> {
        match &mut self.tasks {
            Tasks::Snapshots(c) => Ok(c.as_mut()),
            Tasks::Live(c) => Ok(c.as_mut() as &mut dyn Collector),
            Tasks::Replay(r) => Ok(r.as_mut()),
            Tasks::None => Err(not_open("tasks")),
        }
    }

    fn live_mut(&mut self) -> Result<&mut dyn LiveCollector, Error> {
        match &mut self.tasks {
            Tasks::Live(c) => Ok(c.as_mut()),
            _ => Err(not_open("a live view")),
        }
    }

    /// The tasks `query` selects, with the groups it asks for.
    pub fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.collector_mut()?.snapshot(query)
    }

    /// `groups` of the tasks `ids` (tgid, tid) only, with the same deadline on a target's
    /// mmap lock as a snapshot's reads.
    pub fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<Filled, Error> {
        self.collector()?.fill(ids, groups)
    }

    /// What answers for tasks, why, and how its last pass went (a default report when no
    /// task source is open).
    pub fn report(&self) -> PassReport {
        match self.collector() {
            Ok(c) => c.report(),
            Err(_) => PassReport::default(),
        }
    }

    /// Hands a snapshot's tasks back for the next one to reuse.
    pub fn recycle(&mut self, tasks: Vec<Task>) {
        if let Ok(c) = self.collector_mut() {
            c.recycle(tasks);
        }
    }

    /// What changed since the last call (every task the first time), each task handed to
    /// `sink`: a live view's refresh ([`Host::open_live`]).
    pub fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(Task),
    ) -> Result<ChangeSummary, Error> {
        self.live_mut()?.changes_into(query, sink)
    }

    /// Whether the next [`Host::changes_into`] with `query` will be a whole pass.
    pub fn next_changes_full(&self, query: &Query) -> bool {
        match &self.tasks {
            Tasks::Live(c) => c.next_changes_full(query),
            _ => true,
        }
    }

    /// The recorded reading a replay host answers with.
    pub fn replayed(&self) -> Option<&Reading> {
        match &self.tasks {
            Tasks::Replay(r) => Some(r.reading()),
            _ => None,
        }
    }

    // ---- machine-wide figures ----

    /// Every machine-wide figure a recording keeps (a replay: the recorded ones).
    pub fn system(&self) -> SystemFigures {
        match &self.tasks {
            Tasks::Replay(r) => r.reading().system.clone(),
            _ => system::figures(&self.opts.proc_root),
        }
    }

    /// `/proc/stat`'s aggregate `cpu` line.
    pub fn cpu_ticks(&self) -> Option<CpuTicks> {
        system::cpu_ticks(&self.opts.proc_root)
    }

    /// `/proc/meminfo`.
    pub fn memory(&self) -> Option<Memory> {
        system::memory(&self.opts.proc_root)
    }

    /// `MemTotal`, KiB (a replay: the recorded one).
    pub fn mem_total_kib(&self) -> Option<u64> {
        match &self.tasks {
            Tasks::Replay(r) => r.reading().system.memory.map(|m| m.total_kib),
            _ => system::mem_total_kib(&self.opts.proc_root),
        }
    }

    /// `/proc/loadavg`.
    pub fn load_averages(&self) -> Option<LoadAverages> {
        system::load_averages(&self.opts.proc_root)
    }

    /// Seconds since boot (`/proc/uptime`).
    pub fn uptime_s(&self) -> Option<f64> {
        system::uptime_s(&self.opts.proc_root)
    }

    /// The width of `kernel.pid_max` as printed.
    pub fn pid_max_width(&self) -> Option<usize> {
        system::pid_max_width(&self.opts.proc_root)
    }

    /// Users logged in: USER_PROCESS records of the utmp file, as procps counts them.
    pub fn users_logged_in(&self) -> usize {
        crate::machine::logged_in_users(&self.opts.utmp_path)
    }

    /// The caller's controlling tty (`tty_nr`), 0 when none.
    pub fn own_tty_nr(&self) -> u32 {
        system::own_tty_nr(&self.opts.proc_root)
    }

    /// The number of tasks (threads) on the system.
    pub fn task_count(&self) -> Option<u64> {
        crate::task_count(&self.opts.proc_root)
    }
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

    /// Pins the BPF task iterators in bpffs (root only), so that later runs open them
    /// instead of loading: `tasksnap pin`. Returns where.
    pub fn pin_programs() -> Result<PathBuf, crate::bpf::Unavailable> {
        crate::bpf::BpfCollector::pin()
    }

    /// Removes the pinned programs; `false` when nothing was pinned: `tasksnap unpin`.
    pub fn unpin_programs() -> Result<bool, crate::bpf::Unavailable> {
        crate::bpf::BpfCollector::unpin()
    }

    /// A sysctl's value, trimmed (`kernel/task_delayacct`).
    pub fn sysctl(&self, name: &str) -> Option<String> {
        system::sysctl(&self.opts.proc_root, name)
    }

    /// The `hidepid=` option of the procfs mounted at /proc.
    pub fn hidepid(&self) -> Option<String> {
        system::hidepid(&self.opts.proc_root)
    }

    /// The caller's effective capabilities, as /proc/self/status shows them.
    pub fn own_effective_caps(&self) -> Option<u64> {
        system::own_effective_caps(&self.opts.proc_root)
    }

    /// The processes of the /proc root, by pid, ascending.
    pub fn list_pids(&self) -> Result<Vec<i32>, Error> {
        crate::procfs::ProcfsCollector::with_root(&self.opts.proc_root)?.list_pids()
    }

    /// `bench`/`doctor` baselines over this host's /proc root (see [`crate::probes`]).
    pub fn read_proc_stat(&self) -> Option<Vec<u8>> {
        system::read_proc_stat(&self.opts.proc_root)
    }

    /// Opens and closes `file` of each of `pids` (a `bench` baseline).
    pub fn open_close_each(&self, pids: &[i32], file: &str) {
        system::open_close_each(&self.opts.proc_root, pids, file)
    }

    /// Opens, reads once into `buf` and closes `file` of each of `pids` (a `bench` baseline).
    pub fn open_read_close_each(&self, pids: &[i32], file: &str, buf: &mut [u8]) {
        system::open_read_close_each(&self.opts.proc_root, pids, file, buf)
    }

    /// The security label of process `tgid` (`attr/current`, printable part).
    pub fn security_label(&self, tgid: i32) -> Option<Vec<u8>> {
        system::security_label(&self.opts.proc_root, tgid)
    }

    /// Where the symbolic link `name` (`fd/2`, `exe`) of process `pid` points.
    pub fn task_link(&self, pid: i32, name: &str) -> Option<PathBuf> {
        system::task_link(&self.opts.proc_root, pid, name)
    }

    /// The tty driver table, in procps's lookup order.
    pub fn tty_drivers(&self) -> Vec<tasksnap_procfs::system::TtyDriver> {
        system::tty_drivers(&self.opts.proc_root)
    }

    /// The NUMA node of each CPU, by CPU number (from the sysfs root).
    pub fn cpu_nodes(&self) -> Vec<i32> {
        system::cpu_nodes(&self.opts.sys_root)
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

    /// The kernel's BTF file under the sysfs root, for `doctor`.
    pub fn btf_path(&self) -> PathBuf {
        self.opts.sys_root.join("kernel/btf/vmlinux")
    }
}

/// The error for asking a host what no open source answers: a front end's bug.
fn not_open(what: &str) -> Error {
    Error::Unsupported(format!("no source of {what} is open on this host"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use tasksnap_loadgen::fake_proc::{FakeProc, BASH_RSS_PAGES, BTIME};
    use tasksnap_model::{Selector, SnapshotStats};

    fn tree(page_size: u64) -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().expect("tempdir");
        FakeProc::build_with_page_size(dir.path(), page_size).expect("tree");
        let opts = HostOptions::from_values(
            Some(dir.path().as_os_str()),
            Some(OsStr::new(&page_size.to_string())),
        );
        (dir, Host::open(opts))
    }

    fn stat_query(sel: Selector) -> Query {
        Query::new(
            sel,
            Groups {
                base: true,
                stat: true,
                ..Groups::default()
            },
        )
    }

    #[test]
    fn the_environment_names_a_tree_and_a_page_size() {
        let o = HostOptions::from_values(Some(OsStr::new("/t")), Some(OsStr::new("65536")));
        assert_eq!(o.proc_root, Path::new("/t"));
        assert_eq!(o.sys_root, Path::new("/t/sys"));
        assert_eq!(o.dev_root, Path::new("/t/dev"));
        assert_eq!(o.run_root, Path::new("/t/run"));
        assert_eq!(o.utmp_path, Path::new("/t/utmp"));
        assert_eq!(o.page_size_bytes, Some(65536));
        assert!(!o.is_this_kernel());
        // Nothing, an empty root, a page size that is no page size: the machine's.
        assert_eq!(HostOptions::from_values(None, None), HostOptions::default());
        assert_eq!(
            HostOptions::from_values(Some(OsStr::new("")), Some(OsStr::new("5000"))),
            HostOptions::default()
        );
        assert!(HostOptions::default().is_this_kernel());
    }

    #[test]
    fn units_are_the_hosts_and_tasks_are_counted_in_them() {
        let (_dir, mut host) = tree(65536);
        let u = host.units();
        assert_eq!(u.page_size_bytes, 65536);
        assert_eq!(u.boot_time_unix_s, BTIME);
        assert_eq!(u.clock_ticks_per_s, clock_ticks_per_s());
        host.open_snapshots(Backend::Auto, &Groups::default())
            .expect("open");
        let r = host.report();
        assert_eq!(r.backend, Backend::Procfs);
        assert!(
            r.why.contains("not the running kernel's /proc"),
            "{}",
            r.why
        );
        let snap = host
            .snapshot(&stat_query(Selector::Pid(4032)))
            .expect("snapshot");
        let stat = snap.tasks[0].stat.as_ref().expect("stat");
        assert_eq!(stat.rss_bytes, BASH_RSS_PAGES * 65536);
        assert_eq!(snap.boot_time_unix_s, BTIME);
    }

    #[test]
    fn bpf_never_answers_for_a_tree() {
        let (_dir, mut host) = tree(4096);
        assert!(host
            .open_snapshots(Backend::Bpf, &Groups::default())
            .is_err());
        assert!(host.open_live(Backend::Bpf).is_err());
        assert!(matches!(
            host.open_states(Backend::Bpf, StatesOptions::default()),
            Err(Error::BpfUnavailable(_))
        ));
        assert!(matches!(host.open_waits(), Err(Error::BpfUnavailable(_))));
        assert!(host.probe_bpf().is_err());
        // Auto takes the /proc sources, which read the tree.
        let mut states = host
            .open_states(Backend::Auto, StatesOptions::default())
            .expect("states");
        assert_eq!(states.report().0, Backend::Procfs);
        let sample = states.sample().expect("sample");
        let mut tids: Vec<i32> = sample.threads.keys().map(|id| id.tid).collect();
        tids.sort_unstable();
        assert_eq!(tids, [1, 4032, 6000, 6001]);
    }

    #[test]
    fn a_live_view_of_a_tree_hands_over_every_task_first() {
        let (_dir, mut host) = tree(4096);
        host.open_live(Backend::Auto).expect("live");
        let q = stat_query(Selector::AllThreads);
        assert!(host.next_changes_full(&q));
        let mut tids = Vec::new();
        let summary = host
            .changes_into(&q, &mut |t| tids.push(t.id.tid))
            .expect("changes");
        assert!(summary.full);
        tids.sort_unstable();
        assert_eq!(tids, [1, 4032, 6000, 6001]);
    }

    #[test]
    fn asking_what_is_not_open_is_an_error() {
        let (_dir, mut host) = tree(4096);
        let q = stat_query(Selector::AllProcesses);
        assert!(matches!(host.snapshot(&q), Err(Error::Unsupported(_))));
        assert!(host.changes_into(&q, &mut |_| {}).is_err());
        host.open_snapshots(Backend::Procfs, &Groups::default())
            .expect("open");
        // Snapshots are not a live view.
        assert!(host.changes_into(&q, &mut |_| {}).is_err());
    }

    #[test]
    fn machine_figures_come_from_the_tree() {
        let (dir, host) = tree(4096);
        assert_eq!(host.mem_total_kib(), Some(24_684_148));
        assert_eq!(host.pid_max_width(), Some(7));
        assert_eq!(host.task_count(), Some(4));
        assert_eq!(host.list_pids().expect("pids"), [1, 4032, 6000]);
        assert_eq!(host.load_averages().map(|l| l.avg[0]), Some(0.52));
        assert_eq!(host.users_logged_in(), 0, "no utmp in the tree");
        // Two USER_PROCESS records (type 7) among others.
        let mut utmp = Vec::new();
        for t in [2i16, 7, 8, 7] {
            let mut r = vec![0u8; 384];
            r[..2].copy_from_slice(&t.to_ne_bytes());
            utmp.extend(r);
        }
        std::fs::write(dir.path().join("utmp"), utmp).expect("utmp");
        assert_eq!(host.users_logged_in(), 2);
        assert_eq!(host.system().memory.map(|m| m.total_kib), Some(24_684_148));
    }

    #[test]
    fn a_recording_answers_as_the_host_did() {
        let mut reading = Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: 5,
                taken_at_boottime_ns: 4,
                boot_time_unix_s: BTIME,
                backend: Backend::Procfs,
                tasks: vec![Task::new(tasksnap_model::TaskId {
                    tgid: 9,
                    tid: 9,
                    start_time_ns: 1,
                })],
                stats: SnapshotStats::default(),
            },
            states: None,
            system: SystemFigures::default(),
        };
        reading.system.memory = Some(Memory {
            total_kib: 1234,
            ..Memory::default()
        });
        let mut host = Host::replay(reading, "replay of r".into());
        assert_eq!(host.units().boot_time_unix_s, BTIME);
        assert_eq!(host.mem_total_kib(), Some(1234));
        assert_eq!(host.report().why, "replay of r");
        let snap = host
            .snapshot(&Query::new(Selector::AllProcesses, Groups::default()))
            .expect("snapshot");
        assert_eq!(snap.tasks.len(), 1);
        // Nothing was loaded: nothing to drop.
        assert_eq!(host.ready().expect("ready"), 0);
    }
}
