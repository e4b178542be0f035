//! Spawning of every task population of the load (plain sleepers, a
//! many-threaded process, hostile names, zombies, stopped and D-state tasks,
//! a pipe ping-pong pair) and bookkeeping of the loadgen's direct children.
//!
//! Every function returns only once its tasks are in their intended state
//! (comm set, stopped, zombie, in D...), so the JSON report printed
//! afterwards is immediately true.
//!
//! All children are created by fork() from the single-threaded loadgen (see
//! [`sys::fork_child`], and [`sleepers::fork_sleepers`] for the fast path of
//! `--procs`) and inherit its process group; each sets
//! `PR_SET_PDEATHSIG(SIGKILL)` so that it dies with its parent.

use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tasksnap_loadgen::OddTask;

use crate::child;
use crate::churn;
use crate::sleepers;
use crate::sys::{self, ChildCtx, Pid};

/// The real-time signal `--signals` leaves pending for its process: the kernel's 40 (glibc's
/// SIGRTMIN is 34; 32 and 33 are its own), bit 39 of the masks.
const SIG_RT_PENDING: libc::c_int = 40;

/// Owns the loadgen's direct children until they are reaped.
#[derive(Debug)]
pub struct Spawner {
    ctx: ChildCtx,
    /// Direct children not reaped yet: their pids cannot be recycled, so
    /// signalling them is always safe.
    pub alive: HashSet<Pid>,
}

impl Spawner {
    pub fn new(ctx: ChildCtx) -> Self {
        Spawner {
            ctx,
            alive: HashSet::new(),
        }
    }

    pub(crate) fn fork<F: FnOnce()>(
        &mut self,
        comm: &std::ffi::CStr,
        ready: Option<&OwnedFd>,
        body: F,
    ) -> io::Result<Pid> {
        let pid = sys::fork_child(&self.ctx, comm, ready.map(AsRawFd::as_raw_fd), body)?;
        self.alive.insert(pid);
        Ok(pid)
    }

    /// Reaps every child that has exited (non-blocking), known or not
    /// (orphans reparented to us count too).
    ///
    /// `waitpid(-1)` walks the whole child list on every call, so with tens
    /// of thousands of children use [`Spawner::reap_known_until`] when many
    /// die.
    pub fn reap(&mut self) {
        while let Ok(Some((pid, _))) = sys::waitpid(-1, libc::WNOHANG) {
            self.alive.remove(&pid);
        }
    }

