//! One caller's answer from a shared pass: the service's pass (every task, every field, read
//! as root) cut down by [`super::visibility`] to what the caller's own /proc would show it,
//! and framed in chunks. The answer is planned first (which rows go, a few bytes a row, in
//! which chunks) and each chunk's rows are cut and encoded only when the writer asks for
//! it, so that a connection holds at most one chunk's rows and bytes whatever the pass
//! holds. The one question the rules ask of the host, whether a task's mm is dumpable, is
//! answered here from /proc, the way procfs itself tells it; the head tells a caller other
//! than root nothing of tasks it does not see.

use std::borrow::Cow;
use std::ffi::CString;
use std::path::Path;

use tasksnap_model::{Groups, Snapshot, Task, TaskId};

use super::peer::Caller;
use super::visibility::{Shown, Viewer};
use super::wire::{self, Answer};

/// A pass the service took, shared by the requests it answers.
#[derive(Debug)]
pub struct Pass {
    /// What it read.
    pub snapshot: Snapshot,
    /// How long it took, ns.
    pub pass_ns: u64,
    /// How it was taken (the collector's report: which pass, how many records, how command
    /// lines were read), for root's `-v`: its counts are of every task on the host.
    pub how: String,
    /// Where its time went, phase by phase (timings only), for every caller's `-v`.
    pub phases: String,
    /// How many requests it answers.
    pub shared_by: u32,
    /// Its generation, which a client names as its `since`: an opaque number the service
    /// makes (not a count of passes, which would tell a caller how often others ask).
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
    tasksnap_sys::owner_at(libc::AT_FDCWD, &c).is_ok_and(|(uid, _)| uid == euid)
}

/// Bytes a [`Reply`]'s plan holds at most per task of its passes (the rows to send, at most
/// twice their size in a grown vector; the viewer's answer per task and its index of
/// processes; a row gone): what a connection charges before it plans.
pub const PLAN_BYTES_PER_TASK: usize = 64;

/// The answer to one request, planned: its head, which rows go in which chunks. Made by
/// [`Reply::plan`]; [`Reply::chunk`] cuts and encodes one chunk's rows when asked.
#[derive(Debug)]
pub struct Reply<'c, 't> {
    viewer: Viewer<'c, 't>,
    /// The rows to send, in order: the task's index in the pass and how it is shown.
    rows: Vec<(u32, Shown)>,
    /// The chunks: first row, end row, and about the bytes its rows hold.
    chunks: Vec<(u32, u32, usize)>,
    head: Answer,
}

impl<'c, 't> Reply<'c, 't> {
    /// The answer to `asked` for `caller` from `pass`: the head, then the rows the caller may
    /// see ([`wire::CHUNK_TASKS`] a frame at most, about [`wire::CHUNK_BYTES`]), each with
    /// what procfs would show it. With `since` (the pass of the caller's last answer to the
    /// same query, which it holds), only the rows that differ from that answer go, and the
    /// head lists the rows gone: every value is still this pass's, so the caller's copy
    /// after applying them is exactly what a whole answer would be. `proc_root` is the
    /// service's /proc (for the dumpable question).
    pub fn plan(
        caller: &'c Caller,
        asked: &Groups,
        pass: &'t Pass,
        since: Option<&Pass>,
        proc_root: &Path,
    ) -> Reply<'c, 't> {
        let mut dumpable = |t: &Task| dumpable_by_owner(proc_root, t);
        let mut viewer = Viewer::new(caller, asked, &pass.snapshot.tasks);
        let (rows, gone) = match since {
            None => {
                let rows = (0..viewer.tasks().len())
                    .filter_map(|i| Some((i as u32, viewer.shown(i, &mut dumpable)?)))
                    .collect();
                (rows, Vec::new())
            }
            Some(before) => {
                let mut old = Viewer::new(caller, asked, &before.snapshot.tasks);
                differ(&mut viewer, &mut old, &mut dumpable)
            }
        };
        let tasks = viewer.tasks();
        let weight = |&(i, shown): &(u32, Shown)| match shown {
            Shown::Row(_) => tasks[i as usize].heap_bytes(),
            Shown::NoAccess { .. } => std::mem::size_of::<Task>(),
        };
        let chunks = cut_chunks(rows.iter().map(weight));
        let head = head(caller, pass, &rows, &chunks, since.is_none(), gone);
        Reply {
            viewer,
            rows,
            chunks,
            head,
        }
    }

