//! The report's charts, made from what was gathered: the host (CPU, memory, load, pressure
//! when recorded), CPU by the top groups of each kind (stacked, with the rest as `other`),
//! the thread-state mix, and the processes that exited. Values are per sample (memory,
//! load) or per interval (the rest, shown at the interval's end): CPU in CPUs (seconds of CPU
//! a second), thread states in threads (seconds in the state a second).

use tasksnap_model::states::State;

use super::chart::{Chart, Series, Unit};
use super::escape::lossy;
use super::gather::{Gathered, GROUP_KINDS};

/// Groups of each kind drawn apart (the rest are `other`).
pub const TOP_GROUPS: usize = 8;

/// The states stacked in the thread-state chart, and their names.
const BUSY_STATES: [(State, &str); 5] = [
    (State::Running, "running"),
    (State::Runnable, "waiting for a CPU"),
    (State::Throttled, "held by a CPU quota"),
    (State::Disk, "D (uninterruptible)"),
    (State::Stopped, "stopped"),
];

/// Every chart of the report, in page order.
pub fn charts(g: &Gathered) -> Vec<Chart> {
    let at_intervals: Vec<u64> = g.times_ns.iter().skip(1).copied().collect();
    let span_ns: Vec<f64> = g
        .times_ns
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]).max(1) as f64)
        .collect();
    let mut out = Vec::new();
    if g.host.known {
        out.extend(host_charts(g, &at_intervals));
    }
    for (k, kind) in GROUP_KINDS.iter().enumerate() {
        out.push(chart(
            &format!("cpu-{kind}"),
            &format!("CPU by {kind}, in CPUs"),
            Unit::Plain,
            true,
            &at_intervals,
            group_series(g, k, &span_ns),
        ));
    }
    if g.states_known {
        out.extend(state_charts(g, &at_intervals, &span_ns));
    }
    out.push(chart(
        "exits",
        "Processes that exited per interval, and their CPU (s)",
        Unit::Plain,
        false,
        &at_intervals,
        series(
            &["exited", "their CPU, s"],
            vec![
                g.exits.iter().map(|&(c, _)| c as f64).collect(),
                g.exits.iter().map(|&(_, ns)| ns as f64 / 1e9).collect(),
            ],
        ),
    ));
    debug_assert!(out
        .iter()
        .all(|c| c.series.iter().all(|s| s.values.len() == c.times_ns.len())));
    out
}

fn chart(
    id: &str,
    title: &str,
    unit: Unit,
    stacked: bool,
    times: &[u64],
    series: Vec<Series>,
) -> Chart {
    Chart {
        id: id.into(),
        title: title.into(),
        unit,
        stacked,
        times_ns: times.to_vec(),
        series,
    }
}

/// The [`TOP_GROUPS`] groups of kind `k` with the most CPU over the window, each a series
/// in CPUs per interval, then `other` (the rest) when there is a rest.
fn group_series(g: &Gathered, k: usize, span_ns: &[f64]) -> Vec<Series> {
    let groups = &g.groups[k];
    let mut totals = vec![0u64; groups.names.len()];
    for iv in &groups.per_interval {
        for &(i, ns) in iv {
            totals[i as usize] = totals[i as usize].saturating_add(ns);
        }
    }
    let mut order: Vec<usize> = (0..totals.len()).filter(|&i| totals[i] > 0).collect();
    order.sort_by(|&a, &b| totals[b].cmp(&totals[a]).then(a.cmp(&b)));
    let shown: Vec<usize> = order.iter().copied().take(TOP_GROUPS).collect();
    let rest = order.len() > shown.len();
    let mut slot = vec![None; totals.len()];
    for (s, &i) in shown.iter().enumerate() {
        slot[i] = Some(s);
    }
    let lanes = shown.len() + usize::from(rest);
    let mut values = vec![vec![0.0f64; groups.per_interval.len()]; lanes];
    for (j, iv) in groups.per_interval.iter().enumerate() {
        for &(i, ns) in iv {
            let lane = slot[i as usize].unwrap_or(shown.len());
            if lane < lanes {
                values[lane][j] += ns as f64 / span_ns[j];
            }
        }
    }
    let mut names: Vec<String> = shown.iter().map(|&i| lossy(&groups.names[i])).collect();
    if rest {
        names.push(format!("other ({} groups)", order.len() - shown.len()));
    }
    names
        .into_iter()
        .zip(values)
        .map(|(name, values)| Series { name, values })
        .collect()
}

