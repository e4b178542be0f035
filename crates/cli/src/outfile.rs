//! Files a command writes because the user named them (`dump -o FILE`, `states --flamegraph
//! FILE`): opened through tasksnap-safefile, so a root tasksnap never writes through a
//! symbolic link (another user's link in the directories above it is not followed either), never truncates another user's file or a hard link to one (a regular file
//! is replaced by renaming a complete new one over it; a failed run leaves the old one
//! whole), writes a FIFO or device in place only when it is the caller's or root's, and never
//! writes inside the recording it is reading (compared by device and inode, not by path).

use std::path::Path;

use anyhow::Context;
use tasksnap_safefile::{split_path, Dir, Output};

/// Permission bits of a new output: the caller's only, as the store it may come from (a
/// recording holds every user's command lines).
pub const MODE: u32 = 0o600;

/// Opens `path` for output; `reading` is the directory of a recording being read, which the
/// output must not be in.
pub fn create(path: &Path, reading: Option<&Dir>) -> anyhow::Result<Output> {
    let cannot = || format!("cannot create {}", path.display());
    let Some((parent, name)) = split_path(path) else {
        anyhow::bail!("cannot create {}: it names no file", path.display());
    };
    let dir = Dir::open_trusted(&parent).with_context(cannot)?;
    if let Some(store) = reading {
        if dir.same_dir(store).with_context(cannot)? {
            anyhow::bail!(
                "refusing to write {} inside the recording being read ({}): it could \
                 overwrite the data it comes from; write it elsewhere",
                path.display(),
                store.path().display()
            );
        }
    }
    dir.open_output(&name, MODE)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {}", path.display(), e.reason()))
}
