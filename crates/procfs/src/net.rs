//! Who owns a TCP socket of this host. `tasksnap serve` asks it of a loopback peer, whose
//! address alone (127.0.0.1) does not tell one local client from another.
//!
//! [`socket_owner`] asks the kernel for one socket by its addresses (sock_diag over netlink,
//! as `ss` does: microseconds, whatever the number of sockets); [`socket_uid`] reads the
//! same from the text of the TCP tables (`/proc/net/tcp`, `/proc/net/tcp6`), which costs a
//! walk of every socket of the host (~10 ms at 2,000), for when netlink is not allowed.
//!
//! A row is `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid
//! timeout inode ...`; an address is the IP as the kernel holds it (network byte order),
//! printed as 32-bit words in the host's byte order (`%08X` each: one for IPv4, four for
//! IPv6), then `:` and the port in hex.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
pub(crate) const SOCK_DIAG_BY_FAMILY: u16 = 20;

/// `struct nlmsghdr` (linux/netlink.h), as it heads a sock_diag request.
#[repr(C)]
pub(crate) struct NlMsgHdr {
    len: u32,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
}

const _: () = assert!(std::mem::size_of::<NlMsgHdr>() == 16);

impl NlMsgHdr {
    /// The header of a sock_diag request `R` (this header and the request behind it), with
    /// `flags` (`NLM_F_*`) and sequence number `seq`.
    pub(crate) fn sock_diag<R>(flags: i32, seq: u32) -> NlMsgHdr {
        NlMsgHdr {
            len: std::mem::size_of::<R>() as u32,
            kind: SOCK_DIAG_BY_FAMILY,
            flags: flags as u16,
            seq,
            pid: 0,
        }
    }
}

/// `struct inet_diag_sockid` (linux/inet_diag.h): ports and addresses in network order.
#[repr(C)]
#[derive(Clone, Copy)]
struct InetDiagSockid {
    sport: [u8; 2],
    dport: [u8; 2],
    src: [u8; 16],
    dst: [u8; 16],
    interface: u32,
    cookie: [u32; 2],
}

/// `struct inet_diag_req_v2` after its `struct nlmsghdr`.
#[repr(C)]
struct Request {
    hdr: NlMsgHdr,
    family: u8,
    protocol: u8,
    ext: u8,
    pad: u8,
    states: u32,
    id: InetDiagSockid,
}

/// Offset of `idiag_uid` in a reply: the 16-byte `nlmsghdr`, then `inet_diag_msg`'s family,
/// state, timer, retrans (4 bytes), its `inet_diag_sockid` (48), expires, rqueue, wqueue.
const UID_OFFSET: usize = 16 + 4 + 48 + 12;

/// A netlink socket asking sock_diag about single sockets.
#[derive(Debug)]
pub struct SockDiag(OwnedFd);

impl SockDiag {
    /// Opens one; `None` when netlink is not allowed here.
    pub fn open() -> Option<SockDiag> {
        SockDiag::open_io().ok()
    }

