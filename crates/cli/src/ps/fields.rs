//! Formatting one field of one task as procps-ng 4.0 prints it (the `pr_*` functions of
//! ps/output.c), from the tasksnap model instead of procps's proc_t.
//!
//! Every column names its value's [`Source`] ([`source`]): a field of the model's table
//! (`tasksnap_model::fields`: ids, counts, sizes, OOM scores, namespaces, addresses, user and
//! group ids under their names, the terminal, the state, the wait channel, the label, the
//! sd-login answers, and every table field procps has no specifier for) with one of
//! procps's printers ([`Print`]: its defaults for a missing value, KiB, pages, hexadecimal,
//! `-`, names), or ps's own printer where the value is procps's arithmetic (times, STAT
//! letters, percentages, signal masks with the leader rule, the policy-dependent nice and
//! rtprio, command text, cgroup text, supplementary groups). [`value`] only dispatches, and
//! sort keys ([`sort_field`]) read the same table fields.

use tasksnap_model::fields;
use tasksnap_model::login::What;
use tasksnap_model::{Task, SCHED_BATCH, SCHED_OTHER};

use super::format::{Field, IoCount};
use super::layout::{Cell, CellBytes};
use super::names::{HostFacts, Names, Ttys};
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
}

fn ticks(ns: u64, hz: u64) -> u64 {
    ns / (1_000_000_000 / hz.max(1))
}

/// A time field of the model's table in clock ticks (0 when absent).
fn table_ticks(f: &fields::Field, t: &Task, hz: u64) -> u64 {
    ticks(table_u64(f, t).unwrap_or(0), hz)
}

fn plain(s: impl AsRef<[u8]>) -> Cell {
    let bytes = CellBytes::from_slice(s.as_ref());
    Cell {
        cells: bytes.len(),
        bytes,
    }
}

/// Appends `v` in decimal, padded on the left with `fill` to at least `width` bytes. Digits
/// are written by hand: at 50,000 rows of `ps -ef` the formatting machinery (`format!`, then
/// padding) was a quarter of the print time.
fn push_dec(out: &mut CellBytes, v: u64, width: usize, fill: u8) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = v;
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let n = digits.len() - at;
    out.extend(std::iter::repeat_n(fill, width.saturating_sub(n)));
    out.extend_from_slice(&digits[at..]);
}

/// A cell of ASCII `bytes` (one cell per byte).
fn ascii(bytes: CellBytes) -> Cell {
    Cell {
        cells: bytes.len(),
        bytes,
    }
}

/// What procps's `snprintf(outbuf, COLWID, "%s", ...)` leaves: at most 239 bytes printed,
/// while the layout advances by the whole length (snprintf's return value).
fn colwid(v: &[u8]) -> Cell {
    Cell {
        bytes: CellBytes::from_slice(&v[..v.len().min(239)]),
        cells: v.len(),
    }
}

/// A number, formatted straight into the cell.
fn num(v: impl Into<i128>) -> Cell {
    let v: i128 = v.into();
    let mut bytes = CellBytes::new();
    if v < 0 {
        bytes.push(b'-');
    }
    let m = v.unsigned_abs();
    if let Ok(small) = u64::try_from(m) {
        push_dec(&mut bytes, small, 0, b' ');
    } else {
        use std::io::Write as _;
        let _ = write!(bytes, "{m}");
    }
    ascii(bytes)
}

/// `tenths` as procps's "%u.%u" (with the integer part at least `width` wide).
fn tenths(tenths: u64, width: usize) -> Cell {
    let mut bytes = CellBytes::new();
    push_dec(&mut bytes, tenths / 10, width, b' ');
    bytes.push(b'.');
    push_dec(&mut bytes, tenths % 10, 0, b' ');
    ascii(bytes)
}

/// `[DD-]HH:MM:SS`, the TIME column.
fn clock_time(s: u64) -> Cell {
    let (dd, hh, mm, ss) = (s / 86400, (s / 3600) % 24, (s / 60) % 60, s % 60);
    let mut bytes = CellBytes::new();
    if dd > 0 {
        push_dec(&mut bytes, dd, 0, b' ');
        bytes.push(b'-');
    }
    for (i, part) in [hh, mm, ss].into_iter().enumerate() {
        if i > 0 {
            bytes.push(b':');
        }
        push_dec(&mut bytes, part, 2, b'0');
    }
    ascii(bytes)
}

