//! Opening a recording for a command that reads one (`ps`/`states`/`top --replay`, `dump`):
//! [`open`] says the store's warnings once (entries named like segments that are not regular
//! files: a FIFO, a directory, a link, skipped and never opened), and where the clock stepped
//! back during the recording (a time there occurs twice); [`window`] (and
//! [`window_within`], for a dump of a recording) is the window `--from` .. `--to` asks for,
//! and [`overlaps`] refuses one that misses the recording.

use std::path::Path;

use tasksnap_history::{History, ReplayError};

/// [`History::open`], then each of the store's warnings on stderr, prefixed with `cmd`, and
/// [`History::clock_warning`].
pub fn open(cmd: &str, dir: &Path) -> Result<History, ReplayError> {
    let history = History::open(dir)?;
    for w in history.store().warnings() {
        warn!("{cmd}: {w}");
    }
    if let Some(w) = history.clock_warning()? {
        warn!("{cmd}: warning: {w}");
    }
    Ok(history)
}

/// Refuses a window `from` .. `to` (Unix ns) that misses the recording at `dir`, which runs
/// from `first` to `last`: nothing in it was recorded.
pub fn overlaps(
    dir: &Path,
    (from, to): (u64, u64),
    (first, last): (u64, u64),
) -> anyhow::Result<()> {
    if to < first || from > last {
        anyhow::bail!(
            "{} .. {} is outside the recording in {}, which runs from {} to {}",
            crate::when::rfc3339(from),
            crate::when::rfc3339(to),
            dir.display(),
            crate::when::rfc3339(first),
            crate::when::rfc3339(last)
        );
    }
    Ok(())
}

/// The window `--from` .. `--to` (Unix ns) of the recording at `dir`: each end defaults to
/// the recording's, and a window that is backwards or misses the recording is refused.
pub fn window(
    history: &History,
    dir: &Path,
    from: Option<u64>,
    to: Option<u64>,
) -> anyhow::Result<(u64, u64)> {
    window_within(dir, history.bounds()?, from, to)
}

/// [`window`] of a recording (or a dump of one) at `dir` that runs from `first` to `last`.
pub fn window_within(
    dir: &Path,
    (first, last): (u64, u64),
    from: Option<u64>,
    to: Option<u64>,
) -> anyhow::Result<(u64, u64)> {
    let from = from.unwrap_or(first);
    let to = to.unwrap_or(last);
    if from > to {
        anyhow::bail!(
            "--from ({}) is after --to ({})",
            crate::when::rfc3339(from),
            crate::when::rfc3339(to)
        );
    }
    overlaps(dir, (from, to), (first, last))?;
    Ok((from, to))
}
