//! `tasksnap top`'s command line: the [`Options`] a view runs with (keys in the live view
//! change them too), read from argv as procps top reads its own, and the usage text.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use tasksnap_model::Backend;

use super::arrange::Filter;
use super::columns::Column;

/// Options from the command line (and changed by keys in the UI).
#[derive(Debug, Clone)]
pub struct Options {
    pub batch: bool,
    pub iterations: Option<u64>,
    pub delay: Duration,
    pub pids: Vec<i32>,
    /// Only this user's tasks (resolved once, when typed).
    pub user: Option<u32>,
    pub threads: bool,
    pub full_command: bool,
    pub tree: bool,
    pub sort: Column,
    pub ascending: bool,
    pub name_filter: Option<String>,
    pub other_filter: Option<Filter>,
    pub backend: Backend,
    pub width: Option<usize>,
    /// Show each process's top wait reason after its command.
    pub show_wait: bool,
    /// Show a CGROUP column (as `ps -o cgroup`) before the command.
    pub show_cgroup: bool,
    /// `--replay DIR`: show this recording instead of the host.
    pub replay: Option<PathBuf>,
    /// `--at TIME` (ns since the epoch): the sample a replay starts on.
    pub at: Option<u64>,
    /// The exited view (`e`, `--exited`): the processes that exited during the interval
    /// are rows too, `<name>`, with an EXIT column.
    pub show_exited: bool,
    /// The cgroup view (`g`, `--cgroups`): a row per cgroup instead of per task.
    pub cgroups: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            batch: false,
            iterations: None,
            delay: Duration::from_secs(3),
            pids: Vec::new(),
            user: None,
            threads: false,
            full_command: false,
            tree: false,
            sort: Column::CPU,
            ascending: false,
            name_filter: None,
            other_filter: None,
            backend: Backend::Auto,
            width: None,
            show_wait: false,
            show_cgroup: false,
            replay: None,
            at: None,
            show_exited: false,
            cgroups: false,
        }
    }
}

pub(super) const USAGE: &str = "\
usage: tasksnap top [-b] [-n COUNT] [-d SECONDS] [-p PID[,PID...]] [-u USER] [-H] [-c]
                    [-o FIELD] [-w COLUMNS] [--backend auto|bpf|procfs] [--exited]
                    [--cgroups]
       tasksnap top [-b] --replay DIR [--at TIME] [-n COUNT] [other options as above]
  -b   batch mode: print frames in procps top -b's layout
  -n   stop after COUNT frames        -d   seconds between frames (default 3)
  -p   only these processes           -u   only this user (name or uid)
  -H   one row per thread             -c   full command lines
  -o   sort by PID, USER, %CPU, %MEM, TIME+, RUNQ% or COMMAND (prefix + or - for order)
  --exited       list the processes that exited during each interval too, as <name>
                 with an EXIT column (root, or a recording that kept them; the
                 e key in the live view)
  --cgroups      a row per cgroup (as tasksnap cgroups), in tree order, each level by
                 CPU% (the g key in the live view)
  --replay DIR   show a recording (tasksnap record) instead of the host, one sample at a
                 time: t next, T previous, b jump to a time (-b: one sample per frame)
  --at TIME      the sample to start on (RFC 3339 UTC, epoch seconds, -10m; default: the
                 second, the first with rates)
Keys in the live view: h or ? for help.
";

/// The widest line batch mode prints (procps top's limit).
const MAX_WIDTH: usize = 512;

