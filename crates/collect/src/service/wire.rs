//! The framing both sides of the query socket speak: a 12-byte header (magic and version,
//! kind, payload length) and a postcard payload of the model's own types. Every byte from
//! the other side is hostile: lengths are bounded before anything is allocated, a frame of
//! another version or kind is an error said in words, never a panic.
//!
//! A conversation is one query: the client sends `Request`; the service answers `Accepted` at
//! once (so a client can tell a live service from a stuck one within its deadline), then
//! `Answer` after its pass (what the pass was, and how many tasks follow in how many `Tasks`
//! frames), or `Refused` (with why) or `Busy` instead. The tasks come in chunks so that the
//! service encodes one while the client decodes the one before, and holds one chunk's bytes
//! per client, not a whole answer.

use std::borrow::Cow;
use std::io::Read;

use serde::{Deserialize, Serialize};
use tasksnap_model::{Query, SnapshotStats, Task, TaskId};

/// The header's first three bytes.
pub const MAGIC: [u8; 3] = *b"TSQ";
/// The protocol version, the header's fourth byte: a peer of another version is refused.
pub const VERSION: u8 = 1;
/// Header bytes before each payload.
pub const HEADER_LEN: usize = 12;
/// The largest request the service reads (a query is a few dozen bytes).
pub const MAX_REQUEST: usize = 4096;
/// The largest frame a client reads (a chunk of [`CHUNK_TASKS`] tasks with the longest
/// command lines the kernel allows fits).
pub const MAX_ANSWER: usize = 1 << 30;
/// Tasks per `Tasks` frame, at most.
pub const CHUNK_TASKS: usize = 2048;
/// About the most bytes of tasks per `Tasks` frame (a frame of long command lines holds
/// fewer tasks).
pub const CHUNK_BYTES: usize = 1 << 20;
/// The most tasks an answer may announce (pid_max is at most 2^22, threads included).
pub const MAX_TASKS: u64 = 1 << 23;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Client to service: a [`Query`].
    Request = 1,
    /// Service to client, at once: the request was read and a pass will answer it.
    Accepted = 2,
    /// Service to client: what the pass was, and how many tasks follow ([`Answer`]).
    Answer = 3,
    /// Service to client: not answered, and why (UTF-8 text); the client reads /proc.
    Refused = 4,
    /// Service to client: too many clients or requests now; the client reads /proc.
    Busy = 5,
    /// Service to client: a chunk of an answer's tasks.
    Tasks = 6,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Request,
            2 => Kind::Accepted,
            3 => Kind::Answer,
            4 => Kind::Refused,
            5 => Kind::Busy,
            6 => Kind::Tasks,
            _ => return None,
        })
    }
}

/// What went wrong reading a frame.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The connection failed or timed out.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The other side closed the connection before a whole frame.
    #[error("the connection closed mid-frame")]
    Closed,
    /// Not this protocol, or another version of it.
    #[error("not a tasksnap query frame (version {found}, this is {VERSION})")]
    Foreign {
        /// The version byte found (0 when the magic did not match).
        found: u8,
    },
    /// A kind this version does not know.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// A length beyond what this side reads.
    #[error("a frame of {len} bytes is over the limit of {max}")]
    TooLong {
        /// The length the header says.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A payload that does not decode.
    #[error("a malformed {0:?} payload")]
    Malformed(Kind),
    /// A frame of a kind not expected here.
    #[error("a {0:?} frame where it makes no sense")]
    Unexpected(Kind),
}

/// A query, as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Which tasks and groups.
    pub query: Query,
    /// The generation of this client's last answer to the same query, when it holds that
    /// answer's rows (a live view): the service may then send only the rows that differ
    /// from it, and the identities of those gone.
    pub since: Option<u64>,
}

