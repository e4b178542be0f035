//! Thread-totals rows ([`ThreadTotals`]) as columns, the exact comparison the model type does
//! not derive, and the rule by which a delta omits a thread that did not switch since the key
//! ([`extend`]).

use tasksnap_model::states::{State, ThreadTotals, NSTATES};
use tasksnap_model::TaskId;

use crate::tasks::{get_blob, get_id, put_blob, put_id};
use crate::wire::{put_d, put_i, put_u, Cols, ColsReader};
use crate::HistoryError;

pub(crate) const H_TGID: usize = 20;
const H_TID: usize = 21;
const H_START: usize = 22;
const H_FLAGS: usize = 23;
const H_COMM: usize = 24;
const H_STATE_NS: usize = 25;
const H_SAMPLES: usize = 26;
const H_REASONS: usize = 27;
const H_SEEN: usize = 28;
const H_EXTRA: usize = 29;
/// Indices (into the key's sorted threads) of the key's threads that are gone.
pub(crate) const H_GONE: usize = 30;
/// In a delta, which key row each row replaces ([`crate::wire::put_key_idx`]).
pub(crate) const H_KEY_IDX: usize = 32;
/// The throttled state (format minor 3): per row its ns, its samples and whether it is the
/// current state. Kept apart from [`H_STATE_NS`], [`H_SAMPLES`] and [`H_EXTRA`], which hold
/// the six states a store before minor 3 knows, so that a reader of minor 2 reads a newer
/// store as a build without the state measured it (throttled time as runnable: see
/// `legacy_at`).
pub(crate) const H_THROTTLED: usize = 35;

/// The states of [`H_STATE_NS`] and [`H_SAMPLES`]: those before [`State::Throttled`].
const LEGACY_STATES: usize = State::Throttled as usize;

pub(crate) const THREAD_ID_COLS: [usize; 3] = [H_TGID, H_TID, H_START];

const F_KERNEL: u64 = 1;
const F_EXITED: u64 = 1 << 1;
const F_CURRENT: u64 = 1 << 2;
const F_WAIT_REASON: u64 = 1 << 3;
const F_OTHER_ID: u64 = 1 << 4;

/// Every field equal (`ThreadTotals` does not derive `PartialEq`).
pub fn same_thread(a: &ThreadTotals, b: &ThreadTotals) -> bool {
    let ThreadTotals {
        id,
        comm,
        comm_bytes,
        kernel_thread,
        state_ns,
        samples,
        current,
        reasons,
        wait_reason,
        seen_at_ns,
        exited,
    } = a;
    *id == b.id
        && *comm == b.comm
        && *comm_bytes == b.comm_bytes
        && *kernel_thread == b.kernel_thread
        && *state_ns == b.state_ns
        && *samples == b.samples
        && *current == b.current
        && *reasons == b.reasons
        && *wait_reason == b.wait_reason
        && *seen_at_ns == b.seen_at_ns
        && *exited == b.exited
}

/// The key's row `k` grown by `by` ns as a thread that did not switch grows: `seen_at_ns`,
/// the current state's ns and, when `wait_reason` is `Some(r)`, the first reasons entry
/// `(current, r)` all grow by `by` (wrapping: the decoder meets hostile numbers). `None` when
/// the row has a wait reason but no such entry (the rule does not apply).
pub fn extend(k: &ThreadTotals, by: u64) -> Option<ThreadTotals> {
    let mut t = k.clone();
    t.seen_at_ns = t.seen_at_ns.wrapping_add(by);
    if let Some(s) = t.current {
        let i = s.index();
        t.state_ns[i] = t.state_ns[i].wrapping_add(by);
        if let Some(r) = t.wait_reason {
            let e = t.reasons.iter_mut().find(|e| e.0 == s && e.1 == r)?;
            e.2 = e.2.wrapping_add(by);
        }
    } else if t.wait_reason.is_some() {
        return None;
    }
    Some(t)
}