    /// The head frame.
    pub fn head(&self) -> Result<Vec<u8>, postcard::Error> {
        wire::answer(&self.head)
    }

    /// How many chunks follow the head.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// About the bytes chunk `i`'s rows hold (what encoding it holds at most, give or take;
    /// what a writer charges before asking for it).
    pub fn chunk_bytes(&self, i: usize) -> usize {
        self.chunks.get(i).map_or(0, |c| c.2)
    }

    /// Chunk `i`'s frame: its rows cut now, encoded, let go.
    pub fn chunk(&self, i: usize) -> Result<Vec<u8>, postcard::Error> {
        let Some(&(from, to, _)) = self.chunks.get(i) else {
            return wire::tasks(&[]);
        };
        let rows: Vec<Cow<'t, Task>> = self.rows[from as usize..to as usize]
            .iter()
            .map(|&(t, shown)| self.viewer.row(t as usize, shown))
            .collect();
        wire::tasks(&rows)
    }

    /// The bytes the plan holds (the rows, the chunks, the viewer's answers, the rows gone).
    pub fn held_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<(u32, Shown)>()
            + self.chunks.capacity() * std::mem::size_of::<(u32, u32, usize)>()
            + self.head.gone.capacity() * std::mem::size_of::<TaskId>()
            + self.viewer.held_bytes()
    }
}

/// The head of an answer. The pass's counts are of every task it read (hidden ones too), its
/// description counts records of the whole host, and how many requests shared it says what
/// other users asked at that moment: for root only. Everyone else gets the pass's timings and
/// the count of its own rows. (The boot time is left to the caller, which reckons from its
/// own /proc's.)
fn head(
    caller: &Caller,
    pass: &Pass,
    rows: &[(u32, Shown)],
    chunks: &[(u32, u32, usize)],
    full: bool,
    gone: Vec<TaskId>,
) -> Answer {
    let s = &pass.snapshot;
    let root = caller.fsuid == 0;
    Answer {
        taken_at_unix_ns: s.taken_at_unix_ns,
        taken_at_boottime_ns: s.taken_at_boottime_ns,
        boot_time_unix_s: if root { s.boot_time_unix_s } else { 0 },
        stats: if root { s.stats } else { Default::default() },
        pass_ns: pass.pass_ns,
        pass: if root {
            format!("{} ({})", pass.how, pass.phases)
        } else {
            pass.phases.clone()
        },
        shared_by: if root { pass.shared_by } else { 1 },
        tasks: rows.len() as u64,
        chunks: chunks.len() as u32,
        generation: pass.generation,
        full,
        gone,
    }
}

/// Where an answer's rows, of these weights (bytes), are cut into chunks: at most
/// [`wire::CHUNK_TASKS`] rows and about [`wire::CHUNK_BYTES`] a chunk (a process with
/// thousands of threads and long command lines and environments would make a chunk of rows
/// hundreds of MB); one row heavier than that is a chunk of its own. Each chunk: first row,
/// end row, its weight.
fn cut_chunks(weights: impl Iterator<Item = usize>) -> Vec<(u32, u32, usize)> {
    let mut chunks = Vec::new();
    let (mut from, mut bytes, mut n) = (0u32, 0usize, 0u32);
    for (i, w) in weights.enumerate() {
        let i = i as u32;
        if i > from && ((i - from) as usize == wire::CHUNK_TASKS || bytes + w > wire::CHUNK_BYTES) {
            chunks.push((from, i, bytes));
            (from, bytes) = (i, 0);
        }
        bytes += w;
        n = i + 1;
    }
    if from < n {
        chunks.push((from, n, bytes));
    }
    chunks
}

