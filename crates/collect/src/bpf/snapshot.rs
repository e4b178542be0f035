//! A snapshot from one pass: the records grouped into the tasks the query selects
//! (decode.rs), the tasks the pass missed read from /proc (pid 1 on this kind of VM), the
//! command lines attached (cmdlines.rs), and the groups the kernel cannot give filled from
//! /proc: which tasks need which reads (`fill_plan`, the rare blocks only where a record
//! lacks them) and the merge of what was read into the tasks; the phases timed for `-v`
//! (lap.rs).

use std::collections::HashMap;

use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, SnapshotStats, Task};

use super::cmdlines::{CmdlinePass, CmdlinePlan};
use super::lap::Lap;
use super::passes::Shape;
use super::{decode, kept, BpfCollector};
use crate::procfs::ProcfsCollector;
use tasksnap_sys as sys;
use crate::collector::Collector;
use crate::error::Error;

/// How many tasks may be missing from a pass (forks and exits while it runs) before the
/// /proc listing is consulted to find them.
const RECONCILE_SLACK: u64 = 64;

/// Of `g`, the groups of the rare blocks (see [`decode::wants_rare`]), for the tasks whose record
/// had not got them (the walk, a pinned set's iterator, pid 1): read from /proc.
fn rare_groups(g: &Groups) -> Groups {
    Groups::default().flag(Group::Signals, g.has(Group::Signals)).flag(Group::Ns, g.has(Group::Ns)).flag(Group::OomScoreAdj, g.has(Group::OomScoreAdj)).flag(Group::Loginuid, g.has(Group::Loginuid))
}

/// True when `t` lacks one of the rare groups `g` asks for.
fn lacks_rare(t: &Task, g: &Groups) -> bool {
    let x = t.extra.as_deref();
    (g.has(Group::Signals) && t.signals.is_none())
        || (g.has(Group::Ns) && x.is_none_or(|x| x.ns.is_none()))
        || (g.has(Group::OomScoreAdj) && x.is_none_or(|x| x.oom_score_adj.is_none()))
        || (g.has(Group::Loginuid) && x.is_none_or(|x| x.loginuid.is_none()))
}

/// Copies the groups read from /proc into the tasks.
fn merge(tasks: &mut [Task], mut filled: HashMap<(i32, i32), Task>, fill: &Groups) {
    if fill.has(Group::Cmdline) {
        for t in tasks.iter_mut().filter(|t| decode::no_mm(t)) {
            t.cmdline = Some(Vec::new());
        }
    }
    // Snapshots are in (tgid, tid) order: then each filled task is found by a binary search
    // (a `ps -ef` fills a handful of 50,000, and a hash lookup per task cost a
    // millisecond); else every task is looked up.
    if tasks.is_sorted_by_key(|t| (t.id.tgid, t.id.tid)) {
        for (id, f) in filled {
            if let Ok(i) = tasks.binary_search_by_key(&id, |t| (t.id.tgid, t.id.tid)) {
                merge_one(&mut tasks[i], f, fill);
            }
        }
    } else {
        for t in tasks.iter_mut() {
            if let Some(f) = filled.remove(&(t.id.tgid, t.id.tid)) {
                merge_one(t, f, fill);
            }
        }
    }
}

