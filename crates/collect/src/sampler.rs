//! The sampling loop's reading side: one [`Reading`] of the whole host per call (every task
//! and thread, every thread's state-time totals, the machine-wide figures), taken the cheap
//! way for a long-running sampler. What `tasksnap record` stores, and what an exporter would
//! serve.
//!
//! - Tasks come from a [`LiveCollector`] kept open for the sampler's life: after the first
//!   call only the tasks that changed are read (the BPF walk skips unchanged processes in the
//!   kernel), with a whole pass every [`crate::collector::CHANGES_FULL_EVERY`] calls; the sampler keeps
//!   the current set and hands out all of it. A process's main thread carries the whole
//!   process's figures (its CPU times summed over its threads, the dead ones included, as
//!   /proc/PID/stat shows them): what `ps` shows for a process, and for the main thread of
//!   `ps -L`; the thread-state totals are per thread.
//! - Command lines and cgroups are read once per task identity (and again when its comm
//!   changes, which is what an exec does), through [`crate::Collector::fill`], so a sample does not
//!   take 50,000 targets' mmap locks. A thread carries its process's: `/proc/PID/cgroup`
//!   of a thread differs only in cgroup v2's threaded mode, which the sampler does not see.
//! - Thread-state totals come from a [`StateSource`] seeded over every thread at open.
//! - Exited processes come from the exit source ([`crate::exits`]) when it was asked for and
//!   loads: each reading drains what arrived since the previous one, before the tasks are
//!   read, so a process that dies during the walk is a live row of this reading and an exit
//!   of the next. Without the source the reading's `exits_missing` says why. A source
//!   whose identities are derived (taskstats: the start from the receipt time, possibly a
//!   clock tick off /proc's) has each exit given the identity of the live process it is, in
//!   the previous walk or this one ([`crate::exits::adopt_live_identities`]), or among the
//!   processes the previous walk no longer found (one that died after a drain and before the
//!   walk after it has its record a reading late), so an exit and the same process's live or
//!   zombie rows compare equal as with BPF.
//! - The host name and boot id (the reading's `host`) are read with the machine-wide
//!   figures, each time: two small reads.

use std::path::PathBuf;

use tasksnap_model::states::ThreadMap;
use tasksnap_model::{
    Backend, Comm, Group, Groups, PassReport, Query, Reading, ReadingChanges, Selector, Snapshot,
    SnapshotStats, Task, TaskId,
};

use crate::choice::{self, Chosen};
use crate::collector::LiveCollector;
use crate::collector::StateSource;
use crate::error::Error;
use crate::machine;

/// How a [`Sampler`] reads.
#[derive(Debug, Clone)]
pub struct Options {
    /// Which backend reads tasks and thread states ([`Backend::Auto`]: BPF when it loads).
    pub backend: Backend,
    /// Keep the kernel stacks of S waits too (D waits always).
    pub track_sleep: bool,
    /// Take thread-state totals at all.
    pub states: bool,
    /// The procfs root for the machine-wide figures.
    pub proc_root: PathBuf,
    /// Read each process's executable path too (once per identity, with its command line).
    pub exe: bool,
    /// Descriptors the /proc thread-state source leaves for everything else (see
    /// [`crate::states::procfs::Options::fds_left`]): an exporter's connections need them.
    pub states_fds_left: usize,
    /// Load the exit records ([`crate::exits`]): root, with BPF or else taskstats; without
    /// them each reading says why in `exits_missing`.
    pub exits: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            backend: Backend::Auto,
            track_sleep: false,
            states: true,
            proc_root: PathBuf::from(tasksnap_sys::roots::PROC),
            exe: false,
            states_fds_left: crate::states::procfs::Options::default().fds_left,
            exits: false,
        }
    }
}

/// The groups a sample reads for every task each time. Memory comes from stat (`vsize`,
/// `rss`): statm and status would cost a /proc read per task per sample for the BPF backend.
pub fn sample_groups() -> Groups {
    Groups::of(&[
        Group::Base,
        Group::CredEffective,
        Group::Stat,
        Group::Io,
        Group::Sched,
    ])
}

