//! procps-ng 4.0 `ps` option syntax: UNIX (`-ef`), BSD (`aux`), GNU (`--sort=pid`) and trailing
//! pids, parsed the way procps's ps/parser.c and ps/sortformat.c do, including their second
//! chance (an argument list that fails as UNIX options is parsed again as BSD ones, which is
//! why `ps -aux` works) and their error texts and exit codes.
//!
//! The result is a [`Settings`]; nothing here reads /proc except the caller's own tty.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::format;
use super::layout::OUTBUF_SIZE;
use super::settings::*;

mod aix;
pub mod personality;

use personality::*;

/// A usage error: the text procps prints and its exit code.
#[derive(Debug)]
pub struct ArgError {
    /// Text for stderr.
    pub message: String,
    /// Exit code.
    pub code: u8,
}

const USAGE_TAIL: &str = "\nUsage:\n ps [options]\n\n Try 'ps --help <simple|list|output|threads|misc|all>'\n  or 'ps --help <s|l|o|t|m|a>'\n for additional help text.\n\nFor more details see ps(1).\n";

// Simple selections (ps/common.h SS_*).
const SS_U_A: u32 = 1;
const SS_U_D: u32 = 2;
const SS_B_X: u32 = 4;
const SS_B_G: u32 = 8;
const SS_B_A: u32 = 16;

// Thread flags (TF_*).
const TF_B_H: u32 = 1;
const TF_B_M: u32 = 2;
const TF_U_M: u32 = 4;
const TF_U_L: u32 = 8;
const TF_U_T: u32 = 16;

