//! procps-ng 4.0 `ps` option syntax: UNIX (`-ef`), BSD (`aux`), GNU (`--sort=pid`) and trailing
//! pids, read the way procps's ps/parser.c ([`parser`], with the lists options take in
//! [`lists`]) and ps/sortformat.c ([`sortformat`]) do, including their second chance (an
//! argument list that fails as UNIX options is read again as BSD ones, which is why `ps -aux`
//! works) and their error texts and exit codes; the terminal size in [`screen`], help and
//! the specifier list in [`help`].
//!
//! The result is a [`Settings`]; nothing here reads /proc except the caller's own tty.

use std::cell::RefCell;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use super::cell::OUTBUF_SIZE;
use super::settings::*;

mod aix;
mod help;
mod lists;
mod parser;
pub mod personality;
mod screen;
mod sortformat;

pub use help::info_text;
use help::USAGE_TAIL;
use parser::{usage, Heading, Parsed, Parser, Selection, Stop};
use personality::*;

/// A usage error: the text procps prints and its exit code.
#[derive(Debug)]
pub struct ArgError {
    /// Text for stderr.
    pub message: String,
    /// Exit code.
    pub code: u8,
}

impl ArgError {
    /// What ps prints and exits with when reading the options stopped: for a usage error,
    /// the first reading's text when there was one (procps reports the UNIX reading's).
    fn stopped(stop: Stop, first_usage: Option<String>) -> ArgError {
        match stop {
            Stop::Usage(text) => ArgError {
                message: format!("error: {}\n{USAGE_TAIL}", first_usage.unwrap_or(text)),
                code: 1,
            },
            Stop::Info => ArgError {
                message: String::new(),
                code: 0,
            },
            Stop::Fatal(message) => ArgError { message, code: 1 },
        }
    }
}

/// Parses `ps` arguments (after `ps`), with the personality the environment asks for.
pub fn parse(argv: &[OsString]) -> Result<Settings, ArgError> {
    parse_as(argv, Personality::from_env())
}

/// Parses `ps` arguments as personality `per` would.
pub fn parse_as(argv: &[OsString], per: Personality) -> Result<Settings, ArgError> {
    let args: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    let tty = screen::my_tty();
    let first_unknown = Rc::new(RefCell::new(None));
    // A personality that forces BSD parsing has no UNIX first reading.
    let first_usage = if per.has(PER_FORCE_BSD) {
        None
    } else {
        match read(args.clone(), false, tty, per, &first_unknown) {
            Ok(s) => return Ok(s),
            Err(Stop::Usage(text)) => Some(text),
            Err(stop) => return Err(ArgError::stopped(stop, None)),
        }
    };
    // procps's second chance: everything as BSD options, where `m` is the old Linux memory
    // format unless the personality says what it is.
    let mut per2 = per;
    if !per2.has(PER_OLD_M | PER_BSD_M) {
        per2.flags |= PER_OLD_M;
    }
    read(args, true, tty, per2, &first_unknown).map_err(|stop| ArgError::stopped(stop, first_usage))
}

/// One reading of `args` (`force_bsd`: the second), sharing procps's first unknown
/// specifier message with the other.
fn read(
    args: Vec<Vec<u8>>,
    force_bsd: bool,
    tty: u32,
    per: Personality,
    first_unknown: &Rc<RefCell<Option<String>>>,
) -> Parsed<Settings> {
    let mut p = Parser::new(args, force_bsd, tty, per);
    p.first_unknown_spec = first_unknown.clone();
    p.parse_all()?;
    settings(p)
}

