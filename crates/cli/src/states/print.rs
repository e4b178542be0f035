//! How an interval is shown: a table (one line per row, a totals row, `~` on sampled
//! columns) or one JSON object per line. Write errors on stdout end the program through
//! `say!` (a closed pipe exits 0).

use serde::Serialize;
use tasksnap_states::interval::{Interval, Row};
use tasksnap_states::{Mode, Rollup, State};

use super::args::Args;

/// Frames of the top reason shown.
const REASON_DEPTH: usize = 4;

pub struct Printer {
    json: bool,
    rows: usize,
    rollup: Rollup,
    /// Terminal width when stdout is a terminal: lines are cut to it.
    width: Option<usize>,
    first: bool,
    /// A replay's window (wall-clock ns of its two samples): shown instead of the time now.
    pub window_unix_ns: Option<(u64, u64)>,
}

/// The width of the terminal on stdout, `None` when stdout is not a sized terminal.
fn terminal_width() -> Option<usize> {
    tasksnap_sys::terminal_size(libc::STDOUT_FILENO)
        .filter(|&(cols, _)| cols > 0)
        .map(|(cols, _)| usize::from(cols))
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn state_letter(s: State) -> char {
    match s {
        State::Running => 'R',
        State::Runnable | State::Throttled => 'R',
        State::Sleeping => 'S',
        State::Disk => 'D',
        State::Stopped => 'T',
        State::Other => 'I',
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[derive(Serialize)]
struct JsonRow<'a> {
    pid: Option<i32>,
    tid: Option<i32>,
    /// Valid UTF-8: invalid bytes replaced by U+FFFD.
    comm: &'a str,
    /// The comm's exact bytes in hex when they are not valid UTF-8, else null (the rule of
    /// every table-shaped output: docs/record.md).
    comm_bytes: Option<String>,
    running_pct: f64,
    runnable_pct: f64,
    throttled_pct: f64,
    sleeping_pct: f64,
    disk_pct: f64,
    stopped_pct: f64,
    other_pct: f64,
    top_reason: Option<String>,
    top_reason_state: Option<State>,
    top_reason_ns: Option<u64>,
    alive_ns: u64,
    #[serde(skip_serializing_if = "is_one")]
    threads: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    exited: bool,
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

impl<'a> JsonRow<'a> {
    fn of(r: &'a Row, rollup: Rollup) -> JsonRow<'a> {
        JsonRow {
            pid: (rollup != Rollup::Command).then_some(r.pid),
            tid: r.tid,
            comm: &r.comm,
            comm_bytes: r
                .comm_bytes
                .as_deref()
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect()),
            running_pct: round2(r.pct(State::Running)),
            runnable_pct: round2(r.pct(State::Runnable)),
            throttled_pct: round2(r.pct(State::Throttled)),
            sleeping_pct: round2(r.pct(State::Sleeping)),
            disk_pct: round2(r.pct(State::Disk)),
            stopped_pct: round2(r.pct(State::Stopped)),
            other_pct: round2(r.pct(State::Other)),
            top_reason: r.top_reason.as_ref().map(|x| x.text(8)),
            top_reason_state: r.top_reason.as_ref().map(|x| x.state),
            top_reason_ns: r.top_reason.as_ref().map(|x| x.ns),
            alive_ns: r.alive_ns,
            threads: r.threads,
            exited: r.exited,
        }
    }
}

#[derive(Serialize)]
struct JsonInterval<'a> {
    time_unix_ns: u64,
    interval_ns: u64,
    mode: &'static str,
    /// Fields estimated by sampling (the others are exact).
    sampled: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sample_hz: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    exited: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<Vec<JsonRow<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    processes: Option<Vec<JsonRow<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    commands: Option<Vec<JsonRow<'a>>>,
    totals: JsonRow<'a>,
}

impl Printer {
    pub fn new(args: &Args) -> Printer {
        Printer {
            json: args.json,
            rows: args.rows,
            rollup: args.rollup(),
            width: terminal_width(),
            first: true,
            window_unix_ns: None,
        }
    }

    pub fn interval(&mut self, iv: &Interval) {
        if self.json {
            self.json(iv);
        } else {
            self.table(iv);
        }
        self.first = false;
    }

    fn json(&self, iv: &Interval) {
        let totals = iv.totals();
        let rows: Vec<JsonRow<'_>> = iv
            .rows
            .iter()
            .map(|r| JsonRow::of(r, self.rollup))
            .collect();
        let mut out = JsonInterval {
            time_unix_ns: self.window_unix_ns.map_or_else(unix_ns, |w| w.1),
            interval_ns: iv.length_ns,
            mode: iv.mode.name(),
            sampled: State::ALL
                .iter()
                .filter(|&&s| iv.mode.sampled(s))
                .map(|s| format!("{}_pct", s.name()))
                .collect(),
            sample_hz: match iv.mode {
                Mode::Procfs { sample_hz, .. } => Some(sample_hz),
                Mode::Bpf => None,
            },
            notes: &iv.notes,
            exited: iv.exited,
            threads: None,
            processes: None,
            commands: None,
            totals: JsonRow::of(&totals, Rollup::Command),
        };
        match self.rollup {
            Rollup::Thread => out.threads = Some(rows),
            Rollup::Process => out.processes = Some(rows),
            Rollup::Command => out.commands = Some(rows),
        }
        match serde_json::to_string(&out) {
            Ok(line) => say!("{line}"),
            Err(e) => warn!("tasksnap states: cannot encode JSON: {e}"),
        }
    }

    fn cut(&self, line: String) -> String {
        match self.width {
            Some(w) if line.chars().count() > w => line.chars().take(w).collect(),
            _ => line,
        }
    }

    /// The table is built in memory and written at once: one write for thousands of rows
    /// (stdout is line-buffered), and nothing half-printed when the reader goes away.
    fn table(&self, iv: &Interval) {
        use std::fmt::Write as _;

        let m = |s: State| if iv.mode.sampled(s) { "~" } else { "" };
        let mut out = String::with_capacity(128 * (iv.rows.len().min(self.shown(iv)) + 8));
        if !self.first {
            out.push('\n');
        }
        let what = match self.rollup {
            Rollup::Thread => "threads",
            Rollup::Process => "processes",
            Rollup::Command => "commands",
        };
        let how = match iv.mode {
            Mode::Bpf => "bpf, exact".to_string(),
            Mode::Procfs { sample_hz, .. } => {
                format!("procfs, ~ sampled at {sample_hz} Hz, RUN% exact")
            }
        };
        let _ = writeln!(
            out,
            "{}  interval {:.2} s  {} {what}{}  ({how})",
            match self.window_unix_ns {
                Some((a, b)) => format!(
                    "replay {} .. {}",
                    crate::when::rfc3339(a),
                    crate::when::rfc3339(b)
                ),
                None => tasksnap_sys::local_clock(),
            },
            iv.length_ns as f64 / 1e9,
            iv.rows.len(),
            if iv.exited > 0 {
                format!(", {} exited", iv.exited)
            } else {
                String::new()
            }
        );
        for n in &iv.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let _ = writeln!(
            out,
            "{}",
            self.cut(format!(
                "{:>7} {:>7} {:<16} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7}  REASON",
                "PID",
                "TID",
                "COMM",
                format!("{}RUN%", m(State::Running)),
                format!("{}RUNQ%", m(State::Runnable)),
                format!("{}THR%", m(State::Throttled)),
                format!("{}SLEEP%", m(State::Sleeping)),
                format!("{}DISK%", m(State::Disk)),
                format!("{}STOP%", m(State::Stopped)),
                format!("{}OTHER%", m(State::Other)),
            ))
        );
        let shown = self.shown(iv);
        for r in iv.rows.iter().take(shown) {
            self.line(&mut out, r);
        }
        if iv.rows.len() > shown {
            let _ = writeln!(
                out,
                "  ... {} more (--rows 0 shows all)",
                iv.rows.len() - shown
            );
        }
        self.line(&mut out, &iv.totals());
        out.pop(); // say! ends the line
        say!("{out}");
    }

    fn shown(&self, iv: &Interval) -> usize {
        if self.rows == 0 {
            iv.rows.len()
        } else {
            self.rows.min(iv.rows.len())
        }
    }

    /// One row, appended to `out` (with its newline). Built by hand rather than with
    /// `format!` and `{:.1}`: at 10,000 rows the float formatting alone took milliseconds.
    fn line(&self, out: &mut String, r: &Row) {
        use std::fmt::Write as _;

        let start = out.len();
        let hide_pid = r.pid == 0 && (self.rollup == Rollup::Command || r.tid.is_none());
        let _ = if hide_pid {
            write!(out, "{:>7} ", "-")
        } else {
            write!(out, "{:>7} ", r.pid)
        };
        let _ = match r.tid {
            Some(t) => write!(out, "{t:>7} "),
            None => write!(out, "{:>7} ", "-"),
        };
        let comm_start = out.len();
        push_comm(out, &r.comm);
        if r.exited {
            out.push_str(" (exited)");
        }
        let comm_len = out[comm_start..].chars().count();
        for _ in comm_len..16 {
            out.push(' ');
        }
        for (k, s) in State::SHOWN.iter().enumerate() {
            out.push(' ');
            push_pct(out, r.pct(*s), if k < 3 { 6 } else { 7 });
        }
        out.push_str("  ");
        // The top reason with the share of the row's time spent there.
        if let Some(x) = &r.top_reason {
            let pct = if r.alive_ns > 0 {
                x.ns as f64 * 100.0 / r.alive_ns as f64
            } else {
                0.0
            };
            out.push(state_letter(x.state));
            out.push(' ');
            push_pct(out, pct, 0);
            out.push_str("% ");
            out.push_str(&x.text(REASON_DEPTH));
        }
        if let Some(w) = self.width {
            // Cut to the terminal's width (on a char boundary).
            if let Some((i, _)) = out[start..].char_indices().nth(w) {
                out.truncate(start + i);
            }
        }
        out.push('\n');
    }
}

/// A comm as one line of text, appended: control characters escaped (`\n`, `\u{1b}`).
fn push_comm(out: &mut String, s: &str) {
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

/// A percentage with one decimal, right-aligned to `width`: ps's tenths
/// ([`crate::ps::cell::tenths`], digits by hand: see [`Printer::line`]).
fn push_pct(out: &mut String, x: f64, width: usize) {
    let tenths = (x * 10.0).round().clamp(0.0, 1e9) as u64;
    // ".d" takes two of the width.
    let cell = crate::ps::cell::tenths(tenths, width.saturating_sub(2));
    out.extend(cell.bytes.iter().map(|&b| char::from(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `states --json` gave a comm that is not UTF-8 with U+FFFD and no exact bytes: the
    /// table rule's `comm_bytes` sibling (hex, null for a valid comm) is on every row.
    #[test]
    fn states_json_gives_invalid_utf8_comm_a_bytes_column() {
        let bad = Row {
            pid: 7,
            tid: Some(7),
            comm: "x\u{fffd}".into(),
            comm_bytes: Some(std::sync::Arc::from(&b"x\xff"[..])),
            threads: 1,
            ..Row::default()
        };
        let v = serde_json::to_value(JsonRow::of(&bad, Rollup::Thread)).expect("JSON");
        assert_eq!(v["comm"], "x\u{fffd}");
        assert_eq!(v["comm_bytes"], "78ff");
        let good = Row {
            comm: "ok".into(),
            ..bad
        };
        let good = Row {
            comm_bytes: None,
            ..good
        };
        let v = serde_json::to_value(JsonRow::of(&good, Rollup::Thread)).expect("JSON");
        assert!(v.get("comm_bytes").is_some_and(|b| b.is_null()), "{v}");
    }
}