// Format flags (FF_*) and modifiers (FM_*).
const FF_UF: u32 = 1;
const FF_UL: u32 = 2;
const FF_BJ: u32 = 4;
const FF_BL: u32 = 8;
const FF_BS: u32 = 16;
const FF_BU: u32 = 32;
const FF_BV: u32 = 64;
const FF_LX: u32 = 128;
const FF_FC: u32 = 256;
const FF_UJ: u32 = 512;
const FF_LM: u32 = 1024;
const FM_C: u32 = 1;
const FM_J: u32 = 2;
const FM_Y: u32 = 4;
const FM_P: u32 = 8;
const FM_M: u32 = 16;
const FM_F: u32 = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sf {
    UnixO,
    UnixBigO,
    BsdO,
    BsdBigO,
    GnuFormat,
    GnuSort,
    /// BSD `m` under the bsd personality: a sort by %MEM that does not count as `--sort`.
    BsdM,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heading {
    None,
    Multi,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Sel {
    Crit(Criterion),
    Quick(Vec<i32>),
}

/// Parser state, as procps's globals.
#[derive(Debug)]
struct P {
    args: Vec<Vec<u8>>,
    at: usize,
    force_bsd: bool,
    prefer_bsd: bool,
    all: bool,
    simple: u32,
    negate: bool,
    running_only: bool,
    thread: u32,
    forest: Option<Forest>,
    format_flags: u32,
    modifiers: u32,
    sf: Vec<(String, Sf)>,
    sel: Vec<Sel>,
    w_count: u32,
    screen_cols: Option<usize>,
    heading: Option<Heading>,
    dead_children: bool,
    user_is_number: bool,
    unix_f: bool,
    bsd_c: bool,
    backend: Backend,
    output: Output,
    verbose: bool,
    my_tty: u32,
    replay: Option<PathBuf>,
    replay_at: Option<String>,
    /// PS_PERSONALITY / CMD_ENV.
    per: Personality,
    /// BSD `e`: the environment after the command.
    bsd_e: bool,
    /// `--delimiter C` (procps newer than 4.0.2).
    delimiter: Option<u8>,
    /// procps's static `errbuf` in format_parse: the first "unknown user-defined format
    /// specifier" message of the run is the one every later unknown specifier reports,
    /// even in the second (BSD) pass.
    errbuf: std::rc::Rc<std::cell::RefCell<Option<String>>>,
}

type R<T> = Result<T, String>;

fn err<T>(s: &str) -> R<T> {
    Err(s.to_string())
}

/// strtoul(s, &end, 0) accepting the whole string: decimal, 0x hex or 0 octal.
fn strtoul(s: &str) -> Option<u64> {
    let t = s.trim_start();
    let t = t.strip_prefix('+').unwrap_or(t);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if t.len() > 1 && t.starts_with('0') {
        return u64::from_str_radix(&t[1..], 8).ok();
    }
    t.parse().ok()
}

fn split_list(arg: &str) -> R<Vec<&str>> {
    // procps: items separated by ' ', ',' or '\t'; empty items are an error.
    let items: Vec<&str> = arg.split([' ', ',', '\t']).collect();
    if items.iter().any(|i| i.is_empty()) {
        return err("improper list");
    }
    Ok(items)
}

fn parse_pid(s: &str) -> R<i32> {
    let Some(n) = strtoul(s) else {
        return err("process ID list syntax error");
    };
    if !(1..=0x7fff_ffff).contains(&n) {
        return err("process ID out of range");
    }
    Ok(n as i32)
}

fn lookup_gid(name: &str) -> Option<u32> {
    tasksnap_sys::users::gid_by_name(name)
}

impl P {
    fn new(args: Vec<Vec<u8>>, force_bsd: bool, my_tty: u32, per: Personality) -> P {
        P {
            args,
            at: 0,
            force_bsd,
            prefer_bsd: force_bsd || per.prefer_bsd,
            per,
            bsd_e: false,
            delimiter: None,
            errbuf: Default::default(),
            all: false,
            simple: 0,
            negate: false,
            running_only: false,
            thread: 0,
            forest: None,
            format_flags: 0,
            modifiers: 0,
            sf: Vec::new(),
            sel: Vec::new(),
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

    fn parse_uid(&self, s: &str) -> R<u32> {
        let n = match strtoul(s) {
            Some(n) => n,
            None => match crate::input::uid_by_name(s) {
                Some(u) => u64::from(u),
                None if self.negate => u64::from(u32::MAX),
                None => return err("user name does not exist"),
            },
        };
        if !self.negate && n > 0xffff_fffe {
            return err("user ID out of range");
        }
        Ok(n as u32)
    }

    fn parse_gid(&self, s: &str) -> R<u32> {
        let n = match strtoul(s) {
            Some(n) => n,
            None => match lookup_gid(s) {
                Some(g) => u64::from(g),
                None if self.negate => u64::from(u32::MAX),
                None => return err("group name does not exist"),
            },
        };
        if !self.negate && n > 0xffff_fffe {
            return err("group ID out of range");
        }
        Ok(n as u32)
    }

    fn pids(&self, arg: &str) -> R<Vec<i32>> {
        split_list(arg)?.into_iter().map(parse_pid).collect()
    }

    fn uids(&self, arg: &str) -> R<Vec<u32>> {
        split_list(arg)?
            .into_iter()
            .map(|s| self.parse_uid(s))
            .collect()
    }

    fn gids(&self, arg: &str) -> R<Vec<u32>> {
        split_list(arg)?
            .into_iter()
            .map(|s| self.parse_gid(s))
            .collect()
    }

    fn ttys(&self, arg: &str) -> R<Vec<u32>> {
        use tasksnap_collect::NamedTty;
        let host = tasksnap_collect::Host::from_env();
        let mut out = Vec::new();
        for s in split_list(arg)? {
            match host.tty_named(s) {
                NamedTty::Device(rdev) => out.push(rdev),
                NamedTty::NotATerminal => return err("list member was not a TTY"),
                NamedTty::Missing { .. } if s == "-" || s == "?" => out.push(0),
                NamedTty::Missing {
                    in_working_dir: true,
                } => out.push(0),
                NamedTty::Missing { .. } => return err("TTY could not be found"),
            }
        }
        Ok(out)
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
    fn exclusive(&self, opt: &str, what: &str) -> R<()> {
        if self.args.len() != 1 || self.args[0] != opt.as_bytes() {
            return Err(format!("the option is exclusive: {opt}"));
        }
        Err(format!("\u{0}{what}"))
    }

    fn crit(&mut self, c: Criterion) {
        self.sel.push(Sel::Crit(c));
    }

    fn sysv(&mut self) -> R<()> {
        let a = self.args[self.at].clone();
        let mut i = 1;
        while i < a.len() {
            let rest = &a[i + 1..];
            match a[i] {
                b'A' | b'e' => self.all = true,
                b'C' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of command names must follow -C");
                    };
                    let names = split_list(&arg)?
                        .into_iter()
                        .map(|n| n.as_bytes()[..n.len().min(63)].to_vec())
                        .collect();
                    self.crit(Criterion::Comm(names));
                    return Ok(());
                }
                b'F' => {
                    self.modifiers |= FM_F;
                    self.format_flags |= FF_UF;
                    self.unix_f = true;
                }
                b'G' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of real groups must follow -G");
                    };
                    let v = self.gids(&arg)?;
                    self.crit(Criterion::Rgid(v));
                    return Ok(());
                }
                b'H' => self.forest = Some(Forest::Unix),
                b'L' => self.thread |= TF_U_L,
                b'M' | b'Z' => self.modifiers |= FM_M,
                b'N' => self.negate = true,
                b'O' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("format or sort specification must follow -O");
                    };
                    self.sf.push((arg, Sf::UnixBigO));
                    return Ok(());
                }
                b'P' => self.modifiers |= FM_P,
                b'T' => self.thread |= TF_U_T,
                b'U' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of real users must follow -U");
                    };
                    let v = self.uids(&arg)?;
                    self.crit(Criterion::Ruid(v));
                    return Ok(());
                }
                b'V' => return self.exclusive("-V", "version"),
                b'a' => self.simple |= SS_U_A,
                b'c' => self.modifiers |= FM_C,
                b'd' => self.simple |= SS_U_D,
                b'f' => {
                    self.format_flags |= FF_UF;
                    self.unix_f = true;
                }
                b'g' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err(
                            "list of session leaders OR effective group names must follow -g",
                        );
                    };
                    if let Ok(v) = self.pids(&arg) {
                        self.crit(Criterion::Sess(v));
                    } else if let Ok(v) = self.gids(&arg) {
                        self.crit(Criterion::Egid(v));
                    } else {
                        return err("list of session leaders OR effective group IDs was invalid");
                    }
                    return Ok(());
                }
                // A personality with a -j format of its own makes -j a format.
                b'j' if self.per.sysv_j.is_some() => self.format_flags |= FF_UJ,
                b'j' => self.modifiers |= FM_J,
                b'l' => self.format_flags |= FF_UL,
                b'm' => self.thread |= TF_U_M,
                b'o' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("format specification must follow -o");
                    };
                    self.sf.push((arg, Sf::UnixO));
                    return Ok(());
                }
                b'p' | b'q' | b's' => {
                    let which = a[i];
                    let Some(arg) = self.opt_arg(rest) else {
                        return err(match which {
                            b'p' => "list of process IDs must follow -p",
                            b'q' => "List of process IDs must follow -q.",
                            _ => "list of session IDs must follow -s",
                        });
                    };
                    let v = self.pids(&arg)?;
                    self.sel.push(match which {
                        b'p' => Sel::Crit(Criterion::Pid(v)),
                        b'q' => Sel::Quick(v),
                        _ => Sel::Crit(Criterion::Sess(v)),
                    });
                    return Ok(());
                }
                b't' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of terminals (pty, tty...) must follow -t");
                    };
                    let v = self.ttys(&arg)?;
                    self.crit(Criterion::Tty(v));
                    return Ok(());
                }
                b'u' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of users must follow -u");
                    };
                    let v = self.uids(&arg)?;
                    self.crit(Criterion::Euid(v));
                    return Ok(());
                }
                b'w' => self.w_count += 1,
                // SVR4 MP's -x is Solaris's -y; HP-UX's is a long command line.
                b'x' if self.per.has(PER_SVR4_X) => self.modifiers |= FM_Y,
                b'x' if self.per.has(PER_HPUX_X) => {
                    self.w_count += 2;
                    self.unix_f = true;
                }
                b'x' => return err("must set personality to get -x option"),
                b'y' => self.modifiers |= FM_Y,
                b'-' => return err("embedded '-' among SysV options makes no sense"),
                _ => return err("unsupported SysV option"),
            }
            i += 1;
        }
        Ok(())
    }

    fn bsd(&mut self) -> R<()> {
        let a = self.args[self.at].clone();
        // A leading '-' is only possible on the forced-BSD second pass.
        let mut i = usize::from(a.first() == Some(&b'-'));
        while i < a.len() {
            let rest = &a[i + 1..];
            match a[i] {
                b'0'..=b'9' => {
                    let arg = String::from_utf8_lossy(&a[i..]).into_owned();
                    let v = self.pids(&arg)?;
                    self.crit(Criterion::Pid(v));
                    return Ok(());
                }
                b'H' => self.thread |= TF_B_H,
                b'L' => return self.exclusive("L", "list"),
                b'M' => self.thread |= TF_B_M,
                b'm' if self.per.has(PER_OLD_M) => self.format_flags |= FF_LM,
                b'm' if self.per.has(PER_BSD_M) => self.sf.push(("pmem".into(), Sf::BsdM)),
                b'm' => self.thread |= TF_B_M,
                b'O' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("format or sort specification must follow O");
                    };
                    self.sf.push((arg, Sf::BsdBigO));
                    return Ok(());
                }
                b'S' => self.dead_children = true,
                b'T' => {
                    let t = self.my_tty;
                    self.crit(Criterion::Tty(vec![t]));
                }
                b'U' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("list of users must follow U");
                    };
                    let v = self.uids(&arg)?;
                    self.crit(Criterion::Euid(v));
                    return Ok(());
                }
                b'V' => return self.exclusive("V", "version"),
                b'W' => return err("obsolete W option not supported (you have a /dev/drum?)"),
                b'X' => self.format_flags |= FF_LX,
                b'Z' => self.modifiers |= FM_M,
                b'a' => self.simple |= SS_B_A,
                b'c' => self.bsd_c = true,
                b'e' => self.bsd_e = true,
                b'f' => self.forest = Some(Forest::Bsd),
                b'g' => self.simple |= SS_B_G,
                b'h' => {
                    if self.heading.is_some() {
                        return err("only one heading option may be specified");
                    }
                    self.heading = Some(if self.per.has(PER_BSD_H) {
                        Heading::Multi
                    } else {
                        Heading::None
                    });
                }
                b'j' => self.format_flags |= FF_BJ,
                b'k' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("long sort specification must follow 'k'");
                    };
                    self.sf.push((arg, Sf::GnuSort));
                    return Ok(());
                }
                b'l' => self.format_flags |= FF_BL,
                b'n' => self.user_is_number = true,
                b'o' => {
                    let Some(arg) = self.opt_arg(rest) else {
                        return err("format specification must follow o");
                    };
                    self.sf.push((arg, Sf::BsdO));
                    return Ok(());
                }
                b'p' | b'q' => {
                    let which = a[i];
                    let Some(arg) = self.opt_arg(rest) else {
                        return err(if which == b'p' {
                            "list of process IDs must follow p"
                        } else {
                            "List of process IDs must follow q."
                        });
                    };
                    let v = self.pids(&arg)?;
                    self.sel.push(if which == b'p' {
                        Sel::Crit(Criterion::Pid(v))
                    } else {
                        Sel::Quick(v)
                    });
                    return Ok(());
                }
                b'r' => self.running_only = true,
                b's' => self.format_flags |= FF_BS,
                b't' => {
                    match self.opt_arg(rest) {
                        None => {
                            let t = self.my_tty;
                            self.crit(Criterion::Tty(vec![t]));
                        }
                        Some(arg) => {
                            let v = self.ttys(&arg)?;
                            self.crit(Criterion::Tty(v));
                        }
                    }
                    return Ok(());
                }
                b'u' => self.format_flags |= FF_BU,
                b'v' => self.format_flags |= FF_BV,
                b'w' => self.w_count += 1,
                b'x' => self.simple |= SS_B_X,
                b'-' => return err("embedded '-' among BSD options makes no sense"),
                _ => return err("unsupported option (BSD syntax)"),
            }
            i += 1;
        }
        Ok(())
    }

    fn gnu(&mut self) -> R<()> {
        let a = self.arg(self.at);
        let s = &a[2..];
        let sl = s.find([':', '=']).unwrap_or(s.len());
        if sl > 15 {
            return err("unknown gnu long option");
        }
        let name = &s[..sl];
        let tail = &s[sl..];
        let has_tail = !tail.is_empty();
        // grab_gnu_arg: after '=' or ':', or the next argument.
        let grab = |p: &mut P| -> Option<String> {
            if has_tail {
                let v = &tail[1..];
                return (!v.is_empty()).then(|| v.to_string());
            }
            if p.at + 1 >= p.args.len() || p.args[p.at + 1].is_empty() {
                return None;
            }
            p.at += 1;
            Some(p.arg(p.at))
        };
        let no_arg = |what: &str| -> R<()> {
            if has_tail {
                Err(format!("option --{what} does not take an argument"))
            } else {
                Ok(())
            }
        };
        match name {
            "Group" => {
                let Some(arg) = grab(self) else {
                    return err("list of real groups must follow --Group");
                };
                let v = self.gids(&arg)?;
                self.crit(Criterion::Rgid(v));
            }
            "User" => {
                let Some(arg) = grab(self) else {
                    return err("list of real users must follow --User");
                };
                let v = self.uids(&arg)?;
                self.crit(Criterion::Ruid(v));
            }
            "cols" | "columns" | "width" => {
                let v = grab(self).and_then(|a| a.parse::<i64>().ok());
                match v {
                    Some(t) if t > 0 && t < 2_000_000_000 => self.screen_cols = Some(t as usize),
                    _ => return err("number of columns must follow --cols, --width, or --columns"),
                }
            }
            "cumulative" => {
                no_arg("cumulative")?;
                self.dead_children = true;
            }
            "deselect" => {
                no_arg("deselect")?;
                self.negate = true;
            }
            "no-header" | "no-headers" | "no-heading" | "no-headings" | "noheader"
            | "noheaders" | "noheading" | "noheadings" => {
                no_arg("no-heading")?;
                if self.heading.is_some() {
                    return err("only one heading option may be specified");
                }
                self.heading = Some(Heading::None);
            }
            "header" | "headers" | "heading" | "headings" => {
                no_arg("heading")?;
                if self.heading.is_some() {
                    return err("only one heading option may be specified");
                }
                self.heading = Some(Heading::Multi);
            }
            "forest" => {
                no_arg("forest")?;
                self.forest = Some(Forest::Bsd);
            }
            "format" => {
                let Some(arg) = grab(self) else {
                    return err("format specification must follow --format");
                };
                self.sf.push((arg, Sf::GnuFormat));
            }
            "group" => {
                let Some(arg) = grab(self) else {
                    return err("list of effective groups must follow --group");
                };
                let v = self.gids(&arg)?;
                self.crit(Criterion::Egid(v));
            }
            "pid" | "quick-pid" | "ppid" | "sid" => {
                let Some(arg) = grab(self) else {
                    return err(match name {
                        "pid" => "list of process IDs must follow --pid",
                        "quick-pid" => "List of process IDs must follow --quick-pid.",
                        "ppid" => "list of process IDs must follow --ppid",
                        _ => "some sid thing(s) must follow --sid",
                    });
                };
                let v = self.pids(&arg)?;
                self.sel.push(match name {
                    "pid" => Sel::Crit(Criterion::Pid(v)),
                    "quick-pid" => Sel::Quick(v),
                    "ppid" => Sel::Crit(Criterion::Ppid(v)),
                    _ => Sel::Crit(Criterion::Sess(v)),
                });
            }
            "rows" | "lines" => {
                let v = grab(self).and_then(|a| a.parse::<i64>().ok());
                if !matches!(v, Some(t) if t > 0 && t < 2_000_000_000) {
                    return err("number of rows must follow --rows or --lines");
                }
            }
            "sort" => {
                let Some(arg) = grab(self) else {
                    return err("long sort specification must follow --sort");
                };
                self.sf.push((arg, Sf::GnuSort));
            }
            "tty" => {
                let Some(arg) = grab(self) else {
                    return err("list of ttys must follow --tty");
                };
                let v = self.ttys(&arg)?;
                self.crit(Criterion::Tty(v));
            }
            "user" => {
                let Some(arg) = grab(self) else {
                    return err("list of effective users must follow --user");
                };
                let v = self.uids(&arg)?;
                self.crit(Criterion::Euid(v));
            }
            "version" => return self.exclusive("--version", "version"),
            "help" => return Err("\u{0}help".into()),
            "context" => self.format_flags |= FF_FC,
            // procps newer than 4.0.2: a one-byte column separator instead of padding.
            "delimiter" => {
                let Some(arg) = grab(self) else {
                    return err("delimiter character must follow --delimiter");
                };
                if arg.len() != 1 {
                    return err("delimiter must be a single character");
                }
                self.delimiter = Some(arg.as_bytes()[0]);
            }
            // tasksnap extensions.
            "output" => match grab(self).as_deref() {
                Some("json") => self.output = Output::Json,
                Some("csv") => self.output = Output::Csv,
                Some("text") => self.output = Output::Text,
                _ => return err("--output must be followed by text, json or csv"),
            },
            "verbose" => self.verbose = true,
            "backend" => match grab(self).map(|v| v.parse::<Backend>()) {
                Some(Ok(b)) => self.backend = b,
                _ => return err("--backend must be followed by auto, bpf or procfs"),
            },
            "replay" => match grab(self) {
                Some(dir) => self.replay = Some(PathBuf::from(dir)),
                None => return err("--replay must be followed by a recording's directory"),
            },
            "at" => match grab(self) {
                Some(t) => self.replay_at = Some(t),
                None => {
                    return err("--at must be followed by a time (RFC 3339, epoch seconds, -10m)")
                }
            },
            _ => return err("unknown gnu long option"),
        }
        Ok(())
    }

    fn trailing_pids(&mut self) -> R<()> {
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
            self.crit(Criterion::Pid(pids));
        }
        if !grps.is_empty() {
            self.crit(Criterion::Pgrp(grps));
        }
        if !sids.is_empty() {
            self.crit(Criterion::Sess(sids));
        }
        Ok(())
    }

    fn parse_all(&mut self) -> R<()> {
        self.at = 0;
        while self.at < self.args.len() {
            let a = &self.args[self.at];
            let c0 = a.first().copied().unwrap_or(0);
            let c1 = a.get(1).copied().unwrap_or(0);
            let c2 = a.get(2).copied().unwrap_or(0);
            if c0.is_ascii_alphabetic() {
                if self.force_bsd && !self.per.has(PER_FORCE_BSD) {
                    // procps: on the second pass only dash words are re-read as BSD.
                    return err("way bad");
                }
                self.prefer_bsd = true;
                self.bsd()?;
            } else if c0.is_ascii_digit() || c0 == b'+' {
                self.prefer_bsd = true;
                self.trailing_pids()?;
            } else if c0 != b'-' {
                return err("garbage option");
            } else if c1.is_ascii_alphabetic() {
                if self.force_bsd {
                    self.prefer_bsd = true;
                    self.bsd()?;
                } else {
                    self.sysv()?;
                }
            } else if c1.is_ascii_digit() {
                self.prefer_bsd = true;
                self.trailing_pids()?;
            } else if c1 == b'-' && c2.is_ascii_alphabetic() {
                self.gnu()?;
            } else {
                return err("garbage option");
            }
            self.at += 1;
        }
        Ok(())
    }

    fn thread_check(&mut self) -> R<Threads> {
        let t = self.thread;
        if t == 0 {
            return Ok(Threads::Off);
        }
        if self.forest.is_some() {
            return err("thread display conflicts with forest display");
        }
        if t & TF_B_H != 0 && t & (TF_B_M | TF_U_M) != 0 {
            return err("thread flags conflict; can't use H with m or -m");
        }
        if t & TF_B_M != 0 && t & TF_U_M != 0 {
            return err("thread flags conflict; can't use both m and -m");
        }
        if t & TF_U_L != 0 && t & TF_U_T != 0 {
            return err("thread flags conflict; can't use both -L and -T");
        }
        Ok(if t & (TF_B_M | TF_U_M) != 0 {
            Threads::AfterProcess
        } else if t & TF_B_H != 0 {
            Threads::AsProcesses
        } else {
            Threads::Each
        })
    }

    fn select_bits(&mut self) -> R<Option<u32>> {
        if self.simple == 0 && !self.prefer_bsd {
            return Ok(Some(0xaa00));
        }
        // For every BSD but SunOS 4, 'g' is implied.
        let v = if !self.per.has(PER_NO_DEFAULT_G) && self.simple & (SS_U_A | SS_U_D) == 0 {
            self.simple | SS_B_G
        } else {
            self.simple
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
                self.simple = 0;
                return Ok(None);
            }
            _ => return err("process selection options conflict"),
        }))
    }
}

