//! OpenMetrics text exposition with timestamps, for backfilling a Prometheus TSDB
//! (`promtool tsdb create-blocks-from openmetrics`). Each numeric column with a
//! [`Metric`](super::columns::Metric) is a family (`tasksnap_process_cpu_seconds`, ...); the
//! series are told apart by the table's label columns (processes: `pid`, `comm`, `user`;
//! threads: `pid`, `tid`, `comm`) and, where several columns share a family, one more label
//! (`state="running"`, `mode="user"`). Command lines and environments are never labels.
//!
//! The format wants a family's samples together and a series' samples in time order, and
//! the readings come one instant at a time: every sample is held in memory (a label set
//! and 16 bytes per point) and written at the end, family by family, series by series.
//! TYPE and HELP come once per family; the file ends with `# EOF` only when the dump is
//! complete. Counters of per-interval amounts (the threads' state seconds) are written as
//! their running sum from the start of the dump, starting at 0.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};

use tasksnap_export::families::Type;

use super::cells::Value;
use super::columns::Column;
use super::sink::Sink;

/// One series: its label text and its points (value, ns since the epoch).
struct Series {
    labels: String,
    points: Vec<(f64, i64)>,
}

struct Family {
    name: String,
    kind: Type,
    help: String,
    series: Vec<Series>,
    by_labels: HashMap<String, usize>,
}

/// Where a chosen column goes.
struct Target {
    /// Index of the column in the row.
    col: usize,
    family: usize,
    label: Option<(&'static str, &'static str)>,
    scale: f64,
    accumulate: bool,
}

/// Gathers samples and writes the exposition at the end.
pub struct OpenMetricsSink<'a> {
    out: &'a mut dyn Write,
    time_col: Option<usize>,
    /// (label name, column index).
    labels: Vec<(String, usize)>,
    targets: Vec<Target>,
    families: Vec<Family>,
    scratch: String,
}

impl std::fmt::Debug for OpenMetricsSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenMetricsSink").finish_non_exhaustive()
    }
}

/// Appends `v` escaped as an OpenMetrics label value or HELP text: backslash, double quote
/// and line feed become `\\`, `\"` and `\n`.
pub fn escape_into(buf: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => buf.push_str("\\\\"),
            '"' => buf.push_str("\\\""),
            '\n' => buf.push_str("\\n"),
            c => buf.push(c),
        }
    }
}

