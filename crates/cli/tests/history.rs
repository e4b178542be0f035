//! History that stays true, end to end against the real binary: a thread's state
//! time across a recorder restart (a CPU hog's summed `running_s` is its CPU time's growth,
//! and `dump` and `states --replay` agree), and a store whose wall clock stepped back, or
//! whose segment names are not the times of their frames, still read by `dump`,
//! `ps --replay`, `states --replay` and `top --replay`.

use std::path::Path;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_history::{History, Recorder};
use tasksnap_loadgen::ProcessGroup;
use tasksnap_model::Reading;
use tasksnap_store::{StoreError, WriterOptions};

mod common;

use common::recording::{record, replayed_thread, store_dir};
use common::sleeper;
use common::{ok, tasksnap, text};

/// The CSV rows of `dump` for pid `pid` (`key` names the pid's column), as their fields.
fn dump_rows(dir: &str, what: &str, fields: &str, key: usize, pid: i32) -> Vec<Vec<String>> {
    let out = tasksnap(&[
        "dump", "--dir", dir, "--what", what, "--format", "csv", "--fields", fields,
    ]);
    ok(&out, "dump")
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect::<Vec<_>>())
        .filter(|f| f.get(key).is_some_and(|p| p == &pid.to_string()))
        .collect()
}

fn num(s: &str) -> f64 {
    if s.is_empty() {
        0.0
    } else {
        s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
    }
}

/// Regression: across a recorder restart a CPU hog's dump row showed running_s = 0 while its
/// CPU time grew, the rows summed short of its CPU time, and `states --replay` disagreed
/// with the dump.
#[test]
fn state_time_is_continuous_across_a_recorder_restart() {
    skip_unless_root!("recording thread states with BPF");
    let hog = ProcessGroup::spawn(1, &["sh", "-c", "while :; do :; done"]).expect("spawn hog");
    let pid = hog.pids()[0];
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("rec");
    let d = dir.to_str().expect("utf-8 path");
    for _ in 0..2 {
        record(&dir, "0.5", 4, &["--backend", "bpf", "-q"]);
        std::thread::sleep(std::time::Duration::from_millis(700));
    }
    drop(hog);

    let threads = dump_rows(d, "threads", "time,tid,running_s", 1, pid);
    let procs = dump_rows(d, "processes", "time,pid,cpu_seconds", 1, pid);
    assert_eq!(threads.len(), 8, "{threads:?}");
    assert_eq!(procs.len(), 8, "{procs:?}");
    let running: Vec<f64> = threads.iter().map(|r| num(&r[2])).collect();
    // The row spanning the restart (the 5th sample) has the hog's time in it.
    let cpu: Vec<f64> = procs.iter().map(|r| num(&r[2])).collect();
    let across = cpu[4] - cpu[3];
    assert!(
        running[4] > across * 0.9,
        "the row spanning the restart: running_s {} while cpu_seconds grew {across}",
        running[4]
    );
    let summed: f64 = running.iter().sum();
    let grown = cpu[7] - cpu[0];
    assert!(
        (summed - grown).abs() <= grown * 0.05,
        "running_s sums to {summed} s while cpu_seconds grew {grown} s: {running:?} {cpu:?}"
    );
    // states --replay over the whole recording says the same.
    let row = replayed_thread(d, pid);
    let replayed = row["running_pct"].as_f64().expect("pct") / 100.0
        * row["alive_ns"].as_f64().expect("alive_ns")
        / 1e9;
    assert!(
        (replayed - summed).abs() <= summed * 0.01 + 0.01,
        "states --replay says {replayed} s running, the dump's rows {summed} s"
    );
}

/// A short real recording (procfs, no root needed) with a sleeper the test spawned: its
/// readings, and the sleeper.
fn readings() -> (Vec<Reading>, ProcessGroup, i32) {
    let (g, pid) = sleeper();
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("rec");
    record(&dir, "0.3", 6, &["--backend", "procfs", "-q"]);
    let h = History::open(&dir).expect("open");
    let all: Vec<Reading> = h.readings(0, u64::MAX).expect("readings").collect();
    assert_eq!(all.len(), 6);
    (all, g, pid)
}

/// An hour, ns: how far ahead a clock ran before it stepped back.
const HOUR_NS: i64 = 3_600_000_000_000;

