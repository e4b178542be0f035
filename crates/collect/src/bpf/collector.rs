//! The BPF collector's trait implementations ([`Collector`], [`LiveCollector`]), each entry
//! point handing over to the file of its job (snapshot.rs, changes.rs, passes.rs), and its
//! [`PassReport`]: what the last pass was, typed, with the text `-v` shows.

use std::time::Duration;

use tasksnap_model::{Backend, CmdlineSource, Group, Groups, PassKind, PassReport, Query, Snapshot};

use super::{decode, kept, programs, BpfCollector};
use crate::collector::Collector;
use crate::error::Error;
use crate::collector::LiveCollector;

impl Collector for BpfCollector {
    /// One iterator pass, assembled into the tasks the query selects; then the groups the
    /// kernel cannot give are read from /proc for those tasks only, and any task /proc lists
    /// that the iterator did not return is read from /proc entirely. (On this kind of VM the
    /// iterator does not return pid 1: reconciling with the /proc listing keeps every task
    /// /proc shows in the snapshot.)
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        let r = self.walk_snapshot(query);
        self.after_pass();
        r
    }

    fn snapshot_each(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(&tasksnap_model::Task),
    ) -> Result<Snapshot, Error> {
        let r = self.walk_snapshot_each(query, sink);
        self.after_pass();
        r
    }

    /// A fresh load without the command-line iterator reads command lines from /proc, one
    /// without `dump_task_rare` the rare blocks: loading again for `groups` would do better.
    /// A pinned set is what opening again would give.
    fn serves(&self, groups: &Groups) -> bool {
        self.loaded_for.is_none_or(|(cmdline, rare)| {
            (cmdline || !groups.has(Group::Cmdline)) && (rare || !decode::wants_rare(groups))
        })
    }

    /// What the kernel cannot give comes from /proc, the reads of the collector this one
    /// fills from, with its deadline; but, for processes of the last pass (pass_index.rs),
    /// command lines by the copy by pid list and cgroups once per css_set.
    fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<crate::collector::Filled, Error> {
        let rest = groups.without(Group::Cgroup).without(Group::Login);
        let by_set =
            groups.needs_cgroup_file() && !self.pass_index.is_empty() && rest != Groups::default();
        let copied = groups
            .has(Group::Cmdline)
            .then(|| self.copy_lines_of(ids))
            .flatten();
        let (rest, mut copied) = match (by_set, copied) {
            (false, None) => return self.procfs.try_fill(ids, groups),
            (false, Some(c)) => (groups, c),
            (true, c) => (rest, c.unwrap_or_default()),
        };
        // Processes with a copied line read /proc only for what else is asked.
        let (lined, unlined): (Vec<_>, Vec<_>) = ids
            .iter()
            .partition(|&&(tgid, tid)| tid == tgid && copied.contains_key(&tgid));
        let (mut filled, mut stats) = self.procfs.try_fill(&unlined, rest)?;
        let rest = rest.without(Group::Cmdline);
        if rest != Groups::default() {
            let (more, s) = self.procfs.try_fill(&lined, rest)?;
            filled.extend(more);
            stats.denied += s.denied;
        } else {
            let tick_ns = 1_000_000_000 / self.procfs.units().clock_ticks_per_s.max(1);
            filled.extend(lined.iter().filter_map(|&id| {
                Some((id, tasksnap_model::Task::new(self.pass_index.task_id(id, tick_ns)?)))
            }));
        }
        for &(tgid, tid) in &lined {
            if let Some(t) = filled.get_mut(&(tgid, tid)) {
                t.cmdline = copied.remove(&tgid);
            }
        }
        if by_set {
            let mut cgroups = self.pass_index.read_cgroups(&self.procfs, ids, &mut stats)?;
            for (id, t) in filled.iter_mut() {
                t.cgroup = cgroups.remove(id);
            }
        }
        Ok((filled, stats))
    }

    fn report(&self) -> PassReport {
        use std::sync::atomic::Ordering;
        let kind = match &self.out.walked {
            Some(_) if self.live.delta.as_ref().is_some_and(|d| d.last_was_changed_only()) => {
                PassKind::ChangedOnlyWalk
            }
            Some(_) => PassKind::Walk,
            None if self.out.phases_ms.is_empty() => PassKind::None,
            None => PassKind::Iterator,
        };
        let cmdlines = self.cmd.how.map(|how| match how {
            kept::Source::Walk => CmdlineSource::Walk,
            kept::Source::Copied => CmdlineSource::Copied,
            kept::Source::Iterator => CmdlineSource::Iterator,
        });
        let walked_lockless: u64 = match (&self.out.walked, self.cmd.how) {
            (Some(outs), Some(kept::Source::Walk)) => {
                outs.iter().map(|o| u64::from(o.lines_lockless)).sum()
            }
            _ => 0,
        };
        PassReport {
            backend: Backend::Bpf,
            pinned: self.pinned_at.is_some(),
            kind,
            cmdlines,
            cmdlines_lockless: walked_lockless + self.cmd.lockless.load(Ordering::Relaxed),
            why: String::new(),
            pass: self.last_pass(),
            phases: self
                .out
                .phases_ms
                .iter()
                .map(|&(name, ms)| (name, Duration::from_secs_f64(ms.max(0.0) / 1e3)))
                .collect(),
            changed: None,
        }
    }

    fn recycle(&mut self, mut tasks: Vec<tasksnap_model::Task>) {
        tasks.clear();
        // A live view on changed-only walks gets a few dozen tasks per refresh: the vector
        // of a whole pass (18 MB at 50,000 tasks) is not kept for them; the next whole
        // pass, CHANGES_FULL_EVERY refreshes later, faults its memory in again.
        if self.live.delta.is_some() && tasks.capacity() > 4096 {
            return;
        }
        self.out.spare = tasks;
    }
}

