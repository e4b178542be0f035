/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one definition of what the thread-state accounting shares between the kernel side
 * (states.bpf.c) and user space (mod.rs). The Rust side does not restate these layouts:
 * libbpf-cargo generates its types from this file's BTF (see the layout anchors in
 * states.bpf.c).
 */
#ifndef TASKSNAP_STATES_H
#define TASKSNAP_STATES_H

/* The states time is charged to. Index into st_acct.ns[] and st_rec.ns[]. */
#define ST_RUNNING  0	/* on a CPU */
#define ST_RUNNABLE 1	/* on a run queue, waiting for a CPU (woken or preempted) */
#define ST_SLEEPING 2	/* TASK_INTERRUPTIBLE (S) */
#define ST_DISK     3	/* TASK_UNINTERRUPTIBLE without TASK_NOLOAD (D) */
#define ST_STOPPED  4	/* __TASK_STOPPED, __TASK_TRACED (T, t) */
#define ST_OTHER    5	/* parked, idle kernel threads (TASK_IDLE), frozen, dead */
#define ST_NSTATES  6
#define ST_SLOTS    8	/* array length: a power of two, so an index can be masked */

/* st_rec.flags */
#define ST_F_EXITED  (1u << 0)	/* written at sched_process_exit: the thread's final totals */
#define ST_F_SEEDED  (1u << 1)	/* current state began before tracking did (seeded from
				 * task->__state by the iterator): no off-CPU stack for it */
#define ST_F_KTHREAD (1u << 2)	/* PF_KTHREAD */

/* Per-thread accounting, in task storage. Written by the scheduler tracepoints of the
 * thread's own transitions; read by the iterator, which retries while seq is odd. */
struct st_acct {
	__u64 ns[ST_SLOTS];	/* accumulated per state, up to since_ns */
	__u64 since_ns;		/* bpf_ktime_get_ns() of the last transition */
	__u32 seq;		/* odd while a transition is being written */
	__u32 state;		/* ST_* the thread is in since since_ns */
	__s32 stackid;		/* kernel stack of the current off-CPU wait, or -1 */
	__u32 flags;		/* ST_F_SEEDED */
	__u64 why_since_ns;	/* the current wait's time up to here is in the why hash */
};

/* One thread's totals, up to now_ns: written by the iterator (one per thread) and to the ring
 * buffer at exit. */
struct st_rec {
	__u32 tid;
	__u32 tgid;
	__u64 start_boottime_ns;	/* with tid, the thread's identity (pids are reused) */
	__u64 now_ns;			/* bpf_ktime_get_ns() the totals are taken at */
	__u64 ns[ST_SLOTS];		/* accumulated per state, the ongoing one up to now_ns */
	__u64 since_ns;			/* start of the ongoing state */
	__u32 state;			/* ongoing ST_* */
	__s32 stackid;			/* its off-CPU stack, or -1 */
	__u32 flags;			/* ST_F_* */
	__u32 pad;
	char comm[16];
};

/* Key of the off-CPU time per (thread, state, stack): values are accumulated ns, added when
 * the wait ends and, for waits still going on, by every iterator pass up to its moment. */
struct st_why_key {
	__u32 tid;
	__u32 state;
	__s32 stackid;
	__u32 pad;
};

#define ST_STACK_DEPTH 48	/* frames kept per off-CPU stack (deeper ones are cut) */

#endif