/// Writes `parts` as recorder runs one after the other (a new `Recorder` each, as a
/// restarted recorder has), each reading's time moved by its part's shift, with segments of
/// `segment_ns`.
fn write_runs(dir: &Path, parts: &[(&[Reading], i64)], segment_ns: u64) {
    let opts = WriterOptions {
        segment_span_ns: segment_ns,
        ..WriterOptions::default()
    };
    for (readings, shift_ns) in parts {
        // Retried while locked: another test's fork holds a copy of the lock's descriptor
        // until its exec.
        let mut rec = (0..100)
            .find_map(|_| match Recorder::create(dir, opts, 60) {
                Err(StoreError::Locked { .. }) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    None
                }
                r => Some(r.expect("writer")),
            })
            .expect("the lock is released");
        for r in *readings {
            let mut r = r.clone();
            r.snapshot.taken_at_unix_ns =
                r.snapshot.taken_at_unix_ns.wrapping_add_signed(*shift_ns);
            rec.append(&r).expect("append");
        }
        rec.finish().expect("finish");
    }
}

fn rfc3339(ns: u64) -> String {
    tasksnap_history::rfc3339(ns)
}

/// Every reader on `dir` works: dump (all samples, the sleeper in each), ps --replay (the
/// end, and at each of `ats`), states --replay, top --replay in batch. Returns dump's stderr.
fn every_reader_works(dir: &str, pid: i32, samples: usize, ats: &[u64]) -> String {
    let out = tasksnap(&[
        "dump", "--dir", dir, "--format", "csv", "--fields", "time,pid",
    ]);
    let rows = ok(&out, "dump");
    let mine = rows
        .lines()
        .filter(|l| l.ends_with(&format!(",{pid}")))
        .count();
    assert_eq!(
        mine, samples,
        "dump lists the sleeper once per sample:\n{rows}"
    );
    let stderr = text(&out.stderr);
    ok(
        &tasksnap(&["dump", "--dir", dir, "--what", "threads", "--format", "csv"]),
        "dump --what threads",
    );
    let p = pid.to_string();
    let listed = ok(
        &tasksnap(&["ps", "--replay", dir, "-p", &p, "-o", "pid="]),
        "ps --replay",
    );
    assert_eq!(listed.trim(), p);
    for &at in ats {
        let at = format!("{}.{:09}", at / 1_000_000_000, at % 1_000_000_000);
        let listed = ok(
            &tasksnap(&["ps", "--replay", dir, "--at", &at, "-p", &p, "-o", "pid="]),
            "ps --replay --at",
        );
        assert_eq!(listed.trim(), p, "ps --replay --at {at}");
    }
    ok(
        &tasksnap(&["states", "--replay", dir, "-p", &p, "-r", "0"]),
        "states --replay",
    );
    let top = ok(
        &tasksnap(&["top", "--replay", dir, "-b", "-n", "2"]),
        "top --replay -b",
    );
    assert!(
        top.split_whitespace().any(|w| w == p),
        "top --replay shows the sleeper:\n{top}"
    );
    stderr
}

/// Regression: a clock that stepped back across a restart (NTP, a restored VM) made the whole
/// store unreadable: ps/states/top --replay and dump failed ("runs from 02:14:17Z to
/// 01:14:19Z", "--from is after --to").
#[test]
fn a_store_whose_clock_stepped_back_reads_with_a_warning() {
    let (all, _g, pid) = readings();
    let (_t, dir) = store_dir();
    // The first run's clock an hour ahead, then corrected while no recorder ran.
    write_runs(&dir, &[(&all[..3], HOUR_NS), (&all[3..], 0)], u64::MAX / 4);
    let d = dir.to_str().expect("utf-8 path");
    let ahead = all[1].snapshot.taken_at_unix_ns + HOUR_NS as u64;
    let after = all[4].snapshot.taken_at_unix_ns;
    let stderr = every_reader_works(d, pid, 6, &[ahead, after]);
    let step_to = rfc3339(all[3].snapshot.taken_at_unix_ns);
    assert!(
        stderr.contains("clock stepped back") && stderr.contains(&step_to),
        "dump names the step (to {step_to}): {stderr}"
    );
    // The dump lists samples in recording order.
    let out = tasksnap(&["dump", "--dir", d, "--what", "system", "--fields", "time"]);
    let times: Vec<String> = ok(&out, "dump")
        .lines()
        .skip(1)
        .map(str::to_owned)
        .collect();
    assert_eq!(times.len(), 6);
    assert!(times[0] > times[3], "recording order: {times:?}");
}