/// True when `t` is the key row `k` grown by its own elapsed time (`t.seen_at_ns -
/// k.seen_at_ns`) exactly: the thread did not switch, so a delta may omit it. The same test
/// as `extend(k, g) == t`, without building the extended row.
pub(crate) fn unchanged(k: &ThreadTotals, t: &ThreadTotals) -> bool {
    let Some(g) = t.seen_at_ns.checked_sub(k.seen_at_ns) else {
        return false;
    };
    let ThreadTotals {
        id,
        comm,
        // Not recorded: a recording keeps the comm's text (and the task's exact comm in its
        // snapshot).
        comm_bytes: _,
        kernel_thread,
        state_ns,
        samples,
        current,
        reasons,
        wait_reason,
        seen_at_ns: _,
        exited,
    } = t;
    if *id != k.id
        || *kernel_thread != k.kernel_thread
        || *exited != k.exited
        || *current != k.current
        || *wait_reason != k.wait_reason
        || *samples != k.samples
        || *comm != k.comm
        || reasons.len() != k.reasons.len()
    {
        return false;
    }
    let cur = current.map(State::index);
    for (i, (&v, &kv)) in state_ns.iter().zip(&k.state_ns).enumerate() {
        let want = if cur == Some(i) {
            kv.wrapping_add(g)
        } else {
            kv
        };
        if v != want {
            return false;
        }
    }
    let grown = match (current, wait_reason) {
        (_, None) => None,
        (None, Some(_)) => return false,
        (Some(s), Some(r)) => match k.reasons.iter().position(|e| e.0 == *s && e.1 == *r) {
            Some(p) => Some(p),
            None => return false,
        },
    };
    reasons
        .iter()
        .zip(&k.reasons)
        .enumerate()
        .all(|(i, (a, b))| {
            a.0 == b.0
                && a.1 == b.1
                && a.2
                    == if grown == Some(i) {
                        b.2.wrapping_add(g)
                    } else {
                        b.2
                    }
        })
}

/// Writes a row (not its identity, unless the value's id differs from its map key `key`)
/// against the reference `r`; `at_ns` is the sample's time (`seen_at_ns` is written relative
/// to it).
pub(crate) fn put_thread(
    c: &mut Cols,
    key: TaskId,
    t: &ThreadTotals,
    r: Option<&ThreadTotals>,
    at_ns: u64,
) {
    let ThreadTotals {
        id,
        comm,
        // Not recorded: older readers take a thread's comm as UTF-8 text only.
        comm_bytes: _,
        kernel_thread,
        state_ns,
        samples,
        current,
        reasons,
        wait_reason,
        seen_at_ns,
        exited,
    } = t;
    let mut f = 0;
    if *kernel_thread {
        f |= F_KERNEL;
    }
    if *exited {
        f |= F_EXITED;
    }
    if current.is_some() {
        f |= F_CURRENT;
    }
    if wait_reason.is_some() {
        f |= F_WAIT_REASON;
    }
    if *id != key {
        f |= F_OTHER_ID;
    }
    put_u(c.c(H_FLAGS), f);
    put_blob(c.c(H_COMM), comm.as_bytes(), r.map(|r| r.comm.as_bytes()));
    let b = c.c(H_STATE_NS);
    for i in 0..LEGACY_STATES {
        put_d(
            b,
            legacy_at(state_ns, i),
            r.map_or(0, |r| legacy_at(&r.state_ns, i)),
        );
    }
    let b = c.c(H_SAMPLES);
    for i in 0..LEGACY_STATES {
        put_d(
            b,
            legacy_at(samples, i),
            r.map_or(0, |r| legacy_at(&r.samples, i)),
        );
    }
    let thr = State::Throttled.index();
    let b = c.c(H_THROTTLED);
    put_d(b, state_ns[thr], r.map_or(0, |r| r.state_ns[thr]));
    put_d(b, samples[thr], r.map_or(0, |r| r.samples[thr]));
    put_u(b, u64::from(*current == Some(State::Throttled)));
    let b = c.c(H_REASONS);
    put_u(b, reasons.len() as u64);
    for (i, &(s, id, ns)) in reasons.iter().enumerate() {
        let re = r.and_then(|r| r.reasons.get(i));
        put_u(b, legacy(s).index() as u64);
        put_d(b, u64::from(id), u64::from(re.map_or(0, |e| e.1)));
        put_d(b, ns, re.map_or(0, |e| e.2));
    }
    put_d(c.c(H_SEEN), *seen_at_ns, at_ns);
    let b = c.c(H_EXTRA);
    if let Some(s) = current {
        put_u(b, legacy(*s).index() as u64);
    }
    if let Some(w) = wait_reason {
        put_u(b, u64::from(*w));
    }
    if *id != key {
        put_i(b, i64::from(id.tgid));
        put_i(b, i64::from(id.tid));
        put_u(b, id.start_time_ns);
    }
}

/// Per-state figure `i` as the columns a store before minor 3 knows hold it: runnable there
/// is every runnable wait, throttled included, as a build without the throttled state
/// measured it (wrapping, so that the reader takes the throttled part off exactly).
fn legacy_at(v: &[u64; NSTATES], i: usize) -> u64 {
    if i == State::Runnable.index() {
        v[i].wrapping_add(v[State::Throttled.index()])
    } else {
        v[i]
    }
}

