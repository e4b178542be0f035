//! Per-task oddities a front end shows that no snapshot group carries: where a task's
//! symbolic links point (`fd/2`, `exe`) and the caller's own tty and capabilities (from
//! `self`). Each reads one file under a procfs root; `None` (or 0) when it cannot.

use std::path::Path;

use tasksnap_sys as sys;

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

/// How many descriptors `root`/PID/fd lists, by reading the directory as psutil's
/// `num_fds()` does. Unlike the directory's size (`Group::Fds`, which the kernel gives
/// anyone since `proc_fd_getattr`), listing it needs ptrace read access, so another
/// user's process is `PermissionDenied` here, as it is for psutil.
pub fn fd_count(root: &Path, pid: i32) -> std::io::Result<usize> {
    Ok(std::fs::read_dir(root.join(pid.to_string()).join("fd"))?
        .filter(|e| e.is_ok())
        .count())
}

/// Descriptors the calling process has open (the entries of `root`/self/fd, less the one
/// reading them); `None` when they cannot be listed.
pub fn own_open_descriptors(root: &Path) -> Option<usize> {
    let entries = std::fs::read_dir(root.join("self/fd")).ok()?;
    Some(entries.count().saturating_sub(1))
}

/// The CPUs task `pid` may run on (`sched_getaffinity(2)`), ascending. The mask grows
/// until the kernel's fits (`EINVAL` means the buffer is smaller than its `nr_cpu_ids`).
pub fn cpu_affinity(pid: i32) -> std::io::Result<Vec<usize>> {
    let mut words = 16usize; // 1,024 CPUs
    loop {
        let mut mask = vec![0u64; words];
        let bytes = words * std::mem::size_of::<u64>();
        // SAFETY: `mask` is a live buffer of exactly `bytes` bytes that the kernel fills
        // (up to its own mask size); libc's cpu_set_t is a plain bitmask, and the raw
        // syscall takes the buffer's length, so any size is valid.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                pid,
                bytes,
                mask.as_mut_ptr().cast::<libc::c_void>(),
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINVAL) && words < 1 << 16 {
                words *= 4;
                continue;
            }
            return Err(e);
        }
        let mut cpus = Vec::new();
        for (w, bits) in mask.iter().enumerate() {
            for b in 0..64 {
                if bits & (1u64 << b) != 0 {
                    cpus.push(w * 64 + b);
                }
            }
        }
        return Ok(cpus);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_affinity_is_a_subset_of_the_cpus() {
        let cpus = cpu_affinity(0).expect("own affinity");
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            cpu_affinity(i32::MAX)
                .expect_err("no such pid")
                .raw_os_error(),
            Some(libc::ESRCH)
        );
    }

    #[test]
    fn fd_count_lists_the_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("42/fd")).expect("mkdir");
        for n in ["0", "1", "7"] {
            std::fs::write(dir.join("42/fd").join(n), b"").expect("fd");
        }
        assert_eq!(fd_count(dir, 42).expect("count"), 3);
        assert_eq!(
            fd_count(dir, 43).expect_err("no pid 43").kind(),
            std::io::ErrorKind::NotFound
        );
    }
}
