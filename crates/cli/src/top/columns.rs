//! top's columns, one row each in [`SPECS`] (the shape of procps top's `Fieldstab`): header,
//! width, alignment, what the column sorts by and where `<`/`>` put it, what a filter at the
//! `o` prompt compares, when it is shown, and its formatter. The column header
//! ([`header`]), every row's text ([`write_row`]), `-o`'s sort key and `<`/`>`'s order
//! ([`Column::sort_key`], [`Column::cycled`]) and the filter names ([`Column::filter_field`])
//! come from the table; sorting and filtering by a column are in `arrange.rs`.
//!
//! A row is written into the caller's `String`, column by column, with no other allocation
//! of its own (top's batch output formats every row of 50,000).

use std::borrow::Cow;
use std::fmt::Write as _;

use super::exited::exit_text;
use super::render::{write_kib, write_pct, write_time_plus};
use super::view::Line;

/// One column of top.
pub struct Spec {
    /// Its header, which is also its name for `-o`, `<`/`>` and the `o` prompt (in any case).
    pub header: &'static str,
    pub width: Width,
    pub align: Align,
    /// What stands between the column before and this one.
    pub gap: &'static str,
    pub shown: Shown,
    /// The tree view's indent goes before the first shown column that has this: the
    /// command and the columns shown just before it.
    pub indented: bool,
    /// How `-o`, `<`/`>` and the sort keys sort by it; `None`: it does not sort.
    pub sort: Option<Sort>,
    /// What a filter on it at the `o` prompt compares; `None`: it does not filter.
    pub filter: Option<Compare>,
    /// Writes a row's value (before the padding to its width).
    pub text: fn(&Cells<'_>, &mut String),
}

/// A column's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// The pid column's (it follows `kernel.pid_max`: [`Layout::pid_width`]).
    Pid,
    /// This many characters (at least: a longer value is not cut unless its formatter cuts).
    Chars(usize),
    /// As long as its value: the last columns.
    Rest,
}

/// Where a value sits in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// When a column is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Always,
    /// With the exited view (`e`, `--exited`).
    Exited,
    /// With the CGROUP column on (`g`).
    Cgroup,
    /// With the wait reasons on (`w`).
    Wait,
}

/// How a column sorts.
#[derive(Clone, Copy)]
pub struct Sort {
    pub by: SortBy,
    /// Its place in the cycle `<` and `>` step through (0, 1, ... over the columns that sort).
    pub cycle: u8,
    /// Sorted smallest first when chosen by a key (`<`, `>`, `N`...); else largest first.
    pub ascending: bool,
}

/// What a column sorts by.
#[derive(Clone, Copy)]
pub enum SortBy {
    /// A number of the row (a non-negative rate by its bits: [`rate_bits`]).
    Number(fn(&Line) -> u64),
    /// The user name.
    User,
    /// The command name (comm).
    Command,
}

/// What a filter compares.
#[derive(Clone, Copy)]
pub enum Compare {
    /// A number, with `=`, `<` or `>`.
    Number(fn(&Line) -> f64),
    /// Text, which must contain the filter's (`=` only); the row's user name given.
    Text(for<'a> fn(&'a Line, &'a str) -> Cow<'a, str>),
}

/// What a row's columns are formatted from: the row, and what the session looked up for it.
#[derive(Debug, Clone, Copy)]
pub struct Cells<'a> {
    pub line: &'a Line,
    /// Its user name.
    pub user: &'a str,
    /// What the COMMAND column shows (comm or the command line, marked when it exited).
    pub command: &'a str,
    /// Its cgroups as the CGROUP column shows them (`-` when not read).
    pub cgroup: &'a str,
}

/// Which columns are shown, and how wide the pid column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub pid_width: usize,
    pub exited: bool,
    pub cgroup: bool,
    pub wait: bool,
    /// The tree view: a row is indented by its depth ([`Spec::indented`]).
    pub tree: bool,
}

impl Layout {
    fn shows(&self, s: &Spec) -> bool {
        match s.shown {
            Shown::Always => true,
            Shown::Exited => self.exited,
            Shown::Cgroup => self.cgroup,
            Shown::Wait => self.wait,
        }
    }
}

