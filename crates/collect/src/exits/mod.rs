//! Exit records: one [`Exit`](tasksnap_model::Exit) per process that exits, with the whole
//! group's final figures, from a BPF program at `sched_process_exit` (crates/bpf's
//! `exits.bpf.c`) through a ring buffer; [`Exits::drain`] hands over what arrived since the
//! previous drain and how many records the kernel dropped meanwhile (the buffer was full).
//! Front ends reach it through [`Host::open_exits`](crate::Host::open_exits).
//!
//! This module holds what every build has (the reader's pid namespace, the CPU split); the
//! source itself is `source.rs` when this build has the BPF programs, else `stub.rs`, whose
//! [`Exits::load`] says why there are none (chosen by the `tasksnap_bpf::select!` in lib.rs).
//! Root only, as the other BPF sources: the program sees every process of the reader's pid
//! namespace regardless of /proc permissions.

pub use crate::exits_bpf::Exits;

use crate::Error;

/// Settings of the exit source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The ring buffer's size, bytes: a power of two, at least a page (the kernel's rule for
    /// BPF ring buffers). A record is 712 bytes: the default 4 MiB holds ~5,800 exits between
    /// two drains.
    pub ring_buffer_bytes: u32,
    /// The page size, bytes: the unit of the kernel's peak RSS (`signal->maxrss`); the
    /// host's ([`crate::Units::page_size_bytes`]).
    pub page_size_bytes: u64,
    /// Clock ticks per second: an exit's identity ([`tasksnap_model::Exit::id`]) has its start
    /// time cut to a whole tick, as /proc's `starttime` (and so every snapshot's `TaskId`)
    /// has, so a reading's exit and the same process's live (zombie) row compare equal.
    pub clock_ticks_per_s: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ring_buffer_bytes: 1 << 22,
            page_size_bytes: crate::host::page_size_bytes(),
            clock_ticks_per_s: crate::host::clock_ticks_per_s(),
        }
    }
}

/// Whether the caller may load the exit program: root only ([`tasksnap_bpf::privileged`]).
pub fn privileged() -> Result<(), Error> {
    tasksnap_bpf::privileged(
        "the exit records show every process of the host regardless of /proc permissions, so \
         tasksnap loads them only for root",
    )
    .map_err(|why| Error::BpfUnavailable(why.to_string()))
}

/// The caller's pid namespace as the exit program filters by it: the inode number of
/// /proc/self/ns/pid (the namespace's `ns.inum`; the magic link names the caller's own
/// namespace whichever procfs is mounted at /proc). The program searches a pid's levels for
/// it: the level is not read from /proc/self/status, whose NSpid is relative to the mounted
/// procfs's namespace (docs/bpf.md, "Pid namespaces").
pub fn reader_pid_ns_inum() -> Result<u32, Error> {
    use std::os::unix::fs::MetadataExt;

    let ino = std::fs::metadata("/proc/self/ns/pid")
        .map_err(|source| Error::Io {
            path: "/proc/self/ns/pid".into(),
            error: source,
        })?
        .ino();
    // ns inode numbers come from the proc inode allocator (proc_alloc_inum(): an unsigned
    // int), so they fit.
    u32::try_from(ino)
        .map_err(|_| Error::Unsupported(format!("pid namespace inode {ino} is not 32-bit")))
}

/// The group's CPU time split into user and system ns as the kernel splits it for
/// /proc/PID/stat and rusage (cputime_adjust(), kernel/sched/cputime.c): the precise runtime
/// `runtime_ns`, shared in the proportion of the tick-sampled `utime_ns` and `stime_ns`.
/// (The kernel also keeps each half from going backwards between reads; one final read has
/// nothing to keep.)
pub fn split_cputime(runtime_ns: u64, utime_ns: u64, stime_ns: u64) -> (u64, u64) {
    if stime_ns == 0 {
        return (runtime_ns, 0);
    }
    if utime_ns == 0 {
        return (0, runtime_ns);
    }
    let stime = (u128::from(stime_ns) * u128::from(runtime_ns)
        / (u128::from(stime_ns) + u128::from(utime_ns))) as u64;
    (runtime_ns - stime, stime)
}

#[cfg(test)]
mod tests {
    use super::split_cputime;

    #[test]
    fn cputime_split_follows_the_tick_samples_and_sums_to_the_runtime() {
        assert_eq!(split_cputime(50_000_000, 0, 0), (50_000_000, 0));
        assert_eq!(split_cputime(50_000_000, 4_000_000, 0), (50_000_000, 0));
        assert_eq!(split_cputime(50_000_000, 0, 8_000_000), (0, 50_000_000));
        // 3 user ticks for 1 system tick: three quarters user.
        assert_eq!(
            split_cputime(52_000_000, 12_000_000, 4_000_000),
            (39_000_000, 13_000_000)
        );
    }
}
