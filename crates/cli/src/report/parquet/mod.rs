//! A Parquet dump as the report's input: the files `tasksnap dump --format parquet` wrote of
//! one host's recording, one table per file (plain files or the `--partition` layout, found
//! and told apart by [`files`]), read as [`Frame`]s in time order.
//!
//! - `processes` is the minimum, and the timeline: a frame per `time` of its rows. Its files
//!   are read one after the other in time order; each must hold its rows in time order, and
//!   no two may overlap in time (two dumps of the same table, or of two hosts, are refused:
//!   so is a dump whose rows name two hosts).
//! - `system` gives each frame's host figures and exit-record counts, `threads` (its state
//!   seconds summed per `time`) the thread-state mix and, from each thread's `top_reason`
//!   when it is a D wait, the D-state reasons. Either may be missing: what it gives is left
//!   out of the page, and [`Dump::notes`] says so.
//! - A process's CPU is its `cpu_seconds` back in ns, its identity its `pid` and
//!   `start_time`; an exit row (one with `exit_time`) is the process's final figures, with
//!   `peak_rss_bytes` as its RSS.
//! - `cgroups` files are recognised and not read (the report draws no cgroup's counters).
//!
//! Only the columns the report reads are decoded; rows outside the window are skipped as
//! they are read, so memory holds one batch of rows and a figure or two per sample. The
//! listings of the chosen moments read the processes files again for those times only
//! ([`Dump::rows_at`]). A file the decoder cannot read is an error naming it (a panic in
//! the decoder too).

mod column;
mod files;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use arrow_array::RecordBatch;
use tasksnap_model::states::State;
use tasksnap_model::{CpuTicks, LoadAverages, Memory, Pressure, PressureLine, SystemFigures};
use tasksnap_safefile::Dir;

use self::column::{exact_bytes, Col};
use self::files::TableFile;
use super::frame::{ExitRecords, Frame, ProcRow, StateMix};
use crate::dump::What;

/// The `processes` columns the report reads.
const PROCESS_COLUMNS: [&str; 18] = [
    "time",
    "pid",
    "start_time",
    "cpu_seconds",
    "rss_bytes",
    "uid",
    "state",
    "threads",
    "comm",
    "comm_bytes",
    "args",
    "args_bytes",
    "cgroup",
    "cgroup_bytes",
    "exit_time",
    "peak_rss_bytes",
    "host",
    "host_bytes",
];

/// The `system` table's CPU columns, in [`CpuTicks::from_array`]'s order.
const CPU_COLUMNS: [&str; 8] = [
    "cpu_user_ticks",
    "cpu_nice_ticks",
    "cpu_system_ticks",
    "cpu_idle_ticks",
    "cpu_iowait_ticks",
    "cpu_irq_ticks",
    "cpu_softirq_ticks",
    "cpu_steal_ticks",
];

/// The `system` table's other columns the report reads.
const SYSTEM_COLUMNS: [&str; 13] = [
    "time",
    "mem_total_bytes",
    "mem_available_bytes",
    "swap_total_bytes",
    "swap_free_bytes",
    "load1",
    "load5",
    "load15",
    "pressure_cpu_some_total_us",
    "pressure_memory_some_total_us",
    "pressure_io_some_total_us",
    "exits",
    "exits_dropped",
];

/// The resources of the pressure columns, in [`SYSTEM_COLUMNS`]' order.
const PRESSURE: [&str; 3] = ["cpu", "memory", "io"];

/// The `threads` columns the report reads besides the state seconds.
const THREAD_COLUMNS: [&str; 4] = ["time", "top_reason", "top_reason_state", "top_reason_s"];

/// A host's figures and exit records at one sample, from `system`.
type SystemRow = (SystemFigures, ExitRecords);

/// An interval's thread-state mix and its D waits' seconds (ns) by reason, from `threads`.
type StateRow = (StateMix, HashMap<String, u64>);

/// A dump directory's tables.
pub struct Dump {
    root: Dir,
    /// `processes` files with rows, in time order, with the times of their first and last.
    processes: Vec<(TableFile, (u64, u64))>,
    threads: Vec<TableFile>,
    system: Vec<TableFile>,
    /// What the dump lacks and the page leaves out, a line each.
    pub notes: Vec<String>,
}

/// `f()`, a panic in the Parquet decoder an error naming `path`.
fn guarded<T>(path: &Path, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        anyhow::bail!(
            "cannot read {}: the Parquet decoder failed on it",
            path.display()
        )
    })
}

