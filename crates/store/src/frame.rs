//! One frame: a fixed 32-byte header and a zstd-compressed payload, all little-endian.
//!
//! Header: magic `TSF1` (4, the `1` is the format's major version), kind (u8), flags (u8, bit 0:
//! key frame), reserved (u16, 0), time_ns (u64), compressed length (u32), uncompressed length
//! (u32), CRC32C of the compressed payload (u32), CRC32C of the 28 bytes before it (u32).

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 32;
/// The largest length (compressed or not) a frame may declare: a corrupt length never
/// allocates more than this.
pub const MAX_LEN_BYTES: u32 = 256 << 20;
const MAGIC: [u8; 4] = *b"TSF1";
const FLAG_KEY: u8 = 1;

/// Why a frame could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The payload (or its compressed form) is larger than [`MAX_LEN_BYTES`].
    #[error("frame of {len_bytes} bytes is larger than the maximum of {MAX_LEN_BYTES} bytes")]
    TooLarge {
        /// The length refused.
        len_bytes: usize,
    },
    /// zstd failed to compress.
    #[error("zstd compression failed: {0}")]
    Compress(#[source] std::io::Error),
}

/// A decoded, CRC-checked frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Opaque to this layer.
    pub kind: u8,
    /// A replay can start from this frame.
    pub key: bool,
    /// When the frame's data was taken.
    pub time_ns: u64,
    /// Bytes of payload stored after the header.
    pub compressed_len_bytes: u32,
    /// Bytes of payload once decompressed.
    pub len_bytes: u32,
    /// CRC32C of the stored payload.
    pub payload_crc: u32,
}

/// A frame read back whole: header checked, payload checked and decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The frame's header.
    pub header: Header,
    /// Where the frame starts in the scanned bytes.
    pub offset_bytes: u64,
    /// The decompressed payload.
    pub payload: Vec<u8>,
}

/// Encodes one frame (header and compressed payload) onto `out`.
pub fn encode(
    kind: u8,
    key: bool,
    time_ns: u64,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let too_large = |len_bytes| FrameError::TooLarge { len_bytes };
    let len_bytes = u32::try_from(payload.len()).map_err(|_| too_large(payload.len()))?;
    if len_bytes > MAX_LEN_BYTES {
        return Err(too_large(payload.len()));
    }
    let compressed = zstd::bulk::compress(payload, 3).map_err(FrameError::Compress)?;
    let clen = u32::try_from(compressed.len()).map_err(|_| too_large(compressed.len()))?;
    if clen > MAX_LEN_BYTES {
        return Err(too_large(compressed.len()));
    }
    let mut h = [0u8; HEADER_LEN];
    h[0..4].copy_from_slice(&MAGIC);
    h[4] = kind;
    h[5] = if key { FLAG_KEY } else { 0 };
    h[8..16].copy_from_slice(&time_ns.to_le_bytes());
    h[16..20].copy_from_slice(&clen.to_le_bytes());
    h[20..24].copy_from_slice(&len_bytes.to_le_bytes());
    h[24..28].copy_from_slice(&crc32c::crc32c(&compressed).to_le_bytes());
    let hcrc = crc32c::crc32c(&h[..28]);
    h[28..32].copy_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(&compressed);
    Ok(())
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a header from the start of `bytes`: `None` unless the magic and header CRC match
/// and both lengths are within [`MAX_LEN_BYTES`].
pub fn decode_header(bytes: &[u8]) -> Option<Header> {
    let h = bytes.get(..HEADER_LEN)?;
    if h[0..4] != MAGIC || u32_at(h, 28)? != crc32c::crc32c(&h[..28]) {
        return None;
    }
    let header = Header {
        kind: h[4],
        key: h[5] & FLAG_KEY != 0,
        time_ns: u64::from_le_bytes(h.get(8..16)?.try_into().ok()?),
        compressed_len_bytes: u32_at(h, 16)?,
        len_bytes: u32_at(h, 20)?,
        payload_crc: u32_at(h, 24)?,
    };
    (header.compressed_len_bytes <= MAX_LEN_BYTES && header.len_bytes <= MAX_LEN_BYTES)
        .then_some(header)
}

/// What a scan found: the whole frames, the bytes skipped in the middle, the torn tail.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Every valid frame, in stored order.
    pub frames: Vec<Frame>,
    /// Bytes skipped to resync after a corrupt frame before the last valid one.
    pub skipped_bytes: u64,
    /// Bytes after the last valid frame (a torn tail or garbage).
    pub tail_bytes: u64,
}

