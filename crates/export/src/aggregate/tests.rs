//! The aggregator's counters against hand-made readings.

use super::previous::{Prev, ThreadPrev};
use super::series::GROUP_SERIES_ALWAYS;
use super::*;
use crate::group::Grouping;
use tasksnap_model::states::ThreadTotals;
use tasksnap_model::states::{Mode, Sample, State, NSTATES};
use tasksnap_model::{Backend, Base, Snapshot, SnapshotStats, Stat};
use tasksnap_model::{Exit, Task, TaskId};

fn task(pid: i32, tid: i32, start_ns: u64, comm: &str, cpu_ns: u64) -> Task {
    let mut t = Task::new(TaskId {
        tgid: pid,
        tid,
        start_time_ns: start_ns,
    });
    t.base = Some(Base {
        comm: comm.as_bytes().into(),
        num_threads: 1,
        ..Base::default()
    });
    t.stat = Some(Stat {
        utime_ns: cpu_ns,
        stime_ns: cpu_ns / 2,
        start_time_ns: start_ns,
        rss_bytes: 4096,
        ..Stat::default()
    });
    t
}

fn reading(at_ns: u64, tasks: Vec<Task>, states: Option<Sample>) -> Reading {
    Reading {
        states,
        ..Reading::of(Snapshot {
            taken_at_unix_ns: at_ns,
            taken_at_boottime_ns: at_ns,
            boot_time_unix_s: 1_000,
            backend: Backend::Procfs,
            tasks,
            stats: SnapshotStats::default(),
        })
    }
}

fn sample(at_ns: u64, threads: &[(i32, i32, u64, [u64; NSTATES], bool)]) -> Sample {
    let mut s = Sample::new(Mode::Bpf, at_ns);
    for &(pid, tid, start, ns, exited) in threads {
        let id = TaskId {
            tgid: pid,
            tid,
            start_time_ns: start,
        };
        s.threads.insert(
            id,
            ThreadTotals {
                id,
                state_ns: ns,
                exited,
                seen_at_ns: at_ns,
                ..ThreadTotals::default()
            },
        );
    }
    s
}

/// A reading at `at_ns` of `tasks` with a thread-state sample of `threads` taken then.
fn sampled(
    at_ns: u64,
    tasks: Vec<Task>,
    threads: &[(i32, i32, u64, [u64; NSTATES], bool)],
) -> Reading {
    reading(at_ns, tasks, Some(sample(at_ns, threads)))
}

const S: u64 = 1_000_000_000;

fn group<'a>(a: &'a Aggregator, name: &str) -> Option<&'a Group> {
    a.groups.iter().find(|g| &*g.name == name)
}

#[test]
fn cpu_counts_from_the_start_and_never_goes_back() {
    let mut a = Aggregator::new(Options::default());
    // At the first collection, a has run 10 s: not counted (the counters start here).
    a.update(&mut reading(
        100 * S,
        vec![task(10, 10, S, "a", 10 * S)],
        None,
    ));
    let g = group(&a, "a").expect("group a");
    assert_eq!(g.total.cpu_user_ns, 0);
    // b is born after it and ran 2 s user; a ran 1 s more user; c was there before but
    // unseen (not counted backwards).
    a.update(&mut reading(
        110 * S,
        vec![
            task(10, 10, S, "a", 11 * S),
            task(20, 20, 105 * S, "a", 2 * S),
            task(30, 30, 50 * S, "c", 7 * S),
        ],
        None,
    ));
    let g = group(&a, "a").expect("group a");
    assert_eq!(g.total.cpu_user_ns, 3 * S);
    assert_eq!(g.total.cpu_system_ns, S / 2 + S);
    assert_eq!(g.now.processes, 2);
    assert_eq!(group(&a, "c").expect("c").total.cpu_user_ns, 0);
    // b exits: a's counter keeps what b did.
    a.update(&mut reading(
        120 * S,
        vec![task(10, 10, S, "a", 12 * S)],
        None,
    ));
    assert_eq!(group(&a, "a").expect("a").total.cpu_user_ns, 4 * S);
    assert_eq!(group(&a, "a").expect("a").now.processes, 1);
    // c's group is empty: kept, its counters as they were, for keep_empty_ns (so a
    // scraper slower than the collections sees them), then gone.
    assert!(group(&a, "c").is_some());
    a.update(&mut reading(
        130 * S,
        vec![task(10, 10, S, "a", 12 * S)],
        None,
    ));
    assert!(group(&a, "c").is_some(), "kept for a slow scraper");
    a.update(&mut reading(
        120 * S + KEEP_EMPTY_NS - 1,
        vec![task(10, 10, S, "a", 12 * S)],
        None,
    ));
    assert!(
        group(&a, "c").is_some(),
        "kept until keep_empty_ns has passed"
    );
    a.update(&mut reading(
        120 * S + KEEP_EMPTY_NS,
        vec![task(10, 10, S, "a", 12 * S)],
        None,
    ));
    assert!(group(&a, "c").is_none());
}

