//! procfs's permission rules, applied to a snapshot for one caller: which rows exist for it
//! and what each row may hold, so that the service never shows a caller a byte its own /proc
//! would not. Pure: no I/O; the only question it asks is the `dumpable` callback of [`view`].
//!
//! Each rule is written once, here, with the kernel function it mirrors (Linux 6.18, checked
//! by experiment in crates/collect/tests/service_visibility.rs):
//!
//! **ptrace read** ([`ptrace_readable`], kernel/ptrace.c `__ptrace_may_access()` with
//! `PTRACE_MODE_READ_FSCREDS`): a task of the caller's own thread group, always (LSMs are not
//! asked); else the caller's fsuid equals the task's real, effective and saved uid and its
//! fsgid the three gids (`real_cred`), or the caller holds `CAP_SYS_PTRACE`; then the task must
//! be "still dumpable" (`task_still_dumpable()`, commit 31e62c2ebbfd, in 6.18.y and the stable
//! series): with an mm, `SUID_DUMP_USER`; without one (a zombie), the dumpability cached when
//! it let its mm go (`task->user_dumpable`); a kernel thread never had one, so never; in every
//! case `CAP_SYS_PTRACE` overrides. (Kernels without that commit skipped the check for tasks
//! without an mm: there this rule shows less than procfs, never more.)
//!
//! **rows** (`hidepid=`, fs/proc/base.c `has_pid_permissions()`, `proc_pid_readdir()`,
//! `proc_pid_lookup()`, `proc_pid_permission()`, `pid_getattr()`): `off`, every row;
//! `invisible`, only ptrace-readable tasks, or every task for a member of the mount's `gid=`
//! (`in_group_p()`: fsgid or a supplementary group; without `gid=` the kernel's pid_gid is 0,
//! and fs/proc/inode.c `proc_show_options()` prints no `gid=0`, so group 0 is exempt);
//! `ptraceable`, only ptrace-readable tasks, `gid=` does not help; `noaccess`, every pid is
//! listed and `stat(/proc/PID)` works, but every file under it fails with EPERM: tasksnap's
//! procfs reader (procfs/reader.rs) then drops the row when it needs `stat` (base, stat,
//! layout, or cmdline), else keeps identity with a start time of 0, the directory owner as
//! effective ids (`cred_effective`; a kernel thread's is root) and zeroed namespaces. A thread
//! row needs both its own and its process's permission (the path runs through /proc/TGID).
//!
//! **groups of a row the caller may not ptrace-read** (what the procfs reader makes of the
//! kernel's answer; `None` is "unreadable", never a zero the kernel did not print):
//!
//! | group | denied caller gets | kernel |
//! |---|---|---|
//! | `io` | `None` (EACCES) | `do_io_accounting()`; file 0400 owned by `task_dump_owner()` |
//! | `environ` | `None` (EACCES) | `environ_open()` -> `proc_mem_open()` -> `mm_access()`; file 0400 |
//! | `exe` | `None` (EACCES) | `proc_pid_readlink()` -> `proc_fd_access_allowed()` |
//! | `smaps` (`Extra::smaps_kb`) | `None` (EACCES) | `smaps_rollup_open()` -> `proc_mem_open()` |
//! | `ns` (`Extra::ns`) | every inode 0 (EACCES per link) | fs/proc/namespaces.c `proc_ns_get_link()` |
//! | `wchan` | `Some("")` (the kernel prints `0`) | `proc_pid_wchan()` |
//! | `layout` | RSS limit kept; start/end code 1 with an mm, 0 without; start stack, esp, eip 0 | fs/proc/array.c `do_task_stat()` |
//! | `label` | kept; `None` under SELinux unless `CAP_SYS_PTRACE` | `selinux_getprocattr()` |
//! | `fds` | kept (the count needs no ptrace access) | fs/proc/fd.c `proc_fd_getattr()` (6.2+) |
//! | base, cred, stat, mem, status groups, cmdline, cgroup, sched, oom, autogroup, loginuid, login | kept (world-readable) | |
//!
//! `io` and `environ` are 0400 files besides: readable only when the caller's fsuid is their
//! owner (`task_dump_owner()`: the euid, or root for a task without an mm or not dumpable) or
//! it holds `CAP_DAC_READ_SEARCH`/`CAP_DAC_OVERRIDE`. So a user's own zombie, or its own
//! non-dumpable process, has no `io` or `environ` for it even where ptrace would allow.
//!
//! **LSMs** ([`Rules`]): SELinux, AppArmor, Smack and TOMOYO can deny ptrace reads by policy,
//! which is not emulated: where one is active, the gated groups are denied to every caller
//! without `CAP_SYS_PTRACE` (its own thread group excepted), and a caller whose /proc hides
//! pids is refused (peer.rs). Not emulated either, and not gated: Landlock (a sandboxed caller
//! may not read tasks outside its domain) and BPF LSM programs; and the kernel's two
//! allowances this rule does not grant (a caller owning the user namespace of a task, which
//! then holds `CAP_SYS_PTRACE` in it; a task sharing the caller's mm): there the service shows
//! less than procfs.

