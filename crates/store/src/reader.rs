//! The read side ([`Store`]): lists a store's segments, gets each segment's frame entries from
//! its index when whole or by walking frame headers otherwise (the live or a crashed segment),
//! answers time-range and seek queries, reads payloads checked, and counts the damage met.
//! It takes no lock and works while a writer appends. Files are opened relative to the
//! store's directory descriptor and only when they are regular files (tasksnap-safefile): a
//! FIFO, a directory or a link named like a segment is skipped with one warning
//! ([`Store::warnings`]), never opened.
//!
//! Order and time are kept apart: the recording's order is the segments' order (the number in
//! their names, which the writer makes ascend) and, within a segment, the frames' order on
//! disk. Times come only from the frames (their headers or the index), never from a segment's
//! name, and may step back (a wall clock set back between two frames): every query filters by
//! the frames' own times and returns frames in recording order, and [`Store::steps_back`] says
//! where the clock went back.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tasksnap_safefile::{Dir, SafeError};

use crate::error::StoreError;
use crate::frame::{self, HEADER_LEN};
use crate::layout::{self, Marker, FOOTER_LEN, INTERNAL_KIND};

/// One frame of the recording, as listed by [`Store::entries`]: what it is and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The frame's time (ns since the Unix epoch).
    pub time_ns: u64,
    /// The frame's kind (opaque to the store).
    pub kind: u8,
    /// A key frame: a replay can start here.
    pub key: bool,
    /// The segment holding it: the number in its file name (its place in recording order,
    /// not a time to trust).
    pub segment_ns: u64,
    /// Where the frame starts in its segment.
    pub offset_bytes: u64,
    /// Its stored (compressed) payload length.
    pub stored_len_bytes: u32,
}

/// What was lost to damage, as met so far by this [`Store`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Damage {
    /// Bytes skipped in the middle of segments (damaged frames).
    pub skipped_bytes: u64,
    /// Segments ending in a torn tail (a crash mid-write, or the live segment's frame being
    /// written at that moment).
    pub torn_tails: u64,
    /// Bytes in those torn tails.
    pub tail_bytes: u64,
    /// Segments whose index was missing or damaged and were walked instead.
    pub unindexed_segments: u64,
    /// Frames listed whose payload then failed its checks in [`Store::read`].
    pub corrupt_frames: u64,
}

/// A segment as [`Store::segments`] describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The segment file.
    pub path: PathBuf,
    /// The number in its name: its place in recording order (the writer makes it the first
    /// frame's time when the clock allows, but it is never read as a time).
    pub start_ns: u64,
    /// Its first and last frame's time, `None` when it holds no readable frame.
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    pub last_ns: Option<u64>,
    /// Its size.
    pub bytes: u64,
    /// Its index was read (it was closed cleanly); otherwise its frames were walked.
    pub indexed: bool,
}

#[derive(Debug, Default)]
struct SegState {
    loaded: bool,
    indexed: bool,
    entries: Vec<Entry>,
    /// For a walked segment: where its last whole frame ends, and the size walked.
    walked_to: u64,
    size_seen: u64,
    skipped_bytes: u64,
    tail_bytes: u64,
    /// A closed segment's first and last frame times from two frame headers (its first
    /// frame's and its index frame's), without decoding its index: `Some(None)` when they
    /// do not give them.
    bounds: Option<Option<(u64, u64)>>,
}

#[derive(Debug)]
struct Seg {
    start_ns: u64,
    path: PathBuf,
    state: Mutex<SegState>,
}

