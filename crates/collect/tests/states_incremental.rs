//! The incremental read of the BPF accounting (`Options::incremental`, what record and serve
//! use): each sample drains only the threads that changed and takes every other thread on
//! in its state. Checked against a whole pass over the same threads, loaded beside it, on
//! threads of this test process in every kind of activity (never woken, waking every 5 ms,
//! spinning, born and dead between samples), and for what a sample costs: a thread that
//! never wakes is not read again. Root only; CI runs them with
//! TASKSNAP_REQUIRE_PRIVILEGED=1, where a skip is a failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_collect::testing::states::bpf::{BpfSource, Options};
use tasksnap_collect::testing::states::{Filter, Sample, ThreadTotals};
use tasksnap_collect::testing::StateSource;

fn me() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Threads of this process in known kinds of activity, stopped on drop.
struct Load {
    stop: Arc<AtomicBool>,
    /// Blocked on a channel that never sends: asleep the whole test.
    sleepers: Vec<i32>,
    /// Sleeping 5 ms at a time.
    wakers: Vec<i32>,
    handles: Vec<std::thread::JoinHandle<()>>,
    _never: Vec<mpsc::Sender<()>>,
}

impl Load {
    fn start(sleepers: usize, wakers: usize, hogs: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        let mut never = Vec::new();
        let mut spawn = |kind: u8, tx: mpsc::Sender<(u8, i32)>| {
            let stop = stop.clone();
            let (ntx, nrx) = mpsc::channel::<()>();
            never.push(ntx);
            handles.push(std::thread::spawn(move || {
                let _ = tx.send((kind, gettid()));
                match kind {
                    0 => {
                        let _ = nrx.recv();
                    }
                    1 => {
                        while !stop.load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                    _ => {
                        let mut x = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            x = std::hint::black_box(x.wrapping_add(1));
                        }
                    }
                }
            }));
        };
        for _ in 0..sleepers {
            spawn(0, tx.clone());
        }
        for _ in 0..wakers {
            spawn(1, tx.clone());
        }
        for _ in 0..hogs {
            spawn(2, tx.clone());
        }
        let mut load = Load {
            stop,
            sleepers: Vec::new(),
            wakers: Vec::new(),
            handles,
            _never: never,
        };
        for _ in 0..sleepers + wakers + hogs {
            let (kind, tid) = rx.recv().expect("a thread's id");
            match kind {
                0 => load.sleepers.push(tid),
                1 => load.wakers.push(tid),
                _ => {}
            }
        }
        load
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self._never.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn incremental() -> BpfSource {
    BpfSource::load(Options {
        incremental: true,
        ..Options::default()
    })
    .expect("load the BPF accounting (incremental)")
}

fn whole() -> BpfSource {
    BpfSource::load(Options {
        filter: Filter {
            pids: vec![me()],
            comms: vec![],
        },
        ..Options::default()
    })
    .expect("load the BPF accounting (whole passes)")
}

fn own(s: &Sample) -> Vec<&ThreadTotals> {
    let me = me();
    let mut v: Vec<&ThreadTotals> = s.threads.values().filter(|t| t.id.tgid == me).collect();
    v.sort_by_key(|t| t.id.tid);
    v
}

/// One thread's totals over one interval, as two sources read it: each source counts from
/// its own start (a thread older than the source from when the source met it), so only the
/// growth between two readings compares. The readings of each end are taken at their
/// `seen_at_ns`, some time apart; every state's total only grows, and all together by the
/// time between readings, so the two growths differ, summed over the states, by at most the
/// time between the readings of each end.
fn agree(
    (a0, a1): (&ThreadTotals, &ThreadTotals),
    (b0, b1): (&ThreadTotals, &ThreadTotals),
) -> Result<(), String> {
    let gaps = a0.seen_at_ns.abs_diff(b0.seen_at_ns) + a1.seen_at_ns.abs_diff(b1.seen_at_ns);
    let grew = |x: &ThreadTotals, y: &ThreadTotals| -> Vec<u64> {
        x.state_ns
            .iter()
            .zip(&y.state_ns)
            .map(|(p, q)| q.saturating_sub(*p))
            .collect()
    };
    let (ga, gb) = (grew(a0, a1), grew(b0, b1));
    let diff: u64 = ga.iter().zip(&gb).map(|(x, y)| x.abs_diff(*y)).sum();
    // 2 ms: a record's "now" is the newer of two run queues' clocks, each updated at the
    // latest at the tick (4 ms here) of a busy CPU; the difference is far smaller in practice.
    if diff > gaps + 2_000_000 {
        return Err(format!(
            "thread {} ({}): grew by {ga:?} incrementally, by {gb:?} in whole passes (differ by \
             {diff} ns, the readings of the two ends {gaps} ns apart)",
            a1.id.tid, a1.comm
        ));
    }
    Ok(())
}

/// One test at a time: each loads its own sources and makes threads the other would read.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn incremental_samples_agree_with_whole_passes() {
    skip_unless_root!("BPF incremental thread states");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut inc = incremental();
    let mut full = whole();
    let load = Load::start(100, 4, 1);
    let mut born: Option<(i32, std::thread::JoinHandle<()>)> = None;
    let mut compared = 0;
    let mut before: Option<(Sample, Sample)> = None;
    for round in 0..6 {
        std::thread::sleep(Duration::from_millis(300));
        if round == 2 {
            // Born between samples, asleep since; another one born and gone.
            let (tx, rx) = mpsc::channel();
            let h = std::thread::spawn(move || {
                let _ = tx.send(gettid());
                std::thread::sleep(Duration::from_secs(3));
            });
            born = Some((rx.recv().expect("tid"), h));
            std::thread::spawn(|| std::thread::sleep(Duration::from_millis(20)))
                .join()
                .expect("join");
        }
        let sa = inc.sample().expect("incremental sample");
        let sb = full.sample().expect("whole pass");
        {
            let (a, b) = (own(&sa), own(&sb));
            // Every thread the whole pass has, the incremental sample has (and none it has
            // not).
            let ids = |v: &[&ThreadTotals]| v.iter().map(|t| (t.id, t.exited)).collect::<Vec<_>>();
            let (ia, ib) = (ids(&a), ids(&b));
            let missing: Vec<_> = ib.iter().filter(|id| !ia.contains(id)).collect();
            let extra: Vec<_> = ia.iter().filter(|id| !ib.contains(id)).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "round {round}: missing {missing:?}, extra {extra:?}"
            );
            if round > 2 {
                let (tid, _) = born.as_ref().expect("born");
                assert!(
                    a.iter().any(|t| t.id.tid == *tid),
                    "the thread born in round 2"
                );
            }
            let mut errors = Vec::new();
            if let Some((pa, pb)) = &before {
                for t in &a {
                    let (Some(t0), Some(u0), Some(u1)) = (
                        pa.threads.get(&t.id),
                        pb.threads.get(&t.id),
                        sb.threads.get(&t.id),
                    ) else {
                        continue;
                    };
                    compared += 1;
                    if let Err(e) = agree((t0, t), (u0, u1)) {
                        errors.push(e);
                    }
                }
            }
            assert!(errors.is_empty(), "round {round}:\n{}", errors.join("\n"));
        }
        before = Some((sa, sb));
    }
    assert!(compared >= 5 * 100, "{compared} threads compared");
    drop(load);
    if let Some((_, h)) = born {
        h.join().expect("join");
    }
}

