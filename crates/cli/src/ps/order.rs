//! Row order: procps's sorting (each key a full stable sort, applied in turn), its forest
//! (ps/display.c `show_forest`/`show_tree`), and `m`-style thread rows. Produces the rows in
//! print order with each row's tree-art prefix.

use std::cmp::Ordering;

use tasksnap_model::Task;

use super::cell::{plain, Cell};
use super::fields::{Caches, Ctx, Env, Key, Source};
use super::format::{self, Just, Show, Spec};
use super::layout::Column;
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

/// Stable sort of the index list `order` by one key of the tasks it points at: what column
/// `spec` sorts by.
fn sort_by(
    tasks: &[Task],
    order: &mut [usize],
    spec: &Spec,
    reverse: bool,
    env: &Env,
    c: &mut Caches,
) {
    let mut keyed: Vec<(Key, usize)> = order
        .iter()
        .map(|&i| (spec.sort.key(spec.value, &tasks[i], env, c), i))
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
    let mut keys: Vec<(&Spec, bool)> = Vec::new();
    if s.forest.is_some() {
        keys.extend(format::find("start_time").map(|spec| (spec, false)));
        if s.sort.is_empty() {
            keys.extend(format::find("ppid").map(|spec| (spec, false)));
        }
    }
    // procps sorts by the last key first, so that the first key given ends up primary.
    for k in s.sort.iter().rev() {
        if let Some(spec) = format::find(&k.name) {
            keys.push((spec, k.reverse));
        }
    }
    for (spec, reverse) in keys {
        sort_by(tasks, &mut order, spec, reverse, env, c);
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

/// Formats one cell of a row; `lines_to_next_header` is procps's header countdown when the
/// row prints (-1 outside a text listing).
pub fn cell(
    tasks: &[Task],
    row: &Row,
    col: &Column,
    max: usize,
    lines_to_next_header: i64,
    env: &Env,
    c: &mut Caches,
) -> Cell {
    if col.spec.just == Just::Text {
        return plain(col.header.as_bytes());
    }
    if not_applicable(row, col) {
        return plain("-");
    }
    if row.kind == RowKind::Thread && unread_on_thread_rows(col.spec) {
        return plain("0");
    }
    let mut x = Ctx {
        t: &tasks[row.task],
        max,
        tree: row.forest.map(|style| (&row.prefix[..], style)),
        lines_to_next_header,
        env,
        c,
    };
    col.spec.value.print(&mut x)
}

/// Thread-only columns whose value procps never reads with `m`/`-m`. There it collects the
/// items to read from the process rows' format list, where thread-only columns are
/// `pr_nop` (ps/display.c `lists_and_needs()`, then `finalize_stacks()`), so an item no other
/// column or selection needs is not read at all, and the thread rows print the unused result
/// slot before the stack's own: zeroed memory for every task but the first one fetched,
/// whose slot overlaps a pointer (that one cannot be matched). procps registers a few
/// items up front (state, nice, times, ...); of the thread-only columns that need others,
/// these are the ones of the OOM files and /proc/PID/io.
fn unread_on_thread_rows(spec: &Spec) -> bool {
    use tasksnap_model::fields::Group;
    spec.show == Show::ThreadOnly
        && matches!(
            spec.value,
            Source::Table(f, _) if matches!(f.group, Group::OomScore | Group::OomScoreAdj | Group::Io)
        )
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
    use crate::ps::fields::Caches;
    use crate::ps::order::*;
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
            locale: crate::ps::text::Locale { utf8: false },
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
        let machine = crate::ps::names::HostFacts::of(&tasksnap_collect::Host::from_env(), false);
        let mut c = Caches::new(&machine);
        let spec = |name| format::find(name).expect("a known specifier");
        for t in &tasks {
            let cell = spec("%cpu").value.print(&mut Ctx::of(t, 8, &env, &mut c));
            assert_eq!(&cell.bytes[..], b"0.0");
        }
        for name in ["%cpu", "c", "cp", "cuu", "cuc"] {
            let mut order = vec![0, 1, 2];
            sort_by(&tasks, &mut order, spec(name), true, &env, &mut c);
            assert_eq!(order, [1, 0, 2], "{name}");
        }
        let mut order = vec![2, 0, 1];
        sort_by(&tasks, &mut order, spec("zone"), false, &env, &mut c);
        assert_eq!(order, [0, 1, 2]);
    }
}
