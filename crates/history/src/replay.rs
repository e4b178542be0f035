//! Reading a recording back: [`History`] opens a store directory (tasksnap-store) and turns
//! its frames into [`Reading`]s through the [`Decoder`], either the one sample in force at a
//! moment ([`History::reading_at`]: the key before it, the names frames since, and the
//! sample itself, whatever the recording's length) or every sample of a window in order
//! ([`History::readings`]).
//!
//! Damage is never fatal: a frame that fails its checksum or does not decode is skipped and
//! counted ([`Readings::lost`]); a reading at a moment whose sample is damaged is the last
//! whole one before it, and one whose key frame is damaged comes from the key period before.
//!
//! Order is the recording's, not the clock's: a window's samples come in the order they were
//! recorded, and after a clock step back (NTP, a restored VM) a time that occurs twice is
//! read as the sample closest before it, whichever part of the recording holds it
//! ([`tasksnap_store::Store::seek`]); [`History::clock_warning`] says so in words.

use std::path::{Path, PathBuf};

use tasksnap_model::Reading;
use tasksnap_store::{Entry, Store, StoreError};

use crate::{Decoder, HistoryError, KIND_NAMES, KIND_SAMPLE};

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The store could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store holds no whole sample.
    #[error("{dir}: the recording holds no sample yet")]
    Empty {
        /// The store directory.
        dir: PathBuf,
    },
    /// The time asked for is before the first sample or after the last.
    #[error("{what} is outside the recording in {dir}, which runs from {first} to {last}")]
    Outside {
        /// The store directory.
        dir: PathBuf,
        /// The time asked for, as the caller wrote it in RFC 3339.
        what: String,
        /// The first sample's time (RFC 3339).
        first: String,
        /// The last sample's time (RFC 3339).
        last: String,
    },
    /// Every sample at or before the time is damaged.
    #[error("{dir}: no readable sample at or before {what} (the frames there are damaged: {why})")]
    Damaged {
        /// The store directory.
        dir: PathBuf,
        /// The time asked for (RFC 3339).
        what: String,
        /// The last decoding error met.
        why: HistoryError,
    },
}

/// `2026-11-23T03:00:00.123Z` for a time in ns since the Unix epoch (UTC, milliseconds): the
/// one formatter of recorded times (a u64 of ns ends in 2554, inside humantime's range).
pub fn rfc3339(ns: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns))
        .to_string()
}

/// A recording, open for reading (no lock: a recorder may be appending to it).
#[derive(Debug)]
pub struct History {
    store: Store,
}

impl History {
    /// Opens the store at `dir`.
    pub fn open(dir: &Path) -> Result<History, ReplayError> {
        Ok(History {
            store: Store::open(dir)?,
        })
    }

    /// The store underneath (segments, damage met).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The earliest and latest frame times, ns since the epoch; `None` for an empty
    /// recording.
    pub fn span(&self) -> Option<(u64, u64)> {
        self.store.span()
    }

    /// [`History::span`], or [`ReplayError::Empty`] for a recording with no sample: what every
    /// reader says when there is nothing to show.
    pub fn bounds(&self) -> Result<(u64, u64), ReplayError> {
        self.span().ok_or_else(|| ReplayError::Empty {
            dir: self.store.dir().to_path_buf(),
        })
    }

    fn outside(&self, t: u64) -> ReplayError {
        match self.span() {
            None => ReplayError::Empty {
                dir: self.store.dir().to_path_buf(),
            },
            Some((first, last)) => ReplayError::Outside {
                dir: self.store.dir().to_path_buf(),
                what: rfc3339(t),
                first: rfc3339(first),
                last: rfc3339(last),
            },
        }
    }

    /// Where the wall clock stepped back in the recording, in recording order: `(the time
    /// before, the time after)`; empty when the recording is in time order.
    pub fn clock_steps(&self) -> Result<Vec<(u64, u64)>, ReplayError> {
        Ok(self.store.steps_back()?)
    }

    /// What a reader tells the user when the clock stepped back in this recording: where, and
    /// what a time that occurs twice means. `None` when the recording is in time order.
    pub fn clock_warning(&self) -> Result<Option<String>, ReplayError> {
        let steps = self.clock_steps()?;
        let Some(&(from, to)) = steps.first() else {
            return Ok(None);
        };
        let more = match steps.len() {
            1 => String::new(),
            n => format!(" (and {} more times)", n - 1),
        };
        Ok(Some(format!(
            "{}: the clock stepped back during this recording: after a sample at {} the next \
             is at {}{more}, so times from {} to {} occur twice; a time there is read as the \
             sample closest before it, whichever part of the recording holds it, and windows \
             list samples in the order they were recorded",
            self.store.dir().display(),
            rfc3339(from),
            rfc3339(to),
            rfc3339(to),
            rfc3339(from),
        )))
    }

