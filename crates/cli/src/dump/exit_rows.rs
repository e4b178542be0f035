//! The row of a process that exited since the previous reading: its exit record as the
//! model's task (`Exit::task`), so the columns live rows use read its final figures the same
//! way, with the columns only an exit fills (`exit_time`, `exit_code`, `exit_signal`,
//! `peak_rss_bytes`). A column shows the record's figure when the record holds every field
//! of the model's table it shows (`Exit::FIELDS`, [`super::columns::Source::shows`]); the
//! others (state, memory now, nice, cgroup, ...) are null there.

use tasksnap_model::{fields, Exit, ExitReason, Snapshot};

use super::cells::{int, since_boot, Value};
use super::columns::Source;

/// Which of a producer's columns an exited process's row has (computed once per dump).
#[derive(Debug)]
pub(super) struct ExitColumns(Vec<bool>);

impl ExitColumns {
    /// The columns of `sources` an exit row has: the reading's time, and those whose fields
    /// of the model's table the exit record holds. (The exit's own columns and the identity
    /// columns have their values regardless.)
    pub(super) fn new(sources: &[Source]) -> ExitColumns {
        let has = |s: &Source| {
            let mut shown = fields::FIELDS.iter().filter(|f| s.shows(f)).peekable();
            *s == Source::Time
                || (shown.peek().is_some() && shown.all(|f| Exit::FIELDS.contains(&f)))
        };
        ExitColumns(sources.iter().map(has).collect())
    }

    /// Whether an exit row has the `i`th column.
    pub(super) fn has(&self, i: usize) -> bool {
        self.0[i]
    }
}

/// One cell of an exited process's row (`has`: whether the row has the column,
/// [`ExitColumns`]; `live`: the cell as a live row of `e.task()` makes it, for the columns
/// the exit shares with live rows).
pub(super) fn exit_value(
    f: Source,
    has: bool,
    snap: &Snapshot,
    e: &Exit,
    live: impl FnOnce() -> Value,
) -> Value {
    match f {
        Source::ExitTime => since_boot(snap.boot_time_unix_s, e.exit_time_ns),
        Source::ExitCode => match e.reason() {
            ExitReason::Code(c) => Value::Int(c.into()),
            ExitReason::Signal { .. } => Value::Null,
        },
        Source::ExitSignal => match e.reason() {
            ExitReason::Code(_) => Value::Null,
            ExitReason::Signal { signal, .. } => Value::Int(signal.into()),
        },
        Source::ExitPeakRss => int(e.peak_rss_bytes),
        _ if has => live(),
        _ => Value::Null,
    }
}
