//! DISK%, THR% and the top wait reason of the processes `top` shows, from tasksnap-collect's exact
//! thread-state source (BPF, root only, opened by [`Host::open_waits`]; tasksnap-states makes
//! the intervals): the scheduler tracepoint charges every thread's time in D as it happens,
//! and each refresh reads the totals of the processes on screen only (one iterator per
//! process, [`ThreadStates::sample_of`]), so the cost follows the rows shown, not the host. A process's DISK% is the sum over its threads of the time spent in uninterruptible
//! sleep, as a share of the interval (like %CPU and RUNQ%, it can pass 100 for several
//! threads). Rates need two samples of the same process: a row that just came on screen shows
//! `-` until the next refresh.

use std::collections::{HashMap, HashSet};

use tasksnap_collect::{Host, ThreadStates, Watched};
use tasksnap_states::{between, Rollup, Sample, State};

/// One process's waits over the last interval.
#[derive(Debug, Clone)]
pub struct Wait {
    pub disk_pct: f64,
    /// Held off the CPU by the cgroup's CPU quota (part of the run delay RUNQ% counts).
    pub throttled_pct: f64,
    /// `D rwsem_down_write_slowpath <- down_write_killable <- ...`, the stack it spent the
    /// most off-CPU time in.
    pub reason: Option<String>,
}

/// The loaded accounting and the previous sample.
pub struct Waits {
    src: ThreadStates,
    /// The last sample, and the processes it read (`None`: every one).
    prev: Option<(Sample, Option<HashSet<i32>>)>,
}

impl Waits {
    /// Loads the accounting of `host` (root with BPF only), or says why not.
    pub fn load(host: &Host) -> Result<Waits, String> {
        let src = host.open_waits().map_err(|e| e.to_string())?;
        Ok(Waits { src, prev: None })
    }

    /// Drops the last sample (the view shows no task rows meanwhile: the cgroup view), so
    /// that the next update starts a fresh interval instead of covering the time away.
    pub fn forget(&mut self) {
        self.prev = None;
    }

    /// Samples the processes `which` names and returns the waits of those that were also
    /// sampled last time: per process (keyed by pid), or per thread (keyed by tid) when
    /// `threads`.
    pub fn update(&mut self, which: Watched<'_>, threads: bool) -> HashMap<i32, Wait> {
        let Ok(cur) = self.src.sample_of(which) else {
            self.prev = None;
            return HashMap::new();
        };
        let watched: Option<HashSet<i32>> = match which {
            Watched::Every => None,
            Watched::Only(pids) => Some(pids.iter().copied().collect()),
        };
        let out = match &self.prev {
            Some((prev, prev_watched)) => between_samples(prev, &cur, threads, |pid| {
                [prev_watched, &watched]
                    .iter()
                    .all(|w| w.as_ref().is_none_or(|w| w.contains(&pid)))
            }),
            None => HashMap::new(),
        };
        self.prev = Some((cur, watched));
        out
    }
}

/// The waits over the interval between two thread-state samples, per process (keyed by pid)
/// or per thread (keyed by tid) when `threads`, for the processes `comparable` accepts (by
/// pid): what the live accounting gives each refresh, and what a replay takes from the
/// recorded samples.
pub fn between_samples(
    prev: &Sample,
    cur: &Sample,
    threads: bool,
    comparable: impl Fn(i32) -> bool,
) -> HashMap<i32, Wait> {
    let rollup = if threads {
        Rollup::Thread
    } else {
        Rollup::Process
    };
    let interval = between(prev, cur, rollup);
    let length = interval.length_ns.max(1) as f64;
    let letter = |s: State| match s {
        State::Disk => 'D',
        State::Sleeping => 'S',
        State::Runnable | State::Throttled => 'R',
        State::Stopped => 'T',
        _ => '-',
    };
    let mut out = HashMap::new();
    for row in &interval.rows {
        if !comparable(row.pid) {
            continue;
        }
        out.insert(
            if threads {
                row.tid.unwrap_or(row.pid)
            } else {
                row.pid
            },
            Wait {
                disk_pct: row.ns[State::Disk.index()] as f64 * 100.0 / length,
                throttled_pct: row.ns[State::Throttled.index()] as f64 * 100.0 / length,
                reason: row
                    .top_reason
                    .as_ref()
                    .map(|r| format!("{} {}", letter(r.state), r.text(4))),
            },
        );
    }
    out
}
