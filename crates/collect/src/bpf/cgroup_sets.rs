//! Control-group membership read once per css_set. A task's /proc/PID/cgroup is the paths
//! of its css_set's cgroups (kernel/cgroup/cgroup.c proc_cgroup_show() prints
//! task_css_set()), so tasks of one css_set have the same text. The pass writes each task's
//! css_set (record.h `css_set_key`), and a snapshot or fill that wants cgroups reads the file
//! of one task per distinct set and gives the others the same text, shared: on a host of
//! 50,000 processes in a few hundred sets that is a few hundred reads instead of 50,000
//! (`tasksnap ps -e -o pid,cgroup` spent 440 ms of CPU on them).
//!
//! Except a task past PF_EXITING (a zombie, or one exiting): proc_cgroup_show() prints
//! its cgroup v1 paths as `/` whatever its set (the task has left the set's v1 cgroups), so
//! such a task is read on its own.
//!
//! The key is the set as the pass saw it: a task that moves between the pass and the read
//! of its set's file has, like a task read from /proc one file after another, the membership
//! of one moment or the other; the change set marks the move, so the next read has it.

use std::collections::HashMap;

use tasksnap_model::{Cgroup, Group, Groups, SnapshotStats};

use super::decode::{Record, PF_EXITING};
use crate::error::Error;
use crate::procfs::ProcfsCollector;

/// A task's (tgid, tid), as fills name them.
type Id = (i32, i32);

/// The css_set of each task of a pass, by (tgid, tid), sorted.
#[derive(Debug, Default)]
pub(super) struct CssSets {
    by_id: Vec<(Id, u64)>,
}

impl CssSets {
    /// Takes the sets of `records` (those with a base block, not exiting), replacing the
    /// last ones and keeping their memory.
    pub fn refresh(&mut self, records: &[Record<'_>]) {
        self.by_id.clear();
        self.by_id.extend(records.iter().filter_map(|r| {
            let b = r.base().filter(|b| b.flags & PF_EXITING == 0)?;
            Some(((r.hdr.tgid as i32, r.hdr.tid as i32), b.css_set_key))
        }));
        self.by_id.sort_unstable_by_key(|e| e.0);
    }

    /// Forgets them (a pass that did not take them).
    pub fn clear(&mut self) {
        self.by_id.clear();
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn get(&self, id: Id) -> Option<u64> {
        let i = self.by_id.binary_search_by_key(&id, |e| e.0).ok()?;
        Some(self.by_id[i].1)
    }

    /// Heap bytes held (for the footprint).
    pub fn heap_bytes(&self) -> usize {
        self.by_id.capacity() * std::mem::size_of::<(Id, u64)>()
    }

    /// The cgroups of `wanted`: /proc/PID/cgroup of the first task of each set among them,
    /// shared with the rest of its set; a task of no known set, or whose set's task could
    /// not be read (gone meanwhile), read on its own. A task missing from the answer could
    /// not be read (gone, or denied).
    pub fn read(
        &self,
        procfs: &ProcfsCollector,
        wanted: &[Id],
        stats: &mut SnapshotStats,
    ) -> Result<HashMap<Id, Box<Cgroup>>, Error> {
        let cgroup = Groups::of(&[Group::Cgroup]);
        let mut first_of: HashMap<u64, Id> = HashMap::new();
        for &id in wanted {
            if let Some(key) = self.get(id) {
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
            match self.get(id).and_then(|k| by_set.get(&k)) {
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
