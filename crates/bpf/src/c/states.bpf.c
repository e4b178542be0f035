// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tasksnap's exact thread-state accounting, on one tracepoint: sched_switch (a BTF raw
 * tracepoint; this kernel has no kprobes), and only for the thread leaving the CPU.
 *
 * Why only switch-outs, and why the scheduler's clock: each program run costs tens of ns
 * here (measured with kernel.bpf_stats_enabled on the 2-core VM, Linux 6.18: the dispatch
 * ~45 ns with the statistics, the task storage lookup ~17 ns, bpf_ktime_get_ns() ~37 ns), and
 * a pipe round trip is ~3-4 us: programs on the switch-in side and on sched_wakeup doubled
 * the runs, and a clock read per run was a third of the cost. Everything they told is in the
 * thread itself when it leaves the CPU again, kept by the scheduler (CONFIG_SCHED_INFO, as
 * /proc/PID/schedstat), and rq->clock is "now", updated by __schedule() just before the
 * tracepoint:
 *   - sched_info.last_arrival: when this run began;
 *   - sched_info.run_delay: ns spent waiting on a run queue, up to this run;
 *   - sched_info.last_queued: when a queued thread's wait began (0 once it runs).
 * So at a switch-out: this run = rq->clock - last_arrival; before it, since the previous
 * switch-out, the thread waited for a CPU for (run_delay - the value then) and was in the
 * state it left in (S, D, ...) for the rest. The iterator reads ongoing states the same way,
 * with "now" the newest of its own CPU's and the thread's CPU's rq->clock (updated at least
 * every tick on a busy CPU: an ongoing state may be read up to a tick short, and the next
 * interval has the rest). All times are the scheduler's clock (sched_clock, TSC-based and
 * synchronised across CPUs on this hardware).
 *
 * Threads that exit leave their final totals in a ring buffer. When a thread blocks in D
 * (and, when asked, in S) its kernel stack is kept, and its blocked time is added to a hash
 * keyed by (thread, state, stack) at its next switch-out. Nothing here filters by process:
 * user space does, and only root loads this object. What reaches user space (the iterator's
 * records and the exit records) is limited to the reader's pid namespace and numbered as
 * there (see reader_ns).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "compat.h"
#include "states.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the stack of S waits too (set by user space before load; off by default: most threads
 * of a host sleep most of the time, and their stacks would fill the maps). */
const volatile bool track_sleep = false;

/* Name what held a waiter's CPU (set by user space before load): each CPU keeps a log of its
 * last runs, and a run-queue wait of ST_HOLDER_MIN_NS or more charges its overlap with each
 * of them to the `held` hash. */
const volatile bool track_holders = false;

/* Keep the `dirty` queue (set by user space before load when it reads with drain_states):
 * off, the switch program pays nothing for it and the wakeup programs are not attached. */
const volatile bool incremental = false;

/* What could not be recorded: user space reports these when they are not zero. */
__u64 lost_exits = 0;	/* the ring buffer was full at a thread's exit */
__u64 lost_stacks = 0;	/* the stack map or the why map was full */
__u64 lost_holders = 0;	/* the held hash was full */
__u64 lost_storage = 0;	/* task storage could not be allocated */
__u64 dirty_lost = 0;	/* the dirty queue was full: the reader takes a whole pass */

/*
 * The reader's pid namespace (its level, and its address as a number), taken from the reader
 * itself by the iterator, which runs in the context of the process reading it (tasksnap);
 * 0 until the first pass. task->pid and task->tgid are the initial namespace's numbers: a
 * reader inside a child pid namespace (a container, `unshare --pid`) knows its tasks by
 * other numbers, and must not be shown the tasks outside its namespace (ps and top do not
 * show them either: crates/collect translates the same way). The iterator only walks the
 * reader's namespace (kernel/bpf/task_iter.c takes task_active_pid_ns(current) when the
 * iterator is opened, since the task iterator's introduction in Linux 5.8, commit
 * eaaacd23910f, and resolves a bpf_iter_link_info.task.pid there too, Linux 6.1, commit
 * f0d74c4da1f0), but the exit program runs in the exiting task's context for every task of
 * the host: it filters and translates with these. Written level first, then the address
 * (the exit program reads the address first; x86 keeps stores in order); a process's pid
 * namespace never changes, so the pair is written once.
 */
__u32 reader_level = 0;
__u64 reader_ns = 0;

/* Layout anchors: never written, they make the shared types part of this object's BTF so
 * that libbpf-cargo generates their Rust definitions from states.h. */
struct st_rec st_rec_layout = {};
struct st_why_key st_why_key_layout = {};
struct st_acct st_acct_layout = {};
struct st_dirty st_dirty_layout = {};
struct st_drain_args st_drain_args_layout = {};
struct st_stack st_stack_layout = {};
struct st_held_key st_held_key_layout = {};
struct st_held st_held_layout = {};

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

