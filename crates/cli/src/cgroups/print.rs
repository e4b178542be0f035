//! Writes the rows of `tasksnap cgroups`: aligned text for a terminal (paths escaped as ps
//! escapes names, memory in top's units, `-` for what is unknown or unlimited), or JSON and
//! CSV with the numbers raw and one set of fields ([`fields`]) for both. JSON strings must be
//! Unicode: a path that is not UTF-8 is written with U+FFFD and, beside it, `path_bytes` in
//! hex (null otherwise), as ps's `--output json` does; CSV carries the bytes as they are.

use std::fmt::Write as _;
use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use tasksnap_model::{CgroupHierarchy, CgroupValue, Limit, CGROUP_FIELDS};

use super::rows::Row;
use super::Output;
use crate::ps::text::{self, Locale};
use crate::top::render::{write_kib, write_pct};

/// One field's value as data.
enum Value {
    Null,
    Int(u64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

/// The state mix's fields, in [`super::mix::MIX_STATES`]' order: average threads in each.
const MIX_FIELDS: [&str; 4] = [
    "running_threads",
    "runnable_threads",
    "throttled_threads",
    "disk_threads",
];

fn opt_int(v: Option<u64>) -> Value {
    v.map_or(Value::Null, Value::Int)
}

fn opt_float(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::Float)
}

/// A counter's value: its number, `max` for a limit that is none, null when not read.
fn counter(v: Option<CgroupValue>) -> Value {
    match v {
        None => Value::Null,
        Some(CgroupValue::Unlimited) => Value::Text("max".into()),
        Some(CgroupValue::Num(n)) => Value::Int(n),
    }
}

/// The fields of one row, in order (JSON keys, CSV columns): the path, its hierarchy, the
/// rates over the interval, then every counter of [`CGROUP_FIELDS`] as read.
fn fields(r: &Row) -> Vec<(&'static str, Value)> {
    let c = r.c;
    let (hier, controllers) = match &c.hierarchy {
        CgroupHierarchy::V2 => ("v2", String::new()),
        CgroupHierarchy::V1(list) => ("v1", list.join(",")),
    };
    let mut out = vec![
        ("path", Value::Bytes(c.path.clone())),
        ("hierarchy", Value::Text(hier.into())),
        ("controllers", Value::Text(controllers)),
        ("cpu_pct", opt_float(r.cpu_pct)),
        ("throttled_pct", opt_float(r.throttled_pct)),
        ("quota_cpus", opt_float(c.cpu_quota_cpus())),
        ("psi_cpu_some_pct", opt_float(r.psi_cpu_some_pct)),
        ("procs", opt_int(r.mix.procs)),
        ("threads", opt_int(r.mix.threads)),
    ];
    let avg = r.mix.avg_threads;
    for (i, name) in MIX_FIELDS.iter().enumerate() {
        out.push((name, opt_float(avg.map(|a| a[i]))));
    }
    out.extend(CGROUP_FIELDS.iter().map(|f| (f.name, counter(f.get(c)))));
    out
}

/// Writes the listing to standard output.
pub fn write(how: Output, rows: &[Row], elapsed: Duration, notes: &[String]) -> Result<()> {
    let mut out = crate::output::buffered(64 << 10);
    match how {
        Output::Text => text_out(&mut out, rows)?,
        Output::Json => json_out(&mut out, rows, elapsed, notes)?,
        Output::Csv => csv_out(&mut out, rows)?,
    }
    out.flush()?;
    Ok(())
}

/// The text header; [`text_line`] aligns under it.
pub(crate) const HEADER: &str =
    "HIER  TASKS  PROCS   CPU%   THR%  QUOTA    MEM  LIMIT   OOM  PSI%   RUN  RUNQ \
                      THRTL     D CGROUP";

fn text_out(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    let loc = Locale::from_env();
    writeln!(out, "{HEADER}")?;
    for r in rows {
        writeln!(out, "{}", text_line(r, loc))?;
    }
    Ok(())
}

/// One row as text.
pub(crate) fn text_line(r: &Row, loc: Locale) -> String {
    let c = r.c;
    let mut s = String::with_capacity(96);
    let dash = |s: &mut String, width: usize| {
        let _ = write!(s, " {:>width$}", "-");
    };
    let cell = |s: &mut String, width: usize, fill: &dyn Fn(&mut String)| {
        let mut v = String::new();
        fill(&mut v);
        let _ = write!(s, " {v:>width$}");
    };
    s.push_str(match c.hierarchy {
        CgroupHierarchy::V2 => "v2  ",
        CgroupHierarchy::V1(_) => "v1  ",
    });
    for n in [c.pids_current, r.mix.procs] {
        match n {
            Some(n) => {
                let _ = write!(s, " {n:>6}");
            }
            None => dash(&mut s, 6),
        }
    }
    for pct in [r.cpu_pct, r.throttled_pct] {
        match pct {
            Some(v) => cell(&mut s, 6, &|o| write_pct(o, v)),
            None => dash(&mut s, 6),
        }
    }
    match c.cpu_quota_cpus() {
        Some(q) => {
            let _ = write!(s, " {q:>6.2}");
        }
        None => dash(&mut s, 6),
    }
    let bytes = [
        c.memory_current_bytes,
        c.memory_limit_bytes.and_then(Limit::value),
    ];
    for b in bytes {
        match b {
            Some(b) => cell(&mut s, 6, &|o| write_kib(o, b / 1024, 6)),
            None => dash(&mut s, 6),
        }
    }
    match c.oom_kills {
        Some(n) => {
            let _ = write!(s, " {n:>5}");
        }
        None => dash(&mut s, 5),
    }
    match r.psi_cpu_some_pct {
        Some(v) => cell(&mut s, 5, &|o| write_pct(o, v)),
        None => dash(&mut s, 5),
    }
    for i in 0..MIX_FIELDS.len() {
        match r.mix.avg_threads {
            Some(a) => {
                let _ = write!(s, " {:>5.2}", a[i]);
            }
            None => dash(&mut s, 5),
        }
    }
    let mut path = c.path.clone();
    text::library_escape(&mut path, loc);
    s.push(' ');
    s.push_str(&text::terminal_text(&path, loc));
    s
}

fn json_value(v: Value) -> (serde_json::Value, Option<serde_json::Value>) {
    use serde_json::Value as J;
    match v {
        Value::Null => (J::Null, None),
        Value::Int(n) => (J::from(n), None),
        Value::Float(f) => (J::from((f * 1000.0).round() / 1000.0), None),
        Value::Text(t) => (J::from(t), None),
        Value::Bytes(b) => match String::from_utf8(b) {
            Ok(t) => (J::from(t), Some(J::Null)),
            Err(e) => {
                let bytes = e.into_bytes();
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                (
                    J::from(String::from_utf8_lossy(&bytes).into_owned()),
                    Some(J::from(hex)),
                )
            }
        },
    }
}

fn json_out(out: &mut impl Write, rows: &[Row], elapsed: Duration, notes: &[String]) -> Result<()> {
    let cgroups: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            for (k, v) in fields(r) {
                let (v, bytes) = json_value(v);
                m.insert(k.into(), v);
                if let Some(b) = bytes {
                    m.insert(format!("{k}_bytes"), b);
                }
            }
            serde_json::Value::Object(m)
        })
        .collect();
    let doc = serde_json::json!({
        "interval_s": elapsed.as_secs_f64(),
        "notes": notes,
        "cgroups": cgroups,
    });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