/// The answer to a request: the pass it comes from and what follows. The same layout both
/// ways.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// Wall-clock time the pass started, ns since the Unix epoch.
    pub taken_at_unix_ns: u64,
    /// The kernel's boot clock when the pass started, ns ([`crate::clock`]).
    pub taken_at_boottime_ns: u64,
    /// Boot time, seconds since the Unix epoch.
    pub boot_time_unix_s: u64,
    /// What the pass could not read.
    pub stats: SnapshotStats,
    /// How long the pass took in the service, ns.
    pub pass_ns: u64,
    /// How the service's pass was taken (its collector's report), for `-v`.
    pub pass: String,
    /// Requests this pass answered (coalesced), this one included.
    pub shared_by: u32,
    /// The rows the caller may see, which follow in `chunks` `Tasks` frames.
    pub tasks: u64,
    /// How many `Tasks` frames follow.
    pub chunks: u32,
    /// This pass's generation, for the client's next `since`.
    pub generation: u64,
    /// True when the rows are every row the caller may see; false when they are the rows
    /// that differ from the answer of the request's `since` (new or changed), and `gone`
    /// lists the rows of that answer the caller sees no more.
    pub full: bool,
    /// See `full`.
    pub gone: Vec<TaskId>,
}

/// A frame with an empty payload.
pub fn empty(kind: Kind) -> Vec<u8> {
    frame(kind, |_| Ok(())).unwrap_or_default()
}

/// A frame of `kind` whose payload `fill` appends to the buffer (the header's length is
/// patched after).
fn frame(
    kind: Kind,
    fill: impl FnOnce(&mut Vec<u8>) -> Result<(), postcard::Error>,
) -> Result<Vec<u8>, postcard::Error> {
    let mut buf = Vec::with_capacity(64);
    buf.extend_from_slice(&MAGIC);
    buf.push(VERSION);
    buf.push(kind as u8);
    buf.extend_from_slice(&[0; 3]);
    buf.extend_from_slice(&[0; 4]);
    fill(&mut buf)?;
    let len = (buf.len() - HEADER_LEN) as u32;
    buf[8..12].copy_from_slice(&len.to_le_bytes());
    Ok(buf)
}

/// A serialized value appended to `buf`.
fn append<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) -> Result<(), postcard::Error> {
    let v = std::mem::take(buf);
    *buf = postcard::to_extend(value, v)?;
    Ok(())
}

/// The frame of a request (`since`: see [`Request::since`]).
pub fn request(query: &Query, since: Option<u64>) -> Vec<u8> {
    frame(Kind::Request, |b| {
        append(
            b,
            &Request {
                query: query.clone(),
                since,
            },
        )
    })
    .unwrap_or_default()
}

/// The frame of an answer's head.
pub fn answer(a: &Answer) -> Result<Vec<u8>, postcard::Error> {
    frame(Kind::Answer, |b| append(b, a))
}

/// The frame of a chunk of an answer's tasks.
pub fn tasks(rows: &[Cow<'_, Task>]) -> Result<Vec<u8>, postcard::Error> {
    frame(Kind::Tasks, |b| {
        b.reserve(rows.len() * 160);
        append(b, rows)
    })
}

/// The frame of a refusal, saying why.
pub fn refused(why: &str) -> Vec<u8> {
    let mut why = why.as_bytes().to_vec();
    why.truncate(1024);
    frame(Kind::Refused, |b| {
        b.extend_from_slice(&why);
        Ok(())
    })
    .unwrap_or_default()
}

/// Reads one frame of at most `max` payload bytes: its kind and payload.
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<(Kind, Vec<u8>), WireError> {
    let mut h = [0u8; HEADER_LEN];
    r.read_exact(&mut h).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => WireError::Closed,
        _ => WireError::Io(e),
    })?;
    if h[..3] != MAGIC {
        return Err(WireError::Foreign { found: 0 });
    }
    if h[3] != VERSION {
        return Err(WireError::Foreign { found: h[3] });
    }
    let kind = Kind::from_byte(h[4]).ok_or(WireError::UnknownKind(h[4]))?;
    let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    if len > max {
        return Err(WireError::TooLong { len, max });
    }
    // Grown as bytes arrive, not allocated from the header's word: a peer that says 1 GiB
    // and sends nothing costs nothing.
    let mut payload = Vec::with_capacity(len.min(1 << 20));
    let got = r.take(len as u64).read_to_end(&mut payload)?;
    if got < len {
        return Err(WireError::Closed);
    }
    Ok((kind, payload))
}

