//! The write side ([`Writer`]): one writer per store (an exclusive `flock`), appending frames
//! to the current segment with one write(2) each, rolling segments by time, writing each
//! segment's index when it closes, syncing at the documented points and enforcing retention
//! (by age and by size) while recording. Every file is created, opened and removed relative
//! to the store's directory descriptor (tasksnap-safefile), in a directory that is the
//! recording user's own and nobody else may write to.
//!
//!
//! Frames are kept in the order they are appended, whatever their times: a time before the
//! last one (the wall clock stepped back) starts a new segment, is kept, and is said once in
//! [`Writer::take_warnings`]. Segment names ascend in that order; they are a sequence, never
//! read back as times (retention by age goes by the frames' own times).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use tasksnap_safefile::{Dir, SafeError};

use crate::error::StoreError;
use crate::frame;
use crate::layout::{self, IndexEntry, Marker, INTERNAL_KIND, LOCK_NAME, MARKER_NAME};

/// How a [`Writer`] cuts and trims the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// A new segment starts when a frame's time is this far past the current segment's first
    /// frame (default one hour).
    pub segment_span_ns: u64,
    /// Delete whole segments once all their frames are older than this (measured from the
    /// newest frame appended). `None`: keep forever.
    pub retain_for_ns: Option<u64>,
    /// Delete the oldest whole segments while the store is larger than this. The segment being
    /// written is never deleted, so the store can exceed this by at most that segment.
    /// `None`: no limit.
    pub max_size_bytes: Option<u64>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            segment_span_ns: 3600 * 1_000_000_000,
            retain_for_ns: None,
            max_size_bytes: None,
        }
    }
}

/// A closed segment the writer may delete for retention.
#[derive(Debug)]
struct Old {
    /// The number in its name (its place in recording order).
    start_ns: u64,
    path: PathBuf,
    bytes: u64,
    /// Its latest frame time (`None`: no readable frame): retention by age deletes it once
    /// this is older than `retain_for` before the newest frame appended.
    last_ns: Option<u64>,
}

/// The segment being written.
#[derive(Debug)]
struct Current {
    file: File,
    path: PathBuf,
    start_ns: u64,
    /// The first frame's time: the segment rolls at `base_ns + segment_span_ns`.
    base_ns: u64,
    /// Bytes of whole frames written.
    len_bytes: u64,
    last_ns: u64,
    /// The latest frame time in it.
    max_ns: u64,
    index: Vec<IndexEntry>,
}

/// The store's single writer. See the crate docs for the sync points and crash behaviour.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    fd: Dir,
    opts: WriterOptions,
    lock: File,
    old: VecDeque<Old>,
    cur: Option<Current>,
    last_ns: Option<u64>,
    /// [`Writer::end_segment`] was called: the next append opens a new segment.
    end_asked: bool,
    stopped: bool,
    warnings: Vec<String>,
    buf: Vec<u8>,
}

