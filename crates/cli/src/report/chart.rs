//! One chart of the report as SVG, drawn here, and the values its hover shows: lines, or
//! areas stacked one on another. Every series is one `polyline` (lines) or `polygon` (areas:
//! its top edge, then its base back) of class `series`, with one vertex per drawn point
//! ([`super::decimate`] chooses them; a test counts them in the browser). Names reach the SVG
//! only through [`super::escape`].

use std::fmt::Write as _;

use super::decimate;
use super::escape::{html, json_str};

/// Plot geometry, in SVG units (the page's script maps the pointer with the same numbers).
pub const WIDTH: f64 = 960.0;
/// Height of the whole SVG.
pub const HEIGHT: f64 = 200.0;
/// Left margin (the y axis labels).
pub const LEFT: f64 = 70.0;
/// Right margin.
pub const RIGHT: f64 = 10.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 22.0;

/// How a chart's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Percent.
    Pct,
    /// Bytes.
    Bytes,
    /// A plain number (load, threads, CPUs, processes).
    Plain,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Pct => "pct",
            Unit::Bytes => "bytes",
            Unit::Plain => "plain",
        }
    }

    /// A value as an axis label.
    pub fn label(self, v: f64) -> String {
        match self {
            Unit::Pct => format!("{}%", short(v)),
            Unit::Bytes => bytes(v),
            Unit::Plain => short(v),
        }
    }
}

/// One series: its name (any text: escaped where written) and a value per point (NaN:
/// unknown).
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name.
    pub name: String,
    /// Its values, one per time of the chart.
    pub values: Vec<f64>,
}

/// A chart's data.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Its element id (ASCII, chosen by the report).
    pub id: String,
    /// Its title (text).
    pub title: String,
    /// How its values read.
    pub unit: Unit,
    /// Stacked areas (else lines).
    pub stacked: bool,
    /// The time of each point, Unix ns.
    pub times_ns: Vec<u64>,
    /// The series.
    pub series: Vec<Series>,
}

/// A chart drawn: the SVG, and the drawn points' values as JSON for the hover.
pub struct Drawn {
    /// `<svg>...</svg>`.
    pub svg: String,
    /// `{"id":..., "t":[...], "s":[{"n":..., "v":[...]}], "u":...}`.
    pub json: String,
}

impl Chart {
    /// Draws the chart over the window `t0..t1` (Unix ns), with a dashed mark at each of
    /// `marks` (Unix ns).
    pub fn draw(&self, (t0, t1): (u64, u64), marks: &[u64]) -> Drawn {
        let keys: Vec<Vec<f64>> = if self.stacked {
            vec![(0..self.times_ns.len())
                .map(|i| self.series.iter().map(|s| zero(s.values[i])).sum())
                .collect()]
        } else {
            self.series.iter().map(|s| s.values.clone()).collect()
        };
        let idx = decimate::pick(self.times_ns.len(), &keys, decimate::MAX_POINTS);
        let top = idx
            .iter()
            .flat_map(|&i| keys.iter().map(move |k| k[i]))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ymax = nice_ceiling(top);
        let span = t1.saturating_sub(t0).max(1) as f64;
        let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let x = |t: u64| LEFT + (t.saturating_sub(t0) as f64 / span).min(1.0) * pw;
        let y = |v: f64| TOP + ph - (v / ymax).clamp(0.0, 1.0) * ph;
        let mut svg = String::with_capacity(64 + idx.len() * self.series.len() * 14);
        let _ = write!(
            svg,
            "<svg class=\"chart\" id=\"{id}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
             data-points=\"{n}\" data-t0=\"{a}\" data-t1=\"{b}\" role=\"img\" \
             aria-label=\"{title}\">",
            id = self.id,
            n = idx.len(),
            a = secs(t0),
            b = secs(t1),
            title = html(&self.title),
        );
        self.axes(&mut svg, ymax, (t0, t1), &x, &y);
        let mut base = vec![0.0f64; idx.len()];
        for (k, s) in self.series.iter().enumerate() {
            let tag = if self.stacked { "polygon" } else { "polyline" };
            let _ = write!(svg, "<{tag} class=\"series s{}\" points=\"", k % 10);
            let mut first = true;
            let mut point = |svg: &mut String, px: f64, py: f64| {
                let sep = if first { "" } else { " " };
                first = false;
                let _ = write!(svg, "{sep}{px:.1},{py:.1}");
            };
            if self.stacked {
                for (j, &i) in idx.iter().enumerate() {
                    point(
                        &mut svg,
                        x(self.times_ns[i]),
                        y(base[j] + zero(s.values[i])),
                    );
                }
                for (j, &i) in idx.iter().enumerate().rev() {
                    point(&mut svg, x(self.times_ns[i]), y(base[j]));
                    base[j] += zero(s.values[i]);
                }
            } else {
                for &i in &idx {
                    if s.values[i].is_finite() {
                        point(&mut svg, x(self.times_ns[i]), y(s.values[i]));
                    }
                }
            }
            svg.push_str("\"/>");
        }
        for &m in marks.iter().filter(|&&m| (t0..=t1).contains(&m)) {
            let _ = write!(
                svg,
                "<line class=\"mark\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{TOP}\" y2=\"{1:.1}\"/>",
                x(m),
                TOP + ph
            );
        }
        let _ = write!(
            svg,
            "<line class=\"cursor\" x1=\"-1\" x2=\"-1\" y1=\"{TOP}\" y2=\"{:.1}\"/></svg>",
            TOP + ph
        );
        Drawn {
            svg,
            json: self.json(&idx),
        }
    }

