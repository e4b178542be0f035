//! Pinned programs in bpffs: where they live, and that nobody but root can reach them.
//!
//! An iterator bypasses procfs's permission checks, so a pinned set lives in a directory only
//! root can enter (0700, owned by root), each pin 0600, and a set found with looser
//! permissions or another owner is refused ([`check_root_only`]), never used. bpffs is
//! mounted (0700) when nothing is ([`ensure_bpffs`]).

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

/// Pins the object `fd` at `path`, readable and writable by its owner (root) only.
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

/// Creates `dir` when it is not there, and makes it root's only (0700).
pub fn make_private_dir(dir: &Path) -> Result<(), Unavailable> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Unavailable::Failed(format!("mkdir {}: {e}", dir.display()))),
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Unavailable::Failed(format!("chmod {}: {e}", dir.display())))
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
/// process holds them).
pub fn remove_pins(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_pins(&entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    std::fs::remove_dir(dir)
}
