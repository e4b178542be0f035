//! What `bench` and `doctor` time as baselines: the reads every sampling tool pays, done
//! the way such tools do them (no descriptor reuse, growing reads), against a procfs root.

use std::path::Path;

/// One whole read of `root`/stat as every sampling tool does it (`std::fs::read`: growing
/// reads), for `doctor`'s timing.
pub fn read_proc_stat(root: &Path) -> Option<Vec<u8>> {
    std::fs::read(root.join("stat")).ok()
}

/// The article's baseline for `bench`: open and close `root`/PID/`file` of each pid.
pub fn open_close_each(root: &Path, pids: &[i32], file: &str) {
    for p in pids {
        let _ = std::fs::File::open(root.join(format!("{p}/{file}")));
    }
}

/// The article's baseline for `bench`: open, one read into `buf`, close, for `root`/PID/`file`
/// of each pid.
pub fn open_read_close_each(root: &Path, pids: &[i32], file: &str, buf: &mut [u8]) {
    use std::io::Read;
    for p in pids {
        if let Ok(mut f) = std::fs::File::open(root.join(format!("{p}/{file}"))) {
            let _ = f.read(buf);
        }
    }
}
