//! The store against a hostile directory: what another user may plant in or
//! around a store never makes the writer write through it or a reader hang on it. Each test
//! is named after the defect it pins; victims are scratch files, never system files.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use tasksnap_loadgen::planted::{
    assert_nothing_written, assert_victim_whole, store_owned_by_nobody, store_with_link,
    store_with_mode,
};
use tasksnap_store::{Store, StoreError, Writer, WriterOptions};

const S: u64 = 1_000_000_000;

fn opts() -> WriterOptions {
    WriterOptions {
        segment_span_ns: 10 * S,
        ..WriterOptions::default()
    }
}

/// A store of two segments with a few frames each.
fn small_store(dir: &Path) {
    let mut w = Writer::create(dir, opts()).expect("create");
    for s in 0..25u64 {
        let t = (1000 + s) * S;
        let key = w.starts_segment(t);
        w.append(1, key, t, &s.to_le_bytes()).expect("append");
    }
    w.finish().expect("finish");
}

/// Runs `f` on another thread; `None` when it has not returned within 10 s (it hangs).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10)).ok()
}

/// Every error message in the chain, joined as anyhow's `{:#}` prints them.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        parts.push(s.to_string());
        cur = s.source();
    }
    parts.join(": ")
}

#[test]
fn record_refuses_symlinked_lock() {
    let t = tempfile::tempdir().expect("tempdir");
    let (dir, v) = store_with_link(t.path(), "LOCK");
    let e = Writer::create(&dir, opts()).expect_err("a symlinked LOCK is refused");
    assert!(matches!(e, StoreError::Unsafe(_)), "{e:?}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_victim_whole(&v);
}

#[test]
fn record_never_truncates_through_a_planted_marker_temp() {
    let t = tempfile::tempdir().expect("tempdir");
    let (dir, v) = store_with_link(t.path(), "tasksnap-store.tmp");
    let w = Writer::create(&dir, opts()).expect("the planted name is not used");
    w.finish().expect("finish");
    assert_victim_whole(&v);
    let marker = fs::symlink_metadata(dir.join("tasksnap-store")).expect("marker");
    assert!(
        marker.file_type().is_file(),
        "the marker is a file of its own"
    );
}

#[test]
fn record_refuses_a_store_dir_that_is_a_symlink() {
    let t = tempfile::tempdir().expect("tempdir");
    let real = t.path().join("real");
    fs::create_dir(&real).expect("mkdir");
    symlink(&real, t.path().join("link")).expect("symlink");
    let e = Writer::create(&t.path().join("link"), opts()).expect_err("refused");
    assert!(matches!(e, StoreError::Unsafe(_)), "{e:?}");
    assert_nothing_written(&real);
}

#[test]
fn record_refuses_a_group_or_other_writable_store_dir() {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = store_with_mode(t.path(), 0o777);
    let e = Writer::create(&dir, opts()).expect_err("refused");
    assert!(e.to_string().contains("chmod go-w"), "{e}");
    assert_nothing_written(&dir);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    Writer::create(&dir, opts())
        .expect("mended")
        .finish()
        .expect("finish");
}

#[test]
fn record_refuses_a_store_dir_another_user_owns() {
    let t = tempfile::tempdir().expect("tempdir");
    let Some(dir) = store_owned_by_nobody(t.path()) else {
        return;
    };
    let e = Writer::create(&dir, opts()).expect_err("refused");
    assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    assert_nothing_written(&dir);
}

#[test]
fn fifo_named_like_a_segment_does_not_hang_readers() {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("store");
    small_store(&dir);
    let fifo = dir.join("seg-00000000000000000001.tsf");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: mkfifo reads a NUL-terminated path valid for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let d = dir.clone();
    let got = within_10s(move || {
        let store = Store::open(&d).map_err(|e| e.to_string())?;
        let entries = store.entries(0, u64::MAX).map_err(|e| e.to_string())?;
        for e in &entries {
            store.read(e).map_err(|e| e.to_string())?;
        }
        Ok::<_, String>((entries.len(), store.warnings().to_vec()))
    })
    .expect("the reader returned (it hung on the FIFO)");
    let (n, warnings) = got.expect("the store reads");
    assert_eq!(n, 25);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("a FIFO"), "{warnings:?}");
    // The writer leaves it alone too.
    let w = within_10s(move || Writer::create(&dir, opts()).map(|w| w.finish()))
        .expect("the writer returned");
    assert!(w.is_ok());
}

#[test]
fn directory_named_like_a_segment_is_skipped_with_one_warning() {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("store");
    small_store(&dir);
    fs::create_dir(dir.join("seg-00000000000000000001.tsf")).expect("mkdir");
    let store = Store::open(&dir).expect("open");
    let entries = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(entries.len(), 25);
    for e in &entries {
        store.read(e).expect("read");
    }
    assert_eq!(store.warnings().len(), 1, "{:?}", store.warnings());
    assert!(store.warnings()[0].contains("a directory"));
}

#[test]
fn store_io_errors_say_the_os_error_once() {
    let t = tempfile::tempdir().expect("tempdir");
    let file = t.path().join("file");
    fs::write(&file, "").expect("write");
    // A store below a regular file: ENOTDIR.
    let e = Writer::create(&file.join("store"), opts()).expect_err("not a directory");
    let text = chain(&e);
    assert_eq!(text.matches("os error").count(), 1, "{text}");
}
