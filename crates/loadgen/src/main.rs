//! `tasksnap-loadgen` entry point: command line, process-group discipline,
//! the wait loop and teardown. Spawning lives in [`spawn`], raw syscalls in
//! [`sys`], re-executed child modes in [`child`], the ever-changing
//! population of `--churn` and the spinners of `--busy` in [`churn`], the timed
//! wake-ups of `--wakers` in [`waker`].
//!
//! Lifecycle:
//! 1. block SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGCHLD/SIGTTIN/SIGTTOU (children
//!    unblock them), become leader of a new process group (`setpgid(0, 0)`,
//!    handing it the terminal if we were in the foreground) and a child
//!    subreaper;
//! 2. spawn everything (the loadgen stays single-threaded so that forked
//!    children may run ordinary code); on failure tear down and exit 1;
//! 3. print one JSON line ([`tasksnap_loadgen::LoadInfo`]) and flush;
//! 4. wait for SIGINT/SIGTERM/SIGHUP/SIGQUIT, stdin EOF
//!    (`--until-stdin-eof`) or the `--seconds` deadline, reaping children;
//! 5. SIGKILL every other member of the group, reap them (and, as subreaper,
//!    orphaned zombies), exit 0.
//!
//! The loadgen does not `kill(-pgid, SIGKILL)` itself: that would kill the
//! loadgen too before it could reap the orphaned zombies (they would be left
//! to init, which may reap them late: about a second on the Firecracker VM
//! this was developed on) and turn a clean exit into status 137.
//! [`tasksnap_loadgen::Load`] does send `kill(-pgid, SIGKILL)` as a
//! backstop. If the loadgen is SIGKILLed, its children die through
//! `PR_SET_PDEATHSIG`, and grandchildren through theirs.

mod child;
mod churn;
mod mmap_lock;
mod sleepers;
mod spawn;
mod storm;
mod sys;
mod waker;
mod zoo;

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use tasksnap_loadgen::{group_members, LoadInfo};

use crate::spawn::Spawner;
use crate::sys::{ChildCtx, Pid};

/// Spawn a controlled population of tasks for tasksnap tests and benchmarks.
///
/// Everything runs in one new process group led by the loadgen. Once all
/// tasks are in place, one JSON line describing them is printed on stdout;
/// on SIGINT/SIGTERM/SIGHUP, stdin EOF (--until-stdin-eof) or after
/// --seconds, every task of the group is SIGKILLed and reaped.
#[derive(Debug, Parser)]
#[command(name = "tasksnap-loadgen", version)]
struct Cli {
    /// Number of plain sleeping child processes (fork + pause, comm "lg-proc"; --wakers
    /// of them wake on a timer instead).
    #[arg(long, value_name = "N", default_value_t = 0)]
    procs: usize,

