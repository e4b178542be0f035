//! The format specifiers `ps -o` knows: name, header, default width, alignment and when the
//! column prints. The table mirrors procps-ng 4.0's `format_array` (ps/output.c) for the
//! specifiers tasksnap supports, so headers and widths match byte for byte.

/// How a column is aligned and may overflow (procps `CF_*` justification codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Just {
    /// Left-aligned; may overflow into the next column.
    Left,
    /// Right-aligned in its width.
    Right,
    /// User/group names: left-aligned text (right-aligned when numeric, BSD `n`).
    User,
    /// Wait channel: left-aligned text, truncated to the column.
    Wchan,
    /// Command lines: take whatever room is left on the line.
    Unlimited,
    /// Signal masks: right-aligned in 9 cells, or in 16 when the line has room for every
    /// signal column to take 7 more (procps `CF_SIGNAL`, whatever the column's width).
    Signal,
    /// AIX literal text (`-o "%p: %a"`): printed as it is, with no gap to its neighbours.
    Text,
}

/// Which rows of a thread listing print the value (procps `CF_PRINT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Process-wide value: printed on process rows only (blank with `ps m`/`-m` thread rows).
    ProcessOnly,
    /// Per-thread value.
    ThreadOnly,
    /// Printed on every row.
    Every,
    /// Printed as needed.
    AsNeeded,
}

/// What a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Field {
    /// A field of the model's table that no procps specifier names (`-o utime_ns`):
    /// [`find`] makes its specifier.
    Model(&'static tasksnap_model::fields::Field),
    Pcpu,
    Pmem,
    Addr,
    Args,
    Bsdstart,
    Bsdtime,
    C,
    Cgroup,
    Class,
    Cls,
    Comm,
    Cp,
    Egid,
    Egroup,
    Etime,
    Etimes,
    Euid,
    Euser,
    Exe,
    Flags,
    Fgid,
    Fgroup,
    Fuid,
    Fuser,
    Label,
    Lstart,
    Tid,
    MajFlt,
    MinFlt,
    Nice,
    Nlwp,
    Opri,
    Pgid,
    Pid,
    Ppid,
    Pri,
    PriApi,
    PriBar,
    PriBaz,
    PriFoo,
    Priority,
    Psr,
    Rgid,
    Rgroup,
    Rss,
    Rtprio,
    Ruid,
    Ruser,
    S,
    Sched,
    Sess,
    Sgid,
    Sgroup,
    Start,
    StartTime,
    Stat,
    Suid,
    Suser,
    Supgid,
    Sz,
    Time,
    Times,
    Tpgid,
    Tty,
    Vsz,
    Wchan,
    /// `SigPnd`/`ShdPnd` (`sig`, `pending`): the group's on a process's row.
    SigPending,
    /// `SigPnd` (`tsig`): the thread's own.
    SigThread,
    SigBlocked,
    SigIgnored,
    SigCaught,
    /// Data (`drs`, `dsiz`): kB of the address space outside the text segment.
    Drs,
    /// Text (`trs`, `tsiz`): kB of the text segment.
    Trs,
    /// `m_size`: the address space in bytes.
    MSize,
    /// `size`: data + stack (`VmData` + `VmStk`), kB.
    Size,
    Eip,
    Esp,
    StackP,
    Lim,
    Supgrp,
    Fname,
    Tty4,
    SgiP,
    Cuc,
    Cuu,
    Numa,
    /// procps's `pr_nop`: a placeholder that always prints `-`.
    Nop,
    /// Open file descriptors (procps newer than 4.0.2).
    Fds,
    /// procps's layout test columns (`_left`, `_left2`, `_right`, `_right2`, `_unlimited`,
    /// `_unlimited2`, in that order): fixed texts chosen by the row's place in the listing.
    Test(u8),
    /// AIX literal text: the column's header, on every line.
    Text,
    /// The namespace `tasksnap_model::NS_NAMES[i]` (`cgroupns` ... `utsns`).
    Ns(u8),
    Oom,
    OomAdj,
    AgId,
    AgNice,
    Luid,
    Pss,
    Uss,
    Io(IoCount),
    Cgname,
    Lxc,
    /// The sd-login columns (`unit`, `uunit`, `slice`, `lsession`, `ouid`, `machine`, `seat`).
    Login(What),
}

