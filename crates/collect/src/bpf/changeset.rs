//! A live view's change set: which processes may have changed since its last read, filled by
//! tracepoints (`changes.bpf.c`: a bit per process, by tgid in the initial pid namespace, and
//! each CPU's current process) so that a refresh reads those again and never visits an idle
//! task (changes.rs uses it). Each collector loads and attaches its own copy, so readers
//! never take each other's changes; it maps the bitmap read-write and takes it with one
//! atomic exchange per nonzero word: a bit set after the exchange is the next take's.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use tasksnap_bpf::skel::changes as skel;

/// Descriptors the loaded set keeps open (maps, programs, links, BTF), with some margin.
const DESCRIPTORS: u64 = 24;

/// Some change did not fit in the set (a tgid past its bitmap): the caller reads everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the change set lost {0} changes (a pid past its bitmap)")]
pub struct Lost(pub u64);

/// One mapping of a mmap-able BPF array of u64 values, read-write.
struct Words {
    ptr: *mut libc::c_void,
    bytes: usize,
    len: usize,
}

impl Words {
    /// Maps the `len` u64 values of the array `map`.
    fn map(map: &impl AsFd, len: usize) -> io::Result<Words> {
        let bytes = (len * 8).div_ceil(4096) * 4096;
        // SAFETY: mapping `bytes` bytes (the array's values, 8 bytes each, back to back, the
        // size rounded up to a page as the kernel does) of a mmap-able array map, shared,
        // checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Words { ptr, bytes, len })
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping holds `len` 8-byte aligned u64s for the life of self; the kernel
        // programs change them only with atomic operations or aligned stores, so viewing
        // them as atomics is sound.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<AtomicU64>(), self.len) }
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped; nothing borrows it past self.
        unsafe {
            libc::munmap(self.ptr, self.bytes);
        }
    }
}

/// The change set of one reader, loaded and attached.
pub(super) struct ChangeSet {
    bitmap: Words,
    oncpu: Words,
    skel: skel::ChangesSkel<'static>,
    _links: Vec<libbpf_rs::Link>,
    /// `lost` as the last take saw it.
    lost_seen: u64,
}

// SAFETY: the mappings are only touched through atomics; the skeleton's maps and programs
// are descriptors. The collector that owns it is moved between threads, never shared.
unsafe impl Send for ChangeSet {}

impl ChangeSet {
    /// Loads and attaches a change set for pids below `pid_max` (the current
    /// kernel.pid_max when `None`), or says why it cannot (old kernel, no BTF, a program
    /// refused, too few descriptors, not privileged).
    pub fn load(pid_max: Option<u32>) -> Result<ChangeSet, String> {
        tasksnap_bpf::loader::enough_descriptors(DESCRIPTORS, tasksnap_sys::nofile_limit())
            .map_err(|e| e.to_string())?;
        let pid_max = match pid_max {
            Some(n) => n,
            None => crate::machine::kernel_pid_max().ok_or("kernel.pid_max is unreadable")?,
        };
        let nwords = (pid_max as usize).div_ceil(64).max(1);
        let cpus = libbpf_rs::num_possible_cpus().map_err(|e| e.to_string())?;
        let mut sized = Ok(());
        let skel = tasksnap_bpf::loader::open_and_load(
            skel::ChangesSkelBuilder::default(),
            |open| {
                sized = open
                    .maps
                    .changed
                    .set_max_entries(nwords as u32)
                    .and_then(|()| open.maps.oncpu.set_max_entries(cpus as u32));
                if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
                    ro.nwords = nwords as u32;
                }
            },
            |e| format!("the kernel refused the change set's tracepoints: {e}"),
        )
        .map_err(|e| e.to_string())?;
        sized.map_err(|e| format!("cannot size the change set: {e}"))?;
        let progs = [
            &skel.progs.changes_switch,
            &skel.progs.changes_wakeup,
            &skel.progs.changes_wakeup_new,
            &skel.progs.changes_rename,
            &skel.progs.changes_cgroup,
            &skel.progs.changes_exec,
            &skel.progs.changes_free,
        ];
        let mut links = Vec::with_capacity(progs.len());
        for p in progs {
            links.push(
                p.attach()
                    .map_err(|e| format!("cannot attach the change set: {e}"))?,
            );
        }
        visit_every_cpu(cpus);
        let bitmap = Words::map(&skel.maps.changed, nwords).map_err(|e| e.to_string())?;
        let oncpu = Words::map(&skel.maps.oncpu, cpus).map_err(|e| e.to_string())?;
        Ok(ChangeSet {
            bitmap,
            oncpu,
            skel,
            _links: links,
            lost_seen: 0,
        })
    }

    fn lost(&self) -> u64 {
        self.skel.maps.bss_data.as_deref().map_or(0, |b| {
            // SAFETY: an aligned u64 of the mapped .bss, changed by the programs' atomic
            // adds only: read as an atomic.
            unsafe { AtomicU64::from_ptr((&b.lost as *const u64).cast_mut()) }
                .load(Ordering::SeqCst)
        })
    }

    /// Forgets everything marked so far (a whole pass is about to read every process).
    pub fn clear(&mut self) {
        for w in self.bitmap.words() {
            if w.load(Ordering::Relaxed) != 0 {
                w.swap(0, Ordering::SeqCst);
            }
        }
        self.lost_seen = self.lost();
    }

    /// The processes (tgids, sorted, each once) that may have changed since the last take
    /// or [`ChangeSet::clear`], into `out`: those marked, and those on a CPU now (read
    /// before the bitmap, so a process that leaves its CPU meanwhile is marked by then).
    pub fn take(&mut self, out: &mut Vec<u32>) -> Result<(), Lost> {
        out.clear();
        for w in self.oncpu.words() {
            let tgid = w.load(Ordering::Relaxed) as u32;
            if tgid != 0 {
                out.push(tgid);
            }
        }
        fence(Ordering::SeqCst);
        for (i, w) in self.bitmap.words().iter().enumerate() {
            if w.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut bits = w.swap(0, Ordering::SeqCst);
            while bits != 0 {
                out.push((i * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        out.sort_unstable();
        out.dedup();
        let lost = self.lost();
        if lost != self.lost_seen {
            let n = lost.wrapping_sub(self.lost_seen);
            self.lost_seen = lost;
            return Err(Lost(n));
        }
        Ok(())
    }
}

/// Runs the calling thread once on each of the first `cpus` CPUs, then lets it run where it
/// could before: each CPU switches to it and back, so `oncpu` holds every CPU's current
/// process from then on. (A thread that ran alone on its CPU since before the load would
/// otherwise not be there until that CPU next switched, and its changes would wait for it.)
fn visit_every_cpu(cpus: usize) {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity and sched_setaffinity take this
    // thread (0), the set's size and a pointer to it, valid for each call.
    unsafe {
        let mut was: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut was) != 0 {
            return;
        }
        for cpu in 0..cpus.min(libc::CPU_SETSIZE as usize) {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            // An offline CPU refuses (EINVAL): nothing runs there to be missed.
            if libc::sched_setaffinity(0, size, &one) == 0 {
                libc::sched_yield();
            }
        }
        libc::sched_setaffinity(0, size, &was);
    }
}
