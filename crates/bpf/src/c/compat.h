/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What both of tasksnap's BPF objects (task_iter.bpf.c, states.bpf.c) need to know about the
 * kernel beyond vmlinux.h: task state and task flag bits, the task state itself, and every
 * CO-RE shim for a field that moved or was renamed. Each shim names the kernel change it
 * handles; on current kernels the fallbacks are dead code that CO-RE relocations drop.
 *
 * Include after vmlinux.h, bpf_helpers.h and bpf_core_read.h.
 */
#ifndef TASKSNAP_COMPAT_H
#define TASKSNAP_COMPAT_H

/* Task state bits, include/linux/sched.h (values stable since Linux 5.14-6.1; TASK_FROZEN
 * got its own bit in 6.1, commit f5d39b020809). */
#define TASK_RUNNING		0x00000000
#define TASK_INTERRUPTIBLE	0x00000001
#define TASK_UNINTERRUPTIBLE	0x00000002
#define __TASK_STOPPED		0x00000004
#define __TASK_TRACED		0x00000008
#define TASK_DEAD		0x00000080
#define TASK_NOLOAD		0x00000400
#define TASK_RTLOCK_WAIT	0x00001000

/* task_struct::flags bits, include/linux/sched.h (macros: not in BTF). */
#define PF_EXITING		0x00000004
#define PF_WQ_WORKER		0x00000020
#define PF_KTHREAD		0x00200000

/* Linux 5.14 (commit 2f064a59a11f) renamed task_struct::state to __state. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/*
 * The task's state word (TASK_* bits above), as both objects read it: the task iterator
 * reports it (record.h's state, turned into a letter as task_state_index() does), the state
 * accounting classifies it. One definition: both computed exactly this before.
 */
static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* Linux 6.0 (commit 64d608db38ff) moved tty_struct::pgrp into tty_struct::ctrl. */
struct tty_struct___pre60 {
	struct pid *pgrp;
} __attribute__((preserve_access_index));

/* Linux 6.6 (commit d6986ce24fc0) keeps names longer than comm in kthread->full_name. */
struct kthread___v66 {
	void *data;
	char *full_name;
} __attribute__((preserve_access_index));

/*
 * Pointer fields are loaded through an untrusted alias of the struct (UNTRUSTED(), i.e.
 * bpf_rdonly_cast(), Linux 6.2, which the verifier rewrites to a register move). Each load
 * of a pointer field through a trusted or RCU pointer makes the verifier look up
 * "<struct>__safe_trusted", "__safe_trusted_or_null", "__safe_rcu" and
 * "__safe_rcu_or_null" in the kernel's BTF (check_ptr_to_btf_access() ->
 * btf_nested_type_is_trusted(), each a linear search by name of its types on 6.18), and
 * does so for every path that reaches the load: 25 of the iterator's 28 ms of
 * verification here, paid by every run without a pinned set. Through the alias the load
 * is a fault-safe BPF_PROBE_MEM one and nothing is looked up; the pointer loaded is
 * untrusted too, which changes nothing for the loads through it (loads through the
 * untagged pointers these fields gave already were BPF_PROBE_MEM ones). Integer fields
 * are still read through the trusted pointer, as plain loads: reading every field through
 * the alias cost 1-2 ms more per pass over 50,000 tasks (the PROBE_MEM address check, ~8
 * instructions per load on x86). For the same reason the walk's per-task blocks, verified
 * once at `tasksnap pin`, keep their trusted pointer loads (the alias there cost 0.9 ms of
 * a 9 ms pass); its setup and its rare paths use the alias.
 * Kernels before 6.2 have neither the kfunc nor the lookups: the pointer is used as is.
 */
#define UNTRUSTED(p, type)                                                              \
	(bpf_ksym_exists(bpf_rdonly_cast) ? bpf_core_cast((p), type) : (type *)(p))
#define TASK_PTR(t, field) (UNTRUSTED((t), struct task_struct)->field)

/*
 * The mm's RSS counters (MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES).
 *
 * Linux 6.2 (commit f1a7941243c1, "mm: convert mm's rss stats into percpu_counter") made
 * mm->rss_stat[] an array of struct percpu_counter: a central `count` plus an s32 delta per
 * CPU (`counters`, a __percpu pointer), folded into `count` only when a delta reaches the
 * batch (32 or more pages here). Before, it was struct mm_rss_stat, one atomic_long_t per
 * counter. /proc/PID/stat's rss has always read the central value; /proc/PID/statm and
 * status read it too until Linux 6.16 (commit 82241a83, "mm: fix the inaccurate memory
 * statistics issue for users": get_mm_counter_sum(), i.e. percpu_counter_sum_positive()),
 * which adds every CPU's delta.
 */
struct mm_rss_stat___pre62 {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

/* Whether the counters are per-CPU (Linux 6.2+): only then is there a delta to add. */
static __always_inline bool mm_rss_percpu(struct mm_struct *mm)
{
	return bpf_core_field_exists(mm->rss_stat[0].counters);
}

/* Counter `i`'s central value (what get_mm_counter() reads, before its clamp at 0). */
static __always_inline __s64 mm_counter_central(struct mm_struct *mm, __u32 i)
{
	if (mm_rss_percpu(mm))
		return mm->rss_stat[i & 3].count;
	return BPF_CORE_READ((struct mm_struct___pre62 *)mm, rss_stat.count[i & 3].counter);
}

#endif /* TASKSNAP_COMPAT_H */
