//! Live tasks into their groups: one walk of a collection's tasks in (tgid, tid) order, beside
//! the assignment of processes to groups and the last collection's per-task lists (both in
//! the same order: no hashing), counting each process's increases since it was last seen and
//! keeping what the next interval starts from.

use std::collections::HashSet;
use std::iter::{Peekable, Zip};
use std::slice;
use std::sync::Arc;

use tasksnap_model::states::{Sample, State};
use tasksnap_model::{Task, TaskId};

use super::aggregator::Aggregator;
use super::counters::{Group, System};
use super::previous::{comm_hash, InPlace, Prev, ProcPrev, Slot};
use crate::group::Assignment;

/// What one collection's walk reads.
pub(super) struct Live<'a> {
    /// The reading's tasks, in (tgid, tid) order.
    pub(super) tasks: &'a [Task],
    /// The group of each process.
    pub(super) group_of: &'a Assignment,
    /// The group index of each entry of `group_of`.
    pub(super) entry_group: &'a [usize],
    /// The reading's thread states.
    pub(super) states: Option<&'a Sample>,
    /// The processes whose exit the reading holds.
    pub(super) exited: &'a HashSet<TaskId>,
    /// The reading's boot time, Unix seconds.
    pub(super) boot_time_unix_s: u64,
}

/// The state a task was in: its state letter, except that R (running or waiting for a CPU,
/// which /proc cannot tell apart) asks the state source, which can.
fn current_state(t: &Task, states: Option<&Sample>) -> State {
    let letter = t.base.as_ref().map_or(b'?', |b| b.state.letter());
    if letter == b'R' {
        if let Some(s) = states
            .and_then(|s| s.threads.get(&t.id))
            .and_then(|x| x.current)
        {
            return s;
        }
    }
    State::from_letter(letter)
}

/// The assignment's entries with their group indices, in pid order.
type GroupsAt<'a> = Peekable<Zip<slice::Iter<'a, (i32, Arc<str>)>, slice::Iter<'a, usize>>>;

/// The process of each task of the walk, looked up once per process: its group (from the
/// assignment, walked alongside) and whether its exit is in the reading.
struct Processes<'a> {
    tasks: &'a [Task],
    exited: &'a HashSet<TaskId>,
    /// The tgids of `exited`: the leader of a process is looked up only for these.
    exited_tgids: HashSet<i32>,
    groups_at: GroupsAt<'a>,
    /// (tgid, its group, whether it is one of the reading's exits)
    cur: Option<(i32, Option<usize>, bool)>,
}

