//! One caller's answer from a shared pass: the service's pass (every task, every field, read
//! as root) cut down by [`super::visibility`] to what the caller's own /proc would show it,
//! and framed. The one question the rules ask of the host, whether a task's mm is dumpable,
//! is answered here from /proc, the way procfs itself tells it.

use std::borrow::Cow;
use std::ffi::CString;
use std::path::Path;

use tasksnap_model::{Groups, Snapshot, Task};

use super::peer::Caller;
use super::visibility;
use super::wire::{self, AnswerOut};

/// A pass the service took, shared by the requests it answers.
#[derive(Debug)]
pub struct Pass {
    /// What it read.
    pub snapshot: Snapshot,
    /// How long it took, ns.
    pub pass_ns: u64,
    /// How it was taken (the collector's report), for a client's `-v`.
    pub how: String,
    /// How many requests it answers.
    pub shared_by: u32,
}

/// Whether the mm of `task` is dumpable (`get_dumpable() == SUID_DUMP_USER`), as procfs
/// tells it: `task_dump_owner()` (fs/proc/base.c) makes the files of a task whose mm is not
/// dumpable root's, so the owner of /proc/TGID/task/TID/stat is the task's euid exactly when
/// it is. A task whose euid is root cannot be told apart that way: it is taken as not
/// dumpable (the rule then shows less, never more). Gone or unreadable: not dumpable.
pub fn dumpable_by_owner(proc_root: &Path, task: &Task) -> bool {
    let Some(euid) = task.cred.as_ref().map(|c| c.euid) else {
        return false;
    };
    if euid == 0 {
        return false;
    }
    let path = proc_root.join(format!("{}/task/{}/stat", task.id.tgid, task.id.tid));
    let Ok(c) = CString::new(path.into_os_string().into_encoded_bytes()) else {
        return false;
    };
    tasksnap_procfs::sys::owner_at(libc::AT_FDCWD, &c).is_ok_and(|(uid, _)| uid == euid)
}

/// The frame answering `asked` for `caller` from `pass`: the rows the caller may see, each
/// with what procfs would show it. `proc_root` is the service's /proc (for the dumpable
/// question).
pub fn frame(
    caller: &Caller,
    asked: &Groups,
    pass: &Pass,
    proc_root: &Path,
) -> Result<Vec<u8>, postcard::Error> {
    let rows: Vec<Cow<'_, Task>> =
        visibility::view(caller, asked, &pass.snapshot.tasks, &mut |t| {
            dumpable_by_owner(proc_root, t)
        });
    let s = &pass.snapshot;
    wire::answer(&AnswerOut {
        taken_at_unix_ns: s.taken_at_unix_ns,
        taken_at_boottime_ns: s.taken_at_boottime_ns,
        boot_time_unix_s: s.boot_time_unix_s,
        tasks: rows,
        stats: s.stats,
        pass_ns: pass.pass_ns,
        pass: pass.how.clone(),
        shared_by: pass.shared_by,
    })
}
