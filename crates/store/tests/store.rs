//! The store end to end: writer/reader round trip over several segments, seek, retention by
//! age and by size, the lock, bad directories (missing, empty, foreign, newer), a full disk.

use std::fs;
use std::path::Path;

use tasksnap_store::{Entry, Store, StoreError, Writer, WriterOptions, FORMAT_VERSION};

const S: u64 = 1_000_000_000;

fn payload(t: u64) -> Vec<u8> {
    let n = (t / S % 50) as usize * 7;
    (0..n).map(|i| (i as u64 ^ t) as u8).collect()
}

fn opts(span_s: u64) -> WriterOptions {
    WriterOptions {
        segment_span_ns: span_s * S,
        ..WriterOptions::default()
    }
}

/// Appends one frame a second from `from_s` to `to_s` (exclusive), a key frame whenever a
/// segment starts and every 5th second, kind 1, plus a kind-2 frame every 3rd second.
fn record(w: &mut Writer, from_s: u64, to_s: u64) {
    for s in from_s..to_s {
        let t = s * S;
        let key = w.starts_segment(t) || s % 5 == 0;
        w.append(1, key, t, &payload(t)).expect("append");
        if s % 3 == 0 {
            w.append(2, false, t + 1, b"two").expect("append kind 2");
        }
    }
}

/// A store in a new temporary directory, segments of 10 s, written by [`record`] from
/// `from_s` to `to_s`; its writer still open.
fn writing(from_s: u64, to_s: u64) -> (tempfile::TempDir, Writer) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut w = Writer::create(tmp.path(), opts(10)).expect("create");
    record(&mut w, from_s, to_s);
    (tmp, w)
}

fn check_all(store: &Store, entries: &[Entry]) {
    for e in entries {
        let got = store.read(e).expect("read");
        if e.kind == 1 {
            assert_eq!(got, payload(e.time_ns), "frame at {}", e.time_ns);
        } else {
            assert_eq!(got, b"two");
        }
    }
}

#[test]
fn round_trip_over_segments() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let mut w = Writer::create(&dir, opts(10)).expect("create");
    record(&mut w, 100, 150);
    let on_disk = w.bytes_on_disk();
    w.finish().expect("finish");

    let store = Store::open(&dir).expect("open");
    assert_eq!(store.span(), Some((100 * S, 149 * S)));
    let segs = store.segments();
    assert_eq!(segs.len(), 5);
    assert!(segs.iter().all(|s| s.indexed));
    // finish adds the last segment's index.
    let total = segs.iter().map(|s| s.bytes).sum::<u64>();
    assert!(
        total > on_disk && total < on_disk + 1000,
        "{total} {on_disk}"
    );
    let all = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(all.len(), 50 + 16);
    assert!(all.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    check_all(&store, &all);
    let some = store.entries(118 * S, 125 * S).expect("entries");
    let times: Vec<u64> = some
        .iter()
        .filter(|e| e.kind == 1)
        .map(|e| e.time_ns / S)
        .collect();
    assert_eq!(times, (118..=125).collect::<Vec<_>>());
    assert_eq!(store.damage(), Default::default());
    // A segment deleted (by retention) after its entries were listed.
    fs::remove_file(&segs[0].path).expect("rm");
    assert!(matches!(
        store.read(&all[0]),
        Err(StoreError::Expired { .. })
    ));
    let mode = fs::metadata(&dir).expect("meta").permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o700
    );
}

#[test]
fn reading_while_writing_and_continuing_a_store() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut w = Writer::create(dir, opts(10)).expect("create");
    record(&mut w, 0, 15);
    let mut store = Store::open(dir).expect("open while writing");
    assert_eq!(store.span(), Some((0, 14 * S)));
    record(&mut w, 15, 25);
    // The live segment is walked on as it grows.
    let live = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(live.iter().filter(|e| e.kind == 1).count(), 20);
    check_all(&store, &live);
    drop(w); // like a crash: no index on the last segment
    let mut w = create_again(dir);
    assert!(w.starts_segment(30 * S));
    record(&mut w, 30, 35);
    w.finish().expect("finish");
    store.refresh().expect("refresh");
    assert_eq!(store.span(), Some((0, 34 * S)));
    let all = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(all.iter().filter(|e| e.kind == 1).count(), 30);
    check_all(&store, &all);
    assert_eq!(store.damage().unindexed_segments, 1);
    assert_eq!(store.damage().torn_tails, 0);
}

