//! What a fill after a pass needs to know of the pass's tasks once its records are gone:
//! each task's css_set, so that a cgroup is read once per set ([`PassIndex::read_cgroups`]),
//! and, for a process, what the command-line copy by pid list asks for (its pid in the
//! initial namespace and its start time, which the program checks so that a reused pid is
//! never read: cmdlines.rs).
//!
//! Cgroups: a task's /proc/PID/cgroup is the paths of its css_set's cgroups
//! (kernel/cgroup/cgroup.c proc_cgroup_show() prints task_css_set()), so tasks of one set
//! have the same text. The pass writes each task's css_set (record.h `css_set_key`), and a
//! snapshot or fill that wants cgroups reads the file of one task per distinct set and gives
//! the others the same text, shared: on a host of 50,000 processes in a few hundred sets
//! that is a few hundred reads instead of 50,000. Except a task past PF_EXITING (a zombie,
//! or one exiting): proc_cgroup_show() prints its cgroup v1 paths as `/` whatever its set
//! (the task has left the set's v1 cgroups), so such a task is read on its own.
//!
//! The set is the one the pass saw: a task that moves between the pass and the read of its
//! set's file has, like a task read from /proc one file after another, the membership of
//! one moment or the other; the change set marks the move, so the next read has it.

use std::collections::HashMap;

use tasksnap_model::{Cgroup, Group, Groups, SnapshotStats, TaskId};

use super::arena::CmdRequest;
use super::decode::{Record, PF_EXITING, TS_GROUP_KNAME};
use crate::error::Error;
use crate::procfs::ProcfsCollector;

/// What the command-line copy asks for the task of `r`: a process (its main thread's
/// record), not a kernel thread (which has no command line).
pub(super) fn cmd_request(r: &Record<'_>) -> Option<CmdRequest> {
    let h = &r.hdr;
    (h.tid == h.tgid && h.groups & TS_GROUP_KNAME == 0).then_some(CmdRequest {
        pid: h.global_tid,
        tgid: h.tgid,
        start_boottime_ns: h.start_boottime_ns,
    })
}

/// A task's (tgid, tid), as fills name them.
pub(super) type Id = (i32, i32);

/// One task of the pass.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its css_set (`None`: exiting, read on its own).
    css_set: Option<u64>,
    /// What the command-line copy asks for (`None`: a thread or a kernel thread).
    cmd: Option<CmdRequest>,
}

/// The tasks of a pass, by (tgid, tid), sorted.
#[derive(Debug, Default)]
pub(super) struct PassIndex {
    by_id: Vec<(Id, Entry)>,
}

impl PassIndex {
    /// Takes the tasks of `records` (those with a base block), replacing the last ones and
    /// keeping their memory.
    pub fn refresh(&mut self, records: &[Record<'_>]) {
        self.by_id.clear();
        self.by_id.extend(records.iter().filter_map(|r| {
            let b = r.base()?;
            let entry = Entry {
                css_set: (b.flags & PF_EXITING == 0).then_some(b.css_set_key),
                cmd: cmd_request(r),
            };
            Some(((r.hdr.tgid as i32, r.hdr.tid as i32), entry))
        }));
        self.by_id.sort_unstable_by_key(|e| e.0);
    }

    /// Takes the tasks of `records` when a fill may follow (`wanted`), else forgets the
    /// last ones (a fill must never see another pass's).
    pub fn refresh_if(&mut self, wanted: bool, records: &[Record<'_>]) {
        if wanted {
            self.refresh(records);
        } else {
            self.by_id.clear();
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn get(&self, id: Id) -> Option<&Entry> {
        let i = self.by_id.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(&self.by_id[i].1)
    }

    /// Heap bytes held (for the footprint).
    pub fn heap_bytes(&self) -> usize {
        self.by_id.capacity() * std::mem::size_of::<(Id, Entry)>()
    }

    /// The identity of process `id` of the pass (its start time in clock ticks of `tick_ns`,
    /// as decode.rs gives it); `None` for a thread or a task the pass did not see.
    pub fn task_id(&self, id: Id, tick_ns: u64) -> Option<TaskId> {
        let start = self.get(id)?.cmd?.start_boottime_ns;
        Some(TaskId {
            tgid: id.0,
            tid: id.1,
            start_time_ns: start / tick_ns * tick_ns,
        })
    }

    /// The command-line copy's requests for the processes of `ids` the pass saw.
    pub fn cmd_requests(&self, ids: &[Id]) -> Vec<CmdRequest> {
        ids.iter()
            .filter_map(|&id| self.get(id)?.cmd)
            .collect()
    }

    /// The cgroups of `wanted`: /proc/PID/cgroup of the first task of each set among them,
    /// shared with the rest of its set; a task of no known set, or whose set's task could
    /// not be read (gone meanwhile), read on its own. A task missing from the answer could
    /// not be read (gone, or denied).
    pub fn read_cgroups(
        &self,
        procfs: &ProcfsCollector,
        wanted: &[Id],
        stats: &mut SnapshotStats,
    ) -> Result<HashMap<Id, Box<Cgroup>>, Error> {
        let cgroup = Groups::of(&[Group::Cgroup]);
        let set_of = |id: Id| self.get(id).and_then(|e| e.css_set);
        let mut first_of: HashMap<u64, Id> = HashMap::new();
        for &id in wanted {
            if let Some(key) = set_of(id) {
                first_of.entry(key).or_insert(id);
            }
        }
        let mut firsts: Vec<Id> = first_of.values().copied().collect();
        firsts.sort_unstable();
        let (read, s) = procfs.try_fill(&firsts, cgroup)?;
        stats.denied += s.denied;
        let by_set: HashMap<u64, Box<Cgroup>> = first_of
            .into_iter()
            .filter_map(|(key, id)| Some((key, read.get(&id)?.cgroup.clone()?)))
            .collect();
        let mut out = HashMap::with_capacity(wanted.len());
        let mut alone = Vec::new();
        for &id in wanted {
            match set_of(id).and_then(|k| by_set.get(&k)) {
                Some(c) => {
                    out.insert(id, c.clone());
                }
                None => alone.push(id),
            }
        }
        if !alone.is_empty() {
            let (read, s) = procfs.try_fill(&alone, cgroup)?;
            stats.denied += s.denied;
            out.extend(read.into_iter().filter_map(|(id, t)| Some((id, t.cgroup?))));
        }
        Ok(out)
    }
}
