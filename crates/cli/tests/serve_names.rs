//! `tasksnap serve` on processes named with hostile bytes (newline, CR, tab, quote,
//! backslash, escape sequences, bytes that are not UTF-8, a name spelled like an escape, a
//! 20 KiB configured name): each name is a group of its own, with the label value
//! docs/serve.md promises, and both expositions parse with the tools people read them with:
//! promtool (`check metrics` on the 0.0.4 text; Prometheus's own OpenMetrics parser through
//! `tsdb create-blocks-from openmetrics`) and Python's prometheus_client (both parsers,
//! reading a file as a consumer reading a stream does, with universal newlines).
//!
//! Before the fix, control characters were replaced with `?`, so `tsnl\nname` and
//! `tsnl?name` were one group, and invalid UTF-8 became U+FFFD, so `tsx\xffname` and
//! `tsx\xfename` were one group too.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{get, Config, Server};

/// The comms this test gives its processes, and the label value each must have.
const NAMES: &[(&[u8], &str)] = &[
    (b"tsnl\nname", "tsnl\nname"),
    (b"tsnl?name", "tsnl?name"),
    (b"tscr\rname", "tscr\\x0dname"),
    (b"tstab\tname", "tstab\tname"),
    (b"tsq\"name", "tsq\"name"),
    (b"tsbs\\name", "tsbs\\name"),
    (b"tsx\xffname", "tsx\\xffname"),
    (b"tsx\xfename", "tsx\\xfename"),
    // Spelled like the escape of the name above: it must not pass for it.
    (b"tsx\\xffname", "tsx\\\\xffname"),
    ("tsx\u{fffd}name".as_bytes(), "tsx\u{fffd}name"),
    (b"ts\xe2\x9c\x93\x1b[1m", "ts\u{2713}\x1b[1m"),
];

/// Sleepers started through symbolic links named with the bytes wanted (the kernel names a
/// process after the file it executes), killed when dropped.
struct Named {
    children: Vec<Child>,
    _dir: tempfile::TempDir,
}

