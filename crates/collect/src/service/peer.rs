//! Who is asking: the caller of a query as the kernel attests it, never as it says.
//!
//! The kernel's word on the connection (`SO_PEERCRED`: pid, euid, egid at connect;
//! `SO_PEERPIDFD`: a pidfd of that very process), then what the service reads of that process
//! under its own /proc: its filesystem ids, supplementary groups and effective capabilities
//! (`status`), its pid and user namespaces (`ns/pid`, `ns/user`, compared with the service's),
//! and the options of the procfs mounted at /proc in its mount namespace (`mountinfo`), the
//! `hidepid=` and `gid=` that decide which rows it may see (visibility.rs). Every file is read
//! through one descriptor of the caller's /proc/PID directory, so all of them are of one
//! process; the pidfd then proves that process is still the caller (a pid reused after the
//! caller exited is never taken for it). The parsers are pure functions over hostile bytes.
//!
//! Without a pidfd (Linux before 6.5) the reads are of whichever process holds the pid when
//! they are made: a caller that exits and whose pid goes to another process of the same euid
//! and egid would be judged as that process (another euid is refused).
//!
//! Beside the caller, what the host's security modules mean for every caller ([`Rules`],
//! read once by [`host_rules`]).

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use tasksnap_procfs::parse;
use tasksnap_sys as sys;

/// What the host's security modules mean for the rules (the same for every caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// An LSM that may deny ptrace reads by policy is active: the gated groups go to callers
    /// with `CAP_SYS_PTRACE` only, and a caller whose /proc hides pids is refused.
    pub lsm_gates: bool,
    /// SELinux is active: reading another task's label needs a policy permission
    /// (`PROCESS__GETATTR`), so labels go to callers with `CAP_SYS_PTRACE` only.
    pub label_gated: bool,
}

impl Rules {
    /// Nothing known of the host's LSMs: assume the worst.
    pub const UNKNOWN: Rules = Rules {
        lsm_gates: true,
        label_gated: true,
    };
    /// No LSM that gates ptrace reads or labels is active.
    pub const NONE: Rules = Rules {
        lsm_gates: false,
        label_gated: false,
    };

    /// The rules for the active LSMs listed in `/sys/kernel/security/lsm` (comma-separated
    /// names, e.g. `lockdown,capability,landlock,yama,apparmor`).
    pub fn from_lsm_list(list: &[u8]) -> Rules {
        let names = || {
            list.split(|&c| c == b',' || c.is_ascii_whitespace())
                .filter(|n| !n.is_empty())
        };
        Rules {
            lsm_gates: names()
                .any(|n| matches!(n, b"selinux" | b"apparmor" | b"smack" | b"tomoyo")),
            label_gated: names().any(|n| n == b"selinux"),
        }
    }
}

impl Default for Rules {
    /// [`Rules::UNKNOWN`]: a caller made without the host's rules is judged conservatively.
    fn default() -> Rules {
        Rules::UNKNOWN
    }
}

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
    /// `gid=`: members see every task despite `hidepid` (not for `ptraceable`). `None` when
    /// the mount shows no `gid=`: the kernel's group is then 0 (it does not print `gid=0`).
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
    /// It holds `CAP_DAC_READ_SEARCH` or `CAP_DAC_OVERRIDE`: it may read a 0400 file it does
    /// not own (/proc/PID/io and environ are such files).
    pub cap_dac_read: bool,
    /// What its /proc hides.
    pub proc_mount: ProcMount,
    /// What the host's security modules mean for the rules (read by [`identify`]; the
    /// default is [`Rules::UNKNOWN`], the most conservative).
    pub rules: Rules,
}

/// Why the service does not answer a caller (the client then reads /proc itself).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The caller is gone, or its pid now names another process.
    #[error("the caller is gone")]
    Gone,
    /// The caller is in another pid namespace: its pids are not the service's (or its /proc
    /// is of another pid namespace).
    #[error("the caller is in another pid namespace")]
    OtherPidNamespace,
    /// The caller is in another user namespace: its ids and capabilities are not the service's.
    #[error("the caller is in another user namespace")]
    OtherUserNamespace,
    /// The caller is in another cgroup namespace: its cgroup paths are not the service's.
    #[error("the caller is in another cgroup namespace")]
    OtherCgroupNamespace,
    /// No procfs is mounted at /proc in the caller's mount namespace.
    #[error("no procfs at /proc for the caller")]
    NoProc,
    /// The caller's effective ids are not those it connected with: it changed credentials
    /// since (or its pid is another process's).
    #[error("the caller's credentials changed since it connected")]
    CredentialsChanged,
    /// The caller's /proc hides pids and an LSM that may deny ptrace reads by policy is
    /// active: which tasks its /proc lists cannot be told without that policy.
    #[error("the caller's /proc hides pids and a security module decides ptrace reads")]
    HiddenPidsUnderLsm,
    /// Something about the caller could not be read.
    #[error("cannot read the caller's {what}: {error}")]
    Unreadable {
        /// Which file.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
}

