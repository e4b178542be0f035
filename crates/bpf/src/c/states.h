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
#define ST_THROTTLED 6	/* runnable, but its cgroup (or an ancestor) used its CPU bandwidth
			 * quota for the period: off the run queue until the period's refill */
#define ST_NSTATES  7
#define ST_SLOTS    8	/* array length: a power of two, so an index can be masked */

#define ST_RUNLOG   64	/* runs kept per CPU for naming what held a waiter's CPU */
#define ST_HOLDERS  2	/* holders named per run-queue wait */
#define ST_HOLDER_MIN_NS 200000	/* shorter run-queue waits name no holder */
#define ST_STACK_DEPTH 48	/* frames kept per off-CPU stack (deeper ones are cut) */

/* Stack ids at and above this name a stack of the `seed_stacks` hash (a wait that began
 * before tracking did, its stack taken by the iterator), below it one of the `stacks` map
 * (taken at a switch-out, by bpf_get_stackid: ids below its max_entries). */
#define ST_SEED_STACK_IDS 0x40000000

/* st_rec.flags */
#define ST_F_EXITED  (1u << 0)	/* written at sched_process_exit: the thread's final totals */
#define ST_F_SEEDED  (1u << 1)	/* current state began before tracking did (seeded from
				 * task->__state by the iterator, which took its stack) */
#define ST_F_KTHREAD (1u << 2)	/* PF_KTHREAD */
#define ST_F_DRAINED (1u << 3)	/* written by drain_states: a thread that changed since the
				 * reader's last drain */

/* Per-thread accounting, in task storage, written at the thread's switch-outs only (see
 * states.bpf.c) and read by the iterator, which retries while seq is odd. */
struct st_acct {
	__u64 ns[ST_SLOTS];	/* accumulated per state, up to the last switch-out */
	__u64 since_ns;		/* rq->clock at the last switch-out (or at seeding) */
	__u64 run_delay_ns;	/* task->sched_info.run_delay then */
	__u32 seq;		/* odd while a switch-out is being written */
	__u32 state;		/* ST_* it went off the CPU in (ST_RUNNING: seeded on a CPU) */
	__s32 stackid;		/* kernel stack of that wait, or -1 (ST_SEED_STACK_IDS and up:
				 * a seeded wait's, in seed_stacks) */
	__u32 flags;		/* ST_F_SEEDED */
	__u32 pad;
	__u64 listed;		/* 1 while the thread waits in the `dirty` queue (set and
				 * cleared with atomic operations, outside seq; 64 bits: clang
				 * 14's BPF target has no 32-bit atomics below -mcpu=v3) */
	/* With state ST_THROTTLED: the cfs_rq it was throttled on (its group's on that CPU) and
	 * that cfs_rq's throttle clocks then, which tell when the throttle ended (see
	 * throttled_part in states.bpf.c). Addresses as numbers: only ever probe-read. */
	__u64 thr_cfs_rq;
	__u64 thr_tg;		/* thr_cfs_rq->tg then: the cfs_rq is still that group's */
	__u64 thr_clock0;	/* thr_cfs_rq->throttled_clock_self */
	__u64 thr_self0;	/* thr_cfs_rq->throttled_clock_self_time */
};

/* One entry of the `dirty` queue: a thread whose state changed (it left a CPU or was woken)
 * since the reader's last drain. `gen` is 0 for an event; a drain that puts back a thread
 * still on a CPU or a run queue tags it with its own generation, and stops when it meets
 * its own tag again (every older entry has been taken by then). */
struct st_dirty {
	__u32 tid;			/* task->pid (global) */
	__u32 gen;
	__u64 start_boottime_ns;	/* with tid, the thread */
};

/* The context of one drain_states run (in and out). */
struct st_drain_args {
	__u64 now_ns;		/* in: the drain's "now" (0 on its first run: the program takes
				 * its CPU's rq->clock and writes it back); the threads that
				 * were not drained are in the same state up to it */
	__u32 gen;		/* in: this drain's generation (never 0) */
	__u32 records;		/* out: records written to the ring buffer by this run */
	__u32 done;		/* out: 1 when the queue holds no older entry (else run again
				 * after emptying the ring buffer) */
	__u32 pad;
};

/* One thread's totals, up to now_ns: written by the iterator (one per thread) and to the ring
 * buffer at exit. tid and tgid are the numbers of the reader's pid namespace (what its /proc
 * and ps show); global_tid is task->pid, the initial namespace's, which keys st_why_key. */
struct st_rec {
	__u32 tid;
	__u32 tgid;
	__u64 start_boottime_ns;	/* with tid, the thread's identity (pids are reused) */
	__u64 now_ns;			/* scheduler clock (rq->clock) the totals are taken at */
	__u64 ns[ST_SLOTS];		/* accumulated per state, the ongoing ones up to now_ns */
	__u64 pending_why_ns;		/* blocked time of the last wait not yet in the why hash */
	__u32 wait_state;		/* ST_* of that wait */
	__u32 cur_state;		/* ST_* the thread is in at now_ns */
	__s32 stackid;			/* that wait's stack, or -1 */
	__u32 flags;			/* ST_F_* */
	char comm[16];
	__u32 global_tid;		/* task->pid */
	__u32 pad;
};

/* Key of the off-CPU time per (thread, state, stack): values are accumulated ns of blocked
 * time, added at the switch-out that follows the wait (waits not yet added are reported by
 * the iterator in st_rec.pending_why_ns). */
struct st_why_key {
	__u64 start_boottime_ns;	/* with tid, the thread (tids are reused) */
	__u32 tid;			/* task->pid (st_rec.global_tid) */
	__u32 state;
	__s32 stackid;
	__u32 pad;
};

/* One run on a CPU, as the per-CPU run log keeps it. */
struct st_run {
	__u64 from_ns;			/* its arrival (sched_info.last_arrival) */
	__u64 to_ns;			/* its switch-out (rq->clock) */
	__u64 start_boottime_ns;	/* with tid, the thread that ran */
	__u32 tid;			/* task->pid */
	__u32 pad;
	char comm[16];
};

/* The last ST_RUNLOG runs on one CPU: a ring, `next` the slot written next. */
struct st_runlog {
	__u64 next;
	struct st_run run[ST_RUNLOG];
};

/* Key of the time a thread waited for a CPU while another ran there: the `held` hash. */
struct st_held_key {
	__u64 start_boottime_ns;	/* with tid, the waiter */
	__u64 holder_start_boottime_ns;	/* with holder_tid, the thread that ran */
	__u32 tid;			/* the waiter's task->pid */
	__u32 holder_tid;		/* the holder's task->pid */
};

struct st_held {
	__u64 ns;		/* accumulated overlap of the waiter's run-queue waits and the
				 * holder's runs on the CPU the waiter then ran on */
	char comm[16];		/* the holder's, at its last run seen */
};

/* A kernel stack, innermost frame first, zeros after the last one: a value of the
 * `seed_stacks` hash. */
struct st_stack {
	__u64 ip[ST_STACK_DEPTH];
};

#endif
