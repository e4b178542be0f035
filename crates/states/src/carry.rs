//! Thread-state totals kept continuous across a restart of their source: what a recorder
//! does to the samples of a new run so that they go on from the last sample recorded before
//! it, rather than from zero. Pure: the recorder hands it the last recorded [`Reading`] and
//! each new one.
//!
//! A state source counts from when it started (the BPF accounting from its load; the /proc
//! source's state-letter samples from its first read), so without this the interval that
//! spans a restart ends with totals smaller than it began with, and a thread's time in it
//! is lost (a CPU hog showed 0 s running across a restart while its CPU time grew 4 s).
//!
//! For each thread of the new run's first sample that the last recorded sample also holds
//! (the same [`TaskId`](tasksnap_model::TaskId), read by the same kind of source on the same
//! clock), the new run's totals get a constant offset for the thread's whole life, so that
//! its first stored totals are the last recorded ones plus the time between the two reads:
//!
//! - that time's running and run-queue parts are exact, from the scheduler's own counters
//!   (schedstat's on-CPU and run-delay ns, in both readings' task rows, read just before the
//!   states);
//! - the rest is off the CPU, and goes to the off-CPU state the thread was in at either end
//!   (run-queue when it was on a CPU or waiting for one at both: a wait not ended yet;
//!   sleeping when nothing better is known): the estimate the /proc source makes of a
//!   thread's off-CPU time, from two looks at it.
//!
//! The new source's own first totals are not used for that interval: the BPF accounting
//! puts a thread's lifetime run-queue waits into the first totals of a thread it meets at a
//! switch-out before its seeding pass, so they are not "time since it started counting".
//! From its second sample on, every interval is the new source's own difference. Without
//! both readings' schedstat for a thread, nothing is invented: its totals go on from the last
//! recorded ones and the interval spanning the restart holds only what the new source
//! counted.
//!
//! The /proc source's state ns (schedstat, delay accounting) already count from the thread's
//! start, across restarts; only its state-letter samples are carried.
//!
//! Wait-reason ids are per run (the BPF stack ids, the /proc source's wchan table), so the
//! new run's ids are renumbered into the last sample's: frames recorded before keep their id,
//! other frames keep theirs unless the old table uses it, else get one from the top of the
//! id space; a stored id stands for one new id only (a second new id of the same recorded
//! frames gets one of its own). Threads born in the gap and threads the new source does not
//! report are not carried (there is nothing recorded to carry on from).
//!
//! A sample goes back to its source as it was read ([`Carry::restore`], once it is stored):
//! the BPF source lends the sample it reads the next one from, and takes the threads that
//! did not change on from it.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::states::{Mode, Sample, State, ThreadMap, ThreadTotals, NSTATES};
use tasksnap_model::{Reading, TaskId};

/// What is added to a carried thread's totals in every sample of the new run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Base {
    /// What to add to the new source's totals per state, ns, in two's complement (see
    /// [`offset`]).
    state_ns: [u64; NSTATES],
    samples: [u64; NSTATES],
    /// (state, reason id in the old table, ns), from the last recorded sample.
    reasons: Vec<(State, u32, u64)>,
    /// How many of `reasons` the last [`Carry::apply`] appended to the thread's own (the
    /// ones it had no entry for): [`Carry::restore`] takes them off again.
    pushed: usize,
}

/// The last recorded sample before the restart, kept until the new run's first sample.
#[derive(Debug)]
struct Last {
    sample: Sample,
    /// schedstat's (on-CPU ns, run-delay ns) per task, from the same reading.
    sched: Sched,
    /// The boot it was taken in (`btime`, seconds since the epoch).
    boot_time_unix_s: u64,
}

