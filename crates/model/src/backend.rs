//! Which source answers ([`Backend`], the one enum every command's `--backend`/`--mode` option
//! parses into) and what one collection did ([`PassReport`]), as typed values: front ends
//! decide on fields, never on the text of a message.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A data source, or `Auto` for "the faster one that works here".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The BPF programs when they can load (and pay off), /proc otherwise.
    #[default]
    Auto,
    /// The BPF task iterator (and scheduler tracepoints for thread states).
    Bpf,
    /// /proc.
    Procfs,
    /// The query service (`tasksnap serve`'s socket): root's loaded BPF programs answering
    /// for a caller without privileges, showing it what its own /proc would.
    Service,
}

impl Backend {
    /// Every value, in the order `--help` lists them.
    pub const ALL: [Backend; 4] = [
        Backend::Auto,
        Backend::Bpf,
        Backend::Procfs,
        Backend::Service,
    ];

    /// The name the options take and messages show.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Bpf => "bpf",
            Backend::Procfs => "procfs",
            Backend::Service => "service",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBackend(pub String);

impl fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown backend '{}' (auto, bpf, procfs or service)",
            self.0
        )
    }
}

impl std::error::Error for UnknownBackend {}

impl std::str::FromStr for Backend {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Backend, UnknownBackend> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| UnknownBackend(s.to_string()))
    }
}

/// How the last pass read the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassKind {
    /// No pass yet.
    #[default]
    None,
    /// Files under /proc.
    Procfs,
    /// The BPF task iterator (seq_file).
    Iterator,
    /// The BPF walk into a mapped arena, every task.
    Walk,
    /// The BPF walk, only the processes that changed since the last pass.
    ChangedOnlyWalk,
}

/// Where the last pass's command lines came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmdlineSource {
    /// Read from /proc/PID/cmdline.
    Procfs,
    /// Read by the BPF walk itself (what it left, copied by pid list).
    Walk,
    /// Copied by a BPF program given the list of pids.
    Copied,
    /// Read by the sleepable BPF iterator.
    Iterator,
}

/// What a collector is and how its last collection went, for `-v`, top's header and
/// `bench`. Every field a caller decides on is typed; the strings are for people.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PassReport {
    /// What answered: [`Backend::Bpf`], [`Backend::Procfs`] or [`Backend::Service`] (never
    /// `Auto`).
    pub backend: Backend,
    /// The BPF programs were pinned by `tasksnap pin` (no load time).
    pub pinned: bool,
    /// How the last pass read the tasks.
    pub kind: PassKind,
    /// Where its command lines came from (`None`: not asked for, or no pass yet).
    pub cmdlines: Option<CmdlineSource>,
    /// Command lines the BPF programs read without taking the target's mmap lock.
    pub cmdlines_lockless: u64,
    /// Why this backend answers (the rule `auto` applied, or the option given), with how it
    /// got ready (load time, pinned set and its problem if one was refused).
    pub why: String,
    /// How the last pass was taken, when the backend has several ways (e.g. which BPF pass
    /// ran, and how command lines were read); empty otherwise.
    pub pass: String,
    /// Where the last pass's time went, phase by phase (empty when not timed).
    pub phases: Vec<(&'static str, Duration)>,
    /// Tasks the last live refresh got back when it got only what changed (`None`: a whole
    /// pass).
    pub changed: Option<usize>,
}

impl PassReport {
    /// A report for `backend`, with no pass yet.
    pub fn new(backend: Backend, why: impl Into<String>) -> PassReport {
        PassReport {
            backend,
            why: why.into(),
            ..PassReport::default()
        }
    }

    /// The backend as top's header shows it: `bpf`, `bpf (pinned)` or `procfs`.
    pub fn short(&self) -> String {
        if self.pinned {
            format!("{} (pinned)", self.backend)
        } else {
            self.backend.to_string()
        }
    }

    /// The phases as one line (`name 1.23 ms, ...`), empty when there are none.
    pub fn phases_line(&self) -> String {
        self.phases
            .iter()
            .map(|(name, d)| format!("{name} {:.2} ms", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip_and_unknown_names_are_errors() {
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
        }
        assert!("BPF".parse::<Backend>().is_err());
        assert!("".parse::<Backend>().is_err());
        let mut r = PassReport::new(Backend::Bpf, "asked for");
        assert_eq!(r.short(), "bpf");
        r.pinned = true;
        assert_eq!(r.short(), "bpf (pinned)");
        r.phases = vec![("pass", Duration::from_micros(1500))];
        assert_eq!(r.phases_line(), "pass 1.50 ms");
    }
}