/*
 * The stacks of waits that began before tracking did: a thread the iterator seeds blocked
 * (in D, or S with track_sleep) had no switch-out to take its stack at, so the iterator
 * takes it then (bpf_get_task_stack, Linux 5.9, commit fa28dcb82a38: what /proc/TID/stack
 * shows, which user space could read only while it held CAP_SYS_ADMIN). Keyed, as a stack
 * map keys its stacks, by a hash of the frames (ST_SEED_STACK_IDS and up, so that one id
 * space names both kinds): threads blocked in one place share one entry. User space deletes
 * the entries no thread refers to any more, as it does the stack map's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct st_stack);
} seed_stacks SEC(".maps");

/* Each CPU's last runs (track_holders). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct st_runlog);
} runlog SEC(".maps");

/* ns a thread waited on a run queue while another thread ran on that CPU (track_holders):
 * what held its CPU, by waiter and holder. User space deletes the entries of threads that are
 * gone, as it does the why hash's. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct st_held_key);
	__type(value, struct st_held);
} held SEC(".maps");

/* Room to take a stack in (too big for the BPF stack beside a record). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct st_stack);
} stack_room SEC(".maps");

#define ST_RING_BYTES (1 << 20)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ST_RING_BYTES);
} exits SEC(".maps");

/*
 * The threads whose state changed since the reader's last drain (drain_states below): what
 * makes a read cost what switched, not every thread of the host. A thread's state changes
 * only at its switch-out (on_switch), its wakeup (on_wakeup, a new thread's first one
 * included) and its switch-in; a thread is queued once until a drain takes it
 * (st_acct.listed), and a drain puts back the threads it finds on a CPU or a run queue, whose
 * switch-in is not traced. A thread in none of these is in the state of its last record, for
 * longer: the reader adds the time. Each reader loads its own copy of this object, so two
 * readers never take each other's entries. One entry per thread at most: sized for
 * kernel.threads-max on a big host; a full queue is counted and the reader takes a whole pass.
 */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1 << 18);
	__type(value, struct st_dirty);
} dirty SEC(".maps");

#define compiler_barrier() asm volatile("" ::: "memory")

/* Queues t for the next drain unless it waits there already. The flag is set with an atomic
 * exchange after the caller's writes to a, and the drain clears it with one before reading a
 * (x86 locked operations order them): a change either finds the flag clear and queues the
 * thread, or happened before the drain read it. */
static __always_inline void mark(struct task_struct *t, struct st_acct *a, bool fenced)
{
	struct st_dirty d = {};

	if (!incremental)
		return;
	/* The plain read may pass the caller's earlier stores (x86 lets a load pass a store):
	 * at a switch-out that is harmless (the drain then sees the thread still on its CPU and
	 * queues it again), but a wakeup's stores (last_queued, the enqueue) must be visible to
	 * a drain that clears the flag, so a wakeup always takes the locked exchange. */
	if (!fenced && a->listed)
		return;
	if (__sync_val_compare_and_swap(&a->listed, 0, 1))
		return;
	d.tid = t->pid;
	d.start_boottime_ns = t->start_boottime;
	if (bpf_map_push_elem(&dirty, &d, 0)) {
		a->listed = 0;
		__sync_fetch_and_add(&dirty_lost, 1);
	}
}

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

static __always_inline bool blocked(__u32 st)
{
	return st != ST_RUNNING && st != ST_RUNNABLE && st != ST_THROTTLED;
}

/*
 * CPU bandwidth throttling (CONFIG_CFS_BANDWIDTH: cpu.cfs_quota_us on cgroup v1, cpu.max on
 * v2). Since Linux 6.18 (the task-based throttle model, commit e1fad12dcb66 "sched/fair:
 * Switch to task based throttle model") a cfs_rq that used its quota is not dequeued: its
 * tasks keep being picked, and each is taken off the run queue by a task work on its way
 * back to user mode (throttle_cfs_rq_work(): dequeued, put on the cfs_rq's limbo list,
 * task->throttled set, rescheduled). So the throttled thread switches out with task->throttled
 * set and prev_state TASK_RUNNING, and sched_info counts the time in limbo as a run-queue wait
 * (sched_info_depart() saw it runnable): without this, a thread held back by its quota looks
 * exactly like one waiting behind other threads. Its switch-outs while the cfs_rq is throttled
 * but before the task work ran (woken in the kernel, preempted) are contention: throttling
 * does not stop the pick. Before 6.18 the throttled group left the run queue whole, and
 * task->throttled does not exist: a runnable switch-out while the task's cfs_rq has a
 * throttle_count is then the throttle.
 *
 * The end of the throttle fires no tracepoint (tg_unthrottle_up() enqueues the limbo tasks
 * with a class call: no wakeup). The cfs_rq's own clocks tell it (commit eb962f251fbb
 * "sched/fair: Task based throttle time accounting", the cpu.stat.local of v6.8's commit
 * 677ea015f231): throttled_clock_self is when this throttle began on it and, at the
 * unthrottle, throttled_clock_self_time grows by the throttle's length. Seen at the
 * switch-out and again when the wait is charged, they give the end exactly (throttled_part).
 */