    /// The frame, the y axis (0, half, top) and about six times along x.
    fn axes(
        &self,
        svg: &mut String,
        ymax: f64,
        (t0, t1): (u64, u64),
        x: &dyn Fn(u64) -> f64,
        y: &dyn Fn(f64) -> f64,
    ) {
        for v in [0.0, ymax / 2.0, ymax] {
            let _ = write!(
                svg,
                "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\"/>\
                 <text class=\"ylab\" x=\"{2:.1}\" y=\"{3:.1}\">{4}</text>",
                WIDTH - RIGHT,
                y(v),
                LEFT - 4.0,
                y(v) + 4.0,
                html(&self.unit.label(v)),
            );
        }
        let span = t1.saturating_sub(t0);
        let with_seconds = span < 600_000_000_000;
        for k in 0..=5u64 {
            let t = t0 + span / 5 * k;
            let text = crate::when::rfc3339(t);
            let shown = text
                .get(11..if with_seconds { 19 } else { 16 })
                .unwrap_or("");
            // The first and last labels end at the plot's edges, not past them.
            let anchor = match k {
                0 => "start",
                5 => "end",
                _ => "middle",
            };
            let _ = write!(
                svg,
                "<text class=\"xlab\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
                x(t),
                HEIGHT - 6.0,
                html(shown)
            );
        }
    }

    /// The drawn points as the hover's JSON.
    fn json(&self, idx: &[usize]) -> String {
        let mut j = String::with_capacity(32 + idx.len() * (1 + self.series.len()) * 8);
        let _ = write!(
            j,
            "{{\"id\":{},\"u\":\"{}\",\"t\":[",
            json_str(&self.id),
            self.unit.name()
        );
        list(&mut j, idx.iter().map(|&i| secs(self.times_ns[i])));
        j.push_str("],\"s\":[");
        for (k, s) in self.series.iter().enumerate() {
            if k > 0 {
                j.push(',');
            }
            let _ = write!(j, "{{\"n\":{},\"v\":[", json_str(&s.name));
            list(&mut j, idx.iter().map(|&i| num(s.values[i])));
            j.push_str("]}");
        }
        j.push_str("]}");
        j
    }

