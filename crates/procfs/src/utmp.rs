//! utmp records (`/var/run/utmp`): who is logged in, as glibc's `getutxent(3)` reads the
//! file and psutil's `users()` reports it. A pure parser over the file's bytes; the file is
//! hostile input like /proc (strings are not NUL-terminated when full, any byte may be
//! there, a torn record may end it).
//!
//! The layout is glibc's `struct utmp` on 64-bit Linux (x86_64, aarch64, and every other
//! 64-bit glibc port with `__WORDSIZE_TIME64_COMPAT32`): 384 bytes, the time as two 32-bit
//! fields so 32- and 64-bit programs share the file. Native byte order, as written.

/// The size of one record, bytes.
pub const RECORD_BYTES: usize = 384;

/// `ut_type` of a user's login session (`USER_PROCESS` in `<utmp.h>`).
pub const USER_PROCESS: i16 = 7;

/// One utmp record, the fields a login listing needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `ut_type` (`USER_PROCESS` = 7, `BOOT_TIME` = 2, `DEAD_PROCESS` = 8...).
    pub kind: i16,
    /// `ut_pid`: the login process.
    pub pid: i32,
    /// `ut_line`: the terminal, without `/dev/` (`pts/3`), up to its first NUL (32 bytes).
    pub line: Vec<u8>,
    /// `ut_user`: the user name, up to its first NUL (32 bytes).
    pub user: Vec<u8>,
    /// `ut_host`: the remote host (or X display), up to its first NUL (256 bytes).
    pub host: Vec<u8>,
    /// `ut_tv.tv_sec`: when the entry was made, seconds since the epoch (a signed 32-bit
    /// field: the file format's own Y2038 limit).
    pub time_s: i32,
}

// Offsets in glibc's struct utmp (bits/utmp.h): ut_type i16 at 0 (2 bytes padding), ut_pid
// i32 at 4, ut_line [32] at 8, ut_id [4] at 40, ut_user [32] at 44, ut_host [256] at 76,
// ut_exit {i16, i16} at 332, ut_session i32 at 336, ut_tv {i32, i32} at 340, ut_addr_v6
// [i32; 4] at 348, 20 bytes unused to 384.
const LINE: std::ops::Range<usize> = 8..40;
const USER: std::ops::Range<usize> = 44..76;
const HOST: std::ops::Range<usize> = 76..332;
const TV_SEC: usize = 340;

fn cstr(field: &[u8]) -> Vec<u8> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    field[..end].to_vec()
}

/// Every whole record of a utmp file, in file order; a torn record at the end is left out,
/// as glibc's reader stops at a short read.
pub fn parse_records(bytes: &[u8]) -> Vec<Record> {
    bytes
        .chunks_exact(RECORD_BYTES)
        .map(|r| {
            let i16_at = |at: usize| i16::from_ne_bytes([r[at], r[at + 1]]);
            let i32_at = |at: usize| i32::from_ne_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
            Record {
                kind: i16_at(0),
                pid: i32_at(4),
                line: cstr(&r[LINE]),
                user: cstr(&r[USER]),
                host: cstr(&r[HOST]),
                time_s: i32_at(TV_SEC),
            }
        })
        .collect()
}

/// The users' login sessions of a utmp file (`USER_PROCESS` records), in file order.
pub fn parse_user_sessions(bytes: &[u8]) -> Vec<Record> {
    let mut v = parse_records(bytes);
    v.retain(|r| r.kind == USER_PROCESS);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as glibc's `pututxent` writes it.
    fn record(kind: i16, pid: i32, line: &[u8], user: &[u8], host: &[u8], sec: i32) -> Vec<u8> {
        let mut r = vec![0u8; RECORD_BYTES];
        r[..2].copy_from_slice(&kind.to_ne_bytes());
        r[4..8].copy_from_slice(&pid.to_ne_bytes());
        r[LINE.start..LINE.start + line.len()].copy_from_slice(line);
        r[40..44].copy_from_slice(b"ts/3");
        r[USER.start..USER.start + user.len()].copy_from_slice(user);
        r[HOST.start..HOST.start + host.len()].copy_from_slice(host);
        r[TV_SEC..TV_SEC + 4].copy_from_slice(&sec.to_ne_bytes());
        r[344..348].copy_from_slice(&123_456i32.to_ne_bytes());
        r
    }

    #[test]
    fn reads_sessions_and_skips_other_records_and_a_torn_tail() {
        let mut b = record(2, 0, b"~", b"reboot", b"6.18.0", 1_763_888_000);
        b.extend(record(
            7,
            4242,
            b"pts/3",
            b"alice",
            b"10.0.0.7",
            1_763_889_000,
        ));
        b.extend(record(6, 555, b"tty1", b"LOGIN", b"", 1_763_888_100));
        b.extend(record(8, 4000, b"pts/1", b"", b"", 0));
        // Full fields: no NUL, the string is the whole field, nothing read past it.
        b.extend(record(7, -1, &[b'L'; 32], &[0xff; 32], &[b'h'; 256], -5));
        b.extend(&record(7, 1, b"x", b"y", b"z", 1)[..200]);
        let all = parse_records(&b);
        assert_eq!(all.len(), 5);
        let users = parse_user_sessions(&b);
        assert_eq!(users.len(), 2);
        assert_eq!(
            users[0],
            Record {
                kind: 7,
                pid: 4242,
                line: b"pts/3".to_vec(),
                user: b"alice".to_vec(),
                host: b"10.0.0.7".to_vec(),
                time_s: 1_763_889_000,
            }
        );
        assert_eq!(
            (
                users[1].line.len(),
                users[1].user.len(),
                users[1].host.len()
            ),
            (32, 32, 256)
        );
        assert_eq!((users[1].pid, users[1].time_s), (-1, -5));
        assert!(parse_records(&[]).is_empty());
        assert!(parse_records(&[7; 383]).is_empty());
    }
}
