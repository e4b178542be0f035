//! The /proc fallback against the same workloads as bpf_workloads.rs. Runs without root:
//! running and the ended run-queue waits come from schedstat (exact), the off-CPU split from
//! state letters sampled at 100 Hz here (so those tolerances are looser), the D reason from
//! wchan. And the sampler's own thread on the real /proc (it must not read itself as R).

mod common;

use common::*;
use tasksnap_states::fallback::{Options, ProcfsSource};
use tasksnap_states::{between, Filter, Rollup, Source, State};

fn source() -> ProcfsSource {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    ProcfsSource::new(Options {
        filter: Filter {
            pids: vec![me],
            comms: vec![],
        },
        sample_hz: 100,
        ..Options::default()
    })
    .expect("start the /proc source")
}

#[test]
fn procfs_cpu_hog() {
    let _g = serial();
    pin_to(0);
    let hog = Worker::hog("hog", Some(last_cpu()));
    let mut src = source();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let iv = measure(&mut src, 1.5, Rollup::Thread);
    let r = row(&iv, hog.tid);
    eprintln!("{}", show(r));
    // Tolerances: running + runnable >= 97% (exact figures over a window read by the clock a
    // little apart from schedstat), running >= 50% (see bpf_workloads.rs on shared CPUs).
    assert!(
        r.pct(State::Running) + r.pct(State::Runnable) >= 97.0,
        "{}",
        show(r)
    );
    assert!(r.pct(State::Running) >= 50.0, "{}", show(r));
}

#[test]
fn procfs_two_hogs_on_one_cpu() {
    if !is_root() {
        eprintln!("note: not root, so the hogs run at nice 0 and other load may take their CPU");
    }
    let _g = serial();
    pin_to(0);
    let cpu = last_cpu();
    let a = Worker::hog("hog-a", Some(cpu));
    let b = Worker::hog("hog-b", Some(cpu));
    let mut src = source();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let iv = measure(&mut src, 2.0, Rollup::Thread);
    let (ra, rb) = (row(&iv, a.tid), row(&iv, b.tid));
    eprintln!("{}\n{}", show(ra), show(rb));
    for r in [ra, rb] {
        // Tolerance: 50% +- 8 points each (other load on that CPU takes a few points from
        // both; 45% each was measured on the shared VM).
        assert!((r.pct(State::Running) - 50.0).abs() <= 8.0, "{}", show(r));
        assert!((r.pct(State::Runnable) - 50.0).abs() <= 8.0, "{}", show(r));
    }
    // Tolerance: the two share fairly, within 3 points of each other.
    assert!((ra.pct(State::Running) - rb.pct(State::Running)).abs() <= 3.0);
}

#[test]
fn procfs_sleeper() {
    let _g = serial();
    let s = Worker::sleeper("sleeper");
    wait_for("the sleeper to sleep", || s.letter() == 'S');
    let mut src = source();
    let iv = measure(&mut src, 1.0, Rollup::Thread);
    let r = row(&iv, s.tid);
    eprintln!("{}", show(r));
    // Tolerance: sleeping >= 95% (sampled).
    assert!(r.pct(State::Sleeping) >= 95.0, "{}", show(r));
}

#[test]
fn procfs_dstate_thread() {
    let _g = serial();
    let d = Worker::dstate("dwaiter");
    wait_for("the vfork parent to be in D", || d.letter() == 'D');
    let mut src = source();
    let iv = measure(&mut src, 1.0, Rollup::Thread);
    let r = row(&iv, d.tid);
    eprintln!("{}", show(r));
    // Tolerance: disk > 90% (sampled), and wchan names where it waits. wchan is the first
    // frame outside the scheduler's own functions; wait_for_vfork_done() is inlined into
    // kernel_clone() on this kernel.
    assert!(r.pct(State::Disk) > 90.0, "{}", show(r));
    let text = r.top_reason.as_ref().expect("a reason from wchan").text(3);
    assert!(
        text.contains("vfork") || text.contains("kernel_clone"),
        "{text}"
    );
}

#[test]
fn procfs_seed_case_mmap_lock_queueing() {
    let _g = serial();
    let file = seed_file();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let workers: Vec<Worker> = (0..16)
        .map(|i| Worker::mapper(&format!("query{i}"), fd, SEED_FILE_BYTES))
        .collect();
    let mut src = source();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let iv = measure(&mut src, 2.0, Rollup::Thread);
    let mut disk = 0.0;
    let mut named = 0;
    for w in &workers {
        let r = row(&iv, w.tid);
        eprintln!("{}", show(r));
        disk += r.pct(State::Disk);
        if r.reasons.iter().any(|x| {
            let t = x.text(3);
            x.state == State::Disk
                && (t.contains("mmap") || t.contains("munmap") || t.contains("populate"))
        }) {
            named += 1;
        }
    }
    // Tolerances (sampled): the threads spend time in D (> 1% on average), and at least half
    // of them were caught waiting under mmap, munmap or populate (wchan skips the rwsem slow
    // path itself: it is a scheduler function, __sched).
    assert!(disk / 16.0 > 1.0, "disk {:.2}% on average", disk / 16.0);
    assert!(named >= 8, "{named} of 16 threads caught in mmap/munmap");
}

const SEED_FILE_BYTES: usize = 4 << 20;

fn seed_file() -> std::fs::File {
    use std::io::Write;
    let mut f = tempfile::tempfile().expect("temp file");
    f.write_all(&vec![7u8; SEED_FILE_BYTES]).expect("write");
    f.sync_all().expect("sync");
    f
}

/// Regression (#16, "a wrong exact figure"), on the real /proc: the sampler thread read its own
/// stat (always R for the reader), so it was charged its whole interval but its own short runs
/// as runnable: RUNQ 99.5-99.9% on this VM, labelled exact. Its runnable must now be exactly
/// its schedstat run-queue delta (nothing estimated: it counts itself asleep), the rest sleep.
#[test]
fn regression_sampler_thread_was_charged_99_percent_runnable() {
    let _g = serial();
    let mut src = source();
    let a = src.sample().expect("first sample");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let b = src.sample().expect("second sample");
    let iv = between(&a, &b, Rollup::Thread);
    let sampler = b
        .threads
        .values()
        .find(|t| t.comm == "tasksnap-sample")
        .expect("the sampler thread is in the sample");
    let before = a
        .threads
        .get(&(sampler.tid, sampler.start_ns))
        .expect("and in the first one");
    let exact =
        sampler.state_ns[State::Runnable.index()] - before.state_ns[State::Runnable.index()];
    let r = row(&iv, sampler.tid);
    eprintln!(
        "{} (schedstat run-queue delta {} us)",
        show(r),
        exact / 1000
    );
    assert_eq!(r.ns[State::Runnable.index()], exact, "{}", show(r));
    // What it did not run or wait for a CPU it slept (before the fix: nothing; how much is
    // left depends on the host's load, which can make its run-queue waits long).
    assert!(r.ns[State::Sleeping.index()] > 0, "{}", show(r));
    assert!(iv.mode.sampled(State::Runnable) && !iv.mode.sampled(State::Running));
}
