//! A one-shot snapshot handed over one task at a time ([`crate::Collector::snapshot_each`]):
//! snapshot.rs's pass, with the command lines gathered first (those the pass left read
//! from /proc, once per process), then each task made from its records, given its
//! process's line and handed to the sink. No vector of every task is made (at 100,000
//! threads, 40 MB faulted in, filled, then read again by the caller), and threads borrow
//! their process's line instead of a copy each.
//!
//! Only for queries whose other groups the pass gives whole (all that /proc completes is
//! command lines) and that select every process or thread; any other query is taken as a
//! snapshot and then handed over.

use std::collections::HashMap;

use tasksnap_model::{Group, Groups, Query, Selector, Snapshot, SnapshotStats, Task};

use super::cmdlines::{gather_cmdlines, CmdlinePlan};
use super::lap::Lap;
use super::passes::Shape;
use super::snapshot::pass_groups;
use super::{decode, BpfCollector};
use crate::collector::Collector;
use crate::error::Error;
use tasksnap_sys as sys;

/// Command lines by tgid, and whether reading one from /proc was given up at the deadline.
type Lines = HashMap<i32, (Option<Vec<u8>>, bool)>;

impl BpfCollector {
    /// Whether a snapshot of `query` can be handed over as it is assembled.
    fn streams(&self, query: &Query) -> bool {
        matches!(query.selector, Selector::AllProcesses | Selector::AllThreads)
            && decode::procfs_groups(&query.groups).without(Group::Cmdline) == Groups::default()
            && !self.live.track
    }

    /// [`crate::Collector::snapshot_each`] for the BPF backend.
    pub(super) fn walk_snapshot_each(
        &mut self,
        query: &Query,
        sink: &mut dyn FnMut(&Task),
    ) -> Result<Snapshot, Error> {
        if !self.streams(query) {
            let mut snap = self.walk_snapshot(query)?;
            let tasks = std::mem::take(&mut snap.tasks);
            for t in &tasks {
                sink(t);
            }
            self.recycle(tasks);
            return Ok(snap);
        }
        let taken_at_unix_ns = sys::clock_ns(libc::CLOCK_REALTIME);
        let taken_at_boottime_ns = self.procfs.units().boot.now_ns();
        let (groups, _) = pass_groups(query);
        let (plan, cmdline_pass) = self.begin_cmdlines(&groups, None);
        let copy = matches!(plan, CmdlinePlan::Walk { .. });
        let mut lap = Lap::new();
        let shape = Shape {
            one_shard: false,
            lines: plan == CmdlinePlan::Walk { lockless: true },
        };
        self.pass_of(decode::group_bits(&groups), None, shape)?;
        lap.mark("pass");
        let units = self.procfs.units();
        let records = self
            .out
            .records()
            .map_err(|e| Error::Unsupported(e.to_string()))?;
        lap.mark("records");
        let mut stats = SnapshotStats::default();
        let (extras, _) =
            Self::missing_from(&mut self.procfs, &records, query, groups, None, &mut stats)?;
        lap.mark("reconcile");
        let mut lines = Lines::new();
        if plan != CmdlinePlan::NotAsked {
            // As snapshot.rs: the walk's lines decoded, then the copy of what they lack.
            let lines_job = if copy { self.walk_lines_job() } else { None };
            let cmdline_pass = match cmdline_pass {
                Some(p) => Some(p),
                None if copy && lines_job.is_none() && self.out.walked.is_some() => {
                    self.start_cmdline_copy(&records, None)
                }
                None => None,
            };
            let walk_lines = lines_job.and_then(|j| j.join().ok());
            let cmdline_pass = match cmdline_pass {
                None if walk_lines.is_some() => {
                    self.start_cmdline_copy(&records, walk_lines.as_ref())
                }
                p => p,
            };
            let pass = self.cmdline_pass_or_start(cmdline_pass, walk_lines.is_some());
            let found = gather_cmdlines(&mut self.cmd, pass, walk_lines, &mut stats, &mut lap);
            lines = found
                .unwrap_or_default()
                .into_iter()
                .map(|(tgid, l)| (tgid, (Some(l), false)))
                .collect();
            self.lines_from_procfs(&records, &mut lines, &mut stats)?;
        }
        lap.mark("attach");
        let base = query.groups.has(Group::Base);
        let mut current: (i32, Option<Vec<u8>>, bool) = (0, None, false);
        let mut last = None;
        decode::assemble_each(&records, extras, query, &groups, units, &mut |mut t| {
            debug_assert!(last <= Some((t.id.tgid, t.id.tid)));
            last = Some((t.id.tgid, t.id.tid));
            let asked = plan != CmdlinePlan::NotAsked;
            let no_mm = asked && decode::no_mm(&t);
            let lent = asked && !no_mm && t.cmdline.is_none();
            if lent {
                if current.0 != t.id.tgid {
                    let (l, gave_up) = lines.remove(&t.id.tgid).unwrap_or((None, false));
                    current = (t.id.tgid, l, gave_up);
                }
                t.cmdline = current.1.take();
                t.cmdline_timed_out = current.2;
            } else if no_mm {
                t.cmdline = Some(Vec::new());
            }
            if !base {
                t.base = None;
            }
            sink(&t);
            if lent {
                // Lent to this task; the next thread of the process borrows it again.
                current.1 = t.cmdline.take();
            }
        });
        drop(records);
        lap.mark("assemble");
        self.out.phases_ms = lap.into_phases_ms();
        Ok(Snapshot {
            taken_at_unix_ns,
            taken_at_boottime_ns,
            boot_time_unix_s: self.procfs.try_boot_time()?,
            backend: tasksnap_model::Backend::Bpf,
            tasks: Vec::new(),
            stats,
        })
    }

    /// Reads from /proc the command lines the pass did not give (flagged, or of a process
    /// born after it), once per process: through its first thread with user memory (a
    /// zombie leader has none to show).
    fn lines_from_procfs(
        &self,
        records: &[decode::Record<'_>],
        lines: &mut Lines,
        stats: &mut SnapshotStats,
    ) -> Result<(), Error> {
        // Each process lacking a line once, through its lowest thread with user memory.
        let mut ids: Vec<(i32, i32)> = records
            .iter()
            .filter(|r| !lines.contains_key(&(r.hdr.tgid as i32)) && !decode::record_no_mm(r))
            .map(|r| (r.hdr.tgid as i32, r.hdr.tid as i32))
            .collect();
        ids.sort_unstable();
        ids.dedup_by_key(|id| id.0);
        if ids.is_empty() {
            return Ok(());
        }
        let (mut filled, fill_stats) = self
            .procfs
            .try_fill(&ids, Groups::of(&[Group::Cmdline]))?;
        stats.denied += fill_stats.denied;
        stats.cmdline_timeouts += fill_stats.cmdline_timeouts;
        for id in ids {
            let line = filled
                .remove(&id)
                .map_or((None, false), |t| (t.cmdline, t.cmdline_timed_out));
            lines.insert(id.0, line);
        }
        Ok(())
    }
}