static __always_inline bool throttled_now(struct task_struct *t)
{
	struct cfs_rq *c;

	/* A plain load (t is a BTF pointer): this runs at every runnable switch-out. */
	if (bpf_core_field_exists(t->throttled))
		return t->throttled;
	/* The group-dequeue model (before 6.18): its cfs_rq stays throttled until the refill. */
	c = t->se.cfs_rq;
	return c && c->throttle_count > 0;
}

/* Notes, at a throttled thread's switch-out (or its seeding), the cfs_rq it waits on and
 * that cfs_rq's clocks. */
static __always_inline void note_throttle(struct st_acct *a, struct task_struct *t)
{
	struct cfs_rq *c = t->se.cfs_rq;

	a->thr_cfs_rq = (__u64)c;
	a->thr_tg = c ? (__u64)c->tg : 0;
	a->thr_clock0 = 0;
	a->thr_self0 = 0;
	if (c && bpf_core_field_exists(c->throttled_clock_self)) {
		a->thr_clock0 = c->throttled_clock_self;
		a->thr_self0 = c->throttled_clock_self_time;
	}
}

/*
 * Of a wait that began at a throttled switch-out (a->since_ns) and lasted until `to`, the part
 * spent throttled: up to the unthrottle, when the cfs_rq's self time has grown since (the
 * throttle began at thr_clock0 and lasted that growth), else all of it (still throttled; or the
 * thread left the limbo another way, a move to another group or CPU; or a kernel without the
 * clocks). The rest was a wait behind other threads after the refill. A second throttle of
 * the same cfs_rq that began and ended before the thread ran again is counted in full as
 * well (bounded by the wait). Every read is a probe read: the cfs_rq may be gone with its
 * group, which the tg checks catch.
 */
static __always_inline __u64 throttled_part(const struct st_acct *a, struct task_struct *t,
					    __u64 to)
{
	__u64 wait = to > a->since_ns ? to - a->since_ns : 0;
	struct cfs_rq *c = (struct cfs_rq *)a->thr_cfs_rq;
	__u64 tg = 0, self = 0, end;

	if (!c || !a->thr_clock0 || !bpf_core_field_exists(c->throttled_clock_self_time))
		return wait;
	if (BPF_CORE_READ_INTO(&tg, c, tg) || tg != a->thr_tg ||
	    (__u64)BPF_CORE_READ(t, se.cfs_rq, tg) != tg)
		return wait;
	if (BPF_CORE_READ_INTO(&self, c, throttled_clock_self_time) || self <= a->thr_self0)
		return wait;
	end = a->thr_clock0 + (self - a->thr_self0);
	if (end <= a->since_ns)
		return 0;
	return end - a->since_ns < wait ? end - a->since_ns : wait;
}

/* The scheduler clock of t's run queue (rq->clock; CONFIG_FAIR_GROUP_SCHED gives every task
 * a cfs_rq that knows its rq). 0 when unreachable. */
static __always_inline __u64 rq_clock_of(struct task_struct *t)
{
	struct cfs_rq *cfs = TASK_PTR(t, se.cfs_rq);

	if (!cfs || !cfs->rq)
		return 0;
	return cfs->rq->clock;
}

static __always_inline void add_why(struct task_struct *t, __u32 state, __s32 stackid, __u64 d)
{
	struct st_why_key k = {
		.start_boottime_ns = t->start_boottime,
		.tid = t->pid,
		.state = state,
		.stackid = stackid,
	};
	__u64 *v;

	if (!d)
		return;
	v = bpf_map_lookup_elem(&why, &k);
	if (v)
		__sync_fetch_and_add(v, d);
	else if (bpf_map_update_elem(&why, &k, &d, BPF_NOEXIST))
		__sync_fetch_and_add(&lost_stacks, 1);
}

/* pid_nr_ns(): the number of pid in the namespace `ns` (an address) at `level`; 0 when it has
 * none there. */
static __always_inline __u32 nr_in_ns(struct pid *pid, __u32 level, __u64 ns)
{
	struct upid u = {};

	if (!pid || pid->level < level)
		return 0;
	/* A variable index into the flexible array needs a helper read, and its address is
	 * computed as a number: the verifier refuses arithmetic on an untrusted pointer with an
	 * index it cannot bound (drain_states keeps the level on its stack). */
	if (bpf_probe_read_kernel(&u, sizeof(u),
				  (const void *)((unsigned long)pid +
						 bpf_core_field_offset(struct pid, numbers) +
						 (unsigned long)level * sizeof(struct upid))))
		return 0;
	return (__u64)u.ns == ns ? (__u32)u.nr : 0;
}

/* The pid namespace of the current task (the iterator's reader): task_active_pid_ns(current),
 * as its level and address; false when unreadable. Noted in reader_level/reader_ns for the
 * exit program. */
