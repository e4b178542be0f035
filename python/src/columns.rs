//! `tasksnap.snapshot`: one whole-system pass as columns (one Arrow array per column, built
//! by [`crate::builders`] as the library hands each task over, no object per process:
//! [`crate::arrow`] hands them to pyarrow without a copy, or as a dict of lists without
//! pyarrow): what is asked, the column names, the pass.
//! Besides psutil's attributes it takes every field of the model's table by name
//! (`tasksnap.FIELDS`, `tasksnap_model::fields`), a column of that name in its unit; the
//! attributes' plain values come from the same table (`Attr::fields`).
//!
//! psutil's named tuples become one column per field, named after the field
//! (`cpu_times` -> `cpu_user`, `cpu_system`, ...; `memory_info` -> `rss`, `vms`, ...), with
//! the same units as psutil's values; an unreadable value is None (null).
//!
//! Names are the bytes they are: a text column (`name`, `username`, `cmdline`) is always
//! valid UTF-8 (invalid bytes replaced by U+FFFD, so pyarrow takes it whatever another user
//! named a process), and its sibling (`name_bytes`, `username_bytes`, `cmdline_bytes`)
//! holds the exact bytes where the value was not valid UTF-8, None otherwise.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::{ArrayRef, Int64Array, UInt64Array};
use pyo3::prelude::*;
use tasksnap_model::{fields, Group, Groups, Selector};

use crate::arrow::Columns;
use crate::attrs::{groups_for, parse_attrs, Attr};
use crate::builders::{After, Table};
use crate::host;

/// The columns an attribute becomes ([`crate::attrs::Spec::columns`]).
fn columns_of(a: Attr) -> &'static [&'static str] {
    a.spec().columns
}

/// What `snapshot()` is asked for: psutil's attributes, and any other field of the model's
/// table by its name (`tasksnap_model::fields`): a field added there is a column here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// A psutil attribute.
    Attr(Attr),
    /// A field of the model's table, a column of its name (a bytes field also its `_bytes`
    /// sibling), in its own unit.
    Field(&'static fields::Field),
}

/// The table's fields `snapshot()` takes by name: all but those a psutil attribute is named
/// after (`pid`, `nice`...), which keep psutil's meaning.
fn snapshot_field(name: &str) -> Option<&'static fields::Field> {
    fields::field(name).filter(|_| Attr::parse(name).is_none_or(|a| !a.columnar()))
}

fn parse_asked(names: &[String]) -> PyResult<Vec<Asked>> {
    names
        .iter()
        .map(|n| match snapshot_field(n) {
            Some(f) => Ok(Asked::Field(f)),
            None => match parse_attrs(std::slice::from_ref(n))?[0] {
                a if a.columnar() => Ok(Asked::Attr(a)),
                _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "snapshot() has no column for {n:?}: ask process_iter() for it"
                ))),
            },
        })
        .collect()
}

/// The names of the table's fields `snapshot()` takes, with each one's kind (`int` or
/// `bytes`) and help.
#[pyfunction]
pub(crate) fn field_names() -> Vec<(&'static str, &'static str, &'static str)> {
    fields::FIELDS
        .iter()
        .filter(|f| snapshot_field(f.name).is_some())
        .map(|f| {
            let kind = match f.kind {
                fields::Kind::Int => "int",
                fields::Kind::Bytes => "bytes",
            };
            (f.name, kind, f.help)
        })
        .collect()
}

/// The column names `snapshot(attrs, threads)` returns, in order.
#[pyfunction]
#[pyo3(signature = (attrs, threads=false))]
pub(crate) fn column_names(attrs: Vec<String>, threads: bool) -> PyResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for a in parse_asked(&attrs)? {
        match a {
            Asked::Attr(a) => {
                out.extend(columns_of(a).iter().map(|c| c.to_string()));
                if a == Attr::Pid && threads {
                    out.push("tid".into());
                }
            }
            Asked::Field(f) => {
                out.push(f.name.into());
                if f.kind == fields::Kind::Bytes {
                    out.push(format!("{}_bytes", f.name));
                }
            }
        }
    }
    Ok(out)
}

/// A text column and its `_bytes` sibling for `values` (None: unreadable): the text always
/// (valid UTF-8, each invalid sequence replaced by U+FFFD), the exact bytes only where they
/// are not valid UTF-8.
pub(crate) fn text_and_bytes<'a>(
    values: impl Iterator<Item = Option<&'a [u8]>>,
) -> (ArrayRef, ArrayRef) {
    let mut texts = StringBuilder::new();
    let mut exact = BinaryBuilder::new();
    for v in values {
        match v {
            Some(b) => {
                texts.append_value(String::from_utf8_lossy(b));
                match std::str::from_utf8(b) {
                    Ok(_) => exact.append_null(),
                    Err(_) => exact.append_value(b),
                }
            }
            None => {
                texts.append_null();
                exact.append_null();
            }
        }
    }
    (Arc::new(texts.finish()), Arc::new(exact.finish()))
}

