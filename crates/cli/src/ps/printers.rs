//! ps's own formatters (the [`Source::Own`](super::fields::Source::Own) columns): procps-ng
//! 4.0's `pr_*` functions of ps/output.c where the value is procps's arithmetic over the task
//! rather than a field of the model's table as it is (times, STAT letters, percentages,
//! command text with the tree art, signal masks with the leader rule, the policy-dependent
//! nice and rtprio, cgroup text, supplementary groups), each with what it reads; and the
//! sort keys ps derives ([`Sort::Derived`](super::fields::Sort::Derived)).

use tasksnap_model::fields::{self, Group};
use tasksnap_model::{Task, SCHED_BATCH, SCHED_OTHER};

use super::cell::{self, ascii, colwid, num, plain, push_dec, tenths, Cell, CellBytes};
use super::fields::{
    comm_bytes, comm_text, command_text, escaped, signal_mask, table_bytes, table_i64, table_u64,
    utilization_value, Caches, Ctx, Data, Env, Formatter, Key, Read,
};
use super::settings::Forest;
use super::text;

/// A formatter that reads what `reads` names and prints text.
const fn text_of(print: super::fields::Printer, reads: &'static [Read]) -> Formatter {
    Formatter {
        print,
        reads,
        data: Data::Text,
    }
}

/// The CPU time fields (own and reaped children's).
const CPU_TIMES: &[Read] = &[
    Read::Field(&fields::UTIME_NS),
    Read::Field(&fields::STIME_NS),
    Read::Field(&fields::CUTIME_NS),
    Read::Field(&fields::CSTIME_NS),
];

