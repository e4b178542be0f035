//! A live view's refreshes ([`Collector::changes`]): the first call takes a whole pass
//! (record.h `TS_WALK_*`); each later call reads only the processes that may have changed
//! since the last read, so the records written, copied and decoded per refresh follow what
//! changed, not how many tasks there are.
//!
//! Which processes, two ways:
//! - **the change set** (changeset.rs, changes.bpf.c): tracepoints mark a process when a
//!   thread of it leaves a CPU, wakes, is born, execs, moves cgroup or is reaped; each call takes the marks (and the processes on a CPU now) and reads those by
//!   pid (`walk_listed`), every thread of each: nothing visits an idle task. A process
//!   not found (or whose pid now names another process's thread) is gone, and so is a known
//!   thread of a listed process that was not written. A mark that did not fit (a pid past
//!   the bitmap) makes the call a whole pass. A reaped process is marked when the kernel
//!   frees it, an RCU grace period after it left the pid hash: the first call after that
//!   says it is gone. Used when the set loads (Linux 6.8 with BTF, the reader in the initial
//!   pid namespace) and names fewer than a quarter of the known threads (more, and
//!   following the task list once is as cheap);
//! - **the changed-only walk** otherwise: the walk visits every task (about 10 ms at 50,000
//!   processes, 9 of them following the task list) and writes records only for the
//!   processes that ran since the last pass began (`proc_ran()` in task_iter.bpf.c, from
//!   each thread's last run-time update). Tasks that went away leave no record to say so:
//!   when the walk's count of tasks is below the count of those the caller holds, a roll
//!   (every tid, 4 bytes each, no record) says which.
//!
//! Every [`FULL_EVERY`]th call is a whole pass again, for what can change in a process that
//! did not run: its nice value (set by another process), its parent (reparenting when its
//! parent exits), its resident memory (reclaim, or a vfork child faulting in the mm it
//! shares), its process group, the CPU-time split /proc readers leave behind, the times of
//! a process whose thread exited.
//!
//! [`Collector::changes`]: crate::Collector::changes

use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, SnapshotStats, TaskId};

use super::arena::{self, WalkMode};
use super::passes::WalkError;
use super::kept::{identities, Delta};
use super::{decode, BpfCollector};
use tasksnap_sys as sys;
use crate::collector::ChangeSummary;
use crate::collector::Changes;
use crate::error::Error;

/// Every this many calls, a whole pass.
const FULL_EVERY: u32 = crate::collector::CHANGES_FULL_EVERY;

/// The change set is read by pid list while it names fewer than one in this many of the
/// threads the caller holds; a bigger one is found by the changed-only walk.
const LIST_SHARE: usize = 4;

impl BpfCollector {
    /// Whether `query` can be answered by changed-only walks at all.
    fn changes_usable(&self, query: &Query) -> bool {
        matches!(query.selector, Selector::AllThreads)
            && !query.groups.has(Group::Cmdline)
            && self.progs.walker.is_some()
            && self.settings.walk_allowed()
    }

    /// Whether the next call with `query` continues from the last one (a changed-only walk).
    pub(super) fn changes_continue(&self, query: &Query) -> bool {
        let bits = decode::group_bits(&query.groups);
        self.changes_usable(query)
            && self.live.delta.as_ref().is_some_and(|d| {
                d.groups == bits
                    && d.leader_as_process == query.leader_as_process
                    && d.since_full < FULL_EVERY
            })
    }

    /// [`crate::Collector::changes`] for the BPF backend.
    pub(super) fn walk_changes(&mut self, query: &Query) -> Result<Changes, Error> {
        if !self.changes_usable(query) {
            self.live.delta = None;
            return self.whole(query);
        }
        let bits = decode::group_bits(&query.groups);
        if !self.changes_continue(query) {
            return self.whole_with_clocks(query, bits);
        }
        match self.changed_only(query, bits) {
            Ok(c) => Ok(c),
            Err(why) => {
                // Start over with a whole pass (which says why it cannot walk, if it cannot).
                if !matches!(why, WalkError::ChangesLost(_)) {
                    self.walk_problem = Some(why.to_string());
                }
                self.live.delta = None;
                self.whole_with_clocks(query, bits)
            }
        }
    }

    fn whole(&mut self, query: &Query) -> Result<Changes, Error> {
        Ok(Changes {
            snapshot: self.walk_snapshot(query)?,
            full: true,
            gone: Vec::new(),
        })
    }