/// An unsigned integer column (null for None) by [`ints`]' rule: int64, or uint64 when a
/// value is beyond int64.
pub(crate) fn unsigned(values: &[Option<u64>]) -> ArrayRef {
    if values.iter().flatten().any(|&n| i64::try_from(n).is_err()) {
        return Arc::new(values.iter().copied().collect::<UInt64Array>());
    }
    Arc::new(
        values
            .iter()
            .map(|v| v.and_then(|n| i64::try_from(n).ok()))
            .collect::<Int64Array>(),
    )
}

/// How many rows the last `snapshot()` had: the next one's builders reserve that much.
static LAST_ROWS: AtomicUsize = AtomicUsize::new(0);

/// One whole-system pass of `attrs` as columns (processes, or every thread with a `tid`
/// column when `threads`): each task goes into the columns' builders as the library hands
/// it over, on the call's own thread, without the GIL ([`Table`]).
#[pyfunction]
#[pyo3(signature = (attrs, threads=false, backend="auto"))]
pub(crate) fn snapshot(
    py: Python<'_>,
    attrs: Vec<String>,
    threads: bool,
    backend: &str,
) -> PyResult<Columns> {
    let asked = parse_asked(&attrs)?;
    let attrs: Vec<Attr> = asked
        .iter()
        .filter_map(|a| match a {
            Asked::Attr(a) => Some(*a),
            Asked::Field(_) => None,
        })
        .collect();
    let backend = crate::backend_arg(backend)?;
    let (mut groups, real_ids) = groups_for(&attrs);
    for a in &asked {
        if let Asked::Field(f) = a {
            f.group.ask(&mut groups);
        }
    }
    let (columns, rows) = crate::interrupt::run(py, move |_| {
        let table = Table::new(&asked, threads, LAST_ROWS.load(Ordering::Relaxed));
        pass(table, backend, threads, groups, real_ids)
    })?
    .map_err(crate::collect_error)?;
    LAST_ROWS.store(rows, Ordering::Relaxed);
    Columns::new(columns, rows)
}

/// The whole-system pass of `snapshot()` into `table`: processes, or every thread when
/// `threads`. Threads share their process's memory: with `threads`, statm is read once per
/// process after the pass (the library's fill of the leaders) and given to each of its
/// threads' rows, instead of once per thread.
fn pass(
    mut table: Table,
    backend: tasksnap_model::Backend,
    threads: bool,
    groups: Groups,
    real_ids: bool,
) -> Result<(Vec<(String, ArrayRef)>, usize), tasksnap_collect::Error> {
    let selector = if threads {
        Selector::AllThreads
    } else {
        Selector::AllProcesses
    };
    let per_process_mem = threads && groups.has(Group::Mem);
    let bulk_groups = groups.flag(Group::Mem, groups.has(Group::Mem) && !per_process_mem);
    let snap = host::bulk_each(backend, selector, bulk_groups, real_ids, &mut |t| {
        table.push(t)
    })?;
    let mut processes = Vec::new();
    if table.wants_process_memory() {
        let leaders: Vec<(i32, i32)> = table.processes().into_iter().map(|p| (p, p)).collect();
        processes = host::fill(&leaders, Groups::of(&[Group::Mem]))?;
        processes.sort_unstable_by_key(|t| t.id.tgid);
    }
    let rows = table.rows();
    let after = After {
        boot_time_s: snap.boot_time_unix_s as f64,
        processes: &processes,
    };
    Ok((table.finish(&after), rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of the model's table `snapshot()` does not take by name: each is the
    /// name of a psutil attribute with columns, which keeps psutil's meaning (`pid`,
    /// `cmdline` a list...) and is read from the field.
    const TAKEN_BY_PSUTIL: [&str; 5] = ["pid", "ppid", "nice", "num_threads", "cmdline"];

    /// Every field of the model's table reaches Python: a `snapshot()` column of its name
    /// (`tasksnap.FIELDS`), or one of [`TAKEN_BY_PSUTIL`], read by the attribute of its
    /// name. A field added to the table that is neither fails here.
    #[test]
    fn every_field_of_the_model_reaches_python() {
        let names: Vec<&str> = field_names().into_iter().map(|(n, _, _)| n).collect();
        for f in fields::FIELDS {
            let taken = TAKEN_BY_PSUTIL.contains(&f.name);
            assert_eq!(
                names.contains(&f.name),
                !taken,
                "{}: a field is in tasksnap.FIELDS unless listed as taken by psutil",
                f.name
            );
            if taken {
                let a = Attr::parse(f.name).filter(|a| a.columnar());
                assert!(
                    a.is_some_and(|a| a.fields().iter().any(|g| g.name == f.name)),
                    "{}: taken by a psutil attribute with columns that reads it",
                    f.name
                );
            }
        }
    }
}
