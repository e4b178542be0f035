//! `--mmap-lock-storm`: a process whose mmap lock is held for seconds at a time, the seed's
//! mmap_sem pile-up, so that tests and benchmarks can show that a reader of
//! `/proc/PID/cmdline` (which takes that lock) never stalls a listing or a screen.
//!
//! One thread populates a 4 GiB anonymous mapping over and over (`MAP_POPULATE` faults every
//! page in while holding the lock for reading), another keeps asking for the lock for writing
//! (mmap/munmap of one page); every later reader queues behind the waiting writer, for as
//! long as the population takes (seconds). Nothing stays mapped between rounds.

/// The mapping each round populates.
const SIZE: usize = 4 << 30;

/// Maps `len` bytes with `flags` and unmaps them at once.
fn map_and_unmap(len: usize, prot: libc::c_int, flags: libc::c_int) {
    // SAFETY: a fresh anonymous private mapping, unmapped right away; no pointer into it is
    // kept or used.
    unsafe {
        let p = libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0);
        if p != libc::MAP_FAILED {
            libc::munmap(p, len);
        }
    }
}

/// Runs the storm until the process is killed.
pub fn storm() -> ! {
    let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    std::thread::spawn(move || loop {
        map_and_unmap(
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            anon | libc::MAP_POPULATE,
        );
    });
    // The writer starts once the first population holds the lock.
    std::thread::sleep(std::time::Duration::from_millis(100));
    loop {
        map_and_unmap(4096, libc::PROT_READ, anon);
    }
}
