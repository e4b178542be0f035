//! The /proc fallback on fake /proc trees: hostile command names, threads that vanish,
//! unparsable files, delay accounting on and off. No privileges needed.

use std::fs;
use std::path::Path;
use std::time::Duration;

use tasksnap_collect::testing::states::procfs::{Options, ProcfsSource};
use tasksnap_collect::testing::states::Filter;
use tasksnap_collect::testing::StateSource;
use tasksnap_states::{between, Rollup, State};

fn stat_line(tid: i32, comm: &str, state: char, start: u64, blkio: u64) -> String {
    // 52 fields as Linux 6.18 writes them; only the ones tasksnap reads vary.
    format!(
        "{tid} ({comm}) {state} 1 {tid} {tid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {start} \
         1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 {blkio} 0 0 0 0 0 0 0 0 0 0\n"
    )
}

/// The /proc source over the fake tree at `root`, sampling at 200 Hz, every thread.
fn sampled_at_200hz(root: &Path) -> ProcfsSource {
    ProcfsSource::new(Options {
        sample_hz: 200,
        proc_root: root.to_path_buf(),
        ..Options::default()
    })
    .expect("source")
}

fn thread(root: &Path, pid: i32, tid: i32, comm: &str, state: char, sched: (u64, u64)) {
    let d = root.join(format!("{pid}/task/{tid}"));
    fs::create_dir_all(&d).expect("mkdir");
    fs::write(d.join("stat"), stat_line(tid, comm, state, 100, 0)).expect("stat");
    fs::write(d.join("schedstat"), format!("{} {} 5\n", sched.0, sched.1)).expect("schedstat");
    fs::write(d.join("wchan"), "vm_mmap_pgoff").expect("wchan");
}

fn set_state(root: &Path, pid: i32, tid: i32, comm: &str, state: char, blkio: u64) {
    let d = root.join(format!("{pid}/task/{tid}"));
    fs::write(d.join("stat"), stat_line(tid, comm, state, 100, blkio)).expect("stat");
}

fn set_sched(root: &Path, pid: i32, tid: i32, sched: (u64, u64)) {
    let d = root.join(format!("{pid}/task/{tid}"));
    fs::write(d.join("schedstat"), format!("{} {} 9\n", sched.0, sched.1)).expect("schedstat");
}

/// An empty fake tree but for `sys/kernel/task_delayacct`, which says `on` ("0" or "1").
fn tree_with_delayacct(on: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(tmp.path().join("sys/kernel")).expect("mkdir");
    fs::write(
        tmp.path().join("sys/kernel/task_delayacct"),
        format!("{on}\n"),
    )
    .expect("sysctl");
    tmp
}

#[test]
fn fake_tree_exact_and_sampled_figures() {
    let tmp = tree_with_delayacct("0");
    let root = tmp.path();
    let odd = "a) (b\nc";
    thread(root, 10, 10, odd, 'D', (0, 0));
    thread(root, 10, 11, "sleepy", 'S', (0, 0));
    thread(root, 20, 20, "gone soon", 'R', (0, 0));
    // An unparsable thread, and a process directory without threads: skipped.
    fs::create_dir_all(root.join("30/task/30")).expect("mkdir");
    fs::write(root.join("30/task/30/stat"), "garbage").expect("stat");
    fs::create_dir_all(root.join("40")).expect("mkdir");
    fs::write(root.join("self"), "not a pid").expect("self");

    let mut src = sampled_at_200hz(root);
    let a = src.sample().expect("sample");
    assert_eq!(a.threads.len(), 3);
    assert!(a.notes.iter().any(|n| n.contains("task_delayacct=1")));

    // Over the next ~500 ms: thread 10 runs 100 ms and waits 50 ms for a CPU, and is in D
    // otherwise; thread 20 vanishes.
    std::thread::sleep(Duration::from_millis(500));
    set_sched(root, 10, 10, (100_000_000, 50_000_000));
    fs::remove_dir_all(root.join("20")).expect("rm");
    let b = src.sample().expect("sample");
    let iv = between(&a, &b, Rollup::Thread);
    assert_eq!(iv.rows.len(), 2, "{:#?}", iv.rows);
    let r = iv.rows.iter().find(|r| r.tid == Some(10)).expect("row 10");
    assert_eq!(r.comm, odd);
    let len = r.alive_ns as f64;
    assert!((len - 5e8).abs() < 1e8, "alive {len}");
    assert_eq!(r.ns[State::Running.index()], 100_000_000);
    assert_eq!(r.ns[State::Runnable.index()], 50_000_000);
    // Every sample saw D: all the off-CPU rest is disk, and wchan names the reason.
    assert_eq!(
        r.ns[State::Disk.index()],
        r.alive_ns - 150_000_000,
        "{r:#?}"
    );
    let reason = r.top_reason.as_ref().expect("reason");
    assert_eq!(reason.text(3), "vm_mmap_pgoff");
    let s = iv.rows.iter().find(|r| r.tid == Some(11)).expect("row 11");
    assert!(s.pct(State::Sleeping) > 99.9);
    assert!(b.mode.sampled(State::Disk) && !b.mode.sampled(State::Running));
}

