//! `impl Collector for BpfCollector`: the trait's entry points, each handing over to the file
//! of its job (snapshot.rs, changes.rs, passes.rs), and what `-v` says about the last pass.

use tasksnap_model::{Groups, Query, Snapshot};

use super::{cmdlines, decode, programs, BpfCollector};
use crate::{Collector, Error};

impl Collector for BpfCollector {
    fn name(&self) -> &'static str {
        "bpf"
    }

    /// One iterator pass, assembled into the tasks the query selects; then the groups the
    /// kernel cannot give are read from /proc for those tasks only, and any task /proc lists
    /// that the iterator did not return is read from /proc entirely. (On this kind of VM the
    /// iterator does not return pid 1: reconciling with the /proc listing keeps every task
    /// /proc shows in the snapshot.)
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        self.snapshot_impl(query)
    }

    fn prefer_low_cpu(&mut self) {
        self.settings.low_cpu = true;
    }

    fn last_pass(&self) -> String {
        let mut pass = self.last_pass_only();
        if let Some(how) = self.cmd.how {
            pass = format!("{pass}; command lines {}", how.text());
            use std::sync::atomic::Ordering;
            let copy_lockless = self.cmd.lockless.load(Ordering::Relaxed);
            let copy_levels = self.cmd.dmap_levels.load(Ordering::Relaxed);
            if how == cmdlines::Source::Walk {
                let outs = self.out.walked.as_deref().unwrap_or_default();
                let lockless: u32 = outs.iter().map(|o| o.lines_lockless).sum();
                let levels = outs.iter().map(|o| o.dmap_levels).max().unwrap_or(0);
                pass = format!(
                    "{pass}: {lockless} read without the mmap lock ({levels}-level page \
                     tables), {} copied by pid list ({copy_lockless} of them without the lock)",
                    self.cmd.copied.get()
                );
            } else if how == cmdlines::Source::Copied {
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

    fn last_phases(&self) -> String {
        let phases: Vec<String> = self
            .out
            .phases_ms
            .iter()
            .map(|(name, ms)| format!("{name} {ms:.1}"))
            .collect();
        phases.join(", ")
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

    fn prepare(&mut self, groups: &Groups) {
        if self.progs.walker.is_some() {
            self.cmd.region_wanted = groups.cmdline;
            let bits = decode::group_bits(groups);
            if let Err(why) = self.ensure_arena(bits, super::passes::pass_shards()) {
                self.walk_problem = Some(why);
            }
        }
    }

    fn changes(&mut self, query: &Query) -> Result<crate::Changes, Error> {
        self.changes_impl(query)
    }

    fn changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<crate::ChangeSummary, Error> {
        self.changes_into_impl(query, sink)
    }

    fn next_changes_full(&self, query: &Query) -> bool {
        !self.changes_continue(query)
    }

    /// Loads the walk when the programs came without it (a fresh load: `ps` does not pay
    /// for its verification, a live view does once), then makes its arena.
    fn prepare_live(&mut self, groups: &Groups) {
        if self.progs.walker.is_none() && !self.settings.walk_off {
            match programs::Programs::load(false, true) {
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
        self.prepare(groups);
    }
}

impl BpfCollector {
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
            let what = if self
                .live
                .delta
                .as_ref()
                .is_some_and(|d| d.last_was_changed_only())
            {
                "changed-only walk"
            } else {
                "walk"
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
