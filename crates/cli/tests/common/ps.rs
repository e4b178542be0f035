//! The ps oracle: running tasksnap's ps and procps `ps` alike (locale, `COLUMNS`, as
//! another user), finding a load's rows in their output with the moving columns blanked (and a
//! forest's bars, or a forest drawn over the spawned processes alone), and the extra
//! processes the load generator does not make ([`Extras`], [`Placed`]).

use std::collections::HashSet;
use std::process::Command;
use tasksnap_loadgen::{proc_text, settled_sleep};

use tasksnap_loadgen::Load;

use super::TASKSNAP;

/// Columns whose values move between two runs, by header. (PSS and USS move with ps itself:
/// a page counts as private while one process maps it, and the two ps programs map
/// different pages of the libraries they share with the processes listed.)
/// ("Cc": the AIX case `c %p %c`, whose literal "c" joins the C column's header; CI saw 3c
/// against procps's 2c for a load just spawned, its CPU share falling as it aged.)
pub const MOVING: &[&str] = &[
    "%CPU", "C", "Cc", "TIME", "ELAPSED", "CP", "%CUC", "%CUU", "P", "PSS", "USS",
];

/// Runs tasksnap with `args`, reads the first `n` bytes it prints and closes the pipe, as
/// `tasksnap ... | head -c N` does; returns how it ended (its stdout past those bytes is not
/// read).
pub fn close_stdout_after(args: &[&str], n: usize) -> std::process::Output {
    use std::io::Read;
    let mut child = Command::new(TASKSNAP)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = vec![0u8; n];
    child
        .stdout
        .as_mut()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("read");
    drop(child.stdout.take());
    child.wait_with_output().expect("wait")
}