impl LiveCollector for BpfCollector {
    fn held(&self, held: &mut crate::footprint::Held) {
        use std::mem::size_of;
        let known = self.live.delta.as_ref().map_or(0, |d| {
            crate::footprint::table_bytes(d.known.capacity(), size_of::<(u32, (u32, u64))>())
        });
        held.add(
            "task source",
            self.out.buf.capacity()
                + self.out.spare.capacity() * size_of::<tasksnap_model::Task>()
                + known
                + self.pass_index.heap_bytes(),
        );
        // Mapped, written by the kernel: resident as far as a pass has written it.
        let mapped = self.out.arena.as_ref().map_or(0, |a| a.chunks());
        held.add("walk arena (mapped)", mapped * super::arena::CHUNK_BYTES);
    }

    fn changes(&mut self, query: &Query) -> Result<crate::collector::Changes, Error> {
        let r = self.walk_changes(query);
        self.after_pass();
        r
    }

    fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<crate::collector::ChangeSummary, Error> {
        let r = self.walk_changes_into(query, sink);
        self.after_pass();
        r
    }

    fn next_changes_full(&self, query: &Query) -> bool {
        !self.changes_continue(query)
    }

    /// Loads the walk when the programs came without it (a fresh load: `ps` does not pay
    /// for its verification, a live view does once), then makes its arena.
    fn prepare(&mut self, groups: &Groups) {
        if self.progs.walker.is_none() && !self.settings.walk_off {
            match programs::Programs::load(programs::Cmdlines::No, true, false) {
                Ok(p) => match p.walker.as_ref().and_then(|w| w.try_clone()) {
                    Some(w) => {
                        self.progs.walker = Some(w);
                        self.walk_problem = None;
                    }
                    None => {
                        self.walk_problem = p.walk_unavailable.clone();
                    }
                },
                Err(why) => self.walk_problem = Some(why.to_string()),
            }
        }
        // With room for the command-line copy: a live view's fill copies new processes'
        // command lines by pid list (`fill`).
        self.prepare_arena(&groups.with(Group::Cmdline));
        // The change set's tracepoints are attached while the caller is privileged, for a
        // query changed-only reads can answer.
        if self.progs.walker.is_some()
            && self.settings.walk_allowed()
            && !groups.has(Group::Cmdline)
        {
            self.fresh_change_set();
        }
    }
}

