//! The BPF accounting against workloads in known states (threads of this test process):
//! a CPU hog, two hogs sharing one CPU, a sleeper, a thread in D, and the seed's case of
//! threads queueing on the mmap lock. Root only; CI runs them with
//! TASKSNAP_REQUIRE_PRIVILEGED=1, where a skip is a failure.
//!
//! The hogs run at nice -20 so that other load on the machine (builds, the other tests) takes
//! little of their CPU (see `top_priority`). Where the figures can be checked against the
//! kernel's own accounting (/proc/TID/schedstat: ns on a CPU and ns waiting on a run queue),
//! they are, over the same interval: the BPF figures must agree within 2 points.

mod common;

use common::*;
use tasksnap_states::bpf::{BpfSource, Options};
use tasksnap_states::{Filter, Rollup, Source, State};

fn source() -> BpfSource {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    BpfSource::load(Options {
        filter: Filter {
            pids: vec![me],
            comms: vec![],
        },
        ..Options::default()
    })
    .expect("load the BPF accounting")
}

/// The BPF running and runnable ns against schedstat's: the oracle's window contains the
/// interval and is longer by at most `o.slop_ns` (the time the two samples took). schedstat
/// itself lags: run_delay counts a wait only once it ends, and sum_exec_runtime of a running
/// thread is brought up to date at ticks and switches; and it leaves out the time the
/// hypervisor stole from the vCPU while the thread ran (PARAVIRT_TIME_ACCOUNTING), which the
/// BPF figure counts as running. So each BPF figure must lie in
/// [oracle - slop - 10 ms, oracle + 10 ms + steal].
fn agrees_with_schedstat(r: &tasksnap_states::Row, o: &Oracle, k: usize) {
    let lag = 10_000_000i64;
    let (run_ns, delay_ns) = o.deltas[k];
    for (what, bpf, oracle) in [
        ("running", r.ns[State::Running.index()], run_ns),
        ("runnable", r.ns[State::Runnable.index()], delay_ns),
    ] {
        let (bpf, oracle) = (bpf as i64, oracle as i64);
        assert!(
            bpf <= oracle + lag + o.steal_ns as i64 && bpf >= oracle - o.slop_ns as i64 - lag,
            "{what}: bpf {bpf} ns, schedstat {oracle} ns, slop {} ns, steal {} ns",
            o.slop_ns,
            o.steal_ns
        );
    }
}

#[test]
fn cpu_hog_runs_100_percent() {
    if !root_or_skip("BPF CPU hog") {
        return;
    }
    let _g = serial();
    let mut src = source();
    // The hog gets a CPU of its own: the sampling (this thread) runs on another one, and does
    // not take the hog's CPU while it walks every task of the host in the kernel.
    pin_to(0);
    let hog = Worker::hog("hog", Some(last_cpu()));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let o = measure_with_oracle(&mut src, 1.5, &[hog.tid]);
    let iv = &o.interval;
    let r = row(iv, hog.tid);
    eprintln!("{}", show(r));
    agrees_with_schedstat(r, &o, 0);
    // Tolerances: the hog never leaves the CPU by itself (running + runnable >= 99.5%), and
    // gets most of its CPU (running >= 60%). On an idle machine running is ~99%; on the shared
    // 2-core VM this was written on it measured 67-87%, the rest runnable, and schedstat
    // agreed: the exact answer for a hog whose CPU is shared is not 100%.
    assert!(r.pct(State::Running) >= 60.0, "{}", show(r));
    assert!(
        r.pct(State::Running) + r.pct(State::Runnable) >= 99.5,
        "{}",
        show(r)
    );
    // Alive the whole interval (each thread's totals are taken when the pass reaches it).
    assert!((r.alive_ns as f64 - iv.length_ns as f64).abs() < 0.05 * iv.length_ns as f64);
}

#[test]
fn two_hogs_on_one_cpu_share_it() {
    if !root_or_skip("BPF two hogs on one CPU") {
        return;
    }
    let _g = serial();
    let mut src = source();
    let cpu = last_cpu();
    pin_to(0);
    let a = Worker::hog("hog-a", Some(cpu));
    let b = Worker::hog("hog-b", Some(cpu));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let o = measure_with_oracle(&mut src, 2.0, &[a.tid, b.tid]);
    let iv = &o.interval;
    for (k, w) in [&a, &b].into_iter().enumerate() {
        let r = row(iv, w.tid);
        eprintln!("{}", show(r));
        agrees_with_schedstat(r, &o, k);
        // Tolerance: 50% +- 8 points each (on an idle machine 49.6-50.4% was measured; other
        // load on that CPU of the shared VM took up to 12 points from the pair).
        assert!((r.pct(State::Running) - 50.0).abs() <= 8.0, "{}", show(r));
        assert!((r.pct(State::Runnable) - 50.0).abs() <= 8.0, "{}", show(r));
        assert!(
            r.pct(State::Sleeping) + r.pct(State::Disk) <= 1.0,
            "{}",
            show(r)
        );
    }
    // Tolerance: the two share fairly, within 3 points of each other.
    let (ra, rb) = (row(iv, a.tid), row(iv, b.tid));
    assert!((ra.pct(State::Running) - rb.pct(State::Running)).abs() <= 3.0);
}