/// `%cpu`, `pcpu`.
pub const PCPU: Formatter = text_of(pcpu, CPU_TIMES);
/// `c`, `util`: whole percents, at most 99.
pub const C: Formatter = text_of(
    |x| share(x.env.permille_cpu(x.t, 100).min(99), 2),
    CPU_TIMES,
);
/// `cp`: tenths of a percent, at most 999.
pub const CP: Formatter = text_of(
    |x| share(x.env.permille_cpu(x.t, 1000).min(999), 3),
    CPU_TIMES,
);
/// `cuu`: procps's UTILIZATION.
pub const CUU: Formatter = text_of(|x| utilization(x.t, false, x.env), CPU_TIMES);
/// `cuc`: procps's UTILIZATION_C (children's time too).
pub const CUC: Formatter = text_of(|x| utilization(x.t, true, x.env), CPU_TIMES);
/// `time`, `cputime`, `atime`.
pub const TIME: Formatter = text_of(time, CPU_TIMES);
/// `times`, `cputimes`: seconds of CPU time.
pub const TIMES: Formatter = text_of(
    |x| num(x.env.own_cpu_ticks(x.t) / x.env.hertz.max(1)),
    CPU_TIMES,
);
/// `bsdtime`.
pub const BSDTIME: Formatter = text_of(bsdtime, CPU_TIMES);
/// `etime`.
pub const ETIME: Formatter = text_of(etime, &[]);
/// `etimes`: seconds since the task started.
pub const ETIMES: Formatter = text_of(|x| num(x.env.elapsed_s(x.t) as u64), &[]);
/// `stime`, `start_time`.
pub const START_TIME: Formatter = text_of(start_time, &[]);
/// `start`.
pub const START: Formatter = text_of(start, &[]);
/// `lstart`: ctime(3) of the start.
pub const LSTART: Formatter = text_of(|x| plain(ctime(x.env.start_s(x.t))), &[]);
/// `bsdstart`.
pub const BSDSTART: Formatter = text_of(bsdstart, &[]);
/// `args`, `cmd`, `command`: the command line (the comm with BSD `c`).
pub const ARGS: Formatter = Formatter {
    print: |x| command(x, Command::Args),
    reads: &[Read::Field(&fields::CMDLINE), Read::EnvironWithE],
    data: Data::Bytes(|t, env| match env.bsd_c_option {
        true => own_comm(t),
        false => own_command(t),
    }),
};
/// `comm`, `ucmd`, `ucomm`: the comm (the command line with `-f`).
pub const COMM: Formatter = Formatter {
    print: |x| command(x, Command::Comm),
    reads: &[
        Read::Field(&fields::COMM),
        Read::CmdlineWithF,
        Read::EnvironWithE,
    ],
    data: Data::Bytes(|t, env| match env.unix_f_option {
        true => own_command(t),
        false => own_comm(t),
    }),
};
/// `exe`: the executable's path.
pub const EXE: Formatter = Formatter {
    print: |x| command(x, Command::Exe),
    reads: &[Read::Field(&fields::EXE)],
    data: Data::Bytes(|t, _| t.exe.clone().unwrap_or_else(|| b"-".to_vec())),
};
/// `fname`: the comm in 8 cells.
pub const FNAME: Formatter = text_of(fname, &[Read::Field(&fields::COMM)]);
/// `sgi_p`.
pub const SGI_P: Formatter = text_of(
    sgi_p,
    &[Read::Field(&fields::STATE), Read::Field(&fields::PROCESSOR)],
);
/// `stat`.
pub const STAT: Formatter = text_of(
    stat_letters,
    &[
        Read::Field(&fields::STATE),
        Read::Field(&fields::NICE),
        Read::Field(&fields::LOCKED_BYTES),
        Read::Field(&fields::SID),
        Read::Field(&fields::NUM_THREADS),
        Read::Field(&fields::PGID),
        Read::Field(&fields::TPGID),
    ],
);
/// `f`, `flag`, `flags`.
pub const FLAGS: Formatter = text_of(
    |x| num((table_i64(&fields::FLAGS, x.t).unwrap_or(0) >> 6) & 7),
    &[Read::Field(&fields::FLAGS)],
);
/// `ni`, `nice`.
pub const NICE: Formatter = text_of(
    nice,
    &[Read::Field(&fields::POLICY), Read::Field(&fields::NICE)],
);
/// `rtprio`.
pub const RTPRIO: Formatter = text_of(
    rtprio,
    &[
        Read::Field(&fields::POLICY),
        Read::Field(&fields::RT_PRIORITY),
    ],
);
/// `class`, `cls`, `policy`.
pub const CLASS: Formatter = text_of(class, &[Read::Field(&fields::POLICY)]);
/// `cgroup`.
pub const CGROUP: Formatter = text_of(|x| cgroup(x, false), &[Read::Group(Group::Cgroup)]);
/// `cgname`.
pub const CGNAME: Formatter = text_of(|x| cgroup(x, true), &[Read::Group(Group::Cgroup)]);
/// `lxc`.
pub const LXC: Formatter = text_of(lxc, &[Read::Group(Group::Cgroup)]);
/// `majflt`, `maj_flt`, `pagein`.
pub const MAJFLT: Formatter = text_of(
    |x| faults(x, &fields::MAJFLT, &fields::CMAJFLT),
    &[Read::Field(&fields::MAJFLT), Read::Field(&fields::CMAJFLT)],
);
/// `minflt`, `min_flt`.
pub const MINFLT: Formatter = text_of(
    |x| faults(x, &fields::MINFLT, &fields::CMINFLT),
    &[Read::Field(&fields::MINFLT), Read::Field(&fields::CMINFLT)],
);
/// `supgid`.
pub const SUPGID: Formatter = text_of(supgid, &[Read::Group(Group::CredFull)]);
/// `supgrp`.
pub const SUPGRP: Formatter = text_of(supgrp, &[Read::Group(Group::CredFull)]);
/// What `drs` and `trs` read.
const LAYOUT: &[Read] = &[
    Read::Field(&fields::STAT_VSIZE_BYTES),
    Read::Field(&fields::START_CODE),
    Read::Field(&fields::END_CODE),
];
/// `drs`, `dsiz`, `m_drs`: kB outside the text segment.
pub const DRS: Formatter = text_of(|x| num(drs_trs_kb(x.t).0), LAYOUT);
/// `trs`, `tsiz`, `m_trs`, `trss`: kB of the text segment.
pub const TRS: Formatter = text_of(|x| num(drs_trs_kb(x.t).1), LAYOUT);
/// `sig`, `pending`, `sig_pend`: the group's pending signals on a process's row, the
/// thread's own on another thread's ([`pending_signals`]).
pub const PENDING: Formatter = Formatter {
    print: |x| signal_mask(pending_signals(x.t), x.env.wide_signals),
    reads: &[
        Read::Field(&fields::SIG_PENDING),
        Read::Field(&fields::SIG_SHARED_PENDING),
    ],
    data: Data::Hex,
};
/// An AIX literal text column: its text is its header ([`super::order::cell`]).
pub const TEXT: Formatter = text_of(|_| plain(""), &[]);
/// procps's layout test columns (`_left`, `_left2`, `_right`, `_right2`, `_unlimited`,
/// `_unlimited2`, in that order): [`test_value`].
pub const TESTS: [Formatter; 6] = [
    text_of(|x| test_value(0, x.lines_to_next_header, x.max), &[]),
    text_of(|x| test_value(1, x.lines_to_next_header, x.max), &[]),
    text_of(|x| test_value(2, x.lines_to_next_header, x.max), &[]),
    text_of(|x| test_value(3, x.lines_to_next_header, x.max), &[]),
    text_of(|x| test_value(4, x.lines_to_next_header, x.max), &[]),
    text_of(|x| test_value(5, x.lines_to_next_header, x.max), &[]),
];

