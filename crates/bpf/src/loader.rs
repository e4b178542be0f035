//! Loading BPF programs, for both objects: who may ([`privileged`]), whether the process has
//! the descriptors for it ([`enough_descriptors`]), libbpf's own log ([`quiet_libbpf`]),
//! opening and loading a skeleton with verifier statistics on request ([`open_and_load`],
//! `TASKSNAP_VERIFIER_STATS=1`), and iterator files ([`iter_file`], [`process_iter_link`]).
//! Every refusal is an [`Unavailable`] with its reason, which callers show (`-v`, `doctor`).

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::OpenObject;

/// Why BPF cannot be used here; its text is for the user (`-v`, `doctor`, errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// This build has no BPF programs (no clang, or `TASKSNAP_NO_BPF` at build time).
    #[error("this tasksnap was built without {what} ({why})")]
    NotBuilt {
        /// What is missing ("the BPF backend", "BPF").
        what: &'static str,
        /// Why ("clang was missing at build time").
        why: &'static str,
    },
    /// The caller is not root; says why that matters for these programs.
    #[error("not root: {0}")]
    NotRoot(&'static str),
    /// The open-files limit leaves too few descriptors for loading and a pass.
    #[error(
        "it needs about {need} open files and the open-files limit (RLIMIT_NOFILE {limit}, \
         {open} in use) leaves {free}: raise it with `ulimit -n`"
    )]
    Descriptors {
        /// Descriptors needed.
        need: u64,
        /// RLIMIT_NOFILE.
        limit: u64,
        /// Open below the limit now.
        open: u64,
        /// What the limit leaves.
        free: u64,
    },
    /// Anything else that failed (the kernel refused a program, bpffs, a pin...): what and
    /// why.
    #[error("{0}")]
    Failed(String),
}

/// Whether the caller may load (or open pinned) BPF programs: root only.
///
/// Root, or CAP_BPF and CAP_PERFMON (Linux 5.8), could load them; only root is accepted: a
/// task iterator, like the accounting's tracepoints, sees every task regardless of procfs's
/// permission checks (hidepid, ptrace access to other users' command lines), so a non-root
/// caller holding the capabilities would see more than /proc shows it. Such callers get the
/// /proc paths. `why` completes "not root: ..." for the caller's programs.
pub fn privileged(why: &'static str) -> Result<(), Unavailable> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Unavailable::NotRoot(why));
    }
    Ok(())
}

/// Stops libbpf from printing its own diagnostics on stderr (a terminal UI would be drawn
/// over); failures still come back as errors with their reasons.
pub fn quiet_libbpf() {
    libbpf_rs::set_print(None);
}

/// Whether this process can open `need` more descriptors under its open-files limit `limit`
/// (RLIMIT_NOFILE). Without them a pass would fail half-way, or libbpf would (EMFILE, with
/// its own messages on stderr): the caller then reports BPF unavailable, with the reason.
pub fn enough_descriptors(need: u64, limit: u64) -> Result<(), Unavailable> {
    // Descriptors take the lowest free numbers below the limit: those open below it are the
    // ones that count (the listing's own descriptor is not among them once it is closed).
    let open = match std::fs::read_dir("/proc/self/fd") {
        Ok(d) => d
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
            .filter(|&fd| fd < limit)
            .count()
            .saturating_sub(1) as u64,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOMEM)
            ) =>
        {
            limit
        }
        // No /proc/self: nothing to go by; the pass says so if it runs out.
        Err(_) => return Ok(()),
    };
    let free = limit.saturating_sub(open);
    if free < need {
        return Err(Unavailable::Descriptors {
            need,
            limit,
            open,
            free,
        });
    }
    Ok(())
}

/// Opens the object of `builder`, lets `configure` set it up (which programs load, read-only
/// data), and loads it. A load failure is `refused(error)`'s message.
///
/// The skeleton borrows its object for its whole life, and a loaded set lives as long as
/// the process, so the object (a few hundred bytes) is leaked on purpose.
///
/// With `TASKSNAP_VERIFIER_STATS` set, each program's verification time, instructions and
/// states go to stderr, one line each (docs/bpf.md, "What loading costs").
pub fn open_and_load<B>(
    builder: B,
    configure: impl FnOnce(&mut B::Output),
    refused: impl FnOnce(libbpf_rs::Error) -> String,
) -> Result<<B::Output as OpenSkel<'static>>::Output, Unavailable>
where
    B: SkelBuilder<'static>,
{
    let object: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = builder
        .open(object)
        .map_err(|e| Unavailable::Failed(format!("cannot open the BPF object: {e}")))?;
    configure(&mut open);
    if std::env::var_os("TASKSNAP_VERIFIER_STATS").is_some() {
        for mut p in open.open_object_mut().progs_mut() {
            p.set_log_level(4); // BPF_LOG_STATS
        }
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, print_verifier_stats)));
    }
    open.load().map_err(|e| Unavailable::Failed(refused(e)))
}

