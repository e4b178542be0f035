//! The moments worth looking at, chosen from what was gathered: the intervals with the most
//! thread time in D, the most time waiting for a CPU (behind other threads or a quota), the
//! most processes exiting, and the interval each top process used the most CPU in. A moment
//! is a reading of the window (the end of its interval); the report embeds the listing of
//! each one, and of no other.

use tasksnap_model::states::State;

use super::gather::Gathered;

/// How many intervals of each kind are listed.
pub const PER_KIND: usize = 5;

/// A moment: a reading of the window and why it is listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    /// The reading's index in the window.
    pub reading: usize,
    /// Why (one line per reason, text).
    pub why: Vec<String>,
}

/// The moments of `g`: the top intervals of each kind, then the peaks of the processes
/// `top` (indices into `g.procs`), one moment per reading, in time order.
pub fn choose(g: &Gathered, top: &[usize]) -> Vec<Moment> {
    let mut out: Vec<Moment> = Vec::new();
    let mut add = |reading: usize, why: String| match out.iter_mut().find(|m| m.reading == reading)
    {
        Some(m) => m.why.push(why),
        None => out.push(Moment {
            reading,
            why: vec![why],
        }),
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let state = |s: State| -> Vec<f64> {
        g.states
            .iter()
            .map(|m| if m.known { secs(m.ns[s.index()]) } else { 0.0 })
            .collect()
    };
    let disk = state(State::Disk);
    let runq: Vec<f64> = state(State::Runnable)
        .iter()
        .zip(state(State::Throttled))
        .map(|(a, b)| a + b)
        .collect();
    let exits: Vec<f64> = g.exits.iter().map(|&(n, _)| n as f64).collect();
    for j in top_intervals(&disk) {
        add(j + 1, format!("{:.1} s of thread time in D", disk[j]));
    }
    for j in top_intervals(&runq) {
        add(
            j + 1,
            format!("{:.1} s of thread time waiting for a CPU", runq[j]),
        );
    }
    for j in top_intervals(&exits) {
        let cpu = g.exits[j].1;
        add(
            j + 1,
            format!(
                "{} processes exited ({:.2} s of CPU)",
                g.exits[j].0,
                secs(cpu)
            ),
        );
    }
    for &k in top {
        let p = &g.procs[k];
        if p.peak_interval_cpu_ns > 0 {
            add(
                p.peak_reading,
                format!(
                    "pid {} used the most CPU of its life in the window ({:.2} s)",
                    p.pid,
                    secs(p.peak_interval_cpu_ns)
                ),
            );
        }
    }
    out.sort_by_key(|m| m.reading);
    out
}

/// The intervals (indices) of the [`PER_KIND`] highest values above 0, at least three
/// intervals apart (a long spike is one moment), highest first.
fn top_intervals(v: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..v.len()).filter(|&i| v[i] > 0.0).collect();
    order.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
    let mut out: Vec<usize> = Vec::new();
    for i in order {
        if out.len() == PER_KIND {
            break;
        }
        if out.iter().all(|&o| o.abs_diff(i) >= 3) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spikes_apart_highest_first() {
        let v = [
            0.0, 5.0, 6.0, 0.0, 0.0, 0.0, 4.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 3.0,
        ];
        // 1 is next to 2, 12 next to 13, 8 two from 6.
        assert_eq!(top_intervals(&v), vec![2, 6, 13]);
        assert!(top_intervals(&[0.0; 10]).is_empty());
    }
}
