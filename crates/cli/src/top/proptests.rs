//! Property tests of what a user types into `top`: the command line ([`parse_args`]) and
//! the prompts' inputs (pids, signals, nice values, delays, sort keys and filters).
//! Whatever the input, parsing returns (no panic), an accepted delay is a real duration
//! within bounds, and an accepted pid is a single real one (never 0 or negative).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

use proptest::prelude::*;

use super::arrange::Filter;
use super::columns::Column;
use super::options::parse_args;
use crate::input::{parse_seconds, Nice, Pid, Signal, MAX_SECONDS};

/// Plausible tokens for top's command line, with numbers of every kind.
fn token() -> impl Strategy<Value = Vec<u8>> {
    let flag = prop::sample::select(vec![
        "-b",
        "-H",
        "-c",
        "--exited",
        "-h",
        "-n",
        "-d",
        "-p",
        "-u",
        "-U",
        "-w",
        "-o",
        "--backend",
        "--backend=bpf",
        "--help",
        "-x",
        "--",
    ])
    .prop_map(|s| s.as_bytes().to_vec());
    let number = prop::sample::select(vec![
        "0",
        "-1",
        "1",
        "0.1",
        "1e20",
        "-0",
        "nan",
        "inf",
        "-inf",
        "4194304",
        "4194305",
        "99999999999999999999",
        "1,2",
        ",",
        "",
        "1,,2",
        "0x10",
        " 5",
        "+3",
        "1e-400",
        "2147483648",
        "root",
        "nosuch",
        "%CPU",
        "+PID",
        "-RUNQ%",
    ])
    .prop_map(|s| s.as_bytes().to_vec());
    let attached = (
        prop::sample::select(vec!["-n", "-d", "-p", "-u", "-w", "-o"]),
        any::<f64>(),
    )
        .prop_map(|(f, v)| format!("{f}{v}").into_bytes());
    prop_oneof![
        4 => flag,
        4 => number,
        2 => attached,
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn top_arguments_never_panic(args in prop::collection::vec(token(), 0..8)) {
        let argv: Vec<OsString> = args.into_iter().map(OsString::from_vec).collect();
        if let Ok(o) = parse_args(&argv) {
            prop_assert!(o.delay >= Duration::from_millis(100));
            prop_assert!(o.delay <= Duration::from_secs_f64(MAX_SECONDS));
            prop_assert!(o.iterations != Some(0));
            prop_assert!(o.pids.iter().all(|&p| p > 0));
            prop_assert!(o.width.is_none_or(|w| (1..=512).contains(&w)));
        }
    }

    #[test]
    fn top_prompt_inputs_never_panic(s in ".{0,24}", f in any::<f64>()) {
        for input in [s.clone(), f.to_string(), format!("-{s}"), format!("%CPU>{f}")] {
            if let Ok(p) = Pid::parse(&input) {
                prop_assert!(p.get() > 0);
            }
            if let Ok(sig) = Signal::parse(&input) {
                prop_assert!((1..=64).contains(&sig.get()));
            }
            if let Ok(n) = Nice::parse(&input) {
                prop_assert!((-20..=19).contains(&n.get()));
            }
            if let Ok(d) = parse_seconds(&input, 0.1) {
                prop_assert!(d >= Duration::from_millis(100));
            }
            let _ = Column::sort_key(&input);
            let _ = Filter::parse(&input);
        }
    }
}
