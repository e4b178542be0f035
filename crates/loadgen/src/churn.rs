//! `--churn` and `--busy`: tasks created and ending all the time, and CPUs kept saturated.
//!
//! `--churn` forks two drivers from the (single-threaded) loadgen:
//! - `lg-churn` starts `--procs-per-sec` short-lived processes a second, a random mix of:
//!   fork and `_exit` at once (`lg-ch-exit`); exec of `true`; exec of `sleep 0.0N`
//!   (10-50 ms); a process living 0-300 ms, sleeping or spinning (`lg-ch-live`); a process
//!   with 1-4 threads that ends after 0-200 ms, half the time by `exit_group` from one of
//!   its threads (`lg-ch-mt`). It stays single-threaded, so its children may run ordinary
//!   code (see [`sys::fork_child`]), and reaps them every tick ([`TICK`]).
//! - `lg-thrchurn` starts `--threads-per-sec` threads a second (`lg-chthr`), each living
//!   0-20 ms (a quarter of them spinning), detached.
//!
//! Both are bounded: at most [`max_procs`] churn processes (reaped or not) and
//! [`max_threads`] churn threads (as the kernel counts them, exiting ones included) exist
//! at once; spawns due while at the bound are dropped,
//! not queued, and a driver that fell behind (a saturated CPU) drops the backlog beyond a
//! tenth of a second's worth, so a starved driver does not burst later. Nothing grows
//! without bound and nothing is left unreaped for more than a tick.
//!
//! `--busy [N]` forks N processes (default: one per CPU) that spin forever (`lg-busy`).
//!
//! Every task set `PR_SET_PDEATHSIG(SIGKILL)` (fork_child) and stays in the loadgen's
//! process group, so one `kill(-pgid, SIGKILL)` or the loadgen's own teardown ends all.

use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

use crate::sys::{self, ChildCtx};

/// How often the drivers wake to start what is due and reap.
pub const TICK: Duration = Duration::from_millis(5);

/// At most this many churn processes (alive or not yet reaped) exist at once for a rate of
/// `per_sec`: ten times the expected population (about 5% of a second's worth live at a
/// time), at least 32.
pub fn max_procs(per_sec: u32) -> usize {
    (per_sec as usize / 2).clamp(32, 4096)
}

/// At most this many churn threads exist at once for a rate of `per_sec` (expected: about
/// 1% of a second's worth).
pub fn max_threads(per_sec: u32) -> usize {
    (per_sec as usize / 10).clamp(16, 1024)
}

/// xorshift64*: enough randomness for a load mix, no dependency.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng((t ^ (sys::gettid() as u64).rotate_left(32)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-enough in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.below(max + 1))
    }
}

/// How many events of a `per_sec` rate are due since the start.
#[derive(Debug)]
struct Pacer {
    start: Instant,
    per_sec: f64,
    done: u64,
}

impl Pacer {
    fn new(per_sec: u32) -> Pacer {
        Pacer {
            start: Instant::now(),
            per_sec: f64::from(per_sec),
            done: 0,
        }
    }

    /// Events due now; the caller does them (or drops them) and they count as done. A
    /// backlog beyond a tenth of a second's worth is dropped.
    fn take_due(&mut self) -> u64 {
        let target = (self.start.elapsed().as_secs_f64() * self.per_sec) as u64;
        let burst = (self.per_sec / 10.0).ceil() as u64 + 1;
        if target > self.done + burst {
            self.done = target - burst;
        }
        let due = target.saturating_sub(self.done);
        self.done = self.done.max(target);
        due
    }
}

/// Spins for `d`.
fn spin(d: Duration) {
    let end = Instant::now() + d;
    let mut x = 0u64;
    while Instant::now() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
}

/// An executable by name, from the usual directories (the drivers run with an empty
/// environment as far as exec is concerned, so no PATH search).
fn find_exe(name: &str) -> Option<CString> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).is_file())
        .and_then(|p| CString::new(p).ok())
}