/// `SO_PEERPIDFD` (include/uapi/asm-generic/socket.h, Linux 6.5); sparc numbers it
/// otherwise, and there no pidfd is asked for.
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_PEERPIDFD: Option<libc::c_int> = Some(77);
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_PEERPIDFD: Option<libc::c_int> = None;

/// The capability bits [`identify`] reads (include/uapi/linux/capability.h).
const CAP_DAC_OVERRIDE: u32 = 1;
const CAP_DAC_READ_SEARCH: u32 = 2;
const CAP_SYS_PTRACE: u32 = 19;

/// The largest mountinfo the service reads: a caller's mount table is its own to grow.
const MAX_MOUNTINFO_BYTES: usize = 4 << 20;

/// The kernel's word on the peer of a connected unix stream socket.
pub fn peer_of(fd: BorrowedFd<'_>) -> std::io::Result<Peer> {
    let init = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let (cred, len) = sys::get_option(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, init)?;
    if len != std::mem::size_of::<libc::ucred>() || cred.pid <= 0 {
        // No peer process (a socketpair made before a fork, or a peer in a pid namespace
        // where this one has no pid: the kernel then says 0).
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(Peer {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
        pidfd: SO_PEERPIDFD.and_then(|opt| peer_pidfd(fd, opt)),
    })
}

/// A pidfd of the peer (`SO_PEERPIDFD`), `None` when the kernel refuses (before 6.5).
fn peer_pidfd(fd: BorrowedFd<'_>, opt: libc::c_int) -> Option<OwnedFd> {
    let (pidfd, len) = sys::get_option(fd, libc::SOL_SOCKET, opt, -1).ok()?;
    if pidfd < 0 || len != std::mem::size_of::<libc::c_int>() {
        return None;
    }
    // SAFETY: the kernel just installed `pidfd` in this process for us alone: owning it
    // (closing it on drop) is ours to do.
    Some(unsafe { OwnedFd::from_raw_fd(pidfd) })
}

/// Whether the process of `pidfd` is still alive (a zombie still holds its pid: alive here),
/// by `pidfd_send_signal(pidfd, 0, NULL, 0)`.
fn pidfd_alive(pidfd: BorrowedFd<'_>) -> std::io::Result<bool> {
    // SAFETY: a raw syscall with a live descriptor, signal 0 (nothing is sent: only the
    // existence and permission checks run), a NULL siginfo and no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ESRCH) => Ok(false),
        // Alive, but the service may not signal it (it cannot be: the service is root, but
        // an EPERM still proves existence).
        Some(libc::EPERM) => Ok(true),
        _ => Err(e),
    }
}

/// What the caller's status says the rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusIds {
    /// Real, effective, saved, filesystem uid.
    pub uids: [u32; 4],
    /// Real, effective, saved, filesystem gid.
    pub gids: [u32; 4],
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Effective capabilities (`CapEff:`).
    pub cap_eff: u64,
}

/// The ids, groups and effective capabilities of a `/proc/PID/status` text; `None` when a
/// line the rules need is missing or malformed.
pub fn parse_status_ids(status: &[u8]) -> Option<StatusIds> {
    let s = parse::parse_status(status).ok()?;
    Some(StatusIds {
        uids: s.uids?,
        gids: s.gids?,
        groups: s.groups?,
        cap_eff: parse::parse_cap_eff(status)?,
    })
}

/// Why a mount table does not give the caller's /proc options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountError {
    /// No procfs is the top mount at /proc.
    NoProc,
    /// The procfs at /proc has an option the rules do not know (a future `hidepid=`).
    Unknown(String),
}

