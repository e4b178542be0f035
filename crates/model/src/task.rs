//! One task (a thread or a whole process) and its attribute groups.
//!
//! Times are nanoseconds; start times are nanoseconds since boot on the kernel's boot-time
//! clock (its `start_boottime`), the same for a reader in a time namespace, whose /proc shows
//! them moved by its offset (`tasksnap_collect::clock` takes it off). Identities cut them to
//! whole clock ticks (`1e9 / CLK_TCK`), as /proc gives them.

use serde::{Deserialize, Serialize};

/// A task's name: inline up to 16 bytes (every user task's comm fits; only kernel threads'
/// long names spill to the heap), so that a snapshot of 50,000 tasks does not make 50,000
/// allocations for names.
pub type Comm = smallvec::SmallVec<[u8; 16]>;

/// A [`Comm`] (de)serialized as bytes, not as a sequence of numbers: one call, not one per
/// byte, in a binary format (the query service's answers carry one per task); the same JSON.
mod comm_bytes {
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(c: &super::Comm, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(c)
    }

    struct CommVisitor;

    impl<'de> Visitor<'de> for CommVisitor {
        type Value = super::Comm;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a comm's bytes")
        }

        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<super::Comm, E> {
            Ok(super::Comm::from_slice(v))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<super::Comm, A::Error> {
            let mut c = super::Comm::new();
            while let Some(b) = seq.next_element::<u8>()? {
                c.push(b);
            }
            Ok(c)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<super::Comm, D::Error> {
        d.deserialize_bytes(CommVisitor)
    }
}

/// `PF_KTHREAD` from include/linux/sched.h: the task is a kernel thread. Checked instead of
/// "empty cmdline", which a user process can also have.
pub const PF_KTHREAD: u32 = 0x0020_0000;

/// `SCHED_OTHER` (a.k.a. `SCHED_NORMAL`) scheduling policy number.
pub const SCHED_OTHER: u32 = 0;
/// `SCHED_BATCH` scheduling policy number.
pub const SCHED_BATCH: u32 = 3;

/// The identity of a task. A pid alone is not an identity: pids are reused, so two tasks with
/// the same `tid` but a different `start_time_ns` are different tasks.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct TaskId {
    /// Thread group id: the process id.
    pub tgid: i32,
    /// Thread id; equal to `tgid` for a process's main thread.
    pub tid: i32,
    /// Start time, ns since boot.
    pub start_time_ns: u64,
}

impl TaskId {
    /// True when this is the main thread of its process (what `ps` lists by default).
    pub fn is_leader(&self) -> bool {
        self.tgid == self.tid
    }
}

/// The scheduler state letter as /proc shows it (`fs/proc/array.c: task_state_array`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TaskState {
    /// `R`: running or runnable.
    Running,
    /// `S`: interruptible sleep.
    #[default]
    Sleeping,
    /// `D`: uninterruptible sleep.
    DiskSleep,
    /// `T`: stopped by a signal.
    Stopped,
    /// `t`: stopped by a tracer.
    TracingStop,
    /// `X`: dead (should never be seen).
    Dead,
    /// `Z`: zombie, exited and not yet reaped.
    Zombie,
    /// `P`: parked kernel thread.
    Parked,
    /// `I`: idle kernel thread (TASK_IDLE, not counted in load).
    Idle,
    /// Any other letter a future kernel may report.
    Other(u8),
}

impl TaskState {
    /// Parses the state letter of /proc/PID/stat.
    pub fn from_letter(c: u8) -> TaskState {
        match c {
            b'R' => TaskState::Running,
            b'S' => TaskState::Sleeping,
            b'D' => TaskState::DiskSleep,
            b'T' => TaskState::Stopped,
            b't' => TaskState::TracingStop,
            b'X' => TaskState::Dead,
            b'Z' => TaskState::Zombie,
            b'P' => TaskState::Parked,
            b'I' => TaskState::Idle,
            other => TaskState::Other(other),
        }
    }

