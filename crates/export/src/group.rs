//! Which group each process of a reading belongs to: by command name (the default), user,
//! cgroup, executable, or a process-exporter configuration ([`crate::config`]). A process's
//! threads belong to its group.
//!
//! Group names are label values, so they are bounded by construction where the grouping
//! allows it: a kernel thread's comm is cut at its first `/` (`kworker/3:1H-kblockd` is
//! `kworker`: the rest names a CPU or the work item of the moment, and would make the series
//! count follow the CPU count and the workqueues' churn), and no grouping takes anything from
//! a command line unless a configuration's capture asks for it. A name's bytes become a
//! label value through [`crate::label::value`]: control characters stay what they are, bytes
//! that are not UTF-8 are escaped, and two different names never become one group.
//!
//! A process's group is worked out once per task identity and comm (an exec changes the
//! comm), not every collection: a configuration's regular expressions cost more than the
//! collection at 50,000 processes otherwise.
//!
//! A process that exited without ever being seen alive is grouped from its exit record
//! ([`Grouper::assign_exits`]), which holds its comm, command line (as captured at exit, at
//! most [`Exit::CMDLINE_MAX_BYTES`]), user ids, parent and start time, but neither its
//! cgroup nor its executable's path. So: by comm and by user it goes where it would have
//! gone alive; by cgroup it goes to its parent's group (a child starts in its parent's
//! cgroup), the parent found alive now, alive at the previous collection, or among the same
//! reading's exits, and to no group when no parent is found or the parent is pid 1 (an
//! orphan reparented to init, or a service systemd moved into a unit of its own: pid 1's
//! cgroup is not theirs); by executable it is `[unknown]` (`[kernel]` for a kernel thread),
//! as a live process whose executable cannot be read; by a configuration its rules see no
//! executable (`{{.ExeBase}}` and `{{.ExeFull}}` read as the comm, as for a live process
//! whose executable cannot be read) and no cgroup (`{{.Cgroups}}` is empty), and with
//! children adopted an unmatched one joins its parent's group, found as for cgroups.

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::hash::IdMap;
use tasksnap_model::{Comm, Exit, Task, TaskId};
use tasksnap_sys::users::Names;

use crate::config::{Config, Facts};

/// How processes are grouped.
#[derive(Debug, Clone)]
pub enum Grouping {
    /// By command name (comm).
    Comm,
    /// By effective user.
    User,
    /// By cgroup (the v2 path; the first hierarchy's on a v1-only host).
    Cgroup,
    /// By executable path (`[kernel]` for kernel threads; `[unknown]` where it could not be
    /// read, e.g. another user's process without privileges).
    Exe,
    /// By a prometheus-process-exporter configuration; `children`: a process no rule
    /// matches joins the group of its nearest ancestor that has one (process-exporter's
    /// `-children`, on by default there too).
    Config {
        /// The rules.
        config: Config,
        /// Adopt unmatched descendants.
        children: bool,
    },
}

impl Grouping {
    /// Whether names need the executable path read.
    pub fn needs_exe(&self) -> bool {
        matches!(self, Grouping::Exe | Grouping::Config { .. })
    }
}

/// A map keyed by pid, hashed with [`IdHasher`](tasksnap_model::hash::IdHasher) (kernel-assigned keys).
pub type PidMap<V> = IdMap<i32, V>;

/// The group of each process, in pid order.
#[derive(Debug, Clone, Default)]
pub struct Assignment(Vec<(i32, Arc<str>)>);

impl Assignment {
    /// The group of process `pid`.
    pub fn get(&self, pid: i32) -> Option<&Arc<str>> {
        let i = self.0.binary_search_by_key(&pid, |e| e.0).ok()?;
        Some(&self.0[i].1)
    }

    /// (pid, group), in pid order.
    pub fn entries(&self) -> &[(i32, Arc<str>)] {
        &self.0
    }

