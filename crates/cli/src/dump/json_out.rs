//! JSON Lines: one object per row, keys the column names in the chosen order. Times are
//! RFC 3339 UTC strings with microseconds, nulls (and non-finite floats) `null`, text is
//! valid UTF-8 (invalid bytes of the source replaced by U+FFFD) escaped by serde_json, and
//! exact bytes (`*_bytes`) a string of lower-case hex.

use std::io::{BufWriter, Write};

use super::cells::Value;
use super::clock::rfc3339_micros;
use super::columns::Column;
use super::sink::Sink;

/// Writes one JSON object per line.
pub struct JsonSink<'a> {
    out: BufWriter<&'a mut dyn Write>,
    /// Each column's `"name":`, serialised once.
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for JsonSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSink").finish_non_exhaustive()
    }
}

impl<'a> JsonSink<'a> {
    /// A writer of rows of `cols`.
    pub fn new(cols: &[Column], out: &'a mut dyn Write) -> JsonSink<'a> {
        let keys = cols
            .iter()
            .map(|c| {
                let mut k = serde_json::to_vec(&c.name).unwrap_or_default();
                k.push(b':');
                k
            })
            .collect();
        JsonSink {
            out: BufWriter::with_capacity(64 * 1024, out),
            keys,
        }
    }
}

impl Sink for JsonSink<'_> {
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()> {
        let out = &mut self.out;
        out.write_all(b"{")?;
        for (i, (k, v)) in self.keys.iter().zip(row).enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(k)?;
            match v {
                Value::Null => out.write_all(b"null")?,
                Value::Time(ns) => serde_json::to_writer(&mut *out, &rfc3339_micros(*ns))
                    .map_err(std::io::Error::from)?,
                Value::Int(n) => write!(out, "{n}")?,
                Value::UInt(n) => write!(out, "{n}")?,
                Value::Float(x) if x.is_finite() => {
                    serde_json::to_writer(&mut *out, x).map_err(std::io::Error::from)?
                }
                Value::Float(_) => out.write_all(b"null")?,
                Value::Text(s) => {
                    serde_json::to_writer(&mut *out, s).map_err(std::io::Error::from)?
                }
                Value::Bytes(b) => {
                    let mut hex = String::with_capacity(2 * b.len());
                    super::cells::hex_into(&mut hex, b);
                    write!(out, "\"{hex}\"")?
                }
                Value::Bool(b) => write!(out, "{b}")?,
            }
        }
        out.write_all(b"}\n")?;
        Ok(())
    }

    fn finish(&mut self, _complete: bool) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
