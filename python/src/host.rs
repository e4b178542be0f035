//! The hosts the binding keeps between calls, and what the last call cost.
//!
//! Everything goes through tasksnap-collect's [`Host`], on the tree
//! [`HostOptions::from_env`] names (the machine's /proc, or a test's fake tree through
//! `TASKSNAP_PROC_ROOT`), or on the /proc root the caller assigned to `tasksnap.PROCFS_PATH`
//! ([`set_proc_root`], psutil's way: only /proc moves, [`HostOptions::with_proc_root`]).
//! What is kept open was opened on the options then in force, and is opened again when they
//! change ([`PerRoot`]). A whole-system pass goes through one cached host whose snapshots
//! are opened for the groups first asked (BPF as root on a host large enough, else procfs:
//! the library's rule, with its reason), so only the programs those need are loaded; it
//! answers later calls of other groups too, and is opened again only when they need a
//! program it did not load (the library's `Host::snapshots_serve`): the load is paid once
//! per interpreter. A query of one
//! process goes to a procfs host: one directory read, and what the kernel lets the caller
//! see (the BPF iterator bypasses procfs permission checks, so it only ever answers whole
//! passes, as root, through the library's own rules). User names come from the reading
//! layer's cached NSS lookup. Every call here runs with the GIL released.
//!
//! Privileges: the binding lives in the user's interpreter, which may load BPF again later (other
//! groups, `states()`), so the interpreter's own thread keeps what it has. A whole-system pass runs
//! on a call thread of its own ([`crate::interrupt`]); that thread drops what only loading needed
//! ([`Host::drop_loading_privileges_of_this_thread`]) once its host is open, before it reads a byte
//! of /proc, so the reading (and the reader threads it starts) runs without the power to load
//! programs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tasksnap_collect::{Error, Host, HostOptions};
use tasksnap_model::{Backend, Group, Groups, PassReport, Query, Selector, Snapshot, Task};
use tasksnap_sys::users::Names;

/// Where every host of this interpreter reads.
static WHERE: LazyLock<RwLock<HostOptions>> =
    LazyLock::new(|| RwLock::new(HostOptions::from_env()));

/// How many times [`WHERE`] changed (raised under its write lock, after the change): what is
/// kept open compares this, so that a call costs no copy of the options.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// The options in force.
fn current() -> HostOptions {
    WHERE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The /proc root the environment names (`TASKSNAP_PROC_ROOT`, as the library took it), else
/// /proc: where `tasksnap.PROCFS_PATH` starts.
#[pyfunction]
pub(crate) fn env_proc_root() -> PathBuf {
    HostOptions::from_env().proc_root
}

/// Points every later read at the /proc tree at `root` (`tasksnap.PROCFS_PATH` assigned):
/// the environment's options with only the /proc root moved, or the environment's own when
/// `root` is its root. As psutil's, the caller's own choice: it is not checked as the
/// environment variable is (whose tree a root process may have inherited from a user).
#[pyfunction]
pub(crate) fn set_proc_root(root: PathBuf) {
    let env = HostOptions::from_env();
    let opts = if root == env.proc_root {
        env
    } else {
        env.with_proc_root(root)
    };
    let mut w = WHERE.write().unwrap_or_else(|e| e.into_inner());
    if *w != opts {
        *w = opts;
        CHANGES.fetch_add(1, Ordering::AcqRel);
    }
}

/// A value made from the options in force (a host, a reader of process files), made again
/// when they have changed since.
pub(crate) struct PerRoot<T> {
    kept: Mutex<Option<(u64, Arc<T>)>>,
    make: fn(HostOptions) -> T,
}

impl<T> PerRoot<T> {
    /// Made by `make` when first asked for.
    pub(crate) const fn new(make: fn(HostOptions) -> T) -> PerRoot<T> {
        PerRoot {
            kept: Mutex::new(None),
            make,
        }
    }

    /// The value for the options in force.
    pub(crate) fn get(&self) -> Arc<T> {
        let changes = CHANGES.load(Ordering::Acquire);
        let mut k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match &*k {
            Some((c, v)) if *c == changes => v.clone(),
            _ => {
                // Options at least as new as `changes`: a later change is seen next time.
                let v = Arc::new((self.make)(current()));
                *k = Some((changes, v.clone()));
                v
            }
        }
    }
}

/// What stays open between calls.
struct Kept {
    /// The change of [`WHERE`] the hosts below were opened on.
    changes: u64,
    /// The whole-system host and what its snapshots were opened for (kept while it serves
    /// the groups asked: [`Host::snapshots_serve`]).
    bulk: Option<(Backend, Groups, Host)>,
    /// The procfs host for one process.
    one: Option<Host>,
    /// User names by uid.
    names: Names,
    /// The last whole-system pass: its report and how long the call took.
    last: Option<(PassReport, Duration)>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept").finish_non_exhaustive()
    }
}

