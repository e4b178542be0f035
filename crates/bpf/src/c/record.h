/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of the records the task iterator writes and user space reads
 * (crates/collect/src/bpf/decode.rs). The Rust side does not restate this layout: libbpf-cargo
 * generates its types from this file's BTF (see the layout anchors in task_iter.bpf.c).
 *
 * A record is a ts_hdr followed by one block per group bit set in ts_hdr.groups, in the
 * order of the bits (BASE, CRED, STAT, SCHED, IO, KNAME, MEM, SIG, NS). Every block is 8-byte
 * aligned and fixed-size.
 */
#ifndef TASKSNAP_RECORD_H
#define TASKSNAP_RECORD_H

#define TS_GROUP_BASE  (1u << 0)
#define TS_GROUP_CRED  (1u << 1)
#define TS_GROUP_STAT  (1u << 2)
#define TS_GROUP_SCHED (1u << 3)
#define TS_GROUP_IO    (1u << 4)
/* Set by the program itself, on kernel threads' records when BASE is asked for. */
#define TS_GROUP_KNAME (1u << 5)
#define TS_GROUP_MEM   (1u << 6)
#define TS_GROUP_SIG   (1u << 8)
#define TS_GROUP_NS    (1u << 9)
/* Written only by dump_task_rare (task_iter.bpf.c), never by dump_task or the walk. */
#define TS_RARE_GROUPS (TS_GROUP_SIG | TS_GROUP_NS)

struct ts_hdr {
	__u32 tid;		/* pid in the reader's pid namespace */
	__u32 tgid;		/* tgid in the reader's pid namespace */
	__u64 start_boottime_ns;
	__u32 groups;		/* TS_GROUP_* blocks that follow */
	__u32 global_tid;	/* task->pid, the pid in the initial namespace */
	__u32 ns_level;		/* level of the reader's pid namespace the pids are from */
	__u32 pad;
};

struct ts_base {
	__u32 ppid;
	__u32 pgid;
	__u32 sid;
	__u32 tty_nr;		/* new_encode_dev(tty) as /proc/PID/stat */
	__s32 tpgid;
	__u32 flags;		/* PF_* */
	__u32 state;		/* task->__state */
	__u32 exit_state;
	__s32 prio;
	__s32 static_prio;
	__u32 policy;
	__u32 rt_priority;
	__s32 nr_threads;
	__s32 cpu;
	char comm[16];
	__u64 locked_vm_pages;	/* mm->locked_vm: VmLck, the STAT column's L */
	/*
	 * task->cgroups: which css_set the task is in. Tasks with the same one have the same
	 * /proc/PID/cgroup (proc_cgroup_show() prints task_css_set()'s cgroups), so user space
	 * reads that file once per distinct value. An address: it never leaves the collector.
	 */
	__u64 css_set_key;
};

struct ts_cred {
	__u32 uid, euid, suid, fsuid;
	__u32 gid, egid, sgid, fsgid;
};

struct ts_stat {
	__u64 utime_ns;		/* raw tick-sampled, this thread */
	__u64 stime_ns;
	__u64 sum_exec_runtime_ns;
	__u64 prev_utime_ns;	/* task->prev_cputime: what /proc last reported for the thread */
	__u64 prev_stime_ns;
	__u64 sig_utime_ns;	/* signal: threads that already exited */
	__u64 sig_stime_ns;
	__u64 sig_sum_sched_runtime_ns;
	__u64 sig_prev_utime_ns;	/* signal->prev_cputime: last reported for the process */
	__u64 sig_prev_stime_ns;
	__u64 cutime_ns;
	__u64 cstime_ns;
	__u64 min_flt, maj_flt, cmin_flt, cmaj_flt;
	__u64 sig_min_flt, sig_maj_flt;
	__u64 total_vm_pages;
	__u64 rss_pages;	/* approximate, as /proc/PID/stat's rss */
	__u64 swap_pages;	/* swap entries (MM_SWAPENTS), as status's VmSwap */
};

struct ts_sched {
	__u64 sum_exec_runtime_ns;
	__u64 run_delay_ns;
	__u64 pcount;
	__u64 nvcsw;
	__u64 nivcsw;
};

/*
 * What /proc/PID/statm is made of (fs/proc/task_mmu.c task_statm()), for user space to derive
 * it as the kernel does: size total_vm; resident file + anon + shmem; shared file + shmem;
 * text from start_code/end_code (page-aligned); data data_vm + stack_vm. The counters are
 * exact: each per-CPU counter's central value plus every CPU's delta, as percpu_counter_sum()
 * adds them for statm on Linux 6.16+ (compat.h); user space clamps each at 0 as
 * percpu_counter_sum_positive() does. All zero for a task without an mm (kernel thread,
 * zombie), as statm prints.
 */
#define TS_MEM_EXACT (1u << 0)	/* the counters are exact sums; else read statm from /proc */

