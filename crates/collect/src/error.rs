//! [`Error`]: what can make a whole collection, a source's load or a sample fail.

/// What can make a whole collection fail. Per-task trouble (a task exiting mid-read, a file
/// the caller may not read) is never an error: it is counted in [`tasksnap_model::SnapshotStats`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The procfs root could not be opened or listed.
    #[error("cannot read {path}: {error}")]
    Root {
        /// The root directory.
        path: String,
        /// Why: in the message, not a `source()` as well, so that a caller printing the
        /// error with its chain (anyhow's `{:#}`) does not say it twice.
        error: std::io::Error,
    },
    /// A system facility the collector needs is missing.
    #[error("{0}")]
    Unsupported(String),
    /// Something every read needs ran out even after the collector closed every descriptor
    /// it held: descriptor numbers under the process's open-files limit (EMFILE), the
    /// system's open files (ENFILE) or kernel memory (ENOMEM). The tasks it could not open
    /// are not "denied": a listing without them would be silently short, so the whole
    /// collection fails instead.
    #[error("{what}: {error}{hint}")]
    Exhausted {
        /// What could not be opened or read.
        what: String,
        /// The error (EMFILE, ENFILE or ENOMEM).
        error: std::io::Error,
        /// What to do about it, when something can be said (the open-files limit in force).
        hint: String,
    },
    /// The BPF thread-state accounting cannot run here; the message says why.
    #[error("BPF accounting unavailable: {0}")]
    BpfUnavailable(String),
    /// A BPF map or iterator operation of the thread-state accounting failed while sampling.
    #[error("BPF: {0}")]
    Bpf(String),
    /// Neither exit source can run here ([`exits::Exits::load`]): why not, each.
    #[error("no exit records: BPF: {bpf}; taskstats: {taskstats}")]
    ExitsUnavailable {
        /// Why the BPF program cannot load.
        bpf: String,
        /// Why the taskstats listener cannot be registered.
        taskstats: String,
    },
    /// A file a thread-state source must read is not readable (e.g. the /proc root itself).
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

impl Error {
    /// An [`Error::Exhausted`] for `what`, saying the open-files limit when the error is
    /// EMFILE.
    pub fn exhausted(what: impl Into<String>, error: std::io::Error) -> Error {
        let hint = if error.raw_os_error() == Some(libc::EMFILE) {
            format!(
                " (the open-files limit, RLIMIT_NOFILE, is {}: raise it with `ulimit -n`)",
                tasksnap_sys::nofile_limit()
            )
        } else {
            String::new()
        };
        Error::Exhausted {
            what: what.into(),
            error,
            hint,
        }
    }
}
