//! The query service (`tasksnap serve --no-metrics --query-socket PATH`) as unprivileged
//! users meet it: what it shows each caller must be exactly what that caller's own /proc
//! shows it, byte for byte in `ps`, and nothing a hostile client does may stop it, stall
//! another client, or show anyone more.
//!
//! - Every specifier procps's `ps L` lists, side by side in a few `-o` lists (with and
//!   without `-L`), and `-ef`, `aux`, `-eLf`, `-el`: as nobody and as a user the test creates
//!   (`tasksnap-test`, removed again only when this test made it), through the service
//!   (`--backend service`), through /proc (`TASKSNAP_NO_SERVICE=1`) and by procps `ps`, on
//!   the rows of what the test spawned: the caller's own process, another user's, root's, a
//!   non-dumpable one of the caller's, a setuid-started one (real uid the caller's, effective
//!   uid root, as after exec of a setuid-root program) and one in another pid namespace.
//! - Nobody in a private mount namespace whose /proc is mounted `hidepid=invisible`,
//!   `subset=pid`, both, `hidepid=ptraceable` or `hidepid=noaccess`: the service reads the caller's mount options
//!   itself, and shows what that /proc shows (with `hidepid=invisible`, only nobody's own
//!   dumpable process of those spawned; procps where it runs without /proc/stat).
//! - Hostile clients (as nobody, from a copy of this test binary): garbage, another version,
//!   a huge length, half a frame then silence, a reader that never reads, 1,000 connections at
//!   once; meanwhile another user's `ps` is answered, and no answer holds a field /proc would
//!   not give nobody.
//!
//! The tests need root (setpriv, useradd, mounts, BPF); they skip otherwise, and fail under
//! TASKSNAP_REQUIRE_PRIVILEGED=1. One service answers the first two (started once per run of
//! this binary); the hostile test has its own, so that its storm cannot turn the others'
//! requests away.

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tasksnap_loadgen::skip_unless_root;

use common::ps::{run, tokens, Out, NOBODY};
use common::specs::{procps_list, ps_l, together};
use common::TASKSNAP;
use tasksnap_collect::testing::service::wire;
use tasksnap_model::{Group, Groups, Query, Selector, Task};

/// The user the test makes when it is missing (and removes again then).
const TEST_USER: &str = "tasksnap-test";
/// A uid with no passwd entry: "another user" for the hostile test's bystander.
const OTHER_UID: u32 = 4242;
/// The environment variable that turns this test binary into one of its helper processes.
const CHILD_ENV: &str = "TASKSNAP_SERVICE_TEST_CHILD";

// ---------------------------------------------------------------------------------------
// The service.

/// A running `tasksnap serve --no-metrics --query-socket DIR/query.sock`, its directory made
/// root-owned 0755 (as `/run/tasksnap` is), killed and its directory removed on drop.
struct Service {
    child: Child,
    dir: std::path::PathBuf,
    socket: String,
}

impl Service {
    fn start() -> Service {
        Service::start_with(&[])
    }

    /// A service started with `extra` arguments after the socket's.
    fn start_with(extra: &[&str]) -> Service {
        let dir = open_dir("tasksnap-svc-").keep();
        let socket = dir.join("query.sock").to_string_lossy().into_owned();
        let log = std::fs::File::create(dir.join("serve.log")).expect("a log file");
        let mut cmd = Command::new(TASKSNAP);
        // SAFETY: prctl is async-signal-safe and touches only the child: it dies with the
        // thread that started it (the shared service's is a thread that never ends).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .args(["serve", "--no-metrics", "--query-socket", &socket])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start tasksnap serve");
        let mut s = Service { child, dir, socket };
        s.wait_ready();
        s
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }

    /// Waits (60 s at most) until a request on the socket gets a frame back, whatever it is.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "tasksnap serve exited ({status}) before answering: {}",
                    self.log()
                );
            }
            if let Ok(mut s) = UnixStream::connect(&self.socket) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                let q = Query::new(Selector::Pid(1), Groups::default());
                if wire::send(&mut s, &wire::request(&q, None)).is_ok()
                    && wire::read_frame(&mut s, wire::MAX_ANSWER).is_ok()
                {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "tasksnap serve did not answer on {} in 60 s: {}",
                self.socket,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// A figure of the service's /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
    fn status_kib(&self, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// Stops it as its unit would (SIGTERM) and returns what it said.
    fn terminate(mut self) -> String {
        // SAFETY: kill on our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        self.log()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The service the comparisons share: started once, on a thread that never ends (its
/// parent-death signal follows the thread), killed and its directory removed at exit.
fn shared_service() -> &'static str {
    static SHARED: OnceLock<(String, i32, std::path::PathBuf)> = OnceLock::new();
    extern "C" fn at_exit() {
        if let Some((_, pid, dir)) = SHARED.get() {
            // SAFETY: kill on the pid of our own child, still unreaped (its owner thread
            // never waits); then its directory.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let (socket, _, _) = SHARED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let s = Service::start();
            tx.send((s.socket.clone(), s.child.id() as i32, s.dir.clone()))
                .expect("send");
            // Kept, never dropped: at_exit ends it.
            loop {
                std::thread::park();
            }
        });
        let got = rx.recv().expect("the shared service started");
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(at_exit) };
        got
    });
    socket
}

// ---------------------------------------------------------------------------------------
// Users and the processes compared.

/// A user by name, made with useradd when missing and then removed on drop (only then).
struct TestUser {
    uid: u32,
    gid: u32,
    created: bool,
}

impl TestUser {
    fn ensure(name: &str) -> TestUser {
        let lookup = || {
            let o = Command::new("id").arg(name).output().ok()?;
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            let num = |key: &str| s.split(key).nth(1)?.split('(').next()?.parse::<u32>().ok();
            Some((num("uid=")?, num("gid=")?))
        };
        let mut created = false;
        if lookup().is_none() {
            let st = Command::new("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                ])
                .arg(name)
                .status()
                .expect("run useradd");
            assert!(st.success(), "useradd {name}: {st}");
            created = true;
        }
        let (uid, gid) = lookup().unwrap_or_else(|| panic!("no user {name} after useradd"));
        TestUser { uid, gid, created }
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        if self.created {
            let _ = Command::new("userdel").arg(TEST_USER).status();
        }
    }
}

/// What the test spawned, by kind, and every pid to compare (children of wrappers too).
#[derive(Default)]
struct Spawned {
    children: Vec<Child>,
    /// Kept open: a helper that sees its stdout closed would die of SIGPIPE on its next
    /// write (it writes nothing more, but the pipe costs nothing).
    outs: Vec<ChildStdout>,
    /// (what, pid) of each process compared.
    named: Vec<(String, i32)>,
}

impl Spawned {
    /// Starts `cmd` with no input or output, kept to be killed with the rest; its pid.
    fn start_quiet(&mut self, cmd: &mut Command) -> i32 {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let pid = child.id() as i32;
        self.children.push(child);
        pid
    }

    /// `sleep 1000` as `uid`/`gid` (root: 0), through setpriv.
    fn sleep_as(&mut self, what: &str, uid: u32, gid: u32) -> i32 {
        let mut cmd = if uid == 0 {
            Command::new("sleep")
        } else {
            let mut c = Command::new("setpriv");
            c.args([
                format!("--reuid={uid}"),
                format!("--regid={gid}"),
                "--clear-groups".to_string(),
                "sleep".to_string(),
            ]);
            c
        };
        let pid = self.start_quiet(cmd.arg("1000"));
        self.named.push((what.to_string(), pid));
        tasksnap_loadgen::wait_until(what, || tasksnap_loadgen::settled_sleep(pid));
        pid
    }

