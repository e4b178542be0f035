//! One interval from two samples: per-thread nanoseconds and percentages in each state, the
//! top off-CPU reason, roll-ups per process or command, sorting, and the totals row. Pure:
//! fed by live sources and by tests alike.
//!
//! Percentages are of the time the thread was alive in the interval (all of it, unless it
//! was born or exited during it), so a row sums to 100 within rounding.

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rollup {
    /// One row per thread.
    #[default]
    Thread,
    /// One row per process (thread group).
    Process,
    /// One row per command name.
    Command,
}

/// The reason a row held back by a CPU quota is named for ([`Reason::frames`]).
pub const QUOTA_REASON: &str = "cpu quota";

/// Why a row was off the CPU most: the reason with the most off-CPU time in the interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    /// The state it waited in.
    pub state: State,
    /// Kernel frames, innermost first.
    pub frames: Arc<[String]>,
    /// ns spent there in the interval (estimated in /proc mode).
    pub ns: u64,
}

impl Reason {
    /// `f0 <- f1 <- ...`, at most `depth` frames.
    pub fn text(&self, depth: usize) -> String {
        let mut s = String::new();
        for (i, f) in self.frames.iter().take(depth).enumerate() {
            if i > 0 {
                s.push_str(" <- ");
            }
            s.push_str(f);
        }
        if self.frames.len() > depth {
            s.push_str(" <- ...");
        }
        s
    }
}

/// One row: a thread, or a process or command rolled up.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// Process id (0 for a command roll-up).
    pub pid: i32,
    /// Thread id, for thread rows.
    pub tid: Option<i32>,
    /// Command name as text (invalid UTF-8 replaced by U+FFFD).
    pub comm: String,
    /// The command name's exact bytes when they are not valid UTF-8 (from the source's
    /// `ThreadTotals::comm_bytes`).
    pub comm_bytes: Option<Arc<[u8]>>,
    /// ns per state in the interval.
    pub ns: [u64; NSTATES],
    /// ns alive in the interval: the sum of `ns`.
    pub alive_ns: u64,
    /// The top off-CPU reason.
    pub top_reason: Option<Reason>,
    /// Threads rolled into this row.
    pub threads: usize,
    /// The thread (all threads of the row) exited during the interval.
    pub exited: bool,
    /// Every reason with its ns in the interval (for roll-ups and flame graphs).
    pub reasons: Vec<Reason>,
}

impl Row {
    /// Percentage of the alive time spent in `s` (0 when not alive).
    pub fn pct(&self, s: State) -> f64 {
        if self.alive_ns == 0 {
            return 0.0;
        }
        self.ns[s.index()] as f64 * 100.0 / self.alive_ns as f64
    }

    /// Time off the CPU not by choice: waiting for a CPU (behind other threads or held by a
    /// quota), in D, or stopped. The default sort.
    pub fn offcpu_pct(&self) -> f64 {
        self.pct(State::Runnable)
            + self.pct(State::Throttled)
            + self.pct(State::Disk)
            + self.pct(State::Stopped)
    }

    /// Sums `other` into this row, saturating: the figures come from /proc and BPF, input
    /// that is not promised to be sane.
    fn add(&mut self, other: &Row) {
        for i in 0..NSTATES {
            self.ns[i] = self.ns[i].saturating_add(other.ns[i]);
        }
        self.alive_ns = self.alive_ns.saturating_add(other.alive_ns);
        self.threads += other.threads;
        self.exited &= other.exited;
        for r in &other.reasons {
            match self
                .reasons
                .iter_mut()
                .find(|x| x.state == r.state && x.frames == r.frames)
            {
                Some(x) => x.ns = x.ns.saturating_add(r.ns),
                None => self.reasons.push(r.clone()),
            }
        }
    }

    /// The reason with the most time; a row held back by a CPU quota longer than that is
    /// named for the quota (its time is the throttled state's: no stack or holder names it).
    fn pick_top_reason(&mut self) {
        self.top_reason = self
            .reasons
            .iter()
            .filter(|r| r.ns > 0)
            .max_by_key(|r| r.ns)
            .cloned();
        let throttled = self.ns[State::Throttled.index()];
        if throttled > self.top_reason.as_ref().map_or(0, |r| r.ns) {
            self.top_reason = Some(Reason {
                state: State::Throttled,
                frames: Arc::from(vec![QUOTA_REASON.to_string()]),
                ns: throttled,
            });
        }
    }
}

