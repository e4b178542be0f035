//! Opening a recording for a command that reads one (`ps`/`states`/`top --replay`, `dump`):
//! [`open`] says the store's warnings once (entries named like segments that are not regular
//! files: a FIFO, a directory, a link, skipped and never opened).

use std::path::Path;

use tasksnap_history::{History, ReplayError};

/// [`History::open`], then each of the store's warnings on stderr, prefixed with `cmd`.
pub fn open(cmd: &str, dir: &Path) -> Result<History, ReplayError> {
    let history = History::open(dir)?;
    for w in history.store().warnings() {
        warn!("{cmd}: {w}");
    }
    Ok(history)
}