static __always_inline bool reader(__u32 *level, __u64 *ns)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct pid *p = cur->thread_pid;
	struct upid u = {};

	if (!p)
		return false;
	*level = p->level;
	if (bpf_core_read(&u, sizeof(u), &p->numbers[*level]) || !u.ns)
		return false;
	*ns = (__u64)u.ns;
	if (reader_ns != *ns) {
		reader_level = *level;
		compiler_barrier();
		reader_ns = *ns;
	}
	return true;
}

/* t's thread and process numbers in the reader's namespace into r (and task->pid, which keys
 * the why hash); false when t has none there: a task outside the reader's namespace. */
static __always_inline bool ns_ids(struct st_rec *r, struct task_struct *t, __u32 level,
				   __u64 ns)
{
	r->global_tid = t->pid;
	if (level == 0) {
		/* The initial namespace: every task has its task->pid there. */
		r->tid = t->pid;
		r->tgid = t->tgid;
		return true;
	}
	r->tid = nr_in_ns(t->thread_pid, level, ns);
	r->tgid = nr_in_ns(t->group_leader->thread_pid, level, ns);
	return r->tid && r->tgid;
}

/* x kept within [lo, hi] (0: hi). */
static __always_inline __u64 clamp_time(__u64 x, __u64 lo, __u64 hi)
{
	if (!x || x > hi)
		return hi;
	return x < lo ? lo : x;
}

/* The newest scheduler clock the iterator can see: its own CPU's and t's CPU's. */
static __always_inline __u64 now_for(struct task_struct *t)
{
	__u64 mine = rq_clock_of(bpf_get_current_task_btf());
	__u64 theirs = rq_clock_of(t);

	return mine > theirs ? mine : theirs;
}

/*
 * The time from a's last switch-out up to `back` (the start of the thread's current run or
 * queue wait, or now), charged into ns[]: the run-queue waits that ended since (run_delay
 * now minus then) as runnable, the rest in the state it left in; a wait that began throttled
 * is split at the throttle's end. Returns the blocked part.
 */
static __always_inline __u64 charge_off(__u64 *ns, struct st_acct *a, __u64 back,
					__u64 run_delay, struct task_struct *t)
{
	__u64 off = back > a->since_ns ? back - a->since_ns : 0;
	__u64 wait = run_delay > a->run_delay_ns ? run_delay - a->run_delay_ns : 0;

	if (a->state == ST_THROTTLED) {
		wait = throttled_part(a, t, back);
		ns[ST_THROTTLED] += wait;
		ns[ST_RUNNABLE] += off - wait;
		return 0;
	}
	if (!blocked(a->state)) {
		ns[ST_RUNNABLE] += off;
		return 0;
	}
	if (wait > off)
		wait = off;
	ns[ST_RUNNABLE] += wait;
	ns[a->state & (ST_SLOTS - 1)] += off - wait;
	return off - wait;
}

/*
 * A thread met for the first time at its switch-out or exit: what it did since it was born
 * (or since its current run began, for a thread older than tracking) is in sched_info: its
 * current run began at last_arrival, and before that it waited run_delay on run queues
 * (zeroed at fork). Starting it "queued run_delay before its arrival" charges exactly that:
 * a thread born and gone within one interval is counted whole. (For a thread older than
 * tracking this puts its lifetime's waits before the first sample, where only differences
 * between samples are reported.)
 */
static __always_inline void init_from_sched_info(struct st_acct *a, struct task_struct *t,
						 __u64 now)
{
	__u64 back = clamp_time(t->sched_info.last_arrival, 0, now);
	__u64 wait = t->sched_info.run_delay;

	a->since_ns = back > wait + 1 ? back - wait : 1;
	a->run_delay_ns = 0;
	a->state = ST_RUNNABLE;
	a->stackid = -1;
}

/* The run that ends now on this CPU, into its run log. */
static __always_inline void log_run(struct st_runlog *log, struct task_struct *t, __u64 from,
				    __u64 to)
{
	struct st_run *r = &log->run[log->next & (ST_RUNLOG - 1)];

	r->from_ns = from;
	r->to_ns = to;
	r->start_boottime_ns = t->start_boottime;
	r->tid = t->pid;
	__builtin_memcpy(r->comm, t->comm, sizeof(r->comm));
	log->next++;
}

/* ns of [from, to] within [lo, hi]. */
static __always_inline __u64 overlap(__u64 from, __u64 to, __u64 lo, __u64 hi)
{
	__u64 a = from > lo ? from : lo, b = to < hi ? to : hi;

	return b > a ? b - a : 0;
}

/* A thread that held a waiter's CPU, and for how long (name_holders). */
struct holder {
	__u64 ns;
	__u64 start;
	__u32 tid;
	__u32 slot;	/* a run of it in the log (for its name) */
};

/* Charges the holder `h` to the waiter `k` in the held hash. */
static __always_inline void add_held(struct st_runlog *log, struct st_held_key *k,
				     const struct holder *h)
{
	struct st_held *v, nv = {};

	if (!h->ns)
		return;
	k->holder_tid = h->tid;
	k->holder_start_boottime_ns = h->start;
	v = bpf_map_lookup_elem(&held, k);
	if (v) {
		__sync_fetch_and_add(&v->ns, h->ns);
		return;
	}
	nv.ns = h->ns;
	__builtin_memcpy(nv.comm, log->run[h->slot & (ST_RUNLOG - 1)].comm, sizeof(nv.comm));
	if (bpf_map_update_elem(&held, k, &nv, BPF_NOEXIST))
		__sync_fetch_and_add(&lost_holders, 1);
}

