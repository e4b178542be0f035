//! Property tests of `top`'s machine-wide /proc parsers: the `cpu` line of /proc/stat
//! ([`parse_cpu_line`]), /proc/meminfo ([`parse_meminfo`]) and the whole header read
//! ([`SystemReader::read`]) over a fake /proc of hostile files (uptime, loadavg, stat,
//! meminfo). No input panics; real 6.18 files with random values parse back to them.
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;

use super::{parse_cpu_line, parse_meminfo, SystemReader};

/// This VM's /proc/stat head and /proc/meminfo (6.18), shortened.
const STAT_TAIL: &str = "cpu0 24251 0 5200 26454 190 0 46 110 0 0\ncpu1 27164 0 6190 22008 672 0 108 113 0 0\nintr 1234 0 0\nctxt 775683\nbtime 1795412457\nprocesses 72746\nprocs_running 4\nprocs_blocked 0\n";
const MEMINFO_KEYS: [&str; 12] = [
    "MemTotal",
    "MemFree",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapCached",
    "Active",
    "Inactive",
    "SwapTotal",
    "SwapFree",
    "SReclaimable",
    "Shmem",
];

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

fn meminfo(values: &[u64; 12]) -> String {
    MEMINFO_KEYS
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{:<16}{v:>8} kB\n", format!("{k}:")))
        .collect()
}

/// Numbers a kernel could plausibly show: up to 2^56 (no sum of a few overflows).
const PLAUSIBLE: u64 = 1 << 56;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn never_panic_on_arbitrary_text(text in ".{0,400}", lines in prop::collection::vec("(cpu |MemTotal: |Buffers: |Cached: |SReclaimable: |)[ 0-9a-z:-]{0,40}", 0..10)) {
        let _ = parse_cpu_line(&text);
        let _ = parse_meminfo(&text);
        let joined = lines.join("\n");
        let _ = parse_cpu_line(&joined);
        let _ = parse_meminfo(&joined);
    }

    #[test]
    fn cpu_line_round_trips(v in prop::collection::vec(any::<u64>(), 10), sep in prop::sample::select(vec![" ", "  "])) {
        let stat = format!("cpu {sep}{}\n{STAT_TAIL}", v.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
        let c = parse_cpu_line(&stat).expect("cpu line");
        prop_assert_eq!(
            [c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal],
            [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]
        );
        // cpu0/cpu1 lines are not the aggregate one.
        prop_assert!(parse_cpu_line(STAT_TAIL).is_none());
    }

    #[test]
    fn meminfo_round_trips(v in prop::collection::vec(0..PLAUSIBLE, 12)) {
        let v: [u64; 12] = v.try_into().expect("12 values");
        let m = parse_meminfo(&meminfo(&v));
        prop_assert_eq!(
            (m.total_kib, m.free_kib, m.available_kib, m.buff_cache_kib, m.swap_total_kib, m.swap_free_kib),
            (v[0], v[1], v[2], v[3] + v[4] + v[10], v[8], v[9])
        );
    }

    /// The whole header over a fake /proc: hostile or plausible files, read twice (the CPU
    /// split is a delta). No panic; percentages are finite.
    #[test]
    fn header_over_a_hostile_fake_proc(
        uptime in prop_oneof![".{0,30}", (0.0f64..1e12, 0.0f64..1e12).prop_map(|(a, b)| format!("{a:.2} {b:.2}\n"))],
        loadavg in prop_oneof![".{0,40}", Just("0.52 0.33 0.20 3/210 12345\n".to_string()), "[0-9.e+-]{1,12} [0-9.e+-]{1,12} [0-9.e+-]{1,12}"],
        cpu in (prop::collection::vec(0..PLAUSIBLE, 10), prop::collection::vec(0..PLAUSIBLE, 10)),
        mem in prop::collection::vec(0..PLAUSIBLE, 12),
        junk in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        let cpu_line = |v: &[u64]| format!("cpu  {}\n{STAT_TAIL}", v.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
        std::fs::write(root.join("uptime"), &uptime).expect("uptime");
        std::fs::write(root.join("loadavg"), &loadavg).expect("loadavg");
        std::fs::write(root.join("stat"), cpu_line(&cpu.0)).expect("stat");
        let mem: [u64; 12] = mem.try_into().expect("12 values");
        let mut meminfo = meminfo(&mem).into_bytes();
        meminfo.extend(&junk);
        std::fs::write(root.join("meminfo"), &meminfo).expect("meminfo");
        let mut r = SystemReader::default();
        let _ = r.read(root);
        std::fs::write(root.join("stat"), cpu_line(&cpu.1)).expect("stat");
        let s = r.read(root);
        prop_assert!(s.cpu_pct.iter().all(|p| p.is_finite()), "{:?}", s.cpu_pct);
        std::fs::write(root.join("stat"), &junk).expect("stat");
        let _ = r.read(root);
    }
}

/// Minimal input: a /proc/stat whose `cpu` line holds `18446744073709551615 1`: summing the
/// ticks (`CpuTicks::total`, crates/cli/src/top/system.rs) overflows u64.
#[test]
fn defect_huge_cpu_ticks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("stat"), "cpu  18446744073709551615 1\n").expect("stat");
    let _ = SystemReader::default().read(tmp.path());
}

/// Minimal input: /proc/meminfo with `Buffers: 18446744073709551615 kB` and `Cached: 1 kB`:
/// buff/cache (`parse_meminfo`, crates/cli/src/top/system.rs) overflows u64.
#[test]
fn defect_huge_meminfo_buffers() {
    let _ = parse_meminfo("Buffers: 18446744073709551615 kB\nCached: 1 kB\n");
}
