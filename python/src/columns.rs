//! `tasksnap.snapshot`: one whole-system pass as columns (one Arrow array per column, built
//! here, no object per process: [`crate::arrow`] hands them to pyarrow without a copy, or
//! as a dict of lists without pyarrow).
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

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
use pyo3::prelude::*;
use tasksnap_model::{fields, Group, Groups, Selector, Task};

use crate::arrow::Columns;
use crate::attrs::{groups_for, parse_attrs, Attr};
use crate::host;
use crate::psutil::{split_cmdline, status_name};

/// The columns an attribute becomes ([`crate::attrs::Spec::columns`]).
fn columns_of(a: Attr) -> &'static [&'static str] {
    a.spec().columns
}

/// What `snapshot()` is asked for: psutil's attributes, and any other field of the model's
/// table by its name (`tasksnap_model::fields`): a field added there is a column here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
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

/// An integer column of `tasks` (null where unreadable): int64, or uint64 when a value is
/// beyond int64 (what pyarrow infers from the same Python ints).
fn ints<'a>(tasks: &'a [Task], value: impl Fn(&'a Task) -> Option<fields::Value<'a>>) -> ArrayRef {
    let values: Vec<Option<fields::Value<'a>>> = tasks.iter().map(value).collect();
    let int = |v: &Option<fields::Value<'a>>| match *v {
        Some(fields::Value::Int(n)) => Some(n),
        Some(fields::Value::UInt(n)) => i64::try_from(n).ok(),
        _ => None,
    };
    let beyond = values
        .iter()
        .any(|v| matches!(*v, Some(fields::Value::UInt(n)) if i64::try_from(n).is_err()));
    if beyond {
        let a: UInt64Array = values
            .iter()
            .map(|v| match *v {
                Some(fields::Value::UInt(n)) => Some(n),
                Some(fields::Value::Int(n)) => u64::try_from(n).ok(),
                _ => None,
            })
            .collect();
        return Arc::new(a);
    }
    Arc::new(values.iter().map(int).collect::<Int64Array>())
}

/// A psutil attribute's plain field as a column, with psutil's unit (`field_value`'s rule:
/// nanoseconds become float seconds; memory only where the memory group was read).
fn plain(tasks: &[Task], f: &'static fields::Field) -> ArrayRef {
    let read = |t: &Task| !(f.group == fields::Group::Mem && t.mem.is_none());
    if f.unit == fields::Unit::Ns {
        let a: Float64Array = tasks
            .iter()
            .map(|t| match f.value(t).filter(|_| read(t)) {
                Some(fields::Value::UInt(ns)) => Some(ns as f64 / 1e9),
                Some(fields::Value::Int(ns)) => Some(ns as f64 / 1e9),
                _ => None,
            })
            .collect();
        return Arc::new(a);
    }
    ints(tasks, |t| f.value(t).filter(|_| read(t)))
}

/// The `cmdline` column (each argument as text, as in [`text_and_bytes`]) and its
/// `cmdline_bytes` sibling (every argument's exact bytes, where any of them is not UTF-8).
fn cmdlines(tasks: &[Task]) -> (ArrayRef, ArrayRef) {
    let mut texts = ListBuilder::new(StringBuilder::new());
    let mut exact = ListBuilder::new(BinaryBuilder::new());
    for t in tasks {
        let Some(c) = &t.cmdline else {
            texts.append_null();
            exact.append_null();
            continue;
        };
        let args = split_cmdline(c);
        for a in &args {
            texts.values().append_value(String::from_utf8_lossy(a));
        }
        texts.append(true);
        if std::str::from_utf8(c).is_ok() {
            exact.append_null();
        } else {
            for a in &args {
                exact.values().append_value(a);
            }
            exact.append(true);
        }
    }
    (Arc::new(texts.finish()), Arc::new(exact.finish()))
}

/// One whole-system pass of `attrs` as a dict of lists (processes, or every thread with a
/// `tid` column when `threads`).
#[pyfunction]
#[pyo3(signature = (attrs, threads=false, backend="auto"))]
pub(crate) fn snapshot<'py>(
    py: Python<'py>,
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
    let mut snap = pass(py, backend, threads, groups, real_ids)?;
    if !threads {
        snap.tasks.retain(|t| t.id.is_leader());
    }
    let tasks = &snap.tasks;
    let mut users: HashMap<u32, Vec<u8>> = HashMap::new();
    if attrs.contains(&Attr::Username) {
        let mut uids: Vec<u32> = tasks
            .iter()
            .filter_map(|t| t.cred.as_ref().map(|c| c.ruid))
            .collect();
        uids.sort_unstable();
        uids.dedup();
        users.extend(py.detach(|| host::user_names(uids)));
    }
    let made = Made {
        tasks,
        threads,
        boot_time_s: snap.boot_time_unix_s as f64,
        users,
    };
    let mut out: Vec<(String, ArrayRef)> = Vec::new();
    for a in asked {
        match a {
            Asked::Attr(a) => made.attr(&mut out, a),
            Asked::Field(f) => field_columns(&mut out, tasks, f),
        }
    }
    Columns::new(out, tasks.len())
}