/// The options of the procfs the caller sees at /proc, from its `/proc/PID/mountinfo`
/// (proc(5): `ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE
/// SUPER-OPTIONS`; fs/proc/inode.c `proc_show_options()` prints `hidepid=` by name since
/// Linux 5.8, as a number before, `gid=` only when not 0, and `subset=pid`). Of several
/// mounts at /proc, the one on top (not the parent of another there) is what the caller
/// sees; if that is not procfs, the caller has none.
pub fn parse_proc_mount(mountinfo: &[u8]) -> Result<ProcMount, MountError> {
    struct Entry<'a> {
        id: &'a [u8],
        parent: &'a [u8],
        fstype: &'a [u8],
        super_opts: &'a [u8],
    }
    let mut at_proc: Vec<Entry<'_>> = Vec::new();
    for line in mountinfo.split(|&c| c == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        if fields.len() < 10 || fields[4] != b"/proc" {
            continue;
        }
        // The optional fields end at the lone "-".
        let Some(dash) = fields.iter().skip(6).position(|f| *f == b"-") else {
            continue;
        };
        let dash = dash + 6;
        let (Some(fstype), Some(super_opts)) = (fields.get(dash + 1), fields.get(dash + 3)) else {
            continue;
        };
        at_proc.push(Entry {
            id: fields[0],
            parent: fields[1],
            fstype,
            super_opts,
        });
    }
    let top = at_proc
        .iter()
        .rev()
        .find(|e| !at_proc.iter().any(|o| o.parent == e.id))
        .ok_or(MountError::NoProc)?;
    if top.fstype != b"proc" {
        return Err(MountError::NoProc);
    }
    let mut m = ProcMount::default();
    for opt in top.super_opts.split(|&c| c == b',') {
        let unknown = || MountError::Unknown(String::from_utf8_lossy(opt).into_owned());
        if let Some(v) = opt.strip_prefix(b"hidepid=") {
            m.hidepid = match v {
                b"off" | b"0" => HidePid::Off,
                b"noaccess" | b"1" => HidePid::NoAccess,
                b"invisible" | b"2" => HidePid::Invisible,
                b"ptraceable" | b"4" => HidePid::Ptraceable,
                _ => return Err(unknown()),
            };
        } else if let Some(v) = opt.strip_prefix(b"gid=") {
            let gid = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u32>().ok())
                .ok_or_else(unknown)?;
            m.gid = Some(gid);
        } else if let Some(v) = opt.strip_prefix(b"subset=") {
            // "pid" is the only subset the kernel knows.
            if v != b"pid" {
                return Err(unknown());
            }
            m.subset_pid = true;
        }
    }
    Ok(m)
}

/// The rules for this host's security modules, from `sys_root/kernel/security/lsm`; when
/// securityfs is not mounted there, from whether the service's own security label can be
/// read (`proc_root/self/attr/current`: EINVAL when no LSM that labels tasks, SELinux,
/// AppArmor or Smack, is active); [`Rules::UNKNOWN`] when neither tells.
pub fn host_rules(sys_root: &Path, proc_root: &Path) -> Rules {
    match sys::read_small_file(&sys_root.join("kernel/security/lsm")) {
        Ok(list) => return Rules::from_lsm_list(&list),
        Err(e) if e.raw_os_error() != Some(libc::ENOENT) => return Rules::UNKNOWN,
        Err(_) => {}
    }
    match sys::read_small_file(&proc_root.join("self/attr/current")) {
        // TOMOYO labels nothing here but is never active without the lsm file being
        // there to say so (it needs securityfs for its policy): not seen without it.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Rules::NONE,
        _ => Rules::UNKNOWN,
    }
}

/// Identifies `peer` as the permission rules need it ([`identify_with`]) under this host's
/// rules: [`host_rules`] of /sys and `proc_root`, read once per process (the active LSMs are
/// fixed at boot).
pub fn identify(proc_root: &Path, peer: &Peer) -> Result<Caller, Refusal> {
    static RULES: std::sync::OnceLock<Rules> = std::sync::OnceLock::new();
    let rules = *RULES.get_or_init(|| host_rules(Path::new(tasksnap_sys::roots::SYS), proc_root));
    identify_with(proc_root, rules, peer)
}

