//! What a [`Host`](super::Host) hands out to keep beside it: thread-state sources
//! ([`ThreadStates`]) and whole readings ([`Readings`]). Both hold the BPF thread-state
//! accounting when it runs, whose ring buffer is tied to the thread that opened it (not
//! `Send`); the host itself is `Send`, so that a binding may keep it across threads.

use tasksnap_model::{Backend, PassReport, Reading};

use crate::choice::Chosen;
use crate::collector::StateSource;
use crate::error::Error;
pub use crate::sampler::Options as ReadingOptions;
use crate::sampler::Sampler;
use crate::states::bpf::BpfSource;
use tasksnap_model::states::Sample;

/// A thread-state source ([`Host::open_states`](super::Host::open_states), [`Host::open_waits`](super::Host::open_waits),
/// [`Host::replay_states`](super::Host::replay_states)): cumulative per-thread time in each scheduler state. Kept beside
/// its [`Host`](super::Host) (it is tied to the thread that opened it: the BPF accounting's ring buffer
/// is not `Send`).
pub struct ThreadStates(pub(super) Chosen<StatesSource>);

/// The source behind [`ThreadStates`].
pub(super) enum StatesSource {
    /// Any source of the crate's trait.
    Any(Box<dyn StateSource>),
    /// The BPF accounting with one iterator per process watched (top's DISK%).
    Watched(Box<BpfSource>),
}

impl std::fmt::Debug for ThreadStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.debug_as(f, "ThreadStates")
    }
}

impl ThreadStates {
    /// Cumulative totals of every thread the source's filter selects, now.
    pub fn sample(&mut self) -> Result<Sample, Error> {
        match &mut self.0.source {
            StatesSource::Any(s) => s.sample(),
            StatesSource::Watched(s) => s.sample(),
        }
    }

    /// The totals of the threads `which` names, now: a watched source
    /// ([`Host::open_waits`](super::Host::open_waits)) reads only those; any other reads what
    /// its filter selects.
    pub fn sample_of(&mut self, which: crate::Watched<'_>) -> Result<Sample, Error> {
        if let StatesSource::Watched(s) = &mut self.0.source {
            s.watch(which);
        }
        self.sample()
    }

    /// Which source it is ([`Backend::Bpf`] or [`Backend::Procfs`]; [`Backend::Auto`] for a
    /// replay), and why that one.
    pub fn report(&self) -> (Backend, &str) {
        (self.0.backend, &self.0.why)
    }
}

/// Whole readings of the host for a long-running sampler ([`Host::open_readings`](super::Host::open_readings): what
/// `record` stores and `serve` exposes). Kept beside its [`Host`](super::Host), like [`ThreadStates`].
pub struct Readings(pub(super) Sampler);

impl std::fmt::Debug for Readings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Readings {
    /// One reading of the whole host, updated in place by the next call (see
    /// [`Sampler::read_mut`]).
    pub fn read_mut(&mut self) -> Result<&mut Reading, Error> {
        self.0.read_mut()
    }

    /// What reads the tasks, and how its last pass went.
    pub fn report(&self) -> PassReport {
        self.0.report()
    }

    /// [`Readings::read_mut`] with what the reading changed from the one before
    /// ([`Sampler::read_changed`]).
    pub fn read_changed(
        &mut self,
    ) -> Result<(&mut Reading, &tasksnap_model::ReadingChanges), Error> {
        self.0.read_changed()
    }

    /// What the last reading changed from the one before ([`Sampler::changes`]).
    pub fn changes(&self) -> &tasksnap_model::ReadingChanges {
        self.0.changes()
    }

    /// Which source reads thread states (`None` when not asked for), and why that one.
    pub fn states_report(&self) -> (Option<Backend>, &str) {
        self.0.states_report()
    }

    /// Why there are no exit records (`None` when the exit source runs).
    pub fn exits_missing(&self) -> Option<&str> {
        self.0.exits_missing()
    }

    /// Which exit source runs ("bpf" or "taskstats" by [`crate::exits::ExitSource::name`]);
    /// `None` when none does.
    pub fn exits_source(&self) -> Option<crate::exits::ExitSource> {
        self.0.exits_source()
    }

    /// What the sampler holds between readings, in bytes by part
    /// ([`Sampler::footprint`]).
    pub fn footprint(&self) -> crate::footprint::Held {
        self.0.footprint()
    }

    /// Where the last reading's time went, phase by phase.
    pub fn phases(&self) -> &[(&'static str, std::time::Duration)] {
        self.0.phases()
    }
}

/// How a thread-state source reads ([`Host::open_states`](super::Host::open_states)).
#[derive(Debug, Clone, Default)]
pub struct StatesOptions {
    /// Which threads.
    pub filter: crate::states::Filter,
    /// Keep the kernel stacks (BPF) or wchan (/proc) of S waits too (D waits always).
    pub track_sleep: bool,
    /// Name, for a thread that waited for a CPU, the threads that ran there meanwhile
    /// (BPF only).
    pub track_holders: bool,
    /// The /proc source's state-letter samples per second (`None`: its default).
    pub sample_hz: Option<u32>,
    /// Descriptors the /proc source leaves for everything else (`None`: its default).
    pub fds_left: Option<usize>,
}
