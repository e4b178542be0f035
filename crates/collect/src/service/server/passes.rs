//! The query service's pass thread and the requests waiting for it: which request is answered
//! next (each uid in turn, so that one user's stream of distinct queries delays another's by
//! one pass at most; identical requests share the pass), which passes are kept for a live
//! view's next request (a few, for a while), and all of it inside the memory budget.
//!
//! A pass is taken only when the budget has room for what the last whole pass of its kind
//! held (learned from the passes taken: the rows, their command lines, their environments);
//! to make room the kept passes are let go first, then the connections stalled on a client
//! that reads nothing are cut; a request still without room is told `Busy` and reads /proc.
//! The pass is then charged what it holds, for as long as anything (a kept entry, a
//! connection sending it) holds it. The passes take at most [`PASS_SHARE`] of the budget: the
//! rest is the answers' (each connection's plan and the chunk it sends), so that connections
//! holding passes are never kept from sending them.
//!
//! When nothing is waiting and nobody is connected, passes kept past [`KEPT_FOR`] are let go
//! and, after a burst, the heap is given back ([`memory::give_back`]).

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tasksnap_model::Group;

use tasksnap_model::{Query, Selector, Snapshot, Task};

use super::memory::{self, Charge};
use super::State;
use crate::caps;
use crate::host::Host;
use crate::service::answer::Pass;
use crate::service::peer;

/// Requests waiting for a pass at most; beyond, `Busy` (a queue of distinct expensive
/// queries would keep every caller past its deadline). A uid may hold its share of them:
/// this over the uids waiting, the newcomer's counted.
pub const MAX_WAITING: usize = 16;
/// Queries whose last pass is kept after it is answered, for clients that hold it to be sent
/// only what changed (a live view's next refresh).
const KEPT_PASSES: usize = 4;
/// How long a kept pass waits for its query's next request: a live view refreshes every few
/// seconds; past this its next request gets a whole answer.
pub const KEPT_FOR: Duration = Duration::from_secs(10);
/// The share of the budget passes may take (in eighths); the rest is kept for answers.
pub const PASS_SHARE: usize = 7;
/// How long the pass thread waits for memory to be given back (by connections it cut)
/// before it turns a request away.
const ROOM_WAIT: Duration = Duration::from_millis(300);
/// A connection whose write has been blocked this long, its client reading nothing, is cut
/// when its memory is needed.
pub const STALL_GRACE: Duration = Duration::from_secs(1);
/// Bytes given back since the last trim that make an idle service trim its heap.
const TRIM_AFTER_BYTES: u64 = 8 << 20;
/// How often the pass thread keeps house (kept passes expired, the heap trimmed when idle)
/// while nothing waits.
const HOUSEKEEPING: Duration = Duration::from_secs(1);

/// A pass and its charge, shared by the connections answered from it.
#[derive(Debug)]
pub struct Charged {
    /// The pass.
    pub pass: Pass,
    _charge: Charge,
}

/// Why a request got no pass.
#[derive(Debug, Clone)]
pub enum NoPass {
    /// The budget has no room for it now: the caller is told `Busy`.
    Memory,
    /// The pass failed, and why.
    Failed(String),
}

/// A pass for a request, and the one its `since` names when still kept.
pub type Answer = Result<(Arc<Charged>, Option<Arc<Charged>>), NoPass>;

/// A request waiting for a pass.
#[derive(Debug)]
pub struct Job {
    /// Who connected (the kernel's word).
    pub uid: u32,
    /// The query to read.
    pub query: Query,
    /// The generation of the answer the client holds.
    pub since: Option<u64>,
    /// Who asks: a `since` is honoured only for a caller the kept pass answered, as it was.
    pub caller: peer::Caller,
    /// Where its pass goes.
    pub reply: mpsc::Sender<Answer>,
}

/// Whether a job of `uid` may wait beside `jobs`: the queue's room, and the uid's share of it.
pub fn may_wait(jobs: &[Job], uid: u32) -> bool {
    if jobs.len() >= MAX_WAITING {
        return false;
    }
    let mut per_uid: HashMap<u32, usize> = HashMap::new();
    for j in jobs {
        *per_uid.entry(j.uid).or_default() += 1;
    }
    let mine = per_uid.get(&uid).copied().unwrap_or(0);
    let users = per_uid.len() + usize::from(mine == 0);
    mine < (MAX_WAITING / users.max(1)).max(1)
}

