//! tasksnap's one BPF layer, shared by the task collector and the thread-state accounting's
//! source (both in `tasksnap-collect`):
//!
//! - the C sources (`src/c`): one `vmlinux.h`, one `compat.h` (task state, `PF_*` bits and
//!   every CO-RE shim, each citing the kernel change it handles), the task iterator and walk
//!   (`task_iter.bpf.c`, its record layout `record.h`), the accounting (`states.bpf.c`,
//!   `states.h`) and the exit records (`exits.bpf.c`, `exits.h`), compiled by one build
//!   script;
//! - their generated skeletons ([`skel`], only when they were built);
//! - [`loader`]: the privilege check, libbpf's log, the descriptor budget, verifier
//!   statistics, open and load, and iterator files;
//! - [`pins`]: bpffs and the root-only pin directories.
//!
//! The no-BPF build (no clang, or `TASKSNAP_NO_BPF` set at build time) is one switch: this
//! crate's `tasksnap_bpf` cfg. Dependents never test it; they pick their BPF module once with
//! [`select!`], and [`built`] says why there is none.
#![deny(missing_docs)]

pub mod loader;
pub mod pins;

// Generated code: none of the lints tasksnap keeps apply to it.
#[cfg(tasksnap_bpf)]
#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::restriction,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    missing_debug_implementations,
    non_camel_case_types,
    unsafe_op_in_unsafe_fn,
    dead_code
)]
pub mod skel;

pub use loader::{privileged, quiet_libbpf, Unavailable};

/// This build's task programs, hashed (build.rs): pinned sets live under it, so a tasksnap
/// only ever opens programs built from the same sources and record layout.
pub const TAG: &str = env!("TASKSNAP_BPF_TAG");

/// Whether this build has the BPF programs; `Err` says that `what` is missing and why
/// ("clang was missing at build time", "TASKSNAP_NO_BPF was set at build time").
pub fn built(what: &'static str) -> Result<(), Unavailable> {
    match option_env!("TASKSNAP_BPF_MISSING") {
        None => Ok(()),
        Some(why) => Err(Unavailable::NotBuilt { what, why }),
    }
}

/// Expands to the items of its `built { .. }` block when this build has the BPF programs,
/// else to those of its `missing { .. }` block: the one place a dependent chooses between
/// its BPF module and its stub, e.g.
///
/// ```ignore
/// tasksnap_bpf::select! {
///     built { pub mod bpf; }
///     missing { #[path = "bpf_stub.rs"] pub mod bpf; }
/// }
/// ```
#[cfg(tasksnap_bpf)]
#[macro_export]
macro_rules! select {
    (built { $($built:item)* } missing { $($missing:item)* }) => { $($built)* };
}

/// Expands to the items of its `built { .. }` block when this build has the BPF programs,
/// else to those of its `missing { .. }` block (this build: `missing`).
#[cfg(not(tasksnap_bpf))]
#[macro_export]
macro_rules! select {
    (built { $($built:item)* } missing { $($missing:item)* }) => { $($missing)* };
}
