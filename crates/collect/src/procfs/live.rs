//! A live view's refreshes over procfs ([`Collector::changes`]): read again only the
//! processes that ran since the last refresh, found without opening a file per process.
//!
//! Procfs has no bulk interface: a refresh that reads `/proc/PID/stat` of each of 50,000
//! processes costs ~7 µs each here (open, read, close), 350 ms of CPU a second. What it does
//! have is the kernel's process CPU clock: `clock_gettime(MAKE_PROCESS_CPUCLOCK(pid,
//! CPUCLOCK_SCHED))` returns the summed `se.sum_exec_runtime` of every thread of any
//! process, with no file, no descriptor and no permission check (`pid_for_clock()`,
//! kernel/time/posix-cpu-timers.c), in ~0.8 µs. A process whose clock did not move since the
//! last refresh had no thread on a CPU, and everything a thread changes for itself (times,
//! faults, switches, state, name, credentials, threads, exec) needs it to run: its rows stay
//! as they were. That is the same test the BPF walk makes in the kernel (`proc_ran()` in
//! task_iter.bpf.c), so both backends change the same rows.
//!
//! Each refresh:
//! - lists `/proc` only when `processes` in `/proc/stat` (forks since boot) moved: every
//!   new task, process or thread, is a fork (listing 50,000 pids costs ~45 ms here); the
//!   reader threads tasksnap starts itself are counted out;
//! - probes each known process's clock: gone (the pid is free) or moved, it is read again,
//!   whole (every thread, as the caller needs for per-process sums);
//! - reads again, moved or not, processes with a thread that was runnable or in D at the
//!   last read (a woken thread is runnable before it runs), whose clock was 0, or whose
//!   parent went away (the child is re-parented without running);
//! - every [`FULL_EVERY`]th call is a whole read, for what another task can change in one
//!   that did not run: its nice value, its resident memory (reclaim), its process group.
//!
//! It is used only on the system's own `/proc` of the caller's pid namespace (the clock
//! takes pids of the caller's namespace); anything else gets whole snapshots.
//!
//! [`Collector::changes`]: crate::Collector::changes

use std::collections::{HashMap, HashSet};

use tasksnap_model::{
    Group, Groups, Query, Selector, Snapshot, SnapshotStats, Task, TaskId, TaskState,
};

use tasksnap_procfs::parse;

use super::reader::Item;

/// Every this many calls, a whole read (as the BPF backend's walk does).
pub const FULL_EVERY: u32 = crate::collector::CHANGES_FULL_EVERY;

/// What is kept of one process between refreshes.
#[derive(Debug, Clone)]
struct Proc {
    /// Its CPU clock (ns) probed just before its last read: a run after the probe moves it.
    cpu_ns: u64,
    ppid: i32,
    /// Read at every refresh: a thread was runnable or in D at the last read.
    hot: bool,
    /// More than one thread at the last read: read again with its task directory listed.
    multi: bool,
    /// Its threads at the last read.
    threads: Vec<TaskId>,
}

/// The state of one live view (see the module header).
#[derive(Debug)]
pub struct Live {
    groups: Groups,
    leader_as_process: bool,
    procs: HashMap<i32, Proc>,
    /// `processes` of /proc/stat when /proc was last listed.
    forks: Option<u64>,
    since_full: u32,
}

/// What one refresh has to read, and what it found gone.
#[derive(Debug, Default)]
pub struct Plan {
    /// Processes to read, each with its clock probed before the read (None: not probed).
    pub read: Vec<(i32, Option<u64>)>,
    /// Threads gone since the last refresh.
    pub gone: Vec<TaskId>,
}

/// Where [`Live`] gets the system's facts: the real kernel, or a test's script.
pub trait Source {
    /// Forks since boot (`processes` in /proc/stat).
    fn forks(&mut self) -> Option<u64>;
    /// Every process listed in /proc, ascending.
    fn list(&mut self) -> Option<Vec<i32>>;
    /// The process CPU clock of `tgid` in ns; None when no process has that number.
    fn cpu_ns(&mut self, tgid: i32) -> Option<u64>;
}