/* The state of name_holders' scan of the log (bpf_loop's context). */
struct holders_scan {
	struct st_runlog *log;
	__u64 lo, hi;
	__u32 waiter;
	__u32 pad;
	struct holder a, b;	/* a has the most */
};

/* One run of the log against the wait: its thread's overlap added up, a and b kept the two
 * threads with the most (the first two met, then whichever run is larger than b). */
static long scan_run(__u32 i, struct holders_scan *s)
{
	struct st_run *r = &s->log->run[i & (ST_RUNLOG - 1)];
	__u64 o = overlap(r->from_ns, r->to_ns, s->lo, s->hi);
	struct holder *h;

	if (!o || r->tid == s->waiter)
		return 0;
	if (s->a.ns && s->a.tid == r->tid && s->a.start == r->start_boottime_ns) {
		s->a.ns += o;
	} else if (s->b.ns && s->b.tid == r->tid && s->b.start == r->start_boottime_ns) {
		s->b.ns += o;
	} else if (!s->a.ns || !s->b.ns || o > s->b.ns) {
		h = !s->a.ns ? &s->a : &s->b;
		h->ns = o;
		h->tid = r->tid;
		h->start = r->start_boottime_ns;
		h->slot = i;
	}
	if (s->b.ns > s->a.ns) {
		struct holder x = s->a;

		s->a = s->b;
		s->b = x;
	}
	return 0;
}

/*
 * What held this CPU while `t` waited on its run queue over [lo, hi] (the wait that ended at
 * its arrival here: a thread does not migrate while it runs, so the runs it waited behind at
 * the end were this CPU's): the runs of the log overlapping it, summed by thread, and the two
 * threads with the most added to `held`. A wait longer than the log reaches back is named by
 * its last part; part of a wait spent queued on another CPU before a migration is charged to
 * this CPU's runs. The scan is a bpf_loop (Linux 5.17, commit e6f2dd0f8067): unrolled, its
 * branches multiply the verifier's states past its limit. Without the helper nothing is named.
 */
static __always_inline void name_holders(struct st_runlog *log, struct task_struct *t, __u64 lo,
					 __u64 hi)
{
	struct holders_scan s = { .log = log, .lo = lo, .hi = hi, .waiter = t->pid };
	struct st_held_key k = {};

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop))
		return;
	bpf_loop(ST_RUNLOG, scan_run, &s, 0);
	k.tid = t->pid;
	k.start_boottime_ns = t->start_boottime;
	add_held(log, &k, &s.a);
	add_held(log, &k, &s.b);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now, run, back, blk, run_delay, runq = 0;
	struct st_runlog *log = NULL;
	__u32 zero = 0;
	struct st_acct *a;

	/* pid 0: the idle tasks, one per CPU; their time is the CPUs' idle time. */
	if (!prev->pid)
		return 0;
	/* A dead thread's last switch-out: its final totals went out at its exit (on_exit), so
	 * it gets no storage now if it had none. */
	a = bpf_task_storage_get(&acct, prev, 0,
				 (prev_state & TASK_DEAD) ? 0 : BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a) {
		if (!(prev_state & TASK_DEAD))
			__sync_fetch_and_add(&lost_storage, 1);
		return 0;
	}
	now = rq_clock_of(prev);
	if (!now)
		return 0;
	run_delay = prev->sched_info.run_delay;
	a->seq++;
	compiler_barrier();
	if (!a->since_ns)
		init_from_sched_info(a, prev, now);
	back = now;
	if (now > a->since_ns) {
		/* This run: from its arrival on the CPU, within what was not yet charged. */
		back = clamp_time(prev->sched_info.last_arrival, a->since_ns, now);
		runq = a->ns[ST_RUNNABLE];
		blk = charge_off(a->ns, a, back, run_delay, prev);
		runq = a->ns[ST_RUNNABLE] - runq;
		a->ns[ST_RUNNING] += now - back;
		if (a->stackid >= 0)
			add_why(prev, a->state, a->stackid, blk);
	}
	a->since_ns = now;
	a->run_delay_ns = run_delay;
	a->state = classify(preempt, prev_state);
	if (a->state == ST_RUNNABLE && throttled_now(prev)) {
		a->state = ST_THROTTLED;
		note_throttle(a, prev);
	}
	a->flags &= ~ST_F_SEEDED;
	a->stackid = -1;
	if (keeps_stack(a->state)) {
		/* prev is current: its kernel stack is the wait's. */
		a->stackid = bpf_get_stackid(ctx, &stacks, 0);
		if (a->stackid < 0)
			__sync_fetch_and_add(&lost_stacks, 1);
	}
	compiler_barrier();
	a->seq++;
	mark(prev, a, false);
	if (track_holders) {
		/* The run-queue wait before this run (its last part: the waits charged now end at
		 * the arrival) is named first, then this run is logged for the next waiter. */
		log = bpf_map_lookup_elem(&runlog, &zero);
		if (log) {
			if (runq >= ST_HOLDER_MIN_NS)
				name_holders(log, prev, back - runq, back);
			log_run(log, prev, back, now);
		}
	}
	return 0;
}

