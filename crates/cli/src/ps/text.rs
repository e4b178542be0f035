//! Escaping untrusted text (comm, command lines, names) the way procps does, in two passes:
//! the library pass when a field is read (`library/escape.c`) and the output pass that fits it
//! into a column (`ps/output.c: escape_str`). Both depend on whether the locale is UTF-8, so
//! both are implemented, and [`Locale::from_env`] asks the C library which one is in force.

use std::ffi::CStr;
use tasksnap_model::Cgroup;

extern "C" {
    fn iswprint(wc: libc::wchar_t) -> libc::c_int;
    fn wcwidth(wc: libc::wchar_t) -> libc::c_int;
    fn __ctype_get_mb_cur_max() -> libc::size_t;
}

/// Whether text is treated as UTF-8 (procps: `nl_langinfo(CODESET)` is "UTF-8" and
/// `MB_CUR_MAX > 1`) or as single bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locale {
    /// UTF-8 rules apply.
    pub utf8: bool,
}

impl Locale {
    /// Sets the program locale from the environment as procps's `setlocale(LC_ALL, "")`
    /// does, for the categories output depends on (characters, collation for sorting,
    /// month and day names), and reports whether it is UTF-8. (The other categories are
    /// never used here; loading them was ~45 system calls with a C.UTF-8 locale.)
    pub fn from_env() -> Locale {
        // SAFETY: called once at start-up before any other thread uses locale functions;
        // the empty string is a valid NUL-terminated locale name.
        let utf8 = unsafe {
            for category in [libc::LC_CTYPE, libc::LC_COLLATE, libc::LC_TIME] {
                libc::setlocale(category, c"".as_ptr());
            }
            let codeset = libc::nl_langinfo(libc::CODESET);
            !codeset.is_null()
                && CStr::from_ptr(codeset)
                    .to_bytes()
                    .eq_ignore_ascii_case(b"UTF-8")
                && __ctype_get_mb_cur_max() > 1
        };
        Locale { utf8 }
    }
}

/// library/escape.c `esc_all`: every control byte becomes '.', every non-ASCII byte '?'.
fn esc_all(s: &mut [u8]) {
    for c in s.iter_mut() {
        *c = match *c {
            0 => b'@',
            1..=0x1f | 0x7f => b'.',
            0x80..=0xff => b'?',
            other => other,
        };
    }
}

/// Length of the UTF-8 sequence a lead byte announces (library/escape.c `UTF_tab`), or None.
fn utf_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7f => Some(1),
        0xc2..=0xdf => Some(2),
        0xe0..=0xef => Some(3),
        0xf0..=0xf4 => Some(4),
        _ => None,
    }
}

/// The library pass (procps `escape_str` in library/escape.c), applied in place to a comm or
/// a flattened command line when it is read.
pub fn library_escape(s: &mut [u8], loc: Locale) {
    if !loc.utf8 {
        esc_all(s);
        return;
    }
    let mut i = 0;
    while i < s.len() {
        match utf_len(s[i]) {
            Some(n) if i + n <= s.len() => {
                if s[i] < 0x20 || s[i] == 0x7f {
                    s[i] = b'?';
                }
                i += n;
            }
            // A corrupt sequence: everything from here on is treated as bytes.
            _ => {
                esc_all(&mut s[i..]);
                return;
            }
        }
    }
}

/// procps's `read_unvectored` + `fill_cmdline_cvt`: the command line with NULs and newlines
/// turned into spaces, trailing NULs dropped, capped like procps's 128 KiB buffer, then the
/// library escape. Returns `None` when the command line is empty (the caller shows `[comm]`);
/// a command line of NULs only flattens to an empty string, which procps shows as "?".
pub fn flatten_cmdline(raw: &[u8], loc: Locale) -> Option<Vec<u8>> {
    const MAX: usize = 128 * 1024;
    let mut n = raw.len();
    let mut v: Vec<u8> = raw[..n.min(MAX - 1)].to_vec();
    n = v.len();
    if n == 0 {
        return None;
    }
    let mut i = n;
    while i > 0 && v[i - 1] == 0 {
        i -= 1;
    }
    for c in &mut v[..i] {
        if *c == b'\n' || *c == 0 {
            *c = b' ';
        }
    }
    if v[n - 1] == b' ' {
        v[n - 1] = 0;
    }
    // The result is a C string: it ends at the first NUL.
    if let Some(end) = v.iter().position(|&c| c == 0) {
        v.truncate(end);
    }
    library_escape(&mut v, loc);
    Some(v)
}

