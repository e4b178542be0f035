//! `tasksnap serve` against bad input and bad clients, on loopback: a port in use, bad
//! configurations and addresses, a huge request, clients that never read, 1,000 connections
//! at once, unknown paths and methods; content negotiation; the series count of a group that
//! gains processes; and a clean stop. Each ends with a message or a quick error response and
//! an exporter that still answers.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{get, read_reply, series, value, Config, Server};
use common::{tasksnap, text, TASKSNAP};
use tasksnap_loadgen::Load;

fn serve_fails(args: &[&str]) -> (Option<i32>, String) {
    let out = tasksnap(&[&["serve"][..], args].concat());
    (out.status.code(), text(&out.stderr))
}

#[test]
fn a_port_in_use_is_said_at_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let t0 = Instant::now();
    let (code, said) = serve_fails(&["--listen", &addr]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("is in use"), "{said}");
    // Said before loading anything (BPF loads take a second or more).
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn bad_addresses_and_configurations_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_yaml = dir.path().join("bad.yml");
    std::fs::write(&bad_yaml, "process_names: [").expect("write");
    let bad_regex = dir.path().join("regex.yml");
    std::fs::write(&bad_regex, "process_names:\n  - cmdline: ['(']\n").expect("write");
    let binary = dir.path().join("binary.yml");
    std::fs::write(&binary, [0u8, 159, 146, 150, 255]).expect("write");
    let missing = dir.path().join("missing.yml");
    let cases: [(Vec<&str>, &str); 8] = [
        (vec!["--listen", ":8275"], "names no address"),
        (vec!["--listen", "localhost"], "is not ADDR:PORT"),
        (vec!["--interval", "0"], "between 0.1 and 3600"),
        (
            vec!["--group-by", "pid"],
            "[possible values: comm, user, cgroup, exe]",
        ),
        (
            vec!["--config", bad_yaml.to_str().expect("utf-8")],
            "not a process-exporter",
        ),
        (
            vec!["--config", bad_regex.to_str().expect("utf-8")],
            "bad cmdline regex",
        ),
        (
            vec!["--config", binary.to_str().expect("utf-8")],
            "cannot read",
        ),
        (
            vec!["--config", missing.to_str().expect("utf-8")],
            "cannot read",
        ),
    ];
    for (args, want) in cases {
        let (code, said) = serve_fails(&args);
        assert_eq!(code, Some(2), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
    }
}

#[test]
fn it_listens_on_loopback_unless_told_otherwise() {
    let mut child = Command::new(TASKSNAP)
        // The exporter alone: a query socket at the shared default path would be another
        // test's to find.
        .args(["serve", "--interval", "60", "--no-query-socket"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().expect("stderr")),
        &mut line,
    )
    .expect("read");
    let _ = child.kill();
    let _ = child.wait();
    // The default port may be taken on a developer's machine; the address is the point.
    assert!(
        line.contains("http://127.0.0.1:8275/metrics") || line.contains("127.0.0.1:8275 is in use"),
        "{line}"
    );
}

#[test]
fn the_formats_follow_the_accept_header_and_other_paths_are_refused() {
    let s = Server::start(&["--interval", "60", "--backend", "procfs"]);
    let om = get(
        s.addr,
        "/metrics",
        &[(
            "Accept",
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
        )],
    );
    assert_eq!(om.status, 200);
    assert!(
        om.headers.contains("application/openmetrics-text"),
        "{}",
        om.headers
    );
    assert!(om.body.ends_with("# EOF\n"));
    assert!(om
        .body
        .contains("# TYPE tasksnap_group_cpu_seconds counter"));
    let text = get(s.addr, "/metrics", &[]);
    assert!(
        text.headers.contains("text/plain; version=0.0.4"),
        "{}",
        text.headers
    );
    assert!(!text.body.contains("# EOF"));
    assert!(!text.body.contains("# UNIT"));
    assert!(text
        .body
        .contains("# TYPE tasksnap_group_cpu_seconds_total counter"));
    assert!(text.body.contains("# TYPE tasksnap_source_info gauge"));
    // The sample lines are the same in both.
    let samples = |b: &str| b.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(samples(&om.body), samples(&text.body));
    assert_eq!(get(s.addr, "/nope", &[]).status, 404);
    assert_eq!(get(s.addr, "/", &[]).status, 200);
    let mut c = TcpStream::connect(s.addr).expect("connect");
    c.write_all(
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    )
    .expect("send");
    let r = read_reply(&mut c);
    assert_eq!(r.status, 405);
    assert!(r.headers.contains("GET, HEAD"), "{}", r.headers);
}

#[test]
fn no_command_line_reaches_a_label() {
    // A process with a secret in its command line (argv[0] included, as a process title
    // rewritten by the program would be).
    let secret = "tsnap-secret-hunter2";
    let g = tasksnap_loadgen::ProcessGroup::spawn(
        1,
        &["bash", "-c", "exec -a \"$0\" sleep 1000", secret],
    )
    .expect("spawn");
    let pid = g.pids()[0];
    tasksnap_loadgen::wait_until("the sleeper to exec", || {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.starts_with(secret.as_bytes()))
    });
    let config = Config::new(
        "process_names:\n  - cmdline: ['hunter2']\n  - name: '{{.Comm}}'\n    cmdline: ['.+']\n",
    );
    let config = config.path();
    for args in [
        vec!["--top-n", "1000"],
        vec!["--group-by", "exe"],
        vec!["--group-by", "cgroup"],
        vec!["--config", config, "--top-n", "1000"],
    ] {
        let mut a = vec!["--interval", "60", "--backend", "procfs"];
        a.extend(&args);
        let s = Server::start(&a);
        let e = s.scrape();
        assert!(!e.contains("hunter2"), "{args:?}: {e}");
        if args.contains(&"--config") {
            // The rule that matched on the secret names the group after the executable.
            assert!(
                value(&e, "tasksnap_group_processes{group=\"sleep\"}").is_some(),
                "{e}"
            );
        }
    }
    drop(g);
}

