//! Standard output for every command: what a failed write means is decided here, once.
//!
//! - A reader that went away (EPIPE: `tasksnap ps | head`) ends the program quietly with
//!   status 0, as ripgrep and procps do.
//! - Any other write error (a full disk, `>/dev/full`) is a message on stderr and status 1,
//!   as procps's "ps: write error".
//! - A closed standard output (`>&-`) is a write error too. Rust's runtime puts /dev/null
//!   on a closed descriptor 0, 1 or 2 before `main` (so that no file opened later takes
//!   their place), which would make the listing vanish with status 0; a constructor that
//!   runs before the runtime notes that descriptor 1 was closed, and every write through
//!   [`stdout`] then fails with EBADF.
//!
//! Commands write through [`stdout`] (a checked handle), [`print`] (whole texts such as
//! help), the `say!` macro (report lines), and map their errors to an exit code with
//! [`exit_code`].

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The command's name in messages ("tasksnap ps").
static COMMAND: OnceLock<String> = OnceLock::new();
/// Descriptor 1 was closed when the program started.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The name messages start with: "tasksnap" or "tasksnap ps".
pub fn command() -> &'static str {
    COMMAND.get().map(String::as_str).unwrap_or("tasksnap")
}

/// Sets the name messages start with (`sub` is the subcommand, if any).
pub fn set_command(sub: Option<&str>) {
    let _ = COMMAND.set(match sub {
        Some(s) => format!("tasksnap {s}"),
        None => "tasksnap".to_string(),
    });
}

/// Notes whether descriptor 1 was closed when the process started. It runs from
/// `.init_array`, before Rust's runtime: that runtime puts /dev/null on a closed 0, 1 or 2
/// before `main` (so nothing opened later lands on them), which would hide a closed stdout
/// from any check made in `main`.
extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD only queries the descriptor's flags.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

/// The error every write to a closed stdout gives.
fn closed_error() -> io::Error {
    io::Error::from_raw_os_error(libc::EBADF)
}

/// Standard output, locked, failing every write when it was closed at start.
#[derive(Debug)]
pub struct Stdout {
    inner: io::StdoutLock<'static>,
    closed: bool,
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Err(closed_error());
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Err(closed_error());
        }
        self.inner.flush()
    }
}

/// Standard output, checked (see the module header).
pub fn stdout() -> Stdout {
    Stdout {
        inner: io::stdout().lock(),
        closed: STDOUT_CLOSED.load(Ordering::Relaxed),
    }
}

/// Standard output behind a buffer of `capacity` bytes, its errors marked as write errors
/// (so that [`exit_code`] tells them from failures to collect and says "write error").
pub fn buffered(capacity: usize) -> Checked<io::BufWriter<Stdout>> {
    Checked(io::BufWriter::with_capacity(capacity, stdout()))
}

/// A writer whose errors are marked as [`WriteError`]s.
#[derive(Debug)]
pub struct Checked<W: Write>(pub W);

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(mark)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(mark)
    }
}

/// Wraps a write error so that [`exit_code`] reports it as one (the kind is kept, so a
/// closed pipe is still seen as one).
fn mark(e: io::Error) -> io::Error {
    let kind = e.kind();
    io::Error::new(kind, WriteError(e))
}

/// Whether an error chain ends in a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The write error in an error chain, if there is one: a [`WriteError`], on its own or
/// inside an `io::Error` (as a writer's errors carry it).
fn write_error(e: &anyhow::Error) -> Option<&io::Error> {
    e.chain().find_map(|c| {
        c.downcast_ref::<WriteError>()
            .or_else(|| {
                c.downcast_ref::<io::Error>()
                    .and_then(|io| io.get_ref())
                    .and_then(|inner| inner.downcast_ref::<WriteError>())
            })
            .map(|w| &w.0)
    })
}

/// The exit code for a failed write: 0 for a closed pipe, else a message and 1.
pub fn write_failed(e: &io::Error) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    warn_line(format_args!("{}: write error: {e}", command()));
    ExitCode::from(1)
}

/// The exit code of a command's result: its own code, 0 for a closed pipe, else the error on
/// stderr and 1.
pub fn exit_code(r: anyhow::Result<ExitCode>) -> ExitCode {
    match r {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            match write_error(&e) {
                Some(io) => warn_line(format_args!("{}: write error: {io}", command())),
                None => warn_line(format_args!("{}: {e:#}", command())),
            }
            ExitCode::from(1)
        }
    }
}

/// Marks an I/O error as one of writing the output (so the message says "write error").
#[derive(Debug)]
pub struct WriteError(pub io::Error);

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "write error: {}", self.0)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Writes one line to stderr for `warn!`. A failed write is ignored: there is nowhere left
/// to say it (`eprintln!` would panic, e.g. with stderr on a full disk).
pub fn warn_line(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Writes a whole text (help, version) to stdout; the exit code says how that went.
pub fn print(text: &str) -> ExitCode {
    let mut out = stdout();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => write_failed(&e),
    }
}

/// Writes one line for `say!`; a failed write ends the program (0 for a closed pipe, else a
/// message and 1), since a report cut short must not look complete.
pub fn line(args: fmt::Arguments<'_>) {
    let mut out = stdout();
    let r = out.write_fmt(args).and_then(|()| {
        out.write_all(b"\n")?;
        out.flush()
    });
    if let Err(e) = r {
        let code = if e.kind() == io::ErrorKind::BrokenPipe {
            0
        } else {
            warn_line(format_args!("{}: write error: {e}", command()));
            1
        };
        std::process::exit(code);
    }
}

/// Parses a subcommand's arguments (`name`: `tasksnap states`) with clap; on `--help` or an
/// error, clap's output is printed and the exit code returned (0 for help, 2 for usage
/// errors). Help goes to stdout through [`print`], so that a failed write is a "write error"
/// and status 1 (clap's own `print` ignores write errors: `--help >/dev/full` exited 0 having
/// printed nothing).
pub fn parse_args<A: clap::Parser>(name: &str, argv: &[std::ffi::OsString]) -> Result<A, ExitCode> {
    let it = std::iter::once(std::ffi::OsString::from(name)).chain(argv.iter().cloned());
    A::try_parse_from(it).map_err(|e| {
        let text = e.render().to_string();
        if e.use_stderr() {
            warn_line(format_args!("{}", text.trim_end()));
            ExitCode::from(e.exit_code().clamp(0, 255) as u8)
        } else {
            print(&text)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_success_and_other_write_errors_are_failures() {
        let pipe = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(exit_code(Err(pipe)), ExitCode::SUCCESS);
        let full = anyhow::Error::from(WriteError(io::Error::from_raw_os_error(libc::ENOSPC)));
        assert_eq!(exit_code(Err(full)), ExitCode::from(1));
        let wrapped = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("printing the listing");
        assert_eq!(exit_code(Err(wrapped)), ExitCode::SUCCESS);
        let inside = io::Error::other(WriteError(io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(write_error(&anyhow::Error::from(inside)).is_some());
        let plain = anyhow::Error::from(io::Error::from_raw_os_error(libc::ENOENT));
        assert!(write_error(&plain).is_none());
    }
}