#[test]
fn state_time_follows_threads_into_their_group_even_after_exit() {
    let mut a = Aggregator::new(Options::default());
    let z = [0u64; NSTATES];
    let tasks = || vec![task(10, 10, S, "a", 0), task(10, 11, S, "a", 0)];
    a.update(&mut sampled(
        100 * S,
        tasks(),
        &[(10, 10, S, z, false), (10, 11, S, z, false)],
    ));
    // Thread 11 ran 1 s and was in D 1 s; thread 10 slept 2 s. Then the process exits:
    // its threads' final totals still count for its group.
    let mut run_d = z;
    run_d[State::Running.index()] = S;
    run_d[State::Disk.index()] = S;
    let mut sleep = z;
    sleep[State::Sleeping.index()] = 2 * S;
    a.update(&mut sampled(
        102 * S,
        vec![],
        &[(10, 10, S, sleep, true), (10, 11, S, run_d, true)],
    ));
    let g = group(&a, "a").expect("group a");
    assert_eq!(g.total.state_ns[State::Running.index()], S);
    assert_eq!(g.total.state_ns[State::Disk.index()], S);
    assert_eq!(g.total.state_ns[State::Sleeping.index()], 2 * S);
    assert_eq!(g.total.state_ns.iter().sum::<u64>(), 4 * S);
    assert_eq!(a.system.state_ns.iter().sum::<u64>(), 4 * S);
}

/// Room for the fixed series and two series each of 40 groups.
fn forty_groups_of_series() -> Options {
    Options {
        max_series: fixed_series(0) + 2 * 40,
        ..Options::default()
    }
}

/// Processes 1 to 20, each its own group `g<pid>`, process `i` with `k * i` s of CPU.
fn twenty_groups(k: u64) -> Vec<Task> {
    (1..=20)
        .map(|i| task(i, i, S, &format!("g{i}"), k * i as u64 * S))
        .collect()
}

/// The view's series fit in [`forty_groups_of_series`].
#[track_caller]
fn assert_series_fit(v: &View<'_>) {
    let shown: usize = v.groups.iter().map(|(_, g)| g.series()).sum();
    assert!(
        fixed_series(0) + shown <= fixed_series(0) + 2 * 40,
        "{shown}"
    );
}

#[test]
fn max_series_folds_the_least_busy_groups_into_other() {
    let mut a = Aggregator::new(forty_groups_of_series());
    a.update(&mut reading(100 * S, twenty_groups(1), None));
    a.update(&mut reading(110 * S, twenty_groups(2), None));
    let v = a.view();
    let names: Vec<&str> = v.groups.iter().map(|(n, _)| *n).collect();
    // The busiest (g20, then g19...) are shown while they fit, and the rest are one
    // `other` holding their processes and CPU.
    assert!(names.contains(&"g20"), "{names:?}");
    assert!(!names.contains(&"g1"), "{names:?}");
    assert_eq!(names.last(), Some(&OTHER_GROUP));
    assert_series_fit(&v);
    let other = v.groups.last().expect("other").1;
    assert_eq!(other.now.processes as usize, v.folded);
    let folded_cpu: u64 = (1..=v.folded as u64).map(|i| i * S).sum();
    assert_eq!(other.total.cpu_user_ns, folded_cpu);
    // The count of series does not grow with the processes.
    let more: Vec<Task> = (1..=2000)
        .map(|i| task(i, i, S, &format!("g{}", i % 20 + 1), 3 * S))
        .collect();
    a.update(&mut reading(120 * S, more, None));
    let v = a.view();
    assert_series_fit(&v);
}

/// Series shown beside the groups' (the cgroup families) come out of the same `max_series`:
/// groups that fit without them are folded to make room.
#[test]
fn series_shown_beside_leave_the_groups_less_room() {
    let shown = |a: &Aggregator| -> usize { a.view().groups.iter().map(|(_, g)| g.series()).sum() };
    let mut a = Aggregator::new(Options::default());
    a.update(&mut reading(100 * S, twenty_groups(1), None));
    a.update(&mut reading(110 * S, twenty_groups(2), None));
    let twenty = shown(&a);
    let max = fixed_series(0) + twenty;
    let mut a = Aggregator::new(Options {
        max_series: max,
        ..Options::default()
    });
    a.update(&mut reading(100 * S, twenty_groups(1), None));
    a.update(&mut reading(110 * S, twenty_groups(2), None));
    assert_eq!(a.view().folded, 0);
    a.show_beside(twenty / 2);
    a.update(&mut reading(120 * S, twenty_groups(3), None));
    let v = a.view();
    assert!(v.folded > 0, "nothing folded");
    assert_eq!(v.groups.last().map(|(n, _)| *n), Some(OTHER_GROUP));
    assert!(fixed_series(0) + twenty / 2 + shown(&a) <= max);
}

#[test]
fn top_n_are_the_busiest_in_the_interval() {
    let mut a = Aggregator::new(Options {
        top_n: 2,
        ..Options::default()
    });
    a.update(&mut reading(
        100 * S,
        vec![
            task(1, 1, S, "x", 100 * S),
            task(2, 2, S, "y", 0),
            task(3, 3, S, "z", 0),
        ],
        None,
    ));
    a.update(&mut reading(
        110 * S,
        vec![
            task(1, 1, S, "x", 100 * S),
            task(2, 2, S, "y", 4 * S),
            task(3, 3, S, "z", 2 * S),
        ],
        None,
    ));
    let pids: Vec<i32> = a.view().top.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![2, 3]);
}