/// Keeps a new run's thread-state totals continuous with the last recorded sample (see the
/// module docs). [`Carry::none`] does nothing.
#[derive(Debug, Default)]
pub struct Carry {
    last: Option<Last>,
    bases: ThreadMap<Base>,
    /// New run's reason id to the id it is stored under.
    ids: HashMap<u32, u32>,
    /// Stored id to the new run's id it was given to: `ids` turned round. One new id per
    /// stored id, so that [`Carry::restore`] can number a sample back.
    back: HashMap<u32, u32>,
    /// What the last [`Carry::apply`] did that [`Carry::restore`] cannot work out from the
    /// bases: the reason ids it added to the sample's table, and the totals `offset` bounded
    /// (thread, state index, the new source's own total).
    added_ids: Vec<u32>,
    bounded: Vec<(TaskId, usize, u64)>,
    /// Frames per stored id: the last sample's table, then every id given out since.
    frames: HashMap<u32, Arc<[String]>>,
    /// The stored id of each frames the last sample's table holds.
    by_frames: HashMap<Arc<[String]>, u32>,
    next_free: u32,
    /// The new run's reason ids are renumbered (its source is the last sample's kind).
    renumbering: bool,
    /// Threads carried at the first sample.
    carried: usize,
}

fn same_source(a: Mode, b: Mode) -> bool {
    std::mem::discriminant(&a) == std::mem::discriminant(&b)
}

/// schedstat's (on-CPU ns, run-delay ns) per (tgid, tid). By number, not [`TaskId`](tasksnap_model::TaskId): a task
/// row's start time comes from /proc's clock ticks, a thread-totals row's from the kernel's
/// ns; the thread is the same one when its totals' identity is in both readings.
type Sched = HashMap<(i32, i32), (u64, u64)>;

fn sched_of(r: &Reading) -> Sched {
    r.snapshot
        .tasks
        .iter()
        .filter_map(|t| {
            let s = t.sched.as_deref()?;
            Some(((t.id.tgid, t.id.tid), (s.on_cpu_ns, s.run_delay_ns)))
        })
        .collect()
}

impl Carry {
    /// Carries nothing: the samples pass unchanged.
    pub fn none() -> Carry {
        Carry::default()
    }

    /// Carries on from `last`, the last reading recorded before this run (one without
    /// thread states carries nothing).
    pub fn after(last: &Reading) -> Carry {
        let Some(sample) = last.states.clone() else {
            return Carry::none();
        };
        let by_frames = sample
            .reasons
            .iter()
            .map(|(&id, f)| (Arc::clone(f), id))
            .collect();
        Carry {
            frames: sample.reasons.clone(),
            by_frames,
            next_free: u32::MAX,
            last: Some(Last {
                sched: sched_of(last),
                sample,
                boot_time_unix_s: last.snapshot.boot_time_unix_s,
            }),
            ..Carry::default()
        }
    }

    /// Threads whose totals go on from the last recorded sample (known after the first
    /// [`Carry::apply`]).
    pub fn carried(&self) -> usize {
        self.carried
    }

    /// Makes `r`'s thread-state totals go on from the last recorded sample: call on every
    /// reading of the run, in order, before it is stored.
    pub fn apply(&mut self, r: &mut Reading) {
        if let Some(last) = self.last.take() {
            self.first(&last, r);
        }
        if !self.renumbering {
            return;
        }
        let Some(s) = r.states.as_mut() else { return };
        self.renumber(s);
        self.added_ids.clear();
        self.bounded.clear();
        if self.bases.is_empty() {
            return;
        }
        for (id, t) in &mut s.threads {
            let Some(b) = self.bases.get_mut(id) else {
                continue;
            };
            for i in 0..NSTATES {
                let moved = offset(t.state_ns[i], b.state_ns[i]);
                if moved != t.state_ns[i].wrapping_add(b.state_ns[i]) {
                    self.bounded.push((*id, i, t.state_ns[i]));
                }
                t.state_ns[i] = moved;
                // Counts and ns far below u64::MAX: the sums do not saturate, and
                // `restore` takes them off exactly.
                t.samples[i] = t.samples[i].saturating_add(b.samples[i]);
            }
            b.pushed = 0;
            for &(st, rid, ns) in &b.reasons {
                match t.reasons.iter_mut().find(|e| e.0 == st && e.1 == rid) {
                    Some(e) => e.2 = e.2.saturating_add(ns),
                    None => {
                        t.reasons.push((st, rid, ns));
                        b.pushed += 1;
                    }
                }
            }
        }
        for b in self.bases.values() {
            for &(_, rid, _) in &b.reasons {
                if let (Some(f), Entry::Vacant(v)) = (self.frames.get(&rid), s.reasons.entry(rid)) {
                    v.insert(Arc::clone(f));
                    self.added_ids.push(rid);
                }
            }
        }
        // A thread gone is never reported again: its base can go.
        let threads = &s.threads;
        self.bases.retain(|id, _| threads.contains_key(id));
    }

