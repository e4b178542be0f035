//! `tasksnap states` inside a pid namespace (`unshare --pid --fork --mount-proc`): only the
//! namespace's tasks, numbered as the namespace numbers them, in both modes, and `-p` with a
//! pid of the namespace finds its thread. Creating a pid namespace needs root
//! (CAP_SYS_ADMIN), as the BPF mode does: skipped with a message otherwise, a failure with
//! TASKSNAP_REQUIRE_PRIVILEGED=1. While it runs, the host starts and ends short-lived
//! processes named `hostchurn`, whose exits reach the BPF exit program from outside the
//! namespace.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasksnap_loadgen::skip_unless_root;

const TASKSNAP: &str = env!("CARGO_BIN_EXE_tasksnap");

/// Short-lived host processes named `hostchurn` (a copy of sleep), one after another, until
/// dropped. Each is waited for; none outlives the test.
struct HostChurn {
    stop: Arc<AtomicBool>,
    started: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HostChurn {
    fn start(dir: &Path) -> HostChurn {
        let sleep = which("sleep").expect("sleep(1) on PATH");
        let exe = dir.join("hostchurn");
        std::fs::copy(sleep, &exe).expect("copy sleep");
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicUsize::new(0));
        let (s, n) = (stop.clone(), started.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Ok(mut c) = Command::new(&exe).arg("0.01").spawn() {
                    n.fetch_add(1, Ordering::Relaxed);
                    let _ = c.wait();
                }
            }
        });
        HostChurn {
            stop,
            started,
            thread: Some(thread),
        }
    }
}

impl Drop for HostChurn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// A child in its own process group, killed with the whole group (SIGKILL) when dropped.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group of a child this test started (its own group).
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// Runs `script` with sh as pid 1 of a new pid namespace with its own /proc; returns its
/// stdout once it is done (60 s at most).
fn in_pid_namespace(script: &str, dir: &Path) -> String {
    let child = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", script])
        .env("T", TASKSNAP)
        .env("D", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .expect("run unshare");
    let mut g = Group(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if g.0.try_wait().expect("wait for unshare").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "the namespace script timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    if let Some(mut o) = g.0.stdout.take() {
        std::io::Read::read_to_string(&mut o, &mut out).expect("read the script's output");
    }
    out
}

fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("states output");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}

/// The namespace has a handful of processes, numbered from 1; anything above this is a
/// number from another namespace.
const NS_MAX_PID: i64 = 64;

/// Every row of every interval is a task of the namespace, by its namespace pid; returns
/// the rows.
fn only_namespace_tasks(path: &Path, what: &str) -> Vec<serde_json::Value> {
    let lines = json_lines(path);
    assert!(!lines.is_empty(), "{what}: no output");
    let mut rows = Vec::new();
    for v in &lines {
        for n in v["notes"].as_array().into_iter().flatten() {
            let n = n.as_str().unwrap_or_default();
            assert!(!n.contains("pid 1 "), "{what}: a note about pid 1: {n}");
        }
        for r in v["threads"].as_array().expect("threads") {
            let pid = r["pid"].as_i64().expect("pid");
            let tid = r["tid"].as_i64().expect("tid");
            let comm = r["comm"].as_str().expect("comm");
            assert!(
                (1..=NS_MAX_PID).contains(&pid) && (1..=NS_MAX_PID).contains(&tid),
                "{what}: a pid from outside the namespace: {r}"
            );
            assert!(
                ["sh", "sleep", "tasksnap", "tasksnap-sample"].contains(&comm),
                "{what}: a task that is not the namespace's: {r}"
            );
            rows.push(r.clone());
        }
    }
    rows
}