/// One interval's rows.
#[derive(Debug, Clone)]
pub struct Interval {
    /// The source of both samples.
    pub mode: Mode,
    /// Length, ns.
    pub length_ns: u64,
    /// Rows, in no particular order until [`Interval::sort`].
    pub rows: Vec<Row>,
    /// Threads that exited during the interval.
    pub exited: usize,
    /// Notes from the source (e.g. delay accounting off).
    pub notes: Vec<String>,
}

/// Sort keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// RUNQ% + THR% + DISK% + STOP%, descending (the default).
    Offcpu,
    /// A state's percentage, descending.
    State(State),
    /// Process id, ascending.
    Pid,
    /// Thread id, ascending.
    Tid,
    /// Command name, ascending.
    Comm,
}

impl Interval {
    /// Sorts the rows by `key`, ties broken by pid and tid. Percentages are compared in
    /// millionths of a percent, computed once per row.
    pub fn sort(&mut self, key: SortKey) {
        use std::cmp::Reverse;
        let micro = |x: f64| (x * 1e6) as u64;
        match key {
            SortKey::Offcpu => self.rows.sort_by_cached_key(|r| {
                (
                    Reverse(micro(r.offcpu_pct())),
                    Reverse(micro(r.pct(State::Running))),
                    r.pid,
                    r.tid,
                )
            }),
            SortKey::State(s) => self
                .rows
                .sort_by_cached_key(|r| (Reverse(micro(r.pct(s))), r.pid, r.tid)),
            SortKey::Pid => self.rows.sort_by_key(|r| (r.pid, r.tid)),
            SortKey::Tid => self.rows.sort_by_key(|r| (r.tid, r.pid)),
            SortKey::Comm => self.rows.sort_by(|a, b| {
                a.comm
                    .cmp(&b.comm)
                    .then((a.pid, a.tid).cmp(&(b.pid, b.tid)))
            }),
        }
    }

    /// All rows summed: percentages of the total alive time.
    pub fn totals(&self) -> Row {
        let mut t = Row {
            comm: "TOTAL".into(),
            exited: false,
            ..Row::default()
        };
        for r in &self.rows {
            for i in 0..NSTATES {
                t.ns[i] = t.ns[i].saturating_add(r.ns[i]);
            }
            t.alive_ns = t.alive_ns.saturating_add(r.alive_ns);
            t.threads += r.threads;
        }
        t
    }
}

/// ns of each state for a thread in /proc mode: running is the exact delta of schedstat's
/// runtime, runnable at least the delta of its run-queue wait (the waits that ended); the
/// rest of its alive time is split by the state letters sampled during the interval, with
/// block I/O delay (delay accounting) as a floor for disk. A thread no sample caught off the
/// CPU has the rest as runnable (a wait not ended yet): an estimate, which is why
/// [`Mode::sampled`] does not call runnable exact in this mode. (The sampler's own thread
/// reads R in its own `stat` and counts itself asleep: see tasksnap-collect's
/// `states::procfs`.)
fn procfs_split(
    alive_ns: u64,
    exact: &[u64; NSTATES],
    samples: &[u64; NSTATES],
    current: Option<State>,
    delayacct: bool,
) -> [u64; NSTATES] {
    let mut ns = [0u64; NSTATES];
    let run = exact[State::Running.index()];
    let runq = exact[State::Runnable.index()];
    let throttled = exact[State::Throttled.index()];
    ns[State::Running.index()] = run;
    ns[State::Runnable.index()] = runq;
    ns[State::Throttled.index()] = throttled;
    let off = alive_ns.saturating_sub(saturating_sum([run, runq, throttled].into_iter()));
    let off_states = [State::Sleeping, State::Disk, State::Stopped, State::Other];
    let seen = saturating_sum(off_states.iter().map(|s| samples[s.index()]));
    if seen == 0 {
        // No sample caught it off the CPU. When it was seen running (R), the time schedstat
        // does not explain yet is a run-queue wait still going on (run_delay counts a wait
        // only when it ends) or a slice not yet added to its runtime: runnable. Otherwise its
        // (short) waits go to the off-CPU state it is in now, else to sleeping.
        let s = match current {
            None | Some(State::Running) | Some(State::Runnable) | Some(State::Throttled) => {
                State::Runnable
            }
            Some(s) if off_states.contains(&s) => s,
            Some(_) => State::Sleeping,
        };
        ns[s.index()] += off;
    } else {
        let mut given = 0;
        for (k, s) in off_states.iter().enumerate() {
            let part = if k == off_states.len() - 1 {
                off - given
            } else {
                (off as u128 * samples[s.index()] as u128 / seen as u128) as u64
            };
            ns[s.index()] = part;
            given += part;
        }
    }
    if delayacct {
        // Block I/O delay is exact and is D time: a floor for disk, taken from sleeping first.
        let blk = exact[State::Disk.index()].min(off);
        let disk = ns[State::Disk.index()];
        if blk > disk {
            let mut need = blk - disk;
            for s in [State::Sleeping, State::Other, State::Stopped] {
                let take = need.min(ns[s.index()]);
                ns[s.index()] -= take;
                need -= take;
            }
            ns[State::Disk.index()] = blk - need;
        }
    }
    ns
}

