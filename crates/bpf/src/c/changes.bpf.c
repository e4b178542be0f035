// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tasksnap's change set: which processes a live view must read again. Tracepoints set one
 * bit per process (by its tgid in the initial pid namespace) when something its row shows
 * may have changed; the reader takes the set with an atomic exchange per word (a bit set
 * after the exchange is the next read's), reads again only the processes it names
 * (walk_listed, task_iter.bpf.c), and so never visits an idle task. Each reader loads and
 * attaches its own copy of this object: readers never take each other's changes.
 *
 * What marks a process:
 * - sched_switch: its thread leaves a CPU (it ran: times, faults, state, anything it did
 *   to itself), after the scheduler charged the run (update_curr() in put_prev_task(),
 *   before the tracepoint); the thread switched in is kept as its CPU's current one
 *   (`oncpu`), which the reader adds to the set: a thread that runs through a read is not
 *   switched out before it;
 * - sched_wakeup, sched_wakeup_new: S/D/T to R without running (a new task's first);
 * - task_rename: a thread's name set by a sibling thread (prctl, or /proc/PID/comm, which
 *   only a thread of the same process may write): that process runs anyway, a cheap guard;
 * - cgroup_attach_task: moved by another process;
 * - sched_process_exec: a new image (already running, so also switch-out; kept for the tid
 *   change of an exec by a thread other than the leader);
 * - sched_process_free: the task left the pid hash (reaped: release_task() unhashes it an
 *   RCU grace period before this runs), so the reader finds it gone.
 * What changes without any of these (a nice value set by another process, reparenting,
 * memory reclaimed from a sleeping process, an mm shared with a vfork child) waits for the
 * reader's periodic whole pass (crates/collect/src/bpf/changes.rs).
 *
 * A tgid past the bitmap (kernel.pid_max raised after the load) is counted in `lost`; the
 * reader then takes a whole pass.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Words of the bitmap (the reader sets it, and the map's size, from kernel.pid_max). */
const volatile __u32 nwords = 1;

/* Bit (tgid % 64) of word (tgid / 64): the process may have changed since the last take.
 * Mapped read-write by the reader, which exchanges each nonzero word with 0. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} changed SEC(".maps");

/* The tgid of each CPU's current task (0: idle), by CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} oncpu SEC(".maps");

__u64 lost = 0;	/* marks that did not fit in the bitmap */

static __always_inline void mark(__u32 tgid)
{
	__u32 idx = tgid / 64;
	__u64 *w;

	if (!tgid)
		return;
	if (idx >= nwords) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	w = bpf_map_lookup_elem(&changed, &idx);
	if (!w) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	/* A locked operation: it orders the changes the caller's task made before it (x86), and
	 * the reader's exchange either sees the bit or came before it. */
	__sync_fetch_and_or(w, 1ULL << (tgid % 64));
}

SEC("tp_btf/sched_switch")
int BPF_PROG(changes_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *cur = bpf_map_lookup_elem(&oncpu, &cpu);

	if (cur)
		*cur = next->pid ? next->tgid : 0;
	if (prev->pid)
		mark(prev->tgid);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(changes_wakeup, struct task_struct *p)
{
	mark(p->tgid);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(changes_wakeup_new, struct task_struct *p)
{
	mark(p->tgid);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(changes_rename, struct task_struct *task)
{
	mark(task->tgid);
	return 0;
}

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(changes_cgroup, struct cgroup *dst, const char *path, struct task_struct *task)
{
	mark(task->tgid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(changes_exec, struct task_struct *p)
{
	mark(p->tgid);
	return 0;
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(changes_free, struct task_struct *p)
{
	mark(p->tgid);
	return 0;
}