    /// The letter /proc and ps show.
    pub fn letter(self) -> u8 {
        match self {
            TaskState::Running => b'R',
            TaskState::Sleeping => b'S',
            TaskState::DiskSleep => b'D',
            TaskState::Stopped => b'T',
            TaskState::TracingStop => b't',
            TaskState::Dead => b'X',
            TaskState::Zombie => b'Z',
            TaskState::Parked => b'P',
            TaskState::Idle => b'I',
            TaskState::Other(c) => c,
        }
    }
}

/// Identity and scheduling basics: everything /proc/PID/stat gives cheaply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Base {
    /// Scheduler state.
    pub state: TaskState,
    /// Parent process id (of the thread group).
    pub ppid: i32,
    /// Process group id.
    pub pgid: i32,
    /// Session id.
    pub sid: i32,
    /// Controlling terminal as the kernel encodes it (`tty_nr`: major in bits 8-15 and 20-31,
    /// minor in bits 0-7 and 12-19); 0 when there is none.
    pub tty_nr: u32,
    /// Foreground process group of the controlling terminal, -1 when none.
    pub tpgid: i32,
    /// Kernel `PF_*` flags of the task.
    pub flags: u32,
    /// The task's comm (at most 15 bytes), raw bytes: it may hold any byte but NUL.
    #[serde(with = "comm_bytes")]
    pub comm: Comm,
    /// True for kernel threads (`PF_KTHREAD`).
    pub kthread: bool,
    /// Nice value, -20..19.
    pub nice: i32,
    /// Kernel priority as /proc shows it (`prio - MAX_RT_PRIO`: -100..39).
    pub priority: i32,
    /// Scheduling policy (`SCHED_*` number).
    pub policy: u32,
    /// Real-time priority, 0 for non-RT policies.
    pub rt_priority: u32,
    /// Threads in the thread group.
    pub num_threads: u32,
    /// CPU the task last ran on.
    pub processor: i32,
}

/// Credentials (/proc/PID/status `Uid`/`Gid`/`Groups`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cred {
    /// Real user id.
    pub ruid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Saved set-user id.
    pub suid: u32,
    /// Filesystem user id.
    pub fsuid: u32,
    /// Real group id.
    pub rgid: u32,
    /// Effective group id.
    pub egid: u32,
    /// Saved set-group id.
    pub sgid: u32,
    /// Filesystem group id.
    pub fsgid: u32,
    /// Supplementary groups; `None` when only the effective ids were read (cheap path).
    pub groups: Option<Vec<u32>>,
    /// True when only `euid`/`egid` are exact (read from the owner of /proc/PID) and the other
    /// ids are copies of them.
    pub effective_only: bool,
}

impl Cred {
    /// What the cheap path knows (`effective_only`): the owner of /proc/PID, `uid` and `gid`,
    /// copied into every id; no supplementary groups.
    #[inline]
    pub fn from_owner(uid: u32, gid: u32) -> Cred {
        Cred {
            ruid: uid,
            euid: uid,
            suid: uid,
            fsuid: uid,
            rgid: gid,
            egid: gid,
            sgid: gid,
            fsgid: gid,
            groups: None,
            effective_only: true,
        }
    }
}

/// CPU times, faults and start time (/proc/PID/stat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Stat {
    /// User CPU time, ns (for a process: summed over its threads, as /proc shows it).
    pub utime_ns: u64,
    /// System CPU time, ns.
    pub stime_ns: u64,
    /// User CPU time of reaped children, ns.
    pub cutime_ns: u64,
    /// System CPU time of reaped children, ns.
    pub cstime_ns: u64,
    /// Minor page faults.
    pub minflt: u64,
    /// Major page faults.
    pub majflt: u64,
    /// Minor faults of reaped children.
    pub cminflt: u64,
    /// Major faults of reaped children.
    pub cmajflt: u64,
    /// Start time, ns since boot.
    pub start_time_ns: u64,
    /// Virtual memory size in bytes (stat's `vsize`; also in [`Mem`]).
    pub vsize_bytes: u64,
    /// Resident set in bytes (stat's `rss`: since Linux 6.2 an approximate read of per-CPU
    /// counters; `Mem::rss_bytes` is exact).
    pub rss_bytes: u64,
    /// Swapped-out bytes of the address space (status's `VmSwap`, the same per-CPU counter
    /// read the same way as `rss_bytes`): the BPF backend reads it with the rest; `None`
    /// from /proc/PID/stat, which does not have it (`Mem::swap_bytes` reads status).
    pub swap_bytes: Option<u64>,
}

