//! Property tests of the parsers psutil's host figures read: every field of the CPU lines
//! (`parse_cpu_line_full`, `parse_cpu_lines_full`), the meminfo fields psutil uses
//! (`parse_meminfo_fields`), zoneinfo's watermarks, cpuinfo's cores, sysfs CPU lists, and
//! utmp records. No input panics; real 6.18 layouts with random values parse back to them.
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;
use tasksnap_procfs::system::{
    parse_cpu_line_full, parse_cpu_lines_full, parse_cpu_list_count, parse_cpuinfo_cores,
    parse_meminfo_fields, parse_zoneinfo_low_pages,
};
use tasksnap_procfs::utmp;

mod strategies;
use strategies::{cases, meminfo, PLAUSIBLE, STAT_TAIL};

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn never_panic_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..2000),
        lines in prop::collection::vec("(cpu |cpu0 |MemTotal: |Inactive: |  low |physical id\t: |cpu cores\t: |)[ 0-9a-z:,\t-]{0,40}", 0..12),
    ) {
        let joined = lines.join("\n");
        for b in [&bytes[..], joined.as_bytes()] {
            let _ = parse_cpu_line_full(b);
            let _ = parse_cpu_lines_full(b);
            let _ = parse_meminfo_fields(b);
            let _ = parse_zoneinfo_low_pages(b);
            let _ = parse_cpuinfo_cores(b);
            let _ = parse_cpu_list_count(b);
            let _ = utmp::parse_records(b);
        }
    }

    #[test]
    fn cpu_lines_round_trip(v in prop::collection::vec(any::<u64>(), 7..=10)) {
        let stat = format!("cpu  {}\n{STAT_TAIL}", v.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
        let c = parse_cpu_line_full(stat.as_bytes()).expect("cpu line");
        prop_assert_eq!(c.fields, v.len());
        prop_assert_eq!(&c.values()[..v.len()], &v[..]);
        prop_assert!(c.values()[v.len()..].iter().all(|&x| x == 0));
        prop_assert_eq!(parse_cpu_lines_full(stat.as_bytes()).len(), 2);
    }

    #[test]
    fn meminfo_fields_round_trip(v in prop::collection::vec(0..PLAUSIBLE, 12)) {
        let v: [u64; 12] = v.try_into().expect("12 values");
        let m = parse_meminfo_fields(meminfo(&v).as_bytes());
        prop_assert_eq!(
            (m.total_kib, m.free_kib, m.available_kib, m.buffers_kib, m.cached_kib),
            (Some(v[0]), Some(v[1]), Some(v[2]), Some(v[3]), Some(v[4]))
        );
        prop_assert_eq!(
            (m.active_kib, m.inactive_kib, m.swap_total_kib, m.swap_free_kib),
            (Some(v[6]), Some(v[7]), Some(v[8]), Some(v[9]))
        );
        prop_assert_eq!((m.slab_reclaimable_kib, m.shmem_kib, m.slab_kib), (Some(v[10]), Some(v[11]), None));
    }

    #[test]
    fn zoneinfo_and_cpu_lists_round_trip(lows in prop::collection::vec(0..PLAUSIBLE, 0..6), ranges in prop::collection::vec((0u64..4096, 0u64..64), 1..6)) {
        let zones: String = lows
            .iter()
            .enumerate()
            .map(|(i, l)| format!("Node 0, zone Z{i}\n  pages free     3840\n        min      10\n        low      {l}\n        high     16\n"))
            .collect();
        prop_assert_eq!(parse_zoneinfo_low_pages(zones.as_bytes()), lows.iter().sum::<u64>());
        let list: Vec<String> = ranges.iter().map(|&(a, n)| if n == 0 { a.to_string() } else { format!("{a}-{}", a + n) }).collect();
        let want: u64 = ranges.iter().map(|&(_, n)| n + 1).sum();
        prop_assert_eq!(parse_cpu_list_count(format!("{}\n", list.join(",")).as_bytes()), Some(want));
    }

    #[test]
    fn utmp_records_round_trip(
        recs in prop::collection::vec((any::<i16>(), any::<i32>(), prop::collection::vec(1u8..=255, 0..=32), prop::collection::vec(1u8..=255, 0..=32), prop::collection::vec(1u8..=255, 0..=256), any::<i32>()), 0..8),
        torn in 0usize..utmp::RECORD_BYTES,
    ) {
        let mut file = Vec::new();
        for (kind, pid, line, user, host, sec) in &recs {
            let mut r = vec![0u8; utmp::RECORD_BYTES];
            r[0..2].copy_from_slice(&kind.to_ne_bytes());
            r[4..8].copy_from_slice(&pid.to_ne_bytes());
            r[8..8 + line.len()].copy_from_slice(line);
            r[44..44 + user.len()].copy_from_slice(user);
            r[76..76 + host.len()].copy_from_slice(host);
            r[340..344].copy_from_slice(&sec.to_ne_bytes());
            file.extend(r);
        }
        file.extend(vec![7u8; torn]);
        let got = utmp::parse_records(&file);
        prop_assert_eq!(got.len(), recs.len());
        for (g, (kind, pid, line, user, host, sec)) in got.iter().zip(&recs) {
            prop_assert_eq!((g.kind, g.pid, g.time_s), (*kind, *pid, *sec));
            prop_assert_eq!((&g.line, &g.user, &g.host), (line, user, host));
        }
        let users = utmp::parse_user_sessions(&file);
        prop_assert_eq!(users.len(), recs.iter().filter(|r| r.0 == utmp::USER_PROCESS).count());
    }
}