/// The groups `fill` of `f`, read from /proc, into `t`.
fn merge_one(t: &mut Task, f: Task, fill: &Groups) {
    if fill.has(Group::Cmdline) && t.cmdline.is_none() {
        t.cmdline = f.cmdline;
        t.cmdline_timed_out = f.cmdline_timed_out;
    }
    if fill.has(Group::Exe) {
        t.exe = f.exe;
    }
    if fill.has(Group::Io) {
        t.io = f.io;
    }
    if fill.has(Group::Wchan) {
        t.wchan = f.wchan;
    }
    if fill.needs_cgroup_file() {
        t.cgroup = f.cgroup;
    }
    if fill.has(Group::Fds) {
        t.fds = f.fds;
    }
    if fill.has(Group::Environ) {
        t.environ = f.environ;
    }
    if fill.has(Group::Mem) || fill.has(Group::MemStatus) {
        t.mem = f.mem;
    }
    if fill.has(Group::Layout) {
        t.layout = f.layout;
    }
    if fill.has(Group::Signals) {
        t.signals = f.signals;
    }
    if fill.has(Group::CredFull) {
        if let (Some(c), Some(fc)) = (&mut t.cred, f.cred) {
            c.groups = fc.groups;
        }
    }
    // The groups of `Task::extra`: each one asked for is taken from /proc's reading.
    if fill.intersects(const { Groups::of(&[Group::OomScore, Group::Autogroup, Group::Smaps, Group::Ns, Group::OomScoreAdj, Group::Loginuid, Group::Label]) })
    {
        let from = f.extra.unwrap_or_default();
        let x = t.extra_mut();
        if fill.has(Group::OomScore) {
            x.oom_score = from.oom_score;
        }
        if fill.has(Group::Autogroup) {
            x.autogroup = from.autogroup;
        }
        if fill.has(Group::Smaps) {
            x.smaps_kb = from.smaps_kb;
        }
        if fill.has(Group::Ns) {
            x.ns = from.ns;
        }
        if fill.has(Group::OomScoreAdj) {
            x.oom_score_adj = from.oom_score_adj;
        }
        if fill.has(Group::Loginuid) {
            x.loginuid = from.loginuid;
        }
        if fill.has(Group::Label) {
            x.label = from.label;
        }
    }
}

/// The reads from /proc that complete `tasks` with `fill` (the groups the kernel cannot
/// give): the command lines only of the tasks that still lack one (the pass copied the
/// others, without the target's mmap lock), statm only for the tasks the pass did not give
/// it for (`decode::mem_from_pass`: all of them on kernels whose statm the pass cannot
/// match), and the other groups for every task. One plan per group set, so that asking for
/// memory as well never reads every command line again.
fn fill_plan(
    tasks: &[tasksnap_model::Task],
    fill: Groups,
    mem_from_pass: bool,
) -> Vec<(Groups, Vec<(i32, i32)>)> {
    let mut plan = Vec::new();
    let id = |t: &tasksnap_model::Task| (t.id.tgid, t.id.tid);
    if fill.has(Group::Cmdline) {
        let ids: Vec<(i32, i32)> = tasks
            .iter()
            .filter(|t| t.cmdline.is_none() && !decode::no_mm(t))
            .map(id)
            .collect();
        // Kernel threads and zombies get their empty command line in the merge, read or not.
        plan.push((
            Groups::of(&[Group::Cmdline]),
            ids,
        ));
    }
    let mut rest = fill.without(Group::Cmdline);
    if rest.has(Group::Mem) && mem_from_pass {
        let mem = Groups::of(&[Group::Mem]).rss_only(rest.mem_rss_only);
        rest.remove(Group::Mem);
        rest.mem_rss_only = false;
        let missing: Vec<(i32, i32)> = tasks.iter().filter(|t| t.mem.is_none()).map(id).collect();
        if rest != Groups::default() && missing.len() == tasks.len() {
            // Not one task has it from the pass: one read of each task for everything.
            rest.insert(Group::Mem);
            rest.mem_rss_only = mem.mem_rss_only;
        } else if !missing.is_empty() {
            plan.push((mem, missing));
        }
    }
    // The signal and namespace blocks, like statm: only for the tasks whose record had not
    // got them (the walk and a pinned set's iterator never write them; dump_task_rare does).
    let rare = rare_groups(&rest);
    if rare != Groups::default() {
        let keep = rest;
        rest = rest.without(Group::Signals).without(Group::Ns).without(Group::OomScoreAdj).without(Group::Loginuid);
        let missing: Vec<(i32, i32)> = tasks
            .iter()
            .filter(|t| lacks_rare(t, &rare))
            .map(id)
            .collect();
        if rest != Groups::default() && missing.len() == tasks.len() {
            // Not one task has them from the pass: one read of each task for everything.
            rest = keep;
        } else if !missing.is_empty() {
            plan.push((rare, missing));
        }
    }
    if rest != Groups::default() {
        plan.push((rest, tasks.iter().map(id).collect()));
    }
    plan
}

