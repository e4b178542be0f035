//! The encoder: chooses key or delta per reading, and writes the sample and names payloads.
//! It keeps the last key's rows (to compare against) and the names given since that key.

use tasksnap_model::states::{Sample, State, ThreadMap, ThreadTotals};
use tasksnap_model::{
    Cgroup, CgroupCounters, HostIdentity, Reading, ReadingChanges, SystemFigures, Task, TaskId,
};

use crate::cgroups::{put_delta as put_cgroups_delta, put_full as put_cgroups, CGROUPS};
use crate::exits::{put_exits, EXITS};
use crate::host::{put_host, HOST};
use crate::meta::{put_backend, put_mode, put_reasons, put_stats, put_system, Reasons};
use crate::names::{self, Names};
use crate::tasks::{put_id, put_task, same_row, TASK_ID_COLS, T_GONE, T_KEY_IDX};
use crate::threads::{put_thread, put_thread_id, unchanged, H_GONE, H_KEY_IDX};
use crate::wire::{put_bytes, put_header, put_key_idx, put_u, Cols, FrameType};

/// Samples from one key to the next by default.
pub const DEFAULT_KEY_EVERY: u32 = 60;

/// Column count of a sample frame (META, the task columns, the thread columns, the exits,
/// the host identity, the throttled time, the cgroups table).
pub(crate) const SAMPLE_COLS: usize = 37;
/// The sample frame's sequential column.
pub(crate) const META: usize = 0;

/// The payloads of one reading. Store `names` (when some) as a [`crate::KIND_NAMES`] frame,
/// then `sample` as a [`crate::KIND_SAMPLE`] frame, both with the reading's time and `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// A key sample (self-contained with its names payload) rather than a delta.
    pub key: bool,
    /// Command lines and cgroups not given since the key (always present for a key).
    pub names: Option<Vec<u8>>,
    /// The sample payload.
    pub sample: Vec<u8>,
}

#[derive(Debug)]
struct KeyThreads {
    rows: Vec<(TaskId, ThreadTotals)>,
    reasons: Reasons,
}

/// What the last key held, sorted by identity.
#[derive(Debug)]
struct Key {
    taken_at: u64,
    tasks: Vec<Task>,
    threads: Option<KeyThreads>,
    system: SystemFigures,
    host: HostIdentity,
    /// Its cgroups table in identity order (`None`: the key had none).
    cgroups: Option<Vec<CgroupCounters>>,
}

/// Turns readings into payloads. Deltas are written against the last key, which is written
/// every `key_every` samples, when asked (`force_key`), when a delta would carry more than
/// half the key's rows, when the reading's host identity is not the key's, when the tasks are
/// not in strictly ascending identity order, and (unless [`Encoder::adaptive_keys`] turned it
/// off) when a delta would be larger than the average bytes per sample since the key. The
/// exited processes are left out of that comparison: a sample stores them whole, key or
/// delta, so a key would not make them smaller (counted, 20 exits with their command lines
/// made every sample of a small host a key, four times the bytes).
#[derive(Debug)]
pub struct Encoder {
    key_every: u32,
    since_key: u32,
    key: Option<Key>,
    /// Names given by delta names payloads since the key.
    names: ThreadMap<Names>,
    /// Column buffers, reused from one sample to the next.
    cols: Cols,
    /// Write a key when a delta is larger than the average bytes per sample since the key.
    adaptive: bool,
    /// Bytes written since the key (key included).
    bytes_since_key: usize,
    /// The rows that may differ from the key's: every row the readings since the key said
    /// they changed ([`Encoder::encode_changed`]); `None` when one did not say.
    dirty: Dirty,
}

/// The task rows and threads that changed since the key, as the readings told; `None`: not
/// known (compare every row).
#[derive(Debug, Default)]
struct Dirty {
    tasks: Option<ThreadMap<()>>,
    threads: Option<ThreadMap<()>>,
}

impl Dirty {
    /// After a key: nothing changed since.
    fn clean() -> Dirty {
        Dirty {
            tasks: Some(ThreadMap::default()),
            threads: Some(ThreadMap::default()),
        }
    }

