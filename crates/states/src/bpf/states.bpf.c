// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tasksnap's exact thread-state accounting: scheduler tracepoints (BTF raw tracepoints, no
 * kprobes) charge every transition of every thread to the state it leaves, in task storage
 * (states.h: struct st_acct). A task iterator reads the totals with the ongoing state counted
 * up to the moment of the read, so an interval never misses a wait that has not ended yet;
 * threads that exit leave their final totals in a ring buffer. When a thread blocks in D (and,
 * when asked, in S), its kernel stack is kept, and the time it waits there is added to a hash
 * keyed by (thread, state, stack) when the wait ends.
 *
 * Nothing here filters by process: user space does, and only root loads this object.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "states.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the stack of S waits too (set by user space before load; off by default: most threads
 * of a host sleep most of the time, and their stacks would fill the maps). */
const volatile bool track_sleep = false;

/* What could not be recorded: user space reports these when they are not zero. */
__u64 lost_exits = 0;	/* the ring buffer was full at a thread's exit */
__u64 lost_stacks = 0;	/* the stack map or the why map was full */
__u64 lost_storage = 0;	/* task storage could not be allocated */

/* Layout anchors: never written, they make the shared types part of this object's BTF so
 * that libbpf-cargo generates their Rust definitions from states.h. */
struct st_rec st_rec_layout = {};
struct st_why_key st_why_key_layout = {};
struct st_acct st_acct_layout = {};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct st_acct);
} acct SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ST_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct st_why_key);
	__type(value, __u64);
} why SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} exits SEC(".maps");

/* Task state bits, include/linux/sched.h (values stable since Linux 5.14-6.1; TASK_FROZEN
 * got its own bit in 6.1, commit f5d39b020809). */
#define TASK_RUNNING		0x00000000
#define TASK_INTERRUPTIBLE	0x00000001
#define TASK_UNINTERRUPTIBLE	0x00000002
#define __TASK_STOPPED		0x00000004
#define __TASK_TRACED		0x00000008
#define TASK_NOLOAD		0x00000400
#define TASK_RTLOCK_WAIT	0x00001000
#define PF_KTHREAD		0x00200000

/* Linux 5.14 (commit 2f064a59a11f) renamed task_struct::state to __state. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

#define compiler_barrier() asm volatile("" ::: "memory")

/*
 * The state a thread switched out with prev_state (as sched_switch reports it) goes to.
 * Preempted threads stay on the run queue whatever prev_state says (they may have been
 * preempted between set_current_state() and schedule()). Since Linux 6.13 (commit
 * 7b3d61f6578a, try_to_block_task()) a thread with a pending signal is reported as
 * TASK_RUNNING here, as it does not block.
 */
static __always_inline __u32 classify(bool preempt, __u32 s)
{
	if (preempt || s == TASK_RUNNING)
		return ST_RUNNABLE;
	if (s & TASK_INTERRUPTIBLE)
		return ST_SLEEPING;
	/* TASK_IDLE = UNINTERRUPTIBLE | NOLOAD: idle kernel threads, not waiting for anything
	 * (and not in the load average). */
	if (s & TASK_UNINTERRUPTIBLE)
		return (s & TASK_NOLOAD) ? ST_OTHER : ST_DISK;
	/* PREEMPT_RT sleeping spinlocks: /proc shows them as D (Linux 5.15, commit
	 * 25795ef6299f). */
	if (s & TASK_RTLOCK_WAIT)
		return ST_DISK;
	if (s & (__TASK_STOPPED | __TASK_TRACED))
		return ST_STOPPED;
	return ST_OTHER;	/* parked, frozen, dead */
}

static __always_inline bool keeps_stack(__u32 st)
{
	return st == ST_DISK || (track_sleep && st == ST_SLEEPING);
}

/* The storage of t, created when missing (then since_ns is 0: see fresh()). */
static __always_inline struct st_acct *acct_of(struct task_struct *t)
{
	struct st_acct *a;

	a = bpf_task_storage_get(&acct, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a)
		__sync_fetch_and_add(&lost_storage, 1);
	return a;
}

/* A storage seen for the first time starts in `st` now, with nothing charged before (a race
 * with the seeding iterator on another CPU at worst starts it twice, a few ns apart). */
static __always_inline bool fresh(struct st_acct *a, __u32 st, __u64 now)
{
	if (a->since_ns)
		return false;
	a->state = st;
	a->stackid = -1;
	a->since_ns = now;
	return true;
}

static __always_inline void add_why(__u32 tid, __u32 state, __s32 stackid, __u64 d)
{
	struct st_why_key k = { .tid = tid, .state = state, .stackid = stackid };
	__u64 *v;

	if (!d)
		return;
	v = bpf_map_lookup_elem(&why, &k);
	if (v)
		__sync_fetch_and_add(v, d);
	else if (bpf_map_update_elem(&why, &k, &d, BPF_NOEXIST))
		__sync_fetch_and_add(&lost_stacks, 1);
}

/*
 * The part of the current wait not yet in the why hash, up to `now`. The wake-up and the
 * iterator (on another CPU) may both flush the same wait: the exchange hands each part of it
 * to exactly one of them.
 */
static __always_inline __u64 why_part(struct st_acct *a, __u64 now, __u64 next_since)
{
	__u64 old = __sync_lock_test_and_set(&a->why_since_ns, next_since);

	return old && now > old ? now - old : 0;
}

/* Ends the ongoing state at `now`: its time is charged, and the off-CPU stack it had, if
 * any, gets the rest of this wait. */
static __always_inline void leave(struct st_acct *a, __u32 tid, __u64 now)
{
	__u64 d = now > a->since_ns ? now - a->since_ns : 0;

	a->ns[a->state & (ST_SLOTS - 1)] += d;
	if (a->stackid >= 0)
		add_why(tid, a->state, a->stackid, why_part(a, now, 0));
	a->stackid = -1;
	a->flags &= ~ST_F_SEEDED;
	a->since_ns = now;
}

