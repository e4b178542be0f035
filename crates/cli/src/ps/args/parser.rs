//! The options themselves, read as procps-ng 4.0's ps/parser.c reads them: UNIX (`-ef`), BSD
//! (`aux`), GNU (`--sort=pid`) and trailing pids, into the parser's state ([`Parser`], procps's
//! globals), with its error texts. The format and sort lists are kept as given, for
//! [`super::sortformat`] once every option is read.

use std::path::PathBuf;

use super::lists::{gids, parse_pid, pids, split_list, ttys, uids};
use super::personality::*;
use crate::ps::settings::{Backend, Criterion, Forest, Output, Threads};

// Simple selections (ps/common.h SS_*).
pub const SS_U_A: u32 = 1;
pub const SS_U_D: u32 = 2;
pub const SS_B_X: u32 = 4;
pub const SS_B_G: u32 = 8;
pub const SS_B_A: u32 = 16;

// Thread flags (TF_*).
pub const TF_B_H: u32 = 1;
pub const TF_B_M: u32 = 2;
pub const TF_U_M: u32 = 4;
pub const TF_U_L: u32 = 8;
pub const TF_U_T: u32 = 16;

// Format flags (FF_*) and modifiers (FM_*).
pub const FF_UF: u32 = 1;
pub const FF_UL: u32 = 2;
pub const FF_BJ: u32 = 4;
pub const FF_BL: u32 = 8;
pub const FF_BS: u32 = 16;
pub const FF_BU: u32 = 32;
pub const FF_BV: u32 = 64;
pub const FF_LX: u32 = 128;
pub const FF_FC: u32 = 256;
pub const FF_UJ: u32 = 512;
pub const FF_LM: u32 = 1024;
pub const FM_C: u32 = 1;
pub const FM_J: u32 = 2;
pub const FM_Y: u32 = 4;
pub const FM_P: u32 = 8;
pub const FM_M: u32 = 16;
pub const FM_F: u32 = 32;

/// Which option gave a format or sort list (procps's `sf_node` codes), kept until every
/// option is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortFormatKind {
    /// `-o`.
    UnixO,
    /// `-O`.
    UnixBigO,
    /// `o`.
    BsdO,
    /// `O`: sort codes when it reads as them, else a format.
    BsdBigO,
    /// `--format`.
    GnuFormat,
    /// `--sort`, `k`.
    GnuSort,
    /// BSD `m` under the bsd personality: a sort by %MEM that does not count as `--sort`.
    BsdM,
}

/// The header option given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heading {
    /// `--no-headers`, `h`: none.
    None,
    /// `--headers` (`h` under bsd): repeated every screen.
    Multi,
}

/// A selection by list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// `-p`, `-u`, ...: a task is selected when any criterion matches.
    Criterion(Criterion),
    /// `-q`, `q`, `--quick-pid`: exactly these pids, in this order.
    Quick(Vec<i32>),
}

/// Why reading the options stopped short of settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A usage error, with procps's text: the options are read again as BSD ones, and when
    /// that fails too, `error: TEXT` and the usage are printed (exit 1).
    Usage(String),
    /// `--version`, `--help` or `L` alone: their text on stdout, exit 0
    /// ([`super::info_text`]).
    Info,
    /// An error printed as it is (exit 1), with no second reading.
    Fatal(String),
}

impl From<String> for Stop {
    fn from(text: String) -> Stop {
        Stop::Usage(text)
    }
}

/// What reading an option gives.
pub type Parsed<T> = Result<T, Stop>;

/// A usage error with procps's `text`.
pub fn usage<T>(text: &str) -> Parsed<T> {
    Err(Stop::Usage(text.to_string()))
}

