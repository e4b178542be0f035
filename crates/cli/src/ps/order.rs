//! Row order: procps's sorting (each key a full stable sort, applied in turn), its forest
//! (ps/display.c `show_forest`/`show_tree`), and `m`-style thread rows. Produces the rows in
//! print order with each row's tree-art prefix.

use std::cmp::Ordering;

use tasksnap_model::Task;

use super::fields::{self, Caches, Env};
use super::format::{self, Field, Show};
use super::layout::{Cell, Column};
use super::settings::{Forest, Settings, Threads};

/// What kind of line a row prints as (procps's proc/task format lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Every column.
    Normal,
    /// The process line of `m`: thread-only columns print "-".
    Process,
    /// A thread line of `m`: process-only columns print "-".
    Thread,
}

/// One output row.
#[derive(Debug)]
pub struct Row {
    /// Index of the task in the snapshot's task list.
    pub task: usize,
    /// procps's forest prefix: one of ' ', 'L', '+', '|' per level.
    pub prefix: Vec<u8>,
    /// Row kind.
    pub kind: RowKind,
    /// Forest style.
    pub forest: Option<Forest>,
}

/// A value to sort on.
#[derive(Debug, PartialEq, PartialOrd)]
enum Key {
    Num(f64),
    Text(Vec<u8>),
}

fn sort_key(field: Field, t: &Task, env: &Env, c: &mut Caches) -> Key {
    use tasksnap_model::fields::{Kind, Value};
    let n = |v: f64| Key::Num(v);
    let number = |v: Value<'_>| match v {
        Value::Int(v) => v as f64,
        Value::UInt(v) => v as f64,
        Value::Bytes(_) => 0.0,
    };
    // The column's sort item is a field of the model's table: its value, or what procps
    // has for a task without it.
    if let Some((f, missing)) = fields::sort_field(field) {
        return n(f.value(t).map_or(missing as f64, number));
    }
    match field {
        // procps 4.0.2 sorts %CPU, C, CP and util by PIDS_UTILIZATION (their format
        // entries' sort item), not by the value printed: tasks that all print 0.0 still
        // sort by their exact share.
        Field::Pcpu | Field::C | Field::Cp | Field::Cuu => {
            n(fields::utilization_value(t, false, env))
        }
        Field::Cuc => n(fields::utilization_value(t, true, env)),
        Field::S | Field::Stat | Field::SgiP => {
            n(t.base.as_ref().map_or(0, |b| b.state.letter()) as f64)
        }
        // procps sorts the masks as the strings /proc gives (16 hex digits; none when the
        // file was unreadable).
        Field::SigPending
        | Field::SigThread
        | Field::SigBlocked
        | Field::SigIgnored
        | Field::SigCaught => Key::Text(
            fields::signal_value(field, t)
                .map(|v| format!("{v:016x}").into_bytes())
                .unwrap_or_default(),
        ),
        Field::Numa => n(
            String::from_utf8_lossy(&fields::value(field, t, 64, &[], env, c).bytes)
                .parse::<f64>()
                .unwrap_or(-1.0),
        ),
        Field::Fname => Key::Text(fields::comm_text(t, env.locale)),
        Field::Tty4 => sort_key(Field::Tty, t, env, c),
        // A field of the model's table by its own name: its value (absent: 0, or `-` for
        // bytes, as printed).
        Field::Model(f) => match (f.value(t), f.kind) {
            (Some(Value::Bytes(b)), _) => Key::Text(b.to_vec()),
            (Some(v), _) => n(number(v)),
            (None, Kind::Int) => n(0.0),
            (None, Kind::Bytes) => Key::Text(b"-".to_vec()),
        },
        _ => Key::Text(fields::value(field, t, 4096, &[], env, c).bytes.to_vec()),
    }
}

/// procps compares strings with strcoll(3), so the locale decides their order.
fn strcoll(a: &[u8], b: &[u8]) -> Ordering {
    let (Ok(a), Ok(b)) = (std::ffi::CString::new(a), std::ffi::CString::new(b)) else {
        return a.cmp(b);
    };
    // SAFETY: both are valid NUL-terminated strings for the duration of the call.
    let r = unsafe { libc::strcoll(a.as_ptr(), b.as_ptr()) };
    r.cmp(&0)
}

fn cmp_keys(a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Text(x), Key::Text(y)) => strcoll(x, y),
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// Stable sort of the index list `order` by one key of the tasks it points at.
fn sort_by(
    tasks: &[Task],
    order: &mut [usize],
    field: Field,
    reverse: bool,
    env: &Env,
    c: &mut Caches,
) {
    let mut keyed: Vec<(Key, usize)> = order
        .iter()
        .map(|&i| (sort_key(field, &tasks[i], env, c), i))
        .collect();
    keyed.sort_by(|a, b| {
        let o = cmp_keys(&a.0, &b.0);
        if reverse {
            o.reverse()
        } else {
            o
        }
    });
    for (slot, (_, i)) in order.iter_mut().zip(keyed) {
        *slot = i;
    }
}

