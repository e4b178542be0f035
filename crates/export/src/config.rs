//! prometheus-process-exporter's grouping configuration (`process_names:` in YAML), read so
//! that its users can switch without rewriting it: an ordered list of rules, each with
//! optional `comm`, `exe` and `cmdline` matchers (all present ones must match) and a `name`
//! template (`{{.ExeBase}}` when absent); the first rule that matches names the process's
//! group, and a process no rule matches is not reported (unless its parent's group adopts
//! it: see [`crate::group`]).
//!
//! The matching follows process-exporter's: `comm` is the exact comm; `exe` is argv[0]'s
//! base name, or the whole argv[0] when the rule holds a `/`; each `cmdline` regular
//! expression must match somewhere in the arguments joined by spaces, and its named
//! captures are `{{.Matches.NAME}}`.
//!
//! One deliberate difference: `{{.ExeBase}}` and `{{.ExeFull}}` are the executable's path
//! (`/proc/PID/exe`), not argv[0]. argv[0] is part of the command line, which a process can
//! rewrite (PostgreSQL's backends put the user, database and client address there), and a
//! command line never goes into a label unless the configuration asks for it explicitly
//! with a capture. Templates are the `{{.Field}}` subset of Go's text/template that
//! process-exporter's documentation uses; anything else is refused when the file is read,
//! not when a process meets it.

use std::collections::HashMap;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;

use crate::ConfigError;

/// A parsed configuration: rules in order.
#[derive(Debug, Clone)]
pub struct Config {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    comm: Option<Vec<Vec<u8>>>,
    exe: Option<Vec<ExeRule>>,
    cmdline: Option<Vec<Regex>>,
    name: Vec<Piece>,
}

/// An `exe` entry: the base name, and the full path when the rule gave one.
type ExeRule = (Vec<u8>, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Comm,
    ExeBase,
    ExeFull,
    Username,
    Pid,
    StartTime,
    Cgroups,
    Match(String),
}

/// What a rule can look at for one process.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// Process id.
    pub pid: i32,
    /// Comm, raw.
    pub comm: &'a [u8],
    /// Command line as the kernel gives it (arguments NUL-separated), if read.
    pub cmdline: Option<&'a [u8]>,
    /// Executable path, if read.
    pub exe: Option<&'a [u8]>,
    /// User name of the effective uid (or the uid in decimal), raw.
    pub username: &'a [u8],
    /// Start time, Unix seconds.
    pub start_unix_s: u64,
    /// The cgroup v2 path (`Cgroup::v2_path`).
    pub cgroup_v2_path: Option<&'a [u8]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoot {
    process_names: Vec<FileRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    name: Option<String>,
    comm: Option<Vec<String>>,
    exe: Option<Vec<String>>,
    cmdline: Option<Vec<String>>,
}