/// Width of the CGROUP column (`g`): longer memberships are cut, as ps cuts a cgroup column
/// that is not the last.
pub const CGROUP_WIDTH: usize = 27;

/// A column of top: its place in [`SPECS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column(u8);

/// top's columns, in the order they are shown. procps top's, with RUNQ%, THR% and DISK% before
/// TIME+, and EXIT, CGROUP and WAIT shown on demand.
pub static SPECS: [Spec; 18] = [
    col("PID", Width::Pid, Align::Right, |c, o| {
        num(o, c.line.id.tid)
    })
    .sorts(SortBy::Number(|l| u64::from(l.id.tid as u32)), 0, true)
    .filters(Compare::Number(|l| f64::from(l.id.tid))),
    col("USER", Width::Chars(8), Align::Left, |c, o| user(o, c.user))
        .sorts(SortBy::User, 1, true)
        .filters(Compare::Text(|_, user| Cow::Borrowed(user))),
    col("PR", Width::Chars(3), Align::Right, |c, o| match c.line {
        l if l.exit.is_some() => o.push('-'),
        l if l.priority < -99 => o.push_str("rt"),
        l => num(o, l.priority),
    }),
    col("NI", Width::Chars(3), Align::Right, |c, o| {
        unless_gone(c.line, o, |l, o| num(o, l.nice))
    }),
    col("VIRT", Width::Chars(7), Align::Right, |c, o| {
        unless_gone(c.line, o, |l, o| write_kib(o, l.virt_kib, 7))
    }),
    col("RES", Width::Chars(6), Align::Right, |c, o| {
        unless_gone(c.line, o, |l, o| write_kib(o, l.res_kib, 6))
    }),
    col("SHR", Width::Chars(6), Align::Right, |c, o| {
        match c.line.shr_kib {
            Some(v) => write_kib(o, v, 6),
            None => o.push('-'),
        }
    }),
    col("S", Width::Chars(1), Align::Right, |c, o| {
        o.push(c.line.state as char)
    })
    .filters(Compare::Text(|l, _| {
        Cow::Owned((l.state as char).to_string())
    })),
    col("%CPU", Width::Chars(5), Align::Right, |c, o| {
        write_pct(o, c.line.cpu_pct)
    })
    .sorts(SortBy::Number(|l| rate_bits(l.cpu_pct)), 3, false)
    .filters(Compare::Number(|l| l.cpu_pct)),
    col("%MEM", Width::Chars(5), Align::Right, |c, o| {
        unless_gone(c.line, o, |l, o| write_pct(o, l.mem_pct))
    })
    .sorts(SortBy::Number(|l| l.res_kib), 4, false)
    .filters(Compare::Number(|l| l.mem_pct)),
    col("RUNQ%", Width::Chars(5), Align::Right, |c, o| {
        rate(o, c.line.runq_pct)
    })
    .sorts(
        SortBy::Number(|l| rate_bits(l.runq_pct.unwrap_or(0.0))),
        2,
        false,
    )
    .filters(Compare::Number(|l| l.runq_pct.unwrap_or(0.0))),
    col("THR%", Width::Chars(5), Align::Right, |c, o| {
        rate(o, c.line.thr_pct)
    }),
    col("DISK%", Width::Chars(5), Align::Right, |c, o| {
        rate(o, c.line.disk_pct)
    }),
    col("TIME+", Width::Chars(9), Align::Right, |c, o| {
        write_time_plus(o, c.line.time_ns)
    })
    .sorts(SortBy::Number(|l| l.time_ns), 5, false),
    col("EXIT", Width::Chars(5), Align::Right, |c, o| {
        o.push_str(&exit_text(c.line))
    })
    .shown(Shown::Exited)
    .indented(),
    col("CGROUP", Width::Chars(CGROUP_WIDTH), Align::Left, |c, o| {
        o.extend(c.cgroup.chars().take(CGROUP_WIDTH))
    })
    .shown(Shown::Cgroup)
    .indented()
    .filters(Compare::Text(|l, _| {
        Cow::Borrowed(l.cgroup.as_deref().unwrap_or("-"))
    })),
    col("COMMAND", Width::Rest, Align::Left, |c, o| {
        o.push_str(c.command)
    })
    .indented()
    .sorts(SortBy::Command, 6, true)
    .filters(Compare::Text(|l, _| String::from_utf8_lossy(&l.comm))),
    col("WAIT", Width::Rest, Align::Left, |c, o| {
        o.push_str(c.line.reason.as_deref().unwrap_or("-"))
    })
    .after(": ")
    .shown(Shown::Wait),
];