pub(super) fn parse_args(argv: &[OsString]) -> Result<Options, String> {
    let mut o = Options::default();
    let args: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        // Values may be attached (-n5, -d0.5) or separate (-n 5).
        let mut value = |flag: &str| -> Result<String, String> {
            if a.len() > flag.len() {
                Ok(a[flag.len()..].to_string())
            } else {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| format!("option {flag} needs a value"))
            }
        };
        match a {
            "-b" => o.batch = true,
            "-H" => o.threads = true,
            "-c" => o.full_command = true,
            "--exited" => o.show_exited = true,
            "--cgroups" => o.cgroups = true,
            "-h" | "--help" => return Err(String::new()),
            _ if a == "--replay" || a.starts_with("--replay=") => {
                let v = match a.strip_prefix("--replay=") {
                    Some(v) => v.to_string(),
                    None => value("--replay")?,
                };
                // `--replay -n 3` lost its directory (name one that starts with `-` as ./-x).
                if v.is_empty() || v.starts_with('-') {
                    return Err("--replay needs a recording's directory".into());
                }
                o.replay = Some(PathBuf::from(v));
            }
            _ if a == "--at" || a.starts_with("--at=") => {
                let v = match a.strip_prefix("--at=") {
                    Some(v) => v.to_string(),
                    None => value("--at")?,
                };
                o.at = Some(crate::when::parse_time(&v)?);
            }
            _ if a.starts_with("--backend") => {
                let v = match a.strip_prefix("--backend=") {
                    Some(v) => v.to_string(),
                    None => value("--backend")?,
                };
                o.backend = v
                    .parse()
                    .map_err(|e: tasksnap_model::UnknownBackend| e.to_string())?;
            }
            _ if a.starts_with("-n") => {
                let v = value("-n")?;
                o.iterations = Some(
                    v.parse::<u64>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("bad iterations argument '{v}'"))?,
                );
            }
            _ if a.starts_with("-d") => {
                let v = value("-d")?;
                if v.trim_start().starts_with('-') {
                    return Err("-d requires positive argument".into());
                }
                // procps takes 0 and spins; tasksnap refreshes at most 10 times a second.
                o.delay = crate::input::parse_seconds(&v, 0.0)?.max(Duration::from_millis(100));
            }
            _ if a.starts_with("-p") => {
                let v = value("-p")?;
                for p in v.split(',') {
                    // procps: `-p 0` is top itself.
                    let pid = if p.trim() == "0" {
                        std::process::id() as i32
                    } else {
                        crate::input::Pid::parse(p)?.get()
                    };
                    o.pids.push(pid);
                }
            }
            _ if a.starts_with("-u") || a.starts_with("-U") => {
                let v = value("-u")?;
                o.user = Some(crate::input::uid_of(&v).ok_or("Invalid user")?);
            }
            _ if a.starts_with("-w") => {
                let v = value("-w")?;
                o.width = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|w| (1..=MAX_WIDTH).contains(w))
                        .ok_or_else(|| {
                            format!("bad width arg '{v}', must > 0 and <= {MAX_WIDTH}")
                        })?,
                );
            }
            _ if a.starts_with("-o") => {
                let v = value("-o")?;
                o.sort = Column::sort_key(&v).ok_or_else(|| format!("unknown field '{v}'"))?;
                o.ascending = v.starts_with('-');
            }
            _ => return Err(format!("unknown option '{a}'")),
        }
        i += 1;
    }
    if o.at.is_some() && o.replay.is_none() {
        return Err("--at needs --replay DIR".into());
    }
    if o.batch && o.width.is_none() {
        // As procps top -b: lines as wide as $COLUMNS says (ignored when not a number in
        // 1..=512); without it tasksnap does not cut lines (procps cuts at 80).
        o.width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|w| (1..=MAX_WIDTH).contains(w));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use crate::top::options::*;
    use std::path::Path;

    fn parse(args: &[&str]) -> Result<Options, String> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse_args(&argv)
    }

    #[test]
    fn top_bad_arguments_are_errors() {
        for bad in [
            &["-n", "0"][..],
            &["-n", "-1"],
            &["-d", "-1"],
            &["-d", "1e20"],
            &["-d", "nan"],
            &["-p", ""],
            &["-p", "-1"],
            &["-p", "1,,2"],
            &["-u", "no-such-user-tasksnap"],
            &["-w", "0"],
            &["-w", "100000"],
            &["-x"],
            &["-n"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let o = parse(&["-b", "-n", "2", "-d", "0.5", "-p", "1,0", "-u", "root"]).expect("parses");
        assert_eq!(o.iterations, Some(2));
        assert_eq!(o.delay, Duration::from_millis(500));
        assert_eq!(o.pids, vec![1, std::process::id() as i32]);
        assert_eq!(o.user, Some(0));
    }

    #[test]
    fn top_replay_arguments() {
        let o = parse(&["-b", "--replay", "/r", "--at", "1763866800"]).expect("parses");
        assert_eq!(o.replay.as_deref(), Some(Path::new("/r")));
        assert_eq!(o.at, Some(1_763_866_800_000_000_000));
        let o = parse(&["--replay=/r", "--at=2025-11-23T03:00:00Z"]).expect("parses");
        assert_eq!(o.replay.as_deref(), Some(Path::new("/r")));
        assert_eq!(o.at, Some(1_763_866_800_000_000_000));
        for bad in [
            &["--at", "-10m"][..],
            &["--replay"],
            &["--replay="],
            &["--replay", "/r", "--at", "yesterday"],
            &["--replay", "/r", "--at"],
            &["--replay", "-n", "1"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