static HOST: LazyLock<Mutex<Kept>> = LazyLock::new(|| {
    Mutex::new(Kept {
        changes: 0,
        bulk: None,
        one: None,
        names: Names::default(),
        last: None,
    })
});

fn host() -> MutexGuard<'static, Kept> {
    // A panic while holding the lock leaves nothing half-written that matters here.
    HOST.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`host`] with its hosts closed when they were opened on other options than those now in
/// force.
fn host_on_current() -> MutexGuard<'static, Kept> {
    let mut h = host();
    let changes = CHANGES.load(Ordering::Acquire);
    if h.changes != changes {
        h.bulk = None;
        h.one = None;
        h.changes = changes;
    }
    h
}

/// Clock ticks per second (`CLK_TCK`): psutil's unit for start and CPU times.
pub(crate) fn clk_tck() -> u64 {
    Host::clock_ticks_per_s()
}

/// Where the hosts of this interpreter read now.
pub(crate) fn options() -> HostOptions {
    current()
}

/// On a call thread of its own, drops what only loading needed (see the module header);
/// on the interpreter's thread, nothing.
pub(crate) fn opened() {
    if crate::interrupt::on_call_thread() {
        let _ = Host::drop_loading_privileges_of_this_thread();
    }
}

/// Start time in clock ticks since boot: what /proc/PID/stat says and what psutil's
/// `create_time` is made of. The BPF iterator gives nanoseconds; the kernel's own
/// conversion (`nsec_to_clock_t`) truncates, and so does this, so both backends agree.
pub(crate) fn start_ticks(start_time_ns: u64) -> u64 {
    ns_to_ticks(start_time_ns)
}

/// Nanoseconds in whole clock ticks, truncated as the kernel's `nsec_to_clock_t` does.
pub(crate) fn ns_to_ticks(ns: u64) -> u64 {
    ns / (1_000_000_000 / clk_tck())
}

/// psutil's `create_time` of a task that started at `start_time_ns` on a host that booted at
/// `boot_time_unix_s`: start ticks / CLK_TCK + btime, psutil's arithmetic, so both agree to
/// the bit.
pub(crate) fn create_time_s(start_time_ns: u64, boot_time_unix_s: f64) -> f64 {
    start_ticks(start_time_ns) as f64 / clk_tck() as f64 + boot_time_unix_s
}

/// [`start_ticks`] for the Python side (`Process.parent()` compares start times in ticks).
#[pyfunction]
#[pyo3(name = "start_ticks")]
pub(crate) fn py_start_ticks(start_time_ns: u64) -> u64 {
    start_ticks(start_time_ns)
}

/// `Process.create_time()` of a process that started at `start_time_ns`
/// ([`create_time_s`] on [`boot_time`]'s boot time).
#[pyfunction]
pub(crate) fn create_time(py: Python<'_>, start_time_ns: u64) -> PyResult<f64> {
    Ok(create_time_s(start_time_ns, boot_time(py)?))
}

/// The backend the environment names (`TASKSNAP_BACKEND`: bpf, procfs or auto, checked when
/// a call is made), else auto: where `tasksnap._BACKEND` starts.
#[pyfunction]
pub(crate) fn env_backend() -> String {
    std::env::var_os("TASKSNAP_BACKEND")
        .map_or_else(|| "auto".to_string(), |v| v.to_string_lossy().into_owned())
}

/// The groups a procfs pass needs for `want`: real user ids are only in `status`.
fn procfs_groups(mut want: Groups, real_ids: bool) -> Groups {
    if real_ids {
        want.insert(Group::CredFull);
    }
    want
}