#[test]
fn a_huge_request_is_refused_and_the_exporter_goes_on() {
    let s = Server::start(&["--interval", "60", "--backend", "procfs"]);
    let mut c = TcpStream::connect(s.addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut req = String::from("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    for i in 0..2000 {
        req.push_str(&format!("X-Filler-{i}: {}\r\n", "a".repeat(100)));
    }
    req.push_str("\r\n");
    // The server may close before it has read it all.
    let _ = c.write_all(req.as_bytes());
    let mut raw = Vec::new();
    let _ = std::io::Read::read_to_end(&mut c, &mut raw);
    let r = common::serve::parse_reply(&raw);
    assert!(r.status == 431 || raw.is_empty(), "{}", r.headers);
    // A huge path too.
    let long = format!("/metrics?{}", "x".repeat(64 * 1024));
    let mut c = TcpStream::connect(s.addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let _ = c.write_all(format!("GET {long} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    let mut raw = Vec::new();
    let _ = std::io::Read::read_to_end(&mut c, &mut raw);
    let r = common::serve::parse_reply(&raw);
    assert!(r.status >= 400 || raw.is_empty(), "{}", r.headers);
    assert!(s.scrape().contains("tasksnap_processes"));
}

#[test]
fn clients_that_never_read_do_not_stop_the_others() {
    let s = Server::start(&["--interval", "60", "--backend", "procfs", "--top-n", "50"]);
    // Forty clients ask and never read; their answers fill the socket buffers.
    let stuck: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).expect("connect");
            for _ in 0..50 {
                let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            }
            c
        })
        .collect();
    // Ten more connect and say nothing.
    let silent: Vec<TcpStream> = (0..10)
        .map(|_| TcpStream::connect(s.addr).expect("connect"))
        .collect();
    for _ in 0..20 {
        assert!(s.scrape().contains("tasksnap_processes"));
    }
    drop(stuck);
    drop(silent);
    assert!(s.scrape().contains("tasksnap_processes"));
}

fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct they are given.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(8192);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

#[test]
fn a_thousand_scrapes_at_once_are_all_answered() {
    raise_nofile();
    let s = Server::start(&["--interval", "60", "--backend", "procfs"]);
    let mut conns: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(s.addr).expect("connect"))
        .collect();
    for c in &mut conns {
        c.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("send");
    }
    let mut ok = 0;
    let mut busy = 0;
    for mut c in conns {
        let r = read_reply(&mut c);
        match r.status {
            200 => {
                assert!(r.body.contains("tasksnap_build_info"));
                ok += 1;
            }
            503 => busy += 1,
            other => panic!("status {other}: {}", r.headers),
        }
    }
    assert_eq!(ok + busy, 1000);
    // 1,000 is within the exporter's connection limit: all of them are served.
    assert_eq!(busy, 0);
    let (code, said) = s.terminate();
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("1000 scrapes answered"), "{said}");
}

#[test]
fn a_group_gaining_processes_keeps_its_series() {
    let load = Load::spawn(&["--procs", "5"]).expect("load");
    let s = Server::start(&["--interval", "0.2", "--backend", "procfs"]);
    let count = |e: &str| {
        series(e, "tasksnap_group_")
            .iter()
            .filter(|l| l.contains("group=\"lg-proc\""))
            .count()
    };
    let before = s.scrape();
    let n0 = count(&before);
    assert!(n0 > 10, "{n0}");
    assert!(value(&before, "tasksnap_group_processes{group=\"lg-proc\"}").unwrap_or(0.0) >= 5.0);
    let more = Load::spawn(&["--procs", "300"]).expect("load");
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let e = s.scrape();
        if value(&e, "tasksnap_group_processes{group=\"lg-proc\"}").unwrap_or(0.0) >= 305.0 {
            break e;
        }
        assert!(Instant::now() < deadline, "the new processes never showed");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(count(&after), n0);
    drop(more);
    drop(load);
}

#[test]
fn max_series_folds_groups_into_other_and_says_how_many() {
    let load = Load::spawn(&["--procs", "3", "--odd-names"]).expect("load");
    let s = Server::start(&[
        "--interval",
        "0.2",
        "--backend",
        "procfs",
        "--max-series",
        "300",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let e = loop {
        let e = s.scrape();
        if value(&e, "tasksnap_collections_total").unwrap_or(0.0) >= 2.0 {
            break e;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(100));
    };
    let n = e.lines().filter(|l| !l.starts_with('#')).count();
    assert!(n <= 300, "{n} series");
    let folded = value(&e, "tasksnap_groups_folded").expect("folded gauge");
    assert!(folded >= 1.0, "{folded}");
    assert!(e.contains("group=\"other\""));
    drop(load);
}
