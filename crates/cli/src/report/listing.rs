//! The ps-style listing of one moment, as an HTML table: the processes of that reading by
//! their CPU in the interval ending there (most first, at most [`ROWS`]), then those in D
//! that did not make it, then the processes that exited in the interval. Read back from the
//! input ([`Readings`]: a recording's `History::reading_at` the moment and the reading before
//! it, or a Parquet dump's rows of those times), so only the listed moments cost anything.

use std::collections::HashMap;
use std::fmt::Write as _;

use tasksnap_history::History;

use super::escape::{html, lossy};
use super::frame::ProcRow;

/// Rows of the busiest processes a listing shows.
pub const ROWS: usize = 25;
/// Rows of processes in D (beyond the busiest) a listing shows.
const DISK_ROWS: usize = 10;
/// Rows of exited processes a listing shows.
const EXIT_ROWS: usize = 10;

struct Line {
    pid: i32,
    uid: Option<u32>,
    cpu_ns: u64,
    rss: Option<u64>,
    state: Option<u8>,
    threads: Option<u32>,
    comm: Vec<u8>,
    args: Vec<u8>,
}

/// Where the moments' processes are read back from.
pub enum Back<'h> {
    /// A recording.
    Recording(&'h History),
    /// A dump's rows of the listed moments and the samples before them, by time.
    Rows(HashMap<u64, Vec<ProcRow>>),
}

/// The processes of the moments, read back in time order: a moment whose interval starts at
/// the previous moment's sample takes that sample from here rather than reading it again.
pub struct Readings<'h> {
    back: Back<'h>,
    last: Option<(u64, Vec<ProcRow>)>,
}

impl<'h> Readings<'h> {
    /// Reads `back`.
    pub fn new(back: Back<'h>) -> Readings<'h> {
        Readings { back, last: None }
    }

    /// The processes of the sample at `at_ns`.
    fn procs(&self, at_ns: u64) -> anyhow::Result<Vec<ProcRow>> {
        Ok(match &self.back {
            Back::Recording(h) => super::recorded::procs(&h.reading_at(at_ns)?),
            Back::Rows(rows) => rows.get(&at_ns).cloned().unwrap_or_default(),
        })
    }

    /// The listing of the sample at `at_ns`, its interval starting at `prev_ns` (none for
    /// the window's first sample), as `<table>` HTML.
    pub fn listing(
        &mut self,
        at_ns: u64,
        prev_ns: Option<u64>,
        users: &mut tasksnap_sys::users::Names,
    ) -> anyhow::Result<String> {
        let prev = match (prev_ns, self.last.take()) {
            (Some(t), Some((l, r))) if l == t => Some(r),
            (Some(t), _) => Some(self.procs(t)?),
            (None, _) => None,
        };
        let cur = self.procs(at_ns)?;
        let span_ns = prev_ns.map_or(0, |p| at_ns.saturating_sub(p));
        let html_out = listing(&cur, prev.as_deref(), span_ns, users);
        self.last = Some((at_ns, cur));
        Ok(html_out)
    }
}

/// The listing of the processes `cur`, their interval starting at the sample `prev` (none
/// for the window's first sample) `span_ns` before, as `<table>` HTML.
fn listing(
    cur: &[ProcRow],
    prev: Option<&[ProcRow]>,
    span_ns: u64,
    users: &mut tasksnap_sys::users::Names,
) -> String {
    let before: HashMap<(i32, u64), u64> = prev
        .into_iter()
        .flatten()
        .filter(|p| p.exit_unix_ns.is_none())
        .map(|p| ((p.pid, p.start_key), p.cpu_ns.unwrap_or(0)))
        .collect();
    let (live, exited) = lines(cur, &before);
    let mut html_out = String::from(
        "<table class=\"ps\"><thead><tr><th>PID</th><th>USER</th><th>%CPU</th><th>RSS</th>\
         <th>S</th><th>THR</th><th>COMMAND</th></tr></thead><tbody>",
    );
    let mut shown = 0;
    for l in &live {
        let disk = l.state == Some(b'D');
        if shown < ROWS || (disk && shown < ROWS + DISK_ROWS) {
            row(&mut html_out, l, span_ns, users, "");
            shown += 1;
        }
    }
    for l in exited.iter().take(EXIT_ROWS) {
        row(&mut html_out, l, span_ns, users, " class=\"exited\"");
    }
    let _ = write!(
        html_out,
        "</tbody></table><p class=\"note\">{} processes, {} exited in the interval{}</p>",
        live.len(),
        exited.len(),
        if exited.len() > EXIT_ROWS {
            format!(" (the {EXIT_ROWS} with the most CPU shown)")
        } else {
            String::new()
        }
    );
    html_out
}

/// The live processes and the exited ones of `cur`, each with its CPU since `before`, most
/// first (live ones in D after the busiest is the caller's choice).
fn lines(cur: &[ProcRow], before: &HashMap<(i32, u64), u64>) -> (Vec<Line>, Vec<Line>) {
    let line = |p: &ProcRow| Line {
        pid: p.pid,
        uid: p.uid,
        cpu_ns: p
            .cpu_ns
            .unwrap_or(0)
            .saturating_sub(before.get(&(p.pid, p.start_key)).copied().unwrap_or(0)),
        rss: p.rss_bytes,
        state: p.state,
        threads: p.threads,
        comm: p.comm.clone().unwrap_or_default(),
        args: p.args.clone().unwrap_or_default(),
    };
    let (mut live, mut exited): (Vec<Line>, Vec<Line>) = (Vec::new(), Vec::new());
    for p in cur {
        match p.exit_unix_ns {
            None => live.push(line(p)),
            Some(_) => exited.push(line(p)),
        }
    }
    for v in [&mut live, &mut exited] {
        v.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.pid.cmp(&b.pid)));
    }
    (live, exited)
}

fn row(
    out: &mut String,
    l: &Line,
    span_ns: u64,
    users: &mut tasksnap_sys::users::Names,
    class: &str,
) {
    let user = l.uid.map_or_else(String::new, |u| match users.user(u) {
        Some(n) => lossy(n),
        None => u.to_string(),
    });
    let pct = if span_ns > 0 {
        format!("{:.1}", l.cpu_ns as f64 * 100.0 / span_ns as f64)
    } else {
        "-".into()
    };
    let rss = l
        .rss
        .map_or_else(|| "-".into(), |r| super::chart::bytes(r as f64));
    let command = if l.args.is_empty() {
        format!("[{}]", lossy(&l.comm))
    } else {
        lossy(&l.args)
    };
    let _ = write!(
        out,
        "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td class=\"cmd\" title=\"{}\">{}</td></tr>",
        l.pid,
        html(&user),
        pct,
        rss,
        l.state.map_or('-', char::from),
        l.threads.map_or_else(|| "-".into(), |n| n.to_string()),
        html(&lossy(&l.comm)),
        html(&command),
    );
}
