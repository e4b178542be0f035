//! The /proc source, for callers who may not load BPF. What it can know exactly it takes
//! exactly; what it cannot, it samples, and says so ([`Mode::sampled`]):
//! - running: `/proc/PID/task/TID/schedstat` (ns on a CPU; kept by the kernel without
//!   CONFIG_SCHEDSTATS), exact. The caller's own thread is read with
//!   `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` instead: schedstat shows `se.sum_exec_runtime`
//!   as last updated (at a tick, or when the thread left the CPU), which for the thread doing
//!   the read omits its current run, while the clock brings it up to date first
//!   (`task_sched_runtime()` runs `update_curr()` for a running task);
//! - runnable: schedstat's run-queue wait, which counts a wait only when it ends
//!   (`sched_info_arrive()`): exact for the waits that ended, and what no sample explains for
//!   a thread only ever seen in R is taken as a wait still going on (see
//!   `tasksnap_states::interval`): an estimate, so the figure is labelled sampled;
//! - disk: block I/O delay from `/proc/PID/task/TID/stat` field 42 (delay accounting) when
//!   `kernel.task_delayacct` is 1, a floor under the sampled figure;
//! - the split of the rest of the off-CPU time into sleeping, disk, stopped and other: a
//!   sampler thread reads every reported thread's state letter `sample_hz` times a second
//!   (through descriptors kept open, one `pread` each), and `wchan` for threads in D (and S,
//!   on request) to name the reason.
//!
//! The sampler never reads its own state: reading its own `stat` it is necessarily running, so
//! every sample would say R while it spends its life asleep between ticks (it showed ~99.7%
//! runnable on an idle host). It counts itself asleep instead; its running time and its
//! run-queue waits come from schedstat like everyone's. Threads are known by the numbers of
//! the /proc read (so inside a pid namespace, by that namespace's when its /proc is mounted
//! there); the sampler finds itself through `thread-self`.
//!
//! Everything is read relative to an injectable root (fake trees in tests). A thread that
//! vanishes between the listing and a read is skipped; an unreadable file leaves the thread
//! out. Threads that exit between two samples are not reported (their last figures are
//! gone with them; the BPF source keeps them).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tasksnap_procfs::parse::{parse_schedstat, parse_stat_brief, parse_wchan, stat_state_letter};

use crate::collector::StateSource;
use crate::error::Error;
use crate::states::{Filter, Mode, Sample, ThreadTotals};
use tasksnap_model::states::{State, NSTATES};
use tasksnap_model::TaskId;

/// Settings of the /proc source.
#[derive(Debug, Clone)]
pub struct Options {
    /// Which threads to report.
    pub filter: Filter,
    /// State-letter samples per second (20 by default, as 0x.tools psn).
    pub sample_hz: u32,
    /// Read `wchan` for threads in S too (always for D).
    pub track_sleep: bool,
    /// The procfs root (normally /proc).
    pub proc_root: PathBuf,
    /// Descriptors of the open-files limit the source leaves for everything else: it keeps
    /// at most the rest open (one per sampled file) and opens files per read past that.
    pub fds_left: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            filter: Filter::default(),
            sample_hz: 20,
            track_sleep: false,
            proc_root: PathBuf::from(tasksnap_sys::roots::PROC),
            fds_left: 512,
        }
    }
}

/// The fields of a `/proc/PID/task/TID/stat` line the source needs: the reading layer's
/// [`parse_stat_brief`] with the comm made text (lossy) for filters and display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Command name (from between the first `(` and the last `)`), lossy UTF-8.
    pub comm: String,
    /// Its exact bytes when they are not valid UTF-8.
    pub comm_bytes: Option<Vec<u8>>,
    /// State letter (field 3).
    pub state: u8,
    /// PF_* flags (field 9).
    pub flags: u64,
    /// Start time, clock ticks after boot (field 22).
    pub start_ticks: u64,
    /// Block I/O delay, clock ticks (field 42; 0 unless delay accounting is on).
    pub blkio_ticks: u64,
}

/// [`Stat`] of a stat line; `None` when it does not have the fields.
pub fn thread_stat(text: &[u8]) -> Option<Stat> {
    let st = parse_stat_brief(text)?;
    let comm_bytes = std::str::from_utf8(&st.comm)
        .is_err()
        .then(|| st.comm.to_vec());
    Some(Stat {
        comm: String::from_utf8_lossy(&st.comm).into_owned(),
        comm_bytes,
        state: st.state,
        flags: st.flags,
        start_ticks: st.start_ticks,
        blkio_ticks: st.blkio_ticks,
    })
}

