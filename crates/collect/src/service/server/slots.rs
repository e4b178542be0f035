//! Who holds the query socket's connections, and how fairly: admission by the limits (clients
//! at once, in all and per uid), each uid's request rate (a token bucket), and the registry of
//! admitted connections with what each is doing.
//!
//! The slots are shared between users: when every slot is taken, a uid holding fewer than its
//! fair share (the slots over the number of uids holding one, the newcomer's counted) is let
//! in in place of a connection of the uid holding the most, when that uid holds more than its
//! share: one that never sent its request before one that did, then the oldest
//! ([`super::displace`], as `tasksnap serve`'s HTTP side chooses). So users holding every slot with
//! silent connections (reconnecting as each request deadline ends them) cannot keep another
//! user out; more users than slots still can, and are told `Busy`.
//!
//! A connection displaced, or cut because its client reads nothing while the memory budget is
//! needed ([`Slots::cut_stalled`]), is shut down (`shutdown(2)`): whatever its thread waits on
//! the socket for ends at once, and it leaves.

use std::collections::HashMap;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::displace::{victim, Candidate};

/// Clients served at once; more are answered `Busy`.
pub const MAX_CLIENTS: usize = 32;
/// Clients of one uid served at once.
pub const MAX_CLIENTS_PER_UID: usize = 8;
/// Requests a uid may make per second, sustained; [`BURST`] at once.
pub const RATE_PER_S: f64 = 50.0;
/// See [`RATE_PER_S`].
pub const BURST: f64 = 100.0;

/// What a connection is doing, as its thread says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// Reading its request.
    Request = 0,
    /// Waiting for a pass.
    Waiting = 1,
    /// Sending its answer.
    Answering = 2,
}

/// A connection's step, and since when its current write has been blocked, shared between
/// its thread and the registry.
#[derive(Debug)]
pub struct Stage {
    step: AtomicU8,
    /// ms since the registry's epoch when the write under way began; 0: not writing.
    writing_since_ms: AtomicU64,
    epoch: Instant,
    /// Shut down by the registry (displaced or cut).
    ended: AtomicBool,
}

impl Stage {
    /// The connection is now at `step`.
    pub fn set(&self, step: Step) {
        self.step.store(step as u8, Ordering::Relaxed);
    }

    fn step(&self) -> Step {
        match self.step.load(Ordering::Relaxed) {
            0 => Step::Request,
            1 => Step::Waiting,
            _ => Step::Answering,
        }
    }

    /// A write begins (`true`) or ended (`false`).
    pub fn writing(&self, on: bool) {
        let ms = if on {
            (self.epoch.elapsed().as_millis() as u64).max(1)
        } else {
            0
        };
        self.writing_since_ms.store(ms, Ordering::Relaxed);
    }

    /// How long the write under way has been blocked.
    fn blocked_for(&self) -> Duration {
        match self.writing_since_ms.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            since => Duration::from_millis(
                (self.epoch.elapsed().as_millis() as u64).saturating_sub(since),
            ),
        }
    }

    /// Whether the registry shut it down (its thread should not go on).
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }
}

#[derive(Debug)]
struct Conn {
    uid: u32,
    /// A second descriptor of its socket, to shut it down from here.
    stream: UnixStream,
    since: Instant,
    stage: Arc<Stage>,
}

/// The admitted connections and each uid's request bucket.
#[derive(Debug)]
pub struct Slots {
    inner: Mutex<Inner>,
    epoch: Instant,
    /// Connections let go for another uid.
    pub displaced: AtomicU64,
    /// Connections cut because their client read nothing while memory was needed.
    pub cut: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    conns: HashMap<u64, Conn>,
    per_uid: HashMap<u32, usize>,
    buckets: HashMap<u32, (f64, Instant)>,
}

/// What to do with a newcomer of a uid holding `holds`, when `total` are held, `users` uids
/// hold some and the uid holding the most holds `most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admit {
    Yes,
    /// In place of a connection of the uid holding the most.
    Displacing,
    No,
}

