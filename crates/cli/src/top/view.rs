//! What one refresh of `top` shows, from two snapshots: per-task rates (%CPU, RUNQ%) matched
//! by task identity (tgid, tid, start time, so a reused pid starts from zero), the process
//! rollup of thread rows, the state counts and the tree order. No formatting here; sorting
//! and filtering by a column are `arrange.rs`'.

use std::collections::HashMap;
use tasksnap_model::hash::IdMap;

use tasksnap_model::{ExitReason, Snapshot, Task, TaskId};

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Line {
    pub id: TaskId,
    pub ppid: i32,
    pub euid: u32,
    /// /proc/PID/stat's priority (prio - 100): "rt" below -99.
    pub priority: i32,
    pub nice: i32,
    pub virt_kib: u64,
    pub res_kib: u64,
    /// Shared memory (statm), read only for the rows on screen.
    pub shr_kib: Option<u64>,
    pub state: u8,
    pub cpu_pct: f64,
    pub mem_pct: f64,
    pub time_ns: u64,
    /// Share of the interval spent waiting for a CPU (run delay), summed over threads.
    pub runq_pct: Option<f64>,
    /// Share of the interval spent in D, summed over threads (the states accounting).
    pub disk_pct: Option<f64>,
    /// Share of the interval held off the CPU by the cgroup's CPU quota, summed over threads
    /// (the states accounting; taken out of `runq_pct` when known).
    pub thr_pct: Option<f64>,
    /// The stack the process waited in most (the states accounting).
    pub reason: Option<String>,
    pub comm: tasksnap_model::Comm,
    pub kthread: bool,
    /// Tree depth when the tree view is on.
    pub depth: usize,
    /// Its cgroups as `ps -o cgroup` shows them, when the refresh read them (a `CGROUP`
    /// filter is on: every task's /proc/PID/cgroup is then read each refresh).
    pub cgroup: Option<Box<str>>,
    /// A process that exited during the interval (the exited view, [`super::exited`]):
    /// how it ended. `None` for a live row.
    pub exit: Option<Box<Exited>>,
}

/// What an exited row carries besides a live row's columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// How it ended.
    pub reason: ExitReason,
    /// Its command line at exit (`/proc/PID/cmdline`'s bytes), for `-c`.
    pub cmdline: Box<[u8]>,
}

/// A row as frames hold it: shared with the tracker, which keeps every row between
/// refreshes, so that a frame of 50,000 rows copies pointers, not rows. The few rows a
/// frame changes (shared memory of the rows on screen, wait reasons, tree depth) are
/// copied on write.
pub type Row = std::rc::Rc<Line>;

/// Counts for the "Tasks:" header line.
#[derive(Debug, Clone, Copy, Default)]
pub struct StateCounts {
    pub total: usize,
    pub running: usize,
    pub sleeping: usize,
    pub stopped: usize,
    pub zombie: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prev {
    cpu_ns: u64,
    run_delay_ns: u64,
}

/// Remembers each task's counters and each row between refreshes, to turn the next
/// snapshot (whole, or only what changed: see `Collector::changes`) into rates and rows.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Counters of every task seen (threads too in the process view: RUNQ% sums them).
    prev: IdMap<Key, Prev>,
    /// The rows, one per process (or per thread in the threads view), in tid order: the
    /// order every sort falls back to for ties, so sorting by %CPU, where most rows tie at
    /// zero, finds them nearly sorted already.
    rows: std::collections::BTreeMap<RowKey, Row>,
    /// Rows whose rates were not zero at the last update: a task that did not change
    /// since has rates of zero, and is not in the next changes to say so.
    hot: Vec<RowKey>,
    prev_at_ns: u64,
    threads: bool,
}

type Key = (i32, i32, u64);

fn key(id: &TaskId) -> Key {
    (id.tgid, id.tid, id.start_time_ns)
}

type RowKey = (i32, i32, u64);

fn row_key(id: &TaskId) -> RowKey {
    (id.tid, id.tgid, id.start_time_ns)
}