/// A whole-system snapshot of `selector` with `want`, through the cached collector for
/// `backend`. `real_ids`: the caller needs real (not only effective) user and group ids.
pub(crate) fn bulk(
    backend: Backend,
    selector: Selector,
    want: Groups,
    real_ids: bool,
    leader_as_process: bool,
) -> Result<Snapshot, Error> {
    let started = Instant::now();
    let mut h = host_on_current();
    let (c, groups) = bulk_host(&mut h, backend, want, real_ids)?;
    let query = Query {
        leader_as_process,
        ..Query::new(selector, groups)
    };
    let snap = c.snapshot(&query)?;
    let report = c.report();
    h.last = Some((report, started.elapsed()));
    Ok(snap)
}

/// The whole-system host for `want` (opened again only when the kept one does not serve
/// it), and the groups to ask it for.
fn bulk_host(
    h: &mut Kept,
    backend: Backend,
    want: Groups,
    real_ids: bool,
) -> Result<(&mut Host, Groups), Error> {
    // The host stays open while it serves what is asked (the library says whether opening
    // again would load something `want` needs: the BPF command-line iterator, the program of
    // the rare blocks), so the programs are loaded once per interpreter, and only those the
    // asked attributes need. Opening again keeps the command-line iterator once it was
    // needed: calls with and without `cmdline` do not load it in turn.
    let reuse = matches!(&h.bulk, Some((b, _, c)) if *b == backend && c.snapshots_serve(&want));
    if !reuse {
        let open_for = want.flag(
            Group::Cmdline,
            want.has(Group::Cmdline)
                || h.bulk
                    .as_ref()
                    .is_some_and(|(b, g, _)| *b == backend && g.has(Group::Cmdline)),
        );
        h.bulk = None;
        let mut c = Host::open(current());
        c.open_snapshots(backend, &open_for)?;
        h.bulk = Some((backend, open_for, c));
    }
    opened();
    let Some((_, _, c)) = h.bulk.as_mut() else {
        return Err(Error::Unsupported("no collector".into()));
    };
    let groups = if c.report().backend == Backend::Procfs {
        procfs_groups(want, real_ids)
    } else {
        // The iterator's credentials block holds every id.
        want
    };
    Ok((c, groups))
}

/// [`bulk`], handing each task to `sink` as the library makes it instead of collecting
/// them (`Host::snapshot_each`): the snapshot it returns has no tasks.
pub(crate) fn bulk_each(
    backend: Backend,
    selector: Selector,
    want: Groups,
    real_ids: bool,
    sink: &mut dyn FnMut(&Task),
) -> Result<Snapshot, Error> {
    let started = Instant::now();
    let mut h = host_on_current();
    let (c, groups) = bulk_host(&mut h, backend, want, real_ids)?;
    let snap = c.snapshot_each(&Query::new(selector, groups), sink)?;
    let report = c.report();
    h.last = Some((report, started.elapsed()));
    Ok(snap)
}

/// Reads `groups` of the tasks `ids` through the collector of the last whole pass (names of
/// 15 bytes completed from command lines).
pub(crate) fn fill(ids: &[(i32, i32)], groups: Groups) -> Result<Vec<Task>, Error> {
    let h = host_on_current();
    let Some((_, _, c)) = h.bulk.as_ref() else {
        return Ok(Vec::new());
    };
    let (filled, _) = c.fill(ids, groups)?;
    Ok(filled.into_values().collect())
}

/// The procfs host for one process, opened when first needed.
fn one_host(h: &mut Kept) -> Result<&mut Host, Error> {
    if h.one.is_none() {
        let mut p = Host::open(current());
        p.open_snapshots(Backend::Procfs, &Groups::default())?;
        h.one = Some(p);
    }
    h.one
        .as_mut()
        .ok_or_else(|| Error::Unsupported("no collector".into()))
}

/// One process (or the threads of one, or every process for `children`) through the procfs
/// collector.
pub(crate) fn one(query: &Query, real_ids: bool) -> Result<Snapshot, Error> {
    let mut h = host_on_current();
    let p = one_host(&mut h)?;
    let q = Query {
        groups: procfs_groups(query.groups, real_ids),
        ..query.clone()
    };
    p.snapshot(&q)
}