/// Identifies `peer` as the permission rules need it, reading its status, namespaces and
/// mount table under `proc_root` (the service's /proc), under the host's `rules`
/// ([`host_rules`]; [`Rules::UNKNOWN`] refuses callers whose /proc hides pids and gives the
/// gated groups only to callers with `CAP_SYS_PTRACE`).
pub fn identify_with(proc_root: &Path, rules: Rules, peer: &Peer) -> Result<Caller, Refusal> {
    let unreadable = |what| move |error| Refusal::Unreadable { what, error };
    let root = Dir::open(proc_root).map_err(unreadable("/proc"))?;
    let gone = |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH));
    let dir = match Dir::open_at(&root, &peer.pid.to_string()) {
        Ok(d) => d,
        Err(e) if gone(&e) => return Err(Refusal::Gone),
        Err(e) => {
            return Err(Refusal::Unreadable {
                what: "/proc/PID",
                error: e,
            })
        }
    };
    let read = |what: &'static str, max: usize| match dir.read(what, max) {
        Ok(v) => Ok(v),
        Err(e) if gone(&e) => Err(Refusal::Gone),
        Err(e) => Err(Refusal::Unreadable { what, error: e }),
    };
    let status = read("status", 64 << 10)?;
    // Whether the caller's namespace `what` is the service's.
    let same_ns = |what: &'static str| -> Result<bool, Refusal> {
        let mine = root
            .ns_id(&format!("self/{what}"))
            .map_err(unreadable(what))?;
        match dir.ns_id(what) {
            Ok(theirs) => Ok(theirs == mine),
            Err(e) if gone(&e) => Err(Refusal::Gone),
            Err(e) => Err(Refusal::Unreadable { what, error: e }),
        }
    };
    // Refused early (whoever holds the pid now, a refusal is safe): a caller of its own
    // user namespace may have grown its mount table without bound.
    if !same_ns("ns/user")? {
        return Err(Refusal::OtherUserNamespace);
    }
    if !same_ns("ns/pid")? {
        return Err(Refusal::OtherPidNamespace);
    }
    // cgroup paths come back as the service's namespace writes them: a caller of another
    // cgroup namespace would see absolute paths its /proc makes relative.
    if !same_ns("ns/cgroup")? {
        return Err(Refusal::OtherCgroupNamespace);
    }
    let mountinfo = read("mountinfo", MAX_MOUNTINFO_BYTES)?;

    // Everything read was of the process that holds the pid now: it is the caller only if
    // the caller is still alive (a pid is not reused while its process lives).
    if let Some(pidfd) = &peer.pidfd {
        match pidfd_alive(pidfd.as_fd()) {
            Ok(true) => {}
            Ok(false) => return Err(Refusal::Gone),
            Err(e) => {
                return Err(Refusal::Unreadable {
                    what: "pidfd",
                    error: e,
                })
            }
        }
    }

    let ids = parse_status_ids(&status).ok_or_else(|| Refusal::Unreadable {
        what: "status",
        error: std::io::Error::from(std::io::ErrorKind::InvalidData),
    })?;
    if ids.uids[1] != peer.uid || ids.gids[1] != peer.gid {
        return Err(Refusal::CredentialsChanged);
    }
    let proc_mount = match parse_proc_mount(&mountinfo) {
        Ok(m) => m,
        Err(MountError::NoProc) => return Err(Refusal::NoProc),
        Err(MountError::Unknown(opt)) => {
            return Err(Refusal::Unreadable {
                what: "mountinfo",
                error: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("unknown procfs option {opt:?}"),
                ),
            })
        }
    };
    // The procfs the caller sees at /proc must be of the service's pid namespace: its
    // "self" names the service by the service's own pid only then (in another namespace's
    // procfs the service has another pid, or none: ENOENT). Looked up through the caller's
    // root only now that its namespaces are the service's and its /proc is procfs: nothing
    // in that walk is the caller's to serve (a FUSE mount of its own could stall it).
    // The directory stays the caller's process's even if the pid were reused since.
    let proc_self = dir.readlink("root/proc/self");
    match proc_self {
        Ok(link) if link == std::process::id().to_string().as_bytes() => {}
        Ok(_) => return Err(Refusal::OtherPidNamespace),
        Err(e) if gone(&e) => return Err(Refusal::OtherPidNamespace),
        Err(e) => {
            return Err(Refusal::Unreadable {
                what: "root/proc/self",
                error: e,
            })
        }
    }
    if rules.lsm_gates && proc_mount.hidepid != HidePid::Off {
        return Err(Refusal::HiddenPidsUnderLsm);
    }
    // Capabilities count only for a caller that was root when it connected and is root now:
    // SO_PEERCRED fixes the ids at connect(), but capabilities are read now, and a process
    // that connected, passed the socket on and exec'ed a file-capability helper would
    // otherwise be judged with capabilities it did not connect with. A capability-holding
    // non-root caller is then shown less than its /proc would, never more.
    let root = peer.uid == 0 && ids.uids.iter().all(|&u| u == 0);
    let cap = |bit: u32| root && ids.cap_eff & (1u64 << bit) != 0;
    Ok(Caller {
        pid: peer.pid,
        fsuid: ids.uids[3],
        fsgid: ids.gids[3],
        groups: ids.groups,
        cap_sys_ptrace: cap(CAP_SYS_PTRACE),
        cap_dac_read: cap(CAP_DAC_OVERRIDE) || cap(CAP_DAC_READ_SEARCH),
        proc_mount,
        rules,
    })
}

