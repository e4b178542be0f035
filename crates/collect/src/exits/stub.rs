//! The exit source of a build without the BPF programs (no clang, or TASKSNAP_NO_BPF set at
//! build time): the same surface as source.rs, and [`BpfExits::load`] says why it cannot be.

use tasksnap_model::ExitBatch;

use crate::error::Error;

/// The loaded exit program: never made in this build.
#[derive(Debug)]
pub struct BpfExits {
    never: std::convert::Infallible,
    /// How long loading took, ns (never: nothing loads).
    pub load_ns: u64,
}

impl BpfExits {
    /// Says why the exit records cannot be loaded: not root, or not built.
    pub fn load(_opts: crate::exits::common::Options) -> Result<BpfExits, Error> {
        crate::exits::common::privileged()?;
        let why = match tasksnap_bpf::built("BPF exit records") {
            Err(why) => why.to_string(),
            Ok(()) => "this build has BPF programs, but this crate was built without them".into(),
        };
        Err(Error::BpfUnavailable(why))
    }

    /// Nothing to drain: no source is ever made.
    pub fn drain(&mut self) -> Result<ExitBatch, Error> {
        match self.never {}
    }
}