impl BpfCollector {
    /// Reads from /proc, for `tasks`, the groups the kernel cannot give; drops the base
    /// group when only the collector needed it.
    pub(super) fn fill_from_procfs(
        &mut self,
        tasks: &mut [tasksnap_model::Task],
        query: &Query,
        mut fill_groups: Groups,
        stats: &mut SnapshotStats,
    ) -> Result<(), Error> {
        if fill_groups.needs_cgroup_file() && !self.pass_index.is_empty() {
            // Once per css_set (the caller took this pass's); `Login` is made from these
            // cgroups by the caller.
            let wanted: Vec<(i32, i32)> = tasks
                .iter()
                .filter(|t| t.cgroup.is_none())
                .map(|t| (t.id.tgid, t.id.tid))
                .collect();
            let mut read = self.pass_index.read_cgroups(&self.procfs, &wanted, stats)?;
            for t in tasks.iter_mut() {
                if let Some(c) = read.remove(&(t.id.tgid, t.id.tid)) {
                    t.cgroup = Some(c);
                }
            }
            fill_groups = fill_groups.without(Group::Cgroup).without(Group::Login);
        }
        let from_pass = decode::mem_from_pass(&fill_groups);
        for (groups, ids) in fill_plan(tasks, decode::procfs_groups(&fill_groups), from_pass) {
            let (filled, fill_stats) = self.procfs.try_fill(&ids, groups)?;
            stats.denied += fill_stats.denied;
            stats.cmdline_timeouts += fill_stats.cmdline_timeouts;
            merge(tasks, filled, &groups);
        }
        if !query.groups.has(Group::Base) {
            for t in tasks.iter_mut() {
                t.base = None;
            }
        }
        Ok(())
    }

