//! The cgroups table through a store: readings with cgroup listings that change, stay idle,
//! lose and gain cgroups (paths of any bytes, listings in any order) are recorded and read
//! back equal (in identity order), by a window and by seeking to one delta; an idle cgroup
//! costs a delta nothing; and a reading without a table reads back without one.

use tasksnap_history::{Encoder, History, Recorder};
mod common;

use common::{process, reading_at, S};
use tasksnap_model::{
    CgroupCounters, CgroupHierarchy, CgroupListing, Limit, Pressure, PressureLine, Reading,
};
use tasksnap_store::{Writer, WriterOptions};

fn v1() -> CgroupHierarchy {
    CgroupHierarchy::V1(vec!["cpu".into(), "cpuacct".into()])
}

/// A busy v1 cgroup `path` at sample `t`: its usage and throttled time grow with `t`.
fn busy(path: &[u8], t: u64) -> CgroupCounters {
    let mut c = CgroupCounters::new(path.to_vec(), v1());
    c.cpu_usage_ns = Some(1_000_000 * t * t);
    c.cpu_quota_us = Some(Limit::At(20_000));
    c.cpu_period_us = Some(100_000);
    c.cpu_periods = Some(10 * t);
    c.cpu_throttled_periods = Some(9 * t);
    c.cpu_throttled_ns = Some(80_000_000 * t);
    c
}

/// An idle v2 cgroup: the same every sample.
fn idle(path: &[u8]) -> CgroupCounters {
    let mut c = CgroupCounters::new(path.to_vec(), CgroupHierarchy::V2);
    c.cpu_usage_ns = Some(12_171_000);
    c.cpu_quota_us = Some(Limit::Unlimited);
    c.memory_limit_bytes = Some(Limit::Unlimited);
    c.memory_current_bytes = Some(8192);
    c.pids_current = Some(0);
    c.pressure.push(Pressure {
        resource: "cpu".into(),
        some: Some(PressureLine {
            avg_pct: [0.0; 3],
            total_us: 37_332,
        }),
        full: None,
    });
    c
}

/// The listing of sample `t` (10..20), in the order a walk would find it (not sorted): the
/// root and 40 idle children always (one of them given a memory limit at 15, another's task
/// count unknown at 17, the root's pressure total moving now and then); a busy one (its name not UTF-8) from 11 on; a second
/// busy one until 14; a new one from 16; no table at all at 13.
fn listing(t: u64) -> Option<CgroupListing> {
    if t == 13 {
        return None;
    }
    let mut cgroups = vec![idle(b"/")];
    cgroups.extend((0..40).map(|i| idle(format!("/idle{i:02}").as_bytes())));
    // Values that move alone: a limit set, a pressure total, a gauge.
    if t >= 15 {
        cgroups[5].memory_limit_bytes = Some(Limit::At(1 << 30));
    }
    if let Some(p) = cgroups[0].pressure[0].some.as_mut() {
        p.total_us += t / 3;
    }
    if t == 17 {
        cgroups[7].pids_current = None;
    }
    if t >= 11 {
        cgroups.push(busy(b"/tasksnap-\xff-busy", t));
    }
    if t < 14 {
        cgroups.push(busy(b"/going", t));
    }
    if t >= 16 {
        cgroups.insert(3, busy(b"/a-new-one", t));
    }
    cgroups.push(busy(b"/", t));
    Some(CgroupListing {
        cgroups,
        notes: if t == 17 {
            vec!["stopped at depth 3".into()]
        } else {
            Vec::new()
        },
    })
}

fn reading(t: u64) -> Reading {
    let mut r = reading_at(t, vec![process(1, Some("init"))]);
    r.cgroups = listing(t);
    r
}

/// What reads back: the records in identity order (v2 first, then v1, by path bytes).
fn in_identity_order(l: Option<CgroupListing>) -> Option<CgroupListing> {
    let mut l = l?;
    let rank = |c: &CgroupCounters| matches!(c.hierarchy, CgroupHierarchy::V1(_));
    l.cgroups
        .sort_by(|a, b| (rank(a), &a.path).cmp(&(rank(b), &b.path)));
    Some(l)
}

#[test]
fn cgroup_tables_read_back_equal_by_window_and_by_seek() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let writer = Writer::create(tmp.path(), WriterOptions::default()).expect("writer");
    let mut rec = Recorder::new(writer, Encoder::new(4).adaptive_keys(false));
    let keys: Vec<bool> = (10..20)
        .map(|t| rec.append(&reading(t)).expect("append").key)
        .collect();
    assert_eq!(keys.iter().filter(|k| !**k).count(), 7, "deltas: {keys:?}");
    rec.finish().expect("finish");

    let h = History::open(tmp.path()).expect("open");
    let all: Vec<Reading> = h.readings(0, u64::MAX).expect("readings").collect();
    assert_eq!(all.len(), 10);
    for (r, t) in all.iter().zip(10..) {
        assert_eq!(r.cgroups, in_identity_order(listing(t)), "sample {t}");
    }
    // Seeking decodes the key and one delta: each sample alone reads the same.
    for t in 10..20 {
        let r = h.reading_at(t * S).expect("reading_at");
        assert_eq!(r.cgroups, in_identity_order(listing(t)), "at {t}");
    }
}

/// A delta of 400 idle cgroups (the key's, unchanged) holds none of them: it is as large as
/// the delta of the same reading without a table but for the table's few counts.
#[test]
fn idle_cgroups_cost_a_delta_nothing() {
    let many = |t: u64, with: bool| {
        let mut r = reading_at(t, vec![process(1, Some("init"))]);
        r.cgroups = with.then(|| CgroupListing {
            cgroups: (0..400)
                .map(|i| idle(format!("/system.slice/unit{i}.service").as_bytes()))
                .collect(),
            notes: Vec::new(),
        });
        r
    };
    let size = |with: bool| {
        let mut enc = Encoder::new(100).adaptive_keys(false);
        let key = enc.encode(&many(1, with), false);
        let delta = enc.encode(&many(2, with), false);
        assert!(key.key && !delta.key);
        (key.sample.len(), delta.sample.len())
    };
    let (key_with, delta_with) = size(true);
    let (key_without, delta_without) = size(false);
    assert!(key_with > key_without + 400, "{key_with} vs {key_without}");
    // Tag, notes, gone and rows counts, and the column's length.
    assert!(
        delta_with <= delta_without + 5,
        "{delta_with} vs {delta_without}"
    );
}