/// A directory of the service's /proc, held open: the files of one process are read
/// relative to it, so they are all of the process the directory was opened for.
struct Dir(OwnedFd);

impl Dir {
    fn open(path: &Path) -> std::io::Result<Dir> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        Self::open_raw(libc::AT_FDCWD, &c)
    }

    /// `name` (digits, '/' and ASCII names: no NUL) under this directory.
    fn open_at(&self, name: &str) -> std::io::Result<Dir> {
        Self::open_raw(self.0.as_raw_fd(), &cstr(name)?)
    }

    fn open_raw(at: RawFd, path: &std::ffi::CStr) -> std::io::Result<Dir> {
        sys::openat_dir(at, path).map(Dir)
    }

    /// The whole of the file `name`, up to `max` bytes (more is an error: not the kernel's).
    fn read(&self, name: &str, max: usize) -> std::io::Result<Vec<u8>> {
        let fd = sys::openat_ro(self.0.as_raw_fd(), &cstr(name)?)?;
        // SAFETY: openat_ro returned this descriptor to us alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut out = vec![0u8; 16 << 10];
        let mut len = 0;
        loop {
            if len == out.len() {
                if out.len() >= max {
                    return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
                }
                out.resize((out.len() * 2).min(max), 0);
            }
            match sys::read_fd(fd.as_raw_fd(), &mut out[len..])? {
                0 => break,
                n => len += n,
            }
        }
        out.truncate(len);
        Ok(out)
    }

    /// The namespace a `ns/NAME` link names: its (device, inode).
    fn ns_id(&self, name: &str) -> std::io::Result<(u64, u64)> {
        let path = cstr(name)?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `path` is NUL-terminated; `st` is writable memory sized for `stat`.
        let rc = unsafe { libc::fstatat(self.0.as_raw_fd(), path.as_ptr(), st.as_mut_ptr(), 0) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fstatat returned 0, so it filled the whole structure.
        let st = unsafe { st.assume_init() };
        Ok((st.st_dev, st.st_ino))
    }

    /// The target of the link `name` (at most 64 bytes are kept: a pid).
    fn readlink(&self, name: &str) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; 64];
        let n = sys::readlinkat(self.0.as_raw_fd(), &cstr(name)?, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}