struct ts_mem {
	__u64 total_vm;
	__u64 data_vm;
	__u64 stack_vm;
	__u64 start_code;
	__u64 end_code;
	__s64 file;		/* MM_FILEPAGES */
	__s64 anon;		/* MM_ANONPAGES */
	__s64 shmem;		/* MM_SHMEMPAGES */
	__s64 swap;		/* MM_SWAPENTS */
	__u32 flags;		/* TS_MEM_* */
	__u32 cpus;		/* CPUs whose deltas were added */
};

/*
 * The signal masks of /proc/PID/status (fs/proc/array.c task_sig()): bit n-1 is signal n
 * (64 signals: one word of sigset_t). ignored and caught come from the handlers as
 * collect_sigign_sigcatch() sorts them (SIG_IGN; anything but SIG_DFL). All zero for a task
 * without signal handlers (released), as lock_task_sighand() failing leaves them.
 */
struct ts_sig {
	__u64 pending;		/* task->pending: SigPnd */
	__u64 shared_pending;	/* task->signal->shared_pending: ShdPnd */
	__u64 blocked;		/* task->blocked: SigBlk */
	__u64 ignored;		/* SigIgn */
	__u64 caught;		/* SigCgt */
};

/*
 * What /proc/PID/ns/NAME (its inode number), /proc/PID/oom_score_adj and /proc/PID/loginuid
 * show, read as fs/proc does. inum[] is in procps's order: cgroup ipc mnt net pid time user
 * uts; 0 where the link would not resolve (no nsproxy: a zombie keeps only its pid and user
 * namespaces; no time namespace before Linux 5.6). Who may see them is user space's business:
 * the links need ptrace read access, which this backend (root only) has as /proc gives it.
 */
#define TS_NS_LOGINUID (1u << 0)	/* loginuid is there (CONFIG_AUDIT: else no file) */

struct ts_ns {
	__u32 inum[8];		/* ns_common.inum of each namespace */
	__s32 oom_score_adj;	/* signal->oom_score_adj */
	__u32 loginuid;		/* task->loginuid, AUDIT_UID_UNSET (4294967295) when unset */
	__u32 flags;		/* TS_NS_* */
	__u32 pad;
};

/*
 * What one reader asks of a pass: user space stores it in the reader_cfg map under the
 * thread id that will read() the iterator, because the program runs in that thread's read()
 * calls. Keyed per reader, several readers (one process's shard threads, or several tasksnap
 * processes sharing the pinned iterator) never see each other's settings.
 */
struct ts_reader_cfg {
	__u32 groups;		/* TS_GROUP_* blocks to write */
	__u32 shard;		/* write only tasks with tgid % nshards == shard ... */
	__u32 nshards;		/* ... when nshards > 1 */
	__u32 pad;
};

/* task_io_accounting, this thread's and what exited threads left in the signal struct:
 * /proc/PID/io is signal->ioac plus every live thread's ioac (do_io_accounting()), and
 * /proc/PID/task/TID/io is the thread's own. */
struct ts_io {
	__u64 rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes;
	__u64 sig_rchar, sig_wchar, sig_syscr, sig_syscw, sig_read_bytes, sig_write_bytes,
		sig_cancelled_write_bytes;
};

/* A kernel thread's name as /proc/PID/stat shows it (fs/proc/array.c proc_task_name()): a
 * workqueue worker's comm followed by '+' (running a work item) or '-' and the description
 * of its latest work (wq_worker_comm()); another kernel thread's full name when it has one
 * past the 15 bytes of comm (kthread->full_name, Linux 6.6); else its comm. */
#define TS_KNAME_MAX 64

struct ts_kname {
	char name[TS_KNAME_MAX];
};

/* The command-line pass (iter.s/task): one ts_cmd_hdr per process, followed by len bytes of
 * its argument area, NULs included, exactly as /proc/PID/cmdline returns it. */
#define TS_CMDLINE_MAX 4096
#define TS_CMD_UNREAD     (1u << 0)	/* too long, unreadable, or setproctitle: read /proc */

struct ts_cmd_hdr {
	__u32 tgid;
	__u32 len;
	__u32 flags;
	__u32 pad;
};

/*
 * The walk (SEC("syscall") walk_tasks): records written into an arena, a mmap-able array of
 * TS_CHUNK_BYTES chunks the reader created. Each chunk holds whole records, ended by a header
 * whose groups is 0 (or by the chunk's end). A reader's shard writes chunks
 * [first_chunk, first_chunk + nchunks).
 */
#define TS_CHUNK_BYTES 65536
/* The largest record: every block. */
#define TS_RECORD_MAX (sizeof(struct ts_hdr) + sizeof(struct ts_base) + sizeof(struct ts_cred) + \
		       sizeof(struct ts_stat) + sizeof(struct ts_sched) + sizeof(struct ts_io) + \
		       sizeof(struct ts_kname) + sizeof(struct ts_mem) + sizeof(struct ts_sig) + \
		       sizeof(struct ts_ns))