/// A state as the columns a store before minor 3 knows hold it: throttled is runnable there
/// (no off-CPU reason is ever kept for it; the current state's is in [`H_THROTTLED`]).
fn legacy(s: State) -> State {
    match s {
        State::Throttled => State::Runnable,
        s => s,
    }
}

fn state(i: u64) -> Result<State, HistoryError> {
    usize::try_from(i)
        .ok()
        .and_then(|i| State::ALL[..LEGACY_STATES].get(i).copied())
        .ok_or(HistoryError::Corrupt("unknown thread state"))
}

/// Inverse of [`put_thread`].
pub(crate) fn get_thread(
    c: &mut ColsReader<'_>,
    key: TaskId,
    r: Option<&ThreadTotals>,
    at_ns: u64,
) -> Result<ThreadTotals, HistoryError> {
    let f = c.c(H_FLAGS).u()?;
    if f >= F_OTHER_ID << 1 {
        return Err(HistoryError::Corrupt("unknown thread flags"));
    }
    let comm = get_blob(c.c(H_COMM), r.map(|r| r.comm.as_bytes()), |b| {
        std::str::from_utf8(b).map(str::to_owned)
    })?
    .map_err(|_| HistoryError::Corrupt("thread comm is not UTF-8"))?;
    let mut state_ns = [0u64; NSTATES];
    let b = c.c(H_STATE_NS);
    for (i, x) in state_ns[..LEGACY_STATES].iter_mut().enumerate() {
        *x = b.d(r.map_or(0, |r| legacy_at(&r.state_ns, i)))?;
    }
    let mut samples = [0u64; NSTATES];
    let b = c.c(H_SAMPLES);
    for (i, x) in samples[..LEGACY_STATES].iter_mut().enumerate() {
        *x = b.d(r.map_or(0, |r| legacy_at(&r.samples, i)))?;
    }
    // A store before minor 3 has no such column: nothing was throttled in it.
    let mut throttled_now = false;
    if c.left(H_THROTTLED) > 0 {
        let thr = State::Throttled.index();
        let b = c.c(H_THROTTLED);
        state_ns[thr] = b.d(r.map_or(0, |r| r.state_ns[thr]))?;
        samples[thr] = b.d(r.map_or(0, |r| r.samples[thr]))?;
        throttled_now = match b.u()? {
            0 => false,
            1 => true,
            _ => return Err(HistoryError::Corrupt("unknown throttled flag")),
        };
    }
    let run = State::Runnable.index();
    state_ns[run] = state_ns[run].wrapping_sub(state_ns[State::Throttled.index()]);
    samples[run] = samples[run].wrapping_sub(samples[State::Throttled.index()]);
    let b = c.c(H_REASONS);
    let n = b.count(b.left(), 3)?;
    let mut reasons = Vec::with_capacity(n);
    for i in 0..n {
        let re = r.and_then(|r| r.reasons.get(i));
        let s = state(b.u()?)?;
        let id = b.d32(re.map_or(0, |e| e.1))?;
        let ns = b.d(re.map_or(0, |e| e.2))?;
        reasons.push((s, id, ns));
    }
    let seen_at_ns = c.c(H_SEEN).d(at_ns)?;
    let b = c.c(H_EXTRA);
    let current = if f & F_CURRENT != 0 {
        let s = state(b.u()?)?;
        Some(if throttled_now && s == State::Runnable {
            State::Throttled
        } else {
            s
        })
    } else {
        None
    };
    let wait_reason = if f & F_WAIT_REASON != 0 {
        Some(b.u32()?)
    } else {
        None
    };
    let id = if f & F_OTHER_ID != 0 {
        let tgid = b.di32(0)?;
        let tid = b.di32(0)?;
        TaskId {
            tgid,
            tid,
            start_time_ns: b.u()?,
        }
    } else {
        key
    };
    Ok(ThreadTotals {
        id,
        comm: comm.into(),
        comm_bytes: None,
        kernel_thread: f & F_KERNEL != 0,
        state_ns,
        samples,
        current,
        reasons,
        wait_reason,
        seen_at_ns,
        exited: f & F_EXITED != 0,
    })
}

/// Writes a thread's map key.
pub(crate) fn put_thread_id(c: &mut Cols, id: TaskId, prev: TaskId) {
    put_id(c, THREAD_ID_COLS, id, prev);
}

/// Reads a thread's map key.
pub(crate) fn get_thread_id(c: &mut ColsReader<'_>, prev: TaskId) -> Result<TaskId, HistoryError> {
    get_id(c, THREAD_ID_COLS, prev)
}
