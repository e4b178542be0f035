//! A recording's readings as [`Frame`]s: each reading's processes as rows (its exit records
//! after the live ones), its host figures, and the thread-state mix and D-state reasons of
//! the interval since the reading before (`tasksnap_states::interval::thread_deltas`
//! between their state samples).

use std::collections::HashMap;

use tasksnap_model::states::{Sample, State};
use tasksnap_model::{fields, Reading, Task, TaskState};
use tasksnap_states::interval::thread_deltas;

use super::frame::{ExitRecords, Frame, ProcRow, StateMix};

/// Turns a window's readings, in time order, into frames.
#[derive(Default)]
pub struct Framer {
    /// The state sample of the reading before (`None`: it had none, or this is the first).
    prev_states: Option<Sample>,
}

impl Framer {
    /// The frame of the next reading of the window.
    pub fn frame(&mut self, mut r: Reading) -> Frame {
        let mut disk_reasons = HashMap::new();
        let states = state_mix(
            self.prev_states.as_ref(),
            r.states.as_ref(),
            &mut disk_reasons,
        );
        self.prev_states = r.states.take();
        Frame {
            at_unix_ns: r.snapshot.taken_at_unix_ns,
            hostname: r.host.hostname.take(),
            procs: procs(&r),
            system: Some(std::mem::take(&mut r.system)),
            states,
            disk_reasons: disk_reasons.into_iter().collect(),
            exits: ExitRecords {
                known: r.exits_missing.is_none(),
                dropped: r.exits_dropped,
            },
        }
    }
}

/// Reading `r`'s processes: the live ones (a zombie whose exit is in `r` is its exit's row
/// only), then those that exited since the reading before, from their exit records.
pub fn procs(r: &Reading) -> Vec<ProcRow> {
    let snap = &r.snapshot;
    let unix_ns = |boot_ns: u64| {
        (snap.boot_time_unix_s > 0).then(|| {
            snap.boot_time_unix_s
                .saturating_mul(1_000_000_000)
                .saturating_add(boot_ns)
        })
    };
    let row = |t: &Task, rss: Option<u64>| ProcRow {
        pid: t.id.tgid,
        start_key: t.id.start_time_ns,
        start_unix_ns: unix_ns(t.id.start_time_ns),
        cpu_ns: fields::CPU_NS.value(t).and_then(|v| v.as_u64()),
        rss_bytes: rss,
        uid: t.cred.as_ref().map(|c| c.euid),
        state: t.base.as_ref().map(|b| b.state.letter()),
        threads: t.base.as_ref().map(|b| b.num_threads),
        comm: t.base.as_ref().map(|b| b.comm.to_vec()),
        args: t.cmdline.as_deref().map(crate::dump::cells::args_line),
        cgroup: t.cgroup.as_deref().map(crate::dump::cells::cgroup_line),
        exit_unix_ns: None,
    };
    let exited = r.exited_ids();
    let mut out: Vec<ProcRow> = snap
        .tasks
        .iter()
        .filter(|t| t.id.is_leader() && !exited.contains(&t.id))
        .map(|t| row(t, fields::RSS_BYTES.value(t).and_then(|v| v.as_u64())))
        .collect();
    for e in &r.exits {
        let mut p = row(&e.task(), Some(e.peak_rss_bytes));
        p.state = Some(TaskState::Dead.letter());
        // An exit record holds no thread count (its task's is a zero, not a figure) and no
        // cgroup (the process's last live row has it), as `dump`'s exit row.
        p.threads = None;
        p.cgroup = None;
        p.exit_unix_ns = Some(unix_ns(e.exit_time_ns).unwrap_or(0));
        out.push(p);
    }
    out
}

/// The thread-state mix of the interval between two state samples, its D waits' reasons
/// added to `reasons`.
fn state_mix(
    prev: Option<&Sample>,
    cur: Option<&Sample>,
    reasons: &mut HashMap<String, u64>,
) -> StateMix {
    let (Some(prev), Some(cur)) = (prev, cur) else {
        return StateMix::default();
    };
    let mut mix = StateMix {
        known: true,
        ..StateMix::default()
    };
    let mut by_id: HashMap<u32, u64> = HashMap::new();
    for d in thread_deltas(prev, cur) {
        for (a, b) in mix.ns.iter_mut().zip(d.ns) {
            *a = a.saturating_add(b);
        }
        for (state, id, ns) in d.reasons() {
            if state == State::Disk {
                *by_id.entry(id).or_default() += ns;
            }
        }
    }
    for (id, ns) in by_id {
        let text = cur.reasons.get(&id).map_or_else(
            || "[unknown]".to_string(),
            |f| {
                f.iter()
                    .take(6)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(" <- ")
            },
        );
        *reasons.entry(text).or_default() += ns;
    }
    mix
}
