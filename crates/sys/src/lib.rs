//! The system calls and C library calls tasksnap makes outside the /proc parsers, each
//! wrapped once so that the crates above are safe code: descriptors and files relative to a
//! directory descriptor, socket options, this process and its kernel (limits,
//! thread ids, I/O priority, `sysinfo`, `sysconf`, the kernel release), clocks (any clock,
//! CPU clocks, the local time), the terminal's size, the one user and group lookup
//! ([`users`], through NSS), and the roots of the kernel's trees ([`roots`]).
//!
//! Nothing here parses a /proc file: that is tasksnap-procfs's. A front end may use this
//! crate directly (a clock, the terminal's size, a user's name); what it reads of the host
//! it asks its `Host`.
#![deny(missing_docs)]

mod clock;
mod files;
mod process;
pub mod roots;
mod socket;
mod terminal;
pub mod users;

pub use clock::{clock_ns, local_clock, local_time, process_cpu_ns, thread_cpu_ns};
pub use files::{
    close, close_from, dup2, inode_at, is_procfs, is_regular_file_cached, openat_dir, openat_ro,
    owner_at, read_beneath, read_fd, read_small_file, readlinkat, size_at, unshare_files, FdBatch,
};
pub use process::{
    advise_huge_pages, cores, gettid, ioprio_get, ioprio_set, is_exhaustion, kernel_release,
    nofile_limit, raise_nofile_limit, sysconf, sysinfo, SysInfo,
};
pub use socket::{get_option, set_option, OptionValue};
pub use terminal::terminal_size;
