//! The byte level of every payload: LEB128 varints, zigzag integers, length-prefixed blobs,
//! floats, the payload header (magic, format version, frame type) and column sets (one byte
//! buffer per column, so that like values sit together for zstd). Reading is bounded: every
//! length is checked against the bytes that are left before anything is allocated.

use crate::HistoryError;

/// Magic at the start of every payload.
pub(crate) const MAGIC: [u8; 2] = *b"TH";
/// Format major version this build writes and reads; a newer major is refused.
pub(crate) const MAJOR: u16 = 1;
/// Format minor version this build writes; a newer minor only adds data this build skips.
pub(crate) const MINOR: u16 = 4;

/// What a payload holds (the byte after the version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameType {
    KeySample = 0,
    DeltaSample = 1,
    KeyNames = 2,
    DeltaNames = 3,
}

/// Zigzag: small negative and positive numbers to small unsigned ones.
pub(crate) fn zz(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zz`].
pub(crate) fn unzz(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends an unsigned LEB128 varint.
pub(crate) fn put_u(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

/// Appends a zigzag varint.
pub(crate) fn put_i(b: &mut Vec<u8>, v: i64) {
    put_u(b, zz(v));
}

/// Appends `v - r` (wrapping) as a zigzag varint: counters close to their reference are short.
pub(crate) fn put_d(b: &mut Vec<u8>, v: u64, r: u64) {
    put_i(b, v.wrapping_sub(r) as i64);
}

/// Appends a length-prefixed blob.
pub(crate) fn put_bytes(b: &mut Vec<u8>, v: &[u8]) {
    put_u(b, v.len() as u64);
    b.extend_from_slice(v);
}

/// Appends a float: its bits byte-swapped, as a varint, so that round numbers (few mantissa
/// bits) are short.
pub(crate) fn put_f(b: &mut Vec<u8>, v: f64) {
    put_u(b, v.to_bits().swap_bytes());
}

/// Appends the header of a payload.
pub(crate) fn put_header(b: &mut Vec<u8>, t: FrameType) {
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&MAJOR.to_le_bytes());
    b.extend_from_slice(&MINOR.to_le_bytes());
    b.push(t as u8);
}

/// Writes which key row a delta row replaces: 0 for a row not in the key, else its index
/// in the key's rows as the distance from the one after the previous such index, plus 1.
pub(crate) fn put_key_idx(b: &mut Vec<u8>, ki: Option<usize>, next: &mut usize) {
    match ki {
        None => put_u(b, 0),
        Some(i) => {
            put_u(b, i.wrapping_sub(*next) as u64 + 1);
            *next = i + 1;
        }
    }
}

/// Inverse of [`put_key_idx`], checked against the key's `len` rows.
pub(crate) fn get_key_idx(
    r: &mut Reader<'_>,
    next: &mut usize,
    len: usize,
) -> Result<Option<usize>, HistoryError> {
    let v = r.u()?;
    if v == 0 {
        return Ok(None);
    }
    let i = usize::try_from(v - 1)
        .ok()
        .and_then(|d| next.checked_add(d))
        .filter(|&i| i < len)
        .ok_or(HistoryError::Corrupt("key row index past the key's rows"))?;
    *next = i + 1;
    Ok(Some(i))
}

/// The key row a delta row replaces, read by [`get_key_idx`] from `r` when there is a key
/// (`key_rows`); `None` for a row not in the key, and without a key (nothing is read).
pub(crate) fn get_key_row<'k, T>(
    r: &mut Reader<'_>,
    next: &mut usize,
    key_rows: Option<&'k [T]>,
) -> Result<Option<&'k T>, HistoryError> {
    let Some(rows) = key_rows else {
        return Ok(None);
    };
    Ok(get_key_idx(r, next, rows.len())?.and_then(|i| rows.get(i)))
}

/// A cursor over hostile bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b }
    }

    /// Bytes left.
    pub(crate) fn left(&self) -> usize {
        self.b.len()
    }

    pub(crate) fn byte(&mut self) -> Result<u8, HistoryError> {
        let (&x, rest) = self.b.split_first().ok_or(HistoryError::Truncated)?;
        self.b = rest;
        Ok(x)
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], HistoryError> {
        if n > self.b.len() {
            return Err(HistoryError::Truncated);
        }
        let (x, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(x)
    }

    pub(crate) fn u(&mut self) -> Result<u64, HistoryError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let x = self.byte()?;
            let bits = u64::from(x & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(HistoryError::Corrupt("varint overflows 64 bits"));
            }
            v |= bits << shift;
            if x & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(HistoryError::Corrupt("varint longer than 10 bytes"))
    }

    pub(crate) fn i(&mut self) -> Result<i64, HistoryError> {
        Ok(unzz(self.u()?))
    }

    /// Inverse of [`put_d`].
    pub(crate) fn d(&mut self, r: u64) -> Result<u64, HistoryError> {
        Ok(r.wrapping_add(self.i()? as u64))
    }

    /// A `u32` written with [`put_d`] against `r`.
    pub(crate) fn d32(&mut self, r: u32) -> Result<u32, HistoryError> {
        u32::try_from(self.d(u64::from(r))?).map_err(|_| HistoryError::Corrupt("u32 out of range"))
    }

    /// An `i32` written as `put_i(v - r)`.
    pub(crate) fn di32(&mut self, r: i32) -> Result<i32, HistoryError> {
        let v = i64::from(r).wrapping_add(self.i()?);
        i32::try_from(v).map_err(|_| HistoryError::Corrupt("i32 out of range"))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, HistoryError> {
        u32::try_from(self.u()?).map_err(|_| HistoryError::Corrupt("u32 out of range"))
    }

    pub(crate) fn f(&mut self) -> Result<f64, HistoryError> {
        Ok(f64::from_bits(self.u()?.swap_bytes()))
    }

    /// A count of items each taking at least `min_bytes` of `budget` bytes: a count the
    /// payload could not hold is an error, so nothing is allocated for it.
    pub(crate) fn count(&mut self, budget: usize, min_bytes: usize) -> Result<usize, HistoryError> {
        let n = self.u()?;
        let max = budget / min_bytes.max(1);
        if n > max as u64 {
            return Err(HistoryError::Corrupt(
                "count larger than the payload could hold",
            ));
        }
        Ok(n as usize)
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], HistoryError> {
        let n = self.u()?;
        if n > self.b.len() as u64 {
            return Err(HistoryError::Truncated);
        }
        self.take(n as usize)
    }

    pub(crate) fn string(&mut self) -> Result<String, HistoryError> {
        std::str::from_utf8(self.bytes()?)
            .map(str::to_owned)
            .map_err(|_| HistoryError::Corrupt("text is not UTF-8"))
    }

    pub(crate) fn bool(&mut self) -> Result<bool, HistoryError> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(HistoryError::Corrupt("bad boolean")),
        }
    }

    /// Reads and checks a payload header, returning its frame type.
    pub(crate) fn header(&mut self) -> Result<FrameType, HistoryError> {
        if self.take(2).map_err(|_| HistoryError::BadMagic)? != MAGIC {
            return Err(HistoryError::BadMagic);
        }
        let v = self.take(4)?;
        let major = u16::from_le_bytes([v[0], v[1]]);
        if major > MAJOR {
            return Err(HistoryError::NewerFormat {
                found: major,
                supported: MAJOR,
            });
        }
        if major == 0 {
            return Err(HistoryError::Corrupt("format version 0"));
        }
        match self.byte()? {
            0 => Ok(FrameType::KeySample),
            1 => Ok(FrameType::DeltaSample),
            2 => Ok(FrameType::KeyNames),
            3 => Ok(FrameType::DeltaNames),
            _ => Err(HistoryError::Corrupt("unknown frame type")),
        }
    }
}

/// Columns being written: `N` buffers, serialized as a count then (length, bytes) each.
#[derive(Debug)]
pub(crate) struct Cols(pub(crate) Vec<Vec<u8>>);

impl Cols {
    pub(crate) fn new(n: usize) -> Cols {
        Cols(vec![Vec::new(); n])
    }

    /// The buffer of column `i` (columns are numbered by constants below `n`).
    pub(crate) fn c(&mut self, i: usize) -> &mut Vec<u8> {
        if i >= self.0.len() {
            self.0.resize(i + 1, Vec::new());
        }
        &mut self.0[i]
    }

    /// Empties every column, keeping their buffers (an encoder reuses them).
    pub(crate) fn clear(&mut self) {
        for c in &mut self.0 {
            c.clear();
        }
    }

    /// Bytes [`Cols::finish`] appends, at most.
    pub(crate) fn size(&self) -> usize {
        10 + self.0.iter().map(|c| c.len() + 10).sum::<usize>()
    }

    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        out.reserve(self.size());
        put_u(out, self.0.len() as u64);
        for c in &self.0 {
            put_bytes(out, c);
        }
    }
}

/// Columns being read. A column this build does not know (a newer minor's) is skipped; one it
/// expects and does not find reads as empty (and a read from it is `Truncated`).
#[derive(Debug)]
pub(crate) struct ColsReader<'a> {
    cols: Vec<Reader<'a>>,
    empty: Reader<'a>,
}

impl<'a> ColsReader<'a> {
    pub(crate) fn read(r: &mut Reader<'a>) -> Result<ColsReader<'a>, HistoryError> {
        let n = r.count(r.left(), 1)?;
        let mut cols = Vec::with_capacity(n);
        for _ in 0..n {
            cols.push(Reader::new(r.bytes()?));
        }
        Ok(ColsReader {
            cols,
            empty: Reader::default(),
        })
    }

    pub(crate) fn c(&mut self, i: usize) -> &mut Reader<'a> {
        match self.cols.get_mut(i) {
            Some(c) => c,
            None => {
                self.empty = Reader::default();
                &mut self.empty
            }
        }
    }

    /// Bytes left in column `i`.
    pub(crate) fn left(&self, i: usize) -> usize {
        self.cols.get(i).map_or(0, Reader::left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        let mut b = Vec::new();
        let us = [0, 1, 127, 128, 300, u64::MAX, u64::MAX - 1, 1 << 63];
        let is = [0, -1, 1, i64::MIN, i64::MAX, -300];
        for &u in &us {
            put_u(&mut b, u);
        }
        for &i in &is {
            put_i(&mut b, i);
        }
        put_f(&mut b, 1.5);
        put_f(&mut b, f64::NAN);
        let mut r = Reader::new(&b);
        for &u in &us {
            assert_eq!(r.u().ok(), Some(u));
        }
        for &i in &is {
            assert_eq!(r.i().ok(), Some(i));
        }
        assert_eq!(r.f().ok(), Some(1.5));
        assert!(r.f().is_ok_and(f64::is_nan));
        assert_eq!(r.left(), 0);
        assert!(matches!(r.u(), Err(HistoryError::Truncated)));
    }

    #[test]
    fn overlong_varints_are_errors() {
        let b = [0xff; 11];
        assert!(Reader::new(&b).u().is_err());
        let b = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&b).u().is_err());
    }

    #[test]
    fn counts_are_bounded_by_the_payload() {
        let mut b = Vec::new();
        put_u(&mut b, 1 << 40);
        assert!(Reader::new(&b).count(100, 1).is_err());
        assert!(Reader::new(&b).bytes().is_err());
    }
}