    /// Tasks /proc shows that a pass's `records` do not have, read from /proc (the tgids
    /// read come back too). On this kind of VM that is pid 1 and its threads: init is
    /// protected (even root gets EACCES on /proc/1/ns/pid), and both `iter/task` and the
    /// walk pass over it. So pid 1 is checked directly; a full /proc listing (45 ms at
    /// 50,000 tasks) is only taken when the kernel's task count says more are missing.
    pub(super) fn missing_from(
        procfs: &mut ProcfsCollector,
        records: &[decode::Record<'_>],
        query: &Query,
        groups: Groups,
        one_process: Option<i32>,
        stats: &mut SnapshotStats,
    ) -> Result<(Vec<tasksnap_model::Task>, Vec<i32>), Error> {
        let has_tgid = |p: i32| records.iter().any(|r| r.hdr.tgid as i32 == p);
        let mut extra_threads = 0u64;
        let mut missing: Vec<i32> = Vec::new();
        if !has_tgid(1) {
            missing.push(1);
            extra_threads += std::fs::read_dir(std::path::Path::new(tasksnap_sys::roots::PROC).join("1/task")).map_or(0, |d| d.count() as u64);
        }
        // The kernel's task count is global: inside a pid namespace it cannot tell what is
        // missing, so the listing is always taken there.
        let in_namespace = records.first().is_some_and(|r| r.hdr.ns_level > 0);
        let total = crate::machine::kernel_task_count().unwrap_or(0);
        let have = records.len() as u64 + extra_threads;
        if let Some(p) = one_process {
            // One process asked for: /proc is consulted for it alone if the iterator was
            // silent (pid 1 here, or a pid that is gone).
            missing = if has_tgid(p) { Vec::new() } else { vec![p] };
        } else if in_namespace || have + RECONCILE_SLACK < total {
            let seen_tgids: std::collections::HashSet<i32> =
                records.iter().map(|r| r.hdr.tgid as i32).collect();
            missing = procfs
                .list_pids()?
                .into_iter()
                .filter(|p| !seen_tgids.contains(p))
                .collect();
            stats.reconciled_by_listing = true;
        }
        let wanted = |pid: i32| match query.selector {
            Selector::Pid(p) | Selector::ThreadsOf(p) => p == pid,
            _ => true,
        };
        missing.retain(|&p| wanted(p));
        let extras = Self::read_from_procfs(procfs, &missing, query, groups)?;
        Ok((extras, missing))
    }

    /// The tasks of processes `pids` from /proc, as `query` wants them (threads or not).
    pub(super) fn read_from_procfs(
        procfs: &mut ProcfsCollector,
        pids: &[i32],
        query: &Query,
        groups: Groups,
    ) -> Result<Vec<tasksnap_model::Task>, Error> {
        let mut extras = Vec::new();
        for &pid in pids {
            let sel = if query.wants_threads() {
                Selector::ThreadsOf(pid)
            } else {
                Selector::Pid(pid)
            };
            let mut q = Query::new(sel, groups);
            q.leader_as_process = query.leader_as_process;
            extras.extend(procfs.snapshot(&q)?.tasks);
        }
        Ok(extras)
    }

    /// How command lines are read is decided here, once (cmdlines.rs). The sleepable
    /// iterator (the slow one: it copies from every process's memory) starts first and runs
    /// on its own threads while the main pass is read and decoded. With the walk, the walk
    /// reads them too (without the mmap lock, where it can), and the copy by pid list takes
    /// the processes it left, once it is done.
    pub(super) fn begin_cmdlines(
        &mut self,
        groups: &Groups,
        one_process: Option<i32>,
    ) -> (CmdlinePlan, Option<CmdlinePass>) {
        let plan = self.cmdline_plan(groups, one_process);
        let cmdline_pass = if plan == CmdlinePlan::Iterator {
            self.start_cmdline_pass()
        } else {
            None
        };
        self.cmd.reset();
        (plan, cmdline_pass)
    }

    pub(super) fn walk_snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = self.procfs.units().boot.now_ns();
        let (groups, one_process) = pass_groups(query);
        let (plan, cmdline_pass) = self.begin_cmdlines(&groups, one_process);
        let copy = matches!(plan, CmdlinePlan::Walk { .. });
        let mut lap = Lap::new();
        let lines = plan == CmdlinePlan::Walk { lockless: true };
        // Without command lines, a second walk shard gains ~1 ms at 50,000 tasks (each
        // shard follows the whole task list, and that is most of its cost): the walk runs
        // as one, and the other core faults the task vector in meanwhile.
        let prefault = (!lines && one_process.is_none() && self.can_walk())
            .then(|| self.prefault_tasks())
            .flatten();
        let shape = Shape {
            one_shard: prefault.is_some(),
            lines,
        };
        let passed = self.pass_of(decode::group_bits(&groups), one_process, shape);
        lap.mark("pass");
        let spare = prefault
            .and_then(|j| j.join().ok())
            .unwrap_or_else(|| std::mem::take(&mut self.out.spare));
        passed?;
        lap.mark("prefault wait");
        let units = self.procfs.units();
        let records = self
            .out
            .records()
            .map_err(|e| Error::Unsupported(e.to_string()))?;
        lap.mark("records");

        if self.live.track {
            if let Some(outs) = &self.out.walked {
                let began = outs.iter().map(|o| o.started_ns).min().unwrap_or(0);
                self.live.captured = Some((kept::identities(&records), began, Vec::new()));
            }
        }
        let mut stats = SnapshotStats::default();

        let (extras, missing) = Self::missing_from(
            &mut self.procfs,
            &records,
            query,
            groups,
            one_process,
            &mut stats,
        )?;
        if let Some(c) = &mut self.live.captured {
            c.2 = missing;
        }
        lap.mark("reconcile");
        // The walk's lines are decoded meanwhile; without them (no direct map: every line is
        // copied) the copy starts now and runs while the tasks are assembled. Both start
        // after the reconciliation, which reads from /proc: that and the decoding allocate,
        // and with one malloc arena (main.rs) they took turns on its lock (50-120 futex
        // calls per `ps -ef` under strace).
        let lines_job = if copy { self.walk_lines_job() } else { None };
        let cmdline_pass = match cmdline_pass {
            Some(p) => Some(p),
            None if copy && lines_job.is_none() && self.out.walked.is_some() => {
                self.start_cmdline_copy(&records, None)
            }
            None => None,
        };
        lap.mark("lines start");
        // In two halves at once, unless the walk's lines are being decoded meanwhile (that
        // thread has the other core).
        let parallel = !self.settings.low_cpu && lines_job.is_none();
        let mut tasks = decode::assemble(&records, extras, query, &groups, units, spare, parallel);
        decode::filter(&mut tasks, query);
        lap.mark("assemble");

        // Command lines from the walk, the copy or the sleepable iterator, when they are
        // there and finish in time. What the walk left (pages it could not read without
        // the lock, flagged lines) is copied by pid list now.
        let walk_lines = lines_job.and_then(|j| j.join().ok());
        let cmdline_pass = match cmdline_pass {
            None if walk_lines.is_some() => self.start_cmdline_copy(&records, walk_lines.as_ref()),
            p => p,
        };
        let fill_follows = groups.needs_cgroup_file() || self.live.track;
        self.pass_index.refresh_if(fill_follows, &records);
        drop(records);
        lap.mark("walk lines");
        let mut fill_groups = groups;
        if plan != CmdlinePlan::NotAsked {
            // What is still missing (flagged, or born after the pass) is read from /proc.
            let still_missing = self.attach_cmdlines(
                &mut tasks,
                query,
                cmdline_pass,
                walk_lines,
                &mut stats,
                &mut lap,
            );
            fill_groups.set(Group::Cmdline, still_missing);
        }

        lap.mark("attach");
        self.fill_from_procfs(&mut tasks, query, fill_groups, &mut stats)?;
        if query.groups.has(Group::Login) {
            // From the cgroups just read (those of the tasks /proc alone gave, through its
            // own snapshot, have theirs already and no cgroup left unless asked for).
            crate::login::Login::system(self.procfs.root()).fill(&mut tasks, query.groups.has(Group::Cgroup));
        }
        lap.mark("procfs");
        self.out.phases_ms = lap.into_phases_ms();
        debug_assert!(tasks.is_sorted_by_key(|t| (t.id.tgid, t.id.tid)));
        Ok(Snapshot {
            taken_at_unix_ns,
            taken_at_boottime_ns,
            boot_time_unix_s: self.procfs.try_boot_time()?,
            backend: tasksnap_model::Backend::Bpf,
            tasks,
            stats,
        })
    }
}