/// A thread of this process's context switches so far (voluntary and not), from its status.
fn switches(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let field = |key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .parse()
            .ok()
    };
    Some(field("voluntary_ctxt_switches:")? + field("nonvoluntary_ctxt_switches:")?)
}

#[test]
fn a_sample_reads_only_what_changed() {
    skip_unless_root!("BPF incremental drain");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut inc = incremental();
    let load = Load::start(200, 4, 0);
    // The first samples drain what changed while the threads were being made. A sleeper
    // still on its way to sleep at the second one (on a loaded machine: CI saw one) changed
    // after it and is rightly read again: the sleepers that "never woke" are those whose
    // context switches did not move from before the second sample to after the third.
    std::thread::sleep(Duration::from_millis(200));
    inc.sample().expect("sample");
    std::thread::sleep(Duration::from_millis(200));
    let switches_before: Vec<Option<u64>> = load.sleepers.iter().map(|&t| switches(t)).collect();
    inc.sample().expect("sample");
    std::thread::sleep(Duration::from_millis(300));
    let s = inc.sample().expect("sample");
    let drained = inc.last_drained().expect("an incremental sample");
    let drained_tids: Vec<i32> = drained.iter().map(|id| id.tid).collect();
    let never_woke: Vec<i32> = load
        .sleepers
        .iter()
        .zip(&switches_before)
        .filter(|(&t, before)| before.is_some() && switches(t) == **before)
        .map(|(&t, _)| t)
        .collect();
    assert!(
        never_woke.len() * 2 >= load.sleepers.len(),
        "most sleepers kept switching: {} of {} still",
        never_woke.len(),
        load.sleepers.len()
    );
    let read_again: Vec<&i32> = never_woke
        .iter()
        .filter(|t| drained_tids.contains(t))
        .collect();
    assert!(
        read_again.is_empty(),
        "threads that never woke were read again: {read_again:?}"
    );
    for w in &load.wakers {
        assert!(
            drained_tids.contains(w),
            "waker {w} changed and was not read"
        );
    }
    // The ones not read are still in the sample, asleep for the whole 300 ms and more.
    let me = me();
    for tid in &load.sleepers {
        let t = s
            .threads
            .values()
            .find(|t| t.id.tgid == me && t.id.tid == *tid)
            .unwrap_or_else(|| panic!("sleeper {tid} missing from the sample"));
        assert_eq!(
            t.current,
            Some(tasksnap_model::states::State::Sleeping),
            "{tid}"
        );
    }
}

