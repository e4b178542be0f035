//! The query socket of `tasksnap serve`: root's loaded BPF programs answering local callers
//! without privileges (`tasksnap ps`, `top`, the Python binding as a user), each shown what
//! its own /proc would show it.
//!
//! Threads, each with one job:
//! - the **accept** thread takes connections, asks the kernel who is on the other end
//!   (`SO_PEERCRED`, `SO_PEERPIDFD`) and turns away what is over the limits (clients at
//!   once, in all and per uid) with a `Busy` frame, so a flood never grows the service;
//! - a **connection** thread per admitted client reads one bounded request with a deadline,
//!   identifies the caller (its credentials, namespaces and /proc mount options, read here,
//!   never told by the client), applies the per-uid rate, says `Accepted`, waits for a pass,
//!   cuts it down to the caller's view and writes it with a deadline: a slow or hostile client
//!   holds only its own thread;
//! - the **pass** thread owns the BPF collector and takes one pass for every request waiting
//!   when it starts (identical requests share it), so every answer is fresher than its
//!   request and a thousand callers cost one pass.
//!
//! The rules are tasksnap-collect's (`service::peer`, `service::visibility`); this module
//! only moves requests and answers. See docs/service.md for the threat model.

use std::collections::HashMap;
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

use tasksnap_collect::service::answer::{self, Pass};
use tasksnap_collect::service::{peer, visibility, wire};
use tasksnap_collect::Host;
use tasksnap_model::Query;
use tasksnap_safefile::Dir;

/// Clients served at once; more are answered `Busy` (each may hold an answer being encoded,
/// tens of MB at 100,000 tasks).
pub const MAX_CLIENTS: usize = 32;
/// Requests waiting for a pass at most; beyond, `Busy` (a queue of distinct expensive
/// queries would keep every caller past its deadline).
const MAX_WAITING: usize = 16;
/// Clients of one uid served at once.
pub const MAX_CLIENTS_PER_UID: usize = 8;
/// Requests a uid may make per second, sustained; [`BURST`] at once.
pub const RATE_PER_S: f64 = 50.0;
/// See [`RATE_PER_S`].
pub const BURST: f64 = 100.0;
/// The send buffer asked for each answer's connection.
const SEND_BUFFER_BYTES: usize = 2 << 20;
/// How long a client has to send its request once connected.
const REQUEST_DEADLINE: Duration = Duration::from_secs(1);
/// How long a client has to take each part of its answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How long a client has to take its whole answer: a reader that takes a byte now and then
/// does not hold its connection (and its share of the limits) for longer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(30);
/// How long a connection waits for its pass before giving up on it.
const PASS_DEADLINE: Duration = Duration::from_secs(30);

/// What the service counts, for its start and stop lines.
#[derive(Debug, Default)]
pub struct Counts {
    /// Requests answered with tasks.
    pub answered: AtomicU64,
    /// Connections refused (a malformed request, an unidentifiable caller, a failed pass).
    pub refused: AtomicU64,
    /// Connections turned away as over a limit.
    pub busy: AtomicU64,
    /// Passes taken.
    pub passes: AtomicU64,
}

/// Where a pass (or why there is none) goes.
type Reply = mpsc::Sender<Result<(Arc<Pass>, Option<Arc<Pass>>), String>>;

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

/// A pass kept for the callers it answered, whose next request may name it.
struct Kept {
    query: Query,
    pass: Arc<Pass>,
    callers: Vec<peer::Caller>,
}

/// A request's `since` and where its pass goes.
type Waiting = (Option<u64>, peer::Caller, Reply);

/// A request waiting for a pass: the query to read, and the generation of the answer the
/// client holds (its pass goes with the reply, when still kept).
struct Job {
    query: Query,
    since: Option<u64>,
    /// Who asks: a `since` is honoured only for a caller the kept pass answered, as it was.
    caller: peer::Caller,
    reply: Reply,
}

/// Queries whose last pass is kept after it is answered, for clients that hold it to be
/// sent only what changed (a live view's next refresh): a few, each tens of MB at 50,000
/// tasks.
const KEPT_PASSES: usize = 4;

/// Per-uid admission: clients now, and a token bucket of requests.
#[derive(Default)]
struct Admission {
    total: usize,
    per_uid: HashMap<u32, usize>,
    buckets: HashMap<u32, (f64, Instant)>,
}

/// What the threads share.
struct State {
    stop: AtomicBool,
    /// The pass thread is running (false once it has ended, a panic included): connections
    /// are then refused at once instead of waiting for a pass that will not come.
    passing: AtomicBool,
    jobs: Mutex<Vec<Job>>,
    wake: Condvar,
    admission: Mutex<Admission>,
    counts: Counts,
    proc_root: PathBuf,
}