    /// Waits (until `deadline`) for every known child to exit and reaps it.
    ///
    /// Each child is waited for with a pidfd (poll until it exits) and a
    /// targeted `waitpid(pid)`, both constant-cost, instead of `waitpid(-1)`
    /// or busy polling, which are quadratic or CPU-hungry with 50k children
    /// that compete for the CPU to finish dying.
    pub fn reap_known_until(&mut self, deadline: Instant) {
        let pids: Vec<Pid> = self.alive.iter().copied().collect();
        for pid in pids {
            if !matches!(sys::waitpid(pid, libc::WNOHANG), Ok(None)) {
                self.alive.remove(&pid);
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let _ = sys::wait_exit_timeout(pid, left);
            if !matches!(sys::waitpid(pid, libc::WNOHANG), Ok(None)) {
                self.alive.remove(&pid);
            }
        }
    }

    /// `n` processes of which `wake.0` wake every `wake.1` nanoseconds (comm `lg-waker`,
    /// see [`crate::waker`]) and the others sleep (comm `lg-proc`, see [`Spawner::procs`]).
    /// The wakers are forked last and start waking only once every one of them is in
    /// place, so that their wake-ups do not slow the forking of the others. Returns the
    /// sorted pids of all `n` and those of the wakers.
    pub fn procs_with_wakers(
        &mut self,
        n: usize,
        exec: Option<usize>,
        wake: (usize, u64),
    ) -> Result<(Vec<Pid>, Vec<Pid>)> {
        let (k, period_ns) = wake;
        if k > n {
            bail!("--wakers {k} is more than --procs {n}: the wakers are among the processes");
        }
        let mut pids = if n > k {
            self.procs(n - k, exec)?
        } else {
            Vec::new()
        };
        if k == 0 {
            return Ok((pids, Vec::new()));
        }
        let (ready_r, ready_w) = sys::pipe()?;
        let (go_r, go_w) = sys::pipe()?;
        let how = sleepers::Sleeper::Wake {
            period_ns,
            go_r: go_r.as_raw_fd(),
            go_w: go_w.as_raw_fd(),
        };
        let wakers = self.sleepers(c"lg-waker", (ready_r, ready_w), k, how, ("waker", "wakers"))?;
        // End of file on the go pipe: every waker starts its clock.
        drop((go_r, go_w));
        pids.extend(&wakers);
        pids.sort_unstable();
        Ok((pids, wakers))
    }

    /// `n` sleeping processes (comm `lg-proc`): fork, set comm, pause().
    /// With `exec`, each child re-executes the loadgen binary in its
    /// `proc` child mode instead (costlier, but a real separate image), with
    /// an argument and an environment variable of that many bytes besides
    /// when it is not 0. Returns the sorted pids.
    pub fn procs(&mut self, n: usize, exec: Option<usize>) -> Result<Vec<Pid>> {
        let (ready_r, ready_w) = sys::pipe()?;
        // Prepared before forking: the children must not allocate.
        let pad = exec.filter(|&b| b > 0).map(|bytes| {
            let arg = CString::new(vec![b'a'; bytes]).expect("no NUL");
            let mut env = b"TASKSNAP_LOADGEN_PAD=".to_vec();
            env.resize(env.len() + bytes, b'e');
            (arg, CString::new(env).expect("no NUL"))
        });
        let mut argv = vec![
            c"tasksnap-loadgen".as_ptr(),
            c"__child".as_ptr(),
            c"proc".as_ptr(),
        ];
        let mut envp = vec![child::PROC_ENV.as_ptr()];
        if let Some((arg, env)) = &pad {
            argv.push(arg.as_ptr());
            envp.push(env.as_ptr());
        }
        argv.push(std::ptr::null());
        envp.push(std::ptr::null());
        let how = if exec.is_some() {
            sleepers::Sleeper::Exec {
                path: child::SELF_EXE,
                argv: &argv,
                envp: &envp,
                ready_fd: child::READY_FD,
            }
        } else {
            sleepers::Sleeper::Pause
        };
        self.sleepers(
            c"lg-proc",
            (ready_r, ready_w),
            n,
            how,
            ("plain process", "plain processes"),
        )
    }

    /// Forks `n` sleepers (comm `comm`, each sleeping `how`) that report on the `ready` pipe,
    /// and returns their sorted pids once every one is up; `what`: what one is called, and
    /// what many are, for the errors.
    fn sleepers(
        &mut self,
        comm: &CStr,
        ready: (OwnedFd, OwnedFd),
        n: usize,
        how: sleepers::Sleeper<'_>,
        what: (&str, &str),
    ) -> Result<Vec<Pid>> {
        let (ready_r, ready_w) = ready;
        let (forked, failure) =
            sleepers::fork_sleepers(&self.ctx, comm, ready_w.as_raw_fd(), n, how);
        // Only the children hold the write end now: EOF once all reported.
        drop(ready_w);
        let mut pids = read_pids(ready_r, forked)?;
        pids.sort_unstable();
        self.alive.extend(&pids);
        if let Some(e) = failure {
            return Err(e).with_context(|| {
                format!(
                    "fork of {} {} of {n} failed \
                     (check kernel.pid_max, kernel.threads-max, ulimit -u, pids cgroup)",
                    what.0,
                    forked + 1
                )
            });
        }
        if pids.len() != n {
            bail!("only {} of {n} {} came up", pids.len(), what.1);
        }
        Ok(pids)
    }

    /// `n` processes that SIGSTOP themselves (state T, comm `lg-stopped`).
    pub fn stopped(&mut self, n: usize) -> Result<Vec<Pid>> {
        let mut pids = Vec::with_capacity(n);
        for _ in 0..n {
            let pid = self.fork(c"lg-stopped", None, || {
                let _ = sys::kill(sys::getpid(), libc::SIGSTOP);
                sys::pause_forever()
            })?;
            // Consume the stop report: after this the child is in state T.
            match sys::waitpid(pid, libc::WUNTRACED)? {
                Some((_, status)) if libc::WIFSTOPPED(status) => pids.push(pid),
                other => bail!("stopped child {pid} did not stop: {other:?}"),
            }
        }
        Ok(pids)
    }

    /// `n` processes with locked memory (mlockall: `L` in ps's STAT), comm `lg-mlocked`.
    /// Locking needs RLIMIT_MEMLOCK room (root has it); without it the child still sleeps,
    /// unlocked, and the caller can tell from VmLck.
    pub fn mlocked(&mut self, n: usize) -> Result<Vec<Pid>> {
        let mut pids = Vec::with_capacity(n);
        for _ in 0..n {
            let pid = self.fork(c"lg-mlocked", None, || {
                // SAFETY: mlockall takes flags only; it is async-signal-safe enough for a
                // freshly forked single-threaded child (a plain system call).
                unsafe {
                    libc::mlockall(libc::MCL_CURRENT);
                }
                sys::pause_forever()
            })?;
            // Report only once the lock is in place (VmLck > 0), or after 2 s without it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                let locked = std::fs::read(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|s| tasksnap_procfs::parse::parse_status(&s).ok()?.vm_lck_kb)
                    .unwrap_or(0);
                if locked > 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            pids.push(pid);
        }
        Ok(pids)
    }

    /// One intermediate process (comm `lg-zparent`) with `n` children that
    /// exit immediately (comm `lg-zombie`) and are never reaped.
    pub fn zombies(&mut self, n: usize) -> Result<(Pid, Vec<Pid>)> {
        let (r, w) = sys::pipe()?;
        let wfd = w.as_raw_fd();
        let devnull = self.ctx.devnull;
        let parent = self.fork(c"lg-zparent", None, move || {
            let ctx = ChildCtx {
                parent: sys::getpid(),
                devnull,
            };
            for _ in 0..n {
                let Ok(pid) = sys::fork_child(&ctx, c"lg-zombie", None, || {}) else {
                    sys::exit_now(1)
                };
                // Wait for the exit without reaping: it is now a zombie.
                if sys::wait_exited_keep_zombie(pid).is_err()
                    || sys::write_all_fd(wfd, &pid.to_ne_bytes()).is_err()
                {
                    sys::exit_now(1);
                }
            }
            sys::close_fd(wfd);
            sys::pause_forever()
        })?;
        drop(w);
        let zombies = read_pids(r, n).context("collecting zombie pids")?;
        if zombies.len() != n {
            bail!("only {} of {n} zombies came up", zombies.len());
        }
        Ok((parent, zombies))
    }

    /// One process (comm `lg-dstate`) blocked in uninterruptible sleep.
    ///
    /// How: it calls `clone(CLONE_VFORK)`; a vfork parent waits for its
    /// child to exec or exit in `wait_for_vfork_done()`, which sleeps in
    /// `TASK_KILLABLE` (= `TASK_UNINTERRUPTIBLE | TASK_WAKEKILL`), and
    /// `/proc/<pid>/stat` reports that as `D`. The child (comm
    /// `lg-vfork-child`) just pause()s, so the parent stays in D for as long
    /// as the load lives. This needs no privilege, no FUSE, no userfaultfd,
    /// works as root and non-root alike, and SIGKILL still ends it (killable
    /// sleep), so teardown is clean. It also counts in the load average.
    ///
    /// Returns (D task, its vfork child).
    pub fn dstate(&mut self) -> Result<(Pid, Option<Pid>)> {
        let pid = self.fork(c"lg-dstate", None, || {
            let me = sys::getpid() as usize;
            // Returns only once the vfork child is gone.
            let _ = sys::clone_vfork(vfork_child_main, me);
            sys::exit_now(0)
        })?;
        let start = Instant::now();
        loop {
            match tasksnap_loadgen::read_stat(pid) {
                Ok(st) if st.state == 'D' => break,
                Ok(_) if start.elapsed() < Duration::from_secs(5) => {}
                Ok(st) => bail!("dstate task {pid} is in state {} instead of D", st.state),
                Err(e) => return Err(e).context("reading the dstate task's stat"),
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let helper = std::fs::read(format!("/proc/{pid}/task/{pid}/children"))
            .ok()
            .and_then(|s| tasksnap_procfs::parse::parse_children(&s).first().copied());
        Ok((pid, helper))
    }

    /// Two processes bouncing one byte over a pair of pipes for `secs`
    /// seconds (0 = until the load ends), then sleeping.
    pub fn pingpong(&mut self, secs: f64) -> Result<[Pid; 2]> {
        let (ab_r, ab_w) = sys::pipe()?;
        let (ba_r, ba_w) = sys::pipe()?;
        let (ready_r, ready_w) = sys::pipe()?;
        let (abr, abw) = (ab_r.as_raw_fd(), ab_w.as_raw_fd());
        let (bar, baw) = (ba_r.as_raw_fd(), ba_w.as_raw_fd());
        let duration = (secs > 0.0).then(|| Duration::from_secs_f64(secs));
        let ping = self.fork(c"lg-ping", Some(&ready_w), move || {
            sys::close_fd(abr);
            sys::close_fd(baw);
            let deadline = duration.map(|d| Instant::now() + d);
            let mut byte = [0u8; 1];
            let mut rounds: u64 = 0;
            loop {
                if sys::write_all_fd(abw, b"p").is_err()
                    || sys::read_fd(bar, &mut byte).ok() != Some(1)
                {
                    break;
                }
                rounds += 1;
                if rounds % 256 == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
            }
            // EOF tells the partner to stop too.
            sys::close_fd(abw);
            sys::pause_forever()
        })?;
        let pong = self.fork(c"lg-pong", Some(&ready_w), move || {
            sys::close_fd(abw);
            sys::close_fd(bar);
            let mut byte = [0u8; 1];
            while sys::read_fd(abr, &mut byte).ok() == Some(1) {
                if sys::write_all_fd(baw, b"q").is_err() {
                    break;
                }
            }
            sys::pause_forever()
        })?;
        drop((ab_r, ab_w, ba_r, ba_w, ready_w));
        if read_count(ready_r, 2)? != 2 {
            bail!("pingpong processes did not come up");
        }
        Ok([ping, pong])
    }

    /// One process (comm `lg-threads`) with `m` extra threads (comm
    /// `lg-thr-<i>`) parked forever. Returns (pid, sorted tids).
    pub fn threads(&mut self, m: usize) -> Result<(Pid, Vec<Pid>)> {
        let (r, w) = sys::pipe()?;
        let wfd = w.as_raw_fd();
        let pid = self.fork(c"lg-threads", None, move || {
            // We are a fork of a single-threaded process: std is usable.
            let (tx, rx) = std::sync::mpsc::channel::<Pid>();
            for i in 0..m {
                let tx = tx.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("lg-thr-{i}"))
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        let _ = tx.send(sys::gettid());
                        drop(tx);
                        loop {
                            std::thread::park();
                        }
                    });
                if spawned.is_err() {
                    sys::exit_now(1);
                }
            }
            drop(tx);
            for _ in 0..m {
                let Ok(tid) = rx.recv() else { sys::exit_now(1) };
                if sys::write_all_fd(wfd, &tid.to_ne_bytes()).is_err() {
                    sys::exit_now(1);
                }
            }
            sys::close_fd(wfd);
            sys::pause_forever()
        })?;
        drop(w);
        let mut tids = read_pids(r, m).context("collecting thread ids")?;
        if tids.len() != m {
            bail!("only {} of {m} threads came up", tids.len());
        }
        tids.sort_unstable();
        Ok((pid, tids))
    }