    /// This test binary as a helper (see [`service_test_child`]) doing `mode`; returns once
    /// it said it is ready and every thread of it sleeps.
    fn helper(&mut self, what: &str, mode: &str) -> i32 {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "service_test_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, mode)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a helper");
        let pid = child.id() as i32;
        let out = wait_for_line(&mut child, "ready");
        self.outs.push(out.into_inner());
        self.children.push(child);
        self.named.push((what.to_string(), pid));
        tasksnap_loadgen::wait_until(what, || all_threads_sleep(pid));
        pid
    }

    /// `unshare --pid --fork sleep 1000` as root: the unshare and its child, the sleep that is
    /// pid 1 of a namespace of its own (seen from outside under its outer pid).
    fn in_pid_namespace(&mut self) -> (i32, i32) {
        let outer = self.start_quiet(Command::new("unshare").args([
            "--pid",
            "--fork",
            "--kill-child",
            "sleep",
            "1000",
        ]));
        let inner = std::cell::Cell::new(0);
        tasksnap_loadgen::wait_until("the sleep in a pid namespace", || {
            let kid = tasksnap_loadgen::proc_text(outer, &format!("task/{outer}/children"))
                .and_then(|k| k.split_whitespace().next()?.parse::<i32>().ok());
            match kid {
                Some(k) if tasksnap_loadgen::settled_sleep(k) && all_threads_sleep(outer) => {
                    inner.set(k);
                    true
                }
                _ => false,
            }
        });
        self.named.push(("unshare --pid".into(), outer));
        self.named
            .push(("pid 1 of another pid namespace".into(), inner.get()));
        (outer, inner.get())
    }

    fn pids(&self) -> HashSet<i32> {
        self.named.iter().map(|&(_, p)| p).collect()
    }

