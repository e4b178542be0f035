//! `tasksnap record`, `ps --replay`, `states --replay` and `dump` end to end, against
//! processes the tests spawn: a process killed mid-recording is listed before its death and
//! not after; the replayed listing is what procps printed while recording (the columns that
//! do not move, odd names and command lines included); a Parquet dump read by DuckDB has a row per sample and the state time
//! `states --replay` prints; and the bad inputs (a missing, foreign, newer, locked or
//! damaged store, a time outside the recording) end with a message and the documented exit
//! code.

use std::path::Path;
use std::process::Command;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_loadgen::{wait_until, ProcessGroup};

mod common;

use common::recording::{
    duckdb_python, record, record_args, replayed_thread, start_recorder, store_dir,
};
use common::sleeper;
use common::{failed_saying, ok, samples_so_far, tasksnap, text, two_short_lived, TASKSNAP};

fn epoch_now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock");
    format!("{}.{:03}", d.as_secs(), d.subsec_millis())
}

#[test]
fn a_process_killed_mid_recording_is_replayed_before_its_death_and_not_after() {
    skip_unless_root!("recording with BPF");
    let (_keep_group, keeper) = sleeper();
    let (victim_group, victim) = sleeper();
    // And processes with hostile names and command lines (spaces, newlines, invalid UTF-8,
    // escapes): their bytes go through the store and back.
    let odd = tasksnap_loadgen::Load::spawn(&["--odd-names"]).expect("odd-named load");
    assert!(!odd.info.odd.is_empty());
    let mut pids = format!("{keeper},{victim}");
    for o in &odd.info.odd {
        pids.push_str(&format!(",{}", o.pid));
        // Asleep before procps looks: one still finishing its start is R there, S when sampled.
        wait_until("an odd-named process asleep", || {
            tasksnap_loadgen::read_stat(o.pid).is_ok_and(|st| st.state == 'S')
        });
    }
    // The columns that do not move while they sleep, as procps prints them now.
    let cols = "pid,ppid,user,tty,stat,nice,comm,args,cgroup";
    let procps = common::ps::oracle(
        Command::new("ps")
            .args(["-o", cols, "-p", &pids])
            .env_remove("COLUMNS"),
    );
    assert_eq!(procps.code, Some(0));

    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    // Until stopped (SIGTERM, a clean stop): a count could run out before the kill on a
    // loaded host.
    let mut rec = start_recorder(&dir, "0.3", u32::MAX);
    wait_until("3 samples", || samples_so_far(&dir) >= 3);
    let before = epoch_now();
    drop(victim_group); // SIGKILL and reaped
                        // The sample being taken now may still hold the victim; the ones after it cannot.
    let at_kill = samples_so_far(&dir);
    wait_until("two samples after the kill", || {
        samples_so_far(&dir) >= at_kill + 2
    });
    // SAFETY: kill(2) on the recorder this test started and has not yet waited for.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let status = rec.wait().expect("recorder");
    assert!(status.success(), "record exited {status:?}");

    let at_before = tasksnap(&[
        "ps", "--replay", d, "--at", &before, "-o", cols, "-p", &pids,
    ]);
    assert!(at_before.status.success(), "{}", text(&at_before.stderr));
    assert_eq!(
        text(&at_before.stdout),
        text(&procps.stdout),
        "ps --replay at {before} differs from what procps printed while recording"
    );

    // At the end of the recording the victim is gone: procps exits 1 when nothing matched.
    let at_end = tasksnap(&["ps", "--replay", d, "-o", "pid=", "-p", &victim.to_string()]);
    assert_eq!(at_end.status.code(), Some(1), "{}", text(&at_end.stdout));
    assert_eq!(text(&at_end.stdout), "");
    let keeper_end = tasksnap(&["ps", "--replay", d, "-o", "pid=", "-p", &keeper.to_string()]);
    assert_eq!(text(&keeper_end.stdout).trim(), keeper.to_string());
    drop(odd);
}

