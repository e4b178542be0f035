//! The cgroup series: names, types and units from the model's table, odd paths in labels,
//! and the fold into `other` with its sums.

use std::sync::Arc;

use tasksnap_model::{CgroupCounters, CgroupHierarchy, CgroupListing, Limit};

use super::*;
use crate::aggregate::{Aggregator, Options};
use crate::encode::{expose, Cost};

const S: u64 = 1_000_000_000;

fn v2(path: &[u8]) -> CgroupCounters {
    CgroupCounters::new(path.to_vec(), CgroupHierarchy::V2)
}

fn v1(path: &[u8]) -> CgroupCounters {
    CgroupCounters::new(path.to_vec(), CgroupHierarchy::V1(vec!["cpu".into()]))
}

fn listing(cgroups: Vec<CgroupCounters>) -> CgroupListing {
    CgroupListing {
        cgroups,
        notes: Vec::new(),
    }
}

/// Both expositions of `series` beside no groups: (OpenMetrics, Prometheus text, series).
fn exposed(series: Option<Arc<CgroupSeries>>) -> (String, String, usize) {
    let a = Aggregator::new(Options::default());
    let e = expose(&a.view(), series, &Cost::default());
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).expect("utf-8");
    (text(&e.openmetrics), text(&e.prometheus), e.series)
}