/// The index of the job to answer next: of the uid served longest ago (never, first), the
/// one waiting longest.
fn next_job(jobs: &[Job], served: &HashMap<u32, u64>) -> Option<usize> {
    (0..jobs.len()).min_by_key(|&i| (served.get(&jobs[i].uid).copied().unwrap_or(0), i))
}

/// What the last whole passes held, by kind (processes, threads): the estimate of the next.
#[derive(Debug, Default, Clone, Copy)]
struct Sizes {
    /// The rows without their command lines and environments.
    rows: usize,
    cmdline: usize,
    environ: usize,
}

/// The bytes a snapshot's tasks hold.
fn held_bytes(snap: &Snapshot) -> usize {
    let tasks = &snap.tasks;
    tasks.iter().map(Task::heap_bytes).sum::<usize>()
        + (tasks.capacity() - tasks.len()) * std::mem::size_of::<Task>()
}

/// What the pass thread keeps between passes.
struct Passes {
    /// The last passes, by query, for clients that hold them (and when each was last used).
    kept: VecDeque<Kept>,
    /// Passes let go, until their connections are done with them (then their vectors go back
    /// to the collector).
    retired: Vec<Arc<Charged>>,
    /// The last whole pass of processes and of threads.
    sizes: [Option<Sizes>; 2],
    /// When each uid was last served (a counter).
    served: HashMap<u32, u64>,
    turn: u64,
    generation: u64,
    /// When house was last kept.
    housekept: Instant,
    /// Makes generations opaque.
    tokens: std::hash::RandomState,
}

struct Kept {
    query: Query,
    pass: Arc<Charged>,
    callers: Vec<peer::Caller>,
    used: Instant,
}

fn kind(q: &Query) -> usize {
    usize::from(matches!(
        q.selector,
        Selector::AllThreads | Selector::ThreadsOf(_)
    ))
}

impl Passes {
    /// About what a pass of `q` will hold: the last whole pass of its kind's rows, with their
    /// command lines and environments when asked (0 when none was taken yet: the pass is then
    /// charged once taken).
    fn estimate(&self, q: &Query) -> usize {
        let Some(s) = self.sizes[kind(q)] else {
            return 0;
        };
        let whole = matches!(q.selector, Selector::AllProcesses | Selector::AllThreads);
        if !whole {
            // One process, its threads or children: small next to the whole host.
            return 0;
        }
        s.rows
            + if q.groups.has(Group::Cmdline) {
                s.cmdline
            } else {
                0
            }
            + if q.groups.has(Group::Environ) {
                s.environ
            } else {
                0
            }
    }

    /// Learns from a pass of `q` that holds `held` bytes what the next of its kind will.
    fn learn(&mut self, q: &Query, snap: &Snapshot, held: usize) {
        if !matches!(q.selector, Selector::AllProcesses | Selector::AllThreads) {
            return;
        }
        let (mut cmdline, mut environ) = (0, 0);
        for t in &snap.tasks {
            cmdline += t.cmdline.as_ref().map_or(0, Vec::capacity);
            environ += t.environ.as_ref().map_or(0, |e| e.capacity());
        }
        let was = self.sizes[kind(q)].unwrap_or_default();
        self.sizes[kind(q)] = Some(Sizes {
            rows: held.saturating_sub(cmdline + environ),
            cmdline: if q.groups.has(Group::Cmdline) {
                cmdline
            } else {
                was.cmdline
            },
            environ: if q.groups.has(Group::Environ) {
                environ
            } else {
                was.environ
            },
        });
    }

    /// Lets go of the oldest kept pass; `false` when none is kept.
    fn let_one_go(&mut self) -> bool {
        match self.kept.pop_front() {
            Some(k) => {
                self.retired.push(k.pass);
                true
            }
            None => false,
        }
    }

    /// The vectors of passes every connection is done with go back to the collector, so
    /// that the next pass reuses their memory instead of faulting in a new vector (a tenth
    /// of a pass at 50,000 tasks); a few held ones are kept for later.
    fn recycle(&mut self, host: &mut Host) {
        for p in std::mem::take(&mut self.retired) {
            match Arc::try_unwrap(p) {
                Ok(done) => host.recycle(done.pass.snapshot.tasks),
                Err(held) if self.retired.len() < KEPT_PASSES => self.retired.push(held),
                Err(_) => {}
            }
        }
    }
}

/// The most passes may hold of the budget.
fn pass_ceiling(state: &State) -> usize {
    state.budget.limit_bytes() / 8 * PASS_SHARE
}