    /// Opens one, saying why not.
    pub(crate) fn open_io() -> std::io::Result<SockDiag> {
        // SAFETY: socket() with constant arguments; the descriptor is owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket() and nothing else owns it.
        Ok(SockDiag(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The socket's descriptor (for its options and replies).
    pub(crate) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }

    /// Sends `req` to the kernel.
    ///
    /// # Safety
    /// `T` must be a `#[repr(C)]` request whose every byte is initialised (padding spelled
    /// out as fields): its bytes are what the kernel reads.
    pub(crate) unsafe fn send<T>(&self, req: &T) -> std::io::Result<()> {
        // SAFETY: `req` is readable for size_of::<T>() bytes, all initialised (the caller's
        // promise); a zeroed sockaddr_nl with its family set addresses the kernel.
        let sent = unsafe {
            let mut kernel: libc::sockaddr_nl = std::mem::zeroed();
            kernel.nl_family = libc::AF_NETLINK as u16;
            libc::sendto(
                self.0.as_raw_fd(),
                (req as *const T).cast(),
                std::mem::size_of::<T>(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if sent < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The owner (uid) of the TCP socket whose local address is `local` and remote address
    /// `remote` (a local client's socket: its own address, then the server's); `None` when
    /// there is no such socket or the kernel would not say.
    pub fn socket_owner(&self, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
        let (family, src, dst) = match (local.ip().to_canonical(), remote.ip().to_canonical()) {
            (IpAddr::V4(l), IpAddr::V4(r)) => {
                let mut s = [0u8; 16];
                let mut d = [0u8; 16];
                s[..4].copy_from_slice(&l.octets());
                d[..4].copy_from_slice(&r.octets());
                (libc::AF_INET, s, d)
            }
            (IpAddr::V6(l), IpAddr::V6(r)) => (libc::AF_INET6, l.octets(), r.octets()),
            _ => return None,
        };
        let req = Request {
            hdr: NlMsgHdr::sock_diag::<Request>(libc::NLM_F_REQUEST, 1),
            family: family as u8,
            protocol: libc::IPPROTO_TCP as u8,
            ext: 0,
            pad: 0,
            states: !0,
            id: InetDiagSockid {
                sport: local.port().to_be_bytes(),
                dport: remote.port().to_be_bytes(),
                src,
                dst,
                interface: 0,
                // INET_DIAG_NOCOOKIE: any socket with these addresses.
                cookie: [!0, !0],
            },
        };
        // SAFETY: `Request` is #[repr(C)] with every field initialised and no implicit
        // padding (its layout is the kernel's inet_diag_req_v2 behind an nlmsghdr).
        unsafe { self.send(&req) }.ok()?;
        let fd = self.0.as_raw_fd();
        let mut buf = [0u8; 512];
        // SAFETY: recv writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        let reply = buf.get(..usize::try_from(n).ok()?)?;
        parse_owner_reply(reply)
    }
}

/// The uid in a sock_diag reply to one request; `None` for an error reply (no such socket)
/// or a short one.
fn parse_owner_reply(reply: &[u8]) -> Option<u32> {
    let kind = u16::from_ne_bytes(reply.get(4..6)?.try_into().ok()?);
    if kind != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    let uid = reply.get(UID_OFFSET..UID_OFFSET + 4)?;
    Some(u32::from_ne_bytes(uid.try_into().ok()?))
}

/// The owner (uid) of the socket whose local address is `local` and remote address is
/// `remote`, from the text of a TCP socket table (`/proc/net/tcp` for IPv4 addresses,
/// `/proc/net/tcp6` for IPv6 ones); `None` when no row has both.
pub fn socket_uid(table: &[u8], local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    table.split(|&b| b == b'\n').skip(1).find_map(|row| {
        let mut f = row.split(|&b| b == b' ').filter(|f| !f.is_empty()).skip(1);
        let l = parse_address(f.next()?)?;
        let r = parse_address(f.next()?)?;
        if l != local || r != remote {
            return None;
        }
        let uid = f.nth(4)?;
        std::str::from_utf8(uid).ok()?.parse().ok()
    })
}

/// `0100007F:1F90` -> 127.0.0.1:8080; 32 hex digits for IPv6.
pub(crate) fn parse_address(field: &[u8]) -> Option<SocketAddr> {
    let text = std::str::from_utf8(field).ok()?;
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's byte order decides how the kernel prints an address.
    fn v4(a: [u8; 4]) -> String {
        format!("{:08X}", u32::from_ne_bytes(a))
    }

    #[test]
    fn the_owner_of_a_loopback_peer_is_found() {
        let lo = v4([127, 0, 0, 1]);
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {lo}:2053 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0 100 0 0 10 0\n\
             \x20  1: {lo}:2053 {lo}:B5A2 01 00000000:00000000 00:00000000 00000000     0        0 1240 1 0 20 4 30 10 -1\n\
             \x20  2: {lo}:B5A2 {lo}:2053 01 00000000:00000000 00:00000000 00000000  1000        0 1239 1 0 20 4 30 10 -1\n"
        );
        let server: SocketAddr = "127.0.0.1:8275".parse().expect("addr");
        let client: SocketAddr = "127.0.0.1:46498".parse().expect("addr");
        assert_eq!(socket_uid(table.as_bytes(), client, server), Some(1000));
        assert_eq!(socket_uid(table.as_bytes(), server, client), Some(0));
        let other: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        assert_eq!(socket_uid(table.as_bytes(), other, server), None);
    }

    #[test]
    fn ipv6_rows_are_read() {
        let mut words = String::new();
        let one = std::net::Ipv6Addr::LOCALHOST.octets();
        for c in one.chunks(4) {
            words.push_str(&v4([c[0], c[1], c[2], c[3]]));
        }
        let table = format!(
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {words}:B5A2 {words}:2053 01 00000000:00000000 00:00000000 00000000   107        0 99 1 0\n"
        );
        let client: SocketAddr = "[::1]:46498".parse().expect("addr");
        let server: SocketAddr = "[::1]:8275".parse().expect("addr");
        assert_eq!(socket_uid(table.as_bytes(), client, server), Some(107));
    }

    #[test]
    fn the_kernel_names_the_owner_of_a_loopback_client() {
        let Some(diag) = SockDiag::open() else {
            eprintln!("SKIP: no netlink here");
            return;
        };
        let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(server.local_addr().expect("addr")).expect("connect");
        let (_accepted, peer) = server.accept().expect("accept");
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let owner = diag.socket_owner(peer, server.local_addr().expect("addr"));
        assert_eq!(owner, Some(me));
        assert_eq!(peer, client.local_addr().expect("addr"));
        // A socket that is not there.
        let nowhere: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        assert_eq!(diag.socket_owner(nowhere, nowhere), None);
    }

    #[test]
    fn short_or_error_replies_give_none() {
        assert_eq!(parse_owner_reply(&[]), None);
        let mut error = vec![0u8; 36];
        error[4..6].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(parse_owner_reply(&error), None);
        let mut short = vec![0u8; 40];
        short[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        assert_eq!(parse_owner_reply(&short), None);
    }

    #[test]
    fn hostile_tables_give_none() {
        let server: SocketAddr = "127.0.0.1:8275".parse().expect("addr");
        for t in [
            &b""[..],
            b"header\n",
            b"h\n 0: zz:zz",
            b"h\n 0: 0100007F:2053",
            b"h\n 0: 0100007F:2053 0100007F:B5A2 01 x x x",
            b"h\n 0: 0100007F:2053 0100007F:B5A2 01 a b c notanumber",
            b"\xff\xfe\n\xff",
        ] {
            assert_eq!(socket_uid(t, server, server), None);
        }
    }
}