const PF_KTHREAD: u64 = 0x0020_0000;

/// One thread the sampler watches, with its files kept open (None when out of descriptors:
/// then opened per read).
#[derive(Debug)]
struct Tracked {
    tgid: i32,
    stat: Option<File>,
    schedstat: Option<File>,
    wchan: Option<File>,
    samples: [u64; NSTATES],
    /// Samples per (state, reason id).
    reasons: HashMap<(State, u32), u64>,
    current: Option<State>,
    /// schedstat (run, delay) at the last tick, and the reason then.
    last_sched: Option<(u64, u64)>,
    last_reason: Option<(State, u32)>,
    /// Ticks still to skip, ticks skipped and not yet counted, and how many checks in a row
    /// found the thread had not run (see [`tick`]).
    skip: u8,
    pending: u64,
    steady: u8,
    /// Reads of `wchan` in a row that named nothing while the thread was blocked (see
    /// [`tick`]).
    reason_misses: u8,
}

/// A thread that has not run for this many checks in a row is checked every
/// `MAX_SKIP + 1` ticks only.
const MAX_SKIP: u8 = 3;

/// A blocked thread whose `wchan` named nothing is read again on this many more ticks, even
/// though it has not run, before its reason is left unknown.
const REASON_RETRIES: u8 = 3;

impl Tracked {
    fn new(tgid: i32, stat: Option<File>, schedstat: Option<File>) -> Self {
        Tracked {
            tgid,
            stat,
            schedstat,
            wchan: None,
            samples: [0; NSTATES],
            reasons: HashMap::new(),
            current: None,
            last_sched: None,
            last_reason: None,
            skip: 0,
            pending: 0,
            steady: 0,
            reason_misses: 0,
        }
    }

    /// Counts `n` more samples of the last state (and reason).
    fn count_last(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(st) = self.current {
            self.samples[st.index()] += n;
            if let Some(r) = self.last_reason {
                *self.reasons.entry(r).or_default() += n;
            }
        }
    }
}

#[derive(Debug, Default)]
struct Shared {
    threads: HashMap<i32, Tracked>,
    /// Descriptors the sampler may still keep open (the rest of the open-files limit is left
    /// for everything else: past it, files are opened per read).
    fd_budget: usize,
    /// wchan names to reason ids.
    reasons: HashMap<String, u32>,
}