/// Regression: a --top-n process's comm label replaced control characters with `?`; the
/// label value is the comm's bytes.
#[test]
fn top_n_comms_are_label_values_never_replaced() {
    let mut a = Aggregator::new(Options {
        top_n: 2,
        ..Options::default()
    });
    let named = |cpu| {
        let mut cr = task(1, 1, S, "", cpu);
        cr.base.as_mut().expect("base").comm = b"cr\r\xffname"[..].into();
        vec![cr, task(2, 2, S, "nl\nname", cpu)]
    };
    a.update(&mut reading(100 * S, named(0), None));
    a.update(&mut reading(110 * S, named(S), None));
    let comms: Vec<&str> = a.view().top.iter().map(|p| p.comm.as_str()).collect();
    assert_eq!(comms, vec!["cr\\x0d\\xffname", "nl\nname"]);
}
// Exits.

use tasksnap_model::{Io, Sched};

/// A process with I/O and context switches too (what the BPF backend reads).
fn full(pid: i32, tid: i32, start_ns: u64, comm: &str, cpu_ns: u64, k: u64) -> Task {
    let mut t = task(pid, tid, start_ns, comm, cpu_ns);
    if let Some(st) = t.stat.as_mut() {
        st.minflt = 10 * k;
        st.majflt = k;
    }
    t.io = Some(Box::new(Io {
        rchar_bytes: 0,
        wchar_bytes: 0,
        syscr: 0,
        syscw: 0,
        read_bytes: 1000 * k,
        write_bytes: 2000 * k,
        cancelled_write_bytes: 0,
    }));
    t.sched = Some(Box::new(Sched {
        on_cpu_ns: cpu_ns,
        run_delay_ns: 0,
        timeslices: 0,
        voluntary_switches: Some(100 * k),
        involuntary_switches: Some(10 * k),
    }));
    t
}

/// An exit whose final figures are `full`'s at `k`, CPU user `user_ns`, system half.
fn exit(pid: i32, start_ns: u64, comm: &str, user_ns: u64, k: u64, status: u32) -> Exit {
    Exit {
        id: TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: start_ns,
        },
        ppid: 1,
        comm: comm.as_bytes().to_vec(),
        start_time_ns: start_ns,
        wait_status: status,
        utime_ns: user_ns,
        stime_ns: user_ns / 2,
        cpu_ns: user_ns + user_ns / 2,
        minflt: 10 * k,
        majflt: k,
        read_bytes: 1000 * k,
        write_bytes: 2000 * k,
        voluntary_ctxt_switches: 100 * k,
        nonvoluntary_ctxt_switches: 10 * k,
        ..Exit::default()
    }
}

fn with_exits(mut r: Reading, exits: Vec<Exit>) -> Reading {
    r.exits = exits;
    r
}

/// Every counter of every group, by group name, to check that none went down.
fn totals(a: &Aggregator) -> Vec<(String, Vec<u64>)> {
    a.groups
        .iter()
        .map(|g| {
            let mut v = figures(g).to_vec();
            v.extend(g.total.exits);
            (g.name.to_string(), v)
        })
        .collect()
}

/// Updates `a` and checks that no counter of a group that is still there went down.
fn step(a: &mut Aggregator, mut r: Reading) {
    let before = totals(a);
    a.update(&mut r);
    for (name, now) in totals(a) {
        if let Some((_, was)) = before.iter().find(|(n, _)| *n == name) {
            for (w, n) in was.iter().zip(&now) {
                assert!(n >= w, "{name}: {was:?} -> {now:?}");
            }
        }
    }
}

/// [`step`] with a reading at `at_ns` of `tasks` and no thread-state sample.
fn step_at(a: &mut Aggregator, at_ns: u64, tasks: Vec<Task>) {
    step(a, reading(at_ns, tasks, None));
}

/// [`step_at`] with `exits` in the reading.
fn step_with_exits(a: &mut Aggregator, at_ns: u64, tasks: Vec<Task>, exits: Vec<Exit>) {
    step(a, with_exits(reading(at_ns, tasks, None), exits));
}

/// The process every reading holds: pid 1, `init`, no figures.
fn init() -> Task {
    full(1, 1, S, "init", 0, 0)
}

/// An aggregator past its first collection (`init` alone, at 100 s).
fn started() -> Aggregator {
    let mut a = Aggregator::new(Options::default());
    step_at(&mut a, 100 * S, vec![init()]);
    a
}

/// The second collection (110 s) of a [`started`] aggregator: `init` and pid 20, born at
/// 105 s, as [`full`] makes it.
fn seen(a: &mut Aggregator, comm: &str, cpu_ns: u64, k: u64) {
    step_at(
        a,
        110 * S,
        vec![init(), full(20, 20, 105 * S, comm, cpu_ns, k)],
    );
}

/// A collection at `at_ns` of `init` alone, with the exit of [`seen`]'s pid 20 (status 0)
/// as [`exit`] makes it.
fn gone(a: &mut Aggregator, at_ns: u64, comm: &str, user_ns: u64, k: u64) {
    let exits = vec![exit(20, 105 * S, comm, user_ns, k, 0)];
    step_with_exits(a, at_ns, vec![init()], exits);
}

