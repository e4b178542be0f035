//! Thread-state seconds into the groups: each thread's share of the interval since the last
//! sample, charged to the group its process is in now or was in when it exited.

use std::collections::HashMap;
use std::sync::Arc;

use tasksnap_model::states::{Mode, Sample, State, ThreadTotals};
use tasksnap_states::interval::ThreadDelta;

use super::aggregator::Aggregator;
use super::counters::System;
use super::previous::ThreadPrev;
use super::walk::Live;
use crate::group::PidMap;

/// A cheap, stable name for a wait reason: its two innermost kernel frames (`unknown` when
/// the source named none).
pub(super) fn reason_label(frames: Option<&[String]>) -> Arc<str> {
    let key: Vec<&str> = frames
        .unwrap_or(&[])
        .iter()
        .take(2)
        .map(String::as_str)
        .collect();
    if key.is_empty() {
        Arc::from("unknown")
    } else {
        Arc::from(crate::label::value(key.join(" <- ").as_bytes()))
    }
}

impl Aggregator {
    /// Thread states over the interval, charged to the group the thread's process is in now
    /// (`live`), or was in (`exit_groups`: a process that exited since). The previous totals
    /// are kept per thread in place: each thread's entry is read, then overwritten with this
    /// sample's.
    pub(super) fn charge_sample(
        &mut self,
        live: &Live<'_>,
        exit_groups: &PidMap<usize>,
        system: &mut System,
    ) {
        let seen_in = self.collections as u32;
        let mut states_prev = std::mem::take(&mut self.states_prev);
        let Some(cur) = live.states else {
            states_prev.clear();
            self.states_prev_at = None;
            self.states_prev = states_prev;
            return;
        };
        // Threads come in hash order: a binary search of the assignment per thread was most
        // of the aggregation (a cache miss per step at 50,000 processes).
        let mut group_at = std::mem::take(&mut self.group_at);
        group_at.clear();
        group_at.extend(
            live.group_of
                .entries()
                .iter()
                .zip(live.entry_group)
                .map(|(e, &gi)| (e.0, gi)),
        );
        let mut labels: HashMap<u32, Arc<str>> = HashMap::new();
        // The interval starts at the last sample when it was of the same source.
        let start_ns = self.states_prev_at;
        if start_ns.is_none() {
            states_prev.clear();
        }
        use std::collections::hash_map::Entry;
        for (id, t) in &cur.threads {
            let slot = states_prev.entry(*id);
            if let Some(start_ns) = start_ns {
                let p = match &slot {
                    Entry::Occupied(o) => Some(o.get()),
                    Entry::Vacant(_) => None,
                };
                self.charge_states(
                    t,
                    p,
                    cur,
                    start_ns,
                    &group_at,
                    exit_groups,
                    &mut labels,
                    system,
                );
            }
            match slot {
                Entry::Occupied(mut o) => o.get_mut().set(t, seen_in),
                Entry::Vacant(v) => v.insert(ThreadPrev::default()).set(t, seen_in),
            }
        }
        // Threads the source no longer reports (they exited, and their final totals were
        // counted) are forgotten; every entry is one of this sample's otherwise.
        if states_prev.len() > cur.threads.len() {
            states_prev.retain(|_, p| p.seen_in == seen_in);
        }
        self.group_at = group_at;
        self.states_prev_at = Some(cur.at_ns);
        self.states_prev = states_prev;
    }

    /// Charges one thread's share of the interval (from `prev`, its totals at the last
    /// sample, to `t`) to the host and to the group of its process, as it is now or was when
    /// it exited (a process born and dead since the last collection is in no assignment).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn charge_states(
        &mut self,
        t: &ThreadTotals,
        prev: Option<&ThreadPrev>,
        cur: &Sample,
        start_ns: u64,
        group_at: &PidMap<usize>,
        exit_groups: &PidMap<usize>,
        labels: &mut HashMap<u32, Arc<str>>,
        system: &mut System,
    ) {
        // As `interval::thread_deltas`: a thread that exited before it was first seen, with
        // nothing to its name, was not alive in the interval.
        if t.exited && prev.is_none() && t.state_ns.iter().sum::<u64>() == 0 {
            return;
        }
        let ns = match cur.mode {
            // Exact: the totals' increase (`ThreadDelta::new`'s arithmetic, without
            // making the previous totals a sample's row).
            Mode::Bpf => {
                let mut ns = t.state_ns;
                if let Some(p) = prev {
                    for (n, b) in ns.iter_mut().zip(p.state_ns) {
                        *n = n.saturating_sub(b);
                    }
                }
                ns
            }
            Mode::Procfs { .. } => {
                let p = prev.map(|p| p.totals(t));
                ThreadDelta::new(t, p.as_ref(), cur.mode, start_ns).ns
            }
        };
        if ns.iter().sum::<u64>() == 0 {
            return;
        }
        for (total, n) in system.state_ns.iter_mut().zip(ns) {
            *total = total.saturating_add(n);
        }
        let pid = t.id.tgid;
        let gi = match group_at.get(&pid).or_else(|| exit_groups.get(&pid)) {
            Some(&gi) => Some(gi),
            None => self.group_prev.get(pid).cloned().map(|n| self.group(&n)),
        };
        let Some(gi) = gi else {
            return;
        };
        let g = &mut self.groups[gi];
        for (total, n) in g.delta.state_ns.iter_mut().zip(ns) {
            *total = total.saturating_add(n);
        }
        // D time by reason (`ThreadDelta::reasons`: each at most its state's time).
        for &(state, id, total) in &t.reasons {
            if state != State::Disk {
                continue;
            }
            let before = prev
                .and_then(|p| p.reasons.iter().find(|r| r.0 == state && r.1 == id))
                .map_or(0, |r| r.2);
            let d = total.saturating_sub(before).min(ns[state.index()]);
            if d == 0 {
                continue;
            }
            let label = labels
                .entry(id)
                .or_insert_with(|| reason_label(cur.reasons.get(&id).map(|f| &f[..])));
            g.delta.add_reason(label, d, usize::MAX);
        }
    }
}