/// A value that is the whole of `payload` (bytes after it make the payload malformed).
fn whole<'a, T: Deserialize<'a>>(payload: &'a [u8]) -> Option<T> {
    match postcard::take_from_bytes::<T>(payload) {
        Ok((v, [])) => Some(v),
        _ => None,
    }
}

/// The request of a request payload.
pub fn decode_request(payload: &[u8]) -> Result<Request, WireError> {
    whole::<Request>(payload).ok_or(WireError::Malformed(Kind::Request))
}

/// The head of an answer payload, checked: a count beyond [`MAX_TASKS`], or chunks that
/// cannot hold the tasks, is malformed.
pub fn decode_answer(payload: &[u8]) -> Result<Answer, WireError> {
    let a = whole::<Answer>(payload).ok_or(WireError::Malformed(Kind::Answer))?;
    // Every chunk holds at least one task and at most CHUNK_TASKS.
    if a.tasks > MAX_TASKS
        || a.gone.len() as u64 > MAX_TASKS
        || (a.chunks as u64) < a.tasks.div_ceil(CHUNK_TASKS as u64)
        || a.chunks as u64 > a.tasks
    {
        return Err(WireError::Malformed(Kind::Answer));
    }
    Ok(a)
}

/// The tasks of a `Tasks` payload, appended to `into`; at most [`CHUNK_TASKS`]. Each task
/// is decoded in place at the end of `into` (a chunk decoded into a vector of its own and
/// then moved was a tenth of a client's time at 50,000 tasks). On an error, what was
/// appended is the caller's to drop.
pub fn decode_tasks(payload: &[u8], into: &mut Vec<Task>) -> Result<(), WireError> {
    use serde::de::DeserializeSeed;
    let mut de = postcard::Deserializer::from_bytes(payload);
    let malformed = |_| WireError::Malformed(Kind::Tasks);
    AppendTo(into).deserialize(&mut de).map_err(malformed)?;
    match de.finalize() {
        Ok([]) => Ok(()),
        _ => Err(WireError::Malformed(Kind::Tasks)),
    }
}

/// Appends a sequence of at most [`CHUNK_TASKS`] tasks to a vector.
struct AppendTo<'v>(&'v mut Vec<Task>);

impl<'de> serde::de::DeserializeSeed<'de> for AppendTo<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for AppendTo<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at most {CHUNK_TASKS} tasks")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut n = 0;
        while let Some(t) = seq.next_element::<Task>()? {
            n += 1;
            if n > CHUNK_TASKS {
                return Err(serde::de::Error::invalid_length(n, &self));
            }
            self.0.push(t);
        }
        Ok(())
    }
}

