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
//!   end calls [`Host::drop_loading_privileges`] once every source it needs is open and
//!   prepared, and the host drops them (keeping [`crate::caps::KEPT`]) exactly once. Front
//!   ends never call `caps`;
//! - **its machine-wide figures** ([`Host::system`], [`Host::uptime_s`],
//!   [`Host::users_logged_in`]...).
//!
//! A front end's whole use of it, `ps` for instance:
//!
//! ```no_run
//! # use tasksnap_collect::Host;
//! # use tasksnap_model::{Backend, Group, Groups, Query, Selector};
//! # fn main() -> Result<(), tasksnap_collect::Error> {
//! let groups = Groups::of(&[Group::Base, Group::Stat]);
//! let mut host = Host::from_env(); // this machine, or the test's fake tree
//! host.open_snapshots(Backend::Auto, &groups)?; // BPF or /proc, by choice's rules
//! let _ = host.drop_loading_privileges(); // loading is over: its capabilities go
//! let snap = host.snapshot(&Query::new(Selector::AllProcesses, groups))?;
//! let page_size = host.units().page_size_bytes;
//! # let _ = (snap, page_size);
//! # Ok(())
//! # }
//! ```
//!
//! The parts: [`options`] (where a host reads, its units), [`sources`] (the handles a host
//! gives out: [`ThreadStates`], [`Readings`]), `machine.rs` (the machine-wide figures and
//! what `doctor` and `bench` probe).
//!
//! Inside, the task sources sit behind the crate's traits ([`Collector`], [`LiveCollector`],
//! [`StateSource`](crate::collector::StateSource)) in one enum, so that a new source (a root
//! service answering over a socket) is one more variant that no front end sees.

mod machine;
pub mod options;
pub mod sources;
#[cfg(test)]
mod tests;

use std::io;
use std::path::Path;

use tasksnap_model::{Backend, Groups, PassReport, Query, Reading, Snapshot, Task};

use crate::choice::Chosen;
use crate::collector::ChangeSummary;
use crate::collector::Collector;
use crate::collector::Filled;
use crate::collector::LiveCollector;
use crate::error::Error;
use crate::replay::{ReplayCollector, ReplayStates};
use crate::sampler::Sampler;
use crate::states::bpf::BpfSource;
use crate::tcp_owners::TcpOwners;
use crate::{caps, choice};
use tasksnap_model::states::Sample;

pub use crate::units::{clock_ticks_per_s, page_size_bytes, Units};
pub use machine::{BpfProbe, NamedTty, TaskLinks};
pub use options::HostOptions;
use sources::StatesSource;
pub use sources::{ReadingOptions, Readings, StatesOptions, ThreadStates};

/// Where a host's tasks come from (one of the crate's task sources).
enum Tasks {
    /// One-off snapshots (ps, bench, the Python binding).
    Snapshots(Box<dyn Collector>),
    /// A live view's changes (top, and the sampler's).
    Live(Box<dyn LiveCollector>),
    /// A recorded reading.
    Replay(Box<ReplayCollector>),
}

impl Tasks {
    fn collector(&self) -> &dyn Collector {
        match self {
            Tasks::Snapshots(c) => c.as_ref(),
            Tasks::Live(c) => c.as_ref() as &dyn Collector,
            Tasks::Replay(r) => r.as_ref(),
        }
    }

    fn collector_mut(&mut self) -> &mut dyn Collector {
        match self {
            Tasks::Snapshots(c) => c.as_mut(),
            Tasks::Live(c) => c.as_mut() as &mut dyn Collector,
            Tasks::Replay(r) => r.as_mut(),
        }
    }
}