impl Tracker {
    /// The rows of `snap` (taken with every thread, the leader carrying process totals when
    /// `threads` is off), rolled up per process unless `threads`.
    pub fn update(&mut self, snap: &Snapshot, threads: bool, mem_total_kib: u64) -> Vec<Row> {
        let mut out = Vec::new();
        self.apply(snap, true, &[], threads, mem_total_kib, &mut out);
        out
    }

    /// Like [`Tracker::update`], from changes: when not `full`, `snap` has only the tasks
    /// that changed (every thread of each process that did) and `gone` the threads that
    /// went away; every other row stays as it was, with rates of zero. The rows go into
    /// `out` (cleared first: a recycled vector keeps its pages).
    pub fn apply(
        &mut self,
        snap: &Snapshot,
        full: bool,
        gone: &[TaskId],
        threads: bool,
        mem_total_kib: u64,
        out: &mut Vec<Row>,
    ) {
        let mut feed = self.begin(snap.taken_at_boottime_ns, full, threads, mem_total_kib);
        for t in &snap.tasks {
            self.push(&mut feed, t);
        }
        self.finish(feed, full, gone, out);
    }

    /// The identities of the processes (main threads) the last update saw, by tgid: for an
    /// exit source whose identities are derived (taskstats), to give an exit its live
    /// process's identity before [`Tracker::cpu_ns_before`].
    pub fn leaders(&self) -> IdMap<i32, TaskId> {
        self.prev
            .keys()
            .filter(|&&(tgid, tid, _)| tgid == tid)
            .map(|&(tgid, tid, start_time_ns)| {
                let id = TaskId {
                    tgid,
                    tid,
                    start_time_ns,
                };
                (tgid, id)
            })
            .collect()
    }

