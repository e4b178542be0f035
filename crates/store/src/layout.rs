//! The store directory's layout: the marker file and its format version, segment file names,
//! listing segments, the writer's lock file, fsync of the directory, and the per-segment index
//! (an index frame of kind [`INTERNAL_KIND`] followed by a 16-byte footer pointing at it).
//! Every file is opened relative to the store's directory descriptor through
//! tasksnap-safefile (no link followed, nothing truncated in place, only regular files read).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use tasksnap_safefile::{Dir, Kind};

use crate::error::StoreError;
use crate::frame::{self, HEADER_LEN};

/// The store format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// The frame kind reserved for the store's own frames (the segment index); appends of this
/// kind are refused and readers never list such frames.
pub const INTERNAL_KIND: u8 = 0xFF;
/// The marker file's name: its presence makes a directory a store, its text gives the format.
pub const MARKER_NAME: &str = "tasksnap-store";
/// The lock file's name: the writer holds an exclusive `flock` on it and writes its pid there.
pub const LOCK_NAME: &str = "LOCK";
const MARKER_PREFIX: &str = "tasksnap-store format ";
const FOOTER_MAGIC: [u8; 4] = *b"TSFX";
/// Bytes in a segment's footer: magic `TSFX`, index frame offset (u64), CRC32C of both.
pub const FOOTER_LEN: usize = 16;
const INDEX_VERSION: u8 = 1;
const INDEX_ENTRY_LEN: usize = 22;

/// A segment's file name for its number: `seg-<number, 20 digits>.tsf`, so that names sort
/// by number. The writer makes the numbers ascend in recording order (the first frame's
/// time when the clock allows); readers order segments by them and never read them as times.
pub fn segment_name(start_ns: u64) -> String {
    format!("seg-{start_ns:020}.tsf")
}

/// The number of a segment file name, `None` for any other name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("seg-")?.strip_suffix(".tsf")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A segment found in the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The number in its name (its place in recording order, not a time).
    pub start_ns: u64,
    /// Its path.
    pub path: PathBuf,
    /// Its size when listed.
    pub bytes: u64,
}

/// Every segment in `dir`, in recording order (by the number in its name); other files are
/// ignored, and so is an entry named like a segment that is not a regular file (see
/// [`scan_segments`]).
pub fn list_segments(dir: &Dir) -> Result<Vec<Listed>, StoreError> {
    Ok(scan_segments(dir)?.segments)
}

/// What [`scan_segments`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The segments, in recording order (by the number in their names).
    pub segments: Vec<Listed>,
    /// Entries named like segments that are not regular files, and what they are.
    pub skipped: Vec<(PathBuf, Kind)>,
}

/// [`list_segments`], and the entries named like segments that are not regular files (a
/// FIFO, a directory, a link: never opened, never deleted), for a warning.
pub fn scan_segments(dir: &Dir) -> Result<Listing, StoreError> {
    let mut out = Vec::new();
    let mut odd = Vec::new();
    for name in dir.names()? {
        let Some(start_ns) = name.to_str().and_then(parse_segment_name) else {
            continue;
        };
        let Some(meta) = dir.stat(&name)? else {
            continue; // deleted meanwhile
        };
        if meta.kind != Kind::Regular {
            odd.push((dir.join(&name), meta.kind));
            continue;
        }
        out.push(Listed {
            start_ns,
            path: dir.join(&name),
            bytes: meta.bytes,
        });
    }
    out.sort_by_key(|l| l.start_ns);
    odd.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Listing {
        segments: out,
        skipped: odd,
    })
}

/// What the marker file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// No marker file.
    Absent,
    /// A readable store of this format.
    Version(u32),
}

/// Reads and checks `dir`'s marker: a newer format is [`StoreError::NewerVersion`], a
/// garbled marker [`StoreError::NotAStore`].
pub fn read_marker(dir: &Dir) -> Result<Marker, StoreError> {
    let mut text = Vec::new();
    match dir.open_read(MARKER_NAME) {
        // A marker is one short line: a huge file is garbled, not read whole.
        Ok(f) => f
            .take(256)
            .read_to_end(&mut text)
            .map_err(|e| StoreError::io(dir.join(MARKER_NAME), e))?,
        Err(e) if e.is_not_found() => return Ok(Marker::Absent),
        Err(e) => return Err(e.into()),
    };
    let garbled = || StoreError::NotAStore {
        path: dir.path().to_path_buf(),
        why: format!("its {MARKER_NAME} file does not hold a format version"),
    };
    let text = std::str::from_utf8(&text).map_err(|_| garbled())?;
    let found: u32 = text
        .trim()
        .strip_prefix(MARKER_PREFIX)
        .and_then(|v| v.parse().ok())
        .ok_or_else(garbled)?;
    if found == 0 {
        return Err(garbled());
    }
    if found > FORMAT_VERSION {
        return Err(StoreError::NewerVersion {
            found,
            supported: FORMAT_VERSION,
        });
    }
    Ok(Marker::Version(found))
}

