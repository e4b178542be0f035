//! `tasksnap`: process and thread observability for busy Linux hosts.
//!
//! The binary is glue: each subcommand lives in its own module and returns an exit code.
//! `ps` takes procps-style arguments verbatim (`tasksnap ps aux`, `tasksnap ps -eLf`), so it
//! bypasses clap and parses them itself.

/// `println!` for the report commands, through [`output::line`]: a reader that went away
/// (`tasksnap doctor | head`) ends the program quietly with status 0, any other write error
/// with a message and status 1.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: a message that cannot be written (stderr on a full disk or
/// closed) is dropped, through [`output::warn_line`].
macro_rules! warn {
    ($($arg:tt)*) => {
        $crate::output::warn_line(format_args!($($arg)*))
    };
}

mod bench;
mod cgroups;
mod doctor;
mod dump;
mod input;
mod outfile;
mod output;
mod pin;
mod ps;
mod record;
mod recording;
mod report;
mod serve;
mod signals;
mod states;
mod top;
mod when;

use std::ffi::OsString;
use std::process::ExitCode;

const USAGE: &str = "\
tasksnap: process and thread observability for busy Linux hosts

Usage: tasksnap <COMMAND> [ARGS...]

Commands:
  ps       list processes (procps-ng compatible options: -ef, aux, -eLf, -o ..., --forest)
  states   per thread, % of each interval running, waiting for a CPU, sleeping, in D,
           stopped, and why (exact with BPF as root; -p PID, --processes, --json,
           --flamegraph FILE.svg; see tasksnap states --help)
  bench    the task_diag article's table on this machine: raw /proc reads, the procfs and
           BPF collectors (--spawn N starts N processes first, --json for scripts)
  top      a live view of processes and threads that stays light at 100,000 tasks (-b for
           procps top -b's batch output)
  record   record every task, thread, thread-state total and system figure to a directory
           every interval (--dir DIR --interval 10); read it back with ps/top/states
           --replay DIR and dump
  dump     a recording as csv, json, parquet or openmetrics (--dir DIR --format F)
  report   a recording's window as one self-contained HTML page of charts, top processes
           and the moments worth looking at (--dir DIR --from T --to T -o report.html)
  cgroups  the host's cgroups (v2, v1) with their own counters: CPU%, throttling, quota,
           memory, limit, OOM kills, processes, CPU pressure (-i SECONDS, --output json|csv)
  serve    a Prometheus exporter: per-group CPU, time by thread state, D-state reasons,
           memory, I/O (--listen 127.0.0.1:8275 --interval 15 --group-by comm|user|cgroup|exe,
           --config process-exporter.yml; see tasksnap serve --help)
  pin      keep the BPF programs loaded between runs (root; saves 35-50 ms per run)
  unpin    remove what `pin` left
  doctor   what this host offers (BPF, BTF, privileges, hidepid, delay accounting) and what
           reading /proc costs here; exit code 1 when something is wrong

Options:
  -h, --help     print this help
  -V, --version  print the version
";

/// One malloc arena for the whole process, grown in large steps. The reader threads allocate
/// a little per task; with glibc's default per-thread arenas each arena grows a page at a time
/// with one mprotect(2) per step, which at 50,000 tasks is as many system calls as the reads.
/// (Large buffers stay mmap-backed: keeping them on the heap saved `top` its 5,000 page faults
/// a second at 50,000 tasks but raised its peak RSS from 71 to 97 MB for under 1% of a CPU.)
fn tune_malloc() {
    // SAFETY: mallopt only changes allocator parameters; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
    }
}

fn main() -> ExitCode {
    tune_malloc();
    let args: Vec<OsString> = std::env::args_os().collect();
    let cmd = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    let known = [
        "ps", "doctor", "bench", "top", "pin", "unpin", "states", "record", "serve", "dump",
        "report", "cgroups",
    ];
    output::set_command(known.contains(&cmd).then_some(cmd));
    match cmd {
        "ps" => ps::main(&args[2..]),
        "doctor" => no_arguments(&args[2..], doctor::main),
        "bench" => bench::main(&args[2..]),
        "top" => top::main(&args[2..]),
        "pin" => no_arguments(&args[2..], pin::pin),
        "unpin" => no_arguments(&args[2..], pin::unpin),
        "states" => states::main(&args[2..]),
        "record" => record::main(&args[2..]),
        "serve" => serve::main(&args[2..]),
        "dump" => dump::main(&args[2..]),
        "report" => report::main(&args[2..]),
        "cgroups" => cgroups::main(&args[2..]),
        "-V" | "--version" => output::print(&format!("tasksnap {}\n", env!("CARGO_PKG_VERSION"))),
        "-h" | "--help" | "help" => output::print(USAGE),
        "" => {
            warn!("{}", USAGE.trim_end());
            ExitCode::from(2)
        }
        other => {
            warn!("tasksnap: unknown command '{other}'\n");
            warn!("{}", USAGE.trim_end());
            ExitCode::from(2)
        }
    }
}

/// Runs a command that takes no arguments but `-h`/`--help`; anything else is a usage error
/// (exit 2) rather than silently ignored.
fn no_arguments(rest: &[OsString], run: fn() -> ExitCode) -> ExitCode {
    match rest.first().map(|a| a.to_string_lossy()) {
        None => run(),
        Some(a) if a == "-h" || a == "--help" => output::print(&format!(
            "Usage: {} (takes no arguments)\n",
            output::command()
        )),
        Some(a) => {
            warn!(
                "{}: unexpected argument '{a}' (it takes none; see tasksnap --help)",
                output::command()
            );
            ExitCode::from(2)
        }
    }
}