impl BpfCollector {
    /// Gets ready for snapshots of `groups` while the caller still holds the privileges it
    /// started with: creates the memory the walk writes into (which needs CAP_BPF), when the
    /// programs have the walk. Failing is not an error: the snapshots then use the iterator.
    pub fn prepare_arena(&mut self, groups: &Groups) {
        if self.progs.walker.is_some() {
            self.cmd.region_wanted = groups.has(Group::Cmdline);
            let bits = decode::group_bits(groups);
            if let Err(why) = self.ensure_arena(bits, super::settings::pass_shards()) {
                self.walk_problem = Some(why.to_string());
            }
        }
    }

    /// A live view takes its first pass as fast as the machine allows (sharded) and every
    /// later one as cheaply (one reader thread).
    fn after_pass(&mut self) {
        if self.settings.live_view {
            self.settings.low_cpu = true;
        }
    }

    /// How the last pass was taken, for people (`-v`): which pass, and how command lines
    /// were read.
    pub fn last_pass(&self) -> String {
        let mut pass = self.last_pass_only();
        if let Some(how) = self.cmd.how {
            pass = format!("{pass}; command lines {}", how.text());
            use std::sync::atomic::Ordering;
            let copy_lockless = self.cmd.lockless.load(Ordering::Relaxed);
            let copy_levels = self.cmd.dmap_levels.load(Ordering::Relaxed);
            if how == kept::Source::Walk {
                let outs = self.out.walked.as_deref().unwrap_or_default();
                let lockless: u32 = outs.iter().map(|o| o.lines_lockless).sum();
                let levels = outs.iter().map(|o| o.dmap_levels).max().unwrap_or(0);
                pass = format!(
                    "{pass}: {lockless} read without the mmap lock ({levels}-level page \
                     tables), {} copied by pid list ({copy_lockless} of them without the lock)",
                    self.cmd.copied.get()
                );
            } else if how == kept::Source::Copied {
                pass = if copy_levels == 0 {
                    format!("{pass} (all through the mmap lock)")
                } else {
                    format!(
                        "{pass} ({copy_lockless} without the mmap lock, {copy_levels}-level \
                         page tables)"
                    )
                };
            }
        }
        pass
    }

    /// What the last pass was, without the command lines.
    fn last_pass_only(&self) -> String {
        if let Some(outs) = &self.out.walked {
            let records: u32 = outs.iter().map(|o| o.records).sum();
            let chunks: usize = outs.iter().map(|o| o.last + 1 - o.first).sum();
            let (size, slot, reused) = self
                .out
                .arena
                .as_ref()
                .map_or((0, 0, false), |a| (a.chunks(), a.slot(), a.reused));
            let what = match self.live.delta.as_ref() {
                Some(d) if d.last_was_changed_only() => match d.listed {
                    Some(n) => format!("changed-only read of {n} processes by pid (change set)"),
                    None => match &self.live.set_problem {
                        Some(why) => format!("changed-only walk (no change set: {why})"),
                        None => "changed-only walk".into(),
                    },
                },
                _ => "walk".into(),
            };
            return format!(
                "{what} into the arena: {records} records in {chunks} of {size} chunks, {} \
                 shard(s); slot {slot}, {}",
                outs.len(),
                if reused {
                    "reused from an earlier run"
                } else {
                    "created by this run"
                }
            );
        }
        match &self.walk_problem {
            Some(why) => format!("task iterator (no walk: {why})"),
            None => "task iterator".into(),
        }
    }
}
