//! One formatted value ([`Cell`]: its bytes and the screen cells they take) and the ways
//! procps writes numbers and text into one: decimal digits by hand, `%u.%u` tenths, and what
//! `snprintf(outbuf, COLWID, ...)` leaves of a long text.

/// procps's OUTBUF_SIZE: the widest line (and so the widest value) ps will ever build.
pub const OUTBUF_SIZE: usize = 2 * 64 * 1024;

/// A cell's bytes.
pub type CellBytes = smallvec::SmallVec<[u8; 32]>;

/// A formatted value: its bytes and how many screen cells they take.
#[derive(Debug, Default)]
pub struct Cell {
    /// Bytes to print (inline up to 32 bytes: a run prints 250,000 cells at 50,000
    /// processes, and one allocation each was a tenth of the run).
    pub bytes: CellBytes,
    /// Screen cells (differs from `bytes.len()` for multi-byte characters).
    pub cells: usize,
}

/// A cell of `s` as it is (one cell per byte).
pub fn plain(s: impl AsRef<[u8]>) -> Cell {
    let bytes = CellBytes::from_slice(s.as_ref());
    Cell {
        cells: bytes.len(),
        bytes,
    }
}

/// A cell of ASCII `bytes` (one cell per byte).
pub fn ascii(bytes: CellBytes) -> Cell {
    Cell {
        cells: bytes.len(),
        bytes,
    }
}

/// Appends `v` in decimal, padded on the left with `fill` to at least `width` bytes. Digits
/// are written by hand: at 50,000 rows of `ps -ef` the formatting machinery (`format!`, then
/// padding) was a quarter of the print time.
pub fn push_dec(out: &mut CellBytes, v: u64, width: usize, fill: u8) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = v;
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let n = digits.len() - at;
    out.extend(std::iter::repeat_n(fill, width.saturating_sub(n)));
    out.extend_from_slice(&digits[at..]);
}

/// A number, formatted straight into the cell.
pub fn num(v: impl Into<i128>) -> Cell {
    let v: i128 = v.into();
    let mut bytes = CellBytes::new();
    if v < 0 {
        bytes.push(b'-');
    }
    let m = v.unsigned_abs();
    if let Ok(small) = u64::try_from(m) {
        push_dec(&mut bytes, small, 0, b' ');
    } else {
        use std::io::Write as _;
        let _ = write!(bytes, "{m}");
    }
    ascii(bytes)
}

/// `tenths` as procps's "%u.%u" (with the integer part at least `width` wide).
pub fn tenths(tenths: u64, width: usize) -> Cell {
    let mut bytes = CellBytes::new();
    push_dec(&mut bytes, tenths / 10, width, b' ');
    bytes.push(b'.');
    push_dec(&mut bytes, tenths % 10, 0, b' ');
    ascii(bytes)
}

/// What procps's `snprintf(outbuf, COLWID, "%s", ...)` leaves: at most 239 bytes printed,
/// while the layout advances by the whole length (snprintf's return value).
pub fn colwid(v: &[u8]) -> Cell {
    Cell {
        bytes: CellBytes::from_slice(&v[..v.len().min(239)]),
        cells: v.len(),
    }
}