/// procps's `errbuf` (see [`P::errbuf`]).
type ErrBuf = std::cell::RefCell<Option<String>>;

/// One `-o` list (procps format_parse): specs with optional `=header` and `:width`. A list
/// that fails and holds a `%` is read again as AIX descriptors; what that gives is added to
/// the columns parsed before the failing item (procps leaves those on its list).
fn format_parse(arg: &str, errbuf: &ErrBuf) -> R<Vec<ColumnReq>> {
    match format_items(arg, errbuf) {
        Ok(cols) => Ok(cols),
        Err((mut partial, e)) => {
            if !arg.contains('%') {
                return Err(e);
            }
            partial.extend(aix::parse(arg)?);
            Ok(partial)
        }
    }
}

/// [`format_parse`] without the AIX retry: on failure, the columns before the failing item
/// and the error.
fn format_items(arg: &str, errbuf: &ErrBuf) -> Result<Vec<ColumnReq>, (Vec<ColumnReq>, String)> {
    let err = |out: &mut Vec<ColumnReq>, e: &str| Err((std::mem::take(out), e.to_string()));
    let seps = [' ', ',', '\t', '\n'];
    // Count items; one trailing separator is allowed.
    let mut items = 0;
    let mut need = true;
    let bytes = arg.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        if seps.contains(&(c as char)) {
            if need {
                return err(&mut Vec::new(), "improper format list");
            }
            need = true;
            let _ = i;
        } else {
            if need {
                items += 1;
            }
            need = false;
        }
    }
    if items == 0 {
        return err(&mut Vec::new(), "empty format list");
    }
    let mut walk: &str = if need { &arg[..arg.len() - 1] } else { arg };
    let mut out = Vec::new();
    while items > 0 {
        items -= 1;
        let (item, rest) = if items > 0 {
            match walk.find(seps) {
                Some(p) => (&walk[..p], &walk[p + 1..]),
                None => (walk, ""),
            }
        } else {
            (walk, "")
        };
        walk = rest;
        let (spec, header) = match item.find('=') {
            Some(p) => (&item[..p], Some(item[p + 1..].to_string())),
            None => (item, None),
        };
        let (spec, width) = match spec.find(':') {
            Some(p) => {
                let w = &spec[p + 1..];
                let bad = "column widths must be unsigned decimal numbers";
                if w.is_empty() || w.starts_with('0') || !w.bytes().all(|c| c.is_ascii_digit()) {
                    return err(&mut out, bad);
                }
                let Ok(n) = w.parse::<usize>() else {
                    return err(&mut out, bad);
                };
                (&spec[..p], Some(n))
            }
            None => (spec, None),
        };
        if format::find(spec).is_some() {
            out.push(ColumnReq {
                name: spec.to_string(),
                header,
                width,
            });
        } else if let Some(list) = format::macro_list(spec) {
            if width.is_some() {
                return err(
                    &mut out,
                    "can not set width for a macro (multi-column) format specifier",
                );
            }
            for name in list.split(',') {
                out.push(ColumnReq {
                    name: name.to_string(),
                    header: header.clone(),
                    width: None,
                });
            }
        } else {
            let msg = errbuf
                .borrow_mut()
                .get_or_insert_with(|| format!("unknown user-defined format specifier \"{spec}\""))
                .clone();
            return err(&mut out, &msg);
        }
    }
    Ok(out)
}

