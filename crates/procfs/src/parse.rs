//! Parsers for the text of per-task /proc files (`stat` in full and in brief, `status`,
//! `statm`, `schedstat`, `io`, `wchan`, `syscall`, `attr/current`, `children`, `stack`,
//! `oom_score`, `autogroup`, `loginuid`, `smaps_rollup`, the container name in `cgroup`), the
//! names of /proc's task directories and `self` links, `/proc/kallsyms` lines, and the two
//! figures of `/proc/stat` that date tasks (`btime`, `processes`). Machine-wide figures are in
//! [`crate::system`]. Pure functions over bytes: no I/O, so every quirk can be tested with
//! real kernel lines. Every byte is treated as hostile: a parser returns [`ParseError`] or
//! `None` instead of panicking on truncated or corrupt input.

use tasksnap_model::{Io, TaskState};

/// The input did not have the shape the kernel writes; the text says which part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected /proc text: {0}")]
pub struct ParseError(pub &'static str);

/// The fields of `/proc/PID/stat` tasksnap uses, in the kernel's units (clock ticks, pages).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatLine {
    /// Task id (first field).
    pub pid: i32,
    /// comm, raw bytes between the first `(` and the last `)`.
    pub comm: Vec<u8>,
    /// State letter.
    pub state: u8,
    /// Parent pid.
    pub ppid: i32,
    /// Process group.
    pub pgrp: i32,
    /// Session.
    pub session: i32,
    /// Controlling tty, kernel encoding.
    pub tty_nr: i32,
    /// Foreground process group of the tty.
    pub tpgid: i32,
    /// PF_* flags.
    pub flags: u32,
    /// Minor faults.
    pub minflt: u64,
    /// Children's minor faults.
    pub cminflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Children's major faults.
    pub cmajflt: u64,
    /// User time, ticks.
    pub utime_ticks: u64,
    /// System time, ticks.
    pub stime_ticks: u64,
    /// Children's user time, ticks.
    pub cutime_ticks: i64,
    /// Children's system time, ticks.
    pub cstime_ticks: i64,
    /// `prio - MAX_RT_PRIO`.
    pub priority: i32,
    /// Nice.
    pub nice: i32,
    /// Threads in the group.
    pub num_threads: i32,
    /// Start time, ticks since boot.
    pub start_ticks: u64,
    /// Virtual size, bytes.
    pub vsize_bytes: u64,
    /// Resident set, pages.
    pub rss_pages: u64,
    /// Fields 25-30: `rsslim` (bytes), `startcode`, `endcode`, `startstack`, `kstkesp`,
    /// `kstkeip`, as the kernel shows them to this reader (masked without ptrace access:
    /// see [`tasksnap_model::Layout`]). Zero when the line ends before them.
    pub layout: tasksnap_model::Layout,
    /// Last CPU.
    pub processor: i32,
    /// RT priority.
    pub rt_priority: u32,
    /// Policy.
    pub policy: u32,
}

/// Parses an unsigned decimal; rejects empty input and overflow.
fn parse_u64(s: &[u8]) -> Result<u64, ParseError> {
    if s.is_empty() {
        return Err(ParseError("empty number"));
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return Err(ParseError("not a number"));
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(ParseError("number overflows"))?;
    }
    Ok(v)
}

/// Parses a signed decimal.
fn parse_i64(s: &[u8]) -> Result<i64, ParseError> {
    match s.split_first() {
        Some((b'-', rest)) => {
            let v = parse_u64(rest)?;
            // -(2^63) is the only magnitude that does not fit as positive.
            if v > i64::MAX as u64 + 1 {
                return Err(ParseError("number overflows"));
            }
            Ok((v as i128).wrapping_neg() as i64)
        }
        _ => {
            let v = parse_u64(s)?;
            i64::try_from(v).map_err(|_| ParseError("number overflows"))
        }
    }
}

fn parse_i32(s: &[u8]) -> Result<i32, ParseError> {
    i32::try_from(parse_i64(s)?).map_err(|_| ParseError("number out of range"))
}

/// A `/proc/PID/stat` line split once: the pid text, the comm (raw bytes between the first
/// `(` and the *last* `)`) and the fields after it. The one place that finds the comm's end:
/// [`parse_stat`], [`parse_stat_brief`] and [`stat_state_letter`] all go through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatSplit<'a> {
    /// The bytes before the `(` (the task id and a space).
    pub pid: &'a [u8],
    /// comm, raw bytes.
    pub comm: &'a [u8],
    /// Everything after the last `)`.
    pub rest: &'a [u8],
}

impl<'a> StatSplit<'a> {
    /// The fields after the comm (field 3, the state, first), split on spaces and newlines.
    pub fn fields(&self) -> impl Iterator<Item = &'a [u8]> {
        self.rest
            .split(|&c| c == b' ' || c == b'\n')
            .filter(|s| !s.is_empty())
    }
}

/// Splits a stat line around its comm.
///
/// comm may contain anything but NUL, including spaces, `(`, `)` and newlines (`((a) b)`), so
/// the fields after it are found from the *last* `)`, as procps and the kernel's own
/// `fs/proc/array.c` layout require.
pub fn split_stat(buf: &[u8]) -> Result<StatSplit<'_>, ParseError> {
    let open = buf
        .iter()
        .position(|&c| c == b'(')
        .ok_or(ParseError("stat: no '('"))?;
    let close = buf
        .iter()
        .rposition(|&c| c == b')')
        .ok_or(ParseError("stat: no ')'"))?;
    if close < open {
        return Err(ParseError("stat: ')' before '('"));
    }
    Ok(StatSplit {
        pid: &buf[..open],
        comm: &buf[open + 1..close],
        rest: buf.get(close + 1..).unwrap_or_default(),
    })
}