/// What a `cgroup` column shows (procps's `fill_cgroup_cvt`): every line of
/// /proc/PID/cgroup whose path is not its hierarchy's root, `ID:controllers:path`, joined
/// with commas; `-` when there is none or the file was not read. Shared by ps and top.
pub fn cgroup_text(raw: Option<&Cgroup>) -> Vec<u8> {
    join_cgroup_lines(raw, |_| {})
}

/// [`cgroup_text`] as ps's `cgroup` and `cgname` columns hold it before printing: each line
/// through the library escape (control characters and, in the C locale, every non-ASCII
/// byte become `?`), as `fill_cgroup_cvt()` escapes each line it joins.
pub fn cgroup_text_escaped(raw: Option<&Cgroup>, loc: Locale) -> Vec<u8> {
    join_cgroup_lines(raw, |line| library_escape(line, loc))
}

/// The non-root lines of /proc/PID/cgroup joined with commas, each passed through `each`
/// once it is in place; `-` for none.
fn join_cgroup_lines(raw: Option<&Cgroup>, mut each: impl FnMut(&mut [u8])) -> Vec<u8> {
    let mut v: Vec<u8> = Vec::new();
    for l in raw
        .into_iter()
        .flat_map(Cgroup::lines)
        .filter(|l| !l.is_root())
    {
        if !v.is_empty() {
            v.push(b',');
        }
        let at = v.len();
        v.extend_from_slice(l.line);
        each(&mut v[at..]);
    }
    if v.is_empty() {
        v.push(b'-');
    }
    v
}

/// What an `args` column shows for a command line (procps's `fill_cmdline_cvt`): the
/// flattened, escaped line; `?` for one of NULs only; for none, `[comm]` (`comm` already
/// escaped), with ` <defunct>` for a zombie. Shared by ps, top and the machine formats.
pub fn command_or_name(
    cmdline: Option<&[u8]>,
    comm: Vec<u8>,
    zombie: bool,
    loc: Locale,
) -> Vec<u8> {
    if let Some(flat) = cmdline.and_then(|c| flatten_cmdline(c, loc)) {
        return if flat.is_empty() { b"?".to_vec() } else { flat };
    }
    bracketed(comm, zombie)
}

/// `[comm]`, and ` <defunct>` after it for a zombie: how ps names a task without a command
/// line.
pub fn bracketed(comm: Vec<u8>, zombie: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(comm.len() + 12);
    out.push(b'[');
    out.extend_from_slice(&comm);
    out.push(b']');
    if zombie {
        out.extend_from_slice(b" <defunct>");
    }
    out
}

/// Decodes one UTF-8 character at the start of `s` as glibc's `mbrtowc` would.
fn decode(s: &[u8]) -> Option<(char, usize)> {
    for k in 1..=s.len().min(4) {
        if let Ok(t) = std::str::from_utf8(&s[..k]) {
            return t.chars().next().map(|c| (c, k));
        }
    }
    None
}

/// The output pass (ps/output.c `escape_str`): appends `src` to `dst`, escaping what is not
/// printable, using at most `*max_cells` screen cells (which it decrements). Returns the
/// number of bytes appended.
/// Where escaped text goes: a plain vector, or a cell's inline buffer.
pub trait ByteSink {
    fn len(&self) -> usize;
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, s: &[u8]);
    fn reserve(&mut self, n: usize);
}

impl ByteSink for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn push(&mut self, b: u8) {
        Vec::push(self, b)
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        Vec::extend_from_slice(self, s)
    }
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n)
    }
}

