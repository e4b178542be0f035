//! The BPF source of a build without the BPF programs (no clang, or TASKSNAP_NO_BPF set at
//! build time): the same surface as source.rs, and [`BpfSource::load`] says why it cannot be.

use crate::states::bpf::Options;
use crate::states::Sample;
use crate::error::Error;
use crate::collector::StateSource;

/// The loaded accounting: never made in this build.
#[derive(Debug)]
pub struct BpfSource {
    /// How long loading and attaching took, ns.
    pub load_ns: u64,
    never: std::convert::Infallible,
}

impl BpfSource {
    /// Says why the accounting cannot be loaded: not root, or not built.
    pub fn load(_opts: Options) -> Result<BpfSource, Error> {
        crate::states::bpf::privileged()?;
        let why = match tasksnap_bpf::built("BPF") {
            Err(why) => why.to_string(),
            Ok(()) => "this build has BPF programs, but this crate was built without them".into(),
        };
        Err(Error::BpfUnavailable(why))
    }

    /// Nothing to watch: no source is ever made.
    pub fn watch(&mut self, _which: crate::states::Watched<'_>) {
        match self.never {}
    }

    #[cfg(any(test, feature = "testing"))]
    /// Nothing drained: no source is ever made.
    pub fn last_drained(&self) -> Option<&[tasksnap_model::TaskId]> {
        match self.never {}
    }
}

impl StateSource for BpfSource {
    fn sample(&mut self) -> Result<Sample, Error> {
        match self.never {}
    }
}