/// Regression: a segment whose name is earlier than its frames hid older segments from
/// `dump` (names were read as times).
#[test]
fn a_segment_named_before_its_frames_hides_nothing_from_dump() {
    let (all, _g, pid) = readings();
    let (_t, dir) = store_dir();
    // One segment per run of two samples.
    write_runs(
        &dir,
        &[(&all[..2], 0), (&all[2..4], 0), (&all[4..], 0)],
        u64::MAX / 4,
    );
    let mut segs: Vec<String> = std::fs::read_dir(&dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| n.starts_with("seg-"))
        .collect();
    segs.sort();
    assert_eq!(segs.len(), 3, "{segs:?}");
    // The newest segment named a moment after the first one starts, before its frames.
    let newest = segs.pop().expect("a segment");
    let first_ns: u64 = segs[0][4..24].parse().expect("a number");
    std::fs::rename(
        dir.join(&newest),
        dir.join(format!("seg-{:020}.tsf", first_ns + 1)),
    )
    .expect("rename");
    let d = dir.to_str().expect("utf-8 path");
    // Inside the renamed segment (a moment after its first sample: an epoch time in text
    // may round past the last one).
    let ats = [
        all[1].snapshot.taken_at_unix_ns,
        all[4].snapshot.taken_at_unix_ns + 1_000_000,
    ];
    every_reader_works(d, pid, 6, &ats);
}

/// Regression: `record` on a store whose last sample is later than the clock now (the clock
/// ran ahead, then was corrected while no recorder ran) said nothing and left a store no
/// reader could read; it now says the clock stepped back, records in order, and every
/// reader works.
#[test]
fn record_says_the_clock_stepped_back_and_goes_on() {
    let (all, _g, pid) = readings();
    let (_t, dir) = store_dir();
    write_runs(&dir, &[(&all, HOUR_NS)], u64::MAX / 4);
    let d = dir.to_str().expect("utf-8 path");
    let rec = record(&dir, "0.2", 2, &["--backend", "procfs"]);
    let said = text(&rec.stderr);
    assert!(
        said.contains("warning: the clock stepped back"),
        "record says so: {said}"
    );
    let stderr = every_reader_works(
        d,
        pid,
        8,
        &[all[2].snapshot.taken_at_unix_ns + HOUR_NS as u64],
    );
    assert!(stderr.contains("clock stepped back"), "{stderr}");
}

/// A store written before exit records and host identities were kept (history format minor
/// 0: `tasksnap-loadgen fake-proc`'s three processes, three samples, recorded by a build
/// of that format, checked in under tests/fixtures) still reads: the same rows, no exits (null, not
/// zero: the recorder did not say), no host, no cgroups table (`dump --what cgroups` is
/// empty and says why).
#[test]
fn a_store_from_before_exits_and_hosts_still_reads() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-format1-minor0");
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("store");
    std::fs::create_dir(&dir).expect("store dir");
    for e in std::fs::read_dir(&fixture).expect("fixture") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, dir.join(p.file_name().expect("name"))).expect("copy");
    }
    let d = dir.to_str().expect("utf-8 path");
    let out = tasksnap(&[
        "dump",
        "--dir",
        d,
        "--what",
        "processes",
        "--format",
        "csv",
        "--fields",
        "pid,comm,exit_time,exit_code,host,boot_id",
    ]);
    let csv = ok(&out, "dump");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(
        rows,
        ["1,systemd,,,,,,", "4032,bash,,,,,,", "6000,worker,,,,,,"].repeat(3),
        "{csv}"
    );
    let out = tasksnap(&[
        "dump",
        "--dir",
        d,
        "--what",
        "system",
        "--format",
        "csv",
        "--fields",
        "exits,exits_dropped,host",
    ]);
    let csv = ok(&out, "dump");
    assert_eq!(csv.lines().skip(1).collect::<Vec<_>>(), [",,,"; 3], "{csv}");
    // Nor a cgroups table (minor 4): the table is empty, and the dump says why.
    for format in ["csv", "json"] {
        let out = tasksnap(&["dump", "--dir", d, "--what", "cgroups", "--format", format]);
        let rows = ok(&out, "dump --what cgroups");
        let header = usize::from(format == "csv");
        assert_eq!(rows.lines().count(), header, "{rows}");
        let said = text(&out.stderr);
        assert!(said.contains("holds no cgroups table"), "{said}");
    }
    let out = tasksnap(&["ps", "--replay", d, "-e", "-o", "pid=,comm="]);
    let listed: Vec<String> = ok(&out, "ps --replay")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(listed, ["1 systemd", "4032 bash", "6000 worker"]);
}