fn sort_parse(arg: &str) -> R<Vec<SortKey>> {
    let seps = [' ', ',', '\t', '\n'];
    let arg = arg.strip_suffix(|c: char| seps.contains(&c)).unwrap_or(arg);
    if arg.is_empty() {
        return err("empty sort list");
    }
    let mut out = Vec::new();
    for item in arg.split(seps) {
        if item.is_empty() {
            return err("improper sort list");
        }
        let (name, reverse) = match item.as_bytes()[0] {
            b'-' => (&item[1..], true),
            b'+' => (&item[1..], false),
            _ => (item, false),
        };
        if format::find(name).is_none() && !ALWAYS_INERT.contains(&name) {
            return err("unknown sort specifier");
        }
        out.push(SortKey {
            name: name.to_string(),
            reverse,
        });
    }
    Ok(out)
}

fn specs(list: &str) -> Vec<ColumnReq> {
    list.split(',')
        .map(|n| ColumnReq {
            name: n.to_string(),
            header: None,
            width: None,
        })
        .collect()
}

fn find_header(cols: &[ColumnReq], header: &str) -> Option<usize> {
    cols.iter().position(|c| {
        let h = match &c.header {
            Some(h) => h.as_str(),
            None => format::find(&c.name).map_or("", |s| s.head),
        };
        h == header
    })
}

