//! The store's errors ([`StoreError`]): one variant per thing that can go wrong with a store
//! directory, each with a message a user reading it at 3 a.m. understands, naming the path.

use std::path::PathBuf;

use crate::frame::FrameError;

/// Everything the store can fail with. Nothing in this crate panics on bad input: a missing,
/// empty, foreign, damaged, newer or locked store, a full disk or a damaged frame is one of
/// these.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory does not exist.
    #[error("{}: no such directory, so nothing was recorded there (check the path)", path.display())]
    Missing {
        /// The directory asked for.
        path: PathBuf,
    },
    /// The directory exists and is empty: nothing was ever recorded there.
    #[error("{}: the directory is empty, nothing was recorded there", path.display())]
    Empty {
        /// The directory asked for.
        path: PathBuf,
    },
    /// The path is not a tasksnap store (a file, or a directory holding other things); the
    /// store never writes into it.
    #[error("{}: not a tasksnap store ({why}); refusing to touch it", path.display())]
    NotAStore {
        /// The path asked for.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// The store was written by a newer tasksnap whose format this one cannot read.
    #[error(
        "this store is in format {found}, written by a newer tasksnap; this tasksnap reads \
         formats up to {supported}: use a newer tasksnap to read it"
    )]
    NewerVersion {
        /// The format found in the store's marker file.
        found: u32,
        /// The newest format this build reads.
        supported: u32,
    },
    /// Another writer holds the store's lock.
    #[error("{}: another recorder is writing to this store{}; only one at a time (stop it, or record elsewhere)",
        path.display(),
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked {
        /// The holder's pid, as it wrote it in the lock file (`None` when unreadable).
        pid: Option<u32>,
        /// The store directory.
        path: PathBuf,
    },
    /// The disk (or the quota) is full: the write was undone, what was written before stays
    /// readable, and the writer refuses further appends.
    #[error("{}: the disk is full (or the quota reached); recording stopped, everything written before is kept", path.display())]
    Full {
        /// The file being written.
        path: PathBuf,
    },
    /// A frame or file failed its checks (CRC, lengths, decompression): it is not returned.
    #[error("{}: damaged data at byte {offset_bytes} ({what}); that frame is skipped", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// Where in the file.
        offset_bytes: u64,
        /// What check failed.
        what: String,
    },
    /// The segment holding an entry was deleted (by retention) after the entry was listed.
    #[error("{}: this part of the recording was deleted by retention while being read", path.display())]
    Expired {
        /// The segment that is gone.
        path: PathBuf,
    },
    /// The kind is reserved for the store's own frames ([`crate::INTERNAL_KIND`]).
    #[error("frame kind {kind:#x} is reserved for the store's own frames")]
    ReservedKind {
        /// The kind refused.
        kind: u8,
    },
    /// A payload too large for a frame.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The writer stopped after an earlier write error and refuses further appends.
    #[error("{}: recording already stopped after an earlier write error", path.display())]
    Stopped {
        /// The store directory.
        path: PathBuf,
    },
    /// The directory or a file in it is unsafe to use (a link, a FIFO, another user's
    /// directory, one others may write to...): refused, nothing written.
    #[error(transparent)]
    Unsafe(tasksnap_safefile::SafeError),
    /// Any other I/O error, with the file it happened on. The OS error is part of the message
    /// and deliberately not a `source`, so a printer of error chains says it once.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        err: std::io::Error,
    },
}

impl From<tasksnap_safefile::SafeError> for StoreError {
    /// An I/O error stays one (a full disk becomes [`StoreError::Full`]); a refusal is
    /// [`StoreError::Unsafe`].
    fn from(e: tasksnap_safefile::SafeError) -> StoreError {
        match e {
            tasksnap_safefile::SafeError::Io { path, err } => StoreError::io(path, err),
            e => StoreError::Unsafe(e),
        }
    }
}

impl StoreError {
    /// Wraps an I/O error on `path`: a full disk or quota (ENOSPC, EDQUOT) becomes
    /// [`StoreError::Full`].
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        let path = path.into();
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => StoreError::Full { path },
            _ => StoreError::Io { path, err: source },
        }
    }
}