/// The largest configuration file read (1 MiB: real ones are a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl Config {
    /// Reads and checks a configuration file: a regular file (a FIFO or a device such as
    /// /dev/zero is refused, never waited on or read without end) of at most
    /// [`MAX_CONFIG_BYTES`].
    pub fn read(path: &Path) -> Result<Config, ConfigError> {
        use std::io::Read;
        let failed = |why: String| ConfigError::Read {
            path: path.to_path_buf(),
            why,
        };
        let f = tasksnap_safefile::open_regular(path).map_err(|e| failed(e.reason()))?;
        let mut bytes = Vec::new();
        f.take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| failed(e.to_string()))?;
        if bytes.len() as u64 > MAX_CONFIG_BYTES {
            return Err(failed(format!(
                "larger than {MAX_CONFIG_BYTES} bytes, not a configuration"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| failed("not UTF-8 text".into()))?;
        Config::parse(&text)
    }

    /// Parses and checks a configuration.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let root: FileRoot =
            serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
        if root.process_names.is_empty() {
            return Err(ConfigError::Invalid(
                "process_names lists no rule: nothing would be reported".into(),
            ));
        }
        let mut rules = Vec::new();
        for (i, r) in root.process_names.into_iter().enumerate() {
            let at = |what: String| ConfigError::Invalid(format!("process_names[{i}]: {what}"));
            if r.comm.is_none() && r.exe.is_none() && r.cmdline.is_none() {
                return Err(at("no matcher (comm, exe or cmdline)".into()));
            }
            let cmdline = match r.cmdline {
                None => None,
                Some(list) => Some(
                    list.iter()
                        .map(|s| {
                            Regex::new(s).map_err(|e| at(format!("bad cmdline regex {s:?}: {e}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            };
            let exe = r.exe.map(|list| {
                list.into_iter()
                    .map(|e| {
                        if e.contains('/') {
                            (base_name(e.as_bytes()).to_vec(), Some(e.into_bytes()))
                        } else {
                            (e.into_bytes(), None)
                        }
                    })
                    .collect()
            });
            let template = r.name.unwrap_or_else(|| "{{.ExeBase}}".into());
            let name = parse_template(&template).map_err(&at)?;
            for p in &name {
                if let Piece::Match(m) = p {
                    let known = cmdline
                        .iter()
                        .flatten()
                        .any(|re: &Regex| re.capture_names().any(|n| n == Some(m.as_str())));
                    if !known {
                        return Err(at(format!(
                            "name uses {{{{.Matches.{m}}}}} but no cmdline regex captures {m}"
                        )));
                    }
                }
            }
            rules.push(Rule {
                comm: r
                    .comm
                    .map(|l| l.into_iter().map(String::into_bytes).collect()),
                exe,
                cmdline,
                name,
            });
        }
        Ok(Config { rules })
    }

    /// The group name the first matching rule gives, as bytes (the names it is built from
    /// are bytes: [`crate::label`] makes the label value), or `None` when no rule matches.
    pub fn name(&self, f: &Facts<'_>) -> Option<Vec<u8>> {
        let argv: Vec<&[u8]> = f
            .cmdline
            .map(|c| {
                c.split(|&b| b == 0)
                    .enumerate()
                    // A trailing NUL ends the last argument; it does not start another.
                    .filter(|(i, a)| *i == 0 || !a.is_empty())
                    .map(|(_, a)| a)
                    .collect()
            })
            .unwrap_or_default();
        let argv: &[&[u8]] = if argv.first().is_some_and(|a| a.is_empty()) && argv.len() == 1 {
            &[]
        } else {
            &argv
        };
        'rules: for r in &self.rules {
            if let Some(comms) = &r.comm {
                if !comms.iter().any(|c| c == f.comm) {
                    continue;
                }
            }
            if let Some(exes) = &r.exe {
                let Some(arg0) = argv.first() else { continue };
                let base = base_name(arg0);
                let hit = exes.iter().any(|(b, full)| {
                    b == base && full.as_ref().is_none_or(|full| full.as_slice() == *arg0)
                });
                if !hit {
                    continue;
                }
            }
            let mut matches: HashMap<&str, String> = HashMap::new();
            if let Some(res) = &r.cmdline {
                let joined = String::from_utf8_lossy(&argv.join(&b' ')).into_owned();
                for re in res {
                    let Some(caps) = re.captures(&joined) else {
                        continue 'rules;
                    };
                    for n in re.capture_names().flatten() {
                        if let Some(m) = caps.name(n) {
                            matches.insert(n, m.as_str().to_string());
                        }
                    }
                }
            }
            let mut out: Vec<u8> = Vec::new();
            for p in &r.name {
                match p {
                    Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                    Piece::Comm => out.extend_from_slice(f.comm),
                    Piece::ExeBase => match f.exe.filter(|e| !e.is_empty()) {
                        Some(e) => out.extend_from_slice(base_name(e)),
                        None => out.extend_from_slice(f.comm),
                    },
                    Piece::ExeFull => match f.exe.filter(|e| !e.is_empty()) {
                        Some(e) => out.extend_from_slice(e),
                        None => out.extend_from_slice(f.comm),
                    },
                    Piece::Username => out.extend_from_slice(f.username),
                    Piece::Pid => out.extend_from_slice(f.pid.to_string().as_bytes()),
                    Piece::StartTime => {
                        out.extend_from_slice(f.start_unix_s.to_string().as_bytes())
                    }
                    Piece::Cgroups => {
                        let path = f.cgroup_v2_path.unwrap_or(b"");
                        out.extend_from_slice(path);
                    }
                    Piece::Match(m) => {
                        if let Some(v) = matches.get(m.as_str()) {
                            out.extend_from_slice(v.as_bytes());
                        }
                    }
                }
            }
            return Some(out);
        }
        None
    }
}

fn base_name(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// `text {{.Field}} text {{ .Matches.NAME }}`; any other action is an error.
fn parse_template(t: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_string()));
        }
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| format!("name template {t:?}: unclosed {{{{"))?;
        let action = after[..close].trim();
        let piece = match action {
            ".Comm" => Piece::Comm,
            ".ExeBase" => Piece::ExeBase,
            ".ExeFull" => Piece::ExeFull,
            ".Username" => Piece::Username,
            ".PID" => Piece::Pid,
            ".StartTime" => Piece::StartTime,
            ".Cgroups" => Piece::Cgroups,
            a if a.starts_with(".Matches.") && a.len() > ".Matches.".len() => {
                Piece::Match(a[".Matches.".len()..].to_string())
            }
            a => {
                return Err(format!(
                    "name template {t:?}: {{{{{a}}}}} is not supported (supported: .Comm, \
                     .ExeBase, .ExeFull, .Username, .PID, .StartTime, .Cgroups, .Matches.NAME)"
                ))
            }
        };
        out.push(piece);
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(comm: &'a str, cmdline: &'a [u8], exe: &'a str) -> Facts<'a> {
        Facts {
            pid: 42,
            comm: comm.as_bytes(),
            cmdline: Some(cmdline),
            exe: Some(exe.as_bytes()),
            username: b"alice",
            start_unix_s: 1_700_000_000,
            cgroup_v2_path: Some(b"/system.slice/nginx.service"),
        }
    }

    #[test]
    fn serve_config_refuses_a_fifo_or_a_device() {
        // A FIFO blocked `serve --config` forever; /dev/zero was read without end.
        let e = Config::read(Path::new("/dev/zero")).expect_err("a device");
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = std::env::temp_dir().join(format!("tasksnap-config-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let fifo = dir.join("groups.yml");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("no NUL");
        // SAFETY: mkfifo reads a NUL-terminated path valid for the call.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        let r = Config::read(&fifo);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(made, 0, "mkfifo");
        let e = r.expect_err("a FIFO");
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert_eq!(
            e.to_string().matches(&*fifo.to_string_lossy()).count(),
            1,
            "{e}"
        );
    }

    #[test]
    fn process_exporter_examples_name_as_documented() {
        let c = Config::parse(
            r#"
process_names:
  - comm: [bash]
  - exe: [postgres, /usr/local/bin/prometheus]
    name: "{{.Comm}}-{{ .Username }}"
  - name: "{{.Matches.Cfg}}"
    cmdline:
    - 'prometheus\s+--config.file=(?P<Cfg>\S+)'
  - name: "{{.Cgroups}}:{{.PID}}"
    cmdline: ['^nginx']
"#,
        )
        .expect("valid config");
        // No name: the executable's base name (not argv[0]).
        assert_eq!(
            c.name(&facts("bash", b"-bash\0", "/usr/bin/bash")),
            Some("bash".into())
        );
        // A postgres backend rewrote argv[0]; the exe rule matches argv[0]'s base name as
        // process-exporter's does, and the name holds nothing of the command line.
        assert_eq!(
            c.name(&facts(
                "postgres",
                b"/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib\0",
                "/usr/lib/postgresql/15/bin/postgres"
            )),
            Some("postgres-alice".into())
        );
        // A rule with a path needs the whole argv[0].
        assert_eq!(
            c.name(&facts(
                "prometheus",
                b"/usr/bin/prometheus\0",
                "/usr/bin/prometheus"
            )),
            None
        );
        assert_eq!(
            c.name(&facts(
                "prometheus",
                b"/usr/local/bin/prometheus\0",
                "/usr/local/bin/prometheus"
            )),
            Some("prometheus-alice".into())
        );
        assert_eq!(
            c.name(&facts(
                "prometheus",
                b"prometheus\0--config.file=/etc/p.yml\0",
                "/opt/prometheus"
            )),
            Some("/etc/p.yml".into())
        );
        assert_eq!(
            c.name(&facts("nginx", b"nginx: worker\0", "/usr/sbin/nginx")),
            Some("/system.slice/nginx.service:42".into())
        );
        assert_eq!(c.name(&facts("sshd", b"sshd\0", "/usr/sbin/sshd")), None);
    }

    #[test]
    fn bad_configurations_are_refused_with_the_reason() {
        let cases = [
            ("process_names: []", "no rule"),
            ("process_names:\n  - name: x\n", "no matcher"),
            ("process_names:\n  - cmdline: ['(']\n", "bad cmdline regex"),
            (
                "process_names:\n  - comm: [a]\n    name: '{{.Cwd}}'\n",
                "not supported",
            ),
            (
                "process_names:\n  - comm: [a]\n    name: '{{.Comm'\n",
                "unclosed",
            ),
            (
                "process_names:\n  - comm: [a]\n    name: '{{.Matches.X}}'\n",
                "captures X",
            ),
            (
                "process_names:\n  - comm: [a]\n    typo: 1\n",
                "unknown field",
            ),
            ("process_names: [", "not a process-exporter configuration"),
            ("\u{0}\u{1}", ""),
        ];
        for (text, want) in cases {
            let e = Config::parse(text).expect_err(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn kernel_threads_and_unread_names_fall_back_to_comm() {
        let c = Config::parse("process_names:\n  - comm: [kthreadd]\n").expect("valid");
        let f = Facts {
            comm: b"kthreadd",
            ..Facts::default()
        };
        assert_eq!(c.name(&f), Some("kthreadd".into()));
    }
}