/// Which /proc/PID/io counter an I/O column shows (procps's mapping, library/pids.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoCount {
    /// `rbytes`: `read_bytes`.
    ReadBytes,
    /// `rchars`: `rchar`.
    ReadChars,
    /// `rops`: `syscr`.
    ReadOps,
    /// `wbytes`: `write_bytes`.
    WriteBytes,
    /// `wcbytes`: `cancelled_write_bytes`.
    WriteCancelled,
    /// `wchars`: `wchar`.
    WriteChars,
    /// `wops`: `syscw`.
    WriteOps,
}

/// The spec of an AIX literal text column (its text is the column's header).
pub static TEXT: Spec = s("", "", Field::Text, 0, Show::Every, Just::Text);

/// One row of the specifier table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Name given to `-o`.
    pub name: &'static str,
    /// Default header.
    pub head: &'static str,
    /// What it shows.
    pub field: Field,
    /// Default width.
    pub width: usize,
    /// Alignment.
    pub just: Just,
    /// Which rows print it.
    pub show: Show,
    /// The width follows the digits of `kernel.pid_max`.
    pub pidmax: bool,
}

const fn s(
    name: &'static str,
    head: &'static str,
    field: Field,
    width: usize,
    show: Show,
    just: Just,
) -> Spec {
    Spec {
        name,
        head,
        field,
        width,
        just,
        show,
        pidmax: false,
    }
}

const fn p(name: &'static str, head: &'static str, field: Field, show: Show) -> Spec {
    Spec {
        name,
        head,
        field,
        width: 5,
        just: Just::Right,
        show,
        pidmax: true,
    }
}

use tasksnap_model::login::What;
use Field as F;
use IoCount as I;
use Just::*;
use Show::*;

