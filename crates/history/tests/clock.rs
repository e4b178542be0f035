//! A recording whose wall clock stepped back: written as a recorder restarted
//! with its clock set back would write it, it reads in recording order, seeks on both sides
//! of the step, and says where the step is.

use std::path::Path;

use tasksnap_history::{History, Recorder};
mod common;

use common::{process, reading_at, S};
use tasksnap_model::Reading;
use tasksnap_store::WriterOptions;

/// A reading at `t_s` seconds holding one task whose pid is `t_s` (so a reading names its
/// own time).
fn reading(t_s: u64) -> Reading {
    reading_at(t_s, vec![process(i32::try_from(t_s).expect("small"), None)])
}

/// One recorder run per range of seconds.
fn record(dir: &Path, runs: &[std::ops::Range<u64>]) {
    for run in runs {
        let mut rec = Recorder::create(dir, WriterOptions::default(), 3).expect("recorder");
        for s in run.clone() {
            rec.append(&reading(s)).expect("append");
        }
        rec.finish().expect("finish");
    }
}

fn pid_of(r: &Reading) -> u64 {
    u64::try_from(r.snapshot.tasks[0].id.tgid).expect("positive")
}

#[test]
fn a_recording_whose_clock_stepped_back_reads_in_recording_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // The clock ran 100 s ahead during the first run and was set back before the second.
    record(tmp.path(), &[200..210, 100..110]);
    let h = History::open(tmp.path()).expect("open");
    assert_eq!(h.span(), Some((100 * S, 209 * S)));
    assert_eq!(h.clock_steps().expect("steps"), vec![(209 * S, 100 * S)]);
    let w = h.clock_warning().expect("warning").expect("a step");
    assert!(w.contains("stepped back"), "{w}");
    assert!(w.contains(&tasksnap_history::rfc3339(209 * S)), "{w}");
    assert!(w.contains(&tasksnap_history::rfc3339(100 * S)), "{w}");
    // Every sample, in the order recorded.
    let all: Vec<u64> = h
        .readings(0, u64::MAX)
        .expect("readings")
        .map(|r| pid_of(&r))
        .collect();
    assert_eq!(all, (200..210).chain(100..110).collect::<Vec<_>>());
    // A window inside each part, with the keys they need (a key every 3 samples).
    let part: Vec<u64> = h
        .readings(205 * S, 207 * S)
        .expect("readings")
        .map(|r| pid_of(&r))
        .collect();
    assert_eq!(part, vec![205, 206, 207]);
    let part: Vec<u64> = h
        .readings(104 * S, 105 * S)
        .expect("readings")
        .map(|r| pid_of(&r))
        .collect();
    assert_eq!(part, vec![104, 105]);
    // The end of the recording is the last sample recorded, not the latest time.
    assert_eq!(pid_of(&h.reading_at(u64::MAX).expect("end")), 109);
    // Seeks on both sides of the step, and between the two parts' times.
    for (at, want) in [(203, 203), (209, 209), (100, 100), (108, 108), (150, 109)] {
        let r = h.reading_at(at * S).expect("in the recording");
        assert_eq!(pid_of(&r), want, "at {at}");
    }
    assert!(h.reading_at(99 * S).is_err());
    assert!(h.reading_at(210 * S).is_err());
    // top --replay's steps: every sample time once, in time order.
    let times = h.sample_times(0, u64::MAX).expect("times");
    assert_eq!(times.len(), 20);
    assert!(times.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_recording_in_time_order_has_no_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    record(tmp.path(), &[100..105, 105..110]);
    let h = History::open(tmp.path()).expect("open");
    assert!(h.clock_steps().expect("steps").is_empty());
    assert_eq!(h.clock_warning().expect("warning"), None);
    assert_eq!(pid_of(&h.reading_at(u64::MAX).expect("end")), 109);
}
