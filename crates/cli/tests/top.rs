//! `tasksnap top`: the batch output parsed back (and checked against /proc for a spawned
//! load and a CPU hog), and the live view driven in a real terminal (tmux): start, sort,
//! filter, tree, threads, freeze, kill and renice with confirmation, resize to 40x10 and to a
//! too-small 15x3 and back, quit.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tasksnap_loadgen::skip_unless_root;

use common::ps::*;
use common::top::{exited_count, frames, own_sh, ExitedTop, Frame};
use common::*;

fn spawn(cmd: &str) -> Guard {
    Guard::spawn(Command::new("sh").args(["-c", cmd]).stdout(Stdio::null())).expect("spawn sh")
}

/// Runs `tasksnap top -b` with `args` and parses its frames; the run must succeed.
fn batch(args: &[&str]) -> Vec<Frame> {
    let out = run(TASKSNAP, &["top", "-b"], args, "C");
    assert_eq!(out.code, Some(0), "{}", text(&out.stderr));
    frames(&text(&out.stdout))
}

#[test]
fn batch_frames_parse_back_and_agree_with_proc() {
    let load = spawn_load();
    let hog = spawn("while :; do :; done");
    let hog_pid = hog.pid();
    let frames = batch(&["-n", "2", "-d", "1", "--backend=procfs"]);
    assert_eq!(frames.len(), 2, "two frames");
    for f in &frames {
        assert_eq!(
            f.columns,
            [
                "PID", "USER", "PR", "NI", "VIRT", "RES", "SHR", "S", "%CPU", "%MEM", "RUNQ%",
                "THR%", "DISK%", "TIME+", "COMMAND"
            ]
        );
        assert!(f.header[0].contains("load average:"), "{:?}", f.header);
        let total: usize = f.header[1]
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .expect("Tasks: N total");
        assert_eq!(total, f.rows.len(), "Tasks total counts the rows");
        assert!(f.header[5].starts_with("tasksnap:"), "own cost line");
        // Every process of the load is there, with the user, nice and state /proc gives.
        for pid in load.info.known_pids() {
            let Ok(st) = tasksnap_loadgen::read_stat(pid) else {
                continue; // gone meanwhile
            };
            let Some(row) = f.row(pid) else {
                panic!("pid {pid} missing from the batch frame");
            };
            assert_eq!(row[1], "root", "{row:?}");
            assert_eq!(
                row[7].chars().next(),
                Some(st.state),
                "state of {pid}: {row:?}"
            );
        }
    }
    // The hog never sleeps: over the second interval it was either on a CPU or waiting for
    // one, so %CPU + RUNQ% is ~100 however busy the machine is (an idle one gives ~100 + 0).
    let second = &frames[1];
    let row = second.row(hog_pid).expect("the hog is listed");
    let cpu: f64 = row[8].parse().expect("%CPU");
    let runq: f64 = row[10].parse().expect("RUNQ%");
    assert!(
        (80.0..=120.0).contains(&(cpu + runq)),
        "hog: %CPU {cpu} + RUNQ% {runq} should be ~100: {row:?}"
    );
    assert!(cpu > 1.0, "the hog ran: {row:?}");
    // And the sleepers of the load neither ran nor waited.
    for pid in &load.info.procs {
        if let Some(r) = second.row(*pid) {
            assert_eq!(r[10], "0.0", "a sleeper's RUNQ%: {r:?}");
        }
    }
}

#[test]
fn batch_mode_bpf_lists_the_same_processes() {
    skip_unless_root!("top -b with the BPF backend");
    let load = spawn_load();
    let frames = batch(&["-n", "1", "--backend=bpf"]);
    for pid in load.info.known_pids() {
        if tasksnap_loadgen::read_stat(pid).is_ok() {
            assert!(frames[0].row(pid).is_some(), "pid {pid} missing");
        }
    }
}

#[test]
fn later_frames_read_only_what_changed_and_keep_every_process() {
    skip_unless_root!("top -b with changed-only BPF walks");
    changed_only_frames_keep_every_process("bpf");
}

#[test]
fn later_procfs_frames_read_only_what_changed_and_keep_every_process() {
    // Over procfs, by the processes' CPU clocks: no privileges needed.
    changed_only_frames_keep_every_process("procfs");
}