#[test]
fn sleeper_sleeps_100_percent() {
    if !root_or_skip("BPF sleeper") {
        return;
    }
    let _g = serial();
    let mut src = source();
    let s = Worker::sleeper("sleeper");
    wait_for("the sleeper to sleep", || s.letter() == 'S');
    let iv = measure(&mut src, 1.0, Rollup::Thread);
    let r = row(&iv, s.tid);
    eprintln!("{}", show(r));
    // Tolerance: sleeping >= 99.9% (its whole interval; it never wakes).
    assert!(r.pct(State::Sleeping) >= 99.9, "{}", show(r));
    // The ongoing sleep is counted up to the end of the interval.
    assert!((r.alive_ns as f64 - iv.length_ns as f64).abs() < 0.02 * iv.length_ns as f64);
}

#[test]
fn dstate_thread_is_in_disk_and_says_where() {
    if !root_or_skip("BPF D state") {
        return;
    }
    let _g = serial();
    let mut src = source();
    let d = Worker::dstate("dwaiter");
    wait_for("the vfork parent to be in D", || d.letter() == 'D');
    let iv = measure(&mut src, 1.0, Rollup::Thread);
    let r = row(&iv, d.tid);
    eprintln!("{}", show(r));
    // Tolerance: disk > 90%.
    assert!(r.pct(State::Disk) > 90.0, "{}", show(r));
    let reason = r.top_reason.as_ref().expect("a reason for the D wait");
    assert_eq!(reason.state, State::Disk);
    // The stack starts at the reason, not in the switch (the BPF program, the tracepoint,
    // __schedule), and names where it waits within three frames: wait_for_vfork_done() is
    // inlined into kernel_clone() on this kernel
    // (__wait_for_common <- wait_for_completion_state <- kernel_clone).
    let text = reason.text(3);
    let first = reason.frames[0].as_str();
    assert!(
        first.starts_with("__wait_for_common")
            || first.starts_with("wait_for_")
            || first == "kernel_clone",
        "reason {text}"
    );
    assert!(
        text.contains("wait_for_vfork_done") || text.contains("kernel_clone"),
        "reason {text}"
    );
}

#[test]
fn a_wait_that_began_before_tracking_is_named_from_proc() {
    if !root_or_skip("BPF D state begun before load") {
        return;
    }
    let _g = serial();
    let d = Worker::dstate("dwaiter-early");
    wait_for("the vfork parent to be in D", || d.letter() == 'D');
    let mut src = source();
    let iv = measure(&mut src, 0.5, Rollup::Thread);
    let r = row(&iv, d.tid);
    eprintln!("{}", show(r));
    assert!(r.pct(State::Disk) > 90.0, "{}", show(r));
    let text = r.top_reason.as_ref().expect("a reason").text(8);
    assert!(
        text.contains("kernel_clone") || text.contains("vfork"),
        "{text}"
    );
}

#[test]
fn seed_case_mmap_lock_queueing() {
    if !root_or_skip("BPF mmap lock (seed 004)") {
        return;
    }
    let _g = serial();
    let file = seed_file();
    let mut src = source();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let workers: Vec<Worker> = (0..16)
        .map(|i| Worker::mapper(&format!("query{i}"), fd, SEED_FILE_BYTES))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let iv = measure(&mut src, 2.0, Rollup::Thread);
    let mut disk_total = 0.0;
    let mut rwsem_rows = 0;
    for w in &workers {
        let r = row(&iv, w.tid);
        eprintln!("{}", show(r));
        disk_total += r.pct(State::Disk);
        // The reason starts at the rwsem slow path, with mmap/munmap/populate within 3 frames.
        if r.reasons.iter().any(|x| {
            let t = x.text(3);
            x.state == State::Disk
                && x.frames[0].starts_with("rwsem_down_")
                && (t.contains("mmap") || t.contains("munmap") || t.contains("populate"))
        }) {
            rwsem_rows += 1;
        }
    }
    // Tolerances: the threads spend time in D (> 1% on average), and most of them (>= 12 of
    // 16) waited on the mmap lock's rwsem slow path under mmap, munmap or populate.
    assert!(
        disk_total / 16.0 > 1.0,
        "disk {:.2}% on average",
        disk_total / 16.0
    );
    assert!(
        rwsem_rows >= 12,
        "{rwsem_rows} of 16 threads show the rwsem slow path"
    );
}

const SEED_FILE_BYTES: usize = 4 << 20;

/// A 4 MiB file in the page cache, as the seed's column files were.
fn seed_file() -> std::fs::File {
    use std::io::Write;
    let mut f = tempfile::tempfile().expect("temp file");
    f.write_all(&vec![7u8; SEED_FILE_BYTES]).expect("write");
    f.sync_all().expect("sync");
    f
}

#[test]
fn a_thread_that_exits_during_the_interval_still_appears() {
    if !root_or_skip("BPF exited thread") {
        return;
    }
    let _g = serial();
    let mut src = source();
    let a = src.sample().expect("first sample");
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::Builder::new()
        .name("shortlived".into())
        .spawn(move || {
            // SAFETY: gettid has no arguments and cannot fail.
            let _ = tx.send(unsafe { libc::gettid() });
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(300) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        })
        .expect("spawn");
    let tid = rx.recv().expect("tid");
    h.join().expect("join");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let b = src.sample().expect("second sample");
    let iv = tasksnap_states::between(&a, &b, Rollup::Thread);
    let r = row(&iv, tid);
    eprintln!("{} exited {}", show(r), r.exited);
    // Tolerances: reported as exited, alive its ~300 ms (250-600 ms), on or waiting for a CPU
    // for >= 95% of it.
    assert!(r.exited, "{}", show(r));
    assert!(
        (250_000_000..=600_000_000).contains(&r.alive_ns),
        "{}",
        show(r)
    );
    assert!(
        r.pct(State::Running) + r.pct(State::Runnable) >= 95.0,
        "{}",
        show(r)
    );
    assert!(iv.exited >= 1);
}