/// The whole-system pass of `snapshot()`: processes, or every thread when `threads`.
/// Threads share their process's memory: with `threads`, statm is read once per process
/// (the library's fill of the leaders) and given to every thread, instead of once per
/// thread.
fn pass(
    py: Python<'_>,
    backend: tasksnap_model::Backend,
    threads: bool,
    groups: Groups,
    real_ids: bool,
) -> PyResult<tasksnap_model::Snapshot> {
    let selector = if threads {
        Selector::AllThreads
    } else {
        Selector::AllProcesses
    };
    let per_process_mem = threads && groups.has(Group::Mem);
    let bulk_groups = groups.flag(Group::Mem, groups.has(Group::Mem) && !per_process_mem);
    crate::interrupt::run(py, move |_| -> Result<_, tasksnap_collect::Error> {
        let mut snap = host::bulk(backend, selector, bulk_groups, real_ids, false)?;
        if per_process_mem {
            let leaders: Vec<(i32, i32)> = snap
                .tasks
                .iter()
                .filter(|t| t.id.is_leader())
                .map(|t| (t.id.tgid, t.id.tid))
                .collect();
            let mem = Groups::of(&[Group::Mem]);
            let by_tgid: HashMap<i32, Box<tasksnap_model::Mem>> = host::fill(&leaders, mem)?
                .into_iter()
                .filter_map(|t| Some((t.id.tgid, t.mem?)))
                .collect();
            for t in &mut snap.tasks {
                t.mem = by_tgid.get(&t.id.tgid).cloned();
            }
        }
        Ok(snap)
    })?
    .map_err(crate::collect_error)
}

/// A field of the model's table as a column of its name (a bytes field: text, and its
/// `_bytes` sibling).
fn field_columns(out: &mut Vec<(String, ArrayRef)>, tasks: &[Task], f: &'static fields::Field) {
    match f.kind {
        fields::Kind::Int => out.push((f.name.into(), ints(tasks, |t| f.value(t)))),
        fields::Kind::Bytes => {
            let (texts, exact) = text_and_bytes(
                tasks
                    .iter()
                    .map(|t| f.value(t).and_then(fields::Value::as_bytes)),
            );
            out.push((f.name.into(), texts));
            out.push((format!("{}_bytes", f.name), exact));
        }
    }
}

/// What a psutil attribute's columns are made of.
struct Made<'a> {
    tasks: &'a [Task],
    threads: bool,
    boot_time_s: f64,
    /// User names by uid (for `username`).
    users: HashMap<u32, Vec<u8>>,
}

impl Made<'_> {
    /// The columns of attribute `a` ([`columns_of`]).
    fn attr(&self, out: &mut Vec<(String, ArrayRef)>, a: Attr) {
        let tasks = self.tasks;
        let cols = columns_of(a);
        let mut pair = |(texts, exact): (ArrayRef, ArrayRef)| {
            out.push((cols[0].into(), texts));
            out.push((cols[1].into(), exact));
        };
        match a {
            // The plain fields: one column each, from the model's table.
            _ if a.spec().plain => {
                for (c, f) in cols.iter().zip(a.fields()) {
                    out.push((c.to_string(), plain(tasks, f)));
                }
            }
            Attr::Pid => {
                let ids = |id: fn(&Task) -> i32| -> ArrayRef {
                    Arc::new(Int64Array::from_iter_values(
                        tasks.iter().map(|t| i64::from(id(t))),
                    ))
                };
                out.push(("pid".into(), ids(|t| t.id.tgid)));
                if self.threads {
                    out.push(("tid".into(), ids(|t| t.id.tid)));
                }
            }
            Attr::Name => {
                pair(text_and_bytes(
                    tasks.iter().map(|t| t.base.as_ref().map(|b| &b.comm[..])),
                ));
            }
            Attr::Username => pair(text_and_bytes(tasks.iter().map(|t| {
                t.cred
                    .as_ref()
                    .and_then(|c| self.users.get(&c.ruid).map(Vec::as_slice))
            }))),
            Attr::Status => {
                let s: StringArray = tasks
                    .iter()
                    .map(|t| t.base.as_ref().map(|b| status_name(b.state)))
                    .collect();
                out.push((cols[0].into(), Arc::new(s)));
            }
            Attr::CreateTime => out.push((
                cols[0].into(),
                Arc::new(Float64Array::from_iter_values(tasks.iter().map(|t| {
                    host::create_time_s(t.id.start_time_ns, self.boot_time_s)
                }))),
            )),
            Attr::Cmdline => pair(cmdlines(tasks)),
            // No columns ([`Attr::columnar`]): refused by `parse_asked`.
            _ => {}
        }
    }
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
