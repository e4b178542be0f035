//! Counting what a benchmark row costs the kernel: system calls and kernel allocations
//! (the `raw_syscalls:sys_enter`, `kmem:kmalloc` and `kmem:kmem_cache_alloc` tracepoints) for
//! this process and everything it starts afterwards (threads, and child processes such as
//! procps `ps`), with perf counters opened with `inherit`. Reading an inherited counter
//! sums the children's counts (kernel/events/core.c perf_event_read_value()).
//!
//! Needs CAP_PERFMON (or a low kernel.perf_event_paranoid); without it the columns are left
//! empty and the reason is given once.

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;

use perf_event_open_sys as sys;

/// One tracepoint counter.
struct Counter(File);

impl Counter {
    fn open(tracepoint: &str) -> Result<Counter, String> {
        let id = tasksnap_collect::Host::tracepoint_id(tracepoint).map_err(|e| e.to_string())?;
        let mut attr = sys::bindings::perf_event_attr {
            type_: sys::bindings::PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
            config: id,
            ..Default::default()
        };
        attr.set_inherit(1);
        // SAFETY: `attr` is a valid perf_event_attr for the call; pid 0 / cpu -1 counts the
        // calling process (and, with inherit, what it starts) on every CPU.
        let fd = unsafe {
            sys::perf_event_open(
                &mut attr,
                0,
                -1,
                -1,
                sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
            )
        };
        if fd < 0 {
            return Err(format!(
                "perf_event_open({tracepoint}): {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: perf_event_open returned a new descriptor owned by nobody else.
        Ok(Counter(unsafe { File::from_raw_fd(fd) }))
    }

    fn read(&mut self) -> u64 {
        let mut b = [0u8; 8];
        match self.0.read(&mut b) {
            Ok(8) => u64::from_ne_bytes(b),
            _ => 0,
        }
    }
}

/// System calls and kernel allocations since the counters were opened.
pub struct Counters {
    syscalls: Counter,
    allocs: [Counter; 2],
}

/// A reading of [`Counters`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    pub syscalls: u64,
    pub kernel_allocs: u64,
}

impl Counters {
    /// Opens the counters, or says why they cannot be.
    pub fn open() -> Result<Counters, String> {
        Ok(Counters {
            syscalls: Counter::open("raw_syscalls/sys_enter")?,
            allocs: [
                Counter::open("kmem/kmalloc")?,
                Counter::open("kmem/kmem_cache_alloc")?,
            ],
        })
    }

    /// The counts so far.
    pub fn read(&mut self) -> Reading {
        Reading {
            syscalls: self.syscalls.read(),
            kernel_allocs: self.allocs.iter_mut().map(Counter::read).sum(),
        }
    }
}

impl Reading {
    /// What happened between `self` (earlier) and `later`, per run.
    pub fn per_run(self, later: Reading, runs: usize) -> Reading {
        let runs = runs.max(1) as u64;
        Reading {
            syscalls: later.syscalls.saturating_sub(self.syscalls) / runs,
            kernel_allocs: later.kernel_allocs.saturating_sub(self.kernel_allocs) / runs,
        }
    }
}
