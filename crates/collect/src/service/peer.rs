//! Who is asking: the caller of a query as the kernel attests it, never as it says.
//! (Stub: filled in by the visibility work.)

use std::os::fd::BorrowedFd;
use std::path::Path;

/// The `hidepid=` option of a procfs mount (fs/proc/root.c, `enum proc_hidepid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HidePid {
    /// `hidepid=off` (0): every /proc/PID is visible and its world-readable files readable.
    #[default]
    Off,
    /// `hidepid=noaccess` (1): /proc/PID listed, its files unreadable unless ptrace-readable.
    NoAccess,
    /// `hidepid=invisible` (2): /proc/PID of tasks not ptrace-readable do not exist.
    Invisible,
    /// `hidepid=ptraceable` (4): like invisible, and `gid=` does not exempt.
    Ptraceable,
}

/// What the caller's /proc mount hides (its super options in the caller's mountinfo).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcMount {
    /// `hidepid=`.
    pub hidepid: HidePid,
    /// `gid=`: members see every task despite `hidepid` (not for `ptraceable`).
    pub gid: Option<u32>,
    /// `subset=pid`: only the per-process directories.
    pub subset_pid: bool,
}

/// The kernel's word on the other end of a connection (`SO_PEERCRED`, and a pidfd from
/// `SO_PEERPIDFD` so that a pid reused after the caller exits is never mistaken for it).
#[derive(Debug)]
pub struct Peer {
    /// Process id (thread-group id) of the connecting process.
    pub pid: i32,
    /// Its effective uid at connect().
    pub uid: u32,
    /// Its effective gid at connect().
    pub gid: u32,
    /// A pidfd of it, when the kernel gives one (Linux 6.5+).
    pub pidfd: Option<std::os::fd::OwnedFd>,
}

/// A caller, as the permission rules need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// Its thread-group id (a task of its own thread group is always readable to it).
    pub pid: i32,
    /// Filesystem uid (`PTRACE_MODE_FSCREDS` compares this).
    pub fsuid: u32,
    /// Filesystem gid.
    pub fsgid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// It holds `CAP_SYS_PTRACE` in the service's user namespace.
    pub cap_sys_ptrace: bool,
    /// What its /proc hides.
    pub proc_mount: ProcMount,
}

/// Why the service does not answer a caller (the client then reads /proc itself).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The caller is gone, or its pid now names another process.
    #[error("the caller is gone")]
    Gone,
    /// The caller is in another pid namespace: its pids are not the service's.
    #[error("the caller is in another pid namespace")]
    OtherPidNamespace,
    /// The caller is in another user namespace: its ids and capabilities are not the service's.
    #[error("the caller is in another user namespace")]
    OtherUserNamespace,
    /// No procfs is mounted at /proc in the caller's mount namespace.
    #[error("no procfs at /proc for the caller")]
    NoProc,
    /// Something about the caller could not be read.
    #[error("cannot read the caller's {what}: {error}")]
    Unreadable {
        /// Which file.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
}

/// The kernel's word on the peer of a connected unix stream socket.
pub fn peer_of(fd: BorrowedFd<'_>) -> std::io::Result<Peer> {
    let _ = fd;
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Identifies `peer` as the permission rules need it, reading its status, namespaces and
/// mount table under `proc_root` (the service's /proc).
pub fn identify(proc_root: &Path, peer: &Peer) -> Result<Caller, Refusal> {
    let _ = (proc_root, peer);
    Err(Refusal::Gone)
}
