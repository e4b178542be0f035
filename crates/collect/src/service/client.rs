//! The collector a non-root front end gets when the query service is there
//! ([`ServiceCollector`]): each snapshot is one request to the service (a fresh pass of its
//! loaded BPF programs, filtered for this caller by the kernel's rules), and anything the
//! service does not answer in time is read from /proc instead, so a dead, stopped or busy
//! service costs a caller at most [`ACCEPT_DEADLINE`].
//!
//! The socket is trusted only when root listens on it (`SO_PEERCRED` of the listener): a
//! socket another user managed to put there would be refused, and /proc read instead.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use tasksnap_model::{Backend, Groups, PassReport, Query, Snapshot};

use super::wire::{self, Kind};
use crate::collector::Collector;
use crate::collector::Filled;
use crate::collector::LiveCollector;
use crate::error::Error;
use crate::procfs::{ProcfsCollector, Units};

/// How long a client waits for the service to say it took a request before reading /proc
/// itself: what a stopped or wedged service costs a caller.
pub const ACCEPT_DEADLINE: Duration = Duration::from_millis(100);
/// How long a client waits for the answer once the service took the request (a pass of
/// 100,000 tasks takes well under a second; a service that says it took a request and then
/// sends nothing for this long is treated as gone).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(20);

/// Why the service did not answer one request (said by `-v`; the caller reads /proc).
fn connect(path: &Path) -> Result<UnixStream, String> {
    let fd: OwnedFd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| format!("socket: {e}"))?;
    let addr = SocketAddrUnix::new(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Non-blocking, so that a listener whose backlog is full (a stopped service, a flood of
    // clients) is EAGAIN at once instead of a connect() that waits for a slot.
    match rustix::net::connect(&fd, &addr) {
        Ok(()) => {}
        Err(rustix::io::Errno::AGAIN) => {
            return Err(format!("the service at {} is busy", path.display()))
        }
        Err(e) => {
            return Err(absent(path).unwrap_or_else(|| match e {
                rustix::io::Errno::CONNREFUSED => {
                    format!("nothing listens at {}", path.display())
                }
                e => format!("{}: {e}", path.display()),
            }))
        }
    }
    let peer = super::peer::peer_of(fd.as_fd())
        .map_err(|e| format!("{}: the listener's credentials: {e}", path.display()))?;
    if peer.uid != 0 {
        return Err(format!(
            "{} is not root's (the listener runs as uid {}): not used",
            path.display(),
            peer.uid
        ));
    }
    let s = UnixStream::from(fd);
    s.set_nonblocking(false)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(s)
}

/// Why no service can be listening at `path` (`None`: a socket of root's is there, which may
/// be one). Asked before a front end chooses the service, so that a host without one pays
/// one stat, and said by `-v` when /proc is read instead.
pub fn absent(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let there = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "nothing is there".to_string(),
        Err(e) => e.to_string(),
        Ok(m) => match tasksnap_safefile::Kind::from_file_type(m.file_type()) {
            tasksnap_safefile::Kind::Socket if m.uid() == 0 => return None,
            tasksnap_safefile::Kind::Socket => format!("the socket there is uid {}'s", m.uid()),
            kind => format!("{} is there, not a socket", kind.describe()),
        },
    };
    Some(format!("no query service at {} ({there})", path.display()))
}

/// One request answered: the snapshot, and what it cost.
struct Answered {
    generation: u64,
    full: bool,
    gone: Vec<tasksnap_model::TaskId>,
    snapshot: Snapshot,
    pass: String,
    pass_ns: u64,
    shared_by: u32,
    bytes: usize,
    /// How long decoding the answer took here.
    decode: Duration,
}