/// The /proc source and its sampler thread (stopped when dropped).
#[derive(Debug)]
pub struct ProcfsSource {
    opts: Options,
    /// The root is a real procfs (not a fake tree): the caller's own thread is there.
    real_proc: bool,
    delayacct: bool,
    tick_ns: u64,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
    /// The estimate of throttled time from the cgroups' own counts.
    throttle: super::throttle::Estimate,
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // The sampler never panics while holding the lock; if it did, the data is still counts.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The calling thread's tid as the /proc at `root` numbers it (`thread-self` links to
/// `PID/task/TID`); None when the root has no such link (a fake tree, or a /proc of a pid
/// namespace the caller is not in).
pub fn own_tid(root: &Path) -> Option<i32> {
    tasksnap_procfs::parse::parse_self_link(&std::fs::read_link(root.join("thread-self")).ok()?)
}

/// Whether `root` is a mounted procfs.
fn is_procfs(root: &Path) -> bool {
    tasksnap_sys::is_procfs(root)
}

/// The calling thread's CPU time, ns: `se.sum_exec_runtime` brought up to date (the kernel
/// runs `update_curr()` for it first, which reading one's own schedstat does not).
fn own_runtime_ns() -> Option<u64> {
    tasksnap_sys::thread_cpu_ns()
}

fn boottime_ns() -> u64 {
    crate::BootClock::caller().now_ns()
}

/// Lets this process keep a descriptor open per sampled thread: the soft limit of open files
/// is raised to the hard one (often 1024 -> 524288). Returns how many the sampler may keep:
/// the limit less `left` for everything else.
fn raise_nofile(left: usize) -> usize {
    tasksnap_sys::raise_nofile_limit().map_or(0, |l| (l as usize).saturating_sub(left))
}

/// Whether delay accounting is on (`kernel.task_delayacct`, Linux 5.14; before that it was on
/// unless booted with nodelayacct, and the sysctl did not exist).
pub fn delayacct_on(proc_root: &Path) -> bool {
    std::fs::read(proc_root.join("sys/kernel/task_delayacct"))
        .is_ok_and(|v| tasksnap_procfs::system::parse_sysctl_on(&v))
}

/// The note shown when delay accounting is off.
pub const DELAYACCT_OFF: &str = "delay accounting is off: disk time is sampled only; for \
     exact block I/O delay run `sysctl kernel.task_delayacct=1` (as root; it counts for threads \
     started afterwards), or use the BPF mode as root";

impl ProcfsSource {
    /// Starts the sampler. Fails only when the /proc root cannot be read at all.
    pub fn new(opts: Options) -> Result<ProcfsSource, Error> {
        std::fs::read_dir(&opts.proc_root).map_err(|source| Error::Io {
            path: opts.proc_root.display().to_string(),
            error: source,
        })?;
        let fd_budget = raise_nofile(opts.fds_left);
        let tick_ns = 1_000_000_000 / crate::units::clock_ticks_per_s();
        let delayacct = delayacct_on(&opts.proc_root);
        let real_proc = is_procfs(&opts.proc_root);
        let shared = Arc::new(Mutex::new(Shared {
            fd_budget,
            ..Shared::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let mut src = ProcfsSource {
            opts,
            real_proc,
            delayacct,
            tick_ns,
            shared,
            stop,
            sampler: None,
            throttle: super::throttle::Estimate::default(),
        };
        src.throttle = super::throttle::Estimate::new(&src.opts.proc_root);
        // The first listing, so that the sampler has threads to watch from the start.
        src.refresh();
        let period = Duration::from_secs_f64(1.0 / f64::from(src.opts.sample_hz.clamp(1, 1000)));
        let (shared, stop) = (src.shared.clone(), src.stop.clone());
        let (root, track_sleep) = (src.opts.proc_root.clone(), src.opts.track_sleep);
        src.sampler = Some(
            std::thread::Builder::new()
                .name("tasksnap-sampler".into())
                .spawn(move || sampler(&shared, &stop, period, &root, track_sleep))
                .map_err(|source| Error::Io {
                    path: "sampler thread".into(),
                    error: source,
                })?,
        );
        Ok(src)
    }

    /// The (tgid, tid) of every thread the filter may select: with only pids asked for, the
    /// task directories of those processes; otherwise every process's.
    fn list(&self) -> Vec<(i32, i32)> {
        let root = &self.opts.proc_root;
        let f = &self.opts.filter;
        let pids: Vec<i32> = if f.comms.is_empty() && !f.pids.is_empty() {
            f.pids.clone()
        } else {
            numeric_entries(root)
        };
        let mut out = Vec::new();
        for pid in pids {
            for tid in numeric_entries(&root.join(format!("{pid}/task"))) {
                out.push((pid, tid));
            }
        }
        out
    }

    /// Brings the watched threads up to date with /proc: vanished ones are dropped, new ones
    /// the filter selects are opened. Returns the watched tids.
    fn refresh(&mut self) -> Vec<i32> {
        let listed = self.list();
        let root = self.opts.proc_root.clone();
        let mut sh = lock(&self.shared);
        let keep: std::collections::HashSet<i32> = listed.iter().map(|l| l.1).collect();
        let mut freed = 0;
        sh.threads.retain(|tid, t| {
            let k = keep.contains(tid);
            if !k {
                freed += [t.stat.is_some(), t.schedstat.is_some(), t.wchan.is_some()]
                    .iter()
                    .filter(|&&o| o)
                    .count();
            }
            k
        });
        sh.fd_budget += freed;
        let mut buf = [0u8; 1024];
        for &(pid, tid) in &listed {
            if sh.threads.contains_key(&tid) {
                continue;
            }
            let dir = root.join(format!("{pid}/task/{tid}"));
            let mut open = |name: &str| {
                if sh.fd_budget < 2 {
                    return None;
                }
                let f = File::open(dir.join(name)).ok()?;
                sh.fd_budget -= 1;
                Some(f)
            };
            let stat = open("stat");
            let schedstat = open("schedstat");
            if !self.opts.filter.comms.is_empty() {
                // The name decides: read it once, when the thread is first seen.
                let Some(n) = pread_or_read(stat.as_ref(), || dir.join("stat"), &mut buf) else {
                    continue;
                };
                let Some(st) = thread_stat(&buf[..n]) else {
                    continue;
                };
                if !self.opts.filter.matches(pid, &st.comm) {
                    sh.fd_budget += usize::from(stat.is_some()) + usize::from(schedstat.is_some());
                    continue;
                }
            }
            sh.threads.insert(tid, Tracked::new(pid, stat, schedstat));
        }
        sh.threads.keys().copied().collect()
    }
}

/// Numeric directory entries (pids, tids); empty when the directory is gone.
fn numeric_entries(dir: &Path) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| tasksnap_procfs::parse::parse_task_dir_name(&e.ok()?.file_name()))
        .collect()
}

/// Reads a small /proc file through a kept descriptor (or by path when there is none).
fn pread_or_read(
    file: Option<&File>,
    path: impl FnOnce() -> PathBuf,
    buf: &mut [u8],
) -> Option<usize> {
    match file {
        Some(f) => f.read_at(buf, 0).ok(),
        None => {
            let data = std::fs::read(path()).ok()?;
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Some(n)
        }
    }
}

/// One tick for one thread: its state letter (and wchan when blocked), counted.
///
/// A thread whose schedstat has not moved since the last check has not run, so it cannot have
/// changed state (leaving a sleep, stopping, freezing all need the CPU): its last letter and
/// reason count again without reading stat or wchan, only schedstat. (A thread woken but not
/// yet run is then counted in its old state for that wait at most; the runnable figure itself
/// comes from schedstat.) And a thread found not to have run is checked less often, every
/// second, third, then fourth tick: the skipped ticks count its last state when the next check
/// (or the interval's end) comes. That is exact when it still has not run; when it has, the
/// change of state is placed at the check, up to 3 ticks late. Why: on /proc, each read of
/// another thread's file costs ~2 us (get_pid_task, fdget, formatting, cold caches: measured
/// with perf on Linux 6.18), 4.3% of a CPU for 1,000 threads at 20 Hz without these two
/// savings.
fn tick(
    t: &mut Tracked,
    tid: i32,
    root: &Path,
    track_sleep: bool,
    fd_budget: &mut usize,
    reasons: &mut HashMap<String, u32>,
    buf: &mut [u8],
) {
    if t.skip > 0 {
        t.skip -= 1;
        t.pending += 1;
        return;
    }
    let tgid = t.tgid;
    let dir = || root.join(format!("{tgid}/task/{tid}"));
    let sched = pread_or_read(t.schedstat.as_ref(), || dir().join("schedstat"), buf)
        .and_then(|n| parse_schedstat(&buf[..n]).ok())
        .map(|v| (v.run_ns, v.run_delay_ns));
    let pending = std::mem::take(&mut t.pending);
    t.count_last(pending);
    let wants_reason = |st: State| st == State::Disk || (track_sleep && st == State::Sleeping);
    if let (Some(now), Some(last), Some(st)) = (sched, t.last_sched, t.current) {
        // A blocked thread whose wchan named nothing is not counted on from its last read: the
        // state letter turns D at set_current_state(), before schedule() takes the thread off
        // its runqueue, and until then get_wchan() returns 0 (it requires !p->on_rq in
        // kernel/sched/core.c since 5.16, "sched: Add wrapper for get_wchan() to keep task
        // blocked"). schedstat can already hold the thread's final runtime at that read, so
        // without this the whole wait would count with no reason.
        let reason_unknown =
            wants_reason(st) && t.last_reason.is_none() && t.reason_misses <= REASON_RETRIES;
        if now == last && st != State::Running && !reason_unknown {
            t.count_last(1);
            t.steady = (t.steady + 1).min(MAX_SKIP);
            t.skip = t.steady;
            return;
        }
        if now != last {
            t.reason_misses = 0;
        }
    }
    t.steady = 0;
    t.last_sched = sched;
    t.last_reason = None;
    let Some(n) = pread_or_read(t.stat.as_ref(), || dir().join("stat"), buf) else {
        t.current = None; // gone: dropped at the next refresh
        return;
    };
    let Some(letter) = stat_state_letter(&buf[..n]) else {
        return;
    };
    let st = State::from_letter(letter);
    t.samples[st.index()] += 1;
    t.current = Some(st);
    if wants_reason(st) {
        if t.wchan.is_none() && *fd_budget > 0 {
            t.wchan = File::open(dir().join("wchan")).ok();
            *fd_budget -= usize::from(t.wchan.is_some());
        }
        let Some(n) = pread_or_read(t.wchan.as_ref(), || dir().join("wchan"), buf) else {
            return;
        };
        // Empty: "0", not blocked any more, not yet off its runqueue, or the kernel hides it.
        let name = String::from_utf8_lossy(parse_wchan(&buf[..n]))
            .trim()
            .to_string();
        if name.is_empty() {
            t.reason_misses = t.reason_misses.saturating_add(1);
            return;
        }
        t.reason_misses = 0;
        let next_id = reasons.len() as u32;
        let id = *reasons.entry(name).or_insert(next_id);
        *t.reasons.entry((st, id)).or_default() += 1;
        t.last_reason = Some((st, id));
    }
}

/// The sampler's tick for itself: asleep. A thread reading its own `stat` always finds itself
/// running (R), though between ticks it sleeps; that is the state the tick stands for.
fn tick_self(t: &mut Tracked) {
    let pending = std::mem::take(&mut t.pending);
    t.count_last(pending);
    t.skip = 0;
    t.last_reason = None;
    t.samples[State::Sleeping.index()] += 1;
    t.current = Some(State::Sleeping);
}

/// The sampler thread: every `period`, a [`tick`] for every watched thread, on an absolute
/// schedule so that slow passes do not drift the rate.
fn sampler(
    shared: &Mutex<Shared>,
    stop: &AtomicBool,
    period: Duration,
    root: &Path,
    track_sleep: bool,
) {
    let mut buf = [0u8; 1024];
    let mut next = Instant::now();
    let me = own_tid(root);
    while !stop.load(Ordering::Relaxed) {
        {
            let mut guard = lock(shared);
            let sh = &mut *guard;
            for (&tid, t) in sh.threads.iter_mut() {
                if Some(tid) == me {
                    tick_self(t);
                    continue;
                }
                tick(
                    t,
                    tid,
                    root,
                    track_sleep,
                    &mut sh.fd_budget,
                    &mut sh.reasons,
                    &mut buf,
                );
            }
        }
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Behind by more than a period (a slow pass): skip the missed ticks.
            next = now;
        }
    }
}

impl StateSource for ProcfsSource {
    fn sample(&mut self) -> Result<Sample, Error> {
        self.refresh();
        let root = self.opts.proc_root.clone();
        let period_ns = 1_000_000_000 / u64::from(self.opts.sample_hz.clamp(1, 1000));
        let mut sample = Sample::new(
            Mode::Procfs {
                sample_hz: self.opts.sample_hz,
                delayacct: self.delayacct,
            },
            boottime_ns(),
        );
        if !self.delayacct {
            sample.notes.push(DELAYACCT_OFF.to_string());
        }
        let mut buf = [0u8; 1024];
        // The calling thread, whose own schedstat lags (see the module header).
        let me = if self.real_proc { own_tid(&root) } else { None };
        let mut guard = lock(&self.shared);
        let sh = &mut *guard;
        for (id_name, &id) in &sh.reasons {
            sample.reasons.insert(id, Arc::from(vec![id_name.clone()]));
        }
        for (&tid, t) in sh.threads.iter_mut() {
            // Skipped ticks of threads that had not run count now, in this interval.
            let pending = std::mem::take(&mut t.pending);
            t.count_last(pending);
            let dir = || root.join(format!("{}/task/{tid}", t.tgid));
            let Some(n) = pread_or_read(t.stat.as_ref(), || dir().join("stat"), &mut buf) else {
                continue; // gone, or not ours to read
            };
            let Some(st) = thread_stat(&buf[..n]) else {
                continue;
            };
            let Some((run_ns, delay_ns)) =
                pread_or_read(t.schedstat.as_ref(), || dir().join("schedstat"), &mut buf)
                    .and_then(|n| parse_schedstat(&buf[..n]).ok())
                    .map(|v| (v.run_ns, v.run_delay_ns))
            else {
                continue;
            };
            let run_ns = match (Some(tid) == me).then(own_runtime_ns).flatten() {
                Some(now) => now.max(run_ns),
                None => run_ns,
            };
            let seen_at_ns = boottime_ns();
            let mut state_ns = [0u64; NSTATES];
            state_ns[State::Running.index()] = run_ns;
            state_ns[State::Runnable.index()] = delay_ns;
            if self.delayacct {
                state_ns[State::Disk.index()] = st.blkio_ticks.saturating_mul(self.tick_ns);
            }
            let tt = ThreadTotals {
                id: TaskId {
                    tgid: t.tgid,
                    tid,
                    start_time_ns: crate::BootClock::caller()
                        .from_proc_ticks(st.start_ticks, self.tick_ns),
                },
                comm: st.comm.into(),
                comm_bytes: st.comm_bytes.map(Arc::from),
                kernel_thread: st.flags & PF_KTHREAD != 0,
                state_ns,
                samples: t.samples,
                current: t.current.or(Some(State::from_letter(st.state))),
                reasons: t
                    .reasons
                    .iter()
                    .map(|(&(s, id), &n)| (s, id, n * period_ns))
                    .collect(),
                // Sampled: the reasons grow by samples, not with the wait's time.
                wait_reason: None,
                seen_at_ns,
                exited: false,
            };
            sample.threads.insert(tt.id, tt);
        }
        drop(guard);
        self.estimate_throttled(&mut sample);
        Ok(sample)
    }
}

impl ProcfsSource {
    /// Splits each thread's run delay into the wait behind other threads and the estimated
    /// time its cgroup's quota held it back ([`super::throttle`]).
    fn estimate_throttled(&mut self, sample: &mut Sample) {
        let run = State::Runnable.index();
        let delays: Vec<(i32, i32, u64)> = sample
            .threads
            .values()
            .map(|t| (t.id.tid, t.id.tgid, t.state_ns[run]))
            .collect();
        let throttled = self.throttle.update(&self.opts.proc_root, &delays);
        // The map is not changed in between: its values come in the same order again.
        for (t, thr) in sample.threads.values_mut().zip(throttled) {
            t.state_ns[State::Throttled.index()] = thr;
            t.state_ns[run] -= thr;
        }
    }
}

impl Drop for ProcfsSource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that turned D (a vfork parent, comm `dwaiter`: a 6.18 stat line with the state
    /// letter it had) while its wchan still read "0": the next tick reads wchan again even
    /// though schedstat has not moved, and gives up after [`REASON_RETRIES`] more reads.
    #[test]
    fn blocked_thread_whose_wchan_named_nothing_is_read_again() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("13449/task/13453");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("stat"),
            "13453 (dwaiter) D 1 13449 11353 0 -1 4194368 139 0 1 0 0 0 0 0 20 0 2 0 5898915 \
             2990080 408 18446744073709551615 94236099002368 94236099020297 140729357637408 0 0 \
             0 0 6 0 1 0 0 17 1 0 0 0 0 0 94236099034384 94236099035648 94237128781824 \
             140729357638336 140729357638345 140729357638345 140729357639657 0\n",
        )
        .expect("stat");
        std::fs::write(dir.join("schedstat"), "1222773 661534 4\n").expect("schedstat");
        std::fs::write(dir.join("wchan"), "0").expect("wchan");
        let mut t = Tracked::new(13449, None, None);
        let mut reasons = HashMap::new();
        let mut budget = 8;
        let mut buf = [0u8; 1024];
        let mut run = |t: &mut Tracked, reasons: &mut HashMap<String, u32>| {
            tick(t, 13453, root.path(), false, &mut budget, reasons, &mut buf)
        };

        run(&mut t, &mut reasons);
        assert_eq!(t.current, Some(State::Disk));
        assert_eq!(t.last_reason, None);
        std::fs::write(dir.join("wchan"), "kernel_clone").expect("wchan");
        run(&mut t, &mut reasons);
        let id = reasons["kernel_clone"];
        assert_eq!(t.last_reason, Some((State::Disk, id)));
        assert_eq!(t.samples[State::Disk.index()], 2);
        // Known now: the unchanged schedstat stands for it, with its reason.
        run(&mut t, &mut reasons);
        assert!(t.skip > 0);
        assert_eq!(t.reasons[&(State::Disk, id)], 2);

        // One whose wchan never names anything (the kernel hides it): read on
        // REASON_RETRIES more ticks, then left to the shortcut.
        let mut u = Tracked::new(13449, None, None);
        std::fs::write(dir.join("wchan"), "0").expect("wchan");
        for _ in 0..=REASON_RETRIES {
            run(&mut u, &mut reasons);
            assert_eq!(u.skip, 0);
        }
        run(&mut u, &mut reasons);
        assert!(u.skip > 0);
        assert_eq!(
            u.samples[State::Disk.index()],
            u64::from(REASON_RETRIES) + 2
        );
    }
}
