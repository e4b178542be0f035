//! Parsers of the per-process files psutil's `Process` methods read and no snapshot group
//! carries: what a link of `/proc/PID/fd` or `cwd` names ([`clean_link`], [`socket_inode`]),
//! a descriptor's `fdinfo` ([`parse_fdinfo`], [`open_mode`]), `smaps` one block per mapping
//! ([`parse_smaps`]), the USS/PSS/swap psutil sums from `smaps_rollup` or `smaps`
//! ([`parse_smaps_totals`]), and the socket tables `net/{tcp,tcp6,udp,udp6}`
//! ([`parse_inet_table`]) and `net/unix` ([`parse_unix_table`]).
//!
//! Each follows what psutil 7.2.2 makes of the same bytes, so that a psutil script gets the
//! same values; where psutil raises on a malformed line (a truncated one, a unix socket path
//! with a newline splitting its row), these skip it instead. Pure functions over bytes.

use std::net::IpAddr;

/// The kernel's suffix on a link to a file that was unlinked.
pub const DELETED: &[u8] = b" (deleted)";

/// A path read from a link of /proc (`cwd`, `fd/N`) or a mapping's path, as psutil cleans
/// it: cut at the first NUL (readlink may return garbage after one, psutil issue 717), and
/// without the kernel's " (deleted)" suffix unless a file of that very name (suffix
/// included) `exists`.
pub fn clean_link(raw: &[u8], exists: impl FnOnce(&[u8]) -> bool) -> &[u8] {
    let path = raw.split(|&b| b == 0).next().unwrap_or_default();
    match path.strip_suffix(DELETED) {
        Some(stripped) if !exists(path) => stripped,
        _ => path,
    }
}

/// The inode of a socket from the target of its descriptor's link (`socket:[12345]`).
pub fn socket_inode(link: &[u8]) -> Option<u64> {
    let digits = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    parse_u64(digits, 10)
}

/// A descriptor's position and open flags (octal in the file) from `/proc/PID/fdinfo/FD`
/// (`pos:\t0\nflags:\t0100002\n...`).
pub fn parse_fdinfo(buf: &[u8]) -> Option<(u64, u32)> {
    let mut pos = None;
    let mut flags = None;
    for line in buf.split(|&b| b == b'\n') {
        if let Some(v) = line.strip_prefix(b"pos:") {
            pos = parse_u64(trim(v), 10);
        } else if let Some(v) = line.strip_prefix(b"flags:") {
            flags = parse_u64(trim(v), 8).and_then(|f| u32::try_from(f).ok());
        }
        if pos.is_some() && flags.is_some() {
            break;
        }
    }
    Some((pos?, flags?))
}

/// psutil's `mode` of an open file from its flags: `r`, `w`, `a`, `r+` or `a+`; `None` for
/// an access mode of 3 (a descriptor opened for ioctl only), which psutil has no mode for.
pub fn open_mode(flags: u32) -> Option<&'static str> {
    let append = flags & libc::O_APPEND as u32 != 0;
    Some(match (flags & libc::O_ACCMODE as u32, append) {
        (0, _) => "r",
        (1, false) => "w",
        (1, true) => "a",
        (2, false) => "r+",
        (2, true) => "a+",
        _ => return None,
    })
}

/// The figures of one mapping (or of a group of them), bytes: psutil's `pmmap_grouped`
/// fields after the path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapFigures {
    /// `Rss`.
    pub rss_bytes: u64,
    /// `Size`.
    pub size_bytes: u64,
    /// `Pss`.
    pub pss_bytes: u64,
    /// `Shared_Clean`.
    pub shared_clean_bytes: u64,
    /// `Shared_Dirty`.
    pub shared_dirty_bytes: u64,
    /// `Private_Clean`.
    pub private_clean_bytes: u64,
    /// `Private_Dirty`.
    pub private_dirty_bytes: u64,
    /// `Referenced`.
    pub referenced_bytes: u64,
    /// `Anonymous`.
    pub anonymous_bytes: u64,
    /// `Swap`.
    pub swap_bytes: u64,
}

