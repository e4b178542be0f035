// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tasksnap's exit records: one record per exiting process (thread group), with the group's
 * final figures, sent through a ring buffer when its last thread exits. A separate object
 * from states.bpf.c: it needs no iterator and no task storage, is loaded on its own by
 * crates/collect's exit source, and costs one program run per exiting thread.
 *
 * Which thread speaks for the group. do_exit() decrements signal->live for every exiting
 * thread; the one that takes it to zero is the group's last (group_dead). Since Linux 6.16
 * (Andrii Nakryiko, "exit: move and extend sched_process_exit() tracepoint") the tracepoint
 * passes that group_dead and fires before exit_mm(), so the exiting task still has its
 * memory (the command line can be read) and no other thread of the group can still be
 * added (no thread left to clone). Testing signal->live == 0 instead (what older tools do)
 * is racy: a thread that decremented live earlier but reaches the tracepoint after the last
 * one also sees 0, and the group would be reported twice (cilium/tetragon#1509). This
 * program therefore takes group_dead from the tracepoint and needs that change; kernels
 * before it have no second argument and refuse to load it (user space says so).
 *
 * The group's figures at that point. The kernel folds a thread's counters into its
 * signal_struct (utime, stime, sum_sched_runtime, faults, context switches, ioac) in
 * __exit_signal(), when the thread is released, and unlinks it from signal->thread_head at
 * the same time (__unhash_process(), under siglock). So signal_struct + every thread still on
 * thread_head counts each thread once, which is what /proc/PID/stat (thread_group_cputime())
 * and /proc/PID/io (do_io_accounting(), whole) compute for a live process. Threads that
 * decremented live but are not yet released are still on the list. Read without siglock (a
 * tracing program cannot take it): a thread released while the list is walked could be
 * missed or counted twice; with the group's last thread in do_exit, the others are past
 * their own counters' last change.
 *
 * The exiting thread's runtime is not final at the tracepoint: the scheduler brings
 * se.sum_exec_runtime up to date at a tick or a switch, so a thread that spins until it
 * exits is up to a tick behind (4 ms at HZ=250: 13% of a 15 ms process), and the rest of
 * do_exit() (exit_mm()'s teardown, exit_files(), exit_notify()) is still to run. What its
 * parent's rusage says is final: wait_task_zombie() reads it after the task's last switch.
 * So the record waits in `pending` (keyed by the thread's global tid) until that switch:
 * sched_switch with prev_state TASK_DEAD (do_task_dead(); the tracepoint fires after
 * pick_next_task() has put prev, which updated its runtime), where the thread's runtime
 * gained since the exit tracepoint is added and the record sent. A record that cannot wait
 * (`pending` full) is sent at once, as it is. The cost on every other switch is one compare
 * of prev_state. Other threads of the group that have not yet switched out for the last
 * time keep their pending runtime (a multithreaded group's last few microseconds).
 *
 * The wait status is what wait_task_zombie() will give the parent: signal->group_exit_code
 * when SIGNAL_GROUP_EXIT is set (exit_group(), a fatal signal), else the leader's exit_code
 * (set by do_exit() before the tracepoint for the current task).
 *
 * Only processes of the reader's pid namespace are sent, numbered as there: user space sets
 * reader_ns_inum (the inode of its /proc/self/ns/pid) before load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "compat.h"
#include "exits.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* include/linux/sched/signal.h (a macro: not in BTF); value stable since Linux 3.x. */
#define SIGNAL_GROUP_EXIT	0x00000004

/* The reader's pid namespace, by the inode number of its /proc/self/ns/pid (ns.inum), set by
 * user space before load. Its level is not taken from user space: /proc/self/status's NSpid
 * is relative to the mounted procfs's namespace (wrong under `unshare --pid --mount-proc`),
 * so the levels are searched for it. */
const volatile __u32 reader_ns_inum = 0;

/* include/linux/proc_ns.h: the initial pid namespace's inode number, fixed. */
#define PROC_PID_INIT_INO	0xEFFFFFFCU
/* include/linux/pid_namespace.h: pid namespaces nest at most this deep. */
#define MAX_PID_NS_LEVEL	32

/* Layout anchor: makes struct ex_rec part of this object's BTF for the skeleton. */
struct ex_rec ex_rec_layout = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 19);
} exit_records SEC(".maps");

/* A record waiting for its thread's last switch, and that thread's runtime when it was
 * made. */
struct ex_pending {
	struct ex_rec rec;
	__u64 own_runtime_ns;
};

/* Records between the exit tracepoint and their thread's last switch (microseconds, or
 * longer when the dying thread waits for a CPU), by the thread's global tid; allocated as
 * used. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct ex_pending);
} pending SEC(".maps");

/* Where a record is built (712 bytes: more than a BPF stack holds), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ex_pending);
} scratch SEC(".maps");

/* Records that could not be reserved (the ring buffer was full), per CPU: user space sums
 * the CPUs and reports the growth since its previous drain. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exit_drops SEC(".maps");

/* pid_nr_ns(): pid's number in the reader's namespace, 0 when it has none there. */
static __always_inline __u32 nr_in_reader_ns(struct pid *pid)
{
	struct upid u = {};
	__u32 level;
	int i;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	/* bpf_for (open-coded iterators, Linux 6.4): the verifier checks the body once
	 * its state converges, not once per iteration as for a plain bounded loop. */
	bpf_for(i, 0, MAX_PID_NS_LEVEL) {
		if (i > level)
			break;
		if (bpf_core_read(&u, sizeof(u), &pid->numbers[i]))
			return 0;
		if (u.ns && BPF_CORE_READ(u.ns, ns.inum) == reader_ns_inum)
			return (__u32)u.nr;
	}
	return 0;
}

/* The global (initial namespace's) number when the reader is there, else the search. */
static __always_inline __u32 tgid_for_reader(struct task_struct *t)
{
	if (reader_ns_inum == PROC_PID_INIT_INO)
		return BPF_CORE_READ(t, tgid);
	return nr_in_reader_ns(BPF_CORE_READ(t, group_leader, thread_pid));
}

struct sums {
	__u64 runtime, utime, stime, min_flt, maj_flt, nvcsw, nivcsw;
	__u64 rchar, wchar, syscr, syscw, rbytes, wbytes, cbytes;
};

static __always_inline void add_ioac(struct sums *s, struct task_io_accounting *io)
{
	s->rchar += BPF_CORE_READ(io, rchar);
	s->wchar += BPF_CORE_READ(io, wchar);
	s->syscr += BPF_CORE_READ(io, syscr);
	s->syscw += BPF_CORE_READ(io, syscw);
	s->rbytes += BPF_CORE_READ(io, read_bytes);
	s->wbytes += BPF_CORE_READ(io, write_bytes);
	s->cbytes += BPF_CORE_READ(io, cancelled_write_bytes);
}

/* One live thread's own counters. */
static __always_inline void add_thread(struct sums *s, struct task_struct *t)
{
	s->runtime += BPF_CORE_READ(t, se.sum_exec_runtime);
	s->utime += BPF_CORE_READ(t, utime);
	s->stime += BPF_CORE_READ(t, stime);
	s->min_flt += BPF_CORE_READ(t, min_flt);
	s->maj_flt += BPF_CORE_READ(t, maj_flt);
	s->nvcsw += BPF_CORE_READ(t, nvcsw);
	s->nivcsw += BPF_CORE_READ(t, nivcsw);
	add_ioac(s, &t->ioac);
}

static __always_inline __u64 rss_pages(struct mm_struct *mm)
{
	/* get_mm_rss(): file + anon + shmem (not swap), central values. */
	__s64 n = mm_counter_central(mm, 0) + mm_counter_central(mm, 1) +
		  mm_counter_central(mm, 3);

	return n > 0 ? (__u64)n : 0;
}

/* Sends a record (a copy: it lives in a map) or counts it dropped. */
static __always_inline void send(struct ex_rec *r)
{
	__u32 zero = 0;
	__u64 *drops;

	if (!bpf_ringbuf_output(&exit_records, r, sizeof(*r), 0))
		return;
	drops = bpf_map_lookup_elem(&exit_drops, &zero);
	if (drops)
		__sync_fetch_and_add(drops, 1);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_group_exit, struct task_struct *p, bool group_dead)
{
	struct task_struct *leader, *t;
	struct signal_struct *sig;
	struct list_head *head, *pos;
	struct mm_struct *mm;
	struct sums s = {};
	struct ex_rec *r;
	__u64 hiwater, rss, len, off;
	__u32 tgid, zero = 0;
	int i;
	__u64 *drops;
	struct ex_pending *w;
	__u32 tid;

	if (!group_dead)
		return 0;
	leader = TASK_PTR(p, group_leader);
	tgid = tgid_for_reader(p);
	if (!tgid)
		return 0;
	w = bpf_map_lookup_elem(&scratch, &zero);
	if (!w)
		return 0;
	r = &w->rec;
	w->own_runtime_ns = BPF_CORE_READ(p, se.sum_exec_runtime);
	r->tgid = tgid;
	r->global_tgid = p->tgid;
	r->pad = 0;
	r->flags = 0;
	r->ppid = 0;
	r->ppid = tgid_for_reader(TASK_PTR(p, real_parent));
	r->start_boottime_ns = BPF_CORE_READ(leader, start_boottime);
	r->exit_boottime_ns = bpf_ktime_get_boot_ns();
	{
		const struct cred *c = TASK_PTR(p, real_cred);

		r->ruid = BPF_CORE_READ(c, uid.val);
		r->euid = BPF_CORE_READ(c, euid.val);
		r->rgid = BPF_CORE_READ(c, gid.val);
		r->egid = BPF_CORE_READ(c, egid.val);
	}
	BPF_CORE_READ_INTO(&r->comm, leader, comm);
	if (p->flags & PF_KTHREAD)
		r->flags |= EX_F_KTHREAD;

	sig = TASK_PTR(p, signal);
	if (BPF_CORE_READ(sig, flags) & SIGNAL_GROUP_EXIT) {
		r->status = BPF_CORE_READ(sig, group_exit_code);
		r->flags |= EX_F_GROUP_EXIT;
	} else {
		r->status = BPF_CORE_READ(leader, exit_code);
	}

	/* What the kernel folded in from released threads (__exit_signal()). */
	s.runtime = BPF_CORE_READ(sig, sum_sched_runtime);
	s.utime = BPF_CORE_READ(sig, utime);
	s.stime = BPF_CORE_READ(sig, stime);
	s.min_flt = BPF_CORE_READ(sig, min_flt);
	s.maj_flt = BPF_CORE_READ(sig, maj_flt);
	s.nvcsw = BPF_CORE_READ(sig, nvcsw);
	s.nivcsw = BPF_CORE_READ(sig, nivcsw);
	add_ioac(&s, &sig->ioac);
	/* Plus every thread still on the group's list (this one included). */
	head = &sig->thread_head;
	pos = BPF_CORE_READ(head, next);
	r->threads_summed = 0;
	bpf_for(i, 0, EX_THREADS_MAX) {
		if (!pos || pos == head)
			break;
		t = (void *)pos - bpf_core_field_offset(struct task_struct, thread_node);
		add_thread(&s, t);
		r->threads_summed++;
		pos = BPF_CORE_READ(t, thread_node.next);
	}
	if (pos && pos != head)
		r->flags |= EX_F_THREADS_CUT;
	r->runtime_ns = s.runtime;
	r->utime_ns = s.utime;
	r->stime_ns = s.stime;
	r->min_flt = s.min_flt;
	r->maj_flt = s.maj_flt;
	r->nvcsw = s.nvcsw;
	r->nivcsw = s.nivcsw;
	r->rchar = s.rchar;
	r->wchar = s.wchar;
	r->syscr = s.syscr;
	r->syscw = s.syscw;
	r->read_bytes = s.rbytes;
	r->write_bytes = s.wbytes;
	r->cancelled_write_bytes = s.cbytes;

	/* Peak RSS as getrusage() computes it: signal->maxrss (set from the group's memory by
	 * threads that exited, and just before this point by do_exit() for group_dead) and the
	 * memory's own high-water mark and current RSS (get_mm_hiwater_rss()). */
	r->maxrss_pages = BPF_CORE_READ(sig, maxrss);
	r->args_len = 0;
	mm = TASK_PTR(p, mm);
	if (!mm) {
		r->flags |= EX_F_NO_MM;
		goto out;
	}
	hiwater = BPF_CORE_READ(mm, hiwater_rss);
	rss = rss_pages(mm);
	if (hiwater < rss)
		hiwater = rss;
	if (r->maxrss_pages < hiwater)
		r->maxrss_pages = hiwater;

	/* The command line, from the exiting task's own memory (current == p here). */
	off = BPF_CORE_READ(mm, arg_start);
	len = BPF_CORE_READ(mm, arg_end) - off;
	if (len > EX_ARGS_MAX) {
		len = EX_ARGS_MAX;
		r->flags |= EX_F_ARGS_CUT;
	}
	if (len > EX_ARGS_MAX)	/* also for the verifier: the bound it checks the read by */
		len = EX_ARGS_MAX;
	if (len && bpf_probe_read_user(r->args, len, (void *)off)) {
		r->flags |= EX_F_ARGS_FAULT;
		len = 0;
	}
	r->args_len = len;
out:
	/* Wait for the thread's last switch; sent now when there is no room to wait. */
	tid = p->pid;
	if (!bpf_map_update_elem(&pending, &tid, w, BPF_ANY))
		return 0;
	send(r);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_last_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct ex_pending *w;
	__u64 now_ns;
	__u32 tid;

	if (!(prev_state & TASK_DEAD))
		return 0;
	tid = prev->pid;
	w = bpf_map_lookup_elem(&pending, &tid);
	if (!w)
		return 0;
	now_ns = BPF_CORE_READ(prev, se.sum_exec_runtime);
	if (now_ns > w->own_runtime_ns)
		w->rec.runtime_ns += now_ns - w->own_runtime_ns;
	send(&w->rec);
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}