fn csv_out(out: &mut impl Write, rows: &[Row]) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let Some(first) = rows.first() else {
        return Ok(());
    };
    w.write_record(fields(first).iter().map(|(k, _)| k.as_bytes()))?;
    for r in rows {
        let cells: Vec<Vec<u8>> = fields(r)
            .into_iter()
            .map(|(_, v)| match v {
                Value::Null => Vec::new(),
                Value::Int(n) => n.to_string().into_bytes(),
                Value::Float(f) => format!("{f:.3}").into_bytes(),
                Value::Text(t) => t.into_bytes(),
                Value::Bytes(b) => b,
            })
            .collect();
        w.write_record(&cells)?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::mix::Mix;
    use super::*;
    use tasksnap_model::CgroupCounters;

    #[test]
    fn a_text_line_aligns_under_the_header_and_escapes_the_path() {
        let mut c = CgroupCounters::new(b"/a\x1bb".to_vec(), CgroupHierarchy::V1(vec![]));
        c.pids_current = Some(3);
        c.cpu_quota_us = Some(Limit::At(20_000));
        c.cpu_period_us = Some(100_000);
        c.memory_current_bytes = Some(425_984);
        c.memory_limit_bytes = Some(Limit::Unlimited);
        c.oom_kills = Some(0);
        let r = Row {
            c: &c,
            cpu_pct: Some(19.96),
            throttled_pct: Some(80.0),
            psi_cpu_some_pct: None,
            mix: Mix {
                procs: Some(1),
                threads: Some(2),
                avg_threads: Some([0.2, 0.0, 0.8, 0.0]),
            },
        };
        let loc = Locale::from_env();
        let line = text_line(&r, loc);
        assert_eq!(
            line,
            "v1        3      1   20.0   80.0   0.20    416      -     0     -  0.20  0.00  0.80  \
             0.00 /a?b"
        );
        assert_eq!(line.find("/a"), HEADER.find("CGROUP"));
    }
}
