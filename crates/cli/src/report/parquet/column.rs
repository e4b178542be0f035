//! One column of a batch of a dump's rows, read by row as the values `dump` wrote: a time
//! in ns since the epoch, an integer, a float, the bytes of a text or binary column. A
//! missing column, a null, and a value no dump writes (a time before 1970, a negative or
//! non-finite figure) are all `None`: a hostile file gives fewer figures, never a panic.

use arrow_array::{
    Array, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};

/// A column of a batch, or none.
pub enum Col<'a> {
    /// Not in the batch (or of a type no dump writes for it).
    Missing,
    /// A time, µs since the epoch.
    Time(&'a TimestampMicrosecondArray),
    /// An integer.
    Int(&'a Int64Array),
    /// A float.
    Float(&'a Float64Array),
    /// UTF-8 text.
    Text(&'a StringArray),
    /// Exact bytes.
    Bytes(&'a BinaryArray),
}

impl<'a> Col<'a> {
    /// Column `name` of `batch`.
    pub fn of(batch: &'a RecordBatch, name: &str) -> Col<'a> {
        let Some(a) = batch.column_by_name(name) else {
            return Col::Missing;
        };
        let any = a.as_any();
        if let Some(a) = any.downcast_ref::<TimestampMicrosecondArray>() {
            Col::Time(a)
        } else if let Some(a) = any.downcast_ref::<Int64Array>() {
            Col::Int(a)
        } else if let Some(a) = any.downcast_ref::<Float64Array>() {
            Col::Float(a)
        } else if let Some(a) = any.downcast_ref::<StringArray>() {
            Col::Text(a)
        } else if let Some(a) = any.downcast_ref::<BinaryArray>() {
            Col::Bytes(a)
        } else {
            Col::Missing
        }
    }

    /// Whether row `i` has a value.
    fn valid(&self, i: usize) -> bool {
        let a: &dyn Array = match self {
            Col::Missing => return false,
            Col::Time(a) => *a,
            Col::Int(a) => *a,
            Col::Float(a) => *a,
            Col::Text(a) => *a,
            Col::Bytes(a) => *a,
        };
        i < a.len() && a.is_valid(i)
    }

    /// A time column's value at row `i`, ns since the epoch.
    pub fn time_ns(&self, i: usize) -> Option<u64> {
        match self {
            Col::Time(a) if self.valid(i) => u64::try_from(a.value(i)).ok()?.checked_mul(1000),
            _ => None,
        }
    }

    /// A time column's value at row `i`, µs since the epoch (an identity, compared only).
    pub fn time_us(&self, i: usize) -> Option<u64> {
        match self {
            Col::Time(a) if self.valid(i) => u64::try_from(a.value(i)).ok(),
            _ => None,
        }
    }

    /// An integer column's value at row `i`.
    pub fn int(&self, i: usize) -> Option<i64> {
        match self {
            Col::Int(a) if self.valid(i) => Some(a.value(i)),
            _ => None,
        }
    }

    /// An integer column's value at row `i`, when it is not negative.
    pub fn uint(&self, i: usize) -> Option<u64> {
        self.int(i).and_then(|v| u64::try_from(v).ok())
    }

    /// A float column's value at row `i`, when it is finite.
    pub fn float(&self, i: usize) -> Option<f64> {
        match self {
            Col::Float(a) if self.valid(i) => Some(a.value(i)).filter(|v| v.is_finite()),
            _ => None,
        }
    }

    /// A float column of seconds at row `i` as ns, when it is finite and not negative.
    pub fn secs_as_ns(&self, i: usize) -> Option<u64> {
        let s = self.float(i).filter(|&s| s >= 0.0)?;
        // The dump's ns / 1e9 back to the ns exactly up to some 25 days of CPU.
        Some((s * 1e9).round().min(u64::MAX as f64) as u64)
    }

    /// A text or binary column's bytes at row `i`.
    pub fn bytes(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            Col::Text(a) if self.valid(i) => Some(a.value(i).as_bytes()),
            Col::Bytes(a) if self.valid(i) => Some(a.value(i)),
            _ => None,
        }
    }
}

/// The exact bytes of a text column at row `i`: its `_bytes` sibling's (`exact`) when that
/// has them (the text was not valid UTF-8), else the text's.
pub fn exact_bytes(text: &Col<'_>, exact: &Col<'_>, i: usize) -> Option<Vec<u8>> {
    exact.bytes(i).or_else(|| text.bytes(i)).map(<[u8]>::to_vec)
}
