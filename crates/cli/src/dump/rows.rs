//! The rows a recorded [`Reading`] makes of the chosen columns ([`super::columns`]): one per
//! process (live, then exited: [`super::exit_rows`]), per thread, per reading of system
//! figures, or per cgroup of a reading's cgroups table (none for a reading without one).
//!
//! The state-time columns of `threads` come from `tasksnap_states::interval::between` with
//! [`Rollup::Thread`], the code the `states` command uses, between the previous reading of
//! the dump that had a state sample and this one; so summing a thread's rows over a stretch
//! of readings gives what `states` reports from the first of them to the last. The first
//! reading of a dump (and a reading without a state sample) has no interval: its
//! state-time columns are null; a thread of the snapshot that has no time in an interval
//! (`between` drops such rows) has zeros and `exited` false. A thread a later interval saw
//! but that the reading's snapshot does not hold (it exited during the interval) still gets a
//! row, with the state-time columns, `pid`, `tid`, `comm`, `exited` and `time`, the rest
//! null; so no state time is lost from the sums.
//!
//! A process that exited since the previous reading (the reading's `exits`, from the exit
//! records) gets one row of `processes` in that reading, after the live ones, with its final
//! figures in the columns live rows use (so summing `cpu_seconds` by `comm` counts it) and
//! `exit_time`, `exit_code` or `exit_signal` set; the columns an exit record does not carry
//! (state, memory now, nice, cgroup, ...) are null there. Live rows have those three null. A
//! zombie whose exit is in the same reading is listed once, as its exit row.

use std::collections::HashMap;

use tasksnap_model::states::Sample;
use tasksnap_model::{
    fields, CgroupCounters, CgroupHierarchy, CgroupValue, HostIdentity, Reading, Snapshot, Task,
    CGROUP_FIELDS,
};
use tasksnap_states::interval::{between, Rollup, Row};
use tasksnap_sys::users::Names;

use super::cells::{
    args_line, cgroup_line, exact, int, model_value, secs, since_boot, text, unix_time, Value,
};
use super::columns::{Column, Source, PRESSURE};
use super::exit_rows::{exit_value, ExitColumns};
use super::options::What;

/// Where the rows go: called with each row's cells, in the columns' order.
pub(super) type Emit<'a> = dyn FnMut(&[Value]) -> anyhow::Result<()> + 'a;

/// What the state columns of one row are computed from.
#[derive(Clone, Copy)]
pub(super) enum Interval<'a> {
    /// No interval ends at this reading (the first of the dump, or no state sample).
    None,
    /// The interval exists; this thread has no time in it.
    Empty,
    /// The thread's row of the interval.
    Row(&'a Row),
}

/// Turns readings into rows of the chosen columns.
#[derive(Debug)]
pub struct Producer {
    what: What,
    sources: Vec<Source>,
    /// Which of them an exited process's row has.
    exit_columns: ExitColumns,
    names: Names,
    prev: Option<Sample>,
}

impl Producer {
    /// A producer of `cols` (a selection of [`super::columns::columns`]`(what)`, in output
    /// order).
    pub fn new(what: What, cols: &[Column]) -> Producer {
        let sources: Vec<Source> = cols.iter().map(|c| c.source).collect();
        Producer {
            what,
            exit_columns: ExitColumns::new(&sources),
            sources,
            names: Names::default(),
            prev: None,
        }
    }

    /// Calls `emit` with each row `reading` makes, in (pid, tid) order.
    pub fn reading(&mut self, mut reading: Reading, emit: &mut Emit<'_>) -> anyhow::Result<()> {
        // Every row of the reading carries its identity (taken out: the reading is ours).
        let host = std::mem::take(&mut reading.host);
        let mut out = Out {
            host: &host,
            row: Vec::with_capacity(self.sources.len()),
            emit,
        };
        match self.what {
            What::System => out.row(&self.sources, |_, f| system_value(f, &reading))?,
            What::Processes => self.process_rows(&reading, &mut out)?,
            What::Threads => self.thread_rows(&reading, &mut out)?,
            What::Cgroups => {
                for c in reading.cgroups.iter().flat_map(|l| &l.cgroups) {
                    out.row(&self.sources, |_, f| cgroup_value(f, &reading, c))?;
                }
            }
        }
        if let Some(s) = reading.states.take() {
            self.prev = Some(s);
        }
        Ok(())
    }