/// Body of the `lg-churn` driver: never returns (ends when killed, or with its parent).
pub fn drive_procs(per_sec: u32, devnull: libc::c_int) -> ! {
    let ctx = ChildCtx {
        parent: sys::getpid(),
        devnull,
    };
    let true_exe = find_exe("true");
    let sleep_exe = find_exe("sleep");
    let sleep_args: Vec<CString> = (1..=5)
        .filter_map(|n| CString::new(format!("0.0{n}")).ok())
        .collect();
    let cap = max_procs(per_sec);
    let mut rng = Rng::new();
    let mut pacer = Pacer::new(per_sec);
    let mut alive = 0usize;
    loop {
        while let Ok(Some(_)) = sys::waitpid(-1, libc::WNOHANG) {
            alive = alive.saturating_sub(1);
        }
        for _ in 0..pacer.take_due() {
            if alive >= cap {
                break;
            }
            let exec = match rng.below(100) {
                0..=34 => None,
                35..=49 => true_exe.as_deref().map(|p| (p, None)),
                50..=64 => sleep_exe.as_deref().map(|p| {
                    let i = rng.below(sleep_args.len() as u64) as usize;
                    (p, sleep_args.get(i).map(CString::as_c_str))
                }),
                65..=84 => {
                    let (life, busy) = (rng.millis(300), rng.below(2) == 0);
                    if spawn(&ctx, c"lg-ch-live", move || {
                        if busy {
                            spin(life)
                        } else {
                            std::thread::sleep(life)
                        }
                    }) {
                        alive += 1;
                    }
                    continue;
                }
                _ => {
                    let threads = 1 + rng.below(4);
                    let life = rng.millis(200);
                    let from_thread = rng.below(2) == 0;
                    let seed = rng.next();
                    if spawn(&ctx, c"lg-ch-mt", move || {
                        multi_threaded(threads, life, from_thread, seed)
                    }) {
                        alive += 1;
                    }
                    continue;
                }
            };
            let ok = match exec {
                // fork + _exit (also the fallback when `true`/`sleep` are not installed).
                None => spawn(&ctx, c"lg-ch-exit", || {}),
                Some((path, arg)) => {
                    let argv0 = CString::from(path);
                    let argv = [
                        argv0.as_ptr(),
                        arg.map_or(std::ptr::null(), CStr::as_ptr),
                        std::ptr::null(),
                    ];
                    let envp = [std::ptr::null()];
                    spawn(&ctx, c"lg-ch-exec", move || {
                        let _ = sys::execve(path, &argv, &envp);
                        sys::exit_now(127)
                    })
                }
            };
            if ok {
                alive += 1;
            }
        }
        std::thread::sleep(TICK);
    }
}

/// Forks one churn child; false when fork failed (EAGAIN under pressure: skipped).
fn spawn<F: FnOnce()>(ctx: &ChildCtx, comm: &CStr, body: F) -> bool {
    sys::fork_child(ctx, comm, None, body).is_ok()
}

/// A `lg-ch-mt` child: `threads` threads sleeping 0-`life`, the process ending after
/// `life` by `_exit` from the main thread, or from one of the threads (`exit_group` from a
/// non-leader thread) when `from_thread`.
fn multi_threaded(threads: u64, life: Duration, from_thread: bool, seed: u64) {
    let mut rng = Rng(seed | 1);
    for i in 0..threads {
        let nap = rng.millis(life.as_millis() as u64);
        let ender = from_thread && i == 0;
        let spawned = std::thread::Builder::new()
            .name("lg-ch-mt-thr".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                if ender {
                    std::thread::sleep(life);
                    sys::exit_now(0);
                }
                std::thread::sleep(nap);
            });
        if spawned.is_err() {
            sys::exit_now(1);
        }
    }
    // The ender thread normally wins; the margin only bounds the process's life.
    std::thread::sleep(if from_thread { life * 2 + TICK } else { life });
}

/// Threads of the calling process as the kernel counts them (`num_threads`, field 20 of
/// `/proc/self/stat`), exiting ones included until they are released: what a reader of
/// `/proc/PID/task` sees. `None` when unreadable.
fn kernel_threads() -> Option<usize> {
    let stat = std::fs::read("/proc/self/stat").ok()?;
    let st = tasksnap_procfs::parse::parse_stat(&stat).ok()?;
    usize::try_from(st.num_threads).ok()
}

/// Body of the `lg-thrchurn` driver: never returns.
///
/// The bound is checked against the kernel's thread count, not a count kept by the threads:
/// a thread that finished its body still shows in `/proc/PID/task` until it has exited,
/// which on a saturated CPU takes a while.
pub fn drive_threads(per_sec: u32) -> ! {
    let cap = max_threads(per_sec);
    let mut rng = Rng::new();
    let mut pacer = Pacer::new(per_sec);
    loop {
        let due = pacer.take_due();
        // Ours besides the main thread; unreadable: assume full, spawn nothing.
        let mut live = kernel_threads().map_or(cap, |n| n.saturating_sub(1));
        for _ in 0..due {
            if live >= cap {
                break;
            }
            let life = rng.millis(20);
            let busy = rng.below(4) == 0;
            let spawned = std::thread::Builder::new()
                .name("lg-chthr".into())
                .stack_size(64 * 1024)
                .spawn(move || {
                    if busy {
                        spin(life);
                    } else {
                        std::thread::sleep(life);
                    }
                });
            live += usize::from(spawned.is_ok());
        }
        std::thread::sleep(TICK);
    }
}

/// Body of a `lg-busy` process: spins forever.
pub fn busy_loop() -> ! {
    loop {
        spin(Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_drops_backlog_beyond_a_tenth_of_a_second() {
        let mut p = Pacer::new(1000);
        p.start -= Duration::from_secs(5);
        let due = p.take_due();
        assert!((100..=102).contains(&due), "{due}");
        assert_eq!(p.take_due(), 0);
    }

    #[test]
    fn bounds() {
        assert_eq!(max_procs(0), 32);
        assert_eq!(max_procs(200), 100);
        assert_eq!(max_procs(u32::MAX), 4096);
        assert_eq!(max_threads(500), 50);
    }

    #[test]
    fn kernel_thread_count() {
        // Other tests run on other threads of this process: only a floor is certain.
        let t = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(200)));
        assert!(kernel_threads().is_some_and(|n| n >= 2));
        t.join().expect("join");
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut r = Rng::new();
        for n in 1..200 {
            assert!(r.below(n) < n);
        }
    }
}
