//! The query service's listening side ([`QueryService`], started by
//! [`Host::serve_queries`](crate::Host::serve_queries) for `tasksnap serve`): root's loaded BPF
//! programs answering local callers without privileges (`tasksnap ps`, `top`, the Python
//! binding as a user), each shown what its own /proc would show it, within budgets no set of
//! users can exhaust for the others.
//!
//! Threads, each with one job:
//! - the **accept** thread takes connections, asks the kernel who is on the other end
//!   (`SO_PEERCRED`, `SO_PEERPIDFD`) and admits them by the slots' rules ([`slots`]: clients
//!   at once, in all and per uid, shared fairly between uids) or turns them away with a
//!   `Busy` frame, so a flood never grows the service;
//! - a **connection** thread per admitted client reads one bounded request with a deadline,
//!   applies the per-uid rate, says `Accepted`, identifies the caller (its credentials,
//!   namespaces and /proc mount options, read here, never told by the client), waits for a pass,
//!   plans the caller's answer and sends it a chunk at a time, each cut and encoded only
//!   once the one before went out, within the memory budget ([`memory`]) and a deadline: a
//!   slow or hostile client holds only its own thread and a chunk;
//! - the **pass** thread ([`passes`]) owns the BPF collector and takes one pass per distinct
//!   waiting request, each uid in turn (identical requests share it), when the memory budget
//!   has room for it, so every answer is fresher than its request and a thousand callers cost
//!   one pass.
//!
//! The rules are the service's other modules' ([`super::peer`], [`super::visibility`],
//! [`super::answer`]); this module only moves requests and answers. See docs/service.md for
//! the threat model.

pub mod displace;
mod memory;
mod passes;
mod slots;

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tasksnap_model::Query;
use tasksnap_safefile::{Dir, SafeError};

use super::answer::{Reply, PLAN_BYTES_PER_TASK};
use super::{peer, visibility, wire};
use crate::caps;
use memory::{Charge, MemoryBudget};
use passes::{Job, NoPass};
use slots::{Slots, Step};

/// The send buffer asked for each answer's connection: a chunk or so in the kernel while the
/// next is encoded (what a client that reads nothing makes the kernel hold for it).
const SEND_BUFFER_BYTES: usize = 1 << 20;
/// How long a client has to send its request once connected.
const REQUEST_DEADLINE: Duration = Duration::from_secs(1);
/// How long a client has to take each part of its answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How long a client has to take its whole answer: a reader that takes a byte now and then
/// does not hold its connection (and its share of the limits) for longer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(30);
/// How long a connection waits for its pass before giving up on it.
const PASS_DEADLINE: Duration = Duration::from_secs(30);

/// Why the query service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Not root: its passes come from the BPF programs.
    #[error(
        "it needs root: its passes come from BPF programs only root loads (run serve as \
         root, or with --no-query-socket)"
    )]
    NotRoot,
    /// The path names no file in a directory.
    #[error("{}: not a socket path", .0.display())]
    NotASocketPath(PathBuf),
    /// Its directory could not be made, checked or opened up, or the socket bound.
    #[error("{0}")]
    Dir(SafeError),
    /// Its directory is the operator's and other users cannot reach a socket in it.
    #[error(
        "{} is not searchable by other users (mode {mode:o}): make it 0755, or choose \
         another directory",
        dir.display()
    )]
    NotSearchable {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A service answers on that socket already.
    #[error("another tasksnap serve answers there")]
    InUse,
    /// Something that is not a socket is where the socket would be (why, without the path).
    #[error("{0}, or give serve another --query-socket")]
    NotASocket(String),
    /// A thread could not be started.
    #[error("cannot start the {what} thread: {error}")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
    /// The BPF collector could not be loaded.
    #[error("{0}")]
    Load(crate::error::Error),
    /// The pass thread ended before it was ready.
    #[error("the pass thread ended before it was ready")]
    PassEnded,
}

/// What the service counts, for its start and stop lines.
#[derive(Debug, Default)]
pub struct Counts {
    /// Requests answered with tasks.
    pub answered: AtomicU64,
    /// Connections refused (a malformed request, an unidentifiable caller, a failed pass).
    pub refused: AtomicU64,
    /// Connections turned away as over a limit.
    pub busy: AtomicU64,
    /// Of those, requests turned away because the memory budget had no room for their pass.
    pub memory_busy: AtomicU64,
    /// Passes taken.
    pub passes: AtomicU64,
}