/// A group's CPU, faults, I/O and switches, in that order.
type Figures = [u64; 8];

/// Asserts group `name`'s figures and its exits by reason.
#[track_caller]
fn assert_totals(a: &Aggregator, name: &str, figures_now: Figures, exits: [u64; 3]) {
    let g = group(a, name).expect(name);
    assert_eq!(figures(g), figures_now, "{name}");
    assert_eq!(g.total.exits, exits, "{name}");
}

fn figures(g: &Group) -> Figures {
    let t = &g.total;
    [
        t.cpu_user_ns,
        t.cpu_system_ns,
        t.minor_faults,
        t.major_faults,
        t.read_bytes,
        t.write_bytes,
        t.voluntary_switches,
        t.involuntary_switches,
    ]
}

/// What `exit(.., user_ns, k, ..)` holds, as `figures` orders it.
fn all_of(user_ns: u64, k: u64) -> Figures {
    [
        user_ns,
        user_ns / 2,
        10 * k,
        k,
        1000 * k,
        2000 * k,
        100 * k,
        10 * k,
    ]
}

#[test]
fn a_process_seen_alive_then_exited_counts_its_final_figures_exactly() {
    let mut a = started();
    // b is born after the first collection, seen at the second with 2 s of user CPU...
    seen(&mut a, "b", 2 * S, 3);
    assert_eq!(figures(group(&a, "b").expect("b")), all_of(2 * S, 3));
    // ... and exits before the third with 5 s: the counter reaches the final figures,
    // not the last ones seen.
    gone(&mut a, 120 * S, "b", 5 * S, 7);
    assert_totals(&a, "b", all_of(5 * S, 7), [1, 0, 0]);
    let b = group(&a, "b").expect("b");
    assert_eq!(b.now.processes, 0);
    // An exit-only group is kept while it has exits, and shows its exits series.
    assert_eq!(b.series(), GROUP_SERIES_ALWAYS + 2 + 2 + 1);
}

#[test]
fn a_process_never_seen_alive_counts_all_of_its_figures() {
    let mut a = started();
    // Born and dead between two collections: its group is made from its record. One
    // exited, one was killed, one dumped core.
    step_with_exits(
        &mut a,
        110 * S,
        vec![init()],
        vec![
            exit(30, 101 * S, "short", S, 1, 3 << 8),
            exit(31, 102 * S, "short", 2 * S, 2, 9),
            exit(32, 103 * S, "short", 3 * S, 3, 0x80 | 11),
        ],
    );
    assert_totals(&a, "short", all_of(6 * S, 6), [1, 1, 1]);
    // One that was alive before the exporter's first collection and never seen: its
    // figures include what it did before the counters started, so only its exit counts.
    step_with_exits(
        &mut a,
        120 * S,
        vec![init()],
        vec![exit(40, 50 * S, "old", 9 * S, 9, 0)],
    );
    assert_totals(&a, "old", [0; 8], [1, 0, 0]);
}

#[test]
fn the_first_collections_exits_are_before_the_counters_start() {
    let mut a = Aggregator::new(Options::default());
    let mut r = with_exits(
        reading(100 * S, vec![init()], None),
        vec![exit(30, 99 * S, "short", S, 1, 0)],
    );
    r.exits_dropped = 4;
    step(&mut a, r);
    assert!(group(&a, "short").is_none());
    // Drops are the source's own figure: counted from when the exporter opened it.
    assert_eq!(a.view().system.exits_dropped, Some(4));
    let mut r = reading(110 * S, vec![init()], None);
    r.exits_dropped = 1;
    step(&mut a, r);
    assert_eq!(a.view().system.exits_dropped, Some(5));
    // No exit source: said as none.
    let mut r = reading(120 * S, vec![init()], None);
    r.exits_missing = Some("not root".into());
    step(&mut a, r);
    assert_eq!(a.view().system.exits_dropped, None);
}

#[test]
fn a_zombie_whose_thread_row_comes_first_counts_once() {
    // After a pid wrap a thread's tid can be below its process's: tid 5 of process 20
    // sorts before the leader's row. The exit still replaces the leader's figures.
    let mut a = Aggregator::new(Options::default());
    let thread = |k| full(20, 5, 106 * S, "z", 0, k);
    step_at(&mut a, 100 * S, vec![init()]);
    step_at(
        &mut a,
        110 * S,
        vec![init(), thread(0), full(20, 20, 105 * S, "z", S, 1)],
    );
    step_with_exits(
        &mut a,
        120 * S,
        vec![init(), thread(0), full(20, 20, 105 * S, "z", 4 * S, 4)],
        vec![exit(20, 105 * S, "z", 4 * S, 4, 0)],
    );
    assert_totals(&a, "z", all_of(4 * S, 4), [1, 0, 0]);
}

