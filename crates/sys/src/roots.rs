//! Where the running system mounts the kernel's trees: the one place tasksnap writes these
//! paths. Everything else joins file names onto them, or onto the roots a host's options put
//! in their place (a fake tree in a test).

/// The running kernel's procfs.
pub const PROC: &str = "/proc";
/// The running kernel's sysfs.
pub const SYS: &str = "/sys";
/// The device directory.
pub const DEV: &str = "/dev";
/// The runtime directory (systemd's sessions and machines, tasksnap's query socket).
pub const RUN: &str = "/run";
