//! `tasksnap states` end to end: JSON lines whose rows sum to 100%, both modes, the seed's
//! mmap-lock case named in the table and drawn in the flame graph, a closed pipe, bad
//! arguments (numbers out of range, pids that match no process), write errors on stdout and
//! on the flame graph, and a non-root caller who must get /proc, never BPF. The workloads are
//! threads of this test process, observed with `-p <this pid>`. (states_pidns.rs: inside a
//! pid namespace.)

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tasksnap_loadgen::skip_unless_root;

mod common;

use common::{dev_full, ok, text, words, TASKSNAP};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn me() -> String {
    std::process::id().to_string()
}

/// Threads of this process doing mmap(MAP_POPULATE)/munmap of one file until dropped.
struct Mappers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    _file: std::fs::File,
}

impl Mappers {
    fn start(n: usize) -> Mappers {
        use std::io::Write;
        const LEN: usize = 4 << 20;
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(&vec![1u8; LEN]).expect("write");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("query{i}"))
                    .spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            tasksnap_loadgen::map_populated_once(fd, LEN);
                        }
                    })
                    .expect("spawn")
            })
            .collect();
        Mappers {
            stop,
            threads,
            _file: file,
        }
    }
}

impl Drop for Mappers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn states(args: &[&str]) -> Output {
    Command::new(TASKSNAP)
        .arg("states")
        .args(args)
        .output()
        .expect("run tasksnap states")
}

/// [`states`], which must succeed.
fn states_ok(args: &[&str]) -> Output {
    let out = states(args);
    ok(&out, &format!("states {args:?}"));
    out
}

/// `tasksnap states --mode procfs -p <this process>`, then `more`.
fn procfs_of_me(more: &[&str]) -> Command {
    let mut c = Command::new(TASKSNAP);
    c.args(["states", "--mode", "procfs", "-p", &me()])
        .args(more);
    c
}

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}

const PCTS: [&str; 7] = [
    "running_pct",
    "runnable_pct",
    "throttled_pct",
    "sleeping_pct",
    "disk_pct",
    "stopped_pct",
    "other_pct",
];

/// Every thread row has the documented fields and sums to 100 within rounding (0.1).
fn check_rows(v: &serde_json::Value) -> Vec<serde_json::Value> {
    assert!(v["interval_ns"].as_u64().expect("interval_ns") > 0);
    let rows = v["threads"].as_array().expect("threads").clone();
    assert!(!rows.is_empty(), "{v}");
    for r in &rows {
        for k in ["pid", "tid", "comm", "top_reason"] {
            assert!(r.get(k).is_some(), "no {k} in {r}");
        }
        let sum: f64 = PCTS.iter().map(|k| r[k].as_f64().expect("pct")).sum();
        assert!((sum - 100.0).abs() <= 0.1, "sum {sum} in {r}");
    }
    rows
}

/// `states --json` of this process in `mode`, `samples` lines 0.3 s apart, parsed.
fn json_lines_of_me(mode: &str, samples: &str) -> Vec<serde_json::Value> {
    let out = states_ok(&[
        "--mode",
        mode,
        "-p",
        &me(),
        "-i",
        "0.3",
        "-n",
        samples,
        "--json",
    ]);
    json_lines(&out)
}

#[test]
fn json_lines_in_procfs_mode_are_labelled_sampled() {
    let _g = serial();
    let lines = json_lines_of_me("procfs", "2");
    assert_eq!(lines.len(), 2);
    for v in &lines {
        assert_eq!(v["mode"], "procfs");
        let sampled: Vec<&str> = v["sampled"]
            .as_array()
            .expect("sampled")
            .iter()
            .filter_map(|s| s.as_str())
            .collect();
        // Only running is exact in /proc mode: runnable holds an estimate of the run-queue
        // waits still going on (schedstat counts a wait when it ends), throttled one from the
        // cgroups' counts.
        assert_eq!(
            sampled,
            [
                "runnable_pct",
                "sleeping_pct",
                "disk_pct",
                "stopped_pct",
                "other_pct",
                "throttled_pct"
            ]
        );
        check_rows(v);
    }
}