/// Takes [`Reading`]s of the whole host, keeping its sources open between them.
pub struct Sampler {
    live: Chosen<Box<dyn LiveCollector>>,
    /// The thread-state source (`None`: not asked for).
    states: Option<Chosen<Box<dyn StateSource>>>,
    /// The exit source, or why there is none.
    exits: Result<crate::exits::Exits, String>,
    query: Query,
    /// The last reading, updated in place: its tasks in (tgid, tid) order.
    reading: Reading,
    /// Identities whose names were asked for and could not be read (gone, or denied).
    unnamed: ThreadMap<()>,
    opts: Options,
    phases: Vec<(&'static str, std::time::Duration)>,
    /// What the last reading changed from the one before.
    changes: ReadingChanges,
    /// The processes (leaders) the last walk no longer found, kept only for an exit source
    /// whose identities are derived: a process that died after a reading's drain and before
    /// its walk has its record in the reading after, and its identity from here.
    departed: Vec<TaskId>,
    /// Whether the rows were dropped for a whole pass that failed or did not come: readings
    /// fail until a whole pass brings every row back.
    rows_lost: bool,
    /// Whether the last fill of names completed: then only rows a later walk reads can
    /// lack names (see [`Sampler::rows_to_name`]).
    names_complete: bool,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("tasks", &self.reading.snapshot.tasks.len())
            .field("states_backend", &self.states.as_ref().map(|c| c.backend))
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Opens the sources (loading BPF programs where `opts.backend` allows: call while
    /// still privileged) with the host's unit conversions and the exit source it loaded
    /// (`None` when not asked for). A state source that cannot run with `Auto` is replaced by
    /// none only when even the /proc one fails; its reason is in [`Sampler::states_report`].
    pub(crate) fn open(
        opts: Options,
        units: crate::units::Units,
        exits: Option<Result<crate::exits::Exits, Error>>,
    ) -> Result<Sampler, Error> {
        let at = choice::Place {
            socket: None,
            root: &opts.proc_root,
            units,
        };
        let mut live = choice::open_live(opts.backend, at)?;
        let groups = sample_groups();
        live.source.prepare(&groups);
        let states = if opts.states {
            // Lent: the reading holds the sample the source reads the next one from, not a
            // copy of every thread's totals; it goes back as it was at the next read (see
            // `read_mut`).
            let bpf = crate::states::bpf::Options {
                track_sleep: opts.track_sleep,
                incremental: true,
                lend: true,
                ..Default::default()
            };
            let procfs = crate::states::procfs::Options {
                track_sleep: opts.track_sleep,
                fds_left: opts.states_fds_left,
                proc_root: opts.proc_root.clone(),
                ..Default::default()
            };
            Some(choice::open_states(opts.backend, bpf, procfs)?)
        } else {
            None
        };
        let exits = match exits {
            None => Err("exit records not asked for".to_string()),
            Some(Ok(e)) => Ok(e),
            Some(Err(e)) => Err(e.to_string()),
        };
        Ok(Sampler {
            live,
            states,
            exits,
            query: Query {
                leader_as_process: true,
                ..Query::new(Selector::AllThreads, groups)
            },
            reading: Reading::of(Snapshot {
                taken_at_unix_ns: 0,
                taken_at_boottime_ns: 0,
                boot_time_unix_s: 0,
                backend: Backend::Auto,
                tasks: Vec::new(),
                stats: SnapshotStats::default(),
            }),
            unnamed: ThreadMap::default(),
            opts,
            phases: Vec::new(),
            changes: ReadingChanges::default(),
            departed: Vec::new(),
            rows_lost: false,
            names_complete: false,
        })
    }

    /// What reads the tasks, and how its last pass went.
    pub fn report(&self) -> PassReport {
        self.live.report()
    }

    /// Which source reads thread states ([`Backend::Bpf`] or [`Backend::Procfs`]; `None`
    /// when not asked for), and why that one.
    pub fn states_report(&self) -> (Option<Backend>, &str) {
        match &self.states {
            Some(c) => (Some(c.backend), &c.why),
            None => (None, "not asked for"),
        }
    }

    /// Why there are no exit records (`None` when the exit source runs).
    pub fn exits_missing(&self) -> Option<&str> {
        self.exits.as_ref().err().map(String::as_str)
    }

    /// Which exit source runs (`None` when none does: [`Sampler::exits_missing`] says why).
    pub fn exits_source(&self) -> Option<crate::exits::ExitSource> {
        self.exits.as_ref().ok().map(|e| e.source())
    }

    /// What the last reading changed from the one before (the task rows the walk read
    /// again or that were given names, the threads whose totals were read): what a consumer
    /// that keeps the previous reading's rows needs to look at.
    pub fn changes(&self) -> &ReadingChanges {
        &self.changes
    }

    /// What this sampler holds between readings, by part: the last reading's task rows,
    /// their boxed groups and names, its thread-state totals, and what the sources keep.
    pub fn footprint(&self) -> crate::footprint::Held {
        let mut held = crate::footprint::Held::default();
        crate::footprint::tasks(&self.reading.snapshot.tasks, &mut held);
        let reading = self
            .reading
            .states
            .as_ref()
            .map_or(0, crate::footprint::sample);
        held.add("thread states (reading)", reading);
        if let Some(s) = &self.states {
            held.add("thread states (source)", s.source.held_bytes());
        }
        self.live.source.held(&mut held);
        held
    }

    /// Where the last [`Sampler::read_mut`]'s time went, phase by phase.
    pub fn phases(&self) -> &[(&'static str, std::time::Duration)] {
        &self.phases
    }

    /// [`Sampler::read_mut`] with what the reading changed from the one before
    /// ([`Sampler::changes`]), for a caller that hands both on (the recorder).
    pub fn read_changed(&mut self) -> Result<(&mut Reading, &ReadingChanges), Error> {
        self.read_mut()?;
        Ok((&mut self.reading, &self.changes))
    }

    /// One reading of the host, kept and updated in place by the next call (which costs the
    /// tasks that changed, not the host): clone what must outlive that. A caller may take
    /// parts out of it: the next call fills every part again. The tasks must be left in
    /// place, since the next call updates them, and so must the thread-state totals, as
    /// read (or taken out, which makes the next sample a whole pass): the BPF source reads
    /// the next sample from them. A caller that changes them (the recorder carrying totals
    /// across a restart) changes them back first.
    pub fn read_mut(&mut self) -> Result<&mut Reading, Error> {
        let t0 = std::time::Instant::now();
        self.take_exits();
        let t_exits = std::time::Instant::now();
        let taken_at_unix_ns = tasksnap_sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = crate::BootClock::caller().now_ns();
        let derived = self
            .exits
            .as_ref()
            .is_ok_and(|e| !e.source().exact_identity());
        let before: Vec<TaskId> = match derived {
            true => leaders(&self.reading.snapshot.tasks),
            false => Vec::new(),
        };
        let (kept, mut fresh) = self.room_for_the_walk();
        let summary = match self
            .live
            .source
            .changes_into(&self.query, &mut |t| fresh.push(t))
        {
            Ok(s) => s,
            Err(e) => {
                self.rows_lost |= kept.is_some();
                return Err(e);
            }
        };
        if !summary.full && (kept.is_some() || self.rows_lost) {
            // The rows the changes apply to went before a pass predicted whole: they are
            // not made up from the changed ones. The next whole pass brings them back.
            self.rows_lost = true;
            return Err(Error::Unsupported(
                "the last rows were dropped for a whole pass that did not come; \
                 waiting for the next whole pass"
                    .into(),
            ));
        }
        fresh.sort_unstable_by_key(order);
        // The rows read and the rows gone: an encoder then finds a delta's rows from these
        // alone (see ReadingChanges).
        self.changes.tasks = (!summary.full).then(|| {
            let read = fresh.iter().map(|t| t.id);
            read.chain(summary.gone.iter().copied()).collect()
        });
        let tasks = &mut self.reading.snapshot.tasks;
        if summary.full {
            // A whole pass: every old task not in it is gone; the others lend their names.
            self.rows_lost = false;
            *tasks = match kept {
                Some(k) => k.lend(fresh),
                None => carry_names(std::mem::take(tasks), fresh, |_| true),
            };
        } else {
            let gone: ThreadMap<()> = summary.gone.iter().map(|id| (*id, ())).collect();
            if let Err(fresh) = update_in_place(tasks, fresh, &gone) {
                let old = std::mem::take(tasks);
                *tasks = carry_names(old, fresh, |t| gone.contains_key(&t.id));
            }
        }
        if derived {
            // This walk's rows: a process born since the previous walk, a zombie now.
            crate::exits::adopt_live_identities(&mut self.reading.exits, tasks);
            self.departed = before
                .into_iter()
                .filter(|id| crate::exits::leader_of(tasks, id.tgid) != Some(*id))
                .collect();
        }
        let t1 = std::time::Instant::now();
        // The thread states right after the tasks, before the names (which may take long: a
        // new recorder reads every command line): a thread's CPU time in its task row and
        // its state totals then cover the same interval, so a hog's running time matches
        // its CPU time, sample by sample and across a restart.
        self.reading.states = match self.states.as_mut().map(|c| &mut c.source) {
            Some(s) => {
                // The last sample's memory, unless the caller took it (an exporter keeps it).
                if let Some(old) = self.reading.states.take() {
                    s.recycle(old);
                }
                Some(s.sample()?)
            }
            None => None,
        };
        self.changes.threads = self
            .states
            .as_ref()
            .and_then(|c| c.source.changed())
            .map(<[TaskId]>::to_vec);
        let t2 = std::time::Instant::now();
        self.fill_names()?;
        let tasks = &mut self.reading.snapshot.tasks;
        let unnamed = &mut self.unnamed;
        if unnamed.len() > tasks.len() {
            let alive: ThreadMap<()> = tasks.iter().map(|t| (t.id, ())).collect();
            unnamed.retain(|id, _| alive.contains_key(id));
        }
        let t3 = std::time::Instant::now();
        let snapshot = &mut self.reading.snapshot;
        snapshot.taken_at_unix_ns = taken_at_unix_ns;
        snapshot.taken_at_boottime_ns = taken_at_boottime_ns;
        snapshot.backend = self.live.source.report().backend;
        if snapshot.boot_time_unix_s == 0 {
            snapshot.boot_time_unix_s =
                machine::boot_time_unix_s(&self.opts.proc_root).unwrap_or(0);
        }
        self.reading.system = machine::figures(&self.opts.proc_root);
        // Read each time, not once: a host can be renamed while a recorder runs.
        self.reading.host = machine::identity(&self.opts.proc_root);
        let t4 = std::time::Instant::now();
        self.phases = vec![
            ("exits", t_exits - t0),
            ("tasks", t1 - t_exits),
            ("states", t2 - t1),
            ("names", t3 - t2),
            ("system", t4 - t3),
        ];
        Ok(&mut self.reading)
    }

    /// Drains the exit source into the reading. Exits first: a process that exits after
    /// this drain is either a live row of this reading (read before it died) or missing from
    /// it, and an exit of the next. A source that fails (its reader thread stopped) is
    /// dropped, and the readings say why from then on: the tasks and thread states go on.
    fn take_exits(&mut self) {
        let drained = match &mut self.exits {
            Ok(source) => {
                let exact = source.source().exact_identity();
                Some(source.drain().map(|b| (b, exact)))
            }
            Err(_) => None,
        };
        match drained {
            Some(Ok((mut batch, exact))) => {
                if !exact {
                    // The previous walk's rows: processes seen alive that exited since; then
                    // those it no longer found (their records come a reading late).
                    let rows = &self.reading.snapshot.tasks;
                    let departed = &self.departed;
                    crate::exits::Exits::adopt_identities(&mut batch.exits, |tgid| {
                        crate::exits::leader_of(rows, tgid)
                            .or_else(|| departed.iter().find(|id| id.tgid == tgid).copied())
                    });
                }
                self.reading.exits = batch.exits;
                self.reading.exits_dropped = batch.dropped;
                self.reading.exits_missing = None;
            }
            Some(Err(e)) => self.exits = Err(format!("the exit source stopped: {e}")),
            None => {}
        }
        if let Err(why) = &self.exits {
            self.reading.exits.clear();
            self.reading.exits_dropped = 0;
            if self.reading.exits_missing.as_deref() != Some(why.as_str()) {
                self.reading.exits_missing = Some(why.clone());
            }
        }
    }

    /// Where the next walk's rows go. Before a whole pass the last rows go, but for their
    /// names (kept, and returned): the pass's rows and the last ones are never in memory
    /// together (the peak of a long-running sampler). The pass's rows go where the last ones
    /// were, with room for a whole pass (the rows there were, or the tasks there are), not
    /// twice it: one allocation of every row for the sampler's life, not one freed and
    /// another made each whole pass.
    fn room_for_the_walk(&mut self) -> (Option<KeptNames>, Vec<Task>) {
        let kept = self
            .live
            .source
            .next_changes_full(&self.query)
            .then(|| KeptNames::take(&mut self.reading.snapshot.tasks));
        let rows = kept.as_ref().map_or(0, |k| {
            let tasks = crate::machine::kernel_task_count().unwrap_or(0) as usize;
            k.rows.max(tasks)
        });
        let mut fresh: Vec<Task> = match kept {
            Some(_) => std::mem::take(&mut self.reading.snapshot.tasks),
            None => Vec::new(),
        };
        // Exact: `reserve` on a vector a little short of it would double it.
        fresh.reserve_exact(rows + rows / 16);
        (kept, fresh)
    }

    /// The rows that may have no names yet: after a changed-only walk, when the fill before
    /// it completed, only the rows that walk read (new identities, an exec, a rename: see
    /// [`carry_names`]); else every row. Indices into the tasks, in order. Looking at the
    /// changed rows only spares a sample where nothing happened a scan of every task (3-4 ms
    /// at 50,000 processes).
    fn rows_to_name(&self) -> Vec<usize> {
        let tasks = &self.reading.snapshot.tasks;
        match self
            .changes
            .tasks
            .as_deref()
            .filter(|_| self.names_complete)
        {
            Some(ids) => ids
                .iter()
                .filter_map(|id| row_of(tasks, (id.tgid, id.tid)))
                .collect(),
            None => (0..tasks.len()).collect(),
        }
    }

    /// Reads the command lines and cgroups of the processes that have none yet (new task
    /// identities, or an exec: see [`carry_names`]); threads take their process's.
    fn fill_names(&mut self) -> Result<(), Error> {
        let rows = self.rows_to_name();
        self.names_complete = false;
        let tasks = &mut self.reading.snapshot.tasks;
        let wanted: Vec<(i32, i32)> = rows
            .iter()
            .map(|&i| &tasks[i])
            .filter(|t| t.id.is_leader() && t.cmdline.is_none())
            .filter(|t| !self.unnamed.contains_key(&t.id))
            .map(order)
            .collect();
        if !wanted.is_empty() {
            let groups =
                Groups::of(&[Group::Cmdline, Group::Cgroup]).flag(Group::Exe, self.opts.exe);
            self.reading.snapshot.stats.cmdline_timeouts = 0;
            // In batches: what a fill answers is a whole task row per process, in a hash
            // table (a first reading's every process at once otherwise).
            for batch in wanted.chunks(FILL_BATCH) {
                let (mut filled, stats) = self.live.source.fill(batch, groups)?;
                self.reading.snapshot.stats.cmdline_timeouts += stats.cmdline_timeouts;
                for key in batch {
                    let Some(i) = row_of(tasks, *key) else {
                        continue;
                    };
                    let t = &mut tasks[i];
                    match filled.remove(key) {
                        Some(f) if f.cmdline.is_some() => {
                            t.cmdline = f.cmdline;
                            t.cgroup = f.cgroup;
                            t.exe = f.exe;
                            if let Some(c) = self.changes.tasks.as_mut() {
                                c.push(t.id);
                            }
                        }
                        // Gone before its names could be read, or denied: shown as `-`.
                        _ => {
                            self.unnamed.insert(t.id, ());
                        }
                    }
                }
            }
        }
        // Threads without names take their process's (its main thread's row, when the
        // process has more than one thread).
        for i in rows {
            let t = &tasks[i];
            if t.id.is_leader() || t.cmdline.is_some() {
                continue;
            }
            let Some(l) = row_of(tasks, (t.id.tgid, t.id.tgid)) else {
                continue;
            };
            let leader = &tasks[l];
            if leader.base.as_ref().is_none_or(|b| b.num_threads <= 1) {
                continue;
            }
            let (cmdline, cgroup) = (leader.cmdline.clone(), leader.cgroup.clone());
            if cmdline.is_some() {
                tasks[i].cmdline = cmdline;
                tasks[i].cgroup = cgroup;
                if let Some(c) = self.changes.tasks.as_mut() {
                    c.push(tasks[i].id);
                }
            }
        }
        self.names_complete = true;
        Ok(())
    }
}

/// `tasks` with `fresh`'s rows replacing theirs in place (keeping the names of the same
/// identity with the same comm, as [`carry_names`] does) and the tasks `gone` says left
/// removed, when every fresh row replaces one (the common case of a changed-only walk: a
/// sample then moves no row it did not read); `fresh` back, untouched, when one is new.
fn update_in_place(
    tasks: &mut Vec<Task>,
    fresh: Vec<Task>,
    gone: &ThreadMap<()>,
) -> Result<(), Vec<Task>> {
    let mut at = Vec::with_capacity(fresh.len());
    for f in &fresh {
        match tasks.binary_search_by_key(&order(f), order) {
            Ok(i) => at.push(i),
            Err(_) => return Err(fresh),
        }
    }
    for (mut f, i) in fresh.into_iter().zip(at) {
        let o = &mut tasks[i];
        if o.id == f.id
            && f.cmdline.is_none()
            && o.base.as_ref().map(|x| &x.comm) == f.base.as_ref().map(|x| &x.comm)
        {
            f.cmdline = o.cmdline.take();
            f.cgroup = o.cgroup.take();
            f.exe = o.exe.take();
        }
        *o = f;
    }
    if !gone.is_empty() {
        tasks.retain(|t| !gone.contains_key(&t.id));
    }
    Ok(())
}

/// Processes whose names one [`Collector::fill`](crate::Collector::fill) call reads.
const FILL_BATCH: usize = 4096;

/// The names of the last rows, kept while a whole pass replaces them (the rows themselves
/// are dropped first): each task's identity and comm, with what it had read of its command
/// line, cgroup and executable, in (tgid, tid) order. About a quarter of a row.
struct KeptNames {
    names: Vec<(TaskId, Option<Comm>, Names)>,
    /// How many rows there were.
    rows: usize,
}

/// A task's command line, cgroup and executable.
type Names = (
    Option<Vec<u8>>,
    Option<Box<tasksnap_model::Cgroup>>,
    Option<Vec<u8>>,
);

impl KeptNames {
    /// Takes the names out of `tasks`, and drops the rows (the vector keeps its memory, for
    /// the pass's rows).
    fn take(tasks: &mut Vec<Task>) -> KeptNames {
        let rows = tasks.len();
        let names = tasks
            .drain(..)
            .filter(|t| t.cmdline.is_some() || t.cgroup.is_some() || t.exe.is_some())
            .map(|t| {
                let comm = t.base.map(|b| b.comm);
                (t.id, comm, (t.cmdline, t.cgroup, t.exe))
            })
            .collect();
        KeptNames { names, rows }
    }

    /// `fresh` (a whole pass, in (tgid, tid) order), each task with the names kept for the
    /// same identity with the same comm, as [`carry_names`] gives them.
    fn lend(self, mut fresh: Vec<Task>) -> Vec<Task> {
        let key = |id: &TaskId| (id.tgid, id.tid);
        let mut kept = self.names.into_iter().peekable();
        for f in &mut fresh {
            while kept.next_if(|k| key(&k.0) < key(&f.id)).is_some() {}
            let Some((id, comm, (cmdline, cgroup, exe))) =
                kept.next_if(|k| key(&k.0) == key(&f.id))
            else {
                continue;
            };
            let same_comm = f.base.as_ref().map(|b| &b.comm) == comm.as_ref();
            if id == f.id && same_comm && f.cmdline.is_none() {
                f.cmdline = cmdline;
                f.cgroup = cgroup;
                f.exe = exe;
            }
        }
        fresh
    }
}

/// A row's place in the sampler's tasks, which are in (tgid, tid) order.
fn order(t: &Task) -> (i32, i32) {
    (t.id.tgid, t.id.tid)
}

/// The index of the row `(tgid, tid)` among `tasks` (in [`order`]).
fn row_of(tasks: &[Task], key: (i32, i32)) -> Option<usize> {
    tasks.binary_search_by_key(&key, order).ok()
}

/// The identities of the leaders among `tasks`.
fn leaders(tasks: &[Task]) -> Vec<TaskId> {
    tasks
        .iter()
        .filter(|t| t.id.is_leader())
        .map(|t| t.id)
        .collect()
}

/// `old` with `fresh`'s tasks replacing or joining them, less the old tasks `gone` says left,
/// both in (tgid, tid) order. A fresh task keeps the old one's command line, cgroup and exe
/// when it is the same identity with the same comm (an exec changes the comm and keeps the
/// identity: its names are read again).
fn carry_names(old: Vec<Task>, fresh: Vec<Task>, gone: impl Fn(&Task) -> bool) -> Vec<Task> {
    let same_names = |a: &Task, b: &Task| {
        a.id == b.id && a.base.as_ref().map(|x| &x.comm) == b.base.as_ref().map(|x| &x.comm)
    };
    let mut out = Vec::with_capacity(old.len().max(fresh.len()));
    let mut old = old.into_iter().peekable();
    for mut f in fresh {
        while let Some(o) = old.next_if(|o| order(o) < order(&f)) {
            if !gone(&o) {
                out.push(o);
            }
        }
        if let Some(mut o) = old.next_if(|o| order(o) == order(&f)) {
            if same_names(&o, &f) && f.cmdline.is_none() {
                f.cmdline = o.cmdline.take();
                f.cgroup = o.cgroup.take();
                f.exe = o.exe.take();
            }
        }
        out.push(f);
    }
    out.extend(old.filter(|o| !gone(o)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, TaskId};

    fn task(tgid: i32, tid: i32, start: u64, comm: &str, cmdline: Option<&str>) -> Task {
        let mut t = Task::new(TaskId {
            tgid,
            tid,
            start_time_ns: start,
        });
        t.base = Some(Base {
            comm: comm.as_bytes().into(),
            ..Base::default()
        });
        t.cmdline = cmdline.map(|c| c.as_bytes().to_vec());
        t
    }

    fn listed(tasks: &[Task]) -> Vec<(i32, i32, Option<String>)> {
        tasks
            .iter()
            .map(|t| {
                let c = t
                    .cmdline
                    .as_ref()
                    .map(|c| String::from_utf8_lossy(c).into_owned());
                (t.id.tgid, t.id.tid, c)
            })
            .collect()
    }

    /// Copies what the procfs collector reads of the real process `pid` into the fake tree
    /// `root` (the process and its one thread), its start time one clock tick earlier:
    /// where a tick boundary fell between the start and the taskstats record's derivation.
    fn copy_process_tick_early(root: &std::path::Path, pid: i32) {
        const FILES: [&str; 10] = [
            "stat",
            "status",
            "statm",
            "cmdline",
            "comm",
            "schedstat",
            "io",
            "cgroup",
            "wchan",
            "loginuid",
        ];
        for rel in [format!("{pid}"), format!("{pid}/task/{pid}")] {
            let dir = root.join(&rel);
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in FILES {
                let Ok(mut b) = std::fs::read(format!("/proc/{rel}/{f}")) else {
                    continue;
                };
                if f == "stat" {
                    let text = String::from_utf8(b).expect("stat is text");
                    let (head, tail) = text.rsplit_once(") ").expect("comm ends");
                    let mut fields: Vec<String> = tail.split(' ').map(String::from).collect();
                    // Field 22 is the 20th after the comm.
                    let ticks: u64 = fields[19].parse().expect("starttime");
                    fields[19] = (ticks - 1).to_string();
                    b = format!("{head}) {}", fields.join(" ")).into_bytes();
                }
                std::fs::write(dir.join(f), b).expect("write");
            }
        }
    }

    /// A process born after the first reading, and its threads, are named in the readings
    /// after it, which look only at the rows their walk read (`rows_to_name`): the process
    /// by a fill, each thread with its process's command line.
    #[test]
    fn a_process_born_between_changed_readings_is_named_with_its_threads() {
        if !tasksnap_loadgen::root_or_skip("the BPF backend's changed readings") {
            return;
        }
        let opts = Options {
            backend: Backend::Bpf,
            states: false,
            ..Options::default()
        };
        let units = crate::procfs::ProcfsCollector::new()
            .expect("procfs")
            .units();
        let mut sampler = Sampler::open(opts, units, None).expect("sampler");
        sampler.read_mut().expect("first reading");
        sampler.read_mut().expect("second reading");
        let load = tasksnap_loadgen::Load::spawn(&["--threads", "3"]).expect("the loadgen");
        let pid = load.info.threads_pid.expect("the threads' process");
        let mut changed_reads = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let named = loop {
            let r = sampler.read_mut().expect("reading");
            let rows: Vec<Option<Vec<u8>>> = r
                .snapshot
                .tasks
                .iter()
                .filter(|t| t.id.tgid == pid)
                .map(|t| t.cmdline.clone())
                .collect();
            changed_reads += usize::from(sampler.changes.tasks.is_some());
            if rows.len() == 4 && rows.iter().all(Option::is_some) {
                break rows;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the process and its threads unnamed: {rows:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(changed_reads > 0, "no reading read only what changed");
        assert!(
            named.windows(2).all(|w| w[0] == w[1]),
            "the threads' command lines are not their process's: {named:?}"
        );
        let cmdline = named[0].as_deref().unwrap_or_default();
        assert!(
            cmdline.starts_with(b"tasksnap-loadgen")
                || cmdline.windows(8).any(|w| w == b"loadgen\0"),
            "{:?}",
            String::from_utf8_lossy(cmdline)
        );
    }

    /// Regression: a taskstats exit record (its start derived from the receipt time, possibly a
    /// tick off /proc's) of a process that died after one reading's drain and before its walk
    /// comes with the reading after: its live row was in neither walk the sampler adopted
    /// identities from, so the exit kept its derived identity, and serve, not finding the
    /// process it had counted alive, counted all of its figures again.
    #[test]
    fn a_taskstats_exit_a_sample_late_keeps_its_live_identity() {
        if !tasksnap_loadgen::root_or_skip("taskstats exit records") {
            return;
        }
        let tree = tempfile::tempdir().expect("tempdir");
        let root = tree.path();
        tasksnap_loadgen::fake_proc::FakeProc::build(root).expect("fake tree");
        let exits = crate::exits::Exits::load_taskstats(crate::exits::Options::default())
            .expect("a taskstats listener");
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id() as i32;
        tasksnap_loadgen::wait_until("sleep to settle", || tasksnap_loadgen::settled_sleep(pid));
        copy_process_tick_early(root, pid);
        let opts = Options {
            backend: Backend::Procfs,
            states: false,
            exits: true,
            proc_root: root.to_path_buf(),
            ..Options::default()
        };
        let units = crate::procfs::ProcfsCollector::with_root(root)
            .expect("procfs")
            .units();
        let mut sampler = Sampler::open(opts, units, Some(Ok(exits))).expect("sampler");
        let live = sampler
            .read_mut()
            .expect("first reading")
            .snapshot
            .tasks
            .iter()
            .find(|t| t.id.tgid == pid && t.id.is_leader())
            .map(|t| t.id)
            .expect("the child's row");
        // It died after the second reading's drain, before its walk: missing from it...
        std::fs::remove_dir_all(root.join(pid.to_string())).expect("rm");
        let r = sampler.read_mut().expect("second reading");
        assert!(r.snapshot.tasks.iter().all(|t| t.id.tgid != pid));
        assert!(r.exits.iter().all(|e| e.id.tgid != pid));
        // SAFETY: kill takes no pointers; pid is this test's child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let _ = child.wait();
        // ... and its record comes with the third.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let r = sampler.read_mut().expect("third reading");
        let e = r
            .exits
            .iter()
            .find(|e| e.id.tgid == pid)
            .expect("the child's exit");
        assert_eq!(e.id, live, "the exit's identity is not the live row's");
    }

    /// Names that are not text, long, or many: the kept names of a whole pass go to the same
    /// identity with the same comm, byte for byte, and to no other row (a comm that differs
    /// only past its first bytes, a base without a comm, a reused pid).
    #[test]
    fn kept_names_go_back_byte_for_byte() {
        let long = vec![b'x'; 128 * 1024];
        let mut old = Vec::new();
        let mut fresh = Vec::new();
        for pid in 1..3000 {
            let comm = format!("c{}", pid % 7);
            let line = format!("prog --n {pid}");
            let mut t = task(pid, pid, 10, &comm, Some(&line));
            if pid % 3 == 0 {
                t.cmdline = Some(vec![0xff, 0xfe, 0, b'a', 0x80]);
            }
            if pid == 17 {
                t.cmdline = Some(long.clone());
            }
            if let Some(b) = t.base.as_mut().filter(|_| pid % 5 == 0) {
                b.comm = b"\xff\xc3(".as_slice().into();
            }
            old.push(t);
            // The pass: an exec (another comm) for 11s, a reused pid for 13s, no base for 19s.
            let start = if pid % 13 == 0 { 20 } else { 10 };
            let comm = if pid % 11 == 0 {
                "exec'd".to_string()
            } else {
                comm
            };
            let mut f = task(pid, pid, start, &comm, None);
            if let Some(b) = f.base.as_mut().filter(|_| pid % 5 == 0 && pid % 11 != 0) {
                b.comm = b"\xff\xc3(".as_slice().into();
            }
            if pid % 19 == 0 {
                f.base = None;
            }
            fresh.push(f);
        }
        fresh.push(task(5000, 5000, 1, "new", None));
        let mut rows = old.clone();
        let out = KeptNames::take(&mut rows).lend(fresh.clone());
        let want = carry_names(old.clone(), fresh, |_| true);
        let bytes = |v: &[Task]| {
            v.iter()
                .map(|t| (t.id, t.cmdline.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(bytes(&out), bytes(&want));
        assert_eq!(out[16].cmdline.as_deref(), Some(long.as_slice()));
        assert!(out
            .iter()
            .any(|t| t.cmdline.as_deref() == Some(&[0xff, 0xfe, 0, b'a', 0x80][..])));
        assert!(out[10].cmdline.is_none() && out[12].cmdline.is_none());
    }

    #[test]
    fn names_follow_their_identity_and_leave_with_it() {
        let old = vec![
            task(1, 1, 10, "init", Some("init")),
            task(5, 5, 50, "sh", Some("sh -c x")),
            task(7, 7, 70, "a", Some("a")),
            task(9, 9, 90, "b", Some("b")),
        ];
        let fresh = vec![
            // Same identity, same comm: keeps its command line.
            task(5, 5, 50, "sh", None),
            // Same identity, new comm (an exec): read again.
            task(7, 7, 70, "python3", None),
            // A reused pid (new start time): a new task.
            task(9, 9, 95, "b", None),
            // New.
            task(12, 12, 120, "c", None),
        ];
        let gone = |t: &Task| t.id.tgid == 1;
        let out = carry_names(old.clone(), fresh.clone(), gone);
        assert_eq!(
            listed(&out),
            vec![
                (5, 5, Some("sh -c x".into())),
                (7, 7, None),
                (9, 9, None),
                (12, 12, None),
            ]
        );
        // A whole pass: every old task not in it is gone.
        let out = carry_names(old.clone(), fresh[..1].to_vec(), |_| true);
        assert_eq!(listed(&out), vec![(5, 5, Some("sh -c x".into()))]);
        // The names kept while the old rows are dropped give the same rows.
        let mut rows = old.clone();
        let kept = KeptNames::take(&mut rows);
        assert!(rows.is_empty() && rows.capacity() >= old.len() && kept.rows == old.len());
        assert_eq!(
            listed(&kept.lend(fresh.clone())),
            listed(&carry_names(old.clone(), fresh.clone(), |_| true))
        );
        // In place: the same rows as the merge when every fresh row replaces one; a new row
        // (12) sends the rows back for the merge.
        let gone: ThreadMap<()> = [(old[0].id, ())].into_iter().collect();
        let mut tasks = old.clone();
        assert!(update_in_place(&mut tasks, fresh[..3].to_vec(), &gone).is_ok());
        assert_eq!(
            listed(&tasks),
            listed(&carry_names(old.clone(), fresh[..3].to_vec(), |t| gone
                .contains_key(&t.id)))
        );
        let mut tasks = old.clone();
        let back = update_in_place(&mut tasks, fresh.clone(), &gone).expect_err("a new row");
        assert_eq!(listed(&back), listed(&fresh));
        assert_eq!(listed(&tasks), listed(&old));
    }
}