    /// Adds what one reading changed from the one before.
    fn add(&mut self, changes: Option<&ReadingChanges>) {
        fn union(set: &mut Option<ThreadMap<()>>, ids: Option<&Vec<TaskId>>) {
            match (set.as_mut(), ids) {
                (Some(s), Some(ids)) => s.extend(ids.iter().map(|id| (*id, ()))),
                _ => *set = None,
            }
        }
        union(&mut self.tasks, changes.and_then(|c| c.tasks.as_ref()));
        union(&mut self.threads, changes.and_then(|c| c.threads.as_ref()));
    }
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new(DEFAULT_KEY_EVERY)
    }
}

/// The index of the task `id` among `tasks`, which are in identity order.
fn row_of(tasks: &[Task], id: &TaskId) -> Option<usize> {
    tasks.binary_search_by(|t| t.id.cmp(id)).ok()
}

fn sorted_threads(s: &Sample) -> Vec<(&TaskId, &ThreadTotals)> {
    let mut v: Vec<_> = s.threads.iter().collect();
    // The order of `TaskId` as one integer: one comparison instead of three.
    let key = |id: &TaskId| {
        let flip = |x: i32| u128::from((x as u32) ^ 0x8000_0000);
        flip(id.tgid) << 96 | flip(id.tid) << 64 | u128::from(id.start_time_ns)
    };
    v.sort_unstable_by_key(|e| key(e.0));
    v
}

/// The parts of a sample frame before the rows: snapshot fields, row counts, system figures.
fn put_head(c: &mut Cols, r: &Reading, key: Option<&Key>, rows: usize, gone: usize) {
    let b = c.c(META);
    if let Some(k) = key {
        put_u(b, k.taken_at);
    }
    let s = &r.snapshot;
    put_u(b, s.taken_at_unix_ns);
    put_u(b, s.taken_at_boottime_ns);
    put_u(b, s.boot_time_unix_s);
    put_backend(b, s.backend);
    put_stats(b, &s.stats);
    put_u(b, rows as u64);
    put_u(b, gone as u64);
    put_system(b, &r.system, key.map(|k| &k.system));
}

/// The thread-state sample's own fields; `tag` 0: none, 1: full, 2: delta against the key.
fn put_states_head(c: &mut Cols, s: &Sample, key: Option<&KeyThreads>, rows: usize, gone: usize) {
    let b = c.c(META);
    put_mode(b, s.mode);
    put_u(b, s.at_ns);
    put_u(b, s.notes.len() as u64);
    for n in &s.notes {
        put_bytes(b, n.as_bytes());
    }
    put_reasons(b, &s.reasons, key.map(|k| &k.reasons));
    put_u(b, rows as u64);
    put_u(b, gone as u64);
}

/// The names a decoder holds for `id`: given since the key, else the key's.
fn known<'a>(
    given: &'a ThreadMap<Names>,
    id: &TaskId,
    in_key: Option<&'a Task>,
) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    match given.get(id) {
        Some(n) => (n.0.as_deref(), n.1.as_deref().map(Cgroup::raw)),
        None => in_key.map_or((None, None), |t| {
            (t.cmdline.as_deref(), t.cgroup.as_deref().map(Cgroup::raw))
        }),
    }
}

fn put_gone(b: &mut Vec<u8>, gone: &[usize]) {
    let mut next = 0;
    for &i in gone {
        put_u(b, (i - next) as u64);
        next = i + 1;
    }
}

