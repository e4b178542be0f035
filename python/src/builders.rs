//! `snapshot()`'s columns built one task at a time: a typed Arrow builder per column, fed by
//! [`Table::push`] as the library hands each task over (during its pass, on the call's own
//! thread, without the GIL), so that no column goes through a vector of values or a string
//! allocated per row. What a task alone cannot say is made once the pass is over
//! ([`Table::finish`]): user names (one lookup per distinct uid), create times (the boot
//! time comes with the pass), and with threads, the memory columns from each row's
//! process (statm read once per process, not per thread: [`PerProcess`]).
//!
//! The rules are [`crate::columns`]'s: integers int64, or uint64 when a value is beyond it
//! (what pyarrow infers from the same Python ints); nanoseconds of a psutil attribute as
//! float seconds; text always valid UTF-8 with the exact bytes beside it where it is not.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder, UInt64Builder,
};
use arrow_array::ArrayRef;
use tasksnap_model::{fields, Task};

use crate::attrs::Attr;
use crate::columns::Asked;
use crate::host;
use crate::psutil::{cmdline_args, status_name};

/// Bytes reserved per row for a text column's values (names: the comm, 15 at most).
const NAME_BYTES: usize = 16;
/// Bytes reserved per row for a command line's values.
const CMDLINE_BYTES: usize = 64;

/// An integer column: int64 until a value is beyond it, then uint64 (what was appended
/// so far converted, a negative one null), as pyarrow infers from the same Python ints.
enum Ints {
    Signed(Int64Builder),
    Unsigned(UInt64Builder),
}

impl Ints {
    fn with_capacity(rows: usize) -> Ints {
        Ints::Signed(Int64Builder::with_capacity(rows))
    }