    /// Processes in a group.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no process is in a group.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Assigns processes to groups, remembering each identity's answer.
#[derive(Debug)]
pub struct Grouper {
    grouping: Grouping,
    users: Names,
    /// (identity, comm it was named with, its own group before adoption), in (tgid, tid)
    /// order: the processes of the last assignment.
    known: Vec<(TaskId, Comm, Option<Arc<str>>)>,
    interned: HashMap<Vec<u8>, Arc<str>>,
}

impl Grouper {
    /// A grouper for `grouping`.
    pub fn new(grouping: Grouping) -> Grouper {
        Grouper {
            grouping,
            users: Names::default(),
            known: Vec::new(),
            interned: HashMap::new(),
        }
    }

    /// The group of every process of `tasks` (their main threads; other threads are
    /// skipped), by tgid. Processes in no group are absent. `boot_time_unix_s` turns start
    /// times into Unix time for `{{.StartTime}}`.
    pub fn assign(&mut self, tasks: &[Task], boot_time_unix_s: u64) -> Assignment {
        // Tasks come in (tgid, tid) order, and so do the remembered answers: one walk of
        // both, no hashing (this runs over every process at every collection).
        let old = std::mem::take(&mut self.known);
        let mut old = old.into_iter().peekable();
        let mut known = Vec::with_capacity(old.len());
        let mut own: Vec<(i32, Option<Arc<str>>)> = Vec::with_capacity(tasks.len());
        for t in tasks.iter().filter(|t| t.id.is_leader()) {
            let comm: &[u8] = t.base.as_ref().map_or(&[], |b| &b.comm);
            let key = (t.id.tgid, t.id.tid);
            while old.next_if(|o| (o.0.tgid, o.0.tid) < key).is_some() {}
            let reuse = old
                .next_if(|o| o.0 == t.id)
                .filter(|o| o.1.as_slice() == comm);
            let group = match reuse {
                Some(o) => {
                    let g = o.2.clone();
                    known.push(o);
                    g
                }
                None => {
                    let g = self.name_of(t, boot_time_unix_s);
                    // Names read later (a command line or exe not there yet) may change
                    // the answer: remember only an answer made with them.
                    if t.cmdline.is_some() || !needs_names(&self.grouping) {
                        known.push((t.id, Comm::from_slice(comm), g.clone()));
                    }
                    g
                }
            };
            own.push((t.id.tgid, group));
        }
        self.known = known;
        let children = matches!(self.grouping, Grouping::Config { children: true, .. });
        if !children {
            return Assignment(own.into_iter().filter_map(|(p, g)| Some((p, g?))).collect());
        }
        let by_pid: PidMap<Option<Arc<str>>> = own.iter().cloned().collect();
        let ppid: PidMap<i32> = tasks
            .iter()
            .filter(|t| t.id.is_leader())
            .map(|t| (t.id.tgid, t.base.as_ref().map_or(0, |b| b.ppid)))
            .collect();
        let mut out = Vec::with_capacity(own.len());
        for (pid, g) in own {
            let mut at = pid;
            let mut found = g;
            // Bounded: a parent chain is a tree's path, but the pids come from two reads
            // apart and could loop.
            for _ in 0..256 {
                if found.is_some() {
                    break;
                }
                match ppid.get(&at) {
                    Some(&p) if p > 0 && p != at => {
                        at = p;
                        found = by_pid.get(&p).cloned().flatten();
                    }
                    _ => break,
                }
            }
            if let Some(g) = found {
                out.push((pid, g));
            }
        }
        Assignment(out)
    }

