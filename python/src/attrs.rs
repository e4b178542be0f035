//! psutil's process attributes, one row each in [`SPECS`]: psutil's name, the fields of the
//! model's table (`tasksnap_model::fields`) the value is read from, whether it is those
//! fields' values as they are, and its `snapshot()` columns. What a pass must read for a list
//! of attributes ([`groups_for`]) is derived from their fields' groups; the few attributes
//! that need more than their fields say so in [`Attr::more_groups`].
//!
//! The exceptions to the model's table, and why: psutil's names are psutil's (`cpu_times`,
//! `memory_info`...), and so are the names of its named tuples' fields, which are
//! `snapshot()`'s columns (`cpu_user`, `rss`...); `environ` is no field of the table (a
//! process's environment is no value a front end shows); `cpu_affinity` and `threads` are
//! read beside the pass (a system call per process, a pass of threads), and `num_fds`
//! without root is counted per process by listing, as psutil does.

use pyo3::prelude::*;
use tasksnap_model::fields::{self, Field, Group};
use tasksnap_model::Groups;

/// A psutil attribute tasksnap answers (the order of [`SPECS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Attr {
    Pid,
    Ppid,
    Name,
    Username,
    Status,
    CpuTimes,
    MemoryInfo,
    Cmdline,
    NumThreads,
    CreateTime,
    IoCounters,
    Uids,
    Gids,
    Nice,
    NumCtxSwitches,
    CpuNum,
    Exe,
    Environ,
    NumFds,
    CpuPercent,
    MemoryPercent,
    CpuAffinity,
    Threads,
    Terminal,
}

/// One attribute's row.
#[derive(Debug)]
pub(crate) struct Spec {
    /// psutil's name.
    pub name: &'static str,
    pub attr: Attr,
    /// The fields of the model's table its value is read from, in psutil's order (a named
    /// tuple's fields); their groups are what a pass reads for it.
    pub fields: &'static [&'static Field],
    /// The value is the fields' values as they are (one number, or psutil's named tuple of
    /// them, a `snapshot()` column each), in psutil's unit (`values::field_value`); else it is
    /// made from them by psutil's rules (`values::Ctx::value`).
    pub plain: bool,
    /// Its `snapshot()` columns, named after psutil's named tuple's fields; empty: none (the
    /// attribute is read per process or beside the pass: ask `process_iter()`).
    pub columns: &'static [&'static str],
}

const fn spec(
    name: &'static str,
    attr: Attr,
    fields: &'static [&'static Field],
    plain: bool,
    columns: &'static [&'static str],
) -> Spec {
    Spec {
        name,
        attr,
        fields,
        plain,
        columns,
    }
}

/// [`Spec::plain`]: the value is its fields' values.
const PLAIN: bool = true;
/// [`Spec::plain`] false: the value is made from its fields by psutil's rules.
const MADE: bool = false;

/// Every attribute, in [`Attr`]'s order.
#[rustfmt::skip]
pub(crate) static SPECS: [Spec; 24] = {
    use fields::*;
    use Attr::*;
    [
        spec("pid", Pid, &[&PID], MADE, &["pid"]),
        spec("ppid", Ppid, &[&PPID], PLAIN, &["ppid"]),
        spec("name", Name, &[&COMM], MADE, &["name", "name_bytes"]),
        spec("username", Username, &[&RUID], MADE, &["username", "username_bytes"]),
        spec("status", Status, &[&STATE], MADE, &["status"]),
        spec("cpu_times", CpuTimes, &[&UTIME_NS, &STIME_NS, &CUTIME_NS, &CSTIME_NS], PLAIN,
            &["cpu_user", "cpu_system", "cpu_children_user", "cpu_children_system"]),
        spec("memory_info", MemoryInfo,
            &[&RSS_BYTES, &VSIZE_BYTES, &SHARED_BYTES, &TEXT_BYTES, &DATA_BYTES], PLAIN,
            &["rss", "vms", "shared", "text", "data"]),
        spec("cmdline", Cmdline, &[&CMDLINE], MADE, &["cmdline", "cmdline_bytes"]),
        spec("num_threads", NumThreads, &[&NUM_THREADS], PLAIN, &["num_threads"]),
        spec("create_time", CreateTime, &[&START_TIME_NS], MADE, &["create_time"]),
        spec("io_counters", IoCounters,
            &[&SYSCR, &SYSCW, &READ_BYTES, &WRITE_BYTES, &RCHAR_BYTES, &WCHAR_BYTES], PLAIN,
            &["read_count", "write_count", "read_bytes", "write_bytes", "read_chars",
              "write_chars"]),
        spec("uids", Uids, &[&RUID, &EUID, &SUID], PLAIN,
            &["uid_real", "uid_effective", "uid_saved"]),
        spec("gids", Gids, &[&RGID, &EGID, &SGID], PLAIN,
            &["gid_real", "gid_effective", "gid_saved"]),
        spec("nice", Nice, &[&NICE], PLAIN, &["nice"]),
        spec("num_ctx_switches", NumCtxSwitches, &[&VOLUNTARY_SWITCHES, &INVOLUNTARY_SWITCHES],
            PLAIN, &["ctx_switches_voluntary", "ctx_switches_involuntary"]),
        spec("cpu_num", CpuNum, &[&PROCESSOR], PLAIN, &["cpu_num"]),
        // Answered by a pass, but no column in `snapshot()`.
        spec("exe", Exe, &[&EXE], MADE, &[]),
        spec("environ", Environ, &[], MADE, &[]),
        spec("num_fds", NumFds, &[&FDS], MADE, &[]),
        spec("cpu_percent", CpuPercent, &[&UTIME_NS, &STIME_NS], MADE, &[]),
        spec("memory_percent", MemoryPercent, &[&RSS_BYTES], MADE, &[]),
        spec("cpu_affinity", CpuAffinity, &[], MADE, &[]),
        spec("threads", Threads, &[], MADE, &[]),
        spec("terminal", Terminal, &[&TTY_NR], MADE, &[]),
    ]
};