/// The value of the sample line `key` (name and labels, exactly).
fn sample(text: &str, key: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (k, v) = l.rsplit_once(' ')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

/// A v2 cgroup using `usage_s` seconds of CPU, throttled `throttled_ms`.
fn busy(path: &str, usage_s: f64, throttled_ms: u64) -> CgroupCounters {
    let mut c = v2(path.as_bytes());
    c.cpu_usage_ns = Some((usage_s * S as f64) as u64);
    c.cpu_throttled_ns = Some(throttled_ms * 1_000_000);
    c
}

#[test]
fn fields_are_families_in_base_units_and_limits_that_are_none_have_no_sample() {
    let mut root = v2(b"/");
    root.cpu_usage_ns = Some(2_500_000_000);
    root.cpu_quota_us = Some(Limit::Unlimited);
    root.cpu_period_us = Some(100_000);
    root.memory_limit_bytes = Some(Limit::At(4096));
    root.memory_current_bytes = Some(1024);
    root.oom_kills = Some(3);
    let mut app = v1(b"/app");
    app.cpu_quota_us = Some(Limit::At(20_000));
    app.cpu_throttled_ns = Some(7_000_000);
    app.pids_current = Some(5);
    let mut cg = Cgroups::new(0);
    cg.update(&listing(vec![root, app]));
    let shown = cg.shown();
    assert_eq!(shown.folded, 0);
    let (om, text, series) = exposed(Some(shown.clone()));
    let (_, _, without) = exposed(None);
    // Every sample written is one the budget counted.
    assert_eq!(series - without, shown.series(), "{text}");
    let root = "{cgroup=\"/\",hierarchy=\"v2\"}";
    let app = "{cgroup=\"/app\",hierarchy=\"v1\"}";
    for (key, want) in [
        (
            format!("tasksnap_cgroup_cpu_usage_seconds_total{root}"),
            2.5,
        ),
        (format!("tasksnap_cgroup_cpu_period_seconds{root}"), 0.1),
        (format!("tasksnap_cgroup_memory_limit_bytes{root}"), 4096.0),
        (
            format!("tasksnap_cgroup_memory_current_bytes{root}"),
            1024.0,
        ),
        (format!("tasksnap_cgroup_oom_kills_total{root}"), 3.0),
        (format!("tasksnap_cgroup_cpu_quota_seconds{app}"), 0.02),
        (
            format!("tasksnap_cgroup_cpu_throttled_seconds_total{app}"),
            0.007,
        ),
        (format!("tasksnap_cgroup_pids_current{app}"), 5.0),
        ("tasksnap_cgroups_folded".to_string(), 0.0),
    ] {
        assert_eq!(sample(&text, &key), Some(want), "{key}: {text}");
        assert_eq!(sample(&om, &key), Some(want), "{key}: {om}");
    }
    assert!(!text.contains(&format!("tasksnap_cgroup_cpu_quota_seconds{root}")));
    assert!(!text.contains(&format!("tasksnap_cgroup_cpu_usage_seconds_total{app}")));
    for want in [
        "# TYPE tasksnap_cgroup_cpu_usage_seconds_total counter",
        "# HELP tasksnap_cgroup_cpu_usage_seconds_total CPU time used by the cgroup's tasks",
        "# TYPE tasksnap_cgroup_memory_limit_bytes gauge",
        "# TYPE tasksnap_cgroup_cpu_quota_seconds gauge",
        "# TYPE tasksnap_cgroup_pids_current gauge",
        "# TYPE tasksnap_cgroups_folded gauge",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    for want in [
        "# TYPE tasksnap_cgroup_cpu_usage_seconds counter",
        "# UNIT tasksnap_cgroup_cpu_usage_seconds seconds",
        "# UNIT tasksnap_cgroup_memory_limit_bytes bytes",
    ] {
        assert!(om.contains(want), "{want}: {om}");
    }
    // Turned off: no cgroup family at all.
    let (om, _, _) = exposed(None);
    assert!(!om.contains("cgroup"), "{om}");
}

#[test]
fn odd_paths_are_escaped_and_stay_distinct() {
    let paths: [&[u8]; 5] = [
        b"/q\"u\\o\nte",
        b"/odd\xff",
        b"/odd\\xff",
        b"/cr\rname",
        "/systemd-\\x2d.slice/ünïcode".as_bytes(),
    ];
    let mut cg = Cgroups::new(0);
    let cgroups = paths
        .iter()
        .map(|p| {
            let mut c = v2(p);
            c.pids_current = Some(1);
            c
        })
        .collect();
    cg.update(&listing(cgroups));
    let (om, text, _) = exposed(Some(cg.shown()));
    for exposition in [&om, &text] {
        // No path breaks a line: every line is a comment or a tasksnap sample.
        for l in exposition.lines() {
            assert!(l.starts_with('#') || l.starts_with("tasksnap_"), "{l:?}");
        }
    }
    for key in [
        r#"tasksnap_cgroup_pids_current{cgroup="/q\"u\\o\nte",hierarchy="v2"}"#,
        r#"tasksnap_cgroup_pids_current{cgroup="/odd\\xff",hierarchy="v2"}"#,
        r#"tasksnap_cgroup_pids_current{cgroup="/odd\\\\xff",hierarchy="v2"}"#,
        r#"tasksnap_cgroup_pids_current{cgroup="/cr\\x0dname",hierarchy="v2"}"#,
        r#"tasksnap_cgroup_pids_current{cgroup="/systemd-\\x2d.slice/ünïcode",hierarchy="v2"}"#,
    ] {
        assert_eq!(sample(&text, key), Some(1.0), "{key}: {text}");
    }
    // Each label value gives back its path.
    let shown = cg.shown();
    let mut back: Vec<Vec<u8>> = shown
        .rows
        .iter()
        .map(|r| crate::label::name_of(&r.cgroup))
        .collect();
    back.sort();
    let mut want: Vec<Vec<u8>> = paths.iter().map(|p| p.to_vec()).collect();
    want.sort();
    assert_eq!(back, want);
}

/// The room kept for `other` (both hierarchies' counters) and the count of the folded.
fn reserved() -> usize {
    1 + 2 * other_most()
}

#[test]
fn the_least_busy_are_folded_into_other_whose_counters_sum_what_they_grew() {
    // Room for two cgroups of two series each.
    let mut cg = Cgroups::new(reserved() + 4);
    let mut b = busy("/b", 2.0, 0);
    b.memory_current_bytes = Some(100);
    let first = vec![
        busy("/a", 1.0, 0),
        b,
        busy("/c", 3.0, 0),
        busy("/d", 4.0, 0),
        busy("/e", 5.0, 0),
    ];
    cg.update(&listing(first));
    let shown = cg.shown();
    // The first collection: the most CPU in all is shown; nothing counts in other yet.
    let names: Vec<&str> = shown.rows.iter().map(|r| r.cgroup.as_str()).collect();
    assert_eq!(names, ["/d", "/e", "other"]);
    assert_eq!(shown.folded, 3);
    let (_, text, _) = exposed(Some(shown.clone()));
    let other = "{cgroup=\"other\",hierarchy=\"v2\"}";
    let usage = format!("tasksnap_cgroup_cpu_usage_seconds_total{other}");
    let throttled = format!("tasksnap_cgroup_cpu_throttled_seconds_total{other}");
    assert_eq!(sample(&text, &usage), Some(0.0), "{text}");
    assert_eq!(sample(&text, "tasksnap_cgroups_folded"), Some(3.0));

    // a grew 10 s, e 2 s, c and b 1 s (c more in all), f is new (0.5 s), d nothing.
    let mut b = busy("/b", 3.0, 200);
    b.memory_current_bytes = Some(100);
    let second = vec![
        busy("/a", 11.0, 0),
        b,
        busy("/c", 4.0, 100),
        busy("/d", 4.0, 300),
        busy("/e", 7.0, 0),
        busy("/f", 0.5, 50),
    ];
    cg.update(&listing(second));
    let shown = cg.shown();
    let names: Vec<&str> = shown.rows.iter().map(|r| r.cgroup.as_str()).collect();
    assert_eq!(names, ["/a", "/e", "other"]);
    assert_eq!(shown.folded, 4);
    let (_, text, series) = exposed(Some(shown.clone()));
    let (_, _, without) = exposed(None);
    assert_eq!(series - without, shown.series());
    assert!(shown.series() <= reserved() + 4);
    // c 1 + b 1 + f 0.5 + d 0; throttled 0.1 + 0.2 + 0.05 + 0.3.
    assert_eq!(sample(&text, &usage), Some(2.5), "{text}");
    let t = sample(&text, &throttled).expect("other's throttled time");
    assert!((t - 0.65).abs() < 1e-9, "{t}");
    assert_eq!(sample(&text, "tasksnap_cgroups_folded"), Some(4.0));
    // Levels are not summed; counters no folded cgroup has are not shown.
    assert!(
        !text.contains(&format!("memory_current_bytes{other}")),
        "{text}"
    );
    assert!(
        !text.contains(&format!("io_read_bytes_total{other}")),
        "{text}"
    );
}

/// `other`'s CPU use in hierarchy `h` as `cg` shows it.
fn other_usage(cg: &Cgroups, h: &str) -> Option<f64> {
    let text = exposed(Some(cg.shown())).1;
    let key =
        format!("tasksnap_cgroup_cpu_usage_seconds_total{{cgroup=\"other\",hierarchy=\"{h}\"}}");
    sample(&text, &key)
}

#[test]
fn other_only_grows_and_hierarchies_fold_apart() {
    // No room for any cgroup: every one is folded.
    let mut cg = Cgroups::new(reserved());
    cg.update(&listing(vec![busy("/x", 5.0, 0)]));
    assert_eq!(other_usage(&cg, "v2"), Some(0.0));
    assert_eq!(other_usage(&cg, "v1"), None);
    // /x made anew: its counter started again, all of it is new.
    let mut y = v1(b"/x");
    y.cpu_usage_ns = Some(2 * S);
    cg.update(&listing(vec![busy("/x", 1.0, 0), y.clone()]));
    assert_eq!(other_usage(&cg, "v2"), Some(1.0));
    // v1's /x is new since the previous collection: it brings all it counted.
    assert_eq!(other_usage(&cg, "v1"), Some(2.0));
    y.cpu_usage_ns = Some(3 * S);
    cg.update(&listing(vec![busy("/x", 3.0, 0), y]));
    assert_eq!(other_usage(&cg, "v2"), Some(3.0));
    assert_eq!(other_usage(&cg, "v1"), Some(3.0));
    assert_eq!(cg.shown().folded, 2);
    // A cgroup gone: other keeps what it counted.
    cg.update(&listing(Vec::new()));
    assert_eq!(other_usage(&cg, "v2"), Some(3.0));
    assert_eq!(cg.shown().folded, 0);
}
