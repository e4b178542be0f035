//! Every unix socket of the caller's network namespace, asked of the kernel over sock_diag
//! (`NETLINK_SOCK_DIAG`, a `unix_diag_req` dump, as `ss -x` does) instead of read from the
//! text of `/proc/net/unix`: [`unix_sockets`].
//!
//! Why not the table: the kernel prints a socket's name into `/proc/net/unix` byte for byte,
//! newlines included, so whoever binds a socket chooses lines of that file: a name
//! `"\0e\n0000000000000000: 00000002 00000000 00010000 0001 01 INODE /forged/path"` adds a
//! well-formed row that gives another process's socket (root's too) a path of the binder's
//! choosing, and psutil reports it. Over netlink each socket is one message and its name one
//! length-delimited attribute: nothing one socket's owner chooses can make another socket's
//! record. The answer is still read as hostile: every length is checked against the bytes
//! received, and a message that does not fit is an error (the caller then falls back to
//! the table, [`crate::proc_files::parse_unix_table`], which refuses what it cannot trust).
//!
//! A row is given as psutil would read it from the table ([`UnixRow`]): the kernel's
//! printed form of the name ([`table_name`]: `@` for a NUL), then psutil's reading of its row
//! ([`psutil_path`]), so that ordinary sockets get psutil's values exactly.
//!
//! Layout (include/uapi/linux/unix_diag.h, netlink.h): a `nlmsghdr` (16 bytes), then a
//! `unix_diag_msg` (family, type, state, pad: one byte each; the inode, `u32`; a cookie,
//! 8 bytes), then attributes (`nlattr`: length and type, `u16` each, the payload, padded to 4
//! bytes); `UNIX_DIAG_NAME` holds `sun_path` as bound (a path's terminating NUL included).

use crate::net::{NlMsgHdr, SOCK_DIAG_BY_FAMILY};
use crate::proc_files::UnixRow;

/// `UDIAG_SHOW_NAME`: include each socket's name.
const UDIAG_SHOW_NAME: u32 = 0x1;
/// `UNIX_DIAG_NAME`, the attribute holding the name.
const UNIX_DIAG_NAME: u16 = 0;
/// `NLM_F_DUMP_INTR`: the table changed while the dump went through it.
const NLM_F_DUMP_INTR: u16 = 0x10;
/// `sizeof(struct nlmsghdr)`.
const NLMSG_HDR_LEN: usize = 16;
/// `sizeof(struct unix_diag_msg)`.
const UNIX_DIAG_MSG_LEN: usize = 16;
/// `sizeof(((struct sockaddr_un *)0)->sun_path)`: no name is longer.
const SUN_PATH_LEN: usize = 108;
/// The receive buffer: the kernel fills a dump's datagrams to at most 32 KiB
/// (`netlink_dump`, `max_recvmsg_len`); a longer one is detected (`MSG_TRUNC`) and refused.
const RECV_BUF_LEN: usize = 64 * 1024;
/// Sequence number of the request, checked on every answer.
const SEQ: u32 = 0x7453_7578;

/// Why the kernel's list of unix sockets could not be had.
#[derive(Debug, thiserror::Error)]
pub enum UnixDiagError {
    /// No netlink socket (not allowed here: a seccomp filter, an old kernel).
    #[error("sock_diag: cannot open a netlink socket: {0}")]
    Open(std::io::Error),
    /// Sending the request or receiving the answer failed (a timeout included).
    #[error("sock_diag: {0}")]
    Io(std::io::Error),
    /// The kernel answered with an error (ENOENT: no unix_diag in this kernel).
    #[error("sock_diag: the kernel answered errno {0}")]
    Kernel(i32),
    /// The socket table changed while the kernel went through it.
    #[error("sock_diag: the dump was interrupted")]
    Interrupted,
    /// An answer that does not hold together (a length beyond what was received, a name
    /// longer than any socket's, a datagram longer than the buffer).
    #[error("sock_diag: malformed answer: {0}")]
    Malformed(&'static str),
}

/// `struct nlmsghdr` then `struct unix_diag_req`.
#[repr(C)]
struct Request {
    hdr: NlMsgHdr,
    family: u8,
    protocol: u8,
    pad: u16,
    states: u32,
    ino: u32,
    show: u32,
    cookie: [u32; 2],
}

/// Every unix socket of the caller's network namespace (what its `/proc/net/unix` lists),
/// in the kernel's order, each as psutil would read its row.
pub fn unix_sockets() -> Result<Vec<UnixRow>, UnixDiagError> {
    let sock = crate::net::SockDiag::open_io().map_err(UnixDiagError::Open)?;
    let fd = sock.raw_fd();
    // The kernel answers a dump at once; a bound keeps a wedged netlink from hanging a caller.
    let timeout = libc::timeval {
        tv_sec: 5,
        tv_usec: 0,
    };
    // SAFETY: `timeout` is a valid timeval of the size given.
    let set = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    };
    if set < 0 {
        return Err(UnixDiagError::Io(std::io::Error::last_os_error()));
    }
    let req = Request {
        hdr: NlMsgHdr::sock_diag::<Request>(libc::NLM_F_REQUEST | libc::NLM_F_DUMP, SEQ),
        family: libc::AF_UNIX as u8,
        protocol: 0,
        pad: 0,
        states: !0,
        ino: 0,
        show: UDIAG_SHOW_NAME,
        cookie: [!0, !0],
    };
    // SAFETY: `Request` is #[repr(C)] with every field initialised, its padding spelled out
    // (`pad`): an nlmsghdr and the kernel's unix_diag_req.
    unsafe { sock.send(&req) }.map_err(UnixDiagError::Io)?;
    let mut buf = vec![0u8; RECV_BUF_LEN];
    let mut out = Vec::new();
    loop {
        // SAFETY: recv writes at most `buf.len()` bytes into `buf`; with MSG_TRUNC it returns
        // the datagram's whole length, which may be more (checked below).
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
        let Ok(n) = usize::try_from(n) else {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(UnixDiagError::Io(e));
        };
        if n > buf.len() {
            return Err(UnixDiagError::Malformed(
                "a datagram longer than the buffer",
            ));
        }
        if parse_datagram(&buf[..n], &mut out)? {
            return Ok(out);
        }
    }
}

