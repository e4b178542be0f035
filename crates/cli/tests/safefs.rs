//! End to end on the real binary: what a local user may plant in or around a store (a link
//! named LOCK, a FIFO or a directory named like a segment, a link where an output goes)
//! never makes tasksnap write through it, hang on it, or overwrite the recording it reads.
//! Each test is named after the defect it pins. Victims are scratch files in the test's own
//! directory; nothing outside it is touched.

use std::fs;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tasksnap_loadgen::skip_unless_root;

use tasksnap_loadgen::planted::{
    assert_nothing_written, assert_victim_whole, store_owned_by_nobody, store_with_link,
    store_with_mode, victim,
};
use tasksnap_loadgen::root_or_skip;

mod common;

use common::recording::record_args;
use common::{failed_saying, ok, samples, tasksnap_in_a_minute, tasksnap_within, text};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A scratch directory with a recording of `n` samples (the /proc backend, 0.1 s apart) in
/// its `store`: the directory, and the store's path.
fn recorded(n: u32) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("store");
    let args = record_args(&dir, "0.1", Some(n), &["--backend", "procfs", "-q"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&tasksnap_in_a_minute(&args), "record");
    (t, dir)
}

/// [`recorded`] with two samples, a [`victim`] beside the store, and `link` (a symbolic or a
/// hard link) made from the victim to `out.csv`, where a command's output is to go: the
/// scratch directory, the store, the victim and the link.
fn victim_behind_the_output(
    link: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (t, dir) = recorded(2);
    let v = victim(t.path());
    let out = t.path().join("out.csv");
    link(&v, &out).expect("plant the link");
    (t, dir, v, out)
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .expect("ls")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tsf"))
        .collect();
    v.sort();
    v
}

/// `record --dir DIR` once: refused with exit 3 and a message that says `said`.
fn record_is_refused(dir: &Path, said: &str) {
    let out = tasksnap_in_a_minute(&[
        "record",
        "--dir",
        s(dir),
        "--count",
        "1",
        "--backend",
        "procfs",
        "-q",
    ]);
    failed_saying(&out, 3, said, "record");
}

#[test]
fn record_refuses_symlinked_lock() {
    let t = tempfile::tempdir().expect("tempdir");
    let (dir, v) = store_with_link(t.path(), "LOCK");
    record_is_refused(&dir, "LOCK: is a symbolic link");
    assert_victim_whole(&v);
    assert!(segments(&dir).is_empty(), "nothing recorded");
}

#[test]
fn record_refuses_a_store_dir_another_user_owns() {
    let t = tempfile::tempdir().expect("tempdir");
    let Some(dir) = store_owned_by_nobody(t.path()) else {
        return;
    };
    record_is_refused(&dir, "owned by uid 65534");
    assert_nothing_written(&dir);
}

#[test]
fn record_refuses_a_group_or_other_writable_store_dir() {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = store_with_mode(t.path(), 0o1777);
    record_is_refused(&dir, "chmod go-w");
    assert_nothing_written(&dir);
}

#[test]
fn dump_refuses_output_inside_its_store() {
    let (t, dir) = recorded(6);
    assert_eq!(samples(&dir), 6);
    let seg = segments(&dir).pop().expect("a segment");
    // The segment itself, and the directory by another spelling (a link to it).
    symlink(&dir, t.path().join("alias")).expect("symlink");
    let aliased = t.path().join("alias").join("out.csv");
    for target in [seg.clone(), aliased, dir.join("out.csv")] {
        let out = tasksnap_in_a_minute(&["dump", "--dir", s(&dir), "-o", s(&target)]);
        failed_saying(&out, 1, "inside the recording", &format!("{target:?}"));
    }
    // The flame graph of a replay, likewise.
    let out = tasksnap_in_a_minute(&["states", "--replay", s(&dir), "--flamegraph", s(&seg)]);
    failed_saying(&out, 1, "inside the recording", "states --flamegraph");
    assert_eq!(samples(&dir), 6, "no sample lost");
    assert!(!dir.join("out.csv").exists());
}