    fn name(&self, pid: i32) -> &str {
        self.named
            .iter()
            .find(|&&(_, p)| p == pid)
            .map_or("?", |(w, _)| w.as_str())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        for &(_, p) in self.named.iter().rev() {
            // SAFETY: our children and the child of our unshare, still unreaped.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// Whether every thread of `pid` is asleep (`S`).
fn all_threads_sleep(pid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut any = false;
    for e in dir.flatten() {
        let stat = std::fs::read(e.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.iter().rposition(|&c| c == b')') else {
            return false;
        };
        if stat.get(close + 2) != Some(&b'S') {
            return false;
        }
        any = true;
    }
    any
}

/// Helper processes the tests spawn, selected by [`CHILD_ENV`]; as a plain test, nothing.
/// - `nondumpable:UID:GID`: becomes UID/GID (no supplementary groups), not dumpable, sleeps;
/// - `setuid:UID:GID`: real ids UID/GID, effective and saved root, then executes itself
///   again as `sleep`: what running a setuid-root program leaves (the exec with real and
///   effective uids apart makes it not dumpable, `fs.suid_dumpable` permitting);
/// - `sleep`: sleeps;
/// - `hostile:SOCKET:ROOT_PID:OWN_PID`: the hostile clients ([`hostile_clients`]);
/// - `silent:SOCKET:N`: N requests for command lines and environments that never read their
///   answers ([`silent_readers`]);
/// - `hold:SOCKET:N`: N connections that never send, held open ([`slot_holders`]).
#[test]
fn service_test_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    // libtest has printed "test service_test_child ... " without a newline: what the helper
    // says starts on a line of its own.
    println!();
    let parts: Vec<&str> = mode.split(':').collect();
    let id = |i: usize| parts[i].parse::<u32>().expect("an id");
    match parts[0] {
        "nondumpable" => {
            let (u, g) = (id(1), id(2));
            // SAFETY: credential calls and prctl on this process; any failure ends it
            // before it says it is ready.
            unsafe {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(g, g, g) != 0
                    || libc::setresuid(u, u, u) != 0
                    || libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
                {
                    std::process::exit(3);
                }
            }
        }
        "setuid" => {
            let (u, g) = (id(1), id(2));
            // SAFETY: as above.
            unsafe {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(g, 0, 0) != 0
                    || libc::setresuid(u, 0, 0) != 0
                {
                    std::process::exit(3);
                }
            }
            let err = std::os::unix::process::CommandExt::exec(
                Command::new(std::env::current_exe().expect("self"))
                    .args([
                        "--exact",
                        "service_test_child",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env(CHILD_ENV, "sleep"),
            );
            panic!("exec: {err}");
        }
        "sleep" => {}
        "hostile" => {
            hostile_clients(
                parts[1],
                parts[2].parse().expect("pid"),
                parts[3].parse().expect("pid"),
            );
            return;
        }
        "silent" => {
            silent_readers(parts[1], parts[2].parse().expect("a count"));
            return;
        }
        "hold" => {
            slot_holders(parts[1], parts[2].parse().expect("a count"));
            return;
        }
        other => panic!("unknown helper {other}"),
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    std::thread::sleep(Duration::from_secs(1000));
}

// ---------------------------------------------------------------------------------------
// Running ps as a user.

/// How a ps is run.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Source {
    /// tasksnap through the query service, insisting (`--backend=service`).
    Service,
    /// tasksnap with `TASKSNAP_NO_SERVICE=1`: /proc.
    Procfs,
    /// procps `ps`: the oracle.
    Procps,
    /// tasksnap without `--backend` (nor `TASKSNAP_NO_SERVICE`): finds the service itself.
    Auto,
}

/// A caller: its ids, and how its ps runs are wrapped (e.g. in a mount namespace).
struct Caller<'a> {
    name: String,
    uid: u32,
    gid: u32,
    socket: &'a str,
    /// A copy of tasksnap this user can execute.
    tasksnap: &'a str,
    /// `mount -t proc -o OPTS` in a private mount namespace first, when given.
    proc_opts: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// `uid` (its group the same number) asking the service at `socket` from the copy of
    /// tasksnap every user can run, with the host's /proc.
    fn new(name: String, uid: u32, socket: &'a str) -> Caller<'a> {
        Caller {
            name,
            uid,
            gid: uid,
            socket,
            tasksnap: tasksnap_copy(),
            proc_opts: None,
        }
    }

    fn ps(&self, source: Source, args: &[&str]) -> Out {
        let mut argv: Vec<String> = Vec::new();
        if let Some(opts) = self.proc_opts {
            argv.extend(
                [
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                    "--",
                    "sh",
                    "-c",
                    "mount -t proc -o \"$0\" proc /proc && exec \"$@\"",
                    opts,
                ]
                .map(String::from),
            );
        }
        argv.extend([
            "setpriv".to_string(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".to_string(),
            "--".to_string(),
        ]);
        match source {
            Source::Procps => argv.push("ps".into()),
            _ => argv.extend([self.tasksnap.to_string(), "ps".to_string()]),
        }
        argv.extend(args.iter().map(|s| s.to_string()));
        if source == Source::Service {
            argv.push("--backend=service".into());
        }
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env("LC_ALL", "C")
            .env("TASKSNAP_QUERY_SOCKET", self.socket)
            .env_remove("COLUMNS")
            .env_remove("PS_FORMAT")
            .env_remove("PS_PERSONALITY")
            .env_remove("TASKSNAP_NO_SERVICE")
            .current_dir("/");
        if source == Source::Procfs {
            cmd.env("TASKSNAP_NO_SERVICE", "1");
        }
        match source {
            Source::Procps => common::ps::oracle(&mut cmd),
            _ => cmd.output().expect("run ps").into(),
        }
    }
}

/// How rows are cut out of an output for comparison.
#[derive(Clone, Copy)]
enum Cut {
    /// PID first; the bytes from its end to this many header tokens' end masked (the moving
    /// columns put first by `together`).
    Moving(usize),
    /// Mask the columns whose values move between runs, by header (`common::ps::MOVING`).
    Headers,
}

/// The header and the rows of `pids` in `out`, masked as `how` says. A row's pid is found
/// by its place among the whitespace-separated fields, not by the header's byte span: where
/// /proc hides pid_max (`subset=pid`) ps sizes PID for 5 digits and longer pids push the
/// rest of the row to the right.
fn cut(out: &[u8], pids: &HashSet<i32>, how: Cut) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut lines = out.split(|&c| c == b'\n');
    let header = lines.next().unwrap_or_default().to_vec();
    let toks = tokens(&header);
    let pid_at = toks.iter().position(|(t, _, _)| t == "PID").unwrap_or(0);
    // Byte spans to mask.
    let spans: Vec<(usize, usize)> = match how {
        Cut::Moving(0) => Vec::new(),
        // From past the blank after PID (the pid stays a field of its own) to the end of the
        // last moving header.
        Cut::Moving(n) => vec![(toks[0].2 + 1, toks.get(n).map_or(0, |&(_, _, e)| e))],
        Cut::Headers => toks
            .iter()
            .enumerate()
            .filter(|(_, (t, _, _))| common::ps::MOVING.contains(&t.as_str()))
            .map(|(k, &(_, _, end))| (if k == 0 { 0 } else { toks[k - 1].2 + 1 }, end))
            .collect(),
    };
    let mut rows = Vec::new();
    for line in lines {
        let Some(pid) = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|f| !f.is_empty())
            .nth(pid_at)
            .and_then(|f| std::str::from_utf8(f).ok()?.parse::<i32>().ok())
        else {
            continue;
        };
        if !pids.contains(&pid) {
            continue;
        }
        // A pid wider than its header (procps narrows PID where subset=pid hides pid_max)
        // runs into the next column: the mask starts past it, so the row keeps its pid.
        let pid_end = field_end(line, pid_at);
        let mut row = line.to_vec();
        for &(from, to) in &spans {
            let from = from.max(pid_end + 1);
            let to = to.min(row.len());
            if to > from {
                row[from..to].fill(b'#');
            }
        }
        rows.push(row);
    }
    (header, rows)
}

/// The rows of `pids` in `args` as the caller gets them from the service, from /proc and
/// from procps (when `with_procps`): the same header and bytes from each, or why not.
/// Returns the pids the rows were of.
fn compare(
    caller: &Caller<'_>,
    what: &str,
    args: &[&str],
    pids: &HashSet<i32>,
    how: Cut,
    with_procps: bool,
) -> Result<HashSet<i32>, String> {
    let sources: &[Source] = if with_procps {
        &[Source::Service, Source::Procfs, Source::Procps]
    } else {
        &[Source::Service, Source::Procfs]
    };
    let outs: Vec<(Source, Out)> = sources.iter().map(|&s| (s, caller.ps(s, args))).collect();
    let err = |o: &Out| {
        String::from_utf8_lossy(&o.stderr)
            .trim()
            .replace('\n', " | ")
    };
    for (s, o) in &outs {
        if o.code != Some(0) {
            return Err(format!(
                "{} {what}: {s:?} exited {:?}: {}",
                caller.name,
                o.code,
                err(o)
            ));
        }
    }
    let cuts: Vec<(Source, Vec<u8>, Vec<Vec<u8>>)> = outs
        .iter()
        .map(|(s, o)| {
            let (h, r) = cut(&o.stdout, pids, how);
            (*s, h, r)
        })
        .collect();
    let (_, h0, r0) = &cuts[cuts.len() - 1];
    for (s, h, r) in &cuts[..cuts.len() - 1] {
        if h != h0 {
            return Err(format!(
                "{} {what}: header {s:?} {:?} vs {:?}",
                caller.name,
                String::from_utf8_lossy(h),
                String::from_utf8_lossy(h0)
            ));
        }
        if r != r0 {
            let mut msg = format!(
                "{} {what}: {s:?} {} rows vs {:?} {}",
                caller.name,
                r.len(),
                cuts[cuts.len() - 1].0,
                r0.len()
            );
            for (a, b) in r.iter().zip(r0).filter(|(a, b)| a != b).take(3) {
                let at = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
                let column = tokens(h0)
                    .into_iter()
                    .find(|&(_, _, end)| end > at)
                    .map_or_else(|| "past the header".to_string(), |(t, _, _)| t);
                let from = at.saturating_sub(40);
                let win = |r: &[u8]| {
                    String::from_utf8_lossy(&r[from.min(r.len())..(at + 40).min(r.len())])
                        .into_owned()
                };
                msg += &format!(
                    "\n    at byte {at} (under {column}): {:?}\n                      vs {:?}",
                    win(a),
                    win(b)
                );
            }
            let pid_set = |rows: &[Vec<u8>]| -> Vec<i32> {
                let mut v: Vec<i32> = rows.iter().filter_map(|r| row_pid(h0, r)).collect();
                v.sort_unstable();
                v
            };
            if r.len() != r0.len() {
                msg += &format!("\n    pids {:?} vs {:?}", pid_set(r), pid_set(r0));
            }
            return Err(msg);
        }
    }
    Ok(r0.iter().filter_map(|r| row_pid(h0, r)).collect())
}

/// The byte just past the `n`th whitespace-separated field of `line` (0 when there is none).
fn field_end(line: &[u8], n: usize) -> usize {
    let mut seen = 0;
    let mut in_field = false;
    for (i, &c) in line.iter().enumerate() {
        if c.is_ascii_whitespace() {
            if in_field {
                if seen == n {
                    return i;
                }
                seen += 1;
            }
            in_field = false;
        } else {
            in_field = true;
        }
    }
    if in_field && seen == n {
        line.len()
    } else {
        0
    }
}

/// The pid of a row: its field under the header's PID, counted in fields.
fn row_pid(header: &[u8], row: &[u8]) -> Option<i32> {
    let at = tokens(header).iter().position(|(t, _, _)| t == "PID")?;
    String::from_utf8_lossy(row)
        .split_whitespace()
        .nth(at)?
        .parse()
        .ok()
}

/// tasksnap where every user can execute it (the checkout may be out of their reach).
fn tasksnap_copy() -> &'static str {
    static COPY: OnceLock<String> = OnceLock::new();
    COPY.get_or_init(common::ps::tasksnap_for_others)
}

/// This test binary as user `uid` (its group the same number, no supplementary groups)
/// doing helper `mode`, its stdin and stdout piped.
fn helper_as(uid: u32, mode: &str) -> Child {
    Command::new("setpriv")
        .args([
            format!("--reuid={uid}"),
            format!("--regid={uid}"),
            "--clear-groups".to_string(),
            "--".to_string(),
            tasksnap_loadgen::reachable::this_test_binary()
                .to_string_lossy()
                .into_owned(),
            "--exact".to_string(),
            "service_test_child".to_string(),
            "--nocapture".to_string(),
            "--test-threads=1".to_string(),
        ])
        .env(CHILD_ENV, mode)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a helper as another user")
}

/// Reads `child`'s stdout until a line ending in `word` (panics when it ends first).
fn wait_for_line(child: &mut Child, word: &str) -> BufReader<ChildStdout> {
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read a helper");
        assert!(n > 0, "the helper ended before saying {word:?}");
        if line.trim_end().ends_with(word) {
            return out;
        }
    }
}

/// `--verbose` of a ps through the service names it as the backend, with `--backend=service`
/// and, found by itself, without any `--backend`.
fn says_service(caller: &Caller<'_>) -> Result<(), String> {
    for source in [Source::Service, Source::Auto] {
        let o = caller.ps(source, &["--verbose", "-p", "1"]);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.code != Some(0) || !e.contains("tasksnap: backend service read") {
            return Err(format!(
                "{}: ps --verbose ({source:?}) exited {:?} and said {e:?}",
                caller.name, o.code
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The comparisons.

#[test]
fn every_specifier_through_the_service_matches_procfs_and_procps_for_two_users() {
    skip_unless_root!("ps as two users through the query service");
    let started = Instant::now();
    let socket = shared_service();
    let user = TestUser::ensure(TEST_USER);
    let mut sp = Spawned::default();
    for (name, uid, gid) in [("nobody", NOBODY, NOBODY), (TEST_USER, user.uid, user.gid)] {
        sp.sleep_as(&format!("{name}'s sleep"), uid, gid);
        sp.helper(
            &format!("{name}'s non-dumpable process"),
            &format!("nondumpable:{uid}:{gid}"),
        );
        sp.helper(
            &format!("setuid-started by {name} (euid root)"),
            &format!("setuid:{uid}:{gid}"),
        );
    }
    sp.sleep_as("root's sleep", 0, 0);
    sp.in_pid_namespace();
    let pids = sp.pids();

    // Every specifier procps has that tasksnap has too (ps_specifiers.rs holds tasksnap to
    // having them all), in as few -o lists as procps takes.
    let specs = procps_list();
    let ours = run(TASKSNAP, &["ps"], &["L"], "C");
    let known: HashSet<String> = ps_l(&ours.stdout).into_iter().map(|(n, _)| n).collect();
    // Not procps's own layout tests (`_left`, `_right2`, `_unlimited`...): they print no
    // process data but a pattern that cycles with the row's place in the whole listing, which
    // with `-e` on a busy host depends on what else ran in between the three runs.
    let names: Vec<&str> = specs
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| known.contains(*n) && !n.starts_with('_'))
        .collect();
    let lists = together(&names);

    let mut failures = Vec::new();
    for (name, uid, gid) in [("nobody", NOBODY, NOBODY), (TEST_USER, user.uid, user.gid)] {
        let caller = Caller {
            name: name.to_string(),
            uid,
            gid,
            socket,
            tasksnap: tasksnap_copy(),
            proc_opts: None,
        };
        if let Err(e) = says_service(&caller) {
            failures.push(e);
        }
        for (k, (o, moving)) in lists.iter().enumerate() {
            for threads in [false, true] {
                let mut args = vec!["-e", "-o", o.as_str()];
                if threads {
                    args.push("-L");
                }
                let what = format!("group {}{}", k + 1, if threads { " -L" } else { "" });
                match compare(&caller, &what, &args, &pids, Cut::Moving(*moving), true) {
                    Ok(seen) => {
                        let missing: Vec<String> = pids
                            .difference(&seen)
                            .map(|&p| format!("{p} ({})", sp.name(p)))
                            .collect();
                        if !missing.is_empty() {
                            failures.push(format!(
                                "{name} {what}: no row for {missing:?}: /proc lists every \
                                 process without hidepid"
                            ));
                        }
                    }
                    Err(e) => failures.push(e),
                }
            }
        }
        for args in [&["-ef"][..], &["aux"], &["-eLf"], &["-el"]] {
            if let Err(e) = compare(&caller, &args.join(" "), args, &pids, Cut::Headers, true) {
                failures.push(e);
            }
        }
    }
    eprintln!(
        "compared {} -o lists and 4 formats for 2 users in {:?}",
        lists.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} differences through the query service (spawned: {:?}):\n{}",
        failures.len(),
        sp.named,
        failures.join("\n")
    );
}

/// `top` through the service: after the first (whole) answer, each refresh gets only the rows
/// that changed (the header says how many), and the spawned processes, asleep and unchanged,
/// stay on every screen (the caller's copy of the last answer, kept whole). On a service of
/// its own: see the next test.
#[test]
fn top_through_the_service_gets_a_whole_answer_then_the_changed_rows() {
    skip_unless_root!("top as nobody through the query service");
    let service = Service::start();
    top_screens_are_changed_rows(&service.socket);
}

/// The test above ran top on the service the other tests of this binary share, and failed
/// on a busy host ("screen 0: not from only the rows that changed", load average 10): a
/// live view is sent only the rows that changed since the pass the service kept for it,
/// and the service keeps the last pass of 4 queries (`KEPT_PASSES`, the oldest let go
/// first); the comparisons running meanwhile ask it a new query for each ps format, and
/// four of them between two of top's refreshes (which a loaded host spreads out) let go
/// top's pass, so its next refresh got a whole answer, as it should. Here such callers ask
/// the shared service other queries all along: a top on a service of its own is not
/// touched by them.
#[test]
fn regression_top_on_the_shared_service_got_whole_answers_while_other_tests_asked_it() {
    skip_unless_root!("top as nobody through the query service, beside other callers");
    let shared = shared_service();
    let service = Service::start();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let others = {
        let stop = stop.clone();
        let asked = asked.clone();
        std::thread::spawn(move || {
            let formats = [
                "pid", "pid,comm", "pid,user", "pid,rss", "pid,vsz", "pid,stat",
            ];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n = asked.load(std::sync::atomic::Ordering::Relaxed);
                let format = formats[n % formats.len()];
                let _ = Command::new("setpriv")
                    .args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")])
                    .args([
                        "--clear-groups",
                        "--",
                        tasksnap_copy(),
                        "ps",
                        "-e",
                        "-o",
                        format,
                    ])
                    .arg("--backend=service")
                    .env("TASKSNAP_QUERY_SOCKET", shared)
                    .current_dir("/")
                    .output();
                asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    // Each round is the whole check; rounds go on until the other callers asked at least four
    // queries meanwhile (a loaded host slows their `ps -e` more than top's three refreshes).
    for _ in 0..TOP_ROUNDS {
        top_screens_are_changed_rows(&service.socket);
        if asked.load(std::sync::atomic::Ordering::Relaxed) >= 4 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    others.join().expect("the other callers");
    let asked = asked.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        asked >= 4,
        "only {asked} queries of other callers in {TOP_ROUNDS} rounds of top"
    );
}

/// How many runs of top the test above waits for four queries of other callers.
const TOP_ROUNDS: usize = 10;

/// `top -b -n 3 -d 0.2` as nobody through the service at `socket`: every screen from an
/// answer of only the rows that changed, each with a sleeping process of nobody's and one of
/// root's that this test spawned.
fn top_screens_are_changed_rows(socket: &str) {
    let mut sp = Spawned::default();
    let own = sp.sleep_as("nobody's sleep", NOBODY, NOBODY);
    let root = sp.sleep_as("root's sleep", 0, 0);
    let out = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
            tasksnap_copy(),
            "top",
            "-b",
            "-n",
            "3",
            "-d",
            "0.2",
            "--backend=service",
        ])
        .env("TASKSNAP_QUERY_SOCKET", socket)
        .env("LC_ALL", "C")
        .env_remove("TASKSNAP_NO_SERVICE")
        .current_dir("/")
        .output()
        .expect("run top");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let screens: Vec<&str> = text.split("top - ").skip(1).collect();
    assert_eq!(screens.len(), 3, "{text}");
    for (i, screen) in screens.iter().enumerate() {
        let head: String = screen.lines().take(8).collect::<Vec<_>>().join("\n");
        assert!(
            head.contains("service"),
            "screen {i} not from the service: {head}"
        );
        // Batch top refreshes once before its first screen (a baseline for %CPU): every
        // screen comes from an answer of the rows that changed, fewer than the rows shown.
        let counts = head.split(" tasks (").nth(1).and_then(|r| {
            let changed: usize = r.split(' ').next()?.parse().ok()?;
            let before = head.split(" tasks (").next()?;
            let total: usize = before.rsplit(' ').next()?.parse().ok()?;
            Some((changed, total))
        });
        assert!(
            matches!(counts, Some((changed, total)) if changed < total),
            "screen {i}: not from only the rows that changed: {head}"
        );
        for pid in [own, root] {
            assert!(
                screen
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(pid.to_string().as_str())),
                "screen {i} lacks {pid}"
            );
        }
    }
}

#[test]
fn hidepid_and_subset_pid_are_the_callers_own_proc_mounts() {
    skip_unless_root!("hidepid in a private mount namespace through the query service");
    let socket = shared_service();
    let mut sp = Spawned::default();
    let own = sp.sleep_as("nobody's sleep", NOBODY, NOBODY);
    let nondumpable = sp.helper(
        "nobody's non-dumpable process",
        &format!("nondumpable:{NOBODY}:{NOBODY}"),
    );
    let other = sp.sleep_as("another user's sleep", OTHER_UID, OTHER_UID);
    let root = sp.sleep_as("root's sleep", 0, 0);
    let pids = sp.pids();
    let mut failures = Vec::new();
    // Columns procps prints without /proc/stat, /proc/uptime or /proc/meminfo (which
    // subset=pid hides: procps then stops with "Unable to get system boot time").
    let pid_only = "pid,user,ruser,euser,stat,wchan,rss,vsz,tty,ni,pri,comm,args";
    for opts in [
        "hidepid=invisible",
        "subset=pid",
        "hidepid=invisible,subset=pid",
        "hidepid=ptraceable",
        "hidepid=noaccess",
    ] {
        let caller = Caller {
            name: format!("nobody with /proc {opts}"),
            uid: NOBODY,
            gid: NOBODY,
            socket,
            tasksnap: tasksnap_copy(),
            proc_opts: Some(opts),
        };
        let subset = opts.contains("subset=pid");
        let formats: [(&[&str], bool); 4] = [
            (&["-eo", pid_only], true),
            (&["-ef"], !subset),
            (&["aux"], !subset),
            (&["-eLo", pid_only], true),
        ];
        for (args, with_procps) in formats {
            match compare(
                &caller,
                &args.join(" "),
                args,
                &pids,
                Cut::Headers,
                with_procps,
            ) {
                Ok(seen) => {
                    let expected: HashSet<i32> =
                        if opts.starts_with("hidepid=invisible") || opts == "hidepid=ptraceable" {
                            // Only what nobody may ptrace: its own dumpable process.
                            [own].into()
                        } else if opts == "subset=pid" {
                            [own, nondumpable, other, root].into()
                        } else {
                            // noaccess: listed, but only what may be read is printed; whatever
                            // it is, the three sources agreed on it above.
                            seen.clone()
                        };
                    if seen != expected {
                        failures.push(format!(
                            "{} {args:?}: rows for {seen:?}, expected {expected:?} \
                             (own {own}, non-dumpable {nondumpable}, other {other}, root {root})",
                            caller.name
                        ));
                    }
                }
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences under hidepid/subset=pid:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Hostile clients.

#[test]
fn hostile_clients_neither_stop_the_service_nor_see_more() {
    skip_unless_root!("hostile clients of the query service");
    let mut service = Service::start();
    let mut sp = Spawned::default();
    let root = sp.sleep_as("root's sleep", 0, 0);
    let own = sp.sleep_as("nobody's sleep", NOBODY, NOBODY);
    let pids = sp.pids();
    // The hostile clients run as nobody, from this binary where nobody can execute it.
    let mut hostile = helper_as(NOBODY, &format!("hostile:{}:{root}:{own}", service.socket));
    let socket = service.socket.clone();
    let mut to_child = hostile.stdin.take().expect("stdin");
    let from_child = BufReader::new(hostile.stdout.take().expect("stdout"));

    // The bystander: another user (uid 4242, no passwd entry), whose ps must be answered
    // through the service, quickly and exactly, while the hostile ones hold on.
    let bystander = Caller::new(format!("uid {OTHER_UID}"), OTHER_UID, &socket);
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for line in from_child.lines() {
        let line = line.expect("read the hostile clients");
        if let Some(stage) = line.strip_prefix("holding ") {
            let t = Instant::now();
            match compare(
                &bystander,
                &format!("while {stage}"),
                &["-eo", "pid,user,stat,wchan,rss,args"],
                &pids,
                Cut::Headers,
                false,
            ) {
                Ok(seen) if seen == pids => {}
                Ok(seen) => failures.push(format!("while {stage}: rows for {seen:?}")),
                Err(e) => failures.push(e),
            }
            let took = t.elapsed();
            report.push(format!(
                "bystander's ps (and /proc's) while {stage}: {took:?}"
            ));
            if took > Duration::from_secs(10) {
                failures.push(format!("while {stage}: the bystander waited {took:?}"));
            }
            if !service.alive() {
                failures.push(format!("the service died while {stage}"));
                break;
            }
            writeln!(to_child, "go").expect("tell the hostile clients to go on");
        } else if let Some(f) = line.strip_prefix("FAIL ") {
            failures.push(format!("hostile client: {f}"));
        } else if let Some(ok) = line.strip_prefix("ok ") {
            report.push(ok.to_string());
        }
    }
    drop(to_child);
    let status = hostile.wait().expect("wait");
    if !status.success() {
        failures.push(format!("the hostile clients' process ended {status}"));
    }
    if !service.alive() {
        failures.push(format!("the service is gone: {}", service.log()));
    }
    // Still answering, and still exactly.
    let nobody = Caller::new("nobody".to_string(), NOBODY, &socket);
    if let Err(e) = compare(&nobody, "after", &["-ef"], &pids, Cut::Headers, true) {
        failures.push(e);
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{} failures with hostile clients:\n{}\nservice log: {}",
        failures.len(),
        failures.join("\n"),
        service.log()
    );
}

/// One frame back, or how the connection ended: `Ok(None)` is a close (or reset) without a
/// frame.
fn reply(s: &mut UnixStream) -> Result<Option<(wire::Kind, Vec<u8>)>, String> {
    match wire::read_frame(s, wire::MAX_ANSWER) {
        Ok(f) => Ok(Some(f)),
        Err(wire::WireError::Closed) => Ok(None),
        Err(wire::WireError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The tasks of an answer whose head is `head`: the `Tasks` frames that follow it.
fn answer_tasks(s: &mut UnixStream, head: &[u8]) -> Result<Vec<Task>, String> {
    let a = wire::decode_answer(head).map_err(|e| e.to_string())?;
    let mut tasks = Vec::new();
    for _ in 0..a.chunks {
        match reply(s)? {
            Some((wire::Kind::Tasks, p)) => {
                wire::decode_tasks(&p, &mut tasks).map_err(|e| e.to_string())?
            }
            Some((k, _)) => return Err(format!("a {k:?} frame among the tasks")),
            None => return Err("closed mid-answer".into()),
        }
    }
    if tasks.len() as u64 != a.tasks {
        return Err(format!(
            "{} tasks, the answer said {}",
            tasks.len(),
            a.tasks
        ));
    }
    Ok(tasks)
}

/// A header of `kind` saying `len` payload bytes, of protocol version `version`.
fn header(version: u8, kind: u8, len: u32) -> Vec<u8> {
    let mut h = wire::MAGIC.to_vec();
    h.push(version);
    h.push(kind);
    h.extend_from_slice(&[0; 3]);
    h.extend_from_slice(&len.to_le_bytes());
    h
}

/// The hostile clients' side (as nobody, in a helper process); says `ok WHAT` or
/// `FAIL WHAT` per check, and `holding STAGE` when the parent's bystander should ask, then
/// waits for a line on stdin. Note what is not here: a client lying about its pid. The
/// service never takes a pid from a client: SO_PEERCRED is the kernel's record of who
/// connected (and the pidfd pins that process), so there is nothing to lie with.
fn hostile_clients(socket: &str, root: i32, own: i32) {
    open_files_up_to_the_hard_limit();
    let h = Hostile {
        socket,
        root,
        own,
        all: Query::new(Selector::AllProcesses, Groups::all()),
    };
    match h.ask("a plain request", &mut h.connect()) {
        Ok(t) => say(format!("ok a plain request answered in {t:?}")),
        Err(e) => say(format!("FAIL {e}")),
    }
    h.malformed_requests();
    h.over_long_requests();
    // Held while the others are asked: half a frame, then silence; a request whose answer
    // is never read.
    let (half, slow) = h.stalled_beside_a_request();
    wait_go("half a frame and a slow reader");
    h.storm_of_1000();
    match h.ask("a request after the storm", &mut h.connect()) {
        Ok(t) => say(format!("ok a request after the storm answered in {t:?}")),
        Err(e) => say(format!("FAIL {e}")),
    }
    // The stalled ones were open all along; now they go.
    drop(slow);
    drop(half);
}

/// Raises this process's soft open-files limit to the hard one.
fn open_files_up_to_the_hard_limit() {
    // SAFETY: getrlimit/setrlimit on this process: the soft open-files limit up to the hard.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

/// A line to the parent (stdout, flushed).
fn say(s: String) {
    println!("{s}");
    let _ = std::io::stdout().flush();
}

/// Says `holding STAGE` and waits for the parent's line on stdin.
fn wait_go(stage: &str) {
    say(format!("holding {stage}"));
    let mut l = String::new();
    let _ = std::io::stdin().read_line(&mut l);
}

/// A connection that must end without an answer (closed, or Refused): says which.
fn no_answer(what: &str, s: &mut UnixStream) {
    match reply(s) {
        Ok(None) => say(format!("ok {what}: closed")),
        Ok(Some((wire::Kind::Refused, p))) => say(format!(
            "ok {what}: refused ({})",
            String::from_utf8_lossy(&p)
        )),
        Ok(Some((k, _))) => say(format!("FAIL {what}: answered with a {k:?} frame")),
        Err(e) => say(format!("FAIL {what}: {e}")),
    }
}

/// The hostile clients of the service at `socket`: `root` is root's sleep, `own` nobody's
/// own; `all` the query a plain request asks.
struct Hostile<'a> {
    socket: &'a str,
    root: i32,
    own: i32,
    all: Query,
}

impl Hostile<'_> {
    /// A connection with 30 s timeouts either way.
    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(self.socket).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        s.set_write_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        s
    }

    /// What nobody may see of root's sleep and of its own: no field /proc gates behind
    /// ptrace access of root's, and those same fields of its own (a check that can fail).
    fn check_answer(&self, what: &str, tasks: &[Task]) -> Result<(), String> {
        let find = |pid: i32| tasks.iter().find(|t| t.id.tgid == pid && t.id.tid == pid);
        let root = self.root;
        let r = find(root).ok_or(format!("{what}: no row for root's sleep {root}"))?;
        // (Not `fds`: stat(2) of /proc/PID/fd gives anyone the count, Linux 6.2+.)
        if r.exe.is_some() || r.io.is_some() || r.environ.is_some() {
            return Err(format!(
                "{what}: root's sleep with exe {:?}, io {}, environ {}",
                r.exe,
                r.io.is_some(),
                r.environ.is_some(),
            ));
        }
        let own = self.own;
        let o = find(own).ok_or(format!("{what}: no row for nobody's own sleep {own}"))?;
        if o.exe.is_none() || o.io.is_none() {
            return Err(format!("{what}: nobody's own sleep without exe or io"));
        }
        Ok(())
    }

    /// A request answered: Accepted, then an Answer that passes [`Hostile::check_answer`];
    /// how long it took.
    fn ask(&self, what: &str, s: &mut UnixStream) -> Result<Duration, String> {
        let t = Instant::now();
        wire::send(s, &wire::request(&self.all, None)).map_err(|e| format!("{what}: send: {e}"))?;
        loop {
            match reply(s)? {
                Some((wire::Kind::Accepted, _)) => continue,
                Some((wire::Kind::Answer, p)) => {
                    let tasks = answer_tasks(s, &p).map_err(|e| format!("{what}: {e}"))?;
                    self.check_answer(what, &tasks)?;
                    return Ok(t.elapsed());
                }
                Some((k, p)) => {
                    return Err(format!("{what}: {k:?} {:?}", String::from_utf8_lossy(&p)))
                }
                None => return Err(format!("{what}: closed without an answer")),
            }
        }
    }

    /// Garbage (bytes that are not the protocol); the right magic, another version; a kind
    /// no client sends; a request that does not decode: none answered.
    fn malformed_requests(&self) {
        let mut s = self.connect();
        let junk: Vec<u8> = (0u32..256)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let _ = s.write_all(&junk);
        no_answer("garbage", &mut s);
        for (what, bytes) in [
            ("version 99", header(99, 1, 0)),
            ("an Answer frame from a client", header(wire::VERSION, 3, 0)),
            ("kind 200", header(wire::VERSION, 200, 0)),
            (
                "a malformed request",
                [header(wire::VERSION, 1, 8), vec![0xff; 8]].concat(),
            ),
        ] {
            let mut s = self.connect();
            let _ = s.write_all(&bytes);
            no_answer(what, &mut s);
        }
    }

    /// A huge length: 4 GiB announced; the limit announced and junk sent; 4 GiB announced and
    /// sent for 5 s: none answered, and the last not read on.
    fn over_long_requests(&self) {
        let mut s = self.connect();
        let _ = s.write_all(&header(wire::VERSION, 1, u32::MAX));
        no_answer("a request of 4 GiB announced", &mut s);
        let mut s = self.connect();
        let _ = s.write_all(&header(wire::VERSION, 1, wire::MAX_REQUEST as u32));
        let _ = s.write_all(&vec![0x5a; wire::MAX_REQUEST]);
        no_answer("a request of the largest size, of junk", &mut s);
        let mut s = self.connect();
        let t = Instant::now();
        let mut sent = 0usize;
        let _ = s.write_all(&header(wire::VERSION, 1, u32::MAX));
        while t.elapsed() < Duration::from_secs(5) {
            match s.write(&[0u8; 65536]) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
            if sent > 64 << 20 {
                break;
            }
        }
        if sent > 16 << 20 {
            say(format!(
                "FAIL the service read {sent} bytes of an over-long request"
            ));
        } else {
            say(format!(
                "ok an over-long request stopped after {sent} bytes"
            ));
        }
    }

    /// Half a frame, then silence, and a request whose answer is never read, both returned
    /// to be held open; a request beside them must be answered within 5 s.
    fn stalled_beside_a_request(&self) -> (UnixStream, UnixStream) {
        let mut half = self.connect();
        let _ = half.write_all(&header(wire::VERSION, 1, 40)[..6]);
        let mut slow = self.connect();
        let _ = wire::send(
            &mut slow,
            &wire::request(&Query::new(Selector::AllThreads, Groups::all()), None),
        );
        std::thread::sleep(Duration::from_millis(200));
        match self.ask(
            "a request beside a stalled one and a slow reader",
            &mut self.connect(),
        ) {
            Ok(t) if t < Duration::from_secs(5) => say(format!(
                "ok a request beside a stalled one and a slow reader answered in {t:?}"
            )),
            Ok(t) => say(format!(
                "FAIL answered only after {t:?} beside a stalled client"
            )),
            Err(e) => say(format!("FAIL {e}")),
        }
        (half, slow)
    }

    /// 1,000 at once, each a whole request, all sent before any is read (the parent's
    /// bystander asks meanwhile): each answered (and checked), busy, refused or closed, and
    /// some answered.
    fn storm_of_1000(&self) {
        let mut storm: Vec<UnixStream> = Vec::new();
        let mut refused_connect = 0;
        for _ in 0..1000 {
            match UnixStream::connect(self.socket) {
                Ok(mut s) => {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
                    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
                    let _ = s.write_all(&wire::request(&self.all, None));
                    storm.push(s);
                }
                Err(_) => refused_connect += 1,
            }
        }
        wait_go("1,000 clients");
        let (mut answered, mut busy, mut refused, mut closed) = (0, 0, 0, 0);
        let t = Instant::now();
        for s in storm.iter_mut() {
            match self.storm_reply(s) {
                Ok(Some((wire::Kind::Answer, _))) => answered += 1,
                Ok(Some((wire::Kind::Busy, _))) => busy += 1,
                Ok(Some((wire::Kind::Refused, _))) => refused += 1,
                Ok(Some(_)) | Err(_) => {}
                Ok(None) => closed += 1,
            }
        }
        say(format!(
            "ok 1,000 clients in {:?}: {answered} answered, {busy} busy, {refused} refused, \
             {closed} closed, {refused_connect} connections refused",
            t.elapsed()
        ));
        if answered == 0 {
            say("FAIL none of 1,000 clients was answered".to_string());
        }
    }

    /// One storm client's reply past its Accepted frames, after saying what fails in it (an
    /// answer that fails [`Hostile::check_answer`], a Busy frame with a payload, another
    /// kind).
    fn storm_reply(&self, s: &mut UnixStream) -> Result<Option<(wire::Kind, Vec<u8>)>, String> {
        loop {
            let r = reply(s);
            match &r {
                Ok(Some((wire::Kind::Accepted, _))) => continue,
                Ok(Some((wire::Kind::Answer, p))) => match answer_tasks(s, p) {
                    Ok(tasks) => {
                        if let Err(e) = self.check_answer("one of 1,000", &tasks) {
                            say(format!("FAIL {e}"));
                        }
                    }
                    Err(e) => say(format!("FAIL one of 1,000: {e}")),
                },
                Ok(Some((wire::Kind::Busy, p))) => {
                    if !p.is_empty() {
                        say(format!("FAIL a Busy frame carried {} bytes", p.len()));
                    }
                }
                Ok(Some((wire::Kind::Refused, _))) | Ok(None) => {}
                Ok(Some((k, _))) => say(format!("FAIL one of 1,000 got a {k:?} frame")),
                Err(e) => say(format!("FAIL one of 1,000: {e}")),
            }
            return r;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Budgets: memory and slots; what an answer's report says; why a client read /proc.

/// The memory budget the memory test gives the service (`--query-memory-budget`), MiB.
const TEST_BUDGET_MIB: u64 = 128;

/// The helper processes of the memory test: `n` connections, each asking a query of its own
/// (so that no two share a pass) for every process's command line and environment, that
/// read nothing of their answers. Says `holding` once every request went out, then waits
/// for a line on stdin and leaves.
fn silent_readers(socket: &str, n: usize) {
    let mut held = Vec::new();
    for i in 0..n {
        let Ok(mut s) = UnixStream::connect(socket) else {
            continue;
        };
        let groups = Groups::of(&[Group::Cmdline, Group::Environ])
            .flag(Group::Stat, i & 1 != 0)
            .flag(Group::Mem, i & 2 != 0)
            .flag(Group::Sched, i & 4 != 0)
            .flag(Group::Fds, i & 8 != 0);
        let selector = if i & 16 != 0 {
            Selector::AllThreads
        } else {
            Selector::AllProcesses
        };
        let _ = wire::send(&mut s, &wire::request(&Query::new(selector, groups), None));
        held.push(s);
    }
    println!("holding {}", held.len());
    let _ = std::io::stdout().flush();
    let mut l = String::new();
    let _ = std::io::stdin().read_line(&mut l);
}

/// The helper processes of the slots test: `n` connections that never send a byte, each
/// opened again as soon as the service closes it (its request deadline), until stdin
/// closes. Says `holding` once `n` are open.
fn slot_holders(socket: &str, n: usize) {
    use std::os::fd::AsRawFd;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut l = String::new();
            let _ = std::io::stdin().read_line(&mut l);
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }
    let mut conns: Vec<Option<UnixStream>> =
        (0..n).map(|_| UnixStream::connect(socket).ok()).collect();
    println!("holding {}", conns.iter().flatten().count());
    let _ = std::io::stdout().flush();
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let mut fds: Vec<libc::pollfd> = conns
            .iter()
            .map(|c| libc::pollfd {
                fd: c.as_ref().map_or(-1, |s| s.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll over a vector of pollfds that lives for the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
        for (c, p) in conns.iter_mut().zip(&fds) {
            // Said anything (a refusal, Busy) or closed: the service let it go; open another.
            if c.is_none() || p.revents != 0 {
                *c = UnixStream::connect(socket).ok();
            }
        }
    }
}

#[test]
fn silent_readers_of_big_answers_keep_serve_within_its_query_memory_budget() {
    skip_unless_root!("a memory attack on the query service");
    let budget = format!("{TEST_BUDGET_MIB}M");
    let mut service = Service::start_with(&["--query-memory-budget", &budget]);
    // Nobody's 200 processes, each with 120 kB of arguments and 120 kB of environment: a
    // pass of every command line and environment holds some 48 MB of them.
    let loadgen = tasksnap_loadgen::reachable::staged(
        tasksnap_loadgen::find_binary().expect("tasksnap-loadgen built"),
    );
    let nobody = NOBODY.to_string();
    let _load = tasksnap_loadgen::Load::spawn_with_binary(
        "setpriv",
        &[
            &format!("--reuid={nobody}"),
            &format!("--regid={nobody}"),
            "--clear-groups",
            "--",
            &loadgen.to_string_lossy(),
            "--procs",
            "200",
            "--exec-children",
            "--arg-bytes",
            "120000",
        ],
    )
    .expect("nobody's heavy processes");
    // The service at rest after one ordinary answer.
    let socket = service.socket.clone();
    let bystander = Caller::new(format!("uid {OTHER_UID}"), OTHER_UID, &socket);
    let o = bystander.ps(Source::Service, &["-ef"]);
    assert_eq!(o.code, Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let at_rest = service.status_kib("VmRSS");

    // Nobody asks 8 different queries for all of that and reads nothing, twice over.
    for round in 0..2 {
        let mut attack = helper_as(NOBODY, &format!("silent:{}:8", service.socket));
        let mut said = wait_for_line(&mut attack, "8");
        // Every request is taken (Accepted at once); passes follow within a second or two.
        std::thread::sleep(Duration::from_secs(3));
        let o = bystander.ps(Source::Auto, &["-ef"]);
        assert_eq!(o.code, Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let mut stdin = attack.stdin.take().expect("stdin");
        let _ = writeln!(stdin, "go");
        drop(stdin);
        let _ = attack.wait();
        let _ = std::io::Read::read_to_end(&mut said, &mut Vec::new());
        assert!(service.alive(), "round {round}: {}", service.log());
    }
    let peak = service.status_kib("VmHWM");
    // Memory goes back once the attackers are gone (the kept passes expire, the heap is
    // trimmed when the service is idle).
    let mut after = service.status_kib("VmRSS");
    let back_by = Instant::now() + Duration::from_secs(40);
    while after > at_rest + (48 << 10) && Instant::now() < back_by {
        std::thread::sleep(Duration::from_millis(500));
        after = service.status_kib("VmRSS");
    }
    let log = service.terminate();
    eprintln!(
        "serve's RSS at rest {} MiB, peak {} MiB, after {} MiB; {log}",
        at_rest >> 10,
        peak >> 10,
        after >> 10
    );
    // The budget, one pass being measured (taken before its size is known) and the
    // collector's own working memory.
    let bound = at_rest + ((TEST_BUDGET_MIB + 96) << 10);
    assert!(
        peak <= bound,
        "serve's RSS peaked at {} MiB, over {} MiB (at rest {} MiB, budget {TEST_BUDGET_MIB} \
         MiB): {log}",
        peak >> 10,
        bound >> 10,
        at_rest >> 10
    );
    assert!(
        after <= at_rest + (48 << 10),
        "serve's RSS stayed at {} MiB after the attack (at rest {} MiB): {log}",
        after >> 10,
        at_rest >> 10
    );
    // The accounting itself never went over (serve says its peak when it stops).
    let said = log
        .split("query memory: peak ")
        .nth(1)
        .and_then(|r| r.split(" MiB").next()?.parse::<f64>().ok());
    match said {
        Some(p) => assert!(p <= TEST_BUDGET_MIB as f64, "accounted peak {p} MiB: {log}"),
        None => panic!("serve did not say its query memory peak: {log}"),
    }
}

#[test]
fn four_users_holding_every_slot_do_not_starve_a_fifth() {
    skip_unless_root!("slot holders on the query service");
    let service = Service::start();
    // Four users (uids without passwd entries), each holding 8 connections that never send,
    // opened again as soon as the service lets one go: 32, every slot there is.
    let mut holders: Vec<Child> = (0..4)
        .map(|k| helper_as(OTHER_UID + 1 + k, &format!("hold:{}:8", service.socket)))
        .collect();
    let _outs: Vec<_> = holders.iter_mut().map(|h| wait_for_line(h, "8")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let fifth = Caller::new(format!("uid {OTHER_UID}"), OTHER_UID, &service.socket);
    let mut failures = Vec::new();
    for i in 0..5 {
        let o = fifth.ps(Source::Service, &["-p", "1", "-o", "pid"]);
        if o.code != Some(0) {
            failures.push(format!(
                "request {i}: exited {:?}: {}",
                o.code,
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
    }
    for mut h in holders {
        drop(h.stdin.take());
        let _ = h.kill();
        let _ = h.wait();
    }
    assert!(
        failures.is_empty(),
        "a fifth user was turned away while four held every slot:\n{}\n{}",
        failures.join("\n"),
        service.log()
    );
}

/// A directory of root's every user may enter (0755), removed on drop.
fn open_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("a directory");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    dir
}

/// A listener of root's at a path of its own that answers every request the same way.
fn fake_service(dir: &std::path::Path, name: &str, reply: Option<Vec<u8>>) -> String {
    let path = dir.join(name);
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .expect("chmod");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = wire::read_frame(&mut s, wire::MAX_REQUEST);
            match &reply {
                Some(frame) => {
                    let _ = s.write_all(frame);
                }
                // Silent: the request taken, nothing said, the connection kept.
                None => held.push(s),
            }
        }
    });
    path.to_string_lossy().into_owned()
}

#[test]
fn ps_verbose_says_why_it_read_proc_instead_of_the_service() {
    skip_unless_root!("ps --verbose as nobody beside services that do not answer");
    let dir = open_dir("tasksnap-fallback-");
    let busy = fake_service(dir.path(), "busy.sock", Some(wire::empty(wire::Kind::Busy)));
    let refused = fake_service(
        dir.path(),
        "refused.sock",
        Some(wire::refused("a test's refusal")),
    );
    let silent = fake_service(dir.path(), "silent.sock", None);
    // A socket file nobody listens on any more (a stopped service's).
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    std::fs::set_permissions(&stale, std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .expect("chmod");
    let stale = stale.to_string_lossy().into_owned();
    let missing = dir.path().join("none.sock").to_string_lossy().into_owned();
    let planted = dir.path().join("file.sock");
    std::fs::write(&planted, b"not a socket").expect("a file");
    let planted = planted.to_string_lossy().into_owned();
    let cases: [(&str, &str, &str); 6] = [
        ("busy", &busy, "is busy"),
        (
            "refusing",
            &refused,
            "the service refused: a test's refusal",
        ),
        ("silent", &silent, "did not take the request within"),
        ("stopped", &stale, "nothing listens at"),
        ("missing", &missing, "no query service at"),
        ("a regular file", &planted, "no query service at"),
    ];
    let mut failures = Vec::new();
    for (what, socket, says) in cases {
        let caller = Caller::new(format!("nobody, the service {what}"), NOBODY, socket);
        let o = caller.ps(Source::Auto, &["--verbose", "-p", "1", "-o", "pid"]);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.code != Some(0) || !e.contains(says) || !e.contains("backend procfs read") {
            failures.push(format!(
                "{}: exited {:?}, said {e:?} (expected {says:?} and the procfs backend)",
                caller.name, o.code
            ));
        }
        // Insisting on the service: an error that says the same.
        let o = caller.ps(Source::Service, &["-p", "1", "-o", "pid"]);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.code == Some(0) || !e.contains(says) {
            failures.push(format!(
                "{} with --backend service: exited {:?}, said {e:?} (expected {says:?})",
                caller.name, o.code
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_service_tells_a_hidepid_caller_no_host_wide_counts() {
    skip_unless_root!("what the service's report tells nobody under hidepid");
    let socket = shared_service();
    let caller = Caller {
        name: "nobody with /proc hidepid=invisible".into(),
        uid: NOBODY,
        gid: NOBODY,
        socket,
        tasksnap: tasksnap_copy(),
        proc_opts: Some("hidepid=invisible"),
    };
    let o = caller.ps(Source::Service, &["--verbose", "-e", "-o", "pid"]);
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.code, Some(0), "{e}");
    let rows = o
        .stdout
        .split(|&c| c == b'\n')
        .skip(1)
        .filter(|l| !l.is_empty())
        .count();
    let line = e
        .lines()
        .find_map(|l| l.strip_prefix("tasksnap: pass: the service's pass: "))
        .unwrap_or_else(|| panic!("no pass line: {e}"));
    // The client's own figures close the line: "(N tasks, B bytes)", N what it was sent.
    let (how, mine) = line.rsplit_once(" (").unwrap_or((line, ""));
    assert!(
        mine.starts_with(&format!("{rows} tasks")),
        "the report counts {mine:?}, ps printed {rows} rows: {e}"
    );
    // Of the service's own description, only timings: every number is some ms.
    let words: Vec<&str> = how
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            assert!(
                words.get(i + 1) == Some(&"ms"),
                "the service told a hidepid caller {w:?} (\"{how}\"): {e}"
            );
        }
    }
}

#[test]
fn a_regular_file_at_the_socket_path_is_named_with_what_to_do() {
    skip_unless_root!("serve beside a file planted at its socket path");
    let dir = open_dir("tasksnap-planted-");
    let at = dir.path().join("query.sock");
    std::fs::write(&at, b"planted").expect("plant a file");
    let o = Command::new(TASKSNAP)
        .args(["serve", "--no-metrics", "--query-socket"])
        .arg(&at)
        .stdin(Stdio::null())
        .output()
        .expect("run serve");
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("is a regular file") && e.contains("not a socket") && e.contains("rm "),
        "serve said {e:?}"
    );
    assert_eq!(std::fs::read(&at).ok().as_deref(), Some(&b"planted"[..]));
}