/// Reads the messages of one datagram of the answer into `out`; `Ok(true)` once the dump's
/// end (`NLMSG_DONE`) is in it.
fn parse_datagram(mut data: &[u8], out: &mut Vec<UnixRow>) -> Result<bool, UnixDiagError> {
    if data.is_empty() {
        return Err(UnixDiagError::Malformed("an empty datagram"));
    }
    while !data.is_empty() {
        let header = data
            .get(..NLMSG_HDR_LEN)
            .ok_or(UnixDiagError::Malformed("a short message header"))?;
        let len = u32::from_ne_bytes(header[0..4].try_into().unwrap_or_default()) as usize;
        let kind = u16::from_ne_bytes(header[4..6].try_into().unwrap_or_default());
        let flags = u16::from_ne_bytes(header[6..8].try_into().unwrap_or_default());
        let seq = u32::from_ne_bytes(header[8..12].try_into().unwrap_or_default());
        if len < NLMSG_HDR_LEN || len > data.len() {
            return Err(UnixDiagError::Malformed(
                "a message length beyond the datagram",
            ));
        }
        if seq != SEQ {
            return Err(UnixDiagError::Malformed("an answer to another request"));
        }
        if flags & NLM_F_DUMP_INTR != 0 {
            return Err(UnixDiagError::Interrupted);
        }
        let body = &data[NLMSG_HDR_LEN..len];
        match i32::from(kind) {
            libc::NLMSG_DONE => return Ok(true),
            libc::NLMSG_ERROR => {
                let errno = body
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(i32::from_ne_bytes)
                    .ok_or(UnixDiagError::Malformed("a short error message"))?;
                return Err(UnixDiagError::Kernel(errno.saturating_neg()));
            }
            libc::NLMSG_NOOP => {}
            _ if kind == SOCK_DIAG_BY_FAMILY => out.push(parse_socket(body)?),
            _ => return Err(UnixDiagError::Malformed("a message of an unknown type")),
        }
        // NLMSG_ALIGN: the next message starts on a 4-byte boundary (the last may not pad).
        let next = len.saturating_add(3) & !3;
        data = data.get(next..).unwrap_or_default();
    }
    Ok(false)
}