impl ByteSink for super::cell::CellBytes {
    fn len(&self) -> usize {
        smallvec::SmallVec::len(self)
    }
    fn push(&mut self, b: u8) {
        smallvec::SmallVec::push(self, b)
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        smallvec::SmallVec::extend_from_slice(self, s)
    }
    fn reserve(&mut self, n: usize) {
        smallvec::SmallVec::reserve(self, n)
    }
}

/// ps's output pass (what is not printable in the locale becomes `?`), so that what
/// reaches the terminal is always valid text.
pub fn terminal_text(v: &[u8], loc: Locale) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(v.len());
    let mut room = usize::MAX;
    output_escape(&mut out, v, &mut room, loc);
    String::from_utf8_lossy(&out).into_owned()
}

pub fn output_escape<B: ByteSink>(
    dst: &mut B,
    src: &[u8],
    max_cells: &mut usize,
    loc: Locale,
) -> usize {
    let start = dst.len();
    let mut cells = 0usize;
    // procps stops at a NUL: src is a C string there.
    let src = match src.iter().position(|&c| c == 0) {
        Some(end) => &src[..end],
        None => src,
    };
    // Printable ASCII goes over as it is in both locales: copy the leading run of it in one
    // go (most names and command lines are nothing else).
    let run = src
        .iter()
        .take(*max_cells)
        .position(|c| !(0x20..0x7f).contains(c))
        .unwrap_or_else(|| src.len().min(*max_cells));
    dst.extend_from_slice(&src[..run]);
    cells += run;
    let src = &src[run..];
    if loc.utf8 {
        let mut i = 0;
        while i < src.len() && cells < *max_cells {
            let c = src[i];
            if c < 0x80 {
                dst.push(if (0x20..0x7f).contains(&c) { c } else { b'?' });
                i += 1;
                cells += 1;
                continue;
            }
            match decode(&src[i..]) {
                None => {
                    dst.push(b'?');
                    i += 1;
                    cells += 1;
                }
                Some((ch, len)) => {
                    let wc = ch as libc::wchar_t;
                    // SAFETY: iswprint and wcwidth read only their argument and the locale.
                    let (printable, width) = unsafe { (iswprint(wc) != 0, wcwidth(wc)) };
                    if !printable {
                        dst.push(b'?');
                        i += len;
                        cells += 1;
                        continue;
                    }
                    let width = width.max(0) as usize;
                    if width > *max_cells - cells {
                        break;
                    }
                    dst.extend_from_slice(&src[i..i + len]);
                    i += len;
                    cells += width;
                }
            }
        }
    } else {
        for &c in src {
            if cells >= *max_cells {
                break;
            }
            dst.push(match c {
                1..=0x1f | 0x7f => b'.',
                0x80..=0xff => b'?',
                other => other,
            });
            cells += 1;
        }
    }
    *max_cells -= cells;
    dst.len() - start
}

/// [`flatten_cmdline`] and then [`output_escape`] in one pass, for the command lines most
/// are: printable ASCII arguments separated by NULs. Appends the result to `dst` and
/// returns true; returns false, appending nothing, for any other command line (a newline,
/// a control or non-ASCII byte, only NULs, or none), which the caller takes the long way.
/// It saves a vector and three passes per line (`ps -ef` at 50,000 processes).
pub fn push_plain_cmdline<B: ByteSink>(dst: &mut B, raw: &[u8], max_cells: &mut usize) -> bool {
    const MAX: usize = 128 * 1024;
    if raw.is_empty()
        || raw.len() >= MAX
        || !raw.iter().all(|&c| c == 0 || (0x20..0x7f).contains(&c))
    {
        return false;
    }
    // Trailing NULs go; the rest become spaces. A last byte that is a space (no NUL after
    // it) is dropped, as flatten_cmdline's C-string end does.
    let Some(last) = raw.iter().rposition(|&c| c != 0) else {
        return false;
    };
    let mut end = last + 1;
    if end == raw.len() && raw[end - 1] == b' ' {
        end -= 1;
    }
    let take = end.min(*max_cells);
    dst.reserve(take);
    for chunk in raw[..take].split_inclusive(|&c| c == 0) {
        match chunk.split_last() {
            Some((0, head)) => {
                dst.extend_from_slice(head);
                dst.push(b' ');
            }
            _ => dst.extend_from_slice(chunk),
        }
    }
    *max_cells -= take;
    true
}