/// The groups a pass of `query` reads (a selection by parent, session or process group
/// needs the base group to choose by), and the one process it asks for, if it asks for one.
pub(super) fn pass_groups(query: &Query) -> (Groups, Option<i32>) {
    let mut groups = query.groups;
    if matches!(
        query.selector,
        Selector::ChildrenOf(_) | Selector::Session(_) | Selector::ProcessGroup(_)
    ) {
        groups.insert(Group::Base);
    }
    let one_process = match query.selector {
        Selector::Pid(p) | Selector::ThreadsOf(p) => Some(p),
        _ => None,
    };
    (groups, one_process)
}

#[cfg(test)]
mod tests {
    use crate::bpf::snapshot::*;
    use tasksnap_model::{Base, Task, TaskId, TaskState};

    fn task(pid: i32, cmdline: Option<&[u8]>, state: TaskState) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: 1,
        });
        t.base = Some(Base {
            state,
            ..Base::default()
        });
        t.cmdline = cmdline.map(<[u8]>::to_vec);
        t
    }

    #[test]
    fn memory_with_command_lines_reads_only_the_missing_lines() {
        let tasks = [
            task(1, None, TaskState::Sleeping),
            task(2, Some(b"copied\0"), TaskState::Sleeping),
            task(3, None, TaskState::Zombie),
        ];
        let plan = fill_plan(
            &tasks,
            Groups::of(&[Group::Cmdline, Group::Mem]),
            false,
        );
        let cmdline = Groups::of(&[Group::Cmdline]);
        let mem = Groups::of(&[Group::Mem]);
        // The copied line is not read again through the target's mmap lock, nor a zombie's.
        assert_eq!(
            plan,
            vec![(cmdline, vec![(1, 1)]), (mem, vec![(1, 1), (2, 2), (3, 3)])]
        );
        assert_eq!(fill_plan(&tasks, cmdline, false), vec![(cmdline, vec![(1, 1)])]);
        assert_eq!(
            fill_plan(&tasks, mem, false),
            vec![(mem, vec![(1, 1), (2, 2), (3, 3)])]
        );
        assert!(fill_plan(&tasks, Groups::default(), false).is_empty());
    }

    #[test]
    fn statm_is_read_only_for_the_tasks_the_pass_did_not_give_it_for() {
        let mut tasks = [
            task(1, None, TaskState::Sleeping),
            task(2, None, TaskState::Sleeping),
            task(3, None, TaskState::Zombie),
        ];
        let mem = Groups::of(&[Group::Mem]);
        let exe = Groups::of(&[Group::Exe]);
        let mem_exe = mem.with(Group::Exe);
        // The pass gave none: every task is read, once, for everything.
        assert_eq!(fill_plan(&tasks, mem, true), vec![(mem, vec![(1, 1), (2, 2), (3, 3)])]);
        assert_eq!(
            fill_plan(&tasks, mem_exe, true),
            vec![(mem_exe, vec![(1, 1), (2, 2), (3, 3)])]
        );
        tasks[0].mem = Some(Box::new(tasksnap_model::Mem {
            vsize_bytes: 4096,
            rss_bytes: 4096,
            shared_bytes: 0,
            text_bytes: 0,
            data_bytes: 0,
            swap_bytes: None,
            locked_bytes: None,
        }));
        tasks[2].mem = tasks[0].mem.clone();
        // The pass gave two: statm of the third only; exe of all.
        assert_eq!(fill_plan(&tasks, mem, true), vec![(mem, vec![(2, 2)])]);
        assert_eq!(
            fill_plan(&tasks, mem_exe, true),
            vec![(mem, vec![(2, 2)]), (exe, vec![(1, 1), (2, 2), (3, 3)])]
        );
        tasks[1].mem = tasks[0].mem.clone();
        assert!(fill_plan(&tasks, mem, true).is_empty());
    }

    #[test]
    fn signal_masks_are_read_only_for_the_tasks_whose_record_lacked_them() {
        let mut tasks = [
            task(1, None, TaskState::Sleeping),
            task(2, None, TaskState::Sleeping),
        ];
        let sig = Groups::of(&[Group::Signals]);
        let exe = Groups::of(&[Group::Exe]);
        let sig_exe = sig.with(Group::Exe);
        // The walk or a pinned iterator gave none: one read of each task for everything.
        assert_eq!(fill_plan(&tasks, sig, false), vec![(sig, vec![(1, 1), (2, 2)])]);
        assert_eq!(
            fill_plan(&tasks, sig_exe, false),
            vec![(sig_exe, vec![(1, 1), (2, 2)])]
        );
        // dump_task_rare gave the first: the masks of the second only; exe of both.
        tasks[0].signals = Some(Box::default());
        assert_eq!(
            fill_plan(&tasks, sig_exe, false),
            vec![(sig, vec![(2, 2)]), (exe, vec![(1, 1), (2, 2)])]
        );
        tasks[1].signals = Some(Box::default());
        assert!(fill_plan(&tasks, sig, false).is_empty());
    }
}