#[test]
fn a_zombie_that_is_also_an_exit_counts_once() {
    let mut a = started();
    seen(&mut a, "z", S, 1);
    // Its exit record and its unreaped zombie row in one reading: the final figures
    // count, the row adds nothing on top.
    let zombie = || full(20, 20, 105 * S, "z", 4 * S, 4);
    step_with_exits(
        &mut a,
        120 * S,
        vec![init(), zombie()],
        vec![exit(20, 105 * S, "z", 4 * S, 4, 0)],
    );
    assert_totals(&a, "z", all_of(4 * S, 4), [1, 0, 0]);
    // Left unreaped: nothing more.
    step_at(&mut a, 130 * S, vec![init(), zombie()]);
    assert_totals(&a, "z", all_of(4 * S, 4), [1, 0, 0]);
    // Never seen before its zombie row: counted once too.
    step_with_exits(
        &mut a,
        140 * S,
        vec![init(), full(21, 21, 131 * S, "z", 2 * S, 2)],
        vec![exit(21, 131 * S, "z", 2 * S, 2, 0)],
    );
    assert_totals(&a, "z", all_of(6 * S, 6), [2, 0, 0]);
}

#[test]
fn a_process_missing_before_its_exit_record_is_counted_from_where_it_was_seen() {
    let mut a = started();
    seen(&mut a, "p", 2 * S, 2);
    // It died after the third reading's drain, before its walk: missing, no record yet.
    step_at(&mut a, 120 * S, vec![init()]);
    assert_eq!(figures(group(&a, "p").expect("p")), all_of(2 * S, 2));
    // The record comes with the fourth: counted from the second's figures, once.
    gone(&mut a, 130 * S, "p", 3 * S, 3);
    assert_totals(&a, "p", all_of(3 * S, 3), [1, 0, 0]);
}

#[test]
fn exit_figures_below_what_was_counted_add_nothing_and_cpu_moves_between_modes() {
    let mut a = started();
    // Seen with 4 s user and 2 s system.
    seen(&mut a, "m", 4 * S, 5);
    // The exit's split gives 3.5 s user, 3 s system (6.5 s in all) and fewer faults
    // than were read alive: system grows by the whole's 0.5 s, user stays, nothing
    // goes down.
    let mut e = exit(20, 105 * S, "m", 0, 1, 0);
    e.utime_ns = 3 * S + S / 2;
    e.stime_ns = 3 * S;
    step_with_exits(&mut a, 120 * S, vec![init()], vec![e]);
    let m = group(&a, "m").expect("m");
    assert_eq!(m.total.cpu_user_ns, 4 * S);
    assert_eq!(m.total.cpu_system_ns, 2 * S + S / 2);
    assert_eq!(m.total.minor_faults, 50);
    assert_eq!(m.total.exits, [1, 0, 0]);
}

#[test]
fn switches_of_a_process_counted_from_birth_reach_its_group_total() {
    let mut a = started();
    // Two threads, 300 + 200 voluntary switches.
    let mut t2 = full(20, 21, 106 * S, "w", 0, 2);
    t2.stat = None;
    step_at(
        &mut a,
        110 * S,
        vec![init(), full(20, 20, 105 * S, "w", S, 3), t2],
    );
    assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 500);
    // Thread 21 ends (after 250 switches, 50 never seen) and the process exits with 900
    // in all (threads' and the dead thread's, as the kernel sums them).
    step_at(
        &mut a,
        120 * S,
        vec![init(), full(20, 20, 105 * S, "w", S, 4)],
    );
    assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 600);
    let mut e = exit(20, 105 * S, "w", S, 4, 0);
    e.voluntary_ctxt_switches = 900;
    step_with_exits(&mut a, 130 * S, vec![init()], vec![e]);
    assert_eq!(group(&a, "w").expect("w").total.voluntary_switches, 900);
    // A process already running at the first collection: its group total includes
    // threads that ended before the exporter saw them, so its exit adds no switches.
    let mut a = Aggregator::new(Options::default());
    step_at(
        &mut a,
        100 * S,
        vec![init(), full(30, 30, 50 * S, "o", S, 1)],
    );
    step_at(
        &mut a,
        110 * S,
        vec![init(), full(30, 30, 50 * S, "o", S, 2)],
    );
    let mut e = exit(30, 50 * S, "o", 2 * S, 2, 0);
    e.voluntary_ctxt_switches = 100_000;
    step_with_exits(&mut a, 120 * S, vec![init()], vec![e]);
    let o = group(&a, "o").expect("o");
    assert_eq!(o.total.voluntary_switches, 100);
    // Its CPU is exact: the process's own figure alive and at exit.
    assert_eq!(o.total.cpu_user_ns, S);
}

#[test]
fn exits_never_seen_alive_join_their_parents_cgroup_group() {
    let mut a = Aggregator::new(Options {
        grouping: Grouping::Cgroup,
        ..Options::default()
    });
    let shell = || {
        let mut t = full(10, 10, S, "sh", 0, 0);
        t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
            b"0::/system.slice/cron.service\n".to_vec(),
        )));
        t
    };
    step_at(&mut a, 100 * S, vec![shell()]);
    // sh -> bash (exited too) -> curl; and an orphan reparented to pid 1.
    let mut bash = exit(11, 101 * S, "bash", S, 1, 0);
    bash.ppid = 10;
    let mut curl = exit(12, 102 * S, "curl", S, 1, 0);
    curl.ppid = 11;
    let orphan = exit(13, 103 * S, "orphan", S, 1, 0);
    step_with_exits(&mut a, 110 * S, vec![shell()], vec![curl, bash, orphan]);
    let g = group(&a, "/system.slice/cron.service").expect("cron's group");
    assert_eq!(g.total.exits, [2, 0, 0]);
    assert_eq!(g.total.cpu_user_ns, 2 * S);
    let all: u64 = a
        .groups
        .iter()
        .map(|g| g.total.exits.iter().sum::<u64>())
        .sum();
    assert_eq!(all, 2, "the orphan has no group");
}