    /// The live processes' rows, then the exited ones'.
    fn process_rows(&mut self, reading: &Reading, out: &mut Out<'_, '_>) -> anyhow::Result<()> {
        let snap = &reading.snapshot;
        // A zombie whose exit is in this reading is its exit row, not also a live one.
        let exited = reading.exited_ids();
        let live = |t: &&Task| t.id.is_leader() && !exited.contains(&t.id);
        let names = &mut self.names;
        for t in snap.tasks.iter().filter(live) {
            out.row(&self.sources, |_, f| {
                task_value(f, snap, Some(t), Interval::None, names)
            })?;
        }
        for e in &reading.exits {
            let t = e.task();
            let has = |i| self.exit_columns.has(i);
            let cell = |i, f| {
                let live = || task_value(f, snap, Some(&t), Interval::None, names);
                exit_value(f, has(i), snap, e, live)
            };
            out.row(&self.sources, cell)?;
        }
        Ok(())
    }

    /// Every thread's row with its time in the interval since the previous reading, then
    /// the rows of the threads the interval saw that the snapshot does not hold.
    fn thread_rows(&mut self, reading: &Reading, out: &mut Out<'_, '_>) -> anyhow::Result<()> {
        let snap = &reading.snapshot;
        let rows = match (&self.prev, &reading.states) {
            (Some(prev), Some(cur)) => Some(interval_rows(prev, cur)),
            _ => None,
        };
        let mut used = vec![false; rows.as_ref().map_or(0, |r| r.0.len())];
        for t in &snap.tasks {
            let iv = match &rows {
                None => Interval::None,
                Some((rows, by_id)) => match by_id.get(&(t.id.tgid, t.id.tid)) {
                    Some(&i) => {
                        used[i] = true;
                        Interval::Row(&rows[i])
                    }
                    None => Interval::Empty,
                },
            };
            out.row(&self.sources, |_, f| {
                task_value(f, snap, Some(t), iv, &mut self.names)
            })?;
        }
        if let Some((rows, _)) = &rows {
            // Threads that had time in the interval but are gone from the snapshot.
            for (r, _) in rows.iter().zip(&used).filter(|(_, &u)| !u) {
                let cell = |_, f| task_value(f, snap, None, Interval::Row(r), &mut self.names);
                out.row(&self.sources, cell)?;
            }
        }
        Ok(())
    }
}

/// Where a reading's rows go: the reading's host (every row's identity columns), a row
/// reused from one to the next, and the caller's `emit`.
struct Out<'a, 'e> {
    host: &'a HostIdentity,
    row: Vec<Value>,
    emit: &'a mut Emit<'e>,
}

impl Out<'_, '_> {
    /// Emits the row of `sources`: the identity columns from the host, each other cell from
    /// `cell` (given the column's index and source).
    fn row(
        &mut self,
        sources: &[Source],
        mut cell: impl FnMut(usize, Source) -> Value,
    ) -> anyhow::Result<()> {
        self.row.clear();
        for (i, &f) in sources.iter().enumerate() {
            let v = identity_value(f, self.host).unwrap_or_else(|| cell(i, f));
            self.row.push(v);
        }
        (self.emit)(&self.row)
    }
}

/// The interval's thread rows in (pid, tid) order, with an index by (pid, tid). Two threads
/// of one interval with the same ids (a tid reused within it) are summed into one row.
fn interval_rows(prev: &Sample, cur: &Sample) -> (Vec<Row>, HashMap<(i32, i32), usize>) {
    let mut iv = between(prev, cur, Rollup::Thread);
    iv.rows.sort_by_key(|r| (r.pid, r.tid));
    let mut rows: Vec<Row> = Vec::with_capacity(iv.rows.len());
    let mut by_id = HashMap::with_capacity(iv.rows.len());
    for r in iv.rows {
        let key = (r.pid, r.tid.unwrap_or(r.pid));
        match by_id.get(&key) {
            Some(&i) => {
                let same: &mut Row = &mut rows[i];
                for (a, b) in same.ns.iter_mut().zip(r.ns) {
                    *a = a.saturating_add(b);
                }
                same.alive_ns = same.alive_ns.saturating_add(r.alive_ns);
                same.exited &= r.exited;
                let bigger = r.top_reason.as_ref().map_or(0, |x| x.ns)
                    > same.top_reason.as_ref().map_or(0, |x| x.ns);
                if bigger {
                    same.top_reason = r.top_reason;
                }
            }
            None => {
                by_id.insert(key, rows.len());
                rows.push(r);
            }
        }
    }
    (rows, by_id)
}

