//! Property tests of the loadgen library's `/proc/<pid>/stat` parser ([`parse_stat`]) and
//! of [`kernel_comm`]: no input panics (arbitrary bytes, truncated and oversized lines, huge
//! and negative numbers), and a real Linux 6.18 line with its comm replaced by a hostile one
//! (`(`, `)`, spaces, newlines, invalid UTF-8, up to 64 bytes) or its pid, state, ppid and
//! pgrp replaced by random values parses back to them: the comm ends at the *last* `)`.
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use proptest::prelude::*;
use tasksnap_loadgen::{kernel_comm, parse_stat, ProcStat, TASK_COMM_LEN};

// Real lines from Linux 6.18: `cat` reading its own stat, and kthreadd.
const CAT: &[u8] = b"7817 (cat) R 7814 7814 8054 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 56536 3133440 384 18446744073709551615 94012467380224 94012467400105 140723751615824 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94012467416112 94012467417728 94013385617408 140723751619267 140723751619287 140723751619287 140723751620587 0\n";
const KTHREADD: &[u8] = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 13 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

fn hostile_comm() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"() \n\t)(x1-:/Z".to_vec()),
        1 => 1u8..=255,
    ];
    prop::collection::vec(byte, 0..=64)
}

/// A stat line with the given leading fields, the rest taken from the real `cat` line.
fn line(pid: i32, comm: &[u8], state: u8, ppid: i32, pgrp: i32) -> Vec<u8> {
    let close = CAT.iter().rposition(|&c| c == b')').expect(")");
    let rest = std::str::from_utf8(&CAT[close + 2..]).expect("utf8");
    let tail: Vec<&str> = rest.split(' ').skip(3).collect();
    let mut out = format!("{pid} (").into_bytes();
    out.extend_from_slice(comm);
    out.extend_from_slice(b") ");
    out.push(state);
    out.extend_from_slice(format!(" {ppid} {pgrp} ").as_bytes());
    out.extend_from_slice(tail.join(" ").as_bytes());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_stat(&buf);
    }

    #[test]
    fn round_trips_with_a_hostile_comm(
        pid in any::<i32>(),
        comm in hostile_comm(),
        state in prop::sample::select(b"RSDTtXZPI".to_vec()),
        ppid in any::<i32>(),
        pgrp in any::<i32>(),
    ) {
        let l = line(pid, &comm, state, ppid, pgrp);
        let want = ProcStat { pid, comm: comm.clone(), state: char::from(state), ppid, pgrp };
        prop_assert_eq!(parse_stat(&l), Some(want), "{:?}", String::from_utf8_lossy(&l));
    }

    #[test]
    fn real_lines_with_a_hostile_comm(which in 0..2usize, comm in hostile_comm()) {
        let real = [CAT, KTHREADD][which];
        let open = real.iter().position(|&c| c == b'(').expect("(");
        let close = real.iter().rposition(|&c| c == b')').expect(")");
        let mut l = real[..=open].to_vec();
        l.extend_from_slice(&comm);
        l.extend_from_slice(&real[close..]);
        let want = ProcStat { comm, ..parse_stat(real).expect("real line") };
        prop_assert_eq!(parse_stat(&l), Some(want));
    }

    /// Truncated anywhere, or with huge, negative or junk numbers in the leading fields,
    /// or with thousands of extra fields: no panic.
    #[test]
    fn truncated_oversized_and_hostile_numbers(
        comm in hostile_comm(),
        cut in any::<prop::sample::Index>(),
        toks in prop::collection::vec(prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            "[0-9]{10,40}",
            "-[0-9]{1,40}",
            "[0-9a-z+-]{1,6}",
        ], 3),
        extra in 0usize..3000,
    ) {
        let l = line(1, &comm, b'S', 1, 1);
        let cut = cut.index(l.len() + 1);
        let _ = parse_stat(&l[..cut]);
        let mut hostile = b"1 (".to_vec();
        hostile.extend_from_slice(&comm);
        hostile.extend_from_slice(format!(") S {} {} {}", toks[0], toks[1], toks[2]).as_bytes());
        let r = parse_stat(&hostile);
        if let (Ok(ppid), Ok(pgrp)) = (toks[0].parse::<i32>(), toks[1].parse::<i32>()) {
            prop_assert_eq!(r.map(|s| (s.ppid, s.pgrp)), Some((ppid, pgrp)));
        } else {
            prop_assert!(r.is_none(), "{:?} {:?}", toks, r);
        }
        let mut big = l.clone();
        big.pop();
        big.extend(std::iter::repeat_n(b" 18446744073709551616", extra).flatten());
        prop_assert_eq!(parse_stat(&big).map(|s| s.comm), Some(comm));
    }

    #[test]
    fn kernel_comm_keeps_the_first_15_bytes(name in ".{0,40}") {
        let c = kernel_comm(&name);
        prop_assert!(c.len() < TASK_COMM_LEN);
        prop_assert!(name.as_bytes().starts_with(&c));
        prop_assert_eq!(c.len(), name.len().min(TASK_COMM_LEN - 1));
    }
}