#[cfg(any(test, feature = "testing"))]
/// Writes `bytes` whole.
pub fn send(w: &mut impl std::io::Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasksnap_model::{Base, Cred, Groups, Selector, TaskId};

    fn task(pid: i32) -> Task {
        let mut t = Task::new(TaskId {
            tgid: pid,
            tid: pid,
            start_time_ns: 5,
        });
        t.base = Some(Base {
            comm: b"\xff\nodd)".iter().copied().collect(),
            ..Base::default()
        });
        t.cred = Some(Cred::from_owner(65534, 65534));
        t.cmdline = Some(b"a\0b\xfe\0".to_vec());
        t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(b"0::/x\n".to_vec())));
        t
    }

    #[test]
    fn a_request_and_an_answer_round_trip() {
        let q = Query::new(Selector::AllThreads, Groups::all());
        let f = request(&q, Some(7));
        let (k, p) = read_frame(&mut &f[..], MAX_REQUEST).expect("round trip");
        assert_eq!(k, Kind::Request);
        let r = decode_request(&p).expect("round trip");
        assert_eq!((r.query, r.since), (q, Some(7)));

        let tasks = [task(1), task(2)];
        let head = Answer {
            taken_at_unix_ns: 1,
            taken_at_boottime_ns: 2,
            boot_time_unix_s: 3,
            stats: SnapshotStats::default(),
            pass_ns: 4,
            pass: "walk".into(),
            shared_by: 1,
            tasks: 2,
            chunks: 1,
            generation: 9,
            full: false,
            gone: vec![TaskId::default()],
        };
        let f = answer(&head).expect("round trip");
        let (k, p) = read_frame(&mut &f[..], MAX_ANSWER).expect("round trip");
        assert_eq!(k, Kind::Answer);
        let a = decode_answer(&p).expect("round trip");
        assert_eq!((a.tasks, a.chunks, a.pass.as_str()), (2, 1, "walk"));
        assert_eq!((a.generation, a.full, a.gone.len()), (9, false, 1));
        let rows: Vec<Cow<'_, Task>> = tasks.iter().map(Cow::Borrowed).collect();
        let f = super::tasks(&rows).expect("round trip");
        let (k, p) = read_frame(&mut &f[..], MAX_ANSWER).expect("round trip");
        assert_eq!(k, Kind::Tasks);
        let mut got = Vec::new();
        decode_tasks(&p, &mut got).expect("round trip");
        assert_eq!(got, tasks);
        // A head whose chunks cannot hold its tasks, or too many tasks: malformed.
        for (tasks, chunks) in [(2, 0), (2, 3), (MAX_TASKS + 1, 4097), (0, 1), (4097, 2)] {
            let f = answer(&Answer {
                tasks,
                chunks,
                ..head.clone()
            })
            .expect("encode");
            let (_, p) = read_frame(&mut &f[..], MAX_ANSWER).expect("frame");
            assert!(
                decode_answer(&p).is_err(),
                "{tasks} tasks in {chunks} chunks"
            );
        }
    }

    #[test]
    fn hostile_frames_are_errors() {
        // Another protocol, another version, an unknown kind, a lying length, garbage.
        assert!(matches!(
            read_frame(&mut &b"GET / HTTP/1.1\r\n"[..], MAX_REQUEST),
            Err(WireError::Foreign { found: 0 })
        ));
        let mut f = request(&Query::new(Selector::Pid(1), Groups::default()), None);
        f[3] = 9;
        assert!(matches!(
            read_frame(&mut &f[..], MAX_REQUEST),
            Err(WireError::Foreign { found: 9 })
        ));
        f[3] = VERSION;
        f[4] = 77;
        assert!(matches!(
            read_frame(&mut &f[..], MAX_REQUEST),
            Err(WireError::UnknownKind(77))
        ));
        f[4] = Kind::Request as u8;
        f[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read_frame(&mut &f[..], MAX_REQUEST),
            Err(WireError::TooLong { .. })
        ));
        f[8..12].copy_from_slice(&100u32.to_le_bytes());
        assert!(matches!(
            read_frame(&mut &f[..], MAX_REQUEST),
            Err(WireError::Closed)
        ));
        for junk in [&b""[..], b"\xff\xff\xff\xff\xff", b"\x07", b"\x00\x01\x02"] {
            assert!(decode_request(junk).is_err(), "request {junk:?}");
            assert!(decode_answer(junk).is_err(), "answer {junk:?}");
            assert!(
                decode_tasks(junk, &mut Vec::new()).is_err(),
                "tasks {junk:?}"
            );
        }
    }
}