/* A woken thread leaves S, D or T for a run queue without leaving a CPU: queued for the next
 * drain (a thread without storage was never met: not the reader's). */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	struct st_acct *a;

	if (!p->pid)
		return 0;
	a = bpf_task_storage_get(&acct, p, 0, 0);
	if (a)
		mark(p, a, true);
	return 0;
}

/* A new thread's first wakeup: met here first, counted from its birth by the drain. */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	struct st_acct *a;

	if (!p->pid)
		return 0;
	a = bpf_task_storage_get(&acct, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (a)
		mark(p, a, true);
	else
		__sync_fetch_and_add(&lost_storage, 1);
	return 0;
}

/*
 * An exec by a thread other than the leader takes the leader's pid and start time
 * (de_thread(), exchange_tids()): the entry queued under its old pid then finds no such
 * thread, and its flag would stay set for good. Queued again under the new identity.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid)
{
	struct st_acct *a;

	if (old_pid == p->pid)
		return 0;
	a = bpf_task_storage_get(&acct, p, 0, 0);
	if (!a)
		return 0;
	__sync_fetch_and_and(&a->listed, 0);
	mark(p, a, true);
	return 0;
}

/* A consistent copy of a into c: retried while a switch-out is being written on another CPU,
 * the last try kept whatever it read (four tries; a switch-out writes a few words). Every
 * try copies, so that the verifier meets one state of c after the loop, not one per try. */
static __always_inline void copy_acct(struct st_acct *c, struct st_acct *a)
{
	__u32 seq;
	int i;

	for (i = 0; i < 4; i++) {
		seq = a->seq;
		compiler_barrier();
		__builtin_memcpy(c, a, sizeof(*c));
		compiler_barrier();
		if (!(seq & 1) && a->seq == seq)
			break;
	}
}

/* Totals of t up to now into r from c, a's copy, plus the time since its last switch-out,
 * read as on_switch would at a switch-out now. */
static __always_inline void totals_of(struct st_rec *r, struct task_struct *t,
				      struct st_acct *c, __u64 now)
{
	__u64 back, blk, queued, thr;

	__builtin_memcpy(r->ns, c->ns, sizeof(r->ns));
	if (now < c->since_ns)
		now = c->since_ns;
	queued = t->sched_info.last_queued;
	if (t->on_cpu) {
		/* Running: since its arrival. */
		back = clamp_time(t->sched_info.last_arrival, c->since_ns, now);
		r->cur_state = ST_RUNNING;
		r->ns[ST_RUNNING] += now - back;
	} else if (c->state == ST_THROTTLED) {
		/* Runnable since its throttled switch-out: in the limbo still, or queued since
		 * the refill (its last_queued is the switch-out's). */
		back = c->since_ns;
		thr = throttled_part(c, t, now);
		r->cur_state = throttled_now(t) ? ST_THROTTLED : ST_RUNNABLE;
		r->ns[ST_THROTTLED] += thr;
		r->ns[ST_RUNNABLE] += now - back - thr;
	} else if (queued) {
		/* On a run queue since last_queued: woken (or preempted) and waiting. */
		back = clamp_time(queued, c->since_ns, now);
		r->cur_state = ST_RUNNABLE;
		r->ns[ST_RUNNABLE] += now - back;
	} else {
		back = now;
		r->cur_state = c->state;
	}
	blk = charge_off(r->ns, c, back, t->sched_info.run_delay, t);
	r->pending_why_ns = blk;
	r->wait_state = c->state;
	r->stackid = c->stackid;
	r->flags = c->flags;
	r->now_ns = now;
	r->start_boottime_ns = t->start_boottime;
	if (t->flags & PF_KTHREAD)
		r->flags |= ST_F_KTHREAD;
	__builtin_memcpy(r->comm, t->comm, sizeof(r->comm));
}

/* Totals of t up to now into r: see copy_acct and totals_of. */
static __always_inline void totals(struct st_rec *r, struct task_struct *t, struct st_acct *a,
				   __u64 now)
{
	struct st_acct c;

	copy_acct(&c, a);
	totals_of(r, t, &c, now);
}