/// The running system.
#[derive(Debug)]
pub struct System<'a> {
    /// The collector, for listing /proc.
    pub procfs: &'a super::ProcfsCollector,
}

impl Source for System<'_> {
    fn forks(&mut self) -> Option<u64> {
        tasksnap_sys::read_small_file(&self.procfs.root.join("stat"))
            .ok()
            .and_then(|b| parse::parse_forks(&b).ok())
    }
    fn list(&mut self) -> Option<Vec<i32>> {
        self.procfs.list_pids().ok()
    }
    fn cpu_ns(&mut self, tgid: i32) -> Option<u64> {
        tasksnap_sys::process_cpu_ns(tgid)
    }
}

impl Live {
    /// A live view for `query`, or None when the query is not one it can follow: every
    /// thread, with the base group (state, parent and thread count decide what to re-read).
    pub fn new(query: &Query) -> Option<Live> {
        if query.selector != Selector::AllThreads || !query.groups.has(Group::Base) {
            return None;
        }
        Some(Live {
            groups: query.groups,
            leader_as_process: query.leader_as_process,
            procs: HashMap::new(),
            forks: None,
            since_full: 0,
        })
    }

    /// Whether this state follows `query`.
    pub fn follows(&self, query: &Query) -> bool {
        query.selector == Selector::AllThreads
            && query.groups == self.groups
            && query.leader_as_process == self.leader_as_process
    }

    /// Whether the next refresh is a whole read.
    pub fn next_is_full(&self) -> bool {
        self.procs.is_empty() || self.since_full + 1 >= FULL_EVERY
    }

    /// Counts `n` forks this process made itself (its reader threads) since the last
    /// [`Live::plan`], so that they do not make the next refresh list /proc.
    pub fn own_forks(&mut self, n: u64) {
        if let Some(f) = &mut self.forks {
            *f += n;
        }
    }

    /// Decides what the next refresh reads. `full` reads every listed process.
    pub fn plan(&mut self, src: &mut dyn Source, full: bool) -> Plan {
        let mut plan = Plan::default();
        let forks = src.forks();
        let listed = if full || forks.is_none() || forks != self.forks {
            // Listed after the counter was read: a fork between the two is either in this
            // listing or moves the counter again before the next refresh.
            src.list()
        } else {
            None
        };
        if listed.is_some() {
            self.forks = forks;
        }
        let mut gone_tgids: HashSet<i32> = HashSet::new();
        if let Some(list) = &listed {
            self.procs.retain(|tgid, p| {
                let keep = list.binary_search(tgid).is_ok();
                if !keep {
                    gone_tgids.insert(*tgid);
                    plan.gone.extend(p.threads.iter().copied());
                }
                keep
            });
        }
        // Probe every known process. A process whose pid is free is gone.
        let keys: Vec<i32> = self.procs.keys().copied().collect();
        for tgid in keys {
            match src.cpu_ns(tgid) {
                None => {
                    if let Some(p) = self.procs.remove(&tgid) {
                        gone_tgids.insert(tgid);
                        plan.gone.extend(p.threads);
                    }
                }
                Some(ns) => {
                    let p = &self.procs[&tgid];
                    if full || p.hot || ns == 0 || ns != p.cpu_ns {
                        plan.read.push((tgid, Some(ns)));
                    }
                }
            }
        }
        // Children of a process that went away were re-parented without running.
        if !gone_tgids.is_empty() {
            let mut orphans: Vec<i32> = self
                .procs
                .iter()
                .filter(|(_, p)| gone_tgids.contains(&p.ppid))
                .map(|(&tgid, _)| tgid)
                .collect();
            orphans.sort_unstable();
            for tgid in orphans {
                if !plan.read.iter().any(|&(t, _)| t == tgid) {
                    plan.read.push((tgid, None));
                }
            }
        }
        // New processes: listed, not known.
        if let Some(list) = listed {
            for tgid in list {
                if !self.procs.contains_key(&tgid) {
                    plan.read.push((tgid, src.cpu_ns(tgid)));
                }
            }
        }
        plan
    }

