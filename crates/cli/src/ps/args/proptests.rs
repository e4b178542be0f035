//! Property tests of the `ps` option parser: arbitrary argument vectors of plausible tokens
//! (UNIX, BSD and GNU options, their arguments, format and sort lists, pid lists, huge and
//! negative numbers) mixed with random strings and invalid UTF-8. Whatever the vector,
//! [`parse`] and [`info_text`] return (no panic), and an error is either one of the
//! informational exits (code 0) or carries a message (code 1), as procps's usage errors do.
//!
//! `PROPTEST_CASES` overrides the case count (1000 by default here: a case takes
//! microseconds).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use proptest::prelude::*;

use crate::ps::args::{info_text, parse};

const UNIX: &str = "ACFGHLMNOPSTUVWXZacdefghjklmnopqrstuvwxy";
const GNU: &[&str] = &[
    "Group",
    "User",
    "backend",
    "cols",
    "columns",
    "context",
    "cumulative",
    "deselect",
    "forest",
    "format",
    "group",
    "header",
    "headers",
    "heading",
    "headings",
    "help",
    "lines",
    "no-header",
    "no-headers",
    "no-heading",
    "no-headings",
    "noheader",
    "noheaders",
    "noheading",
    "noheadings",
    "output",
    "pid",
    "ppid",
    "quick-pid",
    "rows",
    "sid",
    "sort",
    "tty",
    "user",
    "verbose",
    "version",
    "width",
    "info",
    "sort=pid",
    "format=pid",
    "backend=bpf",
    "output=json",
    "output=csv",
    "cols=80",
    "width=0",
];
const VALUES: &[&str] = &[
    "1",
    "1,2,3",
    "0",
    "-1",
    "99999999999999999999",
    "0x10",
    "077",
    "08",
    "+5",
    "",
    " ",
    "1,,2",
    ",",
    "pid",
    "pid,comm",
    "pid,comm:20,args=CMD",
    "pid=PROCESS",
    "comm:0",
    "comm:99999999999999999999",
    "-pid,+comm",
    "+",
    "-",
    "%cpu",
    "%mem,rss",
    "root",
    "0",
    "nobody",
    "no_such_user_xyz",
    "pts/0",
    "tty1",
    "?",
    "/dev/null",
    "/",
    "json",
    "csv",
    "text",
    "bpf",
    "procfs",
    "auto",
    "ucmd:5=X",
    "=",
    ":",
    "pid=",
    "pid:",
    "s,stat,state",
    "lstart,etime,etimes",
    "f,s,uid,pid,ppid",
    "ww",
    "bsdtime",
    "cmd=a=b=c",
];

fn unix_token() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(UNIX.as_bytes().to_vec()), 0..4).prop_map(|c| {
        let mut t = b"-".to_vec();
        t.extend(c);
        t
    })
}

fn bsd_token() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(UNIX.as_bytes().to_vec()), 1..4)
}

fn gnu_token() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(GNU),
        prop::option::of(prop::sample::select(VALUES)),
        prop::sample::select(vec!["=", ":"]),
    )
        .prop_map(|(name, v, sep)| match v {
            Some(v) => format!("--{name}{sep}{v}").into_bytes(),
            None => format!("--{name}").into_bytes(),
        })
}

fn number_token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        "[0-9]{15,40}",
        "-[0-9]{1,30}",
        "0[xX][0-9a-fA-F]{1,20}",
        "[0-9,]{1,12}",
    ]
    .prop_map(String::into_bytes)
}

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => unix_token(),
        3 => bsd_token(),
        3 => gnu_token(),
        4 => prop::sample::select(VALUES).prop_map(|v| v.as_bytes().to_vec()),
        2 => number_token(),
        1 => "[ -~]{0,20}".prop_map(String::into_bytes),
        1 => ".{0,12}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..12),
        1 => (unix_token(), prop::collection::vec(any::<u8>(), 1..6)).prop_map(|(mut a, b)| {
            a.extend(b);
            a
        }),
    ]
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn any_argument_vector_parses_or_says_why(args in prop::collection::vec(token(), 0..7)) {
        let argv: Vec<OsString> = args.into_iter().map(OsString::from_vec).collect();
        let _ = info_text(&argv);
        if let Err(e) = parse(&argv) {
            prop_assert!(e.code <= 1, "exit code {} for {:?}", e.code, argv);
            if e.code == 1 {
                prop_assert!(!e.message.is_empty(), "empty error message for {:?}", argv);
            }
        }
    }

    #[test]
    fn format_and_sort_lists(
        opt in prop::sample::select(vec!["-o", "-O", "o", "O", "--format", "--sort", "k", "--sort="]),
        items in prop::collection::vec(
            (
                prop_oneof![
                    prop::sample::select(vec!["pid", "comm", "args", "user", "%cpu", "rss", "lstart", "nosuch", "", "-pid", "+comm"]).prop_map(str::to_string),
                    ".{0,6}",
                ],
                prop::option::of(prop_oneof![Just(":".to_string()), Just("=".to_string())]),
                ".{0,6}",
            ),
            0..5,
        ),
        sep in prop::sample::select(vec![",", " ", "\t", "\n", ",,"]),
        tail in prop::sample::select(vec!["", ",", " "]),
    ) {
        let list: Vec<String> = items
            .into_iter()
            .map(|(name, sep, v)| match sep {
                Some(s) => format!("{name}{s}{v}"),
                None => name,
            })
            .collect();
        let list = format!("{}{tail}", list.join(sep));
        let argv: Vec<OsString> = if opt.ends_with('=') {
            vec![format!("{opt}{list}").into()]
        } else {
            vec![opt.into(), list.into()]
        };
        if let Err(e) = parse(&argv) {
            prop_assert!(e.code <= 1);
            prop_assert!(e.code == 0 || !e.message.is_empty());
        }
    }
}