pub struct Out {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl From<std::process::Output> for Out {
    fn from(o: std::process::Output) -> Out {
        Out {
            code: o.status.code(),
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }
}

/// Runs `program` with `prefix` and `args` in `locale`, no `COLUMNS` ([`command_as`]).
pub fn run(program: &str, prefix: &[&str], args: &[&str], locale: &str) -> Out {
    output(&mut command_as(None, program, prefix, args, locale, None))
}

/// Runs tasksnap with `args` in `locale` on a screen `cols` wide (`COLUMNS`).
pub fn tasksnap_in_columns(cols: &str, args: &[&str], locale: &str) -> Out {
    output(&mut command_as(
        None,
        TASKSNAP,
        &[],
        args,
        locale,
        Some(cols),
    ))
}

/// How many times one run of the oracle may crash before the case fails.
const ORACLE_TRIES: usize = 5;

/// How many times the oracle crashed in this test binary.
static ORACLE_CRASHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Why procps `ps` crashed, when it did. procps 4.0.2 now and then dies of SIGSEGV when a
/// task vanishes under it (seen under churn on `-e -o "%p %G %g %u %U %t %C %a"`, and in CI
/// on `-o ...,group,egroup,rgroup`): its handler (ps/display.c, `signal_handler`) prints
/// "Signal 11 (SEGV) caught by ps (4.0.2)." and "ps:src/ps/display.c:71: please report this
/// bug", restores the default action and raises the signal again, so ps dies of it; only if
/// that returned would it `_exit(1)`. Either way it is a crash, never an answer to compare.
pub fn oracle_crash(status: std::process::ExitStatus, stderr: &[u8]) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let said = String::from_utf8_lossy(stderr);
    let caught = said.lines().find(|l| l.contains(" caught by ps ("));
    match (status.signal(), caught) {
        (Some(sig), _) => Some(format!(
            "killed by signal {sig}: {}",
            said.trim_end().replace('\n', " / ")
        )),
        (None, Some(line)) => Some(format!("exited {status} after \"{line}\"")),
        (None, None) => None,
    }
}

/// Runs the oracle, procps `ps`, as `cmd` says (a wrapper such as setpriv or unshare may
/// come first): its output, asked again (up to [`ORACLE_TRIES`] runs) when it crashed
/// ([`oracle_crash`]): a crash of the oracle is not behaviour to match. Each crash is said on
/// stderr with the count so far in this test binary. The one way every test runs it.
pub fn oracle(cmd: &mut Command) -> Out {
    for _ in 0..ORACLE_TRIES {
        let o = cmd.output().expect("run procps ps");
        let Some(why) = oracle_crash(o.status, &o.stderr) else {
            return o.into();
        };
        let n = ORACLE_CRASHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        eprintln!(
            "procps ps crashed ({why}) running {cmd:?}; asking again (crash {n} of the oracle \
             in this test binary)"
        );
    }
    panic!("procps ps crashed on each of {ORACLE_TRIES} runs of {cmd:?}");
}

/// How many times the oracle crashed so far in this test binary.
pub fn oracle_crashes() -> usize {
    ORACLE_CRASHES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs procps `ps` with `args` in `locale` (COLUMNS=`cols`, or unset): [`oracle`].
pub fn run_procps(args: &[&str], locale: &str, cols: Option<&str>) -> Out {
    oracle(&mut command_as(None, "ps", &[], args, locale, cols))
}

/// The uid and gid of user nobody.
pub const NOBODY: u32 = 65534;

/// The tasksnap binary where any user can execute it, wherever the checkout lives: what a
/// test runs as another user ([`tasksnap_loadgen::reachable`], staged once per test binary).
pub fn tasksnap_for_others() -> String {
    tasksnap_loadgen::reachable::staged(TASKSNAP)
        .to_string_lossy()
        .into_owned()
}

/// `program` with `prefix` and `args` in `locale` (`COLUMNS=cols`, or unset; no `PS_FORMAT`
/// or `PS_PERSONALITY`), as user `uid` (with that gid and no supplementary groups, through
/// setpriv) when given. The program must be executable by that user (see
/// [`tasksnap_for_others`]).
pub fn command_as(
    uid: Option<u32>,
    program: &str,
    prefix: &[&str],
    args: &[&str],
    locale: &str,
    cols: Option<&str>,
) -> Command {
    let mut cmd = match uid {
        Some(id) => {
            let mut c = Command::new("setpriv");
            c.args([
                format!("--reuid={id}"),
                format!("--regid={id}"),
                "--clear-groups".to_string(),
            ])
            .arg(program);
            c
        }
        None => Command::new(program),
    };
    match cols {
        Some(c) => cmd.env("COLUMNS", c),
        None => cmd.env_remove("COLUMNS"),
    };
    cmd.args(prefix)
        .args(args)
        .env("LC_ALL", locale)
        .env_remove("PS_FORMAT")
        .env_remove("PS_PERSONALITY");
    cmd
}

/// Runs `cmd` to its end.
pub fn output(cmd: &mut Command) -> Out {
    cmd.output().expect("run").into()
}

/// Header tokens with their [start, end) byte spans.
pub fn tokens(header: &[u8]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < header.len() {
        if header[i] == b' ' {
            i += 1;
            continue;
        }
        let s = i;
        while i < header.len() && header[i] != b' ' {
            i += 1;
        }
        out.push((String::from_utf8_lossy(&header[s..i]).into_owned(), s, i));
    }
    out
}

/// The forest options the tests use: `--forest`, and BSD groups with `f`.
const FOREST: &[&str] = &["--forest", "axjf", "axf", "jf", "f"];

/// Whether `args` draw a forest.
pub fn is_forest(args: &[&str]) -> bool {
    args.iter().any(|a| FOREST.contains(a))
}

/// A forest draws a `|` for each ancestor that has a later sibling. Above what a test spawned
/// those ancestors are the test binary and its callers, whose other children (the other tests')
/// come and go: two whole-host forests taken a moment apart differ there. `args` with the
/// whole-host selection (`-e`, `-A`, BSD `a` and `x`) replaced by `-p spawned`, so that the
/// tree is drawn over the spawned processes alone, as procps draws it over any selection; other
/// `args` as they are.
pub fn only_spawned_in_a_forest<'a>(args: &[&'a str], spawned: &'a str) -> Vec<String> {
    if !is_forest(args) {
        return args.iter().map(|a| a.to_string()).collect();
    }
    let mut out: Vec<String> = args
        .iter()
        .filter(|a| **a != "-e" && **a != "-A")
        .map(|a| {
            if FOREST.contains(a) {
                a.replace(['a', 'x'], "")
            } else {
                a.to_string()
            }
        })
        .filter(|a| !a.is_empty())
        .collect();
    out.extend(["-p".to_string(), spawned.to_string()]);
    out
}