    /// A whole pass that keeps its tasks' identities for the changed-only walks after it.
    fn whole_with_clocks(&mut self, query: &Query, bits: u32) -> Result<Changes, Error> {
        let shards = if self.settings.low_cpu {
            1
        } else {
            super::settings::pass_shards()
        };
        if let Err(why) = self.ensure_arena(bits, shards) {
            self.walk_problem = Some(why.to_string());
            self.live.delta = None;
            return self.whole(query);
        }
        self.live.track = true;
        self.live.captured = None;
        self.fresh_change_set();
        let snap = self.walk_snapshot(query);
        self.live.track = false;
        let snap = snap?;
        self.live.lingering = lingering(&snap.tasks);
        // Only a walk is tracked (the iterator may have been used instead).
        // The processes /proc added to that snapshot (pid 1 here) are read again every call.
        self.live.delta = self.live.captured.take().map(|(known, since_ns, hidden)| {
            Delta::after_whole_pass(bits, query, since_ns, known, hidden)
        });
        Ok(Changes {
            snapshot: snap,
            full: true,
            gone: Vec::new(),
        })
    }

    /// [`crate::Collector::changes_into`] for the BPF backend: a whole pass by the walk is
    /// assembled straight into `sink`, so the 50,000 tasks of a whole pass (~19 MB) never
    /// exist at once, next to the arena the records are in.
    pub(super) fn walk_changes_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<ChangeSummary, Error> {
        let streamable = self.changes_usable(query)
            && !self.changes_continue(query)
            && decode::procfs_groups(&query.groups) == Groups::default();
        let ch = if streamable {
            match self.whole_walk_into(query, sink) {
                Ok(tasks) => {
                    return Ok(ChangeSummary {
                        full: true,
                        gone: Vec::new(),
                        tasks,
                    })
                }
                Err(why) => {
                    // Nothing was handed over: the collecting path says the rest.
                    self.walk_problem = Some(why.to_string());
                    self.live.delta = None;
                    self.walk_changes(query)?
                }
            }
        } else {
            self.walk_changes(query)?
        };
        Ok(ch.into_sink(sink))
    }

    /// A whole pass by the walk, each task handed to `sink` as it is assembled; keeps the
    /// identities for the changed-only walks after it. `Err` before any task is handed over.
    /// (Unlike [`BpfCollector::snapshot`], no /proc listing is consulted: the walk follows
    /// the task lists themselves, pid 1 included, where `iter/task` skips tasks.)
    fn whole_walk_into(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(tasksnap_model::Task),
    ) -> Result<usize, WalkError> {
        let bits = decode::group_bits(&query.groups);
        let shards = if self.settings.low_cpu {
            1
        } else {
            super::settings::pass_shards()
        };
        self.ensure_arena(bits, shards)?;
        self.fresh_change_set();
        let (Some(walker), Some(arena)) = (&self.progs.walker, &self.out.arena) else {
            return Err(WalkError::NoWalk);
        };
        self.out.walked = None;
        let outs = super::passes::walk_checked(walker, arena, bits, shards, WalkMode::default())?;
        let records = super::passes::pass_records(&[], Some(arena), Some(&outs))?;
        let known = identities(&records);
        let since_ns = outs.iter().map(|o| o.started_ns).min().unwrap_or(0);
        let units = self.procfs.units();
        let groups = query.groups;
        // What the walk passes over (pid 1 here) comes from /proc, now and at every
        // changed-only walk after this one.
        let mut stats = SnapshotStats::default();
        let (extras, hidden) =
            BpfCollector::missing_from(&mut self.procfs, &records, query, groups, None, &mut stats)
                .map_err(Box::new)?;
        let mut tasks = 0;
        let mut dead = Vec::new();
        decode::assemble_each(&records, extras, query, &groups, units, &mut |mut t| {
            if is_lingering(&t) {
                dead.push(t.id.tgid as u32);
            }
            if !groups.has(Group::Base) {
                t.base = None;
            }
            tasks += 1;
            sink(t);
        });
        dead.sort_unstable();
        dead.dedup();
        self.live.lingering = dead;
        self.pass_index.refresh(&records);
        drop(records);
        self.out.walked = Some(outs);
        self.live.delta = Some(Delta::after_whole_pass(bits, query, since_ns, known, hidden));
        Ok(tasks)
    }