fn changed_only_frames_keep_every_process(backend: &str) {
    let load = spawn_load();
    let frames = batch(&["-n", "4", "-d", "0.3", &format!("--backend={backend}")]);
    // The first frames are whole passes (the BPF walk is loaded after the first screen);
    // the last ones read only the processes that ran, and still list every process.
    let last = frames.last().expect("frames");
    assert!(last.header[5].contains(backend), "{:?}", last.header[5]);
    let own = &last.header[5];
    // "..., bpf (pinned), 102 tasks (26 changed)", maybe followed by "; why ...".
    let changed: usize = own
        .split(" tasks (")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no changed count in {own:?}"));
    assert!(changed < last.rows.len(), "{own:?}");
    for pid in load.info.known_pids() {
        if tasksnap_loadgen::read_stat(pid).is_ok() {
            assert!(last.row(pid).is_some(), "pid {pid} missing: {own:?}");
        }
    }
}

#[test]
fn disk_wait_of_a_d_state_process_is_measured() {
    skip_unless_root!("DISK% from the BPF states accounting");
    let load = spawn_load();
    let d = *load
        .info
        .dstate
        .first()
        .expect("the load has a D-state task");
    let frames = batch(&["-n", "2", "-d", "1", "--backend=bpf"]);
    let row = frames[1].row(d).expect("the D-state task is listed");
    assert_eq!(row[7], "D", "{row:?}");
    // The vfork parent waits in D the whole interval: DISK% near 100 (whatever the CPU
    // contention, it does not run).
    let disk: f64 = row[12]
        .parse()
        .unwrap_or_else(|_| panic!("DISK% of {row:?}"));
    assert!(disk > 90.0, "DISK% {disk}: {row:?}");
    // Sleepers have no D time.
    for pid in &load.info.procs {
        if let Some(r) = frames[1].row(*pid) {
            assert_eq!(r[12], "0.0", "{r:?}");
        }
    }
}

