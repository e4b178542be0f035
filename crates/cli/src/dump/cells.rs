//! One cell of the dump's tables ([`Value`]) and how the model's values become cells: text
//! from a task's own bytes (invalid UTF-8 replaced) with the exact bytes beside it when they
//! are not valid UTF-8, command lines and cgroups as one line, instants and seconds.
//! Format-free: the writers (csv, json, parquet, openmetrics) only lay them out.

use tasksnap_model::fields;

/// One cell. Any column may be null: a group the recorder could not read, a figure the
/// kernel did not report.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Unknown.
    Null,
    /// ns since the Unix epoch, UTC.
    Time(i64),
    /// An integer.
    Int(i64),
    /// An unsigned integer (the cgroup counters: Parquet `UINT64`).
    UInt(u64),
    /// A float.
    Float(f64),
    /// Text.
    Text(String),
    /// Bytes that are not valid UTF-8, as they are.
    Bytes(Vec<u8>),
    /// A flag.
    Bool(bool),
}

/// A value of the model's field table as a cell: integers as they are, bytes as text.
pub(super) fn model_value(v: fields::Value<'_>) -> Value {
    match v {
        fields::Value::Int(n) => Value::Int(n),
        fields::Value::UInt(n) => int(n),
        fields::Value::Bytes(b) => text(b),
    }
}

/// An unsigned figure as an integer cell (saturated at `i64::MAX`).
pub(super) fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Bytes as a text cell, invalid UTF-8 replaced by U+FFFD.
pub(super) fn text(bytes: &[u8]) -> Value {
    Value::Text(String::from_utf8_lossy(bytes).into_owned())
}

/// Appends `bytes` as lower-case hex (how CSV and JSON carry a `_bytes` column).
pub fn hex_into(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// A moment, ns since the epoch, as a time column's value; null past what a timestamp holds
/// (year 2262: only a damaged or hostile recording has one), never a made-up moment there.
pub(super) fn unix_time(ns: u128) -> Value {
    i64::try_from(ns).map_or(Value::Null, Value::Time)
}

/// A moment `ns` since boot (boot at `boot_time_unix_s`) as a time column's value; null
/// when the boot time is unknown (0).
pub(super) fn since_boot(boot_time_unix_s: u64, ns: u64) -> Value {
    if boot_time_unix_s > 0 {
        unix_time(u128::from(boot_time_unix_s) * 1_000_000_000 + u128::from(ns))
    } else {
        Value::Null
    }
}

/// The `_bytes` sibling's value: the bytes when they are not valid UTF-8, else null.
pub(super) fn exact(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(_) => Value::Null,
        Err(_) => Value::Bytes(bytes.to_vec()),
    }
}

/// ns as seconds.
pub(super) fn secs(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e9)
}

/// A command line, NUL-separated, as one space-separated line (bytes).
pub(crate) fn args_line(cmdline: &[u8]) -> Vec<u8> {
    let trimmed = cmdline.strip_suffix(&[0]).unwrap_or(cmdline);
    trimmed
        .iter()
        .map(|&b| if b == 0 { b' ' } else { b })
        .collect()
}

/// The cgroup v2 path, else the lines of /proc/PID/cgroup joined by `;` (bytes).
pub(crate) fn cgroup_line(c: &tasksnap_model::Cgroup) -> Vec<u8> {
    match c.v2_path() {
        Some(p) => p.to_vec(),
        None => c.text_lines().collect::<Vec<_>>().join(&b';'),
    }
}

#[cfg(test)]
mod tests {
    use crate::dump::cells::*;
    use tasksnap_model::Cgroup;

    #[test]
    fn command_lines_and_cgroups_as_text() {
        assert_eq!(
            text(&args_line(b"sleep\x0010\x00")),
            Value::Text("sleep 10".into())
        );
        assert_eq!(
            text(&args_line(b"a\xffb")),
            Value::Text("a\u{fffd}b".into())
        );
        assert_eq!(
            exact(&args_line(b"a\xffb\x00c\x00")),
            Value::Bytes(b"a\xffb c".to_vec())
        );
        assert_eq!(exact(&args_line(b"sleep\x0010\x00")), Value::Null);
        assert_eq!(args_line(b""), b"");
        assert_eq!(
            cgroup_line(&Cgroup::parse(b"0::/user.slice/x.scope\n".to_vec())),
            b"/user.slice/x.scope"
        );
        assert_eq!(
            cgroup_line(&Cgroup::parse(b"4:memory:/a\n3:cpu:/b\n".to_vec())),
            b"4:memory:/a;3:cpu:/b"
        );
        assert_eq!(
            exact(&cgroup_line(&Cgroup::parse(b"0::/a\xfe\n".to_vec()))),
            Value::Bytes(b"/a\xfe".to_vec())
        );
    }
}
