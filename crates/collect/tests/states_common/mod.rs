//! Workloads the state tests spawn as threads of the test process, each in a known state, and
//! the measuring around them. Tests take [`serial`] so that two workloads never compete for
//! the CPUs.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tasksnap_collect::testing::StateSource;
use tasksnap_states::interval::Reason;
use tasksnap_states::{between, Interval, Rollup, Row, State};

static SERIAL: Mutex<()> = Mutex::new(());

/// One workload at a time, in this process and on the host: the test binaries that include
/// this module run in parallel lanes (tests/lanes.py), and their hogs and spinners, pinned to
/// the same CPU at the same priority, would each be what holds the other's CPU.
pub struct Serial {
    _here: MutexGuard<'static, ()>,
    _host: std::fs::File,
}

/// Takes [`Serial`]: this process's lock, then an exclusive `flock` on a file of the build's
/// own temporary directory (not a directory other users can write).
pub fn serial() -> Serial {
    let here = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = concat!(env!("CARGO_TARGET_TMPDIR"), "/states-workloads.lock");
    let host = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .expect("the workloads' lock file");
    // SAFETY: flock on a descriptor this function owns; it blocks until the lock is free.
    let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&host), libc::LOCK_EX) };
    assert_eq!(r, 0, "flock: {}", std::io::Error::last_os_error());
    Serial {
        _here: here,
        _host: host,
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[allow(unused_imports)] // Not every test binary that includes this module needs it.
pub use tasksnap_loadgen::root_or_skip;

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

pub use tasksnap_loadgen::cpu_cgroup::pin_to;

/// Nice -20 for the calling thread (root only); false when refused. Against nice-0 tasks
/// (weight 1024) a nice -20 task (weight 88761) gets 98.9% of a contended CPU, so the hogs
/// usually get most of theirs; but other nice -20 load (another test suite's hogs) can take
/// more than half of it, so no test relies on the share they get. Real-time policies would
/// not do better here (RT throttling and the fair server take up to 10%), and two equal CFS
/// tasks share a CPU in slices of a few ms where SCHED_RR takes 100 ms turns.
pub fn top_priority() -> bool {
    // SAFETY: setpriority on the calling thread (who 0 with PRIO_PROCESS is the caller's tid
    // on Linux).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -20) == 0 }
}

/// The last CPU this process may run on.
pub fn last_cpu() -> usize {
    // The highest CPU the process may use, from its main thread's mask: not this thread's
    // (available_parallelism() follows it, and after pin_to(0), a test's first source, it
    // said 1, which put the next source's hogs, at nice -20, on the test thread's CPU: it
    // starved, one run took 855 s under `nice cargo test`).
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its
    // size into it; getpid takes no pointers.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(libc::getpid(), std::mem::size_of_val(&set), &mut set) != 0 {
            return 0;
        }
        (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| libc::CPU_ISSET(c, &set))
            .unwrap_or(0)
    }
}