#[test]
fn exits_fold_into_other_with_their_group() {
    let mut a = Aggregator::new(forty_groups_of_series());
    step_at(&mut a, 100 * S, twenty_groups(1));
    step_with_exits(
        &mut a,
        110 * S,
        twenty_groups(2),
        vec![exit(100, 101 * S, "g1", S / 10, 0, 9)],
    );
    let v = a.view();
    let names: Vec<&str> = v.groups.iter().map(|(n, _)| *n).collect();
    assert!(!names.contains(&"g1"), "{names:?}");
    let other = v.groups.last().expect("other").1;
    assert_eq!(other.total.exits, [0, 1, 0]);
    assert_series_fit(&v);
}
#[test]
fn an_exec_between_the_last_collection_and_the_exit_regroups_the_rest() {
    let mut a = started();
    // Seen as the forked shell, then it execs curl and exits: what it did since goes
    // to curl, from the figures seen as sh.
    seen(&mut a, "sh", S, 1);
    gone(&mut a, 120 * S, "curl", 3 * S, 2);
    assert_eq!(figures(group(&a, "sh").expect("sh")), all_of(S, 1));
    let curl = group(&a, "curl").expect("curl");
    assert_eq!(curl.total.cpu_user_ns, 2 * S);
    assert_eq!(curl.total.minor_faults, 10);
    assert_eq!(curl.total.exits, [1, 0, 0]);
}
#[test]
fn exits_are_grouped_by_the_name_they_exit_with_not_a_stale_row() {
    // Regression: a child seen right after its fork (its parent's comm), renamed, then
    // exited, its record in a reading that still holds the row read before the rename
    // (a walk that did not read it again): its exit goes by the name it exited with.
    let mut a = Aggregator::new(Options::default());
    let parent = || full(10, 10, S, "parent", S, 1);
    step_at(&mut a, 100 * S, vec![init(), parent()]);
    let forked = || full(20, 20, 105 * S, "parent", 0, 0);
    step_at(&mut a, 110 * S, vec![init(), parent(), forked()]);
    step_with_exits(
        &mut a,
        120 * S,
        vec![init(), parent(), forked()],
        vec![exit(20, 105 * S, "child", 2 * S, 2, 0)],
    );
    assert_eq!(group(&a, "parent").expect("parent").total.exits, [0, 0, 0]);
    let child = group(&a, "child").expect("child");
    assert_eq!(child.total.exits, [1, 0, 0]);
    assert_eq!(child.total.cpu_user_ns, 2 * S);
    // A zombie row read after the rename groups the exit as alive, as before.
    step_at(
        &mut a,
        130 * S,
        vec![init(), parent(), full(21, 21, 125 * S, "parent", 0, 0)],
    );
    step_with_exits(
        &mut a,
        140 * S,
        vec![init(), parent(), full(21, 21, 125 * S, "child", S, 1)],
        vec![exit(21, 125 * S, "child", S, 1, 0)],
    );
    assert_eq!(group(&a, "parent").expect("parent").total.exits, [0, 0, 0]);
    assert_eq!(group(&a, "child").expect("child").total.exits, [2, 0, 0]);
}

#[test]
fn state_time_of_a_process_born_and_dead_between_collections_is_its_groups() {
    let mut a = Aggregator::new(Options::default());
    let z = [0u64; NSTATES];
    let init = || task(1, 1, S, "init", 0);
    step(
        &mut a,
        sampled(100 * S, vec![init()], &[(1, 1, S, z, false)]),
    );
    // Pid 30 lived 0.3 s between the two collections: 0.2 s running, 0.1 s runnable.
    let mut ran = z;
    ran[State::Running.index()] = S / 5;
    ran[State::Runnable.index()] = S / 10;
    step(
        &mut a,
        with_exits(
            sampled(
                110 * S,
                vec![init()],
                &[(1, 1, S, z, false), (30, 30, 101 * S, ran, true)],
            ),
            vec![exit(30, 101 * S, "short", S / 5, 0, 0)],
        ),
    );
    let g = group(&a, "short").expect("short");
    assert_eq!(g.total.state_ns[State::Running.index()], S / 5);
    assert_eq!(g.total.state_ns[State::Runnable.index()], S / 10);
}
#[test]
fn io_not_read_alive_is_not_counted_at_exit() {
    let mut a = started();
    let mut unread = full(20, 20, 105 * S, "u", S, 1);
    unread.io = None;
    step_at(&mut a, 110 * S, vec![init(), unread]);
    gone(&mut a, 120 * S, "u", 2 * S, 5);
    let u = group(&a, "u").expect("u");
    assert_eq!((u.total.read_bytes, u.total.write_bytes), (0, 0));
    assert_eq!(u.total.cpu_user_ns, 2 * S);
}