    /// Undoes the last [`Carry::apply`] on `r` (the reading it was given, not changed since):
    /// its thread states are again what their source read, numbered as it numbers them. A
    /// source that lends its kept sample (the BPF source, incremental) reads the next one
    /// from it, so the recorder gives it back as it was lent: carried again, a thread it did
    /// not read again would get its offset twice.
    pub fn restore(&mut self, r: &mut Reading) {
        if !self.renumbering {
            return;
        }
        let Some(s) = r.states.as_mut() else { return };
        for (id, t) in &mut s.threads {
            let Some(b) = self.bases.get(id) else {
                continue;
            };
            for i in 0..NSTATES {
                t.state_ns[i] = t.state_ns[i].wrapping_sub(b.state_ns[i]);
                t.samples[i] = t.samples[i].wrapping_sub(b.samples[i]);
            }
            // The pushed ones are last, after the thread's own; the others were added to.
            t.reasons.truncate(t.reasons.len().saturating_sub(b.pushed));
            for &(st, rid, ns) in &b.reasons {
                if let Some(e) = t.reasons.iter_mut().find(|e| e.0 == st && e.1 == rid) {
                    e.2 = e.2.wrapping_sub(ns);
                }
            }
        }
        for &(id, i, own) in &self.bounded {
            if let Some(t) = s.threads.get_mut(&id) {
                t.state_ns[i] = own;
            }
        }
        for id in self.added_ids.drain(..) {
            s.reasons.remove(&id);
        }
        self.bounded.clear();
        let back = |id: u32, back: &HashMap<u32, u32>| back.get(&id).copied().unwrap_or(id);
        let table = std::mem::take(&mut s.reasons);
        s.reasons = table
            .into_iter()
            .map(|(id, f)| (back(id, &self.back), f))
            .collect();
        for t in s.threads.values_mut() {
            for e in &mut t.reasons {
                e.1 = back(e.1, &self.back);
            }
            if let Some(w) = t.wait_reason.as_mut() {
                *w = back(*w, &self.back);
            }
        }
    }

    /// At the new run's first sample: every thread the last sample holds gets its base.
    fn first(&mut self, last: &Last, r: &Reading) {
        let Some(s) = r.states.as_ref() else { return };
        if !same_source(s.mode, last.sample.mode)
            || r.snapshot.boot_time_unix_s != last.boot_time_unix_s
        {
            return;
        }
        let now = sched_of(r);
        for (id, t) in &s.threads {
            let Some(p) = last.sample.threads.get(id) else {
                continue;
            };
            if p.exited || t.seen_at_ns < p.seen_at_ns {
                continue; // another boot's clock, or a thread that ended
            }
            let mut base = Base {
                state_ns: p.state_ns,
                samples: p.samples,
                reasons: p.reasons.clone(),
                pushed: 0,
            };
            if matches!(s.mode, Mode::Bpf) {
                let key = (id.tgid, id.tid);
                let (Some(before), Some(after)) = (last.sched.get(&key), now.get(&key)) else {
                    self.bases.insert(*id, base);
                    continue;
                };
                let between = split(p, t, *before, *after);
                // Stored = new + offset = last recorded + between, in two's complement: the
                // offset may be "negative" in a state the new source counted more of.
                for (i, b) in base.state_ns.iter_mut().enumerate() {
                    *b = p.state_ns[i]
                        .saturating_add(between[i])
                        .wrapping_sub(t.state_ns[i]);
                }
            } else {
                // schedstat and delay accounting count from the thread's start already.
                base.state_ns = [0; NSTATES];
            }
            self.bases.insert(*id, base);
        }
        self.carried = self.bases.len();
        // From here on the new run's reason ids are renumbered into the old table's, so that
        // a carried thread's reasons keep their frames.
        self.renumbering = self.carried > 0;
    }

