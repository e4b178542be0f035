//! The one /proc reading layer: every parser of a /proc file tasksnap reads ([`parse`] for
//! per-task files, [`proc_files`] for the per-process files psutil's `Process` methods read
//! (fdinfo, smaps, the socket tables), [`system`] for machine-wide ones, [`net`] for the
//! owner of a TCP socket, [`unix_diag`] for the host's unix sockets asked of the kernel),
//! and the utmp file's records ([`utmp`]). tasksnap-collect's sources and the load generator
//! read /proc through this crate; nothing else parses a /proc file, and no front end
//! depends on it (they ask a `Host`). The system calls are tasksnap-sys's.
//!
//! Parsers are pure functions over bytes (`&[u8]`): no I/O, nothing assumed UTF-8, every
//! byte treated as hostile, a typed error or `None` instead of a panic.
#![deny(missing_docs)]

pub mod net;
pub mod parse;
pub mod proc_files;
pub mod system;
pub mod unix_diag;
pub mod utmp;
