//! Why a thread waits for a CPU, as the BPF accounting tells it: held back by its cgroup's CPU
//! quota (THROTTLED) or behind other threads (RUNQ, and which threads held its CPU). The
//! workloads are spinning processes this test spawns, in CPU cgroups it makes (cgroup v1's
//! `cpu` controller, or v2's `cpu.max` where v2 has the controller) and removes; the oracle is
//! the kernel's own count of the group's throttled time (`cpu.stat`), read at the samples.
//! Root only: CI runs them with TASKSNAP_REQUIRE_PRIVILEGED=1, where a skip is a failure.

mod states_common;

use std::time::Duration;

use states_common::*;
use tasksnap_collect::testing::states::bpf::{BpfSource, Options};
use tasksnap_collect::testing::states::{Filter, Sample};
use tasksnap_collect::testing::StateSource;
use tasksnap_loadgen::cpu_cgroup::{self, Spinner};
use tasksnap_loadgen::skip_unless_root;
use tasksnap_states::{between, Rollup, State};

/// The accounting of `pids` only, naming what held their CPUs.
fn source(pids: &[i32]) -> BpfSource {
    BpfSource::load(Options {
        filter: Filter {
            pids: pids.to_vec(),
            comms: vec![],
        },
        track_holders: true,
        ..Options::default()
    })
    .expect("load the BPF accounting")
}

/// Off-CPU ns per reason text of thread `tid` between two samples.
fn reasons_between(a: &Sample, b: &Sample, tid: i32) -> Vec<(State, String, u64)> {
    let find = |s: &Sample| s.threads.values().find(|t| t.id.tid == tid).cloned();
    let (Some(ta), Some(tb)) = (find(a), find(b)) else {
        return Vec::new();
    };
    tb.reasons
        .iter()
        .map(|&(state, id, ns)| {
            let before = ta
                .reasons
                .iter()
                .find(|r| r.0 == state && r.1 == id)
                .map_or(0, |r| r.2);
            let text = b
                .reasons
                .get(&id)
                .map(|f| f.join(" <- "))
                .unwrap_or_default();
            (state, text, ns.saturating_sub(before))
        })
        .collect()
}

/// One 4 s interval of `src` (after the spinner's start), and the growth of `s`'s cgroup's
/// throttled time over it, read right after each sample.
fn measure_throttled(src: &mut BpfSource, s: &Spinner) -> (tasksnap_states::Interval, u64) {
    std::thread::sleep(Duration::from_millis(300));
    let a = src.sample().expect("first sample");
    let k0 = s.throttled_ns();
    std::thread::sleep(Duration::from_secs(4));
    let b = src.sample().expect("second sample");
    let k1 = s.throttled_ns();
    (between(&a, &b, Rollup::Thread), k1.saturating_sub(k0))
}

/// A thread's throttled time within 10% of its cgroup's (the only thread of it waiting).
fn agrees_with_the_kernel(thr_ns: u64, kernel_ns: u64, shown: &str) {
    let (thr, kernel) = (thr_ns as f64, kernel_ns as f64);
    assert!(
        (thr - kernel).abs() <= 0.10 * kernel,
        "throttled {thr_ns} ns, the cgroup's cpu.stat {kernel_ns} ns: {shown}"
    );
}

fn root_with_cpu_cgroups() -> bool {
    cpu_cgroup::root_with_cpu_cgroups("the BPF accounting and CPU cgroups")
}