/// The parser's state: procps's globals as its parser sets them.
#[derive(Debug)]
pub struct Parser {
    pub args: Vec<Vec<u8>>,
    /// The argument being read.
    pub at: usize,
    /// The second reading: every option as BSD.
    pub force_bsd: bool,
    pub prefer_bsd: bool,
    pub all: bool,
    /// `SS_*` bits.
    pub simple_selection: u32,
    pub negate: bool,
    pub running_only: bool,
    /// `TF_*` bits.
    pub thread_flags: u32,
    pub forest: Option<Forest>,
    /// `FF_*` bits.
    pub format_flags: u32,
    /// `FM_*` bits.
    pub format_modifiers: u32,
    /// The format and sort lists, in the order given.
    pub sort_format: Vec<(String, SortFormatKind)>,
    pub selections: Vec<Selection>,
    /// How many `w`s.
    pub w_count: u32,
    pub screen_cols: Option<usize>,
    pub heading: Option<Heading>,
    pub dead_children: bool,
    pub user_is_number: bool,
    pub unix_f: bool,
    pub bsd_c: bool,
    pub backend: Backend,
    pub output: Output,
    pub verbose: bool,
    /// The caller's terminal, for BSD `T` and a bare `t`.
    pub my_tty: u32,
    pub replay: Option<PathBuf>,
    pub replay_at: Option<String>,
    /// PS_PERSONALITY / CMD_ENV.
    pub personality: Personality,
    /// BSD `e`: the environment after the command.
    pub bsd_e: bool,
    /// `--delimiter C` (procps newer than 4.0.2).
    pub delimiter: Option<u8>,
    /// procps's static `errbuf` in format_parse: the first "unknown user-defined format
    /// specifier" message of the run is the one every later unknown specifier reports,
    /// even in the second (BSD) reading.
    pub first_unknown_spec: std::rc::Rc<std::cell::RefCell<Option<String>>>,
}

/// A GNU long option being read: its name and what followed `=` or `:` in the same word.
struct Long<'a> {
    name: &'a str,
    attached: Option<&'a str>,
}

impl Parser {
    /// A parser of `args`; `force_bsd` for procps's second reading.
    pub fn new(args: Vec<Vec<u8>>, force_bsd: bool, my_tty: u32, per: Personality) -> Parser {
        Parser {
            args,
            at: 0,
            force_bsd,
            prefer_bsd: force_bsd || per.prefer_bsd,
            personality: per,
            bsd_e: false,
            delimiter: None,
            first_unknown_spec: Default::default(),
            all: false,
            simple_selection: 0,
            negate: false,
            running_only: false,
            thread_flags: 0,
            forest: None,
            format_flags: 0,
            format_modifiers: 0,
            sort_format: Vec::new(),
            selections: Vec::new(),
            w_count: 0,
            screen_cols: None,
            heading: None,
            dead_children: false,
            user_is_number: false,
            unix_f: false,
            bsd_c: false,
            backend: Backend::Auto,
            replay: None,
            replay_at: None,
            output: Output::Text,
            verbose: false,
            my_tty,
        }
    }

    fn arg(&self, i: usize) -> String {
        String::from_utf8_lossy(&self.args[i]).into_owned()
    }

    /// procps get_opt_arg: the rest of this argument, or the next argument.
    fn opt_arg(&mut self, rest: &[u8]) -> Option<String> {
        if !rest.is_empty() {
            return Some(String::from_utf8_lossy(rest).into_owned());
        }
        if self.at + 1 >= self.args.len() || self.args[self.at + 1].is_empty() {
            return None;
        }
        self.at += 1;
        Some(self.arg(self.at))
    }

    /// procps `exclusive()`: an option that must be the only argument.
    fn exclusive(&self, opt: &str) -> Parsed<()> {
        if self.args.len() != 1 || self.args[0] != opt.as_bytes() {
            return Err(Stop::Usage(format!("the option is exclusive: {opt}")));
        }
        Err(Stop::Info)
    }

    fn select(&mut self, c: Criterion) {
        self.selections.push(Selection::Criterion(c));
    }