impl Column {
    pub const PID: Column = Column::named("PID");
    pub const CPU: Column = Column::named("%CPU");
    pub const MEM: Column = Column::named("%MEM");
    pub const TIME: Column = Column::named("TIME+");
    pub const CGROUP: Column = Column::named("CGROUP");

    /// The column headed `header` (a build error when there is none).
    const fn named(header: &str) -> Column {
        let mut i = 0;
        while i < SPECS.len() {
            if same(SPECS[i].header.as_bytes(), header.as_bytes()) {
                return Column(i as u8);
            }
            i += 1;
        }
        panic!("no such column")
    }

    /// Its row of the table.
    pub fn spec(self) -> &'static Spec {
        &SPECS[usize::from(self.0)]
    }

    /// Its header.
    pub fn name(self) -> &'static str {
        self.spec().header
    }

    /// The columns, in order.
    fn all() -> impl Iterator<Item = Column> {
        (0..SPECS.len() as u8).map(Column)
    }

    /// The column that sorts by `name` (`-o`: its header in any case, a `+` before it
    /// allowed).
    pub fn sort_key(name: &str) -> Option<Column> {
        let name = name.trim_start_matches('+');
        Column::all().find(|c| c.spec().sort.is_some() && c.name().eq_ignore_ascii_case(name))
    }

    /// The column a filter names (its header in any case, blanks around it allowed).
    pub fn filter_field(name: &str) -> Option<Column> {
        let name = name.trim();
        Column::all().find(|c| c.spec().filter.is_some() && c.name().eq_ignore_ascii_case(name))
    }

    /// The sort column `step` places on in `<`/`>`'s cycle ([`Sort::cycle`]), wrapping
    /// around; itself when it does not sort.
    pub fn cycled(self, step: i32) -> Column {
        let Some(at) = self.spec().sort.map(|s| i32::from(s.cycle)) else {
            return self;
        };
        let n = SPECS.iter().filter(|s| s.sort.is_some()).count() as i32;
        let next = (at + step).rem_euclid(n);
        Column::all()
            .find(|c| c.spec().sort.is_some_and(|s| i32::from(s.cycle) == next))
            .unwrap_or(self)
    }
}

/// The column header line.
pub fn header(layout: &Layout) -> String {
    let mut out = String::with_capacity(128);
    for (i, s) in shown(layout).enumerate() {
        if i > 0 {
            out.push_str(s.gap);
        }
        let start = out.len();
        out.push_str(s.header);
        pad(&mut out, start, s, layout);
    }
    out
}

/// Appends the text of one row to `out`.
pub fn write_row(out: &mut String, cells: &Cells<'_>, layout: &Layout) {
    let depth = cells.line.depth;
    let mut indent = layout.tree && depth > 0;
    for (i, s) in shown(layout).enumerate() {
        if i > 0 {
            out.push_str(s.gap);
        }
        if indent && s.indented {
            // The forest's branch: "`- " one level in, four more columns a level deeper.
            spaces(out, 4 * (depth - 1) + 1);
            out.push_str("`- ");
            indent = false;
        }
        let start = out.len();
        (s.text)(cells, out);
        pad(out, start, s, layout);
    }
}

/// The columns `layout` shows, in order.
fn shown(layout: &Layout) -> impl Iterator<Item = &'static Spec> + '_ {
    SPECS.iter().filter(|s| layout.shows(s))
}

