//! The report's one HTML file: the style, the charts' SVG, the tables, the listings of the
//! chosen moments (hidden until chosen), the charts' values for the hover as JSON, and a
//! small script, all inline. A Content-Security-Policy lets the page fetch nothing (no
//! network, no other file) and run only its own inline script. Every piece of recorded text
//! reaches the page through [`super::escape`]; the script writes it with `textContent` only.

use std::fmt::Write as _;

use super::chart::{bytes, Chart, Drawn};
use super::escape::{html, lossy};
use super::gather::{Proc, GROUP_KINDS};

/// A moment as the page lists it.
pub struct MomentView {
    /// The reading's time, Unix ns.
    pub at_ns: u64,
    /// Why it is listed (text).
    pub why: Vec<String>,
    /// Its listing, HTML (already escaped).
    pub listing: String,
}

/// A row of the top processes' table.
pub struct ProcView<'a> {
    /// The process.
    pub proc: &'a Proc,
    /// Its user's name (text; its uid when the system has no name).
    pub user: String,
    /// The time of the reading it peaked at, Unix ns (a listed moment).
    pub peak_ns: u64,
}

/// What the page shows.
pub struct Page<'a> {
    /// The recording's host name, as recorded.
    pub hostname: Option<&'a [u8]>,
    /// The window's first and last readings, Unix ns.
    pub window: (u64, u64),
    /// Readings in the window.
    pub samples: usize,
    /// Damaged samples skipped.
    pub lost: u64,
    /// Exit records the kernel dropped.
    pub exits_dropped: u64,
    /// Whether an exit source ran.
    pub exits_known: bool,
    /// The charts, in page order.
    pub charts: &'a [Chart],
    /// The top processes, most CPU first.
    pub procs: Vec<ProcView<'a>>,
    /// The D-state wait reasons with the most time, seconds.
    pub reasons: Vec<(String, f64)>,
    /// The listed moments, in time order.
    pub moments: Vec<MomentView>,
    /// What the input lacks and the page leaves out, a line each (text).
    pub notes: Vec<String>,
}

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// A moment's element id.
fn moment_id(at_ns: u64) -> String {
    format!("m-{at_ns}")
}