    /// The group of each of `exits` (processes that exited without being seen alive), in
    /// their order; `None` where none can be told (see the module's header). `live` is this
    /// collection's assignment and `prev` the previous one's, where parents are looked for
    /// after the other exits of the same batch.
    pub fn assign_exits(
        &mut self,
        exits: &[&Exit],
        live: &Assignment,
        prev: &Assignment,
        boot_time_unix_s: u64,
    ) -> Vec<Option<Arc<str>>> {
        let cgroup = matches!(self.grouping, Grouping::Cgroup);
        let own: Vec<Option<Arc<str>>> = exits
            .iter()
            .map(|e| {
                if cgroup {
                    return None;
                }
                if matches!(self.grouping, Grouping::Exe) && !e.kernel_thread {
                    return Some(self.intern(b"[unknown]".to_vec()));
                }
                let cmdline = matches!(self.grouping, Grouping::Config { .. });
                self.name_of(&exit_task(e, cmdline), boot_time_unix_s)
            })
            .collect();
        let adopt = cgroup || matches!(self.grouping, Grouping::Config { children: true, .. });
        if !adopt {
            return own;
        }
        // The batch's processes by pid, for parents that exited too (a shell and its
        // command): the kernel sends a child's exit before its parent's, so a map, not order.
        let batch: PidMap<usize> = exits
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.tgid, i))
            .collect();
        let mut out = Vec::with_capacity(exits.len());
        for (i, e) in exits.iter().enumerate() {
            let mut found = own[i].clone();
            let mut ppid = e.ppid;
            // Bounded: pids from records and readings apart could loop.
            for _ in 0..256 {
                if found.is_some() || ppid <= 0 || (cgroup && ppid == 1) {
                    break;
                }
                if let Some(&j) = batch.get(&ppid) {
                    if j == i {
                        break;
                    }
                    found = own[j].clone();
                    ppid = exits[j].ppid;
                    continue;
                }
                found = live.get(ppid).or_else(|| prev.get(ppid)).cloned();
                break;
            }
            out.push(found);
        }
        out
    }

    /// Processes whose answer is remembered (one per identity seen at the last assignment).
    pub fn remembered(&self) -> usize {
        self.known.len()
    }

    /// Bytes the remembered answers take (their list's capacity; a comm longer than 16
    /// bytes, which a kernel never gives, would add its own).
    pub fn footprint_bytes(&self) -> usize {
        self.known.capacity() * std::mem::size_of::<(TaskId, Comm, Option<Arc<str>>)>()
    }

    fn intern(&mut self, name: Vec<u8>) -> Arc<str> {
        if let Some(a) = self.interned.get(&name) {
            return a.clone();
        }
        if self.interned.len() > 65_536 {
            self.interned.clear();
        }
        let a: Arc<str> = Arc::from(crate::label::value(&name));
        self.interned.insert(name, a.clone());
        a
    }

    fn name_of(&mut self, t: &Task, boot_time_unix_s: u64) -> Option<Arc<str>> {
        let base = t.base.as_ref();
        let comm: &[u8] = base.map_or(&[], |b| &b.comm);
        let kthread = base.is_some_and(|b| b.kthread);
        let name = match &self.grouping {
            Grouping::Comm => {
                let c = if kthread {
                    comm.split(|&b| b == b'/').next().unwrap_or(comm)
                } else {
                    comm
                };
                c.to_vec()
            }
            Grouping::User => {
                let uid = t.cred.as_ref().map(|c| c.euid)?;
                match self.users.user(uid) {
                    Some(n) => n.to_vec(),
                    None => uid.to_string().into_bytes(),
                }
            }
            Grouping::Cgroup => t.cgroup.as_deref()?.main_path()?.to_vec(),
            Grouping::Exe => match t.exe.as_deref() {
                _ if kthread => b"[kernel]".to_vec(),
                Some(e) if !e.is_empty() => e.to_vec(),
                _ => b"[unknown]".to_vec(),
            },
            Grouping::Config { config, .. } => {
                let uid = t.cred.as_ref().map(|c| c.euid);
                let username = match uid {
                    Some(u) => match self.users.user(u) {
                        Some(n) => n.to_vec(),
                        None => u.to_string().into_bytes(),
                    },
                    None => Vec::new(),
                };
                let start_ns = t
                    .stat
                    .as_ref()
                    .map_or(t.id.start_time_ns, |s| s.start_time_ns);
                let facts = Facts {
                    pid: t.id.tgid,
                    comm,
                    cmdline: t.cmdline.as_deref(),
                    exe: t.exe.as_deref(),
                    username: &username,
                    start_unix_s: boot_time_unix_s + start_ns / 1_000_000_000,
                    cgroup_v2_path: t.cgroup.as_deref().and_then(|c| c.v2_path()),
                };
                config.name(&facts)?
            }
        };
        Some(self.intern(name))
    }
}