impl State {
    /// Admits a client of `uid`, or `false` when a limit is reached.
    fn admit(&self, uid: u32) -> bool {
        let Ok(mut a) = self.admission.lock() else {
            return false;
        };
        let n = a.per_uid.get(&uid).copied().unwrap_or(0);
        if a.total >= MAX_CLIENTS || n >= MAX_CLIENTS_PER_UID {
            return false;
        }
        a.total += 1;
        a.per_uid.insert(uid, n + 1);
        true
    }

    fn leave(&self, uid: u32) {
        if let Ok(mut a) = self.admission.lock() {
            a.total = a.total.saturating_sub(1);
            if let Some(n) = a.per_uid.get_mut(&uid) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    a.per_uid.remove(&uid);
                }
            }
        }
    }

    /// Takes a request token of `uid`'s bucket, or `false` when it is empty.
    fn take_token(&self, uid: u32) -> bool {
        let Ok(mut a) = self.admission.lock() else {
            return false;
        };
        let now = Instant::now();
        if a.buckets.len() > 4096 {
            // Full buckets carry no state: forget them rather than grow with every uid seen.
            a.buckets.retain(|_, (t, at)| {
                *t + now.duration_since(*at).as_secs_f64() * RATE_PER_S < BURST
            });
        }
        let (tokens, at) = a.buckets.entry(uid).or_insert((BURST, now));
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

impl std::fmt::Debug for QueryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryService")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Opens the directory of `path` (made 0755 if missing; root's, writable by nobody else) and
/// listens there, loads the BPF collector on the pass thread, and starts answering. Call
/// before the calling thread drops its capabilities: the threads it starts keep what reading
/// callers' /proc entries needs.
pub fn start(path: &Path) -> Result<QueryService, String> {
    if tasksnap_safefile::euid() != 0 {
        return Err(
            "it needs root: its passes come from BPF programs only root loads (run serve as \
             root, or with --no-query-socket)"
                .into(),
        );
    }
    let (parent, name) = tasksnap_safefile::split_path(path)
        .ok_or_else(|| format!("{}: not a socket path", path.display()))?;
    let dir = Dir::create_private(&parent, 0o755).map_err(|e| e.to_string())?;
    // Callers need to reach the socket: the directory must be searchable by all. tasksnap's
    // own /run/tasksnap (0700 when an older tasksnap-pin.service made it) is opened up, as
    // nothing in it is writable by others; any other directory is the operator's, not to be
    // widened silently.
    let meta = dir.meta().map_err(|e| e.to_string())?;
    if meta.mode & 0o011 != 0o011 {
        let ours = Path::new(tasksnap_collect::service::DEFAULT_SOCKET).parent() == Some(&parent);
        if !ours {
            return Err(format!(
                "{} is not searchable by other users (mode {:o}): make it 0755, or choose \
                 another directory",
                parent.display(),
                meta.mode & 0o7777
            ));
        }
        dir.chmod((meta.mode & 0o7777) | 0o011)
            .map_err(|e| e.to_string())?;
    }
    // A service already answering there keeps its socket (a second `serve`, a test's, must
    // not take it over); a socket nobody listens on is an earlier run's, replaced.
    if UnixStream::connect(path).is_ok() {
        return Err("another tasksnap serve answers there".into());
    }
    let listener = dir.bind_socket(&name, 0o666).map_err(|e| e.to_string())?;
    let state = Arc::new(State {
        stop: AtomicBool::new(false),
        passing: AtomicBool::new(true),
        jobs: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        admission: Mutex::new(Admission::default()),
        counts: Counts::default(),
        proc_root: PathBuf::from(tasksnap_collect::host::KERNEL_PROC),
    });
    let (ready_tx, ready_rx) = mpsc::channel::<Result<String, String>>();
    let passes = {
        let state = state.clone();
        std::thread::Builder::new()
            .name("query-pass".into())
            .spawn(move || pass_loop(&state, &ready_tx))
            .map_err(|e| format!("cannot start the pass thread: {e}"))?
    };
    let why = match ready_rx.recv() {
        Ok(Ok(why)) => why,
        Ok(Err(e)) => {
            let _ = passes.join();
            let _ = dir.remove(&name);
            return Err(e);
        }
        Err(_) => {
            let _ = dir.remove(&name);
            return Err("the pass thread ended before it was ready".into());
        }
    };
    let accept = {
        let state = state.clone();
        std::thread::Builder::new()
            .name("query-accept".into())
            .spawn(move || {
                // What identifying a caller needs (its namespaces' links, its mount table):
                // reading /proc entries of other users. Connection threads inherit this set.
                let _ = tasksnap_collect::caps::keep_only(tasksnap_collect::caps::KEPT_READING);
                accept_loop(&state, &listener)
            })
            .map_err(|e| format!("cannot start the accept thread: {e}"))?
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
        let uid = who.uid;
        if !state.admit(uid) {
            state.counts.busy.fetch_add(1, Ordering::Relaxed);
            turn_away(stream, &wire::empty(wire::Kind::Busy));
            continue;
        }
        let st = state.clone();
        let spawned = std::thread::Builder::new()
            .name("query-conn".into())
            .stack_size(256 << 10)
            .spawn(move || {
                // Left however the connection ends (a panic included): a slot is never lost.
                let _admitted = Admitted {
                    state: &st,
                    uid: who.uid,
                };
                serve_one(&st, stream, &who);
            });
        if spawned.is_err() {
            state.leave(uid);
            state.counts.busy.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A client's admission, given back when dropped.
struct Admitted<'a> {
    state: &'a State,
    uid: u32,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.state.leave(self.uid);
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
    // SAFETY: setsockopt on a socket this thread owns, with a pointer to a c_int that lives
    // for the call and its size.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Writes `bytes` whole by `deadline`, each write bounded by the socket's write timeout.
fn write_by(stream: &mut UnixStream, bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        if Instant::now() >= deadline {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let end = (at + (1 << 20)).min(bytes.len());
        match stream.write(&bytes[at..end]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One connection: one request, one answer.
fn serve_one(state: &State, mut stream: UnixStream, who: &peer::Peer) {
    let refuse = |mut s: &UnixStream, why: &str| {
        state.counts.refused.fetch_add(1, Ordering::Relaxed);
        let _ = s.write_all(&wire::refused(why));
    };
    if stream.set_read_timeout(Some(REQUEST_DEADLINE)).is_err()
        || stream.set_write_timeout(Some(WRITE_DEADLINE)).is_err()
    {
        return;
    }
    let mut by_deadline = ByDeadline {
        stream: &stream,
        deadline: Instant::now() + REQUEST_DEADLINE,
    };
    let request = match wire::read_frame(&mut by_deadline, wire::MAX_REQUEST) {
        Ok((wire::Kind::Request, payload)) => match wire::decode_request(&payload) {
            Ok(r) => r,
            Err(e) => return refuse(&stream, &e.to_string()),
        },
        Ok((kind, _)) => return refuse(&stream, &wire::WireError::Unexpected(kind).to_string()),
        Err(e) => return refuse(&stream, &e.to_string()),
    };
    let caller = match peer::identify(&state.proc_root, who) {
        Ok(c) => c,
        Err(r) => return refuse(&stream, &r.to_string()),
    };
    if !state.passing.load(Ordering::SeqCst) {
        return refuse(&stream, "the service's pass thread has ended");
    }
    if !state.take_token(who.uid) {
        state.counts.busy.fetch_add(1, Ordering::Relaxed);
        let _ = stream.write_all(&wire::empty(wire::Kind::Busy));
        return;
    }
    if stream
        .write_all(&wire::empty(wire::Kind::Accepted))
        .is_err()
    {
        return;
    }
    let query = &request.query;
    let read = Query {
        groups: visibility::groups_to_read(&caller, &query.groups),
        ..query.clone()
    };
    let (tx, rx) = mpsc::channel();
    match state.jobs.lock() {
        Ok(jobs) if jobs.len() >= MAX_WAITING => {
            drop(jobs);
            state.counts.busy.fetch_add(1, Ordering::Relaxed);
            let _ = stream.write_all(&wire::empty(wire::Kind::Busy));
            return;
        }
        Ok(mut jobs) => jobs.push(Job {
            query: read,
            since: request.since,
            caller: caller.clone(),
            reply: tx,
        }),
        Err(_) => return refuse(&stream, "the service is failing"),
    }
    state.wake.notify_all();
    let (pass, since) = match rx.recv_timeout(PASS_DEADLINE) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return refuse(&stream, &format!("the pass failed: {e}")),
        Err(_) => return refuse(&stream, "no pass in time"),
    };
    // Room for a few chunks in flight, so that encoding the next one overlaps the client's
    // decoding of the last (the kernel caps it at net.core.wmem_max).
    set_send_buffer(&stream, SEND_BUFFER_BYTES);
    let deadline = Instant::now() + ANSWER_DEADLINE;
    let frames = answer::frames(
        &caller,
        &query.groups,
        &pass,
        since.as_deref(),
        &state.proc_root,
    );
    for frame in frames {
        match frame {
            Ok(frame) => {
                if write_by(&mut stream, &frame, deadline).is_err() {
                    return;
                }
            }
            Err(e) => return refuse(&stream, &format!("cannot encode the answer: {e}")),
        }
    }
    state.counts.answered.fetch_add(1, Ordering::Relaxed);
}

/// Owns the collector: loads it, says so on `ready`, then takes one pass per distinct
/// waiting request until stopped.
fn pass_loop(state: &State, ready: &mpsc::Sender<Result<String, String>>) {
    struct Ended<'a>(&'a AtomicBool);
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
        let _ = ready.send(Err(e.to_string()));
        return;
    }
    // What reading /proc whatever its modes needs, and CAP_BPF: the walk's memory is made for
    // the tasks there are now, and a host that grows (a service runs for weeks) needs a bigger
    // one, which only CAP_BPF may create. Nothing else is kept on this thread.
    const CAP_BPF: u64 = 1 << 39;
    let _ = tasksnap_collect::caps::keep_only(tasksnap_collect::caps::KEPT_READING | CAP_BPF);
    let _ = ready.send(Ok(host.report().why));
    // The last passes, by query, for clients that hold them; and passes let go, until their
    // connections are done with them.
    let mut kept: std::collections::VecDeque<Kept> = Default::default();
    let mut retired: Vec<Arc<Pass>> = Vec::new();
    let mut generation = 0u64;
    loop {
        let batch = {
            let Ok(mut jobs) = state.jobs.lock() else {
                return;
            };
            while jobs.is_empty() && !state.stop.load(Ordering::SeqCst) {
                jobs = match state.wake.wait(jobs) {
                    Ok(j) => j,
                    Err(_) => return,
                };
            }
            if state.stop.load(Ordering::SeqCst) {
                return;
            }
            std::mem::take(&mut *jobs)
        };
        // Identical requests (the same selector and groups to read) share a pass.
        let mut distinct: Vec<(Query, Vec<Waiting>)> = Vec::new();
        for job in batch {
            match distinct.iter_mut().find(|(q, _)| *q == job.query) {
                Some((_, replies)) => replies.push((job.since, job.caller, job.reply)),
                None => distinct.push((job.query, vec![(job.since, job.caller, job.reply)])),
            }
        }
        for (query, replies) in distinct {
            // The tasks of passes every connection is done with go back to the collector,
            // so this pass reuses their memory instead of faulting in a new vector (a tenth
            // of a pass at 50,000 tasks).
            for p in std::mem::take(&mut retired) {
                match Arc::try_unwrap(p) {
                    Ok(done) => host.recycle(done.snapshot.tasks),
                    Err(held) if retired.len() < KEPT_PASSES => retired.push(held),
                    Err(_) => {}
                }
            }
            let t0 = Instant::now();
            let result = host.snapshot(&query);
            state.counts.passes.fetch_add(1, Ordering::Relaxed);
            generation += 1;
            let result = result
                .map(|snapshot| {
                    let report = host.report();
                    Arc::new(Pass {
                        snapshot,
                        pass_ns: t0.elapsed().as_nanos() as u64,
                        how: format!("{} ({})", report.pass, report.phases_line()),
                        shared_by: replies.len() as u32,
                        generation,
                    })
                })
                .map_err(|e| e.to_string());
            let mut callers = Vec::with_capacity(replies.len());
            for (since, caller, reply) in replies {
                let answer = result.clone().map(|p| {
                    // The answer the caller holds, when this pass's query and this very
                    // caller (its ids, groups, capabilities and /proc options as they were)
                    // are the ones it was made for: else a whole answer.
                    let before = since.and_then(|g| {
                        kept.iter()
                            .find(|k| {
                                k.query == query
                                    && k.pass.generation == g
                                    && k.callers.contains(&caller)
                            })
                            .map(|k| k.pass.clone())
                    });
                    (p, before)
                });
                let _ = reply.send(answer);
                callers.push(caller);
            }
            if let Ok(pass) = result {
                // One pass kept per query, the latest (a live view's next `since`): the one
                // before it is let go, so that two vectors of tasks take turns.
                if let Some(at) = kept.iter().position(|k| k.query == query) {
                    if let Some(old) = kept.remove(at) {
                        retired.push(old.pass);
                    }
                }
                kept.push_back(Kept {
                    query,
                    pass,
                    callers,
                });
                while kept.len() > KEPT_PASSES {
                    if let Some(old) = kept.pop_front() {
                        retired.push(old.pass);
                    }
                }
            }
        }
    }
}
