//! One caller's answer from a shared pass: the service's pass (every task, every field, read
//! as root) cut down by [`super::visibility`] to what the caller's own /proc would show it,
//! and framed in chunks. The one question the rules ask of the host, whether a task's mm is dumpable,
//! is answered here from /proc, the way procfs itself tells it.

use std::borrow::Cow;
use std::ffi::CString;
use std::path::Path;

use tasksnap_model::{Groups, Snapshot, Task, TaskId};

use super::peer::Caller;
use super::visibility;
use super::wire::{self, Answer};

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
    /// Its generation (increasing), which a client names as its `since`.
    pub generation: u64,
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

/// The frames answering `asked` for `caller` from `pass`, in order: the head, then the
/// rows the caller may see ([`wire::CHUNK_TASKS`] a frame), each with what procfs would show
/// it; each frame is encoded only when asked for, so a writer holds one at a time.
/// With `since` (the pass of the caller's last answer to the same query, which it holds),
/// only the rows that differ from that answer go, and the head lists the rows gone: every
/// value is still this pass's, so the caller's copy after applying them is exactly what a
/// whole answer would be. `proc_root` is the service's /proc (for the dumpable question).
pub fn frames<'a>(
    caller: &Caller,
    asked: &Groups,
    pass: &'a Pass,
    since: Option<&Pass>,
    proc_root: &Path,
) -> impl Iterator<Item = Result<Vec<u8>, postcard::Error>> + 'a {
    let mut dumpable = |t: &Task| dumpable_by_owner(proc_root, t);
    let mut rows: Vec<Cow<'a, Task>> =
        visibility::view(caller, asked, &pass.snapshot.tasks, &mut dumpable);
    let mut gone = Vec::new();
    if let Some(before) = since {
        let old = visibility::view(caller, asked, &before.snapshot.tasks, &mut dumpable);
        (rows, gone) = differ(rows, &old);
    }
    let bounds = chunk_bounds(&rows);
    let s = &pass.snapshot;
    // The pass's counts are of every task it read (hidden ones too), and how many requests
    // shared it says what other users asked at that moment: for root only.
    let root = caller.fsuid == 0;
    let head = wire::answer(&Answer {
        taken_at_unix_ns: s.taken_at_unix_ns,
        taken_at_boottime_ns: s.taken_at_boottime_ns,
        boot_time_unix_s: s.boot_time_unix_s,
        stats: if root { s.stats } else { Default::default() },
        pass_ns: pass.pass_ns,
        pass: pass.how.clone(),
        shared_by: if root { pass.shared_by } else { 1 },
        tasks: rows.len() as u64,
        chunks: bounds.len() as u32,
        generation: pass.generation,
        full: since.is_none(),
        gone,
    });
    let chunks = bounds
        .into_iter()
        .map(move |(from, to)| wire::tasks(&rows[from..to]));
    std::iter::once(head).chain(chunks)
}

/// Where an answer's rows are cut into chunks: at most [`wire::CHUNK_TASKS`] rows and about
/// [`wire::CHUNK_BYTES`] a chunk (a process with thousands of threads and long command lines
/// and environments would make a chunk of rows hundreds of MB).
fn chunk_bounds(rows: &[Cow<'_, Task>]) -> Vec<(usize, usize)> {
    let weight = |t: &Task| {
        256 + t.cmdline.as_ref().map_or(0, |c| c.len())
            + t.environ.as_ref().map_or(0, |e| e.len())
            + t.exe.as_ref().map_or(0, |e| e.len())
    };
    let mut bounds = Vec::new();
    let (mut from, mut bytes) = (0, 0);
    for (i, r) in rows.iter().enumerate() {
        let w = weight(r);
        if i > from && (i - from == wire::CHUNK_TASKS || bytes + w > wire::CHUNK_BYTES) {
            bounds.push((from, i));
            (from, bytes) = (i, 0);
        }
        bytes += w;
    }
    if from < rows.len() {
        bounds.push((from, rows.len()));
    }
    bounds
}

/// The rows of `new` that are not in `old` as they are (new, or changed), and the identities
/// of `old`'s rows not in `new`. Both are in the passes' order, ascending (tgid, tid).
fn differ<'a>(new: Vec<Cow<'a, Task>>, old: &[Cow<'_, Task>]) -> (Vec<Cow<'a, Task>>, Vec<TaskId>) {
    let key = |t: &Task| (t.id.tgid, t.id.tid, t.id.start_time_ns);
    let mut changed = Vec::new();
    let mut gone = Vec::new();
    let mut o = old.iter().peekable();
    for row in new {
        while let Some(prev) = o.next_if(|p| key(p) < key(&row)) {
            gone.push(prev.id);
        }
        match o.next_if(|p| key(p) == key(&row)) {
            Some(prev) if **prev == *row => {}
            _ => changed.push(row),
        }
    }
    gone.extend(o.map(|p| p.id));
    (changed, gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: i32, start: u64, utime: u64) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: start,
        });
        t.stat = Some(tasksnap_model::Stat {
            utime_ns: utime,
            ..Default::default()
        });
        t
    }

    #[test]
    fn chunks_are_cut_by_rows_and_by_bytes() {
        let mut rows: Vec<Task> = (1..=5000).map(|p| t(p, 1, 0)).collect();
        let cut = |rows: &[Task]| chunk_bounds(&rows.iter().map(Cow::Borrowed).collect::<Vec<_>>());
        assert_eq!(cut(&rows), [(0, 2048), (2048, 4096), (4096, 5000)]);
        // Three rows of 6 MB command lines: no chunk over ~16 MB, none empty.
        for r in &mut rows[10..13] {
            r.cmdline = Some(vec![b'x'; 6 << 20]);
        }
        let b = cut(&rows);
        assert_eq!(b.first().map(|b| b.0), Some(0));
        assert_eq!(b.last().map(|b| b.1), Some(5000));
        assert!(b.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
        assert!(b.len() >= 4, "{b:?}");
        assert!(cut(&[]).is_empty());
    }

    #[test]
    fn only_what_differs_goes_and_what_went_is_named() {
        let old = [t(1, 1, 5), t(2, 1, 5), t(3, 1, 5), t(5, 1, 5)];
        // 2 changed, 3 gone, 4 new, 5 reused (another start time), 1 as it was.
        let new = [t(1, 1, 5), t(2, 1, 6), t(4, 1, 0), t(5, 2, 0)];
        let old: Vec<Cow<'_, Task>> = old.iter().map(Cow::Borrowed).collect();
        let (changed, gone) = differ(new.iter().map(Cow::Borrowed).collect(), &old);
        let ids: Vec<(i32, u64)> = changed
            .iter()
            .map(|r| (r.id.tgid, r.id.start_time_ns))
            .collect();
        assert_eq!(ids, [(2, 1), (4, 1), (5, 2)]);
        let gone: Vec<(i32, u64)> = gone.iter().map(|g| (g.tgid, g.start_time_ns)).collect();
        assert_eq!(gone, [(3, 1), (5, 1)]);
    }
}