/// The rows of `new` that are not in `old`'s answer as they are (new, or changed), and the
/// identities of the rows of `old`'s answer not in `new`. Both passes are in ascending
/// (tgid, tid) order.
fn differ(
    new: &mut Viewer<'_, '_>,
    old: &mut Viewer<'_, '_>,
    dumpable: &mut dyn FnMut(&Task) -> bool,
) -> (Vec<(u32, Shown)>, Vec<TaskId>) {
    let key = |t: &Task| (t.id.tgid, t.id.tid, t.id.start_time_ns);
    let (tasks, before) = (new.tasks(), old.tasks());
    let mut changed = Vec::new();
    let mut gone = Vec::new();
    // The old rows not yet passed, each with its index.
    let mut olds = before.iter().enumerate().peekable();
    for (i, task) in tasks.iter().enumerate() {
        let Some(shown) = new.shown(i, dumpable) else {
            continue;
        };
        while let Some((j, prev)) = olds.next_if(|(_, p)| key(p) < key(task)) {
            if old.shown(j, dumpable).is_some() {
                gone.push(prev.id);
            }
        }
        let same = olds
            .next_if(|(_, p)| key(p) == key(task))
            .and_then(|(j, _)| Some((j, old.shown(j, dumpable)?)))
            .is_some_and(|(j, was)| old.row(j, was) == new.row(i, shown));
        if !same {
            changed.push((i as u32, shown));
        }
    }
    for (j, prev) in olds {
        if old.shown(j, dumpable).is_some() {
            gone.push(prev.id);
        }
    }
    (changed, gone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::peer::Rules;
    use tasksnap_model::{Backend, Base, Cred, Group, SnapshotStats};

    const NOBODY: u32 = 65534;

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
        t.base = Some(Base::default());
        t.cred = Some(Cred::from_owner(if pid % 2 == 0 { 0 } else { NOBODY }, 0));
        t
    }

    fn pass(tasks: Vec<Task>) -> Pass {
        Pass {
            snapshot: Snapshot {
                taken_at_unix_ns: 1,
                taken_at_boottime_ns: 2,
                boot_time_unix_s: 3,
                backend: Backend::Bpf,
                tasks,
                stats: SnapshotStats {
                    vanished: 7,
                    ..SnapshotStats::default()
                },
            },
            pass_ns: 5,
            how: "walk into the arena: 1234 records".into(),
            phases: "walk 1.00 ms".into(),
            shared_by: 3,
            generation: 99,
        }
    }

    fn caller(uid: u32) -> Caller {
        Caller {
            pid: 900,
            fsuid: uid,
            fsgid: uid,
            rules: Rules::NONE,
            ..Caller::default()
        }
    }

    fn stat_only() -> Groups {
        Groups::of(&[Group::Stat])
    }

    /// Every task of an answer, read back from its frames.
    fn read_back(r: &Reply<'_, '_>) -> (Answer, Vec<Task>) {
        let head = r.head().expect("encode");
        let head = wire::decode_answer(&head[wire::HEADER_LEN..]).expect("decode");
        let mut tasks = Vec::new();
        for i in 0..r.chunks() {
            let f = r.chunk(i).expect("encode");
            wire::decode_tasks(&f[wire::HEADER_LEN..], &mut tasks).expect("decode");
        }
        (head, tasks)
    }

    #[test]
    fn chunks_are_cut_by_rows_and_by_bytes() {
        let cut = |w: &[usize]| -> Vec<(u32, u32)> {
            cut_chunks(w.iter().copied())
                .into_iter()
                .map(|(a, b, _)| (a, b))
                .collect()
        };
        let mut w = vec![300; 5000];
        assert_eq!(cut(&w), [(0, 2048), (2048, 4096), (4096, 5000)]);
        // Three rows of 6 MB command lines: each a chunk of its own, none empty, the others
        // about CHUNK_BYTES at most.
        for x in &mut w[10..13] {
            *x = 6 << 20;
        }
        let chunks = cut_chunks(w.iter().copied());
        assert_eq!(chunks.first().map(|b| b.0), Some(0));
        assert_eq!(chunks.last().map(|b| b.1), Some(5000));
        assert!(chunks
            .windows(2)
            .all(|c| c[0].1 == c[1].0 && c[0].0 < c[0].1));
        for &(a, b, bytes) in &chunks {
            assert!(
                b - a == 1 || bytes <= wire::CHUNK_BYTES,
                "{a}..{b}: {bytes}"
            );
        }
        assert!(cut(&[]).is_empty());
    }

    #[test]
    fn a_chunk_is_cut_when_it_is_sent_and_the_rows_come_back_whole() {
        let p = pass((1..=5000).map(|i| t(i, 1, i as u64)).collect());
        let who = caller(NOBODY);
        let r = Reply::plan(&who, &stat_only(), &p, None, Path::new("/nonexistent"));
        assert_eq!(r.chunks(), 3);
        let (head, tasks) = read_back(&r);
        assert_eq!((head.tasks, head.chunks, head.full), (5000, 3, true));
        assert_eq!(tasks.len(), 5000);
        assert!(tasks
            .iter()
            .zip(&p.snapshot.tasks)
            .all(|(a, b)| a.id == b.id && a.stat == b.stat && a.base.is_none()));
        // What a plan holds is a few bytes a task, not the rows.
        assert!(
            r.held_bytes() <= 5000 * PLAN_BYTES_PER_TASK,
            "{}",
            r.held_bytes()
        );
    }

    #[test]
    fn only_what_differs_goes_and_what_went_is_named() {
        let old = pass(vec![t(1, 1, 5), t(2, 1, 5), t(3, 1, 5), t(5, 1, 5)]);
        // 2 changed, 3 gone, 4 new, 5 reused (another start time), 1 as it was.
        let new = pass(vec![t(1, 1, 5), t(2, 1, 6), t(4, 1, 0), t(5, 2, 0)]);
        let who = caller(NOBODY);
        let r = Reply::plan(&who, &stat_only(), &new, Some(&old), Path::new("/x"));
        let (head, changed) = read_back(&r);
        assert!(!head.full);
        let ids: Vec<(i32, u64)> = changed
            .iter()
            .map(|r| (r.id.tgid, r.id.start_time_ns))
            .collect();
        assert_eq!(ids, [(2, 1), (4, 1), (5, 2)]);
        let gone: Vec<(i32, u64)> = head
            .gone
            .iter()
            .map(|g| (g.tgid, g.start_time_ns))
            .collect();
        assert_eq!(gone, [(3, 1), (5, 1)]);
    }

    #[test]
    fn the_head_tells_only_root_of_the_whole_host() {
        let p = pass(vec![t(1, 1, 5), t(2, 1, 5)]);
        for (uid, root) in [(NOBODY, false), (0, true)] {
            let who = caller(uid);
            let r = Reply::plan(&who, &stat_only(), &p, None, Path::new("/x"));
            let (head, _) = read_back(&r);
            assert_eq!(head.tasks, 2);
            assert_eq!(head.pass_ns, 5);
            if root {
                assert_eq!(
                    head.pass,
                    "walk into the arena: 1234 records (walk 1.00 ms)"
                );
                assert_eq!((head.shared_by, head.stats.vanished), (3, 7));
                assert_eq!(head.boot_time_unix_s, 3);
            } else {
                assert_eq!(head.pass, "walk 1.00 ms");
                assert_eq!((head.shared_by, head.stats.vanished), (1, 0));
                assert_eq!(head.boot_time_unix_s, 0);
            }
        }
    }
}