/// Parses `/proc/PID/stat`, every field tasksnap's collectors use, strictly: a field up to
/// `rss` that is missing or not a number is an error. Fields after `rss` are optional (older
/// kernels and truncated reads); their absence leaves them zero.
pub fn parse_stat(buf: &[u8]) -> Result<StatLine, ParseError> {
    let split = split_stat(buf)?;
    let pid = parse_i32(trim(split.pid))?;
    let comm = split.comm.to_vec();
    let mut f = split.fields();
    let mut next = |what: &'static str| f.next().ok_or(ParseError(what));

    let state_field = next("stat: no state")?;
    if state_field.len() != 1 {
        return Err(ParseError("stat: bad state"));
    }
    let mut st = StatLine {
        pid,
        comm,
        state: state_field[0],
        ..StatLine::default()
    };
    st.ppid = parse_i32(next("stat: no ppid")?)?;
    st.pgrp = parse_i32(next("stat: no pgrp")?)?;
    st.session = parse_i32(next("stat: no session")?)?;
    st.tty_nr = parse_i32(next("stat: no tty_nr")?)?;
    st.tpgid = parse_i32(next("stat: no tpgid")?)?;
    st.flags = u32::try_from(parse_u64(next("stat: no flags")?)?)
        .map_err(|_| ParseError("stat: flags out of range"))?;
    st.minflt = parse_u64(next("stat: no minflt")?)?;
    st.cminflt = parse_u64(next("stat: no cminflt")?)?;
    st.majflt = parse_u64(next("stat: no majflt")?)?;
    st.cmajflt = parse_u64(next("stat: no cmajflt")?)?;
    st.utime_ticks = parse_u64(next("stat: no utime")?)?;
    st.stime_ticks = parse_u64(next("stat: no stime")?)?;
    st.cutime_ticks = parse_i64(next("stat: no cutime")?)?;
    st.cstime_ticks = parse_i64(next("stat: no cstime")?)?;
    st.priority = parse_i32(next("stat: no priority")?)?;
    st.nice = parse_i32(next("stat: no nice")?)?;
    st.num_threads = parse_i32(next("stat: no num_threads")?)?;
    let _itrealvalue = next("stat: no itrealvalue")?;
    st.start_ticks = parse_u64(next("stat: no starttime")?)?;
    st.vsize_bytes = parse_u64(next("stat: no vsize")?)?;
    st.rss_pages = parse_i64(next("stat: no rss")?)?.max(0) as u64;
    // rsslim .. kstkeip (6 fields, full-range u64: rsslim is u64::MAX when unlimited), the
    // four obsolete signal fields, wchan, nswap, cnswap, exit_signal; then processor,
    // rt_priority, policy. Missing trailing fields are left 0.
    let mut layout = [0u64; 6];
    for slot in layout.iter_mut() {
        match f.next() {
            Some(v) => *slot = parse_u64(v)?,
            None => break,
        }
    }
    let [rsslim_bytes, start_code, end_code, start_stack, kstkesp, kstkeip] = layout;
    st.layout = tasksnap_model::Layout {
        rsslim_bytes,
        start_code,
        end_code,
        start_stack,
        kstkesp,
        kstkeip,
    };
    let mut tail = f.skip(8);
    if let Some(s) = tail.next() {
        st.processor = parse_i32(s)?;
    }
    if let Some(s) = tail.next() {
        st.rt_priority =
            u32::try_from(parse_u64(s)?).map_err(|_| ParseError("stat: rt_priority"))?;
    }
    if let Some(s) = tail.next() {
        st.policy = u32::try_from(parse_u64(s)?).map_err(|_| ParseError("stat: policy"))?;
    }
    Ok(st)
}

/// Letter to state, for callers that want the model type.
pub fn state_of(st: &StatLine) -> TaskState {
    TaskState::from_letter(st.state)
}

/// The fields of a stat line the scheduler-state sampler needs (tasksnap-collect's
/// thread-state /proc source), parsed leniently: only the state, flags (field 9) and start time (field 22) must
/// be there; the block I/O delay (field 42, `delayacct_blkio_ticks`, 0 unless delay accounting
/// is on) is 0 when missing or unreadable, and other fields are not looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatBrief {
    /// comm, raw bytes.
    pub comm: Vec<u8>,
    /// State letter (field 3: the first byte of the field).
    pub state: u8,
    /// PF_* flags (field 9).
    pub flags: u64,
    /// Start time, clock ticks after boot (field 22).
    pub start_ticks: u64,
    /// Block I/O delay, clock ticks (field 42).
    pub blkio_ticks: u64,
}

/// Parses the fields of [`StatBrief`]; `None` when the line does not have them.
pub fn parse_stat_brief(buf: &[u8]) -> Option<StatBrief> {
    let split = split_stat(buf).ok()?;
    // Field n is the (n - 3)th after the comm.
    let mut f = split.fields();
    let state = *f.next()?.first()?;
    let mut f = f.skip(5); // fields 4..=8
    let flags = parse_u64(f.next()?).ok()?;
    let mut f = f.skip(12); // fields 10..=21
    let start_ticks = parse_u64(f.next()?).ok()?;
    let blkio_ticks = f.nth(19).and_then(|v| parse_u64(v).ok()).unwrap_or(0);
    Some(StatBrief {
        comm: split.comm.to_vec(),
        state,
        flags,
        start_ticks,
        blkio_ticks,
    })
}