    /// What each process of `ids` (process identities: tgid, the leader's start time) had
    /// used of the CPU at the last update, ns, if that update saw it: the leader's counters
    /// in the process view (the leader carries its process's totals), the sum over its
    /// threads in the threads view. For the exited view: what an exit used during the
    /// interval is its final total less this (call it before the refresh's update, which
    /// forgets the processes that went).
    pub fn cpu_ns_before<'a>(&self, ids: impl Iterator<Item = &'a TaskId>) -> Vec<Option<u64>> {
        let ids: Vec<&TaskId> = ids.collect();
        let mut out: Vec<Option<u64>> = ids
            .iter()
            .map(|id| self.prev.get(&key(id)).map(|p| p.cpu_ns))
            .collect();
        if self.threads && out.iter().any(Option::is_some) {
            let mut seen: IdMap<i32, usize> = IdMap::default();
            for (i, id) in ids.iter().enumerate() {
                if let Some(v) = out[i].as_mut() {
                    *v = 0;
                    seen.insert(id.tgid, i);
                }
            }
            // One pass over the counters, only in a refresh with exits: a thread of the
            // process started with or after its leader (an older one is an earlier
            // process's, with the same pid).
            for (&(tgid, _, start), p) in &self.prev {
                if let Some(&i) = seen.get(&tgid) {
                    if start >= ids[i].start_time_ns {
                        if let Some(v) = out[i].as_mut() {
                            *v = v.saturating_add(p.cpu_ns);
                        }
                    }
                }
            }
        }
        out
    }

    /// Starts a refresh fed task by task ([`Tracker::push`], then [`Tracker::finish`]),
    /// taken at `now_ns` (the kernel's boot clock). When `full` (a whole snapshot is coming) the
    /// rows go now, before it arrives: at 50,000 tasks that is ~11 MB fewer at the peak.
    pub fn begin(&mut self, now_ns: u64, full: bool, threads: bool, mem_total_kib: u64) -> Feed {
        let full = full || threads != self.threads;
        self.threads = threads;
        let first = self.prev.is_empty();
        let old_prev = if full {
            self.rows.clear();
            self.hot.clear();
            let n = self.prev.len();
            std::mem::replace(
                &mut self.prev,
                IdMap::with_capacity_and_hasher(n, Default::default()),
            )
        } else {
            for k in self.hot.drain(..) {
                if let Some(l) = self.rows.get_mut(&k) {
                    let l = Row::make_mut(l);
                    l.cpu_pct = 0.0;
                    l.runq_pct = l.runq_pct.map(|_| 0.0);
                }
            }
            IdMap::default()
        };
        Feed {
            now_ns,
            wall_ns: now_ns.saturating_sub(self.prev_at_ns).max(1) as f64,
            first,
            full,
            threads,
            mem_total_kib,
            old_prev,
            runq_of: IdMap::default(),
            leaders: IdMap::default(),
            pushed: Vec::new(),
        }
    }

    /// One task of the refresh `feed` (taken with every thread, the leader carrying process
    /// totals when the view is per process).
    pub fn push(&mut self, feed: &mut Feed, t: &Task) {
        let cpu_ns = t.stat.as_ref().map_or(0, |s| s.utime_ns + s.stime_ns);
        let run_delay_ns = t.sched.as_ref().map_or(0, |s| s.run_delay_ns);
        let k = key(&t.id);
        let now_prev = Prev {
            cpu_ns,
            run_delay_ns,
        };
        let prev = if feed.full {
            self.prev.insert(k, now_prev);
            feed.old_prev.get(&k).copied()
        } else {
            self.prev.insert(k, now_prev)
        };
        let (first, wall_ns) = (feed.first, feed.wall_ns);
        let rate = |now_v: u64, was: Option<u64>| -> f64 {
            match was {
                Some(w) if !first => now_v.saturating_sub(w) as f64 * 100.0 / wall_ns,
                _ => 0.0,
            }
        };
        let runq = t
            .sched
            .as_ref()
            .map(|_| rate(run_delay_ns, prev.map(|p| p.run_delay_ns)));
        if !feed.threads {
            // Process view: run delay summed over each process's threads (all of a changed
            // process's threads are in the changes).
            if let Some(r) = runq {
                *feed.runq_of.entry(t.id.tgid).or_default() += r;
            }
            if !t.id.is_leader() {
                return;
            }
        }
        let Some(b) = t.base.as_ref() else {
            return;
        };
        let res_kib = t.stat.as_ref().map_or(0, |s| s.rss_bytes / 1024);
        let line = Line {
            id: t.id,
            ppid: b.ppid,
            euid: t.cred.as_ref().map_or(0, |c| c.euid),
            priority: b.priority,
            nice: b.nice,
            virt_kib: t.stat.as_ref().map_or(0, |s| s.vsize_bytes / 1024),
            res_kib,
            shr_kib: None,
            state: b.state.letter(),
            cpu_pct: rate(cpu_ns, prev.map(|p| p.cpu_ns)),
            mem_pct: res_kib as f64 * 100.0 / feed.mem_total_kib.max(1) as f64,
            time_ns: cpu_ns,
            runq_pct: runq,
            disk_pct: None,
            thr_pct: None,
            reason: None,
            comm: b.comm.clone(),
            kthread: b.kthread,
            depth: 0,
            cgroup: t
                .cgroup
                .as_deref()
                .map(|c| String::from_utf8_lossy(&crate::ps::text::cgroup_text(Some(c))).into()),
            exit: None,
        };
        let rk = row_key(&t.id);
        if line.cpu_pct > 0.0 || line.runq_pct.is_some_and(|r| r > 0.0) {
            self.hot.push(rk);
        }
        if !feed.threads {
            feed.leaders.insert(t.id.tgid, rk);
        }
        if !feed.full {
            feed.pushed.push(rk);
        }
        self.rows.insert(rk, Row::new(line));
    }

    /// Ends the refresh `feed`: `full` says whether every task came (a whole snapshot
    /// though only changes were expected drops the rows that did not come), `gone` the
    /// threads that went away. The rows go into `out`.
    pub fn finish(&mut self, feed: Feed, full: bool, gone: &[TaskId], out: &mut Vec<Row>) {
        if full && !feed.full {
            let mut pushed = feed.pushed;
            pushed.sort_unstable();
            self.rows.retain(|k, _| pushed.binary_search(k).is_ok());
            self.hot.retain(|k| pushed.binary_search(k).is_ok());
        }
        for g in gone {
            self.rows.remove(&row_key(g));
            self.prev.remove(&key(g));
        }
        for (tgid, r) in feed.runq_of {
            if r <= 0.0 {
                continue;
            }
            // The leader of a changed process is in the changes: its row was just made.
            if let Some(rk) = feed.leaders.get(&tgid) {
                if let Some(l) = self.rows.get_mut(rk) {
                    Row::make_mut(l).runq_pct = Some(r);
                    self.hot.push(*rk);
                }
            }
        }
        self.prev_at_ns = feed.now_ns;
        out.clear();
        out.reserve(self.rows.len());
        out.extend(self.rows.values().cloned());
    }
}

