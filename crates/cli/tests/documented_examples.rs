//! Every history command the README and docs/*.md show (`ps --replay`, `top --replay`,
//! `states --replay`, `dump`, `record`) runs as written against a recording this test makes,
//! and every time option (`--at`, `--from`, `--to`) takes a time relative to now in each of
//! its spellings (`-1h`, `-10m`, `--from=-1h`). Documented syntax that clap refused (exit 2,
//! "unexpected argument '-1'") is the defect these pin.
//!
//! A documented time is usually outside a recording made seconds ago, so each example runs
//! twice: as written (it must parse, and end in output or in "outside the recording"), and
//! with each of its times moved inside the recording (it must succeed and print something).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use common::recording::record_args;
use common::{tasksnap, tasksnap_ok, text};

/// A short recording shared by the tests of this file, and its first and last sample times
/// (RFC 3339, as `dump` prints them).
struct Recording {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    scratch: PathBuf,
    first: String,
    last: String,
}

fn recording() -> &'static Recording {
    static R: OnceLock<Recording> = OnceLock::new();
    R.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("history");
        let scratch = tmp.path().join("out");
        std::fs::create_dir(&scratch).expect("scratch dir");
        let record = record_args(&dir, "0.3", Some(4), &["--key-every", "2"]);
        tasksnap_ok(&record.iter().map(String::as_str).collect::<Vec<_>>());
        let d = dir.to_str().expect("utf-8 path");
        let out = tasksnap_ok(&["dump", "--what", "system", "--fields", "time", "--dir", d]);
        let times: Vec<String> = text(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.trim().to_string())
            .collect();
        assert!(times.len() >= 4, "four samples recorded: {times:?}");
        Recording {
            first: times[0].clone(),
            last: times[times.len() - 1].clone(),
            _tmp: tmp,
            dir,
            scratch,
        }
    })
}

/// The example command lines of the README and docs/*.md: lines of code blocks and inline
/// code spans that start with `tasksnap `, without a trailing `# comment` or `| pipe`.
fn documented_commands() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out: Vec<(String, String)> = Vec::new();
    for f in files {
        let name = f
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let body = std::fs::read_to_string(&f).expect("read a doc");
        let mut in_block = false;
        for line in body.lines() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            let mut cands = Vec::new();
            if in_block {
                let l = line.trim();
                cands.push(l.strip_prefix("$ ").unwrap_or(l).to_string());
            }
            let mut rest = line;
            while let Some(a) = rest.find('`') {
                let after = &rest[a + 1..];
                let Some(b) = after.find('`') else { break };
                cands.push(after[..b].to_string());
                rest = &after[b + 1..];
            }
            for c in cands {
                let Some(cmd) = c.strip_prefix("tasksnap ") else {
                    continue;
                };
                let cmd = cmd.split(" # ").next().unwrap_or(cmd);
                let cmd = cmd.split(" | ").next().unwrap_or(cmd).trim().to_string();
                if !out.iter().any(|(_, c)| *c == cmd) {
                    out.push((name.clone(), cmd));
                }
            }
        }
    }
    out
}

/// The documented history commands, as argument vectors with the placeholders filled in:
/// the store (`DIR` and the paths the service docs use), outputs into a scratch directory,
/// `T` a time inside the recording, `PID` this process; `top` in batch mode for one frame.
fn history_examples(rec: &Recording) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (doc, cmd) in documented_commands() {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let is_history = match words.first().copied() {
            Some("dump") => true,
            Some("record") => words.contains(&"--dir"),
            Some("ps") | Some("top") | Some("states") => words.contains(&"--replay"),
            _ => false,
        };
        // A synopsis (`[-p PID]`, `parquet|csv|json`) is not an example.
        if !is_history || cmd.contains('[') || cmd.contains('|') || cmd.contains("...") {
            continue;
        }
        let mut args: Vec<String> = Vec::new();
        let mut prev = "";
        for w in &words {
            let v = match (*w, prev) {
                ("DIR" | "/var/lib/tasksnap" | "/var/lib/tasksnap/history" | "/tmp/x", _) => {
                    rec.dir.to_string_lossy().into_owned()
                }
                (_, "-o" | "--output") if words[0] == "dump" => {
                    rec.scratch.join(w).to_string_lossy().into_owned()
                }
                (_, "--flamegraph") => rec.scratch.join(w).to_string_lossy().into_owned(),
                ("T", "--at") => rec.last.clone(),
                ("PID", _) => std::process::id().to_string(),
                _ => w.to_string(),
            };
            args.push(v);
            prev = w;
        }
        match words[0] {
            "top" if !words.contains(&"-b") => args.extend(["-b", "-n", "1"].map(String::from)),
            "top" => {
                // `-n 60` frames of a four-sample recording: one is enough here.
                if let Some(i) = args.iter().position(|a| a == "-n") {
                    args[i + 1] = "1".into();
                }
            }
            "record" => {
                // The documented recorder runs until stopped: a fresh store, one sample.
                let i = args.iter().position(|a| a == "--dir").expect("--dir") + 1;
                args[i] = rec.scratch.join("rec").to_string_lossy().into_owned();
                args.extend(["--count", "1"].map(String::from));
            }
            _ => {}
        }
        out.push((format!("{doc}: tasksnap {cmd}"), args));
    }
    out
}