#[test]
fn dump_output_never_follows_a_symlink() {
    let (t, dir, v, link) = victim_behind_the_output(|v, link| symlink(v, link));
    let out = tasksnap_in_a_minute(&["dump", "--dir", s(&dir), "-o", s(&link)]);
    failed_saying(&out, 1, "symbolic link", "dump -o LINK");
    assert_victim_whole(&v);
    // The flame graph too.
    let out = tasksnap_in_a_minute(&["states", "--replay", s(&dir), "--flamegraph", s(&link)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_victim_whole(&v);
    // Nor through another user's link among the directories above the output.
    if root_or_skip("giving a link to nobody") {
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).expect("mkdir");
        let theirs = t.path().join("theirs");
        symlink(&elsewhere, &theirs).expect("symlink");
        std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).expect("lchown");
        let out =
            tasksnap_in_a_minute(&["dump", "--dir", s(&dir), "-o", s(&theirs.join("out.csv"))]);
        failed_saying(&out, 1, "symbolic link owned by uid 65534", "dump -o");
        assert!(!elsewhere.join("out.csv").exists());
    }
}

#[test]
fn dump_output_replaces_a_regular_file_only_when_whole() {
    // A hard link to the victim where the output goes: replaced, not written through.
    let (t, dir, v, out_path) = victim_behind_the_output(|v, out| fs::hard_link(v, out));
    let out = tasksnap_in_a_minute(&[
        "dump",
        "--dir",
        s(&dir),
        "--what",
        "system",
        "-o",
        s(&out_path),
    ]);
    ok(&out, "dump");
    assert_victim_whole(&v);
    let m = fs::metadata(&out_path).expect("output");
    assert_eq!(m.nlink(), 1);
    assert_eq!(m.mode() & 0o777, 0o600);
    let csv = fs::read_to_string(&out_path).expect("read");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // A dump that fails (a field that does not exist fails before anything is read; a
    // time outside the recording after opening it) leaves the file as it was.
    let out = tasksnap_in_a_minute(&[
        "dump",
        "--dir",
        s(&dir),
        "--from",
        "1000000000",
        "--to",
        "1000000001",
        "-o",
        s(&out_path),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fs::read_to_string(&out_path).expect("read"), csv);
    // No temporary left behind.
    let left: Vec<_> = fs::read_dir(t.path())
        .expect("ls")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn fifo_named_like_a_segment_does_not_hang_readers() {
    let (_t, dir) = recorded(3);
    let fifo = dir.join("seg-00000000000000000001.tsf");
    let c = std::ffi::CString::new(s(&fifo)).expect("no NUL");
    // SAFETY: mkfifo reads a NUL-terminated path valid for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    for args in [
        vec!["dump", "--dir", s(&dir), "--what", "system"],
        vec!["ps", "--replay", s(&dir), "-p", "1"],
        vec!["states", "--replay", s(&dir)],
    ] {
        let out = tasksnap_within(&args, Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{args:?} hung on the FIFO"));
        let err = text(&out.stderr);
        assert!(out.status.code().is_some(), "{args:?}: {err}");
        assert_eq!(
            err.matches("named like a segment but a FIFO").count(),
            1,
            "{args:?}: {err}"
        );
    }
    assert_eq!(samples(&dir), 3);
    // The recorder leaves it alone and goes on.
    let out = tasksnap_within(
        &[
            "record",
            "--dir",
            s(&dir),
            "--count",
            "1",
            "--backend",
            "procfs",
            "-q",
        ],
        Duration::from_secs(30),
    )
    .expect("record hung");
    ok(&out, "record");
    assert!(fs::symlink_metadata(&fifo)
        .expect("still there")
        .file_type()
        .is_fifo());
}

#[test]
fn directory_named_like_a_segment_is_skipped_with_one_warning() {
    let (_t, dir) = recorded(3);
    fs::create_dir(dir.join("seg-00000000000000000001.tsf")).expect("mkdir");
    for args in [
        vec!["dump", "--dir", s(&dir), "--what", "system"],
        vec!["ps", "--replay", s(&dir), "-p", "1"],
    ] {
        let out = tasksnap_in_a_minute(&args);
        let err = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert_eq!(
            err.matches("named like a segment but a directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    assert_eq!(samples(&dir), 3);
}

#[test]
fn record_never_creates_its_store_through_another_users_link() {
    skip_unless_root!("giving a link to nobody");
    // fs.protected_symlinks may be off (it is on many hosts): tasksnap keeps the rule itself.
    let t = tempfile::tempdir().expect("tempdir");
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir(&elsewhere).expect("mkdir");
    let shared = t.path().join("shared");
    fs::create_dir(&shared).expect("mkdir");
    let link = shared.join("a");
    symlink(&elsewhere, &link).expect("symlink");
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).expect("lchown");
    let dir = link.join("history");
    record_is_refused(&dir, "symbolic link owned by uid 65534");
    assert!(
        !elsewhere.join("history").exists(),
        "nothing made through the link"
    );
}