#[test]
fn seek_finds_the_last_key_frame() {
    let (tmp, w) = writing(100, 150);
    w.finish().expect("finish");
    let store = Store::open(tmp.path()).expect("open");
    for t in 100..150u64 {
        let got = store.seek(1, t * S).expect("seek").expect("in range");
        let first = got[0];
        assert!(first.key && first.kind == 1);
        // Key frames: every segment's first (100, 110, ...) and every 5th second.
        let want_key = t - t % 5;
        assert_eq!(first.time_ns, want_key * S, "seek to {t}");
        assert!(got.iter().all(|e| e.time_ns <= t * S));
        let last_kind1 = got.iter().rfind(|e| e.kind == 1).expect("some");
        assert_eq!(last_kind1.time_ns, t * S);
        // Everything between the key frame and t, nothing skipped.
        let listed = store.entries(first.time_ns, t * S).expect("entries");
        assert_eq!(listed, got);
    }
    assert_eq!(store.seek(1, 99 * S).expect("seek"), None);
    assert_eq!(store.seek(1, 150 * S).expect("seek"), None);
    assert_eq!(store.seek(3, 120 * S).expect("seek"), None);
    assert_eq!(store.seek(1, 149 * S + 1).expect("seek"), None);
    assert!(store.seek(1, 147 * S + 1).expect("seek").is_some());
}

#[test]
fn retention_by_age() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = WriterOptions {
        retain_for_ns: Some(30 * S),
        ..opts(10)
    };
    let mut w = Writer::create(tmp.path(), o).expect("create");
    record(&mut w, 0, 200);
    assert!(w.take_warnings().is_empty());
    w.finish().expect("finish");
    let store = Store::open(tmp.path()).expect("open");
    let (first, last) = store.span().expect("span");
    assert_eq!(last, 199 * S);
    // Only whole segments go, and only once all their frames are older than 30 s.
    assert!(first <= (199 - 30) * S, "kept too little: {first}");
    assert!(first > (199 - 30 - 10) * S, "kept too much: {first}");
    assert_eq!(first % (10 * S), 0, "a whole segment at a time");
}

#[test]
fn retention_by_size() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = WriterOptions {
        max_size_bytes: Some(4000),
        ..opts(10)
    };
    let mut w = Writer::create(tmp.path(), o).expect("create");
    let mut max_seen = 0;
    for s in 0..300u64 {
        let t = s * S;
        let key = w.starts_segment(t);
        w.append(1, key, t, &payload(t)).expect("append");
        max_seen = max_seen.max(w.bytes_on_disk());
    }
    let one_segment = 3000; // ten frames of at most ~300 bytes
    assert!(max_seen <= 4000 + one_segment, "{max_seen}");
    w.finish().expect("finish");
    let store = Store::open(tmp.path()).expect("open");
    let total: u64 = store.segments().iter().map(|s| s.bytes).sum();
    assert!(total <= 4000 + one_segment, "{total}");
    assert_eq!(store.span().expect("span").1, 299 * S);
    let first = store.span().expect("span").0;
    assert!(first > 200 * S, "{first}");
}

