//! CSV: a header row of the column names, then one record per row, quoted as RFC 4180 says
//! (the `csv` crate's default: only fields holding a comma, quote or line break are quoted).
//! Times are RFC 3339 UTC with microseconds, nulls are empty fields, floats the shortest
//! text that reads back to the same number, exact bytes (`*_bytes`) lower-case hex.

use std::io::{self, Write};

use super::cells::Value;
use super::clock::rfc3339_micros;
use super::columns::Column;
use super::sink::Sink;

/// Writes CSV records.
pub struct CsvSink<'a> {
    out: csv::Writer<&'a mut dyn Write>,
    field: String,
}

impl std::fmt::Debug for CsvSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvSink").finish_non_exhaustive()
    }
}

impl<'a> CsvSink<'a> {
    /// Writes the header of `cols` (buffered until the first flush).
    pub fn new(cols: &[Column], out: &'a mut dyn Write) -> anyhow::Result<CsvSink<'a>> {
        let mut out = csv::Writer::from_writer(out);
        out.write_record(cols.iter().map(|c| c.name.as_str()))
            .map_err(io_error)?;
        Ok(CsvSink {
            out,
            field: String::new(),
        })
    }
}

/// The `io::Error` inside a CSV error, as it was (a closed pipe stays one); a CSV error of
/// another kind (which writing field by field does not make) as an `io::Error` of its own.
fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("CSV: {other:?}")),
    }
}

/// A value as CSV field text, into `buf` (cleared first).
fn render(v: &Value, buf: &mut String) {
    use std::fmt::Write as _;
    buf.clear();
    // Writing into a String cannot fail.
    let _ = match v {
        Value::Null => Ok(()),
        Value::Time(ns) => {
            buf.push_str(&rfc3339_micros(*ns));
            Ok(())
        }
        Value::Int(n) => write!(buf, "{n}"),
        Value::UInt(n) => write!(buf, "{n}"),
        Value::Float(x) if x.is_finite() => write!(buf, "{x}"),
        Value::Float(_) => Ok(()),
        Value::Text(s) => {
            buf.push_str(s);
            Ok(())
        }
        Value::Bytes(b) => {
            super::cells::hex_into(buf, b);
            Ok(())
        }
        Value::Bool(b) => write!(buf, "{b}"),
    };
}

impl Sink for CsvSink<'_> {
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()> {
        for v in row {
            render(v, &mut self.field);
            self.out
                .write_field(self.field.as_bytes())
                .map_err(io_error)?;
        }
        self.out.write_record(None::<&[u8]>).map_err(io_error)?;
        Ok(())
    }

    fn finish(&mut self, _complete: bool) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