/// A tasksnap top in a private tmux server.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(cols: u16, rows: u16, cmd: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        // One server per view: the tests of this file run at the same time.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("tasksnap-test-{}-{n}", std::process::id());
        let ok = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-s", "t"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg(cmd)
            .env("TERM", "xterm-256color")
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session");
        Some(Tmux { socket })
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "t", k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// Types `text` literally (so that `-1` is not taken for a tmux flag).
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", "--", text]);
        std::thread::sleep(Duration::from_millis(60));
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-t", "t", "-p"])
    }

    /// Waits until the screen satisfies `f`, or fails with the last screen.
    fn wait_for(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn resize(&self, cols: u16, rows: u16) {
        self.tmux(&[
            "resize-window",
            "-t",
            "t",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// Field 19 (nice) of /proc/PID/stat.
fn nice_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 1..];
    after.split_whitespace().nth(16)?.parse().ok()
}

/// The pid a row starts with.
fn leading_pid(row: &str) -> Option<i32> {
    row.split_whitespace().next()?.parse().ok()
}

/// The data rows on a screen: lines that start with a pid.
fn screen_pids(s: &str) -> Vec<i32> {
    s.lines().filter_map(leading_pid).collect()
}

#[test]
fn live_view_in_a_terminal() {
    let status_file = std::env::temp_dir().join(format!("tasksnap-top-{}", std::process::id()));
    let _ = std::fs::remove_file(&status_file);
    let victim = spawn("exec sleep 600");
    let victim_pid = victim.pid();
    let threads = spawn_load();
    let cmd = format!(
        "{TASKSNAP} top -d 0.5 --backend procfs; echo $? > {}; sleep 30",
        status_file.display()
    );
    let Some(t) = tmux_or_skip(120, 40, &cmd, "the terminal test") else {
        return;
    };
    // Started: header, column header, rows.
    t.wait_for("the first screen", |s| {
        s.contains("Tasks:") && s.contains("PID USER") && s.contains("tasksnap:")
    });
    // Sort by pid: rows ascending.
    t.keys(&["N"]);
    // The status line says the key took effect (rows may be in pid order by chance).
    t.wait_for("pid order", |s| {
        let p = screen_pids(s);
        s.contains("sort PID") && p.len() > 5 && p.windows(2).all(|w| w[0] < w[1])
    });
    // Filter by name: only sleep processes.
    t.keys(&["/", "sleep", "Enter"]);
    let s = t.wait_for("the name filter", |s| {
        let p = screen_pids(s);
        !p.is_empty() && p.contains(&victim_pid)
    });
    for l in s.lines().filter(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|w| w.parse::<i32>().is_ok())
    }) {
        assert!(l.contains("sleep"), "filtered row without 'sleep': {l}");
    }
    t.keys(&["="]);
    t.wait_for("filters cleared", |s| screen_pids(s).len() > 5);
    // Tree view: children drawn under parents.
    t.keys(&["V"]);
    t.wait_for("the tree", |s| s.contains("`- "));
    t.keys(&["V"]);
    cgroup_view_keys(&t);
    // Threads view.
    t.keys(&["H"]);
    t.wait_for("the threads view", |s| s.contains("Threads:"));
    t.keys(&["H"]);
    t.wait_for("the process view", |s| s.contains("Tasks:"));
    // Freeze: the clock stops.
    t.keys(&["z"]);
    let frozen = t.wait_for("frozen", |s| s.contains("[frozen"));
    std::thread::sleep(Duration::from_millis(1500));
    let later = t.screen();
    assert_eq!(
        frozen.lines().next(),
        later.lines().next(),
        "a frozen screen does not change"
    );
    t.keys(&["z"]);
    t.wait_for("unfrozen", |s| !s.contains("[frozen"));
    // Renice then kill the victim, each after confirmation.
    t.keys(&["r"]);
    t.keys(&[&victim_pid.to_string(), "Enter", "7", "Enter"]);
    t.wait_for("the renice confirmation", |s| s.contains("Renice pid"));
    t.keys(&["y"]);
    t.wait_for("reniced", |s| s.contains("reniced"));
    assert_eq!(nice_of(victim_pid), Some(7), "renice took effect");
    t.keys(&["k", &victim_pid.to_string(), "Enter", "9", "Enter"]);
    t.wait_for("the kill confirmation", |s| s.contains("Send signal 9"));
    t.keys(&["y"]);
    t.wait_for("sent", |s| s.contains("sent signal 9"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{victim_pid}/stat"))
        .is_ok_and(|s| !s.contains(") Z"))
    {
        assert!(Instant::now() < deadline, "the victim survived");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Resizing: small but usable, too small, and back.
    t.resize(40, 10);
    t.wait_for("the 40x10 screen", |s| {
        s.contains("PID USER") && s.lines().count() <= 10
    });
    t.resize(15, 3);
    t.wait_for("the too-small message", |s| s.contains("too small"));
    t.resize(120, 40);
    t.wait_for("the full screen again", |s| {
        s.contains("Tasks:") && s.contains("PID USER")
    });
    // The wait-reason view: the COMMAND column carries each process's top wait.
    t.keys(&["w"]);
    t.wait_for("the wait view", |s| s.contains("COMMAND: WAIT"));
    t.keys(&["w"]);
    // Help, then quit with status 0.
    t.keys(&["h"]);
    t.wait_for("help", |s| s.contains("tasksnap top: keys"));
    t.keys(&["x", "q"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(code) = std::fs::read_to_string(&status_file) {
            assert_eq!(code.trim(), "0", "exit status");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "top did not quit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_file(&status_file);
    drop(threads);
}

/// `--cgroups` in batch mode: a cgroup with a 20% CPU quota and a spinner in it shows its
/// quota and its time throttled over each interval, below its hierarchy's root.
#[test]
fn batch_cgroup_view_shows_a_throttled_cgroup() {
    use tasksnap_loadgen::cpu_cgroup::{self, Spinner};
    if !cpu_cgroup::root_with_cpu_cgroups("top's cgroup view") {
        return;
    }
    let spinner = Spinner::start("topcg", Some(20), None);
    let name = spinner.group().expect("group").file_name().expect("name");
    let path = format!("/{}", name.to_string_lossy());
    let out = run(
        TASKSNAP,
        &["top", "-b"],
        &["-n", "2", "-d", "1", "--cgroups"],
        "C",
    );
    assert_eq!(out.code, Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let frames: Vec<&str> = stdout.split("top - ").skip(1).collect();
    assert_eq!(frames.len(), 2, "{stdout}");
    for (k, f) in frames.iter().enumerate() {
        let lines: Vec<&str> = f
            .lines()
            .skip_while(|l| !l.starts_with("HIER  TASKS"))
            .collect();
        let root = lines
            .iter()
            .position(|l| l.ends_with(" /") && l.starts_with("v1"));
        let mine = lines.iter().position(|l| l.ends_with(&format!(" {path}")));
        let (Some(root), Some(mine)) = (root, mine) else {
            panic!("frame {k}: no v1 root or no {path}:\n{f}");
        };
        assert!(root < mine, "tree order:\n{f}");
        let cells: Vec<&str> = lines[mine].split_whitespace().collect();
        // HIER TASKS PROCS CPU% THR% QUOTA ...
        assert_eq!(cells[5], "0.20", "{}", lines[mine]);
        // Batch mode reads once before its first frame (as for the tasks' rates).
        let thr = cells[4].parse::<f64>().ok();
        assert!(thr.is_some(), "frame {k}: {}", lines[mine]);
        if k == 1 {
            assert!(thr.is_some_and(|t| t > 0.0), "{}", lines[mine]);
        }
    }
    drop(spinner);
}

/// The cgroup view (`g`) and back: a row per cgroup, the root of each hierarchy first; Enter
/// there drills into the top row's cgroup, which is a hierarchy's root (every process): it
/// says so and stays.
fn cgroup_view_keys(t: &Tmux) {
    t.keys(&["g"]);
    t.wait_for("the cgroup view", |s| {
        s.contains("HIER  TASKS") && s.lines().any(|l| l.ends_with(" /"))
    });
    t.keys(&["g"]);
    t.wait_for("the process view again", |s| s.contains("PID USER"));
    t.keys(&["g"]);
    t.wait_for("the cgroup view", |s| s.contains("HIER  TASKS"));
    t.keys(&["Enter"]);
    t.wait_for("the root's answer", |s| {
        s.contains("HIER  TASKS") && s.contains("holds every process")
    });
    t.keys(&["g"]);
    t.wait_for("the process view again", |s| s.contains("PID USER"));
}

/// Starts a view in tmux or skips (fails under CI) when tmux is missing.
fn tmux_or_skip(cols: u16, rows: u16, cmd: &str, what: &str) -> Option<Tmux> {
    let t = Tmux::start(cols, rows, cmd);
    if t.is_none() {
        if std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1") {
            panic!("tmux is missing and CI forbids skipping {what}");
        }
        eprintln!("SKIP {what}: tmux is not installed");
    }
    t
}

/// The kill prompt once took `-1`: "sent signal 15 to -1", as root SIGTERM to every process
/// on the host. `0` and other negatives too, and the renice prompt took `-1`.
#[test]
fn top_kill_prompt_signals_pid_minus_one() {
    let canary = spawn("exec sleep 600");
    let canary_pid = canary.pid();
    let cmd = format!("{TASKSNAP} top -d 0.5 --backend procfs; sleep 30");
    let Some(t) = tmux_or_skip(120, 40, &cmd, "the kill prompt test") else {
        return;
    };
    t.wait_for("the first screen", |s| s.contains("PID USER"));
    for bad in ["-1", "0", "-2", "+1"] {
        a_bad_pid_is_refused(&t, "k", "PID to signal", bad, "Signal to send");
        a_bad_pid_is_refused(&t, "r", "PID to renice", bad, "Nice value for");
    }
    // Still alive: nothing was signalled.
    assert!(tasksnap_loadgen::read_stat(canary_pid).is_ok_and(|st| st.state != 'Z'));
}

/// Answers the pid prompt of `key` (saying `prompt`) with `bad`: refused, naming it, and the
/// next question (`next`) never asked.
fn a_bad_pid_is_refused(t: &Tmux, key: &str, prompt: &str, bad: &str, next: &str) {
    t.keys(&[key]);
    t.wait_for(prompt, |s| s.contains(prompt));
    t.type_text(bad);
    t.keys(&["Enter"]);
    let s = t.wait_for("the refusal", |s| {
        s.contains(&format!("'{bad}'")) && !s.contains(prompt)
    });
    assert!(!s.contains(next), "{bad} accepted at {prompt:?}:\n{s}");
}

/// Started with SIGHUP ignored (nohup, or pid 1 of a pid namespace), top went on at 100% of
/// a CPU forever once its terminal was closed; procps top exits.
#[test]
fn top_spins_when_its_terminal_goes_away() {
    let pid_file = std::env::temp_dir().join(format!("tasksnap-top-hup-{}", std::process::id()));
    let _ = std::fs::remove_file(&pid_file);
    let cmd = format!(
        "echo $$ > {}; trap '' HUP; exec {TASKSNAP} top -d 0.5 --backend procfs",
        pid_file.display()
    );
    let Some(t) = tmux_or_skip(100, 30, &cmd, "the hang-up test") else {
        return;
    };
    t.wait_for("the first screen", |s| s.contains("PID USER"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("top's pid");
    let _ = std::fs::remove_file(&pid_file);
    // Closing the terminal: the pty's other side goes away.
    drop(t);
    let deadline = Instant::now() + Duration::from_secs(5);
    while tasksnap_loadgen::read_stat(pid).is_ok_and(|st| st.state != 'Z') {
        if Instant::now() > deadline {
            // SAFETY: kill with a positive pid this test started (through tmux).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("top (pid {pid}) still running 5 s after its terminal went away");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// procps top: a message and exit status 1 for each bad argument. tasksnap printed a frame
/// and exited 0 (`-n 0`, `-u nosuch`, `-p ""`, `-p -1`), exited 2 (`-d -1`) or panicked
/// (`-d 1e20`).
#[test]
fn top_bad_arguments_print_a_frame_or_panic() {
    // Each as typed, its arguments one space apart (`-p ` gives `-p ""`).
    let cases = "-n 0|-u no-such-user-tasksnap|-p |-p -1|-d -1|-d 1e20|-w 0";
    for bad in cases.split('|').map(words) {
        let out = run(TASKSNAP, &["top", "-b", "-n", "1"], &bad, "C");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.code, Some(1), "{bad:?}: {err}");
        assert!(out.stdout.is_empty(), "{bad:?} printed a frame");
        assert!(err.starts_with("tasksnap top: "), "{bad:?}: {err}");
        assert!(!err.contains("panicked"), "{bad:?}: {err}");
    }
}

/// `top -c` showed an empty COMMAND for a process with an empty argv (ps shows `[comm]`),
/// invalid UTF-8 as U+FFFD (ps shows `?`), and ignored COLUMNS in batch mode.
#[test]
fn top_command_lines_blank_or_lossy() {
    let load = spawn_load();
    let pids: Vec<i32> = load.info.known_pids();
    let top_c = words("top -b -n 1 -c --backend procfs");
    let out = tasksnap_in_columns("512", &top_c, "C.UTF-8");
    assert_eq!(
        out.code,
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("top prints valid UTF-8");
    assert!(
        !text.contains('\u{fffd}'),
        "a replacement character on screen"
    );
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.contains("PID USER"))
        .expect("header");
    let at = lines[header].find("COMMAND").expect("COMMAND column");
    assert!(
        lines.iter().all(|l| l.chars().count() <= 512),
        "COLUMNS=512 not honoured"
    );
    let mut compared = 0;
    for l in &lines[header + 1..] {
        let Some(pid) = leading_pid(l).filter(|p| pids.contains(p)) else {
            continue;
        };
        let top_cmd: String = l.chars().skip(at).collect();
        let ps = run_procps(
            &["-ww", "-o", "args=", "-p", &pid.to_string()],
            "C.UTF-8",
            None,
        );
        let ps_cmd = String::from_utf8_lossy(&ps.stdout)
            .trim_end_matches('\n')
            .to_string();
        if ps_cmd.is_empty() {
            continue; // gone
        }
        assert!(
            !top_cmd.trim().is_empty(),
            "pid {pid}: blank COMMAND, ps says {ps_cmd:?}"
        );
        let room = 512 - at;
        let want: String = ps_cmd.chars().take(room).collect();
        assert_eq!(top_cmd.trim_end(), want.trim_end(), "pid {pid}");
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} rows of the load compared");
    // COLUMNS is honoured in batch mode, as procps top -b does.
    let narrow = tasksnap_in_columns("60", &["top", "-b", "-n", "1"], "C");
    let narrow = String::from_utf8_lossy(&narrow.stdout).into_owned();
    assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
}

/// A process whose /proc/PID/cmdline blocks for seconds (the load generator's
/// `--mmap-lock-storm`), and its pid; the load is torn down on drop.
fn spawn_mmap_lock_holder() -> (tasksnap_loadgen::Load, u32) {
    let load = tasksnap_loadgen::Load::spawn(&["--mmap-lock-storm"])
        .expect("spawn the load generator (cargo build --workspace first)");
    let pid = load.info.mmap_lock_storm.expect("the storm's pid") as u32;
    (load, pid)
}

/// `top -b -n 3 -d 1 -c` took 12.3 s instead of 3 while a process's mmap lock was held for
/// seconds: top read /proc/PID/cmdline itself, with no deadline.
#[test]
fn top_freezes_on_a_tasks_mmap_lock() {
    let (_holder, holder_pid) = spawn_mmap_lock_holder();
    // Until a read blocks the test would prove nothing.
    tasksnap_loadgen::wait_until("a blocked cmdline read", || {
        tasksnap_loadgen::cmdline_read_blocks(holder_pid as i32)
    });
    for backend in ["procfs", "auto"] {
        let frames = |c: &[&str]| {
            let started = Instant::now();
            let args = [
                &["top", "-b", "-n", "3", "-d", "1", "--backend", backend][..],
                c,
            ]
            .concat();
            let out = run(TASKSNAP, &args, &[], "C");
            assert_eq!(
                out.code,
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            (
                started.elapsed(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        // The same run without command lines, side by side: on a busy machine both are
        // slower than the ~2.3 s three frames take, but only -c waited on the lock (it read
        // the holder's command line each frame, each read blocked for seconds).
        let (plain, _) = frames(&[]);
        let (took, text) = frames(&["-c"]);
        assert!(
            took < plain + Duration::from_millis(2500),
            "{backend}: top -b -n 3 -d 1 -c took {took:?}, {plain:?} without -c"
        );
        let pid = holder_pid.to_string();
        assert_eq!(
            text.lines()
                .filter(|l| l.split_whitespace().next() == Some(pid.as_str()))
                .count(),
            3,
            "{backend}: the holder is on every frame"
        );
    }
}

/// The live view with full command lines stopped redrawing for seconds while a process's
/// mmap lock was held: its clock must keep moving.
#[test]
fn top_live_view_redraws_while_an_mmap_lock_is_held() {
    let (_holder, holder_pid) = spawn_mmap_lock_holder();
    let cmd = format!("{TASKSNAP} top -d 1 -c --backend procfs; sleep 30");
    let Some(t) = tmux_or_skip(160, 50, &cmd, "the live view under a held mmap lock") else {
        return;
    };
    t.wait_for("the first screen", |s| s.contains("PID USER"));
    tasksnap_loadgen::wait_until("a blocked cmdline read", || {
        tasksnap_loadgen::cmdline_read_blocks(holder_pid as i32)
    });
    // The header's clock (hh:mm:ss) on each capture: it must not stand still for 2.5 s.
    let clock = |s: &str| {
        s.lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(2))
            .map(str::to_string)
    };
    let mut last = clock(&t.screen());
    let mut last_change = Instant::now();
    let end = Instant::now() + Duration::from_secs(8);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(200));
        let now = clock(&t.screen());
        if now != last {
            last = now;
            last_change = Instant::now();
        }
        assert!(
            last_change.elapsed() < Duration::from_millis(2500),
            "no redraw for {:?}:\n{}",
            last_change.elapsed(),
            t.screen()
        );
    }
}

/// `top -b --exited` (root with BPF): two processes that live 200 ms between two frames,
/// one ending with `exit 7` and one killed by SIGKILL, are each listed once, in a frame after
/// their exit, as `<name>` with state E and the code or the signal in the EXIT column; that
/// frame's "Tasks:" line counts the exited processes.
#[test]
fn exited_view_marks_processes_that_lived_between_two_frames() {
    skip_unless_root!("top --exited (the BPF exit records)");
    let (_dir, sh, name) = own_sh("e");
    let top = ExitedTop::start();
    let (coded, killed) = two_short_lived(&sh, "0.2", 7);
    let text = top.finish();

    let frames = frames(&text);
    assert_eq!(frames.len(), 3, "{text}");
    for f in &frames {
        assert_eq!(
            f.columns[13..],
            ["TIME+", "EXIT", "COMMAND"],
            "an EXIT column before COMMAND"
        );
    }
    for (child, exit) in [(coded, "7"), (killed, "KILL")] {
        let pid = child as i32;
        let exited: Vec<(usize, &Vec<String>)> = frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.row(pid).map(|r| (i, r)))
            .filter(|(_, r)| r[7] == "E")
            .collect();
        assert_eq!(exited.len(), 1, "pid {pid} listed once as exited:\n{text}");
        let (i, row) = exited[0];
        assert!(i > 0, "it was spawned after the first frame:\n{text}");
        assert_eq!(row[14], exit, "{row:?}");
        assert_eq!(row[15], format!("<{name}>"), "{row:?}");
        assert_eq!(row[2], "-", "no priority once gone: {row:?}");
        // `Tasks: ... 0 zombie,   2 exited (0.4% CPU)`: this one at least.
        let tasks = &frames[i].header[1];
        assert!(exited_count(tasks) >= 1, "{tasks:?}");
    }
}

/// The live view (root with BPF): the header counts exits; `e` turns the exited view on (an
/// EXIT column), and a process that lived between two refreshes comes on screen as `<name>`
/// with state E and its code; `e` again takes the view off.
#[test]
fn live_view_exited_key() {
    skip_unless_root!("the exited view (the BPF exit records)");
    let (_dir, sh, name) = own_sh("k");
    let cmd = format!("{TASKSNAP} top -d 2; sleep 30");
    let Some(t) = tmux_or_skip(140, 30, &cmd, "the exited view") else {
        return;
    };
    // The exit records are loaded with the second refresh.
    t.wait_for("the exited count", |s| s.contains(" exited ("));
    // Only the process spawned below (and nothing else): a name filter, which exited rows
    // pass through too.
    t.keys(&["/"]);
    t.type_text(&name);
    t.keys(&["Enter", "e"]);
    t.wait_for("the EXIT column", |s| s.contains(" EXIT COMMAND"));
    let status = Command::new(&sh)
        .args(["-c", "sleep 0.2; exit 4"])
        .status()
        .expect("run the copy of sh");
    assert_eq!(status.code(), Some(4));
    let marked = format!("<{name}>");
    let s = t.wait_for("the exited row", |s| s.contains(&marked));
    let row = s
        .lines()
        .find(|l| l.contains(&marked))
        .expect("the row")
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(row[7], "E", "{row:?}");
    assert_eq!(row[14], "4", "{row:?}");
    t.keys(&["e"]);
    t.wait_for("the view off", |s| {
        !s.contains(" EXIT COMMAND") && !s.contains(&marked)
    });
    t.keys(&["q"]);
}

/// A process that exited but that its parent has not reaped is both an exit record and a
/// zombie row of the same refresh: `top -b --exited` lists it once, as its exit (`<name>`,
/// E, its code), never also as a `Z` row of the same frame.
#[test]
fn exited_view_shows_an_unreaped_zombie_once() {
    use std::io::BufRead;
    skip_unless_root!("top --exited (the BPF exit records)");
    let (_dir, sh, name) = own_sh("z");
    let top = ExitedTop::start();
    // The parent starts the child, says its pid, and becomes a `sleep` that never reaps it.
    let mut parent = Guard::spawn(
        Command::new(&sh)
            .args([
                "-c",
                "\"$0\" -c 'sleep 0.2; exit 6' & echo $!; exec sleep 5",
            ])
            .arg(&sh)
            .stdout(Stdio::piped()),
    )
    .expect("spawn the parent");
    let mut said = String::new();
    std::io::BufReader::new(parent.0.stdout.as_mut().expect("the parent's stdout"))
        .read_line(&mut said)
        .expect("the child's pid");
    let child: i32 = said.trim().parse().expect("a pid");
    let text = top.finish();
    // A zombie by then, not reaped.
    let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    assert!(stat.contains(") Z "), "the child is not a zombie: {stat:?}");
    drop(parent);

    let pid = child.to_string();
    let mut exits = 0;
    for frame in frames(&text) {
        let rows: Vec<&Vec<String>> = frame
            .rows
            .iter()
            .filter(|r| r.first() == Some(&pid))
            .collect();
        assert!(rows.len() <= 1, "pid {child} twice in a frame:\n{text}");
        if let Some(row) = rows.first().filter(|r| r[7] == "E") {
            exits += 1;
            assert_eq!(row[14], "6", "{row:?}");
            assert_eq!(row[15], format!("<{name}>"), "{row:?}");
        }
    }
    assert_eq!(exits, 1, "listed once as exited:\n{text}");
}