fn cstr(s: &str) -> std::io::Result<CString> {
    CString::new(s).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real lines: this machine's /proc/self/status (Linux 6.18) as root, and as nobody with
    // groups 0 and 27 and the ambient CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (`setpriv
    // --reuid=65534 --regid=65534 --groups=0,27 --inh-caps=+sys_ptrace,+dac_read_search
    // --ambient-caps=+sys_ptrace,+dac_read_search cat /proc/self/status`).
    const STATUS_ROOT: &[u8] = b"Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t3712001\nNgid:\t0\nPid:\t3712001\nPPid:\t3711990\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t \nNStgid:\t3712001\nNSpid:\t3712001\nNSpgid:\t3712001\nNSsid:\t3711990\nKthread:\t0\nVmPeak:\t    5740 kB\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\n";
    const STATUS_NOBODY: &[u8] = b"Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t3712050\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nFDSize:\t64\nGroups:\t0 27 \nCapInh:\t0000000000080004\nCapPrm:\t0000000000080004\nCapEff:\t0000000000080004\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000080004\n";

    #[test]
    fn status_gives_fs_ids_groups_and_caps() {
        let r = parse_status_ids(STATUS_ROOT).expect("the test's own value");
        assert_eq!((r.uids, r.gids), ([0; 4], [0; 4]));
        assert!(r.groups.is_empty());
        assert_eq!(r.cap_eff, 0x1fffeffffff);
        assert!(r.cap_eff & (1 << CAP_SYS_PTRACE) != 0);
        let n = parse_status_ids(STATUS_NOBODY).expect("the test's own value");
        assert_eq!(n.uids, [65534; 4]);
        assert_eq!(n.groups, vec![0, 27]);
        assert_eq!(n.cap_eff, (1 << 19) | (1 << 2));
        // After setfsuid()/setfsgid() the fourth ids differ: those are the ones ptrace
        // compares.
        let fs = parse_status_ids(b"Uid:\t1000\t1000\t1000\t0\nGid:\t1000\t1000\t1000\t5\nGroups:\t\nCapEff:\t0000000000000000\n").expect("the test's own value");
        assert_eq!((fs.uids[3], fs.gids[3]), (0, 5));
    }

    #[test]
    fn status_without_a_needed_line_is_refused() {
        // No CapEff (a status cut short), no Groups, no Uid: never a default.
        let cut = &STATUS_ROOT[..STATUS_ROOT
            .windows(7)
            .position(|w| w == b"CapInh:")
            .expect("the test's own value")];
        assert_eq!(parse_status_ids(cut), None);
        assert_eq!(
            parse_status_ids(b"Name:\tx\nUid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t0\n"),
            None
        );
        assert_eq!(
            parse_status_ids(b"Uid:\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t0\n"),
            None
        );
        assert_eq!(
            parse_status_ids(
                b"Uid:\t1\t1\t1\t99999999999\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t0\n"
            ),
            None
        );
        assert_eq!(
            parse_status_ids(b"Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\tzz\n"),
            None
        );
    }

    // This machine's /proc/self/mountinfo lines, and the ones `mount -t proc -o ...` makes in
    // a private mount namespace (Linux 6.18).
    const HOST: &[u8] = b"20 1 253:0 / / rw,relatime - ext4 /dev/vda rw\n21 20 0:5 / /dev rw,nosuid - devtmpfs devtmpfs rw,size=4096k\n22 20 0:21 / /proc rw,relatime - proc proc rw\n23 20 0:22 / /sys rw,relatime - sysfs sysfs rw\n";

    #[test]
    fn the_hosts_proc_hides_nothing() {
        assert_eq!(parse_proc_mount(HOST), Ok(ProcMount::default()));
    }

    #[test]
    fn the_top_proc_mount_decides() {
        let stacked = [
            HOST,
            b"65 22 0:40 / /proc rw,relatime shared:5 - proc proc rw,hidepid=invisible,gid=27,subset=pid\n",
        ]
        .concat();
        assert_eq!(
            parse_proc_mount(&stacked),
            Ok(ProcMount {
                hidepid: HidePid::Invisible,
                gid: Some(27),
                subset_pid: true
            })
        );
        // The same lines in another order: still the one on top (its parent is 22).
        let reordered = [
            &b"65 22 0:40 / /proc rw,relatime - proc proc rw,hidepid=ptraceable\n"[..],
            HOST,
        ]
        .concat();
        assert_eq!(
            parse_proc_mount(&reordered).map(|m| m.hidepid),
            Ok(HidePid::Ptraceable)
        );
        // A tmpfs over /proc: no procfs there for the caller.
        let covered = [HOST, b"70 22 0:50 / /proc rw - tmpfs tmpfs rw\n"].concat();
        assert_eq!(parse_proc_mount(&covered), Err(MountError::NoProc));
    }

    #[test]
    fn old_numeric_hidepid_and_every_name() {
        for (v, h) in [
            ("0", HidePid::Off),
            ("off", HidePid::Off),
            ("1", HidePid::NoAccess),
            ("noaccess", HidePid::NoAccess),
            ("2", HidePid::Invisible),
            ("invisible", HidePid::Invisible),
            ("4", HidePid::Ptraceable),
            ("ptraceable", HidePid::Ptraceable),
        ] {
            let line = format!("22 20 0:21 / /proc rw - proc proc rw,hidepid={v}\n");
            assert_eq!(
                parse_proc_mount(line.as_bytes()).map(|m| m.hidepid),
                Ok(h),
                "{v}"
            );
        }
        for bad in ["hidepid=3", "hidepid=", "gid=x", "gid=-1", "subset=sys"] {
            let line = format!("22 20 0:21 / /proc rw - proc proc rw,{bad}\n");
            assert!(
                matches!(
                    parse_proc_mount(line.as_bytes()),
                    Err(MountError::Unknown(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn no_proc_at_proc() {
        assert_eq!(parse_proc_mount(b""), Err(MountError::NoProc));
        // Mounted elsewhere, or a path that only starts like it.
        assert_eq!(
            parse_proc_mount(b"22 20 0:21 / /proc2 rw - proc proc rw\n30 20 0:21 / /mnt/proc rw - proc proc rw\n"),
            Err(MountError::NoProc)
        );
    }

    #[test]
    fn hostile_mountinfo_never_panics() {
        for junk in [
            &b"22 20 0:21 / /proc"[..],
            b"22 20 0:21 / /proc rw - proc",
            b"22 20 0:21 / /proc rw -",
            b"- - - - /proc - - - - -",
            b"\n\n\n",
            b"22 22 0:21 / /proc rw - proc proc rw\n",
            &[0xff; 64],
        ] {
            let _ = parse_proc_mount(junk);
        }
        // A mount that is its own parent is not on top of itself: nothing on top.
        assert_eq!(
            parse_proc_mount(b"22 22 0:21 / /proc rw - proc proc rw\n"),
            Err(MountError::NoProc)
        );
    }

    #[test]
    fn lsm_lists() {
        assert_eq!(
            Rules::from_lsm_list(b"lockdown,capability,landlock,bpf"),
            Rules::NONE
        );
        assert_eq!(
            Rules::from_lsm_list(b"lockdown,capability,landlock,yama,apparmor\n"),
            Rules {
                lsm_gates: true,
                label_gated: false
            }
        );
        assert_eq!(
            Rules::from_lsm_list(b"lockdown,capability,yama,selinux,bpf,landlock"),
            Rules::UNKNOWN
        );
        assert!(Rules::from_lsm_list(b"capability,smack").lsm_gates);
        assert!(Rules::from_lsm_list(b"capability,tomoyo").lsm_gates);
        assert!(!Rules::from_lsm_list(b"capability,selinuxish").lsm_gates);
    }

    #[test]
    fn identify_this_process() {
        // The test's own process, through a socketpair: the kernel names it as the peer.
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("the test's own value");
        use std::os::fd::AsFd;
        let peer = peer_of(a.as_fd()).expect("the test's own value");
        assert_eq!(peer.pid as u32, std::process::id());
        // SAFETY: geteuid/getegid cannot fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        assert_eq!((peer.uid, peer.gid), (euid, egid));
        let caller = identify_with(Path::new("/proc"), Rules::NONE, &peer);
        match caller {
            Ok(c) => {
                assert_eq!(c.pid, peer.pid);
                assert_eq!(c.rules, Rules::NONE);
            }
            // A test run inside a container with another /proc arrangement.
            Err(e) => eprintln!("not identified here: {e}"),
        }
        // A peer whose pid is gone is not taken for anyone.
        let fake = Peer {
            pid: i32::MAX,
            uid: euid,
            gid: egid,
            pidfd: None,
        };
        assert!(matches!(
            identify_with(Path::new("/proc"), Rules::NONE, &fake),
            Err(Refusal::Gone)
        ));
        // A peer claiming other ids than its status shows.
        let liar = Peer {
            pid: peer.pid,
            uid: euid.wrapping_add(1),
            gid: egid,
            pidfd: None,
        };
        assert!(matches!(
            identify_with(Path::new("/proc"), Rules::NONE, &liar),
            Err(Refusal::CredentialsChanged)
        ));
    }

    proptest::proptest! {
        #[test]
        fn mount_tables_and_status_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            opts in "[a-z=0-9,]{0,40}",
        ) {
            let _ = parse_proc_mount(&bytes);
            let _ = parse_status_ids(&bytes);
            let line = format!("22 20 0:21 / /proc rw - proc proc {opts}\n");
            let _ = parse_proc_mount(line.as_bytes());
            let spliced = [HOST, &bytes[..], b"\n", line.as_bytes()].concat();
            let _ = parse_proc_mount(&spliced);
        }
    }
}