/// Memory (/proc/PID/statm, and `VmSwap` when status is read anyway).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mem {
    /// Total virtual size, bytes.
    pub vsize_bytes: u64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
    /// Resident shared (file-backed + shmem) bytes.
    pub shared_bytes: u64,
    /// Text (code) bytes.
    pub text_bytes: u64,
    /// Data + stack bytes.
    pub data_bytes: u64,
    /// Swapped-out bytes, when known.
    pub swap_bytes: Option<u64>,
    /// Locked resident bytes (`VmLck`), when known.
    pub locked_bytes: Option<u64>,
}

/// I/O counters (/proc/PID/io; readable only by the owner or root).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Io {
    /// Bytes read through read()-like syscalls.
    pub rchar_bytes: u64,
    /// Bytes written through write()-like syscalls.
    pub wchar_bytes: u64,
    /// Read syscalls.
    pub syscr: u64,
    /// Write syscalls.
    pub syscw: u64,
    /// Bytes fetched from storage.
    pub read_bytes: u64,
    /// Bytes sent to storage.
    pub write_bytes: u64,
    /// Written bytes later truncated away.
    pub cancelled_write_bytes: u64,
}

/// Scheduler accounting (/proc/PID/schedstat and status's context switches).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sched {
    /// Time spent on a CPU, ns (`se.sum_exec_runtime`).
    pub on_cpu_ns: u64,
    /// Time spent runnable waiting for a CPU, ns (`sched_info.run_delay`).
    pub run_delay_ns: u64,
    /// Number of timeslices run on a CPU (`sched_info.pcount`).
    pub timeslices: u64,
    /// Voluntary context switches, when known.
    pub voluntary_switches: Option<u64>,
    /// Involuntary context switches, when known.
    pub involuntary_switches: Option<u64>,
}

/// Signal masks as /proc/PID/status shows them (`task_sig()`, fs/proc/array.c): bit `n - 1`
/// stands for signal `n`. All zero for a task whose signal handlers are gone (fully exited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Signals {
    /// `SigPnd`: signals pending for this thread alone.
    pub pending: u64,
    /// `ShdPnd`: signals pending for the whole thread group.
    pub shared_pending: u64,
    /// `SigBlk`: this thread's blocked mask.
    pub blocked: u64,
    /// `SigIgn`: signals whose handler is `SIG_IGN` (shared by the thread group).
    pub ignored: u64,
    /// `SigCgt`: signals with a handler other than `SIG_IGN` and `SIG_DFL`.
    pub caught: u64,
}

/// Address-space layout and the RSS limit (/proc/PID/stat fields 25-30, `do_task_stat()`,
/// fs/proc/array.c), as the reader may see them: without ptrace access to the task the kernel
/// shows 1 for both code addresses and 0 for the stack start, and it shows 0 for `kstkesp`
/// and `kstkeip` unless the task is exiting or dumping core. All 0 without an mm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Layout {
    /// Soft RSS limit (`RLIMIT_RSS`), bytes; `u64::MAX` for unlimited.
    pub rsslim_bytes: u64,
    /// Start of the text segment.
    pub start_code: u64,
    /// End of the text segment.
    pub end_code: u64,
    /// Bottom (start) of the main thread's stack.
    pub start_stack: u64,
    /// Saved stack pointer.
    pub kstkesp: u64,
    /// Saved instruction pointer.
    pub kstkeip: u64,
}

/// The namespace links of /proc/PID/ns in procps's order (library/namespace.c `ns_names`):
/// the indices of [`Extra::ns`].
pub const NS_NAMES: [&str; 8] = ["cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"];

