//! Where a column's value comes from and how it is printed and sorted, from the tasksnap
//! model instead of procps's proc_t: the parts of a format row ([`super::format::Spec`]) that
//! are not layout.
//!
//! A column's value is a [`Source`]: a field of the model's table (`tasksnap_model::fields`:
//! ids, counts, sizes, OOM scores, namespaces, addresses, user and group ids under their
//! names, the terminal, the state, the wait channel, the label, the sd-login answers, signal
//! masks, and every table field procps has no specifier for) with one of procps's printers
//! ([`Print`]: its defaults for a missing value, KiB, pages, hexadecimal, `-`, names), or a
//! [`Formatter`] of ps's own where the value is procps's arithmetic (in
//! [`super::printers`]), which says what it reads ([`Read`]). Its sort key is a [`Sort`]
//! (procps's sort item). The groups a listing asks for follow from both.

use tasksnap_model::fields::{self, Group};
use tasksnap_model::{Groups, Task};

use super::cell::{self, ascii, colwid, num, plain, push_dec, tenths, Cell, CellBytes};
use super::names::{HostFacts, Names, Ttys};
use super::settings::{Forest, Settings};
use super::text::{self, Locale};

/// Facts about the system and the run that fields are computed against.
#[derive(Debug)]
pub struct Env {
    /// Clock ticks per second.
    pub hertz: u64,
    /// Page size, bytes.
    pub page_size: u64,
    /// `MemTotal` of /proc/meminfo, kB.
    pub mem_total_kb: u64,
    /// Boot time, seconds since the epoch (`btime`).
    pub boot_time_s: i64,
    /// Seconds since the epoch when the run started (`time(NULL)` in procps).
    pub now_s: i64,
    /// Uptime in clock ticks when the snapshot was taken.
    pub uptime_ticks: u64,
    /// Whether the uptime was read (/proc/uptime, or a recording's clock): a /proc mounted
    /// `subset=pid` has none, and then procps's UTILIZATION is 0 ([`utilization_value`]).
    pub uptime_read: bool,
    /// Text rules.
    pub locale: Locale,
    /// `-f`: comm columns show the whole command line.
    pub unix_f_option: bool,
    /// BSD `c`: args columns show the bare comm.
    pub bsd_c_option: bool,
    /// BSD `e`: command columns show the environment after the command.
    pub bsd_e_option: bool,
    /// BSD `S`: times and faults include reaped children.
    pub include_dead_children: bool,
    /// BSD `n`: print user and group ids as numbers.
    pub user_is_number: bool,
    /// Signal masks print all 16 hex digits (procps `wide_signals`, [`super::layout::wide_signals`]).
    pub wide_signals: bool,
}

/// Per-run caches fields use.
#[derive(Debug)]
pub struct Caches {
    /// User and group names.
    pub names: Names,
    /// Terminal names.
    pub ttys: Ttys,
    /// STIME text by start second: tens of thousands of tasks share a few start seconds, and
    /// localtime+strftime per row would be a tenth of the user time.
    pub stime: std::collections::HashMap<i64, String>,
    /// Each CPU's NUMA node, by CPU number (the host's, [`HostFacts`]).
    pub numa: std::sync::Arc<Vec<i32>>,
}

impl Caches {
    /// Empty caches over what ps read of the host.
    pub fn new(machine: &HostFacts) -> Caches {
        Caches {
            names: Names::default(),
            ttys: Ttys::new(machine.clone()),
            stime: Default::default(),
            numa: machine.cpu_nodes.clone(),
        }
    }

    /// The NUMA node of CPU `cpu` (-1 when unknown).
    pub fn numa_node(&self, cpu: i64) -> i32 {
        usize::try_from(cpu)
            .ok()
            .and_then(|cpu| self.numa.get(cpu).copied())
            .unwrap_or(-1)
    }
}

/// `ns` in clock ticks of `hz` per second, rounded down.
pub fn ticks(ns: u64, hz: u64) -> u64 {
    ns / (1_000_000_000 / hz.max(1))
}

