//! Everything that reads the host, behind one entry point: [`Host`]. A front end (ps, top,
//! states, record, serve, doctor, bench, pin, the Python binding) opens a `Host` and asks
//! it; this crate's face is that type, the options it opens with ([`HostOptions`],
//! [`ReadingOptions`], [`StatesOptions`]), the handles it gives out ([`ThreadStates`],
//! [`Readings`], [`Exits`], [`ProcessFiles`], [`TaskLinks`], [`TcpOwners`],
//! [`QueryService`], [`BpfBench`]) and what they answer with: the model's types, and the
//! few of this crate's own named below. Every module is private: the compiler keeps the
//! fence.
//!
//! What the face re-exports, and why each is part of it:
//! - the model's [`Backend`], [`PassReport`], [`Query`], [`Snapshot`], [`Sample`]: what a
//!   front end asks with and is answered with;
//! - [`Units`], [`BootClock`]: the arithmetic a front end does on the host's figures;
//! - [`Error`], [`BpfUnavailable`], [`FilesError`]: why a call failed, typed;
//! - [`ChangeSummary`], [`Filled`]: what [`Host::changes_into`] and [`Host::fill`] return
//!   besides tasks;
//! - [`ExitSource`]: which source [`Exits`] reads (doctor says which);
//! - [`BpfProbe`]: what `doctor` learns of loading the programs;
//! - [`Identity`], [`Connection`], [`Endpoint`], [`SocketTable`] (and [`OpenFile`],
//!   [`Mapped`], [`SmapsTotals`]): one process's files as [`ProcessFiles`] reads them;
//! - [`CpuLine`], [`MemInfo`], [`TtyDriver`], [`UtmpRecord`]: machine-wide figures as
//!   tasksnap-procfs parses them, handed back whole by [`Host`]'s methods, so that no front
//!   end depends on the /proc parser crate;
//! - [`NamedTty`], [`QueryCounts`]: what [`Host::tty_named`] and a [`QueryService`] say;
//! - [`StatesFilter`]: which threads a thread-state source reports.
//!
//! Behind the face: the sources and their traits (`collector.rs`: `Collector` for
//! snapshots, `LiveCollector` for a live view's changes, `StateSource` for thread-state
//! totals), each answered by a BPF backend and a /proc one (`procfs/`, `bpf/`, `states/`),
//! chosen by `choice.rs`; the sampler of whole readings (`sampler.rs`), the exit records
//! (`exits/`), the query service's both sides (`service/`), the host's units and which /proc
//! is the kernel's (`units.rs`), and the privileges dropped once (`caps.rs`).
#![deny(missing_docs)]

/// `Debug` for a type that shows only its `$field` (the others hold kernel objects, maps or
/// threads, with nothing useful to print).
macro_rules! debug_showing {
    ($ty:ident, $field:ident) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field(stringify!($field), &self.$field)
                    .finish_non_exhaustive()
            }
        }
    };
}

mod blocked;
mod bpf_bench;
// The one place the no-BPF build differs: without the BPF programs (no clang, or
// TASKSNAP_NO_BPF at build time), `bpf` and the thread-state accounting's source
// (re-exported by `states::bpf`) are stubs whose constructors say why.
tasksnap_bpf::select! {
    built {
        mod bpf;
        #[path = "states/bpf/source.rs"]
        mod states_bpf;
        #[path = "exits/source.rs"]
        mod exits_bpf;
    }
    missing {
        #[path = "bpf_stub.rs"]
        mod bpf;
        #[path = "states/bpf/stub.rs"]
        mod states_bpf;
        #[path = "exits/stub.rs"]
        mod exits_bpf;
    }
}
mod caps;
mod cgroups;
mod choice;
mod clock;
mod collector;
mod error;
mod exits;
mod footprint;
mod host;
mod login;
mod machine;
mod numa;
mod probes;
mod process_files;
mod procfs;
mod replay;
mod sampler;
mod service;
mod states;
mod task_files;
mod tcp_owners;
#[cfg(feature = "testing")]
pub mod testing;
mod units;

pub use bpf_bench::BpfBench;
pub use clock::BootClock;
pub use collector::{ChangeSummary, Filled};
pub use error::Error;
pub use exits::{ExitSource, Exits};
pub use footprint::Held;
pub use host::{
    BpfProbe, Host, HostOptions, NamedTty, ReadingOptions, Readings, StatesOptions, TaskLinks,
    ThreadStates, Units,
};
pub use process_files::{
    Connection, Endpoint, FilesError, Identity, Mapped, OpenFile, ProcessFiles, SmapsTotals,
    SocketTable,
};
pub use service::server::displace::{
    victim as connection_to_displace, Candidate as ConnectionCandidate,
};
pub use service::server::{Counts as QueryCounts, QueryService, StartError as QueryServiceError};
/// Which threads a thread-state source reports ([`StatesOptions::filter`]).
pub use states::Filter as StatesFilter;
pub use states::Watched;
/// Why the BPF programs cannot load or be pinned here.
pub use tasksnap_bpf::Unavailable as BpfUnavailable;
pub use tasksnap_model::states::Sample;
pub use tasksnap_model::{Backend, PassReport, Query, Snapshot};
pub use tasksnap_procfs::system::{CpuLine, MemInfo, TtyDriver};
/// A record of the utmp file ([`Host::user_sessions`]).
pub use tasksnap_procfs::utmp::Record as UtmpRecord;
pub use tcp_owners::TcpOwners;
