//! Label values from names' bytes: the one mapping every label that carries a name (group,
//! comm, wait reason) goes through. A comm, a path or a user name may hold any byte but NUL;
//! a label value must be UTF-8. The mapping is lossless and injective, so two different
//! names never become one series:
//!
//! - A name that is UTF-8 and holds no carriage return is its own label value (unless it
//!   reads as an escaped name: see below), whatever else it holds (newline, tab, quote, backslash, escape sequences: the encoder escapes what the
//!   exposition grammars require, `\\`, `\"` and `\n`, and nothing is replaced).
//! - Otherwise the name is *escaped*: each byte that is not part of a UTF-8 character, and
//!   each carriage return, is written `\xHH` (two lowercase hex digits), each backslash
//!   `\\`, and every other character as it is.
//! - A UTF-8 name that would read as an escaped name is escaped too, so that it cannot
//!   pass for another: a name that decodes (every backslash starting `\\` or `\xHH`) to
//!   something that is not plain UTF-8 without CR or backslash. A process named literally
//!   `x\xff` is written `x\\xff`, never `x\xff` (the name with the byte 0xff). A name with
//!   `\x2d` in it (systemd's escaping in unit and cgroup names) decodes to plain text, so it
//!   stays as it is.
//!
//! A raw carriage return is valid in both grammars (OpenMetrics and the 0.0.4 text), but a
//! parser that reads the exposition line by line with universal newlines (Python's
//! `prometheus_client` reading a file or a stream) splits the line there and refuses the
//! whole exposition: one process named with a CR would break every scrape of such a
//! consumer. So a CR is escaped like a byte that is not UTF-8.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The label value of the name `bytes` (see the module header).
pub fn value(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if verbatim(s) => Cow::Borrowed(s),
        _ => Cow::Owned(escape(bytes)),
    }
}

/// Whether the UTF-8 name `s` is its own label value: no CR, and it does not read as an
/// escaped name, i.e. either it does not decode as one or what it decodes to is plain (UTF-8
/// with no CR and no backslash: a name that could never have been escaped). Decoded once, not
/// recursively, so the cost is linear in the length.
fn verbatim(s: &str) -> bool {
    if s.contains('\r') {
        return false;
    }
    if !s.contains('\\') {
        return true;
    }
    match unescape(s) {
        Some(d) => std::str::from_utf8(&d).is_ok_and(|d| !d.contains(['\r', '\\'])),
        None => true,
    }
}

/// `bytes` escaped: `\xHH` for each byte not part of a UTF-8 character and for CR, `\\` for
/// a backslash.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\r' => out.push_str("\\x0d"),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The bytes an escaped label value stands for; `None` when `s` is not one (a backslash
/// followed by anything but a backslash or `x` and two lowercase hex digits).
pub fn unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = |c: Option<&u8>| match c {
                    Some(c @ b'0'..=b'9') => Some(c - b'0'),
                    Some(c @ b'a'..=b'f') => Some(c - b'a' + 10),
                    _ => None,
                };
                let hi = hex(b.get(i + 2))?;
                let lo = hex(b.get(i + 3))?;
                out.push(hi << 4 | lo);
                i += 4;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The name a label value stands for: the inverse of [`value`].
pub fn name_of(label: &str) -> Vec<u8> {
    if verbatim(label) {
        return label.as_bytes().to_vec();
    }
    unescape(label).unwrap_or_else(|| label.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_that_are_utf8_keep_every_character() {
        for n in [
            "nl\nname",
            "nl?name",
            "tab\tname",
            "q\"u'o\\te",
            "esc\x1b[31m",
            "naïve✓日本",
            "sys-\\x2dd.slice",
            "",
        ] {
            assert_eq!(value(n.as_bytes()), n, "{n:?}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_and_cr_are_escaped_distinctly() {
        assert_eq!(value(b"x\xffname"), "x\\xffname");
        assert_eq!(value(b"x\xfename"), "x\\xfename");
        assert_eq!(value(b"cr\rname"), "cr\\x0dname");
        assert_eq!(value(b"b\\s\xff"), "b\\\\s\\xff");
        // A UTF-8 replacement character is a character like any other.
        assert_eq!(value("x\u{fffd}".as_bytes()), "x\u{fffd}");
        // A name spelled like an escape cannot pass for the byte.
        assert_eq!(value(b"x\\xff"), "x\\\\xff");
        assert_eq!(value(b"x\\x0d"), "x\\\\x0d");
        assert_ne!(value(b"x\\xff"), value(b"x\xff"));
        // A comm cut in the middle of a character.
        assert_eq!(value("éé".as_bytes()[..3].as_ref()), "é\\xc3");
    }

    proptest! {
        /// The mapping is injective: a label value gives back the exact name.
        #[test]
        fn label_values_give_back_the_name(name in proptest::collection::vec(
            prop_oneof![Just(b'\\'), Just(b'x'), Just(b'f'), Just(b'0'), Just(b'd'),
                        Just(b'\r'), Just(b'\n'), Just(0xc3u8), Just(0xa9u8), Just(0xffu8),
                        any::<u8>()],
            0..24,
        )) {
            let v = value(&name);
            prop_assert!(!v.contains('\r'));
            prop_assert_eq!(name_of(&v), name);
        }
    }
}