/// The recorder reads a cgroup once per css_set (the BPF pass says which set each process
/// is in) and gives the others of the set the same text: processes in several cgroups (a
/// systemd-named v2 tree, a name with control characters and invalid UTF-8, systemd's v1
/// hierarchy, another cgroup namespace) replay with the cgroup procps printed for each.
#[test]
fn replayed_cgroups_are_each_process_own_in_several_cgroups() {
    skip_unless_root!("recording with BPF");
    let placed = common::ps::Placed::spawn();
    assert!(
        placed.in_cgroups,
        "no cgroup v2 hierarchy to place processes in"
    );
    let (_keep_group, keeper) = sleeper();
    let pids: Vec<String> = placed
        .pids()
        .into_iter()
        .chain([keeper])
        .map(|p| p.to_string())
        .collect();
    let pids = pids.join(",");
    let cols = "pid,cgroup";
    let procps = common::ps::oracle(
        Command::new("ps")
            .args(["-o", cols, "-p", &pids])
            .env_remove("COLUMNS"),
    );
    assert_eq!(procps.code, Some(0));
    let distinct: std::collections::HashSet<&[u8]> = procps
        .stdout
        .split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|l| {
            let l = l.trim_ascii_start();
            Some(&l[l.iter().position(|&b| b == b' ')?..])
        })
        .collect();
    assert!(
        distinct.len() >= 3,
        "the processes are in too few cgroups to tell"
    );
    let (_t, dir) = store_dir();
    record(&dir, "0.3", 2, &[]);
    let d = dir.to_str().expect("utf-8 path");
    let replayed = tasksnap(&["ps", "--replay", d, "-o", cols, "-p", &pids]);
    assert!(replayed.status.success(), "{}", text(&replayed.stderr));
    assert_eq!(text(&replayed.stdout), text(&procps.stdout));
}

#[test]
fn a_parquet_dump_read_by_duckdb_has_a_row_per_sample_and_the_replayed_state_time() {
    skip_unless_root!("recording thread states with BPF");
    let Some(python) = duckdb_python() else {
        return;
    };
    // A process that burns CPU and sleeps in turns: every state column moves.
    let busy = ProcessGroup::spawn(
        1,
        &[
            "sh",
            "-c",
            "while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.05; done",
        ],
    )
    .expect("spawn busy");
    let pid = busy.pids()[0];
    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    let n = 6;
    record(&dir, "0.4", n, &["-q"]);
    drop(busy);

    let parquet = dir.with_extension("parquet");
    let p = parquet.to_str().expect("utf-8 path");
    let dump = tasksnap(&[
        "dump", "--dir", d, "--what", "threads", "--format", "parquet", "-o", p,
    ]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));

    // What states --replay prints for the same window (the whole recording).
    let row = replayed_thread(d, pid);
    let alive_s = row["alive_ns"].as_f64().expect("alive_ns") / 1e9;
    let secs = |s: &str| row[format!("{s}_pct")].as_f64().expect("pct") / 100.0 * alive_s;
    assert!(secs("running") > 0.05, "the busy process ran: {row}");
    let expect = format!(
        "running={:.6},runnable={:.6},sleeping={:.6},disk={:.6}",
        secs("running"),
        secs("runnable"),
        secs("sleeping"),
        secs("disk")
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/py/check_dump_duckdb.py");
    let check = Command::new(python)
        .arg(script)
        .args([p, "--pid", &pid.to_string(), "--tid", &pid.to_string()])
        .args([
            "--expect-rows",
            &n.to_string(),
            "--expect-state-seconds",
            &expect,
        ])
        // states prints percentages to 2 decimals: 0.005% of the window.
        .args(["--tolerance", &format!("{:.6}", alive_s * 0.0001 + 1e-4)])
        .output()
        .expect("run the DuckDB check");
    assert!(
        check.status.success(),
        "DuckDB check failed:\n{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
}

#[test]
fn bad_stores_and_times_end_with_a_message_and_an_exit_code() {
    let (t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    a_missing_store_is_named(d);
    a_foreign_directory_is_neither_read_nor_written(t.path());
    let n = a_store_takes_one_recorder_at_a_time(&dir);
    times_outside_the_recording_are_refused(d);
    a_damaged_frame_costs_only_its_samples(&dir, n);
    a_newer_format_is_refused_not_misread(&dir);
}

/// A missing store: exit 1, naming it.
fn a_missing_store_is_named(d: &str) {
    for args in [
        vec!["ps", "--replay", d],
        vec!["dump", "--dir", d],
        vec!["states", "--replay", d],
    ] {
        failed_saying(&tasksnap(&args), 1, d, &format!("{args:?}"));
    }
}

/// A directory of someone else's files is neither read nor written.
fn a_foreign_directory_is_neither_read_nor_written(scratch: &Path) {
    let foreign = scratch.join("foreign");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("notes.txt"), "mine").expect("write");
    let f = foreign.to_str().expect("utf-8 path");
    let out = tasksnap(&["record", "--dir", f, "--count", "1", "--backend", "procfs"]);
    failed_saying(&out, 3, "not a tasksnap store", "record");
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("mine")
    );
    assert_eq!(std::fs::read_dir(&foreign).map(|d| d.count()).ok(), Some(1));
    let out = tasksnap(&["dump", "--dir", f]);
    assert_eq!(out.status.code(), Some(1));
}

