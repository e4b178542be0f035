//! Every front end on a fake /proc tree (`TASKSNAP_PROC_ROOT`, read once by
//! `HostOptions::from_env`): ps, top -b, states, record + dump, serve, doctor and bench read
//! the tree of tasksnap-loadgen's `fake_proc` through the `Host`, with the procfs sources
//! (BPF reads the kernel, never a tree), and show its three processes and nothing of the
//! machine running the test.

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::Output;

use common::serve::{get, Server};
use common::{ok, on_tree, text, words};
use tasksnap_loadgen::fake_proc::{FakeProc, BASH_RSS_PAGES, BASH_VSIZE_BYTES};

fn tree(page_size: u64) -> (tempfile::TempDir, FakeProc) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeProc::build_with_page_size(dir.path(), page_size).expect("fake tree");
    (dir, fake)
}

fn run(root: &Path, page_size: Option<u64>, args: &[&str]) -> Output {
    let mut c = on_tree(root);
    if let Some(p) = page_size {
        c.env("TASKSNAP_PAGE_SIZE", p.to_string());
    }
    c.args(args).output().expect("run tasksnap")
}

/// [`run`], which must succeed: its stdout.
fn run_ok(root: &Path, page_size: Option<u64>, args: &[&str]) -> String {
    ok(&run(root, page_size, args), &format!("{args:?}"))
}

/// `ps -o sz,vsz,rss` on a machine with 64 KiB pages prints what procps prints there: SZ
/// is the address space in pages (VmSize in KiB over the page size in KiB: procps's
/// `pr_sz`), VSZ the address space in KiB, RSS stat's resident pages times 64 KiB, in KiB.
#[test]
fn ps_sizes_follow_the_page_size() {
    let (_dir, fake) = tree(65536);
    let args = words("ps -e -o pid,sz,vsz,rss,comm --backend procfs");
    let stdout = run_ok(fake.root(), Some(65536), &args);
    let bash = stdout
        .lines()
        .find(|l| l.ends_with(" bash"))
        .unwrap_or_else(|| panic!("no bash in {stdout}"));
    let f: Vec<&str> = bash.split_whitespace().collect();
    let vsz_kib = BASH_VSIZE_BYTES / 1024;
    assert_eq!(f[0], "4032");
    assert_eq!(
        f[1],
        (vsz_kib / 64).to_string(),
        "SZ: 8776 KiB in 64 KiB pages"
    );
    assert_eq!(f[2], vsz_kib.to_string());
    assert_eq!(
        f[3],
        (BASH_RSS_PAGES * 64).to_string(),
        "RSS: 1280 pages of 64 KiB"
    );
    // Only the tree's processes: nothing of the machine the test runs on.
    let pids: Vec<&str> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(pids, ["1", "4032", "6000"]);

    // The same tree with 4 KiB pages.
    let (_dir, fake) = tree(4096);
    let sizes = run_ok(
        fake.root(),
        Some(4096),
        &["ps", "-p", "4032", "-o", "sz=,vsz=,rss="],
    );
    let f: Vec<String> = sizes.split_whitespace().map(String::from).collect();
    assert_eq!(
        f,
        [
            (vsz_kib / 4).to_string(),
            vsz_kib.to_string(),
            (BASH_RSS_PAGES * 4).to_string()
        ]
    );
}