/// The state letter of a stat line without parsing the rest (a sampler's hot path): the first
/// non-blank byte after the comm.
pub fn stat_state_letter(buf: &[u8]) -> Option<u8> {
    let split = split_stat(buf).ok()?;
    split
        .rest
        .iter()
        .copied()
        .find(|c| !c.is_ascii_whitespace())
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// The fields of `/proc/PID/status` tasksnap uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatusFields {
    /// Real, effective, saved, filesystem uid.
    pub uids: Option<[u32; 4]>,
    /// Real, effective, saved, filesystem gid.
    pub gids: Option<[u32; 4]>,
    /// Supplementary groups.
    pub groups: Option<Vec<u32>>,
    /// `VmLck`, kB.
    pub vm_lck_kb: Option<u64>,
    /// `VmRSS`, kB (exact: the per-CPU counters summed).
    pub vm_rss_kb: Option<u64>,
    /// `VmSize`, kB.
    pub vm_size_kb: Option<u64>,
    /// `VmSwap`, kB.
    pub vm_swap_kb: Option<u64>,
    /// `voluntary_ctxt_switches`.
    pub voluntary_switches: Option<u64>,
    /// `nonvoluntary_ctxt_switches`.
    pub involuntary_switches: Option<u64>,
    /// `SigPnd`, `ShdPnd`, `SigBlk`, `SigIgn`, `SigCgt` (hexadecimal masks), in that order;
    /// each `None` when its line is missing.
    pub signals: [Option<u64>; 5],
}

/// A signal mask line's value: hexadecimal, as `render_sigset_t()` writes it (16 digits for
/// 64 signals). Of a longer mask (architectures with 128 signals) the first 16 digits are
/// kept, as procps keeps them.
fn parse_sigset(v: &[u8]) -> Result<u64, ParseError> {
    let v = trim(v);
    let v = &v[..v.len().min(16)];
    if v.is_empty() || !v.iter().all(u8::is_ascii_hexdigit) {
        return Err(ParseError("status: bad signal mask"));
    }
    v.iter().try_fold(0u64, |acc, &c| {
        let d = (c as char)
            .to_digit(16)
            .ok_or(ParseError("status: bad signal mask"))?;
        Ok((acc << 4) | u64::from(d))
    })
}

fn parse_id_quad(v: &[u8]) -> Result<[u32; 4], ParseError> {
    let mut out = [0u32; 4];
    let mut it = v
        .split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    for slot in out.iter_mut() {
        let s = it.next().ok_or(ParseError("status: short id line"))?;
        *slot = u32::try_from(parse_u64(s)?).map_err(|_| ParseError("status: id range"))?;
    }
    Ok(out)
}

fn parse_kb(v: &[u8]) -> Result<u64, ParseError> {
    let v = trim(v);
    let v = v.strip_suffix(b" kB").unwrap_or(v);
    parse_u64(trim(v))
}

/// Parses `/proc/PID/status`. Unknown lines are ignored; a line this parser needs that is
/// present but malformed is an error.
pub fn parse_status(buf: &[u8]) -> Result<StatusFields, ParseError> {
    let mut out = StatusFields::default();
    for line in buf.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let (key, value) = (&line[..colon], &line[colon + 1..]);
        match key {
            b"Uid" => out.uids = Some(parse_id_quad(value)?),
            b"Gid" => out.gids = Some(parse_id_quad(value)?),
            b"Groups" => {
                let mut g = Vec::new();
                for s in value
                    .split(|c| c.is_ascii_whitespace())
                    .filter(|s| !s.is_empty())
                {
                    g.push(
                        u32::try_from(parse_u64(s)?)
                            .map_err(|_| ParseError("status: group range"))?,
                    );
                }
                out.groups = Some(g);
            }
            b"VmLck" => out.vm_lck_kb = Some(parse_kb(value)?),
            b"VmRSS" => out.vm_rss_kb = Some(parse_kb(value)?),
            b"VmSize" => out.vm_size_kb = Some(parse_kb(value)?),
            b"VmSwap" => out.vm_swap_kb = Some(parse_kb(value)?),
            b"voluntary_ctxt_switches" => out.voluntary_switches = Some(parse_u64(trim(value))?),
            b"nonvoluntary_ctxt_switches" => {
                out.involuntary_switches = Some(parse_u64(trim(value))?)
            }
            b"SigPnd" => out.signals[0] = Some(parse_sigset(value)?),
            b"ShdPnd" => out.signals[1] = Some(parse_sigset(value)?),
            b"SigBlk" => out.signals[2] = Some(parse_sigset(value)?),
            b"SigIgn" => out.signals[3] = Some(parse_sigset(value)?),
            b"SigCgt" => out.signals[4] = Some(parse_sigset(value)?),
            _ => {}
        }
    }
    if out.uids.is_none() || out.gids.is_none() {
        return Err(ParseError("status: no Uid/Gid line"));
    }
    Ok(out)
}

/// The thread group (`Tgid:`) of a `/proc/PID/status` text: what a thread id belongs to. Read
/// alone, without [`parse_status`]'s requirements (a caller asking only this needs no Uid).
pub fn parse_status_tgid(buf: &[u8]) -> Option<i32> {
    buf.split(|&c| c == b'\n')
        .find_map(|l| l.strip_prefix(b"Tgid:"))
        .and_then(|v| parse_i32(trim(v)).ok())
}

