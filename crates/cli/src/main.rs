//! `tasksnap`: process and thread observability for busy Linux hosts.
//!
//! The binary is glue: each subcommand lives in its own module and returns an exit code.
//! `ps` takes procps-style arguments verbatim (`tasksnap ps aux`, `tasksnap ps -eLf`), so it
//! bypasses clap and parses them itself.

/// `println!` for the report commands: a reader that went away (`tasksnap doctor | head`) ends
/// the program quietly with status 0 instead of a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
        }
    }};
}

mod bench;
mod doctor;
mod pin;
mod ps;
mod states;
mod top;

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
    match cmd {
        "ps" => ps::main(&args[2..]),
        "doctor" => doctor::main(),
        "bench" => bench::main(&args[2..]),
        "top" => top::main(&args[2..]),
        "pin" => pin::pin(),
        "unpin" => pin::unpin(),
        "states" => states::main(&args[2..]),
        "-V" | "--version" => {
            println!("tasksnap {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        "" => {
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
        other => {
            eprintln!("tasksnap: unknown command '{other}'\n");
            eprint!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