#[test]
fn json_lines_in_bpf_mode_cover_this_process() {
    skip_unless_root!("states --mode bpf");
    let _g = serial();
    let lines = json_lines_of_me("bpf", "1");
    assert_eq!(lines[0]["mode"], "bpf");
    assert_eq!(lines[0]["sampled"].as_array().map(Vec::len), Some(0));
    let rows = check_rows(&lines[0]);
    // SAFETY: gettid cannot fail.
    let main_tid = i64::from(std::process::id());
    assert!(rows.iter().all(|r| r["pid"].as_i64() == Some(main_tid)));
}

#[test]
fn seed_case_table_names_the_rwsem_and_the_flame_graph_draws_it() {
    skip_unless_root!("states seed case");
    let _g = serial();
    let mappers = Mappers::start(16);
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("offcpu.svg");
    let out = states(&[
        "-p",
        &me(),
        "-i",
        "1",
        "-n",
        "2",
        "--processes",
        "--flamegraph",
        svg.to_str().expect("utf8 path"),
    ]);
    drop(mappers);
    let text = text(&out.stdout);
    eprintln!("{text}");
    ok(&out, "states --flamegraph");
    assert!(text.contains("DISK%") && text.contains("TOTAL"), "{text}");
    // The process row's top reason is the mmap lock's rwsem slow path, in D.
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with(&me()))
        .expect("a row for this process");
    assert!(
        row.contains(" rwsem_down_") && row.contains("  D "),
        "{row}"
    );
    let svg = std::fs::read_to_string(&svg).expect("flame graph written");
    assert!(svg.starts_with("<?xml") && svg.contains("<svg"));
    assert!(
        svg.contains("rwsem_down_"),
        "the flame graph shows the rwsem wait"
    );
    assert!(svg.contains("vm_mmap_pgoff") || svg.contains("__vm_munmap"));
}

