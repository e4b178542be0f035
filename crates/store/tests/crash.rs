//! Crash tests over the store: the last segment truncated at random offsets and with random
//! bytes flipped (property tests: the reader never panics, never returns a payload that
//! differs from what was written, and a truncation loses only the frames at or after the
//! cut), and the recorder SIGKILLed at 200 random moments (every acknowledged frame reads
//! back, at most the frame being written is lost).

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use tasksnap_store::frame::walk;
use tasksnap_store::{Store, StoreError, Writer, WriterOptions};

/// The payload written for frame `seq`: its number, then bytes derived from it.
fn payload(seq: u64) -> Vec<u8> {
    let mut p = seq.to_le_bytes().to_vec();
    p.extend((0..seq % 300).map(|i| ((i * 7) ^ seq) as u8 % 5));
    p
}

fn last_segment(dir: &Path) -> PathBuf {
    let mut segs: Vec<PathBuf> = fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsf"))
        .collect();
    segs.sort();
    segs.pop().expect("a segment")
}

type Template = (tempfile::TempDir, Vec<(u64, u64, u64)>);

/// Writes frames 0..n (time = seq µs, 8 frames a segment), finishing cleanly or not.
/// Returns the dir and, for the last segment, each frame's (seq, offset, end).
fn write_store(n: u64, finish: bool) -> Template {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = WriterOptions {
        segment_span_ns: 8_000,
        ..WriterOptions::default()
    };
    let mut w = Writer::create(tmp.path(), o).expect("create");
    for seq in 0..n {
        let t = seq * 1000;
        let key = w.starts_segment(t) || seq % 3 == 0;
        w.append(1, key, t, &payload(seq)).expect("append");
    }
    if finish {
        w.finish().expect("finish");
    } else {
        drop(w);
    }
    let bytes = fs::read(last_segment(tmp.path())).expect("read");
    let frames = walk(&bytes)
        .frames
        .iter()
        .filter(|f| f.header.kind == 1)
        .map(|f| {
            let end = f.offset_bytes + 32 + u64::from(f.header.compressed_len_bytes);
            (f.header.time_ns / 1000, f.offset_bytes, end)
        })
        .collect();
    (tmp, frames)
}

/// Frame counts the property tests draw from (a template store each, written once: the
/// writer's fsyncs make writing one per case too slow).
const COUNTS: [u64; 7] = [1, 2, 8, 9, 13, 24, 29];

/// A fresh copy of the template store for `COUNTS[i]` frames.
fn store_copy(i: usize, finish: bool) -> Template {
    static TEMPLATES: OnceLock<Vec<Template>> = OnceLock::new();
    let all = TEMPLATES.get_or_init(|| {
        COUNTS
            .iter()
            .flat_map(|&n| [write_store(n, false), write_store(n, true)])
            .collect()
    });
    let (from, frames) = &all[i % COUNTS.len() * 2 + usize::from(finish)];
    let tmp = tempfile::tempdir().expect("tempdir");
    for e in fs::read_dir(from.path()).expect("ls") {
        let e = e.expect("entry");
        fs::copy(e.path(), tmp.path().join(e.file_name())).expect("copy");
    }
    (tmp, frames.clone())
}