/// The settings the options read give (procps's `arg_check_conflicts`, and what ps/global.c
/// derives), or why there are none.
fn settings(mut p: Parser) -> Parsed<Settings> {
    if p.replay.is_none() && p.replay_at.is_some() {
        return usage("--at needs --replay DIR");
    }
    let threads = p.thread_check()?;
    let (columns, sort) = p.sort_format_lists()?;
    let mut select_bits = p.select_bits()?;
    if (p.simple_selection == 0 && !p.selections.is_empty()) || p.all {
        select_bits = None;
    }
    quick_pid_alone(&p, !sort.is_empty())?;
    let mut screen = p.screen_cols.unwrap_or_else(screen::screen_cols);
    if p.w_count > 0 && screen < 132 {
        screen = 132;
    }
    if p.w_count > 1 {
        screen = OUTBUF_SIZE;
    }
    let quick_order = p.selections.iter().find_map(|s| match s {
        Selection::Quick(v) => Some(v.clone()),
        Selection::Criterion(_) => None,
    });
    let criteria = p
        .selections
        .into_iter()
        .map(|s| match s {
            Selection::Criterion(c) => c,
            Selection::Quick(v) => Criterion::Pid(v),
        })
        .collect();
    Ok(Settings {
        all: p.all,
        select_bits,
        criteria,
        negate: p.negate,
        running_only: p.running_only,
        threads,
        columns,
        sort,
        forest: p.forest,
        headers: p.heading != Some(Heading::None),
        screen_cols: screen,
        unix_f: p.unix_f,
        bsd_c: p.bsd_c,
        bsd_e: p.bsd_e,
        delimiter: p.delimiter,
        screen_rows: screen::screen_rows(),
        multi_header: p.heading == Some(Heading::Multi),
        include_dead_children: p.dead_children,
        user_is_number: p.user_is_number,
        output: p.output,
        verbose: p.verbose,
        quick_order,
        backend: p.backend,
        replay: p.replay.map(|dir| (dir, p.replay_at)),
    })
}