#[test]
fn a_closed_pipe_ends_it_quietly() {
    let _g = serial();
    let mut child = procfs_of_me(&["-i", "0.1", "-r", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Read one line, then close the pipe: the next write fails with EPIPE.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 64];
    let _ = std::io::Read::read(&mut stdout, &mut first).expect("read");
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        "--sort nonsense",
        "-i 0",
        "--threads --processes",
        "--sample-hz 0",
        "-n 0",
    ] {
        let out = states(&words(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // An unwritable flame graph path fails at once, before any interval.
    let out = states(&[
        "--mode",
        "procfs",
        "-n",
        "1",
        "--flamegraph",
        "/nonexistent/dir/x.svg",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dir/x.svg"));
    assert!(out.stdout.is_empty());
    let help = states(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--flamegraph"));
}

#[test]
fn a_non_root_caller_gets_proc_never_bpf() {
    skip_unless_root!("states as another user (setpriv)");
    let _g = serial();
    // tasksnap where nobody can execute it, wherever the checkout lives.
    let bin = common::ps::tasksnap_for_others();
    let drop_to = |extra: &[&str]| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                bin.as_str(),
                "states",
            ])
            .args(extra)
            .output()
            .expect("run setpriv")
    };
    let out = drop_to(&["--mode", "bpf", "-n", "1", "-i", "0.1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not root"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = drop_to(&["-p", &me(), "-n", "1", "-i", "0.2", "--json"]);
    ok(&out, "states as nobody");
    assert!(String::from_utf8_lossy(&out.stderr).contains("using /proc"));
    assert_eq!(json_lines(&out)[0]["mode"], "procfs");
}

#[test]
fn an_interrupt_prints_the_interval_so_far_and_exits_0() {
    let _g = serial();
    let child = procfs_of_me(&["-i", "30", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // states blocks the stop signals first thing and takes them at its interval's end; a
    // SIGINT sent before that kills it (on a busy host starting can take seconds, longer
    // than any fixed wait). Wait until it has: a thread of it blocks SIGINT (SigBlk; the
    // sampler thread inherits the mask), or its main thread waits for it in
    // rt_sigtimedwait (which unblocks the signals it waits for while it waits). Then a
    // little for the first sample.
    let pid = child.id();
    let blocks = |tid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("SigBlk:"))
                    .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            })
            .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
    };
    let blocks_sigint = || {
        let waits = std::fs::read_to_string(format!("/proc/{pid}/syscall"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<i64>().ok())
            == Some(libc::SYS_rt_sigtimedwait);
        waits
            || std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| blocks(&e.file_name().to_string_lossy()))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !blocks_sigint() {
        assert!(
            std::time::Instant::now() < deadline,
            "states did not block SIGINT in 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1);
    // The partial interval: well under the 30 s asked for.
    assert!(lines[0]["interval_ns"].as_u64().expect("ns") < 10_000_000_000);
}

/// A pid that matches no process (or one that is gone before the first sample) is a message
/// on stderr and status 1, as `ps -p` exits 1 when nothing matched; with other pids that do
/// match, a warning. The defect: `states -p 99999999` printed "0 threads" intervals and
/// exited 0.
#[test]
fn regression_a_pid_that_does_not_exist_said_0_threads_and_exit_0() {
    let _g = serial();
    let gone = {
        let mut c = Command::new("true").spawn().expect("spawn true");
        c.wait().expect("wait");
        c.id().to_string()
    };
    for mode in ["procfs", "auto"] {
        for pid in ["99999999", gone.as_str()] {
            let out = states(&["--mode", mode, "-p", pid, "-n", "1", "-i", "0.1"]);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{mode} -p {pid}: {err}");
            assert!(
                err.contains(&format!("no such process: {pid}")),
                "{mode} -p {pid}: {err}"
            );
            assert!(out.stdout.is_empty(), "{mode} -p {pid}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    let out = states(&[
        "--mode",
        "procfs",
        "-p",
        &format!("{},99999999", me()),
        "-n",
        "1",
        "-i",
        "0.1",
        "--json",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("no such process: 99999999"), "{err}");
    check_rows(&json_lines(&out)[0]);
}

/// Numeric options out of range are usage errors (status 2, clap's message), never a panic,
/// and pids must be positive. The defect: `-p 0` and `-p=-5` ran and printed nothing
/// (`kill(0, ...)` would even name the caller's process group).
#[test]
fn regression_numeric_options_out_of_range_were_accepted() {
    for args in [
        "-i 1e20",
        "-i NaN",
        "-i inf",
        "-i -1",
        "--interval=-1",
        "-i 0.01",
        "-i 86401",
        "-n 0",
        "-n -1",
        "-n 99999999999999999999999",
        "--sample-hz 0",
        "--sample-hz 1001",
        "--sample-hz -5",
        "-r -1",
        "-r 99999999999999999999999",
        // With -n and -i: `-p 0` must not run (without -n it would run forever).
        "-p 0 -n 1 -i 0.1",
        "-p=-5 -n 1 -i 0.1",
        "-p 2147483648 -n 1 -i 0.1",
        "-p 1,0 -n 1 -i 0.1",
        "-p x -n 1 -i 0.1",
    ] {
        let args = words(args);
        let out = states(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("error"), "{args:?}: {err}");
    }
}

/// Output that cannot be written is a failure: `--help >/dev/full` and `--flamegraph
/// /dev/full` say so and exit 1 (the defect: both exited 0, clap's print ignoring write
/// errors and the SVG small enough to sit in a buffer whose flush error was dropped); a
/// usage error with a full stderr does not panic.
#[test]
fn regression_write_errors_on_help_and_the_flame_graph_were_silent() {
    let _g = serial();
    let out = Command::new(TASKSNAP)
        .args(["states", "--help"])
        .stdout(dev_full())
        .output()
        .expect("run");
    common::failed_saying(&out, 1, "write error", "states --help >/dev/full");

    // Without --why-sleep nothing is likely to wait in D: the graph is the small empty one.
    for extra in [&[][..], &["--why-sleep"]] {
        let out = procfs_of_me(&["-n", "1", "-i", "0.2"])
            .args(extra)
            .args(["--flamegraph", "/dev/full"])
            .stdout(Stdio::null())
            .output()
            .expect("run");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains("cannot write /dev/full"), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }

    let out = Command::new(TASKSNAP)
        .args(["states", "--bogus"])
        .stderr(dev_full())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// The row of `tid` in each JSON line of `out`, with that line's interval.
fn rows_of(out: &std::process::Output, tid: i32) -> Vec<(u64, serde_json::Value)> {
    json_lines(out)
        .iter()
        .map(|v| {
            let row = check_rows(v)
                .into_iter()
                .find(|r| r["tid"] == tid)
                .unwrap_or_else(|| panic!("no row for {tid} in {v}"));
            (v["interval_ns"].as_u64().expect("interval_ns"), row)
        })
        .collect()
}

/// A thread in D since before `states` started, which stays there (the loadgen's D-state
/// task: a vfork parent waiting for a child that never execs, in `wait_for_vfork_done`),
/// showed DISK 100% and no wait reason: its wait had no switch-out to take a stack at, and
/// /proc/TID/stack, read instead, needs CAP_SYS_ADMIN, dropped once loading is done. With
/// `-p` (a whole pass each interval) no interval named it; over every thread (read
/// incrementally) the whole pass every 60 samples lost it. Each interval must name it: in
/// D, in the kernel's clone path, for the whole interval.
#[test]
fn regression_a_thread_in_d_since_before_states_started_had_no_wait_reason() {
    skip_unless_root!("the D-state task's wait reason (BPF)");
    let _g = serial();
    let load = tasksnap_loadgen::Load::spawn(&["--dstate"]).expect("the loadgen");
    let d = load.info.dstate[0];
    tasksnap_loadgen::wait_until("the vfork parent in D", || {
        tasksnap_loadgen::read_stat(d).is_ok_and(|s| s.state == 'D')
    });
    let named = |(interval_ns, row): &(u64, serde_json::Value), what: &str| {
        assert_eq!(row["top_reason_state"], "disk", "{what}: {row}");
        let reason = row["top_reason"].as_str().unwrap_or_default();
        assert!(reason.contains("clone"), "{what}: {row}");
        assert!(
            row["disk_pct"].as_f64().expect("disk_pct") > 99.0,
            "{what}: {row}"
        );
        // The whole of the thread's own window is that wait. The window is the scheduler's
        // clock between the thread's two reads, the interval the sampler's clock between its
        // samples: they differ by a tick, and on a churning host by how much longer one drain
        // took than the other (7 ms of a 50 ms interval was seen), so the window must only
        // cover most of the interval.
        let ns = row["top_reason_ns"].as_u64().expect("top_reason_ns");
        let alive_ns = row["alive_ns"].as_u64().expect("alive_ns");
        assert!(ns as f64 >= 0.99 * alive_ns as f64, "{what}: {row}");
        assert!(
            alive_ns as f64 >= 0.7 * *interval_ns as f64,
            "{what}: {row}"
        );
    };
    let out = states_ok(&[
        "--mode",
        "bpf",
        "-p",
        &d.to_string(),
        "-n",
        "2",
        "-i",
        "0.2",
        "--json",
    ]);
    for row in rows_of(&out, d) {
        named(&row, "-p");
    }
    // Every thread, read incrementally: 62 intervals take it past the whole pass of the
    // 60th sample.
    let out = states_ok(&["--mode", "bpf", "-n", "62", "-i", "0.05", "--json"]);
    let rows = rows_of(&out, d);
    assert_eq!(rows.len(), 62);
    for (i, row) in rows.iter().enumerate() {
        named(row, &format!("every thread, interval {i}"));
    }
}