/// A thread running a workload until dropped.
pub struct Worker {
    pub tid: i32,
    stop: Arc<AtomicBool>,
    /// A hog's own schedstat readings (see [`SelfReading`]).
    reading: Option<Arc<SelfReading>>,
    tx: Option<mpsc::Sender<()>>,
    on_stop: Option<Box<dyn FnOnce() + Send>>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    fn spawn(
        name: &str,
        body: impl FnOnce(Arc<AtomicBool>, mpsc::Receiver<()>) + Send + 'static,
    ) -> Worker {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (tid_tx, tid_rx) = mpsc::channel();
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = tid_tx.send(gettid());
                body(s, rx);
            })
            .expect("spawn a worker thread");
        let tid = tid_rx.recv().expect("worker tid");
        Worker {
            tid,
            stop,
            reading: None,
            tx: Some(tx),
            on_stop: None,
            handle: Some(handle),
        }
    }

    /// Spins on the CPU at nice -20 (as root); pinned to `cpu` when given.
    /// It reads its own schedstat when asked ([`Worker::own_schedstat`]).
    pub fn hog(name: &str, cpu: Option<usize>) -> Worker {
        let reading = Arc::new(SelfReading::default());
        let r = reading.clone();
        let mut w = Worker::spawn(name, move |stop, _| {
            if let Some(c) = cpu {
                pin_to(c);
            }
            if !top_priority() {
                eprintln!("note: nice -20 refused; the hog competes with other load");
            }
            let (mut x, mut answered) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                let asked = r.asked.load(Ordering::Relaxed);
                if asked != answered {
                    r.answer(asked);
                    answered = asked;
                }
            }
        });
        w.reading = Some(reading);
        w
    }

    /// The worker's schedstat (run, delay) as it read it itself, and when: a hog reads it
    /// while it runs, so no run-queue wait of its is under way, where a reading by another
    /// thread misses the wait going on (schedstat counts a wait once it ends: a 100 ms wait
    /// under way at the start of a window was seen on a busy host). Other workers: read from
    /// here.
    pub fn own_schedstat(&self) -> (Instant, (u64, u64)) {
        let Some(r) = &self.reading else {
            return (Instant::now(), schedstat(self.tid));
        };
        let asked = r.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let t0 = Instant::now();
        loop {
            if let Some(a) = *r.answer.lock().unwrap_or_else(|e| e.into_inner()) {
                if a.asked == asked {
                    return (a.at, a.schedstat);
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "hog {} did not run for 20 s",
                self.tid
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sleeps (S, in futex_wait) until stopped.
    pub fn sleeper(name: &str) -> Worker {
        Worker::spawn(name, |_, rx| {
            let _ = rx.recv();
        })
    }

    /// Waits in D: the thread vforks (clone(CLONE_VFORK) without CLONE_VM, so the child has its
    /// own memory) and the child pauses; a vfork parent waits for its child to exec or exit
    /// in wait_for_vfork_done(), uninterruptibly (TASK_KILLABLE). Stopping kills the child.
    pub fn dstate(name: &str) -> Worker {
        let child = Arc::new(AtomicI32::new(0));
        let c = child.clone();
        let mut w = Worker::spawn(name, move |_, _| {
            // SAFETY: a raw clone with a null stack continues on a copy of this stack in the
            // child, like fork(). The child only makes raw system calls (pause, exit), which
            // are async-signal-safe, and never returns into Rust code.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone,
                    (libc::CLONE_VFORK | libc::SIGCHLD) as libc::c_ulong,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                )
            };
            if pid == 0 {
                loop {
                    // SAFETY: raw system calls in the child, see above.
                    unsafe { libc::syscall(libc::SYS_pause) };
                }
            }
            c.store(pid as i32, Ordering::SeqCst);
            let mut status = 0;
            // SAFETY: reaps the child that was just killed; `status` outlives the call.
            unsafe { libc::waitpid(pid as i32, &mut status, 0) };
        });
        let c = child.clone();
        let tid = w.tid;
        w.on_stop = Some(Box::new(move || {
            // The child's pid is only known once the parent left clone(): find it by parent.
            let kids = std::fs::read_to_string(format!("/proc/self/task/{tid}/children"))
                .unwrap_or_default();
            for k in kids
                .split_whitespace()
                .filter_map(|k| k.parse::<i32>().ok())
            {
                // SAFETY: kill(2) on our own vfork child.
                unsafe { libc::kill(k, libc::SIGKILL) };
            }
            let p = c.load(Ordering::SeqCst);
            if p > 0 {
                // SAFETY: as above.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }));
        w
    }

    /// mmap(MAP_POPULATE) and munmap of `file` in a loop: many of these queue on the mmap
    /// lock, as the seed's query threads did.
    pub fn mapper(name: &str, fd: i32, len: usize) -> Worker {
        Worker::spawn(name, move |stop, _| {
            while !stop.load(Ordering::Relaxed) {
                tasksnap_loadgen::map_populated_once(fd, len);
            }
        })
    }

    /// Current state letter from /proc.
    pub fn letter(&self) -> char {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{}/stat", self.tid))
            .unwrap_or_default();
        stat.rsplit_once(')')
            .and_then(|(_, r)| r.trim_start().chars().next())
            .unwrap_or('?')
    }
}

/// A request count and the answer to the last request.
#[derive(Default)]
struct SelfReading {
    asked: AtomicU64,
    answer: Mutex<Option<Answer>>,
}

/// Request `asked` answered: the worker's schedstat (run, delay), read at `at`.
#[derive(Clone, Copy)]
struct Answer {
    asked: u64,
    at: Instant,
    schedstat: (u64, u64),
}

impl SelfReading {
    /// On the hog's thread: answers request `asked`.
    fn answer(&self, asked: u64) {
        let v = parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat"));
        let a = Answer {
            asked,
            at: Instant::now(),
            schedstat: v,
        };
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(a);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.tx.take();
        if let Some(f) = self.on_stop.take() {
            f();
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Waits until `cond` holds (up to 3 s).
pub fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..300 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

/// One interval of `secs` seconds.
pub fn measure(src: &mut dyn StateSource, secs: f64, rollup: Rollup) -> Interval {
    let a = src.sample().expect("first sample");
    std::thread::sleep(Duration::from_secs_f64(secs));
    let b = src.sample().expect("second sample");
    between(&a, &b, rollup)
}

pub fn row(iv: &Interval, tid: i32) -> &Row {
    iv.rows
        .iter()
        .find(|r| r.tid == Some(tid))
        .unwrap_or_else(|| panic!("no row for thread {tid} in {:#?}", iv.rows))
}

/// [`row`], printed first: the test's log shows the figures a failing assertion is about.
pub fn shown_row(iv: &Interval, tid: i32) -> &Row {
    let r = row(iv, tid);
    eprintln!("{}", show(r));
    r
}

/// ns a thread ran and waited on a run queue so far, from /proc/self/task/TID/schedstat: the
/// kernel's own accounting, an oracle for the BPF figures.
pub fn schedstat(tid: i32) -> (u64, u64) {
    parse_schedstat(&std::fs::read_to_string(format!(
        "/proc/self/task/{tid}/schedstat"
    )))
}

/// (run, delay) of a schedstat file's text; zeros when unread.
fn parse_schedstat(text: &std::io::Result<String>) -> (u64, u64) {
    let s = text.as_deref().unwrap_or_default();
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Steal time of all CPUs so far (/proc/stat, field 8 of the cpu line), ns.
pub fn steal_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    ticks * (1_000_000_000 / tasksnap_collect::testing::host::clock_ticks_per_s())
}

/// What [`measure_until_ran`] returns: the interval; the schedstat (run, delay) deltas of each
/// worker over a window that starts after the first sample and ends after the second (each
/// worker's own readings, see [`Worker::own_schedstat`]); by how much the window may be off
/// the interval at its two ends together (`slop_ns`, from each sample's start to the last
/// reading after it); and the host's steal time over the window.
pub struct Oracle {
    pub interval: Interval,
    pub deltas: Vec<(u64, u64)>,
    pub slop_ns: u64,
    pub steal_ns: u64,
}

/// One interval of at least `min_secs`, then until each of `workers` has run `min_run_ns` in
/// it (by schedstat), or `max_secs` have passed: on a host whose CPUs are taken by other load
/// a workload may get little of its CPU, and an interval in which it hardly ran would check
/// nothing. It does not assume the workload gets any share in particular.
pub fn measure_until_ran(
    src: &mut dyn StateSource,
    min_secs: f64,
    max_secs: f64,
    workers: &[&Worker],
    min_run_ns: u64,
) -> Oracle {
    let steal0 = steal_ns();
    let (a, before, slop_a) = sample_and_read(src, workers);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(min_secs));
    let ran_enough = || {
        workers
            .iter()
            .zip(&before)
            .all(|(w, b)| schedstat(w.tid).0.saturating_sub(b.0) >= min_run_ns)
    };
    while !ran_enough() && t0.elapsed() < Duration::from_secs_f64(max_secs) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (b, after, slop_b) = sample_and_read(src, workers);
    let deltas = before
        .iter()
        .zip(&after)
        .map(|(x, y)| (y.0.saturating_sub(x.0), y.1.saturating_sub(x.1)))
        .collect();
    Oracle {
        interval: between(&a, &b, Rollup::Thread),
        deltas,
        slop_ns: (slop_a + slop_b).as_nanos() as u64,
        steal_ns: steal_ns().saturating_sub(steal0),
    }
}

/// A sample, then each worker's own schedstat; and the time from the sample's start to the
/// last reading (the sample reads a thread somewhere in that time, its reading is at the end).
fn sample_and_read(
    src: &mut dyn StateSource,
    workers: &[&Worker],
) -> (
    tasksnap_collect::testing::states::Sample,
    Vec<(u64, u64)>,
    Duration,
) {
    let t0 = Instant::now();
    let s = src.sample().expect("a sample");
    let readings: Vec<_> = workers.iter().map(|w| w.own_schedstat()).collect();
    let last = readings.iter().map(|r| r.0).max().unwrap_or(t0);
    (s, readings.into_iter().map(|r| r.1).collect(), last - t0)
}

/// How far schedstat's running figure may trail: a thread's runtime on a CPU is brought up
/// to date at ticks and switches (4 ms at HZ=250).
pub const SCHEDSTAT_LAG_NS: i64 = 10_000_000;

/// The running ns of row `r` against schedstat's delta for worker `k` of the oracle: the two
/// windows differ by at most `o.slop_ns`; schedstat lags by up to [`SCHEDSTAT_LAG_NS`] and
/// leaves out the time the hypervisor stole from the vCPU while the thread ran
/// (PARAVIRT_TIME_ACCOUNTING), which a source may count as running. So the figure must lie in
/// [oracle - slop - lag, oracle + slop + lag + steal]. Also: the thread ran at all in the
/// window (an interval in which it never ran would check nothing).
pub fn running_agrees_with_schedstat(r: &Row, o: &Oracle, k: usize) {
    let oracle = o.deltas[k].0;
    assert!(
        oracle > 0,
        "thread {:?} never ran in the window: nothing to check",
        r.tid
    );
    within_schedstat("running", r.ns[State::Running.index()], oracle, o);
}

/// One figure against its schedstat delta (see [`running_agrees_with_schedstat`]). A
/// run-queue wait is as exact: schedstat counts a wait once it ends, and the worker read its
/// own while it ran, with none under way.
pub fn within_schedstat(what: &str, ns: u64, oracle: u64, o: &Oracle) {
    let (ns, oracle) = (ns as i64, oracle as i64);
    let tol = o.slop_ns as i64 + SCHEDSTAT_LAG_NS;
    assert!(
        ns <= oracle + tol + o.steal_ns as i64 && ns >= oracle - tol,
        "{what}: {ns} ns, schedstat {oracle} ns, slop {} ns, steal {} ns",
        o.slop_ns,
        o.steal_ns
    );
}

/// Two hogs pinned to one CPU (rows `ra` and `rb` of `o`'s interval) wait for each other:
/// together they ran no longer than the interval, and while one ran the other was runnable.
/// Each row's figures are read when the sample reaches its thread, so their windows are apart
/// by at most the time the samples took (`o.slop_ns`), and schedstat lags; an estimated
/// runnable figure gets `runnable_extra_ns` more.
pub fn shared_one_cpu(o: &Oracle, ra: &Row, rb: &Row, runnable_extra_ns: i64) {
    let iv = &o.interval;
    let run = |r: &Row| r.ns[State::Running.index()] as i64;
    let runq = |r: &Row| r.ns[State::Runnable.index()] as i64;
    let tol = o.slop_ns as i64 + SCHEDSTAT_LAG_NS;
    let runq_tol = tol + runnable_extra_ns;
    assert!(
        run(ra) + run(rb) <= iv.length_ns as i64 + tol,
        "{} + {} ns ran on one CPU in {} ns",
        run(ra),
        run(rb),
        iv.length_ns
    );
    assert!(
        runq(ra) >= run(rb) - runq_tol && runq(rb) >= run(ra) - runq_tol,
        "runnable while the other ran:\n{}\n{}",
        show(ra),
        show(rb)
    );
}

pub const SEED_FILE_BYTES: usize = 4 << 20;

/// A 4 MiB file in the page cache, as the seed's column files were.
pub fn seed_file() -> std::fs::File {
    use std::io::Write;
    let mut f = tempfile::tempfile().expect("temp file");
    f.write_all(&vec![7u8; SEED_FILE_BYTES]).expect("write");
    f.sync_all().expect("sync");
    f
}

/// The seed's case: 16 threads mapping `file` (a [`seed_file`]) in and out, queueing on the
/// mmap lock.
pub fn mappers(file: &std::fs::File) -> Vec<Worker> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    (0..16)
        .map(|i| Worker::mapper(&format!("query{i}"), fd, SEED_FILE_BYTES))
        .collect()
}

/// The [`mappers`]' rows in `iv`, each printed: the sum of their D percentages, and how many
/// have a D reason under mmap, munmap or populate (within 3 frames) that `also` accepts.
pub fn mmap_waits(iv: &Interval, workers: &[Worker], also: impl Fn(&Reason) -> bool) -> (f64, u32) {
    let mut disk_total = 0.0;
    let mut named = 0;
    for w in workers {
        let r = row(iv, w.tid);
        eprintln!("{}", show(r));
        disk_total += r.pct(State::Disk);
        if r.reasons.iter().any(|x| {
            let t = x.text(3);
            x.state == State::Disk
                && also(x)
                && (t.contains("mmap") || t.contains("munmap") || t.contains("populate"))
        }) {
            named += 1;
        }
    }
    (disk_total, named)
}

/// A thread waiting on its vfork child: over 90% of `r` in D, and its top reason names the
/// wait within `frames` frames (wait_for_vfork_done() is inlined into kernel_clone() on this
/// kernel). `reason`: where the reason comes from, for the message when there is none.
pub fn in_disk_under_vfork(r: &Row, frames: usize, reason: &str) {
    assert!(r.pct(State::Disk) > 90.0, "{}", show(r));
    let text = r.top_reason.as_ref().expect(reason).text(frames);
    assert!(
        text.contains("vfork") || text.contains("kernel_clone"),
        "{text}"
    );
}

/// At least `pct` percent of `r` running or runnable (on a CPU or waiting for one).
pub fn on_cpu_at_least(r: &Row, pct: f64) {
    assert!(
        r.pct(State::Running) + r.pct(State::Runnable) >= pct,
        "{}",
        show(r)
    );
}

/// At most `pct` percent of `r` asleep or in D.
pub fn off_cpu_at_most(r: &Row, pct: f64) {
    assert!(
        r.pct(State::Sleeping) + r.pct(State::Disk) <= pct,
        "{}",
        show(r)
    );
}

pub fn show(r: &Row) -> String {
    use tasksnap_states::State::*;
    format!(
        "tid {:?} {}: run {:.1} runq {:.1} thr {:.1} sleep {:.1} disk {:.1} stop {:.1} \
         other {:.1} alive {} ms, reason {:?}",
        r.tid,
        r.comm,
        r.pct(Running),
        r.pct(Runnable),
        r.pct(Throttled),
        r.pct(Sleeping),
        r.pct(Disk),
        r.pct(Stopped),
        r.pct(Other),
        r.alive_ns / 1_000_000,
        r.top_reason.as_ref().map(|x| x.text(6))
    )
}