impl Dump {
    /// The dump at `dir`: its files found, each's table known, the `processes` files in time
    /// order. A dump without a `processes` row is refused.
    pub fn open(dir: &Path) -> anyhow::Result<Dump> {
        let root = Dir::open(dir)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {}", dir.display(), e.reason()))?;
        let (mut processes, mut threads, mut system) = (Vec::new(), Vec::new(), Vec::new());
        for f in files::find(dir)? {
            match f.what {
                What::Processes => processes.push(f),
                What::Threads => threads.push(f),
                What::System => system.push(f),
                What::Cgroups => {}
            }
        }
        if processes.is_empty() {
            anyhow::bail!(
                "{} holds no recording and no processes table of a Parquet dump (tasksnap dump \
                 --what processes --format parquet)",
                dir.display()
            );
        }
        let mut notes = Vec::new();
        if system.is_empty() {
            notes.push(
                "The dump has no system table: the host's CPU, memory, load and pressure are \
                 left out."
                    .to_string(),
            );
        }
        if threads.is_empty() {
            notes.push(
                "The dump has no threads table: the thread-state mix, its moments and the \
                 D-state wait reasons are left out."
                    .to_string(),
            );
        }
        let processes = in_time_order(processes)?;
        if processes.is_empty() {
            anyhow::bail!("the processes table in {} has no rows", dir.display());
        }
        Ok(Dump {
            root,
            processes,
            threads,
            system,
            notes,
        })
    }

    /// The dump's directory.
    pub fn directory(&self) -> &Dir {
        &self.root
    }

    /// The times of the first and the last `processes` rows, Unix ns.
    pub fn bounds(&self) -> (u64, u64) {
        let first = self.processes.first().map_or(0, |(_, b)| b.0);
        let last = self.processes.last().map_or(0, |(_, b)| b.1);
        (first, last)
    }

    /// Calls `each` with the frame of every `processes` time from `from` to `to` (Unix ns),
    /// in time order.
    pub fn frames(
        &self,
        (from, to): (u64, u64),
        each: &mut dyn FnMut(Frame),
    ) -> anyhow::Result<()> {
        let mut system = self.system_rows(from, to)?;
        let mut states = self.state_rows(from, to)?;
        let exits_in_rows = self.processes.iter().any(|(f, _)| f.has("exit_time"));
        let mut host: Option<Option<Vec<u8>>> = None;
        let mut cur: Option<Frame> = None;
        for (f, _) in &self.processes {
            guarded(&f.path, || {
                for batch in f.batches(&PROCESS_COLUMNS)? {
                    let batch = batch?;
                    let cols = ProcCols::of(&batch);
                    for i in 0..batch.num_rows() {
                        let Some((t, row)) = cols.row(i) else {
                            continue;
                        };
                        if t < from || t > to {
                            continue;
                        }
                        let name = cols.host(i);
                        match &host {
                            None => host = Some(name.clone()),
                            Some(h) if *h != name => anyhow::bail!(
                                "{}: rows of more than one host ({} and {}): point --dir at \
                                 one host's dump (its host=NAME directory)",
                                f.path.display(),
                                lossy(h.as_deref()),
                                lossy(name.as_deref()),
                            ),
                            Some(_) => {}
                        }
                        if cur.as_ref().is_some_and(|c| c.at_unix_ns != t) {
                            each(cur.take().unwrap_or_default());
                        }
                        let frame = cur.get_or_insert_with(|| {
                            let (sys, exits) = system.remove(&t).map_or(
                                (
                                    None,
                                    ExitRecords {
                                        known: exits_in_rows,
                                        dropped: 0,
                                    },
                                ),
                                |(s, e)| (Some(s), e),
                            );
                            let (mix, reasons) = states.remove(&t).unwrap_or_default();
                            Frame {
                                at_unix_ns: t,
                                hostname: name,
                                system: sys,
                                procs: Vec::new(),
                                states: mix,
                                disk_reasons: reasons.into_iter().collect(),
                                exits,
                            }
                        });
                        frame.procs.push(row);
                    }
                }
                Ok(())
            })?;
        }
        if let Some(c) = cur {
            each(c);
        }
        Ok(())
    }

