//! `--output json|csv`: the same rows and columns as the text output, for scripts.
//!
//! Names, command lines and executable paths are data here, not display text: they carry
//! the task's own bytes (a comm of one space stays `" "`, trailing spaces and control
//! characters stay), where the text output escapes them for a terminal. A command line's
//! NUL separators become spaces (as in every ps column) and its final terminator goes; an
//! empty one is `[comm]`, as ps shows it. JSON strings must be Unicode, so such a column is
//! written as tasksnap writes every table-shaped output: the text with U+FFFD in place of
//! each sequence that is not valid UTF-8, and next to it, under the column's name plus
//! `_bytes`, the exact bytes in hex when they were not valid UTF-8, null otherwise
//! (`"comm":"a\ufffd","comm_bytes":"61ff"`): every JSON parser reads the row, every row has
//! the same keys, and nothing is lost. CSV carries the bytes as they are. Every other
//! column is the text ps would print, without padding; JSON gives integers as numbers (not the
//! hexadecimal signal masks and addresses, which stay strings, all 16 digits).

use std::io::Write;

use super::fields::{Caches, Data, Env};
use super::layout::Column;
use tasksnap_model::Task;

use super::order::{self, Row};

/// One column's value as data.
enum Value {
    /// The task's own bytes (a name, a command line, a path).
    Bytes(Vec<u8>),
    /// What ps prints, padding removed.
    Text(String),
}

fn values(tasks: &[Task], row: &Row, cols: &[Column], env: &Env, c: &mut Caches) -> Vec<Value> {
    cols.iter()
        .map(|col| match col.spec.data() {
            Data::Bytes(own) if !order::not_applicable(row, col) => {
                Value::Bytes(own(&tasks[row.task], env))
            }
            _ => {
                let max = super::cell::OUTBUF_SIZE - 1;
                let cell = order::cell(tasks, row, col, max, -1, env, c);
                Value::Text(String::from_utf8_lossy(&cell.bytes).trim().to_string())
            }
        })
        .collect()
}

/// Whether a column prints hexadecimal digits (signal masks, addresses): strings in JSON,
/// even when every digit happens to be decimal.
fn hexadecimal(col: &Column) -> bool {
    matches!(col.spec.data(), Data::Hex)
}

fn key(col: &Column) -> &str {
    col.spec.name
}

/// Appends `text` as a JSON string (quotes, backslashes and control characters escaped).
fn json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for ch in text.chars() {
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Appends `"key":value` for a column of bytes: the text, then `"key_bytes":` with the
/// exact bytes in hex when they are not valid UTF-8, else null.
fn json_bytes(out: &mut Vec<u8>, key: &str, bytes: &[u8]) {
    json_string(out, key);
    out.push(b':');
    let valid = std::str::from_utf8(bytes).is_ok();
    json_string(out, &String::from_utf8_lossy(bytes));
    out.push(b',');
    json_string(out, &format!("{key}_bytes"));
    out.push(b':');
    if valid {
        out.extend_from_slice(b"null");
    } else {
        out.push(b'"');
        for b in bytes {
            out.extend_from_slice(format!("{b:02x}").as_bytes());
        }
        out.push(b'"');
    }
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
    let mut line = Vec::with_capacity(512);
    for (i, row) in rows.iter().enumerate() {
        line.clear();
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(b"\n{");
        for (j, (col, v)) in cols
            .iter()
            .zip(values(tasks, row, cols, env, c))
            .enumerate()
        {
            if j > 0 {
                line.push(b',');
            }
            match v {
                Value::Bytes(b) => json_bytes(&mut line, key(col), &b),
                Value::Text(s) => {
                    json_string(&mut line, key(col));
                    line.push(b':');
                    match s.parse::<i64>() {
                        Ok(n) if !hexadecimal(col) => {
                            line.extend_from_slice(n.to_string().as_bytes())
                        }
                        _ => json_string(&mut line, &s),
                    }
                }
            }
        }
        line.push(b'}');
        out.write_all(&line)?;
    }
    out.write_all(b"\n]\n")
}

/// One CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(out: &mut Vec<u8>, s: &[u8]) {
    if s.iter().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        for &b in s {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s);
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
    let mut line = Vec::with_capacity(512);
    for (j, col) in cols.iter().enumerate() {
        if j > 0 {
            line.push(b',');
        }
        csv_field(&mut line, key(col).as_bytes());
    }
    line.push(b'\n');
    out.write_all(&line)?;
    for row in rows {
        line.clear();
        for (j, v) in values(tasks, row, cols, env, c).into_iter().enumerate() {
            if j > 0 {
                line.push(b',');
            }
            match v {
                Value::Bytes(b) => csv_field(&mut line, &b),
                Value::Text(s) => csv_field(&mut line, s.as_bytes()),
            }
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::ps::machine::*;

    fn js(b: &[u8]) -> serde_json::Value {
        let mut v = b"{".to_vec();
        json_bytes(&mut v, "comm", b);
        v.push(b'}');
        serde_json::from_slice(&v).expect("valid JSON")
    }

    /// `ps --output json` turned a comm of one space into "", stripped trailing spaces and
    /// replaced control characters with `?`.
    #[test]
    fn ps_json_output_is_lossy() {
        for exact in [
            &b" "[..],
            b"a b  ",
            b"x\x1b[2J\ny",
            b"q\"\\",
            "é".as_bytes(),
            b"\x01\x7f",
        ] {
            let v = js(exact);
            assert_eq!(v["comm"].as_str().map(str::as_bytes), Some(exact), "{v}");
            assert!(v["comm_bytes"].is_null(), "{v}");
        }
        let v = js(b"ok\xff(");
        assert_eq!(v["comm"], "ok\u{fffd}(");
        assert_eq!(v["comm_bytes"], "6f6bff28");
    }

    /// ps JSON named the exact bytes `comm_hex` and left the key out for valid UTF-8: every
    /// table-shaped output has one rule: a `_bytes` sibling on every row, hex or null.
    #[test]
    fn ps_json_bytes_sibling_follows_the_table_rule() {
        let v = js(b"plain");
        assert_eq!(v.as_object().map(|o| o.len()), Some(2), "{v}");
        assert!(v.get("comm_bytes").is_some_and(|b| b.is_null()), "{v}");
        let v = js(b"x\xff");
        assert_eq!(v["comm"], "x\u{fffd}");
        assert_eq!(v["comm_bytes"], "78ff");
        assert!(v.get("comm_hex").is_none(), "{v}");
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        let mut v = Vec::new();
        csv_field(&mut v, b"plain \xff");
        csv_field(&mut v, b"a,\"b\"\nc");
        assert_eq!(v, b"plain \xff\"a,\"\"b\"\"\nc\"");
    }
}
