//! Which collector answers: the rules, kept apart from the collectors themselves.
//!
//! `auto` takes the BPF iterator when it can load and the host has enough tasks for its load
//! time (~30 ms, mostly libbpf parsing the kernel's BTF and the CO-RE relocations against
//! it) to pay off; otherwise the
//! procfs reader, which starts instantly. When `tasksnap pin` left the programs loaded there
//! is no load time, and `auto` takes the iterator at any size. The reason for the choice is
//! kept for `-v`.

use std::path::Path;

use crate::bpf::BpfCollector;
use crate::procfs::ProcfsCollector;
use crate::{Collector, Error};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preference {
    /// The faster one that works.
    Auto,
    /// The BPF iterator, or an error saying why not.
    Bpf,
    /// /proc.
    Procfs,
}

/// Below this many tasks a one-shot procfs read (on both cores) is done before the BPF
/// program has loaded and run: at 7,000 processes the two were level on this 2-core
/// machine, at 8,000 BPF was 7-9% ahead (docs/benchmarks.md, "Backend crossover").
pub const AUTO_MIN_TASKS: u64 = 8_000;

/// A chosen collector and why it was chosen.
pub struct Choice {
    /// The collector.
    pub collector: Box<dyn Collector>,
    /// One line for `--verbose`.
    pub reason: String,
}

impl std::fmt::Debug for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Choice")
            .field("collector", &self.collector.name())
            .field("reason", &self.reason)
            .finish()
    }
}

pub use crate::task_count;

/// How the BPF collector got ready, for `-v`.
fn readiness(b: &BpfCollector) -> String {
    match &b.pinned_at {
        Some(dir) => format!(
            "pinned programs at {}, opened in {:.2} ms",
            dir.display(),
            b.load_ns as f64 / 1e6
        ),
        None => match &b.pin_problem {
            Some(why) => format!(
                "loaded in {:.1} ms; pinned programs not used: {why}",
                b.load_ns as f64 / 1e6
            ),
            None => format!("loaded in {:.1} ms", b.load_ns as f64 / 1e6),
        },
    }
}

/// Picks a collector for a live view (`top`): BPF whenever it can load, whatever the
/// number of tasks (the load is paid once), with the walk its refreshes use; procfs when
/// `pref` says so or BPF cannot load (the reason says why).
pub fn choose_live(pref: Preference) -> Result<Choice, Error> {
    let procfs = |reason: String| -> Result<Choice, Error> {
        Ok(Choice {
            collector: Box::new(ProcfsCollector::new()?),
            reason,
        })
    };
    match pref {
        Preference::Procfs => procfs("procfs: asked for with --backend procfs".into()),
        Preference::Bpf | Preference::Auto => match BpfCollector::for_live_view() {
            Ok(b) => {
                let reason = format!("bpf: {}", readiness(&b));
                Ok(Choice {
                    collector: Box::new(b),
                    reason,
                })
            }
            Err(why) if pref == Preference::Auto => procfs(format!("procfs: {why}")),
            Err(why) => Err(Error::Unsupported(format!(
                "the BPF backend is unavailable: {why}"
            ))),
        },
    }
}

/// Picks a collector for `pref`.
pub fn choose(pref: Preference, cmdline: bool) -> Result<Choice, Error> {
    let procfs = |reason: String| -> Result<Choice, Error> {
        Ok(Choice {
            collector: Box::new(ProcfsCollector::new()?),
            reason,
        })
    };
    match pref {
        Preference::Procfs => procfs("procfs: asked for with --backend procfs".into()),
        Preference::Bpf => match BpfCollector::with_cmdline(cmdline) {
            Ok(b) => {
                let reason = format!("bpf: asked for with --backend bpf ({})", readiness(&b));
                Ok(Choice {
                    collector: Box::new(b),
                    reason,
                })
            }
            Err(why) => Err(Error::Unsupported(format!(
                "the BPF backend is unavailable: {why}"
            ))),
        },
        Preference::Auto => {
            let tasks = task_count(Path::new("/proc")).unwrap_or(0);
            if BpfCollector::pinned_available() {
                // No load to amortize: the pinned iterator wins at any size.
                match BpfCollector::with_cmdline(cmdline) {
                    Ok(b) => {
                        let reason = format!("bpf: {tasks} tasks ({})", readiness(&b));
                        return Ok(Choice {
                            collector: Box::new(b),
                            reason,
                        });
                    }
                    Err(why) => return procfs(format!("procfs: BPF unavailable: {why}")),
                }
            }
            if tasks < AUTO_MIN_TASKS {
                return procfs(format!(
                    "procfs: {tasks} tasks, fewer than {AUTO_MIN_TASKS}: reading /proc is done \
                     before the BPF program would have loaded"
                ));
            }
            match BpfCollector::with_cmdline(cmdline) {
                Ok(b) => {
                    let reason = format!("bpf: {tasks} tasks ({})", readiness(&b));
                    Ok(Choice {
                        collector: Box::new(b),
                        reason,
                    })
                }
                Err(why) => procfs(format!("procfs: BPF unavailable: {why}")),
            }
        }
    }
}