use std::borrow::Cow;
use std::collections::HashMap;

use tasksnap_model::{Groups, Layout, Task, TaskState};

use super::peer::{Caller, HidePid};

/// What the host's security modules mean for the rules (the same for every caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// An LSM that may deny ptrace reads by policy is active: the gated groups go to callers
    /// with `CAP_SYS_PTRACE` only, and a caller whose /proc hides pids is refused.
    pub lsm_gates: bool,
    /// SELinux is active: reading another task's label needs a policy permission
    /// (`PROCESS__GETATTR`), so labels go to callers with `CAP_SYS_PTRACE` only.
    pub label_gated: bool,
}

impl Rules {
    /// Nothing known of the host's LSMs: assume the worst.
    pub const UNKNOWN: Rules = Rules {
        lsm_gates: true,
        label_gated: true,
    };
    /// No LSM that gates ptrace reads or labels is active.
    pub const NONE: Rules = Rules {
        lsm_gates: false,
        label_gated: false,
    };

    /// The rules for the active LSMs listed in `/sys/kernel/security/lsm` (comma-separated
    /// names, e.g. `lockdown,capability,landlock,yama,apparmor`).
    pub fn from_lsm_list(list: &[u8]) -> Rules {
        let names = || {
            list.split(|&c| c == b',' || c.is_ascii_whitespace())
                .filter(|n| !n.is_empty())
        };
        Rules {
            lsm_gates: names()
                .any(|n| matches!(n, b"selinux" | b"apparmor" | b"smack" | b"tomoyo")),
            label_gated: names().any(|n| n == b"selinux"),
        }
    }
}

impl Default for Rules {
    /// [`Rules::UNKNOWN`]: a caller made without the host's rules is judged conservatively.
    fn default() -> Rules {
        Rules::UNKNOWN
    }
}

/// True when `asked` has a group that procfs gives only to ptrace-readers (or to the file's
/// owner): the rows then need the ids and the base group to be judged.
fn asks_gated(caller: &Caller, asked: &Groups) -> bool {
    asked.io
        || asked.environ
        || asked.exe
        || asked.smaps
        || asked.ns
        || asked.wchan
        || asked.layout
        || (asked.label && caller.rules.label_gated)
}

/// The groups the service reads to answer `asked` for `caller`: exactly `asked` when no rule
/// depends on a task's ids (no `hidepid`, no gated group asked, or a caller holding
/// `CAP_SYS_PTRACE`: `ps -ef` and `ps aux` as nobody pay for nothing more); else `asked` plus
/// `cred_effective` (the real, effective, saved and filesystem ids, which the BPF pass gives
/// without reading /proc; `cred_full` would read every task's status for the supplementary
/// groups, which no rule needs) and `base` (kernel thread, zombie).
pub fn groups_to_read(caller: &Caller, asked: &Groups) -> Groups {
    // CAP_SYS_PTRACE passes every ptrace test (every pid is permitted); the 0400 files
    // need a DAC capability besides.
    let hides = caller.proc_mount.hidepid != HidePid::Off && !caller.cap_sys_ptrace;
    let gated = asks_gated(caller, asked) && !(caller.cap_sys_ptrace && caller.cap_dac_read);
    if !(hides || gated) {
        return *asked;
    }
    Groups {
        cred_effective: true,
        base: true,
        ..*asked
    }
}

/// Whether `task` has an mm (`get_task_mm()` is not NULL): not a kernel thread, not a zombie
/// or dead task. From the base group; without it, from what /proc/PID/stat showed root of the
/// code addresses (both 0 without an mm).
fn has_mm(task: &Task) -> bool {
    match &task.base {
        Some(b) => !(b.kthread || matches!(b.state, TaskState::Zombie | TaskState::Dead)),
        None => task
            .layout
            .as_deref()
            .is_some_and(|l| l.start_code != 0 || l.end_code != 0),
    }
}