/// The sum of `ns`, saturating: totals come from BPF, /proc and recordings, none of them
/// promised sane (a recorded total near `u64::MAX` must give a full row, not a panic).
fn saturating_sum(ns: impl Iterator<Item = u64>) -> u64 {
    ns.fold(0, u64::saturating_add)
}

fn sub(a: &[u64; NSTATES], b: Option<&[u64; NSTATES]>) -> [u64; NSTATES] {
    let mut d = *a;
    if let Some(b) = b {
        for i in 0..NSTATES {
            // Totals only grow; a torn read must not make a huge unsigned delta.
            d[i] = a[i].saturating_sub(b[i]);
        }
    }
    d
}

/// One thread's share of an interval: what [`between`] makes a [`Row`] of, for callers that
/// need the figures without a row per thread (the exporter sums them per group).
#[derive(Debug, Clone, Copy)]
pub struct ThreadDelta<'a> {
    /// The thread's totals at the end of the interval.
    pub cur: &'a ThreadTotals,
    /// Its totals at the start (`None`: born, or first seen, in the interval).
    pub prev: Option<&'a ThreadTotals>,
    /// ns per state in the interval.
    pub ns: [u64; NSTATES],
}

impl<'a> ThreadDelta<'a> {
    /// The delta of `cur` against `prev` in a sample of `mode` whose interval began at
    /// `interval_start_ns`.
    pub fn new(
        cur: &'a ThreadTotals,
        prev: Option<&'a ThreadTotals>,
        mode: Mode,
        interval_start_ns: u64,
    ) -> ThreadDelta<'a> {
        let exact = sub(&cur.state_ns, prev.map(|p| &p.state_ns));
        let ns = match mode {
            Mode::Bpf => exact,
            Mode::Procfs { delayacct, .. } => {
                let from = prev.map_or(cur.id.start_time_ns.max(interval_start_ns), |p| {
                    p.seen_at_ns
                });
                let alive = cur.seen_at_ns.saturating_sub(from);
                let samples = sub(&cur.samples, prev.map(|p| &p.samples));
                // schedstat's runtime is exact and read a little apart from the clock: the alive
                // time is at least what it says the thread ran. Its run-queue delta is not bounded
                // so: a wait is counted when it ends, whole, however much of it fell in earlier
                // intervals. Stretching the alive time to hold it (as this did) made RUN% a share
                // of more than the interval (a thread that waited 2 s and then ran half of a 1 s
                // interval showed RUN 20%); the part that does not fit is left out instead.
                let run = exact[State::Running.index()];
                let alive = alive.max(run);
                let mut exact = exact;
                let runq = &mut exact[State::Runnable.index()];
                *runq = (*runq).min(alive - run);
                let waited = run + exact[State::Runnable.index()];
                let throttled = &mut exact[State::Throttled.index()];
                *throttled = (*throttled).min(alive - waited);
                procfs_split(alive, &exact, &samples, cur.current, delayacct)
            }
        };
        ThreadDelta { cur, prev, ns }
    }

    /// The time it was alive in the interval, ns.
    pub fn alive_ns(&self) -> u64 {
        saturating_sum(self.ns.iter().copied())
    }

    /// Off-CPU ns per (state, reason id) in the interval (ids index [`Sample::reasons`]),
    /// each at most its state's time.
    pub fn reasons(&self) -> impl Iterator<Item = (State, u32, u64)> + '_ {
        self.cur
            .reasons
            .iter()
            .filter_map(move |&(state, id, total)| {
                let before = self
                    .prev
                    .and_then(|p| {
                        p.reasons
                            .iter()
                            .find(|&&(s, i, _)| s == state && i == id)
                            .map(|&(_, _, n)| n)
                    })
                    .unwrap_or(0);
                // A reason's time is part of its state's (a lag between the two reads at most:
                // see bpf/mod.rs), never more.
                let d = total.saturating_sub(before).min(self.ns[state.index()]);
                (d > 0).then_some((state, id, d))
            })
    }
}

