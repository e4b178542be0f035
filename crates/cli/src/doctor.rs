//! `tasksnap doctor`: what this host offers tasksnap and what it costs to observe, as collectl
//! checks at start-up: kernel, BPF (usable, or exactly why not), BTF, privileges, the exit
//! records (which source, or why none), hidepid, the query service,
//! delay accounting, task counts, the time a /proc/stat read and a per-task /proc read take,
//! and which backend `ps` will use. Exit code 0 when nothing is wrong, 1 when something is.

use std::process::ExitCode;
use std::time::Instant;

use tasksnap_collect::{ExitSource, Host};
use tasksnap_model::Backend;
use tasksnap_model::{Group, Groups, Query, Selector};

/// A /proc/stat read slower than this is reported (collectl warns about slow /proc/stat:
/// on some kernels its per-CPU interrupt sums made it 50x slower on many-core hosts).
const SLOW_PROC_STAT_US: f64 = 2_000.0;
/// A per-task /proc/PID/stat read slower than this is reported.
const SLOW_PER_TASK_US: f64 = 50.0;

fn line(name: &str, text: impl AsRef<str>) {
    say!("{name:<12} {}", text.as_ref());
}

fn kernel() -> String {
    let mut u = std::mem::MaybeUninit::<libc::utsname>::zeroed();
    // SAFETY: uname fills the struct it is given; on failure it stays zeroed.
    let u = unsafe {
        libc::uname(u.as_mut_ptr());
        u.assume_init()
    };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} ({})", field(&u.release), field(&u.machine))
}

/// Effective capabilities by name, from /proc/self/status.
fn capabilities(host: &Host) -> Vec<&'static str> {
    let eff = host.own_effective_caps().unwrap_or(0);
    [
        (19, "CAP_SYS_PTRACE"),
        (21, "CAP_SYS_ADMIN"),
        (38, "CAP_PERFMON"),
        (39, "CAP_BPF"),
        (12, "CAP_NET_ADMIN"),
    ]
    .into_iter()
    .filter(|(bit, _)| eff & (1u64 << bit) != 0)
    .map(|(_, name)| name)
    .collect()
}

/// Whether the query service answers here (`tasksnap serve`'s socket), timed on this
/// process alone.
fn query_service(host: &Host, root: bool) -> String {
    let Some(socket) = host.options().query_socket.clone() else {
        return "turned off here (TASKSNAP_NO_SERVICE)".into();
    };
    let mut h = Host::open(host.options().clone());
    if let Err(e) = h.open_snapshots(Backend::Service, &Groups::default()) {
        return format!("unavailable: {e}");
    }
    let me = Query::new(
        Selector::Pid(std::process::id() as i32),
        Groups::of(&[Group::Base]),
    );
    let t = Instant::now();
    match h.snapshot(&me) {
        Ok(_) => format!(
            "{} answers ({:.1} ms for one process); {}",
            socket.display(),
            t.elapsed().as_secs_f64() * 1e3,
            if root {
                "root's own commands load BPF themselves"
            } else {
                "ps, top and Python use it"
            }
        ),
        Err(e) => format!("none: {e} (users' ps, top and Python read /proc)"),
    }
}

fn hidepid(host: &Host) -> String {
    match host.hidepid() {
        Some(h) => format!("{h}: other users' processes are hidden from non-root callers"),
        None => "off (/proc mounted without hidepid)".into(),
    }
}

/// What is wrong, said at the end (each a `problem` line; any makes the exit code 1).
type Problems = Vec<String>;

/// Runs the checks and prints the report: one line per check, in this order.
pub fn main() -> ExitCode {
    let mut problems: Problems = Vec::new();
    line("kernel", kernel());
    let host = Host::from_env();
    btf(&host, &mut problems);
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let caps = capabilities(&host);
    line(
        "privileges",
        format!(
            "{} ({})",
            if root { "root" } else { "not root" },
            if caps.is_empty() {
                "no capabilities".to_string()
            } else {
                caps.join(" ")
            }
        ),
    );
    let bpf_loaded = bpf(&host, root, &mut problems);
    exits(&host, root, &mut problems);
    let unpriv = host
        .sysctl("kernel/unprivileged_bpf_disabled")
        .unwrap_or_default();
    line(
        "unpriv bpf",
        format!("kernel.unprivileged_bpf_disabled = {unpriv}"),
    );
    line("hidepid", hidepid(&host));
    line("service", query_service(&host, root));
    line("delayacct", delayacct(&host));
    if timings(&host, &mut problems).is_err() {
        return ExitCode::from(1);
    }
    backends(&host, root, bpf_loaded, &mut problems);
    if problems.is_empty() {
        line("problems", "none");
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            line("problem", p);
        }
        ExitCode::from(1)
    }
}

/// The kernel's BTF, which the BPF backend needs.
fn btf(host: &Host, problems: &mut Problems) {
    let btf = host.btf_path();
    match std::fs::metadata(&btf) {
        Ok(m) => line(
            "btf",
            format!("{} ({:.1} MB)", btf.display(), m.len() as f64 / 1e6),
        ),
        Err(_) => {
            line(
                "btf",
                "missing: the kernel was built without CONFIG_DEBUG_INFO_BTF",
            );
            problems.push("no kernel BTF: the BPF backend cannot load".into());
        }
    }
}