    /// Reads every argument (procps `parse_all_options`).
    pub fn parse_all(&mut self) -> Parsed<()> {
        self.at = 0;
        while self.at < self.args.len() {
            let a = &self.args[self.at];
            let c0 = a.first().copied().unwrap_or(0);
            let c1 = a.get(1).copied().unwrap_or(0);
            let c2 = a.get(2).copied().unwrap_or(0);
            if c0.is_ascii_alphabetic() {
                if self.force_bsd && !self.personality.has(PER_FORCE_BSD) {
                    // procps: on the second reading only dash words are read again as BSD.
                    return usage("way bad");
                }
                self.prefer_bsd = true;
                self.bsd()?;
            } else if c0.is_ascii_digit() || c0 == b'+' {
                self.prefer_bsd = true;
                self.trailing_pids()?;
            } else if c0 != b'-' {
                return usage("garbage option");
            } else if c1.is_ascii_alphabetic() {
                if self.force_bsd {
                    self.prefer_bsd = true;
                    self.bsd()?;
                } else {
                    self.unix()?;
                }
            } else if c1.is_ascii_digit() {
                self.prefer_bsd = true;
                self.trailing_pids()?;
            } else if c1 == b'-' && c2.is_ascii_alphabetic() {
                self.gnu()?;
            } else {
                return usage("garbage option");
            }
            self.at += 1;
        }
        Ok(())
    }

    /// A word of UNIX options (`-ef`, `-o pid`; procps `parse_sysv_option`).
    fn unix(&mut self) -> Parsed<()> {
        let a = self.args[self.at].clone();
        for i in 1..a.len() {
            if !self.unix_flag(a[i])? {
                // An option with an argument takes the rest of the word or the next one.
                return self.unix_with_argument(a[i], &a[i + 1..]);
            }
        }
        Ok(())
    }