/// The specifiers, sorted by name (binary-searched).
pub static SPECS: &[Spec] = &[
    s("%cpu", "%CPU", F::Pcpu, 4, Every, Right),
    s("%mem", "%MEM", F::Pmem, 4, ProcessOnly, Right),
    s("_left", "LLLLLLLL", F::Test(0), 8, Every, Left),
    s("_left2", "L2L2L2L2", F::Test(1), 8, Every, Left),
    s("_right", "RRRRRRRRRRR", F::Test(2), 11, Every, Right),
    s("_right2", "R2R2R2R2R2R", F::Test(3), 11, Every, Right),
    s("_unlimited", "U", F::Test(4), 16, Every, Unlimited),
    s("_unlimited2", "U2", F::Test(5), 16, Every, Unlimited),
    s("addr", "ADDR", F::Addr, 4, AsNeeded, Right),
    s("addr_1", "ADDR", F::Addr, 1, AsNeeded, Left),
    s("ag_id", "AGID", F::AgId, 5, AsNeeded, Right),
    s("ag_nice", "AGNI", F::AgNice, 4, AsNeeded, Right),
    s("alarm", "ALARM", F::Nop, 5, AsNeeded, Right),
    s("args", "COMMAND", F::Args, 27, ProcessOnly, Unlimited),
    s("atime", "TIME", F::Time, 8, Every, Right),
    s("blocked", "BLOCKED", F::SigBlocked, 9, ThreadOnly, Signal),
    s("bsdstart", "START", F::Bsdstart, 6, Every, Right),
    s("bsdtime", "TIME", F::Bsdtime, 6, Every, Right),
    s("c", "C", F::C, 2, Every, Right),
    s("caught", "CAUGHT", F::SigCaught, 9, ThreadOnly, Signal),
    s("cgname", "CGNAME", F::Cgname, 27, ProcessOnly, Unlimited),
    s("cgroup", "CGROUP", F::Cgroup, 27, ProcessOnly, Unlimited),
    s("cgroupns", "CGROUPNS", F::Ns(0), 10, Every, Right),
    s("class", "CLS", F::Class, 3, ThreadOnly, Left),
    s("cls", "CLS", F::Cls, 3, ThreadOnly, Right),
    s("cmd", "CMD", F::Args, 27, ProcessOnly, Unlimited),
    s("comm", "COMMAND", F::Comm, 15, ProcessOnly, Unlimited),
    s("command", "COMMAND", F::Args, 27, ProcessOnly, Unlimited),
    s("context", "CONTEXT", F::Label, 31, Every, Left),
    s("cp", "CP", F::Cp, 3, Every, Right),
    s("cpu", "CPU", F::Nop, 3, AsNeeded, Right),
    s("cpuid", "CPUID", F::Psr, 5, ThreadOnly, Right),
    s("cputime", "TIME", F::Time, 8, Every, Right),
    s("cputimes", "TIME", F::Times, 8, Every, Right),
    s("cuc", "%CUC", F::Cuc, 7, AsNeeded, Right),
    s("cursig", "CURSIG", F::Nop, 6, AsNeeded, Right),
    s("cuu", "%CUU", F::Cuu, 6, AsNeeded, Right),
    s("drs", "DRS", F::Drs, 5, ProcessOnly, Right),
    s("dsiz", "DSIZ", F::Drs, 4, ProcessOnly, Right),
    s("egid", "EGID", F::Egid, 5, Every, Right),
    s("egroup", "EGROUP", F::Egroup, 8, Every, User),
    s("eip", "EIP", F::Eip, 16, ThreadOnly, Right),
    s("environ", "ENVIRONMENT", F::Nop, 11, ProcessOnly, Unlimited),
    s("esp", "ESP", F::Esp, 16, ThreadOnly, Right),
    s("etime", "ELAPSED", F::Etime, 11, Every, Right),
    s("etimes", "ELAPSED", F::Etimes, 7, Every, Right),
    s("euid", "EUID", F::Euid, 5, Every, Right),
    s("euser", "EUSER", F::Euser, 8, Every, User),
    s("exe", "EXE", F::Exe, 27, ProcessOnly, Unlimited),
    s("f", "F", F::Flags, 1, Every, Right),
    s("fds", "FDS", F::Fds, 3, ProcessOnly, Right),
    s("fgid", "FGID", F::Fgid, 5, Every, Right),
    s("fgroup", "FGROUP", F::Fgroup, 8, Every, User),
    s("flag", "F", F::Flags, 1, Every, Right),
    s("flags", "F", F::Flags, 1, Every, Right),
    s("fname", "COMMAND", F::Fname, 8, ProcessOnly, Left),
    s("fsgid", "FSGID", F::Fgid, 5, Every, Right),
    s("fsgroup", "FSGROUP", F::Fgroup, 8, Every, User),
    s("fsuid", "FSUID", F::Fuid, 5, Every, Right),
    s("fsuser", "FSUSER", F::Fuser, 8, Every, User),
    s("fuid", "FUID", F::Fuid, 5, Every, Right),
    s("fuser", "FUSER", F::Fuser, 8, Every, User),
    s("gid", "GID", F::Egid, 5, Every, Right),
    s("group", "GROUP", F::Egroup, 8, Every, User),
    s("ignored", "IGNORED", F::SigIgnored, 9, ThreadOnly, Signal),
    s("intpri", "PRI", F::Opri, 3, ThreadOnly, Right),
    s("ipcns", "IPCNS", F::Ns(1), 10, Every, Right),
    s("jobc", "JOBC", F::Nop, 4, AsNeeded, Right),
    s("label", "LABEL", F::Label, 31, Every, Left),
    s("lastcpu", "C", F::Psr, 3, ThreadOnly, Right),
    s("lim", "LIM", F::Lim, 5, AsNeeded, Right),
    s("longtname", "TTY", F::Tty, 8, ProcessOnly, Left),
    s(
        "lsession",
        "SESSION",
        F::Login(What::Session),
        11,
        Every,
        Left,
    ),
    s("lstart", "STARTED", F::Lstart, 24, Every, Right),
    s("luid", "LUID", F::Luid, 5, Every, Right),
    p("lwp", "LWP", F::Tid, ThreadOnly),
    s("lxc", "LXC", F::Lxc, 8, Every, Left),
    s("m_drs", "DRS", F::Drs, 5, ProcessOnly, Right),
    s("m_dt", "DT", F::Nop, 4, ProcessOnly, Right),
    s("m_share", "SHRD", F::Nop, 5, ProcessOnly, Right),
    s("m_size", "SIZE", F::MSize, 5, ProcessOnly, Right),
    s("m_swap", "SWAP", F::Nop, 5, ProcessOnly, Right),
    s("m_trs", "TRS", F::Trs, 5, ProcessOnly, Right),
    s(
        "machine",
        "MACHINE",
        F::Login(What::Machine),
        31,
        Every,
        Left,
    ),
    s("maj_flt", "MAJFL", F::MajFlt, 6, AsNeeded, Right),
    s("majflt", "MAJFLT", F::MajFlt, 6, AsNeeded, Right),
    s("min_flt", "MINFL", F::MinFlt, 6, AsNeeded, Right),
    s("minflt", "MINFLT", F::MinFlt, 6, AsNeeded, Right),
    s("mntns", "MNTNS", F::Ns(2), 10, Every, Right),
    s("netns", "NETNS", F::Ns(3), 10, Every, Right),
    s("ni", "NI", F::Nice, 3, ThreadOnly, Right),
    s("nice", "NI", F::Nice, 3, ThreadOnly, Right),
    s("nlwp", "NLWP", F::Nlwp, 4, ProcessOnly, Right),
    s("numa", "NUMA", F::Numa, 4, AsNeeded, Right),
    s("oom", "OOM", F::Oom, 4, ThreadOnly, Right),
    s("oomadj", "OOMADJ", F::OomAdj, 5, ThreadOnly, Right),
    s("opri", "PRI", F::Opri, 3, ThreadOnly, Right),
    s("ouid", "OWNER", F::Login(What::OwnerUid), 5, Every, Left),
    s("pagein", "PAGEIN", F::MajFlt, 6, AsNeeded, Right),
    s("pcpu", "%CPU", F::Pcpu, 4, Every, Right),
    s("pending", "PENDING", F::SigPending, 9, Every, Signal),
    p("pgid", "PGID", F::Pgid, ProcessOnly),
    p("pgrp", "PGRP", F::Pgid, ProcessOnly),
    p("pid", "PID", F::Pid, ProcessOnly),
    s("pidns", "PIDNS", F::Ns(4), 10, Every, Right),
    s("pmem", "%MEM", F::Pmem, 4, ProcessOnly, Right),
    s("policy", "POL", F::Class, 3, ThreadOnly, Left),
    p("ppid", "PPID", F::Ppid, ProcessOnly),
    s("pri", "PRI", F::Pri, 3, ThreadOnly, Right),
    s("pri_api", "API", F::PriApi, 3, ThreadOnly, Right),
    s("pri_bar", "BAR", F::PriBar, 3, ThreadOnly, Right),
    s("pri_baz", "BAZ", F::PriBaz, 3, ThreadOnly, Right),
    s("pri_foo", "FOO", F::PriFoo, 3, ThreadOnly, Right),
    s("priority", "PRI", F::Priority, 3, ThreadOnly, Right),
    s("psr", "PSR", F::Psr, 3, ThreadOnly, Right),
    s("pss", "PSS", F::Pss, 5, ProcessOnly, Right),
    s(
        "rbytes",
        "RBYTES",
        F::Io(I::ReadBytes),
        5,
        ThreadOnly,
        Right,
    ),
    s(
        "rchars",
        "RCHARS",
        F::Io(I::ReadChars),
        5,
        ThreadOnly,
        Right,
    ),
    s("re", "RE", F::Nop, 3, AsNeeded, Right),
    s("rgid", "RGID", F::Rgid, 5, Every, Right),
    s("rgroup", "RGROUP", F::Rgroup, 8, Every, User),
    s("rops", "ROPS", F::Io(I::ReadOps), 5, ThreadOnly, Right),
    s("rss", "RSS", F::Rss, 5, ProcessOnly, Right),
    s("rssize", "RSS", F::Rss, 5, ProcessOnly, Right),
    s("rsz", "RSZ", F::Rss, 5, ProcessOnly, Right),
    s("rtprio", "RTPRIO", F::Rtprio, 6, ThreadOnly, Right),
    s("ruid", "RUID", F::Ruid, 5, Every, Right),
    s("ruser", "RUSER", F::Ruser, 8, Every, User),
    s("s", "S", F::S, 1, ThreadOnly, Left),
    s("sched", "SCH", F::Sched, 3, ThreadOnly, Right),
    s("seat", "SEAT", F::Login(What::Seat), 11, Every, Left),
    p("sess", "SESS", F::Sess, ProcessOnly),
    p("session", "SESS", F::Sess, ProcessOnly),
    s("sgi_p", "P", F::SgiP, 1, ThreadOnly, Right),
    s("sgi_rss", "RSS", F::Rss, 4, ProcessOnly, Left),
    s("sgid", "SGID", F::Sgid, 5, Every, Right),
    s("sgroup", "SGROUP", F::Sgroup, 8, Every, User),
    p("sid", "SID", F::Sess, ProcessOnly),
    s("sig", "PENDING", F::SigPending, 9, Every, Signal),
    s("sig_block", "BLOCKED", F::SigBlocked, 9, ThreadOnly, Signal),
    s("sig_catch", "CATCHED", F::SigCaught, 9, ThreadOnly, Signal),
    s(
        "sig_ignore",
        "IGNORED",
        F::SigIgnored,
        9,
        ThreadOnly,
        Signal,
    ),
    s("sig_pend", "SIGNAL", F::SigPending, 9, Every, Signal),
    s("sigcatch", "CAUGHT", F::SigCaught, 9, ThreadOnly, Signal),
    s("sigignore", "IGNORED", F::SigIgnored, 9, ThreadOnly, Signal),
    s("sigmask", "BLOCKED", F::SigBlocked, 9, ThreadOnly, Signal),
    s("size", "SIZE", F::Size, 5, ProcessOnly, Right),
    s("sl", "SL", F::Nop, 3, AsNeeded, Right),
    s("slice", "SLICE", F::Login(What::Slice), 31, Every, Left),
    p("spid", "SPID", F::Tid, ThreadOnly),
    s("stackp", "STACKP", F::StackP, 16, ProcessOnly, Right),
    s("start", "STARTED", F::Start, 8, Every, Right),
    s("start_stack", "STACKP", F::StackP, 16, ProcessOnly, Right),
    s("start_time", "START", F::StartTime, 5, Every, Right),
    s("stat", "STAT", F::Stat, 4, ThreadOnly, Left),
    s("state", "S", F::S, 1, ThreadOnly, Left),
    s("stime", "STIME", F::StartTime, 5, Every, Right),
    s("suid", "SUID", F::Suid, 5, Every, Right),
    s("supgid", "SUPGID", F::Supgid, 20, ProcessOnly, Unlimited),
    s("supgrp", "SUPGRP", F::Supgrp, 40, ProcessOnly, Unlimited),
    s("suser", "SUSER", F::Suser, 8, Every, User),
    s("svgid", "SVGID", F::Sgid, 5, Every, Right),
    s("svgroup", "SVGROUP", F::Sgroup, 8, Every, User),
    s("svuid", "SVUID", F::Suid, 5, Every, Right),
    s("svuser", "SVUSER", F::Suser, 8, Every, User),
    s("sz", "SZ", F::Sz, 5, ProcessOnly, Right),
    p("tgid", "TGID", F::Pid, ProcessOnly),
    s("thcount", "THCNT", F::Nlwp, 5, ProcessOnly, Right),
    p("tid", "TID", F::Tid, ThreadOnly),
    s("time", "TIME", F::Time, 8, Every, Right),
    s("timens", "TIMENS", F::Ns(5), 10, Every, Right),
    s("timeout", "TMOUT", F::Nop, 5, AsNeeded, Right),
    s("times", "TIME", F::Times, 8, Every, Right),
    s("tname", "TTY", F::Tty, 8, ProcessOnly, Left),
    p("tpgid", "TPGID", F::Tpgid, ProcessOnly),
    s("trs", "TRS", F::Trs, 4, ProcessOnly, Right),
    s("trss", "TRSS", F::Trs, 4, ProcessOnly, Right),
    s("tsig", "PENDING", F::SigThread, 9, Every, Signal),
    s("tsiz", "TSIZ", F::Trs, 4, ProcessOnly, Right),
    s("tt", "TT", F::Tty, 8, ProcessOnly, Left),
    s("tty", "TT", F::Tty, 8, ProcessOnly, Left),
    s("tty4", "TTY", F::Tty4, 4, ProcessOnly, Left),
    s("tty8", "TTY", F::Tty, 8, ProcessOnly, Left),
    s("ucmd", "CMD", F::Comm, 15, ProcessOnly, Unlimited),
    s("ucomm", "COMMAND", F::Comm, 15, ProcessOnly, Unlimited),
    s("uid", "UID", F::Euid, 5, Every, Right),
    s("uid_hack", "UID", F::Euser, 8, Every, User),
    s("uname", "USER", F::Euser, 8, Every, User),
    s("unit", "UNIT", F::Login(What::Unit), 31, Every, Left),
    s("user", "USER", F::Euser, 8, Every, User),
    s("userns", "USERNS", F::Ns(6), 10, Every, Right),
    s("uss", "USS", F::Uss, 5, ProcessOnly, Right),
    s("util", "C", F::C, 2, Every, Right),
    s("utsns", "UTSNS", F::Ns(7), 10, Every, Right),
    s("uunit", "UUNIT", F::Login(What::UserUnit), 31, Every, Left),
    s("vm_lib", "LIB", F::Nop, 5, ProcessOnly, Right),
    s("vsize", "VSZ", F::Vsz, 6, ProcessOnly, Right),
    s("vsz", "VSZ", F::Vsz, 6, ProcessOnly, Right),
    s(
        "wbytes",
        "WBYTES",
        F::Io(I::WriteBytes),
        5,
        ThreadOnly,
        Right,
    ),
    s(
        "wcbytes",
        "WCBYTES",
        F::Io(I::WriteCancelled),
        5,
        ThreadOnly,
        Right,
    ),
    s("wchan", "WCHAN", F::Wchan, 6, ThreadOnly, Wchan),
    s(
        "wchars",
        "WCHARS",
        F::Io(I::WriteChars),
        5,
        ThreadOnly,
        Right,
    ),
    s("wname", "WCHAN", F::Wchan, 6, ThreadOnly, Wchan),
    s("wops", "WOPS", F::Io(I::WriteOps), 5, ThreadOnly, Right),
    s("zone", "ZONE", F::Label, 31, Every, Left),
];