/// Every frame the reader returns whole, by seq; panics if one differs from what was written.
fn read_back(dir: &Path) -> Vec<u64> {
    let store = Store::open(dir).expect("open");
    let mut got = Vec::new();
    for e in store.entries(0, u64::MAX).expect("entries") {
        match store.read(&e) {
            Ok(p) => {
                let seq = e.time_ns / 1000;
                assert_eq!(p, payload(seq), "frame {seq} differs from what was written");
                got.push(seq);
            }
            Err(StoreError::Corrupt { .. }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    let _ = store.segments();
    let _ = store.damage();
    let _ = store.seek(1, 5_000);
    got
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn truncated_last_segment_loses_only_frames_after_the_cut(
        i in 0..COUNTS.len(), finish in any::<bool>(), cut in any::<prop::sample::Index>()
    ) {
        let (tmp, last) = store_copy(i, finish);
        let n = COUNTS[i];
        let seg = last_segment(tmp.path());
        let len = fs::metadata(&seg).expect("meta").len();
        let cut = cut.index(len as usize + 1) as u64;
        fs::OpenOptions::new().write(true).open(&seg).expect("open").set_len(cut).expect("truncate");
        let first_in_last = last.first().map_or(n, |f| f.0);
        let want: Vec<u64> = (0..first_in_last)
            .chain(last.iter().filter(|f| f.2 <= cut).map(|f| f.0))
            .collect();
        prop_assert_eq!(read_back(tmp.path()), want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn flipped_bytes_never_give_a_wrong_payload(
        i in 0..COUNTS.len(), finish in any::<bool>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..5)
    ) {
        let (tmp, last) = store_copy(i, finish);
        let n = COUNTS[i];
        let seg = last_segment(tmp.path());
        let mut bytes = fs::read(&seg).expect("read");
        let mut hit = Vec::new();
        for (i, x) in &flips {
            let at = i.index(bytes.len());
            bytes[at] ^= x;
            hit.push(at as u64);
        }
        fs::write(&seg, &bytes).expect("write");
        let first_in_last = last.first().map_or(n, |f| f.0);
        let want: Vec<u64> = (0..first_in_last)
            .chain(last.iter().filter(|f| !hit.iter().any(|&h| h >= f.1 && h < f.2)).map(|f| f.0))
            .collect();
        prop_assert_eq!(read_back(tmp.path()), want);
    }

    #[test]
    fn garbage_segments_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..3000), tail in 0usize..40) {
        let (tmp, _) = store_copy(3, true);
        let seg = last_segment(tmp.path());
        let mut whole = fs::read(&seg).expect("read");
        let keep = whole.len().saturating_sub(tail);
        whole.truncate(keep);
        whole.extend_from_slice(&bytes);
        fs::write(&seg, &whole).expect("write");
        fs::write(tmp.path().join("seg-99999999999999999999.tsf"), &bytes).expect("write");
        let _ = read_back(tmp.path());
    }
}

const CHILD_ENV: &str = "TASKSNAP_STORE_CRASH_CHILD";
const RUN_ENV: &str = "TASKSNAP_STORE_CRASH_RUN";
const PER_RUN: u64 = 1_000_000;

/// In the child: record frames until killed, acknowledging each on stdout once `append`
/// returned.
fn be_the_recorder(dir: &Path, run: u64) -> ! {
    let o = WriterOptions {
        segment_span_ns: 30_000,
        ..WriterOptions::default()
    };
    let mut out = std::io::stdout().lock();
    let mut w = match Writer::create(dir, o) {
        Ok(w) => w,
        Err(e) => {
            let _ = writeln!(out, "error {e}");
            std::process::exit(3);
        }
    };
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for i in 0..200_000u64 {
        let seq = run * PER_RUN + i;
        let t = seq * 1000;
        let key = w.starts_segment(t) || i % 10 == 0;
        if let Err(e) = w.append(1, key, t, &payload(seq)) {
            let _ = writeln!(out, "error {e}");
            std::process::exit(4);
        }
        let _ = writeln!(out, "ack {seq}");
        let _ = out.flush();
    }
    let _ = w.finish();
    std::process::exit(0);
}

#[test]
fn recorder_sigkilled_at_random_moments() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let run = std::env::var(RUN_ENV)
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        be_the_recorder(Path::new(&dir), run);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("current_exe");
    let mut rng = Instant::now().elapsed().as_nanos() as u64 ^ u64::from(std::process::id());
    rng |= 1;
    eprintln!("crash test seed {rng}");
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let started = Instant::now();
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new(); // run -> frames acknowledged
    for run in 0..200u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "recorder_sigkilled_at_random_moments",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, tmp.path())
            .env(RUN_ENV, run.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the recorder");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(l) if l.ends_with("ready") => break,
                Ok(l) => lines.push(l),
                Err(e) => panic!(
                    "run {run}: the recorder did not start ({e}): {:?}",
                    lines.get(..5)
                ),
            }
        }
        std::thread::sleep(Duration::from_micros(next() % 15_000));
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        reader.join().expect("reader thread");
        lines.extend(rx.try_iter());
        let error = lines.iter().find(|l| l.contains("error"));
        assert!(error.is_none(), "run {run}: {error:?} ({status})");
        let n = lines.iter().filter(|l| l.starts_with("ack ")).count() as u64;
        acked.insert(run, n);
    }
    let elapsed = started.elapsed();

    let got = read_back(tmp.path());
    let mut by_run: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for seq in got {
        by_run.entry(seq / PER_RUN).or_default().push(seq % PER_RUN);
    }
    for (run, n) in &acked {
        let present = by_run.remove(run).unwrap_or_default();
        let k = present.len() as u64;
        assert_eq!(present, (0..k).collect::<Vec<_>>(), "run {run}: a gap");
        assert!(
            k == *n || k == n + 1,
            "run {run}: {n} acknowledged, {k} read back"
        );
    }
    assert!(by_run.is_empty());
    let total: u64 = acked.values().sum();
    eprintln!("200 SIGKILLs in {elapsed:?}, {total} frames acknowledged");
    assert!(
        total > 200,
        "the kills came too early to test anything: {total} frames"
    );
}