/// Regression: inside `unshare --pid --fork --mount-proc`, `states` with the BPF
/// accounting showed the namespace's threads under their host pids and the exits of host
/// threads, found "0 threads" for `-p 2` (a live task of the namespace), and noted the
/// namespace's pid 1 as hidden. ps and top were right there; states must be too, and the
/// /proc fallback as well.
#[test]
fn regression_states_crosses_the_pid_namespace_boundary() {
    skip_unless_root!("states in a pid namespace");
    if which("unshare").is_none() {
        panic!("unshare(1) (util-linux) is needed for this test");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let churn = HostChurn::start(dir.path());
    // A namespace task must exit while the BPF run is measuring: after its first interval
    // (the accounting is loaded and has seen the task alive). Starting states takes 1.6-2.7 s
    // on a busy host, so no fixed delay can say when that is. The subshell W, started before
    // states, waits to open a FIFO, which the reader of states' output opens for writing once
    // the first line is out: so W ends after that line. states runs until a line reports a
    // namespace thread that exited (20 intervals at most), then it is stopped by the closed
    // pipe (status 0). The loop uses sh builtins only: nothing else starts or ends in the
    // namespace meanwhile.
    let fifo = dir.path().join("first");
    let c_fifo = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a NUL-terminated path; mkfifo creates a node and touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    let script = r#"
        sleep 1000 &
        S=$!
        echo "sleep=$S"
        ( : <"$D/first" ) &
        n=0
        { "$T" states --mode bpf --json -i 0.5 -n 20 -r 0 2>"$D/bpf_all.err"; echo "$?" >"$D/bpf_all.rc"; } |
        while IFS= read -r line; do
            printf '%s\n' "$line" >>"$D/bpf_all"
            n=$((n + 1))
            if [ "$n" = 1 ]; then : >"$D/first"; fi
            case "$line" in *'"exited":true'*) break ;; esac
        done
        read -r rc <"$D/bpf_all.rc"
        echo "bpf_all=$rc"
        "$T" states --mode bpf --json -i 0.3 -n 1 -p "$S" >"$D/bpf_p" 2>"$D/bpf_p.err"
        echo "bpf_p=$?"
        "$T" states --mode procfs --json -i 0.3 -n 2 -r 0 >"$D/procfs_all" 2>"$D/procfs_all.err"
        echo "procfs_all=$?"
        "$T" states --mode procfs --json -i 0.3 -n 1 -p "$S" >"$D/procfs_p" 2>"$D/procfs_p.err"
        echo "procfs_p=$?"
        kill "$S"
    "#;
    let out = in_pid_namespace(script, dir.path());
    let host_processes = churn.started.load(Ordering::Relaxed);
    drop(churn);
    eprintln!("{out}(host processes started meanwhile: {host_processes})");
    assert!(host_processes > 0, "the host churn did not run");
    let field = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in {out}"))
            .to_string()
    };
    let sleep_pid: i64 = field("sleep").parse().expect("sleep pid");
    assert!(sleep_pid <= NS_MAX_PID, "a namespace pid: {sleep_pid}");
    for mode in ["bpf", "procfs"] {
        for run in ["all", "p"] {
            let name = format!("{mode}_{run}");
            let err =
                std::fs::read_to_string(dir.path().join(format!("{name}.err"))).unwrap_or_default();
            assert_eq!(field(&name), "0", "{name} failed: {err}");
        }
        let all = only_namespace_tasks(&dir.path().join(format!("{mode}_all")), mode);
        let has = |pid: i64, comm: &str| {
            all.iter()
                .any(|r| r["pid"].as_i64() == Some(pid) && r["comm"] == comm)
        };
        assert!(has(1, "sh"), "{mode}: no row for the namespace's pid 1");
        assert!(
            has(sleep_pid, "sleep"),
            "{mode}: no row for the sleep (pid {sleep_pid})"
        );
        if mode == "bpf" {
            // The namespace's own exits are reported (the subshell ends during the run).
            assert!(
                all.iter().any(|r| r["exited"] == true),
                "bpf: no exited namespace task"
            );
        }
        let p = only_namespace_tasks(&dir.path().join(format!("{mode}_p")), mode);
        assert!(!p.is_empty(), "{mode}: -p {sleep_pid} found no thread");
        for r in &p {
            assert_eq!(r["pid"].as_i64(), Some(sleep_pid), "{mode} -p: {r}");
            assert_eq!(r["tid"].as_i64(), Some(sleep_pid), "{mode} -p: {r}");
            assert_eq!(r["comm"], "sleep", "{mode} -p: {r}");
        }
    }
}
