//! `tasksnap record` keeps the cgroups table and `dump --what cgroups` gives it back: as
//! root, a spinner in a v1 CPU cgroup this test makes with a 20% quota (and the `cpuacct`
//! group of the same path where that is a hierarchy of its own) is recorded for a few
//! samples; the Parquet dump, read by DuckDB, has the group's row in every sample, its
//! counters typed UBIGINT, its usage and throttled time growing and its quota the one set.
//! Without root: `--cgroup-depth 0` records no table, and the dump of it is empty and says
//! why.

mod common;

use std::process::Command;

use common::recording::{duckdb_python, record, store_dir};
use common::{ok, tasksnap};
use tasksnap_loadgen::cpu_cgroup::{self, SideGroup, Spinner};

/// DuckDB's rows of `path` in the Parquet file `p`, in time order, one line each:
/// `usage|throttled|quota|quota_unlimited|hierarchy|controllers|type of usage`; `None`
/// without DuckDB (`TASKSNAP_DUCKDB_PYTHON` unset).
fn duckdb_rows(p: &str, path: &str) -> Option<Vec<String>> {
    let python = duckdb_python()?;
    let script = r#"
import sys, duckdb
rows = duckdb.connect().execute(
    "SELECT cpu_usage_ns, cpu_throttled_ns, cpu_quota_us, cpu_quota_us_unlimited, hierarchy, "
    "controllers, typeof(cpu_usage_ns) FROM read_parquet(?) WHERE path = ? ORDER BY time",
    [sys.argv[1], sys.argv[2]],
).fetchall()
for r in rows:
    print("|".join(str(x) for x in r))
"#;
    let out = Command::new(python)
        .args(["-c", script, p, path])
        .output()
        .expect("python runs");
    Some(ok(&out, "duckdb").lines().map(str::to_owned).collect())
}

#[test]
fn a_throttled_cgroup_is_recorded_and_dumped_to_parquet() {
    if !cpu_cgroup::root_with_cpu_cgroups("CPU cgroups") {
        return;
    }
    let (root, v2) = cpu_cgroup::cpu_hierarchy().expect("cpu hierarchy");
    if v2 {
        eprintln!("skipped: the cpu controller is v2's here (this test makes a v1 group)");
        return;
    }
    let spinner = Spinner::start("rec20", Some(20), None);
    let group = spinner.group().expect("group").to_path_buf();
    let acct = SideGroup::beside(&group, "cpuacct", "cpuacct.usage");
    acct.join(spinner.pid());
    // Declared after `acct`, dropped before it: the spinner is killed, then the groups go.
    let spinner = spinner;
    let name = format!("/{}", group.file_name().expect("name").to_string_lossy());
    assert!(group.starts_with(&root));

    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    let n = 6;
    // The default depth (3) reaches the group, a child of the root.
    record(&dir, "0.5", n, &["-q", "--backend", "procfs"]);
    drop(spinner);

    let parquet = dir.with_extension("parquet");
    let p = parquet.to_str().expect("utf-8 path");
    let dump = tasksnap(&[
        "dump", "--dir", d, "--what", "cgroups", "--format", "parquet", "-o", p,
    ]);
    ok(&dump, "dump --what cgroups");
    let Some(rows) = duckdb_rows(p, &name) else {
        return;
    };
    assert_eq!(rows.len(), n as usize, "a row per sample: {rows:?}");
    let cols: Vec<Vec<&str>> = rows.iter().map(|r| r.split('|').collect()).collect();
    let num = |r: &[&str], i: usize| -> u64 {
        r[i].parse()
            .unwrap_or_else(|_| panic!("column {i} of {r:?} is a number"))
    };
    for (r, next) in cols.iter().zip(cols.iter().skip(1)) {
        assert!(num(next, 0) > num(r, 0), "usage grows: {rows:?}");
        assert!(
            num(next, 1) >= num(r, 1),
            "throttled time never falls: {rows:?}"
        );
    }
    let (first, last) = (&cols[0], &cols[cols.len() - 1]);
    assert!(
        num(last, 1) > num(first, 1),
        "throttled time grows: {rows:?}"
    );
    for r in &cols {
        assert_eq!(r[2], "20000", "the quota set: {rows:?}");
        assert_eq!(r[3], "False", "a quota is not none: {rows:?}");
        assert_eq!(r[4], "v1");
        assert!(r[5].split(',').any(|c| c == "cpu"), "controllers: {rows:?}");
        if acct.dir().is_some() {
            assert!(
                r[5].split(',').any(|c| c == "cpuacct"),
                "controllers: {rows:?}"
            );
        }
        assert_eq!(r[6], "UBIGINT", "counters are unsigned 64-bit: {rows:?}");
    }
}

/// A recording made with `--cgroup-depth 0` has no table: `dump --what cgroups` writes the
/// header alone, exits 0 and says why on stderr; the other tables are there as ever.
#[test]
fn a_recording_without_cgroups_dumps_an_empty_table_and_says_why() {
    let (_t, dir) = store_dir();
    let d = dir.to_str().expect("utf-8 path");
    record(
        &dir,
        "0.1",
        2,
        &["-q", "--backend", "procfs", "--cgroup-depth", "0"],
    );
    let out = tasksnap(&["dump", "--dir", d, "--what", "cgroups"]);
    let csv = ok(&out, "dump --what cgroups");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1, "the header alone: {csv}");
    assert!(
        lines[0].starts_with("time,path,path_bytes,hierarchy,controllers,cpu_usage_ns,"),
        "{csv}"
    );
    assert!(lines[0].ends_with(",host,host_bytes,boot_id"), "{csv}");
    let said = common::text(&out.stderr);
    assert!(said.contains("holds no cgroups table"), "{said}");
    let system = tasksnap(&["dump", "--dir", d, "--what", "system"]);
    assert_eq!(ok(&system, "dump --what system").lines().count(), 3);
    // OpenMetrics has no cgroup families: refused before anything is written.
    let om = tasksnap(&[
        "dump",
        "--dir",
        d,
        "--what",
        "cgroups",
        "--format",
        "openmetrics",
    ]);
    common::failed_saying(&om, 1, "no OpenMetrics families", "openmetrics");
}
