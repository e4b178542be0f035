//! Readings into per-group counters: what `tasksnap serve` exposes, updated once per
//! collection and read by every scrape.
//!
//! Counters only grow. A group's CPU, I/O, faults and context switches are the sums of its
//! processes' (threads', for switches) increases since the previous collection, plus the
//! final figures of its processes that exited since (the reading's exit records): a process
//! that exits takes nothing away, and one born since the previous collection brings all it
//! did (everything it did was after that collection). A process that was there before but
//! not seen (a reused pid, a read that failed) brings only what it does from now on, and so
//! does everything at the first collection: the counters count from when the exporter
//! started, as a rate over them needs. Thread-state time of exited threads comes from the
//! state sources, which keep an exited thread's final totals (see
//! `tasksnap_collect::StateSource`).
//!
//! An exited process (one [`Exit`](tasksnap_model::Exit) of the reading, collections after
//! the first) adds:
//! - seen alive at the previous collection (or at the one before, and missing from the
//!   previous one because it died between that reading's exit drain and its walk): its final
//!   figures less those already counted, each clamped at 0 (I/O only if it was read alive:
//!   from nothing, the exit's would be all the process ever did). CPU is clamped as a whole
//!   too: the exit splits its precise runtime into user and system as the kernel does, and a
//!   split that moved time from one mode to the other since the last collection adds to each
//!   mode at most the whole's increase. Context switches are counted per thread while alive, and
//!   the exit gives the whole group's: a process counted from its birth (new when first seen)
//!   adds its group total less what its threads added; one already running when first seen
//!   adds none at exit (its total includes threads that ended before the exporter saw them,
//!   which cannot be told apart), so such a process's switches since the last collection are
//!   the one figure still lost;
//! - never seen alive, started after the exporter's first collection: all of its final
//!   figures (all it did was after the counters started);
//! - never seen alive, started before the first collection (alive all along but missing from
//!   every collection): none of its figures (they include what it did before the counters
//!   started, and the exit cannot split them), but its exit.
//!
//! Each counts once in `exits` by [`ExitReason`](tasksnap_model::ExitReason) (exit, signal, core)
//! of the group it was in when last seen, or the one its record gives ([`Grouper::assign_exits`])
//! when it was never seen alive or its comm changed since (an exec or `PR_SET_NAME`, which may
//! change its group; not by cgroup, which an exec keeps): the name an exit is grouped by is the one
//! it exited with, and a live row of the same reading with another comm (read before the rename)
//! does not override it. A process can be both an exit and a live (zombie) row of the same reading
//! (its record left the kernel, its parent had not reaped it): the exit counts, the row adds
//! nothing (its figures are remembered, so a zombie left unreaped adds nothing later either). Exits
//! of the first collection are before the counters start and count nothing. Exit records the kernel
//! dropped are counted ([`System::exits_dropped`]); their processes' figures are missing.
//!
//! State seconds come from [`tasksnap_states::interval::thread_deltas`], the same per-thread
//! split `tasksnap states` shows: exact with the BPF source, sampled (running exact) with
//! /proc. The sum over a group's states is the time its threads were alive. A thread of a
//! process that exited is charged to the group its exit was counted in (a process born and
//! dead since the last collection is in no assignment).
//!
//! Series are bounded: with `max_series`, the groups that did the least in the last interval
//! (CPU, then threads) are folded into one `other` group when the total would pass it, and
//! the number folded is reported; a group's wait reasons are its first
//! `reasons_per_group` plus `other`; a group shows an exit reason only once one of its
//! processes ended that way.

mod aggregator;
mod counters;
mod exits;
mod previous;
mod series;
mod states;
#[cfg(test)]
mod tests;
mod walk;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tasksnap_model::states::ThreadMap;
use tasksnap_model::Reading;

use crate::group::{Assignment, Grouper, PidMap};

use previous::Pending;
use walk::Live;

pub use aggregator::{Aggregator, Options, KEEP_EMPTY_NS};
pub use counters::{Counters, Gauges, Group, System, TopProcess};
pub use exits::{exit_reason_index, EXIT_REASONS};
pub use previous::Footprint;
pub use series::{fixed_series, View, OTHER_GROUP};

impl Aggregator {
    /// An aggregator with no collection yet.
    pub fn new(opts: Options) -> Aggregator {
        Aggregator {
            grouper: Grouper::new(opts.grouping.clone()),
            opts,
            groups: Vec::new(),
            index: HashMap::new(),
            other: Group {
                name: Arc::from(OTHER_GROUP),
                ..Group::default()
            },
            folded: 0,
            shown: Vec::new(),
            prev: Vec::new(),
            threads: Vec::new(),
            states_prev: ThreadMap::default(),
            states_prev_at: None,
            group_at: PidMap::default(),
            group_prev: Assignment::default(),
            prev_boottime_ns: None,
            first_boottime_ns: None,
            pending: Vec::new(),
            top: Vec::new(),
            system: System::default(),
            collections: 0,
            beside: 0,
        }
    }

    /// Collections taken in.
    pub fn collections(&self) -> u64 {
        self.collections
    }