    /// The `--signals` process (comm `lg-signals`) and its one extra thread (comm
    /// `lg-sig-thr`), with every kind of signal mask /proc shows set: SIGUSR1, SIGTERM and
    /// signal 40 blocked in both threads; SIGHUP ignored, SIGUSR2 caught; pending, while
    /// blocked, signal 40 for the process (`ShdPnd`, a bit above the 32nd), SIGTERM for the
    /// main thread and SIGUSR1 for the other (each its own `SigPnd`). Returns the pid and
    /// the thread's tid once every signal is pending.
    pub fn signals(&mut self) -> Result<(Pid, Pid)> {
        extern "C" fn on_usr2(_: libc::c_int) {}
        let (r, w) = sys::pipe()?;
        let wfd = w.as_raw_fd();
        let pid = self.fork(c"lg-signals", None, move || {
            // We are a fork of a single-threaded process: std is usable. The thread
            // inherits the mask.
            let blocked = sys::sigset(&[libc::SIGUSR1, libc::SIGTERM, SIG_RT_PENDING]);
            let handler: extern "C" fn(libc::c_int) = on_usr2;
            if sys::set_sigmask(&blocked).is_err()
                || sys::set_handler(libc::SIGHUP, libc::SIG_IGN).is_err()
                || sys::set_handler(libc::SIGUSR2, handler as libc::sighandler_t).is_err()
            {
                sys::exit_now(1);
            }
            let (tx, rx) = std::sync::mpsc::channel::<Pid>();
            let spawned = std::thread::Builder::new()
                .name("lg-sig-thr".into())
                .stack_size(64 * 1024)
                .spawn(move || {
                    let _ = tx.send(sys::gettid());
                    loop {
                        std::thread::park();
                    }
                });
            let Ok(tid) = spawned.map_err(drop).and_then(|_| rx.recv().map_err(drop)) else {
                sys::exit_now(1)
            };
            let me = sys::getpid();
            let sent = sys::tgkill(me, tid, libc::SIGUSR1)
                .and_then(|()| sys::tgkill(me, me, libc::SIGTERM))
                .and_then(|()| sys::kill(me, SIG_RT_PENDING));
            if sent.is_err() || sys::write_all_fd(wfd, &tid.to_ne_bytes()).is_err() {
                sys::exit_now(1);
            }
            sys::close_fd(wfd);
            sys::pause_forever()
        })?;
        drop(w);
        let tid = read_pids(r, 1).context("collecting the signal thread's id")?;
        match tid.first() {
            Some(&t) => Ok((pid, t)),
            None => bail!("the signals process did not come up"),
        }
    }