impl MapFigures {
    /// Adds `other` field by field (psutil's grouping by path), saturating: the figures are
    /// the kernel's (or a fake tree's) numbers, and two hostile `Rss: 18014398509481983 kB`
    /// lines of one path would overflow a plain sum.
    pub fn add(&mut self, o: &MapFigures) {
        let mut mine = self.to_array();
        for (m, x) in mine.iter_mut().zip(o.to_array()) {
            *m = m.saturating_add(x);
        }
        *self = MapFigures::from_array(mine);
    }

    /// The figures from psutil's order ([`MapFigures::to_array`]).
    pub fn from_array(a: [u64; 10]) -> MapFigures {
        let [rss_bytes, size_bytes, pss_bytes, shared_clean_bytes, shared_dirty_bytes, private_clean_bytes, private_dirty_bytes, referenced_bytes, anonymous_bytes, swap_bytes] =
            a;
        MapFigures {
            rss_bytes,
            size_bytes,
            pss_bytes,
            shared_clean_bytes,
            shared_dirty_bytes,
            private_clean_bytes,
            private_dirty_bytes,
            referenced_bytes,
            anonymous_bytes,
            swap_bytes,
        }
    }

    /// The figures in psutil's order.
    pub fn to_array(&self) -> [u64; 10] {
        [
            self.rss_bytes,
            self.size_bytes,
            self.pss_bytes,
            self.shared_clean_bytes,
            self.shared_dirty_bytes,
            self.private_clean_bytes,
            self.private_dirty_bytes,
            self.referenced_bytes,
            self.anonymous_bytes,
            self.swap_bytes,
        ]
    }
}

/// One block of `/proc/PID/smaps`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mapping {
    /// `start-end`, hex, as written.
    pub addr: Vec<u8>,
    /// `rwxp`-style permissions.
    pub perms: Vec<u8>,
    /// The path as written after the inode (the kernel escapes a newline in it as `\012`),
    /// trimmed; empty for an anonymous mapping (psutil calls it `[anon]`). Not yet cleaned
    /// of " (deleted)": see [`clean_link`].
    pub path: Vec<u8>,
    /// Its figures.
    pub figures: MapFigures,
}

/// Every block of `/proc/PID/smaps`, in order. A header is a line whose first word does
/// not end in `:`; a figure line is `Key: N kB`. Lines that are neither (a truncated one)
/// are skipped.
pub fn parse_smaps(buf: &[u8]) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for line in buf.split(|&b| b == b'\n') {
        let mut words = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let Some(first) = words.next() else { continue };
        if let Some(key) = first.strip_suffix(b":") {
            let Some(m) = out.last_mut() else { continue };
            let Some(kib) = words.next().and_then(|v| parse_u64(v, 10)) else {
                continue;
            };
            let bytes = kib.saturating_mul(1024);
            let f = &mut m.figures;
            let slot = match key {
                b"Rss" => &mut f.rss_bytes,
                b"Size" => &mut f.size_bytes,
                b"Pss" => &mut f.pss_bytes,
                b"Shared_Clean" => &mut f.shared_clean_bytes,
                b"Shared_Dirty" => &mut f.shared_dirty_bytes,
                b"Private_Clean" => &mut f.private_clean_bytes,
                b"Private_Dirty" => &mut f.private_dirty_bytes,
                b"Referenced" => &mut f.referenced_bytes,
                b"Anonymous" => &mut f.anonymous_bytes,
                b"Swap" => &mut f.swap_bytes,
                _ => continue,
            };
            *slot = bytes;
        } else {
            out.push(mapping_header(line));
        }
    }
    out
}

/// `addr perms offset dev inode [path]`: the path is everything after the fifth word.
fn mapping_header(line: &[u8]) -> Mapping {
    let mut rest = line;
    let mut words: Vec<&[u8]> = Vec::with_capacity(5);
    while words.len() < 5 {
        rest = trim_start(rest);
        let end = rest
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        words.push(&rest[..end]);
        rest = &rest[end..];
    }
    Mapping {
        addr: words[0].to_vec(),
        perms: words[1].to_vec(),
        path: trim_path(rest).to_vec(),
        figures: MapFigures::default(),
    }
}

