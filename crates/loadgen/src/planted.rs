//! What the hostile-directory tests plant (the store's `tests/safety.rs`, the binary's
//! `tests/safefs.rs`): a scratch victim file that must come out whole, a store directory with
//! a link planted in it or with permissions another user could abuse, and the check that
//! nothing was written there. Everything is made under the caller's scratch directory;
//! nothing outside it is touched.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a victim file holds; a test fails when it holds anything else afterwards.
pub const VICTIM_TEXT: &str = "precious contents\n";

/// Writes the victim file `dir/victim` and returns its path.
pub fn victim(dir: &Path) -> PathBuf {
    let v = dir.join("victim");
    fs::write(&v, VICTIM_TEXT).expect("write the victim");
    v
}

/// Panics unless the victim `v` still holds [`VICTIM_TEXT`], byte for byte.
pub fn assert_victim_whole(v: &Path) {
    assert_eq!(fs::read_to_string(v).expect("victim"), VICTIM_TEXT);
}

/// A fresh empty directory `parent/store`, for a store to be made in.
pub fn store_dir(parent: &Path) -> PathBuf {
    let dir = parent.join("store");
    fs::create_dir(&dir).expect("mkdir");
    dir
}

/// `parent/store` with a symbolic link named `name` in it that points at a fresh victim
/// (`parent/victim`): `(store, victim)`.
pub fn store_with_link(parent: &Path, name: &str) -> (PathBuf, PathBuf) {
    let v = victim(parent);
    let dir = store_dir(parent);
    symlink(&v, dir.join(name)).expect("plant the link");
    (dir, v)
}

/// `parent/store` with permission bits `mode` (0o777, 0o1777: others may write to it).
pub fn store_with_mode(parent: &Path, mode: u32) -> PathBuf {
    let dir = store_dir(parent);
    fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).expect("chmod");
    dir
}

/// `parent/store` given to the user and group `nobody` (65534); `None` when the test is
/// skipped since only root can do that ([`crate::root_or_skip`] says so).
pub fn store_owned_by_nobody(parent: &Path) -> Option<PathBuf> {
    if !crate::root_or_skip("giving a directory to nobody") {
        return None;
    }
    let dir = store_dir(parent);
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
    Some(dir)
}

/// Panics unless `dir` is empty: a refused writer wrote nothing there.
pub fn assert_nothing_written(dir: &Path) {
    let left: Vec<_> = fs::read_dir(dir)
        .expect("ls")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert!(
        left.is_empty(),
        "nothing written, yet {dir:?} holds {left:?}"
    );
}
