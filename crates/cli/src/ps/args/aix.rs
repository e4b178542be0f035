//! AIX format descriptors (`ps -o "%p %U %a"`), parsed as procps-ng 4.0.2's
//! `aix_format_parse` (ps/sortformat.c) does. procps tries them only after a list fails as
//! ordinary specifiers and contains a `%`, so `-o %cpu,c` stays two columns while `-o %cpuc`
//! is an improper AIX list.
//!
//! The grammar its checker accepts is odd, and kept: at most one character of text (then
//! only spaces) before the first descriptor; after each descriptor's letter, only spaces up
//! to the next `%`. Each descriptor also counts one text item more than it has, so every
//! descriptor but the last is followed by the text up to the next `%`, and the list ends
//! with one empty text column per descriptor after the text items run out (they pad the
//! last real column to its width instead of letting it run to the line's end).

use crate::ps::settings::ColumnReq;

/// procps's `aix_array`: letter, specifier, header.
const AIX: &[(u8, &str, &str)] = &[
    (b'C', "pcpu", "%CPU"),
    (b'G', "group", "GROUP"),
    (b'P', "ppid", "PPID"),
    (b'U', "user", "USER"),
    (b'a', "args", "COMMAND"),
    (b'c', "comm", "COMMAND"),
    (b'g', "rgroup", "RGROUP"),
    (b'n', "nice", "NI"),
    (b'p', "pid", "PID"),
    (b'r', "pgid", "PGID"),
    (b't', "etime", "ELAPSED"),
    (b'u', "ruser", "RUSER"),
    (b'x', "time", "TIME"),
    (b'y', "tty", "TTY"),
    (b'z', "vsz", "VSZ"),
];

/// A literal text column of an AIX list: printed as it is on every line, with no gap to
/// its neighbours.
pub fn text(s: &str) -> ColumnReq {
    ColumnReq {
        name: String::new(),
        header: Some(s.to_string()),
        width: Some(s.len()),
    }
}

/// Counts the items as procps's checker does, or gives its error.
fn count_items(b: &[u8]) -> Result<usize, &'static str> {
    let mut items = 0;
    let mut i = 0;
    let next = |i: &mut usize| {
        let c = b.get(*i).copied().unwrap_or(0);
        *i += 1;
        c
    };
    let mut c = next(&mut i);
    // The states of procps's state machine: initial, get_more, get_desc.
    enum St {
        Initial,
        GetMore,
        GetDesc,
    }
    let mut st = St::Initial;
    loop {
        match st {
            St::Initial => {
                if c == b'%' {
                    st = St::GetDesc;
                } else if c == 0 {
                    return Ok(items);
                } else {
                    items += 1;
                    st = St::GetMore;
                }
            }
            St::GetMore => {
                c = next(&mut i);
                match c {
                    b'%' => st = St::GetDesc,
                    b' ' => {}
                    0 => return Ok(items),
                    _ => return Err("improper AIX field descriptor"),
                }
            }
            St::GetDesc => {
                items += 1;
                c = next(&mut i);
                if c != 0 && c != b' ' {
                    st = St::Initial;
                } else {
                    return Err("missing AIX field descriptor");
                }
            }
        }
    }
}

/// Parses an AIX descriptor list into columns, or gives procps's error text.
pub fn parse(arg: &str) -> Result<Vec<ColumnReq>, String> {
    let b = arg.as_bytes();
    // A C string ends at its first NUL; an OS argument cannot hold one anyway.
    let b = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    let items = count_items(b)?;
    let mut out = Vec::with_capacity(items);
    let mut at = 0;
    for _ in 0..items {
        if b.get(at) == Some(&b'%') {
            at += 1;
            let letter = b.get(at).copied().unwrap_or(0);
            if letter == b'%' {
                return Err("missing AIX field descriptor".into());
            }
            at += 1;
            let Some(&(_, spec, head)) = AIX.iter().find(|(l, _, _)| *l == letter) else {
                return Err("unknown AIX field descriptor".into());
            };
            out.push(ColumnReq {
                name: spec.to_string(),
                header: Some(head.to_string()),
                width: None,
            });
        } else {
            let rest = &b[at.min(b.len())..];
            let len = rest.iter().position(|&c| c == b'%').unwrap_or(rest.len());
            out.push(text(&String::from_utf8_lossy(&rest[..len])));
            at += len;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::ps::args::aix::*;

    fn shape(arg: &str) -> Result<Vec<String>, String> {
        parse(arg).map(|cols| cols.into_iter().map(|c| c.label()).collect())
    }

    #[test]
    fn descriptors_and_text_items_as_procps_counts_them() {
        assert_eq!(
            shape("%p %U %a").expect("parses"),
            ["pid", "' '", "user", "' '", "args", "''"]
        );
        assert_eq!(shape("%p%U").expect("parses"), ["pid", "user", "''", "''"]);
        assert_eq!(shape("a%a").expect("parses"), ["'a'", "args", "''"]);
        assert_eq!(shape("x %p").expect("parses"), ["'x '", "pid", "''"]);
        assert_eq!(
            shape("%p   %c").expect("parses"),
            ["pid", "'   '", "comm", "''"]
        );
    }

    #[test]
    fn errors_as_procps_words_them() {
        for (format, want) in [
            ("%p %%a", "missing AIX field descriptor"),
            ("%", "missing AIX field descriptor"),
            ("% p", "missing AIX field descriptor"),
            ("%p %Z", "unknown AIX field descriptor"),
            ("%cpuc", "improper AIX field descriptor"),
            ("pid %p", "improper AIX field descriptor"),
            ("%p,%U", "improper AIX field descriptor"),
        ] {
            assert_eq!(shape(format).expect_err("an error"), want, "{format}");
        }
    }

    #[test]
    fn headers_are_the_aix_ones() {
        let cols = parse("%y").expect("parses");
        assert_eq!(cols[0].name, "tty");
        assert_eq!(cols[0].header.as_deref(), Some("TTY"));
    }
}
