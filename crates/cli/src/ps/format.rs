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

use tasksnap_collect::login::What;
use Field as F;
use IoCount as I;
use Just::*;
use Show::*;

/// The specifiers, sorted by name (binary-searched).
pub static SPECS: &[Spec] = &[
    s("%cpu", "%CPU", F::Pcpu, 4, Every, Right),
    s("%mem", "%MEM", F::Pmem, 4, ProcessOnly, Right),
    s("addr", "ADDR", F::Addr, 4, AsNeeded, Right),
    s("addr_1", "ADDR", F::Addr, 1, AsNeeded, Left),
    s("ag_id", "AGID", F::AgId, 5, AsNeeded, Right),
    s("ag_nice", "AGNI", F::AgNice, 4, AsNeeded, Right),
    s("args", "COMMAND", F::Args, 27, ProcessOnly, Unlimited),
    s("atime", "TIME", F::Time, 8, Every, Right),
    s("bsdstart", "START", F::Bsdstart, 6, Every, Right),
    s("bsdtime", "TIME", F::Bsdtime, 6, Every, Right),
    s("c", "C", F::C, 2, Every, Right),
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
    s("cpuid", "CPUID", F::Psr, 5, ThreadOnly, Right),
    s("cputime", "TIME", F::Time, 8, Every, Right),
    s("cputimes", "TIME", F::Times, 8, Every, Right),
    s("egid", "EGID", F::Egid, 5, Every, Right),
    s("egroup", "EGROUP", F::Egroup, 8, Every, User),
    s("etime", "ELAPSED", F::Etime, 11, Every, Right),
    s("etimes", "ELAPSED", F::Etimes, 7, Every, Right),
    s("euid", "EUID", F::Euid, 5, Every, Right),
    s("euser", "EUSER", F::Euser, 8, Every, User),
    s("exe", "EXE", F::Exe, 27, ProcessOnly, Unlimited),
    s("f", "F", F::Flags, 1, Every, Right),
    s("fgid", "FGID", F::Fgid, 5, Every, Right),
    s("fgroup", "FGROUP", F::Fgroup, 8, Every, User),
    s("flag", "F", F::Flags, 1, Every, Right),
    s("flags", "F", F::Flags, 1, Every, Right),
    s("fsgid", "FSGID", F::Fgid, 5, Every, Right),
    s("fsgroup", "FSGROUP", F::Fgroup, 8, Every, User),
    s("fsuid", "FSUID", F::Fuid, 5, Every, Right),
    s("fsuser", "FSUSER", F::Fuser, 8, Every, User),
    s("fuid", "FUID", F::Fuid, 5, Every, Right),
    s("fuser", "FUSER", F::Fuser, 8, Every, User),
    s("gid", "GID", F::Egid, 5, Every, Right),
    s("group", "GROUP", F::Egroup, 8, Every, User),
    s("intpri", "PRI", F::Opri, 3, ThreadOnly, Right),
    s("ipcns", "IPCNS", F::Ns(1), 10, Every, Right),
    s("label", "LABEL", F::Label, 31, Every, Left),
    s("lastcpu", "C", F::Psr, 3, ThreadOnly, Right),
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
    s("oom", "OOM", F::Oom, 4, ThreadOnly, Right),
    s("oomadj", "OOMADJ", F::OomAdj, 5, ThreadOnly, Right),
    s("opri", "PRI", F::Opri, 3, ThreadOnly, Right),
    s("ouid", "OWNER", F::Login(What::OwnerUid), 5, Every, Left),
    s("pagein", "PAGEIN", F::MajFlt, 6, AsNeeded, Right),
    s("pcpu", "%CPU", F::Pcpu, 4, Every, Right),
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
    s("sgid", "SGID", F::Sgid, 5, Every, Right),
    s("sgroup", "SGROUP", F::Sgroup, 8, Every, User),
    p("sid", "SID", F::Sess, ProcessOnly),
    s("slice", "SLICE", F::Login(What::Slice), 31, Every, Left),
    p("spid", "SPID", F::Tid, ThreadOnly),
    s("start", "STARTED", F::Start, 8, Every, Right),
    s("start_time", "START", F::StartTime, 5, Every, Right),
    s("stat", "STAT", F::Stat, 4, ThreadOnly, Left),
    s("state", "S", F::S, 1, ThreadOnly, Left),
    s("stime", "STIME", F::StartTime, 5, Every, Right),
    s("suid", "SUID", F::Suid, 5, Every, Right),
    s("supgid", "SUPGID", F::Supgid, 20, ProcessOnly, Unlimited),
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
    s("times", "TIME", F::Times, 8, Every, Right),
    s("tname", "TTY", F::Tty, 8, ProcessOnly, Left),
    p("tpgid", "TPGID", F::Tpgid, ProcessOnly),
    s("tt", "TT", F::Tty, 8, ProcessOnly, Left),
    s("tty", "TT", F::Tty, 8, ProcessOnly, Left),
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
    s("utsns", "UTSNS", F::Ns(7), 10, Every, Right),
    s("uunit", "UUNIT", F::Login(What::UserUnit), 31, Every, Left),
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
];

/// Looks a specifier up by its exact name.
pub fn find(name: &str) -> Option<&'static Spec> {
    SPECS
        .binary_search_by(|s| s.name.cmp(name))
        .ok()
        .map(|i| &SPECS[i])
}

/// procps's named format lists (`macro_array`) that tasksnap's option sets use.
pub fn macro_list(name: &str) -> Option<&'static str> {
    Some(match name {
        "DefBSD" => "pid,tname,stat,bsdtime,args",
        "DefSysV" => "pid,tname,time,cmd",
        "END_BSD" => "state,tname,cputime,comm",
        "END_SYS5" => "state,tname,time,command",
        "OL_j" => "ppid,pid,pgid,sid,tname,tpgid,stat,uid,bsdtime,args",
        "OL_l" => "flags,uid,pid,ppid,priority,nice,vsz,rss,wchan,stat,tname,bsdtime,args",
        "OL_u" => "user,pid,pcpu,pmem,vsz,rss,tname,stat,start_time,bsdtime,args",
        "OL_v" => "pid,tname,stat,bsdtime,maj_flt,m_trs,m_drs,rss,pmem,args",
        "Std_f" => "uid_hack,pid,ppid,c,stime,tname,time,cmd",
        "Std_fl" => "f,s,uid_hack,pid,ppid,c,opri,ni,addr,sz,wchan,stime,tname,time,cmd",
        "Std_l" => "f,s,uid,pid,ppid,c,opri,ni,addr,sz,wchan,tname,time,ucmd",
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