/// The value of an identity column (host, boot), `None` for any other source.
fn identity_value(f: Source, h: &HostIdentity) -> Option<Value> {
    let v = match f {
        Source::Host => h.hostname.as_deref().map_or(Value::Null, text),
        Source::HostBytes => h.hostname.as_deref().map_or(Value::Null, exact),
        Source::BootId => h.boot_id.as_deref().map_or(Value::Null, text),
        _ => return None,
    };
    Some(v)
}

/// One cell of a task's row (`task`: `None` for a thread gone from the snapshot, known from
/// its interval row only).
pub(super) fn task_value(
    f: Source,
    snap: &Snapshot,
    task: Option<&Task>,
    iv: Interval<'_>,
    names: &mut Names,
) -> Value {
    let base = task.and_then(|t| t.base.as_ref());
    let row = match iv {
        Interval::Row(r) => Some(r),
        _ => None,
    };
    match f {
        Source::Model(m) | Source::ModelText(m) => task
            .and_then(|t| m.value(t))
            .map_or(Value::Null, model_value),
        Source::ModelBytes(m) => task
            .and_then(|t| m.value(t))
            .and_then(|v| v.as_bytes().map(exact))
            .unwrap_or(Value::Null),
        Source::Time => unix_time(snap.taken_at_unix_ns.into()),
        Source::Pid => match (task, row) {
            (Some(t), _) => Value::Int(t.id.tgid.into()),
            (None, Some(r)) => Value::Int(r.pid.into()),
            _ => Value::Null,
        },
        Source::Tid => match (task, row) {
            (Some(t), _) => Value::Int(t.id.tid.into()),
            (None, Some(r)) => Value::Int(r.tid.unwrap_or(r.pid).into()),
            _ => Value::Null,
        },
        Source::Comm => match (base, row) {
            (Some(b), _) => text(&b.comm),
            (None, Some(r)) => Value::Text(r.comm.clone()),
            _ => Value::Null,
        },
        Source::CommBytes => match (base, row) {
            (Some(b), _) => exact(&b.comm),
            // A thread gone from the snapshot: what the state sample kept (nothing when
            // it came from a recording, which keeps a thread's comm as text).
            (None, Some(r)) => r
                .comm_bytes
                .as_deref()
                .map_or(Value::Null, |b| Value::Bytes(b.to_vec())),
            _ => Value::Null,
        },
        Source::User => match task.and_then(|t| t.cred.as_ref()) {
            Some(c) => match names.user(c.euid) {
                Some(n) => text(n),
                None => Value::Text(c.euid.to_string()),
            },
            None => Value::Null,
        },
        Source::UserBytes => task
            .and_then(|t| t.cred.as_ref())
            .and_then(|c| names.user(c.euid))
            .map_or(Value::Null, exact),
        Source::Args => match (task.and_then(|t| t.cmdline.as_deref()), base) {
            (Some(c), _) => text(&args_line(c)),
            (None, Some(b)) if b.kthread => Value::Text(String::new()),
            _ => Value::Null,
        },
        Source::ArgsBytes => task
            .and_then(|t| t.cmdline.as_deref())
            .map_or(Value::Null, |c| exact(&args_line(c))),
        Source::CpuSeconds => task
            .and_then(|t| fields::CPU_NS.value(t))
            .and_then(|v| v.as_u64())
            .map_or(Value::Null, secs),
        Source::StartTime => task.map_or(Value::Null, |t| {
            since_boot(snap.boot_time_unix_s, t.id.start_time_ns)
        }),
        Source::Cgroup => task
            .and_then(|t| t.cgroup.as_deref())
            .map_or(Value::Null, |c| text(&cgroup_line(c))),
        Source::CgroupBytes => task
            .and_then(|t| t.cgroup.as_deref())
            .map_or(Value::Null, |c| exact(&cgroup_line(c))),
        _ => interval_value(f, iv),
    }
}