    /// The items that read the processes of `read`: a process known to have one thread is
    /// read without listing its task directory.
    pub fn items(&self, read: &[(i32, Option<u64>)]) -> Vec<Item> {
        read.iter()
            .map(|&(tgid, _)| {
                let multi = self.procs.get(&tgid).is_none_or(|p| p.multi);
                self.item(tgid, multi)
            })
            .collect()
    }

    /// The item that reads process `tgid`, its task directory listed when `multi`.
    pub fn item(&self, tgid: i32, multi: bool) -> Item {
        if multi {
            Item {
                tgid,
                tid: None,
                all_threads: true,
                leader_as_process: self.leader_as_process,
            }
        } else {
            Item {
                tgid,
                // The process itself carries process-wide values; the thread view wants
                // the thread's own.
                tid: (!self.leader_as_process).then_some(tgid),
                all_threads: false,
                leader_as_process: self.leader_as_process,
            }
        }
    }

    /// Processes of `tasks` read as single-threaded that have more threads now: they must
    /// be read again with their task directory listed.
    pub fn grew(&self, read: &[(i32, Option<u64>)], tasks: &[Task]) -> Vec<i32> {
        let single: HashSet<i32> = read
            .iter()
            .filter(|(tgid, _)| self.procs.get(tgid).is_some_and(|p| !p.multi))
            .map(|&(tgid, _)| tgid)
            .collect();
        let mut grew: Vec<i32> = tasks
            .iter()
            .filter(|t| t.id.is_leader() && single.contains(&t.id.tgid))
            .filter(|t| t.base.as_ref().is_some_and(|b| b.num_threads > 1))
            .map(|t| t.id.tgid)
            .collect();
        grew.sort_unstable();
        grew.dedup();
        grew
    }

    /// Takes in what a refresh read (`tasks`, every thread of each process of `read`):
    /// remembers it and adds to `gone` the threads of those processes that are no more.
    pub fn absorb(
        &mut self,
        read: &[(i32, Option<u64>)],
        tasks: &[Task],
        full: bool,
        gone: &mut Vec<TaskId>,
    ) {
        if full {
            self.since_full = 0;
        } else {
            self.since_full += 1;
        }
        let mut by_tgid: HashMap<i32, Vec<&Task>> = HashMap::with_capacity(read.len());
        for t in tasks {
            by_tgid.entry(t.id.tgid).or_default().push(t);
        }
        for &(tgid, probed) in read {
            let old = self.procs.remove(&tgid);
            let Some(ts) = by_tgid.get(&tgid) else {
                // Nothing could be read: it exited (or became unreadable) in between.
                if let Some(p) = old {
                    gone.extend(p.threads);
                }
                continue;
            };
            let threads: Vec<TaskId> = ts.iter().map(|t| t.id).collect();
            if let Some(p) = &old {
                gone.extend(p.threads.iter().filter(|id| !threads.contains(id)).copied());
            }
            let leader = ts.iter().find(|t| t.id.is_leader());
            let base = leader.and_then(|t| t.base.as_ref());
            let hot = ts.iter().any(|t| {
                matches!(
                    t.base.as_ref().map(|b| b.state),
                    Some(TaskState::Running | TaskState::DiskSleep)
                )
            });
            self.procs.insert(
                tgid,
                Proc {
                    // Not probed (an orphan): 0 reads it again next time, to be probed then.
                    cpu_ns: probed.unwrap_or(0),
                    ppid: base.map_or(0, |b| b.ppid),
                    hot,
                    multi: threads.len() > 1 || base.is_some_and(|b| b.num_threads > 1),
                    threads,
                },
            );
        }
    }
}