/// A time field of the model's table in clock ticks (0 when absent).
fn table_ticks(f: &fields::Field, t: &Task, hz: u64) -> u64 {
    ticks(table_u64(f, t).unwrap_or(0), hz)
}

impl Env {
    /// When the task started, seconds since the epoch.
    pub fn start_s(&self, t: &Task) -> i64 {
        let start_ticks = ticks(t.id.start_time_ns, self.hertz);
        self.boot_time_s + (start_ticks / self.hertz.max(1)) as i64
    }

    /// The task's own CPU time, ticks: user and system each rounded down, as procps has them.
    pub fn own_cpu_ticks(&self, t: &Task) -> u64 {
        table_ticks(&fields::UTIME_NS, t, self.hertz)
            + table_ticks(&fields::STIME_NS, t, self.hertz)
    }

    /// The CPU time, ticks, with BSD `S` its reaped children's too.
    pub fn cpu_ticks(&self, t: &Task) -> u64 {
        let mut v = self.own_cpu_ticks(t);
        if self.include_dead_children {
            v += self.children_cpu_ticks(t);
        }
        v
    }

    /// The CPU time of the task's reaped children, ticks.
    pub fn children_cpu_ticks(&self, t: &Task) -> u64 {
        table_ticks(&fields::CUTIME_NS, t, self.hertz)
            + table_ticks(&fields::CSTIME_NS, t, self.hertz)
    }

    /// Seconds since the task started, as procps's TIME_ELAPSED (fractional).
    pub fn elapsed_s(&self, t: &Task) -> f64 {
        let start = ticks(t.id.start_time_ns, self.hertz) as f64;
        let e = self.uptime_ticks as f64 - start;
        if e > 0.0 {
            e / self.hertz as f64
        } else {
            0.0
        }
    }

    /// The CPU time over the time since the task started, in `scale`ths.
    pub fn permille_cpu(&self, t: &Task, scale: u64) -> u64 {
        let jiffies = (self.elapsed_s(t) * self.hertz as f64) as u64;
        (self.cpu_ticks(t) * scale)
            .checked_div(jiffies)
            .unwrap_or(0)
    }
}

/// One value being printed: the task, the cells the column may take, the tree the row is
/// drawn in and what printing has at hand.
pub struct Ctx<'a> {
    /// The row's task.
    pub t: &'a Task,
    /// Cells the value may take, where the column honours a limit.
    pub max: usize,
    /// The row's place in a forest listing (procps's prefix: one of ' ', 'L', '+', '|' per
    /// level) and its style; command columns draw it before the command.
    pub tree: Option<(&'a [u8], Forest)>,
    /// procps's `lines_to_next_header` when the row prints (only its layout test columns
    /// show it); -1 outside a text listing.
    pub lines_to_next_header: i64,
    /// Facts about the system and the run.
    pub env: &'a Env,
    /// Per-run caches (names, terminals, start times).
    pub c: &'a mut Caches,
}