    /// The legend: a swatch and the name of each series, escaped.
    pub fn legend(&self) -> String {
        let mut l = String::from("<div class=\"legend\">");
        for (k, s) in self.series.iter().enumerate() {
            let _ = write!(
                l,
                "<span><i class=\"sw s{}\"></i>{}</span>",
                k % 10,
                html(&s.name)
            );
        }
        l.push_str("</div>");
        l
    }
}

fn list(out: &mut String, items: impl Iterator<Item = String>) {
    for (k, v) in items.enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push_str(&v);
    }
}

fn zero(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Unix ns as seconds with milliseconds.
fn secs(ns: u64) -> String {
    format!(
        "{}.{:03}",
        ns / 1_000_000_000,
        ns % 1_000_000_000 / 1_000_000
    )
}

/// A value for JSON: `null` when unknown, else at most 4 decimals, trailing zeros dropped.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A short number for an axis: 3 significant digits at most.
fn short(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        // 3 significant digits: the ticks of a small axis (0.0025 apart) stay apart.
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 12) as usize;
        let s = format!("{v:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            &s
        };
        s.into()
    }
}

/// Bytes with a binary unit.
pub fn bytes(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{} {}", num((v * 10.0).round() / 10.0), units[u])
}

/// The smallest of 1, 2, 2.5, 5 times a power of ten at or above `v` (1 for nothing).
fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_keep_three_significant_digits() {
        let ticks: Vec<String> = [0.0, 0.0025, 0.005, 0.0075, 0.01].map(short).into();
        assert_eq!(ticks, ["0", "0.0025", "0.005", "0.0075", "0.01"]);
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(50.0), "50");
        assert_eq!(short(1234.0), "1234");
        assert_eq!(short(-0.125), "-0.125");
    }

    fn chart(stacked: bool, n: usize) -> Chart {
        Chart {
            id: "c".into(),
            title: "<t>".into(),
            unit: Unit::Pct,
            stacked,
            times_ns: (0..n as u64).map(|i| i * 10_000_000_000).collect(),
            series: vec![
                Series {
                    name: "a<script>".into(),
                    values: (0..n).map(|i| i as f64).collect(),
                },
                Series {
                    name: "b".into(),
                    values: vec![1.0; n],
                },
            ],
        }
    }

    fn vertices(svg: &str, tag: &str) -> Vec<usize> {
        svg.split(&format!("<{tag} class=\"series"))
            .skip(1)
            .map(|s| {
                let pts = s
                    .split("points=\"")
                    .nth(1)
                    .expect("present")
                    .split('"')
                    .next()
                    .expect("present");
                pts.split(' ').count()
            })
            .collect()
    }

    #[test]
    fn a_vertex_per_point() {
        let c = chart(false, 10);
        let d = c.draw((0, 90_000_000_000), &[]);
        assert_eq!(vertices(&d.svg, "polyline"), vec![10, 10]);
        let s = chart(true, 10).draw((0, 90_000_000_000), &[]);
        assert_eq!(vertices(&s.svg, "polygon"), vec![20, 20]);
        let v: serde_json::Value = serde_json::from_str(&d.json).expect("present");
        assert_eq!(v["t"].as_array().expect("present").len(), 10);
        assert_eq!(v["s"][0]["n"], "a<script>");
        assert!(!d.svg.contains("<script") && !d.json.contains('<'));
        assert!(c.legend().contains("a&lt;script&gt;"));
    }

    #[test]
    fn a_day_is_decimated() {
        let d = chart(false, 8640).draw((0, 8639 * 10_000_000_000), &[5]);
        let v: serde_json::Value = serde_json::from_str(&d.json).expect("json");
        let points = v["t"].as_array().expect("times").len();
        assert!((500..=decimate::MAX_POINTS).contains(&points), "{points}");
        assert_eq!(vertices(&d.svg, "polyline"), vec![points, points]);
    }

    #[test]
    fn numbers() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.12345), "0.1235");
        assert_eq!(num(f64::NAN), "null");
        assert_eq!(nice_ceiling(73.0), 100.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(2.1), 2.5);
        assert_eq!(bytes(1536.0), "1.5 KiB");
    }
}
