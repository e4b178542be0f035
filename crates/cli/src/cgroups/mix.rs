//! Who is in each cgroup and what its threads did: the processes and threads whose
//! /proc/PID/cgroup names the cgroup itself (not its descendants: `pids.current` counts
//! those), and the thread-state mix over the interval, as the average number of its threads
//! running, waiting for a CPU, throttled by a quota and in D (a states interval rolled up by
//! process, each process's time added to its cgroups).
//!
//! A v2 record takes the processes of its `0::PATH` line; a v1 record (the v1 hierarchies
//! that have its path, merged) those with that path in a hierarchy bound to one of the
//! record's controllers, each process once.

use std::collections::{HashMap, HashSet};

use tasksnap_model::{CgroupCounters, CgroupHierarchy, Task};
use tasksnap_states::{Interval, State};

/// One cgroup's own processes and their threads' states.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mix {
    /// Processes in the cgroup itself (`None` without a process listing).
    pub procs: Option<u64>,
    /// Their threads.
    pub threads: Option<u64>,
    /// Average threads in each state over the interval (`None` without a states interval or
    /// a process listing):
    /// running, runnable (behind other threads), throttled (a CPU quota), in D.
    pub avg_threads: Option<[f64; 4]>,
}

/// The states the mix shows, in [`Mix::avg_threads`]' order.
pub const MIX_STATES: [State; 4] = [
    State::Running,
    State::Runnable,
    State::Throttled,
    State::Disk,
];

/// Which processes (indexes into the task list) each cgroup line names: by (controller, path)
/// for v1 (`None` for v2).
type Members = HashMap<(Option<Vec<u8>>, Vec<u8>), Vec<usize>>;

/// The mix of each record of `cgroups`, in order; `procs` is every process (with the cgroup
/// group read), `iv` an interval rolled up by process.
pub fn of(cgroups: &[CgroupCounters], procs: Option<&[Task]>, iv: Option<&Interval>) -> Vec<Mix> {
    let Some(procs) = procs else {
        return vec![Mix::default(); cgroups.len()];
    };
    let members = members(procs);
    let rows: HashMap<i32, &tasksnap_states::Row> = iv
        .map(|iv| iv.rows.iter().map(|r| (r.pid, r)).collect())
        .unwrap_or_default();
    let length_ns = iv.map_or(0, |iv| iv.length_ns);
    cgroups
        .iter()
        .map(|c| {
            let (mut ns, mut n_procs, mut n_threads) = ([0u64; 4], 0, 0);
            for i in processes_of(&members, c) {
                let t = &procs[i];
                n_procs += 1;
                n_threads += t
                    .base
                    .as_ref()
                    .map_or(1, |b| u64::from(b.num_threads.max(1)));
                if let Some(r) = rows.get(&t.id.tgid) {
                    for (sum, s) in ns.iter_mut().zip(MIX_STATES) {
                        *sum += r.ns[s.index()];
                    }
                }
            }
            Mix {
                procs: Some(n_procs),
                threads: Some(n_threads),
                avg_threads: (iv.is_some() && length_ns > 0)
                    .then(|| ns.map(|v| v as f64 / length_ns as f64)),
            }
        })
        .collect()
}

/// The processes of record `c`, each once.
fn processes_of(members: &Members, c: &CgroupCounters) -> Vec<usize> {
    let keys: Vec<Option<Vec<u8>>> = match &c.hierarchy {
        CgroupHierarchy::V2 => vec![None],
        CgroupHierarchy::V1(list) => list.iter().map(|k| Some(k.as_bytes().to_vec())).collect(),
    };
    let mut seen = HashSet::new();
    for k in keys {
        if let Some(v) = members.get(&(k, c.path.clone())) {
            seen.extend(v.iter().copied());
        }
    }
    let mut out: Vec<usize> = seen.into_iter().collect();
    out.sort_unstable();
    out
}

/// Each cgroup line of each process, by (controller or `None` for v2, path).
fn members(procs: &[Task]) -> Members {
    let mut m: Members = HashMap::new();
    for (i, t) in procs.iter().enumerate() {
        let Some(cg) = t.cgroup.as_deref() else {
            continue;
        };
        for line in cg.lines() {
            if line.hierarchy == b"0" && line.controllers.is_empty() {
                m.entry((None, line.path.to_vec())).or_default().push(i);
                continue;
            }
            for ctl in line.controllers.split(|&b| b == b',') {
                let key = (Some(ctl.to_vec()), line.path.to_vec());
                m.entry(key).or_default().push(i);
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Cgroup, TaskId};
    use tasksnap_states::{Mode, Row, NSTATES};

    fn proc(pid: i32, threads: u32, cgroup: &str) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: 0,
        });
        t.base = Some(Base {
            num_threads: threads,
            ..Base::default()
        });
        t.cgroup = Some(Box::new(Cgroup::parse(cgroup.as_bytes().to_vec())));
        t
    }

    fn row(pid: i32, run_ns: u64, throttled_ns: u64) -> Row {
        let mut ns = [0u64; NSTATES];
        ns[State::Running.index()] = run_ns;
        ns[State::Throttled.index()] = throttled_ns;
        Row {
            pid,
            tid: None,
            comm: String::new(),
            comm_bytes: None,
            ns,
            alive_ns: run_ns + throttled_ns,
            top_reason: None,
            threads: 1,
            exited: false,
            reasons: Vec::new(),
        }
    }

    #[test]
    fn processes_count_in_their_own_cgroups_with_their_threads_time() {
        // Real lines of /proc/PID/cgroup on a host with v1 controllers and the v2 hierarchy.
        let procs = [
            proc(10, 3, "12:pids:/\n4:cpu,cpuacct:/q\n0::/app\n"),
            proc(11, 1, "12:pids:/\n4:cpu,cpuacct:/q\n0::/\n"),
            proc(12, 1, "12:pids:/q\n4:cpu,cpuacct:/\n0::/app\n"),
            proc(13, 1, "1:name=systemd:/q\n"),
        ];
        let v1 = |p: &str, ctl: &[&str]| {
            CgroupCounters::new(
                p.as_bytes().to_vec(),
                CgroupHierarchy::V1(ctl.iter().map(|s| s.to_string()).collect()),
            )
        };
        let cgroups = [
            CgroupCounters::new(b"/app".to_vec(), CgroupHierarchy::V2),
            v1("/q", &["cpu", "cpuacct", "pids"]),
            v1("/", &["cpu", "cpuacct"]),
        ];
        let iv = Interval {
            mode: Mode::Bpf,
            length_ns: 2_000_000_000,
            rows: vec![
                row(10, 1_000_000_000, 2_000_000_000),
                row(12, 500_000_000, 0),
            ],
            exited: 0,
            notes: Vec::new(),
        };
        let m = of(&cgroups, Some(&procs), Some(&iv));
        let counts = |m: &Mix| (m.procs.unwrap_or(99), m.threads.unwrap_or(99));
        assert_eq!(counts(&m[0]), (2, 4), "v2 /app: 10 and 12");
        assert_eq!(m[0].avg_threads, Some([0.75, 0.0, 1.0, 0.0]));
        assert_eq!(counts(&m[1]), (3, 5), "/q: 10, 11 (cpu), 12 (pids) once");
        assert_eq!(counts(&m[2]), (1, 1), "/ in cpu: 12; name=systemd not read");
        assert_eq!(of(&cgroups, Some(&procs), None)[0].avg_threads, None);
        assert_eq!(of(&cgroups, None, Some(&iv))[0], Mix::default());
    }
}