fn add_after(cols: &mut Vec<ColumnReq>, header: &str, name: &str) -> bool {
    match find_header(cols, header) {
        Some(i) => {
            cols.insert(i + 1, specs(name).remove(0));
            true
        }
        None => false,
    }
}

fn delete(cols: &mut Vec<ColumnReq>, header: &str) -> bool {
    match find_header(cols, header) {
        Some(i) => {
            cols.remove(i);
            true
        }
        None => false,
    }
}

impl P {
    /// procps generate_sysv_list: the default UNIX formats (-f, -l, -F, -j, -L, -T, -y, -c).
    fn sysv_list(&self) -> R<Vec<ColumnReq>> {
        let (ff, fm, tf) = (self.format_flags, self.modifiers, self.thread);
        if fm & FM_Y != 0 && ff & FF_UL == 0 {
            return err("modifier -y without format -l makes no sense");
        }
        let mut v: Vec<&str> = Vec::new();
        if fm & FM_M != 0 {
            v.push("label");
        }
        if ff & FF_UL != 0 {
            if fm & FM_Y == 0 {
                v.push("f");
            }
            v.push("s");
        }
        if ff & FF_UF != 0 {
            v.push(if self.per.has(PER_SANE_USER) {
                "user"
            } else {
                "uid_hack"
            });
        } else if ff & FF_UL != 0 {
            v.push("uid");
        }
        v.push("pid");
        if tf & TF_U_T != 0 {
            v.push("spid");
        }
        if ff & (FF_UF | FF_UL) != 0 {
            v.push("ppid");
        }
        if fm & FM_J != 0 {
            v.push("pgid");
            v.push("sid");
        }
        if tf & TF_U_L != 0 {
            v.push("lwp");
        }
        if fm & FM_P != 0 {
            v.push("psr");
        }
        if ff & (FF_UF | FF_UL) != 0 && fm & FM_C == 0 {
            v.push("c");
        }
        if tf & TF_U_L != 0 && ff & FF_UF != 0 {
            v.push("nlwp");
        }
        if fm & FM_C != 0 {
            v.push("class");
            v.push("pri");
        } else if ff & FF_UL != 0 {
            v.push(if self.per.has(PER_IRIX_L) {
                "priority"
            } else {
                "opri"
            });
            v.push("ni");
        }
        if ff & FF_UL != 0 {
            v.push(if fm & FM_Y != 0 {
                "rss"
            } else if self.per.has(PER_ZAP_ADDR | PER_IRIX_L) {
                "sgi_p"
            } else {
                "addr_1"
            });
        }
        if fm & FM_F != 0 || ff & FF_UL != 0 {
            v.push("sz");
        }
        // IRIX shows SZ:RSS.
        if ff & FF_UL != 0 && fm & FM_Y == 0 && self.per.has(PER_IRIX_L) {
            v.push(":");
            v.push("sgi_rss");
        }
        if ff & FF_UL != 0 {
            v.push("wchan");
        }
        if fm & FM_F != 0 {
            if !(ff & FF_UL != 0 && fm & FM_Y != 0) {
                v.push("rss");
            }
            if fm & FM_P == 0 {
                v.push("psr");
            }
        }
        if ff & FF_UF != 0 {
            v.push("stime");
        }
        v.push("tname");
        if self.prefer_bsd {
            if ff & FF_UL == 0 {
                v.push("stat");
            }
            v.push("bsdtime");
            v.push(if ff != 0 { "cmd" } else { "args" });
        } else {
            v.push("time");
            v.push(if ff & FF_UF != 0 { "cmd" } else { "ucmd" });
        }
        Ok(v.into_iter()
            .map(|n| match n {
                ":" => aix::text(":"),
                _ => specs(n).remove(0),
            })
            .collect())
    }

    /// procps process_sf_options: the final column and sort lists.
    fn sf_options(&mut self) -> R<(Vec<ColumnReq>, Vec<SortKey>)> {
        let (cols, sort) = self.sf_lists()?;
        // Keys procps keeps but that sort nothing (see `inert_sort`).
        let sort = sort
            .into_iter()
            .map(|k| {
                if inert_sort(&k.name, &cols, &sort_names(&self.sf)) {
                    SortKey {
                        name: String::new(),
                        reverse: k.reverse,
                    }
                } else {
                    k
                }
            })
            .collect();
        // Every specifier a format or macro named must be one tasksnap prints.
        if let Some(c) = cols
            .iter()
            .find(|c| !c.name.is_empty() && format::find(&c.name).is_none())
        {
            // Not a usage error: no second (BSD) reading of the options.
            return Err(format!(
                "\u{0}error: tasksnap does not implement the \"{}\" column yet\n",
                c.name
            ));
        }
        Ok((cols, sort))
    }