/// Looks a specifier up by its exact name: procps's, else a field of the model's table
/// ([`model_specs`]).
pub fn find(name: &str) -> Option<&'static Spec> {
    SPECS
        .binary_search_by(|s| s.name.cmp(name))
        .ok()
        .map(|i| &SPECS[i])
        .or_else(|| model_specs().iter().find(|s| s.name == name))
}

/// A specifier for every field of the model's table (`tasksnap_model::fields`) that procps
/// has no specifier of that name for, so a field added there is a ps column too (a
/// tasksnap extension: procps refuses these names). Its header is its name in capitals,
/// numbers right-aligned, bytes left-aligned; the value is the table's, 0 or `-` when the
/// task does not have it. A procps name always keeps procps's meaning.
pub fn model_specs() -> &'static [Spec] {
    use tasksnap_model::fields::{Kind, FIELDS};
    static HEADS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    static MODEL: std::sync::OnceLock<Vec<Spec>> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        let heads = HEADS.get_or_init(|| FIELDS.iter().map(|f| f.name.to_uppercase()).collect());
        FIELDS
            .iter()
            .zip(heads)
            .filter(|(f, _)| SPECS.binary_search_by(|s| s.name.cmp(f.name)).is_err())
            .map(|(f, head)| {
                let (width, just) = match f.kind {
                    Kind::Int => (head.len().max(10), Just::Right),
                    Kind::Bytes => (head.len().max(20), Just::Left),
                };
                s(f.name, head, Field::Model(f), width, Show::Every, just)
            })
            .collect()
    })
}

