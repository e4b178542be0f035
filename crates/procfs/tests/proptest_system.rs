//! Property tests of the machine-wide /proc parsers in `tasksnap_procfs::system`: the `cpu`
//! line of /proc/stat, /proc/meminfo, /proc/loadavg, /proc/uptime and pid_max. No input
//! panics; real 6.18 files with random values parse back to them. (Moved from top's header
//! code, crates/cli/src/top/system/proptests.rs, whose whole-header test over a fake /proc
//! stays there.)
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;
use tasksnap_procfs::system::{
    parse_cpu_line, parse_loadavg, parse_meminfo, parse_pid_max_width, parse_uptime,
};

mod strategies;
use strategies::{cases, meminfo, PLAUSIBLE, STAT_TAIL};

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn never_panic_on_arbitrary_text(text in ".{0,400}", lines in prop::collection::vec("(cpu |MemTotal: |Buffers: |Cached: |SReclaimable: |)[ 0-9a-z:-]{0,40}", 0..10)) {
        let _ = parse_cpu_line(text.as_bytes());
        let _ = parse_meminfo(text.as_bytes());
        let joined = lines.join("\n");
        let _ = parse_cpu_line(joined.as_bytes());
        let _ = parse_meminfo(joined.as_bytes());
    }

    #[test]
    fn cpu_line_round_trips(v in prop::collection::vec(any::<u64>(), 10), sep in prop::sample::select(vec![" ", "  "])) {
        let stat = format!("cpu {sep}{}\n{STAT_TAIL}", v.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
        let c = parse_cpu_line(stat.as_bytes()).expect("cpu line");
        prop_assert_eq!(
            [c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal],
            [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]
        );
        // cpu0/cpu1 lines are not the aggregate one.
        prop_assert!(parse_cpu_line(STAT_TAIL.as_bytes()).is_none());
    }

    #[test]
    fn meminfo_round_trips(v in prop::collection::vec(0..PLAUSIBLE, 12)) {
        let v: [u64; 12] = v.try_into().expect("12 values");
        let m = parse_meminfo(meminfo(&v).as_bytes());
        prop_assert_eq!(
            (m.total_kib, m.free_kib, m.available_kib, m.buff_cache_kib, m.swap_total_kib, m.swap_free_kib),
            (v[0], v[1], v[2], v[3] + v[4] + v[10], v[8], v[9])
        );
    }

    #[test]
    fn loadavg_uptime_pid_max_never_panic_and_round_trip(
        text in prop::collection::vec(any::<u8>(), 0..200),
        avg in prop::collection::vec(0.0f64..1e6, 3),
        running in any::<u32>(),
        tasks in any::<u64>(),
        up in (0.0f64..1e12, 0.0f64..1e12),
        pid_max in 1u64..=4_194_304,
    ) {
        let _ = parse_loadavg(&text);
        let _ = parse_uptime(&text);
        let _ = parse_pid_max_width(&text);
        let la = format!("{:.2} {:.2} {:.2} {running}/{tasks} 12345\n", avg[0], avg[1], avg[2]);
        let got = parse_loadavg(la.as_bytes());
        prop_assert_eq!(got.tasks, Some(tasks));
        for (g, w) in got.avg.iter().zip(&avg) {
            prop_assert!((g - w).abs() <= 0.005 + 1e-9, "{} vs {}", g, w);
        }
        let u = format!("{:.2} {:.2}\n", up.0, up.1);
        let got = parse_uptime(u.as_bytes()).expect("uptime");
        prop_assert!((got - up.0).abs() <= 0.005 + up.0 * 1e-12, "{} vs {}", got, up.0);
        prop_assert_eq!(parse_pid_max_width(format!("{pid_max}\n").as_bytes()), Some(pid_max.to_string().len()));
    }
}

/// Minimal input: /proc/meminfo with `Buffers: 18446744073709551615 kB` and `Cached: 1 kB`:
/// buff/cache (`parse_meminfo`, then in crates/cli/src/top/system.rs) overflows u64.
#[test]
fn defect_huge_meminfo_buffers() {
    let _ = parse_meminfo(b"Buffers: 18446744073709551615 kB\nCached: 1 kB\n");
}
