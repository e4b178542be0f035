//! The format specifiers `ps -o` knows, one row each: procps-ng 4.0's `format_array`
//! (ps/output.c) for the specifiers tasksnap supports, so that headers and widths match byte
//! for byte. A row is the specifier, its header, default width, alignment, which rows of a
//! thread listing print it, where its value comes from (a field of the model's table and
//! procps's printer, or a formatter of ps's own, [`super::printers`]) and what it sorts by.
//! The groups a listing asks for are derived from its rows ([`Spec::ask`]); every field of
//! the model's table procps has no specifier for is a row too ([`model_specs`]).

use tasksnap_model::fields as m;
use tasksnap_model::Groups;

use super::fields::{Data, Print, Sort, Source};
use super::printers as pr;
use super::settings::Settings;

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

/// One row of the specifier table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Name given to `-o`.
    pub name: &'static str,
    /// Default header.
    pub head: &'static str,
    /// Default width.
    pub width: usize,
    /// Alignment.
    pub just: Just,
    /// Which rows print it.
    pub show: Show,
    /// The width follows the digits of `kernel.pid_max`.
    pub pidmax: bool,
    /// Where its value comes from.
    pub value: Source,
    /// What rows sort by under its name.
    pub sort: Sort,
}

impl Spec {
    /// Asks for the groups this column needs, to print it or sort by it, under settings `s`.
    pub fn ask(&self, s: &Settings, g: &mut Groups) {
        self.value.ask(s, g);
        self.sort.ask(g);
    }

    /// What `--output json|csv` carries of it.
    pub fn data(&self) -> Data {
        self.value.data()
    }

    /// Whether printing or sorting by it needs each CPU's NUMA node.
    pub fn needs_numa(&self) -> bool {
        matches!(self.value, Source::Table(_, Print::NumaNode))
    }
}

const fn s(
    name: &'static str,
    head: &'static str,
    width: usize,
    just: Just,
    show: Show,
    value: Source,
    sort: Sort,
) -> Spec {
    Spec {
        name,
        head,
        width,
        just,
        show,
        pidmax: false,
        value,
        sort,
    }
}

/// A pid column: right-aligned, as wide as `kernel.pid_max`'s digits (at least 5).
const fn p(name: &'static str, head: &'static str, show: Show, value: Source, sort: Sort) -> Spec {
    Spec {
        pidmax: true,
        ..s(name, head, 5, Just::Right, show, value, sort)
    }
}

/// A field of the model's table printed by `print`.
const fn t(field: &'static m::Field, print: Print) -> Source {
    Source::Table(field, print)
}

/// procps's priority scales.
const fn scaled(sign: i64, offset: i64) -> Print {
    Print::Scaled { sign, offset }
}

const N: Print = Print::Number { missing: 0 };
const TTY: Print = Print::Tty { number: false };
const MASK: Print = Print::SignalMask;

use Just::*;
use Show::*;
use Sort::{By, Derived, Hex, Text, Value};
use Source::{Nop, Own};

/// The spec of an AIX literal text column (its text is the column's header).
pub static TEXT: Spec = s("", "", 0, Just::Text, Every, Own(pr::TEXT), Text);