/// The effective capability set (`CapEff:`, hexadecimal) of a `/proc/PID/status` text.
pub fn parse_cap_eff(buf: &[u8]) -> Option<u64> {
    buf.split(|&c| c == b'\n').find_map(|l| {
        let v = trim(l.strip_prefix(b"CapEff:")?);
        u64::from_str_radix(std::str::from_utf8(v).ok()?, 16).ok()
    })
}

/// The security label in `/proc/PID/attr/current` as procps shows it: the printable ASCII
/// bytes up to the first other one (the kernel ends it with a NUL or a newline).
pub fn parse_attr_current(buf: &[u8]) -> &[u8] {
    let n = buf
        .iter()
        .take_while(|&&x| (0x20..0x7f).contains(&x))
        .count();
    &buf[..n]
}

/// `/proc/PID/statm`: size resident shared text lib data dt, in pages.
pub fn parse_statm(buf: &[u8]) -> Result<[u64; 7], ParseError> {
    let mut out = [0u64; 7];
    let mut it = buf
        .split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    for slot in out.iter_mut() {
        *slot = parse_u64(it.next().ok_or(ParseError("statm: short"))?)?;
    }
    Ok(out)
}

/// `/proc/PID/schedstat` (`proc_pid_schedstat()`, fs/proc/base.c): kept by the kernel even
/// without CONFIG_SCHEDSTATS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedStat {
    /// Time on a CPU (`se.sum_exec_runtime`), ns.
    pub run_ns: u64,
    /// Time waiting on a run queue (`sched_info.run_delay`), ns; a wait counts when it ends.
    pub run_delay_ns: u64,
    /// Timeslices run (`sched_info.pcount`).
    pub timeslices: u64,
}

/// Parses `/proc/PID/schedstat`: all three numbers must be there.
pub fn parse_schedstat(buf: &[u8]) -> Result<SchedStat, ParseError> {
    let mut it = buf
        .split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    let mut next = || parse_u64(it.next().ok_or(ParseError("schedstat: short"))?);
    Ok(SchedStat {
        run_ns: next()?,
        run_delay_ns: next()?,
        timeslices: next()?,
    })
}

/// `/proc/PID/io`.
pub fn parse_io(buf: &[u8]) -> Result<Io, ParseError> {
    let mut io = Io::default();
    let mut seen = 0;
    for line in buf.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let v = parse_u64(trim(&line[colon + 1..]))?;
        let slot = match &line[..colon] {
            b"rchar" => &mut io.rchar_bytes,
            b"wchar" => &mut io.wchar_bytes,
            b"syscr" => &mut io.syscr,
            b"syscw" => &mut io.syscw,
            b"read_bytes" => &mut io.read_bytes,
            b"write_bytes" => &mut io.write_bytes,
            b"cancelled_write_bytes" => &mut io.cancelled_write_bytes,
            _ => continue,
        };
        *slot = v;
        seen += 1;
    }
    if seen < 7 {
        return Err(ParseError("io: missing lines"));
    }
    Ok(io)
}

/// `/proc/PID/wchan`: the symbol a blocked task waits in, or empty when the kernel prints "0"
/// (no symbol, not blocked any more, or hidden from the reader: `proc_pid_wchan()`,
/// fs/proc/base.c). Surrounding whitespace is dropped.
pub fn parse_wchan(buf: &[u8]) -> &[u8] {
    let w = trim(buf);
    if w == b"0" {
        &[]
    } else {
        w
    }
}

pub use tasksnap_model::cgroup::{cgroup_v2_path, parse_lines as parse_cgroup, CgroupLine};

/// C's `strtol(s, &end, 10)` as `sscanf("%d")` and `atoi()` use it, then the cast to `int`:
/// whitespace, an optional sign, digits (the value clamped to the range of `long`, then its
/// low 32 bits). Returns the value and the bytes consumed; `None` when there are no digits.
fn c_int(s: &[u8]) -> (Option<i32>, usize) {
    let mut at = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .unwrap_or(s.len());
    let negative = s.get(at) == Some(&b'-');
    if matches!(s.get(at), Some(b'-' | b'+')) {
        at += 1;
    }
    let digits = s[at..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return (None, 0);
    }
    let mut v: i128 = 0;
    for &c in &s[at..at + digits] {
        v = (v * 10 + i128::from(c - b'0')).min(i128::from(i64::MAX) + 1);
    }
    let v = if negative { -v } else { v };
    let long = v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    (Some(long as i32), at + digits)
}

/// `/proc/PID/oom_score` or `oom_score_adj` read as procps does (`sscanf("%d")`): `None`
/// when the text has no number (procps then keeps 0).
pub fn parse_oom(buf: &[u8]) -> Option<i32> {
    c_int(buf).0
}

/// `/proc/PID/loginuid` as procps reads it (`atoi()` of a non-empty read): the audit login
/// uid as a C `int`, so the unset id 4294967295 (`AUDIT_UID_UNSET`) is -1; 0 for text that
/// is not a number. An empty file gives -1, as an unreadable one does.
pub fn parse_loginuid(buf: &[u8]) -> i32 {
    if buf.is_empty() {
        return -1;
    }
    c_int(buf).0.unwrap_or(0)
}

