//! Exited processes into their groups' counters: each exit's final figures less what was
//! counted of it alive (see the header of [`super`]), and one exit by its reason.

use std::sync::Arc;

use tasksnap_model::{Exit, ExitReason, Task, TaskId};

use super::aggregator::Aggregator;
use super::counters::Group;
use super::previous::{comm_hash, Prev, ProcPrev};
use crate::group::{Assignment, Grouping, PidMap};

/// The `reason` label of each [`Counters::exits`](super::counters::Counters::exits) slot.
pub const EXIT_REASONS: [&str; 3] = ["exit", "signal", "core"];

/// The [`Counters::exits`] slot of an exit: it called exit, a signal ended it, a signal
/// ended it with a core dump.
///
/// [`Counters::exits`]: super::counters::Counters::exits
pub fn exit_reason_index(r: ExitReason) -> usize {
    match r {
        ExitReason::Code(_) => 0,
        ExitReason::Signal {
            core_dumped: false, ..
        } => 1,
        ExitReason::Signal {
            core_dumped: true, ..
        } => 2,
    }
}

/// Adds to `counter` the increase of a figure from `before` to `now`, 0 when it went down.
fn add_increase(counter: &mut u64, now: u64, before: u64) {
    *counter = counter.saturating_add(now.saturating_sub(before));
}

/// Adds to `g`'s interval what exit `e` brings beyond `counted`, what was counted of it
/// alive (see the module's header): its final figures less those, each clamped at 0, and one
/// exit of its reason.
pub(super) fn add_exit(g: &mut Group, e: &Exit, counted: &Prev, live_switches: bool) {
    let d = &mut g.delta;
    if let Some(b) = counted.proc {
        // Each mode's increase, neither more than the whole's: the exit's split of its
        // runtime may differ from the live split (time moved from one mode to the other).
        let cpu = e
            .utime_ns
            .saturating_add(e.stime_ns)
            .saturating_sub(b.user_ns.saturating_add(b.system_ns));
        let du = e.utime_ns.saturating_sub(b.user_ns).min(cpu);
        let ds = e.stime_ns.saturating_sub(b.system_ns).min(cpu - du);
        d.cpu_user_ns = d.cpu_user_ns.saturating_add(du);
        d.cpu_system_ns = d.cpu_system_ns.saturating_add(ds);
        // I/O only from a figure read alive (or from birth): from one never read, the exit
        // would bring all the process ever did, before the counters started too.
        if b.io {
            add_increase(&mut d.read_bytes, e.read_bytes, b.read_bytes);
            add_increase(&mut d.write_bytes, e.write_bytes, b.write_bytes);
            // The kernel's I/O accounting, read at exit.
            g.now.has_io = true;
        }
        add_increase(&mut d.minor_faults, e.minflt, b.minor);
        add_increase(&mut d.major_faults, e.majflt, b.major);
    }
    if let (true, Some((v, iv))) = (live_switches, counted.counted_switches) {
        add_increase(&mut d.voluntary_switches, e.voluntary_ctxt_switches, v);
        add_increase(
            &mut d.involuntary_switches,
            e.nonvoluntary_ctxt_switches,
            iv,
        );
        g.now.has_switches = true;
    }
    let slot = &mut d.exits[exit_reason_index(e.reason())];
    *slot = slot.saturating_add(1);
}

impl Aggregator {
    /// Adds each exit's final figures, less what was counted of it alive, to its group's
    /// interval (see the module's header), and says which group each went to. Called before
    /// the walk of the live tasks, while `prev` and `group_prev` are still the previous
    /// collection's.
    pub(super) fn count_exits(
        &mut self,
        exits: &[Exit],
        tasks: &[Task],
        live: &Assignment,
        boot_time_unix_s: u64,
        live_switches: bool,
    ) -> PidMap<usize> {
        let first_at = self.first_boottime_ns.unwrap_or(0);
        let key = |id: &TaskId| (id.tgid, id.tid);
        // What was counted of it alive and its group then, for the processes seen alive.
        let mut counted: Vec<(&Exit, Prev, Option<Arc<str>>)> = Vec::new();
        // Those grouped from their records: never seen alive, or renamed since.
        let mut regroup: Vec<(&Exit, Prev)> = Vec::new();
        for e in exits {
            let at_prev = self
                .prev
                .binary_search_by_key(&key(&e.id), |(id, _)| key(id))
                .ok()
                .map(|i| &self.prev[i])
                .filter(|(id, _)| *id == e.id)
                .map(|(_, p)| (*p, self.group_prev.get(e.id.tgid).cloned()));
            let seen = at_prev.or_else(|| {
                self.pending
                    .binary_search_by_key(&key(&e.id), |p| key(&p.id))
                    .ok()
                    .map(|i| &self.pending[i])
                    .filter(|p| p.id == e.id)
                    .map(|p| (p.prev, p.group.clone()))
            });
            // An exec since it was seen (a new comm) may have moved it to another group,
            // except by cgroup, which an exec does not change.
            let renamed = |p: &Prev| {
                comm_hash(&e.comm) != p.comm_hash && !matches!(self.opts.grouping, Grouping::Cgroup)
            };
            match seen {
                Some((p, g)) if !renamed(&p) => counted.push((e, p, g)),
                Some((p, _)) => regroup.push((e, p)),
                None => {
                    // All of it when it started after the counters did; none of it otherwise.
                    let from_birth = e.start_time_ns >= first_at;
                    let p = Prev {
                        proc: from_birth.then_some(ProcPrev {
                            io: true,
                            ..ProcPrev::default()
                        }),
                        counted_switches: from_birth.then_some((0, 0)),
                        ..Prev::default()
                    };
                    regroup.push((e, p));
                }
            }
        }
        let records: Vec<&Exit> = regroup.iter().map(|(e, _)| *e).collect();
        let grouped = self
            .grouper
            .assign_exits(&records, live, &self.group_prev, boot_time_unix_s);
        for ((e, p), g) in regroup.into_iter().zip(grouped) {
            // Its zombie row in this reading, if read with its names, groups it as alive; not
            // a row with another comm than the record's, read before the process renamed
            // itself (a walk that did not read it again): an exit takes its name at exit.
            let row = tasks
                .binary_search_by_key(&key(&e.id), |t| key(&t.id))
                .ok()
                .filter(|&i| tasks[i].id == e.id)
                .filter(|&i| tasks[i].base.as_ref().is_some_and(|b| *b.comm == *e.comm));
            let g = row.and_then(|_| live.get(e.id.tgid).cloned()).or(g);
            counted.push((e, p, g));
        }
        let mut groups = PidMap::default();
        for (e, p, g) in counted {
            let Some(name) = g else { continue };
            let gi = self.group(&name);
            add_exit(&mut self.groups[gi], e, &p, live_switches);
            groups.insert(e.id.tgid, gi);
        }
        groups
    }
}