impl Drop for Named {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn sleep_binary() -> PathBuf {
    ["/usr/bin/sleep", "/bin/sleep"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("a sleep binary")
}

fn comm(pid: u32) -> Option<Vec<u8>> {
    let mut c = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    c.pop();
    Some(c)
}

/// Starts `sleep 1000` under each name (`argv0`: argv[0], the file's name when `None`).
fn spawn_named(names: &[(&[u8], Option<&[u8]>)]) -> Named {
    let dir = tempfile::tempdir().expect("tempdir");
    let sleep = sleep_binary();
    let mut children = Vec::new();
    for (i, (name, argv0)) in names.iter().enumerate() {
        // One directory per name: a name may repeat another's first 15 bytes.
        let sub = dir.path().join(i.to_string());
        std::fs::create_dir(&sub).expect("mkdir");
        let link = sub.join(OsStr::from_bytes(name));
        std::os::unix::fs::symlink(&sleep, &link).expect("symlink");
        let mut cmd = Command::new(&link);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(a) = argv0 {
            std::os::unix::process::CommandExt::arg0(&mut cmd, OsStr::from_bytes(a));
        }
        children.push(cmd.arg("1000").spawn().expect("spawn a named sleeper"));
    }
    let named = Named {
        children,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    for (c, (name, _)) in named.children.iter().zip(names) {
        let want = &name[..name.len().min(15)];
        while comm(c.id()).as_deref() != Some(want) {
            assert!(Instant::now() < deadline, "{name:?} never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    named
}

fn tool(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(p) if Path::new(&p).exists() => Some(p),
        _ if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") => {
            panic!("{var} is not set to an existing file (./x test sets it up)")
        }
        _ => {
            eprintln!("SKIP part: {var} not set (./x test sets it up)");
            None
        }
    }
}

fn run(program: &str, args: &[&OsStr], stdin: &[u8]) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    {
        use std::io::Write;
        let mut i = child.stdin.take().expect("stdin");
        i.write_all(stdin).expect("feed");
    }
    let out = child.wait_with_output().expect("wait");
    let mut said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

/// Undoes Go's `strconv.Quote` escapes (promtool's `tsdb dump` quotes label values so).
fn go_unquote(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    let hex = |it: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
        let h: String = (0..n).filter_map(|_| it.next()).collect();
        u32::from_str_radix(&h, 16).expect("hex")
    };
    while let Some(c) = it.next() {
        if c != '\\' {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        let e = it.next().expect("an escape");
        let push = |out: &mut Vec<u8>, u: u32| {
            let mut b = [0u8; 4];
            let c = char::from_u32(u).expect("a character");
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        };
        match e {
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(11),
            'x' => out.push(hex(&mut it, 2) as u8),
            'u' => push(&mut out, hex(&mut it, 4)),
            'U' => push(&mut out, hex(&mut it, 8)),
            other => {
                let mut b = [0u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out
}

/// The `group` label values of `tasksnap_group_processes`, as promtool's OpenMetrics parser
/// reads the exposition `om` (through a TSDB block it writes and dumps).
fn promtool_openmetrics_groups(promtool: &str, om: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    // Backfilling wants a timestamp on every sample.
    let mut stamped = String::with_capacity(om.len() * 2);
    for line in om.lines() {
        stamped.push_str(line);
        if !line.starts_with('#') {
            stamped.push_str(" 1700000000");
        }
        stamped.push('\n');
    }
    let file = dir.path().join("om.txt");
    std::fs::write(&file, &stamped).expect("write");
    let db = dir.path().join("db");
    let (ok, said) = run(
        promtool,
        &[
            OsStr::new("tsdb"),
            OsStr::new("create-blocks-from"),
            OsStr::new("openmetrics"),
            file.as_os_str(),
            db.as_os_str(),
        ],
        b"",
    );
    assert!(ok, "promtool's OpenMetrics parser refused it: {said}");
    std::fs::create_dir_all(db.join("wal")).expect("mkdir");
    let out = Command::new(promtool)
        .args([OsStr::new("tsdb"), OsStr::new("dump"), db.as_os_str()])
        .output()
        .expect("promtool tsdb dump");
    common::ok(&out, "promtool tsdb dump");
    let dump = String::from_utf8(out.stdout).expect("promtool dumps UTF-8");
    let mut groups = Vec::new();
    for line in dump.lines() {
        if !line.starts_with("{__name__=\"tasksnap_group_processes\"") {
            continue;
        }
        // An empty label value is no label to Prometheus (a process with an empty comm).
        let Some((_, rest)) = line.split_once("group=\"") else {
            groups.push(String::new());
            continue;
        };
        // The value ends at the first quote not escaped.
        let mut end = 0;
        let b = rest.as_bytes();
        while b[end] != b'"' {
            end += if b[end] == b'\\' { 2 } else { 1 };
        }
        let v = go_unquote(&rest[..end]);
        groups.push(String::from_utf8(v).expect("a label value is UTF-8"));
    }
    groups
}

const PYTHON: &str = r#"
import json, sys
from prometheus_client.parser import text_fd_to_metric_families as text
from prometheus_client.openmetrics.parser import text_fd_to_metric_families as om
out = {}
for kind, parse, path in (("text", text, sys.argv[1]), ("om", om, sys.argv[2])):
    # open() reads with universal newlines, as a consumer of a stream does.
    with open(path, encoding="utf-8") as f:
        groups = []
        for fam in parse(f):
            if fam.name == "tasksnap_group_processes":
                groups += [s.labels["group"] for s in fam.samples]
        out[kind] = groups
print(json.dumps(out))
"#;

/// The `group` values of `tasksnap_group_processes` as prometheus_client's two parsers read
/// the two expositions.
fn python_groups(python: &str, text: &str, om: &str) -> BTreeMap<String, Vec<String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (t, o) = (dir.path().join("text"), dir.path().join("om"));
    std::fs::write(&t, text).expect("write");
    std::fs::write(&o, om).expect("write");
    let out = Command::new(python)
        .args([
            OsStr::new("-c"),
            OsStr::new(PYTHON),
            t.as_os_str(),
            o.as_os_str(),
        ])
        .output()
        .expect("python");
    common::ok(&out, "prometheus_client's parser");
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The 0.0.4 text and the OpenMetrics exposition, scraped one after the other.
fn scrape_both(s: &Server) -> (String, String) {
    let text = get(s.addr, "/metrics", &[]);
    assert_eq!(text.status, 200);
    let om = get(
        s.addr,
        "/metrics",
        &[("Accept", "application/openmetrics-text;version=1.0.0")],
    );
    assert_eq!(om.status, 200);
    (text.body, om.body)
}

/// Checks that every parser reads each `want` label value from the two expositions.
fn assert_parsed(text: &str, om: &str, want: &[String]) {
    if let Some(promtool) = tool("TASKSNAP_PROMTOOL") {
        let (ok, said) = run(
            &promtool,
            &[OsStr::new("check"), OsStr::new("metrics")],
            text.as_bytes(),
        );
        assert!(ok && said.is_empty(), "promtool check metrics: {said}");
        let groups = promtool_openmetrics_groups(&promtool, om);
        for w in want {
            assert!(groups.contains(w), "promtool (OpenMetrics) has no {w:?}");
        }
    }
    if let Some(python) = tool("TASKSNAP_PROMETHEUS_PYTHON") {
        let parsed = python_groups(&python, text, om);
        for kind in ["text", "om"] {
            for w in want {
                assert!(
                    parsed[kind].contains(w),
                    "prometheus_client ({kind}) has no {w:?}: {:?}",
                    parsed[kind]
                        .iter()
                        .filter(|g| g.starts_with("ts"))
                        .collect::<Vec<_>>()
                );
            }
        }
    }
}

/// The label value of a sample line's `group`, its escapes undone (`\\`, `\"`, `\n`: the
/// escapes both grammars have).
fn exposition_groups(exposition: &str, family: &str) -> Vec<String> {
    let prefix = format!("{family}{{group=\"");
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let mut v = String::new();
            let mut it = rest.chars();
            while let Some(c) = it.next() {
                match c {
                    '"' => break,
                    '\\' => match it.next() {
                        Some('n') => v.push('\n'),
                        Some(e) => v.push(e),
                        None => break,
                    },
                    c => v.push(c),
                }
            }
            v
        })
        .collect()
}

#[test]
fn distinct_comms_are_never_merged_into_one_group() {
    let spec: Vec<(&[u8], Option<&[u8]>)> = NAMES.iter().map(|(n, _)| (*n, None)).collect();
    let named = spawn_named(&spec);
    let s = Server::start(&["--interval", "60", "--backend", "procfs"]);
    let (text, om) = scrape_both(&s);
    assert!(std::str::from_utf8(text.as_bytes()).is_ok());
    for (exposition, what) in [(&text, "0.0.4"), (&om, "OpenMetrics")] {
        // No raw CR anywhere: a line-by-line reader with universal newlines would split there.
        assert!(!exposition.contains('\r'), "{what}: a raw CR");
        let groups = exposition_groups(exposition, "tasksnap_group_processes");
        for (name, want) in NAMES {
            assert!(
                groups.iter().any(|g| g == want),
                "{what}: no group {want:?} for the process named {:?}; groups starting ts: {:?}",
                String::from_utf8_lossy(name),
                groups
                    .iter()
                    .filter(|g| g.starts_with("ts"))
                    .collect::<Vec<_>>()
            );
        }
    }
    let want: Vec<String> = NAMES.iter().map(|(_, w)| (*w).to_string()).collect();
    assert_parsed(&text, &om, &want);
    drop(named);
}

#[test]
fn a_long_hostile_configured_name_is_one_valid_label() {
    // argv[0] of 20 KiB with every hostile character; a configuration names the group after
    // it (a cmdline capture), as process-exporter users do.
    let mut long = b"tsnapL".to_vec();
    for i in 0..1000 {
        long.extend_from_slice(b"a\nb\r\t\"\\q ");
        long.extend_from_slice(format!("{i:05}").as_bytes());
        long.push(b'z');
    }
    let named = spawn_named(&[(b"tslong", Some(&long))]);
    let config = Config::new(
        "process_names:\n  - comm: [tslong]\n    cmdline: ['(?s)^tsnapL(?P<rest>.*) 1000$']\n    \
         name: 'long-{{.Matches.rest}}'\n",
    );
    let s = Server::start(&[
        "--interval",
        "60",
        "--backend",
        "procfs",
        "--config",
        config.path(),
        "--no-children",
    ]);
    let (text, om) = scrape_both(&s);
    let want = {
        let rest = String::from_utf8(long["tsnapL".len()..].to_vec()).expect("utf-8");
        // A name with a CR is escaped: the CR as \x0d, each backslash doubled.
        format!("long-{}", rest.replace('\\', "\\\\").replace('\r', "\\x0d"))
    };
    for exposition in [&text, &om] {
        assert!(!exposition.contains('\r'));
        let groups = exposition_groups(exposition, "tasksnap_group_processes");
        assert_eq!(groups, vec![want.clone()]);
    }
    assert_parsed(&text, &om, &[want]);
    drop(named);
}
