//! What is known of a process once it has exited: one [`Exit`] per process (not per thread),
//! with the whole group's final figures, as `/proc/PID/stat`, `status` and `io` would have
//! said just before it went, and as its parent's `wait4` rusage says after. Collectors fill it
//! (`tasksnap-collect`'s exit source: a BPF program at `sched_process_exit`, or the kernel's
//! taskstats exit notifications without BPF); this module
//! only defines it, decodes the wait status, and gives it as a [`Task`] ([`Exit::task`]) whose
//! fields of the model's table ([`Exit::FIELDS`]) a front end reads as it reads a live
//! task's.

use crate::fields::{self, Field};
use crate::{Base, Cred, Io, Sched, Stat, Task, TaskId};

/// How a process ended, decoded from its wait status (what `wait4` hands its parent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// It called exit (or returned from main) with this code (0-255).
    Code(u8),
    /// A signal ended it; `core_dumped` when it left a core.
    Signal {
        /// The signal number.
        signal: u8,
        /// WCOREDUMP.
        core_dumped: bool,
    },
}

impl ExitReason {
    /// Decodes a wait status word as `WIFEXITED`/`WEXITSTATUS`/`WTERMSIG`/`WCOREDUMP` do
    /// (include/uapi/linux/wait.h conventions: low 7 bits the signal, 0x80 the core flag,
    /// bits 8-15 the exit code).
    pub fn from_wait_status(status: u32) -> ExitReason {
        let signal = (status & 0x7f) as u8;
        if signal == 0 {
            ExitReason::Code(((status >> 8) & 0xff) as u8)
        } else {
            ExitReason::Signal {
                signal,
                core_dumped: status & 0x80 != 0,
            }
        }
    }

    /// The shell's view: the code, or 128 + the signal.
    pub fn shell_status(&self) -> u16 {
        match *self {
            ExitReason::Code(c) => u16::from(c),
            ExitReason::Signal { signal, .. } => 128 + u16::from(signal),
        }
    }
}

/// One process that exited, with its final figures (the whole thread group's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exit {
    /// The process: `tid` is the tgid (the group leader's identity, start time included, as a
    /// live process's main thread has in a snapshot); numbers are the reader's pid namespace's.
    pub id: TaskId,
    /// Parent's process id in the reader's namespace (0 when the parent is outside it).
    pub ppid: i32,
    /// Real user id.
    pub ruid: u32,
    /// Effective user id (what `ps -o uid` shows).
    pub euid: u32,
    /// Real group id.
    pub rgid: u32,
    /// Effective group id.
    pub egid: u32,
    /// The group leader's comm (at most 15 bytes, no NUL).
    pub comm: Vec<u8>,
    /// The command line as its memory held it at exit (`/proc/PID/cmdline`'s bytes: arguments
    /// separated by NUL), at most [`Exit::CMDLINE_MAX_BYTES`]; empty for a kernel thread or
    /// when it could not be read (see `cmdline_missing`).
    pub cmdline: Vec<u8>,
    /// Why `cmdline` is empty or short, if it is.
    pub cmdline_missing: Option<CmdlineMissing>,
    /// Start time, ns since boot, to the nanosecond (`id.start_time_ns` is this cut to a whole
    /// clock tick, as every task identity is, so it compares equal to the live process's).
    pub start_time_ns: u64,
    /// When it exited (its last thread reached the exit tracepoint), ns since boot.
    pub exit_time_ns: u64,
    /// The raw wait status (see [`ExitReason::from_wait_status`]).
    pub wait_status: u32,
    /// CPU time in user mode, ns (the group's; split of `cpu_ns` as the kernel splits it for
    /// `/proc/PID/stat` and rusage: tick samples scaled to the precise runtime).
    pub utime_ns: u64,
    /// CPU time in kernel mode, ns.
    pub stime_ns: u64,
    /// Precise CPU time (the scheduler's sum_exec_runtime over the group), ns.
    pub cpu_ns: u64,
    /// Peak resident set, bytes (`ru_maxrss`).
    pub peak_rss_bytes: u64,
    /// Minor page faults.
    pub minflt: u64,
    /// Major page faults.
    pub majflt: u64,
    /// Voluntary context switches.
    pub voluntary_ctxt_switches: u64,
    /// Involuntary context switches.
    pub nonvoluntary_ctxt_switches: u64,
    /// Bytes read through read-like syscalls (`/proc/PID/io` rchar).
    pub rchar_bytes: u64,
    /// Bytes written through write-like syscalls (wchar).
    pub wchar_bytes: u64,
    /// Bytes read from storage (read_bytes).
    pub read_bytes: u64,
    /// Bytes written to storage (write_bytes).
    pub write_bytes: u64,
    /// Written bytes whose writeback was cancelled (cancelled_write_bytes).
    pub cancelled_write_bytes: u64,
    /// Threads whose figures were added from their own counters at exit (the others had
    /// already been folded into the group's by the kernel).
    pub threads_summed: u32,
    /// The group had more live threads than the program sums: figures are short.
    pub threads_cut: bool,
    /// A kernel thread.
    pub kernel_thread: bool,
}

