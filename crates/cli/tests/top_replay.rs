//! `tasksnap top --replay`: a CPU burner and a sleeper are recorded (4 samples, one a
//! second), killed, and the recording is read back with `top -b --replay`: both appear in
//! every frame, the burner near 100% CPU and the sleeper at 0 (rates from the recorded
//! samples, not from a host where they are gone), each frame says it is a replay and shows
//! its sample's time; a time outside the recording is an error.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TASKSNAP: &str = env!("CARGO_BIN_EXE_tasksnap");

/// A child that is killed when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(program: &str, args: &[&str]) -> Guard {
    Guard(
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn"),
    )
}

fn top(args: &[&str]) -> Output {
    Command::new(TASKSNAP)
        .arg("top")
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("run tasksnap top")
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// One batch frame: its header lines and its rows, split into fields.
struct Frame {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn frames(stdout: &[u8]) -> Vec<Frame> {
    let text = String::from_utf8_lossy(stdout);
    let mut out: Vec<Frame> = Vec::new();
    let mut in_rows = false;
    for line in text.lines() {
        if line.starts_with("top - ") {
            out.push(Frame {
                header: vec![line.to_string()],
                rows: Vec::new(),
            });
            in_rows = false;
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        if line.trim_start().starts_with("PID ") {
            in_rows = true;
        } else if in_rows {
            if !line.trim().is_empty() {
                f.rows
                    .push(line.split_whitespace().map(str::to_string).collect());
            }
        } else if !line.is_empty() {
            f.header.push(line.to_string());
        }
    }
    out
}

/// %CPU of `pid` in `f` (the 9th column: PID USER PR NI VIRT RES SHR S %CPU).
fn cpu_of(f: &Frame, pid: u32) -> Option<f64> {
    let pid = pid.to_string();
    f.rows
        .iter()
        .find(|r| r.first() == Some(&pid))
        .and_then(|r| r.get(8)?.parse().ok())
}

#[test]
fn top_replays_a_recording() {
    if !tasksnap_loadgen::root_or_skip("top --replay of a recording") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("rec");
    let store_s = store.to_str().expect("utf-8 path");

    let burner = spawn("sh", &["-c", "while :; do :; done"]);
    let sleeper = spawn("sleep", &["100"]);
    let (burn_pid, sleep_pid) = (burner.0.id(), sleeper.0.id());
    // The sleeper past its exec, so that its start costs no CPU inside the recording.
    let settled = std::time::Instant::now();
    while !tasksnap_loadgen::settled_sleep(sleep_pid as i32)
        && settled.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = now_s();
    // The burner's true share of a CPU while recording: on a busy host it gets what the
    // other runnable tasks leave it, not a whole CPU.
    let (cpu0, wall0) = (
        tasksnap_loadgen::cpu_clock_ns(burn_pid as i32).expect("the burner's CPU clock"),
        std::time::Instant::now(),
    );
    let rec = Command::new(TASKSNAP)
        .args([
            "record",
            "--dir",
            store_s,
            "--interval",
            "1",
            "--count",
            "4",
        ])
        .output()
        .expect("run tasksnap record");
    let ended = now_s();
    let burn_share = (tasksnap_loadgen::cpu_clock_ns(burn_pid as i32).expect("CPU clock") - cpu0)
        as f64
        / wall0.elapsed().as_nanos() as f64
        * 100.0;
    assert!(
        rec.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    drop(burner);
    drop(sleeper);

    // Three frames: samples 2, 3 and 4 (the first has no sample before it).
    let out = top(&["-b", "--replay", store_s, "-n", "3"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fs = frames(&out.stdout);
    assert_eq!(fs.len(), 3, "{}", String::from_utf8_lossy(&out.stdout));
    for (i, f) in fs.iter().enumerate() {
        let header = f.header.join("\n");
        let marker = f
            .header
            .iter()
            .find(|h| h.starts_with("replay "))
            .unwrap_or_else(|| panic!("no replay marker in\n{header}"));
        assert!(
            marker.contains(&format!("{store_s} sample {}/4 at ", i + 2)),
            "{marker}"
        );
        // The sample's time, RFC 3339 in UTC, within the recording's run...
        let at = marker
            .split(" at ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("a time in the marker");
        assert!(at.ends_with('Z'), "{at}");
        let t = humantime::parse_rfc3339(at)
            .expect("RFC 3339")
            .duration_since(UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs();
        assert!(
            (started..=ended + 1).contains(&t),
            "{at} not in {started}..={ended}"
        );
        // ... and the clock on the first line is that time of day, in UTC.
        let hms = format!(
            "{:02}:{:02}:{:02}",
            t % 86_400 / 3600,
            t % 3600 / 60,
            t % 60
        );
        assert!(
            f.header[0].starts_with(&format!("top - {hms} up ")),
            "{} vs {at}",
            f.header[0]
        );
        let burn = cpu_of(f, burn_pid).unwrap_or_else(|| panic!("burner missing\n{header}"));
        let sleep = cpu_of(f, sleep_pid).unwrap_or_else(|| panic!("sleeper missing\n{header}"));
        // Each second's share around the recording's mean (it moves with the host's load).
        assert!(
            burn >= burn_share * 0.4 && burn <= burn_share * 1.6 + 5.0,
            "burner at {burn}% in frame {i}; it had {burn_share:.1}% of a CPU while recorded"
        );
        assert!(sleep < 1.0, "sleeper at {sleep}% in frame {i}");
    }

    // Asked for more frames than the recording holds: it stops at the end, successfully.
    let out = top(&[
        "-b",
        "--replay",
        store_s,
        "-n",
        "10",
        "-p",
        &burn_pid.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(frames(&out.stdout).len(), 3);

    // --at between the first two samples: the first is in force; four frames, the first
    // without rates.
    let first = {
        let fs = frames(&top(&["-b", "--replay", store_s, "-n", "1"]).stdout);
        let marker = fs[0]
            .header
            .iter()
            .find(|h| h.starts_with("replay "))
            .cloned();
        let at = marker.expect("marker");
        let at = at.split(" at ").nth(1).expect("time").split(' ').next();
        humantime::parse_rfc3339(at.expect("time"))
            .expect("RFC 3339")
            .duration_since(UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs_f64()
            - 0.5
    };
    let out = top(&["-b", "--replay", store_s, "--at", &format!("{first:.3}")]);
    assert_eq!(out.status.code(), Some(0));
    let fs = frames(&out.stdout);
    assert_eq!(fs.len(), 4);
    assert!(fs[0].header.iter().any(|h| h.contains("sample 1/4")));

    // A time outside the recording, a directory that is no recording: one line, exit 1.
    for args in [
        &["-b", "--replay", store_s, "--at", "2001-01-01T00:00:00Z"][..],
        &["-b", "--replay", store_s, "--at", "now"],
        &["-b", "--replay", "/nonexistent-tasksnap-store"],
        &["-b", "--at", "-10m"],
    ] {
        let out = top(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a frame");
        assert!(err.starts_with("tasksnap top: "), "{args:?}: {err}");
    }
    let out = top(&["-b", "--replay", store_s, "--at", "2001-01-01T00:00:00Z"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside the recording"));
}

/// The bytes of every file under `dir` (0 while it does not exist): it grows as a recorder
/// appends a sample. Watched with stat calls only, so that waiting for a sample puts no load
/// on a host whose other tests measure CPU shares.
fn store_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => store_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Waits until the store in `dir` has grown past `bytes`.
fn wait_for_growth(dir: &std::path::Path, bytes: u64, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if store_bytes(dir) > bytes {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process that lived 300 ms between two samples of a recording (a copy of sh under a
/// name of its own, ending with `exit 5`): `top -b --replay --exited` lists it once, as
/// `<name>` with state E and its code in the EXIT column, in the frame of the sample after
/// its exit, whose "Tasks:" line counts it; without `--exited` it is counted, not listed.
#[test]
fn top_replay_marks_a_process_that_exited_between_two_samples() {
    if !tasksnap_loadgen::root_or_skip("top --replay of recorded exits (BPF)") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("rec");
    let store_s = store.to_str().expect("utf-8 path");
    let name = format!("tsxr{}", std::process::id() % 1_000_000);
    let sh = dir.path().join(&name);
    std::fs::copy("/bin/sh", &sh).expect("copy /bin/sh");
    let mut rec = Guard(
        Command::new(TASKSNAP)
            .args([
                "record",
                "--dir",
                store_s,
                "--interval",
                "1",
                "--count",
                "4",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the recorder"),
    );
    // The recorder says "recording to ..." right before it takes its first sample; samples
    // are a second apart, so once the first is written the next growth of the store is the
    // second sample.
    let mut said = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(rec.0.stderr.as_mut().expect("the recorder's stderr")),
        &mut said,
    )
    .expect("read the recorder's stderr");
    assert!(said.contains("recording to"), "{said}");
    std::thread::sleep(Duration::from_millis(500));
    wait_for_growth(&store, store_bytes(&store), "the second sample");
    // Right after a sample, most of a second before the next.
    let mut child = Command::new(&sh)
        .args(["-c", "sleep 0.3; exit 5"])
        .spawn()
        .expect("spawn the copy of sh");
    assert_eq!(child.wait().expect("wait").code(), Some(5));
    let status = rec.0.wait().expect("the recorder");
    assert!(status.success(), "record exited {status:?}");
    let pid = child.id().to_string();

    let out = top(&["-b", "--replay", store_s, "--exited", "-n", "10"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fs = frames(&out.stdout);
    assert_eq!(fs.len(), 3, "samples 2 to 4:\n{text}");
    let listed: Vec<(usize, &Vec<String>)> = fs
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.rows.iter().map(move |r| (i, r)))
        .filter(|(_, r)| r.first() == Some(&pid))
        .collect();
    assert_eq!(listed.len(), 1, "pid {pid} once:\n{text}");
    let (i, row) = listed[0];
    // PID USER PR NI VIRT RES SHR S %CPU %MEM RUNQ% DISK% TIME+ EXIT COMMAND
    assert_eq!(row[7], "E", "{row:?}");
    assert_eq!(row[13], "5", "{row:?}");
    assert_eq!(row[14], format!("<{name}>"), "{row:?}");
    let tasks = fs[i]
        .header
        .iter()
        .find(|h| h.starts_with("Tasks:"))
        .expect("a Tasks: line");
    let exited_n: usize = tasks
        .find(" exited (")
        .and_then(|at| tasks[..at].rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no exited count in {tasks:?}"));
    assert!(exited_n >= 1, "{tasks:?}");

    // Without the view: counted in the header, no row.
    let out = top(&["-b", "--replay", store_s, "-n", "10"]);
    let fs = frames(&out.stdout);
    assert!(
        fs.iter()
            .all(|f| f.rows.iter().all(|r| r.first() != Some(&pid))),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(fs[i].header.iter().any(|h| h.contains(" exited (")));
}