/// `localtime_r` + `strftime` with `fmt`.
fn strftime(t: i64, fmt: &std::ffi::CStr) -> String {
    let Some(tm) = tasksnap_sys::local_time(t) else {
        return String::new();
    };
    let mut buf = [0u8; 128];
    // SAFETY: `fmt` and `tm` are valid for the call; strftime writes at most buf.len() bytes
    // into `buf` and returns how many it wrote (0 on failure).
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The local time parts procps compares (year and day of year); zeros when the time cannot
/// be broken down (procps compares a zeroed `tm` then).
fn year_yday(t: i64) -> (i32, i32) {
    tasksnap_sys::local_time(t).map_or((0, 0), |tm| (tm.tm_year, tm.tm_yday))
}

/// `ctime(3)` without its newline: "Sun Nov 22 04:18:11 2026".
fn ctime(t: i64) -> String {
    strftime(t, c"%a %b %e %H:%M:%S %Y")
}

impl Env {
    fn start_s(&self, t: &Task) -> i64 {
        let start_ticks = ticks(t.id.start_time_ns, self.hertz);
        self.boot_time_s + (start_ticks / self.hertz.max(1)) as i64
    }

    /// The task's own CPU time, ticks: user and system each rounded down, as procps has them.
    fn own_cpu_ticks(&self, t: &Task) -> u64 {
        table_ticks(&fields::UTIME_NS, t, self.hertz)
            + table_ticks(&fields::STIME_NS, t, self.hertz)
    }

    /// The CPU time, ticks, with BSD `S` its reaped children's too.
    fn cpu_ticks(&self, t: &Task) -> u64 {
        let mut v = self.own_cpu_ticks(t);
        if self.include_dead_children {
            v += self.children_cpu_ticks(t);
        }
        v
    }

    /// The CPU time of the task's reaped children, ticks.
    fn children_cpu_ticks(&self, t: &Task) -> u64 {
        table_ticks(&fields::CUTIME_NS, t, self.hertz)
            + table_ticks(&fields::CSTIME_NS, t, self.hertz)
    }

    /// Seconds since the task started, as procps's TIME_ELAPSED (fractional).
    fn elapsed_s(&self, t: &Task) -> f64 {
        let start = ticks(t.id.start_time_ns, self.hertz) as f64;
        let e = self.uptime_ticks as f64 - start;
        if e > 0.0 {
            e / self.hertz as f64
        } else {
            0.0
        }
    }

    fn permille_cpu(&self, t: &Task, scale: u64) -> u64 {
        let jiffies = (self.elapsed_s(t) * self.hertz as f64) as u64;
        (self.cpu_ticks(t) * scale)
            .checked_div(jiffies)
            .unwrap_or(0)
    }
}

/// A signal mask as procps's `help_pr_sig` prints the 16 hex digits of /proc/PID/status: all
/// of them when wide; else the last 8, after a `<` when a higher digit is set. `None`
/// (status unreadable: procps has an empty string) prints 8 zeros either way.
fn signal_mask(mask: Option<u64>, wide: bool) -> Cell {
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

/// The mask `field` shows for `t`, as procps reads it: `sig`/`pending` is the group's
/// (`ShdPnd`) on a row read as a process (a leader, in ps's thread listings too) and the
/// thread's own (`SigPnd`) on another thread's row (library/readproc.c `status2proc`).
pub fn signal_value(field: Field, t: &Task) -> Option<u64> {
    let f = match field {
        Field::SigPending if t.id.is_leader() => &fields::SIG_SHARED_PENDING,
        Field::SigPending | Field::SigThread => &fields::SIG_PENDING,
        Field::SigBlocked => &fields::SIG_BLOCKED,
        Field::SigIgnored => &fields::SIG_IGNORED,
        _ => &fields::SIG_CAUGHT,
    };
    table_u64(f, t)
}

/// `%#.3f` of procps's UTILIZATION (`cuu`) or UTILIZATION_C (`cuc`): CPU ticks times 100 over
/// the ticks since the task started, capped at 99.999. The product is a C `float`
/// (`(utime + stime) * 100.0f`, library/pids.c), kept so here.
fn utilization(t: &Task, children: bool, env: &Env) -> Cell {
    let mut cu = utilization_value(t, children, env);
    if cu > 99.0 {
        cu = 99.999;
    }
    plain(format!("{cu:.3}"))
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

/// The data and text sizes procps derives from the address space and the code addresses
/// (ps/output.c `pr_drs`/`pr_trs`, "might not be correct for ELF executables"), kB: 0
/// without an address space. Without ptrace access the kernel shows both code addresses as
/// 1, so text is 0 and data the whole space.
pub fn drs_trs_kb(t: &Task) -> (u64, u64) {
    let vsize = table_u64(&fields::STAT_VSIZE_BYTES, t).unwrap_or(0);
    if vsize == 0 {
        return (0, 0);
    }
    let start = table_u64(&fields::START_CODE, t).unwrap_or(0);
    let end = table_u64(&fields::END_CODE, t).unwrap_or(0);
    (
        vsize.wrapping_sub(end).wrapping_add(start) >> 10,
        end.wrapping_sub(start) >> 10,
    )
}

/// An address as procps prints it: 16 hex digits.
fn address(v: u64) -> Cell {
    plain(format!("{v:016x}"))
}

fn do_name(name: Option<&[u8]>, id: u32, max: usize, env: &Env) -> Cell {
    if !env.user_is_number {
        // procps's pwcache keeps names of at most 32 bytes; longer ones become the number.
        if let Some(name) = name.filter(|n| n.len() <= 32) {
            let mut room = super::layout::OUTBUF_SIZE;
            let mut bytes = CellBytes::new();
            text::output_escape(&mut bytes, name, &mut room, env.locale);
            let len = super::layout::OUTBUF_SIZE - room;
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

/// A bytes field of the model's table (`None`: absent).
fn table_bytes<'t>(f: &fields::Field, t: &'t Task) -> Option<&'t [u8]> {
    f.value(t).and_then(fields::Value::as_bytes)
}

/// The comm up to its first NUL, at most 63 bytes (procps's buffer).
fn comm_bytes(t: &Task) -> &[u8] {
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

/// Where a column's value comes from: a field of the model's table printed by one of
/// procps's printers, or ps's own arithmetic over the task. [`source`] says which, for
/// every column; [`value`] only dispatches.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A field of the model's table (`tasksnap_model::fields`), printed as [`Print`] says.
    Table(&'static fields::Field, Print),
    /// ps's own derivation: states, times, percentages, command text, signal masks with
    /// procps's leader rule, the values that depend on the scheduling policy.
    Own(Printer),
}

/// A ps-computed column's printer.
pub type Printer = fn(&mut Ctx<'_>) -> Cell;

/// One value being printed: the column's field, the task, the cells the column may take,
/// the tree art before a command and what printing has at hand.
pub struct Ctx<'a> {
    /// The column's field.
    pub field: Field,
    /// The row's task.
    pub t: &'a Task,
    /// Cells the value may take, where the column honours a limit.
    pub max: usize,
    /// The tree-art prefix of command columns.
    pub forest: &'a [u8],
    /// Facts about the system and the run.
    pub env: &'a Env,
    /// Per-run caches (names, terminals, start times).
    pub c: &'a mut Caches,
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
            Print::Address => address(uint),
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
            Print::NumaNode => num(usize::try_from(int)
                .ok()
                .and_then(|cpu| x.c.numa.get(cpu).copied())
                .unwrap_or(-1)),
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
            Print::Model => match v {
                Some(V::Int(v)) => num(v),
                Some(V::UInt(v)) => num(v),
                Some(V::Bytes(b)) => escaped(b, x.max, x.env),
                None => plain("-"),
            },
        }
    }
}

/// `w` without the run of `c` it starts with.
fn trim_leading(w: &[u8], c: u8) -> &[u8] {
    &w[w.iter().position(|&b| b != c).unwrap_or(w.len())..]
}

/// `text` through ps's output escape, in at most `max` cells.
fn escaped(text: &[u8], max: usize, env: &Env) -> Cell {
    let mut room = max;
    let mut bytes = CellBytes::new();
    text::output_escape(&mut bytes, text, &mut room, env.locale);
    Cell {
        bytes,
        cells: max - room,
    }
}

/// Where each column's value comes from (see [`Source`]).
pub fn source(field: Field) -> Source {
    use fields as m;
    use Print as P;
    use Source::{Own, Table};
    const N: Print = P::Number { missing: 0 };
    let scaled = |sign, offset| Table(&m::PRIORITY, P::Scaled { sign, offset });
    match field {
        Field::Model(f) => Table(f, P::Model),
        Field::Pid => Table(&m::PID, N),
        Field::Tid => Table(&m::TID, N),
        Field::Ppid => Table(&m::PPID, N),
        Field::Pgid => Table(&m::PGID, N),
        Field::Sess => Table(&m::SID, N),
        Field::Tpgid => Table(&m::TPGID, N),
        Field::Nlwp => Table(&m::NUM_THREADS, N),
        Field::Psr => Table(&m::PROCESSOR, N),
        Field::Euid => Table(&m::EUID, N),
        Field::Ruid => Table(&m::RUID, N),
        Field::Suid => Table(&m::SUID, N),
        Field::Fuid => Table(&m::FSUID, N),
        Field::Egid => Table(&m::EGID, N),
        Field::Rgid => Table(&m::RGID, N),
        Field::Sgid => Table(&m::SGID, N),
        Field::Fgid => Table(&m::FSGID, N),
        // What procps newer than 4.0.2 prints when the directory could not be stat'ed: 0.
        Field::Fds => Table(&m::FDS, N),
        Field::Priority => Table(&m::PRIORITY, N),
        Field::Sched => Table(&m::POLICY, N),
        Field::Oom => Table(&m::OOM_SCORE, N),
        Field::OomAdj => Table(&m::OOM_SCORE_ADJ, N),
        Field::AgNice => Table(&m::AUTOGROUP_NICE, N),
        // -1 without the file (a thread's own directory has none), as procps shows it.
        Field::AgId => Table(&m::AUTOGROUP_ID, P::Number { missing: -1 }),
        Field::Luid => Table(&m::LOGINUID, P::DashOn(-1)),
        Field::Ns(i) => Table(NS[usize::from(i) & 7], P::DashOn(0)),
        Field::Io(which) => Table(io_field(which), N),
        Field::Rss => Table(&m::RSS_BYTES, P::Kib),
        Field::Pss => Table(&m::PSS_BYTES, P::Kib),
        Field::Uss => Table(&m::USS_BYTES, P::Kib),
        Field::Pmem => Table(&m::RSS_BYTES, P::ShareOfMemory),
        Field::Vsz => Table(&m::STAT_VSIZE_BYTES, P::Kib),
        Field::Sz => Table(&m::STAT_VSIZE_BYTES, P::Pages),
        Field::MSize => Table(&m::STAT_VSIZE_BYTES, N),
        // VmData + VmStk of status, which statm's data field is (in pages).
        Field::Size => Table(&m::DATA_BYTES, P::Kib),
        Field::Eip => Table(&m::KSTKEIP, P::Address),
        Field::Esp => Table(&m::KSTKESP, P::Address),
        Field::StackP => Table(&m::START_STACK, P::Address),
        Field::Lim => Table(&m::RSSLIM_BYTES, P::Limit),
        Field::Opri => scaled(1, 60),
        Field::Pri => scaled(-1, 39),
        Field::PriFoo => scaled(1, -20),
        Field::PriBar => scaled(1, 1),
        Field::PriBaz => scaled(1, 100),
        Field::PriApi => scaled(-1, -1),
        Field::Euser => Table(&m::EUID, P::User),
        Field::Ruser => Table(&m::RUID, P::User),
        Field::Suser => Table(&m::SUID, P::User),
        Field::Fuser => Table(&m::FSUID, P::User),
        Field::Egroup => Table(&m::EGID, P::Group),
        Field::Rgroup => Table(&m::RGID, P::Group),
        Field::Sgroup => Table(&m::SGID, P::Group),
        Field::Fgroup => Table(&m::FSGID, P::Group),
        Field::Tty => Table(&m::TTY_NR, P::Tty { number: false }),
        Field::Tty4 => Table(&m::TTY_NR, P::Tty { number: true }),
        Field::Numa => Table(&m::PROCESSOR, P::NumaNode),
        Field::S => Table(&m::STATE, P::Text("?")),
        Field::Label => Table(&m::LABEL, P::Text("-")),
        Field::Wchan => Table(&m::WCHAN, P::Wchan),
        Field::Login(what) => Table(login_field(what), P::Login),

        Field::Addr | Field::Nop => Own(|_| plain("-")),
        // Outside a text listing there is no header countdown: the first row's text.
        Field::Test(_) => Own(|x| match x.field {
            Field::Test(which) => test_value(which, -1, x.max),
            _ => plain(""),
        }),
        // Its text is the column's header ([`super::order::cell`]).
        Field::Text => Own(|_| plain("")),
        Field::Supgid => Own(supgid),
        Field::Supgrp => Own(supgrp),
        Field::SigPending
        | Field::SigThread
        | Field::SigBlocked
        | Field::SigIgnored
        | Field::SigCaught => Own(|x| signal_mask(signal_value(x.field, x.t), x.env.wide_signals)),
        Field::Drs => Own(|x| num(drs_trs_kb(x.t).0)),
        Field::Trs => Own(|x| num(drs_trs_kb(x.t).1)),
        Field::Fname => Own(fname),
        Field::SgiP => Own(sgi_p),
        Field::Cuc => Own(|x| utilization(x.t, true, x.env)),
        Field::Cuu => Own(|x| utilization(x.t, false, x.env)),
        Field::Stat => Own(stat_letters),
        Field::Flags => Own(flags),
        Field::Nice => Own(nice),
        Field::Rtprio => Own(rtprio),
        Field::Class | Field::Cls => Own(class),
        Field::Cgroup | Field::Cgname => Own(cgroup),
        Field::Lxc => Own(lxc),
        Field::MajFlt | Field::MinFlt => Own(faults),
        Field::Pcpu => Own(pcpu),
        Field::C => Own(|x| share(x.env.permille_cpu(x.t, 100).min(99), 2)),
        Field::Cp => Own(|x| share(x.env.permille_cpu(x.t, 1000).min(999), 3)),
        Field::Time => Own(time),
        Field::Times => Own(|x| num(x.env.own_cpu_ticks(x.t) / x.env.hertz.max(1))),
        Field::Bsdtime => Own(bsdtime),
        Field::Etime => Own(etime),
        Field::Etimes => Own(|x| num(x.env.elapsed_s(x.t) as u64)),
        Field::StartTime => Own(start_time),
        Field::Start => Own(start),
        Field::Lstart => Own(|x| plain(ctime(x.env.start_s(x.t)))),
        Field::Bsdstart => Own(bsdstart),
        Field::Args | Field::Comm | Field::Exe => Own(command),
    }
}

/// The column's field in the model's table when its value is the table's (see
/// [`source`]), and what the table's unit is divided by for the column's (kB for sizes).
pub fn table_field(field: Field) -> Option<(&'static fields::Field, u64)> {
    match source(field) {
        Source::Table(f, Print::Kib) => Some((f, 1024)),
        Source::Table(f, _) => Some((f, 1)),
        Source::Own(_) => None,
    }
}

/// The field of the model's table procps sorts `field` by (its format row's sort item),
/// and what a task without it sorts as; `None` where ps sorts by what it prints (text) or
/// by its own arithmetic.
pub fn sort_field(field: Field) -> Option<(&'static fields::Field, i64)> {
    use fields as m;
    Some(match field {
        Field::Pmem => (&m::RSS_BYTES, 0),
        // All of these sort by the address space's size (their PIDS_VSIZE_BYTES).
        Field::Vsz | Field::Sz | Field::Drs | Field::Trs | Field::MSize | Field::Size => {
            (&m::STAT_VSIZE_BYTES, 0)
        }
        Field::Time | Field::Times | Field::Bsdtime => (&m::CPU_NS, 0),
        Field::StartTime
        | Field::Start
        | Field::Lstart
        | Field::Bsdstart
        | Field::Etime
        | Field::Etimes => (&m::START_TIME_NS, 0),
        Field::MajFlt => (&m::MAJFLT, 0),
        Field::MinFlt => (&m::MINFLT, 0),
        Field::Flags => (&m::FLAGS, 0),
        Field::Nice => (&m::NICE, 0),
        Field::Rtprio => (&m::RT_PRIORITY, 0),
        Field::Sched | Field::Class | Field::Cls => (&m::POLICY, 0),
        Field::Pri
        | Field::Opri
        | Field::PriFoo
        | Field::PriBar
        | Field::PriBaz
        | Field::PriApi => (&m::PRIORITY, 0),
        // context, label and zone sort by the process id (their PIDS_ID_TGID).
        Field::Label => (&m::PID, 0),
        // procps compares these as the numbers they are, unreadable ones as its defaults.
        Field::Pid
        | Field::Tid
        | Field::Ppid
        | Field::Pgid
        | Field::Sess
        | Field::Tpgid
        | Field::Nlwp
        | Field::Psr
        | Field::Euid
        | Field::Ruid
        | Field::Egid
        | Field::Rgid
        | Field::Rss
        | Field::Fds
        | Field::Priority
        | Field::Eip
        | Field::Esp
        | Field::StackP
        | Field::Lim
        | Field::Ns(_)
        | Field::Oom
        | Field::OomAdj
        | Field::AgId
        | Field::AgNice
        | Field::Luid
        | Field::Pss
        | Field::Uss
        | Field::Io(_) => match source(field) {
            Source::Table(f, print) => (f, print.missing()),
            Source::Own(_) => return None,
        },
        _ => return None,
    })
}

/// A field of the model's table as a signed number (`None`: absent).
fn table_i64(f: &fields::Field, t: &Task) -> Option<i64> {
    f.value(t).and_then(fields::Value::as_i64)
}

/// A field of the model's table as an unsigned number (`None`: absent, or negative).
fn table_u64(f: &fields::Field, t: &Task) -> Option<u64> {
    f.value(t).and_then(fields::Value::as_u64)
}

/// The table's namespace fields, in `NS_NAMES` order (`Field::Ns`'s index).
const NS: [&fields::Field; 8] = [
    &fields::NS_CGROUP_INODE,
    &fields::NS_IPC_INODE,
    &fields::NS_MNT_INODE,
    &fields::NS_NET_INODE,
    &fields::NS_PID_INODE,
    &fields::NS_TIME_INODE,
    &fields::NS_USER_INODE,
    &fields::NS_UTS_INODE,
];

/// The table's field for an sd-login column.
fn login_field(what: What) -> &'static fields::Field {
    match what {
        What::Unit => &fields::SYSTEMD_UNIT,
        What::UserUnit => &fields::SYSTEMD_USER_UNIT,
        What::Slice => &fields::SYSTEMD_SLICE,
        What::Session => &fields::LOGIN_SESSION,
        What::OwnerUid => &fields::OWNER_UID,
        What::Machine => &fields::SYSTEMD_MACHINE,
        What::Seat => &fields::SYSTEMD_SEAT,
    }
}

/// The table's field for a /proc/PID/io column (procps's mapping, library/pids.c).
fn io_field(which: IoCount) -> &'static fields::Field {
    match which {
        IoCount::ReadBytes => &fields::READ_BYTES,
        IoCount::ReadChars => &fields::RCHAR_BYTES,
        IoCount::ReadOps => &fields::SYSCR,
        IoCount::WriteBytes => &fields::WRITE_BYTES,
        IoCount::WriteCancelled => &fields::CANCELLED_WRITE_BYTES,
        IoCount::WriteChars => &fields::WCHAR_BYTES,
        IoCount::WriteOps => &fields::SYSCW,
    }
}

/// Formats `field` of `t` in at most `max` cells where the field honours a limit.
/// `forest` is the tree-art prefix for command columns.
pub fn value(field: Field, t: &Task, max: usize, forest: &[u8], env: &Env, c: &mut Caches) -> Cell {
    let mut x = Ctx {
        field,
        t,
        max,
        forest,
        env,
        c,
    };
    match source(field) {
        Source::Table(f, print) => print.print(f.value(t), &mut x),
        Source::Own(printer) => printer(&mut x),
    }
}

// ps's own printers (the [`Source::Own`] columns), in procps's terms.

/// `supgid`: the supplementary group ids, comma-joined; `-` for none.
fn supgid(x: &mut Ctx<'_>) -> Cell {
    match x.t.cred.as_ref().and_then(|c| c.groups.as_ref()) {
        Some(g) if !g.is_empty() => plain(
            g.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => plain("-"),
    }
}

/// procps's supgrps_from_supgids: each group's name (its number when it has none or a name
/// of 33 bytes or more), comma-joined; "-" for none.
fn supgrp(x: &mut Ctx<'_>) -> Cell {
    let text = match x.t.cred.as_ref().and_then(|c| c.groups.as_ref()) {
        Some(g) if !g.is_empty() => {
            let mut out = Vec::new();
            for (i, &gid) in g.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match x.c.names.group(gid).filter(|n| n.len() <= 32) {
                    Some(name) => out.extend_from_slice(name),
                    None => out.extend_from_slice(gid.to_string().as_bytes()),
                }
            }
            out
        }
        _ => b"-".to_vec(),
    };
    escaped(&text, x.max, x.env)
}

/// procps's pr_fname: the tree art, then the comm in at most 8 cells. It reports the cells
/// it was given less the room left of those 8, more than it printed when the column is
/// wider than 8 (`-o fname:20`): the next column then starts that much further left, as
/// procps prints it.
fn fname(x: &mut Ctx<'_>) -> Cell {
    let mut bytes = CellBytes::new();
    let fh = x.forest.len().min(x.max);
    bytes.extend_from_slice(&x.forest[..fh]);
    let mut room = (x.max - fh).min(8);
    let comm = comm_text(x.t, x.env.locale);
    text::output_escape(&mut bytes, &comm, &mut room, x.env.locale);
    Cell {
        bytes,
        cells: x.max - room,
    }
}

/// `sgi_p`: the CPU of a running task, `*` for any other.
fn sgi_p(x: &mut Ctx<'_>) -> Cell {
    let running = fields::STATE.value(x.t) == Some(fields::Value::Bytes(b"R"));
    match table_i64(&fields::PROCESSOR, x.t) {
        Some(cpu) if running => num(cpu as u32),
        _ => plain("*"),
    }
}

/// `stat`: the state letter, then procps's flags: `<` high priority, `N` low, `L` locked
/// pages, `s` session leader, `l` threaded, `+` in the foreground process group.
fn stat_letters(x: &mut Ctx<'_>) -> Cell {
    let t = x.t;
    let mut s = CellBytes::new();
    if let Some(state) = fields::STATE.value(t).and_then(fields::Value::as_bytes) {
        let int = |f: &fields::Field| table_i64(f, t).unwrap_or(0);
        s.extend_from_slice(state);
        let nice = int(&fields::NICE);
        if nice < 0 {
            s.push(b'<');
        }
        if nice > 0 {
            s.push(b'N');
        }
        // VmLck: the locked group's, else status's when the memory came from there.
        let locked = table_u64(&fields::LOCKED_BYTES, t)
            .or_else(|| t.mem.as_ref().and_then(|m| m.locked_bytes));
        if locked.unwrap_or(0) > 0 {
            s.push(b'L');
        }
        if int(&fields::SID) == i64::from(t.id.tgid) {
            s.push(b's');
        }
        if int(&fields::NUM_THREADS) > 1 {
            s.push(b'l');
        }
        if int(&fields::PGID) == int(&fields::TPGID) {
            s.push(b'+');
        }
    }
    Cell {
        cells: s.len(),
        bytes: s,
    }
}

/// `f`: three bits of the kernel's flags, one octal digit.
fn flags(x: &mut Ctx<'_>) -> Cell {
    num((table_i64(&fields::FLAGS, x.t).unwrap_or(0) >> 6) & 7)
}

/// `ni`: `-` under a real-time policy.
fn nice(x: &mut Ctx<'_>) -> Cell {
    match table_i64(&fields::POLICY, x.t) {
        Some(p) if p != i64::from(SCHED_OTHER) && p != i64::from(SCHED_BATCH) => plain("-"),
        _ => num(table_i64(&fields::NICE, x.t).unwrap_or(0)),
    }
}

/// `rtprio`: `-` under SCHED_OTHER.
fn rtprio(x: &mut Ctx<'_>) -> Cell {
    match table_i64(&fields::POLICY, x.t) {
        Some(p) if p != i64::from(SCHED_OTHER) => {
            num(table_i64(&fields::RT_PRIORITY, x.t).unwrap_or(0))
        }
        _ => plain("-"),
    }
}

/// `class`, `cls`: the policy's abbreviation.
fn class(x: &mut Ctx<'_>) -> Cell {
    plain(match table_i64(&fields::POLICY, x.t).unwrap_or(0) {
        0 => "TS",
        1 => "FF",
        2 => "RR",
        3 => "B",
        4 => "ISO",
        5 => "IDL",
        6 => "DLN",
        7 => "#7",
        8 => "#8",
        9 => "#9",
        _ => "?",
    })
}

/// `cgroup`, `cgname`: the joined, escaped lines; for cgname what follows the first
/// ":name=" in them (when anything does), through the end. Then ps's output escape.
fn cgroup(x: &mut Ctx<'_>) -> Cell {
    let v = text::cgroup_text_escaped(x.t.cgroup.as_deref(), x.env.locale);
    let from = match x.field {
        Field::Cgname => v
            .windows(6)
            .position(|w| w == b":name=")
            .map(|at| at + 6)
            .filter(|&after| after < v.len())
            .unwrap_or(0),
        _ => 0,
    };
    escaped(&v[from..], x.max, x.env)
}

/// `lxc`: the container's name in the cgroup paths, `-` for none.
fn lxc(x: &mut Ctx<'_>) -> Cell {
    colwid(
        x.t.cgroup
            .as_deref()
            .and_then(tasksnap_model::Cgroup::lxc_name)
            .unwrap_or(b"-"),
    )
}

/// `majflt`, `minflt`: the task's faults, with BSD `S` its reaped children's too.
fn faults(x: &mut Ctx<'_>) -> Cell {
    let (own, children) = match x.field {
        Field::MajFlt => (&fields::MAJFLT, &fields::CMAJFLT),
        _ => (&fields::MINFLT, &fields::CMINFLT),
    };
    let mut v = table_u64(own, x.t).unwrap_or(0);
    if x.env.include_dead_children {
        v += table_u64(children, x.t).unwrap_or(0);
    }
    num(v)
}

/// `%cpu`: tenths of a percent of the time since the task started, whole percents from
/// 100.
fn pcpu(x: &mut Ctx<'_>) -> Cell {
    let p = x.env.permille_cpu(x.t, 1000);
    if p > 999 {
        num(p / 10)
    } else {
        tenths(p, 0)
    }
}

/// `c`, `cp`: a share, right-aligned in `width` digits.
fn share(v: u64, width: usize) -> Cell {
    let mut bytes = CellBytes::new();
    push_dec(&mut bytes, v, width, b' ');
    ascii(bytes)
}

/// `time`: `[DD-]HH:MM:SS` of the CPU time (procps's TIME_ALL: never the children's).
fn time(x: &mut Ctx<'_>) -> Cell {
    clock_time(x.env.own_cpu_ticks(x.t) / x.env.hertz.max(1))
}

/// `bsdtime`: `MMM:SS` of the CPU time.
fn bsdtime(x: &mut Ctx<'_>) -> Cell {
    let u = x.env.cpu_ticks(x.t) / x.env.hertz.max(1);
    let mut bytes = CellBytes::new();
    push_dec(&mut bytes, u / 60, 3, b' ');
    bytes.push(b':');
    push_dec(&mut bytes, u % 60, 2, b'0');
    ascii(bytes)
}

/// `etime`: `[[DD-]HH:]MM:SS` since the task started.
fn etime(x: &mut Ctx<'_>) -> Cell {
    let e = x.env.elapsed_s(x.t) as u64;
    let (dd, hh, mm, ss) = (e / 86400, (e / 3600) % 24, (e / 60) % 60, e % 60);
    let mut bytes = CellBytes::new();
    if dd > 0 {
        push_dec(&mut bytes, dd, 0, b' ');
        bytes.push(b'-');
    }
    if dd > 0 || hh > 0 {
        push_dec(&mut bytes, hh, 2, b'0');
        bytes.push(b':');
    }
    push_dec(&mut bytes, mm, 2, b'0');
    bytes.push(b':');
    push_dec(&mut bytes, ss, 2, b'0');
    ascii(bytes)
}

/// `stime`, `start_time`: the year, the day or the time of day the task started, as far
/// back as it was.
fn start_time(x: &mut Ctx<'_>) -> Cell {
    let env = x.env;
    let start = env.start_s(x.t);
    let text = x.c.stime.entry(start).or_insert_with(|| {
        let (ny, nd) = year_yday(env.now_s);
        let (py, pd) = year_yday(start);
        let fmt = if ny != py {
            c"%Y"
        } else if nd != pd {
            c"%b%d"
        } else {
            c"%H:%M"
        };
        strftime(start, fmt)
    });
    plain(text.as_bytes())
}

/// `start`: the time of day within the last 24 hours, else the date.
fn start(x: &mut Ctx<'_>) -> Cell {
    let start = x.env.start_s(x.t);
    let mut s = ctime(start).into_bytes();
    if s.len() < 24 {
        return plain(s);
    }
    if s[8] == b' ' {
        s[8] = b'0';
    }
    if s[11] == b' ' {
        s[11] = b'0';
    }
    if start + 86400 > x.env.now_s {
        plain(&s[11..19])
    } else {
        plain(format!("  {}", String::from_utf8_lossy(&s[4..10])))
    }
}

/// `bsdstart`: ctime's time of day within the last day, else its date.
fn bsdstart(x: &mut Ctx<'_>) -> Cell {
    let start = x.env.start_s(x.t);
    let s = ctime(start);
    let s = s.as_bytes();
    let ago = (x.env.now_s - start).max(0);
    let from = if ago > 86400 { 4 } else { 10 };
    plain(&s[from.min(s.len())..(from + 6).min(s.len())])
}

/// `args`, `comm`, `exe`: the command text after the tree art; with BSD `e` the
/// environment after the command (pr_args, pr_comm), when there is room for more than its
/// separator.
fn command(x: &mut Ctx<'_>) -> Cell {
    let (field, t, env, max) = (x.field, x.t, x.env, x.max);
    let mut room = max;
    let mut bytes = CellBytes::new();
    command_cell(field, t, x.forest, env, &mut bytes, &mut room);
    if env.bsd_e_option && field != Field::Exe && room > 1 {
        if let Some(flat) = t
            .environ
            .as_deref()
            .and_then(|e| text::flatten_cmdline(e, env.locale))
            .filter(|f| !f.is_empty() && f.as_slice() != b"-")
        {
            bytes.push(b' ');
            room -= 1;
            text::output_escape(&mut bytes, &flat, &mut room, env.locale);
        }
    }
    Cell {
        bytes,
        cells: max - room,
    }
}

/// procps's layout test columns (`pr_t_left` and friends in ps/output.c): a fixed text picked
/// by procps's header countdown `lines_to_next_header` (an int, taken modulo as unsigned), so
/// that a listing shows every text. The unlimited ones are cut at `max` cells.
pub fn test_value(which: u8, lines_to_next_header: i64, max: usize) -> Cell {
    const TEXTS: [&[&str]; 6] = [
        &["tty7", "pts/9999", "iseries/vtty42", "ttySMX0", "3270/tty4"],
        &["tty7", "pts/9999", "ttySMX0", "3270/tty4"],
        &["999-23:59:59", "99-23:59:59", "9-23:59:59", "59:59"],
        &["999-23:59:59", "99-23:59:59", "9-23:59:59"],
        &["[123456789-12345] <defunct>", "ps", "123456789-123456"],
        &[
            "unlimited",
            "[123456789-12345] <defunct>",
            "ps",
            "123456789-123456",
        ],
    ];
    let texts = TEXTS[usize::from(which).min(TEXTS.len() - 1)];
    let at = (lines_to_next_header as i32 as u32) as usize % texts.len();
    let text = texts[at].as_bytes();
    if which >= 4 {
        plain(&text[..text.len().min(max)])
    } else {
        plain(text)
    }
}

/// A command column's text (command line, comm or exe, after any forest art) into `bytes`,
/// taking cells from `room`.
fn command_cell(
    field: Field,
    t: &Task,
    forest: &[u8],
    env: &Env,
    bytes: &mut CellBytes,
    room: &mut usize,
) {
    let fh = forest.len().min(*room);
    bytes.extend_from_slice(&forest[..fh]);
    *room -= fh;
    let command = matches!(field, Field::Args if !env.bsd_c_option)
        || matches!(field, Field::Comm if env.unix_f_option);
    if command {
        if let Some(raw) = table_bytes(&fields::CMDLINE, t) {
            if text::push_plain_cmdline(bytes, raw, room) {
                return;
            }
        }
    }
    let name = matches!(field, Field::Args if env.bsd_c_option)
        || matches!(field, Field::Comm if !env.unix_f_option);
    if name {
        // A name of printable ASCII (nearly all) goes over as it is: both escapes leave it
        // alone.
        let comm = comm_bytes(t);
        if comm.iter().all(|c| (0x20..0x7f).contains(c)) {
            let n = comm.len().min(*room);
            bytes.extend_from_slice(&comm[..n]);
            *room -= n;
            return;
        }
    }
    let src = match field {
        Field::Args if env.bsd_c_option => comm_text(t, env.locale),
        Field::Args => command_text(t, env.locale),
        Field::Comm if env.unix_f_option => command_text(t, env.locale),
        Field::Comm => comm_text(t, env.locale),
        // No link to read (a kernel thread, a zombie: the model's empty path) or none
        // readable: procps's readlink_exe gives `-` for every failure.
        _ => table_bytes(&fields::EXE, t)
            .filter(|e| !e.is_empty())
            .unwrap_or(b"-")
            .to_vec(),
    };
    text::output_escape(bytes, &src, room, env.locale);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Layout, Signals, Stat, TaskId, TaskState};

    fn env(wide_signals: bool) -> Env {
        Env {
            hertz: 100,
            page_size: 4096,
            mem_total_kb: 1 << 20,
            boot_time_s: 0,
            now_s: 0,
            uptime_ticks: 100_000,
            uptime_read: true,
            locale: Locale { utf8: false },
            unix_f_option: false,
            bsd_c_option: false,
            bsd_e_option: false,
            include_dead_children: false,
            user_is_number: false,
            wide_signals,
        }
    }

    fn task(tgid: i32, tid: i32) -> Task {
        let mut t = Task::new(TaskId {
            tgid,
            tid,
            start_time_ns: 0,
        });
        t.base = Some(Base::default());
        t
    }

    fn show(field: Field, t: &Task, env: &Env) -> String {
        let mut c = Caches::new(&HostFacts::of(&tasksnap_collect::Host::from_env(), false));
        let cell = value(field, t, 80, &[], env, &mut c);
        String::from_utf8(cell.bytes.to_vec()).expect("ascii")
    }

    #[test]
    fn signal_masks_as_help_pr_sig_prints_them() {
        let mut t = task(7, 7);
        t.signals = Some(Box::new(Signals {
            pending: 0x4000,
            shared_pending: 1 << 39,
            blocked: 0x80_0000_4200,
            ignored: 0x1007,
            caught: 0x1_0000_0c40,
        }));
        let (wide, narrow) = (env(true), env(false));
        // The leader's row is the process's: the group's pending signals; tsig its own.
        assert_eq!(show(Field::SigPending, &t, &wide), "0000008000000000");
        assert_eq!(show(Field::SigThread, &t, &wide), "0000000000004000");
        assert_eq!(show(Field::SigPending, &t, &narrow), "<00000000");
        assert_eq!(show(Field::SigBlocked, &t, &narrow), "<00004200");
        assert_eq!(show(Field::SigIgnored, &t, &narrow), "00001007");
        assert_eq!(show(Field::SigCaught, &t, &narrow), "<00000c40");
        // Another thread's row: its own pending signals.
        let mut other = task(7, 8);
        other.signals = t.signals.clone();
        assert_eq!(show(Field::SigPending, &other, &wide), "0000000000004000");
        // Unreadable status: procps's empty string prints 8 zeros, wide or not.
        let none = task(9, 9);
        assert_eq!(show(Field::SigCaught, &none, &wide), "00000000");
        assert_eq!(show(Field::SigCaught, &none, &narrow), "00000000");
    }

    #[test]
    fn layout_columns_follow_the_masked_addresses() {
        let e = env(true);
        let mut t = task(5, 5);
        t.stat = Some(Stat {
            vsize_bytes: 5_124_096,
            ..Stat::default()
        });
        // The bash line of tasksnap-procfs's tests, read with ptrace access.
        t.layout = Some(Box::new(Layout {
            rsslim_bytes: u64::MAX,
            start_code: 94_822_117_650_432,
            end_code: 94_822_118_439_837,
            start_stack: 140_729_506_214_960,
            kstkesp: 0,
            kstkeip: 0,
        }));
        assert_eq!(show(Field::Trs, &t, &e), "770");
        assert_eq!(show(Field::Drs, &t, &e), "4233");
        assert_eq!(show(Field::MSize, &t, &e), "5124096");
        assert_eq!(show(Field::StackP, &t, &e), "00007ffe243a3430");
        assert_eq!(show(Field::Eip, &t, &e), "0000000000000000");
        assert_eq!(show(Field::Lim, &t, &e), "xx");
        // Without ptrace access the kernel shows 1 and 1: no text, all data.
        t.layout = Some(Box::new(Layout {
            rsslim_bytes: 8 << 20,
            start_code: 1,
            end_code: 1,
            ..Layout::default()
        }));
        assert_eq!(show(Field::Trs, &t, &e), "0");
        assert_eq!(show(Field::Drs, &t, &e), "5004");
        assert_eq!(show(Field::Lim, &t, &e), " 8192");
        // No address space (kernel thread): 0, whatever the addresses say.
        t.stat = Some(Stat::default());
        assert_eq!(show(Field::Drs, &t, &e), "0");
    }

    #[test]
    fn utilization_keeps_procps_float_product() {
        let e = env(true);
        let mut t = task(3, 3);
        t.stat = Some(Stat {
            utime_ns: 30 * 10_000_000,
            stime_ns: 7 * 10_000_000,
            cutime_ns: 100 * 10_000_000,
            ..Stat::default()
        });
        // 37 ticks over 100,000: 0.037; with the children's 100 more, 0.137.
        assert_eq!(show(Field::Cuu, &t, &e), "0.037");
        assert_eq!(show(Field::Cuc, &t, &e), "0.137");
        // A task busier than 99 % prints 99.999.
        let mut busy = task(4, 4);
        busy.id.start_time_ns = 99_990 * 10_000_000;
        busy.stat = Some(Stat {
            utime_ns: 20 * 10_000_000,
            ..Stat::default()
        });
        assert_eq!(show(Field::Cuu, &busy, &e), "99.999");
        // A huge tick count loses digits in a float, as in procps: 16777217 becomes
        // 16777216 before the * 100.
        let mut long = task(5, 5);
        long.stat = Some(Stat {
            utime_ns: 16_777_217 * 10_000_000,
            ..Stat::default()
        });
        let e = Env {
            uptime_ticks: 3_000_000_000,
            uptime_read: true,
            ..env(true)
        };
        assert_eq!(show(Field::Cuu, &long, &e), "0.559");
        assert_eq!(utilization_value(&long, false, &e), 1_677_721_600.0 / 3e9);
    }

    #[test]
    fn table_columns_print_the_tables_value_as_procps_does() {
        use tasksnap_model::{Extra, Mem};
        let e = env(true);
        let mut t = task(6, 7);
        t.stat = Some(Stat {
            vsize_bytes: 8 << 20,
            ..Stat::default()
        });
        // VSZ and SZ are stat's size (procps's VmSize), whatever statm says; SIZE is
        // statm's data.
        t.mem = Some(Box::new(Mem {
            vsize_bytes: 12 << 20,
            rss_bytes: 0,
            shared_bytes: 0,
            text_bytes: 0,
            data_bytes: 3 << 20,
            swap_bytes: None,
            locked_bytes: None,
        }));
        assert_eq!(show(Field::Vsz, &t, &e), "8192");
        assert_eq!(show(Field::Sz, &t, &e), "2048");
        assert_eq!(show(Field::MSize, &t, &e), "8388608");
        assert_eq!(show(Field::Size, &t, &e), "3072");
        // A thread's directory has no autogroup file and no loginuid: -1 and `-`; the
        // namespace inode 0 (none) is `-` too.
        assert_eq!(show(Field::AgId, &t, &e), "-1");
        assert_eq!(show(Field::Luid, &t, &e), "-");
        t.extra = Some(Box::new(Extra {
            ns: Some([0, 4_026_531_839, 0, 0, 0, 0, 0, 0]),
            loginuid: Some(-1),
            autogroup: Some((52, 0)),
            ..Extra::default()
        }));
        assert_eq!(show(Field::Ns(0), &t, &e), "-");
        assert_eq!(show(Field::Ns(1), &t, &e), "4026531839");
        assert_eq!(show(Field::Luid, &t, &e), "-");
        assert_eq!(show(Field::AgId, &t, &e), "52");
        // The wait channel loses its leading dots and underscores; empty is running.
        t.wchan = Some("__x64_sys_pause".into());
        assert_eq!(show(Field::Wchan, &t, &e), "x64_sys_pause");
        t.wchan = Some(String::new());
        assert_eq!(show(Field::Wchan, &t, &e), "-");
        t.wchan = None;
        assert_eq!(show(Field::Wchan, &t, &e), "?");
        // Priority scales over the table's priority.
        t.base = Some(Base {
            priority: 20,
            ..Base::default()
        });
        assert_eq!(show(Field::Pri, &t, &e), "19");
        assert_eq!(show(Field::Opri, &t, &e), "80");
        assert_eq!(show(Field::PriApi, &t, &e), "-21");
    }

    #[test]
    fn sgi_p_shows_the_cpu_of_running_tasks_only() {
        let e = env(true);
        let mut t = task(1, 1);
        t.base = Some(Base {
            state: TaskState::Running,
            processor: 3,
            ..Base::default()
        });
        assert_eq!(show(Field::SgiP, &t, &e), "3");
        t.base = Some(Base {
            processor: 3,
            ..Base::default()
        });
        assert_eq!(show(Field::SgiP, &t, &e), "*");
    }
}
