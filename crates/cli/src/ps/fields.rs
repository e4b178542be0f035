//! Formatting one field of one task as procps-ng 4.0 prints it (the `pr_*` functions of
//! ps/output.c), from the tasksnap model instead of procps's proc_t.

use tasksnap_model::{Task, TaskState, SCHED_BATCH, SCHED_OTHER};

use super::format::{Field, IoCount};
use super::layout::{Cell, CellBytes};
use super::names::{Names, Ttys};
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
    /// BSD `S`: times and faults include reaped children.
    pub include_dead_children: bool,
    /// BSD `n`: print user and group ids as numbers.
    pub user_is_number: bool,
}

/// Per-run caches fields use.
#[derive(Debug)]
pub struct Caches {
    /// User and group names.
    pub names: Names,
    /// Terminal names.
    pub ttys: Ttys,
    /// The procfs root, for the rare per-task files read only at print time (label).
    pub proc_root: std::path::PathBuf,
    /// STIME text by start second: tens of thousands of tasks share a few start seconds, and
    /// localtime+strftime per row would be a tenth of the user time.
    pub stime: std::collections::HashMap<i64, String>,
    /// The sd-login answers (`unit`, `slice`, `seat`, ...), made on first use.
    pub login: Option<tasksnap_collect::login::Login>,
}