/// Whether BPF loads here, and how (pins, the walk); true when it does.
fn bpf(host: &Host, root: bool, problems: &mut Problems) -> bool {
    let b = match host.probe_bpf() {
        Ok(b) => b,
        Err(why) => {
            line("bpf", format!("unavailable: {why}"));
            if root {
                problems.push(format!("BPF unavailable as root: {why}"));
            }
            return false;
        }
    };
    line(
        "bpf",
        format!(
            "usable: task iterator {} in {:.2} ms; command lines {}",
            if b.pinned_at.is_some() {
                "pinned, opened"
            } else {
                "loaded"
            },
            b.load_ns as f64 / 1e6,
            match &b.cmdline_from_procfs {
                None => "from the sleepable iterator".to_string(),
                Some(why) => format!("from /proc ({why})"),
            }
        ),
    );
    line(
        "bpf pins",
        match (&b.pinned_at, &b.pin_problem) {
            (Some(dir), _) => format!("{} (root only)", dir.display()),
            (None, Some(why)) => {
                problems.push(format!("pinned BPF programs not used: {why}"));
                format!("not used: {why}")
            }
            (None, None) => "none: `tasksnap pin` keeps the programs loaded and saves the load \
                             time on every run"
                .to_string(),
        },
    );
    line(
        "bpf walk",
        if b.has_walk {
            "full passes walk the task lists into a mapped arena (pinned set)".to_string()
        } else if b.pinned_at.is_some() {
            format!(
                "not in the pinned set ({}): full passes use the seq_file iterator",
                b.walk_problem.as_deref().unwrap_or("unknown reason")
            )
        } else {
            "only with pinned programs (`tasksnap pin`); this run would use the seq_file \
             iterator"
                .to_string()
        },
    );
    true
}

/// Which source the exit records come from, or why there is none.
fn exits(host: &Host, root: bool, problems: &mut Problems) {
    match host.open_exits() {
        Ok(e) => {
            let ms = e.load_ns() as f64 / 1e6;
            line(
                "exits",
                match e.source() {
                    ExitSource::Bpf => format!(
                        "bpf: one record per exiting process, command line included (loaded \
                         in {ms:.2} ms)"
                    ),
                    ExitSource::Taskstats => format!(
                        "taskstats: one record per exiting process, no command line, real ids \
                         only ({}registered in {ms:.2} ms)",
                        e.bpf_refused()
                            .map(|why| format!("BPF: {why}; "))
                            .unwrap_or_default()
                    ),
                },
            );
        }
        Err(e) => {
            line(
                "exits",
                format!("none: processes that exit between samples are missed ({e})"),
            );
            if root {
                problems.push(format!("no exit records as root: {e}"));
            }
        }
    }
}

/// Whether the kernel accounts tasks' delays.
fn delayacct(host: &Host) -> &'static str {
    match host.sysctl("kernel/task_delayacct").ok_or(()) {
        Ok(v) if v == "1" => "on: per-task I/O and CPU wait delays are accounted",
        Ok(_) => {
            "off: `states` without BPF cannot split sleeping from disk waits exactly; enable \
             with `sysctl -w kernel.task_delayacct=1` (tasks started afterwards are accounted)"
        }
        Err(_) => "unknown (no /proc/sys/kernel/task_delayacct)",
    }
}

/// The task counts and what reading /proc costs: /proc/stat, and a ps-like pass of every
/// process's stat through a procfs host. `Err` when /proc cannot be read at all (said).
fn timings(host: &Host, problems: &mut Problems) -> Result<(), ()> {
    let threads = host.task_count().unwrap_or(0);
    let mut procfs = Host::open(host.options().clone());
    if let Err(e) = procfs.open_snapshots(Backend::Procfs, &Groups::default()) {
        line("procfs", format!("unreadable: {e}"));
        return Err(());
    }
    let processes = host.list_pids().map(|p| p.len()).unwrap_or(0);
    line("tasks", format!("{processes} processes, {threads} threads"));

    let stat_us = crate::bench::median(
        (0..21)
            .map(|_| {
                let t = Instant::now();
                let _ = host.read_proc_stat();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect(),
    );
    line(
        "/proc/stat",
        format!("read in {stat_us:.0} µs (median of 21)"),
    );
    if stat_us > SLOW_PROC_STAT_US {
        problems.push(format!(
            "/proc/stat takes {stat_us:.0} µs to read: every sampling tool pays it"
        ));
    }

    let q = Query::new(
        Selector::AllProcesses,
        Groups::of(&[Group::Base, Group::Stat]),
    );
    let t = Instant::now();
    let n = procfs.snapshot(&q).map(|s| s.tasks.len()).unwrap_or(0);
    let elapsed = t.elapsed();
    let per_task = elapsed.as_secs_f64() * 1e6 / n.max(1) as f64;
    line(
        "per task",
        format!(
            "/proc/PID/stat of {n} processes in {:.1} ms: {per_task:.1} µs per process",
            elapsed.as_secs_f64() * 1e3
        ),
    );
    if per_task > SLOW_PER_TASK_US {
        problems.push(format!("reading /proc costs {per_task:.0} µs per process"));
    }
    Ok(())
}

/// Which backend `ps` and `top` will use.
fn backends(host: &Host, root: bool, bpf_loaded: bool, problems: &mut Problems) {
    let ps_groups = tasksnap_model::Groups::of(&[Group::Cmdline]);
    let mut ps = Host::open(host.options().clone());
    match ps.open_snapshots(Backend::Auto, &ps_groups) {
        Ok(()) => line("ps backend", ps.report().why),
        Err(e) => {
            line("ps backend", format!("none: {e}"));
            problems.push("no backend".into());
        }
    }
    line(
        "top backend",
        if bpf_loaded {
            "bpf: a live view uses the iterator whenever it loads (RUNQ%, DISK%, wait reasons)"
                .to_string()
        } else {
            format!(
                "procfs: RUNQ% from schedstat, no DISK% or wait reasons (they need BPF as root){}",
                if root { "" } else { "; not root" }
            )
        },
    );
}