/// The rarely asked for facts of a task, each from a file of its own and read only when its
/// group is asked for (`Group::Ns`, `OomScore`, `OomScoreAdj`, `Autogroup`, `Loginuid`,
/// `smaps`, `label`, `login`). Each is `None` when not asked for or not readable: then ps prints procps's value
/// for an unreadable file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extra {
    /// Inode numbers of the task's namespaces (/proc/PID/ns/NAME followed), in [`NS_NAMES`]
    /// order; 0 for a link that cannot be followed (hidden from the caller by ptrace rules,
    /// or no such namespace: a zombie keeps only its pid and user namespaces).
    pub ns: Option<[u64; 8]>,
    /// /proc/PID/oom_score.
    pub oom_score: Option<i32>,
    /// /proc/PID/oom_score_adj.
    pub oom_score_adj: Option<i32>,
    /// /proc/PID/autogroup as procps reads it: (id, nice), id -1 when the line does not
    /// match. A thread's own directory has no such file.
    pub autogroup: Option<(i32, i32)>,
    /// /proc/PID/loginuid as a C `int` (the unset id 4294967295 is -1).
    pub loginuid: Option<i32>,
    /// /proc/PID/smaps_rollup: `Pss` and `Private_Clean + Private_Dirty` (USS), kB.
    pub smaps_kb: Option<(u64, u64)>,
    /// The process's security label (/proc/TGID/attr/current, its printable part: the
    /// process's, also on a thread's row, as procps reads it), `Group::Label`.
    #[serde(with = "serde_bytes")]
    pub label: Option<Vec<u8>>,
    /// What sd-login says of the task (unit, slice, session, seat...), `Group::Login`:
    /// derived from its cgroup path by the collector.
    pub login: Option<Box<crate::Login>>,
}

/// One task and whichever attribute groups were asked for and readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Identity.
    pub id: TaskId,
    /// Base group.
    pub base: Option<Base>,
    /// Credentials.
    pub cred: Option<Cred>,
    /// CPU times and faults.
    pub stat: Option<Stat>,
    /// Memory (boxed, like `io`).
    pub mem: Option<Box<Mem>>,
    /// Command line arguments, raw (NUL-separated as in /proc/PID/cmdline). Empty for kernel
    /// threads and zombies. `None` when not asked for or unreadable.
    #[serde(with = "serde_bytes")]
    pub cmdline: Option<Vec<u8>>,
    /// Memory locked with mlock (`VmLck`), when asked for (`Group::Locked`).
    pub locked_bytes: Option<u64>,
    /// True when the cmdline read was abandoned because the task's mmap lock was held too long.
    pub cmdline_timed_out: bool,
    /// Path of the executable (/proc/PID/exe), when asked for and readable.
    #[serde(with = "serde_bytes")]
    pub exe: Option<Vec<u8>>,
    /// I/O counters (boxed: rarely asked for, and a snapshot holds tens of thousands of tasks).
    pub io: Option<Box<Io>>,
    /// Scheduler accounting (boxed, like `io`).
    pub sched: Option<Box<Sched>>,
    /// Kernel function the task sleeps in (/proc/PID/wchan); empty when running, `None` when
    /// not asked for or hidden.
    pub wchan: Option<String>,
    /// Control-group membership as the kernel lists it in /proc/PID/cgroup (one
    /// `hierarchy-ID:controllers:path` line per hierarchy, cgroups(7)), parsed once by the
    /// collector (boxed: rarely asked for). `None` when not asked for or unreadable.
    pub cgroup: Option<Box<crate::Cgroup>>,
    /// Signal masks, when asked for (`Group::Signals`; boxed: rarely asked for).
    pub signals: Option<Box<Signals>>,
    /// Code and stack addresses and the RSS limit, when asked for (`Group::Layout`).
    pub layout: Option<Box<Layout>>,
    /// Open file descriptors: the size stat(2) gives `/proc/PID/fd` (Linux 6.2+; 0 before,
    /// and for a task without a file table). `None` when not asked for or unreadable.
    pub fds: Option<u32>,
    /// Environment, raw (NUL-separated as in /proc/PID/environ; boxed twice so that it costs
    /// a Task 8 bytes: rarely asked for).
    /// `None` when not asked for or unreadable (another user's, for a caller without ptrace
    /// read access).
    pub environ: Option<Box<Vec<u8>>>,
    /// Namespaces, OOM scores, autogroup, login uid, PSS/USS (boxed: rarely asked for).
    pub extra: Option<Box<Extra>>,
}