impl<'a> Ctx<'a> {
    /// A value of `t` in at most `max` cells, outside a forest and a text listing (what
    /// sorting by the printed text and the machine formats print).
    pub fn of(t: &'a Task, max: usize, env: &'a Env, c: &'a mut Caches) -> Ctx<'a> {
        Ctx {
            t,
            max,
            tree: None,
            lines_to_next_header: -1,
            env,
            c,
        }
    }
}

/// Where a column's value comes from: a field of the model's table printed by one of
/// procps's printers, or ps's own arithmetic over the task.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A field of the model's table (`tasksnap_model::fields`), printed as [`Print`] says.
    Table(&'static fields::Field, Print),
    /// ps's own derivation ([`super::printers`]): states, times, percentages, command text,
    /// signal masks with procps's leader rule, the values that depend on the scheduling
    /// policy.
    Own(Formatter),
    /// procps's `pr_nop`: a column procps knows but never fills, always `-`.
    Nop,
}

/// A ps-computed column's printer.
pub type Printer = fn(&mut Ctx<'_>) -> Cell;

/// ps's own printer of a column and what it reads of a task (procps's `pr_*` function with
/// the items it registers).
#[derive(Debug, Clone, Copy)]
pub struct Formatter {
    /// Prints the value.
    pub print: Printer,
    /// What it reads beyond the task's identity (the groups a listing asks for).
    pub reads: &'static [Read],
    /// What `--output json|csv` carries.
    pub data: Data,
}

/// Something a [`Formatter`] reads of a task.
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// A field of the model's table: its group.
    Field(&'static fields::Field),
    /// A group whose values the table does not carry (the supplementary groups, the cgroup
    /// lines).
    Group(Group),
    /// The environment, when BSD `e` shows it after the command.
    EnvironWithE,
    /// The command line, when `-f` makes a comm column show it.
    CmdlineWithF,
}

impl Read {
    /// Asks for what this reads under settings `s`.
    fn ask(self, s: &Settings, g: &mut Groups) {
        match self {
            Read::Field(f) => f.group.ask(g),
            Read::Group(group) => group.ask(g),
            Read::EnvironWithE if s.bsd_e => g.insert(Group::Environ),
            Read::CmdlineWithF if s.unix_f => g.insert(Group::Cmdline),
            Read::EnvironWithE | Read::CmdlineWithF => {}
        }
    }
}

/// What a column carries in `--output json|csv` besides its text (see [`super::machine`]).
#[derive(Debug, Clone, Copy)]
pub enum Data {
    /// The text ps prints (a number in JSON where it reads as one).
    Text,
    /// Hexadecimal digits: a string in JSON even when every digit is decimal.
    Hex,
    /// The task's own bytes behind the text (a name, a command line, a path), not escaped
    /// for a terminal.
    Bytes(fn(&Task, &Env) -> Vec<u8>),
}

/// procps's printers of a table value (the `pr_*` functions of ps/output.c): the value is
/// the table's, the look procps's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    /// Decimal; `missing` when the task does not have the value (0 for an unreadable file,
    /// as procps's zeroed defaults; -1 for `ag_id` without the file).
    Number {
        /// What an absent value prints (and sorts) as.
        missing: i64,
    },
    /// KiB of a byte count; 0 when absent.
    Kib,
    /// Pages of a byte count (procps's `sz`: KiB over the page's KiB); 0 when absent.
    Pages,
    /// `%MEM` of a byte count: tenths of a percent of MemTotal, at most 99.9.
    ShareOfMemory,
    /// Decimal, `-` when absent or equal to the given value (an inode 0, a loginuid -1).
    DashOn(i64),
    /// 16 hex digits; 0 when absent.
    Address,
    /// procps's `lim`: `xx` for unlimited, else KiB in 5 cells.
    Limit,
    /// `offset + sign * value`: procps's priority scales (`pri`, `opri`, `pri_*`).
    Scaled {
        /// 1 or -1.
        sign: i64,
        /// Added after the sign.
        offset: i64,
    },
    /// The user name of a uid (its number with BSD `n`, or when it has no short name).
    User,
    /// The group name of a gid.
    Group,
    /// The terminal name of a `tty_nr`; with `number`, procps's TTY_NUMBER abbreviation.
    Tty {
        /// `tty4`: "3" for pts/3.
        number: bool,
    },
    /// The NUMA node of a CPU number (-1 when unknown).
    NumaNode,
    /// The text as it is; `missing` when absent or empty.
    Text(&'static str),
    /// An sd-login answer as procps's `snprintf(outbuf, COLWID, "%s")` leaves it; the
    /// owner as the C int procps prints; `-` where libsystemd would fail.
    Login,
    /// A wait channel: `?` unreadable, `-` running, else the symbol without its leading
    /// dots and underscores, cut to the column (and to 63 bytes).
    Wchan,
    /// A signal mask as procps's `help_pr_sig` prints /proc/PID/status's 16 hex digits
    /// ([`signal_mask`]).
    SignalMask,
    /// A field by its own name: the value as it is (bytes through ps's output escape), `-`
    /// when the task does not have it.
    Model,
}

impl Print {
    /// What an absent value prints and sorts as, where it is a number.
    pub fn missing(self) -> i64 {
        match self {
            Print::Number { missing } | Print::DashOn(missing) => missing,
            _ => 0,
        }
    }

    /// Prints `v`, the table's value of the task in `x`.
    fn print(self, v: Option<fields::Value<'_>>, x: &mut Ctx<'_>) -> Cell {
        use fields::Value as V;
        let int = v.and_then(V::as_i64).unwrap_or(self.missing());
        let uint = v.and_then(V::as_u64).unwrap_or(0);
        match self {
            Print::Number { missing } => match v {
                Some(V::UInt(u)) => num(u),
                Some(V::Int(i)) => num(i),
                _ => num(missing),
            },
            Print::Kib => num(uint / 1024),
            Print::Pages => num(uint / 1024 / (x.env.page_size / 1024).max(1)),
            Print::ShareOfMemory => {
                let pm = (uint / 1024 * 1000 / x.env.mem_total_kb.max(1)).min(999);
                tenths(pm, 2)
            }
            Print::DashOn(dash) => match v.and_then(V::as_i64) {
                Some(i) if i != dash => num(i),
                _ => plain("-"),
            },
            Print::Address => plain(format!("{uint:016x}")),
            Print::Limit => match uint {
                u64::MAX => plain("xx"),
                v => {
                    let mut bytes = CellBytes::new();
                    push_dec(&mut bytes, v >> 10, 5, b' ');
                    ascii(bytes)
                }
            },
            Print::Scaled { sign, offset } => num(offset + sign * int),
            Print::User => do_name(x.c.names.user(int as u32), int as u32, x.max, x.env),
            Print::Group => do_name(x.c.names.group(int as u32), int as u32, x.max, x.env),
            Print::Tty { number: false } => plain(x.c.ttys.name(int as u32, x.t.id.tid)),
            Print::Tty { number: true } => plain(x.c.ttys.number(int as u32, x.t.id.tid)),
            Print::NumaNode => num(x.c.numa_node(int)),
            Print::Text(missing) => match v {
                Some(V::Bytes(b)) if !b.is_empty() => plain(b),
                _ => plain(missing),
            },
            Print::Login => match v {
                Some(V::Bytes(answer)) => colwid(answer),
                Some(V::Int(uid)) => colwid((uid as u32 as i32).to_string().as_bytes()),
                _ => colwid(b"-"),
            },
            Print::Wchan => {
                let w: &[u8] = match v.and_then(V::as_bytes) {
                    None => b"?",
                    Some([]) => b"-",
                    Some(w) => {
                        let w = trim_leading(w, b'.');
                        trim_leading(w, b'_')
                    }
                };
                plain(&w[..w.len().min(x.max).min(63)])
            }
            Print::SignalMask => signal_mask(v.and_then(V::as_u64), x.env.wide_signals),
            Print::Model => match v {
                Some(V::Int(v)) => num(v),
                Some(V::UInt(v)) => num(v),
                Some(V::Bytes(b)) => escaped(b, x.max, x.env),
                None => plain("-"),
            },
        }
    }
}

impl Source {
    /// Prints the value of the task in `x`.
    pub fn print(self, x: &mut Ctx<'_>) -> Cell {
        match self {
            Source::Table(f, print) => print.print(f.value(x.t), x),
            Source::Own(formatter) => (formatter.print)(x),
            Source::Nop => plain("-"),
        }
    }

    /// Asks for what the value reads under settings `s`.
    pub fn ask(self, s: &Settings, g: &mut Groups) {
        match self {
            Source::Table(f, _) => f.group.ask(g),
            Source::Own(formatter) => formatter.reads.iter().for_each(|r| r.ask(s, g)),
            Source::Nop => {}
        }
    }

    /// What `--output json|csv` carries of it: hexadecimal text for addresses and signal
    /// masks, a formatter's own choice, else the text.
    pub fn data(self) -> Data {
        match self {
            Source::Table(_, Print::Address | Print::SignalMask) => Data::Hex,
            Source::Own(formatter) => formatter.data,
            _ => Data::Text,
        }
    }
}

/// How rows sort by a column (procps's sort item of its format row).
#[derive(Debug, Clone, Copy)]
pub enum Sort {
    /// By the table field the column shows ([`Source::Table`]): a number as it is (absent:
    /// its printer's [`Print::missing`]), bytes as text (absent: `-`, as a field by its own
    /// name prints). A column of ps's own sorts by its text.
    Value,
    /// By another field of the table (absent: 0): procps sorts `time` by the CPU time in
    /// ns, `vsz` by stat's size, `label` by the pid...
    By(&'static fields::Field),
    /// By the text the column prints (compared with strcoll).
    Text,
    /// A key ps derives ([`super::printers`]).
    Derived(fn(&Task, &Env, &mut Caches) -> Key),
    /// By the hexadecimal digits of the table field the column shows, as /proc gives them
    /// (procps compares signal masks as the strings it read; none when unreadable).
    Hex,
}

/// A value to sort on.
#[derive(Debug, PartialEq, PartialOrd)]
pub enum Key {
    /// A number.
    Num(f64),
    /// Text, compared with strcoll(3).
    Text(Vec<u8>),
}

impl Sort {
    /// The key of `t` for a column whose value is `source`.
    pub fn key(self, source: Source, t: &Task, env: &Env, c: &mut Caches) -> Key {
        use fields::Value as V;
        let number = |v: V<'_>| match v {
            V::Int(v) => v as f64,
            V::UInt(v) => v as f64,
            V::Bytes(_) => 0.0,
        };
        match (self, source) {
            (Sort::Value, Source::Table(f, print)) => match f.value(t) {
                Some(V::Bytes(b)) => Key::Text(b.to_vec()),
                Some(v) => Key::Num(number(v)),
                None if f.kind == fields::Kind::Bytes => Key::Text(b"-".to_vec()),
                None => Key::Num(print.missing() as f64),
            },
            (Sort::By(f), _) => Key::Num(f.value(t).map_or(0.0, number)),
            (Sort::Derived(key), _) => key(t, env, c),
            (Sort::Hex, Source::Table(f, _)) => Key::Text(
                table_u64(f, t)
                    .map(|v| format!("{v:016x}").into_bytes())
                    .unwrap_or_default(),
            ),
            _ => Key::Text(source.print(&mut Ctx::of(t, 4096, env, c)).bytes.to_vec()),
        }
    }

    /// Asks for what the key reads beyond its column's value.
    pub fn ask(self, g: &mut Groups) {
        if let Sort::By(f) = self {
            f.group.ask(g);
        }
    }
}

/// A field of the model's table as a signed number (`None`: absent).
pub fn table_i64(f: &fields::Field, t: &Task) -> Option<i64> {
    f.value(t).and_then(fields::Value::as_i64)
}

/// A field of the model's table as an unsigned number (`None`: absent, or negative).
pub fn table_u64(f: &fields::Field, t: &Task) -> Option<u64> {
    f.value(t).and_then(fields::Value::as_u64)
}

/// A bytes field of the model's table (`None`: absent).
pub fn table_bytes<'t>(f: &fields::Field, t: &'t Task) -> Option<&'t [u8]> {
    f.value(t).and_then(fields::Value::as_bytes)
}

