//! Which series are shown: the series a group counts, the groups folded into `other` when
//! their total would pass `--max-series`, the `--top-n` busiest processes, and the view the
//! encoder reads.

use std::sync::Arc;

use tasksnap_model::states::NSTATES;
use tasksnap_model::Task;

use super::aggregator::Aggregator;
use super::counters::{Counters, Gauges, Group, System, TopProcess};
use super::exits::EXIT_REASONS;

/// The name of the group the folded ones are shown as.
pub const OTHER_GROUP: &str = "other";

/// The series every group shows: CPU (user, system), state seconds, the `other` wait
/// reason, processes and threads, threads per state, resident and virtual memory, minor and
/// major faults (exit reasons only once seen: [`Group::series`]).
pub(super) const GROUP_SERIES_ALWAYS: usize = 2 + NSTATES + 1 + 2 + NSTATES + 2 + 2;

impl Group {
    /// The series this group shows.
    pub fn series(&self) -> usize {
        GROUP_SERIES_ALWAYS
            + self.total.disk_reasons.len()
            + usize::from(self.now.swap_bytes.is_some())
            + if self.now.has_io { 2 } else { 0 }
            + if self.now.has_switches { 2 } else { 0 }
            + usize::from(self.now.oldest_start_unix_s.is_some())
            + self.total.exits.iter().filter(|&&n| n > 0).count()
    }

    /// The most series a group can show with `reasons` wait reasons named: swap, I/O, context
    /// switches, the oldest start time and every exit reason all present.
    pub fn most_series(reasons: usize) -> usize {
        GROUP_SERIES_ALWAYS + reasons + 1 + 2 + 2 + 1 + EXIT_REASONS.len()
    }
}

impl Aggregator {
    pub(super) fn pick_top(
        &self,
        tasks: &[Task],
        mut deltas: Vec<(u64, usize)>,
    ) -> Vec<TopProcess> {
        let k = self.opts.top_n.min(deltas.len());
        if k == 0 {
            return Vec::new();
        }
        let key = |d: &(u64, usize)| (std::cmp::Reverse(d.0), tasks[d.1].id.tgid);
        deltas.select_nth_unstable_by_key(k - 1, key);
        deltas.truncate(k);
        deltas.sort_unstable_by_key(key);
        deltas
            .into_iter()
            .map(|(d, i)| {
                use tasksnap_model::fields::{self, Value};
                let t = &tasks[i];
                // Plain task fields, from the model's table (0, or 1 thread, when absent).
                let get = |f: &fields::Field| f.value(t).and_then(Value::as_u64);
                TopProcess {
                    pid: t.id.tgid,
                    comm: crate::label::value(
                        fields::COMM
                            .value(t)
                            .and_then(Value::as_bytes)
                            .unwrap_or(&[]),
                    )
                    .into_owned(),
                    cpu_user_ns: get(&fields::UTIME_NS).unwrap_or(0),
                    cpu_system_ns: get(&fields::STIME_NS).unwrap_or(0),
                    cpu_delta_ns: d,
                    resident_bytes: get(&fields::RSS_BYTES).unwrap_or(0),
                    threads: get(&fields::NUM_THREADS).unwrap_or(1),
                }
            })
            .collect()
    }

    /// Chooses the groups shown; the rest go into `other`, whose counters grow by what they
    /// did in the interval.
    pub(super) fn fold(&mut self) {
        let mut names: Vec<(&Arc<str>, &Group)> =
            self.groups.iter().map(|g| (&g.name, g)).collect();
        names.sort_unstable_by(|a, b| {
            let busy = |g: &Group| g.delta.cpu_user_ns + g.delta.cpu_system_ns;
            busy(b.1)
                .cmp(&busy(a.1))
                .then(b.1.now.threads.cmp(&a.1.now.threads))
                .then(a.0.cmp(b.0))
        });
        let fixed = fixed_series(self.opts.top_n) + self.beside;
        let limit = self.opts.max_series;
        let all: usize = names.iter().map(|(_, g)| g.series()).sum();
        if limit == 0 || fixed + all <= limit {
            self.folded = 0;
            self.shown = names.iter().map(|(n, _)| (*n).clone()).collect();
            self.shown.sort_unstable();
            return;
        }
        // Room for `other` at its largest.
        let other_series = Group::most_series(self.opts.reasons_per_group);
        let mut budget = limit.saturating_sub(fixed + other_series);
        let mut shown = Vec::new();
        let mut other_delta = Counters::default();
        let mut other_now = Gauges::default();
        let mut folded = 0;
        for (name, g) in names {
            let s = g.series();
            if s <= budget && &**name != OTHER_GROUP {
                budget -= s;
                shown.push(name.clone());
                continue;
            }
            folded += 1;
            other_delta.add(&g.delta, self.opts.reasons_per_group);
            let n = &mut other_now;
            n.processes += g.now.processes;
            n.threads += g.now.threads;
            for s in 0..NSTATES {
                n.in_state[s] += g.now.in_state[s];
            }
            n.resident_bytes += g.now.resident_bytes;
            n.virtual_bytes += g.now.virtual_bytes;
            if let Some(sw) = g.now.swap_bytes {
                n.swap_bytes = Some(n.swap_bytes.unwrap_or(0) + sw);
            }
            n.oldest_start_unix_s = match (n.oldest_start_unix_s, g.now.oldest_start_unix_s) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            n.has_io |= g.now.has_io;
            n.has_switches |= g.now.has_switches;
        }
        self.other
            .total
            .add(&other_delta, self.opts.reasons_per_group);
        self.other.delta = other_delta;
        self.other.now = other_now;
        shown.sort_unstable();
        self.shown = shown;
        self.folded = folded;
    }

    /// Tells the next collections that the exposition shows `series` more series beside the
    /// groups' (the cgroup families): `max_series` bounds them all, so the groups fold at
    /// what is left.
    pub fn show_beside(&mut self, series: usize) {
        self.beside = series;
    }

    /// What the last collection shows.
    pub fn view(&self) -> View<'_> {
        let mut groups: Vec<(&str, &Group)> = self
            .shown
            .iter()
            .filter_map(|n| self.index.get(n).map(|&i| (&**n, &self.groups[i])))
            .collect();
        if self.folded > 0 {
            groups.push((OTHER_GROUP, &self.other));
        }
        View {
            groups,
            folded: self.folded,
            top: &self.top,
            system: &self.system,
        }
    }
}

/// Series that do not depend on the groups: the host-wide ones, the exporter's own, and the
/// per-process ones.
pub fn fixed_series(top_n: usize) -> usize {
    // processes, threads, forks, exits dropped, 6 state seconds, 6 threads in state; collect
    // seconds, collect CPU, collections, collection errors, connections evicted, last
    // collection time, groups folded, source info, build info.
    4 + 2 * NSTATES + 9 + top_n * 5
}

/// The figures of the last collection, for encoding.
#[derive(Debug)]
pub struct View<'a> {
    /// Groups shown, by name (`other` last when some were folded).
    pub groups: Vec<(&'a str, &'a Group)>,
    /// Groups folded into `other`.
    pub folded: usize,
    /// The busiest processes.
    pub top: &'a [TopProcess],
    /// Host-wide figures.
    pub system: &'a System,
}
