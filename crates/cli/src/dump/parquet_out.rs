//! Parquet through the arrow and parquet crates: one Arrow column per chosen column (`time`
//! and `start_time` as `TIMESTAMP(MICROSECOND, UTC)`, integers INT64 (the cgroup counters
//! UINT64), floats DOUBLE, text
//! UTF8, exact bytes BINARY, flags BOOLEAN, all nullable), rows gathered into record batches of [`BATCH_ROWS`],
//! one row group each, zstd-compressed. The parquet writer wants an owned `Write + Send`: it
//! writes into a `Vec` that is drained into the caller's writer after every row group, so
//! memory holds one row group at most. An empty dump is a file with the schema and no rows.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::cells::Value;
use super::columns::{Column, Kind};
use super::sink::Sink;

/// Rows per record batch and row group.
pub const BATCH_ROWS: usize = 64 * 1024;

/// The Arrow type of a column kind.
pub(crate) fn data_type(k: Kind) -> DataType {
    match k {
        Kind::Time => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Kind::Int => DataType::Int64,
        Kind::UInt => DataType::UInt64,
        Kind::Float => DataType::Float64,
        Kind::Text => DataType::Utf8,
        Kind::Bytes => DataType::Binary,
        Kind::Bool => DataType::Boolean,
    }
}

/// A column being gathered.
enum Builder {
    Time(TimestampMicrosecondBuilder),
    Int(Int64Builder),
    UInt(UInt64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Bytes(BinaryBuilder),
    Bool(BooleanBuilder),
}

impl Builder {
    fn new(k: Kind) -> Builder {
        match k {
            Kind::Time => Builder::Time(TimestampMicrosecondBuilder::new().with_timezone("UTC")),
            Kind::Int => Builder::Int(Int64Builder::new()),
            Kind::UInt => Builder::UInt(UInt64Builder::new()),
            Kind::Float => Builder::Float(Float64Builder::new()),
            Kind::Text => Builder::Text(StringBuilder::new()),
            Kind::Bytes => Builder::Bytes(BinaryBuilder::new()),
            Kind::Bool => Builder::Bool(BooleanBuilder::new()),
        }
    }

    /// Appends `v`; a value of another kind than the column's (a bug) is appended as null.
    fn push(&mut self, v: &Value) {
        match (self, v) {
            (Builder::Time(b), Value::Time(ns)) => b.append_value(ns.div_euclid(1000)),
            (Builder::Time(b), _) => b.append_null(),
            (Builder::Int(b), Value::Int(n)) => b.append_value(*n),
            (Builder::Int(b), _) => b.append_null(),
            (Builder::UInt(b), Value::UInt(n)) => b.append_value(*n),
            (Builder::UInt(b), _) => b.append_null(),
            (Builder::Float(b), Value::Float(x)) => b.append_value(*x),
            (Builder::Float(b), _) => b.append_null(),
            (Builder::Text(b), Value::Text(s)) => b.append_value(s),
            (Builder::Text(b), _) => b.append_null(),
            (Builder::Bytes(b), Value::Bytes(x)) => b.append_value(x),
            (Builder::Bytes(b), _) => b.append_null(),
            (Builder::Bool(b), Value::Bool(x)) => b.append_value(*x),
            (Builder::Bool(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Time(b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::UInt(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Bytes(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
        }
    }
}

/// Writes a Parquet file.
pub struct ParquetSink<'a> {
    out: Box<dyn Write + 'a>,
    schema: SchemaRef,
    builders: Vec<Builder>,
    rows: usize,
    /// `None` once finished.
    writer: Option<ArrowWriter<Vec<u8>>>,
}

impl std::fmt::Debug for ParquetSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetSink")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl<'a> ParquetSink<'a> {
    /// A writer of rows of `cols`.
    pub fn new(cols: &[Column], out: &'a mut dyn Write) -> anyhow::Result<ParquetSink<'a>> {
        ParquetSink::owning(cols, Box::new(out))
    }

    /// A writer of rows of `cols` into a writer it owns (a partition's file).
    pub fn owning(cols: &[Column], out: Box<dyn Write + 'a>) -> anyhow::Result<ParquetSink<'a>> {
        let schema: SchemaRef = Arc::new(Schema::new(
            cols.iter()
                .map(|c| Field::new(c.name.as_str(), data_type(c.kind), true))
                .collect::<Vec<_>>(),
        ));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(BATCH_ROWS))
            .set_created_by(format!("tasksnap {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))
            .context("cannot start the Parquet file")?;
        Ok(ParquetSink {
            out,
            builders: cols.iter().map(|c| Builder::new(c.kind)).collect(),
            schema,
            rows: 0,
            writer: Some(writer),
        })
    }

    /// Writes the gathered rows as a row group and passes the bytes on.
    fn flush_batch(&mut self) -> anyhow::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if self.rows > 0 {
            let arrays = self.builders.iter_mut().map(Builder::finish).collect();
            let batch = RecordBatch::try_new(self.schema.clone(), arrays)
                .context("cannot build a Parquet record batch")?;
            self.rows = 0;
            w.write(&batch).context("cannot encode Parquet rows")?;
            w.flush().context("cannot encode a Parquet row group")?;
        }
        drain(w, &mut self.out)
    }
}

/// Moves what the parquet writer has produced so far to `out`. The writer counts the bytes
/// it wrote itself, so emptying its `Vec` leaves the file's offsets right.
fn drain(w: &mut ArrowWriter<Vec<u8>>, out: &mut dyn Write) -> anyhow::Result<()> {
    w.sync()?;
    let bytes = std::mem::take(w.inner_mut());
    out.write_all(&bytes)?;
    Ok(())
}

impl Sink for ParquetSink<'_> {
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()> {
        for (b, v) in self.builders.iter_mut().zip(row) {
            b.push(v);
        }
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn finish(&mut self, _complete: bool) -> anyhow::Result<()> {
        self.flush_batch()?;
        if let Some(mut w) = self.writer.take() {
            w.finish().context("cannot finish the Parquet file")?;
            drain(&mut w, &mut self.out)?;
        }
        self.out.flush()?;
        Ok(())
    }
}
