//! Socket options: `getsockopt` and `setsockopt` of plain values ([`OptionValue`]).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

mod sealed {
    pub trait Sealed {}
    impl Sealed for libc::c_int {}
    impl Sealed for libc::ucred {}
}

/// A value a socket option holds: plain data of which every bit pattern is a valid value
/// (an `int`, a C struct of integers), so that the kernel may write it.
pub trait OptionValue: Copy + sealed::Sealed {}
impl OptionValue for libc::c_int {}
impl OptionValue for libc::ucred {}

/// `getsockopt(fd, level, name)`, starting from `init`: the value, and how many bytes of it
/// the kernel wrote.
pub fn get_option<T: OptionValue>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    init: T,
) -> io::Result<(T, usize)> {
    let mut value = init;
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a writable T of which any bytes are a valid value (OptionValue),
    // and `len` its size: the kernel writes at most `len` bytes and updates `len`. `fd` is a
    // live descriptor for the call's duration.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((value, len as usize))
}

/// `setsockopt(fd, level, name, &value)`.
pub fn set_option<T: OptionValue>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: T,
) -> io::Result<()> {
    // SAFETY: `value` lives for the call and is of the size passed; `fd` is a live
    // descriptor for the call's duration.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn an_option_set_is_read_back() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        set_option(a.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 65536).expect("set");
        let (got, len) = get_option(a.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 0).expect("get");
        // The kernel doubles the figure asked for its bookkeeping (capped by wmem_max).
        assert_eq!(len, std::mem::size_of::<libc::c_int>());
        assert!(got > 0, "{got}");
        let bad = get_option(a.as_fd(), libc::SOL_SOCKET, -1, 0);
        assert!(bad.is_err());
    }
}