/// A charge of `bytes` for a pass: at once when there is room below the passes' ceiling;
/// else after letting kept passes go, then cutting stalled connections and waiting for them
/// to leave. `None`: no room.
fn make_room(state: &State, passes: &mut Passes, host: &mut Host, bytes: usize) -> Option<Charge> {
    let ceiling = pass_ceiling(state);
    loop {
        if let Some(c) = state.budget.try_charge(bytes, ceiling) {
            return Some(c);
        }
        if !passes.let_one_go() {
            break;
        }
        passes.recycle(host);
    }
    if state.slots.cut_stalled(STALL_GRACE) > 0 {
        let until = Instant::now() + ROOM_WAIT;
        while Instant::now() < until {
            passes.recycle(host);
            if let Some(c) = state.budget.try_charge(bytes, ceiling) {
                return Some(c);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    None
}

/// Owns the collector: loads it, says so on `ready`, then takes one pass per distinct
/// waiting request until stopped.
pub fn pass_loop(state: &State, ready: &mpsc::Sender<Result<String, crate::error::Error>>) {
    struct Ended<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Ended<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }
    let _ended = Ended(&state.passing);
    let mut host = Host::from_env();
    // Every program (the walk into mapped memory, the command-line copy, the rare blocks)
    // loaded once for the service's life.
    if let Err(e) = host.open_for_service() {
        let _ = ready.send(Err(e));
        return;
    }
    // What reading /proc whatever its modes needs, and CAP_BPF: the walk's memory is made for
    // the tasks there are now, and a host that grows (a service runs for weeks) needs a bigger
    // one, which only CAP_BPF may create. Nothing else is kept on this thread.
    let _ = caps::keep_only(caps::KEPT_SERVICE_PASSES);
    let _ = ready.send(Ok(host.report().why));
    let mut passes = Passes {
        kept: VecDeque::new(),
        retired: Vec::new(),
        sizes: [None; 2],
        served: HashMap::new(),
        turn: 0,
        generation: 0,
        housekept: Instant::now(),
        tokens: std::hash::RandomState::new(),
    };
    while let Some(batch) = next_batch(state, &mut passes, &mut host) {
        answer(state, &mut passes, &mut host, batch);
    }
}

/// The next request and every one waiting for the same query, or `None` when stopping.
/// While nothing waits it keeps house once a second: passes kept too long let go, the heap
/// given back after a burst.
fn next_batch(state: &State, passes: &mut Passes, host: &mut Host) -> Option<(Query, Vec<Job>)> {
    let mut jobs = state.jobs.lock().ok()?;
    loop {
        if state.stop.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(i) = next_job(&jobs, &passes.served) {
            let query = jobs[i].query.clone();
            let (same, rest): (Vec<Job>, Vec<Job>) = std::mem::take(&mut *jobs)
                .into_iter()
                .partition(|j| j.query == query);
            *jobs = rest;
            passes.turn += 1;
            for j in &same {
                passes.served.insert(j.uid, passes.turn);
            }
            if jobs.is_empty() {
                passes.served.clear();
            }
            return Some((query, same));
        }
        jobs = state.wake.wait_timeout(jobs, HOUSEKEEPING).ok()?.0;
        if jobs.is_empty() && passes.housekept.elapsed() >= HOUSEKEEPING {
            drop(jobs);
            keep_house(state, passes, host);
            jobs = state.jobs.lock().ok()?;
        }
    }
}

/// Passes kept past [`KEPT_FOR`] let go; when nobody is connected, what the passes held
/// goes back to the system.
fn keep_house(state: &State, passes: &mut Passes, host: &mut Host) {
    let now = Instant::now();
    passes.housekept = now;
    while passes
        .kept
        .front()
        .is_some_and(|k| now.duration_since(k.used) >= KEPT_FOR)
    {
        passes.let_one_go();
    }
    passes.recycle(host);
    if state.slots.active() == 0 && state.budget.take_released() >= TRIM_AFTER_BYTES {
        memory::give_back();
    }
}

/// Takes one pass for `jobs` (all asking `query`) and hands it to each, or says why not.
fn answer(state: &State, passes: &mut Passes, host: &mut Host, (query, jobs): (Query, Vec<Job>)) {
    match take_pass(state, passes, host, &query, jobs.len()) {
        Ok(pass) => hand_out(passes, query, jobs, pass),
        Err(why) => {
            if matches!(why, NoPass::Memory) {
                let n = jobs.len() as u64;
                state.counts.memory_busy.fetch_add(n, Ordering::Relaxed);
            }
            for j in jobs {
                let _ = j.reply.send(Err(why.clone()));
            }
        }
    }
}

/// A pass of `query` for `shared_by` requests, charged to the memory budget: taken when the
/// budget has room for its estimate, then charged what it holds (more than the estimate only
/// when there is room for that too).
fn take_pass(
    state: &State,
    passes: &mut Passes,
    host: &mut Host,
    query: &Query,
    shared_by: usize,
) -> Result<Arc<Charged>, NoPass> {
    passes.recycle(host);
    let estimate = passes.estimate(query);
    let mut charge = make_room(state, passes, host, estimate).ok_or(NoPass::Memory)?;
    let t0 = Instant::now();
    let result = host.snapshot(query);
    state.counts.passes.fetch_add(1, Ordering::Relaxed);
    let snapshot = result.map_err(|e| NoPass::Failed(e.to_string()))?;
    let pass_ns = t0.elapsed().as_nanos() as u64;
    let bytes = held_bytes(&snapshot);
    passes.learn(query, &snapshot, bytes);
    if !charge.resize(bytes, pass_ceiling(state)) {
        drop(charge);
        charge = match make_room(state, passes, host, bytes) {
            Some(c) => c,
            None => {
                host.recycle(snapshot.tasks);
                return Err(NoPass::Memory);
            }
        };
    }
    passes.generation += 1;
    let report = host.report();
    Ok(Arc::new(Charged {
        pass: Pass {
            snapshot,
            pass_ns,
            how: report.pass.clone(),
            phases: report.phases_line(),
            shared_by: shared_by as u32,
            generation: passes.tokens.hash_one(passes.generation),
        },
        _charge: charge,
    }))
}

/// Hands `pass` to each of `jobs`, with the pass its `since` names when that one is kept, and
/// keeps it for the query's next request.
fn hand_out(passes: &mut Passes, query: Query, jobs: Vec<Job>, pass: Arc<Charged>) {
    let mut callers = Vec::with_capacity(jobs.len());
    for job in jobs {
        // The answer the caller holds, when this pass's query and this very caller (its ids,
        // groups, capabilities and /proc options as they were) are the ones it was made for:
        // else a whole answer.
        let before = job.since.and_then(|g| {
            passes
                .kept
                .iter()
                .find(|k| {
                    k.query == query
                        && k.pass.pass.generation == g
                        && k.callers.contains(&job.caller)
                })
                .map(|k| k.pass.clone())
        });
        let _ = job.reply.send(Ok((pass.clone(), before)));
        callers.push(job.caller);
    }
    // One pass kept per query, the latest (a live view's next `since`): the one before it is
    // let go, so that two vectors of tasks take turns.
    if let Some(at) = passes.kept.iter().position(|k| k.query == query) {
        if let Some(old) = passes.kept.remove(at) {
            passes.retired.push(old.pass);
        }
    }
    passes.kept.push_back(Kept {
        query,
        pass,
        callers,
        used: Instant::now(),
    });
    while passes.kept.len() > KEPT_PASSES {
        passes.let_one_go();
    }
}

#[cfg(test)]
mod tests {
    use crate::service::server::passes::*;
    use tasksnap_model::Groups;

    fn job(uid: u32, pid: i32) -> Job {
        Job {
            uid,
            query: Query::new(Selector::Pid(pid), Groups::default()),
            since: None,
            caller: peer::Caller::default(),
            reply: mpsc::channel().0,
        }
    }

    #[test]
    fn each_uid_waits_its_turn_and_its_share() {
        // uid 1 queued five distinct queries before uid 2 asked: uid 2 goes second.
        let mut jobs: Vec<Job> = (0..5).map(|p| job(1, p)).collect();
        jobs.push(job(2, 99));
        let mut served = HashMap::new();
        assert_eq!(next_job(&jobs, &served), Some(0));
        served.insert(1, 1);
        jobs.remove(0);
        assert_eq!(jobs[next_job(&jobs, &served).expect("one")].uid, 2);
        // The queue's share: alone, a uid may fill it; beside another, half of it.
        let mine: Vec<Job> = (0..15).map(|p| job(1, p)).collect();
        assert!(may_wait(&mine, 1));
        assert!(
            may_wait(&mine, 2),
            "a second uid is let in beside 15 of another's"
        );
        let half: Vec<Job> = (0..8).map(|p| job(1, p)).chain([job(2, 1)]).collect();
        assert!(!may_wait(&half, 1));
        assert!(may_wait(&half, 2));
        let full: Vec<Job> = (0..16).map(|p| job(1 + p as u32 % 4, p)).collect();
        assert!(!may_wait(&full, 9));
    }
}