    /// Make K of the --procs children wake every --wake-period-ms (comm "lg-waker"):
    /// clock_nanosleep to the next deadline, almost nothing, sleep again. The load still
    /// holds --procs processes; K of them are active.
    #[arg(
        long,
        value_name = "K",
        default_value_t = 0,
        conflicts_with = "exec_children"
    )]
    wakers: usize,

    /// Milliseconds between two wake-ups of a --wakers process.
    #[arg(long, value_name = "MS", default_value_t = waker::DEFAULT_PERIOD_MS,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    wake_period_ms: u64,

    /// Make each --procs child exec the loadgen binary again (a separate
    /// image) instead of just forking.
    #[arg(long)]
    exec_children: bool,

    /// With --exec-children: each child is executed with one more argument of BYTES bytes and
    /// an environment variable of BYTES bytes besides (at most 131,000 each, under the kernel's
    /// 128 KiB limit per string): processes whose command lines and environments weigh what a
    /// build's or a JVM's do (the query service's memory benchmark).
    #[arg(long, value_name = "BYTES", default_value_t = 0, requires = "exec_children",
          value_parser = clap::value_parser!(u32).range(0..=131_000))]
    arg_bytes: u32,

    /// Number of extra threads, all in one child process (comm "lg-threads").
    #[arg(long, value_name = "M", default_value_t = 0)]
    threads: usize,

    /// Spawn processes with hostile comm and cmdline (spaces, parens,
    /// newline, tab, unicode, 15+ bytes, empty, 5000-byte argument...).
    #[arg(long)]
    odd_names: bool,

    /// Number of zombie processes (children of one never-reaping process).
    #[arg(long, value_name = "K", default_value_t = 0)]
    zombies: usize,

    /// Number of processes stopped with SIGSTOP (state T).
    #[arg(long, value_name = "S", default_value_t = 0)]
    stopped: usize,

    /// Number of processes with locked memory (mlockall; `L` in ps's STAT column).
    #[arg(long, value_name = "M", default_value_t = 0)]
    mlocked: usize,

    /// One process (comm "lg-signals", with a thread "lg-sig-thr") with signals blocked,
    /// ignored, caught, and pending for the process and for each thread.
    #[arg(long)]
    signals: bool,

    /// One task in uninterruptible sleep (state D): a vfork() parent whose
    /// child never execs or exits. Works without privileges.
    #[arg(long)]
    dstate: bool,

    /// Two processes bouncing a byte over a pipe pair for SECONDS
    /// (0 = as long as the load lives), then sleeping.
    #[arg(long, value_name = "SECONDS")]
    pipe_pingpong: Option<f64>,

    /// Keep creating and ending tasks until the load is torn down: short-lived
    /// processes (fork + exit, exec of `true` and `sleep 0.0N`, some living a
    /// random while, some with threads) and short-lived threads, all reaped as
    /// they go and bounded in number. `tasksnap-loadgen churn ...` is the same
    /// as `tasksnap-loadgen --churn ...`.
    #[arg(long)]
    churn: bool,

    /// Processes --churn starts per second (0: none).
    #[arg(long, value_name = "N", default_value_t = 200, requires = "churn")]
    procs_per_sec: u32,

    /// Threads --churn starts per second (0: none).
    #[arg(long, value_name = "N", default_value_t = 500, requires = "churn")]
    threads_per_sec: u32,

    /// N processes spinning on a CPU forever (comm "lg-busy"); without N, one
    /// per online CPU, so that the CPUs are saturated.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    busy: Option<usize>,

    /// One process whose mmap lock is held for seconds at a time (comm "lg-mmaplock"): a
    /// reader of its /proc/PID/cmdline blocks (the seed's mmap_sem pile-up).
    #[arg(long)]
    mmap_lock_storm: bool,

    /// The hostile zoo every whole-host listing of the tests must survive: --odd-names, a
    /// zombie, a D-state task, processes named with bytes that are not UTF-8 (as user nobody
    /// when root), with a newline and a CR, with 64 KiB of arguments, and (as root) a process
    /// in a pid namespace of its own.
    #[arg(long)]
    zoo: bool,

    /// Tear down after SECONDS (fractions allowed).
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<f64>,

    /// Tear down when stdin reaches end of file.
    #[arg(long)]
    until_stdin_eof: bool,

    /// List the pids of the --procs children in the report (otherwise only
    /// "procs_count" is given).
    #[arg(long)]
    list_pids: bool,
}

/// Signals the loadgen keeps blocked: the terminating ones are read from a
/// signalfd, SIGCHLD triggers reaping, SIGTTIN/SIGTTOU must not stop us.
const BLOCKED: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGCHLD,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