    /// Renumbers `s`'s reason ids into the stored table's (see the module docs).
    fn renumber(&mut self, s: &mut Sample) {
        // In id order: which of two new ids of the same frames gets the stored id does not
        // depend on the table's hash order.
        let mut table: Vec<_> = std::mem::take(&mut s.reasons).into_iter().collect();
        table.sort_unstable_by_key(|e| e.0);
        for (id, f) in table {
            // A mapping holds while the id means the same frames (a source may reuse an id).
            let known = self
                .ids
                .get(&id)
                .copied()
                .filter(|x| self.frames.get(x) == Some(&f));
            let stored = match known {
                Some(x) => x,
                None => {
                    // A stored id goes to one new id only (two new ids of the same frames:
                    // the second gets another).
                    let x = match self.by_frames.get(&f) {
                        Some(&x) if self.back.get(&x).is_none_or(|&n| n == id) => x,
                        _ if !self.frames.contains_key(&id) => id,
                        _ => self.fresh_id(),
                    };
                    self.ids.insert(id, x);
                    self.back.insert(x, id);
                    self.frames.insert(x, Arc::clone(&f));
                    x
                }
            };
            s.reasons.insert(stored, f);
        }
        let map = |id: u32, ids: &HashMap<u32, u32>| ids.get(&id).copied().unwrap_or(id);
        for t in s.threads.values_mut() {
            for e in &mut t.reasons {
                e.1 = map(e.1, &self.ids);
            }
            if let Some(w) = t.wait_reason.as_mut() {
                *w = map(*w, &self.ids);
            }
        }
    }

    fn fresh_id(&mut self) -> u32 {
        loop {
            self.next_free = self.next_free.saturating_sub(1);
            if !self.frames.contains_key(&self.next_free) || self.next_free == 0 {
                return self.next_free;
            }
        }
    }
}

/// The thread's ns per state from its last recorded read (`p`) to its first read by the new
/// source (`t`): running and run-queue from schedstat (`before`, `after`: on-CPU and
/// run-delay ns in the task rows of the two readings), the rest off the CPU in the state
/// seen at either end.
fn split(
    p: &ThreadTotals,
    t: &ThreadTotals,
    before: (u64, u64),
    after: (u64, u64),
) -> [u64; NSTATES] {
    let mut ns = [0u64; NSTATES];
    let elapsed = t.seen_at_ns.saturating_sub(p.seen_at_ns);
    let run = after.0.saturating_sub(before.0).min(elapsed);
    let runq = after.1.saturating_sub(before.1).min(elapsed - run);
    ns[State::Running.index()] = run;
    ns[State::Runnable.index()] = runq;
    let off_state = |s: Option<State>| s.filter(|s| !matches!(s, State::Running | State::Runnable));
    let s = off_state(p.current)
        .or(off_state(t.current))
        .unwrap_or(match (p.current, t.current) {
            // On a CPU or waiting for one at both ends, and not explained by schedstat: a
            // run-queue wait not ended yet (run_delay counts a wait when it ends).
            (Some(_), Some(_)) => State::Runnable,
            _ => State::Sleeping,
        });
    ns[s.index()] += elapsed - run - runq;
    ns
}