/// What the threads share.
struct State {
    stop: AtomicBool,
    /// The pass thread is running (false once it has ended, a panic included): connections
    /// are then refused at once instead of waiting for a pass that will not come.
    passing: AtomicBool,
    jobs: Mutex<Vec<Job>>,
    wake: Condvar,
    slots: Arc<Slots>,
    budget: Arc<MemoryBudget>,
    counts: Counts,
    proc_root: PathBuf,
}

/// Reads from a connection by one deadline for the whole (a client sending a byte a second
/// does not hold its slot for longer than the deadline).
struct ByDeadline<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl std::io::Read for ByDeadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        (&mut &*self.stream).read(buf)
    }
}

/// The running service: dropped (or [`QueryService::stop`]ped) it stops and removes its socket.
pub struct QueryService {
    state: Arc<State>,
    dir: Dir,
    name: OsString,
    path: PathBuf,
    accept: Option<JoinHandle<()>>,
    passes: Option<JoinHandle<()>>,
    /// How its collector got ready, for the start line.
    pub why: String,
}

impl QueryService {
    /// Where `tasksnap serve` listens for queries and clients look for it, unless told
    /// otherwise (`--query-socket`, `TASKSNAP_QUERY_SOCKET`).
    pub const DEFAULT_SOCKET: &'static str = super::DEFAULT_SOCKET;
    /// The smallest memory budget it takes: a pass of a small host and a few answers in flight.
    pub const MIN_BUDGET_BYTES: u64 = memory::MIN_BUDGET_BYTES;
}

debug_showing!(QueryService, path);

impl crate::host::Host {
    /// Starts the query service at `path` (root only; see [`QueryService`]): its pass thread
    /// opens a host of its own for [`Host::open_for_service`](crate::Host::open_for_service),
    /// and its threads keep only what they need. Call before the calling thread drops its
    /// capabilities. It holds at most `memory_budget_bytes` for its callers.
    pub fn serve_queries(
        path: &Path,
        memory_budget_bytes: u64,
    ) -> Result<QueryService, StartError> {
        start(path, memory_budget_bytes)
    }
}

/// Opens the directory of `path` (made 0755 if missing; root's, writable by nobody else) and
/// listens there, loads the BPF collector on the pass thread, and starts answering, holding
/// at most `memory_budget_bytes` for its callers. Call before the calling thread drops its
/// capabilities: the threads it starts keep what reading callers' /proc entries needs.
pub fn start(path: &Path, memory_budget_bytes: u64) -> Result<QueryService, StartError> {
    if tasksnap_safefile::euid() != 0 {
        return Err(StartError::NotRoot);
    }
    let (parent, name) = tasksnap_safefile::split_path(path)
        .ok_or_else(|| StartError::NotASocketPath(path.to_path_buf()))?;
    let dir = Dir::create_private(&parent, 0o755).map_err(StartError::Dir)?;
    // Callers need to reach the socket: the directory must be searchable by all. tasksnap's
    // own /run/tasksnap (0700 when an older tasksnap-pin.service made it) is opened up, as
    // nothing in it is writable by others; any other directory is the operator's, not to be
    // widened silently.
    let meta = dir.meta().map_err(StartError::Dir)?;
    if meta.mode & 0o011 != 0o011 {
        let ours = Path::new(super::DEFAULT_SOCKET).parent() == Some(&parent);
        if !ours {
            return Err(StartError::NotSearchable {
                dir: parent,
                mode: meta.mode & 0o7777,
            });
        }
        dir.chmod((meta.mode & 0o7777) | 0o011)
            .map_err(StartError::Dir)?;
    }
    // A service already answering there keeps its socket (a second `serve`, a test's, must
    // not take it over); a socket nobody listens on is an earlier run's, replaced.
    if UnixStream::connect(path).is_ok() {
        return Err(StartError::InUse);
    }
    let listener = dir.bind_socket(&name, 0o666).map_err(|e| match e {
        // Said without the path, which the caller's message names.
        SafeError::NotSocket { .. } => StartError::NotASocket(e.reason()),
        e => StartError::Dir(e),
    })?;
    let state = Arc::new(State {
        stop: AtomicBool::new(false),
        passing: AtomicBool::new(true),
        jobs: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        slots: Slots::new(),
        budget: MemoryBudget::new(memory_budget_bytes),
        counts: Counts::default(),
        proc_root: PathBuf::from(tasksnap_sys::roots::PROC),
    });
    let (ready_tx, ready_rx) = mpsc::channel::<Result<String, crate::error::Error>>();
    let passes = {
        let state = state.clone();
        std::thread::Builder::new()
            .name("query-pass".into())
            .spawn(move || passes::pass_loop(&state, &ready_tx))
            .map_err(|error| StartError::Thread {
                what: "pass",
                error,
            })?
    };
    let why = match ready_rx.recv() {
        Ok(Ok(why)) => why,
        Ok(Err(e)) => {
            let _ = passes.join();
            let _ = dir.remove(&name);
            return Err(StartError::Load(e));
        }
        Err(_) => {
            let _ = dir.remove(&name);
            return Err(StartError::PassEnded);
        }
    };
    let accept = {
        let state = state.clone();
        std::thread::Builder::new()
            .name("query-accept".into())
            .spawn(move || {
                // What identifying a caller needs (its namespaces' links, its mount table):
                // reading /proc entries of other users. Connection threads inherit this set.
                let _ = caps::keep_only(caps::KEPT_READING);
                accept_loop(&state, &listener)
            })
            .map_err(|error| StartError::Thread {
                what: "accept",
                error,
            })?
    };
    Ok(QueryService {
        state,
        dir,
        name,
        path: path.to_path_buf(),
        accept: Some(accept),
        passes: Some(passes),
        why,
    })
}

