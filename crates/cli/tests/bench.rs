//! `tasksnap bench` runs its table and its JSON is well formed, with a row per method and
//! per-task costs that are positive.

mod common;

use std::process::Command;

use common::{tasksnap_ok, TASKSNAP};

#[test]
fn bench_json_has_every_row() {
    let out = tasksnap_ok(&["bench", "--runs", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["what"].as_str()).collect();
    for want in [
        "/proc/PID/stat open+close",
        "/proc/PID/status open+read+close",
        "tasksnap procfs collector + cmdline",
        "spawn and exit of `true` (part of each row below)",
        "tasksnap ps -ef",
    ] {
        assert!(names.contains(&want), "no {want:?} row in {names:?}");
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("BPF raw pass (iterator)")),
            "{names:?}"
        );
    }
    assert!(v["processes"].as_u64().unwrap_or(0) > 1);
    for r in rows.iter().filter(|r| r["us_per_task"].is_number()) {
        assert!(r["us_per_task"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
    }
}

#[test]
fn bad_bench_arguments_are_a_usage_error() {
    let out = Command::new(TASKSNAP)
        .args(["bench", "--runs", "zero"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
