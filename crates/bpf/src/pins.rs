//! Pinned programs in bpffs: where they live, and that nobody but root can reach them.
//!
//! An iterator bypasses procfs's permission checks, so a pinned set lives in a directory only
//! root can enter (0700, owned by root), each pin 0600, and a set found with looser
//! permissions or another owner is refused ([`check_root_only`]), never used. bpffs is
//! mounted (0700) when nothing is ([`ensure_bpffs`]). Directories are made and removed
//! through tasksnap-safefile: never through a symbolic link, and a pin directory another
//! user owns or may write to is refused, not adopted.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::loader::owned;
use crate::Unavailable;

/// Where bpffs is normally mounted.
pub const BPFFS: &str = "/sys/fs/bpf";
/// tasksnap's directory in bpffs; each build's programs go in a subdirectory named by
/// [`crate::TAG`].
pub const PIN_ROOT: &str = "/sys/fs/bpf/tasksnap";

/// statfs magic of bpffs (include/uapi/linux/magic.h).
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// The directory this build pins into and reuses.
pub fn pin_dir() -> PathBuf {
    Path::new(PIN_ROOT).join(crate::TAG)
}

/// Refuses [`PIN_ROOT`] and `dir` unless both are directories owned by root with no
/// group/other permission bit.
pub fn check_root_only(dir: &Path) -> Result<(), Unavailable> {
    for d in [Path::new(PIN_ROOT), dir] {
        let m = std::fs::symlink_metadata(d)
            .map_err(|e| Unavailable::Failed(format!("{}: {e}", d.display())))?;
        if !m.is_dir() || m.uid() != 0 || m.mode() & 0o077 != 0 {
            return Err(Unavailable::Failed(format!(
                "{} is not a root-only directory (mode {:o}, owner {}): not using the \
                 pinned iterator; remove it with `tasksnap unpin`",
                d.display(),
                m.mode() & 0o7777,
                m.uid()
            )));
        }
    }
    Ok(())
}

fn c_path(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

/// Opens the pinned object at `path`.
pub fn open_pin(path: &Path) -> io::Result<OwnedFd> {
    let p = c_path(path)?;
    // SAFETY: `p` is a NUL-terminated path valid for the call.
    owned(unsafe { libbpf_sys::bpf_obj_get(p.as_ptr()) })
}

/// Pins the object `fd` at `path`, readable and writable by its owner (root) only. `path` is
/// in a directory [`make_private_dir`] checked (root's, 0700), where nobody else can plant
/// anything between the pin and the chmod.
pub fn pin_private(fd: &impl AsRawFd, path: &Path) -> Result<(), Unavailable> {
    let fail =
        |what: &str, e: io::Error| Unavailable::Failed(format!("{what} {}: {e}", path.display()));
    let p = c_path(path).map_err(|e| fail("pinning", e))?;
    // SAFETY: `fd` is a live BPF object descriptor and `p` a NUL-terminated path, both valid
    // for the call.
    let r = unsafe { libbpf_sys::bpf_obj_pin(fd.as_raw_fd(), p.as_ptr()) };
    if r < 0 {
        return Err(fail("pinning", io::Error::from_raw_os_error(-r)));
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| fail("chmod", e))
}

/// Creates `dir` when it is not there (0700), and makes it root's only (0700, through its
/// descriptor). Refused when it is a symbolic link, is owned by another user, may be written
/// by group or others, or lies below a directory another user could swap it in.
pub fn make_private_dir(dir: &Path) -> Result<(), Unavailable> {
    let d = tasksnap_safefile::Dir::create_private(dir, 0o700)
        .map_err(|e| Unavailable::Failed(format!("{e}; remove it with `tasksnap unpin`")))?;
    d.chmod(0o700)
        .map_err(|e| Unavailable::Failed(format!("chmod: {e}")))
}

/// Whether bpffs is mounted at [`BPFFS`].
pub fn bpffs_mounted() -> bool {
    let Ok(p) = c_path(Path::new(BPFFS)) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid value for the kernel to overwrite.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `p` is a NUL-terminated path and `st` a writable statfs, both valid for the call.
    let r = unsafe { libc::statfs(p.as_ptr(), &mut st) };
    r == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Mounts bpffs at [`BPFFS`] (root only, mode 0700) when nothing is mounted there: systemd
/// does this at boot on most distributions, minimal VMs and containers often skip it.
pub fn ensure_bpffs() -> Result<(), Unavailable> {
    if bpffs_mounted() {
        return Ok(());
    }
    let target = c_path(Path::new(BPFFS)).map_err(|e| Unavailable::Failed(e.to_string()))?;
    let fstype = c"bpf";
    let data = c"mode=0700";
    // SAFETY: all pointers are NUL-terminated strings valid for the call.
    let r = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(Unavailable::Failed(format!(
            "bpffs is not mounted at {BPFFS} and mounting it failed: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Removes a pin directory and the pins in it (unpinning: the programs unload once no
/// process holds them). A symbolic link is removed itself, never followed.
pub fn remove_pins(dir: &Path) -> io::Result<()> {
    let Some((parent, name)) = tasksnap_safefile::split_path(dir) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a pin directory", dir.display()),
        ));
    };
    tasksnap_safefile::Dir::open(&parent)?.remove_tree(name)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode_of(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).expect("stat").mode() & 0o7777
    }

    #[test]
    fn pin_dir_refuses_a_link_and_a_directory_others_may_write() {
        let t = tempfile::tempdir().expect("tempdir");
        let target = t.path().join("elsewhere");
        std::fs::create_dir(&target).expect("mkdir");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let link = t.path().join("pins");
        symlink(&target, &link).expect("symlink");
        assert!(make_private_dir(&link).is_err(), "a link is refused");
        assert_eq!(mode_of(&target), 0o755, "not chmodded through the link");

        let open = t.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(
            make_private_dir(&open).is_err(),
            "0777 is refused, not adopted"
        );

        let fresh = t.path().join("fresh");
        make_private_dir(&fresh).expect("made");
        assert_eq!(mode_of(&fresh), 0o700);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        make_private_dir(&fresh).expect("tightened");
        assert_eq!(mode_of(&fresh), 0o700);
    }

    #[test]
    fn pin_dir_refuses_a_directory_another_user_owns() {
        if tasksnap_safefile::euid() != 0 {
            eprintln!("skipped: needs root to give a directory away");
            return;
        }
        let t = tempfile::tempdir().expect("tempdir");
        let theirs = t.path().join("theirs");
        std::fs::create_dir(&theirs).expect("mkdir");
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
        let e = make_private_dir(&theirs).expect_err("refused");
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    }

    #[test]
    fn unpin_never_follows_a_link_in_the_pin_tree() {
        let t = tempfile::tempdir().expect("tempdir");
        let keep = t.path().join("keep");
        std::fs::create_dir(&keep).expect("mkdir");
        std::fs::write(keep.join("precious"), "x").expect("write");
        let pins = t.path().join("pins");
        std::fs::create_dir_all(pins.join("set")).expect("mkdir");
        symlink(&keep, pins.join("set/evil")).expect("symlink");
        symlink(&keep, t.path().join("toplink")).expect("symlink");
        remove_pins(&pins).expect("removed");
        assert!(!pins.exists());
        remove_pins(&t.path().join("toplink")).expect("the link itself removed");
        assert!(
            keep.join("precious").exists(),
            "the link's target is untouched"
        );
        let gone = remove_pins(&pins).expect_err("gone");
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
    }
}