/// Asks the service at `path` for `query` (only what changed since the answer of generation
/// `since`, when given and the service still has it).
fn ask(path: &Path, query: &Query, since: Option<u64>) -> Result<Answered, String> {
    let mut s = connect(path)?;
    let said = |e: wire::WireError| format!("{}: {e}", path.display());
    s.set_write_timeout(Some(ACCEPT_DEADLINE))
        .and_then(|()| s.set_read_timeout(Some(ACCEPT_DEADLINE)))
        .map_err(|e| said(e.into()))?;
    // A service that turned the connection away at once (busy) said so and closed: a write
    // that fails then is reported as what the service said, read below.
    let sent = s.write_all(&wire::request(query, since));
    let refused = |p: &[u8]| {
        format!(
            "the service refused: {}",
            String::from_utf8_lossy(&p[..p.len().min(512)])
        )
    };
    match wire::read_frame(&mut s, 1024) {
        Ok((Kind::Accepted, _)) if sent.is_ok() => {}
        Ok((Kind::Busy, _)) => return Err(format!("the service at {} is busy", path.display())),
        Ok((Kind::Refused, p)) => return Err(refused(&p)),
        Ok((k, _)) => return Err(said(wire::WireError::Unexpected(k))),
        Err(wire::WireError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return Err(format!(
                "the service at {} did not take the request within {} ms",
                path.display(),
                ACCEPT_DEADLINE.as_millis()
            ))
        }
        Err(e) => {
            return Err(match sent {
                Err(w) => said(w.into()),
                Ok(()) => said(e),
            })
        }
    }
    s.set_read_timeout(Some(ANSWER_DEADLINE))
        .map_err(|e| said(e.into()))?;
    let (kind, payload) = wire::read_frame(&mut s, wire::MAX_ANSWER).map_err(said)?;
    match kind {
        Kind::Answer => {}
        Kind::Refused => return Err(refused(&payload)),
        Kind::Busy => return Err(format!("the service at {} is busy", path.display())),
        k => return Err(said(wire::WireError::Unexpected(k))),
    }
    let a = wire::decode_answer(&payload).map_err(said)?;
    let mut bytes = payload.len();
    let mut decode = Duration::ZERO;
    let mut tasks = Vec::with_capacity((a.tasks as usize).min(1 << 20));
    for _ in 0..a.chunks {
        let (kind, payload) = wire::read_frame(&mut s, wire::MAX_ANSWER).map_err(said)?;
        match kind {
            Kind::Tasks => {}
            Kind::Refused => return Err(refused(&payload)),
            k => return Err(said(wire::WireError::Unexpected(k))),
        }
        bytes += payload.len();
        let t = Instant::now();
        wire::decode_tasks(&payload, &mut tasks).map_err(said)?;
        decode += t.elapsed();
    }
    if tasks.len() as u64 != a.tasks {
        return Err(said(wire::WireError::Malformed(Kind::Tasks)));
    }
    if !a.full && since.is_none() {
        return Err(said(wire::WireError::Malformed(Kind::Answer)));
    }
    Ok(Answered {
        generation: a.generation,
        full: a.full,
        gone: a.gone,
        bytes,
        decode,
        snapshot: Snapshot {
            taken_at_unix_ns: a.taken_at_unix_ns,
            taken_at_boottime_ns: a.taken_at_boottime_ns,
            boot_time_unix_s: a.boot_time_unix_s,
            backend: Backend::Service,
            tasks,
            stats: a.stats,
        },
        pass: a.pass,
        pass_ns: a.pass_ns,
        shared_by: a.shared_by,
    })
}

/// A [`Collector`] (and a whole-pass [`LiveCollector`]) answered by the query service, with
/// /proc read instead whenever the service does not answer.
#[derive(Debug)]
pub struct ServiceCollector {
    socket: PathBuf,
    proc_root: PathBuf,
    units: Units,
    /// `--backend service`: a request the service does not answer is an error, not a read
    /// of /proc.
    insist: bool,
    /// The caller's own /proc: `fill` (the rows a screen shows, read with the caller's own
    /// permissions), and any pass the service did not answer. Opened when first needed.
    local: Option<ProcfsCollector>,
    report: PassReport,
    /// Why the last pass was read from /proc instead (the service did not answer): what
    /// [`Collector::answered_otherwise`] says until the service answers again.
    fallback: Option<String>,
    /// The query and generation of the last whole or changed answer a live view holds.
    last: Option<(Query, u64)>,
    /// Answers of only the changed rows since the last whole one: every
    /// [`crate::collector::CHANGES_FULL_EVERY`]th refresh asks a whole answer again, for what the
    /// caller may see of a row that changed nothing else (a process turned non-dumpable, a
    /// /proc remounted with hidepid).
    changed_answers: u32,
    /// The boot time this caller's own /proc gives (`btime` of its `stat`; 0 where it
    /// hides it, `subset=pid`), read once: what its start times are reckoned from, as a
    /// procfs read would, never the service's.
    boot_time_unix_s: Option<u64>,
}

impl ServiceCollector {
    /// A collector asking the service at `socket`, reading `proc_root` with `units` when it
    /// does not answer (or failing then, when `insist`).
    pub fn new(socket: &Path, proc_root: &Path, units: Units, insist: bool) -> ServiceCollector {
        ServiceCollector {
            socket: socket.to_path_buf(),
            proc_root: proc_root.to_path_buf(),
            units,
            insist,
            local: None,
            report: PassReport::new(Backend::Service, String::new()),
            fallback: None,
            last: None,
            changed_answers: 0,
            boot_time_unix_s: None,
        }
    }