/// Task `id` read as a process, from /proc/ID, whether `id` is a process or one of its
/// threads: psutil's `Process(tid)` reads /proc/TID, which the kernel serves for every thread
/// id though it lists processes only (there, a thread shows its own name and state and its
/// process's figures: CPU times summed over the threads, memory). The library's
/// `Selector::Pid` answers processes only, as `ps -p` does; its `fill` reads what it is
/// given. An empty snapshot when there is no such task.
pub(crate) fn one_task(id: i32, groups: Groups, real_ids: bool) -> Result<Snapshot, Error> {
    let mut h = host_on_current();
    let p = one_host(&mut h)?;
    let taken_at_unix_ns = tasksnap_sys::clock_ns(libc::CLOCK_REALTIME);
    let taken_at_boottime_ns = tasksnap_sys::clock_ns(libc::CLOCK_BOOTTIME);
    let (mut filled, stats) = p.fill(&[(id, id)], procfs_groups(groups, real_ids))?;
    Ok(Snapshot {
        taken_at_unix_ns,
        taken_at_boottime_ns,
        boot_time_unix_s: p.units().boot_time_unix_s,
        backend: Backend::Procfs,
        tasks: filled.remove(&(id, id)).into_iter().collect(),
        stats,
    })
}

/// User names for `uids`, as the bytes the system gives (the uid as text when it has no
/// name, as psutil's `username()`).
pub(crate) fn user_names(uids: impl IntoIterator<Item = u32>) -> Vec<(u32, Vec<u8>)> {
    let mut h = host();
    uids.into_iter()
        .map(|uid| {
            let name = match h.names.user(uid) {
                Some(n) => n.to_vec(),
                None => uid.to_string().into_bytes(),
            };
            (uid, name)
        })
        .collect()
}

/// Runs `more`, a second whole-system pass of the same call (the threads of `process_iter`'s
/// processes), and counts it in the call's report: the first pass's backend, both passes'
/// time, the second as one phase.
pub(crate) fn counted_with_last<T>(more: impl FnOnce() -> T) -> T {
    let first = host().last.clone();
    let started = Instant::now();
    let out = more();
    let took = started.elapsed();
    if let Some((mut report, d)) = first {
        report.phases.push(("second pass", took));
        host().last = Some((report, d + took));
    }
    out
}

/// Records the report of a thread-state source (for [`last_report`]).
pub(crate) fn set_last(report: PassReport, took: Duration) {
    host().last = Some((report, took));
}

/// What answered the last whole-system call (`process_iter`, `snapshot`, `children`,
/// `states`) and what it cost: a dict with `backend` ("bpf" or "procfs"), `why`, `pinned`,
/// `seconds` (the whole call in the library, collector opening included) and `phases`
/// (name, seconds) as the collector measured them. None before the first call.
#[pyfunction]
pub(crate) fn last_report(py: Python<'_>) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Some((r, took)) = host().last.clone() else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("backend", r.backend.name())?;
    d.set_item("why", &r.why)?;
    d.set_item("pinned", r.pinned)?;
    d.set_item("seconds", took.as_secs_f64())?;
    let phases: Vec<(&str, f64)> = r
        .phases
        .iter()
        .map(|(n, d)| (*n, d.as_secs_f64()))
        .collect();
    d.set_item("phases", phases)?;
    Ok(Some(d))
}

/// Boot time, seconds since the epoch (`btime`), as psutil's `boot_time()`; `OSError` when
/// the tree's `stat` cannot be read (the library's 0).
#[pyfunction]
pub(crate) fn boot_time(py: Python<'_>) -> PyResult<f64> {
    let q = Query::new(Selector::Pid(std::process::id() as i32), Groups::default());
    let snap = py.detach(|| one(&q, false)).map_err(crate::collect_error)?;
    if snap.boot_time_unix_s == 0 {
        return Err(pyo3::exceptions::PyOSError::new_err(format!(
            "stat under {} could not be read",
            options().proc_root.display()
        )));
    }
    Ok(snap.boot_time_unix_s as f64)
}