fn run(args: &[String]) -> Output {
    tasksnap(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The same arguments with every time option's value moved inside the recording: `--from`
/// to its first sample, `--to` and `--at` to its last.
fn inside(args: &[String], rec: &Recording) -> Vec<String> {
    let mut out = args.to_vec();
    for i in 0..out.len().saturating_sub(1) {
        match out[i].as_str() {
            "--from" => out[i + 1] = rec.first.clone(),
            "--to" | "--at" => out[i + 1] = rec.last.clone(),
            _ => {}
        }
    }
    out
}

#[test]
fn documented_history_examples_run_as_written() {
    let rec = recording();
    let examples = history_examples(rec);
    // The pages show at least these: if the extraction finds fewer, it has broken.
    for must in [
        "--from -1h --to -50m",
        "--at -10m",
        "dump --dir DIR --what threads --from -1h",
    ] {
        assert!(
            examples.iter().any(|(name, _)| name.contains(must)),
            "no documented example with {must:?} found: {:?}",
            examples.iter().map(|e| &e.0).collect::<Vec<_>>()
        );
    }
    let mut failures = Vec::new();
    for (name, args) in &examples {
        let out = run(args);
        let err = text(&out.stderr);
        let code = out.status.code();
        let ok = code == Some(0) || (code == Some(1) && err.contains("outside the recording"));
        if !ok {
            failures.push(format!("{name}\n  ran {args:?}\n  exit {code:?}: {err}"));
            continue;
        }
        let moved = inside(args, rec);
        let out = run(&moved);
        if !out.status.success() {
            failures.push(format!(
                "{name}\n  with its times inside the recording: {moved:?}\n  exit {:?}: {}",
                out.status.code(),
                text(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn dump_from_minus_one_hour_is_not_refused_as_an_unexpected_argument() {
    let rec = recording();
    let d = rec.dir.to_string_lossy().into_owned();
    for args in [
        vec!["dump", "--dir", &d, "--from", "-1h"],
        vec!["dump", "--dir", &d, "--from=-1h"],
        vec!["dump", "--dir", &d, "--from", "-1h", "--to", "now"],
        vec!["dump", "--dir", &d, "--what", "threads", "--from", "-10m"],
    ] {
        let out = tasksnap_ok(&args);
        // A header and the recording's rows.
        assert!(
            text(&out.stdout).lines().count() > 1,
            "{args:?} printed no rows"
        );
    }
}

#[test]
fn states_replay_from_minus_one_hour_to_minus_fifty_minutes_parses() {
    let rec = recording();
    let d = rec.dir.to_string_lossy().into_owned();
    // The documented window is before this recording: said, exit 1, never a usage error.
    for args in [
        vec!["states", "--replay", &d, "--from", "-1h", "--to", "-50m"],
        vec!["states", "--replay", &d, "--from=-1h", "--to=-50m"],
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let out = run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("outside the recording"), "{args:?}: {err}");
    }
    // A window that begins before the recording is the part that was recorded.
    for args in [
        vec!["states", "--replay", &d, "--from", "-1h"],
        vec!["states", "--replay", &d, "--from=-10m", "--to", "now"],
    ] {
        let out = tasksnap_ok(&args);
        assert!(text(&out.stdout).contains("PID"), "{args:?}: no table");
    }
}

#[test]
fn every_time_option_takes_a_relative_time_in_every_spelling() {
    let rec = recording();
    let d = rec.dir.to_string_lossy().into_owned();
    // (the command before the option, the option): every time option of every subcommand.
    let options: [(&[&str], &str); 6] = [
        (&["ps", "--replay", &d, "-e"], "--at"),
        (&["top", "-b", "-n", "1", "--replay", &d], "--at"),
        (&["states", "--replay", &d], "--from"),
        (&["states", "--replay", &d, "--from", &rec.first], "--to"),
        (&["dump", "--dir", &d], "--from"),
        (&["dump", "--dir", &d], "--to"),
    ];
    for (cmd, opt) in options {
        for value in ["-1h", "-10m", "-1h30m"] {
            for spelled in [
                vec![opt.to_string(), value.to_string()],
                vec![format!("{opt}={value}")],
            ] {
                let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
                args.extend(spelled);
                let out = run(&args);
                let err = text(&out.stderr);
                // A time long before this recording: outside it, after --from, or (for
                // --from) the whole of it; never a usage error.
                assert_ne!(out.status.code(), Some(2), "{args:?}: {err}");
                assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
                let said = [
                    "outside the recording",
                    "must be before --to",
                    "is after --to",
                ];
                assert!(
                    out.status.success() || said.iter().any(|s| err.contains(s)),
                    "{args:?}: exit {:?}: {err}",
                    out.status.code()
                );
            }
        }
    }
}
