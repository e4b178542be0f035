//! One process's files and syscalls that no snapshot group carries, read as psutil 7.2.2's
//! `Process` methods read them: the working directory, the regular files it has open (with
//! position and flags), its mappings (`smaps`), USS/PSS/swap (`smaps_rollup`, else `smaps`),
//! its sockets matched against the socket tables (and every process's, for the module-level
//! `net_connections`), its I/O priority (`ioprio_get`/`ioprio_set`) and its terminal's path
//! (`tty_nr` against the device numbers of `/dev/tty*` and `/dev/pts/*`, cached).
//!
//! A front end gets a [`ProcessFiles`] from [`crate::Host::process_files`]; every file read
//! is under that host's /proc and /dev roots, so tests run on fake trees (the paths a
//! process's links name are looked up in the caller's view, as psutil looks them up). The
//! parsers are tasksnap-procfs's [`tasksnap_procfs::proc_files`]. Errors are typed ([`FilesError`]) with
//! psutil's rules for telling a process that is gone from a zombie from a file the caller
//! may not read; [`ProcessFiles::identity`] is the one read of `stat` a caller checks a
//! pid's identity (start time) with before a read.
//!
//! Two kinds of call can block for as long as someone else decides, and both run on a
//! reader thread kept for them (`Reader`), watched by [`crate::blocked`] as the procfs
//! collector watches a command-line read; one blocked past the deadline is given up
//! ([`FilesError::TimedOut`]) instead of hanging the caller (the reader with it):
//! - reads of `smaps` and `smaps_rollup`, which take the target's mmap lock;
//! - stats of the paths a process's links name (`open_files` keeps the regular files, as
//!   psutil's `isfile_strict` does; a " (deleted)" suffix is kept when a file of that name
//!   exists): the target chose those paths, and on a FUSE mount whose server does not
//!   answer a stat never returns. Each path is first looked up in the kernel's caches only,
//!   on the caller's thread ([`tasksnap_sys::is_regular_file_cached`]: no wait possible, no thread
//!   hop); a call with a path the caches cannot answer for stats all its paths again in one
//!   job on the reader thread, under the deadline.
//!
//! Sockets are matched against the caller's network namespace, as psutil does (it reads
//! `/proc/net/*`): a process in another namespace shows no inet sockets. The inet tables are
//! read from `ROOT/net/{tcp,tcp6,udp,udp6}` (nothing in them is chosen by a user); unix
//! sockets are asked of the kernel over sock_diag ([`tasksnap_procfs::unix_diag`]) when the
//! roots are this kernel's, because `net/unix` prints socket names raw and a name can forge
//! another socket's row; `ROOT/net/unix` is read only on a fake tree or when sock_diag is
//! not there, and then its parser refuses every row of an inode listed twice.
//!
//! The parts: [`process`] (the reader, its errors, the one-file reads), [`fds`],
//! [`maps`], [`sockets`], and [`reader`] (the thread blocking reads run on).

mod fds;
mod maps;
mod process;
mod reader;
mod sockets;
#[cfg(test)]
mod tests;

pub use fds::OpenFile;
pub use maps::{Mapped, SmapsTotals};
pub use process::{FilesError, Identity, ProcessFiles};
pub use sockets::{Connection, Endpoint, SocketTable};