fn show_tree(
    tasks: &[&Task],
    me: usize,
    level: usize,
    have_sibling: bool,
    prefix: &mut Vec<u8>,
    style: Forest,
    out: &mut Vec<(usize, Vec<u8>)>,
) {
    const MAX_LEVEL: usize = 199;
    prefix.truncate(level);
    if level > 0 {
        prefix[level - 1] = if have_sibling { b'+' } else { b'L' };
    }
    out.push((me, prefix.clone()));
    let my_pid = tasks[me].id.tgid;
    let ppid = |t: &Task| t.base.as_ref().map_or(0, |b| b.ppid);
    let Some(mut i) = tasks.iter().position(|t| ppid(t) == my_pid) else {
        return;
    };
    if level > 0 {
        prefix[level - 1] = if have_sibling { b'|' } else { b' ' };
    }
    prefix.truncate(level);
    loop {
        if i >= tasks.len() {
            break;
        }
        let more = i + 1 < tasks.len() && ppid(tasks[i + 1]) == my_pid;
        let next_level = if my_pid == 1 && style == Forest::Bsd {
            level
        } else if level + 1 < MAX_LEVEL {
            level + 1
        } else {
            level
        };
        prefix.resize(next_level.max(prefix.len()), b' ');
        show_tree(tasks, i, next_level, more, prefix, style, out);
        i += 1;
        if !more {
            break;
        }
        prefix.truncate(level);
    }
    prefix.truncate(level);
}

fn row(task: usize, kind: RowKind) -> Row {
    Row {
        task,
        prefix: Vec::new(),
        kind,
        forest: None,
    }
}

/// Orders the selected tasks into rows (indices into `tasks`, which is left in place).
pub fn arrange(s: &Settings, tasks: &[Task], env: &Env, c: &mut Caches) -> Vec<Row> {
    let fancy = s.forest.is_some() || !s.sort.is_empty();
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    let mut kind = RowKind::Normal;
    if fancy && matches!(s.threads, Threads::Each | Threads::AfterProcess) {
        // procps 4.0 reads processes only when sorting or drawing a forest, even with
        // -L/-T/m; with m those rows print in the process format.
        order.retain(|&i| tasks[i].id.tid == tasks[i].id.tgid);
        if s.threads == Threads::AfterProcess {
            kind = RowKind::Process;
        }
    } else if s.threads == Threads::AfterProcess {
        order.sort_by_key(|&i| (tasks[i].id.tgid, tasks[i].id.start_time_ns));
        let mut rows = Vec::with_capacity(order.len() + order.len() / 4);
        let mut k = 0;
        while k < order.len() {
            let tgid = tasks[order[k]].id.tgid;
            rows.push(row(order[k], RowKind::Process));
            while k < order.len() && tasks[order[k]].id.tgid == tgid {
                rows.push(row(order[k], RowKind::Thread));
                k += 1;
            }
        }
        return rows;
    }
    if !fancy {
        return order.into_iter().map(|i| row(i, kind)).collect();
    }
    // procps keeps a list of keys, the forest's start_time and ppid in front, and sorts by
    // each in turn: the last key sorted by is the primary one.
    let mut keys: Vec<(Field, bool)> = Vec::new();
    if s.forest.is_some() {
        keys.push((Field::StartTime, false));
        if s.sort.is_empty() {
            keys.push((Field::Ppid, false));
        }
    }
    // procps sorts by the last key first, so that the first key given ends up primary.
    for k in s.sort.iter().rev() {
        if let Some(spec) = format::find(&k.name) {
            keys.push((spec.field, k.reverse));
        }
    }
    for (field, reverse) in keys {
        sort_by(tasks, &mut order, field, reverse, env, c);
    }
    let Some(style) = s.forest else {
        return order.into_iter().map(|i| row(i, kind)).collect();
    };
    let sorted: Vec<&Task> = order.iter().map(|&i| &tasks[i]).collect();
    let mut out: Vec<(usize, Vec<u8>)> = Vec::with_capacity(sorted.len());
    let pids: std::collections::HashSet<i32> = sorted.iter().map(|t| t.id.tgid).collect();
    let mut prefix = Vec::new();
    for i in (0..sorted.len()).rev() {
        let ppid = sorted[i].base.as_ref().map_or(0, |b| b.ppid);
        if !pids.contains(&ppid) {
            show_tree(&sorted, i, 0, false, &mut prefix, style, &mut out);
        }
    }
    let mut seen = vec![false; sorted.len()];
    out.into_iter()
        .filter_map(|(i, prefix)| {
            // A task reached twice (a parent loop) is printed once.
            if std::mem::replace(&mut seen[i], true) {
                return None;
            }
            Some(Row {
                task: order[i],
                prefix,
                kind: RowKind::Normal,
                forest: Some(style),
            })
        })
        .collect()
}