/*
 * A thread's final totals at exit, for the interval it exits in. Its last switch-out (TASK_DEAD)
 * comes after this and is not reported: a few microseconds at most. Only threads of the
 * reader's pid namespace (see reader_ns); none before the first pass, which user space takes
 * as its baseline.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct st_acct c = {};
	struct st_rec ids = {};
	struct st_acct *a;
	struct st_rec *r;
	__u32 level;
	__u64 now, ns;

	if (!p->pid)
		return 0;
	ns = reader_ns;
	compiler_barrier();
	level = reader_level;
	if (!ns || !ns_ids(&ids, p, level, ns))
		return 0;
	/* Looked up, not created: a lookup succeeds while another BPF program holds this CPU's
	 * task-storage lock (bpf_task_storage_trylock(): an iterator or a syscall program of any
	 * tool, preempted in a storage call), a creation fails then, and the exit was lost. */
	a = bpf_task_storage_get(&acct, p, 0, 0);
	now = now_for(p);
	if (a)
		copy_acct(&c, a);
	if (!c.since_ns) {
		/* Born and gone without leaving the CPU once: counted from its birth. */
		__builtin_memset(&c, 0, sizeof(c));
		init_from_sched_info(&c, p, now);
	}
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&lost_exits, 1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	totals_of(r, p, &c, now);
	r->tid = ids.tid;
	r->tgid = ids.tgid;
	r->global_tid = ids.global_tid;
	r->flags |= ST_F_EXITED;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/*
 * The stack t is blocked in, into seed_stacks: its id there (ST_SEED_STACK_IDS and up), or -1
 * when it cannot be taken or kept (a full hash, or another stack of the same hash: counted
 * in lost_stacks). t is not on a CPU: its saved stack is its wait's.
 */
static __always_inline __s32 seed_stack(struct task_struct *t)
{
	__u32 zero = 0, id, h = 2166136261u;	/* FNV-1a over the frames */
	struct st_stack *s, *had;
	long n;
	int i;

	s = bpf_map_lookup_elem(&stack_room, &zero);
	if (!s)
		return -1;
	/* The frames past the last one come back zeroed (__bpf_get_stack()). None when t
	 * woke meanwhile (a running task's saved stack is not walked) or is exiting: its wait
	 * ended, nothing is lost. */
	n = bpf_get_task_stack(t, s->ip, sizeof(s->ip), 0);
	if (n <= 0)
		return -1;
	for (i = 0; i < ST_STACK_DEPTH; i++) {
		h = (h ^ (__u32)s->ip[i]) * 16777619u;
		h = (h ^ (__u32)(s->ip[i] >> 32)) * 16777619u;
	}
	id = ST_SEED_STACK_IDS | (h & (ST_SEED_STACK_IDS - 1));
	if (!bpf_map_update_elem(&seed_stacks, &id, s, BPF_NOEXIST))
		return id;
	/* Kept already: the same stack (shared), or another one of the same hash (lost). */
	had = bpf_map_lookup_elem(&seed_stacks, &id);
	if (had) {
		for (i = 0; i < ST_STACK_DEPTH; i++)
			if (had->ip[i] != s->ip[i])
				break;
		if (i == ST_STACK_DEPTH)
			return id;
	}
	__sync_fetch_and_add(&lost_stacks, 1);
	return -1;
}

/*
 * One pass: every thread's totals up to now. A thread without storage yet (it has not left a
 * CPU since the tracepoint was attached: the first pass seeds every such thread) starts
 * here, in the state it is in, from now, with its stack when it is blocked in a wait whose
 * stack is kept.
 */
SEC("iter/task")
int dump_states(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct st_rec r = {};
	struct st_acct *a;
	__u64 now, ns;
	__u32 level;

	if (!t || !t->pid)
		return 0;
	/* The walk is the reader's namespace already; a task without a number there (none
	 * expected) is left out rather than shown under its global one. */
	if (!reader(&level, &ns) || !ns_ids(&r, t, level, ns))
		return 0;
	a = bpf_task_storage_get(&acct, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a) {
		__sync_fetch_and_add(&lost_storage, 1);
		return 0;
	}
	now = now_for(t);
	if (!a->since_ns && now) {
		__u32 state;
		__s32 stackid = -1;

		if (t->on_cpu)
			state = ST_RUNNING;
		else if (t->sched_info.last_queued)
			state = throttled_now(t) ? ST_THROTTLED : ST_RUNNABLE;
		else
			state = classify(false, task_state(t));
		/* Taken before the storage is marked as being written: the walk of the stack
		 * is the slow part. */
		if (keeps_stack(state))
			stackid = seed_stack(t);
		a->seq++;
		compiler_barrier();
		a->state = state;
		if (state == ST_THROTTLED)
			note_throttle(a, t);
		a->stackid = stackid;
		a->run_delay_ns = t->sched_info.run_delay;
		a->flags |= ST_F_SEEDED;
		a->since_ns = now;
		compiler_barrier();
		a->seq++;
	}
	totals(&r, t, a, now);
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}

/*
 * One drain: the totals of every thread in the `dirty` queue, through the ring buffer (records
 * flagged ST_F_DRAINED), so that a read costs the threads that changed. A syscall program
 * (run with BPF_PROG_TEST_RUN in the reader's context: its pid namespace is the reader's)
 * looks each thread up by its global pid (bpf_task_from_pid, Linux 6.2, commit 3f0e6f2b41d3).
 * "Now" is taken once, before any entry is taken, on the first run of a drain: a thread
 * changing after it is queued again and its record waits for the next drain, so the
 * threads not drained are exactly in their last state up to now. A thread found on a CPU or
 * a run queue is put back, tagged with this drain's generation (its switch-in is not traced);
 * meeting that tag again ends the drain. The run stops early, to be run again once the caller
 * has emptied the buffer, when a quarter of the ring buffer is left: exit records need room.
 */
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;