    fn sf_lists(&mut self) -> R<(Vec<ColumnReq>, Vec<SortKey>)> {
        let mut cols: Vec<ColumnReq> = Vec::new();
        let mut sort: Vec<SortKey> = Vec::new();
        let mut parsed_format = false;
        let mut parsed_sort = false;
        let have_gnu_sort = self.sf.iter().any(|(_, k)| *k == Sf::GnuSort);
        let errbuf = self.errbuf.clone();
        for (arg, kind) in self.sf.clone() {
            match kind {
                Sf::UnixO | Sf::BsdO | Sf::GnuFormat => {
                    cols.extend(format_parse(&arg, &errbuf)?);
                    parsed_format = true;
                }
                Sf::UnixBigO => {
                    if parsed_format {
                        return err("option -O can not follow other format options");
                    }
                    cols.extend(specs("pid"));
                    cols.extend(format_parse(&arg, &errbuf)?);
                    cols.extend(specs("state,tname,time,command"));
                    parsed_format = true;
                }
                Sf::BsdBigO => {
                    // BSD O is a short sort code list when it reads as one, else a format.
                    let as_sort = if have_gnu_sort || parsed_sort {
                        Err("multiple sort options".to_string())
                    } else {
                        verify_short_sort(&arg, self.forest.is_some())
                    };
                    let why = match as_sort {
                        Ok(()) => {
                            sort.extend(short_sort_parse(&arg));
                            parsed_sort = true;
                            continue;
                        }
                        Err(e) => e,
                    };
                    if parsed_format {
                        return err("option O is neither first format nor sort order");
                    }
                    // The format's own error is not what procps reports.
                    let Ok(list) = format_parse(&arg, &errbuf) else {
                        return Err(why);
                    };
                    cols.extend(specs("pid"));
                    cols.extend(list);
                    cols.extend(specs("state,tname,cputime,comm"));
                    parsed_format = true;
                }
                Sf::GnuSort | Sf::BsdM => {
                    if parsed_sort {
                        return err("multiple sort options");
                    }
                    sort = sort_parse(&arg)?;
                    parsed_sort = true;
                }
            }
        }
        if self.format_flags == 0 && self.modifiers == 0 && cols.is_empty() {
            if let Ok(env) = std::env::var("PS_FORMAT") {
                if !env.is_empty() {
                    match format_parse(&env, &errbuf) {
                        Ok(c) => return Ok((c, sort)),
                        Err(e) => warn!("warning: $PS_FORMAT ignored. ({e})"),
                    }
                }
            }
        }
        if !cols.is_empty() {
            if self.format_flags != 0 {
                return err("conflicting format options");
            }
            if self.modifiers != 0 {
                return err("can not use output modifiers with user-defined output");
            }
            return Ok((cols, sort));
        }
        let per = self.per;
        let spec = match self.format_flags {
            0 => None,
            x if x == FF_UF | FF_UL => per.sysv_fl,
            FF_UF => per.sysv_f,
            FF_UL => per.sysv_l,
            FF_UJ => per.sysv_j,
            x if x == FF_UJ | FF_UL => Some("RD_lj"),
            x if x == FF_UJ | FF_UF => Some("RD_fj"),
            FF_BJ => Some(per.bsd_j),
            FF_BL => Some(per.bsd_l),
            FF_BS => Some(per.bsd_s),
            FF_BU => Some(per.bsd_u),
            FF_BV => Some(per.bsd_v),
            FF_LX => Some("OL_X"),
            FF_LM => Some("OL_m"),
            FF_FC => Some("FLASK_context"),
            _ => return err("conflicting format options"),
        };
        let Some(spec) = spec else {
            return Ok((self.sysv_list()?, sort));
        };
        let mut cols: Vec<ColumnReq> = specs(format::macro_list(spec).unwrap_or(spec));
        let fm = self.modifiers;
        if fm & FM_J != 0 {
            if !add_after(&mut cols, "PPID", "pgid") && !add_after(&mut cols, "PID", "pgid") {
                return err("internal error: no PID or PPID for -j option");
            }
            if !add_after(&mut cols, "PGID", "sid") {
                return err("lost my PGID");
            }
        }
        if fm & FM_Y != 0 {
            delete(&mut cols, "F");
            if add_after(&mut cols, "ADDR", "rss") {
                delete(&mut cols, "ADDR");
            }
        }
        if fm & FM_C != 0 {
            for h in ["%CPU", "CPU", "CP", "C", "NI"] {
                delete(&mut cols, h);
            }
            if !add_after(&mut cols, "PRI", "class") {
                return err("internal error: no PRI for -c option");
            }
            delete(&mut cols, "PRI");
            if !add_after(&mut cols, "CLS", "pri") {
                return err("lost my CLS");
            }
        }
        if self.thread & TF_U_T != 0 {
            add_after(&mut cols, "PID", "spid");
        }
        if self.thread & TF_U_L != 0 {
            let _ = ["SID", "SESS", "PGID", "PGRP", "PPID", "PID"]
                .iter()
                .any(|h| add_after(&mut cols, h, "lwp"));
            add_after(&mut cols, "%CPU", "nlwp");
        }
        if fm & FM_M != 0 {
            cols.insert(0, specs("label").remove(0));
        }
        // A personality's own -l or -f list, translated further.
        if per.has(PER_ZAP_ADDR)
            && self.format_flags & FF_UL != 0
            && add_after(&mut cols, "ADDR", "sgi_p")
        {
            delete(&mut cols, "ADDR");
        }
        if per.has(PER_SANE_USER)
            && self.format_flags & FF_UF != 0
            && add_after(&mut cols, "UID", "user")
        {
            delete(&mut cols, "UID");
        }
        Ok((cols, sort))
    }
}

/// procps's `shortsort_array`: BSD `O` sort codes and the specifiers they sort by. `s`
/// (size) sorts by the virtual size in bytes, as procps's `size` does.
fn short_sort_spec(code: u8) -> Option<&'static str> {
    Some(match code {
        b'C' => "pcpu",
        b'G' => "tpgid",
        b'M' => "maj_flt",
        b'N' => "cmaj_flt",
        b'P' => "ppid",
        b'R' => "resident",
        b'S' => "share",
        b'T' => "start_time",
        b'U' => "uid",
        b'c' => "cmd",
        b'f' => "flags",
        b'g' => "pgrp",
        b'j' => "cutime",
        b'k' => "utime",
        b'm' => "min_flt",
        b'n' => "cmin_flt",
        b'o' => "session",
        b'p' => "pid",
        b'r' => "rss",
        b's' => "size",
        b't' => "tty",
        b'u' => "user",
        b'v' => "vsize",
        b'y' => "priority",
        // 'J' is cstime, which procps's table lacks; 'K' has no entry.
        _ => return None,
    })
}