    fn push(&mut self, v: Option<fields::Value<'_>>) {
        use fields::Value::{Int, UInt};
        if let (Ints::Signed(b), Some(UInt(n))) = (&mut *self, v) {
            if i64::try_from(n).is_err() {
                let so_far = b.finish();
                let mut u = UInt64Builder::with_capacity(so_far.len() + 1);
                for x in so_far.iter() {
                    u.append_option(x.and_then(|x| u64::try_from(x).ok()));
                }
                *self = Ints::Unsigned(u);
            }
        }
        match (self, v) {
            (Ints::Signed(b), Some(Int(n))) => b.append_value(n),
            (Ints::Signed(b), Some(UInt(n))) => b.append_option(i64::try_from(n).ok()),
            (Ints::Signed(b), _) => b.append_null(),
            (Ints::Unsigned(b), Some(UInt(n))) => b.append_value(n),
            (Ints::Unsigned(b), Some(Int(n))) => b.append_option(u64::try_from(n).ok()),
            (Ints::Unsigned(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Ints::Signed(b) => Arc::new(b.finish()),
            Ints::Unsigned(b) => Arc::new(b.finish()),
        }
    }
}

/// A text column and its `_bytes` sibling: the text always (each invalid sequence replaced
/// by U+FFFD), the exact bytes only where they are not valid UTF-8.
struct TextPair {
    texts: StringBuilder,
    exact: BinaryBuilder,
}

impl TextPair {
    fn with_capacity(rows: usize, bytes_per_row: usize) -> TextPair {
        TextPair {
            texts: StringBuilder::with_capacity(rows, rows * bytes_per_row),
            exact: BinaryBuilder::with_capacity(rows, 0),
        }
    }

    fn push(&mut self, v: Option<&[u8]>) {
        let Some(b) = v else {
            self.texts.append_null();
            self.exact.append_null();
            return;
        };
        match std::str::from_utf8(b) {
            Ok(s) => {
                self.texts.append_value(s);
                self.exact.append_null();
            }
            Err(_) => {
                self.texts.append_value(String::from_utf8_lossy(b));
                self.exact.append_value(b);
            }
        }
    }

    fn finish(&mut self) -> (ArrayRef, ArrayRef) {
        (Arc::new(self.texts.finish()), Arc::new(self.exact.finish()))
    }
}

/// The `cmdline` column (each argument as text) and its `cmdline_bytes` sibling (every
/// argument's exact bytes, where any of them is not UTF-8).
struct Cmdlines {
    texts: ListBuilder<StringBuilder>,
    exact: ListBuilder<BinaryBuilder>,
}

impl Cmdlines {
    fn with_capacity(rows: usize) -> Cmdlines {
        let values = StringBuilder::with_capacity(rows * 2, rows * CMDLINE_BYTES);
        Cmdlines {
            texts: ListBuilder::with_capacity(values, rows),
            exact: ListBuilder::with_capacity(BinaryBuilder::new(), rows),
        }
    }

    fn push(&mut self, line: Option<&[u8]>) {
        let Some(c) = line else {
            self.texts.append_null();
            self.exact.append_null();
            return;
        };
        if std::str::from_utf8(c).is_ok() {
            // Split at ASCII bytes (NUL, space), each argument of a valid line is valid.
            for a in cmdline_args(c) {
                self.texts
                    .values()
                    .append_value(std::str::from_utf8(a).unwrap_or_default());
            }
            self.texts.append(true);
            self.exact.append_null();
            return;
        }
        for a in cmdline_args(c) {
            self.texts.values().append_value(String::from_utf8_lossy(a));
            self.exact.values().append_value(a);
        }
        self.texts.append(true);
        self.exact.append(true);
    }

    fn finish(&mut self) -> (ArrayRef, ArrayRef) {
        (Arc::new(self.texts.finish()), Arc::new(self.exact.finish()))
    }
}

/// The text of a [`Col::Text`] column in a task.
#[derive(Clone, Copy)]
enum TextOf {
    /// The comm (`name`).
    Comm,
    /// A bytes field of the model's table.
    Field(&'static fields::Field),
}

impl TextOf {
    fn of(self, t: &Task) -> Option<&[u8]> {
        match self {
            TextOf::Comm => t.base.as_ref().map(|b| &b.comm[..]),
            TextOf::Field(f) => f.value(t).and_then(fields::Value::as_bytes),
        }
    }
}

/// A number of the model's table, owned (a value kept until the pass is over).
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    UInt(u64),
}

impl Num {
    fn of(v: Option<fields::Value<'_>>) -> Option<Num> {
        match v? {
            fields::Value::Int(n) => Some(Num::Int(n)),
            fields::Value::UInt(n) => Some(Num::UInt(n)),
            fields::Value::Bytes(_) => None,
        }
    }

    fn value(n: Option<Num>) -> Option<fields::Value<'static>> {
        n.map(|n| match n {
            Num::Int(n) => fields::Value::Int(n),
            Num::UInt(n) => fields::Value::UInt(n),
        })
    }
}

/// A number as a column: as it is ([`Ints`]), or nanoseconds as float seconds (a psutil
/// attribute's unit).
enum Numbers {
    Ints(Ints),
    Seconds(Float64Builder),
}

impl Numbers {
    fn push(&mut self, v: Option<fields::Value<'_>>) {
        match self {
            Numbers::Ints(b) => b.push(v),
            Numbers::Seconds(b) => b.append_option(match v {
                Some(fields::Value::UInt(ns)) => Some(ns as f64 / 1e9),
                Some(fields::Value::Int(ns)) => Some(ns as f64 / 1e9),
                _ => None,
            }),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Numbers::Ints(b) => b.finish(),
            Numbers::Seconds(b) => Arc::new(b.finish()),
        }
    }
}

/// One column (or a pair: text and exact bytes) being built.
enum Col {
    /// `pid` (and with threads `tid`).
    Ids {
        pid: Int64Builder,
        tid: Option<Int64Builder>,
    },
    /// A number of the model's table. `mem_only`: null where the memory group was not read
    /// (a psutil attribute's rule: `values::field_value`).
    Number {
        name: String,
        field: &'static fields::Field,
        mem_only: bool,
        b: Numbers,
    },
    /// A number of the memory group with threads: each row's process's (read once per
    /// process after the pass); the row's own value (`mem_only`: none) where its process's
    /// could not be read.
    ProcessMem {
        name: String,
        field: &'static fields::Field,
        mem_only: bool,
        seconds: bool,
        own: Vec<Option<Num>>,
    },
    Text {
        names: [String; 2],
        of: TextOf,
        b: TextPair,
    },
    /// `username`: each row's real uid; the names once the pass is over.
    Users {
        names: [String; 2],
        uids: Vec<Option<u32>>,
    },
    Status {
        name: String,
        b: StringBuilder,
    },
    /// `create_time`: each row's start time; seconds once the boot time is known.
    CreateTime {
        name: String,
        start_ns: Vec<u64>,
    },
    Cmdline {
        names: [String; 2],
        b: Cmdlines,
    },
}

/// What [`Table::finish`] needs from after the pass.
pub(crate) struct After<'a> {
    /// The host's boot time, seconds since the epoch.
    pub boot_time_s: f64,
    /// With threads, the memory of each process (tasks read for the memory group, sorted
    /// by tgid).
    pub processes: &'a [Task],
}

/// `snapshot()`'s columns being built, a row per task pushed.
pub(crate) struct Table {
    cols: Vec<Col>,
    threads: bool,
    rows: usize,
    /// Whether a column is made from each row's process after the pass ([`Col::ProcessMem`]).
    per_process: bool,
    /// Each row's process, when `per_process`.
    tgids: Vec<i32>,
}