#[cfg(test)]
mod tests {
    use crate::ps::text::*;

    /// The one-pass path gives what flatten_cmdline and output_escape give.
    #[test]
    fn plain_command_lines_take_the_short_way_to_the_same_bytes() {
        for raw in [
            &b"sleep\x00100\x00"[..],
            b"sleep\x00100",
            b"a b \x00",
            b"a b ",
            b"x\x00\x00\x00y\x00\x00",
            b"\x00x",
            b" ",
            b"a\x00 ",
        ] {
            for max in [0, 1, 3, 100] {
                let mut slow = Vec::new();
                let mut slow_room = max;
                let flat = flatten_cmdline(raw, UTF8).expect("non-empty");
                output_escape(&mut slow, &flat, &mut slow_room, UTF8);
                let mut fast = Vec::new();
                let mut fast_room = max;
                assert!(
                    push_plain_cmdline(&mut fast, raw, &mut fast_room),
                    "{raw:?}"
                );
                assert_eq!((fast, fast_room), (slow, slow_room), "{raw:?} in {max}");
            }
        }
        for other in [&b""[..], b"\x00\x00", b"a\nb", b"t\tab", b"caf\xc3\xa9"] {
            assert!(
                !push_plain_cmdline(&mut Vec::new(), other, &mut 10),
                "{other:?}"
            );
        }
    }

    const UTF8: Locale = Locale { utf8: true };
    const BYTES: Locale = Locale { utf8: false };

    #[test]
    fn cmdline_is_flattened_like_procps() {
        assert_eq!(
            flatten_cmdline(b"sleep\x00100\x00", UTF8),
            Some(b"sleep 100".to_vec())
        );
        assert_eq!(
            flatten_cmdline(b"a\nb\0c\0\0\0", UTF8),
            Some(b"a b c".to_vec())
        );
        assert_eq!(flatten_cmdline(b"", UTF8), None);
        assert_eq!(flatten_cmdline(b"\0\0", UTF8), Some(Vec::new()));
        // A trailing newline is cut, as procps cuts a final space.
        assert_eq!(flatten_cmdline(b"x\n", UTF8), Some(b"x".to_vec()));
        assert_eq!(flatten_cmdline(b"t\tab", UTF8), Some(b"t?ab".to_vec()));
        assert_eq!(flatten_cmdline(b"t\tab", BYTES), Some(b"t.ab".to_vec()));
    }

    #[test]
    fn library_escape_falls_back_to_bytes_on_corrupt_utf8() {
        let mut s = "na\u{ef}ve".as_bytes().to_vec();
        library_escape(&mut s, UTF8);
        assert_eq!(s, "na\u{ef}ve".as_bytes());
        let mut bad = b"ok\x01\xff\xc3x".to_vec();
        library_escape(&mut bad, UTF8);
        assert_eq!(bad, b"ok???x");
    }

    #[test]
    fn output_escape_counts_cells_not_bytes() {
        let mut out = Vec::new();
        let mut room = 3;
        let n = output_escape(&mut out, "日本x".as_bytes(), &mut room, UTF8);
        // Each CJK character is 2 cells wide in a UTF-8 locale with glibc's tables, but the
        // test must not depend on the machine's locale data: check the invariants instead.
        assert_eq!(n, out.len());
        assert!(room <= 3);
        let mut out = Vec::new();
        let mut room = 10;
        output_escape(&mut out, b"a\x7fb\xffc", &mut room, BYTES);
        assert_eq!(out, b"a.b?c");
        assert_eq!(room, 5);
    }
}