/// A spinner allowed 20% of a CPU: running about 20% of the time, held back by the quota most
/// of the rest, and the throttled time it is charged is the kernel's for its cgroup (one
/// thread in the group: the kernel counts one throttle per CPU however many threads wait).
#[test]
fn a_quota_is_throttled_time_not_a_wait_behind_others() {
    if !root_with_cpu_cgroups() {
        return;
    }
    let _g = serial();
    let s = Spinner::start("quota20", Some(20), None);
    let mut src = source(&[s.pid()]);
    let (iv, kernel_ns) = measure_throttled(&mut src, &s);
    let r = row(&iv, s.pid());
    let (run, runq, thr) = (
        r.pct(State::Running),
        r.pct(State::Runnable),
        r.pct(State::Throttled),
    );
    let shown = format!("RUN {run:.1} RUNQ {runq:.1} THR {thr:.1} of {:?}", r.ns);
    assert!((15.0..=21.0).contains(&run), "{shown}");
    assert!(thr >= 50.0, "{shown}");
    assert!(run + runq + thr > 99.0, "a spinner never sleeps: {shown}");
    agrees_with_the_kernel(r.ns[State::Throttled.index()], kernel_ns, &shown);
}

/// Two spinners pinned to one CPU, no quota: each waits for the CPU while the other runs, is
/// never throttled, and names the other as what held its CPU.
#[test]
fn two_spinners_on_one_cpu_name_each_other() {
    skip_unless_root!("the BPF accounting");
    let _g = serial();
    let cpu = last_cpu();
    let (x, y) = (
        Spinner::start("x", None, Some(cpu)),
        Spinner::start("y", None, Some(cpu)),
    );
    let mut src = source(&[x.pid(), y.pid()]);
    std::thread::sleep(Duration::from_millis(300));
    let a = src.sample().expect("first sample");
    std::thread::sleep(Duration::from_secs(3));
    let b = src.sample().expect("second sample");
    let iv = between(&a, &b, Rollup::Thread);
    for (me, other) in [(&x, &y), (&y, &x)] {
        let r = row(&iv, me.pid());
        let shown = format!("{:?}", r.ns);
        assert!(r.pct(State::Runnable) >= 25.0, "{shown}");
        assert_eq!(r.ns[State::Throttled.index()], 0, "{shown}");
        let runq = r.ns[State::Runnable.index()];
        // Both pinned to one CPU and never sleeping: whenever the other ran, this one waited
        // behind it. That time, not the whole wait, is the other's to be named for: on a busy
        // host other tasks run on the CPU too, and are named for their part.
        let behind_other = row(&iv, other.pid()).ns[State::Running.index()].min(runq);
        let reasons = reasons_between(&a, &b, me.pid());
        let held = format!("held by sh ({})", other.pid());
        let by_other = reasons
            .iter()
            .find(|(s, text, _)| *s == State::Runnable && *text == held)
            .map_or(0, |r| r.2);
        assert!(
            by_other * 2 >= behind_other,
            "{} waited {runq} ns, {behind_other} of it while {held} ran; {by_other} named \
             so: {reasons:?}",
            me.pid()
        );
        // The top reason is what held the CPU most: the other spinner on a quiet host; on a
        // busy one, another task that spun on this CPU as long may be.
        let top = r.top_reason.as_ref().expect("a top reason");
        let first = top.frames.first().map_or("", String::as_str);
        assert!(first.starts_with("held by "), "{first}");
    }
}

/// A spinner allowed 30% of a CPU sharing it with another spinner: it runs, waits behind the
/// other, and is held back by its quota, each a part of its time; its throttled time is still
/// the kernel's.
#[test]
fn a_quota_under_contention_shows_all_three_parts() {
    if !root_with_cpu_cgroups() {
        return;
    }
    let _g = serial();
    let cpu = last_cpu();
    let q = Spinner::start("quota30", Some(30), Some(cpu));
    let other = Spinner::start("other", None, Some(cpu));
    let mut src = source(&[q.pid(), other.pid()]);
    let (iv, kernel_ns) = measure_throttled(&mut src, &q);
    let r = row(&iv, q.pid());
    let shown = format!("{:?}", r.ns);
    assert!(r.pct(State::Running) >= 5.0, "{shown}");
    assert!(r.pct(State::Runnable) >= 5.0, "{shown}");
    assert!(r.pct(State::Throttled) >= 5.0, "{shown}");
    agrees_with_the_kernel(r.ns[State::Throttled.index()], kernel_ns, &shown);
    assert_eq!(row(&iv, other.pid()).ns[State::Throttled.index()], 0);
}
