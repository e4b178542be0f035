//! `tasksnap top --replay`: a CPU burner and a sleeper are recorded (4 samples, one a
//! second), killed, and the recording is read back with `top -b --replay`: both appear in
//! every frame, the burner near 100% CPU and the sleeper at 0 (rates from the recorded
//! samples, not from a host where they are gone), each frame says it is a replay and shows
//! its sample's time; a time outside the recording is an error.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tasksnap_loadgen::skip_unless_root;

use common::recording::store_dir;
use common::top::{exited_count, frames, own_sh, Frame};
use common::{ok, text, Guard, TASKSNAP};

fn spawn(program: &str, args: &[&str]) -> Guard {
    Guard::spawn(Command::new(program).args(args).stdout(Stdio::null())).expect("spawn")
}

fn top(args: &[&str]) -> Output {
    Command::new(TASKSNAP)
        .arg("top")
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("run tasksnap top")
}

/// The frames of `top ARGS`, which must succeed.
fn top_frames(args: &[&str]) -> Vec<Frame> {
    frames(&ok(&top(args), &format!("top {args:?}")))
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// %CPU of `pid` in `f` (the 9th column: PID USER PR NI VIRT RES SHR S %CPU).
fn cpu_of(f: &Frame, pid: u32) -> Option<f64> {
    f.row(pid as i32).and_then(|r| r.get(8)?.parse().ok())
}

/// The time of the sample a replayed frame shows (its `replay ... at TIME` line), seconds
/// since the epoch, and that line.
fn sample_time(f: &Frame) -> (f64, String) {
    let marker = f
        .header_line("replay ")
        .unwrap_or_else(|| panic!("no replay marker in\n{}", f.header.join("\n")));
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
        .as_secs_f64();
    (t, marker.to_string())
}

/// What [`record_a_burner_and_a_sleeper`] recorded.
struct Recorded {
    burn_pid: u32,
    sleep_pid: u32,
    /// The burner's share of a CPU between each two samples, percent, as `dump` reads the
    /// recording.
    burn_shares: Vec<f64>,
    /// When the recording started and ended, seconds since the epoch.
    started: u64,
    ended: u64,
}

/// Records 4 samples, a second apart, into `store` of a CPU burner and a settled sleeper,
/// both killed once it is done.
fn record_a_burner_and_a_sleeper(store: &str) -> Recorded {
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
        .args(["record", "--dir", store, "--interval", "1", "--count", "4"])
        .output()
        .expect("run tasksnap record");
    let ended = now_s();
    let burn_share = (tasksnap_loadgen::cpu_clock_ns(burn_pid as i32).expect("CPU clock") - cpu0)
        as f64
        / wall0.elapsed().as_nanos() as f64
        * 100.0;
    ok(&rec, "record");
    let (burn_shares, recorded_mean) = recorded_shares(store, burn_pid);
    assert_eq!(burn_shares.len(), 3, "{burn_shares:?}");
    // The recording against the kernel's own clock of the burner, over the whole run.
    assert!(
        recorded_mean >= burn_share * 0.6 && recorded_mean <= burn_share * 1.4 + 5.0,
        "recorded {recorded_mean:.1}% of a CPU; the burner's CPU clock says {burn_share:.1}%"
    );
    Recorded {
        burn_pid,
        sleep_pid,
        burn_shares,
        started,
        ended,
    }
}

/// `pid`'s share of a CPU between each two samples of the recording in `store`, and over
/// all of it, percent: from `dump` (its time and cpu_seconds columns).
fn recorded_shares(store: &str, pid: u32) -> (Vec<f64>, f64) {
    let out = Command::new(TASKSNAP)
        .args(["dump", "--dir", store, "--fields", "time,pid,cpu_seconds"])
        .output()
        .expect("run tasksnap dump");
    let csv = ok(&out, "dump");
    let pid = pid.to_string();
    let points: Vec<(f64, f64)> = csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cells = l.split(',');
            let (t, p, cpu) = (cells.next()?, cells.next()?, cells.next()?);
            (p == pid).then_some(())?;
            let t = humantime::parse_rfc3339(t).ok()?;
            let t = t.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
            Some((t, cpu.parse().ok()?))
        })
        .collect();
    let share = |a: (f64, f64), b: (f64, f64)| (b.1 - a.1) / (b.0 - a.0) * 100.0;
    let each = points.windows(2).map(|w| share(w[0], w[1])).collect();
    let all = match (points.first(), points.last()) {
        (Some(&a), Some(&b)) if b.0 > a.0 => share(a, b),
        _ => panic!("the burner is not in the recording's dump:\n{csv}"),
    };
    (each, all)
}