/// Processes of `threads` threads each (pids `first..first + n`, their threads' tids
/// above 1,000,000), with context switches and state totals, born at `born_ns`.
fn crowd(first: i32, n: i32, threads: i32, born_ns: u64, k: u64) -> Vec<Task> {
    let mut v = Vec::new();
    for pid in first..first + n {
        v.push(full(pid, pid, born_ns, "crowd", k * S / 100, k));
        for j in 1..threads {
            let mut t = full(pid, 1_000_000 + pid * 16 + j, born_ns, "crowd", 0, k);
            t.stat = None;
            v.push(t);
        }
    }
    v.sort_unstable_by_key(|t| (t.id.tgid, t.id.tid));
    v
}

fn states_of(at_ns: u64, tasks: &[Task], exited: &[Task]) -> Sample {
    let mut ns = [0u64; NSTATES];
    ns[State::Sleeping.index()] = at_ns / 2;
    let rows: Vec<(i32, i32, u64, [u64; NSTATES], bool)> = tasks
        .iter()
        .map(|t| (t.id.tgid, t.id.tid, t.id.start_time_ns, ns, false))
        .chain(
            exited
                .iter()
                .map(|t| (t.id.tgid, t.id.tid, t.id.start_time_ns, ns, true)),
        )
        .collect();
    sample(at_ns, &rows)
}

/// Regression: the exporter holds per group what it exports; per task only
/// the figures the next interval starts from, for the tasks alive now. Processes that come
/// and go, with exit records and without, leave nothing behind, and nothing piles up.
#[test]
fn processes_that_come_and_go_leave_no_per_task_state() {
    let mut a = Aggregator::new(Options::default());
    let base = |at_ns| {
        let tasks = vec![init()];
        let st = states_of(at_ns, &tasks, &[]);
        reading(at_ns, tasks, Some(st))
    };
    step(&mut a, base(100 * S));
    let idle = a.footprint();
    assert_eq!(
        (
            idle.processes,
            idle.threads,
            idle.thread_states,
            idle.pending
        ),
        (1, 0, 1, 0),
        "{idle:?}"
    );
    let mut bytes_after_cycle = Vec::new();
    for cycle in 0..6u64 {
        let at = 110 * S + cycle * 30 * S;
        // 200 processes of 3 threads each come...
        let born = at - S;
        let crowd = crowd(1000 + cycle as i32 * 1000, 200, 3, born, cycle + 1);
        let mut tasks = vec![init()];
        tasks.extend(crowd.iter().cloned());
        let st = states_of(at, &tasks, &[]);
        step(&mut a, reading(at, tasks, Some(st)));
        let f = a.footprint();
        assert_eq!(
            (f.processes, f.threads, f.thread_states),
            (201, 400, 601),
            "{f:?}"
        );
        // ...and go: half with their exit records, half without (missing, then
        // waited for one collection).
        let exits: Vec<Exit> = crowd
            .iter()
            .filter(|t| t.id.is_leader() && t.id.tgid % 2 == 0)
            .map(|t| exit(t.id.tgid, born, "crowd", S, cycle + 2, 0))
            .collect();
        let tasks = vec![init()];
        let st = states_of(at + 10 * S, &tasks, &crowd);
        step(
            &mut a,
            with_exits(reading(at + 10 * S, tasks, Some(st)), exits),
        );
        let f = a.footprint();
        // The exited threads' final totals are held while the source reports them.
        assert_eq!(
            (f.processes, f.threads, f.thread_states),
            (1, 0, 601),
            "{f:?}"
        );
        assert_eq!(f.pending, 100, "those without a record wait: {f:?}");
        step(&mut a, base(at + 20 * S));
        let f = a.footprint();
        assert_eq!(
            (f.processes, f.threads, f.thread_states, f.pending),
            (1, 0, 1, 0),
            "{f:?}"
        );
        assert!(f.grouped <= 1, "{f:?}");
        bytes_after_cycle.push(f.bytes);
    }
    // The lists keep their allocations for the next crowd, and no more: six crowds cost
    // what the first two did (a hash table's capacity moves with its deleted slots).
    let first = bytes_after_cycle[..2].iter().max().copied().unwrap_or(0);
    assert!(
        bytes_after_cycle.iter().all(|&b| b <= first),
        "{bytes_after_cycle:?}"
    );
    // Their group's counters stay (per group, bounded by the groups).
    let g = group(&a, "crowd").expect("crowd");
    assert_eq!(g.total.exits, [600, 0, 0]);
    assert_eq!(g.now.processes, 0);
}