impl<'a> Processes<'a> {
    fn new(live: &Live<'a>) -> Processes<'a> {
        Processes {
            tasks: live.tasks,
            exited: live.exited,
            exited_tgids: live.exited.iter().map(|id| id.tgid).collect(),
            groups_at: live
                .group_of
                .entries()
                .iter()
                .zip(live.entry_group)
                .peekable(),
            cur: None,
        }
    }

    /// `t`'s process: its group, whether its exit is in the reading, and whether `t` is the
    /// first task of it the walk meets.
    fn of(&mut self, t: &Task) -> (Option<usize>, bool, bool) {
        if let Some((tgid, gi, dead)) = self.cur {
            if tgid == t.id.tgid {
                return (gi, dead, false);
            }
        }
        while self.groups_at.next_if(|e| e.0 .0 < t.id.tgid).is_some() {}
        let gi = self
            .groups_at
            .next_if(|e| e.0 .0 == t.id.tgid)
            .map(|e| *e.1);
        // By the leader's identity, wherever its row is: after a pid wrap a thread's tid can
        // be below its tgid, and its row first.
        let tasks = self.tasks;
        let dead = self.exited_tgids.contains(&t.id.tgid)
            && tasks
                .binary_search_by_key(&(t.id.tgid, t.id.tgid), |x| (x.id.tgid, x.id.tid))
                .is_ok_and(|j| self.exited.contains(&tasks[j].id));
        self.cur = Some((t.id.tgid, gi, dead));
        (gi, dead, true)
    }
}

/// The entry of `id` in the last collection's lists (a process's, or another thread's
/// switches) and its place there; the entries before it are dropped, a process's through
/// `gone`.
fn take_prev(
    old_prev: &mut InPlace<'_, Prev>,
    old_threads: &mut InPlace<'_, (u64, u64)>,
    id: TaskId,
    gone: &mut impl FnMut(TaskId, Prev),
) -> (Option<Prev>, Option<usize>) {
    let key = (id.tgid, id.tid);
    if id.is_leader() {
        old_prev.skip_to(key, gone);
        match old_prev.take(id) {
            Some((at, p)) => (Some(p), Some(at)),
            None => (None, None),
        }
    } else {
        old_threads.skip_to(key, |_, _| {});
        match old_threads.take(id) {
            Some((at, sw)) => {
                let p = Prev {
                    switches: Some(sw),
                    ..Prev::default()
                };
                (Some(p), Some(at))
            }
            None => (None, None),
        }
    }
}

/// Counts `t`'s context switches since `known` (from 0 when `new`, from now when neither)
/// into `g`, unless its process is `dead` (its exit counted them). Returns its switches now
/// (voluntary, involuntary), when read, and what was counted.
fn count_switches(
    g: &mut Group,
    t: &Task,
    known: Option<Prev>,
    new: bool,
    dead: bool,
) -> (Option<(u64, u64)>, (u64, u64)) {
    let mut switched = (0, 0);
    let Some(sw) = t.sched.as_ref() else {
        return (None, switched);
    };
    let (Some(v), Some(iv)) = (sw.voluntary_switches, sw.involuntary_switches) else {
        return (None, switched);
    };
    g.now.has_switches = true;
    let before = match known.and_then(|k| k.switches) {
        Some(p) => p,
        None if new => (0, 0),
        None => (v, iv),
    };
    if !dead {
        switched = (v.saturating_sub(before.0), iv.saturating_sub(before.1));
        g.delta.voluntary_switches += switched.0;
        g.delta.involuntary_switches += switched.1;
    }
    (Some((v, iv)), switched)
}

/// Counts process `t`'s gauges into `g`, and its CPU, I/O and faults since `known` (from 0
/// when `new`, from now when neither), unless it is `dead` (its exit counted them). Returns
/// its counters now and the CPU counted, `None` without its stat group.
fn count_process(
    g: &mut Group,
    t: &Task,
    known: Option<Prev>,
    new: bool,
    dead: bool,
    boot_time_unix_s: u64,
) -> Option<(ProcPrev, Option<u64>)> {
    let st = t.stat.as_ref()?;
    g.now.resident_bytes += st.rss_bytes;
    g.now.virtual_bytes += st.vsize_bytes;
    if let Some(sw) = st.swap_bytes {
        g.now.swap_bytes = Some(g.now.swap_bytes.unwrap_or(0) + sw);
    }
    let start = boot_time_unix_s as f64 + st.start_time_ns as f64 / 1e9;
    g.now.oldest_start_unix_s = Some(g.now.oldest_start_unix_s.map_or(start, |o| o.min(start)));
    let io = t.io.as_deref();
    g.now.has_io |= io.is_some();
    let p = ProcPrev {
        user_ns: st.utime_ns,
        system_ns: st.stime_ns,
        read_bytes: io.map_or(0, |io| io.read_bytes),
        write_bytes: io.map_or(0, |io| io.write_bytes),
        minor: st.minflt,
        major: st.majflt,
        io: io.is_some(),
    };
    let before = match known.and_then(|k| k.proc) {
        Some(b) => b,
        None if new => ProcPrev::default(),
        None => p,
    };
    // A zombie whose exit this reading holds: the exit counted it.
    if dead {
        return Some((p, None));
    }
    let du = p.user_ns.saturating_sub(before.user_ns);
    let ds = p.system_ns.saturating_sub(before.system_ns);
    g.delta.cpu_user_ns += du;
    g.delta.cpu_system_ns += ds;
    g.delta.read_bytes += p.read_bytes.saturating_sub(before.read_bytes);
    g.delta.write_bytes += p.write_bytes.saturating_sub(before.write_bytes);
    g.delta.minor_faults += p.minor.saturating_sub(before.minor);
    g.delta.major_faults += p.major.saturating_sub(before.major);
    Some((p, Some(du + ds)))
}

/// What a walk leaves for the rest of the collection.
pub(super) struct Walked {
    /// Each counted process's CPU in the interval, ns, with its task index (for `top_n`).
    pub(super) cpu_deltas: Vec<(u64, usize)>,
    /// The processes of the last collection missing from this one.
    pub(super) vanished: Vec<(TaskId, Prev)>,
}

impl Aggregator {
    /// Counts every task of `live` into its group and the host's figures, and keeps what the
    /// next interval starts from, the last collection's lists updated in place.
    pub(super) fn walk(&mut self, live: &Live<'_>, system: &mut System) -> Walked {
        // Whether a task not seen at the last collection started after it: then all it did
        // is new. At the first collection nothing is (the counters start there).
        let prev_at = self.prev_boottime_ns;
        let is_new = |id: &TaskId| prev_at.is_some_and(|at| id.start_time_ns >= at);
        let mut cpu_deltas: Vec<(u64, usize)> = Vec::new();
        let mut processes = Processes::new(live);
        let mut prev_list = std::mem::take(&mut self.prev);
        let mut threads_list = std::mem::take(&mut self.threads);
        let mut old_prev = InPlace::new(&mut prev_list);
        let mut old_threads = InPlace::new(&mut threads_list);
        let mut vanished: Vec<(TaskId, Prev)> = Vec::new();
        let mut gone = |id: TaskId, p: Prev| {
            if id.is_leader() && (p.proc.is_some() || p.counted_switches.is_some()) {
                vanished.push((id, p));
            }
        };
        // Where the current process's main thread's entry is.
        let mut leader_slot: Option<Slot> = None;
        for (i, t) in live.tasks.iter().enumerate() {
            let state = current_state(t, live.states);
            system.threads += 1;
            system.in_state[state.index()] += 1;
            if t.id.is_leader() {
                system.processes += 1;
            }
            let (gi, dead, first) = processes.of(t);
            if first {
                leader_slot = None;
            }
            let Some(gi) = gi else { continue };
            let g = &mut self.groups[gi];
            g.now.threads += 1;
            g.now.in_state[state.index()] += 1;
            let (known, at) = take_prev(&mut old_prev, &mut old_threads, t.id, &mut gone);
            let new = is_new(&t.id);
            let (switches, switched) = count_switches(g, t, known, new, dead);
            let mut now = Prev {
                switches,
                ..Prev::default()
            };
            if t.id.is_leader() {
                g.now.processes += 1;
                let counted = count_process(g, t, known, new, dead, live.boot_time_unix_s);
                if let Some((p, cpu)) = counted {
                    if let (Some(cpu), true) = (cpu, self.opts.top_n > 0) {
                        cpu_deltas.push((cpu, i));
                    }
                    now.proc = Some(p);
                }
                now.comm_hash = comm_hash(t.base.as_ref().map_or(&[], |b| &b.comm));
                // Switches counted from its birth (see the module's header), this thread's
                // included; its other threads add theirs below.
                now.counted_switches = match known {
                    Some(k) => k.counted_switches,
                    None if new => Some((0, 0)),
                    None => None,
                }
                .map(|c| {
                    (
                        c.0.saturating_add(switched.0),
                        c.1.saturating_add(switched.1),
                    )
                });
                if now.proc.is_some() || now.switches.is_some() || now.counted_switches.is_some() {
                    leader_slot = Some(old_prev.keep(at, t.id, now));
                }
            } else {
                if let Some(c) =
                    leader_slot.and_then(|s| old_prev.get_mut(s).counted_switches.as_mut())
                {
                    c.0 = c.0.saturating_add(switched.0);
                    c.1 = c.1.saturating_add(switched.1);
                }
                if let Some(sw) = now.switches {
                    old_threads.keep(at, t.id, sw);
                }
            }
        }
        old_prev.finish(&mut gone);
        old_threads.finish(|_, _| {});
        self.prev = prev_list;
        self.threads = threads_list;
        Walked {
            cpu_deltas,
            vanished,
        }
    }
}
