//! A generic netlink socket, as much of it as the taskstats exit source needs: open and bind
//! one, resolve a family by name (the `nlctrl` family's CTRL_CMD_GETFAMILY), send a command
//! and wait for its acknowledgement, read datagrams without blocking; and the two walkers of
//! netlink's framing (messages in a datagram, attributes in a payload) over hostile bytes.
//!
//! Written on `libc` directly rather than with rust-netlink's `netlink-sys` +
//! `netlink-packet-generic` or `neli`: tasksnap needs one request, one command and one
//! message type, and must read every length defensively itself anyway (the taskstats struct
//! is versioned and read by offset, which none of them does for it); those crates would add
//! their own framing types, a builder layer and (for neli) proc macros for ~200 lines of
//! socket calls. The framing is include/uapi/linux/netlink.h and genetlink.h.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `GENL_ID_CTRL`: the controller family, always 0x10.
const GENL_ID_CTRL: u16 = 0x10;
/// `CTRL_CMD_GETFAMILY`.
const CTRL_CMD_GETFAMILY: u8 = 3;
/// `CTRL_ATTR_FAMILY_ID` (u16) and `CTRL_ATTR_FAMILY_NAME` (string).
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// `NLMSG_ERROR`: an error or (error 0) an acknowledgement.
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST`, `NLM_F_ACK`.
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
/// `struct nlmsghdr` and `struct genlmsghdr`, bytes.
const NLMSG_HDR: usize = 16;
const GENL_HDR: usize = 4;
/// `NLA_TYPE_MASK`: an attribute's type without the nested/byte-order flags.
const NLA_TYPE_MASK: u16 = !(1 << 15 | 1 << 14);

/// One generic netlink socket (NETLINK_GENERIC), bound to a port the kernel picks.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
    seq: u32,
}

/// 4-byte alignment of netlink (NLMSG_ALIGN, NLA_ALIGN).
fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// Appends one attribute (header, payload, padding).
pub fn put_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(align4(buf.len()), 0);
}

/// The messages of one datagram: (type, sender port, sequence, payload after the 16-byte
/// header). The port tells an answer to this socket's request (the socket's own port, as the
/// kernel addresses replies and acknowledgements) from an event (port 0: taskstats'
/// notifications carry a per-CPU sequence number from 0 that can equal a request's). Stops at
/// the first header whose length is short or runs past the datagram.
pub fn messages(mut buf: &[u8]) -> impl Iterator<Item = (u16, u32, u32, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < NLMSG_HDR {
            return None;
        }
        let len = u32::from_ne_bytes(buf[0..4].try_into().ok()?) as usize;
        if len < NLMSG_HDR || len > buf.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([buf[4], buf[5]]);
        let seq = u32::from_ne_bytes(buf[8..12].try_into().ok()?);
        let port = u32::from_ne_bytes(buf[12..16].try_into().ok()?);
        let payload = &buf[NLMSG_HDR..len];
        buf = &buf[align4(len).min(buf.len())..];
        Some((kind, port, seq, payload))
    })
}

/// The attributes of a payload: (type without flags, payload). Stops at the first header
/// whose length is short or runs past the payload.
pub fn attrs(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([buf[0], buf[1]]) as usize;
        if len < 4 || len > buf.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([buf[2], buf[3]]) & NLA_TYPE_MASK;
        let payload = &buf[4..len];
        buf = &buf[align4(len).min(buf.len())..];
        Some((kind, payload))
    })
}

/// A generic netlink message's command and attributes (after the 4-byte genl header), or
/// `None` when the payload is too short for the header.
pub fn genl(payload: &[u8]) -> Option<(u8, &[u8])> {
    (payload.len() >= GENL_HDR).then(|| (payload[0], &payload[GENL_HDR..]))
}

/// The errno of an NLMSG_ERROR payload (0: an acknowledgement).
fn error_of(payload: &[u8]) -> Option<i32> {
    Some(-i32::from_ne_bytes(payload.get(0..4)?.try_into().ok()?))
}

impl Socket {
    /// Opens a NETLINK_GENERIC socket (close-on-exec, non-blocking) and binds it.
    pub fn open() -> io::Result<Socket> {
        // SAFETY: socket() takes no pointers; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a descriptor socket() just returned, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_nl is plain data; all-zero is the unbound address (port 0: the
        // kernel picks one).
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: addr is a valid sockaddr_nl of the length passed.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Socket { fd, seq: 0 })
    }

    /// The descriptor (for poll).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Asks for a receive buffer of `bytes`: SO_RCVBUFFORCE (CAP_NET_ADMIN: above
    /// net.core.rmem_max), else SO_RCVBUF (capped by rmem_max). Returns the size the kernel
    /// granted (it doubles the figure asked for its bookkeeping, and reports that).
    pub fn set_receive_buffer(&self, bytes: usize) -> usize {
        let v = bytes.min(i32::MAX as usize / 2) as libc::c_int;
        let fd = self.fd.as_fd();
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            if tasksnap_sys::set_option(fd, libc::SOL_SOCKET, opt, v).is_ok() {
                break;
            }
        }
        tasksnap_sys::get_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 0)
            .map_or(0, |(got, _)| got.max(0) as usize)
    }

    /// Sends one generic netlink request (`family`, `cmd`, attributes already framed).
    fn send(
        &mut self,
        family: u16,
        flags: u16,
        cmd: u8,
        version: u8,
        attrs: &[u8],
    ) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let len = NLMSG_HDR + GENL_HDR + attrs.len();
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(&(len as u32).to_ne_bytes());
        buf.extend_from_slice(&family.to_ne_bytes());
        buf.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        buf.extend_from_slice(&self.seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&[cmd, version, 0, 0]);
        buf.extend_from_slice(attrs);
        // SAFETY: buf is valid for len bytes; the address is the kernel (a null address on
        // a bound netlink socket sends to port 0, the kernel).
        let r = unsafe { libc::send(self.raw_fd(), buf.as_ptr().cast(), buf.len(), 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(self.seq)
    }

    /// Reads one datagram into `buf` without blocking: `Ok(None)` when none is queued.
    /// `ENOBUFS` (the kernel dropped messages for this socket: it was full) is returned as
    /// an error for the caller to count.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: buf is valid for writes of its length.
            let r = unsafe { libc::recv(self.raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if r >= 0 {
                return Ok(Some(r as usize));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// Waits up to `timeout_ms` for a datagram (poll), then reads it.
    fn recv_wait(&self, buf: &mut [u8], timeout_ms: i32) -> io::Result<Option<usize>> {
        let mut p = libc::pollfd {
            fd: self.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
        self.recv(buf)
    }

    /// Sends a request with NLM_F_ACK and waits (up to a second) for its answer: the
    /// reply messages' datagrams (a GET's answer) before the acknowledgement, or the error
    /// the kernel answered. Datagrams that are not answers to it (events already flowing
    /// to a listener) are handed to `other`.
    pub fn request(
        &mut self,
        family: u16,
        cmd: u8,
        version: u8,
        attrs: &[u8],
        other: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Vec<Vec<u8>>> {
        let seq = self.send(family, NLM_F_ACK, cmd, version, attrs)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut buf = vec![0u8; 64 * 1024];
        let mut replies = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer from the kernel in 1 s",
                ));
            }
            let n = match self.recv_wait(&mut buf, left.as_millis().max(1) as i32) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                // Events overran the buffer while we waited: our answer may be among what
                // was dropped; the caller's events count it. Keep waiting for the answer.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    other(&[]);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let d = &buf[..n];
            let mut ours = false;
            for (kind, port, s, payload) in messages(d) {
                if s != seq || port == 0 {
                    continue;
                }
                ours = true;
                if kind == NLMSG_ERROR {
                    return match error_of(payload) {
                        Some(0) => {
                            // The answer may share the acknowledgement's datagram.
                            if messages(d)
                                .any(|(k, p, s, _)| s == seq && p != 0 && k != NLMSG_ERROR)
                            {
                                replies.push(d.to_vec());
                            }
                            Ok(replies)
                        }
                        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
                        None => Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "a short netlink error message",
                        )),
                    };
                }
            }
            if ours {
                replies.push(d.to_vec());
            } else {
                other(d);
            }
        }
    }

    /// The id of the generic netlink family `name` (CTRL_CMD_GETFAMILY): `ENOENT` when the
    /// kernel has none of that name.
    pub fn resolve(&mut self, name: &str) -> io::Result<u16> {
        let mut a = Vec::new();
        let mut z = name.as_bytes().to_vec();
        z.push(0);
        put_attr(&mut a, CTRL_ATTR_FAMILY_NAME, &z);
        let replies = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, &a, &mut |_| {})?;
        for d in &replies {
            for (kind, _, _, payload) in messages(d) {
                if kind != GENL_ID_CTRL {
                    continue;
                }
                let Some((_, attrs_bytes)) = genl(payload) else {
                    continue;
                };
                for (t, v) in attrs(attrs_bytes) {
                    if t == CTRL_ATTR_FAMILY_ID && v.len() >= 2 {
                        return Ok(u16::from_ne_bytes([v[0], v[1]]));
                    }
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the family answer has no id",
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::exits::netlink::*;

    fn msg(kind: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = NLMSG_HDR + payload.len();
        let mut b = Vec::new();
        b.extend_from_slice(&(len as u32).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(payload);
        b.resize(align4(b.len()), 0);
        b
    }

    #[test]
    fn messages_and_attributes_stop_at_hostile_lengths() {
        let mut d = msg(20, 1, b"abcd");
        d.extend(msg(21, 2, b"efghij"));
        let all: Vec<_> = messages(&d).collect();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].0, all[0].2, all[0].3), (20, 1, &b"abcd"[..]));
        assert_eq!((all[1].0, all[1].3), (21, &b"efghij"[..]));
        // A length past the end, a length shorter than the header: nothing more.
        let mut bad = d.clone();
        bad[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert_eq!(messages(&bad).count(), 0);
        bad[0..4].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(messages(&bad).count(), 0);
        assert_eq!(messages(&d[..10]).count(), 0);

        let mut a = Vec::new();
        put_attr(&mut a, 1, &7u32.to_ne_bytes());
        put_attr(&mut a, 3 | 1 << 15, b"xyz");
        let got: Vec<_> = attrs(&a).collect();
        assert_eq!(got, vec![(1, &7u32.to_ne_bytes()[..]), (3, &b"xyz"[..])]);
        let mut bad = a.clone();
        bad[0..2].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(attrs(&bad).count(), 0);
        bad[0..2].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(attrs(&bad).count(), 0);
        // Cut in the padding of the last attribute: it is still whole.
        assert_eq!(attrs(&a[..a.len() - 1]).count(), 2);
    }
}
