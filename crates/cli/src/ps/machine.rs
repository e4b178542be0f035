//! `--output json|csv`: the same rows and columns as the text output, for scripts. Values are
//! the text ps would print, without padding or truncation; JSON gives integers as numbers.

use std::io::Write;

use super::fields::{Caches, Env};
use super::layout::Column;
use tasksnap_model::Task;

use super::order::{self, Row};

fn values(tasks: &[Task], row: &Row, cols: &[Column], env: &Env, c: &mut Caches) -> Vec<String> {
    cols.iter()
        .map(|col| {
            let cell = order::cell(tasks, row, col, super::layout::OUTBUF_SIZE - 1, env, c);
            String::from_utf8_lossy(&cell.bytes).trim().to_string()
        })
        .collect()
}

fn key(col: &Column) -> &str {
    col.spec.name
}

/// Writes a JSON array with one object per row, keyed by specifier name.
pub fn json(
    out: &mut dyn Write,
    tasks: &[Task],
    cols: &[Column],
    rows: &[Row],
    env: &Env,
    c: &mut Caches,
) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (i, row) in rows.iter().enumerate() {
        let mut obj = serde_json::Map::new();
        for (col, v) in cols.iter().zip(values(tasks, row, cols, env, c)) {
            let value = match v.parse::<i64>() {
                Ok(n) => serde_json::Value::from(n),
                Err(_) => serde_json::Value::from(v),
            };
            obj.insert(key(col).to_string(), value);
        }
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"\n")?;
        serde_json::to_writer(&mut *out, &obj)?;
    }
    out.write_all(b"\n]\n")
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes CSV with a header row of specifier names.
pub fn csv(
    out: &mut dyn Write,
    tasks: &[Task],
    cols: &[Column],
    rows: &[Row],
    env: &Env,
    c: &mut Caches,
) -> std::io::Result<()> {
    let header: Vec<String> = cols.iter().map(|c| csv_field(key(c))).collect();
    writeln!(out, "{}", header.join(","))?;
    for row in rows {
        let line: Vec<String> = values(tasks, row, cols, env, c)
            .iter()
            .map(|v| csv_field(v))
            .collect();
        writeln!(out, "{}", line.join(","))?;
    }
    Ok(())
}