/// `total` moved by `base`, a signed offset in two's complement, bounded to what a total can
/// be: the offset is "negative" in a state the new source had counted more of than the last
/// recorded sample at the first sample, and a later total of that state below that first one
/// (a torn read of a record the programs were writing) would otherwise wrap to near
/// `u64::MAX`, and every interval after it read as centuries in that state.
fn offset(total: u64, base: u64) -> u64 {
    (i128::from(total) + i128::from(base as i64)).clamp(0, i128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Backend, Sched, Snapshot, SnapshotStats, Task, TaskId};

    const S: u64 = 1_000_000_000;

    fn id(tid: i32) -> TaskId {
        TaskId {
            tgid: 100,
            tid,
            start_time_ns: 7,
        }
    }

    fn thread(tid: i32, seen: u64, ns: [u64; NSTATES], current: State) -> ThreadTotals {
        ThreadTotals {
            id: id(tid),
            comm: "hog".into(),
            state_ns: ns,
            current: Some(current),
            seen_at_ns: seen,
            ..ThreadTotals::default()
        }
    }

    fn reading(at: u64, threads: Vec<ThreadTotals>, sched: &[(i32, u64, u64)]) -> Reading {
        let mut s = Sample::new(Mode::Bpf, at);
        for t in threads {
            s.threads.insert(t.id, t);
        }
        let tasks = sched
            .iter()
            .map(|&(tid, on, delay)| {
                let mut t = Task::new(id(tid));
                t.sched = Some(Box::new(Sched {
                    on_cpu_ns: on,
                    run_delay_ns: delay,
                    timeslices: 0,
                    voluntary_switches: None,
                    involuntary_switches: None,
                }));
                t
            })
            .collect();
        Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: at,
                taken_at_boottime_ns: at,
                boot_time_unix_s: 0,
                backend: Backend::Bpf,
                tasks,
                stats: SnapshotStats::default(),
            },
            states: Some(s),
            system: Default::default(),
            exits: Vec::new(),
            exits_dropped: 0,
            exits_missing: None,
            host: Default::default(),
            cgroups: None,
        }
    }

    /// The thread roll-up of the interval from `a`'s thread states to `b`'s.
    fn threads_between(a: &Reading, b: &Reading) -> crate::Interval {
        crate::between(states(a), states(b), crate::Rollup::Thread)
    }

    /// The reading's thread-state sample.
    fn states(r: &Reading) -> &Sample {
        r.states.as_ref().expect("states")
    }

    /// A reading at `at` of thread 1 alone, seen then with `ns` and in state `current`.
    fn one_thread(
        at: u64,
        ns: [u64; NSTATES],
        current: State,
        sched: &[(i32, u64, u64)],
    ) -> Reading {
        reading(at, vec![thread(1, at, ns, current)], sched)
    }

    fn ns(run: u64, runq: u64, sleep: u64) -> [u64; NSTATES] {
        let mut a = [0; NSTATES];
        a[State::Running.index()] = run;
        a[State::Runnable.index()] = runq;
        a[State::Sleeping.index()] = sleep;
        a
    }

    /// Regression: a hog's running time across a recorder restart was lost (0 s running in
    /// the interval spanning it).
    #[test]
    fn restart_keeps_a_hogs_running_time() {
        // Last recorded: 10 s running at t=100 s (schedstat 50 s on CPU).
        let last = one_thread(
            100 * S,
            ns(10 * S, S, 0),
            State::Running,
            &[(1, 50 * S, 2 * S)],
        );
        // The new source began 3 s later and has counted 1 s (0.9 s running); schedstat
        // grew by 3.6 s on CPU and 0.4 s waiting.
        let mut r = one_thread(
            104 * S,
            ns(S * 9 / 10, S / 10, 0),
            State::Running,
            &[(1, 53 * S + S * 6 / 10, 2 * S + S * 4 / 10)],
        );
        let mut c = Carry::after(&last);
        c.apply(&mut r);
        assert_eq!(c.carried(), 1);
        let s = states(&r);
        let t = &s.threads[&id(1)];
        let before = &states(&last).threads[&id(1)];
        let iv = threads_between(&last, &r);
        let row = &iv.rows[0];
        // The whole 4 s are accounted for: 3.6 s on CPU, 0.4 s waiting for one.
        assert_eq!(row.alive_ns, 4 * S);
        assert_eq!(row.ns[State::Running.index()], 3 * S + S * 6 / 10);
        assert_eq!(row.ns[State::Runnable.index()], S * 4 / 10);
        assert!(t.state_ns[0] > before.state_ns[0]);

        // The next sample of the run goes on from there: its own time only.
        let mut r2 = one_thread(105 * S, ns(S * 19 / 10, S / 10, 0), State::Running, &[]);
        c.apply(&mut r2);
        let iv = threads_between(&r, &r2);
        assert_eq!(iv.rows[0].ns[State::Running.index()], S);
        assert_eq!(iv.rows[0].alive_ns, S);
    }

    /// The BPF accounting puts a thread's lifetime run-queue waits in its first totals when
    /// it meets the thread at a switch-out before seeding it: the restart's interval must
    /// not count them.
    #[test]
    fn lifetime_waits_in_the_new_sources_first_totals_are_not_counted() {
        let last = one_thread(
            100 * S,
            ns(10 * S, S, 0),
            State::Running,
            &[(1, 50 * S, 40 * S)],
        );
        let mut r = one_thread(
            102 * S,
            ns(S / 2, 40 * S, 0),
            State::Runnable,
            &[(1, 51 * S + S / 2, 40 * S + S / 2)],
        );
        let mut c = Carry::after(&last);
        c.apply(&mut r);
        let iv = threads_between(&last, &r);
        assert_eq!(iv.rows[0].ns, ns(S + S / 2, S / 2, 0));
        let mut r2 = one_thread(103 * S, ns(S, 40 * S + S / 2, 0), State::Running, &[]);
        c.apply(&mut r2);
        let iv = threads_between(&r, &r2);
        assert_eq!(iv.rows[0].ns, ns(S / 2, S / 2, 0));
    }

    #[test]
    fn a_sleepers_gap_is_sleeping_and_new_threads_are_left_alone() {
        let last = one_thread(100 * S, ns(0, 0, 5 * S), State::Sleeping, &[(1, S, 0)]);
        let mut r = reading(
            110 * S,
            vec![
                thread(1, 110 * S, ns(0, 0, 2 * S), State::Sleeping),
                thread(2, 110 * S, ns(S, 0, S), State::Sleeping),
            ],
            &[(1, S, 0), (2, S, 0)],
        );
        let mut c = Carry::after(&last);
        c.apply(&mut r);
        let s = states(&r);
        assert_eq!(s.threads[&id(1)].state_ns, ns(0, 0, 15 * S));
        assert_eq!(s.threads[&id(2)].state_ns, ns(S, 0, S));
    }

    #[test]
    fn another_source_or_clock_is_not_carried() {
        let last = one_thread(100 * S, ns(S, 0, 0), State::Running, &[]);
        // A reboot: the clock is behind the last reading's.
        let mut r = one_thread(5 * S, ns(S, 0, 0), State::Running, &[]);
        let mut c = Carry::after(&last);
        c.apply(&mut r);
        assert_eq!(c.carried(), 0);
        assert_eq!(states(&r).threads[&id(1)].state_ns, ns(S, 0, 0));
    }

    #[test]
    fn reason_ids_are_renumbered_into_the_recorded_table() {
        let frames = |s: &str| -> Arc<[String]> { Arc::from(vec![s.to_string()]) };
        let mut p = thread(1, 100 * S, ns(0, 0, 0), State::Disk);
        p.state_ns[State::Disk.index()] = 4 * S;
        p.reasons = vec![(State::Disk, 3, 4 * S)];
        let mut last = reading(100 * S, vec![p], &[]);
        last.states
            .as_mut()
            .expect("states")
            .reasons
            .insert(3, frames("io_schedule"));
        // The new run calls io_schedule 8 and gives 3 to another stack.
        let mut t = thread(1, 101 * S, ns(0, 0, 0), State::Disk);
        t.state_ns[State::Disk.index()] = S / 2;
        t.reasons = vec![(State::Disk, 8, S / 4), (State::Disk, 3, S / 4)];
        t.wait_reason = Some(3);
        let mut r = reading(101 * S, vec![t], &[]);
        {
            let s = r.states.as_mut().expect("states");
            s.reasons.insert(8, frames("io_schedule"));
            s.reasons.insert(3, frames("futex_wait"));
        }
        let mut c = Carry::after(&last);
        c.apply(&mut r);
        let s = states(&r);
        let t = &s.threads[&id(1)];
        assert_eq!(s.reasons[&3], frames("io_schedule"));
        let futex = t.wait_reason.expect("a wait reason");
        assert_ne!(futex, 3);
        assert_eq!(s.reasons[&futex], frames("futex_wait"));
        let io = t.reasons.iter().find(|e| e.1 == 3).expect("io_schedule");
        assert_eq!(io.2, 4 * S + S / 4);
    }

    /// A total that dipped below the new source's first one after a restart (a torn read of a
    /// record being written) wrapped the carried total to near `u64::MAX`: dump then panicked
    /// adding the interval's states ("attempt to add with overflow", seen in CI), and every
    /// interval after it would have read as centuries waiting.
    #[test]
    fn regression_a_total_below_the_first_after_a_restart_wrapped() {
        let last = one_thread(
            100 * S,
            ns(10 * S, 0, 0),
            State::Running,
            &[(1, 50 * S, 2 * S)],
        );
        // The new source counted 2 s waiting where schedstat says 0.4 s: a negative offset.
        let mut first = one_thread(
            104 * S,
            ns(S, 2 * S, 0),
            State::Running,
            &[(1, 53 * S + S * 6 / 10, 2 * S + S * 4 / 10)],
        );
        let mut c = Carry::after(&last);
        c.apply(&mut first);
        // Next, 1 s waiting: below the first sample's 2 s.
        let mut dip = one_thread(105 * S, ns(2 * S, S, 0), State::Running, &[]);
        c.apply(&mut dip);
        let runq = |r: &Reading| states(r).threads[&id(1)].state_ns[State::Runnable.index()];
        assert!(
            runq(&dip) <= runq(&first),
            "{} after {}",
            runq(&dip),
            runq(&first)
        );
        let iv = threads_between(&first, &dip);
        assert!(iv.rows[0].alive_ns <= 2 * S, "{:?}", iv.rows[0]);
    }

    /// Frames of one reason, for the tables of the tests.
    fn frames(s: &str) -> Arc<[String]> {
        Arc::from(vec![s.to_string()])
    }

    /// A sample as comparable text: its threads in order, its reasons table in order.
    fn text(s: &Sample) -> String {
        let mut threads: Vec<_> = s.threads.values().map(|t| format!("{t:?}")).collect();
        threads.sort();
        let mut table: Vec<_> = s.reasons.iter().collect();
        table.sort();
        format!("{} {threads:?} {table:?}", s.at_ns)
    }

    /// What the BPF source does with the sample it lent when it is given back: its threads
    /// not read again taken on to `now` in their state (their wait's reason too), and
    /// `fresh` (threads read again) put in their place.
    fn read_on(s: &mut Sample, now: u64, fresh: Vec<ThreadTotals>) {
        for t in s.threads.values_mut() {
            let dt = now - t.seen_at_ns;
            let cur = t.current.expect("a state");
            t.state_ns[cur.index()] += dt;
            if let Some(w) = t.wait_reason {
                if let Some(e) = t.reasons.iter_mut().find(|e| e.0 == cur && e.1 == w) {
                    e.2 += dt;
                }
            }
            t.seen_at_ns = now;
        }
        for t in fresh {
            s.threads.insert(t.id, t);
        }
        s.at_ns = now;
    }

    /// Regression: with the BPF source lending the sample it reads the next one from, the
    /// recorder gave it back carried, and a thread the next sample did not read again got its
    /// offset twice (recorded as unchanged while its totals had jumped: the encoder's check
    /// caught it). Given back restored, the sample is the source's own again, and carrying
    /// the lent sample gives what carrying a copy of it gives, sample after sample: through
    /// renumbered ids (a new id on an old id's frames, a second new id on the same frames, a
    /// new id that is an old id of other frames), an old reason added to a thread's, an
    /// offset below zero, and a total bounded by it.
    #[test]
    fn regression_a_lent_sample_carried_twice() {
        let mut p1 = thread(1, 100 * S, ns(0, 0, S), State::Disk);
        p1.state_ns[State::Disk.index()] = 4 * S;
        p1.reasons = vec![(State::Disk, 3, 4 * S), (State::Sleeping, 5, S)];
        let p2 = thread(2, 100 * S, ns(10 * S, 0, 0), State::Running);
        let mut last = reading(100 * S, vec![p1, p2], &[(1, S, 0), (2, 50 * S, 2 * S)]);
        {
            let s = last.states.as_mut().expect("states");
            s.reasons.insert(3, frames("io_schedule"));
            s.reasons.insert(5, frames("pipe_read"));
        }
        // The new run: thread 1 in a disk wait under two of its ids of io_schedule's frames,
        // thread 2 counted more run-queue time than schedstat says (a negative offset) and a
        // futex wait under id 3.
        let mut t1 = thread(1, 104 * S, ns(0, 0, 0), State::Disk);
        t1.state_ns[State::Disk.index()] = S;
        t1.reasons = vec![(State::Disk, 8, S / 2), (State::Disk, 9, S / 2)];
        t1.wait_reason = Some(9);
        let mut t2 = thread(2, 104 * S, ns(S, 2 * S, S), State::Running);
        t2.reasons = vec![(State::Sleeping, 3, S)];
        let mut held = reading(
            104 * S,
            vec![t1, t2],
            &[(1, S, 0), (2, 53 * S + S * 6 / 10, 2 * S + S * 4 / 10)],
        );
        {
            let s = held.states.as_mut().expect("states");
            s.reasons.insert(8, frames("io_schedule"));
            s.reasons.insert(9, frames("io_schedule"));
            s.reasons.insert(3, frames("futex_wait"));
        }
        let (mut lent, mut copied) = (Carry::after(&last), Carry::after(&last));
        for step in 0..4u64 {
            let own = text(states(&held));
            let mut copy = held.clone();
            copied.apply(&mut copy);
            lent.apply(&mut held);
            assert_eq!(lent.bounded.is_empty(), step != 1, "step {step}: bounded");
            assert_eq!(
                text(states(&held)),
                text(states(&copy)),
                "step {step}: carried"
            );
            lent.restore(&mut held);
            assert_eq!(text(states(&held)), own, "step {step}: given back");
            // Thread 2 read again (its run-queue total below the first's at step 1: bounded),
            // thread 1 taken on.
            let now = (105 + step) * S;
            let mut t2 = thread(2, now, ns((2 + step) * S, S + step * S, S), State::Running);
            t2.reasons = vec![(State::Sleeping, 3, S)];
            read_on(held.states.as_mut().expect("states"), now, vec![t2]);
        }
        assert_eq!(copied.carried(), 2);
    }
}
