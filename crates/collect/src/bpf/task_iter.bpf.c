// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tasksnap's task iterator: one pass over every task visible in the reader's pid namespace,
 * writing a binary record per task (record.h) with only the groups asked for. This is the
 * task_diag idea on stock kernels (iter/task: Linux 5.8).
 *
 * Each read of the iterator's file runs this program for as many tasks as fit in the
 * seq_file buffer; user space reads until EOF. The pass is not atomic: tasks that fork or
 * exit meanwhile may be missed or included, as with a readdir of /proc.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "record.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Level of the reader's pid namespace (0 = initial): pids are translated to it. Set by user
 * space between open and load. */
const volatile __u32 ns_level = 0;
/* TS_GROUP_* blocks to write: set by user space before each pass (the program is loaded once
 * per process and serves queries for different groups). */
__u32 groups = 0;

/* Layout anchors: never written, they make the record types part of this object's BTF so
 * that libbpf-cargo generates the Rust definitions from record.h. */
struct ts_hdr ts_hdr_layout = {};
struct ts_base ts_base_layout = {};
struct ts_cred ts_cred_layout = {};
struct ts_stat ts_stat_layout = {};
struct ts_sched ts_sched_layout = {};

/* Linux 5.14 (commit 2f064a59a11f) renamed task_struct::state to __state. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* Linux 6.0 (commit 64d608db38ff) moved tty_struct::pgrp into tty_struct::ctrl. */
struct tty_struct___pre60 {
	struct pid *pgrp;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* pid_nr_ns(pid, reader's ns): 0 when the pid has no number at that level. */
static __always_inline __u32 nr_in_ns(struct pid *pid)
{
	struct upid upid = {};
	__u32 level;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (level < ns_level)
		return 0;
	if (bpf_core_read(&upid, sizeof(upid), &pid->numbers[ns_level]))
		return 0;
	return upid.nr;
}

static __always_inline __u32 tty_nr(struct tty_struct *tty)
{
	__u32 major, minor;

	if (!tty)
		return 0;
	major = BPF_CORE_READ(tty, driver, major);
	minor = BPF_CORE_READ(tty, driver, minor_start) + BPF_CORE_READ(tty, index);
	/* new_encode_dev() */
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
}

static __always_inline __s32 tty_pgrp(struct tty_struct *tty)
{
	struct pid *pgrp;

	if (!tty)
		return -1;
	if (bpf_core_field_exists(tty->ctrl))
		pgrp = BPF_CORE_READ(tty, ctrl.pgrp);
	else
		pgrp = BPF_CORE_READ((struct tty_struct___pre60 *)tty, pgrp);
	/* /proc: pid_nr_ns(tty_get_pgrp(tty)), which is 0 for a tty without a process group */
	return nr_in_ns(pgrp);
}

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct signal_struct *sig;
	struct ts_hdr hdr = {};

	if (!t)
		return 0;
	hdr.tid = nr_in_ns(BPF_CORE_READ(t, thread_pid));
	hdr.tgid = nr_in_ns(BPF_CORE_READ(t, group_leader, thread_pid));
	if (!hdr.tid)
		return 0;
	hdr.start_boottime_ns = BPF_CORE_READ(t, start_boottime);
	hdr.groups = groups;
	hdr.global_tid = BPF_CORE_READ(t, pid);
	bpf_seq_write(seq, &hdr, sizeof(hdr));
	sig = BPF_CORE_READ(t, signal);

	if (groups & TS_GROUP_BASE) {
		struct ts_base b = {};
		struct tty_struct *tty = BPF_CORE_READ(sig, tty);

		b.ppid = nr_in_ns(BPF_CORE_READ(t, real_parent, group_leader, thread_pid));
		b.pgid = nr_in_ns(BPF_CORE_READ(sig, pids[PIDTYPE_PGID]));
		b.sid = nr_in_ns(BPF_CORE_READ(sig, pids[PIDTYPE_SID]));
		b.tty_nr = tty_nr(tty);
		b.tpgid = tty_pgrp(tty);
		b.flags = BPF_CORE_READ(t, flags);
		b.state = task_state(t);
		b.exit_state = BPF_CORE_READ(t, exit_state);
		b.prio = BPF_CORE_READ(t, prio);
		b.static_prio = BPF_CORE_READ(t, static_prio);
		b.policy = BPF_CORE_READ(t, policy);
		b.rt_priority = BPF_CORE_READ(t, rt_priority);
		b.nr_threads = BPF_CORE_READ(sig, nr_threads);
		b.cpu = BPF_CORE_READ(t, thread_info.cpu);
		if (BPF_CORE_READ(t, mm))
			b.locked_vm_pages = BPF_CORE_READ(t, mm, locked_vm);
		bpf_probe_read_kernel_str(b.comm, sizeof(b.comm), t->comm);
		bpf_seq_write(seq, &b, sizeof(b));
	}
	if (groups & TS_GROUP_CRED) {
		struct ts_cred c = {};
		const struct cred *cred = BPF_CORE_READ(t, real_cred);

		c.uid = BPF_CORE_READ(cred, uid.val);
		c.euid = BPF_CORE_READ(cred, euid.val);
		c.suid = BPF_CORE_READ(cred, suid.val);
		c.fsuid = BPF_CORE_READ(cred, fsuid.val);
		c.gid = BPF_CORE_READ(cred, gid.val);
		c.egid = BPF_CORE_READ(cred, egid.val);
		c.sgid = BPF_CORE_READ(cred, sgid.val);
		c.fsgid = BPF_CORE_READ(cred, fsgid.val);
		bpf_seq_write(seq, &c, sizeof(c));
	}
	if (groups & TS_GROUP_STAT) {
		struct ts_stat s = {};
		struct mm_struct *mm = BPF_CORE_READ(t, mm);

		s.utime_ns = BPF_CORE_READ(t, utime);
		s.stime_ns = BPF_CORE_READ(t, stime);
		s.sum_exec_runtime_ns = BPF_CORE_READ(t, se.sum_exec_runtime);
		s.prev_utime_ns = BPF_CORE_READ(t, prev_cputime.utime);
		s.prev_stime_ns = BPF_CORE_READ(t, prev_cputime.stime);
		s.sig_utime_ns = BPF_CORE_READ(sig, utime);
		s.sig_stime_ns = BPF_CORE_READ(sig, stime);
		s.sig_sum_sched_runtime_ns = BPF_CORE_READ(sig, sum_sched_runtime);
		s.sig_prev_utime_ns = BPF_CORE_READ(sig, prev_cputime.utime);
		s.sig_prev_stime_ns = BPF_CORE_READ(sig, prev_cputime.stime);
		s.cutime_ns = BPF_CORE_READ(sig, cutime);
		s.cstime_ns = BPF_CORE_READ(sig, cstime);
		s.min_flt = BPF_CORE_READ(t, min_flt);
		s.maj_flt = BPF_CORE_READ(t, maj_flt);
		s.cmin_flt = BPF_CORE_READ(sig, cmin_flt);
		s.cmaj_flt = BPF_CORE_READ(sig, cmaj_flt);
		s.sig_min_flt = BPF_CORE_READ(sig, min_flt);
		s.sig_maj_flt = BPF_CORE_READ(sig, maj_flt);
		if (mm) {
			__s64 file, anon, shmem;

			s.total_vm_pages = BPF_CORE_READ(mm, total_vm);
			/* get_mm_rss() as /proc/PID/stat reads it: the per-CPU counters' central
			 * values (approximate since Linux 6.2, commit f1a7941243c1), each clamped
			 * at 0 like percpu_counter_read_positive(). */
			file = BPF_CORE_READ(mm, rss_stat[MM_FILEPAGES].count);
			anon = BPF_CORE_READ(mm, rss_stat[MM_ANONPAGES].count);
			shmem = BPF_CORE_READ(mm, rss_stat[MM_SHMEMPAGES].count);
			s.rss_pages = (file > 0 ? file : 0) + (anon > 0 ? anon : 0) +
				      (shmem > 0 ? shmem : 0);
		}
		bpf_seq_write(seq, &s, sizeof(s));
	}
	if (groups & TS_GROUP_SCHED) {
		struct ts_sched sc = {};

		sc.sum_exec_runtime_ns = BPF_CORE_READ(t, se.sum_exec_runtime);
		sc.run_delay_ns = BPF_CORE_READ(t, sched_info.run_delay);
		sc.pcount = BPF_CORE_READ(t, sched_info.pcount);
		sc.nvcsw = BPF_CORE_READ(t, nvcsw);
		sc.nivcsw = BPF_CORE_READ(t, nivcsw);
		bpf_seq_write(seq, &sc, sizeof(sc));
	}
	return 0;
}
