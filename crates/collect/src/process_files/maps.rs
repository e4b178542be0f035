//! A process's mappings: `smaps` by mapping and grouped by path, and the USS/PSS/swap
//! totals (`smaps_rollup`, else `smaps`), read on the reader thread since they take the
//! target's mmap lock.

use std::collections::HashMap;

use tasksnap_procfs::proc_files::{self, MapFigures};

use super::process::*;

/// One mapping of `smaps`, its path cleaned as psutil does (`[anon]` for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// `start-end`.
    pub addr: Vec<u8>,
    /// Permissions.
    pub perms: Vec<u8>,
    /// The path.
    pub path: Vec<u8>,
    /// Its figures, bytes.
    pub figures: MapFigures,
}

/// USS, PSS and swap of a process, bytes (psutil's extras of `memory_full_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmapsTotals {
    /// Private pages (every `Private_*` line).
    pub uss_bytes: u64,
    /// Proportional set size.
    pub pss_bytes: u64,
    /// Swapped out.
    pub swap_bytes: u64,
}

impl ProcessFiles {
    /// Reads `PID/name` (`smaps`, `smaps_rollup`) on a watched thread (see the module header).
    pub(super) fn read_watched(&self, pid: i32, name: &str) -> Result<Vec<u8>, FilesError> {
        let path = self.pid_dir(pid).join(name);
        match self.read_with_deadline(&path) {
            Ok(Ok(b)) => Ok(b),
            Ok(Err(e)) => Err(self.classify(pid, &path, e)),
            Err(e) => Err(e),
        }
    }

    /// Every mapping of `pid` (psutil's `memory_maps(grouped=False)`); a zombie's empty
    /// `smaps` is [`FilesError::Zombie`].
    pub fn memory_maps(&self, pid: i32) -> Result<Vec<Mapped>, FilesError> {
        let data = self.read_watched(pid, "smaps")?;
        if data.trim_ascii().is_empty() {
            if let Some(z) = self.zombie(pid) {
                return Err(z);
            }
            return Ok(Vec::new());
        }
        let maps = proc_files::parse_smaps(&data);
        let paths = self.clean_all(pid, maps.iter().map(|m| m.path.clone()).collect())?;
        Ok(maps
            .into_iter()
            .zip(paths)
            .map(|(m, path)| Mapped {
                path: if path.is_empty() {
                    b"[anon]".to_vec()
                } else {
                    path
                },
                addr: m.addr,
                perms: m.perms,
                figures: m.figures,
            })
            .collect())
    }

    /// The mappings grouped by path, figures summed, in order of first appearance
    /// (psutil's `memory_maps(grouped=True)`).
    pub fn memory_maps_grouped(&self, pid: i32) -> Result<Vec<(Vec<u8>, MapFigures)>, FilesError> {
        let mut out: Vec<(Vec<u8>, MapFigures)> = Vec::new();
        let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
        for m in self.memory_maps(pid)? {
            match at.get(&m.path) {
                Some(&i) => out[i].1.add(&m.figures),
                None => {
                    at.insert(m.path.clone(), out.len());
                    out.push((m.path, m.figures));
                }
            }
        }
        Ok(out)
    }

    /// USS, PSS and swap (psutil's extras of `memory_full_info()`): from `smaps_rollup`, or
    /// from `smaps` when that says ESRCH/ENOENT (which it does for some live processes).
    pub fn smaps_totals(&self, pid: i32) -> Result<SmapsTotals, FilesError> {
        let data = match self.read_watched(pid, "smaps_rollup") {
            Ok(d) => d,
            Err(FilesError::Gone { .. } | FilesError::Zombie { .. }) => {
                self.read_watched(pid, "smaps")?
            }
            Err(FilesError::Io { error, .. })
                if matches!(io_kind(&error), Some(libc::ENOENT) | Some(libc::ESRCH)) =>
            {
                self.read_watched(pid, "smaps")?
            }
            Err(e) => return Err(e),
        };
        let (uss_bytes, pss_bytes, swap_bytes) = proc_files::parse_smaps_totals(&data);
        Ok(SmapsTotals {
            uss_bytes,
            pss_bytes,
            swap_bytes,
        })
    }
}