    /// Loads the change set, once, when the walk has the list program; empties it before a
    /// whole pass (which reads everything marked so far).
    pub(super) fn fresh_change_set(&mut self) {
        let lists = self
            .progs
            .walker
            .as_ref()
            .is_some_and(|w| w.list_prog.is_some());
        if !self.live.set_tried && !self.live.set_off && lists {
            self.live.set_tried = true;
            match super::changeset::ChangeSet::load(self.live.set_pid_max) {
                Ok(set) => self.live.set = Some(set),
                Err(why) => self.live.set_problem = Some(why),
            }
        } else if !lists && self.live.set_problem.is_none() {
            self.live.set_problem = Some("the walk has no list program".into());
        }
        if let Some(set) = &mut self.live.set {
            set.clear();
        }
    }

    /// The processes the change set names (fewer than [`LIST_SHARE`] of the `known`
    /// threads, pids of `hidden` left out: /proc reads those), or `None` when the call walks.
    fn take_changes(&mut self, known: usize, hidden: &[i32]) -> Result<Option<Vec<u32>>, WalkError> {
        let Some(set) = &mut self.live.set else {
            return Ok(None);
        };
        let mut pids = std::mem::take(&mut self.live.pids);
        set.take(&mut pids)?;
        pids.extend_from_slice(&self.live.lingering);
        pids.sort_unstable();
        pids.dedup();
        pids.retain(|p| !hidden.contains(&(*p as i32)));
        let many = pids.len() * LIST_SHARE > known && !self.live.list_any;
        if pids.len() > arena::PIDS_PER_CHUNK || many {
            self.live.pids = pids;
            return Ok(None);
        }
        Ok(Some(pids))
    }