/// `ptrace_may_access(task, PTRACE_MODE_READ_FSCREDS)` for `caller` (kernel/ptrace.c
/// `__ptrace_may_access()`; see the module's header). `dumpable` is asked only when the
/// credentials matched and the task is not a kernel thread.
pub fn ptrace_readable(
    caller: &Caller,
    task: &Task,
    dumpable: &mut dyn FnMut(&Task) -> bool,
) -> bool {
    // same_thread_group(): "Don't let security modules deny introspection".
    if task.id.tgid == caller.pid {
        return true;
    }
    // ptrace_has_cap() passes both the credential and the dumpability test. (The service
    // refuses callers of other user namespaces, so the caller's capability is in the init
    // namespace, an ancestor of every task's.)
    if caller.cap_sys_ptrace {
        return true;
    }
    if caller.rules.lsm_gates {
        return false;
    }
    // Only exact ids decide: a row that knows only the effective ones (a procfs read of
    // `cred_effective`, the owner of /proc/PID) is judged not readable.
    let Some(c) = task.cred.as_ref().filter(|c| !c.effective_only) else {
        return false;
    };
    let (u, g) = (caller.fsuid, caller.fsgid);
    if !(u == c.ruid && u == c.euid && u == c.suid && g == c.rgid && g == c.egid && g == c.sgid) {
        return false;
    }
    // task_still_dumpable(): a kernel thread never set user_dumpable; without the base
    // group nothing says it is not one.
    match &task.base {
        Some(b) if !b.kthread => dumpable(task),
        _ => false,
    }
}

/// What one row may show the caller: computed once per row, the dumpability asked at most
/// once.
struct Access {
    /// ptrace-readable.
    ptrace: bool,
    /// The 0400 files (`io`, `environ`) pass the DAC check.
    dac_0400: bool,
}

fn access(
    caller: &Caller,
    task: &Task,
    ptrace: bool,
    need_dac: bool,
    dumpable: &mut dyn FnMut(&Task) -> bool,
) -> Access {
    let dac_0400 = ptrace
        && need_dac
        && (caller.cap_dac_read || {
            // task_dump_owner() of a 0400 file: root for a kernel thread, a task without an
            // mm or a non-dumpable one; else the task's euid. The euid is known exactly in
            // both kinds of cred (the effective ids are the owner's).
            let euid = task.cred.as_ref().map(|c| c.euid);
            let owner = match euid {
                Some(e) if e != 0 && has_mm(task) && dumpable(task) => Some(e),
                Some(_) => Some(0),
                None => None,
            };
            owner == Some(caller.fsuid)
        });
    Access { ptrace, dac_0400 }
}

/// Whether the caller is in the mount's `gid=` group (`in_group_p(pid_gid)`, fsgid or a
/// supplementary group), which exempts it from `hidepid=noaccess` and `invisible`. The
/// kernel's pid_gid is 0 unless `gid=` says otherwise.
fn gid_exempt(caller: &Caller) -> bool {
    let gid = caller.proc_mount.gid.unwrap_or(0);
    caller.fsgid == gid || caller.groups.contains(&gid)
}

/// The row tasksnap's procfs reader makes of a task whose every file is EPERM
/// (`hidepid=noaccess`, procfs/reader.rs `TaskReader::read`): `None` when it drops the task.
/// `dir_ok`: `stat(2)` of the task's directory works (for a thread, only when its process's
/// directory may be searched).
fn noaccess_row(task: &Task, asked: &Groups, dir_ok: bool) -> Option<Task> {
    // stat is read first (for the stat groups, or to skip kernel threads and zombies before
    // cmdline): EPERM there drops the task.
    if asked.needs_stat_file() || asked.cmdline {
        return None;
    }
    let proven_otherwise =
        asked.needs_status_file() || asked.cred_effective || asked.needs_cgroup_file();
    if !proven_otherwise && !dir_ok {
        // The existence check stats the directory; EPERM drops the task.
        return None;
    }
    // Identity only: the start time comes from stat, which was not read.
    let mut row = Task::new(tasksnap_model::TaskId {
        start_time_ns: 0,
        ..task.id
    });
    if asked.cred_effective && dir_ok {
        // The directory's owner (task_dump_owner() keeps the euid for 0555 directories;
        // root for a kernel thread).
        let kthread = task.base.as_ref().is_some_and(|b| b.kthread);
        if let Some(c) = &task.cred {
            row.cred = Some(if kthread {
                tasksnap_model::Cred::from_owner(0, 0)
            } else {
                tasksnap_model::Cred::from_owner(c.euid, c.egid)
            });
        }
    }
    if asked.ns {
        // Each link fails: the reader keeps 0 for it.
        row.extra_mut().ns = Some([0; 8]);
    }
    Some(row)
}

/// The groups of `row` that `asked` does not ask for, removed (read only for the rules).
fn strip_unasked(row: &mut Cow<'_, Task>, asked: &Groups) {
    if !asked.base && row.base.is_some() {
        row.to_mut().base = None;
    }
    if !asked.cred_full && !asked.cred_effective {
        if row.cred.is_some() {
            row.to_mut().cred = None;
        }
    } else if !asked.cred_full && row.cred.as_ref().is_some_and(|c| c.groups.is_some()) {
        // What a collector opened for `cred_effective` alone gives: the ids, no groups.
        if let Some(c) = row.to_mut().cred.as_mut() {
            c.groups = None;
        }
    }
}