/// `pids` as one `-p` list.
pub fn pid_list(pids: &HashSet<i32>) -> String {
    let mut list: Vec<i32> = pids.iter().copied().collect();
    list.sort();
    list.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The rows of a whole-host forest with every `|` before a row's `\_` blanked (the whole row's
/// when a narrow screen cut the `\_` off): what may change between two runs (see
/// [`only_spawned_in_a_forest`], which compares the bars exactly).
pub fn blank_forest_bars(rows: &mut [Vec<u8>]) {
    for row in rows {
        let at = row
            .windows(2)
            .position(|w| w == b"\\_")
            .unwrap_or(row.len());
        for c in &mut row[..at] {
            if *c == b'|' {
                *c = b' ';
            }
        }
    }
}

/// The load's rows (by PID column), with moving columns blanked.
pub fn load_rows(out: &[u8], pids: &HashSet<i32>) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut lines = out.split(|&c| c == b'\n');
    let header = lines.next().unwrap_or_default().to_vec();
    let toks = tokens(&header);
    let pid_end = toks
        .iter()
        .find(|(t, _, _)| t == "PID" || t == "PROCESS" || t == "X")
        .map(|&(_, _, e)| e)
        .expect("a PID column");
    let mut rows = Vec::new();
    for line in lines {
        if line.len() < pid_end {
            continue;
        }
        let field = String::from_utf8_lossy(&line[..pid_end]);
        let Some(pid) = field
            .split_whitespace()
            .last()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if !pids.contains(&pid) {
            continue;
        }
        let mut row = line.to_vec();
        for (k, (name, _, end)) in toks.iter().enumerate() {
            if MOVING.contains(&name.as_str()) {
                let start = if k == 0 { 0 } else { toks[k - 1].2 + 1 };
                for c in row.iter_mut().take(*end).skip(start) {
                    *c = b'#';
                }
            }
        }
        rows.push(row);
    }
    (header, rows)
}

/// Processes the load generator does not make: a session leader, niced and real-time tasks,
/// other scheduling classes, a uid without a passwd entry, and one on a terminal. Each ends
/// as one `sleep 1000` (script's through a shell on its terminal). Killed (SIGKILL, by pid)
/// on drop.
pub struct Extras {
    children: Vec<std::process::Child>,
}

impl Extras {
    pub fn spawn() -> Extras {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let mut cmds: Vec<Vec<&str>> = vec![
            vec!["setsid", "sleep", "1000"],
            vec!["nice", "-n", "5", "sleep", "1000"],
            vec!["chrt", "-b", "0", "sleep", "1000"],
            vec!["chrt", "-i", "0", "sleep", "1000"],
            vec!["script", "-qfc", "sleep 1000", "/dev/null"],
        ];
        if root {
            cmds.push(vec!["nice", "-n", "-5", "sleep", "1000"]);
            cmds.push(vec!["chrt", "-f", "10", "sleep", "1000"]);
            cmds.push(vec!["chrt", "-r", "5", "sleep", "1000"]);
            cmds.push(vec![
                "setpriv",
                "--reuid=4242",
                "--regid=4242",
                "--clear-groups",
                "sleep",
                "1000",
            ]);
        }
        let children = cmds
            .iter()
            .filter_map(|c| {
                Command::new(c[0])
                    .args(&c[1..])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .ok()
            })
            .collect();
        let mut extras = Extras { children };
        extras.settle();
        extras
    }