fn dir_is_empty_but_ours(dir: &Dir) -> Result<bool, StoreError> {
    for name in dir.names()? {
        // The lock, and a marker temporary a crash left (today's, or the fixed name of
        // earlier versions).
        let ours = name == LOCK_NAME
            || name == OsStr::new(&format!("{MARKER_NAME}.tmp"))
            || tasksnap_safefile::is_temp_of(&name, OsStr::new(MARKER_NAME));
        if !ours {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The file name of a path the writer made (its segments are all in its directory).
fn name_of(path: &Path) -> &OsStr {
    path.file_name().unwrap_or(path.as_os_str())
}

impl Writer {
    /// Opens `dir` for recording: creates it if missing (mode 0700), checks or creates the
    /// marker file with the format version, takes the lock. An existing store is continued
    /// (the first append starts a new segment). Refused ([`StoreError::Unsafe`]) when `dir`
    /// is a symbolic link, is not owned by the caller's effective uid, is writable by group
    /// or others, or lies below a directory another user could use to swap it.
    pub fn create(dir: &Path, opts: WriterOptions) -> Result<Writer, StoreError> {
        let fd = match Dir::create_private(dir, 0o700) {
            Ok(fd) => fd,
            Err(SafeError::NotDirectory { kind, .. }) => {
                return Err(StoreError::NotAStore {
                    path: dir.to_path_buf(),
                    why: format!("it is {}, not a directory", kind.describe()),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let marker = layout::read_marker(&fd)?;
        if marker == Marker::Absent && !dir_is_empty_but_ours(&fd)? {
            return Err(StoreError::NotAStore {
                path: dir.to_path_buf(),
                why: "the directory holds other files and no store marker".into(),
            });
        }
        let lock = layout::lock(&fd)?;
        // Re-read under the lock: another writer may have created the store meanwhile.
        if layout::read_marker(&fd)? == Marker::Absent {
            layout::write_marker(&fd)?;
        }
        // The segments already there, with their frames' times (never their names'): what
        // retention by age needs, and the last time recorded, so that a clock that stepped
        // back while no recorder ran is noticed at the first append. The reader skips (and
        // says) entries named like segments that are not regular files.
        let existing = crate::Store::open(dir)?;
        let warnings = existing.warnings().to_vec();
        let listed = existing.segments();
        let last_ns = listed.last().and_then(|s| s.last_ns);
        let old = listed
            .into_iter()
            .map(|s| Old {
                start_ns: s.start_ns,
                path: s.path,
                bytes: s.bytes,
                last_ns: s.last_ns,
            })
            .collect();
        Ok(Writer {
            dir: dir.to_path_buf(),
            fd,
            opts: WriterOptions {
                segment_span_ns: opts.segment_span_ns.max(1),
                ..opts
            },
            lock,
            old,
            cur: None,
            last_ns,
            end_asked: false,
            stopped: false,
            warnings,
            buf: Vec::new(),
        })
    }

    /// True when the next append at `time_ns` opens a new segment (the first append after
    /// create, time crossing the span, time before the last frame's: the clock stepped
    /// back, or [`Writer::end_segment`] asked): the caller must then write a key frame, so
    /// that every segment is self-contained.
    pub fn starts_segment(&self, time_ns: u64) -> bool {
        match &self.cur {
            None => true,
            Some(_) if self.end_asked => true,
            Some(c) => {
                time_ns < c.last_ns
                    || time_ns >= c.base_ns.saturating_add(self.opts.segment_span_ns)
            }
        }
    }

    /// Appends one frame. Rolls segments, enforces retention (never deleting the segment being
    /// written), syncs after a key frame. The frame goes out in one write(2), so a SIGKILL
    /// loses at most this frame. On a full disk or any write error the segment is cut back to
    /// its last whole frame, [`StoreError::Full`] or [`StoreError::Io`] is returned and every
    /// later append fails with [`StoreError::Stopped`].
    ///
    /// A time before the previous frame's (the previous one recorded, also by an earlier
    /// writer) is kept, in a new segment, and said in [`Writer::take_warnings`]: the store's
    /// order is the order of appends.
    pub fn append(
        &mut self,
        kind: u8,
        key: bool,
        time_ns: u64,
        payload: &[u8],
    ) -> Result<(), StoreError> {
        if self.stopped {
            return Err(StoreError::Stopped {
                path: self.dir.clone(),
            });
        }
        if kind == INTERNAL_KIND {
            return Err(StoreError::ReservedKind { kind });
        }
        if let Some(last_ns) = self.last_ns.filter(|&l| time_ns < l) {
            self.warnings.push(format!(
                "the clock stepped back {:.3} s (a frame at {time_ns} ns after one at {last_ns} \
                 ns); recording goes on in a new segment, in recording order",
                (last_ns - time_ns) as f64 / 1e9
            ));
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let encoded = frame::encode(kind, key, time_ns, payload, &mut buf);
        let r = encoded
            .map_err(StoreError::from)
            .and_then(|()| self.append_encoded(kind, key, time_ns, &buf));
        self.buf = buf;
        r
    }

    fn append_encoded(
        &mut self,
        kind: u8,
        key: bool,
        time_ns: u64,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        if self.starts_segment(time_ns) {
            self.stop_on_error(|w| w.roll(time_ns))?;
        }
        self.stop_on_error(|w| {
            let c = w.current()?;
            if let Err(e) = c.file.write_all(bytes) {
                // Undo a partial write so the segment ends on a whole frame.
                let _ = c.file.set_len(c.len_bytes);
                return Err(StoreError::io(&c.path, e));
            }
            c.index.push(IndexEntry {
                time_ns,
                kind,
                key,
                offset_bytes: c.len_bytes,
                stored_len_bytes: u32::try_from(bytes.len() - frame::HEADER_LEN)
                    .unwrap_or(u32::MAX),
            });
            c.len_bytes += bytes.len() as u64;
            c.last_ns = time_ns;
            c.max_ns = c.max_ns.max(time_ns);
            if key {
                c.file.sync_data().map_err(|e| StoreError::io(&c.path, e))?;
            }
            Ok(())
        })?;
        self.last_ns = Some(time_ns);
        self.enforce_retention(time_ns);
        Ok(())
    }

    fn current(&mut self) -> Result<&mut Current, StoreError> {
        let path = self.dir.clone();
        self.cur.as_mut().ok_or(StoreError::Stopped { path })
    }

    fn stop_on_error<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let r = f(self);
        if r.is_err() {
            self.stopped = true;
        }
        r
    }

    /// Makes the next append open a new segment (and so be a key frame, see
    /// [`Writer::starts_segment`]): for a caller whose frames from now on differ in what a
    /// segment says once (the recorder's host identity).
    pub fn end_segment(&mut self) {
        self.end_asked = self.cur.is_some();
    }

    /// Closes the current segment (index, sync) and opens a new one for a frame at `time_ns`.
    fn roll(&mut self, time_ns: u64) -> Result<(), StoreError> {
        self.end_asked = false;
        if let Some(c) = self.cur.take() {
            let bytes = close_segment(c.file, &c.path, c.len_bytes, c.last_ns, &c.index)?;
            self.old.push_back(Old {
                start_ns: c.start_ns,
                path: c.path,
                bytes,
                last_ns: Some(c.max_ns),
            });
        }
        let after_last = self.old.back().map(|o| o.start_ns.saturating_add(1));
        let start_ns = after_last.map_or(time_ns, |a| a.max(time_ns));
        let name = layout::segment_name(start_ns);
        let path = self.dir.join(&name);
        let file = self.fd.create_new(&name, 0o600, true)?;
        layout::sync_dir(&self.fd)?;
        self.cur = Some(Current {
            file,
            path,
            start_ns,
            base_ns: time_ns,
            len_bytes: 0,
            last_ns: time_ns,
            max_ns: time_ns,
            index: Vec::new(),
        });
        Ok(())
    }

    fn enforce_retention(&mut self, now_ns: u64) {
        let mut deleted = false;
        if let Some(keep) = self.opts.retain_for_ns {
            let cutoff = now_ns.saturating_sub(keep);
            // By the frames' own times, oldest segment first; one whose frames are not all
            // older than the cutoff (after a clock step back, a later time than now) stays,
            // and so do the ones after it: only whole prefixes of the recording go.
            while let Some(o) = self.old.front() {
                if o.last_ns.is_some_and(|l| l >= cutoff) {
                    break;
                }
                deleted |= self.delete_oldest();
            }
        }
        if let Some(max) = self.opts.max_size_bytes {
            while self.bytes_on_disk() > max && !self.old.is_empty() {
                deleted |= self.delete_oldest();
            }
        }
        if deleted {
            if let Err(e) = layout::sync_dir(&self.fd) {
                self.warnings.push(e.to_string());
            }
        }
    }

    fn delete_oldest(&mut self) -> bool {
        let Some(o) = self.old.pop_front() else {
            return false;
        };
        match self.fd.remove(name_of(&o.path)) {
            Ok(()) => true,
            Err(e) if e.is_not_found() => false,
            Err(e) => {
                self.warnings
                    .push(format!("could not delete a segment for retention: {e}"));
                false
            }
        }
    }

    /// fdatasync of the current segment: every frame appended so far survives a power cut.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        match &self.cur {
            Some(c) => c.file.sync_data().map_err(|e| StoreError::io(&c.path, e)),
            None => Ok(()),
        }
    }

    /// Closes the current segment (writes its index, syncs) and releases the lock. After a
    /// write error the segment is left without an index (readers walk it) and only the lock is
    /// released.
    pub fn finish(mut self) -> Result<(), StoreError> {
        if let Some(c) = self.cur.take() {
            if !self.stopped {
                close_segment(c.file, &c.path, c.len_bytes, c.last_ns, &c.index)?;
            }
        }
        let _ = self.lock.set_len(0);
        Ok(())
    }

    /// Bytes of all segments (the closed ones as listed or written, and the current one).
    pub fn bytes_on_disk(&self) -> u64 {
        let cur = self.cur.as_ref().map_or(0, |c| c.len_bytes);
        self.old.iter().map(|o| o.bytes).sum::<u64>() + cur
    }

    /// Problems that did not stop recording (a segment retention could not delete, a failed
    /// directory sync), oldest first; taking them clears them.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Appends a segment's index and footer, syncs it; returns its final size. On a write error
/// the segment is cut back to its frames (readers then walk it).
fn close_segment(
    mut file: File,
    path: &Path,
    len_bytes: u64,
    last_ns: u64,
    index: &[IndexEntry],
) -> Result<u64, StoreError> {
    let mut tail = Vec::new();
    layout::encode_index(index, last_ns, len_bytes, &mut tail)?;
    if let Err(e) = file.write_all(&tail) {
        let _ = file.set_len(len_bytes);
        return Err(StoreError::io(path, e));
    }
    file.sync_data().map_err(|e| StoreError::io(path, e))?;
    Ok(len_bytes + tail.len() as u64)
}