/// One `unix_diag_msg` and its attributes.
fn parse_socket(body: &[u8]) -> Result<UnixRow, UnixDiagError> {
    let msg = body
        .get(..UNIX_DIAG_MSG_LEN)
        .ok_or(UnixDiagError::Malformed("a short unix_diag_msg"))?;
    if i32::from(msg[0]) != libc::AF_UNIX {
        return Err(UnixDiagError::Malformed("a socket of another family"));
    }
    let kind = u32::from(msg[1]);
    let inode = u64::from(u32::from_ne_bytes(msg[4..8].try_into().unwrap_or_default()));
    let mut name: Option<&[u8]> = None;
    let mut attrs = &body[UNIX_DIAG_MSG_LEN..];
    while !attrs.is_empty() {
        let head = attrs
            .get(..4)
            .ok_or(UnixDiagError::Malformed("a short attribute header"))?;
        let len = usize::from(u16::from_ne_bytes([head[0], head[1]]));
        // The top two bits are flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER).
        let kind = u16::from_ne_bytes([head[2], head[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            return Err(UnixDiagError::Malformed(
                "an attribute length beyond its message",
            ));
        }
        if kind == UNIX_DIAG_NAME {
            let payload = &attrs[4..len];
            if payload.len() > SUN_PATH_LEN {
                return Err(UnixDiagError::Malformed("a name longer than sun_path"));
            }
            name = Some(payload);
        }
        let next = len.saturating_add(3) & !3;
        attrs = attrs.get(next..).unwrap_or_default();
    }
    Ok(UnixRow {
        kind,
        inode,
        path: name
            .map(|n| psutil_path(&table_name(n)))
            .unwrap_or_default(),
    })
}

/// A socket's name as `/proc/net/unix` prints it (net/unix/af_unix.c, `unix_seq_show`): an
/// abstract name (a leading NUL) as `@` and the rest, a path without its last byte (the
/// terminating NUL bind() counts), every NUL inside as `@`.
pub fn table_name(sun_path: &[u8]) -> Vec<u8> {
    let (lead, rest): (&[u8], &[u8]) = match sun_path.split_first() {
        None => return Vec::new(),
        Some((0, rest)) => (b"@", rest),
        Some(_) => (b"", &sun_path[..sun_path.len() - 1]),
    };
    lead.iter()
        .chain(rest)
        .map(|&b| if b == 0 { b'@' } else { b })
        .collect()
}

/// The path psutil reads for a socket whose printed name is `printed`: it reads the table
/// as text, line by line with universal newlines (a `\n` or `\r` in a name ends the row),
/// splits a row on whitespace as `str.split()` does, and takes the eighth word of a row of
/// exactly eight, else nothing. So a name with a space is empty, and one with a newline is
/// what comes before it (what follows makes rows of its own, which are not this socket's).
pub fn psutil_path(printed: &[u8]) -> Vec<u8> {
    let line = printed
        .split(|&b| b == b'\n' || b == b'\r')
        .next()
        .unwrap_or_default();
    let words = python_words(line);
    match words.as_slice() {
        [one] => one.to_vec(),
        _ => Vec::new(),
    }
}

/// `bytes.decode(errors="surrogateescape").split()`, as byte ranges: words between runs of
/// what Python's `str.isspace` calls whitespace (Unicode White_Space and the separators
/// U+001C..U+001F); bytes that are not UTF-8 are never whitespace.
fn python_words(line: &[u8]) -> Vec<&[u8]> {
    let mut words = Vec::new();
    let mut start: Option<usize> = None;
    let mut at = 0;
    for chunk in line.utf8_chunks() {
        for c in chunk.valid().chars() {
            let space = c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
            match (space, start) {
                (true, Some(s)) => {
                    words.push(&line[s..at]);
                    start = None;
                }
                (false, None) => start = Some(at),
                _ => {}
            }
            at += c.len_utf8();
        }
        let bad = chunk.invalid().len();
        if bad > 0 && start.is_none() {
            start = Some(at);
        }
        at += bad;
    }
    if let Some(s) = start {
        words.push(&line[s..]);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn names_print_as_the_table_does() {
        assert_eq!(table_name(b"/run/a.sock\0"), b"/run/a.sock");
        assert_eq!(table_name(b"\0abstract\0x"), b"@abstract@x");
        assert_eq!(table_name(b"\0"), b"@");
        assert_eq!(table_name(b""), b"");
        assert_eq!(table_name(b"x"), b"");
    }

    #[test]
    fn paths_are_what_psutil_reads_of_a_row() {
        assert_eq!(psutil_path(b"/run/a.sock"), b"/run/a.sock");
        assert_eq!(psutil_path(b"@abstract\xff"), b"@abstract\xff");
        assert_eq!(psutil_path(b"/run/a b"), b"");
        assert_eq!(psutil_path(b"/run/new\nline b"), b"/run/new");
        assert_eq!(psutil_path(b"/run/cr\rx"), b"/run/cr");
        assert_eq!(psutil_path(b" /run/lead"), b"/run/lead");
        assert_eq!(psutil_path(b"/a\x1fb"), b"", "U+001F splits a Python str");
        assert_eq!(psutil_path("/a\u{a0}b".as_bytes()), b"", "NBSP too");
        assert_eq!(psutil_path(b"/a\xa0b"), b"/a\xa0b", "a lone byte does not");
        assert_eq!(
            psutil_path(b"@e\n0000: 00000002 0 0 0001 01 99 /forged"),
            b"@e"
        );
        assert_eq!(psutil_path(b""), b"");
    }

    /// A message of the kernel's answer: header, `unix_diag_msg`, then `attrs`.
    fn message(kind: u16, flags: u16, inode: u32, attrs: &[u8]) -> Vec<u8> {
        let len = NLMSG_HDR_LEN + UNIX_DIAG_MSG_LEN + attrs.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&SEQ.to_ne_bytes());
        m.extend_from_slice(&1234u32.to_ne_bytes());
        m.extend_from_slice(&[libc::AF_UNIX as u8, 1, 1, 0]);
        m.extend_from_slice(&inode.to_ne_bytes());
        m.extend_from_slice(&[0xff; 8]);
        m.extend_from_slice(attrs);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(payload);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    fn done() -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&20u32.to_ne_bytes());
        m.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&SEQ.to_ne_bytes());
        m.extend_from_slice(&[0; 8]);
        m
    }

    #[test]
    fn answers_are_parsed_and_bounded() {
        let mut d = message(SOCK_DIAG_BY_FAMILY, 2, 5551, &attr(0, b"/run/a.sock\0"));
        d.extend(message(SOCK_DIAG_BY_FAMILY, 2, 5552, &[]));
        d.extend(message(
            SOCK_DIAG_BY_FAMILY,
            2,
            5553,
            &attr(3, &[1, 2, 3, 4]),
        ));
        let mut out = Vec::new();
        assert!(!parse_datagram(&d, &mut out).expect("test"));
        d.extend(done());
        out.clear();
        assert!(parse_datagram(&d, &mut out).expect("test"));
        assert_eq!(
            UnixRow::triples(&out),
            vec![
                (1, 5551, &b"/run/a.sock"[..]),
                (1, 5552, b""),
                (1, 5553, b"")
            ]
        );
        // Every cut of it is an error or a shorter answer, never a panic; a cut inside a
        // message is an error.
        for cut in 1..d.len() {
            let mut o = Vec::new();
            let _ = parse_datagram(&d[..cut], &mut o);
        }
        let first = message(SOCK_DIAG_BY_FAMILY, 2, 5551, &attr(0, b"/run/a.sock\0"));
        assert!(parse_datagram(&first[..first.len() - 4], &mut Vec::new()).is_err());
        // An attribute that claims more than its message holds.
        let mut lying = attr(0, b"/x\0");
        lying[0..2].copy_from_slice(&200u16.to_ne_bytes());
        assert!(matches!(
            parse_datagram(&message(SOCK_DIAG_BY_FAMILY, 2, 1, &lying), &mut Vec::new()),
            Err(UnixDiagError::Malformed(_))
        ));
        // A name longer than sun_path.
        assert!(parse_datagram(
            &message(SOCK_DIAG_BY_FAMILY, 2, 1, &attr(0, &[b'a'; 200])),
            &mut Vec::new()
        )
        .is_err());
        // A dump the kernel says was interrupted, an error answer, another request's answer.
        assert!(matches!(
            parse_datagram(&message(SOCK_DIAG_BY_FAMILY, 0x12, 1, &[]), &mut Vec::new()),
            Err(UnixDiagError::Interrupted)
        ));
        let mut err = done();
        err[4..6].copy_from_slice(&(libc::NLMSG_ERROR as u16).to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
        assert!(matches!(
            parse_datagram(&err, &mut Vec::new()),
            Err(UnixDiagError::Kernel(libc::ENOENT))
        ));
        let mut other = done();
        other[8..12].copy_from_slice(&1u32.to_ne_bytes());
        assert!(parse_datagram(&other, &mut Vec::new()).is_err());
        assert!(parse_datagram(&[], &mut Vec::new()).is_err());
    }

    /// A name that forges a row of the table is one socket's name here, whatever it holds;
    /// the socket it names keeps its own path.
    #[test]
    fn the_kernel_lists_our_sockets_with_their_own_names() {
        use std::os::linux::net::SocketAddrExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("victim.sock");
        let victim = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let inode = {
            use std::os::unix::fs::MetadataExt;
            let fd = victim.as_raw_fd();
            std::fs::metadata(format!("/proc/self/fd/{fd}"))
                .expect("test")
                .ino()
        };
        let forged =
            format!("e\n0000000000000000: 00000002 00000000 00010000 0001 01 {inode} /forged/path");
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(forged.as_bytes()).expect("test");
        let _forger = std::os::unix::net::UnixDatagram::bind_addr(&addr).expect("bind");
        let rows = match unix_sockets() {
            Ok(r) => r,
            Err(e @ (UnixDiagError::Open(_) | UnixDiagError::Kernel(_))) => {
                eprintln!("SKIP: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let mine: Vec<&UnixRow> = rows.iter().filter(|r| r.inode == inode).collect();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0].path, path.as_os_str().as_bytes());
        assert_eq!(mine[0].kind, libc::SOCK_STREAM as u32);
        assert!(rows.iter().any(|r| r.path == b"@e"), "the forger's own row");
        assert!(!rows.iter().any(|r| r.path == b"/forged/path"));
    }
}