/// A store opened for reading: a snapshot of its segment list (see [`Store::refresh`]).
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    fd: Dir,
    segs: Vec<Seg>,
    /// Entries named like segments that are not regular files, each said once.
    warnings: Vec<String>,
    span: Option<(u64, u64)>,
    corrupt_frames: Mutex<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Store {
    /// Opens the store in `dir`. A missing directory is [`StoreError::Missing`], an empty one
    /// [`StoreError::Empty`], a foreign one [`StoreError::NotAStore`], a newer format
    /// [`StoreError::NewerVersion`]. A store with no frames is valid ([`Store::span`] is `None`).
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let fd = match Dir::open(dir) {
            Ok(fd) => fd,
            Err(e) if e.is_not_found() => {
                return Err(StoreError::Missing {
                    path: dir.to_path_buf(),
                })
            }
            Err(SafeError::NotDirectory { .. }) => {
                return Err(StoreError::NotAStore {
                    path: dir.to_path_buf(),
                    why: "it is not a directory".into(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        if layout::read_marker(&fd)? == Marker::Absent {
            if fd.names()?.is_empty() {
                return Err(StoreError::Empty {
                    path: dir.to_path_buf(),
                });
            }
            return Err(StoreError::NotAStore {
                path: dir.to_path_buf(),
                why: format!("it has no {} marker file", layout::MARKER_NAME),
            });
        }
        let mut store = Store {
            dir: dir.to_path_buf(),
            fd,
            segs: Vec::new(),
            warnings: Vec::new(),
            span: None,
            corrupt_frames: Mutex::new(0),
        };
        store.refresh()?;
        Ok(store)
    }

    /// Lists the segments again (new ones, deleted ones) and recomputes the span; what was
    /// already read of segments still there is kept.
    pub fn refresh(&mut self) -> Result<(), StoreError> {
        let layout::Listing {
            segments: listed,
            skipped,
        } = layout::scan_segments(&self.fd)?;
        for (path, kind) in skipped {
            let w = format!(
                "{}: named like a segment but {}; skipped",
                path.display(),
                kind.describe()
            );
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        let mut old = std::mem::take(&mut self.segs).into_iter().peekable();
        for l in listed {
            while old.next_if(|s| s.start_ns < l.start_ns).is_some() {}
            let seg = old.next_if(|s| s.start_ns == l.start_ns).unwrap_or(Seg {
                start_ns: l.start_ns,
                path: l.path,
                state: Mutex::new(SegState::default()),
            });
            self.segs.push(seg);
        }
        self.span = self.compute_span()?;
        Ok(())
    }

    fn compute_span(&self) -> Result<Option<(u64, u64)>, StoreError> {
        // From every segment's frames: a name is not a time, and after a clock step back the
        // earliest frame need not be in the first segment.
        let mut span: Option<(u64, u64)> = None;
        for i in 0..self.segs.len() {
            if let Some((a, b)) = self.bounds(i)? {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
        }
        Ok(span)
    }

    /// The earliest and the latest frame time, as of opening (or the last
    /// [`Store::refresh`]); `None` when nothing was recorded. After a clock step back the
    /// first frame recorded need not be the earliest (see [`Store::steps_back`]).
    pub fn span(&self) -> Option<(u64, u64)> {
        self.span
    }

    /// Every entry of the recording in recording order (segment by segment, each in its
    /// order on disk), store-internal frames excluded.
    fn all(&self) -> Result<Vec<Entry>, StoreError> {
        let mut out = Vec::new();
        for i in 0..self.segs.len() {
            self.with_entries(i, |es| out.extend_from_slice(es))?;
        }
        Ok(out)
    }

    /// Every frame entry with a time in `[from_ns, to_ns]`, in recording order (which is
    /// time order unless the clock stepped back), across segments (store-internal frames
    /// excluded).
    pub fn entries(&self, from_ns: u64, to_ns: u64) -> Result<Vec<Entry>, StoreError> {
        let mut all = self.all()?;
        all.retain(|e| (from_ns..=to_ns).contains(&e.time_ns));
        Ok(all)
    }

    /// What reading the window `[from_ns, to_ns]` in order needs: in each segment that has
    /// frames in the window, every entry from the last key frame of `kind` at or before its
    /// first frame in the window through its last frame in the window, in recording order.
    /// The frames before the window are there to decode the first ones in it (the caller
    /// skips what falls outside); a frame in the window with no key before it in its segment
    /// comes without one.
    pub fn window(&self, kind: u8, from_ns: u64, to_ns: u64) -> Result<Vec<Entry>, StoreError> {
        let mut out = Vec::new();
        let inside = |e: &Entry| (from_ns..=to_ns).contains(&e.time_ns);
        for i in 0..self.segs.len() {
            self.with_entries(i, |es| {
                let (Some(first), Some(last)) =
                    (es.iter().position(inside), es.iter().rposition(inside))
                else {
                    return;
                };
                let start = es
                    .get(..=first)
                    .and_then(|h| h.iter().rposition(|e| e.key && e.kind == kind))
                    .unwrap_or(first);
                out.extend_from_slice(es.get(start..=last).unwrap_or_default());
            })?;
        }
        Ok(out)
    }

    /// For seeking to `t_ns`: the frame in force then is the one with the latest time at or
    /// before `t_ns` (of equal times, the one recorded last); this returns the last key frame
    /// of `kind` at or before it in its segment, then every entry (of any kind) after that key
    /// up to it, in recording order. `None` when `t_ns` is outside the recording or that
    /// segment has no such key frame before it.
    ///
    /// When the clock stepped back, times between the step's two ends occur twice: the frame
    /// closest before `t_ns` answers, whichever part of the recording holds it; ties go to
    /// the later one (the clock after a correction is the one to trust).
    pub fn seek(&self, kind: u8, t_ns: u64) -> Result<Option<Vec<Entry>>, StoreError> {
        if self
            .span
            .is_none_or(|(first, last)| t_ns < first || t_ns > last)
        {
            return Ok(None);
        }
        // The latest time at or before t_ns in each segment: its last frame's when the whole
        // segment is before t_ns (no index decoded for that), else from its entries.
        let latest_upto = |es: &[Entry]| {
            es.iter()
                .enumerate()
                .filter(|(_, e)| e.time_ns <= t_ns)
                .max_by_key(|&(j, e)| (e.time_ns, j))
                .map(|(j, e)| (e.time_ns, j))
        };
        let mut best: Option<(u64, usize)> = None;
        for i in 0..self.segs.len() {
            let Some((first, last)) = self.bounds(i)? else {
                continue;
            };
            let time = if first > t_ns {
                continue;
            } else if last <= t_ns {
                last
            } else {
                match self.with_entries(i, latest_upto)? {
                    Some((time, _)) => time,
                    None => continue,
                }
            };
            // Of equal times, the later segment.
            if best.is_none_or(|(bt, _)| time >= bt) {
                best = Some((time, i));
            }
        }
        let Some((_, i)) = best else {
            return Ok(None);
        };
        self.with_entries(i, |es| {
            let (_, j) = latest_upto(es)?;
            let head = es.get(..=j)?;
            let k = head.iter().rposition(|e| e.key && e.kind == kind)?;
            head.get(k..).map(<[Entry]>::to_vec)
        })
    }

    /// The end of the recording: the last key frame of `kind` in the last segment that has
    /// one, then every entry after it, in recording order (whatever their times). `None` when
    /// no segment holds such a key frame.
    pub fn seek_last(&self, kind: u8) -> Result<Option<Vec<Entry>>, StoreError> {
        for i in (0..self.segs.len()).rev() {
            let found = self.with_entries(i, |es| {
                let k = es.iter().rposition(|e| e.key && e.kind == kind)?;
                es.get(k..).map(<[Entry]>::to_vec)
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Where the clock stepped back, in recording order: for each frame whose time is before
    /// the frame recorded just before it, `(that earlier frame's time, this frame's time)`.
    /// Empty for a recording in time order (the usual case). A closed segment not read yet
    /// is judged by its first and last frame's times (the writer keeps a segment's times in
    /// order), so this decodes no index that a seek does not.
    pub fn steps_back(&self) -> Result<Vec<(u64, u64)>, StoreError> {
        let mut out = Vec::new();
        let mut prev: Option<u64> = None;
        let mut step = |t: u64, out: &mut Vec<(u64, u64)>| {
            if let Some(p) = prev.filter(|&p| t < p) {
                out.push((p, t));
            }
            prev = Some(t);
        };
        for i in 0..self.segs.len() {
            let loaded = self.segs.get(i).is_some_and(|s| lock(&s.state).loaded);
            if loaded {
                let times: Vec<u64> =
                    self.with_entries(i, |es| es.iter().map(|e| e.time_ns).collect())?;
                for t in times {
                    step(t, &mut out);
                }
            } else if let Some((first, last)) = self.bounds(i)? {
                step(first, &mut out);
                step(last, &mut out);
            }
        }
        Ok(out)
    }

    /// The payload of `e`, its CRCs checked and decompressed; a damaged frame is
    /// [`StoreError::Corrupt`], never a torn payload.
    pub fn read(&self, e: &Entry) -> Result<Vec<u8>, StoreError> {
        let name = layout::segment_name(e.segment_ns);
        let path = self.dir.join(&name);
        let corrupt = |what: &str| {
            *lock(&self.corrupt_frames) += 1;
            StoreError::Corrupt {
                path: path.clone(),
                offset_bytes: e.offset_bytes,
                what: what.into(),
            }
        };
        let f = match self.fd.open_read(&name) {
            Ok(f) => f,
            Err(err) if err.is_not_found() => return Err(StoreError::Expired { path }),
            Err(err) => return Err(err.into()),
        };
        if e.stored_len_bytes > frame::MAX_LEN_BYTES {
            return Err(corrupt("the entry declares an impossible length"));
        }
        let mut bytes = vec![0u8; HEADER_LEN + e.stored_len_bytes as usize];
        match f.read_exact_at(&mut bytes, e.offset_bytes) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => {
                return Err(corrupt("the segment ends inside this frame"))
            }
            Err(err) => return Err(StoreError::io(path, err)),
        }
        let Some((h, payload)) = frame::decode(&bytes) else {
            return Err(corrupt(
                "the frame fails its checksum or does not decompress",
            ));
        };
        if h.time_ns != e.time_ns || h.kind != e.kind || h.key != e.key {
            return Err(corrupt("the frame is not the one the index lists"));
        }
        Ok(payload)
    }

    /// The damage met so far: bytes skipped, torn tails, segments without a usable index,
    /// frames that failed their checks when read.
    pub fn damage(&self) -> Damage {
        let mut d = Damage {
            corrupt_frames: *lock(&self.corrupt_frames),
            ..Damage::default()
        };
        for s in &self.segs {
            let st = lock(&s.state);
            if st.loaded && !st.indexed {
                d.unindexed_segments += 1;
                d.skipped_bytes += st.skipped_bytes;
                if st.tail_bytes > 0 {
                    d.torn_tails += 1;
                    d.tail_bytes += st.tail_bytes;
                }
            }
        }
        d
    }

    /// Every segment: path, start, first and last frame time, size, whether it was indexed.
    /// Reads each segment's index (or walks it) if not done yet; a segment that cannot be read
    /// shows no times.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        (0..self.segs.len())
            .filter_map(|i| {
                let s = self.segs.get(i)?;
                let times = self
                    .with_entries(i, |es| {
                        let first = es.iter().map(|e| e.time_ns).min();
                        (first, es.iter().map(|e| e.time_ns).max())
                    })
                    .unwrap_or((None, None));
                let st = lock(&s.state);
                Some(SegmentInfo {
                    path: s.path.clone(),
                    start_ns: s.start_ns,
                    first_ns: times.0,
                    last_ns: times.1,
                    bytes: s
                        .path
                        .file_name()
                        .and_then(|n| self.fd.stat(n).ok().flatten())
                        .map_or(st.size_seen, |m| m.bytes),
                    indexed: st.indexed,
                })
            })
            .collect()
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's open directory (to compare with another by device and inode).
    pub fn directory(&self) -> &Dir {
        &self.fd
    }

    /// Entries named like segments that are not regular files (a FIFO, a directory, a
    /// link), one message each: skipped, never opened.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Segment `i`'s earliest and latest frame times; `None` when it holds no frame. A
    /// segment closed with an index answers from two frame headers (its first frame's, and
    /// its index frame's, which carries its last frame's time: the writer keeps a segment's
    /// times in order, a step back starts a new one), so a seek in a long recording decodes
    /// one index, not all of them; any other segment is loaded.
    fn bounds(&self, i: usize) -> Result<Option<(u64, u64)>, StoreError> {
        let Some(seg) = self.segs.get(i) else {
            return Ok(None);
        };
        {
            let mut st = lock(&seg.state);
            if st.loaded && st.indexed {
                return Ok(min_max(&st.entries));
            }
            if !st.loaded {
                if let Some(b) = st.bounds {
                    return Ok(b);
                }
                let b = header_bounds(&self.fd, &seg.path);
                st.bounds = Some(b);
                if b.is_some() {
                    return Ok(b);
                }
            }
        }
        self.with_entries(i, min_max)
    }

    /// Runs `f` on segment `i`'s entries, loading them first (from the index, or by walking;
    /// a walked segment is walked on from where it was when it has grown).
    fn with_entries<R>(&self, i: usize, f: impl FnOnce(&[Entry]) -> R) -> Result<R, StoreError> {
        let Some(seg) = self.segs.get(i) else {
            return Ok(f(&[]));
        };
        let mut st = lock(&seg.state);
        if !st.loaded || !st.indexed {
            load(&self.fd, seg, &mut st)?;
        }
        Ok(f(&st.entries))
    }
}

fn min_max(es: &[Entry]) -> Option<(u64, u64)> {
    let first = es.iter().map(|e| e.time_ns).min()?;
    Some((first, es.iter().map(|e| e.time_ns).max().unwrap_or(first)))
}

/// A closed segment's (first, last) frame time from its first frame's header and its index
/// frame's (found through the footer); `None` when either is not there or they disagree.
fn header_bounds(dir: &Dir, path: &Path) -> Option<(u64, u64)> {
    let file = dir.open_read(path.file_name()?).ok()?;
    let size = file.metadata().ok()?.len();
    let mut footer = [0u8; FOOTER_LEN];
    file.read_exact_at(&mut footer, size.checked_sub(FOOTER_LEN as u64)?)
        .ok()?;
    let at = layout::decode_footer(&footer).filter(|&at| at < size)?;
    let mut h = [0u8; HEADER_LEN];
    file.read_exact_at(&mut h, at).ok()?;
    let index = frame::decode_header(&h).filter(|h| h.kind == INTERNAL_KIND)?;
    file.read_exact_at(&mut h, 0).ok()?;
    let first = frame::decode_header(&h).filter(|h| h.kind != INTERNAL_KIND)?;
    (first.time_ns <= index.time_ns).then_some((first.time_ns, index.time_ns))
}

fn load(dir: &Dir, seg: &Seg, st: &mut SegState) -> Result<(), StoreError> {
    let path = &seg.path;
    let name = path.file_name().unwrap_or(path.as_os_str());
    let file: File = match dir.open_read(name) {
        Ok(f) => f,
        // Deleted by retention since listed, or replaced by something that is not a regular
        // file (never opened): nothing to read there.
        Err(e) if e.is_not_found() || e.is_refusal() => {
            st.loaded = true;
            st.indexed = true;
            st.entries.clear();
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let size = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
    if st.loaded && size == st.size_seen {
        return Ok(());
    }
    let to_entry = |time_ns, kind, key, offset_bytes, stored_len_bytes| Entry {
        time_ns,
        kind,
        key,
        segment_ns: seg.start_ns,
        offset_bytes,
        stored_len_bytes,
    };
    // A whole segment ends with its index frame and footer.
    let mut data_end = size;
    if size >= FOOTER_LEN as u64 {
        let mut footer = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut footer, size - FOOTER_LEN as u64)
            .map_err(|e| StoreError::io(path, e))?;
        if let Some(at) = layout::decode_footer(&footer).filter(|&at| at < size) {
            data_end = size - FOOTER_LEN as u64;
            let len = usize::try_from(data_end - at).unwrap_or(usize::MAX);
            if len <= HEADER_LEN + frame::MAX_LEN_BYTES as usize {
                let mut bytes = vec![0u8; len];
                file.read_exact_at(&mut bytes, at)
                    .map_err(|e| StoreError::io(path, e))?;
                if let Some(index) = layout::decode_index(&bytes, at) {
                    st.entries = index
                        .iter()
                        .map(|e| {
                            to_entry(e.time_ns, e.kind, e.key, e.offset_bytes, e.stored_len_bytes)
                        })
                        .collect();
                    st.entries.sort_by_key(|e| e.offset_bytes);
                    st.loaded = true;
                    st.indexed = true;
                    st.size_seen = size;
                    st.skipped_bytes = 0;
                    st.tail_bytes = 0;
                    return Ok(());
                }
            }
        }
    }
    // No usable index: walk the frames from where the last walk stopped.
    if !st.loaded || size < st.walked_to {
        *st = SegState::default();
    }
    let from = st.walked_to;
    let len = usize::try_from(data_end.saturating_sub(from)).unwrap_or(usize::MAX);
    let mut bytes = vec![0u8; len];
    let got = read_up_to(&file, &mut bytes, from).map_err(|e| StoreError::io(path, e))?;
    bytes.truncate(got);
    let w = frame::walk(&bytes);
    st.entries.extend(
        w.frames
            .iter()
            .filter(|f| f.header.kind != INTERNAL_KIND)
            .map(|f| {
                to_entry(
                    f.header.time_ns,
                    f.header.kind,
                    f.header.key,
                    from + f.offset_bytes,
                    f.header.compressed_len_bytes,
                )
            }),
    );
    st.entries.sort_by_key(|e| e.offset_bytes);
    st.skipped_bytes += w.skipped_bytes;
    st.tail_bytes = w.tail_bytes;
    st.walked_to = from + w.end_bytes;
    st.size_seen = size;
    st.loaded = true;
    st.indexed = false;
    Ok(())
}

/// Reads as many bytes as there are at `at` (the file may be shorter than when measured).
fn read_up_to(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let Some(rest) = buf.get_mut(done..) else {
            break;
        };
        match f.read_at(rest, at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