impl QueryService {
    /// What it has done so far.
    pub fn counts(&self) -> &Counts {
        &self.state.counts
    }

    /// Where it listens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it said of its limits: connections displaced for another user, cut for not
    /// reading, and the memory budget's peak and limit.
    pub fn limits_said(&self) -> String {
        let mib = |b: usize| b as f64 / f64::from(1u32 << 20);
        let s = &self.state;
        format!(
            "{} turned away for memory, {} displaced for another user, {} cut for not reading; \
             query memory: peak {:.1} MiB of {:.0} MiB",
            s.counts.memory_busy.load(Ordering::Relaxed),
            s.slots.displaced.load(Ordering::Relaxed),
            s.slots.cut.load(Ordering::Relaxed),
            mib(s.budget.peak_bytes()),
            mib(s.budget.limit_bytes())
        )
    }

    /// Stops accepting, ends the pass thread and removes the socket.
    pub fn stop(&mut self) {
        // Set under the jobs lock, so that the pass thread, between its check and its wait,
        // cannot miss the wake-up.
        {
            let _jobs = self.state.jobs.lock();
            self.state.stop.store(true, Ordering::SeqCst);
        }
        self.state.wake.notify_all();
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        if let Some(t) = self.passes.take() {
            let _ = t.join();
        }
        let _ = self.dir.remove(&self.name);
    }
}

impl Drop for QueryService {
    fn drop(&mut self) {
        if self.accept.is_some() || self.passes.is_some() {
            self.stop();
        }
    }
}