/// The snapshot a refresh hands over (stamped on the kernel's boot clock, `boot`).
pub fn snapshot(
    tasks: Vec<Task>,
    stats: SnapshotStats,
    boot_time_unix_s: u64,
    boot: crate::clock::BootClock,
) -> Snapshot {
    Snapshot {
        taken_at_unix_ns: tasksnap_sys::clock_ns(libc::CLOCK_REALTIME),
        taken_at_boottime_ns: boot.now_ns(),
        boot_time_unix_s,
        backend: tasksnap_model::Backend::Procfs,
        tasks,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Comm};

    /// A scripted system: processes with clocks, a fork counter.
    struct Script {
        forks: u64,
        clocks: HashMap<i32, u64>,
        listed: u32,
        probed: u32,
    }

    impl Source for Script {
        fn forks(&mut self) -> Option<u64> {
            Some(self.forks)
        }
        fn list(&mut self) -> Option<Vec<i32>> {
            self.listed += 1;
            let mut v: Vec<i32> = self.clocks.keys().copied().collect();
            v.sort_unstable();
            Some(v)
        }
        fn cpu_ns(&mut self, tgid: i32) -> Option<u64> {
            self.probed += 1;
            self.clocks.get(&tgid).copied()
        }
    }

    fn task(tgid: i32, tid: i32, ppid: i32, state: TaskState, threads: u32) -> Task {
        let mut t = Task::new(TaskId {
            tgid,
            tid,
            start_time_ns: 1000 + tid as u64,
        });
        t.base = Some(Base {
            state,
            ppid,
            pgid: tgid,
            sid: tgid,
            tty_nr: 0,
            tpgid: -1,
            flags: 0,
            comm: Comm::from_slice(b"x"),
            kthread: false,
            nice: 0,
            priority: 20,
            policy: 0,
            rt_priority: 0,
            num_threads: threads,
            processor: 0,
        });
        t
    }

    fn query() -> Query {
        let mut q = Query::new(
            Selector::AllThreads,
            Groups::of(&[Group::Base, Group::Stat]),
        );
        q.leader_as_process = true;
        q
    }

    fn read_set(p: &Plan) -> Vec<i32> {
        let mut v: Vec<i32> = p.read.iter().map(|r| r.0).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn only_processes_whose_clock_moved_are_read_again() {
        let mut live = Live::new(&query()).expect("follows AllThreads with base");
        let mut sys = Script {
            forks: 10,
            clocks: HashMap::from([(1, 500), (20, 700), (30, 900), (40, 100)]),
            listed: 0,
            probed: 0,
        };
        assert!(live.next_is_full());
        let plan = live.plan(&mut sys, true);
        assert_eq!(read_set(&plan), vec![1, 20, 30, 40]);
        // 40 is multi-threaded; 30 was runnable at the read.
        let tasks = vec![
            task(1, 1, 0, TaskState::Sleeping, 1),
            task(20, 20, 1, TaskState::Sleeping, 1),
            task(30, 30, 1, TaskState::Running, 1),
            task(40, 40, 20, TaskState::Sleeping, 2),
            task(40, 41, 20, TaskState::Sleeping, 2),
        ];
        let mut gone = Vec::new();
        live.absorb(&plan.read, &tasks, true, &mut gone);
        assert!(gone.is_empty());
        assert!(!live.next_is_full());

        // Nothing forked, nobody ran: only the runnable process is read, /proc not listed.
        let plan = live.plan(&mut sys, false);
        assert_eq!(read_set(&plan), vec![30]);
        assert_eq!(sys.listed, 1);
        assert!(plan.gone.is_empty());

        // 20 ran; 40 lost a thread (its clock moved: the thread ran to exit).
        sys.clocks.insert(20, 701);
        sys.clocks.insert(40, 150);
        let plan = live.plan(&mut sys, false);
        assert_eq!(read_set(&plan), vec![20, 30, 40]);
        let items = live.items(&plan.read);
        let i40 = items.iter().find(|i| i.tgid == 40).expect("item of 40");
        assert!(i40.all_threads, "a multi-threaded process is listed");
        let i20 = items.iter().find(|i| i.tgid == 20).expect("item of 20");
        assert!(!i20.all_threads && i20.tid.is_none());
        let tasks = vec![
            task(20, 20, 1, TaskState::Sleeping, 1),
            task(30, 30, 1, TaskState::Sleeping, 1),
            task(40, 40, 20, TaskState::Sleeping, 1),
        ];
        let mut gone = plan.gone;
        live.absorb(&plan.read, &tasks, false, &mut gone);
        assert_eq!(gone.len(), 1);
        assert_eq!((gone[0].tgid, gone[0].tid), (40, 41));
        // 30 went to sleep: no longer read every time.
        let plan = live.plan(&mut sys, false);
        assert!(plan.read.is_empty(), "{:?}", plan.read);
    }

    #[test]
    fn exits_forks_and_orphans() {
        let mut live = Live::new(&query()).expect("follows");
        let mut sys = Script {
            forks: 10,
            clocks: HashMap::from([(1, 500), (20, 700), (21, 800)]),
            listed: 0,
            probed: 0,
        };
        let plan = live.plan(&mut sys, true);
        let tasks = vec![
            task(1, 1, 0, TaskState::Sleeping, 1),
            task(20, 20, 1, TaskState::Sleeping, 1),
            task(21, 21, 20, TaskState::Sleeping, 1),
        ];
        live.absorb(&plan.read, &tasks, true, &mut Vec::new());

        // 20 exits (its pid is free) without a fork anywhere: found by the probe; its
        // child 21 is re-parented without running and is read again.
        sys.clocks.remove(&20);
        let plan = live.plan(&mut sys, false);
        assert_eq!(sys.listed, 1, "no fork, no listing");
        assert_eq!(plan.gone.len(), 1);
        assert_eq!(plan.gone[0].tgid, 20);
        assert_eq!(read_set(&plan), vec![21]);
        live.absorb(
            &plan.read,
            &[task(21, 21, 1, TaskState::Sleeping, 1)],
            false,
            &mut Vec::new(),
        );

        // A fork: /proc is listed and the new process read; one read as single-threaded
        // that now has threads is reported for a second read.
        sys.forks = 11;
        sys.clocks.insert(22, 0);
        sys.clocks.insert(21, 900);
        let plan = live.plan(&mut sys, false);
        assert_eq!(sys.listed, 2);
        assert_eq!(read_set(&plan), vec![21, 22]);
        let got = vec![
            task(21, 21, 1, TaskState::Sleeping, 3),
            task(22, 22, 1, TaskState::Sleeping, 1),
        ];
        assert_eq!(live.grew(&plan.read, &got), vec![21]);
        live.absorb(&plan.read, &got, false, &mut Vec::new());
        // 22's clock was 0 (it never ran): read until it has.
        let plan = live.plan(&mut sys, false);
        assert_eq!(read_set(&plan), vec![22]);
    }

    #[test]
    fn every_full_every_th_refresh_is_whole() {
        let mut live = Live::new(&query()).expect("follows");
        let mut sys = Script {
            forks: 1,
            clocks: HashMap::from([(1, 5)]),
            listed: 0,
            probed: 0,
        };
        let mut wholes = 0;
        for _ in 0..(FULL_EVERY * 2) {
            let full = live.next_is_full();
            wholes += u32::from(full);
            let plan = live.plan(&mut sys, full);
            live.absorb(
                &plan.read,
                &[task(1, 1, 0, TaskState::Sleeping, 1)],
                full,
                &mut Vec::new(),
            );
        }
        assert_eq!(wholes, 2);
        let mut other = query();
        other.leader_as_process = false;
        assert!(!live.follows(&other));
        assert!(Live::new(&Query::new(Selector::AllProcesses, query().groups)).is_none());
    }
}
