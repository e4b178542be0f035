//! The ps-style listing of one moment, as an HTML table: the processes of that reading by
//! their CPU in the interval ending there (most first, at most [`ROWS`]), then those in D
//! that did not make it, then the processes that exited in the interval. Read back from the
//! recording (`History::reading_at` the moment and the reading before it, [`Readings`]), so
//! only the listed moments cost anything.

use std::collections::HashMap;
use std::fmt::Write as _;

use tasksnap_history::History;
use tasksnap_model::{fields, Reading, TaskState};

use super::escape::{html, lossy};

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

/// The readings of the moments, read back in time order: a moment whose interval starts at
/// the previous moment's reading takes that reading from here rather than decoding it again.
pub struct Readings<'h> {
    history: &'h History,
    last: Option<(u64, Reading)>,
}

impl<'h> Readings<'h> {
    /// Reads `history`.
    pub fn new(history: &'h History) -> Readings<'h> {
        Readings {
            history,
            last: None,
        }
    }

    /// The listing of the reading at `at_ns`, its interval starting at `prev_ns` (none for
    /// the window's first reading), as `<table>` HTML.
    pub fn listing(
        &mut self,
        at_ns: u64,
        prev_ns: Option<u64>,
        users: &mut tasksnap_sys::users::Names,
    ) -> anyhow::Result<String> {
        let prev = match (prev_ns, self.last.take()) {
            (Some(t), Some((l, r))) if l == t => Some(r),
            (Some(t), _) => Some(self.history.reading_at(t)?),
            (None, _) => None,
        };
        let cur = self.history.reading_at(at_ns)?;
        let html_out = listing(&cur, prev.as_ref(), users);
        self.last = Some((at_ns, cur));
        Ok(html_out)
    }
}

/// The listing of reading `cur`, its interval starting at `prev` (none for the window's
/// first reading), as `<table>` HTML.
fn listing(
    cur: &Reading,
    prev: Option<&Reading>,
    users: &mut tasksnap_sys::users::Names,
) -> String {
    let before: HashMap<(i32, u64), u64> = prev
        .iter()
        .flat_map(|p| p.snapshot.tasks.iter().filter(|t| t.id.is_leader()))
        .map(|t| ((t.id.tgid, t.id.start_time_ns), cpu(t)))
        .collect();
    let span_ns = prev.map_or(0, |p| {
        cur.snapshot
            .taken_at_unix_ns
            .saturating_sub(p.snapshot.taken_at_unix_ns)
    });
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

fn cpu(t: &tasksnap_model::Task) -> u64 {
    fields::CPU_NS
        .value(t)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// The live processes and the exited ones of `cur`, each with its CPU since `before`, most
/// first (live ones in D after the busiest is the caller's choice).
fn lines(cur: &Reading, before: &HashMap<(i32, u64), u64>) -> (Vec<Line>, Vec<Line>) {
    let exited_ids = cur.exited_ids();
    let since = |t: &tasksnap_model::Task| {
        let b = before
            .get(&(t.id.tgid, t.id.start_time_ns))
            .copied()
            .unwrap_or(0);
        cpu(t).saturating_sub(b)
    };
    let line = |t: &tasksnap_model::Task, rss: Option<u64>| Line {
        pid: t.id.tgid,
        uid: t.cred.as_ref().map(|c| c.euid),
        cpu_ns: since(t),
        rss,
        state: t.base.as_ref().map(|b| b.state.letter()),
        threads: t.base.as_ref().map(|b| b.num_threads),
        comm: t.base.as_ref().map_or_else(Vec::new, |b| b.comm.to_vec()),
        args: t
            .cmdline
            .as_deref()
            .map_or_else(Vec::new, crate::dump::cells::args_line),
    };
    let mut live: Vec<Line> = cur
        .snapshot
        .tasks
        .iter()
        .filter(|t| t.id.is_leader() && !exited_ids.contains(&t.id))
        .map(|t| {
            let rss = fields::RSS_BYTES.value(t).and_then(|v| v.as_u64());
            line(t, rss)
        })
        .collect();
    let mut exited: Vec<Line> = cur
        .exits
        .iter()
        .map(|e| {
            let mut l = line(&e.task(), Some(e.peak_rss_bytes));
            l.state = Some(TaskState::Dead.letter());
            l
        })
        .collect();
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