    /// Records of the processes that may have changed since the last read: by the change
    /// set's list when it names few enough, else by a walk that writes those that ran.
    fn changed_only(&mut self, query: &Query, bits: u32) -> Result<Changes, WalkError> {
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = self.procfs.units().boot.now_ns();
        // Before the take: whatever ran after this is marked again, or walked.
        let began_ns = sys::clock_ns(libc::CLOCK_MONOTONIC);
        let (known, hidden) = match &self.live.delta {
            Some(d) => (d.known.len(), d.hidden.clone()),
            None => return Err(WalkError::NoWalk),
        };
        let pids = self.take_changes(known, &hidden)?;
        let (Some(walker), Some(arena), Some(delta)) =
            (&self.progs.walker, &self.out.arena, &mut self.live.delta)
        else {
            return Err(WalkError::NoWalk);
        };
        delta.since_full += 1;
        delta.listed = None;
        self.out.walked = None;
        let mut listed = None;
        let mut outs = None;
        if let Some(pids) = pids {
            match walker.walk_listed(arena, bits, &pids).map_err(WalkError::Failed)? {
                Some(o) if o.overflow > 0 => {
                    return Err(WalkError::Full {
                        chunks: arena.chunks(),
                        overflow: o.overflow,
                    })
                }
                Some(o) => {
                    outs = Some(vec![o]);
                    listed = Some(pids);
                }
                None => {
                    // Another pid namespace: its pids are not the set's.
                    self.live.set = None;
                    self.live.set_problem = Some("the reader is not in the initial pid namespace".into());
                }
            }
        }
        let outs = match outs {
            Some(o) => o,
            None => {
                let how = WalkMode {
                    mode: arena::WALK_CHANGED,
                    since_ns: delta.since_ns,
                    lines: false,
                };
                super::passes::walk_checked(walker, arena, bits, 1, how)?
            }
        };
        delta.listed = listed.as_ref().map(Vec::len);
        let records = super::passes::pass_records(&[], Some(arena), Some(&outs))?;
        let units = self.procfs.units();
        let tick_ns = 1_000_000_000 / units.clock_ticks_per_s.max(1);
        let id = |tid: u32, (tgid, start): (u32, u64)| TaskId {
            tgid: tgid as i32,
            tid: tid as i32,
            start_time_ns: start / tick_ns * tick_ns,
        };
        let mut gone = Vec::new();
        // The tids this walk wrote: rows of this call, whatever the roll finds after it.
        let mut written: Vec<u32> = Vec::with_capacity(records.len());
        for r in &records {
            written.push(r.hdr.tid);
            let now = (r.hdr.tgid, r.hdr.start_boottime_ns);
            if let Some(was) = delta.known.insert(r.hdr.tid, now) {
                if was != now {
                    // The tid was reused: the task the caller holds under it is gone.
                    gone.push(id(r.hdr.tid, was));
                }
            }
        }
        let walked: u64 = outs.iter().map(|o| u64::from(o.tasks)).sum();
        let spare = std::mem::take(&mut self.out.spare);
        let groups = query.groups;
        let extras = BpfCollector::read_from_procfs(&mut self.procfs, &delta.hidden, query, groups)
            .map_err(Box::new)?;
        let mut tasks = decode::assemble(
            &records,
            extras,
            query,
            &groups,
            units,
            spare,
            !self.settings.low_cpu,
        );
        decode::filter(&mut tasks, query);
        let lingering = lingering(&tasks);
        self.pass_index.refresh(&records);
        drop(records);
        let known = delta.known.len() as u64;
        if let Some(pids) = &listed {
            // Every thread of a listed process was written: a known one that was not is
            // gone, and so is every thread of a listed process not found.
            written.sort_unstable();
            delta.known.retain(|&tid, &mut was| {
                let live =
                    pids.binary_search(&was.0).is_err() || written.binary_search(&tid).is_ok();
                if !live {
                    gone.push(id(tid, was));
                }
                live
            });
        } else if known > walked {
            // Some went away: the roll (every tid) says which.
            let roll_how = WalkMode {
                mode: arena::WALK_ROLL,
                since_ns: 0,
                lines: false,
            };
            let rolled = walker
                .walk(arena, 0, 1, roll_how)
                .map_err(WalkError::RollFailed)?;
            let Some(out) = rolled.first().filter(|o| o.overflow == 0) else {
                return Err(WalkError::RollFull);
            };
            let mut tids = arena::roll_tids(arena, out);
            tids.sort_unstable();
            written.sort_unstable();
            // A task this walk wrote and that exited before the roll is a row of this call
            // (alive when walked, as a task that exits during a walk is): it stays known, and
            // the next call's count finds it gone. Said gone now, beside its row, a caller
            // applying the call would keep the row, never to be taken back before the next
            // whole pass (a child read right after its fork kept its parent's name).
            delta.known.retain(|&tid, &mut was| {
                let live =
                    tids.binary_search(&tid).is_ok() || written.binary_search(&tid).is_ok();
                if !live {
                    gone.push(id(tid, was));
                }
                live
            });
        } else if known < walked {
            // Tasks walked and not written that the caller does not hold (none should be:
            // a new task has not run before this pass, or has and is written). Start over.
            delta.since_full = FULL_EVERY;
        }
        delta.since_ns = match &listed {
            Some(_) => began_ns,
            None => outs.iter().map(|o| o.started_ns).min().unwrap_or(0),
        };
        if let Some(pids) = listed {
            self.live.pids = pids;
        }
        self.live.lingering = lingering;
        self.out.walked = Some(outs);
        let mut stats = SnapshotStats::default();
        self.fill_from_procfs(&mut tasks, query, groups, &mut stats)
            .map_err(Box::new)?;
        Ok(Changes {
            snapshot: Snapshot {
                taken_at_unix_ns,
                taken_at_boottime_ns,
                boot_time_unix_s: self.procfs.try_boot_time().map_err(Box::new)?,
                backend: tasksnap_model::Backend::Bpf,
                tasks,
                stats,
            },
            full: false,
            gone,
        })
    }
}

/// The processes of `tasks` that are dead and not yet gone: a zombie (its parent has not
/// reaped it), or a thread past `do_exit()`'s `PF_EXITING`. Their going is marked in the
/// change set only when the kernel frees the task (`sched_process_free`), an RCU grace
/// period after it left the pid hash; with lazy RCU (CONFIG_RCU_LAZY, Linux 6.2) that
/// callback may wait seconds, and a reaped zombie stayed in a live view's rows that long
/// (CI caught it). So they are read again at every call until the lookup finds them gone.
fn lingering(tasks: &[tasksnap_model::Task]) -> Vec<u32> {
    let mut out: Vec<u32> = tasks
        .iter()
        .filter(|t| is_lingering(t))
        .map(|t| t.id.tgid as u32)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `t` is dead and not yet gone (see [`lingering`]).
fn is_lingering(t: &tasksnap_model::Task) -> bool {
    t.base.as_ref().is_some_and(|b| {
        matches!(
            b.state,
            tasksnap_model::TaskState::Zombie | tasksnap_model::TaskState::Dead
        ) || b.flags & decode::PF_EXITING != 0
    })
}
