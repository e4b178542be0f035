/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of an exit record, shared by the kernel side (exits.bpf.c) and user
 * space (crates/collect/src/exits/source.rs). The Rust side does not restate this layout:
 * libbpf-cargo generates its type from this file's BTF (the layout anchor in exits.bpf.c).
 */
#ifndef TASKSNAP_EXITS_H
#define TASKSNAP_EXITS_H

#define EX_ARGS_MAX	512	/* command-line bytes kept (a power of two: masked) */
#define EX_THREADS_MAX	256	/* live threads whose counters are summed at exit */

/* ex_rec.flags */
#define EX_F_NO_MM		(1u << 0)	/* no memory at exit: no command line, no RSS */
#define EX_F_ARGS_FAULT		(1u << 1)	/* the command line's pages could not be read */
#define EX_F_ARGS_CUT		(1u << 2)	/* longer than EX_ARGS_MAX: cut */
#define EX_F_THREADS_CUT	(1u << 3)	/* more than EX_THREADS_MAX live threads: short */
#define EX_F_KTHREAD		(1u << 4)	/* PF_KTHREAD */
#define EX_F_GROUP_EXIT		(1u << 5)	/* SIGNAL_GROUP_EXIT: status is group_exit_code */

/* One exited process (thread group), sent when its last thread exits. Counters are the
 * group's: what the kernel folded into signal_struct from threads already released, plus
 * the live (exiting) threads' own. Times are ns; the CPU split (utime/stime) is the raw
 * one, tick-sampled on most kernels: user space scales it to runtime_ns as the kernel
 * does for /proc and rusage (cputime_adjust()). */
struct ex_rec {
	__u32 tgid;			/* in the reader's pid namespace */
	__u32 ppid;			/* real parent's tgid there (0: outside it) */
	__u64 start_boottime_ns;	/* the group leader's */
	__u64 exit_boottime_ns;		/* bpf_ktime_get_boot_ns() at the tracepoint */
	__u32 ruid, euid, rgid, egid;
	__u32 status;			/* the wait status the parent will get */
	__u32 flags;			/* EX_F_* */
	__u32 threads_summed;		/* live threads added to the signal_struct totals */
	__u32 args_len;			/* bytes of args[] used */
	__u64 runtime_ns;		/* se.sum_exec_runtime, the group's */
	__u64 utime_ns, stime_ns;	/* raw split */
	__u64 min_flt, maj_flt;
	__u64 nvcsw, nivcsw;
	__u64 maxrss_pages;		/* peak RSS, pages (ru_maxrss is this in KiB) */
	__u64 rchar, wchar, syscr, syscw;
	__u64 read_bytes, write_bytes, cancelled_write_bytes;
	__u32 global_tgid;		/* task->tgid, the initial namespace's */
	__u32 pad;
	char comm[16];			/* the group leader's */
	char args[EX_ARGS_MAX];		/* mm->arg_start.. (NUL-separated) */
};

#endif
