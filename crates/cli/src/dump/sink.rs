//! What each format's writer is: a sink fed the rows of the chosen columns, then finished.

use tasksnap_model::Reading;

use super::cells::Value;

/// A format's writer: fed rows of the chosen columns, then finished.
pub(super) trait Sink {
    /// Called before the rows of each reading (a partitioned dump picks the file of the
    /// reading's host and date).
    fn begin_reading(&mut self, _reading: &Reading) -> anyhow::Result<()> {
        Ok(())
    }
    /// Writes one row (the chosen columns' values, in order).
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()>;
    /// Writes what is buffered and the format's ending; `complete` is false when the input
    /// failed and the dump stops early.
    fn finish(&mut self, complete: bool) -> anyhow::Result<()>;
}