/*
 * What a walk writes (ts_walk_args.mode). A live view (top) asks for every record once and
 * then, each refresh, only for the processes that ran since its last pass began (see
 * proc_ran() in task_iter.bpf.c): a process that did not run kept its records. When the
 * walk's count of tasks says some went away, a roll (only their tids) tells which.
 */
/* Walk slots (arenas a reader holds at once, arena.rs SLOTS) and shards of one pass
 * (programs.rs pass_shards()) the walk's scratch has room for: a walk outside them reads
 * no command lines (the reader copies them all). */
#define TS_WALK_SLOTS      16
#define TS_WALK_MAX_SHARDS 8

#define TS_WALK_ALL     0	/* a record for every task */
#define TS_WALK_CHANGED 1	/* records for every thread of a process that ran */
#define TS_WALK_ROLL    2	/* each task's tid (a __u32), no record */

struct ts_walk_args {
	__u32 key;		/* in: the reader's arena, in the arenas map */
	__u32 groups;		/* in: TS_GROUP_* */
	__u32 shard;		/* in: tasks with tgid % nshards == shard ... */
	__u32 nshards;		/* in: ... when nshards > 1 */
	__u32 first_chunk;	/* in: this shard's chunks */
	__u32 nchunks;
	__u32 records;		/* out: records written */
	__u32 overflow;		/* out: tasks not written because the chunks were full */
	__u32 cur_chunk;	/* out: the last chunk written */
	__u32 cur_off;		/* out: bytes used in it */
	__u32 mode;		/* in: TS_WALK_* */
	__u32 tasks;		/* out: tasks walked (in the namespace and shard) */
	__u32 emitting;		/* scratch: the current process's records are written */
	__u32 emit_tgid;	/* scratch: that process */
	__u64 since_ns;		/* in (TS_WALK_CHANGED): when the reader's last pass began */
	__u64 started_ns;	/* out: when this one began (CLOCK_MONOTONIC) */
	__u64 window_ns;	/* scratch: now - since_ns, with a margin */
	/* Command lines (TS_WALK_ALL, args_nchunks > 0, x86-64): each process's argument area,
	 * read without the mmap lock as copy_cmdlines does, written as that program's output
	 * (ts_cmd_hdr and bytes) into this shard's chunks [args_first_chunk, + args_nchunks).
	 * A process it cannot read that way, or that does not fit, gets no line: the reader
	 * copies those by pid list. */
	__u32 args_first_chunk;	/* in */
	__u32 args_nchunks;	/* in: 0 for no command lines */
	__u32 args_records;	/* out: lines written */
	__u32 args_lockless;	/* out: of them, read (not flagged) */
	__u32 args_cur_chunk;	/* out: the last chunk written */
	__u32 args_cur_off;	/* scratch: bytes used in it */
	__u32 dmap_levels;	/* out: paging levels of the direct map, 0 when none was found */
	/* walk_listed (task_iter.bpf.c): records for every thread of the processes whose pids
	 * (initial namespace, a __u32 each, TS_PIDS_PER_CHUNK a chunk) are in chunks from
	 * req_chunk; `tasks` counts the processes found. */
	__u32 req_chunk;	/* in */
	__u32 req_n;		/* in: how many pids */
};

#define TS_PIDS_PER_CHUNK (TS_CHUNK_BYTES / 4)

/*
 * The command-line copy (SEC("syscall") copy_cmdlines): the reader writes one ts_cmd_req per
 * process into chunks of its arena (TS_CMD_REQS_PER_CHUNK each, packed), and the program
 * writes, into the reader's output chunks, a ts_cmd_hdr and its bytes (padded to 8) per
 * request, in request order. A chunk's records end with a header whose tgid is 0 (or at the
 * chunk's end). A run stops early when its output chunks are full; `next` says where the
 * next run must start.
 */
struct ts_cmd_req {
	__u32 pid;		/* the process's pid in the initial pid namespace (global_tid) */
	__u32 tgid;		/* its number as the reader's records give it (copied to the output) */
	__u64 start_boottime_ns;	/* the process the reader saw: another one with that pid is not read */
};

#define TS_CMD_REQS_PER_CHUNK (TS_CHUNK_BYTES / 16)

struct ts_cmd_args {
	__u32 key;		/* in: the reader's arena, in the arenas map */
	__u32 req_chunk;	/* in: first chunk of the requests */
	__u32 req_first;	/* in: first request of this run */
	__u32 req_end;		/* in: one past its last */
	__u32 first_chunk;	/* in: the output chunks */
	__u32 nchunks;
	__u32 next;		/* out: first request not done (req_end when all were) */
	__u32 records;		/* out: records written */
	__u32 cur_chunk;	/* scratch: output chunk being written */
	__u32 cur_off;		/* scratch: bytes used in it */
	__u32 lockless;		/* out: lines read without the mmap lock (x86-64) */
	__u32 locked_only;	/* in: 1 to copy every line through the mmap lock */
	__u32 dmap_levels;	/* out: paging levels of the direct map found, 0 when none */
};

#endif