#define ST_DRAIN_MAX 16384

/* What drain_one did with the queue's next entry. */
enum drain_step {
	DRAIN_SKIPPED,	/* an entry for nothing to report: a thread gone or exiting */
	DRAIN_WROTE,	/* a record written */
	DRAIN_DONE,	/* no older entry left */
	DRAIN_FULL,	/* the ring buffer needs emptying first */
};

/*
 * The queue's next entry, drained. A global function: the verifier checks it once, on its
 * own, with every argument unknown. Inlined into the loop it was checked once per path of
 * the loop that reached it (a drain_states of 86,595 instructions processed, 235 ms of
 * each start-up; TASKSNAP_VERIFIER_STATS=1 shows it).
 */
__noinline int drain_one(__u32 gen, __u32 level, __u64 ns)
{
	struct st_dirty d = {};
	struct task_struct *t, *u;
	struct st_acct *a;
	struct st_rec *r;

	if (bpf_ringbuf_query(&exits, BPF_RB_AVAIL_DATA) > ST_RING_BYTES / 4 * 3)
		return DRAIN_FULL;
	if (bpf_map_pop_elem(&dirty, &d))
		return DRAIN_DONE;
	if (d.gen == gen) {
		if (bpf_map_push_elem(&dirty, &d, 0))
			__sync_fetch_and_add(&dirty_lost, 1);
		return DRAIN_DONE;
	}
	t = bpf_task_from_pid(d.tid);
	if (!t)
		return DRAIN_SKIPPED;	/* gone: its exit record has its final totals */
	a = bpf_task_storage_get(&acct, t, 0, 0);
	if (t->start_boottime != d.start_boottime_ns || !a) {
		bpf_task_release(t);
		return DRAIN_SKIPPED;
	}
	if (t->flags & PF_EXITING) {
		/* Exiting (a zombie, or on its way): its exit record has, or will have, its
		 * final totals; read now, it would come back as a live thread. */
		__sync_fetch_and_and(&a->listed, 0);
		bpf_task_release(t);
		return DRAIN_SKIPPED;
	}
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r) {
		/* Still listed: back in the queue for the next run. */
		if (bpf_map_push_elem(&dirty, &d, 0)) {
			a->listed = 0;
			__sync_fetch_and_add(&dirty_lost, 1);
		}
		bpf_task_release(t);
		return DRAIN_FULL;
	}
	__sync_fetch_and_and(&a->listed, 0);
	__builtin_memset(r, 0, sizeof(*r));
	/* Read through an untrusted alias from here: the same loads, but the verifier then
	 * does not look up, for each pointer read from a trusted task, whether its type is
	 * trusted (a search of the kernel's BTF by name each time: tens of ms at load). */
	u = UNTRUSTED(t, struct task_struct);
	if (!ns_ids(r, u, level, ns)) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		bpf_task_release(t);
		return DRAIN_SKIPPED;
	}
	if (!a->since_ns) {
		/* A new thread, met at its first wakeup: counted from its birth, in a copy
		 * (its own switch-out may be writing its storage on another CPU; it starts
		 * it the same way). */
		struct st_acct born = {};

		init_from_sched_info(&born, u, now_for(u));
		totals_of(r, u, &born, now_for(u));
	} else {
		totals(r, u, a, now_for(u));
	}
	r->flags |= ST_F_DRAINED;
	/* A throttled thread too: the throttle's end fires nothing. */
	if ((r->cur_state == ST_RUNNING || r->cur_state == ST_RUNNABLE ||
	     r->cur_state == ST_THROTTLED) &&
	    !__sync_val_compare_and_swap(&a->listed, 0, 1)) {
		d.gen = gen;
		if (bpf_map_push_elem(&dirty, &d, 0)) {
			a->listed = 0;
			__sync_fetch_and_add(&dirty_lost, 1);
		}
	}
	bpf_task_release(t);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return DRAIN_WROTE;
}

SEC("syscall")
int drain_states(struct st_drain_args *args)
{
	__u32 level, i, gen = args->gen;
	__u64 ns, now = args->now_ns;

	args->records = 0;
	args->done = 0;
	if (!reader(&level, &ns))
		return -22; /* EINVAL */
	if (!now) {
		now = rq_clock_of(bpf_get_current_task_btf());
		args->now_ns = now;
	}
	bpf_for(i, 0, ST_DRAIN_MAX) {
		switch (drain_one(gen, level, ns)) {
		case DRAIN_WROTE:
			args->records++;
			break;
		case DRAIN_DONE:
			args->done = 1;
			return 0;
		case DRAIN_FULL:
			return 0;
		}
	}
	return 0;
}
