//! The one user and group lookup: names by id and ids by name through the C library's
//! reentrant calls (`getpwuid_r`, `getpwnam_r`, `getgrgid_r`, `getgrnam_r`), so every source
//! NSS is configured with (files, LDAP, sssd, systemd-homed...) answers, as it does for
//! procps. Never by reading /etc/passwd. [`Names`] caches names by id: a listing asks for the
//! same few ids thousands of times.

use std::collections::HashMap;
use std::ffi::{CStr, CString};

/// Largest buffer a lookup grows to on ERANGE (an entry with a huge member list).
const MAX_BUF: usize = 1 << 20;

/// One `get*_r` lookup of a record `R` (`passwd`, `group`), with a buffer that doubles on
/// ERANGE. `call` makes the C call with a writable record, a buffer, its length in bytes
/// and the result slot; `read` takes what is needed from the record it found, whose strings
/// lie in the buffer. `None`: no such entry, or the call failed.
fn lookup<R, T>(
    call: impl Fn(*mut R, *mut libc::c_char, usize, *mut *mut R) -> libc::c_int,
    read: impl FnOnce(&R) -> T,
) -> Option<T> {
    let mut record = std::mem::MaybeUninit::<R>::uninit();
    let mut buf = vec![0u8; 4096];
    loop {
        let mut result: *mut R = std::ptr::null_mut();
        let rc = call(
            record.as_mut_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        if rc == libc::ERANGE && buf.len() < MAX_BUF {
            let len = buf.len() * 2;
            buf.resize(len, 0);
            continue;
        }
        if rc != 0 || result.is_null() {
            return None;
        }
        // SAFETY: success: `result` points at `record`, which the call initialised; its
        // strings are inside `buf`, alive while `read` runs.
        return Some(read(unsafe { &*result }));
    }
}

/// The name of user `uid`, or `None` when the system has none.
pub fn user_name(uid: u32) -> Option<Vec<u8>> {
    lookup(
        // SAFETY: `lookup` passes a writable record, a buffer of `len` bytes and the result
        // slot; getpwuid_r stores strings only inside the buffer.
        |pwd, buf, len, result| unsafe { libc::getpwuid_r(uid, pwd, buf, len, result) },
        // SAFETY: pw_name of a found record is a NUL-terminated string inside the buffer.
        |pwd: &libc::passwd| unsafe { CStr::from_ptr(pwd.pw_name) }.to_bytes().to_vec(),
    )
}

/// The name of group `gid`, or `None`.
pub fn group_name(gid: u32) -> Option<Vec<u8>> {
    lookup(
        // SAFETY: as in `user_name`, with getgrgid_r.
        |grp, buf, len, result| unsafe { libc::getgrgid_r(gid, grp, buf, len, result) },
        // SAFETY: gr_name of a found record is a NUL-terminated string inside the buffer.
        |grp: &libc::group| unsafe { CStr::from_ptr(grp.gr_name) }.to_bytes().to_vec(),
    )
}

/// The uid of the user named `name`, or `None`.
pub fn uid_by_name(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    lookup(
        // SAFETY: as in `user_name`, with getpwnam_r and `c`, NUL-terminated and alive.
        |pwd, buf, len, result| unsafe { libc::getpwnam_r(c.as_ptr(), pwd, buf, len, result) },
        |pwd: &libc::passwd| pwd.pw_uid,
    )
}

/// The gid of the group named `name`, or `None`.
pub fn gid_by_name(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    lookup(
        // SAFETY: as in `user_name`, with getgrnam_r and `c`, NUL-terminated and alive.
        |grp, buf, len, result| unsafe { libc::getgrnam_r(c.as_ptr(), grp, buf, len, result) },
        |grp: &libc::group| grp.gr_gid,
    )
}

/// Cached uid/gid -> name lookups (one NSS lookup per id, misses cached too).
#[derive(Debug, Default)]
pub struct Names {
    users: HashMap<u32, Option<Vec<u8>>>,
    groups: HashMap<u32, Option<Vec<u8>>>,
}

impl Names {
    /// The user name of `uid`, or `None` when the system has none.
    pub fn user(&mut self, uid: u32) -> Option<&[u8]> {
        self.users
            .entry(uid)
            .or_insert_with(|| user_name(uid))
            .as_deref()
    }

    /// The group name of `gid`, or `None`.
    pub fn group(&mut self, gid: u32) -> Option<&[u8]> {
        self.groups
            .entry(gid)
            .or_insert_with(|| group_name(gid))
            .as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_both_ways_and_unknowns() {
        assert_eq!(user_name(0).as_deref(), Some(&b"root"[..]));
        assert_eq!(uid_by_name("root"), Some(0));
        assert_eq!(gid_by_name("root"), Some(0));
        assert_eq!(group_name(0).as_deref(), Some(&b"root"[..]));
        assert_eq!(uid_by_name("no-such-user-tasksnap"), None);
        assert_eq!(gid_by_name("no-such-group-tasksnap"), None);
        assert_eq!(uid_by_name("nul\0inside"), None);
        let mut n = Names::default();
        assert_eq!(n.user(0), Some(&b"root"[..]));
        assert_eq!(n.user(0), Some(&b"root"[..]));
        assert_eq!(n.group(0), Some(&b"root"[..]));
    }
}