/// A signal mask as procps's `help_pr_sig` prints the 16 hex digits of /proc/PID/status: all
/// of them when wide; else the last 8, after a `<` when a higher digit is set. `None`
/// (status unreadable: procps has an empty string) prints 8 zeros either way.
pub fn signal_mask(mask: Option<u64>, wide: bool) -> Cell {
    let Some(m) = mask else {
        return plain("00000000");
    };
    if wide {
        return plain(format!("{m:016x}"));
    }
    if m >> 32 != 0 {
        return plain(format!("<{:08x}", m & 0xffff_ffff));
    }
    plain(format!("{m:08x}"))
}

/// procps's UTILIZATION (or UTILIZATION_C with `children`), uncapped: what it sorts by. 0
/// when the uptime could not be read: procps 4.0.2 then never sets its `boot_tics`
/// (library/pids.c: `procps_uptime()` fails before it stores the uptime, and the value
/// multiplied is an uninitialised local), and prints 0.000 (measured under a `subset=pid`
/// /proc; the tick count since start it divides by comes out huge).
pub fn utilization_value(t: &Task, children: bool, env: &Env) -> f64 {
    if !env.uptime_read {
        return 0.0;
    }
    let mut used = env.own_cpu_ticks(t);
    if children {
        used += env.children_cpu_ticks(t);
    }
    // boot_tics - start_time in unsigned arithmetic: a start after "now" wraps.
    let since = env
        .uptime_ticks
        .wrapping_sub(ticks(t.id.start_time_ns, env.hertz)) as f64;
    if since > 0.0 {
        f64::from(used as f32 * 100.0f32) / since
    } else {
        0.0
    }
}