    /// The `--churn` process driver (comm `lg-churn`): starts `per_sec`
    /// short-lived processes a second and reaps them (see [`churn`]).
    pub fn churn_procs(&mut self, per_sec: u32) -> Result<Pid> {
        let devnull = self.ctx.devnull;
        let (ready_r, ready_w) = sys::pipe()?;
        let pid = self.fork(c"lg-churn", Some(&ready_w), move || {
            churn::drive_procs(per_sec, devnull)
        })?;
        drop(ready_w);
        if read_count(ready_r, 1)? != 1 {
            bail!("the churn driver did not come up");
        }
        Ok(pid)
    }

    /// The `--churn` thread driver (comm `lg-thrchurn`): starts `per_sec`
    /// short-lived threads a second (see [`churn`]).
    pub fn churn_threads(&mut self, per_sec: u32) -> Result<Pid> {
        let (ready_r, ready_w) = sys::pipe()?;
        let pid = self.fork(c"lg-thrchurn", Some(&ready_w), move || {
            churn::drive_threads(per_sec)
        })?;
        drop(ready_w);
        if read_count(ready_r, 1)? != 1 {
            bail!("the thread churn driver did not come up");
        }
        Ok(pid)
    }

    /// One process whose mmap lock is held for seconds at a time (comm `lg-mmaplock`; see
    /// [`crate::mmap_lock`]).
    pub fn mmap_lock_storm(&mut self) -> Result<Pid> {
        let (ready_r, ready_w) = sys::pipe()?;
        let pid = self.fork(c"lg-mmaplock", Some(&ready_w), || crate::mmap_lock::storm())?;
        drop(ready_w);
        if read_count(ready_r, 1)? != 1 {
            bail!("the mmap-lock storm did not come up");
        }
        Ok(pid)
    }