/// Frame `i` of a replay of `rec` is its sample `i + 2`, at a time within the recording
/// shown as the clock of the first line (UTC), with the burner at about its share of a CPU
/// and the sleeper at 0.
fn a_replayed_frame_is_its_sample(i: usize, f: &Frame, store: &str, rec: &Recorded) {
    let header = f.header.join("\n");
    let (t, marker) = sample_time(f);
    let t = t as u64;
    assert!(
        marker.contains(&format!("{store} sample {}/4 at ", i + 2)),
        "{marker}"
    );
    let (started, ended) = (rec.started, rec.ended);
    assert!(
        (started..=ended + 1).contains(&t),
        "{marker} not in {started}..={ended}"
    );
    let hms = format!(
        "{:02}:{:02}:{:02}",
        t % 86_400 / 3600,
        t % 3600 / 60,
        t % 60
    );
    assert!(
        f.header[0].starts_with(&format!("top - {hms} up ")),
        "{} vs {marker}",
        f.header[0]
    );
    let burn = cpu_of(f, rec.burn_pid).unwrap_or_else(|| panic!("burner missing\n{header}"));
    let sleep = cpu_of(f, rec.sleep_pid).unwrap_or_else(|| panic!("sleeper missing\n{header}"));
    // The share the recording holds for that second (its samples i+1 and i+2), which moves
    // with the host's load: top shows it, to the clock tick.
    let share = rec.burn_shares[i];
    assert!(
        (burn - share).abs() <= 1.5 + share * 0.03,
        "burner at {burn}% in frame {i}; the recording says {share:.1}% for that second"
    );
    assert!(sleep < 1.0, "sleeper at {sleep}% in frame {i}");
}

#[test]
fn top_replays_a_recording() {
    skip_unless_root!("top --replay of a recording");
    let (_t, store) = store_dir();
    let store_s = store.to_str().expect("utf-8 path");
    let rec = record_a_burner_and_a_sleeper(store_s);

    // Three frames: samples 2, 3 and 4 (the first has no sample before it).
    let out = ok(
        &top(&["-b", "--replay", store_s, "-n", "3"]),
        "top --replay",
    );
    let fs = frames(&out);
    assert_eq!(fs.len(), 3, "{out}");
    for (i, f) in fs.iter().enumerate() {
        a_replayed_frame_is_its_sample(i, f, store_s, &rec);
    }

    // Asked for more frames than the recording holds: it stops at the end, successfully.
    let burner = rec.burn_pid.to_string();
    let fs = top_frames(&["-b", "--replay", store_s, "-n", "10", "-p", &burner]);
    assert_eq!(fs.len(), 3);

    // --at between the first two samples: the first is in force; four frames, the first
    // without rates.
    let first = sample_time(&top_frames(&["-b", "--replay", store_s, "-n", "1"])[0]).0 - 0.5;
    let fs = top_frames(&["-b", "--replay", store_s, "--at", &format!("{first:.3}")]);
    assert_eq!(fs.len(), 4);
    assert!(fs[0].header.iter().any(|h| h.contains("sample 1/4")));

    times_outside_a_recording_are_errors(store_s);
}

/// A time outside the recording, a directory that is no recording: one line, exit 1.
fn times_outside_a_recording_are_errors(store: &str) {
    for args in [
        &["-b", "--replay", store, "--at", "2001-01-01T00:00:00Z"][..],
        &["-b", "--replay", store, "--at", "now"],
        &["-b", "--replay", "/nonexistent-tasksnap-store"],
        &["-b", "--at", "-10m"],
    ] {
        let out = top(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a frame");
        assert!(err.starts_with("tasksnap top: "), "{args:?}: {err}");
    }
    let out = top(&["-b", "--replay", store, "--at", "2001-01-01T00:00:00Z"]);
    assert!(text(&out.stderr).contains("outside the recording"));
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
    skip_unless_root!("top --replay of recorded exits (BPF)");
    let (_t, store) = store_dir();
    let store_s = store.to_str().expect("utf-8 path");
    let (_dir, sh, name) = own_sh("r");
    let mut rec = Guard::spawn(
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
            .stderr(Stdio::piped()),
    )
    .expect("start the recorder");
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

    let listing = ok(
        &top(&["-b", "--replay", store_s, "--exited", "-n", "10"]),
        "top --replay --exited",
    );
    let fs = frames(&listing);
    assert_eq!(fs.len(), 3, "samples 2 to 4:\n{listing}");
    let listed: Vec<(usize, &Vec<String>)> = fs
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.rows.iter().map(move |r| (i, r)))
        .filter(|(_, r)| r.first() == Some(&pid))
        .collect();
    assert_eq!(listed.len(), 1, "pid {pid} once:\n{listing}");
    let (i, row) = listed[0];
    // PID USER PR NI VIRT RES SHR S %CPU %MEM RUNQ% THR% DISK% TIME+ EXIT COMMAND
    assert_eq!(row[7], "E", "{row:?}");
    assert_eq!(row[14], "5", "{row:?}");
    assert_eq!(row[15], format!("<{name}>"), "{row:?}");
    let tasks = fs[i].header_line("Tasks:").expect("a Tasks: line");
    assert!(exited_count(tasks) >= 1, "{tasks:?}");

    // Without the view: counted in the header, no row.
    let out = text(&top(&["-b", "--replay", store_s, "-n", "10"]).stdout);
    let fs = frames(&out);
    assert!(
        fs.iter()
            .all(|f| f.rows.iter().all(|r| r.first() != Some(&pid))),
        "{out}"
    );
    assert!(fs[i].header.iter().any(|h| h.contains(" exited (")));
}