impl Table {
    /// The builders of `asked`'s columns (names as [`crate::columns::column_names`] gives
    /// them), with room for `rows` rows. With `threads`, a row per thread (and memory
    /// columns made per process after the pass).
    pub(crate) fn new(asked: &[Asked], threads: bool, rows: usize) -> Table {
        let mut cols = Vec::new();
        for w in asked {
            match *w {
                Asked::Attr(a) => attr_cols(&mut cols, a, threads, rows),
                Asked::Field(f) => cols.push(field_col(f, threads, rows)),
            }
        }
        let per_process = cols.iter().any(|c| matches!(c, Col::ProcessMem { .. }));
        Table {
            cols,
            threads,
            rows: 0,
            per_process,
            tgids: Vec::with_capacity(if per_process { rows } else { 0 }),
        }
    }

    /// Rows pushed so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Whether memory columns are to be made from each row's process ([`After::processes`]).
    pub(crate) fn wants_process_memory(&self) -> bool {
        self.per_process
    }

    /// Each process of the rows (sorted, once each): those [`After::processes`] is read for.
    pub(crate) fn processes(&self) -> Vec<i32> {
        let mut p = self.tgids.clone();
        p.dedup();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// One more row: task `t` (a process's row unless `threads`: other threads are skipped).
    pub(crate) fn push(&mut self, t: &Task) {
        if !self.threads && !t.id.is_leader() {
            return;
        }
        self.rows += 1;
        if self.per_process {
            self.tgids.push(t.id.tgid);
        }
        for c in &mut self.cols {
            push_col(c, t);
        }
    }

    /// The columns, in order, with their names.
    pub(crate) fn finish(mut self, after: &After<'_>) -> Vec<(String, ArrayRef)> {
        let mut users: Vec<(u32, Vec<u8>)> = Vec::new();
        if let Some(uids) = self.cols.iter().find_map(|c| match c {
            Col::Users { uids, .. } => Some(uids),
            _ => None,
        }) {
            let mut distinct: Vec<u32> = uids.iter().flatten().copied().collect();
            distinct.sort_unstable();
            distinct.dedup();
            users = host::user_names(distinct);
        }
        let mut out = Vec::new();
        for c in &mut self.cols {
            finish_col(&mut out, c, &self.tgids, &users, after);
        }
        out
    }
}

/// The columns of psutil attribute `a`.
fn attr_cols(cols: &mut Vec<Col>, a: Attr, threads: bool, rows: usize) {
    let names = a.spec().columns;
    let pair = || [names[0].to_string(), names[1].to_string()];
    match a {
        _ if a.spec().plain => {
            for (c, f) in names.iter().zip(a.fields()) {
                cols.push(number_col(
                    c.to_string(),
                    f,
                    true,
                    f.unit == fields::Unit::Ns,
                    threads,
                    rows,
                ));
            }
        }
        Attr::Pid => cols.push(Col::Ids {
            pid: Int64Builder::with_capacity(rows),
            tid: threads.then(|| Int64Builder::with_capacity(rows)),
        }),
        Attr::Name => cols.push(Col::Text {
            names: pair(),
            of: TextOf::Comm,
            b: TextPair::with_capacity(rows, NAME_BYTES),
        }),
        Attr::Username => cols.push(Col::Users {
            names: pair(),
            uids: Vec::with_capacity(rows),
        }),
        Attr::Status => cols.push(Col::Status {
            name: names[0].to_string(),
            b: StringBuilder::with_capacity(rows, rows * 8),
        }),
        Attr::CreateTime => cols.push(Col::CreateTime {
            name: names[0].to_string(),
            start_ns: Vec::with_capacity(rows),
        }),
        Attr::Cmdline => cols.push(Col::Cmdline {
            names: pair(),
            b: Cmdlines::with_capacity(rows),
        }),
        // No columns ([`Attr::columnar`]): refused before a table is made.
        _ => {}
    }
}

/// The column of a field of the model's table asked by its name (in its own unit).
fn field_col(f: &'static fields::Field, threads: bool, rows: usize) -> Col {
    match f.kind {
        fields::Kind::Int => number_col(f.name.to_string(), f, false, false, threads, rows),
        fields::Kind::Bytes => Col::Text {
            names: [f.name.to_string(), format!("{}_bytes", f.name)],
            of: TextOf::Field(f),
            b: TextPair::with_capacity(rows, NAME_BYTES),
        },
    }
}

/// A number column named `name` of field `f`.
fn number_col(
    name: String,
    f: &'static fields::Field,
    mem_only: bool,
    seconds: bool,
    threads: bool,
    rows: usize,
) -> Col {
    if threads && f.group == fields::Group::Mem {
        return Col::ProcessMem {
            name,
            field: f,
            mem_only,
            seconds,
            own: Vec::with_capacity(rows),
        };
    }
    let b = if seconds {
        Numbers::Seconds(Float64Builder::with_capacity(rows))
    } else {
        Numbers::Ints(Ints::with_capacity(rows))
    };
    Col::Number {
        name,
        field: f,
        mem_only,
        b,
    }
}

/// A number of `f` in `t`; none where `mem_only` and the memory group was not read.
fn number<'t>(f: &fields::Field, mem_only: bool, t: &'t Task) -> Option<fields::Value<'t>> {
    if mem_only && f.group == fields::Group::Mem && t.mem.is_none() {
        return None;
    }
    f.value(t)
}