/// Why an exit's command line is empty or cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmdlineMissing {
    /// No memory to read it from (a kernel thread, or the memory was already gone).
    NoMemory,
    /// The pages holding it could not be read at exit (not resident).
    Unreadable,
    /// Longer than [`Exit::CMDLINE_MAX_BYTES`]: cut there.
    Cut,
    /// The exit source captures no command lines (taskstats, the source without BPF).
    NotCaptured,
}

impl Exit {
    /// The longest command line kept (the BPF program's buffer, exits.h EX_ARGS_MAX).
    pub const CMDLINE_MAX_BYTES: usize = 512;

    /// How it ended.
    pub fn reason(&self) -> ExitReason {
        ExitReason::from_wait_status(self.wait_status)
    }

    /// The fields of the model's table ([`crate::fields`]) an exit record holds: those
    /// [`Exit::task`] fills from it. The task's other fields are zeros that mean nothing.
    pub const FIELDS: &'static [&'static Field] = &[
        &fields::PID,
        &fields::TID,
        &fields::START_TIME_NS,
        &fields::PPID,
        &fields::COMM,
        &fields::EUID,
        &fields::EGID,
        &fields::RUID,
        &fields::RGID,
        &fields::UTIME_NS,
        &fields::STIME_NS,
        &fields::MINFLT,
        &fields::MAJFLT,
        &fields::CPU_NS,
        &fields::RCHAR_BYTES,
        &fields::WCHAR_BYTES,
        &fields::READ_BYTES,
        &fields::WRITE_BYTES,
        &fields::CANCELLED_WRITE_BYTES,
        &fields::VOLUNTARY_SWITCHES,
        &fields::INVOLUNTARY_SWITCHES,
        &fields::CMDLINE,
    ];

    /// The exited process as a task of the model, so that what reads a live task's fields
    /// reads the final figures the same way: [`Exit::FIELDS`] are the record's (and `kthread`),
    /// every other figure of the groups it fills is zero. The command line is `None` when the
    /// record could not read one (an empty one it read is a kernel thread's).
    pub fn task(&self) -> Task {
        let mut t = Task::new(self.id);
        t.base = Some(Base {
            ppid: self.ppid,
            comm: self.comm.iter().copied().collect(),
            kthread: self.kernel_thread,
            ..Base::default()
        });
        t.cred = Some(Cred {
            ruid: self.ruid,
            euid: self.euid,
            rgid: self.rgid,
            egid: self.egid,
            // Not in the record.
            suid: 0,
            fsuid: 0,
            sgid: 0,
            fsgid: 0,
            groups: None,
            effective_only: false,
        });
        t.stat = Some(Stat {
            utime_ns: self.utime_ns,
            stime_ns: self.stime_ns,
            minflt: self.minflt,
            majflt: self.majflt,
            start_time_ns: self.start_time_ns,
            ..Stat::default()
        });
        t.io = Some(Box::new(Io {
            rchar_bytes: self.rchar_bytes,
            wchar_bytes: self.wchar_bytes,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            cancelled_write_bytes: self.cancelled_write_bytes,
            syscr: 0,
            syscw: 0,
        }));
        t.sched = Some(Box::new(Sched {
            voluntary_switches: Some(self.voluntary_ctxt_switches),
            involuntary_switches: Some(self.nonvoluntary_ctxt_switches),
            on_cpu_ns: 0,
            run_delay_ns: 0,
            timeslices: 0,
        }));
        // An empty command line the record could not read is unknown, not empty.
        t.cmdline = (!self.cmdline.is_empty() || self.cmdline_missing.is_none())
            .then(|| self.cmdline.clone());
        t
    }

    /// The command line's arguments (split at NUL; a trailing NUL ends the last).
    pub fn args(&self) -> Vec<&[u8]> {
        let c = self.cmdline.strip_suffix(&[0]).unwrap_or(&self.cmdline);
        if c.is_empty() {
            return Vec::new();
        }
        c.split(|&b| b == 0).collect()
    }
}

