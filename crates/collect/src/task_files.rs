//! Per-task oddities a front end shows that no snapshot group carries: where a task's
//! symbolic links point (`fd/2`, `exe`) and the caller's own tty and capabilities (from
//! `self`). Each reads one file under a procfs root; `None` (or 0) when it cannot.

use std::path::Path;

use tasksnap_procfs::sys;

fn read(root: &Path, file: &str) -> Option<Vec<u8>> {
    sys::read_small_file(&root.join(file)).ok()
}

/// The calling process's effective capabilities (`root`/self/status `CapEff`).
pub fn own_effective_caps(root: &Path) -> Option<u64> {
    tasksnap_procfs::parse::parse_cap_eff(&read(root, "self/status")?)
}

/// Where the symbolic link `root`/PID/`name` (`fd/2`, `exe`) points.
pub fn task_link(root: &Path, pid: i32, name: &str) -> Option<std::path::PathBuf> {
    std::fs::read_link(root.join(pid.to_string()).join(name)).ok()
}

/// The calling process's controlling tty (`tty_nr` of `root`/self/stat), 0 when none or
/// unreadable (procps's `cached_tty`).
pub fn own_tty_nr(root: &Path) -> u32 {
    std::fs::read(root.join("self/stat"))
        .ok()
        .and_then(|b| tasksnap_procfs::parse::parse_stat(&b).ok())
        .map_or(0, |st| st.tty_nr as u32)
}
