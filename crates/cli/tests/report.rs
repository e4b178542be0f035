//! `tasksnap report` on a recording of processes this test spawns: two that spin (one
//! started through a link with a hostile name, `<b>&"'\xff\x1b`, and a command line that
//! tries to close the page's script and inject an element), one that spins briefly and exits
//! while recording. The top-processes table gives the same CPU as `dump` for the same
//! window; the hostile name is text in the file, never markup; and in Debian's Chromium
//! (headless, driven by Selenium) the page logs nothing, fetches nothing, draws every chart
//! with one vertex per sample or interval, shows the hostile name as a text node and nothing
//! it tried to inject, and hovering and choosing a moment work. A report made from a Parquet
//! dump of the same recording (plain files named anyhow, or `--partition` directories) has
//! the same top-processes table and moments, escapes the same, passes the same checks in
//! Chromium, and says what a dump without some tables leaves out; a corrupt or foreign Parquet file in the directory is an error naming it,
//! and a link is not followed. Only the test's processes are compared.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

mod common;

use common::recording::{duckdb_python, start_recorder, store_dir};
use common::{samples_so_far, tasksnap_ok};
use tasksnap_loadgen::wait_until;

/// The hostile link's name: the spinner's comm.
const HOSTILE_COMM: &[u8] = b"<b>&\"'\xff\x1b";
/// The hostile spinner's `argv[0]`.
const HOSTILE_ARGV0: &[u8] =
    b"</script><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">&amp;'\xff";
/// How it reads as text: invalid UTF-8 replaced.
const HOSTILE_TEXT: &str =
    "</script><script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">&amp;'\u{fffd}";

/// Processes in their own process groups, killed (SIGKILL to each group) on drop.
struct Spawned(Vec<Child>);

impl Drop for Spawned {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill(2) on the process group this test made for its own child.
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    report: PathBuf,
    html: String,
    /// The test's processes: the hostile spinner, the plain one, the one that exited.
    pids: [i32; 3],
}

/// `program -c script` named `argv0`, in a process group of its own, at nice 19 (on a
/// small busy machine the recorder keeps its pace).
fn spin(program: &std::path::Path, argv0: &[u8], script: &str) -> Child {
    let mut c = Command::new(program);
    c.arg0(OsStr::from_bytes(argv0))
        .args(["-c", script])
        .process_group(0)
        .stdin(Stdio::null());
    // SAFETY: nice(2) is async-signal-safe; the closure allocates nothing.
    unsafe {
        c.pre_exec(|| {
            libc::nice(19);
            Ok(())
        })
    };
    c.spawn().expect("spawn")
}

/// Records about 3 s of the test's processes (12 samples 0.25 s apart) and writes the
/// report, once for every test of this file.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (tmp, dir) = store_dir();
        let link = tmp.path().join(OsStr::from_bytes(HOSTILE_COMM));
        std::os::unix::fs::symlink("/bin/sh", &link).expect("symlink");
        let mut spawned = Spawned(vec![
            spin(&link, HOSTILE_ARGV0, "while :; do :; done"),
            spin(
                std::path::Path::new("/bin/sh"),
                b"tsreport-spinner",
                "while :; do :; done",
            ),
        ]);
        let mut recorder = start_recorder(&dir, "0.25", 12);
        // The short one starts after the first samples, so that it lives inside the window.
        wait_until("two samples", || samples_so_far(&dir) >= 2);
        let mut short = spin(
            std::path::Path::new("/bin/sh"),
            b"tsreport-short",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        );
        let short_pid = short.id() as i32;
        short.wait().expect("the short spinner");
        assert!(
            recorder.wait().expect("recorder").success(),
            "record failed"
        );
        let pids = [
            spawned.0[0].id() as i32,
            spawned.0[1].id() as i32,
            short_pid,
        ];
        spawned.0.iter_mut().for_each(|c| {
            let _ = c.kill();
        });
        drop(spawned);
        let report = tmp.path().join("report.html");
        tasksnap_ok(&[
            "report",
            "--dir",
            dir.to_str().expect("utf-8"),
            "--top",
            "1000",
            "-o",
            report.to_str().expect("utf-8"),
        ]);
        let html = std::fs::read_to_string(&report).expect("the report is UTF-8");
        Fixture {
            _tmp: tmp,
            dir,
            report,
            html,
            pids,
        }
    })
}