#[test]
fn one_writer_at_a_time() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let w = Writer::create(tmp.path(), opts(10)).expect("create");
    match Writer::create(tmp.path(), opts(10)) {
        Err(StoreError::Locked { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
        other => panic!("expected Locked, got {other:?}"),
    }
    let msg = Writer::create(tmp.path(), opts(10))
        .expect_err("locked")
        .to_string();
    assert!(msg.contains("another recorder") && msg.contains(&tmp.path().display().to_string()));
    // Readers need no lock.
    Store::open(tmp.path()).expect("open while locked");
    w.finish().expect("finish");
    create_again(tmp.path());
}

/// `Writer::create` once the writer before it finished. Retried while locked (up to 5 s):
/// another test's fork (the mount tests run `mount`) holds a copy of the lock's descriptor
/// until its exec, which on a churning host takes a while (seen: the churn suite).
fn create_again(dir: &Path) -> Writer {
    for _ in 0..500 {
        match Writer::create(dir, opts(10)) {
            Err(StoreError::Locked { .. }) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => return r.expect("create after finish"),
        }
    }
    panic!("{}: the lock was never released", dir.display());
}

#[test]
fn bad_directories() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope");
    assert!(matches!(
        Store::open(&missing),
        Err(StoreError::Missing { .. })
    ));
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    assert!(matches!(Store::open(&empty), Err(StoreError::Empty { .. })));
    let foreign = tmp.path().join("foreign");
    fs::create_dir(&foreign).expect("mkdir");
    fs::write(foreign.join("notes.txt"), "mine").expect("write");
    assert!(matches!(
        Store::open(&foreign),
        Err(StoreError::NotAStore { .. })
    ));
    let e = Writer::create(&foreign, opts(10)).expect_err("foreign");
    assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
    assert_eq!(
        fs::read_dir(&foreign).expect("ls").count(),
        1,
        "nothing written there"
    );
    let file = foreign.join("notes.txt");
    assert!(matches!(
        Store::open(&file),
        Err(StoreError::NotAStore { .. })
    ));
    assert!(matches!(
        Writer::create(&file, opts(10)),
        Err(StoreError::NotAStore { .. })
    ));

    // A store with no frames is a valid, empty store.
    let fresh = tmp.path().join("fresh");
    Writer::create(&fresh, opts(10))
        .expect("create")
        .finish()
        .expect("finish");
    let store = Store::open(&fresh).expect("open");
    assert_eq!(store.span(), None);
    assert!(store.entries(0, u64::MAX).expect("entries").is_empty());
    assert_eq!(store.seek(1, 5).expect("seek"), None);

    // A newer format.
    let marker = fresh.join(tasksnap_store::layout::MARKER_NAME);
    fs::write(
        &marker,
        format!("tasksnap-store format {}\n", FORMAT_VERSION + 1),
    )
    .expect("write");
    for e in [
        Store::open(&fresh).expect_err("newer"),
        Writer::create(&fresh, opts(10)).expect_err("newer"),
    ] {
        match e {
            StoreError::NewerVersion { found, supported } => {
                assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION))
            }
            other => panic!("expected NewerVersion, got {other:?}"),
        }
    }
    // A garbled marker.
    fs::write(&marker, [0xff, 0, 1]).expect("write");
    assert!(matches!(
        Store::open(&fresh),
        Err(StoreError::NotAStore { .. })
    ));
}

#[test]
fn appends_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut w = Writer::create(tmp.path(), opts(10)).expect("create");
    assert!(matches!(
        w.append(tasksnap_store::INTERNAL_KIND, true, 1, b"x"),
        Err(StoreError::ReservedKind { .. })
    ));
    w.append(1, true, 10, b"x").expect("append");
    w.finish().expect("finish");
}

struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn full_disk_stops_and_keeps_what_was_written() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        if std::env::var_os("TASKSNAP_REQUIRE_PRIVILEGED").is_some_and(|v| v == "1") {
            panic!("full_disk test needs root (TASKSNAP_REQUIRE_PRIVILEGED=1)");
        }
        eprintln!(
            "skipped full_disk_stops_and_keeps_what_was_written: needs root to mount a tmpfs"
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mnt = tmp.path();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var_os("TASKSNAP_REQUIRE_PRIVILEGED").is_some_and(|v| v == "1") {
            panic!("could not mount a tmpfs");
        }
        eprintln!("skipped full_disk_stops_and_keeps_what_was_written: mount -t tmpfs failed");
        return;
    }
    let _unmount = Unmount(mnt);
    let dir = mnt.join("store");
    let mut w = Writer::create(&dir, opts(10)).expect("create");
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut written = Vec::new();
    let mut full = false;
    for s in 0..1000u64 {
        // Incompressible payloads.
        let p: Vec<u8> = (0..7000)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let key = w.starts_segment(s * S) || s % 4 == 0;
        match w.append(1, key, s * S, &p) {
            Ok(()) => written.push(p),
            Err(StoreError::Full { path }) => {
                assert!(path.starts_with(&dir));
                full = true;
                break;
            }
            Err(e) => panic!("expected Full, got {e:?}"),
        }
    }
    assert!(full, "the disk never filled");
    assert!(written.len() > 10);
    assert!(matches!(
        w.append(1, false, 2000 * S, b"x"),
        Err(StoreError::Stopped { .. })
    ));
    w.finish().expect("finish after full");
    let store = Store::open(&dir).expect("open");
    let all = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(all.len(), written.len());
    for (e, p) in all.iter().zip(&written) {
        assert_eq!(&store.read(e).expect("read"), p);
    }
    assert_eq!(
        store.damage().torn_tails,
        0,
        "cut back to the last whole frame"
    );
    assert_eq!(store.damage().skipped_bytes, 0);
}