impl Page<'_> {
    /// The whole page.
    pub fn render(&self) -> String {
        let marks: Vec<u64> = self.moments.iter().map(|m| m.at_ns).collect();
        let drawn: Vec<Drawn> = self
            .charts
            .iter()
            .map(|c| c.draw(self.window, &marks))
            .collect();
        let host = self.hostname.map_or_else(|| "unknown host".into(), lossy);
        let mut p = String::with_capacity(1 << 20);
        let _ = write!(
            p,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
             style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
             <meta name=\"viewport\" content=\"width=device-width\">\
             <title>tasksnap report: {host} {from}</title><style>{STYLE}</style></head><body>\
             <header><h1>tasksnap report: {host}</h1><p>{from} .. {to} (UTC), {n} samples{lost}\
             {drops}</p>{notes}</header>",
            host = html(&host),
            from = crate::when::rfc3339(self.window.0),
            to = crate::when::rfc3339(self.window.1),
            n = self.samples,
            lost = if self.lost > 0 {
                format!(", {} damaged samples skipped", self.lost)
            } else {
                String::new()
            },
            drops = if !self.exits_known {
                ", no exit records (processes that lived between samples are not counted)"
                    .to_string()
            } else if self.exits_dropped > 0 {
                format!(", {} exit records lost", self.exits_dropped)
            } else {
                String::new()
            },
            notes = self
                .notes
                .iter()
                .map(|n| format!("<p class=\"note\">{}</p>", html(n)))
                .collect::<String>(),
        );
        self.moments_section(&mut p);
        self.chart_sections(&mut p, &drawn);
        self.procs_section(&mut p);
        p.push_str(
            "<div id=\"tip\" hidden></div><script type=\"application/json\" id=\"chart-data\">[",
        );
        for (k, d) in drawn.iter().enumerate() {
            if k > 0 {
                p.push(',');
            }
            p.push_str(&d.json);
        }
        let _ = writeln!(p, "]</script><script>{SCRIPT}</script></body></html>");
        p
    }

    fn chart_sections(&self, p: &mut String, drawn: &[Drawn]) {
        let fig = |p: &mut String, k: usize| {
            let c = &self.charts[k];
            let _ = write!(
                p,
                "<figure><figcaption>{}</figcaption>{}{}</figure>",
                html(&c.title),
                drawn[k].svg,
                c.legend()
            );
        };
        let find = |id: &str| self.charts.iter().position(|c| c.id == id);
        p.push_str("<section><h2>Host</h2>");
        for id in ["host-cpu", "host-memory", "host-load", "host-pressure"] {
            if let Some(k) = find(id) {
                fig(p, k);
            }
        }
        p.push_str("</section><section><h2>CPU by group</h2><p class=\"choose\">");
        for (i, kind) in GROUP_KINDS.iter().enumerate() {
            let _ = write!(
                p,
                "<label><input type=\"radio\" name=\"groupby\" value=\"{kind}\"{}> {kind}</label> ",
                if i == 0 { " checked" } else { "" }
            );
        }
        p.push_str("</p>");
        for (i, kind) in GROUP_KINDS.iter().enumerate() {
            let _ = write!(
                p,
                "<div class=\"grp\" id=\"grp-{kind}\"{}>",
                if i == 0 { "" } else { " hidden" }
            );
            if let Some(k) = find(&format!("cpu-{kind}")) {
                fig(p, k);
            }
            p.push_str("</div>");
        }
        p.push_str("</section><section><h2>Thread states</h2>");
        for id in ["states", "states-idle"] {
            if let Some(k) = find(id) {
                fig(p, k);
            }
        }
        p.push_str("<h3>Top D-state wait reasons</h3>");
        if find("states").is_none() {
            p.push_str("<p class=\"note\">No thread states in this window.</p>");
        } else if self.reasons.is_empty() {
            p.push_str("<p class=\"note\">No thread time in D was recorded in this window.</p>");
        } else {
            p.push_str("<table class=\"reasons\"><thead><tr><th>thread time in D, s</th><th>kernel stack (innermost first)</th></tr></thead><tbody>");
            for (text, s) in &self.reasons {
                let _ = write!(p, "<tr><td>{s:.2}</td><td>{}</td></tr>", html(text));
            }
            p.push_str("</tbody></table>");
        }
        p.push_str("</section><section><h2>Processes that exited</h2>");
        if let Some(k) = find("exits") {
            fig(p, k);
        }
        p.push_str("</section>");
    }

    fn procs_section(&self, p: &mut String) {
        p.push_str(
            "<section><h2>Top processes over the window</h2><table class=\"procs\" \
             id=\"top-processes\"><thead><tr><th>PID</th><th>USER</th><th>CPU, s</th>\
             <th>peak RSS</th><th>start</th><th>exit</th><th>peak</th><th>COMMAND</th>\
             </tr></thead><tbody>",
        );
        for v in &self.procs {
            let pr = v.proc;
            let command = if pr.args.is_empty() {
                format!("[{}]", lossy(&pr.comm))
            } else {
                lossy(&pr.args)
            };
            let when = |s: f64| crate::when::rfc3339((s.max(0.0) * 1e9) as u64);
            let _ = write!(
                p,
                "<tr data-pid=\"{pid}\" data-cpu-ns=\"{cpu}\">\
                 <td>{pid}</td><td>{user}</td><td>{cpu_s:.2}</td><td>{rss}</td><td>{st}</td>\
                 <td>{ex}</td><td><a class=\"moment\" href=\"#{mid}\">{peak}</a></td>\
                 <td class=\"cmd\" title=\"{comm}\">{command}</td></tr>",
                pid = pr.pid,
                cpu = pr.cpu_ns(),
                user = html(&v.user),
                cpu_s = pr.cpu_ns() as f64 / 1e9,
                rss = bytes(pr.peak_rss_bytes as f64),
                st = pr.start_unix_s.map_or_else(String::new, when),
                ex = pr.exit_unix_s.map_or_else(String::new, when),
                mid = moment_id(v.peak_ns),
                peak = crate::when::rfc3339(v.peak_ns).get(11..19).unwrap_or(""),
                comm = html(&lossy(&pr.comm)),
                command = html(&command),
            );
        }
        p.push_str("</tbody></table></section>");
    }

    fn moments_section(&self, p: &mut String) {
        p.push_str(
            "<section id=\"moments\"><h2>Moments worth looking at</h2><p class=\"note\">Choose \
             one (or click a chart) for its listing: the processes by their CPU in the interval \
             ending there.</p><ul class=\"moments\">",
        );
        for m in &self.moments {
            let _ = write!(
                p,
                "<li><a class=\"moment\" href=\"#{}\">{}</a> {}</li>",
                moment_id(m.at_ns),
                crate::when::rfc3339(m.at_ns),
                html(&m.why.join("; "))
            );
        }
        p.push_str("</ul><div id=\"listing\">");
        for m in &self.moments {
            let _ = write!(
                p,
                "<div class=\"listing\" id=\"{}\" data-t=\"{}\" hidden><h3>{}</h3>{}</div>",
                moment_id(m.at_ns),
                m.at_ns as f64 / 1e9,
                crate::when::rfc3339(m.at_ns),
                m.listing
            );
        }
        p.push_str("</div></section>");
    }
}