/// Waits up to `ms` for `listener` to have a connection waiting.
fn readable(listener: &UnixListener, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(listener),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

fn accept_loop(state: &Arc<State>, listener: &UnixListener) {
    // Non-blocking, polled with a timeout: a stop is seen within 200 ms, and a connection
    // that goes away between poll and accept does not block the loop.
    let _ = listener.set_nonblocking(true);
    loop {
        if state.stop.load(Ordering::SeqCst) {
            return;
        }
        if !readable(listener, 200) {
            continue;
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                ) =>
            {
                continue
            }
            Err(_) => {
                if state.stop.load(Ordering::SeqCst) {
                    return;
                }
                // Out of descriptors or memory for a moment: back off rather than spin.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        let who = match peer::peer_of(stream.as_fd()) {
            Ok(p) => p,
            Err(_) => {
                state.counts.refused.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        let Some(admitted) = state.slots.admit(who.uid, &stream) else {
            state.counts.busy.fetch_add(1, Ordering::Relaxed);
            turn_away(stream, &wire::empty(wire::Kind::Busy));
            continue;
        };
        let st = state.clone();
        let spawned = std::thread::Builder::new()
            .name("query-conn".into())
            .stack_size(256 << 10)
            .spawn(move || {
                // Its place is given back however the connection ends (a panic included).
                serve_one(&st, stream, &who, &admitted);
            });
        if spawned.is_err() {
            state.counts.busy.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Says `frame` to a client not served, without waiting on it.
fn turn_away(stream: UnixStream, frame: &[u8]) {
    let _ = stream.set_nonblocking(true);
    let _ = (&stream).write_all(frame);
}

/// Asks for a send buffer of `bytes` on `stream` (best effort).
fn set_send_buffer(stream: &UnixStream, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    let _ = tasksnap_sys::set_option(stream.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, v);
}

/// Writes `bytes` whole by `deadline`, each write bounded by the socket's write timeout, and
/// says on `stage` while a write is under way (a write blocked long is a client reading
/// nothing).
fn write_by(
    stream: &mut UnixStream,
    bytes: &[u8],
    deadline: Instant,
    stage: &slots::Stage,
) -> std::io::Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        if Instant::now() >= deadline {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let end = (at + (1 << 20)).min(bytes.len());
        stage.writing(true);
        let wrote = stream.write(&bytes[at..end]);
        stage.writing(false);
        match wrote {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One admitted connection, as its thread sees it.
struct Conn<'a> {
    state: &'a State,
    stream: UnixStream,
    admitted: &'a slots::Admitted,
}

impl Conn<'_> {
    // A connection displaced or cut is gone: nothing more is said or counted of it.

    /// Says why it is not answered.
    fn refuse(&self, why: &str) {
        if !self.admitted.stage.ended() {
            self.state.counts.refused.fetch_add(1, Ordering::Relaxed);
            let _ = (&self.stream).write_all(&wire::refused(why));
        }
    }

    /// Says `Busy`.
    fn busy(&self) {
        if !self.admitted.stage.ended() {
            self.state.counts.busy.fetch_add(1, Ordering::Relaxed);
            let _ = (&self.stream).write_all(&wire::empty(wire::Kind::Busy));
        }
    }

    /// Says `Busy`: the memory budget has no room for its answer.
    fn no_memory(&self) {
        self.state
            .counts
            .memory_busy
            .fetch_add(1, Ordering::Relaxed);
        self.busy();
    }

    /// Writes `bytes` by `deadline` (see [`write_by`]).
    fn write(&mut self, bytes: &[u8], deadline: Instant) -> bool {
        write_by(&mut self.stream, bytes, deadline, &self.admitted.stage).is_ok()
    }
}

/// One connection: one request, one answer.
fn serve_one(state: &State, stream: UnixStream, who: &peer::Peer, admitted: &slots::Admitted) {
    if stream.set_read_timeout(Some(REQUEST_DEADLINE)).is_err()
        || stream.set_write_timeout(Some(WRITE_DEADLINE)).is_err()
    {
        return;
    }
    let mut conn = Conn {
        state,
        stream,
        admitted,
    };
    let Some((request, caller)) = take_request(&mut conn, who) else {
        return;
    };
    let Some((pass, since)) = wait_for_pass(&conn, who.uid, &request, &caller) else {
        return;
    };
    if admitted.stage.ended() {
        return;
    }
    admitted.stage.set(Step::Answering);
    set_send_buffer(&conn.stream, SEND_BUFFER_BYTES);
    if send_answer(&mut conn, &caller, &request.query, &pass, since) {
        state.counts.answered.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads the request (one, bounded, by its deadline), takes a token of its uid's bucket, says
/// `Accepted` and identifies the caller; `None` when it is not to be answered (said why).
fn take_request(conn: &mut Conn<'_>, who: &peer::Peer) -> Option<(wire::Request, peer::Caller)> {
    let state = conn.state;
    let mut by_deadline = ByDeadline {
        stream: &conn.stream,
        deadline: Instant::now() + REQUEST_DEADLINE,
    };
    let request = match wire::read_frame(&mut by_deadline, wire::MAX_REQUEST) {
        Ok((wire::Kind::Request, payload)) => wire::decode_request(&payload),
        Ok((kind, _)) => Err(wire::WireError::Unexpected(kind)),
        Err(e) => Err(e),
    };
    let request = request.map_err(|e| conn.refuse(&e.to_string())).ok()?;
    if !state.passing.load(Ordering::SeqCst) {
        conn.refuse("the service's pass thread has ended");
        return None;
    }
    if !state.slots.take_token(who.uid) {
        conn.busy();
        return None;
    }
    // Said before the caller is identified (its status, namespaces and mount table read from
    // /proc): the client gives a service ACCEPT_DEADLINE (100 ms) to say it, and on a busy
    // host those reads alone can take longer. An unidentifiable caller is refused after it.
    (&conn.stream)
        .write_all(&wire::empty(wire::Kind::Accepted))
        .ok()?;
    let caller = peer::identify(&state.proc_root, who)
        .map_err(|r| conn.refuse(&r.to_string()))
        .ok()?;
    Some((request, caller))
}

/// Queues the request for a pass (within the uid's share of the queue) and waits for it;
/// `None` when there is none (said why).
fn wait_for_pass(
    conn: &Conn<'_>,
    uid: u32,
    request: &wire::Request,
    caller: &peer::Caller,
) -> Option<(Arc<passes::Charged>, Option<Arc<passes::Charged>>)> {
    let state = conn.state;
    conn.admitted.stage.set(Step::Waiting);
    let read = Query {
        groups: visibility::groups_to_read(caller, &request.query.groups),
        ..request.query.clone()
    };
    let (tx, rx) = mpsc::channel();
    match state.jobs.lock() {
        Ok(jobs) if !passes::may_wait(&jobs, uid) => {
            drop(jobs);
            conn.busy();
            return None;
        }
        Ok(mut jobs) => jobs.push(Job {
            uid,
            query: read,
            since: request.since,
            caller: caller.clone(),
            reply: tx,
        }),
        Err(_) => {
            conn.refuse("the service is failing");
            return None;
        }
    }
    state.wake.notify_all();
    match rx.recv_timeout(PASS_DEADLINE) {
        Ok(Ok(p)) => return Some(p),
        Ok(Err(NoPass::Memory)) => conn.busy(),
        // What went wrong with a pass of the whole host is root's to read.
        Ok(Err(NoPass::Failed(e))) if caller.fsuid == 0 => {
            conn.refuse(&format!("the pass failed: {e}"))
        }
        Ok(Err(NoPass::Failed(_))) => conn.refuse("the service's pass failed"),
        Err(_) => conn.refuse("no pass in time"),
    }
    None
}

/// Plans the caller's answer from `pass` (what differs from `since`, when given) and sends it
/// by its deadline, each chunk charged to the memory budget from before its rows are cut
/// until it went to the kernel; `true` when all of it went.
fn send_answer(
    conn: &mut Conn<'_>,
    caller: &peer::Caller,
    query: &Query,
    pass: &passes::Charged,
    since: Option<Arc<passes::Charged>>,
) -> bool {
    let state = conn.state;
    let deadline = Instant::now() + ANSWER_DEADLINE;
    // The plan: a few bytes a task of the passes, charged before it is made.
    let tasks = (pass.pass.snapshot.tasks.len())
        .max(since.as_ref().map_or(0, |p| p.pass.snapshot.tasks.len()));
    let Some(mut plan_charge) = charge(state, PLAN_BYTES_PER_TASK * tasks.max(1), deadline) else {
        conn.no_memory();
        return false;
    };
    let reply = Reply::plan(
        caller,
        &query.groups,
        &pass.pass,
        since.as_ref().map(|p| &p.pass),
        &state.proc_root,
    );
    // The pass named by `since` is no longer needed: the plan holds what differs.
    drop(since);
    if !plan_charge.resize(reply.held_bytes(), usize::MAX) {
        conn.no_memory();
        return false;
    }
    match reply.head() {
        Ok(head) if conn.write(&head, deadline) => {}
        Ok(_) => return false,
        Err(e) => {
            conn.refuse(&format!("cannot encode the answer: {e}"));
            return false;
        }
    }
    for i in 0..reply.chunks() {
        // Its rows cut (gated rows are copies) and encoded: charged both before, then only
        // the frame until it went to the kernel.
        let Some(mut c) = charge(state, 2 * reply.chunk_bytes(i), deadline) else {
            return false;
        };
        let frame = match reply.chunk(i) {
            Ok(f) => f,
            Err(e) => {
                conn.refuse(&format!("cannot encode the answer: {e}"));
                return false;
            }
        };
        if !c.resize(frame.capacity(), usize::MAX) || !conn.write(&frame, deadline) {
            return false;
        }
    }
    true
}

/// `bytes` of the memory budget for an answer, waiting for room until `deadline` (connections
/// stalled on clients that read nothing are cut when there is none).
fn charge(state: &State, bytes: usize, deadline: Instant) -> Option<Charge> {
    if let Some(c) = state.budget.try_charge(bytes, usize::MAX) {
        return Some(c);
    }
    state.slots.cut_stalled(passes::STALL_GRACE);
    state.budget.charge_by(bytes, deadline)
}