/// A second recorder is refused (exit 3, naming the first's pid); SIGTERM stops the first
/// cleanly. The samples it recorded.
fn a_store_takes_one_recorder_at_a_time(dir: &Path) -> usize {
    let d = dir.to_str().expect("utf-8 path");
    let mut first = Command::new(TASKSNAP)
        .args(record_args(
            dir,
            "0.2",
            None,
            &["--backend", "procfs", "-q"],
        ))
        .spawn()
        .expect("start the recorder");
    wait_until("6 samples", || samples_so_far(dir) >= 6);
    let second = tasksnap(&["record", "--dir", d, "--count", "1", "--backend", "procfs"]);
    failed_saying(&second, 3, &first.id().to_string(), "a second recorder");
    // SAFETY: kill on the child this test started.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    assert!(first.wait().expect("recorder").success());
    let n = samples_so_far(dir);
    assert!(n >= 2);
    n
}

/// Times outside the recording, and what is not a time: exit 1, saying so.
fn times_outside_the_recording_are_refused(d: &str) {
    for at in ["1000000000", "-3650d"] {
        let out = tasksnap(&["ps", "--replay", d, "--at", at]);
        failed_saying(&out, 1, "outside the recording", &format!("--at {at}"));
    }
    let out = tasksnap(&["ps", "--replay", d, "--at", "yesterday"]);
    failed_saying(&out, 1, "not a time", "--at yesterday");
    let out = tasksnap(&["ps", "--at", "-1m"]);
    assert_ne!(out.status.code(), Some(0));
}

/// Bytes flipped in a frame after the key (which the store's own crash tests place
/// exactly): the listing still comes, from the samples that are whole, and the dump says
/// what it skipped.
fn a_damaged_frame_costs_only_its_samples(dir: &Path, n: usize) {
    let d = dir.to_str().expect("utf-8 path");
    let seg = std::fs::read_dir(dir)
        .expect("store")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "tsf"))
        .expect("a segment");
    let mut bytes = std::fs::read(&seg).expect("segment");
    let at = bytes.len() * 3 / 4;
    for b in &mut bytes[at..at + 16] {
        *b ^= 0x5a;
    }
    std::fs::write(&seg, &bytes).expect("write back");
    let listing = ok(
        &tasksnap(&["ps", "--replay", d, "-o", "pid="]),
        "ps --replay",
    );
    assert!(!listing.is_empty());
    let dump = tasksnap(&["dump", "--dir", d, "--what", "system", "--fields", "time"]);
    let after = ok(&dump, "dump").lines().count() - 1;
    assert!(
        after >= 1 && after <= n,
        "{after} of {n} samples read after the damage"
    );
    if after < n {
        assert!(
            text(&dump.stderr).contains("damaged"),
            "{}",
            text(&dump.stderr)
        );
    }
}