impl Encoder {
    /// What this encoder holds between samples, in bytes by part: the last key's rows and
    /// their heap, its threads' totals, the names given since the key and the column
    /// buffers. From capacities and sizes ([`Task::heap_bytes`]: a cgroup's text, which the
    /// key shares with the reading's rows, counted for each row).
    pub fn held(&self) -> [(&'static str, usize); 3] {
        use std::mem::size_of;
        let (mut rows, mut threads) = (0, 0);
        if let Some(k) = &self.key {
            rows = (k.tasks.capacity() - k.tasks.len()) * size_of::<Task>()
                + k.tasks.iter().map(Task::heap_bytes).sum::<usize>();
            threads = k.threads.as_ref().map_or(0, |t| {
                t.rows.capacity() * size_of::<(TaskId, ThreadTotals)>()
                    + t.rows
                        .iter()
                        .map(|r| r.1.reasons.capacity() * size_of::<(State, u32, u64)>())
                        .sum::<usize>()
            });
        }
        let names = self.names.capacity() * (size_of::<(TaskId, Names)>() + 1)
            + self
                .names
                .values()
                .map(|n| n.0.as_ref().map_or(0, Vec::capacity))
                .sum::<usize>();
        let cols: usize = self.cols.0.iter().map(Vec::capacity).sum();
        [
            ("recorder key rows", rows),
            ("recorder key threads", threads),
            ("recorder names and buffers", names + cols),
        ]
    }

    /// An encoder writing a key every `key_every` samples (0 and 1: every sample).
    pub fn new(key_every: u32) -> Encoder {
        Encoder {
            key_every,
            since_key: 0,
            cols: Cols::new(SAMPLE_COLS),
            adaptive: true,
            bytes_since_key: 0,
            key: None,
            names: ThreadMap::default(),
            dirty: Dirty::default(),
        }
    }

    /// Whether to write a key early when a delta is larger than the average bytes per sample
    /// since the last key (on by default): deltas grow as more tasks differ from the key, and
    /// a key then costs less than carrying them.
    pub fn adaptive_keys(mut self, on: bool) -> Encoder {
        self.adaptive = on;
        self
    }

    /// Encodes one reading; `force_key` asks for a key (e.g. the store starts a segment).
    pub fn encode(&mut self, r: &Reading, force_key: bool) -> Encoded {
        self.encode_changed(r, force_key, None)
    }

    /// [`Encoder::encode`], told what changed since the reading encoded before
    /// ([`tasksnap_model::ReadingChanges`], from the sampler): a delta then compares only
    /// the rows that changed since the key with it, not every row of the host. Every
    /// reading taken must be given, in order (a reading not given would hide its changes).
    pub fn encode_changed(
        &mut self,
        r: &Reading,
        force_key: bool,
        changes: Option<&ReadingChanges>,
    ) -> Encoded {
        self.dirty.add(changes);
        let sorted = self.in_order(&r.snapshot.tasks);
        let due = self.since_key.saturating_add(1) >= self.key_every;
        // The identity is in key frames only: another one (a renamed host) needs a key.
        let moved = self.key.as_ref().is_some_and(|k| k.host != r.host);
        if !force_key && !due && !moved && sorted {
            let mut c = std::mem::replace(&mut self.cols, Cols::new(0));
            c.clear();
            let d = self.delta(r, &mut c);
            self.cols = c;
            if let Some((e, given)) = d {
                let n = (e.sample.len() + e.names.as_ref().map_or(0, Vec::len))
                    .saturating_sub(self.cols.c(EXITS).len());
                let average = self.bytes_since_key / (self.since_key as usize + 1);
                if !self.adaptive || n <= average {
                    self.since_key += 1;
                    self.bytes_since_key += n;
                    for j in given {
                        if let Some(t) = r.snapshot.tasks.get(j) {
                            self.names
                                .insert(t.id, (t.cmdline.clone(), t.cgroup.clone()));
                        }
                    }
                    return e;
                }
            }
        }
        self.key_frame(r, sorted)
    }

    /// Whether the tasks are in strictly ascending identity order. With a key and what
    /// changed since it told, only the rows listed are checked against their neighbours:
    /// the others are the key's, in its order (a reading's contract), and a walk of every
    /// row cost 5 ms a sample at 50,000 processes (rows of ~370 bytes, one cache miss each).
    /// Builds with debug assertions check every row too.
    fn in_order(&self, tasks: &[Task]) -> bool {
        let every_row = || tasks.windows(2).all(|w| w[0].id < w[1].id);
        let (Some(d), Some(_)) = (&self.dirty.tasks, &self.key) else {
            return every_row();
        };
        let listed = d.keys().all(|id| {
            let Some(j) = row_of(tasks, id) else {
                return true; // gone
            };
            let before = j.checked_sub(1).is_none_or(|i| tasks[i].id < tasks[j].id);
            let after = tasks.get(j + 1).is_none_or(|n| tasks[j].id < n.id);
            before && after
        });
        debug_assert!(
            !listed || every_row(),
            "rows out of order but the listed ones"
        );
        listed
    }

    fn key_frame(&mut self, r: &Reading, sorted: bool) -> Encoded {
        // The last key goes first: its rows and the new key's copy of them are never held
        // together (at 50,000 processes each is every row of the host).
        self.key = None;
        let tasks = &r.snapshot.tasks;
        let mut out = Vec::new();
        put_header(&mut out, FrameType::KeySample);
        let mut c = std::mem::replace(&mut self.cols, Cols::new(0));
        c.clear();
        put_head(&mut c, r, None, tasks.len(), 0);
        let mut prev: Option<&Task> = None;
        for t in tasks {
            put_id(
                &mut c,
                TASK_ID_COLS,
                t.id,
                prev.map_or(TaskId::default(), |p| p.id),
            );
            put_task(&mut c, t, prev);
            prev = Some(t);
        }
        let mut key_threads = None;
        match &r.states {
            None => c.c(META).push(0),
            Some(s) => {
                c.c(META).push(1);
                let rows = sorted_threads(s);
                put_states_head(&mut c, s, None, rows.len(), 0);
                let mut prev: Option<(&TaskId, &ThreadTotals)> = None;
                for &(id, t) in &rows {
                    put_thread_id(&mut c, *id, prev.map_or(TaskId::default(), |p| *p.0));
                    put_thread(&mut c, *id, t, prev.map(|p| p.1), s.at_ns);
                    prev = Some((id, t));
                }
                if sorted {
                    key_threads = Some(KeyThreads {
                        rows: rows.into_iter().map(|(id, t)| (*id, t.clone())).collect(),
                        reasons: s.reasons.clone(),
                    });
                }
            }
        }
        put_exits(c.c(EXITS), r);
        put_host(c.c(HOST), &r.host);
        let cgroups = put_cgroups(c.c(CGROUPS), r.cgroups.as_ref());
        c.finish(&mut out);
        self.cols = c;
        let taken_at = r.snapshot.taken_at_unix_ns;
        let entries: Vec<_> = tasks
            .iter()
            .filter(|t| t.cmdline.is_some() || t.cgroup.is_some())
            .map(|t| {
                (
                    t.id,
                    t.cmdline.as_deref(),
                    t.cgroup.as_deref().map(Cgroup::raw),
                )
            })
            .collect();
        let names = names::encode(true, taken_at, entries.into_iter());
        self.names.clear();
        self.dirty = Dirty::clean();
        self.since_key = 0;
        self.bytes_since_key = (out.len() + names.len()).saturating_sub(self.cols.c(EXITS).len());
        self.key = sorted.then(|| Key {
            taken_at,
            tasks: tasks.clone(),
            threads: key_threads,
            system: r.system.clone(),
            host: r.host.clone(),
            cgroups,
        });
        Encoded {
            key: true,
            names: Some(names),
            sample: out,
        }
    }

    /// A delta against the key, or `None` when there is no usable key or it would carry more
    /// than half the key's rows.
    fn delta(&self, r: &Reading, c: &mut Cols) -> Option<(Encoded, Vec<usize>)> {
        let k = self.key.as_ref()?;
        let key_rows = k.tasks.len() + k.threads.as_ref().map_or(0, |t| t.rows.len());
        let budget = key_rows / 2;
        let tasks = self.task_changes(k, &r.snapshot.tasks, budget)?;
        let kth = k.threads.as_ref().filter(|_| r.states.is_some());
        let written = tasks.rows.len() + tasks.gone.len();
        let threads = self.thread_changes(kth, r.states.as_ref(), written, budget)?;
        // Once more over everything: the loops check as rows are found, but not after the
        // key's last rows went (gone tasks at the end of the key, with no thread rows to walk
        // after them), so whether a delta was written depended on whether the readings said
        // what changed.
        if written + threads.rows.len() + threads.gone.len() > budget {
            return None;
        }
        Some(write_delta(r, c, k, kth, tasks, threads))
    }

    /// The task rows of `cur` a delta against `k` writes, the key's rows gone and the names
    /// to give; `None` past `budget` rows.
    fn task_changes(&self, k: &Key, cur: &[Task], budget: usize) -> Option<TaskChanges> {
        if let Some(d) = &self.dirty.tasks {
            match self.told_task_changes(k, cur, d, budget) {
                Told::Changes(ch) => {
                    // What the merge finds, in builds with debug assertions (the tests').
                    debug_assert_eq!(Some(&ch), self.merged_task_changes(k, cur, budget).as_ref());
                    return Some(ch);
                }
                Told::OverBudget => return None,
                Told::Unsure => {}
            }
        }
        self.merged_task_changes(k, cur, budget)
    }

    /// [`Encoder::task_changes`] from the rows the readings said changed (`d`) alone, each
    /// found by binary search in the key and the reading: a delta where little happened
    /// then costs what happened, not a walk of both tables (5-6 ms at 50,000 processes).
    /// Every row not listed is the key's; a gone row is one listed that the reading lacks,
    /// and unless the counts add up (`key + new - gone = now`) some row went unlisted:
    /// [`Told::Unsure`], and the tables are merged instead.
    fn told_task_changes(
        &self,
        k: &Key,
        cur: &[Task],
        d: &ThreadMap<()>,
        budget: usize,
    ) -> Told<TaskChanges> {
        let mut ch = TaskChanges::default();
        let mut new = 0;
        for id in d.keys() {
            let (i, j) = (row_of(&k.tasks, id), row_of(cur, id));
            match (i, j) {
                (Some(i), Some(j)) => {
                    if !same_row(&k.tasks[i], &cur[j]) {
                        ch.rows.push((j, Some(i)));
                    }
                }
                (Some(i), None) => ch.gone.push(i),
                (None, Some(j)) => {
                    ch.rows.push((j, None));
                    new += 1;
                }
                (None, None) => continue,
            }
            if let Some(j) = j {
                if known(&self.names, id, i.map(|i| &k.tasks[i]))
                    != (
                        cur[j].cmdline.as_deref(),
                        cur[j].cgroup.as_deref().map(Cgroup::raw),
                    )
                {
                    ch.new_names.push(j);
                }
            }
            if ch.rows.len() + ch.gone.len() > budget {
                return Told::OverBudget;
            }
        }
        if k.tasks.len() + new != cur.len() + ch.gone.len() {
            return Told::Unsure;
        }
        ch.rows.sort_unstable_by_key(|r| r.0);
        ch.gone.sort_unstable();
        ch.new_names.sort_unstable();
        Told::Changes(ch)
    }

    /// [`Encoder::task_changes`] by a merge of the key's rows and the reading's, in order
    /// (the rows the readings said did not change are skipped, not compared).
    fn merged_task_changes(&self, k: &Key, cur: &[Task], budget: usize) -> Option<TaskChanges> {
        let mut ch = TaskChanges::default();
        let dirty_tasks = self.dirty.tasks.as_ref();
        let (mut i, mut j) = (0, 0);
        loop {
            let in_key = match (k.tasks.get(i), cur.get(j)) {
                (None, None) => break,
                (Some(kt), Some(ct)) if kt.id == ct.id => {
                    // A row the readings did not say changed is the key's (checked in debug
                    // builds), names included.
                    if !dirty_tasks.is_none_or(|d| d.contains_key(&ct.id)) {
                        debug_assert!(same_row(kt, ct), "{:?} changed unsaid", ct.id);
                        i += 1;
                        j += 1;
                        continue;
                    }
                    if !same_row(kt, ct) {
                        ch.rows.push((j, Some(i)));
                    }
                    i += 1;
                    Some(kt)
                }
                (Some(kt), Some(ct)) if kt.id > ct.id => {
                    ch.rows.push((j, None));
                    None
                }
                (None, Some(_)) => {
                    ch.rows.push((j, None));
                    None
                }
                (Some(_), _) => {
                    ch.gone.push(i);
                    i += 1;
                    continue;
                }
            };
            let Some(ct) = cur.get(j) else { break };
            if known(&self.names, &ct.id, in_key)
                != (ct.cmdline.as_deref(), ct.cgroup.as_deref().map(Cgroup::raw))
            {
                ch.new_names.push(j);
            }
            j += 1;
            if ch.rows.len() + ch.gone.len() > budget {
                return None;
            }
        }
        Some(ch)
    }

    /// The thread rows a delta writes and the key's threads gone (`kth`: the key's threads,
    /// when both it and the reading have a sample); `None` when they and the `written` task
    /// rows pass `budget`.
    fn thread_changes<'a>(
        &self,
        kth: Option<&KeyThreads>,
        states: Option<&'a Sample>,
        written: usize,
        budget: usize,
    ) -> Option<ThreadChanges<'a>> {
        match (kth, states, &self.dirty.threads) {
            (Some(kt), Some(s), Some(d)) => match told_thread_changes(kt, s, d, written, budget) {
                Told::Changes(ch) => {
                    // What comparing every row finds, in builds with debug assertions.
                    #[cfg(debug_assertions)]
                    {
                        let rows = |c: &ThreadChanges| -> Vec<(TaskId, Option<usize>)> {
                            c.rows.iter().map(|r| (*r.0, r.2)).collect()
                        };
                        let all = compared_thread_changes(kt, s, written, budget)
                            .expect("within the budget");
                        debug_assert_eq!((rows(&ch), &ch.gone), (rows(&all), &all.gone));
                    }
                    Some(ch)
                }
                Told::OverBudget => None,
                Told::Unsure => compared_thread_changes(kt, s, written, budget),
            },
            (Some(kt), Some(s), None) => compared_thread_changes(kt, s, written, budget),
            (None, Some(s), _) => Some(ThreadChanges {
                rows: sorted_threads(s)
                    .into_iter()
                    .map(|(id, t)| (id, t, None))
                    .collect(),
                gone: Vec::new(),
            }),
            (_, None, _) => Some(ThreadChanges::default()),
        }
    }
}