/// procps verify_short_sort: whether a BSD `O` argument reads as sort codes.
fn verify_short_sort(arg: &str, forest: bool) -> R<()> {
    const ALL: &[u8] = b"CGJKMNPRSTUcfgjkmnoprstuvy+-";
    let b = arg.as_bytes();
    if !b.iter().all(|c| ALL.contains(c)) {
        return err("bad sorting code");
    }
    let mut seen = [false; 256];
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'+' | b'-' => {
                if matches!(b.get(i + 1), None | Some(b'+' | b'-')) {
                    return err("bad sorting code");
                }
            }
            _ => {
                if c == b'P' && forest {
                    return err("PPID sort and forest output conflict");
                }
                if seen[c as usize] {
                    return err("bad sorting code");
                }
                seen[c as usize] = true;
            }
        }
    }
    Ok(())
}

/// procps short_sort_parse. Its quirks are kept: a code with no table entry (`J`, `K`) ends
/// the list there; the direction (ascending unless `-`) holds for the next code only, and
/// a code after that without its own `+` or `-` is kept with direction 0, which the
/// library refuses to sort by (an empty key here: it sorts nothing but makes the listing a
/// sorted one, as in procps).
fn short_sort_parse(arg: &str) -> Vec<SortKey> {
    let mut out = Vec::new();
    let mut dir = Some(false);
    for c in arg.bytes() {
        match c {
            b'+' => dir = Some(false),
            b'-' => dir = Some(true),
            _ => {
                let Some(spec) = short_sort_spec(c) else {
                    break;
                };
                // procps's `size` sorts by stat's vsize.
                let key = if spec == "size" { "vsize" } else { spec };
                out.push(SortKey {
                    name: if dir.is_some() {
                        key.to_string()
                    } else {
                        String::new()
                    },
                    reverse: dir.unwrap_or(false),
                });
                dir = None;
            }
        }
    }
    out
}

/// Specifiers procps sorts by without effect whatever else is asked (see [`inert_sort`]).
const ALWAYS_INERT: &[&str] = &[
    "cmaj_flt",
    "cmin_flt",
    "cutime",
    "m_resident",
    "resident",
    "share",
    "utime",
];

/// The sort specifiers named by the run's sort options, for [`inert_sort`].
fn sort_names(sf: &[(String, Sf)]) -> Vec<String> {
    sf.iter()
        .filter(|(_, k)| matches!(k, Sf::GnuSort | Sf::BsdM | Sf::BsdBigO))
        .flat_map(|(a, k)| match k {
            Sf::BsdBigO => a
                .bytes()
                .filter_map(short_sort_spec)
                .map(String::from)
                .collect(),
            _ => a
                .split([' ', ',', '\t', '\n'])
                .map(|n| n.trim_start_matches(['+', '-']).to_string())
                .collect::<Vec<_>>(),
        })
        .collect()
}

/// Whether procps 4.0.2 keeps a sort key that sorts nothing. Its library sorts only by a
/// value some column or sort key has asked it to read, and a few specifiers sort by a
/// value their own column does not read: `vsize` (it prints VmSize but sorts by stat's
/// vsize, read only for `size`, `m_size`, `trs`, `drs`, `tsiz`, `dsiz` and their aliases),
/// and the placeholders `resident`, `utime`, `cutime` (never read). `cmaj_flt`,
/// `cmin_flt` and `share` sort by nothing at all.
fn inert_sort(name: &str, cols: &[ColumnReq], sort_names: &[String]) -> bool {
    const VSIZE_READERS: &[&str] = &[
        "drs", "dsiz", "m_drs", "m_size", "m_trs", "size", "trs", "tsiz",
    ];
    match name {
        "vsize" => !cols
            .iter()
            .map(|c| c.name.as_str())
            .chain(sort_names.iter().map(String::as_str))
            .any(|n| VSIZE_READERS.contains(&n)),
        _ => ALWAYS_INERT.contains(&name),
    }
}

/// The caller's controlling tty (procps's `cached_tty`).
fn my_tty() -> u32 {
    tasksnap_collect::Host::from_env().own_tty_nr()
}

/// The terminal size procps uses: the first of stdout, stderr, stdin that is a terminal.
fn terminal_size() -> Option<(usize, usize)> {
    [libc::STDOUT_FILENO, libc::STDERR_FILENO, libc::STDIN_FILENO]
        .into_iter()
        .filter_map(tasksnap_sys::terminal_size)
        .find(|&(cols, rows)| cols > 0 && rows > 0)
        .map(|(cols, rows)| (usize::from(cols), usize::from(rows)))
}

/// A positive size from the environment (`COLUMNS`, `LINES`), as procps accepts it.
fn env_size(name: &str) -> Option<usize> {
    let t = std::env::var(name).ok()?.parse::<i64>().ok()?;
    (t > 0 && (t as usize) < OUTBUF_SIZE).then_some(t as usize)
}

/// The terminal's height (for `--headers`), 24 when unknown; `LINES` wins.
fn screen_rows() -> usize {
    env_size("LINES").unwrap_or_else(|| terminal_size().map_or(24, |(_, rows)| rows))
}

/// procps set_screen_size: the terminal's width, unlimited when stdout is not a terminal;
/// `COLUMNS` wins.
fn screen_cols() -> usize {
    if let Some(cols) = env_size("COLUMNS") {
        return cols;
    }
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDOUT_FILENO) } == 0 {
        return OUTBUF_SIZE;
    }
    terminal_size().map_or(80, |(cols, _)| cols)
}