/* The transition: the reader (iterator) sees either the old or the new state, never half. */
static __always_inline void go(struct st_acct *a, __u32 tid, __u32 st, __u64 now)
{
	a->seq++;
	compiler_barrier();
	leave(a, tid, now);
	a->state = st;
	compiler_barrier();
	a->seq++;
}

/*
 * A thread leaving the CPU while still accounted runnable: its switch-in was not seen. That
 * happens on hosts where the programs do not run in the context of some tasks (on the VM this
 * was written on, pid 1's threads are protected: a switch away from them is never traced).
 * The time it has been on the CPU since it was picked is known exactly for CFS tasks
 * (se.sum_exec_runtime - se.prev_sum_exec_runtime, updated by update_curr() before the
 * tracepoint): that part is charged as running, the rest as runnable.
 */
static __always_inline void missed_switch_in(struct st_acct *a, struct task_struct *prev,
					     __u64 now)
{
	__u64 slice;

	if (a->state != ST_RUNNABLE)
		return;
	slice = prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime;
	if (!slice || now < a->since_ns + slice)
		return;
	a->seq++;
	compiler_barrier();
	a->ns[ST_RUNNABLE] += now - slice - a->since_ns;
	a->since_ns = now - slice;
	a->state = ST_RUNNING;
	compiler_barrier();
	a->seq++;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct st_acct *a;

	/* pid 0: the idle tasks, one per CPU; their time is the CPUs' idle time. */
	if (prev->pid) {
		a = acct_of(prev);
		if (a) {
			__u32 st = classify(preempt, prev_state);

			fresh(a, ST_RUNNING, now);
			missed_switch_in(a, prev, now);
			go(a, prev->pid, st, now);
			if (keeps_stack(st)) {
				/* prev is current: its kernel stack is the wait's. */
				a->stackid = bpf_get_stackid(ctx, &stacks, 0);
				if (a->stackid < 0)
					__sync_fetch_and_add(&lost_stacks, 1);
				else
					a->why_since_ns = now;
			}
		}
	}
	if (next->pid) {
		a = acct_of(next);
		if (a && !fresh(a, ST_RUNNING, now))
			go(a, next->pid, ST_RUNNING, now);
	}
	return 0;
}

static __always_inline void woken(struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	struct st_acct *a;

	if (!p->pid)
		return;
	a = acct_of(p);
	if (!a || fresh(a, ST_RUNNABLE, now))
		return;
	/* A wake-up of a thread that never blocked (it was woken between
	 * set_current_state() and schedule()) or is already queued changes nothing. */
	if (a->state == ST_RUNNING || a->state == ST_RUNNABLE)
		return;
	go(a, p->pid, ST_RUNNABLE, now);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}

/* Totals of t up to now (the ongoing state included) into r; a consistent copy of a, retried
 * while a transition is being written on another CPU. */
static __always_inline void totals(struct st_rec *r, struct task_struct *t, struct st_acct *a,
				   __u64 now)
{
	__u32 seq = 0;
	int i;

	for (i = 0; i < 4; i++) {
		seq = a->seq;
		compiler_barrier();
		if (seq & 1)
			continue;
		__builtin_memcpy(r->ns, a->ns, sizeof(r->ns));
		r->since_ns = a->since_ns;
		r->state = a->state;
		r->stackid = a->stackid;
		r->flags = a->flags;
		compiler_barrier();
		if (a->seq == seq)
			break;
	}
	if (now > r->since_ns)
		r->ns[r->state & (ST_SLOTS - 1)] += now - r->since_ns;
	r->now_ns = now;
	r->tid = t->pid;
	r->tgid = t->tgid;
	r->start_boottime_ns = t->start_boottime;
	if (t->flags & PF_KTHREAD)
		r->flags |= ST_F_KTHREAD;
	__builtin_memcpy(r->comm, t->comm, sizeof(r->comm));
}

/*
 * A thread's final totals at exit, for the interval it exits in. Its last switch-out (TASK_DEAD)
 * comes after this and is not reported: a few microseconds at most.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct st_acct *a;
	struct st_rec *r;

	if (!p->pid)
		return 0;
	a = bpf_task_storage_get(&acct, p, 0, 0);
	if (!a)
		return 0;
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&lost_exits, 1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	totals(r, p, a, bpf_ktime_get_ns());
	r->flags |= ST_F_EXITED;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/*
 * One pass: every thread's totals up to now. A thread without storage yet (it has not been
 * scheduled since the tracepoints were attached: the first pass seeds every such thread) starts
 * here, in the state task->__state says, from now.
 */
SEC("iter/task")
int dump_states(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct st_rec r = {};
	struct st_acct *a;
	__u64 now;

	if (!t || !t->pid)
		return 0;
	now = bpf_ktime_get_ns();
	a = acct_of(t);
	if (!a)
		return 0;
	if (!a->since_ns) {
		__u32 s = task_state(t);
		__u32 st;

		if (t->on_cpu)
			st = ST_RUNNING;
		else
			st = classify(false, s);
		if (fresh(a, st, now))
			a->flags |= ST_F_SEEDED;
	}
	totals(&r, t, a, now);
	/* A wait still going on: its time so far goes into the why hash now, so that user space
	 * (which reads the hash after this pass) sees it in this interval. (Should the thread wake
	 * and block again on another stack between the copy above and this exchange, a few
	 * microseconds of the new wait would go to the old stack.) */
	if (r.stackid >= 0)
		add_why(r.tid, r.state, r.stackid, why_part(a, now, now));
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}
