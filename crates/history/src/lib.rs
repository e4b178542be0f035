//! tasksnap's recording codec: a [`Reading`] per interval to uncompressed payloads for the
//! store (which adds zstd and checksums), and back.
//!
//! Each reading becomes an [`Encoded`]: an optional *names* payload (frame kind
//! [`KIND_NAMES`]) and a *sample* payload (frame kind [`KIND_SAMPLE`]), stored in that order
//! with the reading's time (`snapshot.taken_at_unix_ns`) and the same key flag.
//!
//! * A **key** sample holds every task row and every thread-totals row in full. A **delta**
//!   sample is relative to the last key (never to another delta, so seeking needs the key and
//!   one delta): only the rows that differ from the key's row of the same identity
//!   ([`tasksnap_model::TaskId`]), the rows that are new, and the key's identities that are
//!   gone. Raw figures are stored; rates are derived on read.
//! * A thread that did not switch since the key (only its current state's ns, and the
//!   reasons entry `(current, wait_reason)` when it has one, grew by exactly its own
//!   `seen_at_ns - key.seen_at_ns`) is omitted from a delta. The decoder reproduces it as the
//!   key's row grown by the *sample's* elapsed time (`at_ns - key.at_ns`): its `seen_at_ns`
//!   becomes `key.seen_at_ns + that elapsed time`, and the current state's ns (and the wait
//!   reason's ns) grow by the same amount, i.e. the row as it would have been read at that
//!   moment. When the thread's own elapsed time equals the sample's (as when every thread is
//!   stamped with the sample time) the round trip is exact.
//! * Command lines and cgroups are not in sample rows: a key's names payload holds them for
//!   every task of the key, a delta's only for identities whose values no names payload
//!   since the key gave (new tasks, or an exec that changed them), so each is stored once per
//!   task identity per key interval. A thread whose values equal the entry before it (its
//!   process's, usually) is written as "same as before".
//! * Each sample frame (key or delta) holds the processes that exited since the previous
//!   reading, whole, in a column of its own (format minor 1): they belong to that sample and
//!   are never carried from a key. A store written before has no such column; its samples
//!   decode with no exits and `exits_missing` set to [`EXITS_NOT_RECORDED`].
//! * Each key sample frame holds the host name and boot id of the reading (format minor
//!   2, see `host.rs`); a delta has its key's, and a reading whose identity differs from
//!   the key's is written as a key. A store written before has none: its readings' `host`
//!   is unknown.
//! * Each thread row's throttled time (the seventh thread state) is in a column of its own
//!   (format minor 3, see `threads.rs`): a reader of an older minor reads it as runnable, as
//!   a build without the state measured it; a store written before reads with none.
//! * Each sample frame may hold the host's cgroups table (format minor 4, see `cgroups.rs`):
//!   a key's in full, a delta's as the cgroups that differ from the key's, are new, or are
//!   gone. A reader of an older minor skips it; a store written before, or a reading without
//!   one, decodes with `cgroups: None`.
//! * Every payload starts with a header: magic `TH`, format major and minor (`u16` LE each),
//!   and the frame type. A newer major is refused with [`HistoryError::NewerFormat`]; data a
//!   newer minor appends (columns, trailing fields) is ignored.
//! * Rows are stored column by column (one buffer per field group), every integer a varint,
//!   written as its difference from a reference row: the key's row of the same identity in a
//!   delta, else the row before it in the frame.
//!
//! [`Recorder`] writes readings to a store in that protocol (names before sample, a key where
//! a segment starts); [`History`] reads a store back: the reading in force at a moment, or
//! every reading of a window, skipping damaged frames.
//!
//! Decoding treats every byte as hostile: lengths are checked against the bytes left before
//! anything is allocated, and every failure is a [`HistoryError`], never a panic.
#![deny(missing_docs)]

mod cgroups;
mod decoder;
mod encoder;
mod exits;
mod host;
mod meta;
mod names;
mod recorder;
mod replay;
mod tasks;
mod threads;
mod wire;

pub use decoder::Decoder;
pub use encoder::{Encoded, Encoder, DEFAULT_KEY_EVERY};
pub use exits::EXITS_NOT_RECORDED;
pub use recorder::{Appended, Recorder};
pub use replay::{rfc3339, History, Readings, ReplayError};
pub use tasks::recorded_groups;
pub use threads::{extend as extend_thread, same_thread};

#[doc(no_inline)]
pub use tasksnap_model::Reading;

/// Store frame kind of a sample payload.
pub const KIND_SAMPLE: u8 = 1;
/// Store frame kind of a names (command lines and cgroups) payload.
pub const KIND_NAMES: u8 = 2;

/// The format major version this build writes and reads.
pub const FORMAT_MAJOR: u16 = wire::MAJOR;
/// The format minor version this build writes.
pub const FORMAT_MINOR: u16 = wire::MINOR;

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// The payload does not start with the codec's magic.
    #[error("not a tasksnap history payload")]
    BadMagic,
    /// Written by a newer, incompatible format.
    #[error("history format {found} is newer than this build reads (up to {supported})")]
    NewerFormat {
        /// The payload's major version.
        found: u16,
        /// The newest major version this build reads.
        supported: u16,
    },
    /// The payload ends early.
    #[error("history payload truncated")]
    Truncated,
    /// The payload is inconsistent.
    #[error("corrupt history payload: {0}")]
    Corrupt(&'static str),
    /// A delta sample with no key sample before it.
    #[error("a delta sample with no key sample before it")]
    NoKey,
    /// A delta written against another key than the one applied last.
    #[error("a delta written against another key (key at {expected} ns, delta's at {found} ns)")]
    WrongKey {
        /// The time of the key the decoder holds.
        expected: u64,
        /// The time of the key the delta was written against.
        found: u64,
    },
    /// The frame's type does not match the call (a names payload given as a sample, or a key
    /// flag that disagrees with the payload).
    #[error("payload is not the frame the call expects")]
    WrongFrame,
}