#[test]
fn a_thread_that_lived_across_samples_ends_with_its_exit_totals() {
    skip_unless_root!("BPF incremental exit");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut inc = incremental();
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let _ = tx.send(gettid());
        // Asleep across the first sample, then 300 ms on the CPU, then gone.
        let _ = go_rx.recv();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    });
    let tid = rx.recv().expect("tid");
    std::thread::sleep(Duration::from_millis(100));
    let a = inc.sample().expect("sample");
    let before = a
        .threads
        .values()
        .find(|t| t.id.tid == tid)
        .expect("the thread, asleep")
        .clone();
    go_tx.send(()).expect("go");
    h.join().expect("join");
    let b = inc.sample().expect("sample");
    let after = b
        .threads
        .values()
        .find(|t| t.id.tid == tid)
        .expect("the thread, exited");
    assert!(after.exited, "{after:?}");
    let ran = |t: &ThreadTotals| t.state_ns[0] + t.state_ns[1];
    // Running or waiting for a CPU its 300 ms (its exit record's figures), not the sleep it
    // was in at the first sample taken on past its death.
    assert!(
        ran(after) >= ran(&before) + 290_000_000,
        "before {:?}, after {:?}",
        before.state_ns,
        after.state_ns
    );
}

/// What a watched source (`Host::open_waits`, top's DISK%) reads is said outright: every
/// thread, the threads of the processes listed, or, with none listed or none left alive,
/// nobody (a screen with no rows must not read the whole host).
#[test]
fn a_watched_source_reads_what_it_is_told() {
    skip_unless_root!("BPF watched thread states");
    use tasksnap_collect::{Host, Watched};
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let other = child.id() as i32;
    let mut dead = std::process::Command::new("true").spawn().expect("spawn");
    let gone = dead.id() as i32;
    dead.wait().expect("reap");
    let host = Host::from_env();
    let mut src = host.open_waits().expect("the watched BPF accounting");
    let tgids = |which: Watched<'_>, src: &mut tasksnap_collect::ThreadStates| {
        let s = src.sample_of(which).expect("sample");
        let mut v: Vec<i32> = s.threads.values().map(|t| t.id.tgid).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let every = tgids(Watched::Every, &mut src);
    assert!(
        every.contains(&me()) && every.contains(&other),
        "every thread: {} processes",
        every.len()
    );
    assert_eq!(tgids(Watched::Only(&[me()]), &mut src), vec![me()]);
    assert_eq!(tgids(Watched::Only(&[me(), other]), &mut src).len(), 2);
    assert_eq!(tgids(Watched::Only(&[]), &mut src), Vec::<i32>::new());
    assert_eq!(tgids(Watched::Only(&[gone]), &mut src), Vec::<i32>::new());
    // And back to every thread after nobody.
    assert!(tgids(Watched::Every, &mut src).contains(&other));
    let _ = child.kill();
    let _ = child.wait();
}

/// With `lend` (what the sampler asks for) the sample handed out is the one the next starts
/// from, not a copy: given back, the next sample is a drain again and agrees with a whole
/// pass, thread by thread; not given back, or given back changed, the next is a whole pass.
#[test]
fn a_lent_sample_comes_back_or_the_next_is_whole() {
    skip_unless_root!("BPF incremental thread states, lent");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut inc = BpfSource::load(Options {
        incremental: true,
        lend: true,
        ..Options::default()
    })
    .expect("load the BPF accounting (incremental, lent)");
    let mut full = whole();
    let load = Load::start(50, 4, 1);
    let mut before: Option<(Sample, Sample)> = None;
    let mut compared = 0;
    for round in 0..4 {
        std::thread::sleep(Duration::from_millis(200));
        let sa = inc.sample().expect("incremental sample");
        let sb = full.sample().expect("whole pass");
        if round > 0 {
            assert!(
                inc.last_drained().is_some(),
                "round {round}: a whole pass after the sample came back"
            );
        }
        let ids = |s: &Sample| own(s).iter().map(|t| (t.id, t.exited)).collect::<Vec<_>>();
        assert_eq!(ids(&sa), ids(&sb), "round {round}");
        if let Some((pa, pb)) = &before {
            for t in own(&sa) {
                let (Some(t0), Some(u0), Some(u1)) = (
                    pa.threads.get(&t.id),
                    pb.threads.get(&t.id),
                    sb.threads.get(&t.id),
                ) else {
                    continue;
                };
                compared += 1;
                agree((t0, t), (u0, u1)).unwrap_or_else(|e| panic!("round {round}: {e}"));
            }
        }
        let kept = sa.clone();
        inc.recycle(sa);
        before = Some((kept, sb));
    }
    assert!(compared >= 3 * 50, "{compared} threads compared");
    // Not given back: nothing to start from.
    drop(inc.sample().expect("sample"));
    assert!(inc.last_drained().is_some());
    let mut s = inc.sample().expect("sample");
    assert!(
        inc.last_drained().is_none(),
        "a drain from a sample not given back"
    );
    // Given back with threads taken out: not the one lent.
    let me = me();
    s.threads.retain(|id, _| id.tgid != me);
    inc.recycle(s);
    inc.sample().expect("sample");
    assert!(
        inc.last_drained().is_none(),
        "a drain from a sample changed"
    );
    drop(load);
}
