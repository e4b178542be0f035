//! The query service: root's loaded BPF programs answering unprivileged callers over a local
//! socket, each caller shown exactly what its own /proc would show it.
//!
//! Both sides live here, split by job: [`wire`] the framing both speak (versioned, bounded,
//! every byte from the other side hostile); [`peer`] who is asking, as the kernel attests it
//! (`SO_PEERCRED`/`SO_PEERPIDFD`, the caller's status, namespaces and /proc mount options, read
//! by the service, never told by the client); [`visibility`] procfs's permission rules applied
//! to a snapshot for one caller (the pid namespace and `hidepid=`, the fields and files
//! `ptrace_may_access()` gates); [`client`] the [`crate::collector::Collector`] a non-root front end gets
//! when the service answers, falling back to /proc when it does not; [`answer`] a caller's
//! answer cut from a shared pass; [`server`] the listening side (the accept loop, coalescing,
//! limits), which `tasksnap serve` starts through its `Host`.

pub mod answer;
pub mod client;
pub mod peer;
pub mod server;
pub mod visibility;
pub mod wire;

/// Where `tasksnap serve` listens for queries and clients look for it, unless told otherwise
/// (`--query-socket`, `TASKSNAP_QUERY_SOCKET`).
pub const DEFAULT_SOCKET: &str = "/run/tasksnap/query.sock";
