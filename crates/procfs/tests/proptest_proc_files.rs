//! Property tests of `tasksnap_procfs::proc_files` (fdinfo, smaps, the socket tables): no
//! input panics (arbitrary bytes, real files cut anywhere), inet rows generated from random
//! addresses, ports, states and inodes parse back to them, and an smaps block whose path is
//! any bytes but a newline keeps that path and its figures.
//!
//! `PROPTEST_CASES` overrides the case count (512 by default here).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

mod strategies;
use strategies::config;
use tasksnap_procfs::proc_files::{
    clean_link, parse_fdinfo, parse_inet_table, parse_smaps, parse_smaps_totals, parse_unix_table,
    socket_inode,
};

/// This machine's /proc/net/tcp header (Linux 6.18).
const TCP_HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

/// An address as the kernel prints it: the IP's 32-bit words in the host's byte order.
fn kernel_address(ip: IpAddr, port: u16) -> String {
    let words: Vec<String> = match ip {
        IpAddr::V4(v4) => vec![format!("{:08X}", u32::from_ne_bytes(v4.octets()))],
        IpAddr::V6(v6) => v6
            .octets()
            .chunks(4)
            .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
    };
    format!("{}:{port:04X}", words.concat())
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|o| IpAddr::V4(Ipv4Addr::from(o))),
        any::<[u8; 16]>().prop_map(|o| IpAddr::V6(Ipv6Addr::from(o))),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_input_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_fdinfo(&bytes);
        let _ = parse_smaps(&bytes);
        let _ = parse_smaps_totals(&bytes);
        let _ = parse_inet_table(&bytes);
        let _ = parse_unix_table(&bytes);
        let _ = socket_inode(&bytes);
        let _ = clean_link(&bytes, |_| false);
    }

    #[test]
    fn inet_rows_parse_back(
        rows in proptest::collection::vec((ip(), any::<u16>(), any::<u16>(), 1u8..=0x0B, any::<u64>()), 0..20)
    ) {
        let mut table = TCP_HEADER.to_string();
        for (i, (addr, lport, rport, state, inode)) in rows.iter().enumerate() {
            // Both ends of a row are of one family.
            let remote = match addr {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            };
            table += &format!(
                "{i:4}: {} {} {state:02X} 00000000:00000000 00:00000000 00000000     0        0 {inode} 1 0000000000000000 100 0 0 10 0\n",
                kernel_address(*addr, *lport),
                kernel_address(remote, *rport),
            );
        }
        let got = parse_inet_table(table.as_bytes());
        prop_assert_eq!(got.len(), rows.len());
        for (g, (addr, lport, rport, state, inode)) in got.iter().zip(&rows) {
            prop_assert_eq!(g.local, (*lport != 0).then_some((*addr, *lport)));
            prop_assert_eq!(g.remote.map(|r| r.1), (*rport != 0).then_some(*rport));
            prop_assert_eq!(g.state, *state);
            prop_assert_eq!(g.inode, *inode);
        }
        // Cut anywhere: never a panic, never more rows.
        for cut in (0..table.len()).step_by(7) {
            prop_assert!(parse_inet_table(&table.as_bytes()[..cut]).len() <= rows.len());
        }
    }

    #[test]
    fn smaps_paths_are_any_bytes_but_a_newline(
        path in proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..64),
        rss_kib in 0u64..1 << 40,
    ) {
        let mut block = b"7f0000000000-7f0000004000 rw-p 00000000 00:01 9        ".to_vec();
        block.extend_from_slice(&path);
        block.extend_from_slice(format!("\nSize:                 16 kB\nRss:    {rss_kib} kB\nVmFlags: rd wr\n").as_bytes());
        let maps = parse_smaps(&block);
        // A path that is only blanks is an anonymous mapping; otherwise it is kept, trimmed.
        let trimmed: &[u8] = {
            let strip = |c: &u8| c.is_ascii_whitespace() || (0x1c..=0x1f).contains(c) || *c == 0x0b;
            let s = path.iter().position(|c| !strip(c)).unwrap_or(path.len());
            let e = path.iter().rposition(|c| !strip(c)).map_or(s, |e| e + 1);
            &path[s..e]
        };
        prop_assert_eq!(maps.len(), 1);
        prop_assert_eq!(&maps[0].path[..], trimmed);
        prop_assert_eq!(maps[0].figures.rss_bytes, rss_kib * 1024);
        prop_assert_eq!(maps[0].figures.size_bytes, 16 * 1024);
    }
}
