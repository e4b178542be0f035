//! Recordings of several machines read together: each of two simulated hosts (fake /proc
//! trees with their own host name and boot id, `TASKSNAP_PROC_ROOT`) is recorded and dumped
//! with `--partition` into one directory, which DuckDB then reads as one table with
//! `hive_partitioning`; every row says its host and boot, and a hostile host name stays one
//! directory under the dump's.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{failed_saying, ok, on_tree, TASKSNAP};
use tasksnap_loadgen::fake_proc::{FakeProc, BOOT_ID, HOSTNAME};

/// tasksnap with `args` on the fake tree at `root`.
fn run(root: &Path, args: &[&str]) -> Output {
    on_tree(root).args(args).output().expect("run tasksnap")
}

/// `dump --dir REC --format parquet --output OUT_DIR --partition` (the tree at `root` does
/// not matter to dump: it reads the recording).
fn partitioned_dump(root: &Path, rec: &Path, out_dir: &Path) -> Output {
    let (r, o) = (utf8(rec), utf8(out_dir));
    let args = ["dump", "--dir", r, "--format", "parquet", "--output", o];
    run(root, &[&args[..], &["--partition"]].concat())
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A fake host named `hostname` with boot id `boot_id`, recorded `count` times into a store
/// under `base`: (the tree's directory, the store's path).
fn recorded_host(
    base: &Path,
    tag: &str,
    hostname: &[u8],
    boot_id: &str,
    count: u32,
) -> (tempfile::TempDir, PathBuf) {
    let tree = tempfile::tempdir().expect("tempdir");
    // As a test in another language makes one (`tasksnap-loadgen fake-proc DIR PAGE_SIZE
    // HOSTNAME BOOT_ID`) when the binary is built, else through the library.
    match tasksnap_loadgen::find_binary() {
        Some(bin) => {
            use std::os::unix::ffi::OsStrExt;
            let out = Command::new(bin)
                .arg("fake-proc")
                .arg(tree.path())
                .arg("4096")
                .arg(std::ffi::OsStr::from_bytes(hostname))
                .arg(boot_id)
                .output()
                .expect("run tasksnap-loadgen");
            ok(&out, "tasksnap-loadgen fake-proc");
        }
        None => {
            let fake = FakeProc::build(tree.path()).expect("fake tree");
            fake.set_identity(hostname, boot_id).expect("identity");
        }
    }
    let fake = tree.path();
    let store = base.join(format!("rec-{tag}"));
    let s = store.to_str().expect("utf-8 path");
    let n = count.to_string();
    let out = run(
        fake,
        &[
            "record",
            "--dir",
            s,
            "--count",
            &n,
            "--interval",
            "0.2",
            "--backend",
            "procfs",
        ],
    );
    ok(&out, "record");
    (tree, store)
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("under dir");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// The UTC date of now, as `date=` shows it (the recordings are made now; a test running
/// across midnight may see two dates, which both count).
fn dates_now() -> Vec<String> {
    let now = std::time::SystemTime::now();
    [now - std::time::Duration::from_secs(120), now]
        .iter()
        .map(|t| humantime::format_rfc3339(*t).to_string()[..10].to_string())
        .collect()
}

#[test]
fn dumps_of_two_hosts_partitioned_into_one_directory_read_as_one_table() {
    let base = tempfile::tempdir().expect("tempdir");
    let (_a, rec_a) = recorded_host(base.path(), "a", HOSTNAME.as_bytes(), BOOT_ID, 2);
    let other_boot = "0a0b0c0d-1111-4222-8333-444455556666";
    let (_b, rec_b) = recorded_host(base.path(), "b", b"db-02.example", other_boot, 1);
    let out_dir = base.path().join("fleet");
    each_host_is_a_partition_of_its_own(base.path(), &[&rec_a, &rec_b], &out_dir);
    a_second_dump_adds_a_file_beside(base.path(), &rec_b, &out_dir);
    only_parquet_is_partitioned(base.path(), &rec_b);
    every_row_says_its_host_and_boot(base.path(), &rec_a);
    let Ok(python) = std::env::var("TASKSNAP_DUCKDB_PYTHON") else {
        eprintln!("TASKSNAP_DUCKDB_PYTHON not set: the DuckDB check is skipped");
        return;
    };
    duckdb_reads_the_partitions_as_one_table(&python, &out_dir, other_boot);
}

/// `recs` (db-02.example's last) dumped with `--partition` into `out_dir`: a file each, at
/// `host=HOST/date=DATE/part-0.parquet`.
fn each_host_is_a_partition_of_its_own(root: &Path, recs: &[&Path], out_dir: &Path) {
    for rec in recs {
        ok(&partitioned_dump(root, rec, out_dir), "dump --partition");
    }
    let files = files_under(out_dir);
    let dates = dates_now();
    assert_eq!(files.len(), 2, "{files:?}");
    for (f, host) in files.iter().zip(["db-02.example", HOSTNAME]) {
        let ok_path = dates
            .iter()
            .any(|d| *f == format!("host={host}/date={d}/part-0.parquet"));
        assert!(
            ok_path,
            "{f} is not host={host}/date={dates:?}/part-0.parquet"
        );
    }
}

/// Dumped again into the same directory: a new file beside, none replaced (the new one is
/// removed again).
fn a_second_dump_adds_a_file_beside(root: &Path, rec: &Path, out_dir: &Path) {
    ok(&partitioned_dump(root, rec, out_dir), "second dump");
    let again = files_under(out_dir);
    assert_eq!(again.len(), 3, "{again:?}");
    let copy = again
        .iter()
        .find(|f| f.ends_with("/part-1.parquet"))
        .unwrap_or_else(|| panic!("no part-1 in {again:?}"));
    std::fs::remove_file(out_dir.join(copy)).expect("remove the copy");
}

/// Not Parquet: refused, nothing made.
fn only_parquet_is_partitioned(root: &Path, rec: &Path) {
    let refused = root.join("refused");
    let (r, o) = (utf8(rec), utf8(&refused));
    let args = ["dump", "--dir", r, "--format", "csv", "--output", o];
    let out = run(root, &[&args[..], &["--partition"]].concat());
    failed_saying(&out, 1, "Parquet only", "a partitioned CSV dump");
    assert!(!refused.exists());
}

/// CSV of one recording: every row has the host and boot id.
fn every_row_says_its_host_and_boot(root: &Path, rec: &Path) {
    let out = run(
        root,
        &["dump", "--dir", utf8(rec), "--fields", "pid,host,boot_id"],
    );
    let csv = ok(&out, "dump csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("pid,host,host_bytes,boot_id"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6, "3 processes x 2 readings: {csv}");
    for row in rows {
        assert!(
            row.ends_with(&format!(",{HOSTNAME},,{BOOT_ID}")),
            "{row} lacks the host"
        );
    }
}

/// DuckDB over both hosts' partitions: GROUP BY host gives each host's rows (3 processes per
/// reading: 2 readings of the first, 1 of the second), with its boot id; the partition
/// columns `host` and `date` come from the directories.
fn duckdb_reads_the_partitions_as_one_table(python: &str, out_dir: &Path, other_boot: &str) {
    let script = r#"
import sys, duckdb
glob = sys.argv[1] + "/*/*/*.parquet"
con = duckdb.connect()
rows = con.execute(
    "SELECT host, boot_id, count(*), count(DISTINCT pid), min(date)::VARCHAR "
    "FROM read_parquet(?, hive_partitioning = true) GROUP BY host, boot_id ORDER BY host",
    [glob],
).fetchall()
for r in rows:
    print("|".join(str(x) for x in r))
"#;
    let out = Command::new(python)
        .args(["-c", script, utf8(out_dir)])
        .output()
        .expect("python runs");
    let got = ok(&out, "duckdb");
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 2, "{got}");
    let a = format!("db-02.example|{other_boot}|3|3|");
    let b = format!("{HOSTNAME}|{BOOT_ID}|6|3|");
    assert!(lines[0].starts_with(&a), "{got}");
    assert!(lines[1].starts_with(&b), "{got}");
    let dates = dates_now();
    for l in lines {
        assert!(dates.iter().any(|d| l.ends_with(d.as_str())), "{l}");
    }
}

/// A host name with `/`, `..`, `=`, a space and a byte that is not UTF-8 is one directory,
/// percent-encoded, under the dump's directory; nothing is written anywhere else, and
/// DuckDB reads the name back (as its label text: the byte that is not UTF-8 as `\xff`).
#[test]
fn a_hostile_host_name_stays_one_directory_of_the_dump() {
    let base = tempfile::tempdir().expect("tempdir");
    let (_t, rec) = recorded_host(base.path(), "h", b"../../x=y /\xff", BOOT_ID, 1);
    let out_dir = base.path().join("deep").join("fleet");
    ok(
        &partitioned_dump(base.path(), &rec, &out_dir),
        "dump --partition",
    );
    let files = files_under(&out_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with("host=..%2F..%2Fx%3Dy%20%2F%5Cxff/date="),
        "{files:?}"
    );
    // Nothing beside the recording, its tree's store and the dump's directory.
    let mut top: Vec<String> = std::fs::read_dir(base.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["deep", "rec-h"]);
    let deep: Vec<_> = std::fs::read_dir(base.path().join("deep"))
        .expect("read_dir")
        .collect();
    assert_eq!(deep.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    for d in [
        &out_dir,
        &out_dir.join(files[0].split('/').next().expect("dir")),
    ] {
        let mode = std::fs::metadata(d).expect("stat").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", d.display());
    }

    // The partition's value: the name's label text, its byte that is not UTF-8 as `\xff`
    // (DuckDB refuses a decoded value that is not UTF-8).
    if let Some(got) = duckdb_hosts(&out_dir) {
        assert_eq!(got, r"['../../x=y /\\xff']");
    }
}

/// The distinct `host` values DuckDB reads from the partitions under `dir`
/// (`hive_partitioning`), sorted, as Python prints the list; `None` without DuckDB
/// (`TASKSNAP_DUCKDB_PYTHON` unset).
fn duckdb_hosts(dir: &Path) -> Option<String> {
    let python = std::env::var("TASKSNAP_DUCKDB_PYTHON").ok()?;
    let script = r#"
import sys, duckdb
rows = duckdb.connect().execute(
    "SELECT DISTINCT host FROM read_parquet(?, hive_partitioning = true) ORDER BY host",
    [sys.argv[1] + "/*/*/*.parquet"],
).fetchall()
print(repr([r[0] for r in rows]))
"#;
    let out = Command::new(&python)
        .args(["-c", script, dir.to_str().expect("utf-8 path")])
        .output()
        .expect("python runs");
    Some(ok(&out, "duckdb").trim().to_string())
}

/// A partitioned dump never goes into the recording it reads, nor into a directory another
/// user may write.
#[test]
fn a_partitioned_dump_refuses_unsafe_directories() {
    let base = tempfile::tempdir().expect("tempdir");
    let (_t, rec) = recorded_host(base.path(), "r", b"h", BOOT_ID, 1);
    let r = utf8(&rec);
    let dump_to = |o: &Path| partitioned_dump(base.path(), &rec, o);
    failed_saying(
        &dump_to(&rec),
        1,
        "recording being read",
        "a dump into its store",
    );
    let open = base.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = dump_to(&open);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    assert!(files_under(&open).is_empty());
    // Without --output: said, nothing written.
    let out = run(
        base.path(),
        &["dump", "--dir", r, "--format", "parquet", "--partition"],
    );
    failed_saying(
        &out,
        1,
        "--output DIR",
        "a partitioned dump without --output",
    );
}

/// A recording of this machine made by `tasksnap record` in a UTS namespace of its own named
/// `hostname` (`unshare(CLONE_NEWUTS)` and `sethostname(2)` in the child before exec), as a
/// container with a hostile host name would be: the host name is read the way it really is,
/// from the kernel's /proc/sys/kernel/hostname. `None` when not root (said).
fn recorded_in_uts(base: &Path, tag: &str, hostname: &'static [u8]) -> Option<PathBuf> {
    use std::os::unix::process::CommandExt;
    if !tasksnap_loadgen::root_or_skip("a UTS namespace with a hostile host name") {
        return None;
    }
    let store = base.join(format!("uts-{tag}"));
    let mut cmd = Command::new(TASKSNAP);
    cmd.args(["record", "--dir"])
        .arg(&store)
        .args(["--count", "1", "--backend", "procfs", "--quiet"])
        .env_remove("TASKSNAP_PROC_ROOT")
        .stdin(Stdio::null());
    // SAFETY: the closure runs in the forked child before exec and calls only unshare and
    // sethostname (async-signal-safe system calls) on memory the closure owns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUTS) != 0
                || libc::sethostname(hostname.as_ptr().cast(), hostname.len()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run tasksnap record");
    ok(&out, "record in a UTS namespace");
    Some(store)
}

/// The `host` and `host_bytes` of a recording's process rows, from `dump --format json`.
fn dumped_hosts(rec: &Path) -> Vec<(serde_json::Value, serde_json::Value)> {
    let out = run(
        rec.parent().expect("parent"),
        &[
            "dump",
            "--dir",
            rec.to_str().expect("utf-8 path"),
            "--format",
            "json",
            "--fields",
            "pid,host",
        ],
    );
    ok(&out, "dump json")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON row");
            (v["host"].clone(), v["host_bytes"].clone())
        })
        .collect()
}

/// A host name with a newline is recorded whole, not cut at the newline (the kernel prints
/// the name and then one newline; taking the line for the name is the defect).
#[test]
fn recorded_host_names_keep_a_newline() {
    let base = tempfile::tempdir().expect("tempdir");
    let Some(rec) = recorded_in_uts(base.path(), "nl", b"tsx\nhost\n") else {
        return;
    };
    let hosts = dumped_hosts(&rec);
    assert!(!hosts.is_empty());
    for (host, bytes) in hosts {
        assert_eq!(host, serde_json::json!("tsx\nhost\n"));
        assert_eq!(
            bytes,
            serde_json::Value::Null,
            "valid UTF-8: no bytes column"
        );
    }
}

/// Two host names that differ only in bytes that are not UTF-8 have a `host=` directory
/// each (the defect: both written as the same replacement characters, their readings in one
/// directory). Every byte outside `A-Z a-z 0-9 - _ .` is encoded.
#[test]
fn partition_dirs_keep_non_utf8_host_names_apart() {
    let base = tempfile::tempdir().expect("tempdir");
    let Some(a) = recorded_in_uts(base.path(), "fe", b"x\xfe/y") else {
        return;
    };
    let b = recorded_in_uts(base.path(), "ff", b"x\xff/y").expect("root");
    for (rec, want) in [(&a, "78fe2f79"), (&b, "78ff2f79")] {
        for (host, bytes) in dumped_hosts(rec) {
            assert_eq!(host, serde_json::json!("x\u{fffd}/y"));
            assert_eq!(bytes, serde_json::json!(want));
        }
    }
    let out_dir = base.path().join("fleet");
    for rec in [&a, &b] {
        ok(
            &partitioned_dump(base.path(), rec, &out_dir),
            "dump --partition",
        );
    }
    let mut hosts: Vec<String> = files_under(&out_dir)
        .iter()
        .map(|f| f.split('/').next().expect("host dir").to_string())
        .collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(hosts, ["host=x%5Cxfe%2Fy", "host=x%5Cxff%2Fy"]);
    // DuckDB reads them as two hosts.
    if let Some(got) = duckdb_hosts(&out_dir) {
        assert_eq!(got, r"['x\\xfe/y', 'x\\xff/y']");
    }
}
