//! tasksnap-store: the on-disk frame container of tasksnap's history (issue 18, item 2).
//!
//! This first layer is the frame codec only: [`frame::encode`] turns (kind, key flag, time,
//! payload) into a self-describing frame (a 32-byte header with a magic, both lengths, a
//! CRC32C of the compressed payload and a CRC32C of the header, then the zstd-compressed
//! payload), and [`frame::scan`] reads frames back from hostile bytes: a torn tail ends the
//! scan, a corrupt frame in the middle is skipped by resyncing on the next valid header, and
//! the bytes skipped are reported. Segments, the writer lock, rolling, retention and seek by
//! time are the next step (see docs/store.md when it lands).

pub mod frame;

pub use frame::{
    decode_header, encode, scan, Frame, FrameError, Header, Scan, HEADER_LEN, MAX_LEN_BYTES,
};