impl Attr {
    /// Its row.
    pub(crate) fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    pub(crate) fn parse(name: &str) -> Option<Attr> {
        SPECS.iter().find(|s| s.name == name).map(|s| s.attr)
    }

    pub(crate) fn name(self) -> &'static str {
        self.spec().name
    }

    /// The fields of the model's table its value is read from ([`Spec::fields`]).
    pub(crate) fn fields(self) -> &'static [&'static Field] {
        self.spec().fields
    }

    /// Whether `snapshot()` has columns for the attribute.
    pub(crate) fn columnar(self) -> bool {
        !self.spec().columns.is_empty()
    }

    /// The fields a pass reads for the attribute: its fields, but none for `num_fds` without
    /// root, whose descriptors are then counted per process by listing, as psutil does
    /// (`values::Ctx::read_per_task`).
    fn pass_fields(self) -> &'static [&'static Field] {
        if self == Attr::NumFds && !caller_is_root() {
            return &[];
        }
        self.fields()
    }

    /// What the attribute needs beyond its fields' groups.
    fn more_groups(self, g: &mut Groups) {
        match self {
            // psutil guesses a denied executable from the first argument
            // (`psutil::guess_exe`).
            Attr::Exe if !caller_is_root() => g.insert(Group::Cmdline),
            // The environment is no field of the table.
            Attr::Environ => g.insert(Group::Environ),
            _ => {}
        }
    }
}

/// The groups and id needs of a list of attributes: base and stat always (they hold the
/// identity and the state every rule looks at), then each attribute's fields' groups and
/// [`Attr::more_groups`]. A field of the full credentials (real and saved ids) is asked as
/// the effective ones with real ids: a procfs pass then reads `status` for them
/// (`host::bulk`), and the BPF iterator's credentials block holds every id.
pub(crate) fn groups_for(attrs: &[Attr]) -> (Groups, bool) {
    let mut g = Groups::of(&[Group::Base, Group::Stat]);
    let mut real_ids = false;
    for a in attrs {
        for f in a.pass_fields() {
            match f.group {
                Group::CredFull => {
                    g.insert(Group::CredEffective);
                    real_ids = true;
                }
                group => group.ask(&mut g),
            }
        }
        a.more_groups(&mut g);
    }
    (g, real_ids)
}

/// Parses attribute names already checked by the Python side.
pub(crate) fn parse_attrs(names: &[String]) -> PyResult<Vec<Attr>> {
    names
        .iter()
        .map(|n| {
            Attr::parse(n).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("invalid attr name '{n}'"))
            })
        })
        .collect()
}

/// Whether this process runs as root (effective uid 0): procfs then lets it read every
/// process's files, and psutil raises no `AccessDenied` for them.
pub(crate) fn caller_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The names of every attribute a pass answers, in psutil's spelling, and whether
/// `snapshot()` has columns for it.
#[pyfunction]
pub(crate) fn attr_names() -> Vec<(&'static str, bool)> {
    SPECS.iter().map(|s| (s.name, s.attr.columnar())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attr_round_trips_by_name() {
        for (i, s) in SPECS.iter().enumerate() {
            assert_eq!(s.attr as usize, i, "{} out of Attr's order", s.name);
            assert_eq!(Attr::parse(s.name), Some(s.attr));
            assert_eq!(s.attr.name(), s.name);
        }
        assert_eq!(Attr::parse("cwd"), None);
    }

    #[test]
    fn every_field_is_in_the_models_table() {
        for s in &SPECS {
            for f in s.fields {
                assert!(fields::field(f.name).is_some(), "{}: {}", s.name, f.name);
            }
            if s.plain {
                assert_eq!(s.fields.len(), s.columns.len(), "{}", s.name);
            }
        }
    }

    #[test]
    fn groups_are_the_fields_groups_and_the_exceptions() {
        let root = caller_is_root();
        let base = Groups::of(&[Group::Base, Group::Stat]);
        let cred = base.with(Group::CredEffective);
        let cases: [(Attr, Groups, bool); 9] = [
            (Attr::Username, cred, true),
            (Attr::Uids, cred, true),
            (Attr::Gids, cred, true),
            (Attr::MemoryInfo, base.with(Group::Mem), false),
            (Attr::MemoryPercent, base.with(Group::Mem), false),
            (Attr::Environ, base.with(Group::Environ), false),
            (Attr::IoCounters, base.with(Group::Io), false),
            (Attr::NumCtxSwitches, base.with(Group::SchedSwitches), false),
            (Attr::Cmdline, base.with(Group::Cmdline), false),
        ];
        let plain_base = [
            Attr::Pid,
            Attr::Ppid,
            Attr::Name,
            Attr::Status,
            Attr::CpuTimes,
            Attr::NumThreads,
            Attr::CreateTime,
            Attr::Nice,
            Attr::CpuNum,
            Attr::CpuPercent,
            Attr::CpuAffinity,
            Attr::Threads,
            Attr::Terminal,
        ];
        for a in plain_base {
            assert_eq!(groups_for(&[a]), (base, false), "{}", a.name());
        }
        for (a, want, real) in cases {
            assert_eq!(groups_for(&[a]), (want, real), "{}", a.name());
        }
        let exe = base.with(Group::Exe).flag(Group::Cmdline, !root);
        assert_eq!(groups_for(&[Attr::Exe]), (exe, false));
        let fds = base.flag(Group::Fds, root);
        assert_eq!(groups_for(&[Attr::NumFds]), (fds, false));
    }
}