/// The specifiers, sorted by name (binary-searched).
#[rustfmt::skip]
pub static SPECS: &[Spec] = &[
    s("%cpu", "%CPU", 4, Right, Every,              Own(pr::PCPU), Derived(pr::utilization_key)),
    s("%mem", "%MEM", 4, Right, ProcessOnly,        t(&m::RSS_BYTES, Print::ShareOfMemory), Value),
    s("_left", "LLLLLLLL", 8, Left, Every,          Own(pr::TESTS[0]), Text),
    s("_left2", "L2L2L2L2", 8, Left, Every,         Own(pr::TESTS[1]), Text),
    s("_right", "RRRRRRRRRRR", 11, Right, Every,    Own(pr::TESTS[2]), Text),
    s("_right2", "R2R2R2R2R2R", 11, Right, Every,   Own(pr::TESTS[3]), Text),
    s("_unlimited", "U", 16, Unlimited, Every,      Own(pr::TESTS[4]), Text),
    s("_unlimited2", "U2", 16, Unlimited, Every,    Own(pr::TESTS[5]), Text),
    s("addr", "ADDR", 4, Right, AsNeeded,           Nop, Text),
    s("addr_1", "ADDR", 1, Left, AsNeeded,          Nop, Text),
    s("ag_id", "AGID", 5, Right, AsNeeded,          t(&m::AUTOGROUP_ID, Print::Number { missing: -1 }),
                                                    Value),
    s("ag_nice", "AGNI", 4, Right, AsNeeded,        t(&m::AUTOGROUP_NICE, N), Value),
    s("alarm", "ALARM", 5, Right, AsNeeded,         Nop, Text),
    s("args", "COMMAND", 27, Unlimited, ProcessOnly, Own(pr::ARGS), Text),
    s("atime", "TIME", 8, Right, Every,             Own(pr::TIME), By(&m::CPU_NS)),
    s("blocked", "BLOCKED", 9, Signal, ThreadOnly,  t(&m::SIG_BLOCKED, MASK), Hex),
    s("bsdstart", "START", 6, Right, Every,         Own(pr::BSDSTART), By(&m::START_TIME_NS)),
    s("bsdtime", "TIME", 6, Right, Every,           Own(pr::BSDTIME), By(&m::CPU_NS)),
    s("c", "C", 2, Right, Every,                    Own(pr::C), Derived(pr::utilization_key)),
    s("caught", "CAUGHT", 9, Signal, ThreadOnly,    t(&m::SIG_CAUGHT, MASK), Hex),
    s("cgname", "CGNAME", 27, Unlimited, ProcessOnly, Own(pr::CGNAME), Text),
    s("cgroup", "CGROUP", 27, Unlimited, ProcessOnly, Own(pr::CGROUP), Text),
    s("cgroupns", "CGROUPNS", 10, Right, Every,     t(&m::NS_CGROUP_INODE, Print::DashOn(0)),
                                                    Value),
    s("class", "CLS", 3, Left, ThreadOnly,          Own(pr::CLASS), By(&m::POLICY)),
    s("cls", "CLS", 3, Right, ThreadOnly,           Own(pr::CLASS), By(&m::POLICY)),
    s("cmd", "CMD", 27, Unlimited, ProcessOnly,     Own(pr::ARGS), Text),
    s("comm", "COMMAND", 15, Unlimited, ProcessOnly, Own(pr::COMM), Text),
    s("command", "COMMAND", 27, Unlimited, ProcessOnly, Own(pr::ARGS), Text),
    s("context", "CONTEXT", 31, Left, Every,        t(&m::LABEL, Print::Text("-")), By(&m::PID)),
    s("cp", "CP", 3, Right, Every,                  Own(pr::CP), Derived(pr::utilization_key)),
    s("cpu", "CPU", 3, Right, AsNeeded,             Nop, Text),
    s("cpuid", "CPUID", 5, Right, ThreadOnly,       t(&m::PROCESSOR, N), Value),
    s("cputime", "TIME", 8, Right, Every,           Own(pr::TIME), By(&m::CPU_NS)),
    s("cputimes", "TIME", 8, Right, Every,          Own(pr::TIMES), By(&m::CPU_NS)),
    s("cuc", "%CUC", 7, Right, AsNeeded,            Own(pr::CUC),
                                                    Derived(pr::utilization_children_key)),
    s("cursig", "CURSIG", 6, Right, AsNeeded,       Nop, Text),
    s("cuu", "%CUU", 6, Right, AsNeeded,            Own(pr::CUU), Derived(pr::utilization_key)),
    s("drs", "DRS", 5, Right, ProcessOnly,          Own(pr::DRS), By(&m::STAT_VSIZE_BYTES)),
    s("dsiz", "DSIZ", 4, Right, ProcessOnly,        Own(pr::DRS), By(&m::STAT_VSIZE_BYTES)),
    s("egid", "EGID", 5, Right, Every,              t(&m::EGID, N), Value),
    s("egroup", "EGROUP", 8, User, Every,           t(&m::EGID, Print::Group), Text),
    s("eip", "EIP", 16, Right, ThreadOnly,          t(&m::KSTKEIP, Print::Address), Value),
    s("environ", "ENVIRONMENT", 11, Unlimited, ProcessOnly, Nop, Text),
    s("esp", "ESP", 16, Right, ThreadOnly,          t(&m::KSTKESP, Print::Address), Value),
    s("etime", "ELAPSED", 11, Right, Every,         Own(pr::ETIME), By(&m::START_TIME_NS)),
    s("etimes", "ELAPSED", 7, Right, Every,         Own(pr::ETIMES), By(&m::START_TIME_NS)),
    s("euid", "EUID", 5, Right, Every,              t(&m::EUID, N), Value),
    s("euser", "EUSER", 8, User, Every,             t(&m::EUID, Print::User), Text),
    s("exe", "EXE", 27, Unlimited, ProcessOnly,     Own(pr::EXE), Text),
    s("f", "F", 1, Right, Every,                    Own(pr::FLAGS), By(&m::FLAGS)),
    s("fds", "FDS", 3, Right, ProcessOnly,          t(&m::FDS, N), Value),
    s("fgid", "FGID", 5, Right, Every,              t(&m::FSGID, N), Text),
    s("fgroup", "FGROUP", 8, User, Every,           t(&m::FSGID, Print::Group), Text),
    s("flag", "F", 1, Right, Every,                 Own(pr::FLAGS), By(&m::FLAGS)),
    s("flags", "F", 1, Right, Every,                Own(pr::FLAGS), By(&m::FLAGS)),
    s("fname", "COMMAND", 8, Left, ProcessOnly,     Own(pr::FNAME), Derived(pr::comm_key)),
    s("fsgid", "FSGID", 5, Right, Every,            t(&m::FSGID, N), Text),
    s("fsgroup", "FSGROUP", 8, User, Every,         t(&m::FSGID, Print::Group), Text),
    s("fsuid", "FSUID", 5, Right, Every,            t(&m::FSUID, N), Text),
    s("fsuser", "FSUSER", 8, User, Every,           t(&m::FSUID, Print::User), Text),
    s("fuid", "FUID", 5, Right, Every,              t(&m::FSUID, N), Text),
    s("fuser", "FUSER", 8, User, Every,             t(&m::FSUID, Print::User), Text),
    s("gid", "GID", 5, Right, Every,                t(&m::EGID, N), Value),
    s("group", "GROUP", 8, User, Every,             t(&m::EGID, Print::Group), Text),
    s("ignored", "IGNORED", 9, Signal, ThreadOnly,  t(&m::SIG_IGNORED, MASK), Hex),
    s("intpri", "PRI", 3, Right, ThreadOnly,        t(&m::PRIORITY, scaled(1, 60)), Value),
    s("ipcns", "IPCNS", 10, Right, Every,           t(&m::NS_IPC_INODE, Print::DashOn(0)), Value),
    s("jobc", "JOBC", 4, Right, AsNeeded,           Nop, Text),
    s("label", "LABEL", 31, Left, Every,            t(&m::LABEL, Print::Text("-")), By(&m::PID)),
    s("lastcpu", "C", 3, Right, ThreadOnly,         t(&m::PROCESSOR, N), Value),
    s("lim", "LIM", 5, Right, AsNeeded,             t(&m::RSSLIM_BYTES, Print::Limit), Value),
    s("longtname", "TTY", 8, Left, ProcessOnly,     t(&m::TTY_NR, TTY), Text),
    s("lsession", "SESSION", 11, Left, Every,       t(&m::LOGIN_SESSION, Print::Login), Text),
    s("lstart", "STARTED", 24, Right, Every,        Own(pr::LSTART), By(&m::START_TIME_NS)),
    s("luid", "LUID", 5, Right, Every,              t(&m::LOGINUID, Print::DashOn(-1)), Value),
    p("lwp", "LWP", ThreadOnly,                     t(&m::TID, N), Value),
    s("lxc", "LXC", 8, Left, Every,                 Own(pr::LXC), Text),
    s("m_drs", "DRS", 5, Right, ProcessOnly,        Own(pr::DRS), By(&m::STAT_VSIZE_BYTES)),
    s("m_dt", "DT", 4, Right, ProcessOnly,          Nop, Text),
    s("m_share", "SHRD", 5, Right, ProcessOnly,     Nop, Text),
    s("m_size", "SIZE", 5, Right, ProcessOnly,      t(&m::STAT_VSIZE_BYTES, N), Value),
    s("m_swap", "SWAP", 5, Right, ProcessOnly,      Nop, Text),
    s("m_trs", "TRS", 5, Right, ProcessOnly,        Own(pr::TRS), By(&m::STAT_VSIZE_BYTES)),
    s("machine", "MACHINE", 31, Left, Every,        t(&m::SYSTEMD_MACHINE, Print::Login), Text),
    s("maj_flt", "MAJFL", 6, Right, AsNeeded,       Own(pr::MAJFLT), By(&m::MAJFLT)),
    s("majflt", "MAJFLT", 6, Right, AsNeeded,       Own(pr::MAJFLT), By(&m::MAJFLT)),
    s("min_flt", "MINFL", 6, Right, AsNeeded,       Own(pr::MINFLT), By(&m::MINFLT)),
    s("minflt", "MINFLT", 6, Right, AsNeeded,       Own(pr::MINFLT), By(&m::MINFLT)),
    s("mntns", "MNTNS", 10, Right, Every,           t(&m::NS_MNT_INODE, Print::DashOn(0)), Value),
    s("netns", "NETNS", 10, Right, Every,           t(&m::NS_NET_INODE, Print::DashOn(0)), Value),
    s("ni", "NI", 3, Right, ThreadOnly,             Own(pr::NICE), By(&m::NICE)),
    s("nice", "NI", 3, Right, ThreadOnly,           Own(pr::NICE), By(&m::NICE)),
    s("nlwp", "NLWP", 4, Right, ProcessOnly,        t(&m::NUM_THREADS, N), Value),
    s("numa", "NUMA", 4, Right, AsNeeded,           t(&m::PROCESSOR, Print::NumaNode),
                                                    Derived(pr::numa_key)),
    s("oom", "OOM", 4, Right, ThreadOnly,           t(&m::OOM_SCORE, N), Value),
    s("oomadj", "OOMADJ", 5, Right, ThreadOnly,     t(&m::OOM_SCORE_ADJ, N), Value),
    s("opri", "PRI", 3, Right, ThreadOnly,          t(&m::PRIORITY, scaled(1, 60)), Value),
    s("ouid", "OWNER", 5, Left, Every,              t(&m::OWNER_UID, Print::Login), Text),
    s("pagein", "PAGEIN", 6, Right, AsNeeded,       Own(pr::MAJFLT), By(&m::MAJFLT)),
    s("pcpu", "%CPU", 4, Right, Every,              Own(pr::PCPU), Derived(pr::utilization_key)),
    s("pending", "PENDING", 9, Signal, Every,       Own(pr::PENDING), Derived(pr::pending_key)),
    p("pgid", "PGID", ProcessOnly,                  t(&m::PGID, N), Value),
    p("pgrp", "PGRP", ProcessOnly,                  t(&m::PGID, N), Value),
    p("pid", "PID", ProcessOnly,                    t(&m::PID, N), Value),
    s("pidns", "PIDNS", 10, Right, Every,           t(&m::NS_PID_INODE, Print::DashOn(0)), Value),
    s("pmem", "%MEM", 4, Right, ProcessOnly,        t(&m::RSS_BYTES, Print::ShareOfMemory), Value),
    s("policy", "POL", 3, Left, ThreadOnly,         Own(pr::CLASS), By(&m::POLICY)),
    p("ppid", "PPID", ProcessOnly,                  t(&m::PPID, N), Value),
    s("pri", "PRI", 3, Right, ThreadOnly,           t(&m::PRIORITY, scaled(-1, 39)), Value),
    s("pri_api", "API", 3, Right, ThreadOnly,       t(&m::PRIORITY, scaled(-1, -1)), Value),
    s("pri_bar", "BAR", 3, Right, ThreadOnly,       t(&m::PRIORITY, scaled(1, 1)), Value),
    s("pri_baz", "BAZ", 3, Right, ThreadOnly,       t(&m::PRIORITY, scaled(1, 100)), Value),
    s("pri_foo", "FOO", 3, Right, ThreadOnly,       t(&m::PRIORITY, scaled(1, -20)), Value),
    s("priority", "PRI", 3, Right, ThreadOnly,      t(&m::PRIORITY, N), Value),
    s("psr", "PSR", 3, Right, ThreadOnly,           t(&m::PROCESSOR, N), Value),
    s("pss", "PSS", 5, Right, ProcessOnly,          t(&m::PSS_BYTES, Print::Kib), Value),
    s("rbytes", "RBYTES", 5, Right, ThreadOnly,     t(&m::READ_BYTES, N), Value),
    s("rchars", "RCHARS", 5, Right, ThreadOnly,     t(&m::RCHAR_BYTES, N), Value),
    s("re", "RE", 3, Right, AsNeeded,               Nop, Text),
    s("rgid", "RGID", 5, Right, Every,              t(&m::RGID, N), Value),
    s("rgroup", "RGROUP", 8, User, Every,           t(&m::RGID, Print::Group), Text),
    s("rops", "ROPS", 5, Right, ThreadOnly,         t(&m::SYSCR, N), Value),
    s("rss", "RSS", 5, Right, ProcessOnly,          t(&m::RSS_BYTES, Print::Kib), Value),
    s("rssize", "RSS", 5, Right, ProcessOnly,       t(&m::RSS_BYTES, Print::Kib), Value),
    s("rsz", "RSZ", 5, Right, ProcessOnly,          t(&m::RSS_BYTES, Print::Kib), Value),
    s("rtprio", "RTPRIO", 6, Right, ThreadOnly,     Own(pr::RTPRIO), By(&m::RT_PRIORITY)),
    s("ruid", "RUID", 5, Right, Every,              t(&m::RUID, N), Value),
    s("ruser", "RUSER", 8, User, Every,             t(&m::RUID, Print::User), Text),
    s("s", "S", 1, Left, ThreadOnly,                t(&m::STATE, Print::Text("?")),
                                                    Derived(pr::state_key)),
    s("sched", "SCH", 3, Right, ThreadOnly,         t(&m::POLICY, N), Value),
    s("seat", "SEAT", 11, Left, Every,              t(&m::SYSTEMD_SEAT, Print::Login), Text),
    p("sess", "SESS", ProcessOnly,                  t(&m::SID, N), Value),
    p("session", "SESS", ProcessOnly,               t(&m::SID, N), Value),
    s("sgi_p", "P", 1, Right, ThreadOnly,           Own(pr::SGI_P), Derived(pr::state_key)),
    s("sgi_rss", "RSS", 4, Left, ProcessOnly,       t(&m::RSS_BYTES, Print::Kib), Value),
    s("sgid", "SGID", 5, Right, Every,              t(&m::SGID, N), Text),
    s("sgroup", "SGROUP", 8, User, Every,           t(&m::SGID, Print::Group), Text),
    p("sid", "SID", ProcessOnly,                    t(&m::SID, N), Value),
    s("sig", "PENDING", 9, Signal, Every,           Own(pr::PENDING), Derived(pr::pending_key)),
    s("sig_block", "BLOCKED", 9, Signal, ThreadOnly, t(&m::SIG_BLOCKED, MASK), Hex),
    s("sig_catch", "CATCHED", 9, Signal, ThreadOnly, t(&m::SIG_CAUGHT, MASK), Hex),
    s("sig_ignore", "IGNORED", 9, Signal, ThreadOnly, t(&m::SIG_IGNORED, MASK), Hex),
    s("sig_pend", "SIGNAL", 9, Signal, Every,       Own(pr::PENDING), Derived(pr::pending_key)),
    s("sigcatch", "CAUGHT", 9, Signal, ThreadOnly,  t(&m::SIG_CAUGHT, MASK), Hex),
    s("sigignore", "IGNORED", 9, Signal, ThreadOnly, t(&m::SIG_IGNORED, MASK), Hex),
    s("sigmask", "BLOCKED", 9, Signal, ThreadOnly,  t(&m::SIG_BLOCKED, MASK), Hex),
    s("size", "SIZE", 5, Right, ProcessOnly,        t(&m::DATA_BYTES, Print::Kib),
                                                    By(&m::STAT_VSIZE_BYTES)),
    s("sl", "SL", 3, Right, AsNeeded,               Nop, Text),
    s("slice", "SLICE", 31, Left, Every,            t(&m::SYSTEMD_SLICE, Print::Login), Text),
    p("spid", "SPID", ThreadOnly,                   t(&m::TID, N), Value),
    s("stackp", "STACKP", 16, Right, ProcessOnly,   t(&m::START_STACK, Print::Address), Value),
    s("start", "STARTED", 8, Right, Every,          Own(pr::START), By(&m::START_TIME_NS)),
    s("start_stack", "STACKP", 16, Right, ProcessOnly, t(&m::START_STACK, Print::Address), Value),
    s("start_time", "START", 5, Right, Every,       Own(pr::START_TIME), By(&m::START_TIME_NS)),
    s("stat", "STAT", 4, Left, ThreadOnly,          Own(pr::STAT), Derived(pr::state_key)),
    s("state", "S", 1, Left, ThreadOnly,            t(&m::STATE, Print::Text("?")),
                                                    Derived(pr::state_key)),
    s("stime", "STIME", 5, Right, Every,            Own(pr::START_TIME), By(&m::START_TIME_NS)),
    s("suid", "SUID", 5, Right, Every,              t(&m::SUID, N), Text),
    s("supgid", "SUPGID", 20, Unlimited, ProcessOnly, Own(pr::SUPGID), Text),
    s("supgrp", "SUPGRP", 40, Unlimited, ProcessOnly, Own(pr::SUPGRP), Text),
    s("suser", "SUSER", 8, User, Every,             t(&m::SUID, Print::User), Text),
    s("svgid", "SVGID", 5, Right, Every,            t(&m::SGID, N), Text),
    s("svgroup", "SVGROUP", 8, User, Every,         t(&m::SGID, Print::Group), Text),
    s("svuid", "SVUID", 5, Right, Every,            t(&m::SUID, N), Text),
    s("svuser", "SVUSER", 8, User, Every,           t(&m::SUID, Print::User), Text),
    s("sz", "SZ", 5, Right, ProcessOnly,            t(&m::STAT_VSIZE_BYTES, Print::Pages), Value),
    p("tgid", "TGID", ProcessOnly,                  t(&m::PID, N), Value),
    s("thcount", "THCNT", 5, Right, ProcessOnly,    t(&m::NUM_THREADS, N), Value),
    p("tid", "TID", ThreadOnly,                     t(&m::TID, N), Value),
    s("time", "TIME", 8, Right, Every,              Own(pr::TIME), By(&m::CPU_NS)),
    s("timens", "TIMENS", 10, Right, Every,         t(&m::NS_TIME_INODE, Print::DashOn(0)), Value),
    s("timeout", "TMOUT", 5, Right, AsNeeded,       Nop, Text),
    s("times", "TIME", 8, Right, Every,             Own(pr::TIMES), By(&m::CPU_NS)),
    s("tname", "TTY", 8, Left, ProcessOnly,         t(&m::TTY_NR, TTY), Text),
    p("tpgid", "TPGID", ProcessOnly,                t(&m::TPGID, N), Value),
    s("trs", "TRS", 4, Right, ProcessOnly,          Own(pr::TRS), By(&m::STAT_VSIZE_BYTES)),
    s("trss", "TRSS", 4, Right, ProcessOnly,        Own(pr::TRS), By(&m::STAT_VSIZE_BYTES)),
    s("tsig", "PENDING", 9, Signal, Every,          t(&m::SIG_PENDING, MASK), Hex),
    s("tsiz", "TSIZ", 4, Right, ProcessOnly,        Own(pr::TRS), By(&m::STAT_VSIZE_BYTES)),
    s("tt", "TT", 8, Left, ProcessOnly,             t(&m::TTY_NR, TTY), Text),
    s("tty", "TT", 8, Left, ProcessOnly,            t(&m::TTY_NR, TTY), Text),
    s("tty4", "TTY", 4, Left, ProcessOnly,          t(&m::TTY_NR, Print::Tty { number: true }),
                                                    Derived(pr::tty_name_key)),
    s("tty8", "TTY", 8, Left, ProcessOnly,          t(&m::TTY_NR, TTY), Text),
    s("ucmd", "CMD", 15, Unlimited, ProcessOnly,    Own(pr::COMM), Text),
    s("ucomm", "COMMAND", 15, Unlimited, ProcessOnly, Own(pr::COMM), Text),
    s("uid", "UID", 5, Right, Every,                t(&m::EUID, N), Value),
    s("uid_hack", "UID", 8, User, Every,            t(&m::EUID, Print::User), Text),
    s("uname", "USER", 8, User, Every,              t(&m::EUID, Print::User), Text),
    s("unit", "UNIT", 31, Left, Every,              t(&m::SYSTEMD_UNIT, Print::Login), Text),
    s("user", "USER", 8, User, Every,               t(&m::EUID, Print::User), Text),
    s("userns", "USERNS", 10, Right, Every,         t(&m::NS_USER_INODE, Print::DashOn(0)), Value),
    s("uss", "USS", 5, Right, ProcessOnly,          t(&m::USS_BYTES, Print::Kib), Value),
    s("util", "C", 2, Right, Every,                 Own(pr::C), Derived(pr::utilization_key)),
    s("utsns", "UTSNS", 10, Right, Every,           t(&m::NS_UTS_INODE, Print::DashOn(0)), Value),
    s("uunit", "UUNIT", 31, Left, Every,            t(&m::SYSTEMD_USER_UNIT, Print::Login), Text),
    s("vm_lib", "LIB", 5, Right, ProcessOnly,       Nop, Text),
    s("vsize", "VSZ", 6, Right, ProcessOnly,        t(&m::STAT_VSIZE_BYTES, Print::Kib), Value),
    s("vsz", "VSZ", 6, Right, ProcessOnly,          t(&m::STAT_VSIZE_BYTES, Print::Kib), Value),
    s("wbytes", "WBYTES", 5, Right, ThreadOnly,     t(&m::WRITE_BYTES, N), Value),
    s("wcbytes", "WCBYTES", 5, Right, ThreadOnly,   t(&m::CANCELLED_WRITE_BYTES, N), Value),
    s("wchan", "WCHAN", 6, Wchan, ThreadOnly,       t(&m::WCHAN, Print::Wchan), Text),
    s("wchars", "WCHARS", 5, Right, ThreadOnly,     t(&m::WCHAR_BYTES, N), Value),
    s("wname", "WCHAN", 6, Wchan, ThreadOnly,       t(&m::WCHAN, Print::Wchan), Text),
    s("wops", "WOPS", 5, Right, ThreadOnly,         t(&m::SYSCW, N), Value),
    s("zone", "ZONE", 31, Left, Every,              t(&m::LABEL, Print::Text("-")), By(&m::PID)),
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
                    Kind::Int => (head.len().max(10), Right),
                    Kind::Bytes => (head.len().max(20), Left),
                };
                s(f.name, head, width, just, Every, t(f, Print::Model), Value)
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
    use crate::ps::fields::{Caches, Ctx, Env};
    use crate::ps::format::*;
    use crate::ps::names::HostFacts;
    use crate::ps::text::Locale;
    use tasksnap_model::{Base, Layout, Signals, Stat, Task, TaskId, TaskState};

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

    /// A row that sorts by the table value it shows shows one.
    #[test]
    fn value_and_hex_sorts_have_a_table_source() {
        for spec in SPECS.iter().chain(model_specs()) {
            if matches!(spec.sort, Sort::Value | Sort::Hex) {
                assert!(
                    matches!(spec.value, Source::Table(..)),
                    "{} sorts by a value it does not show",
                    spec.name
                );
            }
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

    fn show(name: &str, t: &Task, env: &Env) -> String {
        let mut c = Caches::new(&HostFacts::of(&tasksnap_collect::Host::from_env(), false));
        let spec = find(name).expect("a known specifier");
        let cell = spec.value.print(&mut Ctx::of(t, 80, env, &mut c));
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
        assert_eq!(show("sig", &t, &wide), "0000008000000000");
        assert_eq!(show("tsig", &t, &wide), "0000000000004000");
        assert_eq!(show("sig", &t, &narrow), "<00000000");
        assert_eq!(show("blocked", &t, &narrow), "<00004200");
        assert_eq!(show("ignored", &t, &narrow), "00001007");
        assert_eq!(show("caught", &t, &narrow), "<00000c40");
        // Another thread's row: its own pending signals.
        let mut other = task(7, 8);
        other.signals = t.signals.clone();
        assert_eq!(show("sig", &other, &wide), "0000000000004000");
        // Unreadable status: procps's empty string prints 8 zeros, wide or not.
        let none = task(9, 9);
        assert_eq!(show("caught", &none, &wide), "00000000");
        assert_eq!(show("caught", &none, &narrow), "00000000");
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
        assert_eq!(show("trs", &t, &e), "770");
        assert_eq!(show("drs", &t, &e), "4233");
        assert_eq!(show("m_size", &t, &e), "5124096");
        assert_eq!(show("stackp", &t, &e), "00007ffe243a3430");
        assert_eq!(show("eip", &t, &e), "0000000000000000");
        assert_eq!(show("lim", &t, &e), "xx");
        // Without ptrace access the kernel shows 1 and 1: no text, all data.
        t.layout = Some(Box::new(Layout {
            rsslim_bytes: 8 << 20,
            start_code: 1,
            end_code: 1,
            ..Layout::default()
        }));
        assert_eq!(show("trs", &t, &e), "0");
        assert_eq!(show("drs", &t, &e), "5004");
        assert_eq!(show("lim", &t, &e), " 8192");
        // No address space (kernel thread): 0, whatever the addresses say.
        t.stat = Some(Stat::default());
        assert_eq!(show("drs", &t, &e), "0");
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
        assert_eq!(show("cuu", &t, &e), "0.037");
        assert_eq!(show("cuc", &t, &e), "0.137");
        // A task busier than 99 % prints 99.999.
        let mut busy = task(4, 4);
        busy.id.start_time_ns = 99_990 * 10_000_000;
        busy.stat = Some(Stat {
            utime_ns: 20 * 10_000_000,
            ..Stat::default()
        });
        assert_eq!(show("cuu", &busy, &e), "99.999");
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
        assert_eq!(show("cuu", &long, &e), "0.559");
        assert_eq!(
            crate::ps::fields::utilization_value(&long, false, &e),
            1_677_721_600.0 / 3e9
        );
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
        assert_eq!(show("vsz", &t, &e), "8192");
        assert_eq!(show("sz", &t, &e), "2048");
        assert_eq!(show("m_size", &t, &e), "8388608");
        assert_eq!(show("size", &t, &e), "3072");
        // A thread's directory has no autogroup file and no loginuid: -1 and `-`; the
        // namespace inode 0 (none) is `-` too.
        assert_eq!(show("ag_id", &t, &e), "-1");
        assert_eq!(show("luid", &t, &e), "-");
        t.extra = Some(Box::new(Extra {
            ns: Some([0, 4_026_531_839, 0, 0, 0, 0, 0, 0]),
            loginuid: Some(-1),
            autogroup: Some((52, 0)),
            ..Extra::default()
        }));
        assert_eq!(show("cgroupns", &t, &e), "-");
        assert_eq!(show("ipcns", &t, &e), "4026531839");
        assert_eq!(show("luid", &t, &e), "-");
        assert_eq!(show("ag_id", &t, &e), "52");
        // The wait channel loses its leading dots and underscores; empty is running.
        t.wchan = Some("__x64_sys_pause".into());
        assert_eq!(show("wchan", &t, &e), "x64_sys_pause");
        t.wchan = Some(String::new());
        assert_eq!(show("wchan", &t, &e), "-");
        t.wchan = None;
        assert_eq!(show("wchan", &t, &e), "?");
        // Priority scales over the table's priority.
        t.base = Some(Base {
            priority: 20,
            ..Base::default()
        });
        assert_eq!(show("pri", &t, &e), "19");
        assert_eq!(show("opri", &t, &e), "80");
        assert_eq!(show("pri_api", &t, &e), "-21");
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
        assert_eq!(show("sgi_p", &t, &e), "3");
        t.base = Some(Base {
            processor: 3,
            ..Base::default()
        });
        assert_eq!(show("sgi_p", &t, &e), "*");
    }
}