    fn local(&mut self) -> Result<&mut ProcfsCollector, Error> {
        if self.local.is_none() {
            let p = ProcfsCollector::with_root(&self.proc_root)?.with_units(self.units);
            self.local = Some(p);
        }
        Ok(self.local.as_mut().expect("opened above"))
    }
}

impl ServiceCollector {
    /// One request: the answer (whole, or what changed since `since`), else /proc's whole
    /// snapshot (or an error when insisting).
    fn request(
        &mut self,
        query: &Query,
        since: Option<u64>,
    ) -> Result<crate::collector::Changes, Error> {
        let started = Instant::now();
        match ask(&self.socket, query, since) {
            Ok(mut a) => {
                a.snapshot.boot_time_unix_s = *self.boot_time_unix_s.get_or_insert_with(|| {
                    crate::machine::boot_time_unix_s(&self.proc_root).unwrap_or(0)
                });
                let total = started.elapsed();
                let pass = Duration::from_nanos(a.pass_ns);
                let mut r = PassReport::new(Backend::Service, String::new());
                r.pass = format!(
                    "the service's pass: {} ({} {}tasks, {} bytes{})",
                    a.pass,
                    a.snapshot.tasks.len(),
                    if a.full { "" } else { "changed " },
                    a.bytes,
                    if a.shared_by > 1 {
                        format!(", shared by {} requests", a.shared_by)
                    } else {
                        String::new()
                    }
                );
                r.phases = vec![
                    ("service pass", pass),
                    ("answer", total.saturating_sub(pass + a.decode)),
                    ("decode", a.decode),
                ];
                if !a.full {
                    r.changed = Some(a.snapshot.tasks.len());
                }
                self.report = r;
                self.fallback = None;
                self.last = Some((query.clone(), a.generation));
                self.changed_answers = if a.full { 0 } else { self.changed_answers + 1 };
                Ok(crate::collector::Changes {
                    snapshot: a.snapshot,
                    full: a.full,
                    gone: a.gone,
                })
            }
            Err(why) if self.insist => Err(Error::Unsupported(format!(
                "the query service did not answer: {why}"
            ))),
            Err(why) => {
                self.last = None;
                let mut snap = self.local()?.snapshot(query)?;
                snap.backend = Backend::Procfs;
                self.report = self.local()?.report();
                self.fallback = Some(format!("procfs: the query service did not answer: {why}"));
                Ok(crate::collector::Changes {
                    snapshot: snap,
                    full: true,
                    gone: Vec::new(),
                })
            }
        }
    }

    /// The generation of the last answer when it was to `query` (and no whole answer is due).
    fn since(&self, query: &Query) -> Option<u64> {
        if self.changed_answers + 1 >= crate::collector::CHANGES_FULL_EVERY {
            return None;
        }
        self.last
            .as_ref()
            .filter(|(q, _)| q == query)
            .map(|&(_, g)| g)
    }
}

impl Collector for ServiceCollector {
    fn snapshot(&mut self, query: &Query) -> Result<Snapshot, Error> {
        Ok(self.request(query, None)?.snapshot)
    }

    fn fill(&self, ids: &[(i32, i32)], groups: Groups) -> Result<Filled, Error> {
        // The few rows a screen shows, read from the caller's own /proc with its own
        // permissions: exactly what procfs gives it, without a round trip.
        match &self.local {
            Some(p) => Collector::fill(p, ids, groups),
            None => Collector::fill(
                &ProcfsCollector::with_root(&self.proc_root)?.with_units(self.units),
                ids,
                groups,
            ),
        }
    }

    fn report(&self) -> PassReport {
        self.report.clone()
    }

    fn answered_otherwise(&self) -> Option<&str> {
        self.fallback.as_deref()
    }
}

/// A live view (`top`) through the service: each refresh is a whole pass in the service, of
/// which only the rows that differ from the last answer travel (and are decoded and handled
/// here); a whole answer when the service no longer has the last one, or the query changed.
impl LiveCollector for ServiceCollector {
    fn changes(&mut self, query: &Query) -> Result<crate::collector::Changes, Error> {
        let since = self.since(query);
        self.request(query, since)
    }

    fn next_changes_full(&self, query: &Query) -> bool {
        self.since(query).is_none()
    }
}