/// The threads of `cur` that were alive in the interval from `prev` (threads that exited
/// during it included), unordered: the per-thread figures [`between`] rolls up.
pub fn thread_deltas<'a>(
    prev: &'a Sample,
    cur: &'a Sample,
) -> impl Iterator<Item = ThreadDelta<'a>> + 'a {
    cur.threads.iter().filter_map(move |(key, t)| {
        let p = prev.threads.get(key);
        if t.exited && p.is_none() && t.state_ns.iter().all(|&n| n == 0) {
            return None;
        }
        let d = ThreadDelta::new(t, p, cur.mode, prev.at_ns);
        (d.alive_ns() > 0).then_some(d)
    })
}

fn thread_row(d: &ThreadDelta<'_>, reasons: &HashMap<u32, Arc<[String]>>) -> Row {
    let cur = d.cur;
    let mut row = Row {
        pid: cur.id.tgid,
        tid: Some(cur.id.tid),
        comm: cur.comm.to_string(),
        comm_bytes: cur.comm_bytes.clone(),
        ns: d.ns,
        alive_ns: d.alive_ns(),
        threads: 1,
        exited: cur.exited,
        ..Row::default()
    };
    for (state, id, d) in d.reasons() {
        let frames = reasons
            .get(&id)
            .cloned()
            .unwrap_or_else(|| Arc::from(vec!["[unknown]".to_string()]));
        match row
            .reasons
            .iter_mut()
            .find(|r| r.state == state && r.frames == frames)
        {
            Some(r) => r.ns = r.ns.saturating_add(d),
            None => row.reasons.push(Reason {
                state,
                frames,
                ns: d,
            }),
        }
    }
    row.pick_top_reason();
    row
}

/// A roll-up's group: the pid (process), or the comm's text and exact bytes (command).
type GroupKey = (i32, String, Option<Arc<[u8]>>);

