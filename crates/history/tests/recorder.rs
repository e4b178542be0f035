//! `Recorder` writes the store's protocol: a key where a segment starts (the first reading,
//! the segment's span passed, the clock stepped back), names only when a task's names are new
//! to the key interval, a clock step back kept and said, the last reading recorded found
//! again by the next run, and one recorder per store.

use tasksnap_history::{Encoder, History, Recorder, ReplayError};
mod common;

use common::{process, reading_at, S};
use tasksnap_model::Reading;
use tasksnap_store::{StoreError, Writer, WriterOptions};

/// A reading at `t_s` seconds of five processes: pids 1 to 4 (always the same command lines)
/// and a pid `t_s` one (new each time, with a command line of its own).
fn reading(t_s: u64) -> Reading {
    let job = process(
        i32::try_from(t_s).expect("small"),
        Some(&format!("job {t_s}")),
    );
    let tasks = (1..=4).map(|p| process(p, Some("daemon"))).chain([job]);
    reading_at(t_s, tasks.collect())
}

/// A recorder with a key only every 100 samples and where a segment starts (no early keys:
/// these readings are so small that a delta is as large as a key).
fn recorder(dir: &std::path::Path, opts: WriterOptions) -> Recorder {
    let writer = Writer::create(dir, opts).expect("writer");
    Recorder::new(writer, Encoder::new(100).adaptive_keys(false))
}

fn pids(r: &Reading) -> Vec<i32> {
    r.snapshot.tasks.iter().map(|t| t.id.tgid).collect()
}

#[test]
fn keys_open_segments_and_every_reading_reads_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = WriterOptions {
        segment_span_ns: 4 * S,
        ..WriterOptions::default()
    };
    let mut rec = recorder(tmp.path(), opts);
    let keys: Vec<bool> = (10..20)
        .map(|t| rec.append(&reading(t)).expect("append").key)
        .collect();
    // A key at the first reading and wherever a 4 s segment starts, deltas between.
    let want: Vec<bool> = (10..20).map(|t| (t - 10) % 4 == 0).collect();
    assert_eq!(keys, want);
    assert!(rec.take_warnings().is_empty());
    assert!(rec.bytes_on_disk() > 0);
    rec.finish().expect("finish");

    let h = History::open(tmp.path()).expect("open");
    let all: Vec<Reading> = h.readings(0, u64::MAX).expect("readings").collect();
    assert_eq!(all.len(), 10);
    for (r, t) in all.iter().zip(10..) {
        assert_eq!(r.snapshot.taken_at_unix_ns, t * S);
        assert_eq!(pids(r), vec![1, 2, 3, 4, i32::try_from(t).expect("small")]);
        let cmd = r.snapshot.tasks[4].cmdline.as_deref();
        assert_eq!(cmd, Some(format!("job {t}").as_bytes()), "at {t}");
    }
}

#[test]
fn names_are_written_once_per_key_interval() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut rec = recorder(tmp.path(), WriterOptions::default());
    let key = rec.append(&reading(10)).expect("key");
    assert!(key.key && key.names_bytes > 0 && key.sample_bytes > 0);
    // The same tasks again: a delta with no names at all.
    let mut same = reading(10);
    same.snapshot.taken_at_unix_ns = 11 * S;
    let delta = rec.append(&same).expect("delta");
    assert!(!delta.key);
    assert_eq!(delta.names_bytes, 0);
    // A new task: its names, and only its, in a names payload smaller than the key's.
    let new = rec.append(&reading(12)).expect("delta with names");
    assert!(!new.key && new.names_bytes > 0 && new.names_bytes < key.names_bytes);
    rec.finish().expect("finish");
}

#[test]
fn a_clock_step_back_is_kept_in_a_new_segment_and_said() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut rec = Recorder::create(tmp.path(), WriterOptions::default(), 100).expect("recorder");
    for t in [200, 201, 202] {
        rec.append(&reading(t)).expect("append");
    }
    assert!(rec.take_warnings().is_empty());
    // Back 100 s: a key (it opens a segment), and a warning, said once.
    assert!(rec.append(&reading(102)).expect("append").key);
    let warnings = rec.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(rec.take_warnings().is_empty());
    rec.finish().expect("finish");

    let h = History::open(tmp.path()).expect("open");
    assert_eq!(h.clock_steps().expect("steps"), vec![(202 * S, 102 * S)]);
    let order: Vec<u64> = h
        .readings(0, u64::MAX)
        .expect("readings")
        .map(|r| r.snapshot.taken_at_unix_ns / S)
        .collect();
    assert_eq!(order, vec![200, 201, 202, 102]);
}

#[test]
fn the_next_run_finds_the_last_reading_and_a_second_recorder_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut rec = Recorder::create(tmp.path(), WriterOptions::default(), 3).expect("recorder");
    assert!(matches!(
        rec.last_recorded(),
        Err(ReplayError::Empty { .. })
    ));
    for t in 10..15 {
        rec.append(&reading(t)).expect("append");
    }
    // One recorder per store: a second one stops before writing anything.
    match Recorder::create(tmp.path(), WriterOptions::default(), 3) {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("a second recorder was not refused: {other:?}"),
    }
    // The last reading, read while this recorder still holds the lock.
    let last = rec.last_recorded().expect("last");
    assert_eq!(last.snapshot.taken_at_unix_ns, 14 * S);
    rec.finish().expect("finish");

    // A restarted recorder starts with a key and finds what the last run wrote.
    let mut next = Recorder::create(tmp.path(), WriterOptions::default(), 3).expect("recorder");
    assert_eq!(
        pids(&next.last_recorded().expect("last")),
        vec![1, 2, 3, 4, 14]
    );
    assert!(next.append(&reading(15)).expect("append").key);
    next.finish().expect("finish");
    let end = History::open(tmp.path())
        .expect("open")
        .reading_at(u64::MAX)
        .expect("end");
    assert_eq!(pids(&end), vec![1, 2, 3, 4, 15]);
}

/// One host identity per segment: a reading whose host name or boot id differs from the one
/// before (a host renamed while recording) is a key opening a new segment, said once, and
/// every reading reads back with its own identity.
#[test]
fn another_host_identity_opens_a_segment_and_is_said() {
    use tasksnap_model::HostIdentity;
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut rec = recorder(tmp.path(), WriterOptions::default());
    let id = |name: &[u8], boot: &[u8]| HostIdentity {
        hostname: Some(name.to_vec()),
        boot_id: Some(boot.to_vec()),
    };
    let hosts = [
        id(b"a", b"1"),
        id(b"a", b"1"),
        id(b"b\n", b"1"),
        id(b"b\n", b"1"),
        id(b"b\n", b"2"),
    ];
    let mut keys = Vec::new();
    for (t, h) in (10..).zip(&hosts) {
        let mut r = reading(t);
        r.host = h.clone();
        keys.push(rec.append(&r).expect("append").key);
    }
    assert_eq!(keys, [true, false, true, false, true]);
    let warnings = rec.take_warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("host name \"a\" -> \"b\\n\""),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("boot id \"1\" -> \"2\""),
        "{}",
        warnings[1]
    );
    assert!(rec.take_warnings().is_empty());
    rec.finish().expect("finish");

    let h = History::open(tmp.path()).expect("open");
    assert_eq!(h.store().segments().len(), 3);
    let got: Vec<HostIdentity> = h
        .readings(0, u64::MAX)
        .expect("readings")
        .map(|r| r.host)
        .collect();
    assert_eq!(got, hosts);
}