/// One refresh being fed to the [`Tracker`].
#[derive(Debug)]
pub struct Feed {
    now_ns: u64,
    wall_ns: f64,
    /// No counters yet: no rates.
    first: bool,
    /// The rows were dropped at the start: every task is coming.
    full: bool,
    threads: bool,
    mem_total_kib: u64,
    /// The counters before a whole snapshot (the tracker's are rebuilt from it).
    old_prev: IdMap<Key, Prev>,
    runq_of: IdMap<i32, f64>,
    /// Each process's row, for its RUNQ% sum.
    leaders: IdMap<i32, RowKey>,
    /// Rows made by a refresh that expected only changes.
    pushed: Vec<RowKey>,
}

/// The "Tasks:" counts (per process, or per thread in the threads view).
pub fn count_states(lines: &[Row]) -> StateCounts {
    let mut c = StateCounts {
        total: lines.len(),
        ..StateCounts::default()
    };
    for l in lines {
        match l.state {
            b'R' => c.running += 1,
            b'T' | b't' => c.stopped += 1,
            b'Z' => c.zombie += 1,
            _ => c.sleeping += 1,
        }
    }
    c
}

/// Reorders sorted `lines` as a forest: each process under its parent, siblings in the
/// current sort order, with `depth` set. Processes whose parent is not listed are roots.
pub fn forest(lines: Vec<Row>) -> Vec<Row> {
    let index: HashMap<i32, usize> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.id.tid, i))
        .collect();
    let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.ppid != l.id.tid && index.contains_key(&l.ppid) {
            children.entry(l.ppid).or_default().push(i);
        } else {
            roots.push(i);
        }
    }
    let mut order = Vec::with_capacity(lines.len());
    let mut seen = vec![false; lines.len()];
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        order.push((i, depth));
        if let Some(kids) = children.get(&lines[i].id.tid) {
            stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    let mut slots: Vec<Option<Row>> = lines.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(i, depth)| {
            let mut l = slots[i].take()?;
            if l.depth != depth {
                Row::make_mut(&mut l).depth = depth;
            }
            Some(l)
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use crate::top::view::*;
    use tasksnap_model::{Base, Stat, Task, TaskState};

    /// A sleeping task `tid` of `tgid` under `ppid`, with `cpu_ms` of user time and 4 KiB of
    /// resident memory per unit of its tid.
    pub(in crate::top) fn task(tgid: i32, tid: i32, ppid: i32, cpu_ms: u64, at_start: u64) -> Task {
        let mut t = Task::new(TaskId {
            tgid,
            tid,
            start_time_ns: at_start,
        });
        t.base = Some(Base {
            state: TaskState::from_letter(b'S'),
            ppid,
            comm: format!("t{tid}").into_bytes().into(),
            ..Base::default()
        });
        t.stat = Some(Stat {
            utime_ns: cpu_ms * 1_000_000,
            rss_bytes: 4096 * tid as u64,
            ..Stat::default()
        });
        t
    }

    /// A snapshot of `tasks` taken at `at_ns`.
    pub(in crate::top) fn snap(at_ns: u64, tasks: Vec<Task>) -> Snapshot {
        Snapshot {
            taken_at_unix_ns: at_ns,
            taken_at_boottime_ns: at_ns,
            boot_time_unix_s: 0,
            backend: tasksnap_model::Backend::Procfs,
            tasks,
            stats: Default::default(),
        }
    }

    #[test]
    fn cpu_rates_come_from_deltas_of_the_same_task() {
        let mut tr = Tracker::default();
        let l = tr.update(
            &snap(1_000_000_000, vec![task(10, 10, 1, 100, 5)]),
            false,
            1000,
        );
        assert_eq!(l[0].cpu_pct, 0.0, "no rate on the first sample");
        // 500 ms of CPU in 1 s: 50%.
        let l = tr.update(
            &snap(2_000_000_000, vec![task(10, 10, 1, 600, 5)]),
            false,
            1000,
        );
        assert!((l[0].cpu_pct - 50.0).abs() < 1e-9, "{}", l[0].cpu_pct);
        // Same pid, new start time: a new task, no rate against the old one.
        let l = tr.update(
            &snap(3_000_000_000, vec![task(10, 10, 1, 900, 7)]),
            false,
            1000,
        );
        assert_eq!(l[0].cpu_pct, 0.0);
    }

    #[test]
    fn process_view_keeps_leaders_and_threads_view_keeps_all() {
        let mut tr = Tracker::default();
        let tasks = vec![task(10, 10, 1, 1, 5), task(10, 11, 1, 1, 5)];
        assert_eq!(tr.update(&snap(1, tasks.clone()), false, 1000).len(), 1);
        assert_eq!(tr.update(&snap(2, tasks), true, 1000).len(), 2);
    }

    #[test]
    fn changes_keep_unchanged_rows_and_zero_their_rates() {
        let mut tr = Tracker::default();
        let mut out = Vec::new();
        let all: Vec<Task> = (1..=5).map(|p| task(p, p, 1, 100, 1)).collect();
        tr.apply(&snap(1_000_000_000, all), true, &[], false, 1000, &mut out);
        // Process 3 ran 500 ms in the next second; the others did not change.
        tr.apply(
            &snap(2_000_000_000, vec![task(3, 3, 1, 600, 1)]),
            false,
            &[],
            false,
            1000,
            &mut out,
        );
        assert_eq!(out.len(), 5);
        let cpu = |out: &[Row], p: i32| out.iter().find(|l| l.id.tid == p).map(|l| l.cpu_pct);
        assert!((cpu(&out, 3).expect("process 3") - 50.0).abs() < 1e-9);
        assert_eq!(cpu(&out, 1), Some(0.0));
        // Nothing changed since: its rate falls to zero; process 5 went away.
        let gone = [TaskId {
            tgid: 5,
            tid: 5,
            start_time_ns: 1,
        }];
        tr.apply(
            &snap(3_000_000_000, vec![]),
            false,
            &gone,
            false,
            1000,
            &mut out,
        );
        assert_eq!(out.len(), 4);
        assert_eq!(cpu(&out, 3), Some(0.0));
        assert_eq!(cpu(&out, 5), None);
    }

    #[test]
    fn forest_puts_children_under_parents() {
        let mut tr = Tracker::default();
        let tasks = vec![
            task(1, 1, 0, 0, 0),
            task(5, 5, 9, 0, 0),
            task(9, 9, 1, 0, 0),
            task(7, 7, 1, 0, 0),
        ];
        // The tracker's rows come in pid order: siblings stay in it.
        let l = tr.update(&snap(1, tasks), false, 1000);
        let f = forest(l);
        let order: Vec<(i32, usize)> = f.iter().map(|l| (l.id.tid, l.depth)).collect();
        assert_eq!(order, [(1, 0), (7, 1), (9, 1), (5, 2)]);
    }
}