fn payload_of(bytes: &[u8], at: usize, h: &Header) -> Option<Vec<u8>> {
    let stored = bytes.get(at + HEADER_LEN..at + HEADER_LEN + h.compressed_len_bytes as usize)?;
    if crc32c::crc32c(stored) != h.payload_crc {
        return None;
    }
    let payload = zstd::bulk::decompress(stored, h.len_bytes as usize).ok()?;
    (payload.len() == h.len_bytes as usize).then_some(payload)
}

/// Reads every valid frame from hostile `bytes`; never panics, never returns a torn frame.
pub fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    let mut at = 0usize;
    let mut last_end = 0usize;
    while at + HEADER_LEN <= bytes.len() {
        let found =
            decode_header(&bytes[at..]).and_then(|h| payload_of(bytes, at, &h).map(|p| (h, p)));
        match found {
            Some((header, payload)) => {
                out.skipped_bytes += (at - last_end) as u64;
                out.frames.push(Frame {
                    header,
                    offset_bytes: at as u64,
                    payload,
                });
                at += HEADER_LEN + header.compressed_len_bytes as usize;
                last_end = at;
            }
            None => at += 1,
        }
    }
    out.tail_bytes = (bytes.len() - last_end) as u64;
    out
}

/// A frame found by [`walk`]: its checked header and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    /// The frame's header.
    pub header: Header,
    /// Where the frame starts in the walked bytes.
    pub offset_bytes: u64,
}

/// What a walk found: like [`Scan`] without the payloads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Walk {
    /// Every frame whose header and payload CRC check, in stored order.
    pub frames: Vec<Walked>,
    /// Bytes skipped to resync after a corrupt frame before the last valid one.
    pub skipped_bytes: u64,
    /// Bytes after the last valid frame.
    pub tail_bytes: u64,
    /// Where the last valid frame ends (0 when none).
    pub end_bytes: u64,
}

/// Like [`scan`], but checks the payload CRC without decompressing nor copying the payload:
/// the way to list a segment's frames when it has no index.
pub fn walk(bytes: &[u8]) -> Walk {
    let mut out = Walk::default();
    let mut at = 0usize;
    let mut last_end = 0usize;
    while at + HEADER_LEN <= bytes.len() {
        let found = decode_header(&bytes[at..]).filter(|h| {
            bytes
                .get(at + HEADER_LEN..at + HEADER_LEN + h.compressed_len_bytes as usize)
                .is_some_and(|stored| crc32c::crc32c(stored) == h.payload_crc)
        });
        match found {
            Some(header) => {
                out.skipped_bytes += (at - last_end) as u64;
                out.frames.push(Walked {
                    header,
                    offset_bytes: at as u64,
                });
                at += HEADER_LEN + header.compressed_len_bytes as usize;
                last_end = at;
            }
            None => at += 1,
        }
    }
    out.tail_bytes = (bytes.len() - last_end) as u64;
    out.end_bytes = last_end as u64;
    out
}

/// Checks and decompresses one stored frame (`bytes` = header and stored payload):
/// `None` when anything fails.
pub fn decode(bytes: &[u8]) -> Option<(Header, Vec<u8>)> {
    let h = decode_header(bytes)?;
    let p = payload_of(bytes, 0, &h)?;
    Some((h, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_tail() {
        let mut b = Vec::new();
        encode(7, true, 42, b"hello hello hello", &mut b).expect("encode");
        let first = b.len();
        encode(8, false, 43, b"world", &mut b).expect("encode");
        let s = scan(&b);
        assert_eq!(s.frames.len(), 2);
        assert_eq!(s.frames[0].payload, b"hello hello hello");
        assert!(s.frames[0].header.key && !s.frames[1].header.key);
        let torn = scan(&b[..b.len() - 1]);
        assert_eq!(torn.frames.len(), 1);
        assert_eq!(torn.tail_bytes, (b.len() - 1 - first) as u64);
    }

    #[test]
    fn corrupt_middle_is_skipped() {
        let mut b = Vec::new();
        for t in 0..3u64 {
            encode(1, false, t, &[t as u8; 100], &mut b).expect("encode");
        }
        let second = scan(&b).frames[1].offset_bytes as usize;
        b[second + 40] ^= 0xff;
        let s = scan(&b);
        let times: Vec<u64> = s.frames.iter().map(|f| f.header.time_ns).collect();
        assert_eq!(times, vec![0, 2]);
        assert!(s.skipped_bytes > 0);
    }

    #[test]
    fn huge_declared_length_is_refused() {
        let mut b = Vec::new();
        encode(1, false, 1, b"x", &mut b).expect("encode");
        b[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let crc = crc32c::crc32c(&b[..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_header(&b).is_none());
    }
}