/// `auto` takes the procfs collector for a tree, and `-v` says why; `--backend bpf` is an
/// error there (the programs read the kernel, not the tree).
#[test]
fn a_tree_is_read_by_procfs_only() {
    let (_dir, fake) = tree(4096);
    let out = run(fake.root(), None, &["ps", "-e", "-o", "pid=", "--verbose"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not the running kernel's /proc"),
        "{}",
        text(&out.stderr)
    );
    let out = run(fake.root(), None, &["ps", "-e", "--backend", "bpf"]);
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn top_batch_shows_the_tree() {
    let (_dir, fake) = tree(4096);
    let s = run_ok(fake.root(), None, &["top", "-b", "-n", "1"]);
    for name in ["systemd", "bash", "worker"] {
        assert!(s.contains(name), "{name} not in {s}");
    }
    // The header's figures are the tree's: its load averages and memory.
    assert!(s.contains("0.52, 0.33, 0.20"), "{s}");
    assert!(s.contains("24105.6") || s.contains("24684148"), "{s}");
}

/// `top -b --exited` where there are no exit records (a fake tree is not the running
/// kernel's): said once on stderr, and the frames go on as procps top's, with the EXIT
/// column (`-` on every live row) and no exited count on the "Tasks:" line.
#[test]
fn top_exited_view_without_exit_records_says_so_once() {
    let (_dir, fake) = tree(4096);
    let out = run(
        fake.root(),
        None,
        &["top", "-b", "-n", "2", "-d", "0.1", "--exited"],
    );
    let s = ok(&out, "top --exited");
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("--exited: no exited processes").count(),
        1,
        "{err}"
    );
    assert_eq!(s.matches(" EXIT COMMAND").count(), 2, "{s}");
    assert!(!s.contains(" exited ("), "{s}");
    assert!(!s.contains(" E "), "{s}");
    assert!(s.contains("bash"), "{s}");
}

#[test]
fn states_reads_the_trees_threads() {
    let (_dir, fake) = tree(4096);
    let args = words("states --mode procfs -i 0.2 -n 1 --threads");
    let s = run_ok(fake.root(), None, &args);
    for tid in ["4032", "6001"] {
        assert!(s.contains(tid), "thread {tid} not in {s}");
    }
}

#[test]
fn record_then_dump_keeps_the_trees_tasks() {
    let (_dir, fake) = tree(4096);
    let store = tempfile::tempdir().expect("store");
    let d = store.path().join("rec");
    let d = d.to_str().expect("utf-8 path");
    let record = ["record", "--dir", d, "--count", "1", "--backend", "procfs"];
    run_ok(fake.root(), None, &record);
    let s = run_ok(
        fake.root(),
        None,
        &["dump", "--dir", d, "--what", "processes"],
    );
    for name in ["systemd", "bash", "worker"] {
        assert!(s.contains(name), "{name} not in {s}");
    }
    // And the recording replays as the tree was.
    let replayed = run_ok(
        fake.root(),
        None,
        &["ps", "--replay", d, "-e", "-o", "pid=,comm="],
    );
    let pids: Vec<String> = replayed
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert_eq!(pids, ["1", "4032", "6000"]);
}

#[test]
fn serve_exposes_the_trees_processes() {
    let (_dir, fake) = tree(4096);
    let mut server = Server::spawn(on_tree(fake.root()).args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--backend",
        "procfs",
    ]));
    let reply = get(server.addr, "/metrics", &[]);
    // No exit records for a tree that is not the running kernel's /proc: said right after
    // the start line, and in the source info.
    let mut said = String::new();
    server
        .stderr
        .read_line(&mut said)
        .expect("the line after the start line");
    drop(server);
    assert_eq!(reply.status, 200);
    assert!(said.contains("no exit records"), "{said}");
    assert!(reply.body.contains("exits=\"none\""), "{}", reply.body);
    assert!(
        !reply.body.contains("tasksnap_exits_dropped"),
        "{}",
        reply.body
    );
    for name in ["systemd", "bash", "worker"] {
        assert!(
            reply.body.contains(&format!("group=\"{name}\"")),
            "{name} not in {}",
            reply.body
        );
    }
}

#[test]
fn doctor_and_bench_count_the_trees_processes() {
    let (_dir, fake) = tree(4096);
    let out = run(fake.root(), None, &["doctor"]);
    let s = text(&out.stdout);
    assert!(s.contains("3 processes, 4 threads"), "{s}");
    assert!(s.contains("is not the running kernel's /proc"), "{s}");
    let bench = run_ok(fake.root(), None, &["bench", "--runs", "1", "--json"]);
    assert!(bench.contains("tasksnap procfs collector"), "{bench}");
}