/// `/proc/PID/autogroup` (`/autogroup-94 nice 0`, kernel/sched/autogroup.c
/// `proc_sched_autogroup_show_task()`) as procps reads it with
/// `sscanf("/autogroup-%d nice %d")`: (id, nice), the id -1 and the nice 0 where the text
/// stops matching (an empty file: a task in the root task group).
pub fn parse_autogroup(buf: &[u8]) -> (i32, i32) {
    let Some(rest) = buf.strip_prefix(b"/autogroup-") else {
        return (-1, 0);
    };
    let (Some(id), used) = c_int(rest) else {
        return (-1, 0);
    };
    // A space in a scanf format matches any run of whitespace, none included.
    let ws = |s: &[u8]| {
        s.iter()
            .take_while(|c| c.is_ascii_whitespace() || **c == 0x0b)
            .count()
    };
    let rest = &rest[used..];
    let rest = &rest[ws(rest)..];
    let nice = rest
        .strip_prefix(b"nice")
        .and_then(|r| c_int(r).0)
        .unwrap_or(0);
    (id, nice)
}

/// `/proc/PID/smaps_rollup` as procps reads it (library/readproc.c `smaps2proc()`): each of
/// its keys is looked for, in its table's order, after the value of the last one found, and
/// its value read as `strtoul()` does. Returns `Pss` and USS (`Private_Clean +
/// Private_Dirty`), kB; 0 for a key not found.
pub fn parse_smaps_rollup(buf: &[u8]) -> (u64, u64) {
    // procps's table, in its order (Linux 6.x writes them in this order too, with lines
    // such as Pss_Dirty and KSM that procps does not look for in between).
    const KEYS: [&[u8]; 20] = [
        b"Rss:",
        b"Pss:",
        b"Pss_Anon:",
        b"Pss_File:",
        b"Pss_Shmem:",
        b"Shared_Clean:",
        b"Shared_Dirty:",
        b"Private_Clean:",
        b"Private_Dirty:",
        b"Referenced:",
        b"Anonymous:",
        b"LazyFree:",
        b"AnonHugePages:",
        b"ShmemPmdMapped:",
        b"FilePmdMapped:",
        b"Shared_Hugetlb:",
        b"Private_Hugetlb:",
        b"Swap:",
        b"SwapPss:",
        b"Locked:",
    ];
    // C string functions stop at a NUL.
    let buf = &buf[..buf.iter().position(|&c| c == 0).unwrap_or(buf.len())];
    let mut values = [0u64; 20];
    let mut from = 0;
    for (k, key) in KEYS.iter().enumerate() {
        let Some(at) = buf[from..].windows(key.len()).position(|w| w == *key) else {
            continue;
        };
        let head = from + at + key.len();
        let spaces = buf[head..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace() || **c == 0x0b)
            .count();
        let digits = buf[head + spaces..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let mut v: u64 = 0;
        for &c in &buf[head + spaces..head + spaces + digits] {
            v = v.saturating_mul(10).saturating_add(u64::from(c - b'0'));
        }
        values[k] = v;
        // strtoul's end: past the digits, or its start when there were none.
        from = if digits == 0 {
            head
        } else {
            head + spaces + digits
        };
    }
    (values[1], values[7].saturating_add(values[8]))
}

/// The system call number at the start of `/proc/PID/syscall` (`-1` when the task is in no
/// system call; `running` when it is on a CPU: then `None`).
pub fn parse_syscall_nr(buf: &[u8]) -> Option<i64> {
    let first = buf
        .split(|c| c.is_ascii_whitespace())
        .find(|s| !s.is_empty())?;
    parse_i64(first).ok()
}

/// A text symbol of a `/proc/kallsyms` line (`ffffffff821fcd20 t rwsem_down_write_slowpath`,
/// optionally followed by `\t[module]`): its address and name. `None` for data symbols, lines
/// that do not parse, and zeroed addresses (what kallsyms shows a reader without privileges,
/// `kptr_restrict`).
pub fn parse_kallsyms_text_symbol(line: &str) -> Option<(u64, &str)> {
    let mut it = line.split_whitespace();
    let (addr, kind, name) = (it.next()?, it.next()?, it.next()?);
    let addr = u64::from_str_radix(addr, 16).ok()?;
    (matches!(kind, "t" | "T" | "w" | "W") && addr != 0).then_some((addr, name))
}

/// A /proc directory entry's name as a task id (`/proc/1234`, `/proc/PID/task/1234`); `None`
/// for every other entry (`self`, `sys`, `cpuinfo`...) and for names that are not a positive
/// decimal `i32`.
pub fn parse_task_dir_name(name: &std::ffi::OsStr) -> Option<i32> {
    use std::os::unix::ffi::OsStrExt;
    parse_i32(name.as_bytes()).ok().filter(|&id| id > 0)
}

/// The task id a `/proc/self` or `/proc/thread-self` link points at (`1234`,
/// `1234/task/1235`): its last component.
pub fn parse_self_link(target: &std::path::Path) -> Option<i32> {
    parse_task_dir_name(target.file_name()?)
}

/// `/proc/PID/task/TID/children`: the pids of the thread's children, space separated (Linux
/// 3.5, CONFIG_PROC_CHILDREN). Tokens that are not pids are skipped.
pub fn parse_children(buf: &[u8]) -> Vec<i32> {
    buf.split(|c| c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .filter_map(|s| parse_i32(s).ok())
        .collect()
}

/// `btime` from `/proc/stat`: boot time, seconds since the epoch.
pub fn parse_btime(buf: &[u8]) -> Result<u64, ParseError> {
    for line in buf.split(|&c| c == b'\n') {
        if let Some(v) = line.strip_prefix(b"btime ") {
            return parse_u64(trim(v));
        }
    }
    Err(ParseError("stat: no btime"))
}

/// `processes` from `/proc/stat`: tasks (processes and threads) forked since boot.
pub fn parse_forks(buf: &[u8]) -> Result<u64, ParseError> {
    for line in buf.split(|&c| c == b'\n') {
        if let Some(v) = line.strip_prefix(b"processes ") {
            return parse_u64(trim(v));
        }
    }
    Err(ParseError("stat: no processes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real lines from a 6.18 kernel.
    const BASH: &[u8] = b"4032 (bash) S 4020 4032 4032 34816 4070 4194560 1466 5066 0 3 2 1 9 6 20 0 1 0 2418 8986624 1280 18446744073709551615 94318090862592 94318091771469 140729152453424 0 0 0 65536 3686404 1266761467 1 0 0 17 1 0 0 0 0 0 94318091998448 94318092045980 94318124355584 140729152456591 140729152456596 140729152456596 140729152458734 0\n";
    const KTHREAD: &[u8] = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    const ZOMBIE: &[u8] = b"5000 (defunct me) Z 4999 4999 4020 34816 4999 4227084 58 0 0 0 0 0 0 0 20 0 1 0 3001 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 9\n";

    #[test]
    fn parses_a_user_process() {
        let st = parse_stat(BASH).expect("bash line parses");
        assert_eq!(st.pid, 4032);
        assert_eq!(st.comm, b"bash");
        assert_eq!(st.state, b'S');
        assert_eq!((st.ppid, st.pgrp, st.session), (4020, 4032, 4032));
        assert_eq!(st.tty_nr, 34816);
        assert_eq!(st.tpgid, 4070);
        assert_eq!(st.utime_ticks, 2);
        assert_eq!(st.stime_ticks, 1);
        assert_eq!(st.cutime_ticks, 9);
        assert_eq!(st.priority, 20);
        assert_eq!(st.num_threads, 1);
        assert_eq!(st.start_ticks, 2418);
        assert_eq!(st.vsize_bytes, 8_986_624);
        assert_eq!(st.rss_pages, 1280);
        assert_eq!(st.processor, 1);
        assert_eq!((st.rt_priority, st.policy), (0, 0));
    }

    #[test]
    fn parses_the_layout_fields_as_the_reader_sees_them() {
        let st = parse_stat(BASH).expect("bash line parses");
        let l = st.layout;
        assert_eq!(l.rsslim_bytes, u64::MAX, "RLIM_INFINITY");
        assert_eq!((l.start_code, l.end_code), (94318090862592, 94318091771469));
        assert_eq!(l.start_stack, 140729152453424);
        assert_eq!((l.kstkesp, l.kstkeip), (0, 0));
        // The same bash read by nobody (6.18): no ptrace access, so 1/1/0 (do_task_stat()).
        let nobody = b"1000264 (bash) S 1000263 1000264 1000264 0 -1 4194560 19179 158728 0 16 9 17 162 44 20 0 1 0 977980 5251072 989 18446744073709551615 1 1 0 0 0 0 65536 4 1132560123 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let st = parse_stat(nobody).expect("parses");
        assert_eq!(
            (
                st.layout.start_code,
                st.layout.end_code,
                st.layout.start_stack
            ),
            (1, 1, 0)
        );
        assert_eq!(st.processor, 0);
        // A kernel thread has no mm: all 0 but the limit.
        let k = parse_stat(KTHREAD).expect("kthreadd parses").layout;
        assert_eq!(
            k,
            tasksnap_model::Layout {
                rsslim_bytes: u64::MAX,
                ..Default::default()
            }
        );
        // A line cut inside the layout fields keeps what is there.
        let cut = b"9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 4096 1 8388608 4096\n";
        let st = parse_stat(cut).expect("parses");
        assert_eq!(
            (st.layout.rsslim_bytes, st.layout.start_code),
            (8388608, 4096)
        );
        assert_eq!(st.layout.end_code, 0);
        assert!(
            parse_stat(b"9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 4096 1 zz\n").is_err()
        );
    }

    #[test]
    fn parses_signal_masks() {
        // A real 6.18 bash's status lines.
        let status = b"Name:\tbash\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t1\nSigQ:\t0/96364\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000010000\nSigIgn:\t0000000000000004\nSigCgt:\t0000000043817efb\nCapInh:\t0000000000000000\n";
        let s = parse_status(status).expect("parses");
        assert_eq!(
            s.signals,
            [Some(0), Some(0), Some(0x10000), Some(4), Some(0x4381_7efb)]
        );
        let high = b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSigPnd:\tffffffff00000100\n";
        assert_eq!(
            parse_status(high).expect("parses").signals[0],
            Some(0xffff_ffff_0000_0100)
        );
        // 128 signals (MIPS): the first 16 digits, as procps keeps them.
        let wide =
            b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSigBlk:\t0000000000000001ffffffffffffffff\n";
        assert_eq!(parse_status(wide).expect("parses").signals[2], Some(1));
        let bad = b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSigBlk:\tnot-hex\n";
        assert!(parse_status(bad).is_err());
        let none = b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
        assert_eq!(parse_status(none).expect("parses").signals, [None; 5]);
    }

    #[test]
    fn parses_a_kernel_thread() {
        let st = parse_stat(KTHREAD).expect("kthreadd parses");
        assert_eq!(st.comm, b"kthreadd");
        assert_eq!(st.tpgid, -1);
        assert_ne!(st.flags & tasksnap_model::PF_KTHREAD, 0);
        assert_eq!(st.vsize_bytes, 0);
    }

    #[test]
    fn parses_a_zombie_with_spaces_in_comm() {
        let st = parse_stat(ZOMBIE).expect("zombie parses");
        assert_eq!(st.comm, b"defunct me");
        assert_eq!(st.state, b'Z');
        assert_eq!(st.ppid, 4999);
    }

    #[test]
    fn comm_with_parentheses_splits_on_the_last_paren() {
        let line = b"77 (((a) b)) R 1 77 77 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 100 4096 1 0\n";
        let st = parse_stat(line).expect("parses");
        assert_eq!(st.comm, b"((a) b)");
        assert_eq!(st.state, b'R');
        assert_eq!(st.utime_ticks, 5);
        let odd = b"78 () x (\n)) S 1 78 78 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 0\n";
        let st = parse_stat(odd).expect("parses");
        assert_eq!(st.comm, b") x (\n)");
        assert_eq!(st.state, b'S');
        // A comm that looks like the fields that follow it (moved from the load generator).
        let fake = b"42 (x) Z 1 1 1 () S 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n";
        let st = parse_stat(fake).expect("parses");
        assert_eq!(st.pid, 42);
        assert_eq!(st.comm, b"x) Z 1 1 1 (");
        assert_eq!((st.state, st.ppid, st.pgrp), (b'S', 7, 42));
    }

    #[test]
    fn truncated_or_corrupt_stat_is_an_error_not_a_panic() {
        for cut in 0..BASH.len() {
            let r = parse_stat(&BASH[..cut]);
            // Up to the rss field the line is required; after it anything may be cut.
            if cut < 90 {
                assert!(r.is_err(), "cut at {cut} should fail: {:?}", r);
            }
        }
        assert!(parse_stat(b"12 (x) S 1 2 3 4 5 abc").is_err());
        assert!(parse_stat(b"12 (x) SS 1").is_err());
        assert!(parse_stat(b"12 x) S 1").is_err());
        assert!(parse_stat(b"99999999999 (x) S 1").is_err());
    }

    #[test]
    fn parses_status_ids_and_memory() {
        let status = b"Name:\tsshd\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t812\nUid:\t0\t1000\t0\t1000\nGid:\t0\t100\t0\t100\nFDSize:\t64\nGroups:\t4 24 27 \nVmSize:\t   15364 kB\nVmLck:\t       8 kB\nVmSwap:\t       0 kB\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t3\n";
        let s = parse_status(status).expect("status parses");
        assert_eq!(s.uids, Some([0, 1000, 0, 1000]));
        assert_eq!(s.gids, Some([0, 100, 0, 100]));
        assert_eq!(s.groups, Some(vec![4, 24, 27]));
        assert_eq!(s.vm_lck_kb, Some(8));
        assert_eq!(s.vm_size_kb, Some(15364));
        assert_eq!(s.vm_swap_kb, Some(0));
        assert_eq!(s.voluntary_switches, Some(42));
        assert_eq!(s.involuntary_switches, Some(3));
        // Kernel threads have no Vm lines and an empty Groups line.
        let k = b"Name:\tkthreadd\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n";
        let s = parse_status(k).expect("kthread status parses");
        assert_eq!(s.groups, Some(vec![]));
        assert_eq!(s.vm_lck_kb, None);
        assert!(parse_status(b"Name:\tx\nUid:\t0\t0\n").is_err());
        assert_eq!(
            parse_cap_eff(b"CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n"),
            Some(0x1ff_ffff_ffff)
        );
        assert_eq!(parse_cap_eff(b"CapEff:\tzz\n"), None);
        assert_eq!(parse_status_tgid(status), Some(812));
        assert_eq!(parse_status_tgid(b"Name:\tkthreadd\n"), None);
        assert_eq!(
            parse_status_tgid(b"Name:\tx\nTgid:\t812\nPid:\t813\n"),
            Some(812)
        );
        assert_eq!(
            parse_attr_current(b"unconfined_u:unconfined_r:unconfined_t:s0\0"),
            b"unconfined_u:unconfined_r:unconfined_t:s0"
        );
        assert_eq!(parse_attr_current(b"\n"), b"");
    }

    #[test]
    fn parses_statm_schedstat_io_btime() {
        assert_eq!(
            parse_statm(b"2194 1280 1024 227 0 258 0\n"),
            Ok([2194, 1280, 1024, 227, 0, 258, 0])
        );
        assert!(parse_statm(b"2194 1280\n").is_err());
        assert_eq!(
            parse_schedstat(b"5134790 211005 22\n"),
            Ok(SchedStat {
                run_ns: 5_134_790,
                run_delay_ns: 211_005,
                timeslices: 22
            })
        );
        let io = parse_io(b"rchar: 2012\nwchar: 10\nsyscr: 6\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n").expect("io");
        assert_eq!(io.rchar_bytes, 2012);
        assert_eq!(io.read_bytes, 4096);
        assert!(parse_io(b"rchar: 1\n").is_err());
        assert_eq!(
            parse_btime(b"cpu  1 2 3\nbtime 1763784000\nprocesses 9\n"),
            Ok(1_763_784_000)
        );
        // A real /proc/stat tail (6.18).
        let stat =
            b"ctxt 1845092\nbtime 1763784000\nprocesses 104931\nprocs_running 2\nprocs_blocked 0\n";
        assert_eq!(parse_forks(stat), Ok(104_931));
        assert!(parse_forks(b"processes x\n").is_err());
        assert!(parse_forks(b"cpu 1\n").is_err());
    }

    // A real 6.18 stat line of a thread whose comm is `a) (b` (52 fields), and one with a
    // newline in its comm (moved from the thread-state /proc source).
    const ODD: &[u8] = b"4242 (a) (b) D 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 \
        123456 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 7 0 0 0 0 0 0 0 \
        0 0 0\n";

    #[test]
    fn brief_stat_with_hostile_comm() {
        let st = parse_stat_brief(ODD).expect("parse");
        assert_eq!(st.comm, b"a) (b");
        assert_eq!(st.state, b'D');
        assert_eq!(st.flags, 4194560);
        assert_eq!(st.start_ticks, 123456);
        assert_eq!(st.blkio_ticks, 7);
        assert_eq!(stat_state_letter(ODD), Some(b'D'));
        let nl = b"7 (x\ny) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let st = parse_stat_brief(nl).expect("parse");
        assert_eq!(st.comm, b"x\ny");
        assert_eq!(st.start_ticks, 99);
        assert_eq!(st.blkio_ticks, 0);
        assert_eq!(parse_stat_brief(b"garbage"), None);
        assert_eq!(parse_stat_brief(b"1 (x) S 1"), None);
        assert_eq!(parse_schedstat(b""), Err(ParseError("schedstat: short")));
        assert_eq!(parse_wchan(b"0"), b"");
        assert_eq!(parse_wchan(b"do_wait"), b"do_wait");
        assert_eq!(parse_wchan(b" hrtimer_nanosleep\n"), b"hrtimer_nanosleep");
        assert_eq!(
            parse_syscall_nr(b"230 0x1 0x0 0x7ffd 0x0 0x0 0x0 0x7ffd 0x7f\n"),
            Some(230)
        );
        assert_eq!(parse_syscall_nr(b"-1 0x7ffd 0x7f\n"), Some(-1));
        assert_eq!(parse_syscall_nr(b"running\n"), None);
        use std::ffi::OsStr;
        assert_eq!(parse_task_dir_name(OsStr::new("1234")), Some(1234));
        for not in ["self", "0", "-1", "+5", "", "99999999999", "12a"] {
            assert_eq!(parse_task_dir_name(OsStr::new(not)), None, "{not:?}");
        }
        assert_eq!(
            parse_self_link(std::path::Path::new("1234/task/1235")),
            Some(1235)
        );
        assert_eq!(parse_self_link(std::path::Path::new("4321")), Some(4321));
        assert_eq!(parse_children(b"12 13 14 "), vec![12, 13, 14]);
        assert_eq!(parse_children(b""), Vec::<i32>::new());
        assert_eq!(
            parse_kallsyms_text_symbol("ffffffffc0a01000 t ext4_file_read_iter\t[ext4]"),
            Some((0xffffffffc0a01000, "ext4_file_read_iter"))
        );
        assert_eq!(
            parse_kallsyms_text_symbol("ffffffff82a00000 D jiffies"),
            None
        );
        assert_eq!(
            parse_kallsyms_text_symbol("0000000000000000 T hidden"),
            None
        );
    }
    #[test]
    fn oom_loginuid_and_autogroup_read_as_procps_scans_them() {
        // Real 6.18 files: a shell's oom_score and oom_score_adj, an unset login uid.
        assert_eq!(parse_oom(b"666\n"), Some(666));
        assert_eq!(parse_oom(b"-1000\n"), Some(-1000));
        assert_eq!(parse_oom(b""), None);
        assert_eq!(parse_oom(b"x"), None);
        assert_eq!(parse_loginuid(b"4294967295"), -1);
        assert_eq!(parse_loginuid(b"1000"), 1000);
        assert_eq!(parse_loginuid(b"4294967294"), -2, "atoi's cast to int");
        assert_eq!(
            parse_loginuid(b"99999999999999999999"),
            -1,
            "strtol clamps to LONG_MAX"
        );
        assert_eq!(parse_loginuid(b""), -1);
        assert_eq!(parse_loginuid(b"abc"), 0);
        assert_eq!(parse_autogroup(b"/autogroup-94 nice 0\n"), (94, 0));
        assert_eq!(parse_autogroup(b"/autogroup-7 nice -5\n"), (7, -5));
        assert_eq!(parse_autogroup(b"/autogroup-7\n"), (7, 0));
        assert_eq!(parse_autogroup(b"/autogroup-7 nic 3"), (7, 0));
        // A task in the root task group reads an empty file (kernel threads, and here a
        // process started before autogroups were enabled).
        assert_eq!(parse_autogroup(b""), (-1, 0));
        assert_eq!(parse_autogroup(b" /autogroup-7 nice 1"), (-1, 0));
    }

    #[test]
    fn smaps_rollup_gives_pss_and_uss() {
        // A real 6.18 rollup (with Pss_Dirty and KSM, which procps does not look for).
        let rollup =
            b"561ea0da2000-7ffd526c8000 ---p 00000000 00:00 0                          [rollup]
Rss:                1624 kB
Pss:                 241 kB
Pss_Dirty:           112 kB
Pss_Anon:            112 kB
Pss_File:            129 kB
Pss_Shmem:             0 kB
Shared_Clean:       1472 kB
Shared_Dirty:          0 kB
Private_Clean:        40 kB
Private_Dirty:       112 kB
Referenced:         1624 kB
Anonymous:           112 kB
KSM:                   0 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
";
        assert_eq!(parse_smaps_rollup(rollup), (241, 152));
        assert_eq!(parse_smaps_rollup(b""), (0, 0));
        // Keys are looked for after the last one found: a Pss before Rss is not seen.
        assert_eq!(
            parse_smaps_rollup(b"Pss: 5 kB\nRss: 9 kB\nPrivate_Dirty: 3\n"),
            (0, 3)
        );
        for cut in 0..rollup.len() {
            let _ = parse_smaps_rollup(&rollup[..cut]);
        }
    }
}