    /// A UNIX option without an argument; false for a letter that takes one (or none).
    fn unix_flag(&mut self, letter: u8) -> Parsed<bool> {
        match letter {
            b'A' | b'e' => self.all = true,
            b'F' => {
                self.format_modifiers |= FM_F;
                self.format_flags |= FF_UF;
                self.unix_f = true;
            }
            b'H' => self.forest = Some(Forest::Unix),
            b'L' => self.thread_flags |= TF_U_L,
            b'M' | b'Z' => self.format_modifiers |= FM_M,
            b'N' => self.negate = true,
            b'P' => self.format_modifiers |= FM_P,
            b'T' => self.thread_flags |= TF_U_T,
            b'V' => self.exclusive("-V")?,
            b'a' => self.simple_selection |= SS_U_A,
            b'c' => self.format_modifiers |= FM_C,
            b'd' => self.simple_selection |= SS_U_D,
            b'f' => {
                self.format_flags |= FF_UF;
                self.unix_f = true;
            }
            // A personality with a -j format of its own makes -j a format.
            b'j' if self.personality.sysv_j.is_some() => self.format_flags |= FF_UJ,
            b'j' => self.format_modifiers |= FM_J,
            b'l' => self.format_flags |= FF_UL,
            b'm' => self.thread_flags |= TF_U_M,
            b'w' => self.w_count += 1,
            // SVR4 MP's -x is Solaris's -y; HP-UX's is a long command line.
            b'x' if self.personality.has(PER_SVR4_X) => self.format_modifiers |= FM_Y,
            b'x' if self.personality.has(PER_HPUX_X) => {
                self.w_count += 2;
                self.unix_f = true;
            }
            b'x' => return usage("must set personality to get -x option"),
            b'y' => self.format_modifiers |= FM_Y,
            b'-' => return usage("embedded '-' among SysV options makes no sense"),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A UNIX option whose argument is `rest` or the next word.
    fn unix_with_argument(&mut self, letter: u8, rest: &[u8]) -> Parsed<()> {
        let missing = match letter {
            b'C' => "list of command names must follow -C",
            b'G' => "list of real groups must follow -G",
            b'O' => "format or sort specification must follow -O",
            b'U' => "list of real users must follow -U",
            b'g' => "list of session leaders OR effective group names must follow -g",
            b'o' => "format specification must follow -o",
            b'p' => "list of process IDs must follow -p",
            b'q' => "List of process IDs must follow -q.",
            b's' => "list of session IDs must follow -s",
            b't' => "list of terminals (pty, tty...) must follow -t",
            b'u' => "list of users must follow -u",
            _ => return usage("unsupported SysV option"),
        };
        let Some(arg) = self.opt_arg(rest) else {
            return usage(missing);
        };
        match letter {
            b'C' => {
                let names = split_list(&arg)?
                    .into_iter()
                    .map(|n| n.as_bytes()[..n.len().min(63)].to_vec())
                    .collect();
                self.select(Criterion::Comm(names));
            }
            b'G' => self.select(Criterion::Rgid(gids(&arg, self.negate)?)),
            b'O' => self.sort_format.push((arg, SortFormatKind::UnixBigO)),
            b'U' => self.select(Criterion::Ruid(uids(&arg, self.negate)?)),
            b'g' => {
                if let Ok(v) = pids(&arg) {
                    self.select(Criterion::Sess(v));
                } else if let Ok(v) = gids(&arg, self.negate) {
                    self.select(Criterion::Egid(v));
                } else {
                    return usage("list of session leaders OR effective group IDs was invalid");
                }
            }
            b'o' => self.sort_format.push((arg, SortFormatKind::UnixO)),
            b'p' => self.select(Criterion::Pid(pids(&arg)?)),
            b'q' => self.selections.push(Selection::Quick(pids(&arg)?)),
            b's' => self.select(Criterion::Sess(pids(&arg)?)),
            b't' => self.select(Criterion::Tty(ttys(&arg)?)),
            _ => self.select(Criterion::Euid(uids(&arg, self.negate)?)),
        }
        Ok(())
    }

    /// A word of BSD options (`aux`, `O p`; procps `parse_bsd_option`).
    fn bsd(&mut self) -> Parsed<()> {
        let a = self.args[self.at].clone();
        // A leading '-' is only possible on the forced-BSD second reading.
        for i in usize::from(a.first() == Some(&b'-'))..a.len() {
            if !self.bsd_flag(a[i])? {
                return self.bsd_with_argument(a[i], &a[i..]);
            }
        }
        Ok(())
    }

    /// A BSD option without an argument; false for a letter that takes one (or none).
    fn bsd_flag(&mut self, letter: u8) -> Parsed<bool> {
        let per = self.personality;
        match letter {
            b'H' => self.thread_flags |= TF_B_H,
            b'L' => self.exclusive("L")?,
            b'M' => self.thread_flags |= TF_B_M,
            b'm' if per.has(PER_OLD_M) => self.format_flags |= FF_LM,
            b'm' if per.has(PER_BSD_M) => {
                self.sort_format.push(("pmem".into(), SortFormatKind::BsdM));
            }
            b'm' => self.thread_flags |= TF_B_M,
            b'S' => self.dead_children = true,
            b'T' => self.select(Criterion::Tty(vec![self.my_tty])),
            b'V' => self.exclusive("V")?,
            b'W' => return usage("obsolete W option not supported (you have a /dev/drum?)"),
            b'X' => self.format_flags |= FF_LX,
            b'Z' => self.format_modifiers |= FM_M,
            b'a' => self.simple_selection |= SS_B_A,
            b'c' => self.bsd_c = true,
            b'e' => self.bsd_e = true,
            b'f' => self.forest = Some(Forest::Bsd),
            b'g' => self.simple_selection |= SS_B_G,
            b'h' => {
                if self.heading.is_some() {
                    return usage("only one heading option may be specified");
                }
                let multi = per.has(PER_BSD_H);
                self.heading = Some(if multi { Heading::Multi } else { Heading::None });
            }
            b'j' => self.format_flags |= FF_BJ,
            b'l' => self.format_flags |= FF_BL,
            b'n' => self.user_is_number = true,
            b'r' => self.running_only = true,
            b's' => self.format_flags |= FF_BS,
            b'u' => self.format_flags |= FF_BU,
            b'v' => self.format_flags |= FF_BV,
            b'w' => self.w_count += 1,
            b'x' => self.simple_selection |= SS_B_X,
            b'-' => return usage("embedded '-' among BSD options makes no sense"),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A BSD option with an argument: `from` is the rest of the word from its letter on (a
    /// pid list starts there), its argument the rest after the letter or the next word.
    fn bsd_with_argument(&mut self, letter: u8, from: &[u8]) -> Parsed<()> {
        if letter.is_ascii_digit() {
            let v = pids(&String::from_utf8_lossy(from))?;
            self.select(Criterion::Pid(v));
            return Ok(());
        }
        let rest = &from[1..];
        if letter == b't' {
            let v = match self.opt_arg(rest) {
                None => vec![self.my_tty],
                Some(arg) => ttys(&arg)?,
            };
            self.select(Criterion::Tty(v));
            return Ok(());
        }
        let missing = match letter {
            b'O' => "format or sort specification must follow O",
            b'U' => "list of users must follow U",
            b'k' => "long sort specification must follow 'k'",
            b'o' => "format specification must follow o",
            b'p' => "list of process IDs must follow p",
            b'q' => "List of process IDs must follow q.",
            _ => return usage("unsupported option (BSD syntax)"),
        };
        let Some(arg) = self.opt_arg(rest) else {
            return usage(missing);
        };
        match letter {
            b'O' => self.sort_format.push((arg, SortFormatKind::BsdBigO)),
            b'U' => self.select(Criterion::Euid(uids(&arg, self.negate)?)),
            b'k' => self.sort_format.push((arg, SortFormatKind::GnuSort)),
            b'o' => self.sort_format.push((arg, SortFormatKind::BsdO)),
            b'p' => self.select(Criterion::Pid(pids(&arg)?)),
            _ => self.selections.push(Selection::Quick(pids(&arg)?)),
        }
        Ok(())
    }

    /// A GNU long option (`--sort=pid`, `--pid 1`; procps `parse_gnu_option`).
    fn gnu(&mut self) -> Parsed<()> {
        let word = self.arg(self.at);
        let s = &word[2..];
        let end = s.find([':', '=']).unwrap_or(s.len());
        if end > 15 {
            return usage("unknown gnu long option");
        }
        let tail = &s[end..];
        let opt = Long {
            name: &s[..end],
            attached: (!tail.is_empty()).then(|| &tail[1..]),
        };
        for read in [
            Parser::long_selection,
            Parser::long_format,
            Parser::long_own,
        ] {
            if read(self, &opt)? {
                return Ok(());
            }
        }
        usage("unknown gnu long option")
    }

    /// procps's grab_gnu_arg: the value after `=` or `:`, or the next argument.
    fn long_value(&mut self, opt: &Long<'_>) -> Option<String> {
        if let Some(v) = opt.attached {
            return (!v.is_empty()).then(|| v.to_string());
        }
        if self.at + 1 >= self.args.len() || self.args[self.at + 1].is_empty() {
            return None;
        }
        self.at += 1;
        Some(self.arg(self.at))
    }

    /// The value of a long option that must have one (`missing`: procps's text when not).
    fn required(&mut self, opt: &Long<'_>, missing: &str) -> Parsed<String> {
        match self.long_value(opt) {
            Some(v) => Ok(v),
            None => usage(missing),
        }
    }

    /// A long option that takes no value, given one.
    fn no_value(opt: &Long<'_>, what: &str) -> Parsed<()> {
        match opt.attached {
            Some(_) => Err(Stop::Usage(format!(
                "option --{what} does not take an argument"
            ))),
            None => Ok(()),
        }
    }

    /// The long options that select; false for another name.
    fn long_selection(&mut self, opt: &Long<'_>) -> Parsed<bool> {
        match opt.name {
            "Group" => {
                let arg = self.required(opt, "list of real groups must follow --Group")?;
                self.select(Criterion::Rgid(gids(&arg, self.negate)?));
            }
            "User" => {
                let arg = self.required(opt, "list of real users must follow --User")?;
                self.select(Criterion::Ruid(uids(&arg, self.negate)?));
            }
            "deselect" => {
                Parser::no_value(opt, "deselect")?;
                self.negate = true;
            }
            "group" => {
                let arg = self.required(opt, "list of effective groups must follow --group")?;
                self.select(Criterion::Egid(gids(&arg, self.negate)?));
            }
            "pid" | "quick-pid" | "ppid" | "sid" => {
                let arg = self.required(
                    opt,
                    match opt.name {
                        "pid" => "list of process IDs must follow --pid",
                        "quick-pid" => "List of process IDs must follow --quick-pid.",
                        "ppid" => "list of process IDs must follow --ppid",
                        _ => "some sid thing(s) must follow --sid",
                    },
                )?;
                let v = pids(&arg)?;
                self.selections.push(match opt.name {
                    "pid" => Selection::Criterion(Criterion::Pid(v)),
                    "quick-pid" => Selection::Quick(v),
                    "ppid" => Selection::Criterion(Criterion::Ppid(v)),
                    _ => Selection::Criterion(Criterion::Sess(v)),
                });
            }
            "tty" => {
                let arg = self.required(opt, "list of ttys must follow --tty")?;
                self.select(Criterion::Tty(ttys(&arg)?));
            }
            "user" => {
                let arg = self.required(opt, "list of effective users must follow --user")?;
                self.select(Criterion::Euid(uids(&arg, self.negate)?));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The long options of the listing's look; false for another name.
    fn long_format(&mut self, opt: &Long<'_>) -> Parsed<bool> {
        let positive = |v: Option<String>| {
            v.and_then(|a| a.parse::<i64>().ok())
                .filter(|&t| t > 0 && t < 2_000_000_000)
        };
        match opt.name {
            "cols" | "columns" | "width" => match positive(self.long_value(opt)) {
                Some(t) => self.screen_cols = Some(t as usize),
                None => {
                    return usage("number of columns must follow --cols, --width, or --columns")
                }
            },
            "rows" | "lines" => {
                if positive(self.long_value(opt)).is_none() {
                    return usage("number of rows must follow --rows or --lines");
                }
            }
            "cumulative" => {
                Parser::no_value(opt, "cumulative")?;
                self.dead_children = true;
            }
            "no-header" | "no-headers" | "no-heading" | "no-headings" | "noheader"
            | "noheaders" | "noheading" | "noheadings" => {
                Parser::no_value(opt, "no-heading")?;
                self.set_heading(Heading::None)?;
            }
            "header" | "headers" | "heading" | "headings" => {
                Parser::no_value(opt, "heading")?;
                self.set_heading(Heading::Multi)?;
            }
            "forest" => {
                Parser::no_value(opt, "forest")?;
                self.forest = Some(Forest::Bsd);
            }
            "format" => {
                let arg = self.required(opt, "format specification must follow --format")?;
                self.sort_format.push((arg, SortFormatKind::GnuFormat));
            }
            "sort" => {
                let arg = self.required(opt, "long sort specification must follow --sort")?;
                self.sort_format.push((arg, SortFormatKind::GnuSort));
            }
            "version" => self.exclusive("--version")?,
            "help" => return Err(Stop::Info),
            "context" => self.format_flags |= FF_FC,
            // procps newer than 4.0.2: a one-byte column separator instead of padding.
            "delimiter" => {
                let arg = self.required(opt, "delimiter character must follow --delimiter")?;
                if arg.len() != 1 {
                    return usage("delimiter must be a single character");
                }
                self.delimiter = Some(arg.as_bytes()[0]);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// At most one heading option.
    fn set_heading(&mut self, heading: Heading) -> Parsed<()> {
        if self.heading.is_some() {
            return usage("only one heading option may be specified");
        }
        self.heading = Some(heading);
        Ok(())
    }

    /// tasksnap's own long options; false for another name.
    fn long_own(&mut self, opt: &Long<'_>) -> Parsed<bool> {
        match opt.name {
            "output" => match self.long_value(opt).as_deref() {
                Some("json") => self.output = Output::Json,
                Some("csv") => self.output = Output::Csv,
                Some("text") => self.output = Output::Text,
                _ => return usage("--output must be followed by text, json or csv"),
            },
            "verbose" => self.verbose = true,
            "backend" => match self.long_value(opt).map(|v| v.parse::<Backend>()) {
                Some(Ok(b)) => self.backend = b,
                _ => return usage("--backend must be followed by auto, bpf or procfs"),
            },
            "replay" => {
                let dir =
                    self.required(opt, "--replay must be followed by a recording's directory")?;
                self.replay = Some(PathBuf::from(dir));
            }
            "at" => {
                let at = self.required(
                    opt,
                    "--at must be followed by a time (RFC 3339, epoch seconds, -10m)",
                )?;
                self.replay_at = Some(at);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Pids after the options (`ps 1 -2 +3`: pids, process groups, sessions).
    fn trailing_pids(&mut self) -> Parsed<()> {
        let (mut pids, mut grps, mut sids) = (Vec::new(), Vec::new(), Vec::new());
        while self.at < self.args.len() {
            let a = self.arg(self.at);
            match a.as_bytes().first() {
                Some(b'-') => grps.push(parse_pid(&a[1..])?),
                Some(b'+') => sids.push(parse_pid(&a[1..])?),
                _ => pids.push(parse_pid(&a)?),
            }
            self.at += 1;
        }
        self.at = self.args.len() - 1;
        if !pids.is_empty() {
            self.select(Criterion::Pid(pids));
        }
        if !grps.is_empty() {
            self.select(Criterion::Pgrp(grps));
        }
        if !sids.is_empty() {
            self.select(Criterion::Sess(sids));
        }
        Ok(())
    }

    /// procps `thread_option_check`: how threads are shown, or the conflict.
    pub fn thread_check(&mut self) -> Parsed<Threads> {
        let t = self.thread_flags;
        if t == 0 {
            return Ok(Threads::Off);
        }
        if self.forest.is_some() {
            return usage("thread display conflicts with forest display");
        }
        if t & TF_B_H != 0 && t & (TF_B_M | TF_U_M) != 0 {
            return usage("thread flags conflict; can't use H with m or -m");
        }
        if t & TF_B_M != 0 && t & TF_U_M != 0 {
            return usage("thread flags conflict; can't use both m and -m");
        }
        if t & TF_U_L != 0 && t & TF_U_T != 0 {
            return usage("thread flags conflict; can't use both -L and -T");
        }
        Ok(if t & (TF_B_M | TF_U_M) != 0 {
            Threads::AfterProcess
        } else if t & TF_B_H != 0 {
            Threads::AsProcesses
        } else {
            Threads::Each
        })
    }

    /// procps's simple-selection table for the selection options given (`None`: every
    /// process, as `ax` with the implied `g`).
    pub fn select_bits(&mut self) -> Parsed<Option<u32>> {
        if self.simple_selection == 0 && !self.prefer_bsd {
            return Ok(Some(0xaa00));
        }
        // For every BSD but SunOS 4, 'g' is implied.
        let v = if !self.personality.has(PER_NO_DEFAULT_G)
            && self.simple_selection & (SS_U_A | SS_U_D) == 0
        {
            self.simple_selection | SS_B_G
        } else {
            self.simple_selection
        };
        Ok(Some(match v {
            x if x == SS_U_A | SS_U_D => 0x3f3f,
            SS_U_A => 0x0303,
            SS_U_D => 0x3333,
            0 => 0x0202,
            SS_B_A => 0x0303,
            SS_B_X => 0x2222,
            x if x == SS_B_X | SS_B_A => 0x3333,
            SS_B_G => 0x0a0a,
            x if x == SS_B_G | SS_B_A => 0x0f0f,
            x if x == SS_B_G | SS_B_X => 0xaaaa,
            x if x == SS_B_G | SS_B_X | SS_B_A => {
                self.all = true;
                self.simple_selection = 0;
                return Ok(None);
            }
            _ => return usage("process selection options conflict"),
        }))
    }
}