fn main() -> ExitCode {
    if let Some(mode) = std::env::var_os(child::CHILD_ENV) {
        child::run(&mode);
    }
    // `tasksnap-loadgen churn [flags]`: shorthand for `--churn [flags]`.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `tasksnap-loadgen fake-proc DIR [PAGE_SIZE [HOSTNAME BOOT_ID]]`: writes the fake /proc
    // tree of `tasksnap_loadgen::fake_proc` into DIR (for tests in other languages; another
    // host's name and boot id for a test of several hosts) and exits.
    if args.get(1).is_some_and(|a| a == "fake-proc") {
        return fake_proc(&args[2..]);
    }
    // `tasksnap-loadgen exit-storm PER_SEC SECONDS [WORKER_NAME CHILD_NAME]`: processes
    // exiting as fast as asked.
    if args.get(1).is_some_and(|a| a == "exit-storm") {
        let num = |i: usize| args.get(i).and_then(|a| a.to_str()?.parse::<f64>().ok());
        let name = |i: usize| {
            use std::os::unix::ffi::OsStrExt;
            let a = args.get(i)?.as_bytes();
            std::ffi::CString::new(a)
                .ok()
                .filter(|_| (1..=15).contains(&a.len()))
        };
        let names = match args.len() {
            4 => Some(None),
            6 => name(4).zip(name(5)).map(Some),
            _ => None,
        };
        let (Some(per_sec), Some(seconds), Some(names)) = (num(2), num(3), names) else {
            eprintln!(
                "usage: tasksnap-loadgen exit-storm PER_SEC SECONDS [WORKER_NAME CHILD_NAME] \
                 (names of 1 to 15 bytes)"
            );
            return ExitCode::from(2);
        };
        return match storm::run(per_sec as u64, seconds, names.as_ref()) {
            Ok((n, s)) => {
                println!("{{\"exits\":{n},\"seconds\":{s:.3}}}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tasksnap-loadgen: exit-storm: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.get(1).is_some_and(|a| a == "churn") {
        args[1] = "--churn".into();
    }
    let cli = Cli::parse_from(args);
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tasksnap-loadgen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `tasksnap-loadgen fake-proc DIR [PAGE_SIZE [HOSTNAME BOOT_ID]]`.
fn fake_proc(args: &[std::ffi::OsString]) -> ExitCode {
    use std::os::unix::ffi::OsStrExt;
    let page_size = match args
        .get(1)
        .map(|p| p.to_str().and_then(|p| p.parse::<u64>().ok()))
    {
        None => Some(4096),
        Some(p) => p,
    };
    let identity = match (args.get(2), args.get(3)) {
        (None, None) => Some(None),
        (Some(h), Some(b)) => b.to_str().map(|b| Some((h.as_bytes(), b))),
        _ => None,
    };
    let (Some(dir), Some(page_size), Some(identity), None) =
        (args.first(), page_size, identity, args.get(4))
    else {
        eprintln!("usage: tasksnap-loadgen fake-proc DIR [PAGE_SIZE [HOSTNAME BOOT_ID]]");
        return ExitCode::from(2);
    };
    let built = tasksnap_loadgen::fake_proc::FakeProc::build_with_page_size(
        std::path::Path::new(dir),
        page_size,
    )
    .and_then(|f| match identity {
        Some((hostname, boot_id)) => f.set_identity(hostname, boot_id),
        None => Ok(()),
    });
    match built {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tasksnap-loadgen fake-proc: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<()> {
    for (name, v) in [
        ("--seconds", cli.seconds),
        ("--pipe-pingpong", cli.pipe_pingpong),
    ] {
        if v.is_some_and(|s| !s.is_finite() || s < 0.0) {
            bail!("{name} needs a non-negative number of seconds");
        }
    }
    ensure_single_threaded()?;
    sys::set_sigmask(&sys::sigset(&BLOCKED)).context("blocking signals")?;
    let group = Group::enter()?;
    sys::set_child_subreaper().context("PR_SET_CHILD_SUBREAPER")?;
    let devnull = File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
        .context("opening /dev/null")?;
    let mut spawner = Spawner::new(ChildCtx {
        parent: group.me,
        devnull: devnull.as_raw_fd(),
    });

    if let Err(e) = spawn_all(cli, &group, &mut spawner).and_then(|info| report(&info)) {
        teardown(&group, &mut spawner);
        return Err(e);
    }

    let waited = wait_for_end(cli, &mut spawner);
    teardown(&group, &mut spawner);
    waited
}

/// Fork-safety precondition of [`sys::fork_child`].
fn ensure_single_threaded() -> Result<()> {
    // stat's num_threads and status's Threads are the same counter (signal->nr_threads).
    let stat = std::fs::read("/proc/self/stat")?;
    let threads = tasksnap_procfs::parse::parse_stat(&stat)
        .ok()
        .map(|st| st.num_threads);
    if threads != Some(1) {
        bail!("the loadgen must be single-threaded before forking (Threads: {threads:?})");
    }
    Ok(())
}

/// The loadgen's process group.
#[derive(Debug)]
struct Group {
    me: Pid,
    pgid: Pid,
    /// Members that were in the group before we started (only possible if
    /// we were started as a group leader, e.g. first process of a shell
    /// pipeline); never killed.
    foreign: HashSet<Pid>,
    /// Foreground process group of the terminal to give back at exit.
    tty_restore: Option<Pid>,
}

impl Group {
    fn enter() -> Result<Group> {
        let me = sys::getpid();
        let old = sys::getpgrp();
        let mut tty_restore = None;
        let mut foreign = HashSet::new();
        if old == me {
            // Already a leader (e.g. Command::process_group(0), setsid).
            foreign = foreign_members(me);
            if !foreign.is_empty() {
                eprintln!(
                    "tasksnap-loadgen: warning: process group {me} already has other \
                     members {foreign:?}; they will be left alone"
                );
            }
        } else {
            sys::setpgid_self().context("setpgid(0, 0)")?;
            // Keep Ctrl-C working: if we were in the terminal's foreground
            // group, make the new group the foreground one.
            if sys::isatty(0)
                && sys::tcgetpgrp(0).is_ok_and(|fg| fg == old)
                && sys::tcsetpgrp(0, me).is_ok()
            {
                tty_restore = Some(old);
            }
        }
        Ok(Group {
            me,
            pgid: me,
            foreign,
            tty_restore,
        })
    }
}

/// Other members of our process group at startup, when we started as its
/// leader. Such members can only have been put there by our parent (e.g.
/// the other processes of a shell pipeline), so we look at our siblings via
/// `/proc/<ppid>/task/*/children` (cheap), and fall back to scanning `/proc`
/// (about a second with 50k processes) if that is not available.
fn foreign_members(me: Pid) -> HashSet<Pid> {
    let ppid = sys::getppid();
    let siblings = std::fs::read_dir(format!("/proc/{ppid}/task")).and_then(|tasks| {
        let mut pids = Vec::new();
        for task in tasks {
            let path = task?.path().join("children");
            pids.extend(tasksnap_procfs::parse::parse_children(&std::fs::read(
                path,
            )?));
        }
        Ok(pids)
    });
    match siblings {
        Ok(pids) => pids
            .into_iter()
            .filter(|&p| p != me)
            .filter(|&p| tasksnap_loadgen::read_stat(p).is_ok_and(|s| s.pgrp == me))
            .collect(),
        Err(_) => group_members(me).into_iter().filter(|&p| p != me).collect(),
    }
}

fn spawn_all(cli: &Cli, group: &Group, sp: &mut Spawner) -> Result<LoadInfo> {
    let mut info = LoadInfo {
        pgid: group.pgid,
        leader: group.me,
        ..LoadInfo::default()
    };
    if cli.procs > 0 || cli.wakers > 0 {
        let wake = (cli.wakers, cli.wake_period_ms * 1_000_000);
        let exec = cli.exec_children.then_some(cli.arg_bytes as usize);
        let (pids, wakers) = sp.procs_with_wakers(cli.procs, exec, wake)?;
        info.procs_count = pids.len();
        if cli.list_pids {
            info.procs = pids;
        }
        if !wakers.is_empty() {
            info.wakers = wakers;
            info.wake_period_ms = cli.wake_period_ms;
        }
    }
    if cli.stopped > 0 {
        info.stopped = sp.stopped(cli.stopped)?;
    }
    if cli.mlocked > 0 {
        info.mlocked = sp.mlocked(cli.mlocked)?;
    }
    if cli.zombies > 0 {
        let (parent, zombies) = sp.zombies(cli.zombies)?;
        info.zombie_parent = Some(parent);
        info.zombies = zombies;
    }
    if cli.dstate {
        let (d, helper) = sp.dstate()?;
        info.dstate = vec![d];
        info.dstate_helpers.extend(helper);
    }
    if let Some(secs) = cli.pipe_pingpong {
        info.pingpong = sp.pingpong(secs)?.to_vec();
    }
    if cli.signals {
        let (pid, tid) = sp.signals()?;
        info.signals = Some(pid);
        info.signal_thread = Some(tid);
    }
    if cli.threads > 0 {
        let (pid, tids) = sp.threads(cli.threads)?;
        info.threads_pid = Some(pid);
        info.thread_tids = tids;
    }
    if cli.odd_names || cli.zoo {
        info.odd = sp.odd()?;
    }
    if cli.zoo {
        if cli.zombies == 0 {
            let (parent, zombies) = sp.zombies(1)?;
            info.zombie_parent = Some(parent);
            info.zombies = zombies;
        }
        if !cli.dstate {
            let (d, helper) = sp.dstate()?;
            info.dstate = vec![d];
            info.dstate_helpers.extend(helper);
        }
        info.byte_named = sp.byte_named()?;
        info.pidns = sp.pidns()?;
    }
    if cli.mmap_lock_storm {
        info.mmap_lock_storm = Some(sp.mmap_lock_storm()?);
    }
    if let Some(n) = cli.busy {
        let n = if n == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            n
        };
        info.busy = sp.busy(n)?;
    }
    if cli.churn && cli.procs_per_sec > 0 {
        info.churn_procs_pid = Some(sp.churn_procs(cli.procs_per_sec)?);
        info.churn_max_procs = churn::max_procs(cli.procs_per_sec);
    }
    if cli.churn && cli.threads_per_sec > 0 {
        info.churn_threads_pid = Some(sp.churn_threads(cli.threads_per_sec)?);
        info.churn_max_threads = churn::max_threads(cli.threads_per_sec);
    }
    Ok(info)
}

fn report(info: &LoadInfo) -> Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer(&mut out, info)?;
    out.write_all(b"\n")?;
    out.flush().context("writing the report to stdout")
}

/// Waits for a terminating signal, stdin EOF or the deadline, reaping
/// children meanwhile.
fn wait_for_end(cli: &Cli, sp: &mut Spawner) -> Result<()> {
    let sfd = sys::signalfd(&sys::sigset(&BLOCKED)).context("signalfd")?;
    let deadline = cli
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    // A SIGCHLD may have been merged before the signalfd existed.
    sp.reap();
    loop {
        let timeout = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(());
                }
                // Round up so we do not spin just before the deadline.
                libc::c_int::try_from(left.as_millis() + 1).unwrap_or(libc::c_int::MAX)
            }
        };
        let mut fds = [
            libc::pollfd {
                fd: sfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if cli.until_stdin_eof { 0 } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        sys::poll(&mut fds, timeout)?;
        if fds[0].revents != 0 {
            while let Some(sig) = sys::read_signalfd(sfd.as_raw_fd())? {
                match sig {
                    libc::SIGCHLD => sp.reap(),
                    libc::SIGTTIN | libc::SIGTTOU => {}
                    _ => return Ok(()),
                }
            }
        }
        if fds[1].revents != 0 {
            let mut buf = [0u8; 4096];
            match sys::read_fd(0, &mut buf) {
                Ok(0) | Err(_) => return Ok(()),
                Ok(_) => {}
            }
        }
    }
}

/// SIGKILLs every member of the group except ourselves (and foreign
/// members), reaps them, and gives the terminal back.
///
/// Every task of the load is a descendant of ours, so no `/proc` scan is
/// needed (it would take about a second per pass with 50k processes on the
/// machine): kill and reap the direct children; by the time a child is
/// reaped its own children were reparented to us (we are a subreaper) and
/// got their parent-death SIGKILL; reap those too, killing any survivor
/// listed in `/proc/<pid>/task/<pid>/children`, until we have no children.
/// Only if that file is unavailable do we fall back to scanning the group.
fn teardown(group: &Group, sp: &mut Spawner) {
    let start = Instant::now();
    for &pid in &sp.alive {
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    sp.reap_known_until(start + Duration::from_secs(120));
    let children_file = format!("/proc/{0}/task/{0}/children", group.me);
    loop {
        sp.reap();
        let left: Vec<Pid> = match std::fs::read(&children_file) {
            Ok(list) => tasksnap_procfs::parse::parse_children(&list),
            Err(_) => group_members(group.pgid)
                .into_iter()
                .filter(|p| *p != group.me && !group.foreign.contains(p))
                .collect(),
        };
        if left.is_empty() {
            break;
        }
        if start.elapsed() > Duration::from_secs(180) {
            eprintln!("tasksnap-loadgen: warning: could not clean up {left:?}");
            break;
        }
        for pid in left {
            let _ = sys::kill(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Some(old) = group.tty_restore {
        let _ = sys::tcsetpgrp(0, old);
    }
}
