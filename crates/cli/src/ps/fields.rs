//! Formatting one field of one task as procps-ng 4.0 prints it (the `pr_*` functions of
//! ps/output.c), from the tasksnap model instead of procps's proc_t.
//!
//! Where a column is a field of the model's table (`tasksnap_model::fields`: ids, counts,
//! sizes, OOM scores, namespaces, addresses, the label, the sd-login answers, and every
//! table field procps has no specifier for) the value is the table's ([`table_field`]) and
//! only procps's printer is here: its defaults for a missing value, kB, hexadecimal, `-`.
//! The rest (times, states, flags, names, terminals, percentages) are procps's own
//! derivations and stay here.

use tasksnap_model::fields;
use tasksnap_model::login::What;
use tasksnap_model::{Task, TaskState, SCHED_BATCH, SCHED_OTHER};

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
    let Some(tm) = tasksnap_procfs::sys::local_time(t) else {
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
    tasksnap_procfs::sys::local_time(t).map_or((0, 0), |tm| (tm.tm_year, tm.tm_yday))
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

    fn cpu_ticks(&self, t: &Task) -> u64 {
        t.stat.as_ref().map_or(0, |s| {
            let mut v = ticks(s.utime_ns, self.hertz) + ticks(s.stime_ns, self.hertz);
            if self.include_dead_children {
                v += ticks(s.cutime_ns, self.hertz) + ticks(s.cstime_ns, self.hertz);
            }
            v
        })
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
    let s = t.signals.as_deref()?;
    Some(match field {
        Field::SigPending if t.id.is_leader() => s.shared_pending,
        Field::SigPending | Field::SigThread => s.pending,
        Field::SigBlocked => s.blocked,
        Field::SigIgnored => s.ignored,
        _ => s.caught,
    })
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

/// procps's UTILIZATION (or UTILIZATION_C with `children`), uncapped: what it sorts by.
pub fn utilization_value(t: &Task, children: bool, env: &Env) -> f64 {
    let hz = env.hertz;
    let mut used = 0u64;
    if let Some(s) = &t.stat {
        used = ticks(s.utime_ns, hz) + ticks(s.stime_ns, hz);
        if children {
            used += ticks(s.cutime_ns, hz) + ticks(s.cstime_ns, hz);
        }
    }
    // boot_tics - start_time in unsigned arithmetic: a start after "now" wraps.
    let since = env.uptime_ticks.wrapping_sub(ticks(t.id.start_time_ns, hz)) as f64;
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
    let vsize = t.stat.as_ref().map_or(0, |s| s.vsize_bytes);
    if vsize == 0 {
        return (0, 0);
    }
    let (start, end) = t
        .layout
        .as_ref()
        .map_or((0, 0), |l| (l.start_code, l.end_code));
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

/// Resident set size. Since Linux 6.2 the RSS counters are per-CPU (`percpu_counter`):
/// /proc/PID/stat reports a cheap approximate read of them while statm and status report the
/// exact sum, which is what procps shows (it reads VmRSS from status). So RSS comes from the
/// mem group (statm) and falls back to stat's value only when statm was not read.
pub fn rss_bytes(t: &Task) -> u64 {
    fields::RSS_BYTES
        .value(t)
        .and_then(fields::Value::as_u64)
        .unwrap_or(0)
}

/// One /proc/PID/io counter; 0 when the file was not readable (procps's zeroed default).
pub fn io_count(t: &Task, which: IoCount) -> u64 {
    t.io.as_deref().map_or(0, |io| match which {
        IoCount::ReadBytes => io.read_bytes,
        IoCount::ReadChars => io.rchar_bytes,
        IoCount::ReadOps => io.syscr,
        IoCount::WriteBytes => io.write_bytes,
        IoCount::WriteCancelled => io.cancelled_write_bytes,
        IoCount::WriteChars => io.wchar_bytes,
        IoCount::WriteOps => io.syscw,
    })
}

/// A row's command text: `[comm]` (and ` <defunct>` for zombies) when the command line is
/// empty, as procps's `fill_cmdline_cvt`.
pub fn command_text(t: &Task, loc: Locale) -> Vec<u8> {
    let zombie = t
        .base
        .as_ref()
        .is_some_and(|b| b.state == TaskState::Zombie);
    text::command_or_name(t.cmdline.as_deref(), comm_text(t, loc), zombie, loc)
}

/// The comm after the library escape.
pub fn comm_text(t: &Task, loc: Locale) -> Vec<u8> {
    let mut c = t.base.as_ref().map(|b| b.comm.to_vec()).unwrap_or_default();
    if let Some(end) = c.iter().position(|&b| b == 0) {
        c.truncate(end);
    }
    c.truncate(63);
    text::library_escape(&mut c, loc);
    c
}

/// The column's field in the model's table (`tasksnap_model::fields`) when procps prints it
/// as a plain number, and what the table's unit is divided by for the column's (kB for
/// sizes). ps keeps the column's header, width, sort key and printer; the value is the
/// table's.
pub fn table_field(field: Field) -> Option<(&'static fields::Field, u64)> {
    Some(match field {
        Field::Model(f) => (f, 1),
        Field::Pid => (&fields::PID, 1),
        Field::Tid => (&fields::TID, 1),
        Field::Ppid => (&fields::PPID, 1),
        Field::Pgid => (&fields::PGID, 1),
        Field::Sess => (&fields::SID, 1),
        Field::Tpgid => (&fields::TPGID, 1),
        Field::Nlwp => (&fields::NUM_THREADS, 1),
        Field::Psr => (&fields::PROCESSOR, 1),
        Field::Euid => (&fields::EUID, 1),
        Field::Ruid => (&fields::RUID, 1),
        Field::Suid => (&fields::SUID, 1),
        Field::Fuid => (&fields::FSUID, 1),
        Field::Egid => (&fields::EGID, 1),
        Field::Rgid => (&fields::RGID, 1),
        Field::Sgid => (&fields::SGID, 1),
        Field::Fgid => (&fields::FSGID, 1),
        Field::Fds => (&fields::FDS, 1),
        Field::Priority => (&fields::PRIORITY, 1),
        Field::Sched => (&fields::POLICY, 1),
        Field::Oom => (&fields::OOM_SCORE, 1),
        Field::OomAdj => (&fields::OOM_SCORE_ADJ, 1),
        Field::Pss => (&fields::PSS_BYTES, 1024),
        Field::Uss => (&fields::USS_BYTES, 1024),
        Field::AgNice => (&fields::AUTOGROUP_NICE, 1),
        Field::Rss => (&fields::RSS_BYTES, 1024),
        _ => return None,
    })
}

/// A plain-number column ([`table_field`]): the table's value, 0 when the task does not have
/// it (procps's value for an unreadable file; for `fds`, what procps newer than 4.0.2 prints
/// when the directory could not be stat'ed).
fn table_number(field: Field, t: &Task) -> Cell {
    match table_field(field).and_then(|(f, per)| Some((f.value(t)?, per))) {
        Some((fields::Value::Int(v), _)) => num(v),
        Some((fields::Value::UInt(v), per)) => num(v / per.max(1)),
        _ => num(0),
    }
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

/// Formats `field` of `t` in at most `max` cells where the field honours a limit.
/// `forest` is the tree-art prefix for command columns.
pub fn value(field: Field, t: &Task, max: usize, forest: &[u8], env: &Env, c: &mut Caches) -> Cell {
    let base = t.base.as_ref();
    let cred = t.cred.as_ref();
    let stat = t.stat.as_ref();
    match field {
        Field::Addr | Field::Nop => plain("-"),
        // A field of the model's table by its own name: the value as it is (bytes through
        // ps's output escape), `-` when the task does not have it.
        Field::Model(f) => match f.value(t) {
            Some(fields::Value::Int(v)) => num(v),
            Some(fields::Value::UInt(v)) => num(v),
            Some(fields::Value::Bytes(b)) => {
                let mut room = max;
                let mut bytes = CellBytes::new();
                text::output_escape(&mut bytes, b, &mut room, env.locale);
                Cell {
                    bytes,
                    cells: max - room,
                }
            }
            None => plain("-"),
        },
        // Plain numbers: the value from the model's table.
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
        | Field::Suid
        | Field::Fuid
        | Field::Egid
        | Field::Rgid
        | Field::Sgid
        | Field::Fgid
        | Field::Fds
        | Field::Priority
        | Field::Sched
        | Field::Oom
        | Field::OomAdj
        | Field::Pss
        | Field::Uss
        | Field::AgNice
        | Field::Rss => table_number(field, t),
        // Outside a text listing there is no header countdown: the first row's text.
        Field::Test(which) => test_value(which, -1, max),
        // Its text is the column's header ([`super::order::cell`]).
        Field::Text => plain(""),
        Field::Euser | Field::Ruser | Field::Suser | Field::Fuser => {
            let uid = cred.map_or(0, |c| match field {
                Field::Euser => c.euid,
                Field::Ruser => c.ruid,
                Field::Suser => c.suid,
                _ => c.fsuid,
            });
            do_name(c.names.user(uid), uid, max, env)
        }
        Field::Egroup | Field::Rgroup | Field::Sgroup | Field::Fgroup => {
            let gid = cred.map_or(0, |c| match field {
                Field::Egroup => c.egid,
                Field::Rgroup => c.rgid,
                Field::Sgroup => c.sgid,
                _ => c.fsgid,
            });
            do_name(c.names.group(gid), gid, max, env)
        }
        Field::Supgid => {
            let g = cred.and_then(|c| c.groups.as_ref());
            match g {
                Some(g) if !g.is_empty() => plain(
                    g.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                _ => plain("-"),
            }
        }
        Field::Supgrp => {
            // procps's supgrps_from_supgids: each group's name (its number when it has none
            // or a name of 33 bytes or more), comma-joined; "-" for none.
            let text = match cred.and_then(|c| c.groups.as_ref()) {
                Some(g) if !g.is_empty() => {
                    let mut out = Vec::new();
                    for (i, &gid) in g.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        match c.names.group(gid).filter(|n| n.len() <= 32) {
                            Some(name) => out.extend_from_slice(name),
                            None => out.extend_from_slice(gid.to_string().as_bytes()),
                        }
                    }
                    out
                }
                _ => b"-".to_vec(),
            };
            let mut room = max;
            let mut bytes = CellBytes::new();
            text::output_escape(&mut bytes, &text, &mut room, env.locale);
            Cell {
                bytes,
                cells: max - room,
            }
        }
        Field::SigPending
        | Field::SigThread
        | Field::SigBlocked
        | Field::SigIgnored
        | Field::SigCaught => signal_mask(signal_value(field, t), env.wide_signals),
        Field::Drs => num(drs_trs_kb(t).0),
        Field::Trs => num(drs_trs_kb(t).1),
        Field::MSize => num(stat.map_or(0, |s| s.vsize_bytes)),
        // VmData + VmStk of status, which statm's data field is (in pages).
        Field::Size => num(t.mem.as_ref().map_or(0, |m| m.data_bytes) / 1024),
        Field::Eip => address(table_u64(&fields::KSTKEIP, t).unwrap_or(0)),
        Field::Esp => address(table_u64(&fields::KSTKESP, t).unwrap_or(0)),
        Field::StackP => address(table_u64(&fields::START_STACK, t).unwrap_or(0)),
        Field::Lim => match table_u64(&fields::RSSLIM_BYTES, t).unwrap_or(0) {
            u64::MAX => plain("xx"),
            v => {
                let mut bytes = CellBytes::new();
                push_dec(&mut bytes, v >> 10, 5, b' ');
                ascii(bytes)
            }
        },
        Field::Fname => {
            // procps's pr_fname: the tree art, then the comm in at most 8 cells. It reports
            // the cells it was given less the room left of those 8, more than it printed
            // when the column is wider than 8 (`-o fname:20`): the next column then starts
            // that much further left, as procps prints it.
            let mut bytes = CellBytes::new();
            let fh = forest.len().min(max);
            bytes.extend_from_slice(&forest[..fh]);
            let mut room = (max - fh).min(8);
            text::output_escape(&mut bytes, &comm_text(t, env.locale), &mut room, env.locale);
            Cell {
                bytes,
                cells: max - room,
            }
        }
        Field::Tty4 => plain(c.ttys.number(base.map_or(0, |b| b.tty_nr), t.id.tid)),
        Field::SgiP => match base {
            Some(b) if b.state == TaskState::Running => num(b.processor as u32),
            _ => plain("*"),
        },
        Field::Cuc => utilization(t, true, env),
        Field::Cuu => utilization(t, false, env),
        Field::Numa => {
            let nodes = &c.numa;
            let cpu = base.map_or(0, |b| b.processor);
            num(usize::try_from(cpu)
                .ok()
                .and_then(|i| nodes.get(i).copied())
                .unwrap_or(-1))
        }
        Field::S => plain([base.map_or(b'?', |b| b.state.letter())]),
        Field::Stat => {
            let mut s = CellBytes::new();
            if let Some(b) = base {
                s.push(b.state.letter());
                if b.nice < 0 {
                    s.push(b'<');
                }
                if b.nice > 0 {
                    s.push(b'N');
                }
                let locked = t
                    .locked_bytes
                    .or_else(|| t.mem.as_ref().and_then(|m| m.locked_bytes));
                if locked.unwrap_or(0) > 0 {
                    s.push(b'L');
                }
                if b.sid == t.id.tgid {
                    s.push(b's');
                }
                if b.num_threads > 1 {
                    s.push(b'l');
                }
                if b.pgid == b.tpgid {
                    s.push(b'+');
                }
            }
            Cell {
                cells: s.len(),
                bytes: s,
            }
        }
        // Three bits: one octal digit.
        Field::Flags => num((base.map_or(0, |b| b.flags) >> 6) & 7),
        Field::Nice => match base {
            Some(b) if b.policy != SCHED_OTHER && b.policy != SCHED_BATCH => plain("-"),
            Some(b) => num(b.nice),
            None => num(0),
        },
        Field::Opri => num(60 + base.map_or(0, |b| b.priority)),
        Field::Pri => num(39 - base.map_or(0, |b| b.priority)),
        Field::PriFoo => num(base.map_or(0, |b| b.priority) - 20),
        Field::PriBar => num(base.map_or(0, |b| b.priority) + 1),
        Field::PriBaz => num(base.map_or(0, |b| b.priority) + 100),
        Field::PriApi => num(-1 - base.map_or(0, |b| b.priority)),
        Field::Rtprio => match base {
            Some(b) if b.policy == SCHED_OTHER => plain("-"),
            Some(b) => num(b.rt_priority),
            None => plain("-"),
        },
        Field::Class | Field::Cls => plain(match base.map_or(0, |b| b.policy) {
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
        }),
        Field::Tty => plain(c.ttys.name(base.map_or(0, |b| b.tty_nr), t.id.tid)),
        Field::Wchan => {
            let w = match t.wchan.as_deref() {
                None => "?",
                Some("") => "-",
                Some(w) => w.trim_start_matches('.').trim_start_matches('_'),
            };
            let w = &w.as_bytes()[..w.len().min(max).min(63)];
            plain(w)
        }
        Field::Cgroup | Field::Cgname => {
            // The joined, escaped lines; for cgname what follows the first ":name=" in them
            // (when anything does), through the end. Then ps's output escape.
            let v = text::cgroup_text_escaped(t.cgroup.as_deref(), env.locale);
            let from = match field {
                Field::Cgname => v
                    .windows(6)
                    .position(|w| w == b":name=")
                    .map(|at| at + 6)
                    .filter(|&after| after < v.len())
                    .unwrap_or(0),
                _ => 0,
            };
            let mut room = max;
            let mut bytes = CellBytes::new();
            text::output_escape(&mut bytes, &v[from..], &mut room, env.locale);
            Cell {
                bytes,
                cells: max - room,
            }
        }
        Field::Lxc => colwid(
            t.cgroup
                .as_deref()
                .and_then(tasksnap_model::Cgroup::lxc_name)
                .unwrap_or(b"-"),
        ),
        // `-` where libsystemd would fail; the owner as the C int procps prints.
        Field::Login(what) => match login_field(what).value(t) {
            Some(fields::Value::Bytes(answer)) => colwid(answer),
            Some(fields::Value::Int(uid)) => colwid((uid as u32 as i32).to_string().as_bytes()),
            _ => colwid(b"-"),
        },
        Field::Ns(i) => match table_u64(NS[usize::from(i) & 7], t).unwrap_or(0) {
            0 => plain("-"),
            ino => num(ino),
        },
        // -1 without the file (a thread's own directory has none), as procps shows it.
        Field::AgId => match fields::AUTOGROUP_ID.value(t) {
            Some(fields::Value::Int(id)) => num(id),
            _ => num(-1),
        },

        Field::Luid => match fields::LOGINUID.value(t) {
            Some(fields::Value::Int(id)) if id != -1 => num(id),
            _ => plain("-"),
        },
        Field::Io(which) => num(io_count(t, which)),
        Field::Vsz => num(stat.map_or(0, |s| s.vsize_bytes) / 1024),
        Field::Sz => num(stat.map_or(0, |s| s.vsize_bytes) / 1024 / (env.page_size / 1024).max(1)),
        Field::Pmem => {
            let rss_kb = rss_bytes(t) / 1024;
            let pm = (rss_kb * 1000 / env.mem_total_kb.max(1)).min(999);
            tenths(pm, 2)
        }
        Field::MajFlt => num(stat.map_or(0, |s| {
            if env.include_dead_children {
                s.majflt + s.cmajflt
            } else {
                s.majflt
            }
        })),
        Field::MinFlt => num(stat.map_or(0, |s| {
            if env.include_dead_children {
                s.minflt + s.cminflt
            } else {
                s.minflt
            }
        })),
        Field::Pcpu => {
            let p = env.permille_cpu(t, 1000);
            if p > 999 {
                num(p / 10)
            } else {
                tenths(p, 0)
            }
        }
        Field::C => {
            let mut bytes = CellBytes::new();
            push_dec(&mut bytes, env.permille_cpu(t, 100).min(99), 2, b' ');
            ascii(bytes)
        }
        Field::Cp => {
            let mut bytes = CellBytes::new();
            push_dec(&mut bytes, env.permille_cpu(t, 1000).min(999), 3, b' ');
            ascii(bytes)
        }
        Field::Time => {
            let mut s = env.cpu_ticks(t) / env.hertz.max(1);
            if env.include_dead_children {
                // TIME_ALL ignores children; procps's pr_time uses TIME_ALL.
                s = stat.map_or(0, |st| {
                    (ticks(st.utime_ns, env.hertz) + ticks(st.stime_ns, env.hertz))
                        / env.hertz.max(1)
                });
            }
            clock_time(s)
        }
        Field::Times => num(stat.map_or(0, |st| {
            (ticks(st.utime_ns, env.hertz) + ticks(st.stime_ns, env.hertz)) / env.hertz.max(1)
        })),
        Field::Bsdtime => {
            let u = env.cpu_ticks(t) / env.hertz.max(1);
            let mut bytes = CellBytes::new();
            push_dec(&mut bytes, u / 60, 3, b' ');
            bytes.push(b':');
            push_dec(&mut bytes, u % 60, 2, b'0');
            ascii(bytes)
        }
        Field::Etime => {
            let e = env.elapsed_s(t) as u64;
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
        Field::Etimes => num(env.elapsed_s(t) as u64),
        Field::StartTime => {
            let start = env.start_s(t);
            let text = c.stime.entry(start).or_insert_with(|| {
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
        Field::Start => {
            let start = env.start_s(t);
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
            if start + 86400 > env.now_s {
                plain(&s[11..19])
            } else {
                plain(format!("  {}", String::from_utf8_lossy(&s[4..10])))
            }
        }
        Field::Lstart => plain(ctime(env.start_s(t))),
        Field::Bsdstart => {
            let start = env.start_s(t);
            let s = ctime(start);
            let s = s.as_bytes();
            let ago = (env.now_s - start).max(0);
            let from = if ago > 86400 { 4 } else { 10 };
            plain(&s[from.min(s.len())..(from + 6).min(s.len())])
        }
        Field::Label => match fields::LABEL.value(t) {
            Some(fields::Value::Bytes(label)) if !label.is_empty() => plain(label),
            _ => plain("-"),
        },
        Field::Args | Field::Comm | Field::Exe => {
            let mut room = max;
            let mut bytes = CellBytes::new();
            command_cell(field, t, forest, env, &mut bytes, &mut room);
            // BSD `e`: the environment after the command (pr_args, pr_comm), when there is
            // room for more than its separator.
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
        if let Some(raw) = t.cmdline.as_deref() {
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
        let comm = t.base.as_ref().map_or(&[][..], |b| &b.comm[..]);
        let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(comm.len())];
        let comm = &comm[..comm.len().min(63)];
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
        _ => t
            .exe
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| b"-".to_vec()),
    };
    text::output_escape(bytes, &src, room, env.locale);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Layout, Signals, Stat, TaskId};

    fn env(wide_signals: bool) -> Env {
        Env {
            hertz: 100,
            page_size: 4096,
            mem_total_kb: 1 << 20,
            boot_time_s: 0,
            now_s: 0,
            uptime_ticks: 100_000,
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
            ..env(true)
        };
        assert_eq!(show(Field::Cuu, &long, &e), "0.559");
        assert_eq!(utilization_value(&long, false, &e), 1_677_721_600.0 / 3e9);
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