impl Task {
    /// A task with only its identity.
    pub fn new(id: TaskId) -> Task {
        Task {
            id,
            base: None,
            cred: None,
            stat: None,
            mem: None,
            cmdline: None,
            locked_bytes: None,
            cmdline_timed_out: false,
            exe: None,
            io: None,
            sched: None,
            wchan: None,
            cgroup: None,
            signals: None,
            layout: None,
            fds: None,
            environ: None,
            extra: None,
        }
    }

    /// The extra facts, made empty first when there are none yet.
    pub fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// The comm as text, invalid UTF-8 replaced.
    pub fn comm_lossy(&self) -> String {
        self.base
            .as_ref()
            .map(|b| String::from_utf8_lossy(&b.comm).into_owned())
            .unwrap_or_default()
    }

    /// The memory this task holds: its own size, what its boxes and vectors hold (by
    /// capacity), and the text of its cgroup (shared between a process's threads, counted for
    /// each). What the query service charges for a pass's tasks, and its estimate of a row's
    /// encoded size (which is smaller for every task but one of huge numbers in every field:
    /// an absent group costs one byte encoded and its whole slot here).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        fn boxed<T>(b: &Option<Box<T>>) -> usize {
            b.as_ref().map_or(0, |_| size_of::<T>())
        }
        fn bytes(v: &Option<Vec<u8>>) -> usize {
            v.as_ref().map_or(0, |v| v.capacity())
        }
        let login = self
            .extra
            .as_ref()
            .and_then(|x| x.login.as_deref())
            .map_or(0, |l| {
                size_of::<crate::Login>()
                    + [
                        &l.unit,
                        &l.user_unit,
                        &l.slice,
                        &l.session,
                        &l.machine,
                        &l.seat,
                    ]
                    .into_iter()
                    .map(bytes)
                    .sum::<usize>()
            });
        size_of::<Task>()
            + boxed(&self.mem)
            + bytes(&self.cmdline)
            + bytes(&self.exe)
            + boxed(&self.io)
            + boxed(&self.sched)
            + self.wchan.as_ref().map_or(0, |w| w.capacity())
            + self.cgroup.as_ref().map_or(0, |c| {
                size_of::<crate::Cgroup>() + c.raw().len() + 2 * size_of::<usize>()
            })
            + boxed(&self.signals)
            + boxed(&self.layout)
            + self
                .environ
                .as_ref()
                .map_or(0, |e| size_of::<Vec<u8>>() + e.capacity())
            + boxed(&self.extra)
            + self.extra.as_ref().map_or(0, |x| bytes(&x.label))
            + login
            + self
                .cred
                .as_ref()
                .and_then(|c| c.groups.as_ref())
                .map_or(0, |g| g.capacity() * size_of::<u32>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_letters_round_trip() {
        for c in [b'R', b'S', b'D', b'T', b't', b'X', b'Z', b'P', b'I', b'W'] {
            assert_eq!(TaskState::from_letter(c).letter(), c);
        }
        assert_eq!(TaskState::from_letter(b'W'), TaskState::Other(b'W'));
    }

    #[test]
    fn a_task_stays_small() {
        // 50,000 tasks per snapshot: every byte here is 50 kB of peak memory. (416 since
        // `Stat::swap_bytes`: 16 bytes a task, 0.8 MB at 50,000. 448 since `signals`,
        // `layout`, `environ` and `extra` (namespaces, OOM scores, autogroup, login uid,
        // PSS/USS): four boxed groups, 32 bytes; `fds` fits in padding.)
        assert!(
            std::mem::size_of::<Task>() <= 448,
            "{}",
            std::mem::size_of::<Task>()
        );
    }

    #[test]
    fn identity_includes_start_time() {
        let a = TaskId {
            tgid: 7,
            tid: 7,
            start_time_ns: 10,
        };
        let b = TaskId {
            tgid: 7,
            tid: 7,
            start_time_ns: 20,
        };
        assert_ne!(a, b, "a reused pid must not compare equal to the old task");
        assert!(a.is_leader());
    }
}