#[test]
fn fake_tree_delay_accounting_floors_disk() {
    let tmp = tree_with_delayacct("1");
    let root = tmp.path();
    thread(root, 10, 10, "io", 'S', (0, 0));
    let mut src = sampled_at_200hz(root);
    let a = src.sample().expect("sample");
    assert!(a.notes.is_empty());
    std::thread::sleep(Duration::from_millis(400));
    // 30 ticks (300 ms at USER_HZ 100) of block I/O delay, though every sample saw S.
    set_state(root, 10, 10, "io", 'S', 30);
    let b = src.sample().expect("sample");
    let iv = between(&a, &b, Rollup::Thread);
    let r = &iv.rows[0];
    assert_eq!(r.ns[State::Disk.index()], 300_000_000, "{r:#?}");
    assert_eq!(r.ns[State::Sleeping.index()], r.alive_ns - 300_000_000);
}

#[test]
fn filters_by_pid_and_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    thread(root, 10, 10, "db", 'S', (0, 0));
    thread(root, 10, 12, "db worker", 'S', (0, 0));
    thread(root, 20, 20, "web", 'S', (0, 0));
    let src = |filter: Filter| {
        ProcfsSource::new(Options {
            filter,
            proc_root: root.to_path_buf(),
            ..Options::default()
        })
        .expect("source")
    };
    let n = |mut s: ProcfsSource| s.sample().expect("sample").threads.len();
    assert_eq!(n(src(Filter::default())), 3);
    assert_eq!(
        n(src(Filter {
            pids: vec![10],
            comms: vec![]
        })),
        2
    );
    assert_eq!(
        n(src(Filter {
            pids: vec![],
            comms: vec!["web".into()]
        })),
        1
    );
    assert_eq!(
        n(src(Filter {
            pids: vec![99],
            comms: vec![]
        })),
        0
    );
}

#[test]
fn a_missing_proc_root_is_an_error_not_a_panic() {
    let e = ProcfsSource::new(Options {
        proc_root: "/nonexistent/proc".into(),
        ..Options::default()
    })
    .expect_err("must fail");
    assert!(e.to_string().contains("/nonexistent/proc"));
}

/// The one chooser of thread-state sources: a named backend answers or fails (never falls
/// back); `auto` takes the BPF accounting when it loads (root with BPF) and otherwise the /proc
/// source, saying why in the words of the BPF error the states command prints.
#[test]
fn open_states_takes_the_backend_asked_for_and_auto_says_why() {
    use tasksnap_collect::testing::choice::open_states;
    use tasksnap_collect::testing::states::bpf;
    use tasksnap_collect::{Backend, Error};

    let me = vec![std::process::id() as i32];
    let bpf_opts = || bpf::Options {
        filter: Filter {
            pids: me.clone(),
            comms: vec![],
        },
        seed_all: false,
        ..bpf::Options::default()
    };
    let procfs_opts = |root: &str| Options {
        filter: Filter {
            pids: me.clone(),
            comms: vec![],
        },
        proc_root: root.into(),
        ..Options::default()
    };

    let mut c = open_states(Backend::Procfs, bpf_opts(), procfs_opts("/proc")).expect("procfs");
    assert_eq!((c.backend, c.why.as_str()), (Backend::Procfs, "asked for"));
    let sample = c.source.sample().expect("sample");
    assert!(sample.threads.keys().any(|id| id.tgid == me[0]));
    // Asked for by name, a source that cannot run is an error, not the other source.
    match open_states(
        Backend::Procfs,
        bpf_opts(),
        procfs_opts("/nonexistent/proc"),
    ) {
        Err(Error::Io { path, .. }) => assert_eq!(path, "/nonexistent/proc"),
        other => panic!("expected Error::Io, got {:?}", other.map(|c| c.backend)),
    }

    let bpf_loads = bpf::BpfSource::load(bpf_opts()).map(drop);
    let c = open_states(Backend::Auto, bpf_opts(), procfs_opts("/proc")).expect("auto");
    match bpf_loads {
        Ok(()) => {
            assert_eq!(c.backend, Backend::Bpf, "{}", c.why);
            assert!(c.why.starts_with("loaded in "), "{}", c.why);
            let c = open_states(Backend::Bpf, bpf_opts(), procfs_opts("/nonexistent/proc"));
            assert_eq!(c.expect("bpf").backend, Backend::Bpf);
        }
        Err(why) => {
            assert_eq!(c.backend, Backend::Procfs);
            assert_eq!(c.why, why.to_string());
            assert!(
                c.why.starts_with("BPF accounting unavailable: "),
                "{}",
                c.why
            );
            match open_states(Backend::Bpf, bpf_opts(), procfs_opts("/proc")) {
                Err(e @ Error::BpfUnavailable(_)) => assert_eq!(e.to_string(), c.why),
                other => panic!(
                    "expected BpfUnavailable, got {:?}",
                    other.map(|c| c.backend)
                ),
            }
        }
    }
}