/// The gated groups of `row`, as procfs shows them to a caller with `a`'s access.
fn gate(row: &mut Cow<'_, Task>, caller: &Caller, a: &Access) {
    if !a.dac_0400 {
        if row.io.is_some() {
            row.to_mut().io = None;
        }
        if row.environ.is_some() {
            row.to_mut().environ = None;
        }
    }
    let label_denied = caller.rules.label_gated && !caller.cap_sys_ptrace;
    if label_denied && row.extra.as_ref().is_some_and(|x| x.label.is_some()) {
        row.to_mut().extra_mut().label = None;
    }
    if a.ptrace {
        return;
    }
    if row.exe.is_some() {
        row.to_mut().exe = None;
    }
    if row.wchan.as_deref().is_some_and(|w| !w.is_empty()) {
        row.to_mut().wchan = Some(String::new());
    }
    if let Some(l) = row.layout.as_deref() {
        let code = u64::from(has_mm(row));
        let masked = Layout {
            rsslim_bytes: l.rsslim_bytes,
            start_code: code,
            end_code: code,
            start_stack: 0,
            kstkesp: 0,
            kstkeip: 0,
        };
        if *l != masked {
            row.to_mut().layout = Some(Box::new(masked));
        }
    }
    let (smaps, ns) = row.extra.as_deref().map_or((false, false), |x| {
        (x.smaps_kb.is_some(), x.ns.is_some_and(|n| n != [0; 8]))
    });
    if smaps {
        row.to_mut().extra_mut().smaps_kb = None;
    }
    if ns {
        row.to_mut().extra_mut().ns = Some([0; 8]);
    }
}

/// The rows `caller` may see of `tasks` (read with [`groups_to_read`]), each holding only
/// `asked` groups and what procfs would show the caller of them, in the order of `tasks`;
/// borrowed where nothing changes. `dumpable` tells whether a task is dumpable
/// (`SUID_DUMP_USER`; for a task without an mm, a zombie, whether it was when it let its mm
/// go, `task->user_dumpable`: answer `false` when that cannot be told); it is asked only of
/// tasks whose credentials already match the caller's.
pub fn view<'a>(
    caller: &Caller,
    asked: &Groups,
    tasks: &'a [Task],
    dumpable: &mut dyn FnMut(&Task) -> bool,
) -> Vec<Cow<'a, Task>> {
    let hidepid = caller.proc_mount.hidepid;
    let gated = asks_gated(caller, asked) && !(caller.cap_sys_ptrace && caller.cap_dac_read);
    let hides = !caller.cap_sys_ptrace && hidepid != HidePid::Off;
    let need_dac = asked.io || asked.environ;

    // A thread's path runs through its process's directory: under hidepid its process
    // must be permitted too. The process's row is found by its tgid.
    let leaders: HashMap<i32, usize> = if hides && tasks.iter().any(|t| !t.id.is_leader()) {
        tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.id.is_leader())
            .map(|(i, t)| (t.id.tgid, i))
            .collect()
    } else {
        HashMap::new()
    };
    // Each row's ptrace answer, computed at most once (a leader's is asked by its threads).
    let mut ptrace_of: Vec<Option<bool>> = if hides || gated {
        vec![None; tasks.len()]
    } else {
        Vec::new()
    };
    let mut ptrace_at = |i: usize, dumpable: &mut dyn FnMut(&Task) -> bool| -> bool {
        *ptrace_of[i].get_or_insert_with(|| ptrace_readable(caller, &tasks[i], dumpable))
    };

    let mut out = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.iter().enumerate() {
        if hides {
            // has_pid_permissions() (fs/proc/base.c).
            let exempt = hidepid != HidePid::Ptraceable && gid_exempt(caller);
            let mut permitted = |j: usize, dumpable: &mut dyn FnMut(&Task) -> bool| {
                exempt || ptrace_at(j, dumpable)
            };
            let own = permitted(i, dumpable);
            let process = if task.id.is_leader() {
                own
            } else {
                match leaders.get(&task.id.tgid) {
                    Some(&j) => permitted(j, dumpable),
                    // Its process's row is not in the snapshot: nothing says it may be
                    // searched.
                    None => false,
                }
            };
            if !(own && process) {
                if hidepid == HidePid::NoAccess {
                    if let Some(row) = noaccess_row(task, asked, process) {
                        out.push(Cow::Owned(row));
                    }
                }
                continue;
            }
        }
        let mut row = Cow::Borrowed(task);
        if gated {
            let p = ptrace_at(i, dumpable);
            let a = access(caller, task, p, need_dac, dumpable);
            gate(&mut row, caller, &a);
        }
        strip_unasked(&mut row, asked);
        out.push(row);
    }
    out
}