/// Regression: a wall clock that steps back (NTP, a restored VM) across a restart made the store
/// unreadable (its span ran backwards) and the writer refused the frame.
#[test]
fn clock_step_back_is_kept_in_recording_order() {
    let (tmp, mut w) = writing(200, 215);
    assert!(w.take_warnings().is_empty());
    w.finish().expect("finish");
    // The recorder restarts with the clock 100 s behind.
    let mut w = create_again(tmp.path());
    assert!(w.starts_segment(100 * S));
    record(&mut w, 100, 105);
    let warnings = w.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("clock stepped back"), "{warnings:?}");
    // Within one writer too: a step back starts a new segment, said once.
    assert!(w.starts_segment(50 * S));
    record(&mut w, 50, 53);
    assert_eq!(w.take_warnings().len(), 1);
    w.finish().expect("finish");

    let store = Store::open(tmp.path()).expect("open");
    assert_eq!(store.span(), Some((50 * S, 214 * S)));
    let all = store.entries(0, u64::MAX).expect("entries");
    check_all(&store, &all);
    let seconds: Vec<u64> = all
        .iter()
        .filter(|e| e.kind == 1)
        .map(|e| e.time_ns / S)
        .collect();
    let want: Vec<u64> = (200..215).chain(100..105).chain(50..53).collect();
    assert_eq!(seconds, want, "recording order, not time order");
    assert_eq!(
        store.steps_back().expect("steps"),
        vec![(214 * S, 100 * S), (104 * S, 50 * S)]
    );
    // Seeking works on both sides of each step.
    for t in [201, 214, 100, 104, 50, 52, 150] {
        let got = store.seek(1, t * S).expect("seek").expect("in range");
        assert!(got[0].key && got[0].kind == 1, "seek to {t}");
        let last = got.iter().rfind(|e| e.kind == 1).expect("a kind-1 frame");
        let want = match t {
            150 => 104,
            t => t,
        };
        assert_eq!(last.time_ns, want * S, "seek to {t}");
    }
    // The last frames recorded, whatever their times.
    let end = store.seek_last(1).expect("seek").expect("some");
    assert_eq!(end.last().map(|e| e.time_ns), Some(52 * S));
    // A window's frames come with the key they need, in recording order.
    let w = store.window(1, 102 * S, 103 * S).expect("window");
    assert_eq!(w[0].time_ns, 100 * S);
    assert!(w[0].key);
    assert_eq!(w.last().map(|e| e.time_ns), Some(103 * S));
}

/// Regression: a segment whose name is earlier than its frames hid older segments from a
/// window query (names were taken as times).
#[test]
fn segment_named_before_its_frames_hides_nothing() {
    let (tmp, w) = writing(100, 130);
    w.finish().expect("finish");
    let mut names: Vec<_> = fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| n.starts_with("seg-"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 3);
    // The newest segment renamed to a number between the first two segments' names.
    let newest = names.pop().expect("a segment");
    fs::rename(
        tmp.path().join(&newest),
        tmp.path().join(format!("seg-{:020}.tsf", 105 * S)),
    )
    .expect("rename");
    let store = Store::open(tmp.path()).expect("open");
    assert_eq!(store.span(), Some((100 * S, 129 * S + 1)));
    let all = store.entries(0, u64::MAX).expect("entries");
    check_all(&store, &all);
    assert_eq!(all.iter().filter(|e| e.kind == 1).count(), 30);
    // A window at the end of the recording's times holds them all.
    let w = store.window(1, 112 * S, 129 * S).expect("window");
    let mut got: Vec<u64> = w
        .iter()
        .filter(|e| e.kind == 1 && e.time_ns >= 112 * S)
        .map(|e| e.time_ns / S)
        .collect();
    got.sort_unstable();
    assert_eq!(got, (112..130).collect::<Vec<_>>());
    for t in 100..130 {
        let got = store.seek(1, t * S).expect("seek").expect("in range");
        let last = got.iter().rfind(|e| e.kind == 1).expect("a kind-1 frame");
        assert_eq!(last.time_ns, t * S, "seek to {t}");
    }
}

/// `end_segment`: the next append opens a new segment (and asks for a key), once; before
/// any append it changes nothing (the first append opens one anyway).
#[test]
fn end_segment_opens_a_new_segment_at_the_next_append() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("store");
    let mut w = Writer::create(&dir, opts(3600)).expect("create");
    w.end_segment();
    record(&mut w, 100, 103);
    assert!(!w.starts_segment(103 * S));
    w.end_segment();
    assert!(w.starts_segment(103 * S));
    record(&mut w, 103, 106);
    assert!(!w.starts_segment(106 * S));
    w.finish().expect("finish");
    let store = Store::open(&dir).expect("open");
    let segs = store.segments();
    assert_eq!(segs.len(), 2);
    let entries = store.entries(0, u64::MAX).expect("entries");
    assert_eq!(entries.len(), 6 + 2);
    check_all(&store, &entries);
}
