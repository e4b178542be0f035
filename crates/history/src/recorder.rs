//! The writing side of a recording: [`Recorder`] appends each [`Reading`] to a store as the
//! format requires, so that no caller writes the protocol by hand.
//!
//! The protocol, for each reading: a reading that opens a segment (the first after the store
//! is opened, the segment's span passed, the wall clock stepped back, or the reading's host
//! identity is not the previous one's: one identity per segment) is encoded as a key,
//! so every segment reads alone; its names payload, when it has one, is appended first
//! ([`KIND_NAMES`]), then its sample payload ([`KIND_SAMPLE`]), both at the reading's time
//! (`snapshot.taken_at_unix_ns`) and with the same key flag, so the store syncs the segment
//! (`fdatasync`) after the key's frames and a power cut loses at most the deltas since. What the store
//! met on the way (a clock step back, a segment retention could not delete) and a change of
//! host identity are kept for the caller to say ([`Recorder::take_warnings`]).

use std::path::Path;
use std::time::{Duration, Instant};

use tasksnap_model::{HostIdentity, Reading, ReadingChanges};
use tasksnap_store::{StoreError, Writer, WriterOptions};

use crate::{Encoder, History, ReplayError, KIND_NAMES, KIND_SAMPLE};

/// A store open for recording (its one-writer lock held) and the encoder of its samples.
#[derive(Debug)]
pub struct Recorder {
    writer: Writer,
    encoder: Encoder,
    /// The host identity of the last reading appended.
    host: Option<HostIdentity>,
    /// What the recorder itself has to say (beside the store's warnings).
    warnings: Vec<String>,
}

/// What one [`Recorder::append`] wrote, and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The reading was written as a key (every row in full), not as a delta.
    pub key: bool,
    /// Bytes of the sample payload, before compression.
    pub sample_bytes: usize,
    /// Bytes of the names payload (0 when there was none), before compression.
    pub names_bytes: usize,
    /// Time spent encoding the reading.
    pub encode: Duration,
    /// Time spent appending the frames (syncing included, after a key).
    pub write: Duration,
}

impl Recorder {
    /// Opens the store in `dir` for recording (see [`Writer::create`]: a second recorder
    /// stops here with [`StoreError::Locked`]), with a key every `key_every` samples (and
    /// earlier when a delta grows larger than a key would be, see [`Encoder::adaptive_keys`]).
    pub fn create(dir: &Path, opts: WriterOptions, key_every: u32) -> Result<Recorder, StoreError> {
        Ok(Recorder::new(
            Writer::create(dir, opts)?,
            Encoder::new(key_every),
        ))
    }

    /// A recorder over a writer and an encoder made by the caller (one without adaptive
    /// keys, say).
    pub fn new(writer: Writer, encoder: Encoder) -> Recorder {
        Recorder {
            writer,
            encoder,
            host: None,
            warnings: Vec::new(),
        }
    }

    /// The last reading recorded in this store (by this recorder or an earlier one), read back
    /// while the lock keeps anyone from appending: what a restarted recorder carries its
    /// thread-state totals on from. [`ReplayError::Empty`] for a new store.
    pub fn last_recorded(&self) -> Result<Reading, ReplayError> {
        History::open(self.writer.dir())?.reading_at(u64::MAX)
    }

    /// Appends `reading` at its own time (`snapshot.taken_at_unix_ns`), as the module docs
    /// say. After an error (a full disk, say) what was written before stays readable and
    /// every later append fails.
    pub fn append(&mut self, reading: &Reading) -> Result<Appended, StoreError> {
        self.append_changed(reading, None)
    }

    /// [`Recorder::append`], told what changed since the reading appended before (the
    /// sampler's [`ReadingChanges`]): the encoder then compares only those rows with its key
    /// ([`crate::Encoder::encode_changed`]). Give every reading taken, in order.
    pub fn append_changed(
        &mut self,
        reading: &Reading,
        changes: Option<&ReadingChanges>,
    ) -> Result<Appended, StoreError> {
        let t = reading.snapshot.taken_at_unix_ns;
        // One host identity per segment: another (a host renamed while recording; a new
        // boot, should a recorder outlive one) closes the segment, said once.
        if let Some(before) = self.host.as_ref().filter(|h| **h != reading.host) {
            self.warnings.push(format!(
                "the host identity changed (host name {} -> {}, boot id {} -> {}); recording \
                 goes on in a new segment",
                shown(before.hostname.as_deref()),
                shown(reading.host.hostname.as_deref()),
                shown(before.boot_id.as_deref()),
                shown(reading.host.boot_id.as_deref()),
            ));
            self.writer.end_segment();
        }
        if self.host.as_ref() != Some(&reading.host) {
            self.host = Some(reading.host.clone());
        }
        let force_key = self.writer.starts_segment(t);
        let e0 = Instant::now();
        let enc = self.encoder.encode_changed(reading, force_key, changes);
        let e1 = Instant::now();
        if let Some(names) = &enc.names {
            self.writer.append(KIND_NAMES, enc.key, t, names)?;
        }
        // A key frame is synced by the writer itself, after the sample as after the names.
        self.writer.append(KIND_SAMPLE, enc.key, t, &enc.sample)?;
        Ok(Appended {
            key: enc.key,
            sample_bytes: enc.sample.len(),
            names_bytes: enc.names.as_ref().map_or(0, Vec::len),
            encode: e1 - e0,
            write: e1.elapsed(),
        })
    }

    /// What the encoder holds between samples, in bytes by part ([`Encoder::held`]).
    pub fn held(&self) -> [(&'static str, usize); 3] {
        self.encoder.held()
    }

    /// What the store met that did not stop recording, each said once: a clock step back
    /// (kept, in a new segment), a segment retention could not delete, an entry named like a
    /// segment that is not a regular file; and a change of host identity (a new segment).
    pub fn take_warnings(&mut self) -> Vec<String> {
        let mut w = self.writer.take_warnings();
        w.append(&mut self.warnings);
        w
    }

    /// Bytes of every segment of the store now, after retention.
    pub fn bytes_on_disk(&self) -> u64 {
        self.writer.bytes_on_disk()
    }

    /// Closes the store: the current segment's index written and synced, the lock released.
    pub fn finish(self) -> Result<(), StoreError> {
        self.writer.finish()
    }
}

/// A part of a host identity for a message: its text (lossy, control characters escaped),
/// or `unknown`.
fn shown(v: Option<&[u8]>) -> String {
    v.map_or_else(
        || "unknown".to_string(),
        |b| format!("{:?}", String::from_utf8_lossy(b)),
    )
}
