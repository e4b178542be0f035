//! A [`Collector`] over a recorded [`Reading`]: what `ps --replay` lists. It answers queries
//! the way the live backends do (the same selectors, tasks in (tgid, tid) order), from the
//! tasks the recorder kept, so a front end shows the past through the code it shows the
//! present with. Groups the recorder did not keep (exe, wchan, statm's shared and text
//! sizes, supplementary groups, security labels) are absent; the sd-login answers are derived
//! from the recorded cgroup, and shown as procps shows unreadable ones.

use std::collections::HashMap;

use tasksnap_model::{Group, Groups, PassReport, Query, Reading, Selector, Snapshot, Task};

use crate::collector::Collector;
use crate::collector::Filled;
use crate::collector::StateSource;
use crate::error::Error;
use tasksnap_model::states::Sample;

/// Answers queries from one recorded reading.
#[derive(Debug)]
pub struct ReplayCollector {
    reading: Reading,
    /// The /proc root whose systemd files (pid 1's cgroup, /run/systemd beside it) the
    /// sd-login answers are derived with: the host's.
    proc_root: std::path::PathBuf,
}

impl ReplayCollector {
    /// Over `reading`; sd-login's answers are derived with the systemd files of the host at
    /// `proc_root`.
    pub fn new(reading: Reading, proc_root: &std::path::Path) -> ReplayCollector {
        ReplayCollector {
            reading,
            proc_root: proc_root.to_path_buf(),
        }
    }

    /// The reading replayed.
    pub fn reading(&self) -> &Reading {
        &self.reading
    }

    /// The reading replayed, given back (`top --replay` keeps it as the next sample's
    /// previous one instead of decoding it again).
    pub fn into_reading(self) -> Reading {
        self.reading
    }
}

/// Whether `t` is among the tasks `sel` names. A process's main thread stands for its
/// process (the recorder keeps it with the process's figures).
pub fn selects(sel: &Selector, t: &Task) -> bool {
    let leader = t.id.is_leader();
    let base = t.base.as_ref();
    match sel {
        Selector::AllProcesses => leader,
        Selector::AllThreads => true,
        Selector::Pid(p) => leader && t.id.tgid == *p,
        Selector::ThreadsOf(p) => t.id.tgid == *p,
        Selector::ChildrenOf(p) => leader && base.is_some_and(|b| b.ppid == *p),
        Selector::Session(s) => leader && base.is_some_and(|b| b.sid == *s),
        Selector::ProcessGroup(g) => leader && base.is_some_and(|b| b.pgid == *g),
    }
}

impl Collector for ReplayCollector {
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        let s = &self.reading.snapshot;
        let mut tasks: Vec<Task> = s
            .tasks
            .iter()
            .filter(|t| selects(&query.selector, t))
            .cloned()
            .collect();
        if query.groups.has(Group::Login) {
            // Not recorded: derived from the recorded cgroup, as the live collectors derive
            // it from the one they read (with this host's systemd files).
            crate::login::Login::system(&self.proc_root).fill(&mut tasks, true);
        }
        Ok(s.with_tasks(tasks))
    }

    fn fill(&self, ids: &[(i32, i32)], _groups: Groups) -> Result<Filled, Error> {
        let tasks = &self.reading.snapshot.tasks;
        let mut out = HashMap::with_capacity(ids.len());
        for &id in ids {
            if let Ok(i) = tasks.binary_search_by_key(&id, |t| (t.id.tgid, t.id.tid)) {
                out.insert(id, tasks[i].clone());
            }
        }
        Ok((out, Default::default()))
    }

    fn report(&self) -> PassReport {
        PassReport::new(self.reading.snapshot.backend, String::new())
    }
}

/// A [`StateSource`] handing out recorded samples in order (`states --replay`): the window's
/// two ends. Asked for more than it holds, it says so.
#[derive(Debug)]
pub struct ReplayStates {
    samples: std::collections::VecDeque<Sample>,
}

impl ReplayStates {
    /// Over `samples`, first to last.
    pub fn new(samples: Vec<Sample>) -> ReplayStates {
        ReplayStates {
            samples: samples.into(),
        }
    }
}

impl StateSource for ReplayStates {
    fn sample(&mut self) -> Result<Sample, Error> {
        self.samples
            .pop_front()
            .ok_or_else(|| Error::Unsupported("the recording's window has no more samples".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Backend, Cgroup, SystemFigures, TaskId};

    /// A recording keeps the raw cgroup; the replay gives it parsed (by the history decoder,
    /// here by hand) and derives the sd-login answers from it when asked, as live.
    #[test]
    fn login_is_derived_from_the_recorded_cgroup_when_asked() {
        let mut t = Task::new(TaskId {
            tgid: 42,
            tid: 42,
            start_time_ns: 1,
        });
        t.cgroup = Some(Box::new(Cgroup::parse(
            b"0::/system.slice/cron.service\n".to_vec(),
        )));
        let bare = Task::new(TaskId {
            tgid: 43,
            tid: 43,
            start_time_ns: 1,
        });
        let reading = Reading {
            snapshot: Snapshot {
                taken_at_unix_ns: 0,
                taken_at_boottime_ns: 0,
                boot_time_unix_s: 0,
                backend: Backend::Procfs,
                tasks: vec![t, bare],
                stats: Default::default(),
            },
            states: None,
            system: SystemFigures::default(),
            exits: Vec::new(),
            exits_dropped: 0,
            exits_missing: None,
            host: Default::default(),
            cgroups: None,
        };
        let mut c = ReplayCollector::new(reading, std::path::Path::new("/proc"));
        let ask = |login| {
            Query::new(
                Selector::AllProcesses,
                Groups::default().flag(Group::Login, login),
            )
        };
        let snap = c.snapshot(&ask(true)).expect("replay");
        assert!(snap.tasks[0]
            .extra
            .as_ref()
            .is_some_and(|x| x.login.is_some()));
        assert_eq!(
            snap.tasks[0].cgroup.as_deref().and_then(Cgroup::v2_path),
            Some(&b"/system.slice/cron.service"[..])
        );
        assert!(
            snap.tasks[1].extra.is_none(),
            "no cgroup recorded: no answers"
        );
        let snap = c.snapshot(&ask(false)).expect("replay");
        assert!(snap.tasks[0].extra.is_none());
    }
}