/// procps `forest_helper`: the tree art for a prefix, within `rightward` cells.
fn forest_art(prefix: &[u8], style: Forest, mut rightward: usize) -> Vec<u8> {
    let rightward_max = rightward.min(super::layout::OUTBUF_SIZE - 1);
    rightward = rightward_max;
    let mut out = Vec::new();
    for &p in prefix {
        match style {
            Forest::Bsd => {
                if rightward < 4 {
                    break;
                }
                out.extend_from_slice(match p {
                    b'L' | b'+' => b" \\_ ",
                    b'|' => b" |  ",
                    _ => b"    ",
                });
                rightward -= 4;
            }
            Forest::Unix => {
                if rightward < 2 {
                    break;
                }
                out.extend_from_slice(b"  ");
                rightward -= 2;
            }
        }
    }
    out
}

/// Formats one cell of a row.
pub fn cell(
    tasks: &[Task],
    row: &Row,
    col: &Column,
    max: usize,
    env: &Env,
    c: &mut Caches,
) -> Cell {
    if col.spec.field == Field::Text {
        return Cell {
            bytes: super::layout::CellBytes::from_slice(col.header.as_bytes()),
            cells: col.header.len(),
        };
    }
    if not_applicable(row, col) {
        return Cell {
            bytes: super::layout::CellBytes::from_slice(b"-"),
            cells: 1,
        };
    }
    if row.kind == RowKind::Thread && unregistered_on_thread_rows(col.spec.field) {
        return Cell {
            bytes: super::layout::CellBytes::from_slice(b"0"),
            cells: 1,
        };
    }
    let art = match (row.forest, col.spec.field) {
        (Some(style), Field::Args | Field::Comm | Field::Fname) => {
            forest_art(&row.prefix, style, max)
        }
        _ => Vec::new(),
    };
    fields::value(col.spec.field, &tasks[row.task], max, &art, env, c)
}

/// Thread-only columns whose value procps never reads with `m`/`-m`. There it collects the
/// items to read from the process rows' format list, where thread-only columns are
/// `pr_nop` (ps/display.c `lists_and_needs()`, then `finalize_stacks()`), so an item no other
/// column or selection needs is not read at all, and the thread rows print the unused result
/// slot before the stack's own: zeroed memory for every task but the first one fetched,
/// whose slot overlaps a pointer (that one cannot be matched). procps registers a few
/// items up front (state, nice, times, ...); of the columns that need others, these are
/// the OOM and I/O ones.
fn unregistered_on_thread_rows(field: Field) -> bool {
    matches!(field, Field::Oom | Field::OomAdj | Field::Io(_))
}

/// Whether `col` has no value on `row` (a thread-only column on a process row, or the
/// reverse): ps prints `-` there.
pub fn not_applicable(row: &Row, col: &Column) -> bool {
    matches!(
        (row.kind, col.spec.show),
        (RowKind::Process, Show::ThreadOnly) | (RowKind::Thread, Show::ProcessOnly)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Stat, TaskId};

    /// Two tasks that both print `0.0` for %CPU sort by their exact share, as procps sorts
    /// them (PIDS_UTILIZATION); zone sorts by pid.
    #[test]
    fn cpu_columns_sort_by_the_exact_share() {
        let env = Env {
            hertz: 100,
            page_size: 4096,
            mem_total_kb: 1 << 20,
            boot_time_s: 0,
            now_s: 0,
            uptime_ticks: 10_000_000,
            uptime_read: true,
            locale: super::super::text::Locale { utf8: false },
            unix_f_option: false,
            bsd_c_option: false,
            bsd_e_option: false,
            include_dead_children: false,
            user_is_number: false,
            wide_signals: true,
        };
        let task = |pid: i32, ticks: u64| {
            let mut t = Task::new(TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: 0,
            });
            t.base = Some(Base::default());
            t.stat = Some(Stat {
                utime_ns: ticks * 10_000_000,
                ..Stat::default()
            });
            t
        };
        // 10 and 20 ticks over 100,000 s: 0.0 % both.
        let tasks = [task(5, 10), task(6, 20), task(7, 0)];
        let machine =
            super::super::names::HostFacts::of(&tasksnap_collect::Host::from_env(), false);
        let mut c = Caches::new(&machine);
        for t in &tasks {
            let cell = fields::value(Field::Pcpu, t, 8, &[], &env, &mut c);
            assert_eq!(&cell.bytes[..], b"0.0");
        }
        for field in [Field::Pcpu, Field::C, Field::Cp, Field::Cuu, Field::Cuc] {
            let mut order = vec![0, 1, 2];
            sort_by(&tasks, &mut order, field, true, &env, &mut c);
            assert_eq!(order, [1, 0, 2], "{field:?}");
        }
        let mut order = vec![2, 0, 1];
        sort_by(&tasks, &mut order, Field::Label, false, &env, &mut c);
        assert_eq!(order, [0, 1, 2]);
    }
}