/// Thread-state time is the same whether the previous totals are a whole sample or the
/// per-thread entries kept: a thread's interval is from its last totals, a thread new
/// in the interval brings all it has, one that exited its final totals, once.
#[test]
fn state_time_follows_each_thread_from_its_last_totals() {
    let mut a = Aggregator::new(Options::default());
    let z = [0u64; NSTATES];
    let with = |run: u64, sleep: u64| {
        let mut ns = z;
        ns[State::Running.index()] = run;
        ns[State::Sleeping.index()] = sleep;
        ns
    };
    // Processes `w` of one thread each (pid = tid, started at 1 s): those not exited are
    // in the walk.
    let collect = |a: &mut Aggregator, at_ns: u64, threads: &[(i32, [u64; NSTATES], bool)]| {
        let tasks = threads
            .iter()
            .filter(|&&(_, _, exited)| !exited)
            .map(|&(p, _, _)| task(p, p, S, "w", 0))
            .collect();
        let threads: Vec<_> = threads
            .iter()
            .map(|&(p, ns, exited)| (p, p, S, ns, exited))
            .collect();
        step(a, sampled(at_ns, tasks, &threads));
    };
    collect(
        &mut a,
        100 * S,
        &[(1, with(5 * S, 5 * S), false), (2, with(S, 0), false)],
    );
    // 1 ran 2 s and slept 8 s more; 2 exited after 1 s more running; 3 is new (3 s).
    collect(
        &mut a,
        110 * S,
        &[
            (1, with(7 * S, 13 * S), false),
            (2, with(2 * S, 0), true),
            (3, with(3 * S, 0), false),
        ],
    );
    let w = group(&a, "w").expect("w");
    assert_eq!(w.total.state_ns[State::Running.index()], 2 * S + S + 3 * S);
    assert_eq!(w.total.state_ns[State::Sleeping.index()], 8 * S);
    // The exited thread's final totals are kept while the source reports them (a second
    // report adds nothing), then forgotten; 1's next interval starts from 110 s's totals.
    assert_eq!(a.footprint().thread_states, 3);
    collect(
        &mut a,
        120 * S,
        &[
            (1, with(8 * S, 22 * S), false),
            (3, with(3 * S, 10 * S), false),
        ],
    );
    assert_eq!(a.footprint().thread_states, 2);
    let w = group(&a, "w").expect("w");
    assert_eq!(w.total.state_ns[State::Running.index()], 7 * S);
    assert_eq!(
        w.total.state_ns[State::Sleeping.index()],
        8 * S + 9 * S + 10 * S
    );
}

/// What docs/serve.md says the exporter holds per task ("What serve holds per task"):
/// a process's counters, another thread's switches, a thread's state totals.
#[test]
fn per_task_entries_stay_as_small_as_documented() {
    use std::mem::size_of;
    assert!(size_of::<(TaskId, Prev)>() <= 128);
    assert!(size_of::<(TaskId, (u64, u64))>() <= 32);
    assert!(size_of::<(TaskId, ThreadPrev)>() <= 112);
    assert!(size_of::<(TaskId, tasksnap_model::Comm, Option<Arc<str>>)>() <= 56);
}

/// `footprint()` on a known state: two processes (one with two more threads) and a
/// thread-state sample of their four threads: each part is its holder's entries times their
/// size (capacity included), `bytes` is the sum of the per-task parts, and the groups are a
/// part of their own.
#[test]
fn the_footprint_counts_each_part_it_holds() {
    use std::mem::size_of;
    let mut a = Aggregator::new(Options::default());
    let mut tasks = vec![init(), task(10, 10, S, "w", S)];
    for tid in [11, 12] {
        let mut t = task(10, tid, S, "w", 0);
        t.stat = None;
        t.sched = Some(Box::new(tasksnap_model::Sched {
            on_cpu_ns: 0,
            run_delay_ns: 0,
            timeslices: 0,
            voluntary_switches: Some(3),
            involuntary_switches: Some(1),
        }));
        tasks.push(t);
    }
    let st = states_of(100 * S, &tasks, &[]);
    step(&mut a, reading(100 * S, tasks, Some(st)));
    let f = a.footprint();
    assert_eq!(
        (f.processes, f.threads, f.thread_states, f.pending),
        (2, 2, 4, 0)
    );
    assert_eq!(
        f.process_bytes,
        a.prev.capacity() * size_of::<(TaskId, Prev)>()
    );
    assert!(f.process_bytes >= 2 * size_of::<(TaskId, Prev)>());
    assert_eq!(
        f.thread_bytes,
        a.threads.capacity() * size_of::<(TaskId, (u64, u64))>()
    );
    assert!(f.thread_bytes >= 2 * size_of::<(TaskId, (u64, u64))>());
    // No /proc samples and no wait reasons: the table alone.
    assert_eq!(
        f.thread_state_bytes,
        a.states_prev.capacity() * (size_of::<(TaskId, ThreadPrev)>() + 1)
    );
    assert!(f.thread_state_bytes > 4 * size_of::<(TaskId, ThreadPrev)>());
    assert_eq!(f.pending_bytes, 0);
    assert!(f.grouped_bytes > 0);
    assert_eq!(
        f.bytes,
        f.process_bytes + f.thread_bytes + f.thread_state_bytes + f.grouped_bytes + f.pending_bytes
    );
    // Two groups, "init" and "w".
    assert!(f.group_bytes >= 2 * size_of::<Group>() + "init".len() + "w".len());
    let parts = f.parts();
    assert_eq!(
        parts.iter().map(|p| p.1).sum::<usize>(),
        f.bytes + f.group_bytes
    );
}