/// A user or group name in at most `max` cells, as procps prints it.
fn do_name(name: Option<&[u8]>, id: u32, max: usize, env: &Env) -> Cell {
    if !env.user_is_number {
        // procps's pwcache keeps names of at most 32 bytes; longer ones become the number.
        if let Some(name) = name.filter(|n| n.len() <= 32) {
            let mut room = cell::OUTBUF_SIZE;
            let mut bytes = CellBytes::new();
            text::output_escape(&mut bytes, name, &mut room, env.locale);
            let len = cell::OUTBUF_SIZE - room;
            if len <= max {
                return Cell { bytes, cells: len };
            }
            // Too long: cut and mark with '+', unless the cut would split a multi-byte
            // character, in which case procps prints the number.
            if max >= 1 && bytes.get(max - 1).is_some_and(|&c| c < 127) {
                bytes.truncate(max - 1);
                bytes.push(b'+');
                return Cell { bytes, cells: max };
            }
        }
    }
    num(id)
}

/// `w` without the run of `c` it starts with.
fn trim_leading(w: &[u8], c: u8) -> &[u8] {
    &w[w.iter().position(|&b| b != c).unwrap_or(w.len())..]
}

/// `text` through ps's output escape, in at most `max` cells.
pub fn escaped(text: &[u8], max: usize, env: &Env) -> Cell {
    let mut room = max;
    let mut bytes = CellBytes::new();
    text::output_escape(&mut bytes, text, &mut room, env.locale);
    Cell {
        bytes,
        cells: max - room,
    }
}

/// A row's command text: `[comm]` (and ` <defunct>` for zombies) when the command line is
/// empty, as procps's `fill_cmdline_cvt`.
pub fn command_text(t: &Task, loc: Locale) -> Vec<u8> {
    let zombie = fields::STATE.value(t) == Some(fields::Value::Bytes(b"Z"));
    text::command_or_name(
        table_bytes(&fields::CMDLINE, t),
        comm_text(t, loc),
        zombie,
        loc,
    )
}

/// The comm up to its first NUL, at most 63 bytes (procps's buffer).
pub fn comm_bytes(t: &Task) -> &[u8] {
    let comm = table_bytes(&fields::COMM, t).unwrap_or_default();
    let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(comm.len())];
    &comm[..comm.len().min(63)]
}

/// The comm after the library escape.
pub fn comm_text(t: &Task, loc: Locale) -> Vec<u8> {
    let mut c = comm_bytes(t).to_vec();
    text::library_escape(&mut c, loc);
    c
}