impl Caches {
    /// Empty caches for a procfs at `proc_root` (terminal names from /dev).
    pub fn new(proc_root: &std::path::Path) -> Caches {
        Caches {
            names: Names::default(),
            ttys: Ttys::new(proc_root, std::path::Path::new("/dev")),
            proc_root: proc_root.to_path_buf(),
            stime: Default::default(),
            login: None,
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
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    let tt: libc::time_t = t as libc::time_t;
    let mut buf = [0u8; 128];
    // SAFETY: `tt` and `tm` are valid for the calls; strftime writes at most buf.len() bytes
    // into `buf` and returns how many it wrote (0 on failure).
    let n = unsafe {
        if libc::localtime_r(&tt, tm.as_mut_ptr()).is_null() {
            return String::new();
        }
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            fmt.as_ptr(),
            tm.as_ptr(),
        )
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The local time parts procps compares (year and day of year).
fn year_yday(t: i64) -> (i32, i32) {
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    let tt: libc::time_t = t as libc::time_t;
    // SAFETY: valid pointers; on failure the zeroed tm is used.
    let tm = unsafe {
        libc::localtime_r(&tt, tm.as_mut_ptr());
        tm.assume_init()
    };
    (tm.tm_year, tm.tm_yday)
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
    match (&t.mem, &t.stat) {
        (Some(m), _) => m.rss_bytes,
        (None, Some(s)) => s.rss_bytes,
        (None, None) => 0,
    }
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

/// Formats `field` of `t` in at most `max` cells where the field honours a limit.
/// `forest` is the tree-art prefix for command columns.
pub fn value(field: Field, t: &Task, max: usize, forest: &[u8], env: &Env, c: &mut Caches) -> Cell {
    let base = t.base.as_ref();
    let cred = t.cred.as_ref();
    let stat = t.stat.as_ref();
    let extra = t.extra.as_deref();
    match field {
        Field::Addr => plain("-"),
        Field::Pid => num(t.id.tgid),
        Field::Tid => num(t.id.tid),
        Field::Ppid => num(base.map_or(0, |b| b.ppid)),
        Field::Pgid => num(base.map_or(0, |b| b.pgid)),
        Field::Sess => num(base.map_or(0, |b| b.sid)),
        Field::Tpgid => num(base.map_or(0, |b| b.tpgid)),
        Field::Nlwp => num(base.map_or(0, |b| b.num_threads)),
        Field::Psr => num(base.map_or(0, |b| b.processor)),
        Field::Euid => num(cred.map_or(0, |c| c.euid)),
        Field::Ruid => num(cred.map_or(0, |c| c.ruid)),
        Field::Suid => num(cred.map_or(0, |c| c.suid)),
        Field::Fuid => num(cred.map_or(0, |c| c.fsuid)),
        Field::Egid => num(cred.map_or(0, |c| c.egid)),
        Field::Rgid => num(cred.map_or(0, |c| c.rgid)),
        Field::Sgid => num(cred.map_or(0, |c| c.sgid)),
        Field::Fgid => num(cred.map_or(0, |c| c.fsgid)),
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
        Field::Priority => num(base.map_or(0, |b| b.priority)),
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
        Field::Sched => num(base.map_or(0, |b| b.policy)),
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
        Field::Lxc => {
            let cg = t.cgroup.as_deref();
            colwid(
                cg.and_then(tasksnap_procfs::parse::lxc_name)
                    .unwrap_or(b"-"),
            )
        }
        Field::Login(what) => {
            let login = c
                .login
                .get_or_insert_with(|| tasksnap_collect::login::Login::system(&c.proc_root));
            colwid(&login.text(t.cgroup.as_deref(), what))
        }
        Field::Ns(i) => match extra
            .and_then(|x| x.ns)
            .map_or(0, |n| n[usize::from(i) & 7])
        {
            0 => plain("-"),
            ino => num(ino),
        },
        Field::Oom => num(extra.and_then(|x| x.oom_score).unwrap_or(0)),
        Field::OomAdj => num(extra.and_then(|x| x.oom_score_adj).unwrap_or(0)),
        Field::AgId => num(extra.and_then(|x| x.autogroup).map_or(-1, |a| a.0)),
        Field::AgNice => num(extra.and_then(|x| x.autogroup).map_or(0, |a| a.1)),
        Field::Luid => match extra.and_then(|x| x.loginuid).unwrap_or(-1) {
            -1 => plain("-"),
            id => num(id),
        },
        Field::Pss => num(extra.and_then(|x| x.smaps_kb).map_or(0, |s| s.0)),
        Field::Uss => num(extra.and_then(|x| x.smaps_kb).map_or(0, |s| s.1)),
        Field::Io(which) => num(io_count(t, which)),
        Field::Vsz => num(stat.map_or(0, |s| s.vsize_bytes) / 1024),
        Field::Sz => num(stat.map_or(0, |s| s.vsize_bytes) / 1024 / (env.page_size / 1024).max(1)),
        Field::Rss => num(rss_bytes(t) / 1024),
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
        Field::Label => match tasksnap_collect::system::security_label(&c.proc_root, t.id.tgid) {
            Some(label) if !label.is_empty() => plain(&label),
            _ => plain("-"),
        },
        Field::Args | Field::Comm | Field::Exe => {
            let mut room = max;
            let mut bytes = CellBytes::new();
            let fh = forest.len().min(room);
            bytes.extend_from_slice(&forest[..fh]);
            room -= fh;
            let command = matches!(field, Field::Args if !env.bsd_c_option)
                || matches!(field, Field::Comm if env.unix_f_option);
            if command {
                if let Some(raw) = t.cmdline.as_deref() {
                    if text::push_plain_cmdline(&mut bytes, raw, &mut room) {
                        return Cell {
                            bytes,
                            cells: max - room,
                        };
                    }
                }
            }
            let name = matches!(field, Field::Args if env.bsd_c_option)
                || matches!(field, Field::Comm if !env.unix_f_option);
            if name {
                // A name of printable ASCII (nearly all) goes over as it is: both escapes
                // leave it alone.
                let comm = t.base.as_ref().map_or(&[][..], |b| &b.comm[..]);
                let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(comm.len())];
                let comm = &comm[..comm.len().min(63)];
                if comm.iter().all(|c| (0x20..0x7f).contains(c)) {
                    let n = comm.len().min(room);
                    bytes.extend_from_slice(&comm[..n]);
                    return Cell {
                        bytes,
                        cells: max - (room - n),
                    };
                }
            }
            let src = match field {
                Field::Args if env.bsd_c_option => comm_text(t, env.locale),
                Field::Args => command_text(t, env.locale),
                Field::Comm if env.unix_f_option => command_text(t, env.locale),
                Field::Comm => comm_text(t, env.locale),
                _ => t.exe.clone().unwrap_or_else(|| b"-".to_vec()),
            };
            text::output_escape(&mut bytes, &src, &mut room, env.locale);
            Cell {
                bytes,
                cells: max - room,
            }
        }
    }
}