/// Writes the marker durably: a new temporary file (`O_EXCL`), fsync, rename over the
/// marker, fsync of the directory.
pub fn write_marker(dir: &Dir) -> Result<(), StoreError> {
    let mut p = dir.replace(MARKER_NAME, 0o600)?;
    p.file()
        .write_all(format!("{MARKER_PREFIX}{FORMAT_VERSION}\n").as_bytes())
        .map_err(|e| StoreError::io(p.path(), e))?;
    p.commit()?;
    Ok(())
}

/// fsync of a directory, so that files created, renamed or deleted in it stay so after a
/// power cut.
pub fn sync_dir(dir: &Dir) -> Result<(), StoreError> {
    Ok(dir.sync()?)
}

/// Takes the writer's lock: an exclusive non-blocking `flock` on `dir/LOCK` (opened without
/// following a link or truncating, and refused unless a regular file of ours with one link),
/// then writes our pid there. The kernel releases the lock when the process dies, however
/// it dies.
pub fn lock(dir: &Dir) -> Result<File, StoreError> {
    let path = dir.join(LOCK_NAME);
    let f = dir.open_own(LOCK_NAME, 0o600)?;
    // SAFETY: flock only reads its two integer arguments; the fd is open and owned by `f`,
    // which outlives the call.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut buf = [0u8; 32];
            let n = f.read_at(&mut buf, 0).unwrap_or(0);
            let pid = std::str::from_utf8(buf.get(..n).unwrap_or_default())
                .ok()
                .and_then(|t| t.trim().parse().ok());
            return Err(StoreError::Locked {
                pid,
                path: dir.path().to_path_buf(),
            });
        }
        return Err(StoreError::io(&path, e));
    }
    let pid = format!("{}\n", std::process::id());
    f.set_len(0)
        .and_then(|()| f.write_all_at(pid.as_bytes(), 0))
        .map_err(|e| StoreError::io(&path, e))?;
    Ok(f)
}

/// One entry of a segment's index: where a frame is and what its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// The frame's time.
    pub time_ns: u64,
    /// The frame's kind.
    pub kind: u8,
    /// A key frame.
    pub key: bool,
    /// Where the frame starts in the segment.
    pub offset_bytes: u64,
    /// Its compressed payload's length.
    pub stored_len_bytes: u32,
}

/// Encodes a segment's closing bytes onto `out`: the index frame (kind [`INTERNAL_KIND`],
/// payload: version byte, count u32, then per frame time u64, kind u8, flags u8, offset u64,
/// stored length u32) starting at `at` in the segment, then the footer.
pub fn encode_index(
    entries: &[IndexEntry],
    time_ns: u64,
    at: u64,
    out: &mut Vec<u8>,
) -> Result<(), StoreError> {
    let mut p = Vec::with_capacity(5 + entries.len() * INDEX_ENTRY_LEN);
    p.push(INDEX_VERSION);
    let count = u32::try_from(entries.len()).unwrap_or(u32::MAX);
    p.extend_from_slice(&count.to_le_bytes());
    for e in entries.iter().take(count as usize) {
        p.extend_from_slice(&e.time_ns.to_le_bytes());
        p.push(e.kind);
        p.push(u8::from(e.key));
        p.extend_from_slice(&e.offset_bytes.to_le_bytes());
        p.extend_from_slice(&e.stored_len_bytes.to_le_bytes());
    }
    frame::encode(INTERNAL_KIND, false, time_ns, &p, out)?;
    let mut footer = [0u8; FOOTER_LEN];
    footer[0..4].copy_from_slice(&FOOTER_MAGIC);
    footer[4..12].copy_from_slice(&at.to_le_bytes());
    let crc = crc32c::crc32c(&footer[..12]);
    footer[12..16].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&footer);
    Ok(())
}

/// The index frame's offset from a segment's last 16 bytes, `None` unless they are a footer.
pub fn decode_footer(footer: &[u8]) -> Option<u64> {
    let f = footer.get(..FOOTER_LEN)?;
    let crc = u32::from_le_bytes(f.get(12..16)?.try_into().ok()?);
    if f[0..4] != FOOTER_MAGIC || crc != crc32c::crc32c(&f[..12]) {
        return None;
    }
    Some(u64::from_le_bytes(f.get(4..12)?.try_into().ok()?))
}