// ps's own sort keys.

/// procps 4.0.2 sorts %CPU, C, CP and util by PIDS_UTILIZATION (their format entries' sort
/// item), not by the value printed: tasks that all print 0.0 still sort by their exact
/// share.
pub fn utilization_key(t: &Task, env: &Env, _: &mut Caches) -> Key {
    Key::Num(utilization_value(t, false, env))
}

/// `cuc`: by PIDS_UTILIZATION_C.
pub fn utilization_children_key(t: &Task, env: &Env, _: &mut Caches) -> Key {
    Key::Num(utilization_value(t, true, env))
}

/// `s`, `stat`, `sgi_p`: by the state letter.
pub fn state_key(t: &Task, _: &Env, _: &mut Caches) -> Key {
    Key::Num(t.base.as_ref().map_or(0, |b| b.state.letter()) as f64)
}

/// `sig`, `pending`: the mask shown, as the 16 hex digits /proc gives (procps compares the
/// strings it read; none when unreadable).
pub fn pending_key(t: &Task, _: &Env, _: &mut Caches) -> Key {
    Key::Text(
        pending_signals(t)
            .map(|v| format!("{v:016x}").into_bytes())
            .unwrap_or_default(),
    )
}

/// `numa`: by the node number shown.
pub fn numa_key(t: &Task, _: &Env, c: &mut Caches) -> Key {
    let cpu = table_i64(&fields::PROCESSOR, t).unwrap_or(0);
    Key::Num(f64::from(c.numa_node(cpu)))
}

/// `fname`: by the escaped comm.
pub fn comm_key(t: &Task, env: &Env, _: &mut Caches) -> Key {
    Key::Text(comm_text(t, env.locale))
}

/// `tty4`: by the terminal's name, as `tty` sorts.
pub fn tty_name_key(t: &Task, _: &Env, c: &mut Caches) -> Key {
    let tty_nr = table_i64(&fields::TTY_NR, t).unwrap_or(0);
    Key::Text(c.ttys.name(tty_nr as u32, t.id.tid).into_bytes())
}

// The printers.