/// Pads what was written from `start` to the column's width.
fn pad(out: &mut String, start: usize, s: &Spec, layout: &Layout) {
    let width = match s.width {
        Width::Pid => layout.pid_width,
        Width::Chars(n) => n,
        Width::Rest => return,
    };
    let n = out[start..].chars().count();
    if n >= width {
        return;
    }
    match s.align {
        Align::Left => spaces(out, width - n),
        Align::Right => {
            const BLANKS: &str = "                                ";
            let mut left = width - n;
            while left > 0 {
                let k = left.min(BLANKS.len());
                out.insert_str(start, &BLANKS[..k]);
                left -= k;
            }
        }
    }
}

fn spaces(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A non-negative rate as a sort key: non-negative floats order like their bit patterns.
pub fn rate_bits(v: f64) -> u64 {
    if v > 0.0 {
        v.to_bits()
    } else {
        0
    }
}

/// A row of the table: shown always, not indented, one blank after the column before, no
/// sort, no filter.
const fn col(
    header: &'static str,
    width: Width,
    align: Align,
    text: fn(&Cells<'_>, &mut String),
) -> Spec {
    Spec {
        header,
        width,
        align,
        gap: " ",
        shown: Shown::Always,
        indented: false,
        sort: None,
        filter: None,
        text,
    }
}

impl Spec {
    const fn sorts(self, by: SortBy, cycle: u8, ascending: bool) -> Spec {
        Spec {
            sort: Some(Sort {
                by,
                cycle,
                ascending,
            }),
            ..self
        }
    }

    const fn filters(self, compare: Compare) -> Spec {
        Spec {
            filter: Some(compare),
            ..self
        }
    }

    const fn shown(self, shown: Shown) -> Spec {
        Spec { shown, ..self }
    }

    const fn indented(self) -> Spec {
        Spec {
            indented: true,
            ..self
        }
    }

    const fn after(self, gap: &'static str) -> Spec {
        Spec { gap, ..self }
    }
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn num(out: &mut String, v: impl std::fmt::Display) {
    let _ = write!(out, "{v}");
}

/// A user name in 8 columns: a longer one cut to 7 and marked `+`, as top cuts it.
fn user(out: &mut String, name: &str) {
    if name.chars().count() > 8 {
        out.extend(name.chars().take(7));
        out.push('+');
    } else {
        out.push_str(name);
    }
}

/// A rate the row may not have (`-`).
fn rate(out: &mut String, v: Option<f64>) {
    match v {
        Some(v) => write_pct(out, v),
        None => out.push('-'),
    }
}

/// `write(l, out)`, or `-` for a process that exited (it has no priority, nice or memory
/// any more).
fn unless_gone(l: &Line, out: &mut String, write: fn(&Line, &mut String)) {
    if l.exit.is_some() {
        out.push('-');
    } else {
        write(l, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sort_cycle_is_every_sorting_column_once() {
        let mut cycles: Vec<u8> = SPECS
            .iter()
            .filter_map(|s| s.sort.map(|s| s.cycle))
            .collect();
        cycles.sort_unstable();
        let want: Vec<u8> = (0..cycles.len() as u8).collect();
        assert_eq!(cycles, want);
        let names: Vec<&str> = std::iter::successors(Some(Column::PID), |c| {
            Some(c.cycled(1)).filter(|&n| n != Column::PID)
        })
        .map(Column::name)
        .collect();
        assert_eq!(
            names,
            ["PID", "USER", "RUNQ%", "%CPU", "%MEM", "TIME+", "COMMAND"]
        );
        assert_eq!(Column::PID.cycled(-1).name(), "COMMAND");
    }

    #[test]
    fn headers_are_unique_and_names_parse_in_any_case() {
        for (i, s) in SPECS.iter().enumerate() {
            assert!(
                SPECS[..i].iter().all(|t| t.header != s.header),
                "{}",
                s.header
            );
        }
        assert_eq!(Column::sort_key("+runq%"), Some(Column::named("RUNQ%")));
        assert_eq!(Column::sort_key("S"), None, "S does not sort");
        assert_eq!(Column::filter_field(" s "), Some(Column::named("S")));
        assert_eq!(Column::filter_field("TIME+"), None, "TIME+ does not filter");
    }
}