/// Decodes the index frame `bytes` (exactly the bytes between the index's offset `at` and
/// the footer): `None` unless it is one whole frame of kind [`INTERNAL_KIND`] whose entries
/// are in order, end before `at`, and do not overlap.
pub fn decode_index(bytes: &[u8], at: u64) -> Option<Vec<IndexEntry>> {
    let h = frame::decode_header(bytes)?;
    if h.kind != INTERNAL_KIND || bytes.len() != HEADER_LEN + h.compressed_len_bytes as usize {
        return None;
    }
    let stored = bytes.get(HEADER_LEN..)?;
    if crc32c::crc32c(stored) != h.payload_crc {
        return None;
    }
    let p = zstd::bulk::decompress(stored, h.len_bytes as usize).ok()?;
    if p.len() != h.len_bytes as usize || p.first() != Some(&INDEX_VERSION) {
        return None;
    }
    let count = u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize;
    if p.len() != 5 + count.checked_mul(INDEX_ENTRY_LEN)? {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    let mut next_free = 0u64;
    for c in p.get(5..)?.chunks_exact(INDEX_ENTRY_LEN) {
        let e = IndexEntry {
            time_ns: u64::from_le_bytes(c.get(0..8)?.try_into().ok()?),
            kind: c[8],
            key: c[9] & 1 != 0,
            offset_bytes: u64::from_le_bytes(c.get(10..18)?.try_into().ok()?),
            stored_len_bytes: u32::from_le_bytes(c.get(18..22)?.try_into().ok()?),
        };
        let end = e
            .offset_bytes
            .checked_add(HEADER_LEN as u64 + u64::from(e.stored_len_bytes))?;
        if e.offset_bytes < next_free || end > at || e.kind == INTERNAL_KIND {
            return None;
        }
        next_free = end;
        out.push(e);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_sort_by_time_and_parse_back() {
        let a = segment_name(9);
        let b = segment_name(10);
        let c = segment_name(u64::MAX);
        assert!(a < b && b < c);
        assert_eq!(parse_segment_name(&c), Some(u64::MAX));
        assert_eq!(parse_segment_name(&a), Some(9));
        for bad in [
            "seg-1.tsf",
            "seg-0000000000000000000x.tsf",
            "seg-00000000000000000001.tmp",
            "LOCK",
        ] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
        // 20 digits above u64::MAX do not parse.
        assert_eq!(parse_segment_name("seg-99999999999999999999.tsf"), None);
    }

    #[test]
    fn index_round_trip_and_checks() {
        let entries = vec![
            IndexEntry {
                time_ns: 5,
                kind: 1,
                key: true,
                offset_bytes: 0,
                stored_len_bytes: 10,
            },
            IndexEntry {
                time_ns: 6,
                kind: 2,
                key: false,
                offset_bytes: 42,
                stored_len_bytes: 3,
            },
        ];
        let at = 42 + 32 + 3;
        let mut out = Vec::new();
        encode_index(&entries, 6, at, &mut out).expect("encode");
        let (frame, footer) = out.split_at(out.len() - FOOTER_LEN);
        assert_eq!(decode_footer(footer), Some(at));
        assert_eq!(decode_index(frame, at), Some(entries));
        // An entry running past the index is refused.
        assert_eq!(decode_index(frame, at - 1), None);
        let mut bad = footer.to_vec();
        bad[5] ^= 1;
        assert_eq!(decode_footer(&bad), None);
    }

    #[test]
    fn marker_versions() {
        use std::fs;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = Dir::open_private(tmp.path()).expect("open");
        assert_eq!(read_marker(&dir).expect("read"), Marker::Absent);
        write_marker(&dir).expect("write");
        assert_eq!(
            read_marker(&dir).expect("read"),
            Marker::Version(FORMAT_VERSION)
        );
        fs::write(tmp.path().join(MARKER_NAME), "tasksnap-store format 0\n").expect("write");
        assert!(matches!(
            read_marker(&dir),
            Err(StoreError::NotAStore { .. })
        ));
        fs::write(tmp.path().join(MARKER_NAME), "tasksnap-store format 7\n").expect("write");
        assert!(matches!(
            read_marker(&dir),
            Err(StoreError::NewerVersion {
                found: 7,
                supported: FORMAT_VERSION
            })
        ));
    }
}