/// procps's named format lists (`macro_array` in ps/output.c), usable in `-o` as well.
pub fn macro_list(name: &str) -> Option<&'static str> {
    Some(match name {
        "DFMT" => "pid,tname,state,cputime,cmd",
        "DefBSD" => "pid,tname,stat,bsdtime,args",
        "DefSysV" => "pid,tname,time,cmd",
        "END_BSD" => "state,tname,cputime,comm",
        "END_SYS5" => "state,tname,time,command",
        "F5FMT" => "uname,pid,ppid,c,start,tname,time,cmd",
        "FB_" => "pid,tt,stat,time,command",
        "FB_j" => "user,pid,ppid,pgid,sess,jobc,stat,tt,time,command",
        "FB_l" => "uid,pid,ppid,cpu,pri,nice,vsz,rss,wchan,stat,tt,time,command",
        "FB_u" => "user,pid,pcpu,pmem,vsz,rss,tt,stat,start,time,command",
        "FB_v" => "pid,stat,time,sl,re,pagein,vsz,rss,lim,tsiz,pcpu,pmem,command",
        "FD_" => "pid,tty,time,comm",
        "FD_f" => "user,pid,ppid,start_time,tty,time,comm",
        "FD_fj" => "user,pid,ppid,start_time,tty,time,pgid,sid,comm",
        "FD_j" => "pid,tty,time,pgid,sid,comm",
        "FD_l" => "flags,state,uid,pid,ppid,priority,nice,vsz,wchan,tty,time,comm",
        "FD_lj" => "flags,state,uid,pid,ppid,priority,nice,vsz,wchan,tty,time,pgid,sid,comm",
        "FL5FMT" => "f,state,uid,pid,ppid,pcpu,pri,nice,rss,wchan,start,time,command",
        "FLASK_context" => "pid,context,command",
        "HP_" => "pid,tty,time,comm",
        "HP_f" => "user,pid,ppid,cpu,stime,tty,time,args",
        "HP_fl" => "flags,state,user,pid,ppid,cpu,intpri,nice,addr,sz,wchan,stime,tty,time,args",
        "HP_l" => "flags,state,uid,pid,ppid,cpu,intpri,nice,addr,sz,wchan,tty,time,comm",
        "J390" => "pid,sid,pgrp,tname,atime,args",
        "JFMT" => "user,pid,ppid,pgid,sess,jobc,state,tname,cputime,command",
        "L5FMT" => "f,state,uid,pid,ppid,c,pri,nice,addr,sz,wchan,tt,time,ucmd",
        "LFMT" => "uid,pid,ppid,cp,pri,nice,vsz,rss,wchan,state,tname,cputime,command",
        "OL_X" => "pid,start_stack,esp,eip,timeout,alarm,stat,tname,bsdtime,args",
        "OL_j" => "ppid,pid,pgid,sid,tname,tpgid,stat,uid,bsdtime,args",
        "OL_l" => "flags,uid,pid,ppid,priority,nice,vsz,rss,wchan,stat,tname,bsdtime,args",
        "OL_m" => "pid,tname,majflt,minflt,m_trs,m_drs,m_size,m_swap,rss,m_share,vm_lib,m_dt,args",
        "OL_s" => "uid,pid,pending,sig_block,sig_ignore,caught,stat,tname,bsdtime,args",
        "OL_u" => "user,pid,pcpu,pmem,vsz,rss,tname,stat,start_time,bsdtime,args",
        "OL_v" => "pid,tname,stat,bsdtime,maj_flt,m_trs,m_drs,rss,pmem,args",
        "RD_" => "pid,tname,state,bsdtime,comm",
        "RD_f" => "uid,pid,ppid,start_time,tname,bsdtime,args",
        "RD_fj" => "uid,pid,ppid,start_time,tname,bsdtime,pgid,sid,args",
        "RD_j" => "pid,tname,state,bsdtime,pgid,sid,comm",
        "RD_l" => "flags,state,uid,pid,ppid,priority,nice,wchan,tname,bsdtime,comm",
        "RD_lj" => "flags,state,uid,pid,ppid,priority,nice,wchan,tname,bsdtime,pgid,sid,comm",
        "RUSAGE" => "minflt,majflt,nswap,inblock,oublock,msgsnd,msgrcv,nsigs,nvcsw,nivcsw",
        "SCHED" => "user,pcpu,pri,usrpri,nice,psxpri,psr,policy,pset",
        "SFMT" => "uid,pid,cursig,sig,sigmask,sigignore,sigcatch,stat,tname,command",
        "Std_f" => "uid_hack,pid,ppid,c,stime,tname,time,cmd",
        "Std_fl" => "f,s,uid_hack,pid,ppid,c,opri,ni,addr,sz,wchan,stime,tname,time,cmd",
        "Std_l" => "f,s,uid,pid,ppid,c,opri,ni,addr,sz,wchan,tname,time,ucmd",
        "THREAD" => "user,pcpu,pri,scnt,wchan,usertime,systime",
        "UFMT" => "uname,pid,pcpu,pmem,vsz,rss,tt,state,start,time,command",
        "VFMT" => "pid,tt,state,time,sl,pagein,vsz,rss,pcpu,pmem,command",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        for w in SPECS.windows(2) {
            assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn finds_specs() {
        assert_eq!(find("pid").map(|s| s.head), Some("PID"));
        assert_eq!(find("%cpu").map(|s| s.width), Some(4));
        assert!(find("nonsense").is_none());
    }
}
