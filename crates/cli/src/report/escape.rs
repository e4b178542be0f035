//! The report's two escapings of hostile text (process names, command lines, user names,
//! cgroup paths, wait reasons: any bytes a user can choose): [`html`] for HTML text and
//! attribute values, [`json_str`] for a string inside a `<script>` element. Bytes that are not
//! UTF-8 are replaced by U+FFFD first ([`lossy`]); control characters are shown as `?`, as
//! procps's `ps` shows them, so a name cannot move the cursor of whoever copies it out.

use std::fmt::Write as _;

/// Bytes as text: invalid UTF-8 replaced by U+FFFD, control characters (C0, DEL, C1) by `?`.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// `s` as HTML text or as a quoted attribute value (either quote): `&`, `<`, `>`, `"`, `'`
/// become character references, control characters `?`. Nothing in the result can open or
/// close an element, an attribute or a character reference.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// `s` as a JSON string literal (quotes included) that is safe inside a `<script>` element:
/// besides JSON's own escapes, `<`, `>`, `&` and `'` are `\u00XX` (so no `</script>` or
/// `<!--` can end or change the element) and U+2028/U+2029 are escaped (older JavaScript
/// parsers end a line there). Control characters are `\u00XX`, as JSON requires.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '<' | '>' | '&' | '\'' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &[u8] = b"<script>alert('x')</script>\"&amp;\x1b[31m\xff\xfe\n</b>";

    #[test]
    fn html_text_holds_no_markup() {
        let s = html(&lossy(HOSTILE));
        for bad in ["<", ">", "\"", "'", "\x1b", "\n"] {
            assert!(!s.contains(bad), "{bad:?} in {s}");
        }
        // Every & starts one of the references made here.
        for (i, _) in s.match_indices('&') {
            let rest = &s[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                    .iter()
                    .any(|r| rest.starts_with(r)),
                "{rest}"
            );
        }
        assert!(s.starts_with("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;amp;"));
        assert!(s.contains("?[31m\u{fffd}\u{fffd}?&lt;/b&gt;"), "{s}");
    }

    #[test]
    fn json_in_a_script_cannot_end_it() {
        let s = json_str(&lossy(HOSTILE));
        for bad in ["<", ">", "&", "'", "\n", "\x1b"] {
            assert!(!s.contains(bad), "{bad:?} in {s}");
        }
        // It is JSON, and reads back as the text.
        let back: String = serde_json::from_str(&s).expect("json");
        assert_eq!(back, lossy(HOSTILE));
        let raw = json_str("a\u{2028}b\"\\\u{1}");
        assert_eq!(raw, "\"a\\u2028b\\\"\\\\\\u0001\"");
        assert_eq!(
            serde_json::from_str::<String>(&raw).expect("present"),
            "a\u{2028}b\"\\\u{1}"
        );
    }

    #[test]
    fn lossy_replaces_what_is_not_text() {
        assert_eq!(lossy(b"a\xffb\x07c\x7f"), "a\u{fffd}b?c?");
        assert_eq!(lossy("é\u{85}".as_bytes()), "é?");
    }
}