/// A libbpf message with a program's verifier log (BPF_LOG_STATS), on one line of stderr.
fn print_verifier_stats(_: libbpf_rs::PrintLevel, msg: String) {
    if let Some(line) = verifier_stats_line(&msg) {
        eprintln!("{line}");
    }
}

/// "tasksnap: verifier: dump_task 1.4 ms, 2552 instructions processed, 119 states" from
/// libbpf's message with a program's load log; None for any other message.
fn verifier_stats_line(msg: &str) -> Option<String> {
    let name = msg.split_once("prog '")?.1.split_once('\'')?.0;
    let after = |key: &str| -> Option<u64> {
        msg.split_once(key)?
            .1
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let us = after("verification time ")?;
    let insns = after("processed ")?;
    let states = after("total_states ")?;
    Some(format!(
        "tasksnap: verifier: {name} {:.1} ms, {insns} instructions processed, {states} states",
        us as f64 / 1e3
    ))
}

/// libbpf's convention: a descriptor, or a negative errno.
pub fn owned(fd: i32) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: libbpf returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Runs a syscall program (`SEC("syscall")`) once in this thread with `args` as its context,
/// in and out: the kernel copies the context in before the run and back after it
/// (bpf_prog_test_run_syscall() refuses ctx_out). A negative return of the program is its
/// error.
pub fn run_syscall<T>(prog: &impl AsRawFd, args: &mut T) -> io::Result<()> {
    let size = std::mem::size_of::<T>();
    let ctx = (args as *mut T).cast::<libc::c_void>();
    let mut opts = libbpf_sys::bpf_test_run_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
        ctx_in: ctx.cast_const(),
        ctx_size_in: size as u32,
        ..Default::default()
    };
    // SAFETY: the program fd is valid for the call; ctx_in points at `args`, `size` writable
    // bytes that outlive the call.
    let r = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if r < 0 {
        return Err(io::Error::from_raw_os_error(-r));
    }
    if (opts.retval as i32) < 0 {
        return Err(io::Error::from_raw_os_error(-(opts.retval as i32)));
    }
    Ok(())
}

/// A fresh iterator file of the iterator link `link` (read it to its end for one pass).
pub fn iter_file(link: &impl AsRawFd) -> io::Result<File> {
    // SAFETY: bpf_iter_create takes a link descriptor, valid for the call.
    let fd = unsafe { libbpf_sys::bpf_iter_create(link.as_raw_fd()) };
    owned(fd).map(File::from)
}

/// An iterator link of the task iterator program `prog` over the threads of one process only
/// (`bpf_iter_link_info.task.pid`, Linux 6.1): the kernel then visits that thread group
/// instead of every task.
pub fn process_iter_link(prog: &impl AsRawFd, pid: i32) -> io::Result<OwnedFd> {
    let mut info = libbpf_sys::bpf_iter_link_info::default();
    info.task.pid = pid as u32;
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        iter_info: &mut info,
        iter_info_len: std::mem::size_of::<libbpf_sys::bpf_iter_link_info>() as _,
        ..Default::default()
    };
    // SAFETY: the program fd is valid for the call; `opts` and `info` outlive it and the
    // kernel copies what it needs.
    let fd = unsafe {
        libbpf_sys::bpf_link_create(prog.as_raw_fd(), 0, libbpf_sys::BPF_TRACE_ITER, &opts)
    };
    owned(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_stats_from_a_libbpf_message() {
        // As libbpf 1.5 printed it for dump_task on Linux 6.18.
        let msg = "libbpf: prog 'dump_task': -- BEGIN PROG LOAD LOG --\nverification time 1397 \
                   usec\nstack depth 232\nprocessed 2552 insns (limit 1000000) \
                   max_states_per_insn 5 total_states 119 peak_states 115 mark_read 0\n-- END \
                   PROG LOAD LOG --\n";
        assert_eq!(
            verifier_stats_line(msg).as_deref(),
            Some("tasksnap: verifier: dump_task 1.4 ms, 2552 instructions processed, 119 states")
        );
        assert_eq!(verifier_stats_line("libbpf: loaded kernel BTF\n"), None);
        assert_eq!(verifier_stats_line("libbpf: prog 'x': bad"), None);
    }

    #[test]
    fn a_budget_larger_than_the_limit_is_refused_with_the_reason() {
        let e = enough_descriptors(1 << 20, 64).expect_err("64 descriptors cannot hold 2^20");
        assert!(
            matches!(e, Unavailable::Descriptors { limit: 64, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("RLIMIT_NOFILE 64"), "{e}");
        assert!(enough_descriptors(1, 1 << 20).is_ok());
    }

    #[test]
    fn built_says_why_not() {
        if let Err(why) = crate::built("BPF") {
            assert!(why.to_string().contains("build time"), "{why}");
        }
    }
}