fn finish(mut p: P) -> R<Settings> {
    if p.replay.is_none() && p.replay_at.is_some() {
        return Err("--at needs --replay DIR".into());
    }
    let threads = p.thread_check()?;
    let (columns, sort) = p.sf_options()?;
    let mut select_bits = p.select_bits()?;
    let has_list = p
        .sel
        .iter()
        .any(|s| matches!(s, Sel::Crit(_) | Sel::Quick(_)));
    if p.simple == 0 && has_list {
        select_bits = None;
    }
    if p.all {
        select_bits = None;
    }
    let quick = p.sel.iter().filter(|s| matches!(s, Sel::Quick(_))).count();
    if quick > 1 {
        return Err("\u{0}q/-q/--quick-pid can only be used once.\n".into());
    }
    if quick > 0 && p.sel.len() > quick {
        return Err(
            "\u{0}q/-q/--quick-pid cannot be combined with other selection options.\n".into(),
        );
    }
    if quick > 0 && p.forest.is_some() {
        return Err(
            "\u{0}q/-q/--quick-pid cannot be used together with forest type listings.\n".into(),
        );
    }
    if quick > 0 && !sort.is_empty() {
        return Err("\u{0}q/-q,--quick-pid cannot be used together with sort options.\n".into());
    }
    if quick > 0 && p.negate {
        return Err(
            "\u{0}q/-q/--quick-pid cannot be used together with negation switches.\n".into(),
        );
    }
    let mut screen = p.screen_cols.unwrap_or_else(screen_cols);
    if p.w_count > 0 && screen < 132 {
        screen = 132;
    }
    if p.w_count > 1 {
        screen = OUTBUF_SIZE;
    }
    let quick_order = p.sel.iter().find_map(|s| match s {
        Sel::Quick(v) => Some(v.clone()),
        Sel::Crit(_) => None,
    });
    let criteria = p
        .sel
        .into_iter()
        .map(|s| match s {
            Sel::Crit(c) => c,
            Sel::Quick(v) => Criterion::Pid(v),
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
        screen_rows: screen_rows(),
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

const HELP: &str = "\
Usage:
 tasksnap ps [options]

procps-ng 4.0 compatible options, for example:
  -e, -A          all processes          -f, -F, -l, -j   full, extra full, long, jobs formats
  aux, ax, axjf   BSD forms              -L, -T           show threads
  -p, -q LIST     by pid                 -u, -U LIST      by effective / real user
  -C LIST         by command name        -t LIST          by terminal
  -o, -O FORMAT   user-defined format    --sort KEYS      sort (e.g. -pcpu,pid)
  --forest, -H    process tree           --no-headers     no header line
  -w, -ww         wider output           L                list format specifiers
tasksnap extensions:
  --output json|csv   machine-readable rows
  --delimiter C       separate columns with C instead of padding (newer procps)
  --verbose           say which backend ran, why, and what it could not read
  --backend B         auto (default), bpf or procfs
  --replay DIR        list what a recording (tasksnap record) held, as ps would have then
  --at TIME           with --replay: when (RFC 3339 UTC, epoch seconds, -10m; default: its end)
";

/// Parses `ps` arguments (after `ps`), with the personality the environment asks for.
pub fn parse(argv: &[OsString]) -> Result<Settings, ArgError> {
    parse_as(argv, Personality::from_env())
}

/// Parses `ps` arguments as personality `per` would.
pub fn parse_as(argv: &[OsString], per: Personality) -> Result<Settings, ArgError> {
    let args: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    let tty = my_tty();
    let errbuf = std::rc::Rc::new(std::cell::RefCell::new(None));
    // A personality that forces BSD parsing has no UNIX first pass.
    let first_err = if per.has(PER_FORCE_BSD) {
        None
    } else {
        let mut p = P::new(args.clone(), false, tty, per);
        p.errbuf = errbuf.clone();
        match p.parse_all().and_then(|()| finish(p)) {
            Ok(s) => return Ok(s),
            Err(e) => Some(e),
        }
    };
    if let Some(special) = first_err.as_deref().and_then(|e| e.strip_prefix('\u{0}')) {
        return Err(special_exit(special));
    }
    // procps's second chance: everything as BSD options, where `m` is the old Linux memory
    // format unless the personality says what it is.
    let mut per2 = per;
    if !per2.has(PER_OLD_M | PER_BSD_M) {
        per2.flags |= PER_OLD_M;
    }
    let mut p = P::new(args, true, tty, per2);
    p.errbuf = errbuf;
    match p.parse_all().and_then(|()| finish(p)) {
        Ok(s) => Ok(s),
        Err(e) => {
            if let Some(special) = e.strip_prefix('\u{0}') {
                return Err(special_exit(special));
            }
            Err(ArgError {
                message: format!("error: {}\n{USAGE_TAIL}", first_err.unwrap_or(e)),
                code: 1,
            })
        }
    }
}

fn special_exit(what: &str) -> ArgError {
    match what {
        "version" => ArgError {
            message: String::new(),
            code: 0,
        },
        "help" => ArgError {
            message: String::new(),
            code: 0,
        },
        "list" => ArgError {
            message: String::new(),
            code: 0,
        },
        msg => ArgError {
            message: msg.to_string(),
            code: 1,
        },
    }
}

/// Text printed on stdout for `--version`, `--help` and `L` (exit 0).
pub fn info_text(argv: &[OsString]) -> Option<String> {
    let has = |s: &str| argv.iter().any(|a| a.as_bytes() == s.as_bytes());
    if has("--version") || has("-V") || has("V") {
        return Some(format!(
            "tasksnap ps {} (procps-ng 4.0 compatible)\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if argv.iter().any(|a| a.as_bytes().starts_with(b"--help")) {
        return Some(HELP.to_string());
    }
    if has("L") {
        let mut s = String::new();
        // procps leaves out the specifiers that only ever print `-` (its pr_nop ones);
        // 4.0.2 has no fds.
        for spec in format::SPECS.iter().filter(|s| {
            !matches!(s.field, format::Field::Addr | format::Field::Nop) && s.name != "fds"
        }) {
            s.push_str(&format!("{:<12.12} {:<8.8}\n", spec.name, spec.head));
        }
        return Some(s);
    }
    None
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(args: &[&str]) -> Vec<String> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&argv)
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
        let argv: Vec<OsString> = ["-o", "pid=PROCESS,comm:20,args=A"]
            .iter()
            .map(OsString::from)
            .collect();
        let s = parse(&argv).expect("parses");
        assert_eq!(s.columns[0].header.as_deref(), Some("PROCESS"));
        assert_eq!(s.columns[1].width, Some(20));
        assert_eq!(s.columns[2].header.as_deref(), Some("A"));
        // procps splits "args=A B" at the space too, and then fails on "B".
        let argv: Vec<OsString> = ["-o", "args=A B"].iter().map(OsString::from).collect();
        assert!(parse(&argv).is_err());
    }

    #[test]
    fn errors_match_procps() {
        let e = |args: &[&str]| {
            let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
            parse(&argv).expect_err("must fail")
        };
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
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse_as(&argv, Personality::from_vars(Some(per), None, false, None))
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
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&argv)
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
        let argv: Vec<OsString> = ["-o", "%p", "-o", "foo"]
            .iter()
            .map(OsString::from)
            .collect();
        let e = parse(&argv).expect_err("foo is unknown");
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
            let mut p = P::new(
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
        let mut p = P::new(
            vec![b"m".to_vec()],
            false,
            0,
            Personality::from_vars(Some("old"), None, false, None),
        );
        p.parse_all().expect("parses");
        assert_eq!(
            (p.format_flags, p.thread),
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
        let e = |args: &[&str]| {
            let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
            parse(&argv).expect_err("must fail").message
        };
        assert!(e(&["O", "foo"]).starts_with("error: bad sorting code\n"));
        assert!(e(&["O", "PP"]).starts_with("error: bad sorting code\n"));
        assert!(e(&["f", "O", "P"]).starts_with("error: PPID sort and forest output conflict\n"));
        assert!(e(&["k", "pid", "O", "P"]).starts_with("error: multiple sort options\n"));
    }

    #[test]
    fn bsd_e_and_delimiter() {
        let argv: Vec<OsString> = ["axe", "--delimiter=:"]
            .iter()
            .map(OsString::from)
            .collect();
        let s = parse(&argv).expect("parses");
        assert!(s.bsd_e);
        assert_eq!(s.delimiter, Some(b':'));
        assert!(!parse(&[OsString::from("ax")]).expect("parses").bsd_e);
        let argv: Vec<OsString> = ["--delimiter", "ab"].iter().map(OsString::from).collect();
        assert!(parse(&argv)
            .expect_err("two bytes")
            .message
            .starts_with("error: delimiter must be a single character\n"));
    }
}