/// Regression ("a wrong exact figure"): the /proc sampler read its own `stat`, where a
/// thread reading it is always running (R), so no sample ever caught it off the CPU and all of
/// its interval that schedstat did not explain was charged to runnable: RUNQ 99.7% for a
/// thread asleep between ticks, in a column labelled exact. Here the tree's `thread-self`
/// names thread 7544 as the sampler, whose `stat` is a real Linux 6.18 line of a thread
/// reading its own stat (state R) and whose schedstat moves by a few short runs only. It must
/// count itself asleep; its runnable must be exactly schedstat's delta; and runnable must not
/// be labelled exact in /proc mode, since for threads only ever seen in R (7545, a hog) it
/// holds an estimate of the wait still going on.
#[test]
fn regression_sampler_reading_its_own_stat_was_charged_runnable_as_exact() {
    const SELF_R: &str = "7544 (python3) R 7499 7499 8198 0 -1 4194368 4 6528 0 0 0 0 5 2 20 0 \
        2 0 168290 92487680 3331 18446744073709551615 94454618857472 94454618857813 \
        140721250167680 0 0 0 0 16781312 2 0 0 0 -1 1 0 0 0 0 0 94454618869168 94454618869784 \
        94455415685120 140721250170798 140721250171146 140721250171146 140721250172879 0\n";
    let tmp = tree_with_delayacct("0");
    let root = tmp.path();
    thread(root, 7501, 7501, "python3", 'S', (574_448, 1_860_750));
    thread(root, 7501, 7544, "python3", 'R', (574_448, 1_860_750));
    fs::write(root.join("7501/task/7544/stat"), SELF_R).expect("stat");
    thread(root, 7501, 7545, "hog", 'R', (0, 0));
    std::os::unix::fs::symlink("7501/task/7544", root.join("thread-self")).expect("symlink");

    let mut src = sampled_at_200hz(root);
    let a = src.sample().expect("sample");
    std::thread::sleep(Duration::from_millis(400));
    // The sampler ran 2 ms and waited 0.1 ms for a CPU over the interval; the hog ran 300 ms
    // and its ended waits add up to 50 ms.
    set_sched(root, 7501, 7544, (2_574_448, 1_960_750));
    set_sched(root, 7501, 7545, (300_000_000, 50_000_000));
    let b = src.sample().expect("sample");
    let iv = between(&a, &b, Rollup::Thread);
    let me = iv
        .rows
        .iter()
        .find(|r| r.tid == Some(7544))
        .expect("sampler row");
    assert_eq!(me.ns[State::Running.index()], 2_000_000, "{me:#?}");
    assert_eq!(me.ns[State::Runnable.index()], 100_000, "{me:#?}");
    assert!(me.pct(State::Sleeping) > 95.0, "{me:#?}");
    // The hog: running exact; the rest of its interval (no sample saw it off the CPU) is taken
    // as a wait still going on, an estimate, and labelled so.
    let hog = iv
        .rows
        .iter()
        .find(|r| r.tid == Some(7545))
        .expect("hog row");
    assert_eq!(hog.ns[State::Running.index()], 300_000_000);
    assert!(hog.ns[State::Runnable.index()] > 50_000_000, "{hog:#?}");
    assert!(!b.mode.sampled(State::Running));
    assert!(b.mode.sampled(State::Runnable));
}