/// `dump --what TABLE MORE...` of the whole recording, which must succeed.
fn dump_with(f: &Fixture, what: &str, more: &[&str]) -> std::process::Output {
    let mut args = vec![
        "dump",
        "--dir",
        f.dir.to_str().expect("utf-8"),
        "--what",
        what,
    ];
    args.extend(more);
    tasksnap_ok(&args)
}

/// `dump --what TABLE --format csv --fields FIELDS` of the whole recording, as rows of
/// text by field name.
fn dump(f: &Fixture, what: &str, fields: &str) -> Vec<HashMap<String, String>> {
    let out = dump_with(f, what, &["--format", "csv", "--fields", fields]);
    let mut r = csv::Reader::from_reader(&out.stdout[..]);
    let head: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    r.records()
        .map(|rec| {
            let rec = rec.expect("row");
            head.iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// The top-processes table's CPU ns of `pid` (`data-cpu-ns` of its row).
fn report_cpu_ns(html: &str, pid: i32) -> Option<u64> {
    let tag = format!("<tr data-pid=\"{pid}\" ");
    let row = &html[html.find(&tag)?..];
    let v = row.split("data-cpu-ns=\"").nth(1)?.split('"').next()?;
    v.parse().ok()
}

#[test]
fn the_top_processes_table_is_what_dump_gives() {
    let f = fixture();
    let rows = dump(f, "processes", "time,pid,cpu_seconds,exit_time");
    let first = rows.first().expect("rows")["time"].clone();
    for (i, pid) in f.pids.iter().enumerate() {
        let mine: Vec<&HashMap<String, String>> = rows
            .iter()
            .filter(|r| r["pid"] == pid.to_string())
            .collect();
        let cpu = |r: &HashMap<String, String>| r["cpu_seconds"].parse::<f64>().expect("cpu");
        let (Some(a), Some(b)) = (mine.first(), mine.last()) else {
            // Without root there are no exit records: the short one may fall between samples.
            let root = std::os::unix::fs::MetadataExt::uid(
                &std::fs::metadata("/proc/self").expect("/proc/self"),
            ) == 0;
            assert!(i == 2 && !root, "pid {pid} is not in the dump");
            continue;
        };
        let base = if a["time"] == first { cpu(a) } else { 0.0 };
        let want = cpu(b) - base;
        let got = report_cpu_ns(&f.html, *pid)
            .unwrap_or_else(|| panic!("pid {pid} is not in the report's table"));
        assert!(
            (got as f64 / 1e9 - want).abs() < 1e-6,
            "pid {pid}: report {got} ns, dump {want} s"
        );
        if i < 2 {
            // The spinners ran in the window (at nice 19 beside CI's other lanes on two
            // CPUs they may get a few per cent of one, so only "ran" is asserted).
            assert!(want > 0.0, "pid {pid} did not run in the window");
        }
    }
}

#[test]
fn a_hostile_name_is_text_never_markup() {
    assert_escaped(&fixture().html);
}

/// The hostile process's names are text in `html`, never markup.
fn assert_escaped(html: &str) {
    assert!(!html.contains("<script>window.pwned"), "injected script");
    assert!(!html.contains("<img"), "injected element");
    assert!(!html.contains("<b>&"), "the comm as markup");
    let escaped = "&lt;/script&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x \
                   onerror=&quot;window.pwned=2&quot;&gt;&amp;amp;&#39;\u{fffd}";
    assert!(html.contains(escaped), "the command line as text");
    assert!(
        html.contains("&lt;b&gt;&amp;&quot;&#39;\u{fffd}?"),
        "the comm as text"
    );
    // Two script elements, the page's own (its chart data and its code).
    assert_eq!(html.matches("<script").count(), 2);
}

/// `dump --what TABLE --format parquet` of the whole recording to `out` (a file, or with
/// `--partition` the directory of its partitions).
fn dump_parquet(f: &Fixture, what: &str, out: &std::path::Path, partition: bool) {
    let out = out.to_str().expect("utf-8");
    let mut more = vec!["--format", "parquet", "--output", out];
    if partition {
        more.push("--partition");
    }
    dump_with(f, what, &more);
}

/// `report --dir DIR --top 1000` as HTML, after asserting it succeeded and did not panic.
fn report_of(dir: &std::path::Path) -> String {
    let out = tasksnap_ok(&[
        "report",
        "--dir",
        dir.to_str().expect("utf-8"),
        "--top",
        "1000",
    ]);
    assert!(!common::text(&out.stderr).contains("panicked"));
    String::from_utf8(out.stdout).expect("the report is UTF-8")
}

/// The moments of a page: why each is listed, and its listing's rows without their %CPU
/// (the rest is exact; %CPU divides by the interval, which a dump keeps to the µs).
fn moments_of(html: &str) -> Vec<(String, Vec<String>)> {
    let whys = html.split("<li><a class=\"moment\"").skip(1).map(|li| {
        li.split("</a> ")
            .nth(1)
            .and_then(|w| w.split("</li>").next())
    });
    let listings = html.split("<div class=\"listing\"").skip(1).map(|l| {
        let body = l.split("</div>").next().unwrap_or("");
        body.split("<tr")
            .skip(2)
            .map(|row| {
                // The cells: what precedes the first, PID, USER, %CPU, RSS, S, THR, COMMAND.
                let cells: Vec<&str> = row.split("<td").collect();
                cells
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != 3)
                    .map(|(_, c)| *c)
                    .collect()
            })
            .collect()
    });
    whys.zip(listings)
        .map(|(w, l)| (w.expect("a moment's why").to_string(), l))
        .collect()
}

/// The test's processes have the same CPU in `html`'s table as in the recording's report.
fn assert_same_cpu(f: &Fixture, html: &str, what: &str) {
    for pid in f.pids {
        let (want, got) = (report_cpu_ns(&f.html, pid), report_cpu_ns(html, pid));
        assert_eq!(
            got, want,
            "pid {pid}'s CPU ns, {what} against the recording"
        );
    }
    // The spinners ran in the window: the comparison is of figures, not of two absences.
    assert!(report_cpu_ns(html, f.pids[0]).is_some_and(|ns| ns > 0));
}

/// `html` lists the moments of the recording's report, for the same reasons, with the same
/// listings (but for %CPU).
fn assert_same_moments(f: &Fixture, html: &str, what: &str) {
    let (want, got) = (moments_of(&f.html), moments_of(html));
    assert!(!want.is_empty(), "the recording's page lists no moment");
    assert!(
        got == want,
        "the moments, {what}: {got:#?}\nagainst the recording's {want:#?}"
    );
}

#[test]
fn a_parquet_dump_makes_the_same_top_processes_table() {
    let f = fixture();
    let tmp = tempfile::tempdir().expect("tempdir");
    // Plain files, named for nothing: each one's table is known by its columns.
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    for (what, name) in [
        ("threads", "1.parquet"),
        ("processes", "2.parquet"),
        ("system", "3.parquet"),
    ] {
        dump_parquet(f, what, &plain.join(name), false);
    }
    // The partitioned layout, a table per directory.
    let parts = tmp.path().join("parts");
    for what in ["processes", "threads", "system"] {
        dump_parquet(f, what, &parts.join(what), true);
    }
    for (dir, what) in [(&plain, "plain files"), (&parts, "partitions")] {
        let html = report_of(dir);
        assert_same_cpu(f, &html, what);
        assert_same_moments(f, &html, what);
        assert_escaped(&html);
        for id in ["host-cpu", "cpu-comm", "states", "exits"] {
            assert!(
                html.contains(&format!("id=\"{id}\"")),
                "{what}: no {id} chart"
            );
        }
        assert!(!html.contains("The dump has no"), "{what}: a table missed");
    }
    // Only the processes: the page says what it leaves out, and has the same table.
    let only = tmp.path().join("only");
    std::fs::create_dir(&only).expect("mkdir");
    dump_parquet(f, "processes", &only.join("p.parquet"), false);
    let html = report_of(&only);
    assert_same_cpu(f, &html, "the processes table alone");
    assert!(html.contains("The dump has no system table"));
    assert!(html.contains("The dump has no threads table"));
    assert!(!html.contains("id=\"host-cpu\"") && !html.contains("id=\"states\""));
}

#[test]
fn a_corrupt_or_foreign_parquet_file_is_an_error_naming_it() {
    let f = fixture();
    let tmp = tempfile::tempdir().expect("tempdir");
    let good = tmp.path().join("good.parquet");
    dump_parquet(f, "processes", &good, false);
    let fails = |name: &str, bytes: &[u8], said: &str| {
        let dir = tmp.path().join(format!("d-{name}"));
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::copy(&good, dir.join("processes.parquet")).expect("copy");
        std::fs::write(dir.join(name), bytes).expect("write");
        let out = common::tasksnap(&["report", "--dir", dir.to_str().expect("utf-8")]);
        let err = common::failed_saying(&out, 1, said, name);
        assert!(err.contains(name), "{name}: the file is not named: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: a page was written");
    };
    let real = std::fs::read(&good).expect("read");
    fails("empty.parquet", b"", "not a Parquet file");
    fails(
        "junk.parquet",
        b"PAR1 this is no footer PAR1",
        "not a Parquet file",
    );
    // A real file cut short (no footer).
    fails("cut.parquet", &real[..real.len() / 2], "not a Parquet file");
    // Its footer intact and its pages scrambled: found to be bad when read.
    let mut scrambled = real.clone();
    let n = scrambled.len();
    let footer: [u8; 4] = real[n - 8..n - 4].try_into().expect("four bytes");
    let pages_end = n - 8 - u32::from_le_bytes(footer) as usize;
    scrambled[4..pages_end].iter_mut().for_each(|b| *b = !*b);
    fails("scrambled.parquet", &scrambled, "cannot read");
    // A dump of columns no table has all it needs of (processes without cpu_seconds).
    let foreign = tmp.path().join("foreign.parquet");
    let foreign_path = foreign.to_str().expect("utf-8");
    dump_with(
        f,
        "processes",
        &[
            "--fields",
            "time,pid",
            "--format",
            "parquet",
            "-o",
            foreign_path,
        ],
    );
    fails(
        "foreign.parquet",
        &std::fs::read(&foreign).expect("read"),
        "none of tasksnap dump's tables",
    );
    // A table's columns of other types than dump writes (DuckDB's text CPU), and a file
    // compressed otherwise than dump does (DuckDB's snappy): errors naming them.
    if let Some(py) = duckdb_python() {
        for (name, codec, said) in [
            (
                "typed.parquet",
                "zstd",
                "column cpu_seconds is Utf8, not what tasksnap dump writes",
            ),
            ("snappy.parquet", "snappy", "a codec tasksnap does not read"),
        ] {
            let path = tmp.path().join(name);
            let sql = format!(
                "COPY (SELECT TIMESTAMPTZ '2026-11-29 00:00:00+00' AS time, 1::BIGINT AS pid, \
                 '1.5' AS cpu_seconds) TO '{}' (FORMAT parquet, COMPRESSION {codec})",
                path.display()
            );
            let status = Command::new(&py)
                .args(["-c", &format!("import duckdb; duckdb.sql({sql:?})")])
                .status()
                .expect("run duckdb");
            assert!(status.success(), "duckdb wrote no {name}");
            fails(name, &std::fs::read(&path).expect("read"), said);
        }
    }
    // A link is not followed: the file it points at is not read twice (no overlap refused).
    let linked = tmp.path().join("linked");
    std::fs::create_dir(&linked).expect("mkdir");
    std::fs::copy(&good, linked.join("processes.parquet")).expect("copy");
    std::os::unix::fs::symlink(&good, linked.join("again.parquet")).expect("symlink");
    let out = common::tasksnap(&["report", "--dir", linked.to_str().expect("utf-8")]);
    common::ok(&out, "report beside a link");
    assert!(common::text(&out.stderr).contains("again.parquet: a link, not followed"));
}

/// Chromium and chromedriver (Debian's, `./x deps` installs them) and the test Python with
/// Selenium; `None` (skipped, said) without them, a failure when every test must run.
fn browser_python() -> Option<String> {
    let py = duckdb_python()?;
    let have = ["/usr/bin/chromium", "/usr/bin/chromedriver"]
        .iter()
        .all(|p| std::path::Path::new(p).exists());
    let selenium = Command::new(&py)
        .args(["-c", "import selenium"])
        .status()
        .is_ok_and(|s| s.success());
    if have && selenium {
        return Some(py);
    }
    if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") {
        panic!("chromium, chromedriver or selenium missing (./x deps installs them)");
    }
    eprintln!("SKIP: chromium, chromedriver or selenium missing (./x deps installs them)");
    None
}

#[test]
fn the_page_in_a_browser() {
    let Some(py) = browser_python() else { return };
    let f = fixture();
    let samples = dump(f, "system", "time").len();
    assert_eq!(samples, 12, "the recording's samples");
    browse(&py, &f.report, samples);
    // The page a Parquet dump of the recording makes passes the same checks.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dump");
    std::fs::create_dir(&dir).expect("mkdir");
    for what in ["processes", "threads", "system"] {
        dump_parquet(f, what, &dir.join(format!("{what}.parquet")), false);
    }
    let page = tmp.path().join("dump.html");
    let (dir, page_s) = (dir.to_str().expect("utf-8"), page.to_str().expect("utf-8"));
    tasksnap_ok(&["report", "--dir", dir, "--top", "1000", "-o", page_s]);
    browse(&py, &page, samples);
}

/// Opens `page` (of a window of `samples` samples) in Chromium and checks what it did.
fn browse(py: &str, page: &std::path::Path, samples: usize) {
    let profile = tempfile::tempdir().expect("profile dir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/report_browser.py");
    let out = Command::new(py)
        .args([script, page.to_str().expect("utf-8")])
        .arg(profile.path())
        .output()
        .expect("run the browser");
    assert!(
        out.status.success(),
        "browser: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["console"], serde_json::json!([]), "console messages");
    let page_url = format!("file://{}", page.display());
    assert_eq!(v["requests"], serde_json::json!([page_url]), "requests");
    // One vertex per sample (memory, load) or per interval (the rest); areas have two.
    let charts = v["charts"].as_array().expect("charts");
    let ids: Vec<&str> = charts
        .iter()
        .map(|c| c["id"].as_str().expect("present"))
        .collect();
    for id in [
        "host-cpu",
        "host-memory",
        "host-load",
        "cpu-comm",
        "cpu-user",
        "cpu-cgroup",
        "states",
        "states-idle",
        "exits",
    ] {
        assert!(ids.contains(&id), "{id} not drawn: {ids:?}");
    }
    for c in charts {
        let id = c["id"].as_str().expect("present");
        let want = if id == "host-memory" || id == "host-load" {
            samples
        } else {
            samples - 1
        } as u64;
        assert_eq!(c["dataPoints"], want, "{id}");
        let lines = c["lines"].as_array().expect("present");
        let areas = c["areas"].as_array().expect("present");
        assert!(
            !lines.is_empty() || !areas.is_empty(),
            "{id}: nothing drawn"
        );
        for n in lines {
            assert_eq!(n.as_u64(), Some(want), "{id}: a line's vertices");
        }
        for n in areas {
            assert_eq!(n.as_u64(), Some(2 * want), "{id}: an area's vertices");
        }
    }
    let dom = &v["dom"];
    let texts: Vec<&str> = dom["texts"]
        .as_array()
        .expect("present")
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains(HOSTILE_TEXT)),
        "the hostile command line is not a text node"
    );
    assert_eq!(dom["scripts"], 2, "script elements");
    assert_eq!(dom["imgs"], 0, "injected elements");
    assert_eq!(dom["pwned"], serde_json::Value::Null, "a name ran code");
    assert!(dom["top_rows"].as_u64().expect("present") >= 3);
    assert_eq!(v["hover"]["shown"], true, "hover");
    assert!(
        v["hover"]["text"]
            .as_str()
            .expect("present")
            .contains("busy"),
        "hover text: {}",
        v["hover"]
    );
    assert_eq!(v["moment"]["shown"], true, "a chosen moment's listing");
    assert!(v["moment"]["rows"].as_u64().expect("present") > 0);
}