impl<'a> OpenMetricsSink<'a> {
    /// A writer of rows of `cols`: `time`, the label columns and metric columns are used.
    pub fn new(cols: &[Column], out: &'a mut dyn Write) -> OpenMetricsSink<'a> {
        let mut families: Vec<Family> = Vec::new();
        let mut targets = Vec::new();
        for (i, c) in cols.iter().enumerate() {
            let Some(m) = &c.metric else { continue };
            let name = m.family.name();
            let family = match families.iter().position(|f| f.name == name) {
                Some(f) => f,
                None => {
                    families.push(Family {
                        name,
                        kind: m.family.kind,
                        help: m.family_help.map_or_else(|| c.help.clone(), str::to_string),
                        series: Vec::new(),
                        by_labels: HashMap::new(),
                    });
                    families.len() - 1
                }
            };
            targets.push(Target {
                col: i,
                family,
                label: m.label,
                scale: m.scale,
                accumulate: m.accumulate,
            });
        }
        OpenMetricsSink {
            out,
            time_col: cols.iter().position(|c| c.name == "time"),
            labels: cols
                .iter()
                .enumerate()
                .filter(|(_, c)| c.label)
                .map(|(i, c)| (c.name.clone(), i))
                .collect(),
            targets,
            families,
            scratch: String::new(),
        }
    }

    fn write_all(&mut self, complete: bool) -> std::io::Result<()> {
        let mut out = BufWriter::with_capacity(64 * 1024, &mut *self.out);
        let mut line = String::new();
        for f in &self.families {
            let (kind, suffix) = match f.kind {
                Type::Counter => ("counter", "_total"),
                Type::Gauge => ("gauge", ""),
                Type::Info => ("info", "_info"),
            };
            line.clear();
            let _ = write!(line, "# TYPE {} {kind}\n# HELP {} ", f.name, f.name);
            escape_into(&mut line, &f.help);
            line.push('\n');
            out.write_all(line.as_bytes())?;
            for s in &f.series {
                for &(v, ns) in &s.points {
                    line.clear();
                    line.push_str(&f.name);
                    line.push_str(suffix);
                    if !s.labels.is_empty() {
                        line.push('{');
                        line.push_str(&s.labels);
                        line.push('}');
                    }
                    line.push(' ');
                    number(&mut line, v);
                    let (sec, ms) = (
                        ns.div_euclid(1_000_000_000),
                        ns.rem_euclid(1_000_000_000) / 1_000_000,
                    );
                    let _ = writeln!(line, " {sec}.{ms:03}");
                    out.write_all(line.as_bytes())?;
                }
            }
        }
        if complete {
            out.write_all(b"# EOF\n")?;
        }
        out.flush()
    }
}

/// A sample value: integers without a fraction, others as the shortest text that reads back.
fn number(buf: &mut String, v: f64) {
    if v.is_nan() {
        buf.push_str("NaN");
    } else if v.is_infinite() {
        buf.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(buf, "{v}");
    }
}

impl Sink for OpenMetricsSink<'_> {
    fn row(&mut self, row: &[Value]) -> anyhow::Result<()> {
        let Some(Value::Time(ts)) = self.time_col.and_then(|i| row.get(i)) else {
            return Ok(());
        };
        let ts = *ts;
        // The identifying labels of this row.
        let mut base = std::mem::take(&mut self.scratch);
        base.clear();
        for (name, i) in &self.labels {
            let text = match &row[*i] {
                Value::Null => continue,
                Value::Text(s) => s.clone(),
                // No `_bytes` column is a label; this arm only keeps the match whole.
                Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                Value::Int(n) => n.to_string(),
                Value::UInt(n) => n.to_string(),
                Value::Float(x) => x.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Time(ns) => ns.to_string(),
            };
            if !base.is_empty() {
                base.push(',');
            }
            base.push_str(name);
            base.push_str("=\"");
            escape_into(&mut base, &text);
            base.push('"');
        }
        for t in &self.targets {
            let v = match &row[t.col] {
                Value::Int(n) => Some(*n as f64),
                Value::UInt(n) => Some(*n as f64),
                Value::Float(x) => Some(*x),
                Value::Time(ns) => Some(*ns as f64),
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                Value::Null | Value::Text(_) | Value::Bytes(_) => None,
            };
            // Accumulated counters start at 0 where the dump has no interval yet.
            let v = match v {
                None if t.accumulate => 0.0,
                None => continue,
                Some(v) => v * t.scale,
            };
            let mut labels = base.clone();
            if let Some((k, val)) = t.label {
                if !labels.is_empty() {
                    labels.push(',');
                }
                let _ = write!(labels, "{k}=\"");
                escape_into(&mut labels, val);
                labels.push('"');
            }
            let fam = &mut self.families[t.family];
            let idx = match fam.by_labels.get(&labels) {
                Some(&i) => i,
                None => {
                    fam.by_labels.insert(labels.clone(), fam.series.len());
                    fam.series.push(Series {
                        labels,
                        points: Vec::new(),
                    });
                    fam.series.len() - 1
                }
            };
            let points = &mut fam.series[idx].points;
            let v = if t.accumulate {
                points.last().map_or(0.0, |p| p.0) + v
            } else {
                v
            };
            // One point per series and instant (a tid reused within one reading).
            match points.last_mut() {
                Some(p) if p.1 == ts => p.0 = v,
                _ => points.push((v, ts)),
            }
        }
        self.scratch = base;
        Ok(())
    }

    fn finish(&mut self, complete: bool) -> anyhow::Result<()> {
        self.write_all(complete)?;
        self.families.clear();
        Ok(())
    }
}