    /// The `processes` rows of each of `times`, read again.
    pub fn rows_at(&self, times: &BTreeSet<u64>) -> anyhow::Result<HashMap<u64, Vec<ProcRow>>> {
        let mut out: HashMap<u64, Vec<ProcRow>> = HashMap::new();
        for (f, (first, last)) in &self.processes {
            if times.range(first..=last).next().is_none() {
                continue;
            }
            guarded(&f.path, || {
                for batch in f.batches(&PROCESS_COLUMNS)? {
                    let batch = batch?;
                    let cols = ProcCols::of(&batch);
                    for i in 0..batch.num_rows() {
                        match cols.row(i) {
                            Some((t, row)) if times.contains(&t) => {
                                out.entry(t).or_default().push(row);
                            }
                            _ => {}
                        }
                    }
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// The `system` rows from `from` to `to`, by time.
    fn system_rows(&self, from: u64, to: u64) -> anyhow::Result<BTreeMap<u64, SystemRow>> {
        let mut out = BTreeMap::new();
        let names: Vec<&str> = SYSTEM_COLUMNS.iter().chain(&CPU_COLUMNS).copied().collect();
        for f in &self.system {
            guarded(&f.path, || {
                for batch in f.batches(&names)? {
                    let batch = batch?;
                    for i in 0..batch.num_rows() {
                        let Some(t) = Col::of(&batch, "time").time_ns(i) else {
                            continue;
                        };
                        if (from..=to).contains(&t) {
                            out.insert(t, system_row(&batch, i));
                        }
                    }
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// The `threads` rows from `from` to `to` summed by time: each interval's state mix and
    /// the D waits of its threads' top reasons.
    fn state_rows(&self, from: u64, to: u64) -> anyhow::Result<BTreeMap<u64, StateRow>> {
        let mut out: BTreeMap<u64, StateRow> = BTreeMap::new();
        let state_names: Vec<&str> = State::SHOWN
            .iter()
            .map(|&s| crate::dump::state_column(s))
            .collect();
        let names: Vec<&str> = THREAD_COLUMNS.iter().chain(&state_names).copied().collect();
        for f in &self.threads {
            guarded(&f.path, || {
                for batch in f.batches(&names)? {
                    let batch = batch?;
                    let time = Col::of(&batch, "time");
                    let seconds: Vec<(State, Col<'_>)> = State::SHOWN
                        .iter()
                        .zip(&state_names)
                        .map(|(&s, n)| (s, Col::of(&batch, n)))
                        .collect();
                    let reason = Col::of(&batch, "top_reason");
                    let reason_state = Col::of(&batch, "top_reason_state");
                    let reason_s = Col::of(&batch, "top_reason_s");
                    for i in 0..batch.num_rows() {
                        let Some(t) = time.time_ns(i).filter(|t| (from..=to).contains(t)) else {
                            continue;
                        };
                        let (mix, reasons) = out.entry(t).or_default();
                        for (s, c) in &seconds {
                            if let Some(ns) = c.secs_as_ns(i) {
                                mix.known = true;
                                let v = &mut mix.ns[s.index()];
                                *v = v.saturating_add(ns);
                            }
                        }
                        if reason_state.bytes(i) == Some(State::Disk.name().as_bytes()) {
                            let text =
                                String::from_utf8_lossy(reason.bytes(i).unwrap_or(b"[unknown]"));
                            let ns = reason_s.secs_as_ns(i).unwrap_or(0);
                            let v = reasons.entry(text.into_owned()).or_default();
                            *v = v.saturating_add(ns);
                        }
                    }
                }
                Ok(())
            })?;
        }
        Ok(out)
    }
}

/// Bytes as text for a message.
fn lossy(b: Option<&[u8]>) -> String {
    b.map_or_else(
        || "none".into(),
        |b| format!("{:?}", String::from_utf8_lossy(b)),
    )
}

/// The `processes` files that have rows, in time order with their first and last times;
/// rows out of time order in a file, or files that overlap in time, are refused.
fn in_time_order(files: Vec<TableFile>) -> anyhow::Result<Vec<(TableFile, (u64, u64))>> {
    let mut out = Vec::new();
    for f in files {
        let span = guarded(&f.path, || {
            let mut span: Option<(u64, u64)> = None;
            for batch in f.batches(&["time"])? {
                let batch = batch?;
                let time = Col::of(&batch, "time");
                for t in (0..batch.num_rows()).filter_map(|i| time.time_ns(i)) {
                    span = match span {
                        Some((_, last)) if t < last => anyhow::bail!(
                            "{}: its rows are not in time order (as tasksnap dump writes them)",
                            f.path.display()
                        ),
                        Some((first, _)) => Some((first, t)),
                        None => Some((t, t)),
                    };
                }
            }
            Ok(span)
        })?;
        if let Some(span) = span {
            out.push((f, span));
        }
    }
    out.sort_by_key(|(_, span)| *span);
    for w in out.windows(2) {
        let ((a, sa), (b, sb)) = (&w[0], &w[1]);
        if sb.0 <= sa.1 {
            anyhow::bail!(
                "{} and {} overlap in time: a report reads one dump of each table, of one host",
                a.path.display(),
                b.path.display()
            );
        }
    }
    Ok(out)
}

/// The `system` row `i` of `batch` as the host's figures and exit records.
fn system_row(batch: &RecordBatch, i: usize) -> SystemRow {
    let u = |name: &str| Col::of(batch, name).uint(i);
    let x = |name: &str| Col::of(batch, name).float(i);
    let mut s = SystemFigures::default();
    let ticks: Option<Vec<u64>> = CPU_COLUMNS.iter().map(|c| u(c)).collect();
    s.cpu = ticks
        .and_then(|v| <[u64; 8]>::try_from(v).ok())
        .map(CpuTicks::from_array);
    let kib = |name: &str| u(name).map(|b| b / 1024);
    if let (Some(total_kib), Some(available_kib)) =
        (kib("mem_total_bytes"), kib("mem_available_bytes"))
    {
        s.memory = Some(Memory {
            total_kib,
            available_kib,
            swap_total_kib: kib("swap_total_bytes").unwrap_or(0),
            swap_free_kib: kib("swap_free_bytes").unwrap_or(0),
            ..Memory::default()
        });
    }
    if let (Some(a), Some(b), Some(c)) = (x("load1"), x("load5"), x("load15")) {
        s.load = Some(LoadAverages {
            avg: [a, b, c],
            tasks: None,
        });
    }
    for res in PRESSURE {
        if let Some(total_us) = u(&format!("pressure_{res}_some_total_us")) {
            s.pressure.push(Pressure {
                resource: res.to_string(),
                some: Some(PressureLine {
                    avg_pct: [f64::NAN; 3],
                    total_us,
                }),
                full: None,
            });
        }
    }
    let exits = ExitRecords {
        known: u("exits").is_some(),
        dropped: u("exits_dropped").unwrap_or(0),
    };
    (s, exits)
}

/// The `processes` columns of one batch.
struct ProcCols<'a>([Col<'a>; PROCESS_COLUMNS.len()]);

impl<'a> ProcCols<'a> {
    fn of(batch: &'a RecordBatch) -> ProcCols<'a> {
        ProcCols(PROCESS_COLUMNS.map(|n| Col::of(batch, n)))
    }

    fn col(&self, name: &str) -> &Col<'a> {
        let i = PROCESS_COLUMNS.iter().position(|&n| n == name).unwrap_or(0);
        &self.0[i]
    }

    /// Row `i`'s host name.
    fn host(&self, i: usize) -> Option<Vec<u8>> {
        exact_bytes(self.col("host"), self.col("host_bytes"), i)
    }

    /// Row `i`: its time and its process (`None` without a time or a pid).
    fn row(&self, i: usize) -> Option<(u64, ProcRow)> {
        let c = |n: &str| self.col(n);
        let t = c("time").time_ns(i)?;
        let pid = i32::try_from(c("pid").int(i)?).ok()?;
        let exit_unix_ns = c("exit_time").time_ns(i);
        let exited = exit_unix_ns.is_some();
        let text = |n: &str| exact_bytes(c(n), c(&format!("{n}_bytes")), i);
        Some((
            t,
            ProcRow {
                pid,
                start_key: c("start_time").time_us(i).unwrap_or(0),
                start_unix_ns: c("start_time").time_ns(i),
                cpu_ns: c("cpu_seconds").secs_as_ns(i),
                rss_bytes: c(if exited {
                    "peak_rss_bytes"
                } else {
                    "rss_bytes"
                })
                .uint(i),
                uid: c("uid").uint(i).and_then(|u| u32::try_from(u).ok()),
                state: if exited {
                    Some(tasksnap_model::TaskState::Dead.letter())
                } else {
                    c("state").bytes(i).and_then(|b| b.first().copied())
                },
                threads: c("threads").uint(i).and_then(|n| u32::try_from(n).ok()),
                comm: text("comm"),
                args: text("args"),
                cgroup: text("cgroup"),
                exit_unix_ns,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column the report reads is one `dump` writes, of the type the report reads it
    /// as (a renamed or retyped dump column fails here, not on a user's dump).
    #[test]
    fn the_columns_read_are_the_dumps() {
        use crate::dump::Kind;
        let want = |what: What, name: &str, kinds: &[Kind]| {
            let k = files::kind_of(what, name);
            assert!(
                k.is_some_and(|k| kinds.contains(&k)),
                "{name} of {}: {k:?}",
                what.name()
            );
        };
        for n in PROCESS_COLUMNS {
            want(
                What::Processes,
                n,
                &[Kind::Time, Kind::Int, Kind::Float, Kind::Text, Kind::Bytes],
            );
        }
        for n in ["time", "start_time", "exit_time"] {
            want(What::Processes, n, &[Kind::Time]);
        }
        want(What::Processes, "cpu_seconds", &[Kind::Float]);
        for n in SYSTEM_COLUMNS.iter().chain(&CPU_COLUMNS).skip(1) {
            want(What::System, n, &[Kind::Int, Kind::Float]);
        }
        for s in State::SHOWN {
            want(What::Threads, crate::dump::state_column(s), &[Kind::Float]);
        }
        for n in THREAD_COLUMNS.iter().skip(1) {
            want(What::Threads, n, &[Kind::Text, Kind::Float]);
        }
    }
}