    /// `n` processes spinning forever on a CPU (comm `lg-busy`).
    pub fn busy(&mut self, n: usize) -> Result<Vec<Pid>> {
        let (ready_r, ready_w) = sys::pipe()?;
        let pids = (0..n)
            .map(|_| self.fork(c"lg-busy", Some(&ready_w), || churn::busy_loop()))
            .collect::<io::Result<Vec<Pid>>>()?;
        drop(ready_w);
        if read_count(ready_r, n)? != n {
            bail!("busy processes did not come up");
        }
        Ok(pids)
    }

    /// Processes with hostile comms and cmdlines: each re-executes the
    /// loadgen (`/proc/self/exe`) with an arbitrary argv (argv[0] included);
    /// the child mode is selected by environment variables, so the
    /// cmdline is exactly the hostile argv. The child sets its comm with
    /// `prctl(PR_SET_NAME)` and reports readiness on its stdout.
    pub fn odd(&mut self) -> Result<Vec<OddTask>> {
        let mut out = Vec::new();
        for (comm, argv) in odd_specs() {
            let args: Vec<&OsStr> = argv.iter().map(OsStr::new).collect();
            let pid = self.exec_named(OsStr::new(&comm), &args, None)?;
            out.push(OddTask { pid, comm, argv });
        }
        Ok(out)
    }