/// The interval from `prev` to `cur`, one row per thread of `cur` (threads that exited
/// during it included), grouped by `rollup`.
pub fn between(prev: &Sample, cur: &Sample, rollup: Rollup) -> Interval {
    let mut rows: Vec<Row> = Vec::with_capacity(cur.threads.len());
    let mut exited = 0;
    for d in thread_deltas(prev, cur) {
        exited += usize::from(d.cur.exited);
        rows.push(thread_row(&d, &cur.reasons));
    }
    let rows = match rollup {
        Rollup::Thread => rows,
        Rollup::Process | Rollup::Command => {
            // A command is its exact bytes: two names that differ only in invalid bytes are
            // two commands.
            let mut groups: HashMap<GroupKey, Row> = HashMap::new();
            for r in rows {
                let key = if rollup == Rollup::Process {
                    (r.pid, String::new(), None)
                } else {
                    (0, r.comm.clone(), r.comm_bytes.clone())
                };
                match groups.get_mut(&key) {
                    Some(g) => {
                        // A process is named after its main thread.
                        if r.tid == Some(r.pid) {
                            g.comm = r.comm.clone();
                            g.comm_bytes = r.comm_bytes.clone();
                        }
                        g.add(&r);
                    }
                    None => {
                        let mut g = r;
                        g.tid = None;
                        if rollup == Rollup::Command {
                            g.pid = 0;
                        }
                        groups.insert(key, g);
                    }
                }
            }
            groups
                .into_values()
                .map(|mut g| {
                    g.pick_top_reason();
                    g
                })
                .collect()
        }
    };
    Interval {
        mode: cur.mode,
        length_ns: cur.at_ns.saturating_sub(prev.at_ns),
        rows,
        exited,
        notes: cur.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::TaskId;

    fn totals(tid: i32, ns: [u64; NSTATES], at: u64) -> ThreadTotals {
        ThreadTotals {
            id: TaskId {
                tgid: 100,
                tid,
                start_time_ns: 1,
            },
            comm: format!("t{tid}").into(),
            state_ns: ns,
            seen_at_ns: at,
            ..ThreadTotals::default()
        }
    }

    fn sample(mode: Mode, at: u64, ts: Vec<ThreadTotals>) -> Sample {
        let mut s = Sample::new(mode, at);
        for t in ts {
            s.threads.insert(t.id, t);
        }
        s
    }

    /// Thread 1's row from zero totals at 0 to `t` (seen at 1000 ns), sampled by procfs at
    /// 20 Hz.
    fn procfs_row(delayacct: bool, t: ThreadTotals) -> Row {
        let mode = Mode::Procfs {
            sample_hz: 20,
            delayacct,
        };
        let a = sample(mode, 0, vec![totals(1, [0; NSTATES], 0)]);
        let b = sample(mode, 1000, vec![t]);
        between(&a, &b, Rollup::Thread).rows.swap_remove(0)
    }

    #[test]
    fn bpf_deltas_become_percentages_summing_to_100() {
        let a = sample(Mode::Bpf, 0, vec![totals(1, [10, 20, 30, 40, 0, 0, 0], 0)]);
        let b = sample(
            Mode::Bpf,
            1000,
            vec![totals(1, [260, 270, 280, 290, 0, 0, 0], 1000)],
        );
        let iv = between(&a, &b, Rollup::Thread);
        assert_eq!(iv.length_ns, 1000);
        let r = &iv.rows[0];
        assert_eq!(r.alive_ns, 1000);
        for s in [
            State::Running,
            State::Runnable,
            State::Sleeping,
            State::Disk,
        ] {
            assert!((r.pct(s) - 25.0).abs() < 1e-9, "{s:?} {}", r.pct(s));
        }
        let sum: f64 = State::ALL.iter().map(|&s| r.pct(s)).sum();
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_torn_read_never_makes_a_huge_delta() {
        let a = sample(Mode::Bpf, 0, vec![totals(1, [500, 0, 0, 0, 0, 0, 0], 0)]);
        let b = sample(
            Mode::Bpf,
            100,
            vec![totals(1, [400, 100, 0, 0, 0, 0, 0], 100)],
        );
        let r = &between(&a, &b, Rollup::Thread).rows[0];
        assert_eq!(r.ns[0], 0);
        assert_eq!(r.alive_ns, 100);
    }

    #[test]
    fn a_thread_born_in_the_interval_is_a_percentage_of_its_life() {
        let a = sample(Mode::Bpf, 0, vec![]);
        let b = sample(
            Mode::Bpf,
            1000,
            vec![totals(7, [50, 50, 0, 0, 0, 0, 0], 1000)],
        );
        let r = &between(&a, &b, Rollup::Thread).rows[0];
        assert_eq!(r.alive_ns, 100);
        assert!((r.pct(State::Running) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn exited_threads_still_appear() {
        let a = sample(Mode::Bpf, 0, vec![totals(1, [0; NSTATES], 0)]);
        let mut t = totals(1, [300, 0, 0, 0, 0, 0, 0], 300);
        t.exited = true;
        let b = sample(Mode::Bpf, 1000, vec![t]);
        let iv = between(&a, &b, Rollup::Thread);
        assert_eq!(iv.exited, 1);
        assert!(iv.rows[0].exited);
        assert!((iv.rows[0].pct(State::Running) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn procfs_splits_off_cpu_time_by_sampled_letters() {
        let mut t = totals(1, [200, 200, 0, 0, 0, 0, 0], 1000);
        t.samples = [4, 0, 3, 1, 0, 0, 0];
        let r = procfs_row(false, t);
        assert_eq!(r.alive_ns, 1000);
        assert_eq!(r.ns, [200, 200, 450, 150, 0, 0, 0]);
    }

    #[test]
    fn procfs_block_io_delay_is_a_floor_for_disk() {
        let mut t = totals(1, [0, 0, 0, 700, 0, 0, 0], 1000);
        t.samples = [0, 0, 10, 0, 0, 0, 0];
        let r = procfs_row(true, t);
        assert_eq!(r.ns, [0, 0, 300, 700, 0, 0, 0]);
    }

    #[test]
    fn procfs_unexplained_time_of_a_thread_seen_running_is_runnable() {
        let mut t = totals(1, [700, 100, 0, 0, 0, 0, 0], 1000);
        t.samples = [20, 0, 0, 0, 0, 0, 0];
        t.current = Some(State::Running);
        let r = procfs_row(false, t);
        assert_eq!(r.ns, [700, 300, 0, 0, 0, 0, 0]);
    }

    /// Regression (#16, a wrong exact figure): a wait that began in an earlier interval is
    /// counted by schedstat when it ends, whole; the alive time was stretched to hold it, so
    /// RUN% (labelled exact) was a share of more than the interval: 20% for a thread that ran
    /// half of it after waiting 2 s.
    #[test]
    fn regression_a_long_wait_ending_in_the_interval_shrank_the_exact_run_share() {
        let mut t = totals(1, [500, 2000, 0, 0, 0, 0, 0], 1000);
        t.samples = [20, 0, 0, 0, 0, 0, 0];
        t.current = Some(State::Running);
        let r = procfs_row(false, t);
        assert_eq!(r.alive_ns, 1000);
        assert_eq!(r.ns, [500, 500, 0, 0, 0, 0, 0]);
        assert!((r.pct(State::Running) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn procfs_without_off_cpu_samples_uses_the_current_state() {
        let mut t = totals(1, [100, 0, 0, 0, 0, 0, 0], 1000);
        t.current = Some(State::Disk);
        let r = procfs_row(false, t);
        assert_eq!(r.ns[State::Disk.index()], 900);
    }

    #[test]
    fn a_row_held_back_by_its_quota_most_is_named_for_it() {
        let a = sample(Mode::Bpf, 0, vec![totals(1, [0; NSTATES], 0)]);
        let mut t = totals(1, [100, 0, 0, 50, 0, 0, 850], 1000);
        t.reasons = vec![(State::Disk, 5, 50)];
        let mut b = sample(Mode::Bpf, 1000, vec![t]);
        b.reasons
            .insert(5, Arc::from(vec!["io_schedule".to_string()]));
        let iv = between(&a, &b, Rollup::Thread);
        let top = iv.rows[0].top_reason.as_ref().expect("a reason");
        assert_eq!((top.state, top.ns), (State::Throttled, 850));
        assert_eq!(&top.frames[..], [QUOTA_REASON.to_string()]);
    }

    #[test]
    fn rollups_sum_threads_and_keep_the_top_reason() {
        let a = sample(Mode::Bpf, 0, vec![]);
        let mut t1 = totals(100, [100, 0, 0, 900, 0, 0, 0], 1000);
        t1.reasons = vec![(State::Disk, 5, 900)];
        let mut t2 = totals(101, [500, 0, 0, 500, 0, 0, 0], 1000);
        t2.reasons = vec![(State::Disk, 5, 300), (State::Disk, 6, 200)];
        let mut b = sample(Mode::Bpf, 1000, vec![t1, t2]);
        b.reasons
            .insert(5, Arc::from(vec!["rwsem_down_write_slowpath".to_string()]));
        b.reasons
            .insert(6, Arc::from(vec!["folio_wait_bit".to_string()]));
        let iv = between(&a, &b, Rollup::Process);
        assert_eq!(iv.rows.len(), 1);
        let r = &iv.rows[0];
        assert_eq!(r.threads, 2);
        assert_eq!(r.comm, "t100");
        assert!((r.pct(State::Disk) - 70.0).abs() < 1e-9);
        let top = r.top_reason.as_ref().expect("a reason");
        assert_eq!(top.ns, 1200);
        assert_eq!(top.text(3), "rwsem_down_write_slowpath");
    }

    #[test]
    fn sorting_by_offcpu_puts_waiters_first() {
        let a = sample(Mode::Bpf, 0, vec![]);
        let b = sample(
            Mode::Bpf,
            100,
            vec![
                totals(1, [0, 0, 100, 0, 0, 0, 0], 100),
                totals(2, [0, 0, 0, 100, 0, 0, 0], 100),
                totals(3, [50, 50, 0, 0, 0, 0, 0], 100),
            ],
        );
        let mut iv = between(&a, &b, Rollup::Thread);
        iv.sort(SortKey::Offcpu);
        let order: Vec<_> = iv.rows.iter().map(|r| r.tid).collect();
        assert_eq!(order, vec![Some(2), Some(3), Some(1)]);
    }

    /// Two commands whose names differ only in bytes that are not UTF-8 have the same text
    /// (`x\u{fffd}`): the command roll-up keeps them apart by their exact bytes.
    #[test]
    fn commands_differing_only_in_invalid_bytes_stay_apart() {
        const S: u64 = 1_000_000_000;
        let mut prev = Sample::new(Mode::Bpf, 0);
        let mut cur = Sample::new(Mode::Bpf, S);
        for (tid, name) in [(1, &b"x\xff"[..]), (2, b"x\xfe"), (3, b"x\xfe")] {
            let mut t = totals(tid, [0; NSTATES], 0);
            t.comm = String::from_utf8_lossy(name).into();
            t.comm_bytes = Some(Arc::from(name));
            prev.threads.insert(t.id, t.clone());
            t.state_ns[State::Running.index()] = S;
            t.seen_at_ns = S;
            cur.threads.insert(t.id, t);
        }
        let iv = between(&prev, &cur, Rollup::Command);
        let mut got: Vec<(Option<&[u8]>, usize)> = iv
            .rows
            .iter()
            .map(|r| (r.comm_bytes.as_deref(), r.threads))
            .collect();
        got.sort();
        assert_eq!(got, [(Some(&b"x\xfe"[..]), 2), (Some(&b"x\xff"[..]), 1)]);
        assert!(iv.rows.iter().all(|r| r.comm == "x\u{fffd}"));
        let threads = between(&prev, &cur, Rollup::Thread);
        let one = threads
            .rows
            .iter()
            .find(|r| r.tid == Some(1))
            .expect("tid 1");
        assert_eq!(one.comm_bytes.as_deref(), Some(&b"x\xff"[..]));
    }

    /// Totals near `u64::MAX` (a damaged or hostile recording) made `between` panic adding a
    /// thread's states ("attempt to add with overflow" in `alive_ns`, from `tasksnap dump`).
    #[test]
    fn regression_totals_near_u64_max_panicked_between() {
        let mut prev = Sample::new(Mode::Bpf, 0);
        let mut cur = Sample::new(Mode::Bpf, 1_000_000_000);
        let huge = [u64::MAX / 2 + 1; NSTATES];
        let t = totals(1, huge, 1_000_000_000);
        cur.threads.insert(t.id, t);
        let born = totals(2, [u64::MAX; NSTATES], 1_000_000_000);
        cur.threads.insert(born.id, born);
        prev.threads
            .insert(totals(1, [0; NSTATES], 0).id, totals(1, [0; NSTATES], 0));
        for rollup in [Rollup::Thread, Rollup::Process, Rollup::Command] {
            let iv = between(&prev, &cur, rollup);
            assert!(
                iv.rows.iter().all(|r| r.alive_ns == u64::MAX),
                "{:?}",
                iv.rows
            );
            assert_eq!(iv.totals().alive_ns, u64::MAX);
        }
    }
}