    /// Waits (up to 30 s) until every extra has reached its final image: each command's
    /// `sleep` asleep in nanosleep, and every process above one (script, a shell that did
    /// not exec) past its exec and asleep. A ps run that catches a wrapper mid-exec (comm,
    /// command line, memory and state all change) prints something the other ps run does
    /// not; on a busy host the wrappers take far longer than any fixed wait. A wrapper that
    /// exited (a scheduling class this kernel refuses) is left out of the extras.
    fn settle(&mut self) {
        let own_comm = proc_text(std::process::id() as i32, "comm");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            self.children.retain_mut(|c| match c.try_wait() {
                Ok(None) => true,
                Ok(Some(status)) => {
                    eprintln!("an extra process ended at once ({status}): not compared");
                    false
                }
                Err(_) => false,
            });
            let pids = self.pids();
            let with_children: HashSet<i32> = pids
                .iter()
                .copied()
                .filter(|&p| {
                    proc_text(p, &format!("task/{p}/children"))
                        .is_some_and(|k| !k.trim().is_empty())
                })
                .collect();
            let sleeps = pids.iter().filter(|&&p| settled_sleep(p)).count();
            let parents_settled = with_children.iter().all(|&p| {
                let comm = proc_text(p, "comm");
                comm.is_some()
                    && comm != own_comm
                    && tasksnap_loadgen::read_stat(p).ok().map(|st| st.state) == Some('S')
            });
            let leaves_settled = pids
                .iter()
                .filter(|p| !with_children.contains(p))
                .all(|&p| settled_sleep(p));
            if sleeps == self.children.len() && parents_settled && leaves_settled {
                return;
            }
            if std::time::Instant::now() > deadline {
                let show: Vec<String> = pids
                    .iter()
                    .map(|&p| {
                        format!(
                            "{p} {:?} {:?} {:?}",
                            proc_text(p, "comm").unwrap_or_default().trim_end(),
                            tasksnap_loadgen::read_stat(p).ok().map(|st| st.state),
                            proc_text(p, "wchan").unwrap_or_default()
                        )
                    })
                    .collect();
                panic!("the extra processes did not settle in 30 s: {show:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Their pids and those of their children (script's shell and sleep).
    pub fn pids(&self) -> Vec<i32> {
        let mut out: Vec<i32> = self.children.iter().map(|c| c.id() as i32).collect();
        for &p in out.clone().iter() {
            if let Ok(kids) = std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")) {
                for k in kids
                    .split_whitespace()
                    .filter_map(|k| k.parse::<i32>().ok())
                {
                    out.push(k);
                    if let Ok(g) = std::fs::read_to_string(format!("/proc/{k}/task/{k}/children")) {
                        out.extend(g.split_whitespace().filter_map(|x| x.parse::<i32>().ok()));
                    }
                }
            }
        }
        out
    }
}

impl Drop for Extras {
    fn drop(&mut self) {
        for p in self.pids().into_iter().rev() {
            // SAFETY: these are our children and their descendants, still unreaped.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// Processes for the namespace, OOM, login and cgroup columns, as root: `sleep 1000`s in
/// other namespaces (unshare), one with an OOM adjustment (choom), one with a login uid, one
/// of nobody's, and some moved into cgroups named as systemd names them (a session scope of
/// user 4242, a user manager's service, a machine scope, an LXC payload, one with control
/// characters and bytes that are not UTF-8 in its name; and one in
/// systemd's v1 hierarchy where that is mounted). The session's seat and the machine's name
/// are written where sd-login reads them (/run/systemd/sessions, /run/systemd/machines)
/// when those directories are there, under names unique to this test process. Processes
/// are killed (SIGKILL) and the cgroups and files removed on drop. As another user: nothing.
pub struct Placed {
    /// Whether some were moved into cgroups (a cgroup v2 hierarchy is mounted).
    pub in_cgroups: bool,
    /// Whether their seat and machine files were written (/run/systemd has the directories).
    pub seat_and_machine: bool,
    procs: Extras,
    /// Cgroups made, parents first.
    dirs: Vec<std::path::PathBuf>,
    files: Vec<std::path::PathBuf>,
}

/// The mount points of the cgroup v2 hierarchy and of v1's `name=systemd`, when mounted.
fn cgroup_mounts() -> (Option<String>, Option<String>) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let (mut v2, mut named) = (None, None);
    for line in info.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let point = left.split(' ').nth(4).unwrap_or_default().to_string();
        let mut r = right.split(' ');
        let fstype = r.next().unwrap_or_default();
        let opts = r.nth(1).unwrap_or_default();
        if fstype == "cgroup2" && v2.is_none() {
            v2 = Some(point);
        } else if fstype == "cgroup" && opts.split(',').any(|o| o == "name=systemd") {
            named = Some(point);
        }
    }
    (v2, named)
}

impl Placed {
    /// The tag in every name this makes: letters and digits (a valid session id).
    pub fn tag() -> String {
        format!("tsn{}", std::process::id())
    }

    pub fn spawn() -> Placed {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Placed {
                in_cgroups: false,
                seat_and_machine: false,
                procs: Extras {
                    children: Vec::new(),
                },
                dirs: Vec::new(),
                files: Vec::new(),
            };
        }
        let tag = Self::tag();
        let login = "echo 4242 > /proc/self/loginuid && exec sleep 1000".to_string();
        let mut cmds: Vec<Vec<String>> = [
            &["unshare", "--net", "--uts", "--ipc", "sleep", "1000"][..],
            &["unshare", "--mount", "--cgroup", "sleep", "1000"],
            &["unshare", "--pid", "--fork", "sleep", "1000"],
            &["unshare", "--time", "--fork", "sleep", "1000"],
            &["unshare", "--user", "sleep", "1000"],
            &["choom", "-n", "300", "--", "sleep", "1000"],
            &["sh", "-c", &login],
            &[
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sleep",
                "1000",
            ],
        ]
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
        // The ones moved into cgroups below.
        let (v2, named) = cgroup_mounts();
        let mut cgroups: Vec<std::path::PathBuf> = Vec::new();
        if let Some(m) = &v2 {
            for path in [
                format!("{tag}.slice/user-4242.slice/session-{tag}.scope"),
                format!(
                    "{tag}.slice/user-4242.slice/user@4242.service/app.slice/{tag}-app.service"
                ),
                format!("{tag}.slice/machine-{tag}.scope/payload"),
                format!("lxc.payload.{tag}/init.scope"),
            ] {
                cgroups.push(std::path::Path::new(m).join(path));
            }
            // A hostile name: a tab, an escape sequence, UTF-8 and a byte that is not.
            use std::os::unix::ffi::OsStrExt;
            let odd = [tag.as_bytes(), b"-\t\x1b[31m\xc3\xa9\xff.service"].concat();
            cgroups.push(std::path::Path::new(m).join(std::ffi::OsStr::from_bytes(&odd)));
        }
        if let Some(m) = &named {
            cgroups.push(std::path::Path::new(m).join(format!("{tag}/{tag}-v1.service")));
        }
        let placed_from = cmds.len();
        for _ in &cgroups {
            cmds.push(vec!["sleep".into(), "1000".into()]);
        }
        let children = cmds
            .iter()
            .map(|c| {
                Command::new(&c[0])
                    .args(&c[1..])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn a placed process")
            })
            .collect();
        let mut procs = Extras { children };
        let mut dirs = Vec::new();
        for (i, cg) in cgroups.iter().enumerate() {
            let pid = procs.children[placed_from + i].id();
            // Each level, parents first, so that drop can remove them deepest first.
            let is_mount = |a: &std::path::Path| {
                [&v2, &named]
                    .iter()
                    .any(|m| m.as_deref().map(std::path::Path::new) == Some(a))
            };
            let root = cg
                .ancestors()
                .find(|a| is_mount(a))
                .map(|a| a.to_path_buf())
                .expect("under its mount");
            let rel = cg.strip_prefix(&root).expect("relative");
            let mut at = root.clone();
            for part in rel.components() {
                at.push(part);
                if !dirs.contains(&at) {
                    std::fs::create_dir(&at).expect("make a cgroup");
                    dirs.push(at.clone());
                }
            }
            std::fs::write(cg.join("cgroup.procs"), pid.to_string()).expect("move into the cgroup");
        }
        let mut files = Vec::new();
        let run = std::path::Path::new("/run/systemd");
        let seat_and_machine =
            v2.is_some() && run.join("sessions").is_dir() && run.join("machines").is_dir();
        if seat_and_machine {
            let f = run.join("sessions").join(&tag);
            std::fs::write(&f, "UID=4242\nUSER=test\nACTIVE=1\nSEAT=seat-test\n").expect("session");
            files.push(f);
        }
        if seat_and_machine {
            let f = run
                .join("machines")
                .join(format!("unit:machine-{tag}.scope"));
            std::os::unix::fs::symlink(format!("{tag}-vm"), &f).expect("machine");
            files.push(f);
        }
        procs.settle();
        Placed {
            in_cgroups: v2.is_some(),
            seat_and_machine,
            procs,
            dirs,
            files,
        }
    }

    /// Their pids (and their children's: the sleeps under `unshare --fork`).
    pub fn pids(&self) -> Vec<i32> {
        self.procs.pids()
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        // The processes first (Extras' drop kills and reaps them), then their cgroups.
        drop(std::mem::replace(
            &mut self.procs,
            Extras {
                children: Vec::new(),
            },
        ));
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

pub fn spawn_load() -> Load {
    Load::spawn(&tasksnap_loadgen::every_state_args(
        "4",
        "3",
        &["--mlocked", "2", "--signals"],
    ))
    .expect("spawn the load generator (cargo build --workspace first)")
}

/// tasksnap with `args` as the ps tests run it ([`run`]: the C locale; no `COLUMNS`,
/// `PS_FORMAT` or `PS_PERSONALITY`).
pub fn tasksnap_c(args: &[&str]) -> Out {
    run(TASKSNAP, &[], args, "C")
}

/// What [`ps_in_a_pid_namespace`] printed: each backend's listing, and all it said.
pub struct InPidNamespace {
    pub bpf: String,
    pub procfs: String,
    pub stdout: String,
    pub stderr: String,
}

/// Inside a new pid namespace with its own /proc (`unshare --pid --fork --mount-proc`), with
/// a `sleep 30` started there: `tasksnap ps -e -o COLUMNS --backend=bpf BPF_EXTRA`, then the
/// same with `--backend=procfs`.
pub fn ps_in_a_pid_namespace(columns: &str, bpf_extra: &str) -> InPidNamespace {
    let script = format!(
        "sleep 30 & sleep 0.3; {TASKSNAP} ps -e -o {columns} --backend=bpf {bpf_extra}; \
         echo ---; {TASKSNAP} ps -e -o {columns} --backend=procfs; kill -KILL %1"
    );
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "bash", "-c", &script])
        .output()
        .expect("unshare");
    let (stdout, stderr) = (super::text(&out.stdout), super::text(&out.stderr));
    // (The marker line: bash's own command line has "---" in it too.)
    let (bpf, procfs) = stdout.split_once("\n---\n").expect("both outputs");
    InPidNamespace {
        bpf: bpf.to_string(),
        procfs: procfs.to_string(),
        stdout: stdout.clone(),
        stderr,
    }
}

/// The rows of a listing, trimmed, as a set: the header, blank lines and lines containing
/// `skip` left out.
pub fn row_set(listing: &str, skip: &str) -> std::collections::BTreeSet<String> {
    listing
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains(skip) && !l.contains("PID"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The first `at_most` rows that differ between two listings, a line each, labelled (`ours`
/// and `procps`, say): for a failure message.
pub fn differing_rows(
    (a_label, a): (&str, &[Vec<u8>]),
    (b_label, b): (&str, &[Vec<u8>]),
    at_most: usize,
) -> String {
    let (a_label, b_label) = (format!("{a_label}:"), format!("{b_label}:"));
    a.iter()
        .zip(b)
        .filter(|(x, y)| x != y)
        .take(at_most)
        .map(|(x, y)| {
            format!(
                "  {a_label:<8}{:?}\n  {b_label:<8}{:?}\n",
                String::from_utf8_lossy(x),
                String::from_utf8_lossy(y)
            )
        })
        .collect()
}
