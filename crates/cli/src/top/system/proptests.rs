//! Property test of `top`'s whole header read ([`SystemReader::read`]) over a fake /proc of
//! hostile files (uptime, loadavg, stat, meminfo): no input panics, percentages are finite.
//! The parsers it goes through are tasksnap-procfs's, property-tested there
//! (crates/procfs/tests/proptest_system.rs).
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;

#[path = "../../../../procfs/tests/strategies/mod.rs"]
mod strategies;
use strategies::{cases, meminfo, PLAUSIBLE, STAT_TAIL};

use super::SystemReader;
use tasksnap_collect::{Host, HostOptions};

/// A host over the tree at `root`.
fn host(root: &std::path::Path) -> Host {
    Host::open(HostOptions {
        proc_root: root.to_path_buf(),
        ..HostOptions::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

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
        let h = host(root);
        let _ = r.read(&h);
        std::fs::write(root.join("stat"), cpu_line(&cpu.1)).expect("stat");
        let s = r.read(&h);
        prop_assert!(s.cpu_pct.iter().all(|p| p.is_finite()), "{:?}", s.cpu_pct);
        std::fs::write(root.join("stat"), &junk).expect("stat");
        let _ = r.read(&h);
    }
}

/// Minimal input: a /proc/stat whose `cpu` line holds `18446744073709551615 1`: summing the
/// ticks (`CpuTicks::total`, crates/model/src/system.rs) overflows u64.
#[test]
fn defect_huge_cpu_ticks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("stat"), "cpu  18446744073709551615 1\n").expect("stat");
    let _ = SystemReader::default().read(&host(tmp.path()));
}