/// USS (every `Private_*` line), PSS and swap, bytes, as psutil sums them from
/// `smaps_rollup` (one block) or `smaps` (every block). `SwapPss` and `Pss_*` are not
/// `Pss`/`Swap`.
pub fn parse_smaps_totals(buf: &[u8]) -> (u64, u64, u64) {
    let (mut uss, mut pss, mut swap) = (0u64, 0u64, 0u64);
    for line in buf.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (key, value) = (&line[..colon], &line[colon + 1..]);
        let slot = if key.starts_with(b"Private") {
            &mut uss
        } else if key == b"Pss" {
            &mut pss
        } else if key == b"Swap" {
            &mut swap
        } else {
            continue;
        };
        let digits = trim_start(value);
        let end = digits
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(digits.len());
        if let Some(kib) = parse_u64(&digits[..end], 10) {
            *slot = slot.saturating_add(kib.saturating_mul(1024));
        }
    }
    (uss, pss, swap)
}

/// psutil's `CONN_*` status of a TCP state number (include/net/tcp_states.h); `None` for one
/// psutil has no name for.
pub fn tcp_status(state: u8) -> Option<&'static str> {
    Some(match state {
        0x01 => "ESTABLISHED",
        0x02 => "SYN_SENT",
        0x03 => "SYN_RECV",
        0x04 => "FIN_WAIT1",
        0x05 => "FIN_WAIT2",
        0x06 => "TIME_WAIT",
        0x07 => "CLOSE",
        0x08 => "CLOSE_WAIT",
        0x09 => "LAST_ACK",
        0x0A => "LISTEN",
        0x0B => "CLOSING",
        _ => return None,
    })
}

/// One row of `net/tcp`, `net/tcp6`, `net/udp` or `net/udp6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InetRow {
    /// Local address; `None` for port 0 (psutil's empty tuple).
    pub local: Option<(IpAddr, u16)>,
    /// Remote address; `None` for port 0.
    pub remote: Option<(IpAddr, u16)>,
    /// The `st` column (a TCP state number).
    pub state: u8,
    /// The socket's inode.
    pub inode: u64,
}

/// Every row of an inet socket table (the first line is the header). Unlike `net/unix`, no
/// byte of these tables is chosen by a user: every column is a number the kernel formats
/// (`tcp4_seq_show`, `udp4_format_sock` and their IPv6 twins print addresses, ports, states,
/// queues, uid and inode with `%08X`/`%04X`/`%lu`-style conversions, no name or path), so a
/// row cannot be forged by a socket's owner and the table is read as it is. A row is `sl local
/// remote st tx:rx tr:when retrnsmt uid timeout inode ...`; an address is the IP as the
/// kernel holds it (network byte order) printed as 32-bit words in the host's byte order,
/// then `:` and the port in hex. A row without ten words or with an address that does not
/// parse is skipped.
pub fn parse_inet_table(buf: &[u8]) -> Vec<InetRow> {
    buf.split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| {
            let w: Vec<&[u8]> = line
                .split(|b| b.is_ascii_whitespace())
                .filter(|w| !w.is_empty())
                .take(10)
                .collect();
            if w.len() < 10 {
                return None;
            }
            Some(InetRow {
                local: inet_address(w[1])?,
                remote: inet_address(w[2])?,
                state: u8::try_from(parse_u64(w[3], 16)?).ok()?,
                inode: parse_u64(w[9], 10)?,
            })
        })
        .collect()
}

/// `0100007F:1F90` -> `Some((127.0.0.1, 8080))`; port 0 -> `Some(None)`; garbage -> `None`
/// (the address parsed as [`crate::net`] parses the TCP table's).
#[allow(clippy::option_option)]
fn inet_address(field: &[u8]) -> Option<Option<(IpAddr, u16)>> {
    let a = crate::net::parse_address(field)?;
    // psutil: "this usually refers to a local socket in listen mode with no end-points
    // connected": an address of port 0 is an empty tuple, whatever its IP.
    Some((a.port() != 0).then_some((a.ip(), a.port())))
}