fn decide(holds: usize, total: usize, users: usize, most: usize) -> Admit {
    if holds >= MAX_CLIENTS_PER_UID {
        return Admit::No;
    }
    if total < MAX_CLIENTS {
        return Admit::Yes;
    }
    let users = users + usize::from(holds == 0);
    let fair = (MAX_CLIENTS / users.max(1)).max(1);
    if holds < fair && most > fair {
        Admit::Displacing
    } else {
        Admit::No
    }
}

/// An admitted connection's place, given back when dropped.
#[derive(Debug)]
pub struct Admitted {
    slots: Arc<Slots>,
    id: u64,
    /// What it is doing.
    pub stage: Arc<Stage>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.slots.leave(self.id);
    }
}

impl Slots {
    /// No connections yet.
    pub fn new() -> Arc<Slots> {
        Arc::new(Slots {
            inner: Mutex::new(Inner::default()),
            epoch: Instant::now(),
            displaced: AtomicU64::new(0),
            cut: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding it: the maps are whole if something did elsewhere.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits `stream`, a client of `uid` (displacing another uid's connection when fairness
    /// says so), or `None` when a limit is reached.
    pub fn admit(self: &Arc<Self>, uid: u32, stream: &UnixStream) -> Option<Admitted> {
        let dup = stream.try_clone().ok()?;
        let mut inner = self.lock();
        let holds = inner.per_uid.get(&uid).copied().unwrap_or(0);
        let most = inner.per_uid.values().copied().max().unwrap_or(0);
        match decide(holds, inner.conns.len(), inner.per_uid.len(), most) {
            Admit::No => return None,
            Admit::Yes => {}
            Admit::Displacing => {
                let cands: Vec<Candidate<u32>> = inner
                    .conns
                    .iter()
                    .map(|(&id, c)| Candidate {
                        id,
                        peer: c.uid,
                        requests: u64::from(c.stage.step() != Step::Request),
                        since: c.since,
                    })
                    .collect();
                let gone = victim(&cands)?;
                Inner::remove(&mut inner, gone);
                self.displaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let stage = Arc::new(Stage {
            step: AtomicU8::new(Step::Request as u8),
            writing_since_ms: AtomicU64::new(0),
            epoch: self.epoch,
            ended: AtomicBool::new(false),
        });
        inner.conns.insert(
            id,
            Conn {
                uid,
                stream: dup,
                since: Instant::now(),
                stage: stage.clone(),
            },
        );
        *inner.per_uid.entry(uid).or_default() += 1;
        Some(Admitted {
            slots: self.clone(),
            id,
            stage,
        })
    }

    fn leave(&self, id: u64) {
        let mut inner = self.lock();
        if let Some(c) = inner.conns.remove(&id) {
            Inner::forget(&mut inner, c.uid);
        }
    }

    /// Connections admitted now.
    pub fn active(&self) -> usize {
        self.lock().conns.len()
    }

    /// Shuts down every connection whose write has been blocked for `grace` or more (a
    /// client that reads nothing of its answer), so that what its answer holds goes back to
    /// the memory budget; how many.
    pub fn cut_stalled(&self, grace: Duration) -> usize {
        let mut inner = self.lock();
        let stalled: Vec<u64> = inner
            .conns
            .iter()
            .filter(|(_, c)| c.stage.step() == Step::Answering && c.stage.blocked_for() >= grace)
            .map(|(&id, _)| id)
            .collect();
        for &id in &stalled {
            Inner::remove(&mut inner, id);
        }
        self.cut.fetch_add(stalled.len() as u64, Ordering::Relaxed);
        stalled.len()
    }

    /// Takes a request token of `uid`'s bucket, or `false` when it is empty.
    pub fn take_token(&self, uid: u32) -> bool {
        let mut inner = self.lock();
        let now = Instant::now();
        if inner.buckets.len() > 4096 {
            // Full buckets carry no state: forget them rather than grow with every uid seen.
            inner.buckets.retain(|_, (t, at)| {
                *t + now.duration_since(*at).as_secs_f64() * RATE_PER_S < BURST
            });
        }
        let (tokens, at) = inner.buckets.entry(uid).or_insert((BURST, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * RATE_PER_S).min(BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Inner {
    /// Takes connection `id` out of the count and shuts its socket down.
    fn remove(&mut self, id: u64) {
        if let Some(c) = self.conns.remove(&id) {
            c.stage.ended.store(true, Ordering::Relaxed);
            let _ = c.stream.shutdown(Shutdown::Both);
            Inner::forget(self, c.uid);
        }
    }

    fn forget(&mut self, uid: u32) {
        if let Some(n) = self.per_uid.get_mut(&uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_uid.remove(&uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::service::server::slots::*;

    #[test]
    fn a_uid_under_its_share_displaces_the_uid_holding_the_most() {
        // Room: anyone under the per-uid cap.
        assert_eq!(decide(0, 5, 2, 4), Admit::Yes);
        assert_eq!(decide(MAX_CLIENTS_PER_UID, 5, 2, 8), Admit::No);
        // Four users hold 8 each: a fifth gets in, up to its share of 32 / 5 = 6.
        assert_eq!(decide(0, 32, 4, 8), Admit::Displacing);
        assert_eq!(decide(5, 32, 5, 7), Admit::Displacing);
        assert_eq!(decide(6, 32, 5, 7), Admit::No);
        // The holders themselves do not take slots from each other at their share.
        assert_eq!(decide(6, 32, 5, 6), Admit::No);
        assert_eq!(decide(7, 32, 4, 8), Admit::No);
        // 32 users with one each: a 33rd is turned away (nobody is over a share of 1).
        assert_eq!(decide(0, 32, 32, 1), Admit::No);
    }

    fn pair() -> (UnixStream, UnixStream) {
        UnixStream::pair().expect("a socket pair")
    }

    #[test]
    fn four_users_holding_every_slot_make_room_for_a_fifth() {
        let slots = Slots::new();
        let mut held = Vec::new();
        for uid in 1..=4 {
            for _ in 0..MAX_CLIENTS_PER_UID {
                let (ours, theirs) = pair();
                let a = slots.admit(uid, &ours).expect("room");
                held.push((uid, a, ours, theirs));
            }
        }
        // One of uid 1's sent its request: the silent ones go first.
        held[0].1.stage.set(Step::Waiting);
        assert_eq!(slots.active(), MAX_CLIENTS);
        let (fifth, _peer) = pair();
        assert!(slots.admit(1, &fifth).is_none(), "a holder took a ninth");
        let mut mine = Vec::new();
        for _ in 0..6 {
            let (s, p) = pair();
            mine.push((slots.admit(5, &s).expect("the fifth user let in"), s, p));
        }
        assert_eq!(slots.active(), MAX_CLIENTS);
        let (s, _p) = pair();
        assert!(slots.admit(5, &s).is_none(), "past its share of 6");
        assert_eq!(slots.displaced.load(Ordering::Relaxed), 6);
        // Those displaced were shut down and told so; the one that had asked was kept.
        let ended: Vec<u32> = held
            .iter()
            .filter(|h| h.1.stage.ended())
            .map(|h| h.0)
            .collect();
        assert_eq!(ended.len(), 6);
        assert!(!held[0].1.stage.ended());
        let mut buf = [0u8; 1];
        for (_, a, _, theirs) in &held {
            if a.stage.ended() {
                assert_eq!(std::io::Read::read(&mut &*theirs, &mut buf).ok(), Some(0));
            }
        }
        // Dropping a displaced one's place does not count it twice.
        held.clear();
        assert_eq!(slots.active(), 6);
        mine.clear();
        assert_eq!(slots.active(), 0);
    }

    #[test]
    fn a_writer_blocked_past_its_grace_is_cut_and_no_other() {
        let slots = Slots::new();
        let (a, _pa) = pair();
        let (b, _pb) = pair();
        let (c, _pc) = pair();
        let sa = slots.admit(1, &a).expect("room");
        let sb = slots.admit(2, &b).expect("room");
        let sc = slots.admit(3, &c).expect("room");
        sa.stage.set(Step::Answering);
        sa.stage.writing(true);
        sb.stage.set(Step::Answering);
        sc.stage.set(Step::Waiting);
        std::thread::sleep(Duration::from_millis(30));
        sb.stage.writing(true);
        assert_eq!(slots.cut_stalled(Duration::from_millis(20)), 1);
        assert!(sa.stage.ended() && !sb.stage.ended() && !sc.stage.ended());
        assert_eq!(slots.active(), 2);
    }
}