/// A store of a newer format: refused, not misread.
fn a_newer_format_is_refused_not_misread(dir: &Path) {
    let d = dir.to_str().expect("utf-8 path");
    std::fs::write(dir.join("tasksnap-store"), "tasksnap-store format 99\n").expect("marker");
    failed_saying(&tasksnap(&["ps", "--replay", d]), 1, "99", "ps --replay");
    let out = tasksnap(&["record", "--dir", d, "--count", "1", "--backend", "procfs"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
}

/// The rows `dump --what processes --format json` has for `pid`.
fn dumped_rows_of(dir: &str, pid: u32) -> Vec<serde_json::Value> {
    let out = tasksnap(&[
        "dump",
        "--dir",
        dir,
        "--what",
        "processes",
        "--format",
        "json",
        "--fields",
        "time,pid,comm,args,cpu_seconds,exit_time,exit_code,exit_signal",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON row"))
        .filter(|r| r["pid"] == pid)
        .collect()
}

/// Waits for the second sample of the recording into `dir` (2 s apart), then starts two
/// processes of sh that live 300 ms, between it and the next (room for a busy host): one
/// ends with `exit 3`, one is killed by SIGKILL. Their pids.
fn two_processes_between_two_samples(dir: &Path) -> (u32, u32) {
    wait_until("the first sample", || samples_so_far(dir) >= 1);
    let first = samples_so_far(dir);
    wait_until("the next sample", || samples_so_far(dir) > first);
    two_short_lived("sh", "0.3", 3)
}

/// The rows dumped for `pid`, and the one exit row among them.
fn the_exit_row(dir: &str, pid: u32, what: &str) -> (Vec<serde_json::Value>, serde_json::Value) {
    let rows = dumped_rows_of(dir, pid);
    let exits: Vec<_> = rows.iter().filter(|r| !r["exit_time"].is_null()).collect();
    assert_eq!(exits.len(), 1, "one exit row for {what}: {rows:#?}");
    let exit = exits[0].clone();
    (rows, exit)
}

/// The exit row of the sh that ended with `exit 3`: its code, no signal, its comm and CPU
/// time; and no live row (it lived between two samples). Its `args`, for the caller.
fn coded_exit_row(dir: &str, pid: u32) -> serde_json::Value {
    let (rows, e) = the_exit_row(dir, pid, "the sh");
    assert_eq!(e["exit_code"], 3, "{e}");
    assert!(e["exit_signal"].is_null(), "{e}");
    assert_eq!(e["comm"], "sh", "{e}");
    assert!(e["cpu_seconds"].as_f64().is_some(), "{e}");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    e["args"].clone()
}

/// The exit row of the sh killed by SIGKILL: signal 9, no code.
fn killed_exit_row(dir: &str, pid: u32) {
    let (_, e) = the_exit_row(dir, pid, "the killed sh");
    assert_eq!(e["exit_signal"], 9, "{e}");
    assert!(e["exit_code"].is_null(), "{e}");
}

#[test]
fn a_process_that_lived_between_two_samples_is_dumped_once_with_its_exit() {
    skip_unless_root!("exit records (BPF)");
    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    let mut rec = start_recorder(&dir, "2", 4);
    let (coded, killed) = two_processes_between_two_samples(&dir);
    let status = rec.wait().expect("recorder");
    assert!(status.success(), "record exited {status:?}");

    let args = coded_exit_row(d, coded);
    assert_eq!(args, "sh -c sleep 0.3; exit 3");
    killed_exit_row(d, killed);
}

#[test]
fn without_bpf_exits_come_from_taskstats_without_their_command_lines() {
    skip_unless_root!("exit records (taskstats)");
    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    let rec = Command::new(TASKSNAP)
        .args(record_args(&dir, "2", Some(4), &[]))
        .env("TASKSNAP_EXITS", "taskstats")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the recorder");
    let (coded, killed) = two_processes_between_two_samples(&dir);
    let out = rec.wait_with_output().expect("recorder");
    let said = text(&out.stderr);
    assert!(
        out.status.success(),
        "record exited {:?}: {said}",
        out.status
    );
    // The start-up line names the source and what it lacks.
    assert!(
        said.contains("exits: taskstats, no command lines"),
        "{said}"
    );

    // taskstats has no command line: null, not an empty string.
    let args = coded_exit_row(d, coded);
    assert!(args.is_null(), "{args}");
    killed_exit_row(d, killed);
}