    /// The sample in force at `t` (the one with the latest time at or before it);
    /// `u64::MAX` is the last sample recorded (the end of the recording, whatever the clock
    /// said). A time before the earliest sample or after the latest is
    /// [`ReplayError::Outside`].
    pub fn reading_at(&self, t: u64) -> Result<Reading, ReplayError> {
        let Some((first, last)) = self.span() else {
            return Err(self.outside(t));
        };
        if t == u64::MAX {
            if let Some(entries) = self.store.seek_last(KIND_NAMES)? {
                if let Ok(Some(r)) = self.decode_at(&entries) {
                    return Ok(r);
                }
            }
        }
        let t = if t == u64::MAX { last } else { t };
        if t < first || t > last {
            return Err(self.outside(t));
        }
        let mut at = t;
        let mut why = HistoryError::NoKey;
        // Each round tries one key period; a damaged key sends it to the one before.
        for _ in 0..64 {
            let Some(entries) = self.store.seek(KIND_NAMES, at)? else {
                break;
            };
            let Some(key) = entries.first() else { break };
            match self.decode_at(&entries) {
                Ok(Some(r)) => return Ok(r),
                Ok(None) => {}
                Err(e) => why = e,
            }
            if key.time_ns == 0 {
                break;
            }
            at = key.time_ns - 1;
        }
        Err(ReplayError::Damaged {
            dir: self.store.dir().to_path_buf(),
            what: rfc3339(t),
            why,
        })
    }

    /// The last sample of `entries` (a key's names frame, then every frame up to the time
    /// asked) that decodes, against the key sample; `None` when the key does not decode.
    fn decode_at(&self, entries: &[Entry]) -> Result<Option<Reading>, HistoryError> {
        let mut dec = Decoder::new();
        let mut key_reading = None;
        for e in entries {
            match e.kind {
                KIND_NAMES => {
                    // A damaged names frame leaves its tasks' names out; the samples still
                    // decode.
                    if let Ok(p) = self.store.read(e) {
                        let _ = dec.apply_names(e.key, &p);
                    }
                }
                KIND_SAMPLE if e.key && key_reading.is_none() => {
                    let p = self
                        .store
                        .read(e)
                        .map_err(|_| HistoryError::Corrupt("key frame"))?;
                    key_reading = Some(dec.apply_sample(true, &p)?);
                }
                _ => {}
            }
        }
        let Some(key_reading) = key_reading else {
            return Ok(None);
        };
        // The last delta that decodes, walking back from the end; else the key itself.
        for e in entries.iter().rev() {
            if e.kind != KIND_SAMPLE || e.key {
                continue;
            }
            let Ok(p) = self.store.read(e) else { continue };
            if let Ok(r) = dec.apply_sample(false, &p) {
                return Ok(Some(r));
            }
        }
        Ok(Some(key_reading))
    }

    /// The times of the samples in [from, to], in time order without repeats (what
    /// `top --replay` steps through; [`History::reading_at`] reads each).
    pub fn sample_times(&self, from: u64, to: u64) -> Result<Vec<u64>, ReplayError> {
        let mut times: Vec<u64> = self
            .store
            .entries(from, to)?
            .into_iter()
            .filter(|e| e.kind == KIND_SAMPLE)
            .map(|e| e.time_ns)
            .collect();
        times.sort_unstable();
        times.dedup();
        Ok(times)
    }

    /// Every sample with a time in [from, to], in recording order (time order unless the
    /// clock stepped back), decoded one after the other.
    pub fn readings(&self, from: u64, to: u64) -> Result<Readings<'_>, ReplayError> {
        // Each part of the window starts at its key, so its first samples decode.
        let entries = self.store.window(KIND_NAMES, from, to)?;
        Ok(Readings {
            history: self,
            entries: entries.into_iter(),
            from,
            to,
            decoder: Decoder::new(),
            lost: 0,
        })
    }
}

/// The samples of a window, in order ([`History::readings`]).
#[derive(Debug)]
pub struct Readings<'a> {
    history: &'a History,
    entries: std::vec::IntoIter<Entry>,
    from: u64,
    to: u64,
    decoder: Decoder,
    lost: u64,
}

impl Readings<'_> {
    /// Samples skipped so far because a frame was damaged (or its key was).
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

impl Iterator for Readings<'_> {
    type Item = Reading;

    fn next(&mut self) -> Option<Reading> {
        for e in self.entries.by_ref() {
            let payload = self.history.store.read(&e);
            match e.kind {
                KIND_NAMES => {
                    if let Ok(p) = payload {
                        // A damaged names frame leaves the names of its tasks out; the
                        // samples still decode.
                        let _ = self.decoder.apply_names(e.key, &p);
                    }
                }
                KIND_SAMPLE => {
                    let r = payload
                        .map_err(|_| HistoryError::Corrupt("frame"))
                        .and_then(|p| self.decoder.apply_sample(e.key, &p));
                    let inside = (self.from..=self.to).contains(&e.time_ns);
                    match r {
                        Ok(r) if inside => return Some(r),
                        Ok(_) => {}
                        Err(_) if inside => self.lost += 1,
                        Err(_) => {}
                    }
                }
                _ => {}
            }
        }
        None
    }
}
