//! tasksnap-store: the on-disk history container of tasksnap,
//! payload-agnostic: it stores opaque frames (a kind byte, a key flag, a time, a payload) and
//! knows nothing of tasks.
//!
//! - [`frame`]: one frame's bytes (a CRC-checked header, a CRC-checked zstd payload) and
//!   reading frames back from hostile bytes.
//! - [`layout`]: the directory: marker file with the format version, segment names
//!   (`seg-<number, 20 digits>.tsf`: recording order, never read as times), the lock file,
//!   the per-segment index and footer.
//! - [`Writer`]: the one writer (an exclusive `flock`), appending, rolling segments, syncing,
//!   enforcing retention.
//! - [`Store`]: the reader, no lock needed: entries by time, seek to a key frame, checked
//!   payloads, the damage met.
//!
//! Sync points, crash behaviour, retention and errors are described in docs/store.md.
#![deny(missing_docs)]

pub mod error;
pub mod frame;
pub mod layout;
pub mod reader;
pub mod writer;

pub use error::StoreError;
pub use frame::{
    decode_header, encode, scan, Frame, FrameError, Header, Scan, HEADER_LEN, MAX_LEN_BYTES,
};
pub use layout::{FORMAT_VERSION, INTERNAL_KIND};
pub use reader::{Damage, Entry, SegmentInfo, Store};
pub use writer::{Writer, WriterOptions};