/// The task rows a delta writes: (current index, key index) per row, the key's indices gone,
/// the current indices whose names are given.
#[derive(Debug, Default, PartialEq, Eq)]
struct TaskChanges {
    rows: Vec<(usize, Option<usize>)>,
    gone: Vec<usize>,
    new_names: Vec<usize>,
}

/// The thread rows a delta writes (identity, totals, key index) and the key's indices gone.
#[derive(Debug, Default)]
struct ThreadChanges<'a> {
    rows: Vec<(&'a TaskId, &'a ThreadTotals, Option<usize>)>,
    gone: Vec<usize>,
}

/// What a delta's rows are, from the rows the readings said changed alone.
enum Told<T> {
    Changes(T),
    /// More rows than the delta's budget: a key instead.
    OverBudget,
    /// A row went unlisted (the counts do not add up): compare every row instead.
    Unsure,
}

/// [`Encoder::thread_changes`] told what changed since the key (`d`): only the listed
/// threads are looked up in the key (binary search) and the sample, and compared; the
/// others are the key's. As for the tasks ([`Encoder::told_task_changes`]), the counts must
/// add up, or some thread went unlisted.
fn told_thread_changes<'a>(
    kt: &KeyThreads,
    s: &'a Sample,
    d: &ThreadMap<()>,
    written: usize,
    budget: usize,
) -> Told<ThreadChanges<'a>> {
    let mut ch = ThreadChanges::default();
    let mut new = 0;
    for id in d.keys() {
        let i = kt.rows.binary_search_by(|r| r.0.cmp(id)).ok();
        match (i, s.threads.get_key_value(id)) {
            (Some(i), Some((id, t))) => {
                if !unchanged(&kt.rows[i].1, t) {
                    ch.rows.push((id, t, Some(i)));
                }
            }
            (Some(i), None) => ch.gone.push(i),
            (None, Some((id, t))) => {
                ch.rows.push((id, t, None));
                new += 1;
            }
            (None, None) => continue,
        }
        if written + ch.rows.len() + ch.gone.len() > budget {
            return Told::OverBudget;
        }
    }
    if kt.rows.len() + new != s.threads.len() + ch.gone.len() {
        return Told::Unsure;
    }
    ch.rows.sort_unstable_by_key(|r| *r.0);
    ch.gone.sort_unstable();
    Told::Changes(ch)
}