/// The D-state wait reasons with the most time over the window (at most `n`), seconds.
pub fn disk_reasons(g: &Gathered, n: usize) -> Vec<(String, f64)> {
    let mut v: Vec<(&String, &u64)> = g.disk_reasons.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.into_iter()
        .take(n)
        .map(|(t, &ns)| (t.clone(), ns as f64 / 1e9))
        .collect()
}

/// `names` with their values, a series each.
fn series(names: &[&str], values: Vec<Vec<f64>>) -> Vec<Series> {
    names
        .iter()
        .zip(values)
        .map(|(n, values)| Series {
            name: (*n).to_string(),
            values,
        })
        .collect()
}

/// Column `k` of `rows`.
fn col<const N: usize>(rows: &[[f64; N]], k: usize) -> Vec<f64> {
    rows.iter().map(|r| r[k]).collect()
}

/// The host's charts: CPU, memory, load, and pressure when recorded.
fn host_charts(g: &Gathered, at_intervals: &[u64]) -> Vec<Chart> {
    let h = &g.host;
    let mut out = vec![
        chart(
            "host-cpu",
            "Host CPU, % of all CPUs",
            Unit::Pct,
            false,
            at_intervals,
            series(
                &["busy", "user", "system", "iowait", "steal"],
                (0..5).map(|k| col(&h.cpu_pct, k)).collect(),
            ),
        ),
        chart(
            "host-memory",
            "Host memory",
            Unit::Bytes,
            false,
            &g.times_ns,
            series(
                &["used (total less available)", "total", "swap used"],
                (0..3).map(|k| col(&h.memory, k)).collect(),
            ),
        ),
        chart(
            "host-load",
            "Load average",
            Unit::Plain,
            false,
            &g.times_ns,
            series(
                &["1 min", "5 min", "15 min"],
                (0..3).map(|k| col(&h.load, k)).collect(),
            ),
        ),
    ];
    if h.has_pressure {
        out.push(chart(
            "host-pressure",
            "Pressure: % of the time some tasks stalled",
            Unit::Pct,
            false,
            at_intervals,
            series(
                &["cpu", "memory", "io"],
                (0..3).map(|k| col(&h.pressure, k)).collect(),
            ),
        ));
    }
    out
}

/// The thread-state charts: the busy states stacked, and sleeping and idle apart.
fn state_charts(g: &Gathered, at_intervals: &[u64], span_ns: &[f64]) -> Vec<Chart> {
    let state = |s: State| -> Vec<f64> {
        g.states
            .iter()
            .zip(span_ns)
            .map(|(m, &d)| {
                if m.known {
                    m.ns[s.index()] as f64 / d
                } else {
                    f64::NAN
                }
            })
            .collect()
    };
    let mut out = vec![chart(
        "states",
        "Threads by state (average over each interval)",
        Unit::Plain,
        true,
        at_intervals,
        BUSY_STATES
            .iter()
            .map(|&(s, name)| Series {
                name: name.into(),
                values: state(s),
            })
            .collect(),
    )];
    out.push(chart(
        "states-idle",
        "Threads sleeping, and idle or parked (I)",
        Unit::Plain,
        false,
        at_intervals,
        series(
            &["sleeping (S)", "idle, parked, other"],
            vec![state(State::Sleeping), state(State::Other)],
        ),
    ));
    out
}
