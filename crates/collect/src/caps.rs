//! Giving up privileges once the BPF programs are loaded or opened.
//!
//! Loading needs CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN); reading an iterator, updating its
//! map and attaching a one-process iterator link need none (Linux 6.5 moved the
//! unprivileged-BPF checks from every bpf(2) command into map and program creation, commit
//! c8644cd0efe7). What a root tasksnap still needs afterwards is what procps needs to read
//! other users' /proc files, plus what `top` needs to act on tasks; the rest is dropped from
//! the effective, permitted and inheritable sets, so a bug later in the run cannot use it.
//!
//! Capabilities are per thread: call this before starting any thread (threads started
//! afterwards inherit the reduced sets). Front ends never call this: their `Host` does, once.

use std::io;

// Capability numbers (include/uapi/linux/capability.h), as bits of a 64-bit set.
/// Open files whatever their mode bits say.
const CAP_DAC_OVERRIDE: u64 = 1 << 1;
/// Read and search directories whatever their mode bits say.
const CAP_DAC_READ_SEARCH: u64 = 1 << 2;
/// Signal any process (`top`'s kill).
const CAP_KILL: u64 = 1 << 5;
/// Pass ptrace access checks: /proc files guarded by them (io, environ, wchan, exe).
const CAP_SYS_PTRACE: u64 = 1 << 19;
/// Raise any process's priority (`top`'s renice).
const CAP_SYS_NICE: u64 = 1 << 23;
/// Create BPF maps (the BPF walk's memory, made again when the host grows).
const CAP_BPF: u64 = 1 << 39;

/// What a front end keeps once its sources are loaded: reading other users' /proc files, and
/// `top`'s kill and renice.
pub const KEPT: u64 =
    CAP_DAC_OVERRIDE | CAP_DAC_READ_SEARCH | CAP_KILL | CAP_SYS_PTRACE | CAP_SYS_NICE;

/// What a reader that never acts on tasks keeps (an exporter, the query service's
/// connections): [`KEPT`] less CAP_KILL and CAP_SYS_NICE.
pub const KEPT_READING: u64 = CAP_DAC_OVERRIDE | CAP_DAC_READ_SEARCH | CAP_SYS_PTRACE;

/// What the query service's pass thread keeps: [`KEPT_READING`], and CAP_BPF to grow the
/// walk's memory for a host that grew (a service runs for weeks).
pub const KEPT_SERVICE_PASSES: u64 = KEPT_READING | CAP_BPF;

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn get() -> io::Result<[Data; 2]> {
    let mut h = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget writes two Data structs (version 3 layout) for the calling thread; both
    // pointers are valid for the call.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(d)
}

/// The calling thread's effective set, as a 64-bit mask.
pub fn effective() -> io::Result<u64> {
    let d = get()?;
    Ok(u64::from(d[0].effective) | u64::from(d[1].effective) << 32)
}

/// Keeps only `keep` (a mask of capability numbers) in the calling thread's effective,
/// permitted and inheritable sets. Returns the effective set after the change.
pub fn keep_only(keep: u64) -> io::Result<u64> {
    let mut d = get()?;
    for (i, word) in d.iter_mut().enumerate() {
        let k = (keep >> (32 * i)) as u32;
        word.effective &= k;
        word.permitted &= k;
        word.inheritable &= k;
    }
    let mut h = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    // SAFETY: capset reads the header and two Data structs for the calling thread; both
    // pointers are valid for the call. Only clearing bits, which never needs privilege.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    effective()
}