/// The machine (or a recording of it) as a front end sees it. See the module header.
pub struct Host {
    opts: HostOptions,
    units: Units,
    /// The task source (`None`: none opened yet), with why it answers.
    tasks: Option<Chosen<Tasks>>,
    /// The effective capabilities after [`Host::drop_loading_privileges`] dropped them (once), or
    /// the errno of the failure.
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
            clock_ticks_per_s: clock_ticks_per_s(),
            page_size_bytes: opts.page_size_bytes.unwrap_or_else(page_size_bytes),
            boot_time_unix_s: crate::machine::boot_time_unix_s(&opts.proc_root).unwrap_or(0),
            boot: crate::BootClock::caller(),
        };
        Host {
            opts,
            units,
            tasks: None,
            dropped: None,
        }
    }

    /// This machine, or the fake tree the environment names ([`HostOptions::from_env`]).
    pub fn from_env() -> Host {
        Host::open(HostOptions::from_env())
    }

    /// A recording: `reading` answers every snapshot (`why` says which, for `-v`); no /proc,
    /// no BPF, nothing to drop. The units are this machine's (a recording keeps none), and
    /// so are the systemd files sd-login's answers are derived with (from the environment's
    /// tree, as [`Host::from_env`]).
    pub fn replay(reading: Reading, why: String) -> Host {
        let opts = HostOptions::from_env();
        let backend = reading.snapshot.backend;
        let collector = ReplayCollector::new(reading, &opts.proc_root);
        Host {
            opts,
            units: Units::of_this_kernel(collector.reading().snapshot.boot_time_unix_s),
            tasks: Some(Chosen::new(
                Tasks::Replay(Box::new(collector)),
                backend,
                why,
            )),
            dropped: Some(Ok(0)),
        }
    }

    /// The recorded reading a replay host answered with, given back.
    pub fn into_replayed(self) -> Option<Reading> {
        match self.tasks.map(|c| c.source) {
            Some(Tasks::Replay(r)) => Some(r.into_reading()),
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
        ThreadStates(Chosen::new(
            StatesSource::Any(Box::new(ReplayStates::new(samples))),
            Backend::Auto,
            "replay",
        ))
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

    /// The host's cgroups down to `max_depth` (the root is 0), each with its own counters,
    /// read now from the hierarchies the proc root's `self/mountinfo` shows (v2, and v1 merged
    /// by path; at most 10,000, the notes say what was left out). Needs no source opened.
    pub fn cgroups(&self, max_depth: usize) -> tasksnap_model::CgroupListing {
        crate::cgroups::list(&self.opts.proc_root, max_depth)
    }

    // ---- opening sources (while privileged), then `ready` ----

    /// Opens the task source for snapshots of `groups` (`ps`, `bench`): `backend` by the
    /// rules of [`choice::open`], ready to take them (a BPF one has made its memory).
    pub fn open_snapshots(&mut self, backend: Backend, groups: &Groups) -> Result<(), Error> {
        let c = choice::open(backend, groups, self.place())?;
        self.tasks = Some(c.map(Tasks::Snapshots));
        Ok(())
    }

    /// Where this host's task sources read and whom they may ask (for [`choice`]).
    fn place(&self) -> choice::Place<'_> {
        choice::Place {
            socket: self.opts.query_socket.as_deref(),
            root: &self.opts.proc_root,
            units: self.units,
        }
    }

    /// Opens the task source of the query service ([`choice::open_for_service`]): BPF with
    /// every program, for passes of any groups. Call before [`Host::drop_loading_privileges`].
    pub fn open_for_service(&mut self) -> Result<(), Error> {
        let c = choice::open_for_service(&self.opts.proc_root)?;
        self.tasks = Some(c.map(Tasks::Snapshots));
        Ok(())
    }

    /// Looks up the owners of this kernel's TCP sockets (whatever tree the host reads: the
    /// sockets are this process's).
    pub fn tcp_owners() -> TcpOwners {
        TcpOwners::of_this_kernel()
    }

    /// Descriptors this process has open (the running kernel's `/proc/self/fd`, less the one
    /// listing it); `None` when they cannot be listed.
    pub fn open_descriptors() -> Option<usize> {
        crate::task_files::own_open_descriptors(Path::new(tasksnap_sys::roots::PROC))
    }

    /// Clock ticks per second (`CLK_TCK`): the unit of /proc's start and CPU times.
    pub fn clock_ticks_per_s() -> u64 {
        clock_ticks_per_s()
    }

    /// Opens the task source of a live view (`top`): BPF whenever it loads ([`choice::open_live`]).
    /// Call [`Host::prepare_live`] before [`Host::drop_loading_privileges`].
    pub fn open_live(&mut self, backend: Backend) -> Result<(), Error> {
        let c = choice::open_live(backend, self.place())?;
        self.tasks = Some(c.map(Tasks::Live));
        Ok(())
    }

    /// Loads what makes a live view's later refreshes cheap (the BPF walk and its memory),
    /// while still privileged. Failing is not an error: refreshes then take a slower path.
    pub fn prepare_live(&mut self, groups: &Groups) {
        if let Some(Tasks::Live(c)) = self.tasks.as_mut().map(|t| &mut t.source) {
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
            track_holders: opts.track_holders,
            proc_root: self.opts.proc_root.clone(),
            incremental: true,
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
        Ok(ThreadStates(c.map(StatesSource::Any)))
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
        Ok(ThreadStates(Chosen::new(
            StatesSource::Watched(Box::new(s)),
            Backend::Bpf,
            why,
        )))
    }

    /// Loads the exit records (one [`tasksnap_model::Exit`] per process that exits from now
    /// on, with its final figures: [`crate::exits`]; the BPF program, else the kernel's
    /// taskstats notifications: [`crate::exits::Exits::source`] says which), or says why they
    /// cannot be had: not root, a kernel without either, or a /proc that is not this
    /// kernel's.
    pub fn open_exits(&self) -> Result<crate::exits::Exits, Error> {
        if !self.opts.is_this_kernel() {
            return Err(Error::BpfUnavailable(format!(
                "{} is not the running kernel's /proc",
                self.opts.proc_root.display()
            )));
        }
        let opts = crate::exits::Options {
            page_size_bytes: self.units.page_size_bytes,
            clock_ticks_per_s: self.units.clock_ticks_per_s,
            ..crate::exits::Options::default()
        };
        if self.opts.exits_taskstats_only {
            return crate::exits::Exits::load_taskstats(opts);
        }
        crate::exits::Exits::load(opts)
    }

    /// Opens the sources of whole readings (`record`, `serve`): a live task source, thread
    /// states, the machine-wide figures (see [`crate::sampler`]).
    pub fn open_readings(&self, opts: ReadingOptions) -> Result<Readings, Error> {
        let opts = ReadingOptions {
            proc_root: self.opts.proc_root.clone(),
            ..opts
        };
        let exits = opts.exits.then(|| self.open_exits());
        Ok(Readings(Sampler::open(opts, self.units, exits)?))
    }

    /// Every source this front end needs is open and prepared: the capabilities only loading
    /// needed are dropped (all but [`caps::KEPT`]), once; later calls change nothing.
    /// Capabilities are per thread: call this on the thread that starts the others. Returns
    /// the effective set after the drop, or why it could not be dropped.
    pub fn drop_loading_privileges(&mut self) -> io::Result<u64> {
        self.drop_privileges_keeping(caps::KEPT)
    }

    /// [`Host::drop_loading_privileges`] for a front end that only reads (an exporter): kill and
    /// renice go too ([`caps::KEPT_READING`]).
    pub fn drop_privileges_but_reading(&mut self) -> io::Result<u64> {
        self.drop_privileges_keeping(caps::KEPT_READING)
    }

    fn drop_privileges_keeping(&mut self, keep: u64) -> io::Result<u64> {
        let first = self.dropped.get_or_insert_with(|| {
            // Loading is over: what it freed goes back to the system. libbpf parses the
            // kernel's BTF (~10 MB of heap) for each object it loads and frees it after,
            // which the allocator would otherwise keep (a procfs top kept 7 MB more).
            #[cfg(target_env = "gnu")]
            // SAFETY: malloc_trim only returns free heap memory; it takes no pointers.
            unsafe {
                libc::malloc_trim(0);
            }
            caps::keep_only(keep).map_err(|e| e.raw_os_error().unwrap_or(libc::EPERM))
        });
        (*first).map_err(io::Error::from_raw_os_error)
    }

    /// [`Host::drop_loading_privileges`] for a thread that needs no privilege at all (an exporter's
    /// HTTP side, once its collection thread has its own): every capability goes.
    pub fn drop_all_privileges_of_this_thread() -> io::Result<u64> {
        caps::keep_only(0)
    }

    /// [`Host::drop_loading_privileges`] for another thread of this process that has loaded nothing
    /// (a terminal thread): the same set is dropped there.
    pub fn drop_loading_privileges_of_this_thread() -> io::Result<u64> {
        caps::keep_only(caps::KEPT)
    }

    // ---- tasks ----

    fn collector(&self) -> Result<&dyn Collector, Error> {
        match &self.tasks {
            Some(c) => Ok(c.source.collector()),
            None => Err(not_open("tasks")),
        }
    }

    fn collector_mut(&mut self) -> Result<&mut dyn Collector, Error> {
        match &mut self.tasks {
            Some(c) => Ok(c.source.collector_mut()),
            None => Err(not_open("tasks")),
        }
    }

    fn live_mut(&mut self) -> Result<&mut dyn LiveCollector, Error> {
        match self.tasks.as_mut().map(|c| &mut c.source) {
            Some(Tasks::Live(c)) => Ok(c.as_mut()),
            _ => Err(not_open("a live view")),
        }
    }

    /// The tasks `query` selects, with the groups it asks for.
    pub fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.collector_mut()?.snapshot(query)
    }

    /// [`Host::snapshot`], handing each task to `sink` as it is made instead of collecting
    /// them: a one-shot reader that turns tasks into something else (the Python binding's
    /// columns) never holds every task at once. The snapshot returned has no tasks; the
    /// sink saw them in the order [`Host::snapshot`] gives them.
    pub fn snapshot_each(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(&Task),
    ) -> Result<Snapshot, Error> {
        self.collector_mut()?.snapshot_each(query, sink)
    }

    /// `groups` of the tasks `ids` (tgid, tid) only, with the same deadline on a target's
    /// mmap lock as a snapshot's reads.
    pub fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<Filled, Error> {
        self.collector()?.fill(ids, groups)
    }

    /// What answers for tasks, why, and how its last pass went (a default report when no
    /// task source is open).
    pub fn report(&self) -> PassReport {
        match &self.tasks {
            Some(c) => choice::report_of(c.source.collector(), &c.why),
            None => PassReport::default(),
        }
    }

    /// Whether the open snapshot source reads `groups` as well as one opened again for them
    /// would ([`Collector::serves`]); false when no snapshot source is open.
    pub fn snapshots_serve(&self, groups: &Groups) -> bool {
        matches!(self.tasks.as_ref().map(|c| &c.source), Some(Tasks::Snapshots(c)) if c.serves(groups))
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
        match self.tasks.as_ref().map(|c| &c.source) {
            Some(Tasks::Live(c)) => c.next_changes_full(query),
            _ => true,
        }
    }

    /// The recorded reading a replay host answers with.
    pub fn replayed(&self) -> Option<&Reading> {
        match self.tasks.as_ref().map(|c| &c.source) {
            Some(Tasks::Replay(r)) => Some(r.reading()),
            _ => None,
        }
    }
}

/// The error for asking a host what no open source answers: a front end's bug.
fn not_open(what: &str) -> Error {
    Error::Unsupported(format!("no source of {what} is open on this host"))
}