    /// The index of the group `name`, made if new.
    fn group(&mut self, name: &Arc<str>) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.groups.push(Group {
            name: name.clone(),
            ..Group::default()
        });
        self.index.insert(name.clone(), self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// Takes in one reading, its tasks in (tgid, tid) order (as the sampler gives them).
    /// Its thread-state totals are read and left in it, for its sampler to reuse their memory
    /// (`StateSource::recycle`): what the next interval starts from is kept per thread,
    /// smaller ([`Footprint`]).
    pub fn update(&mut self, r: &mut Reading) {
        let tasks = &r.snapshot.tasks;
        let boot_time_unix_s = r.snapshot.boot_time_unix_s;
        let group_of = self.grouper.assign(tasks, boot_time_unix_s);
        let entry_group = self.start_interval(&group_of);
        let states = r.states.take();
        let exits_on = r.exits_missing.is_none();
        let mut system = System {
            forks: r.system.counters.as_ref().map(|c| c.forks),
            state_ns: self.system.state_ns,
            state_mode: states.as_ref().map(|s| s.mode),
            exits_dropped: exits_on.then(|| {
                let before = self.system.exits_dropped.unwrap_or(0);
                before.saturating_add(r.exits_dropped)
            }),
            ..System::default()
        };
        // The processes whose exit this reading holds: their live (zombie) rows add nothing.
        let exited = if r.exits.is_empty() {
            HashSet::new()
        } else {
            r.exited_ids()
        };
        // Whether the tasks carry context switches (the BPF backend): exits add theirs only
        // then, or a group's counter would count its exited processes and nothing else.
        let live_switches = tasks.iter().any(|t| {
            t.sched
                .as_ref()
                .is_some_and(|s| s.voluntary_switches.is_some())
        });
        // The group each exited process was counted in, for its threads' state time.
        let mut exit_groups = PidMap::default();
        if self.prev_boottime_ns.is_some() {
            exit_groups =
                self.count_exits(&r.exits, tasks, &group_of, boot_time_unix_s, live_switches);
        }
        let live = Live {
            tasks,
            group_of: &group_of,
            entry_group: &entry_group,
            states: states.as_ref(),
            exited: &exited,
            boot_time_unix_s,
        };
        let walked = self.walk(&live, &mut system);
        // Processes missing from this collection wait one more for their exit records (only
        // with an exit source, and not those whose record came with this reading).
        self.pending = if exits_on {
            walked
                .vanished
                .into_iter()
                .filter(|(id, _)| !exited.contains(id))
                .map(|(id, prev)| Pending {
                    id,
                    prev,
                    group: self.group_prev.get(id.tgid).cloned(),
                })
                .collect()
        } else {
            Vec::new()
        };
        self.charge_sample(&live, &exit_groups, &mut system);
        self.close_interval(r.snapshot.taken_at_boottime_ns);
        self.top = self.pick_top(tasks, walked.cpu_deltas);
        self.system = system;
        // The sample is not kept: what the next interval needs of it is in `states_prev`. It
        // goes back into the reading, whose sampler reuses its memory for the next one.
        r.states = states;
        self.group_prev = group_of;
        self.prev_boottime_ns = Some(r.snapshot.taken_at_boottime_ns);
        self.first_boottime_ns
            .get_or_insert(r.snapshot.taken_at_boottime_ns);
        self.collections += 1;
    }

    /// Starts an interval: every group's interval counters and gauges at zero. Returns the
    /// group index of each process of `group_of`, in its (pid) order.
    fn start_interval(&mut self, group_of: &Assignment) -> Vec<usize> {
        for g in &mut self.groups {
            g.delta = Counters::default();
            g.now = Gauges::default();
        }
        // A name is hashed once per run of processes sharing it (the grouper hands out one
        // `Arc` per name), not once per process and again per thread.
        let mut entry_group: Vec<usize> = Vec::with_capacity(group_of.len());
        let mut last: Option<(&Arc<str>, usize)> = None;
        for (_, name) in group_of.entries() {
            let gi = match last {
                Some((n, gi)) if Arc::ptr_eq(n, name) => gi,
                _ => self.group(name),
            };
            last = Some((name, gi));
            entry_group.push(gi);
        }
        entry_group
    }

    /// Ends an interval taken at `now_ns` (boot time): its counters added to the totals, the
    /// groups shown chosen, and the groups without a process or an exit dropped after two
    /// collections in a row (their exited threads' last state time is in by then) and
    /// `keep_empty_ns`.
    fn close_interval(&mut self, now_ns: u64) {
        let named = self.opts.reasons_per_group;
        for g in &mut self.groups {
            let d = std::mem::take(&mut g.delta);
            g.total.add(&d, named);
            g.delta = d;
        }
        self.fold();
        let keep_ns = self.opts.keep_empty_ns;
        self.groups.retain_mut(|g| {
            if g.now.processes == 0 && g.delta.exits == [0; 3] {
                if g.empty_for == 0 {
                    g.empty_since_ns = now_ns;
                }
                g.empty_for += 1;
            } else {
                g.empty_for = 0;
            }
            g.empty_for < 2 || now_ns.saturating_sub(g.empty_since_ns) < keep_ns
        });
        self.index = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), i))
            .collect();
    }
}