/// One cell of a thread's time in the interval.
fn interval_value(f: Source, iv: Interval<'_>) -> Value {
    let row = match iv {
        Interval::Row(r) => Some(r),
        _ => None,
    };
    let state_value = |ns: Option<u64>| match iv {
        Interval::None => Value::Null,
        _ => secs(ns.unwrap_or(0)),
    };
    let top = row.and_then(|r| r.top_reason.as_ref());
    match f {
        Source::Exited => match iv {
            Interval::None => Value::Null,
            Interval::Empty => Value::Bool(false),
            Interval::Row(r) => Value::Bool(r.exited),
        },
        Source::AliveS => state_value(row.map(|r| r.alive_ns)),
        Source::StateS(s) => state_value(row.map(|r| r.ns[s.index()])),
        Source::TopReason => top.map_or(Value::Null, |x| Value::Text(x.text(8))),
        Source::TopReasonState => {
            top.map_or(Value::Null, |x| Value::Text(x.state.name().to_string()))
        }
        Source::TopReasonS => top.map_or(Value::Null, |x| secs(x.ns)),
        _ => Value::Null,
    }
}

/// One cell of cgroup `c`'s row of the `cgroups` table.
fn cgroup_value(f: Source, r: &Reading, c: &CgroupCounters) -> Value {
    match f {
        Source::Time => unix_time(r.snapshot.taken_at_unix_ns.into()),
        Source::CgroupPath => text(&c.path),
        Source::CgroupPathBytes => exact(&c.path),
        Source::CgroupHierarchy => Value::Text(
            match c.hierarchy {
                CgroupHierarchy::V2 => "v2",
                CgroupHierarchy::V1(_) => "v1",
            }
            .to_string(),
        ),
        Source::CgroupControllers => match &c.hierarchy {
            CgroupHierarchy::V2 => Value::Null,
            CgroupHierarchy::V1(ctl) => Value::Text(ctl.join(",")),
        },
        Source::CgroupField(i) => CGROUP_FIELDS
            .get(i)
            .and_then(|x| x.number(c))
            .map_or(Value::Null, Value::UInt),
        Source::CgroupUnlimited(i) => match CGROUP_FIELDS.get(i).and_then(|x| x.get(c)) {
            None => Value::Null,
            Some(v) => Value::Bool(v == CgroupValue::Unlimited),
        },
        _ => Value::Null,
    }
}

/// One cell of the `system` table.
fn system_value(f: Source, r: &Reading) -> Value {
    let s = &r.system;
    match f {
        Source::Time => unix_time(r.snapshot.taken_at_unix_ns.into()),
        Source::CpuTicks(i) => s.cpu.map_or(Value::Null, |c| {
            int([
                c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal,
            ][i])
        }),
        Source::Ncpus => {
            if s.per_cpu.is_empty() {
                Value::Null
            } else {
                int(s.per_cpu.len() as u64)
            }
        }
        Source::Counter(i) => s.counters.map_or(Value::Null, |c| {
            int([
                c.context_switches,
                c.forks,
                c.procs_running,
                c.procs_blocked,
                c.interrupts,
                c.softirqs,
            ][i])
        }),
        Source::Memory(i) => s.memory.map_or(Value::Null, |m| {
            int([
                m.total_kib,
                m.free_kib,
                m.available_kib,
                m.buff_cache_kib,
                m.swap_total_kib,
                m.swap_free_kib,
            ][i]
                .saturating_mul(1024))
        }),
        Source::Load(i) => s.load.map_or(Value::Null, |l| Value::Float(l.avg[i])),
        Source::Tasks => s.load.and_then(|l| l.tasks).map_or(Value::Null, int),
        Source::Exits(_) if r.exits_missing.is_some() => Value::Null,
        Source::Exits(false) => int(r.exits.len() as u64),
        Source::Exits(true) => int(r.exits_dropped),
        Source::Vmstat(name) => s
            .vmstat
            .iter()
            .find(|(n, _)| n == name)
            .map_or(Value::Null, |&(_, v)| int(v)),
        Source::Pressure(res, full, total) => s
            .pressure
            .iter()
            .find(|p| p.resource == PRESSURE[res])
            .and_then(|p| if full { p.full } else { p.some })
            .map_or(Value::Null, |l| {
                if total {
                    int(l.total_us)
                } else {
                    Value::Float(l.avg_pct[0])
                }
            }),
        _ => Value::Null,
    }
}