/// What one drain of an exit source returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitBatch {
    /// Processes that exited since the previous drain, in the order the kernel sent them.
    pub exits: Vec<Exit>,
    /// Exit records the kernel could not send since the previous drain (the buffer was
    /// full): those processes are missing from `exits`. From the taskstats source: socket
    /// overruns (each at least one record; the kernel does not say how many) and records
    /// it could not read.
    pub dropped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_status_decodes_like_the_libc_macros() {
        // exit(3): 0x0300; killed by SIGKILL: 9; SIGSEGV with core: 0x8b.
        assert_eq!(ExitReason::from_wait_status(0x0300), ExitReason::Code(3));
        assert_eq!(
            ExitReason::from_wait_status(9),
            ExitReason::Signal {
                signal: 9,
                core_dumped: false
            }
        );
        assert_eq!(
            ExitReason::from_wait_status(0x8b),
            ExitReason::Signal {
                signal: 11,
                core_dumped: true
            }
        );
        assert_eq!(ExitReason::from_wait_status(9).shell_status(), 137);
    }

    /// [`Exit::FIELDS`] are exactly the fields whose values [`Exit::task`] takes from the
    /// record: those that differ between a record of zeros and one of every figure set.
    #[test]
    fn the_fields_an_exit_holds_are_those_its_task_takes_from_it() {
        let full = Exit {
            id: TaskId {
                tgid: 3,
                tid: 3,
                start_time_ns: 40,
            },
            ppid: 1,
            ruid: 2,
            euid: 3,
            rgid: 4,
            egid: 5,
            comm: b"job".to_vec(),
            cmdline: b"job\0-x\0".to_vec(),
            cmdline_missing: None,
            start_time_ns: 41,
            exit_time_ns: 90,
            wait_status: 0x0100,
            utime_ns: 6,
            stime_ns: 7,
            cpu_ns: 13,
            peak_rss_bytes: 8,
            minflt: 9,
            majflt: 10,
            voluntary_ctxt_switches: 11,
            nonvoluntary_ctxt_switches: 12,
            rchar_bytes: 13,
            wchar_bytes: 14,
            read_bytes: 15,
            write_bytes: 16,
            cancelled_write_bytes: 17,
            threads_summed: 1,
            threads_cut: false,
            kernel_thread: false,
        };
        let (zero, full) = (Exit::default().task(), full.task());
        for f in fields::FIELDS {
            let taken = f.value(&zero) != f.value(&full);
            assert_eq!(taken, Exit::FIELDS.contains(&f), "{}", f.name);
        }
        let unread = Exit {
            cmdline_missing: Some(CmdlineMissing::Unreadable),
            ..Exit::default()
        };
        assert_eq!(unread.task().cmdline, None);
        assert_eq!(Exit::default().task().cmdline, Some(Vec::new()));
    }
}
