//! The one user and group lookup: names by id and ids by name through the C library's
//! reentrant calls (`getpwuid_r`, `getpwnam_r`, `getgrgid_r`, `getgrnam_r`), so every source
//! NSS is configured with (files, LDAP, sssd, systemd-homed...) answers, as it does for
//! procps. Never by reading /etc/passwd. [`Names`] caches names by id: a listing asks for the
//! same few ids thousands of times.

use std::collections::HashMap;
use std::ffi::{CStr, CString};

/// Largest buffer a lookup grows to on ERANGE (an entry with a huge member list).
const MAX_BUF: usize = 1 << 20;

/// Runs a `get*_r` call with a buffer that doubles on ERANGE. The call sets its `bool` when
/// it succeeded and found an entry (having read what it needs from the record); the answer
/// is whether it did.
fn with_buffer(mut call: impl FnMut(&mut [u8], &mut bool) -> libc::c_int) -> Option<()> {
    let mut buf = vec![0u8; 4096];
    loop {
        let mut hit = false;
        let rc = call(&mut buf, &mut hit);
        if rc == libc::ERANGE && buf.len() < MAX_BUF {
            let len = buf.len() * 2;
            buf.resize(len, 0);
            continue;
        }
        return (rc == 0 && hit).then_some(());
    }
}

/// The name of user `uid`, or `None` when the system has none.
pub fn user_name(uid: u32) -> Option<Vec<u8>> {
    let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut name = Vec::new();
    with_buffer(|buf, hit| {
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: all pointers reference live, writable memory of the sizes passed;
        // getpwuid_r stores strings only inside `buf`.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                pwd.as_mut_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            // SAFETY: success: `result` points at `pwd`, whose pw_name is a
            // NUL-terminated string inside `buf`, alive for this closure.
            name = unsafe { CStr::from_ptr((*result).pw_name) }
                .to_bytes()
                .to_vec();
            *hit = true;
        }
        rc
    })?;
    Some(name)
}

/// The name of group `gid`, or `None`.
pub fn group_name(gid: u32) -> Option<Vec<u8>> {
    let mut grp = std::mem::MaybeUninit::<libc::group>::uninit();
    let mut name = Vec::new();
    with_buffer(|buf, hit| {
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in `user_name`, with getgrgid_r.
        let rc = unsafe {
            libc::getgrgid_r(
                gid,
                grp.as_mut_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            // SAFETY: success: gr_name is a NUL-terminated string inside `buf`.
            name = unsafe { CStr::from_ptr((*result).gr_name) }
                .to_bytes()
                .to_vec();
            *hit = true;
        }
        rc
    })?;
    Some(name)
}

/// The uid of the user named `name`, or `None`.
pub fn uid_by_name(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut uid = 0;
    with_buffer(|buf, hit| {
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: getpwnam_r fills `pwd` using `buf` (its length given) and sets `result`
        // to `pwd` or to null; nothing is read unless it says it found the user.
        let rc = unsafe {
            libc::getpwnam_r(
                c.as_ptr(),
                pwd.as_mut_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            // SAFETY: success: `result` points at `pwd`, now initialised.
            uid = unsafe { (*result).pw_uid };
            *hit = true;
        }
        rc
    })?;
    Some(uid)
}

/// The gid of the group named `name`, or `None`.
pub fn gid_by_name(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let mut grp = std::mem::MaybeUninit::<libc::group>::uninit();
    let mut gid = 0;
    with_buffer(|buf, hit| {
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in `uid_by_name`, with getgrnam_r.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                grp.as_mut_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            // SAFETY: success: `result` points at `grp`, now initialised.
            gid = unsafe { (*result).gr_gid };
            *hit = true;
        }
        rc
    })?;
    Some(gid)
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