/// [`Encoder::thread_changes`] not told what changed: every thread of `s` is compared with
/// the key's row of the same identity, both in order.
fn compared_thread_changes<'a>(
    kt: &KeyThreads,
    s: &'a Sample,
    written: usize,
    budget: usize,
) -> Option<ThreadChanges<'a>> {
    let cur = sorted_threads(s);
    let mut ch = ThreadChanges::default();
    let (mut i, mut j) = (0, 0);
    loop {
        match (kt.rows.get(i), cur.get(j)) {
            (None, None) => break,
            (Some(a), Some(b)) if a.0 == *b.0 => {
                if !unchanged(&a.1, b.1) {
                    ch.rows.push((b.0, b.1, Some(i)));
                }
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 > *b.0 => {
                ch.rows.push((b.0, b.1, None));
                j += 1;
            }
            (None, Some(b)) => {
                ch.rows.push((b.0, b.1, None));
                j += 1;
            }
            (Some(_), _) => {
                ch.gone.push(i);
                i += 1;
            }
        }
        if written + ch.rows.len() + ch.gone.len() > budget {
            return None;
        }
    }
    Some(ch)
}

/// Writes a delta of `r` against the key `k` (`kth`: its threads, when the delta's thread
/// rows refer to them) and its names payload; returns it with the current indices of the
/// tasks whose names it gives.
fn write_delta(
    r: &Reading,
    c: &mut Cols,
    k: &Key,
    kth: Option<&KeyThreads>,
    tasks: TaskChanges,
    threads: ThreadChanges<'_>,
) -> (Encoded, Vec<usize>) {
    let cur = &r.snapshot.tasks;
    let mut out = Vec::new();
    put_header(&mut out, FrameType::DeltaSample);
    put_head(c, r, Some(k), tasks.rows.len(), tasks.gone.len());
    let mut prev: Option<&Task> = None;
    let mut next = 0;
    for &(j, ki) in &tasks.rows {
        let t = &cur[j];
        put_key_idx(c.c(T_KEY_IDX), ki, &mut next);
        if ki.is_none() {
            put_id(
                c,
                TASK_ID_COLS,
                t.id,
                prev.map_or(TaskId::default(), |p| p.id),
            );
        }
        put_task(c, t, ki.map(|i| &k.tasks[i]).or(prev));
        prev = Some(t);
    }
    put_gone(c.c(T_GONE), &tasks.gone);
    match &r.states {
        None => c.c(META).push(0),
        Some(s) => put_thread_rows(c, s, kth, &threads),
    }
    put_exits(c.c(EXITS), r);
    put_cgroups_delta(c.c(CGROUPS), r.cgroups.as_ref(), k.cgroups.as_deref());
    c.finish(&mut out);
    let names = (!tasks.new_names.is_empty()).then(|| {
        let entries: Vec<_> = tasks
            .new_names
            .iter()
            .map(|&j| {
                let t = &cur[j];
                (
                    t.id,
                    t.cmdline.as_deref(),
                    t.cgroup.as_deref().map(Cgroup::raw),
                )
            })
            .collect();
        names::encode(false, k.taken_at, entries.into_iter())
    });
    let e = Encoded {
        key: false,
        names,
        sample: out,
    };
    (e, tasks.new_names)
}

/// A delta's thread-state sample: its head and rows, against the key's rows (`kth`) or the
/// row before.
fn put_thread_rows(
    c: &mut Cols,
    s: &Sample,
    kth: Option<&KeyThreads>,
    threads: &ThreadChanges<'_>,
) {
    c.c(META).push(if kth.is_some() { 2 } else { 1 });
    put_states_head(c, s, kth, threads.rows.len(), threads.gone.len());
    let mut prev: Option<(&TaskId, &ThreadTotals)> = None;
    let mut next = 0;
    for &(id, t, ki) in &threads.rows {
        if kth.is_some() {
            put_key_idx(c.c(H_KEY_IDX), ki, &mut next);
        }
        if ki.is_none() || kth.is_none() {
            put_thread_id(c, *id, prev.map_or(TaskId::default(), |p| *p.0));
        }
        let rf = match (ki, kth) {
            (Some(i), Some(kt)) => Some(&kt.rows[i].1),
            _ => prev.map(|p| p.1),
        };
        put_thread(c, *id, t, rf, s.at_ns);
        prev = Some((id, t));
    }
    put_gone(c.c(H_GONE), &threads.gone);
}