/// `-q` lists exactly its pids: once, and with no other selection, forest, sort or
/// negation (procps's errors, printed as they are).
fn quick_pid_alone(p: &Parser, sorted: bool) -> Parsed<()> {
    let quick = p
        .selections
        .iter()
        .filter(|s| matches!(s, Selection::Quick(_)))
        .count();
    let fatal = |text: &str| Err(Stop::Fatal(text.to_string()));
    if quick > 1 {
        return fatal("q/-q/--quick-pid can only be used once.\n");
    }
    if quick > 0 && p.selections.len() > quick {
        return fatal("q/-q/--quick-pid cannot be combined with other selection options.\n");
    }
    if quick > 0 && p.forest.is_some() {
        return fatal("q/-q/--quick-pid cannot be used together with forest type listings.\n");
    }
    if quick > 0 && sorted {
        return fatal("q/-q,--quick-pid cannot be used together with sort options.\n");
    }
    if quick > 0 && p.negate {
        return fatal("q/-q/--quick-pid cannot be used together with negation switches.\n");
    }
    Ok(())
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use crate::ps::args::parser::{Parser, FF_LM};
    use crate::ps::args::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn names(args: &[&str]) -> Vec<String> {
        parse(&argv(args))
            .expect("parses")
            .columns
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn standard_formats() {
        assert_eq!(
            names(&["-ef"]),
            ["uid_hack", "pid", "ppid", "c", "stime", "tname", "time", "cmd"]
        );
        assert_eq!(
            names(&["-l"]),
            [
                "f", "s", "uid", "pid", "ppid", "c", "opri", "ni", "addr_1", "sz", "wchan",
                "tname", "time", "ucmd"
            ]
        );
        assert_eq!(
            names(&["-eF"]),
            ["uid_hack", "pid", "ppid", "c", "sz", "rss", "psr", "stime", "tname", "time", "cmd"]
        );
        assert_eq!(
            names(&["-eLf"]),
            ["uid_hack", "pid", "ppid", "lwp", "c", "nlwp", "stime", "tname", "time", "cmd"]
        );
        assert_eq!(
            names(&["-ej"]),
            ["pid", "pgid", "sid", "tname", "time", "ucmd"]
        );
        assert_eq!(names(&["ax"]), ["pid", "tname", "stat", "bsdtime", "args"]);
        assert_eq!(
            names(&["aux"]),
            [
                "user",
                "pid",
                "pcpu",
                "pmem",
                "vsz",
                "rss",
                "tname",
                "stat",
                "start_time",
                "bsdtime",
                "args"
            ]
        );
        assert_eq!(names(&["-T"]), ["pid", "spid", "tname", "time", "ucmd"]);
        assert_eq!(
            names(&["-O", "ppid"]),
            ["pid", "ppid", "state", "tname", "time", "command"]
        );
    }

    #[test]
    fn headers_and_widths_in_o_lists() {
        let s = parse(&argv(&["-o", "pid=PROCESS,comm:20,args=A"])).expect("parses");
        assert_eq!(s.columns[0].header.as_deref(), Some("PROCESS"));
        assert_eq!(s.columns[1].width, Some(20));
        assert_eq!(s.columns[2].header.as_deref(), Some("A"));
        // procps splits "args=A B" at the space too, and then fails on "B".
        assert!(parse(&argv(&["-o", "args=A B"])).is_err());
    }

    #[test]
    fn errors_match_procps() {
        let e = |args: &[&str]| parse(&argv(args)).expect_err("must fail");
        assert!(e(&["-Q"])
            .message
            .starts_with("error: unsupported SysV option\n\nUsage:"));
        assert!(e(&["-p", "abc"])
            .message
            .starts_with("error: process ID list syntax error\n"));
        assert!(e(&["-o", "foo"])
            .message
            .starts_with("error: unknown user-defined format specifier \"foo\"\n"));
        assert!(e(&["--sort=foo"])
            .message
            .starts_with("error: unknown sort specifier\n"));
        assert_eq!(
            e(&["-ef", "--forest", "-q", "1"]).message,
            "q/-q/--quick-pid cannot be used together with forest type listings.\n"
        );
        assert_eq!(e(&["-Q"]).code, 1);
    }

    #[test]
    fn bsd_second_chance_accepts_dash_aux() {
        assert_eq!(names(&["-aux"]), names(&["aux"]));
    }

    fn parse_with(per: &str, args: &[&str]) -> Result<Settings, ArgError> {
        parse_as(
            &argv(args),
            Personality::from_vars(Some(per), None, false, None),
        )
    }

    fn names_as(per: &str, args: &[&str]) -> Vec<String> {
        parse_with(per, args)
            .expect("parses")
            .columns
            .into_iter()
            .map(|c| c.label())
            .collect()
    }

    fn sort_of(args: &[&str]) -> Vec<(String, bool)> {
        parse(&argv(args))
            .expect("parses")
            .sort
            .into_iter()
            .map(|k| (k.name, k.reverse))
            .collect()
    }

    #[test]
    fn aix_lists_are_tried_only_after_a_failed_format_list() {
        assert_eq!(names(&["-o", "%cpu,c"]), ["%cpu", "c"]);
        assert_eq!(names_as("", &["-o", "%p %a"]), ["pid", "' '", "args", "''"]);
        // "c" parses as a specifier, then "%p" fails: the AIX reading is appended.
        assert_eq!(names_as("", &["-o", "c %p"]), ["c", "'c '", "pid", "''"]);
        let e = parse(&argv(&["-o", "%p", "-o", "foo"])).expect_err("foo is unknown");
        // procps's static errbuf: the first unknown specifier's message sticks.
        assert!(e
            .message
            .starts_with("error: unknown user-defined format specifier \"%p\"\n"));
    }

    #[test]
    fn personalities_pick_their_formats() {
        assert_eq!(
            names_as("gnu", &["-j"]),
            ["pid", "tname", "state", "bsdtime", "pgid", "sid", "comm"]
        );
        assert_eq!(names_as("gnu", &["-jl"])[..3], ["flags", "state", "uid"]);
        assert_eq!(names_as("linux", &["-f"])[0], "user");
        // The generated list itself, before its columns are looked up.
        let sysv = |per: &str, args: &[&str]| -> Vec<String> {
            let args = args.iter().map(|a| a.as_bytes().to_vec()).collect();
            let mut p = Parser::new(
                args,
                false,
                0,
                Personality::from_vars(Some(per), None, false, None),
            );
            p.parse_all().expect("parses");
            p.sysv_list()
                .expect("a list")
                .into_iter()
                .map(|c| c.label())
                .collect()
        };
        assert_eq!(
            sysv("linux", &["-l"])[..10],
            ["f", "s", "uid", "pid", "ppid", "c", "opri", "ni", "sgi_p", "sz"]
        );
        let irix = sysv("irix", &["-l"]);
        assert_eq!(
            irix[6..12],
            ["priority", "ni", "sgi_p", "sz", "':'", "sgi_rss"]
        );
        assert_eq!(names_as("bsd", &["u"])[6], "tt", "FB_u");
        assert_eq!(names_as("tru64", &["-f"])[0], "uname", "F5FMT");
        // bsd forces BSD parsing: -ef is e (environment) and f (forest).
        let s = parse_with("bsd", &["-ef"]).expect("parses");
        assert!(s.bsd_e && s.forest == Some(Forest::Bsd));
        assert_eq!(s.columns.len(), 5, "the BSD default");
        // h repeats the header under bsd, removes it otherwise.
        assert!(parse_with("bsd", &["h"]).expect("parses").multi_header);
        assert!(!parse_with("unknown", &["h"]).expect("parses").headers);
        // bsd's m sorts by %MEM; old's is a format; the default's shows threads.
        let m = parse_with("bsd", &["m"]).expect("parses");
        assert_eq!((m.sort[0].name.as_str(), m.threads), ("pmem", Threads::Off));
        assert_eq!(
            parse_with("unknown", &["m"]).expect("parses").threads,
            Threads::AfterProcess
        );
        let mut p = Parser::new(
            vec![b"m".to_vec()],
            false,
            0,
            Personality::from_vars(Some("old"), None, false, None),
        );
        p.parse_all().expect("parses");
        assert_eq!(
            (p.format_flags, p.thread_flags),
            (FF_LM, 0),
            "old's m is the OL_m format"
        );
        // -x: SVR4's -y, HP-UX's long command, else an error (then BSD x).
        assert_eq!(names_as("sysv", &["-lx"])[..3], ["s", "uid", "pid"]);
        let hp = parse_with("hpux", &["-x"]).expect("parses");
        assert!(hp.unix_f && hp.screen_cols == OUTBUF_SIZE);
        assert_eq!(
            names_as("unknown", &["-x"]),
            ["pid", "tname", "stat", "bsdtime", "args"]
        );
    }

    #[test]
    fn sunos4_has_no_implied_g() {
        assert_eq!(
            parse_with("sunos4", &["a"]).expect("parses").select_bits,
            Some(0x0303)
        );
        assert_eq!(
            parse_with("unknown", &["a"]).expect("parses").select_bits,
            Some(0x0f0f)
        );
    }

    #[test]
    fn o_is_a_sort_when_it_reads_as_sort_codes() {
        assert_eq!(sort_of(&["O", "p"]), [("pid".to_string(), false)]);
        assert_eq!(sort_of(&["O", "-p"]), [("pid".to_string(), true)]);
        // The direction holds for one code; the next without its own is direction 0,
        // which sorts nothing.
        assert_eq!(
            sort_of(&["O", "-Pp"]),
            [("ppid".to_string(), true), (String::new(), false)]
        );
        assert_eq!(
            sort_of(&["O", "P-p"]),
            [("ppid".to_string(), false), ("pid".to_string(), true)]
        );
        // J (cstime) is not in procps's table: the list ends there.
        assert_eq!(sort_of(&["O", "pJP"]), [("pid".to_string(), false)]);
        // vsize sorts by a value only size/trs/drs... columns read: inert here.
        assert_eq!(sort_of(&["O", "v"]), [(String::new(), false)]);
        assert_eq!(sort_of(&["--sort", "vsize"]), [(String::new(), false)]);
        assert_eq!(sort_of(&["O", "s"]), [("vsize".to_string(), false)]);
        // Not sort codes: a format after PID.
        assert_eq!(
            names(&["O", "ppid"]),
            ["pid", "ppid", "state", "tname", "cputime", "comm"]
        );
        let e = |args: &[&str]| parse(&argv(args)).expect_err("must fail").message;
        assert!(e(&["O", "foo"]).starts_with("error: bad sorting code\n"));
        assert!(e(&["O", "PP"]).starts_with("error: bad sorting code\n"));
        assert!(e(&["f", "O", "P"]).starts_with("error: PPID sort and forest output conflict\n"));
        assert!(e(&["k", "pid", "O", "P"]).starts_with("error: multiple sort options\n"));
    }

    #[test]
    fn bsd_e_and_delimiter() {
        let s = parse(&argv(&["axe", "--delimiter=:"])).expect("parses");
        assert!(s.bsd_e);
        assert_eq!(s.delimiter, Some(b':'));
        assert!(!parse(&[OsString::from("ax")]).expect("parses").bsd_e);
        assert!(parse(&argv(&["--delimiter", "ab"]))
            .expect_err("two bytes")
            .message
            .starts_with("error: delimiter must be a single character\n"));
    }
}