    /// One process that re-executes the loadgen (`/proc/self/exe`) in its `odd` child mode
    /// with exactly `argv` (argv[0] included, any bytes but NUL) as its command line, sets
    /// its comm to `comm` and, given `uid`, becomes that user; returns once it reported ready
    /// on its stdout.
    pub(crate) fn exec_named(
        &mut self,
        comm: &OsStr,
        argv: &[&OsStr],
        uid: Option<u32>,
    ) -> Result<Pid> {
        let parent = sys::getpid();
        let mut cmd = Command::new(child::SELF_EXE_STR);
        cmd.arg0(argv[0])
            .args(&argv[1..])
            .env_clear()
            .env(child::CHILD_ENV, child::MODE_ODD)
            .env(child::COMM_ENV, comm)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(uid) = uid {
            cmd.env(child::UID_ENV, uid.to_string());
        }
        let empty = sys::sigset(&[]);
        // SAFETY: the closure runs between fork and exec and only makes
        // async-signal-safe syscalls (prctl, getppid, sigprocmask,
        // _exit); it does not allocate.
        unsafe {
            cmd.pre_exec(move || {
                sys::set_pdeathsig_kill();
                if sys::getppid() != parent {
                    sys::exit_now(1);
                }
                sys::set_sigmask(&empty)
            });
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning odd child {comm:?}"))?;
        let pid = child.id() as Pid;
        self.alive.insert(pid);
        let stdout = child.stdout.take().context("odd child stdout")?;
        let line = tasksnap_loadgen::first_line(stdout)?;
        if line != "ready\n" {
            bail!("odd child {comm:?} (pid {pid}) did not come up");
        }
        // Dropping `child` neither kills nor waits; we reap it later.
        Ok(pid)
    }
}

/// Body of the vfork child of the D-state task: die with it, then sleep.
extern "C" fn vfork_child_main(arg: *mut libc::c_void) -> libc::c_int {
    let parent = arg as usize as Pid;
    sys::set_pdeathsig_kill();
    if sys::getppid() != parent {
        sys::exit_now(1);
    }
    sys::set_comm(c"lg-vfork-child");
    sys::pause_forever()
}

/// Reads until EOF or `n` bytes, returning how many arrived.
fn read_count(fd: OwnedFd, n: usize) -> io::Result<usize> {
    let mut f = File::from(fd);
    let mut buf = [0u8; 4096];
    let mut got = 0;
    while got < n {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads up to `n` native-endian pids from children, stopping early at EOF
/// (all writers gone).
fn read_pids(fd: OwnedFd, n: usize) -> io::Result<Vec<Pid>> {
    const SIZE: usize = std::mem::size_of::<Pid>();
    let mut f = File::from(fd);
    let mut buf = vec![0u8; n * SIZE];
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(buf[..got - got % SIZE]
        .chunks_exact(SIZE)
        .map(|c| {
            let mut a = [0u8; SIZE];
            a.copy_from_slice(c);
            Pid::from_ne_bytes(a)
        })
        .collect())
}

/// The hostile (comm, argv) pairs of `--odd-names`. Together they exercise:
/// spaces, parentheses (including a comm that mimics `/proc/<pid>/stat`
/// fields), newline, tab, escape sequences, quotes and backslashes, unicode
/// (exactly 15 bytes), truncation to 15 bytes (also in the middle of a
/// UTF-8 sequence), an empty comm, an empty argv[0], empty and trailing
/// empty arguments, and a 5000-byte argument.
pub fn odd_specs() -> Vec<(String, Vec<String>)> {
    let long: String = "0123456789".repeat(500);
    let v = |comm: &str, argv: &[&str]| {
        (
            comm.to_owned(),
            argv.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )
    };
    let mut specs = vec![
        v("a b", &["a b", "two words", "x"]),
        v("((a) b)", &["((a) b)", ") x (", "(", ")"]),
        v(") x (", &[") x (", "((a) b)"]),
        v("x) Z 1 1 1 (", &["x) Z 1 1 1 (", "-"]),
        v("a\nb", &["a\nb", "line1\nline2\n"]),
        v("a\tb", &["a\tb", "col1\tcol2"]),
        v("esc\x1b[31mred", &["esc\x1b[31mred", "\x1b[0m", "\x07"]),
        v("q\"u'o\\te", &["q\"u'o\\te", "{\"json\": [1]}", "%s%n"]),
        v("naïve✓日本", &["naïve✓日本", "ünïcødé ✓ 日本語"]),
        v(
            "éééééééé",
            &["éééééééé", "comm truncated mid UTF-8 sequence"],
        ),
        v("", &["", "", "empty argv0 and empty argument"]),
        v(" ", &[" ", "", "trailing empty argument follows", ""]),
    ];
    let alpha = "abcdefghijklmnopqrstuvwxyz";
    specs.push((alpha.to_owned(), vec![alpha.to_owned(), long]));
    specs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn specs_are_exec_safe() {
        for (comm, argv) in odd_specs() {
            assert!(!comm.contains('\0'));
            assert!(!argv.is_empty());
            assert!(argv.iter().all(|a| CString::new(a.as_str()).is_ok()));
        }
    }
}