/// The mask `sig`/`pending` shows for `t`, as procps reads it: the group's (`ShdPnd`) on a
/// row read as a process (a leader, in ps's thread listings too) and the thread's own
/// (`SigPnd`) on another thread's row (library/readproc.c `status2proc`).
pub fn pending_signals(t: &Task) -> Option<u64> {
    if t.id.is_leader() {
        table_u64(&fields::SIG_SHARED_PENDING, t)
    } else {
        table_u64(&fields::SIG_PENDING, t)
    }
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
    let art = tree_art(x);
    let fh = art.len().min(x.max);
    bytes.extend_from_slice(&art[..fh]);
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
fn cgroup(x: &mut Ctx<'_>, name: bool) -> Cell {
    let v = text::cgroup_text_escaped(x.t.cgroup.as_deref(), x.env.locale);
    let from = match name {
        true => v
            .windows(6)
            .position(|w| w == b":name=")
            .map(|at| at + 6)
            .filter(|&after| after < v.len())
            .unwrap_or(0),
        false => 0,
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

/// `majflt`, `minflt`: the task's faults (`own`), with BSD `S` its reaped children's too.
fn faults(x: &mut Ctx<'_>, own: &fields::Field, children: &fields::Field) -> Cell {
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

/// Which text a command column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    /// The command line (the comm with BSD `c`).
    Args,
    /// The comm (the command line with `-f`).
    Comm,
    /// The executable's path.
    Exe,
}

/// `args`, `comm`, `exe`: the command text after the tree art; with BSD `e` the
/// environment after the command (pr_args, pr_comm), when there is room for more than its
/// separator.
fn command(x: &mut Ctx<'_>, which: Command) -> Cell {
    // procps draws the tree before a command line or a name, never before a path.
    let art = match which {
        Command::Exe => Vec::new(),
        _ => tree_art(x),
    };
    let (t, env, max) = (x.t, x.env, x.max);
    let mut room = max;
    let mut bytes = CellBytes::new();
    command_cell(which, t, &art, env, &mut bytes, &mut room);
    if env.bsd_e_option && which != Command::Exe && room > 1 {
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

/// A command column's text (command line, comm or exe, after any forest art) into `bytes`,
/// taking cells from `room`.
fn command_cell(
    which: Command,
    t: &Task,
    forest: &[u8],
    env: &Env,
    bytes: &mut CellBytes,
    room: &mut usize,
) {
    let fh = forest.len().min(*room);
    bytes.extend_from_slice(&forest[..fh]);
    *room -= fh;
    let command = matches!(which, Command::Args if !env.bsd_c_option)
        || matches!(which, Command::Comm if env.unix_f_option);
    if command {
        if let Some(raw) = table_bytes(&fields::CMDLINE, t) {
            if text::push_plain_cmdline(bytes, raw, room) {
                return;
            }
        }
    }
    let name = matches!(which, Command::Args if env.bsd_c_option)
        || matches!(which, Command::Comm if !env.unix_f_option);
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
    let src = match which {
        Command::Args if env.bsd_c_option => comm_text(t, env.locale),
        Command::Args => command_text(t, env.locale),
        Command::Comm if env.unix_f_option => command_text(t, env.locale),
        Command::Comm => comm_text(t, env.locale),
        // No link to read (a kernel thread, a zombie: the model's empty path) or none
        // readable: procps's readlink_exe gives `-` for every failure.
        Command::Exe => table_bytes(&fields::EXE, t)
            .filter(|e| !e.is_empty())
            .unwrap_or(b"-")
            .to_vec(),
    };
    text::output_escape(bytes, &src, room, env.locale);
}

/// The comm as data: the task's own bytes up to the first NUL.
fn own_comm(t: &Task) -> Vec<u8> {
    let c = t.base.as_ref().map_or(&[][..], |b| &b.comm[..]);
    c[..c.iter().position(|&b| b == 0).unwrap_or(c.len())].to_vec()
}

/// The command line as data: NUL separators as spaces, the last argument's terminator gone
/// (an empty argument before it stays); `[comm]` when empty, as ps shows it.
fn own_command(t: &Task) -> Vec<u8> {
    match t.cmdline.as_deref() {
        Some(raw) if !raw.is_empty() => {
            let end = raw.len() - usize::from(raw.last() == Some(&0));
            raw[..end]
                .iter()
                .map(|&b| if b == 0 { b' ' } else { b })
                .collect()
        }
        _ => text::bracketed(
            own_comm(t),
            t.base
                .as_ref()
                .is_some_and(|b| b.state == tasksnap_model::TaskState::Zombie),
        ),
    }
}

/// The tree art of the row in `x` within the column's cells (none outside a forest).
fn tree_art(x: &Ctx<'_>) -> Vec<u8> {
    match x.tree {
        Some((prefix, style)) => forest_art(prefix, style, x.max),
        None => Vec::new(),
    }
}

/// procps `forest_helper`: the tree art for a prefix, within `rightward` cells.
fn forest_art(prefix: &[u8], style: Forest, mut rightward: usize) -> Vec<u8> {
    let rightward_max = rightward.min(cell::OUTBUF_SIZE - 1);
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

/// procps's layout test columns (`pr_t_left` and friends in ps/output.c): a fixed text picked
/// by procps's header countdown `lines_to_next_header` (an int, taken modulo as unsigned), so
/// that a listing shows every text. The unlimited ones are cut at `max` cells.
fn test_value(which: u8, lines_to_next_header: i64, max: usize) -> Cell {
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