/// An IP as text the way psutil prints it (glibc's `inet_ntop`): as Rust prints it, except an
/// IPv4-compatible IPv6 address (`::1.2.3.4`: 96 zero bits, then anything but `0.0.0.x`),
/// which glibc writes with its IPv4 part dotted.
pub fn ip_text(ip: IpAddr) -> String {
    if let IpAddr::V6(v6) = ip {
        let s = v6.segments();
        if s[..6].iter().all(|&w| w == 0) && s[6] != 0 {
            let [a, b, c, d] = v6.octets()[12..16] else {
                unreachable!("16 octets")
            };
            return format!("::{a}.{b}.{c}.{d}");
        }
    }
    ip.to_string()
}

/// One row of `net/unix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnixRow {
    /// The socket type (`SOCK_STREAM` 1, `SOCK_DGRAM` 2, `SOCK_SEQPACKET` 5).
    pub kind: u32,
    /// The socket's inode.
    pub inode: u64,
    /// Its path as psutil takes it: the last word of a row of exactly eight words, else
    /// empty (an unnamed socket; a path with a space in it, which psutil cannot tell from
    /// the row's other words). An abstract name starts with `@`.
    pub path: Vec<u8>,
}

#[cfg(test)]
impl UnixRow {
    /// `rows` as (type, inode, path), for a test to compare.
    pub(crate) fn triples(rows: &[UnixRow]) -> Vec<(u32, u64, &[u8])> {
        rows.iter()
            .map(|r| (r.kind, r.inode, r.path.as_slice()))
            .collect()
    }
}

/// Every row of `net/unix` (`Num RefCount Protocol Flags Type St Inode [Path]`, the first
/// line the header) that can be trusted. Only a fallback: [`crate::unix_diag`] asks the
/// kernel instead, and a caller reads this table only when sock_diag is not there.
///
/// The kernel writes a path's bytes as they are, so whoever binds a socket writes lines of
/// this file: a newline in a name splits its row (the rows that makes with fewer than seven
/// words are skipped), and a name can hold a whole well-formed row naming another socket's
/// inode with a path of the binder's choosing. Such a row cannot be told from a real one
/// by its text; what gives it away is that the socket it names has its own row too. So
/// every row of an inode that appears more than once is refused: a socket is listed with
/// its one row, or not at all (a forged row for an inode that is no unix socket's cannot be
/// told from a real one here; sock_diag has no such rows).
pub fn parse_unix_table(buf: &[u8]) -> Vec<UnixRow> {
    let rows: Vec<UnixRow> = buf
        .split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| {
            let w: Vec<&[u8]> = line
                .split(|b| b.is_ascii_whitespace())
                .filter(|w| !w.is_empty())
                .collect();
            if w.len() < 7 {
                return None;
            }
            Some(UnixRow {
                kind: u32::try_from(parse_u64(w[4], 16)?).ok()?,
                inode: parse_u64(w[6], 10)?,
                path: if w.len() == 8 {
                    w[7].to_vec()
                } else {
                    Vec::new()
                },
            })
        })
        .collect();
    let mut times: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for r in &rows {
        let n = times.entry(r.inode).or_default();
        *n = n.saturating_add(1);
    }
    rows.into_iter()
        .filter(|r| times.get(&r.inode) == Some(&1))
        .collect()
}

fn parse_u64(digits: &[u8], radix: u32) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, radix).ok()
}

fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

fn trim_start(b: &[u8]) -> &[u8] {
    b.trim_ascii_start()
}