fn push_col(c: &mut Col, t: &Task) {
    match c {
        Col::Ids { pid, tid } => {
            pid.append_value(i64::from(t.id.tgid));
            if let Some(tid) = tid {
                tid.append_value(i64::from(t.id.tid));
            }
        }
        Col::Number {
            field, mem_only, b, ..
        } => b.push(number(field, *mem_only, t)),
        Col::ProcessMem {
            field,
            mem_only,
            own,
            ..
        } => own.push(Num::of(number(field, *mem_only, t))),
        Col::Text { of, b, .. } => b.push(of.of(t)),
        Col::Users { uids, .. } => uids.push(t.cred.as_ref().map(|c| c.ruid)),
        Col::Status { b, .. } => b.append_option(t.base.as_ref().map(|b| status_name(b.state))),
        Col::CreateTime { start_ns, .. } => start_ns.push(t.id.start_time_ns),
        Col::Cmdline { b, .. } => b.push(t.cmdline.as_deref()),
    }
}

fn finish_col(
    out: &mut Vec<(String, ArrayRef)>,
    c: &mut Col,
    tgids: &[i32],
    users: &[(u32, Vec<u8>)],
    after: &After<'_>,
) {
    match c {
        Col::Ids { pid, tid } => {
            out.push(("pid".into(), Arc::new(pid.finish())));
            if let Some(tid) = tid {
                out.push(("tid".into(), Arc::new(tid.finish())));
            }
        }
        Col::Number { name, b, .. } => out.push((std::mem::take(name), b.finish())),
        Col::ProcessMem {
            name,
            field,
            mem_only,
            seconds,
            own,
        } => {
            let a = process_mem(field, *mem_only, *seconds, own, tgids, after.processes);
            out.push((std::mem::take(name), a));
        }
        Col::Text { names, b, .. } => {
            let (texts, exact) = b.finish();
            let [n0, n1] = std::mem::take(names);
            out.push((n0, texts));
            out.push((n1, exact));
        }
        Col::Users { names, uids } => {
            let mut b = TextPair::with_capacity(uids.len(), NAME_BYTES);
            let mut last: Option<(u32, usize)> = None;
            for uid in uids.iter() {
                let name = uid.and_then(|uid| {
                    let i = match last {
                        Some((u, i)) if u == uid => i,
                        _ => users.binary_search_by_key(&uid, |(u, _)| *u).ok()?,
                    };
                    last = Some((uid, i));
                    Some(&users[i].1[..])
                });
                b.push(name);
            }
            let (texts, exact) = b.finish();
            let [n0, n1] = std::mem::take(names);
            out.push((n0, texts));
            out.push((n1, exact));
        }
        Col::Status { name, b } => out.push((std::mem::take(name), Arc::new(b.finish()))),
        Col::CreateTime { name, start_ns } => {
            let mut b = Float64Builder::with_capacity(start_ns.len());
            for &ns in start_ns.iter() {
                b.append_value(host::create_time_s(ns, after.boot_time_s));
            }
            out.push((std::mem::take(name), Arc::new(b.finish())));
        }
        Col::Cmdline { names, b } => {
            let (texts, exact) = b.finish();
            let [n0, n1] = std::mem::take(names);
            out.push((n0, texts));
            out.push((n1, exact));
        }
    }
}

/// A memory column with threads: each row's process's value where its process was read
/// with memory ([`After::processes`]), else the row's own (`own`).
fn process_mem(
    f: &fields::Field,
    mem_only: bool,
    seconds: bool,
    own: &[Option<Num>],
    tgids: &[i32],
    processes: &[Task],
) -> ArrayRef {
    let mut b = if seconds {
        Numbers::Seconds(Float64Builder::with_capacity(own.len()))
    } else {
        Numbers::Ints(Ints::with_capacity(own.len()))
    };
    let mut last: Option<(i32, Option<usize>)> = None;
    for (&tgid, &own) in tgids.iter().zip(own) {
        let at = match last {
            Some((p, at)) if p == tgid => at,
            _ => processes
                .binary_search_by_key(&tgid, |t| t.id.tgid)
                .ok()
                .filter(|&i| processes[i].mem.is_some()),
        };
        last = Some((tgid, at));
        match at {
            Some(i) => b.push(number(f, mem_only, &processes[i])),
            None => b.push(Num::value(own)),
        }
    }
    b.finish()
}
