//! What both exit sources share: their [`Options`], the root check, the reader's pid
//! namespace, the split of a task's CPU time, and the reader thread's stop signal and
//! hand-off of records to the caller.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tasksnap_model::ExitBatch;

use crate::error::Error;

/// Settings of the exit source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The BPF ring buffer's size, bytes: a power of two, at least a page (the kernel's rule
    /// for BPF ring buffers). A record is 712 bytes: the default 512 KiB holds ~730 exits
    /// between two wakeups of the source's reader thread, 40 ms of a 18,000-a-second storm
    /// (which lost none, docs/record.md). Its pages count twice in the process's RSS (the
    /// kernel maps the data area twice, for records that wrap): 4 MiB made top's RSS 8 MB
    /// larger. (The taskstats source's socket buffer is its own, 4 MiB of kernel memory.)
    pub ring_buffer_bytes: u32,
    /// The page size, bytes: the unit of the kernel's peak RSS (`signal->maxrss`); the
    /// host's ([`crate::Units::page_size_bytes`]).
    pub page_size_bytes: u64,
    /// Clock ticks per second: an exit's identity ([`tasksnap_model::Exit::id`]) has its start
    /// time cut to a whole tick, as /proc's `starttime` (and so every snapshot's `TaskId`)
    /// has, so a reading's exit and the same process's live (zombie) row compare equal.
    pub clock_ticks_per_s: u64,
    /// At most this many exits wait for a drain in the source's memory (each source has a
    /// reader thread that empties the kernel's buffer as records come, so a storm is bounded
    /// by this, not by the ring buffer): more are counted as dropped. The default, 65,536,
    /// holds 3 s of a 20,000-a-second storm (up to about 50 MB: an exit with a 512-byte
    /// command line takes about 760).
    pub max_pending_exits: usize,
}

/// [`Options::max_pending_exits`]'s default.
pub const MAX_PENDING_EXITS: usize = 65_536;

impl Default for Options {
    fn default() -> Options {
        Options {
            ring_buffer_bytes: 1 << 19,
            page_size_bytes: crate::units::page_size_bytes(),
            clock_ticks_per_s: crate::units::clock_ticks_per_s(),
            max_pending_exits: MAX_PENDING_EXITS,
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

    let link = std::path::Path::new(tasksnap_sys::roots::PROC).join("self/ns/pid");
    let ino = std::fs::metadata(&link)
        .map_err(|source| Error::Io {
            path: link.display().to_string(),
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

/// How a source stops its reader thread: an eventfd the thread polls beside its own
/// descriptor, written when the source is dropped, and the thread then joined.
#[derive(Debug)]
pub(crate) struct Stop {
    fd: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stop {
    /// A new eventfd: this half, and the reader's copy to poll (readable once stopped).
    pub(crate) fn new() -> std::io::Result<(Stop, OwnedFd)> {
        // SAFETY: eventfd takes no pointers; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor eventfd just returned, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let reader = fd.try_clone()?;
        Ok((Stop { fd, thread: None }, reader))
    }

    /// The reader thread to join when stopped.
    pub(crate) fn started(&mut self, thread: std::thread::JoinHandle<()>) {
        self.thread = Some(thread);
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a valid buffer to our eventfd.
        unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), 8) };
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// What a source's reader thread hands to `drain()`: the exits waiting (at most `max`; more
/// are counted as lost), the records lost, and why the reader stopped, if it did.
#[derive(Debug)]
pub(crate) struct Handoff {
    waiting: std::sync::Mutex<Waiting>,
    max: usize,
}

#[derive(Debug, Default)]
struct Waiting {
    exits: Vec<tasksnap_model::Exit>,
    lost: u64,
    failed: Option<String>,
}

impl Handoff {
    /// Room for `max` exits between two drains.
    pub(crate) fn new(max: usize) -> std::sync::Arc<Handoff> {
        std::sync::Arc::new(Handoff {
            waiting: std::sync::Mutex::new(Waiting::default()),
            max: max.max(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands over `exits` (emptied) as far as there is room, and `lost` records.
    pub(crate) fn put(&self, exits: &mut Vec<tasksnap_model::Exit>, lost: u64) {
        if exits.is_empty() && lost == 0 {
            return;
        }
        let mut w = self.lock();
        let room = self.max.saturating_sub(w.exits.len());
        w.lost += lost;
        if exits.len() > room {
            w.lost += (exits.len() - room) as u64;
            exits.truncate(room);
        }
        w.exits.append(exits);
    }

    /// Says why the reader stopped: the next drain fails with it.
    pub(crate) fn fail(&self, why: String) {
        self.lock().failed = Some(why);
    }

    /// What waited since the previous take, or why the reader stopped.
    pub(crate) fn take(&self) -> Result<ExitBatch, String> {
        let mut w = self.lock();
        if let Some(why) = &w.failed {
            return Err(why.clone());
        }
        Ok(ExitBatch {
            exits: std::mem::take(&mut w.exits),
            dropped: std::mem::take(&mut w.lost),
        })
    }
}

/// A reader thread's loop: waits until `fd` is readable or `stop` (the reader's copy from
/// [`Stop::new`]) is written, and calls `read` each time `fd` is; a `read` error, or a
/// failed wait, ends it and is handed over ([`Handoff::fail`]).
pub(crate) fn read_until_stopped(
    fd: std::os::fd::RawFd,
    stop: std::os::fd::RawFd,
    handoff: &Handoff,
    mut read: impl FnMut() -> Result<(), String>,
) {
    let why = loop {
        let mut fds = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: fds is a valid array of two pollfd for the call's duration.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break format!("poll: {e}");
        }
        if fds[1].revents != 0 {
            return;
        }
        if let Err(why) = read() {
            break why;
        }
    };
    handoff.fail(why);
}

#[cfg(test)]
mod tests {
    use crate::exits::common::{split_cputime, Handoff};

    #[test]
    fn the_handoff_keeps_what_fits_counts_the_rest_and_says_a_failure() {
        let h = Handoff::new(3);
        let exit = |tgid| tasksnap_model::Exit {
            id: tasksnap_model::TaskId {
                tgid,
                tid: tgid,
                start_time_ns: 0,
            },
            ..tasksnap_model::Exit::default()
        };
        let mut got = vec![exit(1), exit(2)];
        h.put(&mut got, 0);
        assert!(got.is_empty());
        h.put(&mut vec![exit(3), exit(4), exit(5)], 7);
        let b = h.take().expect("a batch");
        let tgids: Vec<i32> = b.exits.iter().map(|e| e.id.tgid).collect();
        assert_eq!(tgids, [1, 2, 3], "the first three, in order");
        assert_eq!(
            b.dropped,
            7 + 2,
            "the lost records and the two with no room"
        );
        let b = h.take().expect("a batch");
        assert!(b.exits.is_empty() && b.dropped == 0, "taken once");
        h.fail("gone".into());
        assert_eq!(h.take().map(|_| ()), Err("gone".to_string()));
    }

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