/// Python's `str.strip()` for the ASCII characters it strips (whitespace and the separators
/// 0x1c-0x1f).
fn trim_path(b: &[u8]) -> &[u8] {
    let strip = |c: &u8| c.is_ascii_whitespace() || (0x1c..=0x1f).contains(c) || *c == 0x0b;
    let start = b.iter().position(|c| !strip(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !strip(c)).map_or(start, |e| e + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two blocks copied from this machine's /proc/self/smaps, the second's path changed
    /// to one with spaces and a " (deleted)" suffix, then an anonymous block, a truncated
    /// figure line and a truncated header.
    const SMAPS: &[u8] =
        b"55f6ca2f0000-55f6ca2f3000 r--p 00000000 fe:00 247741                     /usr/bin/sed\n\
Size:                 12 kB\n\
KernelPageSize:        4 kB\n\
MMUPageSize:           4 kB\n\
Rss:                  12 kB\n\
Pss:                  12 kB\n\
Pss_Dirty:             0 kB\n\
Shared_Clean:          0 kB\n\
Shared_Dirty:          0 kB\n\
Private_Clean:        12 kB\n\
Private_Dirty:         0 kB\n\
Referenced:           12 kB\n\
Anonymous:             0 kB\n\
KSM:                   0 kB\n\
LazyFree:              0 kB\n\
AnonHugePages:         0 kB\n\
ShmemPmdMapped:        0 kB\n\
FilePmdMapped:         0 kB\n\
Shared_Hugetlb:        0 kB\n\
Private_Hugetlb:       0 kB\n\
Swap:                  0 kB\n\
SwapPss:               0 kB\n\
Locked:                0 kB\n\
THPeligible:           0\n\
VmFlags: rd mr mw me \n\
7f0000000000-7f0000004000 rw-s 00000000 00:01 9        /dev/shm/a b\\012c (deleted)\n\
Size:                 16 kB\n\
Rss:                   8 kB\n\
Pss:                   4 kB\n\
Shared_Clean:          0 kB\n\
Shared_Dirty:          8 kB\n\
Private_Clean:         0 kB\n\
Private_Dirty:         0 kB\n\
Referenced:            8 kB\n\
Anonymous:             0 kB\n\
Swap:                  0 kB\n\
7ffe0000000-7ffe0021000 rw-p 00000000 00:00 0 \n\
Size:                132 kB\n\
Rss:                  \n\
Anonymous:            20 kB\n\
Swap:                  4 kB\n\
7fff0000000-7fff00";

    #[test]
    fn smaps_blocks_keep_their_paths_and_figures() {
        let maps = parse_smaps(SMAPS);
        assert_eq!(maps.len(), 4);
        assert_eq!(maps[0].addr, b"55f6ca2f0000-55f6ca2f3000");
        assert_eq!(maps[0].perms, b"r--p");
        assert_eq!(maps[0].path, b"/usr/bin/sed");
        assert_eq!(
            maps[0].figures.to_array(),
            [12, 12, 12, 0, 0, 12, 0, 12, 0, 0].map(|k| k * 1024)
        );
        assert_eq!(maps[1].path, b"/dev/shm/a b\\012c (deleted)");
        assert_eq!(maps[1].figures.shared_dirty_bytes, 8192);
        assert_eq!(maps[2].path, b"");
        assert_eq!(maps[2].figures.rss_bytes, 0, "a truncated line is skipped");
        assert_eq!(maps[2].figures.anonymous_bytes, 20 * 1024);
        assert_eq!(maps[2].figures.swap_bytes, 4 * 1024);
        assert_eq!(maps[3].addr, b"7fff0000000-7fff00");
        assert_eq!(maps[3].path, b"");
        assert!(parse_smaps(b"").is_empty());
        assert!(
            parse_smaps(b"Rss: 4 kB\n").is_empty(),
            "figures before a header"
        );
        for cut in 0..SMAPS.len() {
            let _ = parse_smaps(&SMAPS[..cut]);
        }
    }

    #[test]
    fn totals_sum_private_pss_and_swap_as_psutil() {
        // This machine's /proc/self/smaps_rollup.
        let rollup =
            b"55a403c96000-7ffe87afa000 ---p 00000000 00:00 0                          [rollup]\n\
Rss:                1612 kB\nPss:                 257 kB\nPss_Dirty:           112 kB\n\
Pss_Anon:            112 kB\nPss_File:            145 kB\nPss_Shmem:             0 kB\n\
Shared_Clean:       1460 kB\nShared_Dirty:          0 kB\nPrivate_Clean:        40 kB\n\
Private_Dirty:       112 kB\nReferenced:         1612 kB\nAnonymous:           112 kB\n\
KSM:                   0 kB\nLazyFree:              0 kB\nAnonHugePages:         0 kB\n\
ShmemPmdMapped:        0 kB\nFilePmdMapped:         0 kB\nShared_Hugetlb:        0 kB\n\
Private_Hugetlb:       3 kB\nSwap:                  7 kB\nSwapPss:               5 kB\n\
Locked:                0 kB\n";
        assert_eq!(
            parse_smaps_totals(rollup),
            ((40 + 112 + 3) * 1024, 257 * 1024, 7 * 1024)
        );
        // smaps: summed over blocks.
        assert_eq!(parse_smaps_totals(SMAPS), (12 * 1024, 16 * 1024, 4 * 1024));
        assert_eq!(parse_smaps_totals(b""), (0, 0, 0));
        assert_eq!(parse_smaps_totals(b"Pss: x kB\nSwap:"), (0, 0, 0));
    }

    #[test]
    fn links_are_cleaned_as_psutil_does() {
        assert_eq!(clean_link(b"/tmp/x (deleted)", |_| false), b"/tmp/x");
        assert_eq!(
            clean_link(b"/tmp/x (deleted)", |p| p == b"/tmp/x (deleted)"),
            b"/tmp/x (deleted)"
        );
        assert_eq!(clean_link(b"/a\0garbage (deleted)", |_| false), b"/a");
        assert_eq!(clean_link(b"/\xff\xfe", |_| false), b"/\xff\xfe");
        assert_eq!(clean_link(b"", |_| false), b"");
        assert_eq!(socket_inode(b"socket:[71891267]"), Some(71891267));
        assert_eq!(socket_inode(b"socket:[]"), None);
        assert_eq!(socket_inode(b"pipe:[12]"), None);
        assert_eq!(socket_inode(b"socket:[12"), None);
    }

    #[test]
    fn fdinfo_gives_position_and_flags() {
        // This machine's /proc/self/fdinfo/0.
        let real = b"pos:\t0\nflags:\t0100000\nmnt_id:\t24\nino:\t3\n";
        assert_eq!(parse_fdinfo(real), Some((0, 0o100000)));
        assert_eq!(
            parse_fdinfo(b"pos:\t4096\nflags:\t02102002\nmnt_id:\t31\n"),
            Some((4096, 0o2102002))
        );
        assert_eq!(parse_fdinfo(b"pos:\t1\n"), None);
        assert_eq!(parse_fdinfo(b"pos:\t1\nflags:\t9\n"), None, "not octal");
        assert_eq!(open_mode(0o100000), Some("r"));
        assert_eq!(open_mode(0o100001), Some("w"));
        assert_eq!(open_mode(0o102001), Some("a"));
        assert_eq!(open_mode(0o100002), Some("r+"));
        assert_eq!(open_mode(0o102002), Some("a+"));
        assert_eq!(open_mode(3), None);
    }

    #[test]
    fn inet_tables_give_addresses_states_and_inodes() {
        // This machine's /proc/net/tcp6 (a listener on ::1) and /proc/net/udp.
        let tcp6 = b"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000000000000000000001000000:B6B3 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 71891267 1 00000000c2a439ab 100 0 0 10 0\n";
        let rows = parse_inet_table(tcp6);
        assert_eq!(rows.len(), 1);
        let (ip, port) = rows[0].local.expect("test");
        if cfg!(target_endian = "little") {
            assert_eq!(ip_text(ip), "::1");
        }
        assert_eq!(port, 0xB6B3);
        assert_eq!(rows[0].remote, None);
        assert_eq!(tcp_status(rows[0].state), Some("LISTEN"));
        assert_eq!(rows[0].inode, 71891267);

        let udp = b"   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops            \n\
14660: 0100007F:CF28 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 71891268 2 00000000f39a120c 0      \n\
14661: 0100007F:CF2\n";
        let rows = parse_inet_table(udp);
        assert_eq!(rows.len(), 1, "a truncated row is skipped");
        if cfg!(target_endian = "little") {
            assert_eq!(ip_text(rows[0].local.expect("test").0), "127.0.0.1");
        }
        assert_eq!(rows[0].state, 7);
        for cut in 0..udp.len() {
            let _ = parse_inet_table(&udp[..cut]);
        }
        assert_eq!(tcp_status(0x0C), None);
    }

    #[test]
    fn ip_text_matches_inet_ntop() {
        let t = |s: &str| ip_text(s.parse().expect("test"));
        assert_eq!(t("::ffff:127.0.0.1"), "::ffff:127.0.0.1");
        assert_eq!(t("::1.2.3.4"), "::1.2.3.4");
        assert_eq!(t("::1"), "::1");
        assert_eq!(t("::"), "::");
        assert_eq!(t("fe80::1:0:0:2"), "fe80::1:0:0:2");
        assert_eq!(t("10.0.0.5"), "10.0.0.5");
    }

    #[test]
    fn unix_rows_keep_type_inode_and_path() {
        // This machine's /proc/net/unix header and an unnamed row, then rows in the
        // kernel's format with a path, an abstract name, a path with a space and one with a
        // newline (which splits the row).
        let unix = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
000000002c03658f: 00000003 00000000 00000000 0001 03 71889417\n\
0000000012345678: 00000002 00000000 00010000 0001 01 5551 /run/a.sock\n\
0000000012345679: 00000002 00000000 00000000 0002 01 5552 @abstract\xff\n\
000000001234567a: 00000002 00000000 00010000 0005 01 5553 /run/a b\n\
000000001234567b: 00000002 00000000 00010000 0001 01 5554 /run/new\nline b\n";
        let rows = parse_unix_table(unix);
        assert_eq!(
            UnixRow::triples(&rows),
            vec![
                (1, 71889417, &b""[..]),
                (1, 5551, b"/run/a.sock"),
                (2, 5552, b"@abstract\xff"),
                (5, 5553, b""),
                (1, 5554, b"/run/new"),
            ]
        );
        for cut in 0..unix.len() {
            let _ = parse_unix_table(&unix[..cut]);
        }
    }

    /// The forged row of the review: an abstract name holding a newline and a well-formed
    /// row that names another socket's inode (5551) with a path of the binder's choosing.
    #[test]
    fn a_row_forged_by_a_socket_name_is_refused_with_the_row_it_copies() {
        let unix = b"Num       RefCount Protocol Flags    Type St Inode Path\n\
0000000012345678: 00000002 00000000 00010000 0001 01 5551 /run/victim.sock\n\
0000000012345679: 00000002 00000000 00000000 0002 01 6001 @e\n\
0000000000000000: 00000002 00000000 00010000 0001 01 5551 /forged/path\n\
000000001234567a: 00000002 00000000 00010000 0001 01 5553 /run/other.sock\n";
        let rows = parse_unix_table(unix);
        assert!(!rows.iter().any(|r| r.path == b"/forged/path"), "{rows:?}");
        assert!(rows.iter().all(|r| r.inode != 5551), "{rows:?}");
        let inodes: Vec<u64> = rows.iter().map(|r| r.inode).collect();
        assert_eq!(inodes, vec![6001, 5553]);
    }

    /// Sums of hostile figures saturate instead of overflowing (a panic in a debug build).
    #[test]
    fn figures_add_up_saturating() {
        let huge = parse_smaps(
            b"1000-2000 r--p 00000000 00:00 0 /x\nRss: 18014398509481983 kB\nSwap: 99999999999999999999 kB\n",
        );
        assert_eq!(huge[0].figures.rss_bytes, 18014398509481983 * 1024);
        assert_eq!(huge[0].figures.swap_bytes, 0, "beyond u64: not a number");
        let mut sum = huge[0].figures;
        sum.add(&huge[0].figures);
        assert_eq!(sum.rss_bytes, u64::MAX);
        assert_eq!(MapFigures::from_array(sum.to_array()), sum);
        assert_eq!(
            parse_smaps_totals(b"Private_Dirty: 18446744073709551615 kB\nPrivate_Clean: 1 kB\n").0,
            u64::MAX
        );
    }
}