/// What an exit record tells of a process, as the task the grouping rules read
/// ([`Exit::task`]; its command line only when asked: only a configuration reads it).
fn exit_task(e: &Exit, cmdline: bool) -> Task {
    let mut t = e.task();
    t.cmdline = (cmdline && !e.cmdline.is_empty()).then(|| e.cmdline.clone());
    t
}

fn needs_names(g: &Grouping) -> bool {
    matches!(
        g,
        Grouping::Cgroup | Grouping::Exe | Grouping::Config { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Cred};

    fn proc(pid: i32, ppid: i32, comm: &str, kthread: bool) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: pid as u64,
        });
        t.base = Some(Base {
            comm: comm.as_bytes().into(),
            ppid,
            kthread,
            ..Base::default()
        });
        t.cred = Some(Cred::from_owner(0, 0));
        t.cmdline = Some(format!("{comm}\0").into_bytes());
        t
    }

    #[test]
    fn comm_grouping_folds_kernel_thread_suffixes_and_odd_bytes() {
        let mut g = Grouper::new(Grouping::Comm);
        let tasks = vec![
            proc(2, 0, "kthreadd", true),
            proc(10, 2, "kworker/3:1H-kblockd", true),
            proc(11, 2, "kworker/u8:0", true),
            proc(100, 1, "a\nb\"c", false),
            proc(101, 1, "my/prog", false),
        ];
        let m = g.assign(&tasks, 0);
        assert_eq!(&**m.get(10).expect("grouped"), "kworker");
        assert_eq!(&**m.get(11).expect("grouped"), "kworker");
        assert_eq!(&**m.get(100).expect("grouped"), "a\nb\"c");
        // A user process keeps its whole comm.
        assert_eq!(&**m.get(101).expect("grouped"), "my/prog");
    }

    /// Regression: control characters were replaced with `?`, so `nl\nname` and
    /// `nl?name` were one group; names that are not UTF-8 were replaced lossily, so
    /// `x\xff` and `x\xfe` were one group too.
    #[test]
    fn distinct_comms_are_never_merged_into_one_group() {
        let names: [&[u8]; 8] = [
            b"nl\nname",
            b"nl?name",
            b"cr\rname",
            b"x\xffname",
            b"x\xfename",
            "x\u{fffd}name".as_bytes(),
            b"x\\xffname",
            b"tab\tname",
        ];
        let tasks: Vec<Task> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut t = proc(100 + i as i32, 1, "", false);
                t.base.as_mut().expect("base").comm = (*n).into();
                t
            })
            .collect();
        for grouping in [
            Grouping::Comm,
            Grouping::Config {
                config: Config::parse("process_names:\n  - name: '{{.Comm}}'\n    cmdline: ['']\n")
                    .expect("valid"),
                children: false,
            },
        ] {
            let m = Grouper::new(grouping).assign(&tasks, 0);
            let groups: Vec<&str> = (0..names.len())
                .map(|i| &**m.get(100 + i as i32).expect("grouped"))
                .collect();
            let distinct: std::collections::BTreeSet<&str> = groups.iter().copied().collect();
            assert_eq!(distinct.len(), names.len(), "{groups:?}");
            assert_eq!(groups[0], "nl\nname");
            assert_eq!(groups[1], "nl?name");
            assert_eq!(groups[2], "cr\\x0dname");
            assert_eq!(groups[3], "x\\xffname");
            assert_eq!(groups[7], "tab\tname");
            for (g, n) in groups.iter().zip(names) {
                assert_eq!(crate::label::name_of(g), n);
            }
        }
    }

    #[test]
    fn configured_groups_adopt_children_unless_told_not_to() {
        let config =
            Config::parse("process_names:\n  - comm: [nginx]\n    name: web\n").expect("valid");
        let tasks = vec![
            proc(1, 0, "init", false),
            proc(50, 1, "nginx", false),
            proc(51, 50, "worker", false),
            proc(52, 51, "helper", false),
            proc(60, 1, "other", false),
        ];
        let mut g = Grouper::new(Grouping::Config {
            config: config.clone(),
            children: true,
        });
        let m = g.assign(&tasks, 0);
        assert_eq!(m.get(50).map(|s| &**s), Some("web"));
        assert_eq!(m.get(51).map(|s| &**s), Some("web"));
        assert_eq!(m.get(52).map(|s| &**s), Some("web"));
        assert!(m.get(60).is_none());
        assert!(m.get(1).is_none());
        let mut g = Grouper::new(Grouping::Config {
            config,
            children: false,
        });
        let m = g.assign(&tasks, 0);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_parent_loop_ends() {
        let config = Config::parse("process_names:\n  - comm: [x]\n").expect("valid");
        let tasks = vec![proc(5, 6, "a", false), proc(6, 5, "b", false)];
        let mut g = Grouper::new(Grouping::Config {
            config,
            children: true,
        });
        assert!(g.assign(&tasks, 0).is_empty());
    }

    #[test]
    fn an_exec_renames() {
        let mut g = Grouper::new(Grouping::Comm);
        let mut t = proc(100, 1, "sh", false);
        assert_eq!(
            &**g.assign(std::slice::from_ref(&t), 0)
                .get(100)
                .expect("grouped"),
            "sh"
        );
        t.base.as_mut().expect("base").comm = "python3".as_bytes().into();
        assert_eq!(
            &**g.assign(std::slice::from_ref(&t), 0)
                .get(100)
                .expect("grouped"),
            "python3"
        );
    }
    #[test]
    fn exits_are_grouped_from_their_records() {
        let e = |pid: i32, ppid: i32, comm: &str, cmdline: &[u8]| Exit {
            id: TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: 1,
            },
            ppid,
            euid: 0,
            comm: comm.as_bytes().to_vec(),
            cmdline: cmdline.to_vec(),
            ..Exit::default()
        };
        let a = e(100, 50, "curl", b"curl\0-s\0http://x\0");
        let b = e(101, 100, "helper", b"helper\0");
        let exits = [&a, &b];
        let live = Grouper::new(Grouping::Comm).assign(&[proc(50, 1, "cron", false)], 0);
        let none = Assignment::default();
        let names = |g: Grouping| -> Vec<Option<String>> {
            Grouper::new(g)
                .assign_exits(&exits, &live, &none, 0)
                .into_iter()
                .map(|n| n.map(|n| n.to_string()))
                .collect()
        };
        let some =
            |v: &[&str]| -> Vec<Option<String>> { v.iter().map(|s| Some(s.to_string())).collect() };
        assert_eq!(names(Grouping::Comm), some(&["curl", "helper"]));
        assert_eq!(names(Grouping::User), some(&["root", "root"]));
        assert_eq!(names(Grouping::Exe), some(&["[unknown]", "[unknown]"]));
        // No cgroup in a record: the parent's group (live, or an exit of the same batch).
        assert_eq!(names(Grouping::Cgroup), some(&["cron", "cron"]));
        // A configuration sees the command line; an unmatched child joins its parent's.
        let config =
            Config::parse("process_names:\n  - name: 'fetch'\n    cmdline: ['^curl -s']\n")
                .expect("valid");
        let adopted = names(Grouping::Config {
            config: config.clone(),
            children: true,
        });
        assert_eq!(adopted, some(&["fetch", "fetch"]));
        let alone = names(Grouping::Config {
            config,
            children: false,
        });
        assert_eq!(alone, vec![Some("fetch".to_string()), None]);
    }
}
