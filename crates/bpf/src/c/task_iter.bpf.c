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
#include "compat.h"
#include "record.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Per-reader settings (record.h, struct ts_reader_cfg), keyed by the reading thread's id.
 * A reader without an entry gets nothing: user space always registers before reading. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ts_reader_cfg);
} reader_cfg SEC(".maps");

static __always_inline struct ts_reader_cfg *my_cfg(void)
{
	__u32 reader = (__u32)bpf_get_current_pid_tgid();

	return bpf_map_lookup_elem(&reader_cfg, &reader);
}

/* Layout anchors: never written, they make the record types part of this object's BTF so
 * that libbpf-cargo generates the Rust definitions from record.h. */
struct ts_hdr ts_hdr_layout = {};
struct ts_base ts_base_layout = {};
struct ts_cred ts_cred_layout = {};
struct ts_stat ts_stat_layout = {};
struct ts_sched ts_sched_layout = {};
struct ts_io ts_io_layout = {};
struct ts_kname ts_kname_layout = {};
struct ts_mem ts_mem_layout = {};
struct ts_sig ts_sig_layout = {};
struct ts_ns ts_ns_layout = {};
struct ts_cmd_hdr ts_cmd_hdr_layout = {};
struct ts_reader_cfg ts_reader_cfg_layout = {};

struct cmd_buf {
	struct ts_cmd_hdr hdr;
	char data[TS_CMDLINE_MAX];
};

/*
 * Scratch space for one command line (too big for the 512-byte BPF stack), one per reading
 * thread. Not per CPU: dump_cmdline sleeps (bpf_copy_from_user_task() can fault and wait
 * for the target's mmap lock), and while it sleeps another reader thread can run the
 * program on the same CPU. With a per-CPU buffer that thread's line overwrote the
 * sleeper's, which then went out under the sleeper's tgid (seen at 50,000 processes: a
 * process shown with another's command line). Task storage (Linux 5.11) belongs to the
 * reader thread and goes away with it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cmd_buf);
} cmd_scratch SEC(".maps");

/*
 * Fields are read by direct access: the iterator hands the program a trusted BTF pointer,
 * and loads through it (and through the pointers read from it) compile to exception-table
 * protected loads, several times cheaper than a bpf_probe_read_kernel() helper call each
 * (which is what BPF_CORE_READ expands to). BPF_CORE_READ is kept for the fallbacks of
 * renamed fields, which are dead code on current kernels.
 */
/* Pointer fields are loaded through UNTRUSTED()/TASK_PTR() (compat.h says why). */
/*
 * The level of the reader's pid namespace: the iterator walks that namespace
 * (task_active_pid_ns(current)), but task->pid is the initial namespace's number. Taken from
 * the reader itself (current->thread_pid->level), not from /proc/self/status, whose NSpid
 * line is relative to whichever namespace the mounted procfs belongs to.
 */
static __always_inline __u32 reader_ns_level(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	return TASK_PTR(cur, thread_pid)->level;
}

/* pid_nr_ns(pid, reader's ns): 0 when the pid has no number at that level. */
static __always_inline __u32 nr_in_ns(struct pid *pid, __u32 level)
{
	__u32 nr = 0;

	if (!pid)
		return 0;
	if (level == 0) {
		nr = pid->numbers[0].nr;
		/* Keep this load in this branch: merged with the stack load below it would be
		 * one instruction on two pointer types, which the verifier refuses. */
		barrier_var(nr);
		return nr;
	}
	if (pid->level < level)
		return 0;
	/* A variable index needs a helper read. */
	if (bpf_core_read(&nr, sizeof(nr), &pid->numbers[level].nr))
		return 0;
	barrier_var(nr);
	return nr;
}

static __always_inline __u32 tty_nr(struct tty_struct *tty)
{
	__u32 major, minor;

	if (!tty)
		return 0;
	major = tty->driver->major;
	minor = tty->driver->minor_start + tty->index;
	/* new_encode_dev() */
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
}

static __always_inline __s32 tty_pgrp(struct tty_struct *tty, __u32 level)
{
	struct pid *pgrp;

	if (!tty)
		return -1;
	if (bpf_core_field_exists(tty->ctrl))
		pgrp = tty->ctrl.pgrp;
	else
		pgrp = BPF_CORE_READ((struct tty_struct___pre60 *)tty, pgrp);
	/* /proc: pid_nr_ns(tty_get_pgrp(tty)), which is 0 for a tty without a process group */
	return nr_in_ns(pgrp, level);
}

/*
 * fs/proc/array.c proc_task_name() for a kernel thread, into name (TS_KNAME_MAX bytes,
 * zeroed by the caller). The worker and kthread structs hang off void pointers
 * (task->worker_private, kthread->data), so they are read with probe reads; the kernel takes
 * wq_pool_attach_mutex and the pool lock for this, the program does not (a name read while
 * a worker switches work items may show either item, as /proc read a moment apart would).
 */
static __always_inline void kernel_name(struct task_struct *t, char *name)
{
	struct kthread___v66 *kt = t->worker_private;
	struct worker *w;
	char *full = NULL;
	long len;

	/* get_kthread_comm(): the full name when there is one, else comm. The string read's
	 * length (NUL included) doubles as strlen: a loop over the bytes would be explored
	 * by the verifier once per length inside the walk's task loop. */
	if (kt && bpf_core_field_exists(kt->full_name))
		full = BPF_CORE_READ(kt, full_name);
	if (full)
		len = bpf_probe_read_kernel_str(name, TS_KNAME_MAX, full);
	else
		len = bpf_probe_read_kernel_str(name, 16, t->comm);
	if (!kt || !(t->flags & PF_WQ_WORKER))
		return;
	/* wq_worker_comm(): then '+' or '-' and the worker's description, when it has a pool
	 * and a description, into the 64 bytes of proc_task_name()'s buffer. */
	w = BPF_CORE_READ(kt, data);
	if (!w || !BPF_CORE_READ(w, pool))
		return;
	len -= 1;
	if (len < 0 || len >= 30)
		return;
	if (BPF_CORE_READ(w, desc[0]) == 0)
		return;
	name[len & 31] = BPF_CORE_READ(w, current_work) ? '+' : '-';
	bpf_probe_read_kernel_str(&name[(len & 31) + 1], 32, &w->desc);
}

/*
 * The blocks of one record, each written in full (every field, so that reused arena memory
 * never leaks a previous pass's bytes) through a pointer: to the stack for the seq_file
 * path, straight into the arena for the walk.
 */
static __always_inline void fill_base(struct ts_base *b, struct task_struct *t,
				      struct signal_struct *sig, struct mm_struct *mm,
				      struct task_struct *parent, __u32 level)
{
	struct tty_struct *tty = sig->tty;

	if (level == 0)
		b->ppid = parent->tgid;
	else
		b->ppid = nr_in_ns(TASK_PTR(parent, group_leader)->thread_pid, level);
	b->pgid = nr_in_ns(sig->pids[PIDTYPE_PGID], level);
	b->sid = nr_in_ns(sig->pids[PIDTYPE_SID], level);
	b->tty_nr = tty_nr(tty);
	b->tpgid = tty_pgrp(tty, level);
	b->flags = t->flags;
	b->state = task_state(t);
	b->exit_state = t->exit_state;
	b->prio = t->prio;
	b->static_prio = t->static_prio;
	b->policy = t->policy;
	b->rt_priority = t->rt_priority;
	b->nr_threads = sig->nr_threads;
	b->cpu = t->thread_info.cpu;
	__builtin_memcpy(b->comm, t->comm, sizeof(b->comm));
	b->locked_vm_pages = mm ? mm->locked_vm : 0;
	b->css_set_key = (__u64)t->cgroups;
}

static __always_inline void fill_cred(struct ts_cred *c, const struct cred *cred)
{

	c->uid = cred->uid.val;
	c->euid = cred->euid.val;
	c->suid = cred->suid.val;
	c->fsuid = cred->fsuid.val;
	c->gid = cred->gid.val;
	c->egid = cred->egid.val;
	c->sgid = cred->sgid.val;
	c->fsgid = cred->fsgid.val;
}

static __always_inline void fill_stat(struct ts_stat *s, struct task_struct *t,
				      struct signal_struct *sig, struct mm_struct *mm)
{
	s->utime_ns = t->utime;
	s->stime_ns = t->stime;
	s->sum_exec_runtime_ns = t->se.sum_exec_runtime;
	s->prev_utime_ns = t->prev_cputime.utime;
	s->prev_stime_ns = t->prev_cputime.stime;
	s->sig_utime_ns = sig->utime;
	s->sig_stime_ns = sig->stime;
	s->sig_sum_sched_runtime_ns = sig->sum_sched_runtime;
	s->sig_prev_utime_ns = sig->prev_cputime.utime;
	s->sig_prev_stime_ns = sig->prev_cputime.stime;
	s->cutime_ns = sig->cutime;
	s->cstime_ns = sig->cstime;
	s->min_flt = t->min_flt;
	s->maj_flt = t->maj_flt;
	s->cmin_flt = sig->cmin_flt;
	s->cmaj_flt = sig->cmaj_flt;
	s->sig_min_flt = sig->min_flt;
	s->sig_maj_flt = sig->maj_flt;
	s->total_vm_pages = 0;
	s->rss_pages = 0;
	s->swap_pages = 0;
	if (mm) {
		__s64 file, anon, shmem, swap;

		s->total_vm_pages = mm->total_vm;
		/* get_mm_rss() as /proc/PID/stat reads it: the per-CPU counters' central
		 * values (approximate since Linux 6.2, commit f1a7941243c1), each clamped
		 * at 0 like percpu_counter_read_positive(). */
		file = mm_counter_central(mm, MM_FILEPAGES);
		anon = mm_counter_central(mm, MM_ANONPAGES);
		shmem = mm_counter_central(mm, MM_SHMEMPAGES);
		s->rss_pages = (file > 0 ? file : 0) + (anon > 0 ? anon : 0) +
			       (shmem > 0 ? shmem : 0);
		swap = mm_counter_central(mm, MM_SWAPENTS);
		s->swap_pages = swap > 0 ? swap : 0;
	}
}

static __always_inline void fill_sched(struct ts_sched *sc, struct task_struct *t)
{
	sc->sum_exec_runtime_ns = t->se.sum_exec_runtime;
	sc->run_delay_ns = t->sched_info.run_delay;
	sc->pcount = t->sched_info.pcount;
	sc->nvcsw = t->nvcsw;
	sc->nivcsw = t->nivcsw;
}

static __always_inline void fill_io(struct ts_io *io, struct task_struct *t,
				    struct signal_struct *sig)
{
	io->rchar = t->ioac.rchar;
	io->wchar = t->ioac.wchar;
	io->syscr = t->ioac.syscr;
	io->syscw = t->ioac.syscw;
	io->read_bytes = t->ioac.read_bytes;
	io->write_bytes = t->ioac.write_bytes;
	io->cancelled_write_bytes = t->ioac.cancelled_write_bytes;
	io->sig_rchar = sig->ioac.rchar;
	io->sig_wchar = sig->ioac.wchar;
	io->sig_syscr = sig->ioac.syscr;
	io->sig_syscw = sig->ioac.syscw;
	io->sig_read_bytes = sig->ioac.read_bytes;
	io->sig_write_bytes = sig->ioac.write_bytes;
	io->sig_cancelled_write_bytes = sig->ioac.cancelled_write_bytes;
}

/*
 * The namespaces /proc/PID/ns/NAME resolve to (fs/proc/namespaces.c, each ns_operations'
 * get()): cgroup, ipc, mnt, net, time and uts from task->nsproxy (none once the task has
 * exited: exit_task_namespaces() clears it, so a zombie has none of them); pid from
 * task_active_pid_ns(), the namespace of the task's own pid at its level (there until the
 * zombie is reaped); user from the task's credentials (__task_cred(), i.e. real_cred). The
 * time link exists only with CONFIG_TIME_NS (Linux 5.6), hence the field test. Loads go
 * through untrusted aliases (compat.h): a NULL pointer on the way reads as 0.
 * oom_score_adj is the signal struct's (proc_oom_score_adj_read()); loginuid the task's
 * own, under CONFIG_AUDIT (proc_loginuid_read()).
 */
static __always_inline void fill_ns(struct ts_ns *n, struct task_struct *t,
				    struct signal_struct *sig)
{
	struct nsproxy *nsp = UNTRUSTED(TASK_PTR(t, nsproxy), struct nsproxy);
	struct pid *pid = TASK_PTR(t, thread_pid);
	const struct cred *cred = TASK_PTR(t, real_cred);
	struct pid_namespace *pns = NULL;
	__u32 level, i;

	/* Every field is written: the walk's record space is reused from task to task, and a
	 * zombie's namespaces that are gone must read 0, not the previous task's. */
	for (i = 0; i < 8; i++)
		n->inum[i] = 0;
	if (nsp) {
		n->inum[0] = nsp->cgroup_ns ? nsp->cgroup_ns->ns.inum : 0;
		n->inum[1] = nsp->ipc_ns ? nsp->ipc_ns->ns.inum : 0;
		n->inum[2] = nsp->mnt_ns ? nsp->mnt_ns->ns.inum : 0;
		n->inum[3] = nsp->net_ns ? nsp->net_ns->ns.inum : 0;
		if (bpf_core_field_exists(nsp->time_ns))
			n->inum[5] = nsp->time_ns ? nsp->time_ns->ns.inum : 0;
		n->inum[7] = nsp->uts_ns ? nsp->uts_ns->ns.inum : 0;
	}
	if (pid) {
		/* A variable index needs a helper read (as in nr_in_ns()). */
		level = UNTRUSTED(pid, struct pid)->level;
		if (!bpf_core_read(&pns, sizeof(pns), &pid->numbers[level & 31].ns) && pns)
			n->inum[4] = BPF_CORE_READ(pns, ns.inum);
	}
	if (cred) {
		struct user_namespace *uns = UNTRUSTED(cred, struct cred)->user_ns;

		n->inum[6] = uns ? uns->ns.inum : 0;
	}
	n->oom_score_adj = UNTRUSTED(sig, struct signal_struct)->oom_score_adj;
	n->loginuid = 0xffffffff;
	n->flags = 0;
	if (bpf_core_field_exists(t->loginuid)) {
		n->loginuid = t->loginuid.val;
		n->flags |= TS_NS_LOGINUID;
	}
	n->pad = 0;
}

/*
 * Exact RSS counters, as /proc/PID/statm adds them up on Linux 6.16+ (compat.h): each
 * counter's central value plus its delta on every CPU. The deltas sit at
 * per_cpu_ptr(counters, cpu) = counters + __per_cpu_offset[cpu]. That array is a data
 * symbol, which kernels without CONFIG_KALLSYMS_ALL (this VM's) do not list, so a __ksym
 * reference to it does not load; and the kernel's BTF does not tag `counters` __percpu, so
 * bpf_per_cpu_ptr() refuses it. The offsets are learned from a per-CPU map of our own
 * instead: the kernel keeps a PERCPU_ARRAY element as one __percpu pointer
 * (struct bpf_array, pptrs[0]), and bpf_map_lookup_percpu_elem() (Linux 5.19) returns
 * per_cpu_ptr(pptrs[0], cpu), the element's address on that CPU; the difference is
 * __per_cpu_offset[cpu].
 *
 * The learned offsets live in that same map, one copy per CPU, each written and read only
 * by programs running on its CPU (programs run with migration disabled), so no reader sees
 * a copy another CPU is half-way through. A run that preempts a learning one on the same CPU
 * finds the copy not learned yet and learns it itself: both write the same values, and the
 * copy is marked learned only after its last offset.
 *
 * The sum is read without the counter's lock (percpu_counter_sum() takes it): while a
 * process's memory changes, a delta being folded into the central value can be counted
 * twice or not at all, up to the batch for that instant, as /proc read a moment apart
 * would differ anyway. A process whose memory does not change reads exactly what statm
 * prints.
 */
#define TS_PCPU_MAX 2000	/* a per-CPU map value is at most 32 KiB */

struct pcpu_offsets {
	__u64 off[TS_PCPU_MAX];
	__u32 n;		/* CPUs learned (nr_cpu_ids) */
	__u32 state;		/* 0 not yet, 1 learned, 2 cannot (more CPUs than TS_PCPU_MAX) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcpu_offsets);
} pcpu_offsets SEC(".maps");

/*
 * A pointer's value as a number. The verifier allows no arithmetic on a map pointer, nor
 * subtracting an unknown number from a map value pointer; a privileged program (the task
 * iterator needs root) may hand a pointer to a helper, so the pointer is copied from the
 * stack slot that holds it. (A global variable would do it too, but would be shared by
 * the CPUs learning at once.)
 */
static __always_inline __u64 ptr_value(const void *p)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &p);
	return v;
}

/* Learns every possible CPU's per-CPU offset into `o` (this CPU's copy). */
static __noinline void pcpu_learn(struct pcpu_offsets *o)
{
	__u32 zero = 0, cpu, n = 0;
	__u64 pptr = 0;
	void *p;

	/* Cannot (state 2) until shown otherwise. */
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_map_lookup_percpu_elem)) {
		o->state = 2;
		return;
	}
	/* &pcpu_offsets is the map's struct bpf_array; its pptrs[0] the element's __percpu
	 * pointer. */
	if (bpf_probe_read_kernel(&pptr, sizeof(pptr),
				  (void *)(ptr_value(&pcpu_offsets) +
					   bpf_core_field_offset(struct bpf_array, pptrs))) ||
	    !pptr) {
		o->state = 2;
		return;
	}
	bpf_for(cpu, 0, TS_PCPU_MAX + 1) {
		p = bpf_map_lookup_percpu_elem(&pcpu_offsets, &zero, cpu);
		if (!p)
			break;
		if (cpu >= TS_PCPU_MAX) {
			o->state = 2;
			return;
		}
		o->off[cpu] = ptr_value(p) - pptr;
		n = cpu + 1;
	}
	if (!n) {
		o->state = 2;
		return;
	}
	o->n = n;
	o->state = 1;
}

/*
 * The 16 bytes at kernel address va as two 8-byte loads through a cast pointer
 * (bpf_rdonly_cast(), which the JIT makes fault-safe: a bad address reads 0), instead of a
 * bpf_probe_read_kernel() call; timespec64 is a kernel struct of two 64-bit members.
 */
static __always_inline void load_16(__u64 va, __u64 *lo, __u64 *hi)
{
	struct timespec64 *ts = bpf_core_cast((void *)va, struct timespec64);

	*lo = (__u64)ts->tv_sec;
	*hi = (__u64)ts->tv_nsec;
}

/*
 * The statm block (record.h) of the mm at mm_addr (0: none), every field written;
 * TS_MEM_EXACT when every CPU's deltas were added to the counters' central values.
 * Global, so that the verifier checks it (and its loops) once, not in each program that
 * writes the block; it takes the mm as a number (ptr_value()) because a global function
 * can take a task or mm pointer only with __arg_trusted (Linux 6.8), which the iterator
 * must load without. Its loads go through a cast pointer (bpf_rdonly_cast(), Linux 6.2),
 * fault-safe.
 *
 * percpu_counter_init_many() (Linux 6.5) gives an mm's four counters one allocation, four
 * consecutive s32 on each CPU: then each CPU takes two loads. Otherwise each counter is
 * read on its own.
 */
__noinline int mem_block(__u64 mm_addr, struct ts_mem *m)
{
	__u32 zero = 0, cpu, n;
	struct pcpu_offsets *o;
	struct mm_struct *mm;
	__u64 c_file, c_anon, c_swap, c_shmem, lo, hi, off;
	__s64 file = 0, anon = 0, swap = 0, shmem = 0;

	if (!m)
		return 0;
	__builtin_memset(m, 0, sizeof(*m));
	if (!mm_addr) {
		m->flags = TS_MEM_EXACT;
		return 0;
	}
	if (!bpf_ksym_exists(bpf_rdonly_cast))
		return 0;
	mm = bpf_core_cast((void *)mm_addr, struct mm_struct);
	m->total_vm = mm->total_vm;
	m->data_vm = mm->data_vm;
	m->stack_vm = mm->stack_vm;
	m->start_code = mm->start_code;
	m->end_code = mm->end_code;
	if (!mm_rss_percpu(mm))
		return 0;
	m->file = mm->rss_stat[MM_FILEPAGES].count;
	m->anon = mm->rss_stat[MM_ANONPAGES].count;
	m->swap = mm->rss_stat[MM_SWAPENTS].count;
	m->shmem = mm->rss_stat[MM_SHMEMPAGES].count;

	o = bpf_map_lookup_elem(&pcpu_offsets, &zero);
	if (!o)
		return 0;
	if (o->state == 0)
		pcpu_learn(o);
	if (o->state != 1)
		return 0;
	c_file = (__u64)mm->rss_stat[MM_FILEPAGES].counters;
	c_anon = (__u64)mm->rss_stat[MM_ANONPAGES].counters;
	c_swap = (__u64)mm->rss_stat[MM_SWAPENTS].counters;
	c_shmem = (__u64)mm->rss_stat[MM_SHMEMPAGES].counters;
	n = o->n;
	if (c_anon == c_file + 4 && c_swap == c_file + 8 && c_shmem == c_file + 12) {
		bpf_for(cpu, 0, n) {
			if (cpu >= TS_PCPU_MAX)
				break;
			off = o->off[cpu];
			/* MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES, in that
			 * order (little-endian halves). */
			load_16(c_file + off, &lo, &hi);
			file += (__s32)lo;
			anon += (__s32)(lo >> 32);
			swap += (__s32)hi;
			shmem += (__s32)(hi >> 32);
		}
	} else {
		bpf_for(cpu, 0, n) {
			if (cpu >= TS_PCPU_MAX)
				break;
			off = o->off[cpu];
			file += bpf_core_cast((void *)(c_file + off), struct pollfd)->fd;
			anon += bpf_core_cast((void *)(c_anon + off), struct pollfd)->fd;
			swap += bpf_core_cast((void *)(c_swap + off), struct pollfd)->fd;
			shmem += bpf_core_cast((void *)(c_shmem + off), struct pollfd)->fd;
		}
	}
	m->file += file;
	m->anon += anon;
	m->swap += swap;
	m->shmem += shmem;
	m->cpus = n;
	m->flags = TS_MEM_EXACT;
	return 0;
}

/* SIG_IGN and SIG_DFL, include/uapi/asm-generic/signal-defs.h (macros: not in BTF). */
#define TS_SIG_DFL 0
#define TS_SIG_IGN 1

/*
 * The ignored and caught masks of the handlers at sighand_addr (0: none, and then every mask
 * is zero, as task_sig() leaves them when lock_task_sighand() fails), as
 * collect_sigign_sigcatch() (fs/proc/array.c) sorts them: SIG_IGN is ignored, anything but
 * SIG_DFL caught. The pending and blocked masks must already be in `s`. Inline, so that it
 * is only in dump_task_rare (see there); each handler is loaded through a cast pointer (fault-safe), or
 * read with bpf_probe_read_kernel() on kernels without bpf_rdonly_cast() (before 6.2).
 * The kernel reads the handlers under the siglock; a handler changed meanwhile shows either
 * way, as it could have in /proc a moment earlier or later.
 */
static __always_inline int sig_block(__u64 sighand_addr, struct ts_sig *s)
{
	__u64 at, handler, ignored = 0, caught = 0;
	__u32 i, n, size;

	if (!s)
		return 0;
	if (!sighand_addr) {
		__builtin_memset(s, 0, sizeof(*s));
		return 0;
	}
	size = bpf_core_type_size(struct k_sigaction);
	n = bpf_core_field_size(struct sighand_struct, action) / (size ? size : 1);
	at = sighand_addr + bpf_core_field_offset(struct sighand_struct, action) +
	     bpf_core_field_offset(struct k_sigaction, sa.sa_handler);
	bpf_for(i, 0, 64) {
		if (i >= n)
			break;
		if (bpf_ksym_exists(bpf_rdonly_cast))
			handler = (__u64)bpf_core_cast((void *)at, struct sigaction)->sa_handler;
		else if (bpf_probe_read_kernel(&handler, sizeof(handler), (void *)at))
			handler = TS_SIG_DFL;
		if (handler == TS_SIG_IGN)
			ignored |= 1ull << i;
		else if (handler != TS_SIG_DFL)
			caught |= 1ull << i;
		at += size;
	}
	s->ignored = ignored;
	s->caught = caught;
	return 0;
}

static __always_inline void fill_sig(struct ts_sig *s, struct task_struct *t,
				     struct signal_struct *sig)
{
	s->pending = t->pending.signal.sig[0];
	s->shared_pending = sig->shared_pending.signal.sig[0];
	s->blocked = t->blocked.sig[0];
	sig_block(ptr_value(TASK_PTR(t, sighand)), s);
}

/* The header of t's record for a reader at pid namespace `level`; false when t has no
 * number in that namespace. */
static __always_inline bool fill_hdr(struct ts_hdr *hdr, struct task_struct *t, __u32 groups,
				     __u32 level)
{
	if (level == 0) {
		hdr->tid = t->pid;
		hdr->tgid = t->tgid;
	} else {
		hdr->tid = nr_in_ns(TASK_PTR(t, thread_pid), level);
		hdr->tgid = nr_in_ns(TASK_PTR(t, group_leader)->thread_pid, level);
	}
	if (!hdr->tid)
		return false;
	hdr->ns_level = level;
	hdr->start_boottime_ns = t->start_boottime;
	if ((groups & TS_GROUP_BASE) && (t->flags & PF_KTHREAD))
		groups |= TS_GROUP_KNAME;
	hdr->groups = groups;
	hdr->global_tid = t->pid;
	hdr->pad = 0;
	return true;
}

/*
 * One task's record. `rare` (a constant in each program) adds the signal and namespace
 * blocks (TS_RARE_GROUPS): they are in a program of their own, dump_task_rare, loaded only
 * when a query asks for them, because their kernel types cost every load their CO-RE
 * relocation (libbpf scans the kernel's BTF once per type: about 28 ms of CPU for these
 * thirteen types, a fifth of `ps -e -o pid,ppid,user,stat,comm` at 50,000 processes), and
 * libbpf relocates only the programs it loads. Nothing outside these two programs may touch
 * those types: .text functions are always relocated.
 */
static __always_inline int dump_one(struct bpf_iter__task *ctx, const bool rare)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct signal_struct *sig;
	struct mm_struct *mm;
	struct ts_reader_cfg *cfg;
	struct ts_hdr hdr = {};
	__u32 level, groups;

	if (!t)
		return 0;
	cfg = my_cfg();
	if (!cfg)
		return 0;
	/* Sharded passes split the field reads (cache misses in task, signal, cred and mm)
	 * across cores; each reader still walks every task. */
	if (cfg->nshards > 1 && (__u32)t->tgid % cfg->nshards != cfg->shard)
		return 0;
	level = reader_ns_level();
	if (!fill_hdr(&hdr, t, rare ? cfg->groups : cfg->groups & ~TS_RARE_GROUPS, level))
		return 0;
	groups = hdr.groups;
	bpf_seq_write(seq, &hdr, sizeof(hdr));
	sig = TASK_PTR(t, signal);
	mm = TASK_PTR(t, mm);

	if (groups & TS_GROUP_BASE) {
		struct ts_base b = {};

		fill_base(&b, t, sig, mm, TASK_PTR(t, real_parent), level);
		bpf_seq_write(seq, &b, sizeof(b));
	}
	if (groups & TS_GROUP_CRED) {
		struct ts_cred c = {};

		fill_cred(&c, TASK_PTR(t, real_cred));
		bpf_seq_write(seq, &c, sizeof(c));
	}
	if (groups & TS_GROUP_STAT) {
		struct ts_stat s = {};

		fill_stat(&s, t, sig, mm);
		bpf_seq_write(seq, &s, sizeof(s));
	}
	if (groups & TS_GROUP_SCHED) {
		struct ts_sched sc = {};

		fill_sched(&sc, t);
		bpf_seq_write(seq, &sc, sizeof(sc));
	}
	if (groups & TS_GROUP_IO) {
		struct ts_io io = {};

		fill_io(&io, t, sig);
		bpf_seq_write(seq, &io, sizeof(io));
	}
	if (groups & TS_GROUP_KNAME) {
		struct ts_kname kn = {};

		kernel_name(t, kn.name);
		bpf_seq_write(seq, &kn, sizeof(kn));
	}
	if (groups & TS_GROUP_MEM) {
		struct ts_mem m = {};

		mem_block(ptr_value(mm), &m);
		bpf_seq_write(seq, &m, sizeof(m));
	}
	if (rare && (groups & TS_GROUP_SIG)) {
		struct ts_sig sg = {};

		fill_sig(&sg, t, sig);
		bpf_seq_write(seq, &sg, sizeof(sg));
	}
	if (rare && (groups & TS_GROUP_NS)) {
		struct ts_ns n = {};

		fill_ns(&n, t, sig);
		bpf_seq_write(seq, &n, sizeof(n));
	}
	return 0;
}

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	return dump_one(ctx, false);
}

SEC("iter/task")
int dump_task_rare(struct bpf_iter__task *ctx)
{
	return dump_one(ctx, true);
}

/*
 * The walk: the same records, written by one program run per reader straight into memory
 * the reader has mapped (an arena), instead of through a seq_file. The open-coded task
 * iterator (bpf_iter_task_new, Linux 6.7, commit c68a78ffe2cb) follows the task lists
 * (next_task/next_thread) where iter/task looks every pid up in the pid idr and takes a
 * reference on its task (get_pid_task, pid_nr_ns: a third of a pass's kernel time at
 * 50,000 tasks), and nothing is copied to user space: there is no read() at all.
 *
 * The program is BPF_PROG_TYPE_SYSCALL, run by BPF_PROG_TEST_RUN in the reader's own
 * thread; the whole walk is one RCU read-side section.
 */
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;

/* The arena template: each reader process creates its own (any number of chunks) and puts
 * it in `arenas` under its key for the duration of a pass. */
struct arena {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TS_CHUNK_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__array(values, struct arena);
} arenas SEC(".maps");

struct ts_walk_args ts_walk_args_layout = {};
struct ts_cmd_req ts_cmd_req_layout = {};
struct ts_cmd_args ts_cmd_args_layout = {};

/*
 * The walk's blocks as global functions: the verifier checks each once, on its own, instead
 * of once for every combination of blocks on every path through the loop body (which took
 * it over five seconds). Linux 6.8 (commit e2b3c4ff5d18, __arg_trusted) lets them take the
 * task.
 */
__noinline int walk_base(struct task_struct *t __arg_trusted, struct ts_base *b __arg_nonnull,
			 __u32 level)
{
	fill_base(b, t, t->signal, t->mm, t->real_parent, level);
	return 0;
}

__noinline int walk_cred(struct task_struct *t __arg_trusted, struct ts_cred *c __arg_nonnull)
{
	fill_cred(c, t->real_cred);
	return 0;
}

__noinline int walk_stat(struct task_struct *t __arg_trusted, struct ts_stat *s __arg_nonnull)
{
	fill_stat(s, t, t->signal, t->mm);
	return 0;
}

__noinline int walk_sched(struct task_struct *t __arg_trusted, struct ts_sched *sc __arg_nonnull)
{
	fill_sched(sc, t);
	return 0;
}

__noinline int walk_io(struct task_struct *t __arg_trusted, struct ts_io *io __arg_nonnull)
{
	fill_io(io, t, t->signal);
	return 0;
}

__noinline int walk_mem(struct task_struct *t __arg_trusted, struct ts_mem *m __arg_nonnull)
{
	mem_block(ptr_value(TASK_PTR(t, mm)), m);
	return 0;
}

__noinline int walk_kname(struct task_struct *t __arg_trusted, struct ts_kname *kn __arg_nonnull)
{
	char name[TS_KNAME_MAX] = {};

	kernel_name(t, name);
	__builtin_memcpy(kn->name, name, TS_KNAME_MAX);
	return 0;
}

/*
 * The walk's TS_WALK_CHANGED mode (record.h): has a process run since the reader's last
 * pass began (`since_ns`, CLOCK_MONOTONIC)? A thread's se.exec_start is the task clock
 * (rq->clock_task) of its CPU at the last update of its run time: every change of
 * sum_exec_runtime (update_curr()) moves it, and everything a thread changes for itself
 * (times, faults, switches, I/O, state, name, credentials) needs it to run. So its CPU's
 * task clock now, minus exec_start, is how long ago it last ran, in task-clock time. The
 * task clock leaves out IRQ and steal time and may be stale on an idle CPU: both make that
 * figure smaller than the real one, so the test below writes more than it must, never
 * less. Task clocks of different CPUs do not agree, which is why each thread is measured
 * against its own CPU's (se.cfs_rq->rq, set with the CPU: Linux 2.6.24 group scheduling).
 * A migrated thread has exec_start 0 until it runs (migrate_task_rq_fair()); a thread that
 * is running or waiting for a CPU is always written.
 */
__noinline int task_ran(struct task_struct *th __arg_trusted, __u64 window_ns)
{
	struct cfs_rq *cfs = th->se.cfs_rq;
	__u64 clock, start = th->se.exec_start;

	if (task_state(th) == 0 || th->on_cpu || !cfs)
		return 1;
	clock = cfs->rq->clock_task;
	return start > clock || clock - start <= window_ns;
}

/* Whether any thread of the process led by `leader` ran in the last `window_ns`. */
__noinline int proc_ran(struct task_struct *leader __arg_trusted, __u64 window_ns)
{
	struct task_struct *th;
	int ran = 0;

	/* One thread (its node is the only one on the signal's list, Linux 6.6 commit
	 * 8e1f385104ac): no thread iterator. */
	if (bpf_core_field_exists(leader->thread_node) &&
	    leader->thread_node.next == leader->thread_node.prev)
		return task_ran(leader, window_ns);
	bpf_rcu_read_lock();
	bpf_for_each(task, th, leader, BPF_TASK_ITER_PROC_THREADS) {
		if (task_ran(th, window_ns)) {
			ran = 1;
			break;
		}
	}
	bpf_rcu_read_unlock();
	return ran;
}

/* The tid a record of t would carry: its number in the reader's namespace. */
static __always_inline __u32 fill_tid(struct task_struct *t, __u32 level)
{
	if (level == 0)
		return t->pid;
	return nr_in_ns(TASK_PTR(t, thread_pid), level);
}

/* Room for one record. The data is twice the longest line read so that the verifier can
 * check the second piece of a line that crosses a page (at an offset up to a page, of up
 * to a page) against it; a record uses only its header and len bytes. */
struct ts_cmd_space {
	struct ts_cmd_hdr hdr;
	char data[2 * TS_CMDLINE_MAX];
};


/* An output record never crosses a chunk: one that might not fit starts the next. */
#define CMD_ROOM (TS_CHUNK_BYTES - sizeof(struct ts_cmd_space) - sizeof(struct ts_cmd_hdr))

/*
 * The argument area read without the target's mmap lock, as the kernel's own lock-free
 * get_user_pages_fast() does (mm/gup.c, gup_fast()): walk the process's page tables to the
 * page, read the bytes through the kernel's direct map of physical memory, then check that
 * nothing moved under the read. __access_remote_vm(), which bpf_copy_from_user_task() and
 * /proc/PID/cmdline use, takes the mmap lock, looks the address up in the VMA tree twice and
 * takes a page reference: at 50,000 processes that was 2.4 us a process, this about a third
 * of it (docs/benchmarks.md). It also never waits for a process stuck holding its mmap lock.
 *
 * x86-64 only (the entry format below is that architecture's; elsewhere every line goes
 * through the copy). Why it is safe and exact:
 * - Page-table pages are freed after an RCU grace period on x86 (MMU_GATHER_RCU_TABLE_FREE,
 *   selected by arch/x86/Kconfig since Linux 5.x), and the walk holds bpf_rcu_read_lock(). In
 *   the one case the kernel frees one without waiting (tlb_remove_table_one() when it cannot
 *   allocate a batch, after an IPI that only waits for IRQ-disabled walkers), every read
 *   here is still fault-safe (bpf_probe_read_kernel()) and the re-check below fails.
 * - The data page is not pinned. The page's last-level entry is read again after the
 *   bytes: the kernel clears an entry before it frees the page it mapped, and x86 does not
 *   reorder loads, so an unchanged entry means the bytes came from that page while it was
 *   mapped there. The caller then checks that the task still has this mm and is not
 *   exiting (exec and exit tear the old mm down only after those change).
 * - Only present user pages that are not "special" (PFN maps of device memory, which GUP
 *   refuses too) are read; anything else (swapped out, migrating, PROT_NONE) goes through
 *   the copy.
 * - Where physical memory is mapped (page_offset_base, randomized at boot) is found, not
 *   assumed: find_direct_map() below.
 */
#if defined(__TARGET_ARCH_x86)
/* arch/x86/include/asm/pgtable_types.h */
#define X86_PTE_PRESENT  (1ull << 0)
#define X86_PTE_USER     (1ull << 2)
#define X86_PTE_PSE      (1ull << 7)
#define X86_PTE_SPECIAL  (1ull << 9)
#define X86_PTE_PFN_MASK 0x000ffffffffff000ull
#define GIB (1ull << 30)
/* How far below a direct-map address its map may start: 4 TiB of physical addresses. */
#define DMAP_MAX_GIB 4096

/* One translation (pt_translate()): what to translate, and where it led. */
struct ts_leaf {
	__u64 base;	/* in: the direct map */
	__u64 pgd_va;	/* in: the page tables' root (a direct-map address) */
	__u64 addr;	/* in: the address */
	__u32 levels;	/* in: 4 or 5 */
	__u32 user;	/* in: only a user page will do */
	__u64 entry_va;	/* out: where the last-level entry is */
	__u64 entry;	/* out: what it held */
	__u64 phys;	/* out: the physical address of addr */
};

/* The direct map: where physical address 0 is mapped, and the paging levels (4, or 5
 * with LA57); found once and kept (state 1 found, 2 not found: every line is copied). */
__u64 dmap_base = 0;
__u32 dmap_levels = 0;
__u32 dmap_state = 0;

/*
 * The 8 bytes at kernel address va, by a load through a cast pointer (bpf_rdonly_cast(),
 * Linux 6.4): the JIT makes it fault-safe (a fault, or an address outside the kernel's,
 * reads 0, which is "not present" for a page-table entry), and it costs one load where a
 * bpf_probe_read_kernel() call costs a helper call. The cast needs a kernel struct type:
 * timespec64 is one whose first member is 64 bits (pgd_t and its kin are typedefs, which
 * the kfunc refuses).
 */
static __always_inline __u64 load_u64(__u64 va)
{
	return (__u64)bpf_core_cast((void *)va, struct timespec64)->tv_sec;
}

/* q->addr through the page tables at q->pgd_va, with the direct map at q->base: 0 and the
 * leaf in *q, or -1 (not mapped, not a user page when `user`, special). Global, so that
 * the verifier checks it once, not at every call (it doubled the walk's verification). */
__noinline int pt_translate(struct ts_leaf *q __arg_nonnull)
{
	__u64 base = q->base, addr = q->addr, table = q->pgd_va, va, e = 0, mask;
	__u32 shift = q->levels == 5 ? 48 : 39, user = q->user;
	int i;

	for (i = 0; i < 5; i++) {
		va = table + ((addr >> shift) & 511) * 8;
		e = load_u64(va);
		if (!(e & X86_PTE_PRESENT) || (user && !(e & X86_PTE_USER)))
			return -1;
		/* A leaf: the page table's last level, or a 1 GiB / 2 MiB page. */
		if (shift == 12 || ((shift == 21 || shift == 30) && (e & X86_PTE_PSE))) {
			if (e & X86_PTE_SPECIAL)
				return -1;
			mask = (1ull << shift) - 1;
			q->entry_va = va;
			q->entry = e;
			q->phys = (e & X86_PTE_PFN_MASK & ~mask) | (addr & mask);
			return 0;
		}
		if (shift <= 12)
			return -1;
		table = base + (e & X86_PTE_PFN_MASK);
		shift -= 9;
	}
	return -1;
}

struct ts_dmap {
	__u64 base;	/* where physical address 0 is mapped */
	__u32 levels;	/* paging levels: 4 or 5; 0 when not found */
	__u32 pad;
	__u64 pgd_va;	/* scratch (find_direct_map()): the addresses it translates */
	__u64 probe_va;
};

/*
 * page_offset_base is not something a program can read here (it is a data symbol, and
 * kernels without CONFIG_KALLSYMS_ALL, like this project's CI VM, do not list those; nor is
 * /proc/kcore always there). It is found instead: the reader's own page-table root
 * (current->mm->pgd) and its own task_struct are both in the direct map, which starts on a
 * 1 GiB boundary (arch/x86/mm/kaslr.c aligns it to PUD_SIZE) at most DMAP_MAX_GIB below
 * them. A candidate base is right when translating both addresses through the kernel half
 * of the page tables, reading each table at base + its physical address, gives back
 * base + physical == the address. A wrong base reads other memory (or faults) and does not
 * give back both addresses. Nothing found (another layout, paravirtual page tables,
 * memory encryption bits in the entries): every line goes through the copy.
 */
__noinline int dmap_try(struct ts_dmap *out __arg_nonnull)
{
	__u64 pgd_va = out->pgd_va, probe_va = out->probe_va, base;
	__u32 levels = out->levels, k;
	struct ts_leaf q = {};

	bpf_for(k, 0, DMAP_MAX_GIB) {
		base = (pgd_va & ~(GIB - 1)) - (__u64)k * GIB;
		q.base = base;
		q.pgd_va = pgd_va;
		q.levels = levels;
		q.user = 0;
		q.addr = pgd_va;
		if (pt_translate(&q) || base + q.phys != pgd_va)
			continue;
		q.addr = probe_va;
		if (pt_translate(&q) || base + q.phys != probe_va)
			continue;
		out->base = base;
		out->levels = levels;
		return 0;
	}
	return -1;
}

__noinline int find_direct_map(struct ts_dmap *d __arg_nonnull)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 pgd_va = 0, probe_va = 0;
	struct mm_struct *mm = TASK_PTR(cur, mm);

	if (dmap_state == 1) {
		d->base = dmap_base;
		d->levels = dmap_levels;
		return 0;
	}
	if (dmap_state == 2 || !mm)
		return -1;
	/* As numbers (the verifier allows no arithmetic on kernel pointers): the root of the
	 * reader's page tables, and its process's leader's task_struct (slab memory). */
	if (bpf_probe_read_kernel(&pgd_va, sizeof(pgd_va), &mm->pgd) ||
	    bpf_probe_read_kernel(&probe_va, sizeof(probe_va), &cur->group_leader) || !pgd_va ||
	    !probe_va)
		return -1;
	d->pgd_va = pgd_va;
	d->probe_va = probe_va;
	d->levels = 4;
	if (dmap_try(d)) {
		d->levels = 5;
		if (dmap_try(d)) {
			d->levels = 0;
			dmap_state = 2;
			return -1;
		}
	}
	dmap_base = d->base;
	dmap_levels = d->levels;
	barrier();
	dmap_state = 1;
	return 0;
}

/* len bytes (1 .. TS_CMDLINE_MAX - 1) at user address start of the process whose page
 * tables are at pgd_va, with the direct map d, into r->data: 0 when read and checked, else -1 (the caller
 * copies). At most two pages: the line is shorter than one. */
static __noinline int args_read(struct ts_cmd_space *r, struct ts_dmap *d, __u64 pgd_va,
				__u64 start, __u32 len)
{
	__u64 base = d->base;
	struct ts_leaf a = {}, b = {};
	__u32 first;

	if (len == 0 || len > TS_CMDLINE_MAX - 1)
		return -1;
	first = 4096 - (start & 4095);
	if (first > len)
		first = len;
	a.base = base;
	a.pgd_va = pgd_va;
	a.levels = d->levels;
	a.user = 1;
	a.addr = start;
	if (pt_translate(&a))
		return -1;
	if (bpf_probe_read_kernel(r->data, first & (TS_CMDLINE_MAX * 2 - 1),
				  (void *)(base + a.phys)))
		return -1;
	if (first < len) {
		__u32 rest = len - first;

		b.base = base;
		b.pgd_va = pgd_va;
		b.levels = d->levels;
		b.user = 1;
		b.addr = start + first;
		if (pt_translate(&b))
			return -1;
		if (bpf_probe_read_kernel(r->data + (first & (TS_CMDLINE_MAX - 1)),
					  rest & (TS_CMDLINE_MAX - 1), (void *)(base + b.phys)))
			return -1;
		if (load_u64(b.entry_va) != b.entry)
			return -1;
	}
	if (load_u64(a.entry_va) != a.entry)
		return -1;
	return 0;
}

/* args_read() inside an RCU read-side section (the walk is one already). */
static __noinline int args_lockless(struct ts_cmd_space *r, struct ts_dmap *d, __u64 pgd_va,
				    __u64 start, __u32 len)
{
	int ok;

	bpf_rcu_read_lock();
	ok = args_read(r, d, pgd_va, start, len);
	bpf_rcu_read_unlock();
	return ok;
}

#else
struct ts_dmap {
	__u64 base;
	__u32 levels;
	__u32 pad;
	__u64 pgd_va;
	__u64 probe_va;
};

#endif

/* Where the walk writes its lines (walk_line()). */
struct ts_lines {
	__u32 first;		/* the shard's output chunks: [first, end) */
	__u32 end;
	__u32 cur_chunk;	/* being written (end or past: full) */
	__u32 cur_off;		/* bytes used in it */
	__u32 records;		/* lines written */
	__u32 lockless;		/* of them, read (not flagged) */
	__u32 tgid;		/* in: the process's number in the reader's namespace */
	__u32 pad;
};

struct ts_chunk {
	__u8 bytes[TS_CHUNK_BYTES];
};

#if defined(__TARGET_ARCH_x86)
/*
 * Command lines in batches. A process's line costs a chain of dependent cache misses: its
 * mm, then one page-table level after another (4 or 5), then the page with the bytes. One
 * at a time, those misses were a quarter of `ps -ef`'s time at 50,000 processes (perf:
 * pt_translate 24% of all samples, about 0.7 us a process). The walk instead keeps its
 * leaders in a batch and translates the batch a level at a time: the loads of one level
 * for LINE_BATCH processes do not depend on each other, so the CPU has them in flight
 * together. The checks are those of walk_args(): the bytes are written, and the line
 * counted as read, only if the leaf entry is unchanged after the copy and the task still
 * has that mm and is not exiting. The leaders are kept as addresses: their task_structs
 * stay (freed only after an RCU grace period) because the batch is flushed inside the
 * walk's RCU read-side section, and every load through them is fault-safe
 * (bpf_core_cast(): PROBE_MEM).
 */
#define LINE_BATCH 8

/* What a batched line's translation is at (ts_line_batch.state). */
#define LB_SKIP  0	/* no line written: the reader copies it by pid list */
#define LB_EMPTY 1	/* an empty argument area: a header alone */
#define LB_LONG  2	/* longer than TS_CMDLINE_MAX - 1: a header flagged unread */
#define LB_WALK  3	/* translating: the entry at va[i] is at level shift[i] */
#define LB_LEAF  4	/* translated: entry[i] (at va[i]) maps start[i], a 2^shift[i] page */

struct ts_line_batch {
	__u64 task[LINE_BATCH];		/* the leaders' task_structs, as addresses */
	__u64 mm[LINE_BATCH];		/* their mm_structs, as addresses */
	__u64 start[LINE_BATCH];	/* their argument areas */
	__u64 va[LINE_BATCH];		/* the page-table entry being read; then the leaf's */
	__u64 entry[LINE_BATCH];	/* the leaf entry */
	__u32 len[LINE_BATCH];
	__u32 tgid[LINE_BATCH];		/* the process's number in the reader's namespace */
	__u32 state[LINE_BATCH];	/* LB_* */
	__u32 shift[LINE_BATCH];
	__u32 n;			/* leaders in the batch */
	__u32 touched;			/* keeps the loads that bring each line's bytes in */
};

/* Adds leader t to the batch: 1 when the batch is then full. */
__noinline int line_batch_add(struct ts_line_batch *b __arg_nonnull,
			      struct task_struct *t __arg_trusted, __u32 tgid)
{
	__u32 i = b->n;

	if (i >= LINE_BATCH)
		return 1;
	b->task[i] = (__u64)t;
	b->tgid[i] = tgid;
	b->n = i + 1;
	return i + 1 == LINE_BATCH;
}

/* Batch entry i's record at r, as walk_args() writes one: its length, 0 for none. */
__noinline int line_batch_put(struct ts_line_batch *b __arg_nonnull, __u32 i,
			      struct ts_cmd_space *r __arg_nonnull, struct ts_dmap *d __arg_nonnull)
{
	struct task_struct *t;
	struct mm_struct *mm;
	__u64 start, phys, mask, base = d->base;
	__u32 len, first, state, shift;

	i &= LINE_BATCH - 1;
	state = b->state[i];
	if (state == LB_SKIP || state == LB_WALK)
		return 0;
	r->hdr.tgid = b->tgid[i];
	r->hdr.len = 0;
	r->hdr.flags = 0;
	r->hdr.pad = 0;
	if (state == LB_EMPTY)
		return sizeof(r->hdr);
	if (state == LB_LONG) {
		r->hdr.flags = TS_CMD_UNREAD;
		return sizeof(r->hdr);
	}
	start = b->start[i];
	len = b->len[i];
	shift = b->shift[i];
	if (len == 0 || len > TS_CMDLINE_MAX - 1 || (shift != 12 && shift != 21 && shift != 30))
		return 0;
	mask = (1ull << shift) - 1;
	phys = (b->entry[i] & X86_PTE_PFN_MASK & ~mask) | (start & mask);
	first = 4096 - (start & 4095);
	if (first > len)
		first = len;
	if (bpf_probe_read_kernel(r->data, first & (TS_CMDLINE_MAX * 2 - 1), (void *)(base + phys)))
		return 0;
	t = bpf_core_cast((void *)b->task[i], struct task_struct);
	if (first < len) {
		/* The rest is on the next page: translated here, one at a time (rare). */
		struct ts_leaf q = {};
		__u32 rest = len - first;

		mm = bpf_core_cast((void *)b->mm[i], struct mm_struct);
		q.base = base;
		q.pgd_va = (__u64)mm->pgd;
		q.levels = d->levels;
		q.user = 1;
		q.addr = start + first;
		if (!q.pgd_va || pt_translate(&q))
			return 0;
		if (bpf_probe_read_kernel(r->data + (first & (TS_CMDLINE_MAX - 1)),
					  rest & (TS_CMDLINE_MAX - 1), (void *)(base + q.phys)))
			return 0;
		if (load_u64(q.entry_va) != q.entry)
			return 0;
	}
	if (load_u64(b->va[i]) != b->entry[i] || (__u64)t->mm != b->mm[i] ||
	    (t->flags & PF_EXITING))
		return 0;
	if (r->data[(len - 1) & (TS_CMDLINE_MAX - 1)] != 0) {
		r->hdr.flags = TS_CMD_UNREAD;
		return sizeof(r->hdr);
	}
	r->hdr.len = len;
	r->hdr.pad = 1; /* read, not flagged (counted by the caller) */
	return sizeof(r->hdr) + (len & (TS_CMDLINE_MAX - 1));
}

/* One level of every batched translation still walking: independent loads. */
static __always_inline void line_batch_level(struct ts_line_batch *b, __u64 base)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < LINE_BATCH; i++) {
		__u64 e, start;
		__u32 shift;

		if (b->state[i] != LB_WALK)
			continue;
		shift = b->shift[i];
		e = load_u64(b->va[i]);
		if (!(e & X86_PTE_PRESENT) || !(e & X86_PTE_USER)) {
			b->state[i] = LB_SKIP;
			continue;
		}
		if (shift == 12 || ((shift == 21 || shift == 30) && (e & X86_PTE_PSE))) {
			b->state[i] = (e & X86_PTE_SPECIAL) ? LB_SKIP : LB_LEAF;
			b->entry[i] = e;
			continue;
		}
		if (shift <= 12) {
			b->state[i] = LB_SKIP;
			continue;
		}
		start = b->start[i];
		shift -= 9;
		b->shift[i] = shift;
		b->va[i] = base + (e & X86_PTE_PFN_MASK) + ((start >> shift) & 511) * 8;
	}
}

/*
 * Translates the batch's lines and writes them, in the batch's order, into the walk's
 * output (st; the chunks of arena `key`), then empties the batch.
 */
__noinline int line_batch_flush(struct ts_line_batch *b __arg_nonnull,
				struct ts_lines *st __arg_nonnull, struct ts_dmap *d __arg_nonnull,
				__u32 key)
{
	__u64 base = d->base, touched = 0;
	__u32 n = b->n, i, top = d->levels == 5 ? 48 : 39;
	void *arena;

	b->n = 0;
	if (n > LINE_BATCH)
		n = LINE_BATCH;
	/* Each leader's mm and argument area, and its page-table root's entry. */
#pragma unroll
	for (i = 0; i < LINE_BATCH; i++) {
		struct task_struct *t;
		struct mm_struct *mm;
		__u64 start, end, pgd;

		b->state[i] = LB_SKIP;
		if (i >= n)
			continue;
		t = bpf_core_cast((void *)b->task[i], struct task_struct);
		mm = t->mm;
		if (!mm || (t->flags & (PF_KTHREAD | PF_EXITING)) || !d->levels)
			continue;
		b->mm[i] = (__u64)mm;
		start = mm->arg_start;
		end = mm->arg_end;
		pgd = (__u64)mm->pgd;
		b->start[i] = start;
		b->len[i] = end > start ? end - start : 0;
		if (end <= start) {
			b->state[i] = LB_EMPTY;
			continue;
		}
		if (end - start > TS_CMDLINE_MAX - 1) {
			b->state[i] = LB_LONG;
			continue;
		}
		if (!pgd)
			continue;
		b->state[i] = LB_WALK;
		b->shift[i] = top;
		b->va[i] = pgd + ((start >> top) & 511) * 8;
	}
	/* The levels: 4 or 5, a 2 MiB or 1 GiB page ending the walk early. */
	line_batch_level(b, base);
	line_batch_level(b, base);
	line_batch_level(b, base);
	line_batch_level(b, base);
	line_batch_level(b, base);
	/* The first word of each line: its bytes' cache line comes in for all at once. */
#pragma unroll
	for (i = 0; i < LINE_BATCH; i++) {
		__u64 mask;

		if (b->state[i] != LB_LEAF)
			continue;
		mask = (1ull << (b->shift[i] & 63)) - 1;
		touched ^= load_u64(base + ((b->entry[i] & X86_PTE_PFN_MASK & ~mask) |
					    (b->start[i] & mask & ~7ull)));
	}
	b->touched = touched;

	arena = bpf_map_lookup_elem(&arenas, &key);
	if (!arena)
		return 0;
	bpf_for(i, 0, n) {
		__u32 off = st->cur_off, idx, len;
		struct ts_chunk *chunk;
		struct ts_cmd_hdr *h;

		if (st->cur_chunk >= st->end)
			break;
		if (off > CMD_ROOM) {
			idx = st->cur_chunk;
			chunk = bpf_map_lookup_elem(arena, &idx);
			if (chunk && off <= TS_CHUNK_BYTES - sizeof(struct ts_cmd_hdr))
				__builtin_memset(chunk->bytes + off, 0, sizeof(struct ts_cmd_hdr));
			st->cur_chunk++;
			st->cur_off = 0;
			off = 0;
			if (st->cur_chunk >= st->end)
				break;
		}
		idx = st->cur_chunk;
		chunk = bpf_map_lookup_elem(arena, &idx);
		if (!chunk)
			break;
		h = (void *)(chunk->bytes + (off & (TS_CHUNK_BYTES - 1)));
		len = line_batch_put(b, i, (void *)h, d);
		if (!len)
			continue;
		if (h->pad) {
			h->pad = 0;
			st->lockless++;
		}
		st->cur_off = off + ((len + 7) & ~7u);
		st->records++;
	}
	/* No kernel address stays in the map between walks. */
#pragma unroll
	for (i = 0; i < LINE_BATCH; i++) {
		b->task[i] = 0;
		b->mm[i] = 0;
		b->va[i] = 0;
		b->entry[i] = 0;
	}
	return 0;
}
#else
struct ts_line_batch {
	__u32 n;
	__u32 pad;
};

__noinline int line_batch_add(struct ts_line_batch *b __arg_nonnull,
			      struct task_struct *t __arg_trusted, __u32 tgid)
{
	return 0;
}

__noinline int line_batch_flush(struct ts_line_batch *b __arg_nonnull,
				struct ts_lines *st __arg_nonnull, struct ts_dmap *d __arg_nonnull,
				__u32 key)
{
	return 0;
}
#endif

/* Room for the largest record. */
struct ts_rec_space {
	__u8 bytes[TS_RECORD_MAX];
};

/*
 * One task's record at r: its length, or 0 when the task is not in the reader's pid
 * namespace. Global, so verified once on its own; inside it the write position is a
 * constant on each combination of blocks, which is cheap here and would not be
 * inside the loop.
 */
__noinline int walk_record(struct task_struct *t __arg_trusted,
			   struct ts_rec_space *r __arg_nonnull, __u32 groups, __u32 level)
{
	struct ts_hdr *hdr = (void *)r->bytes;
	__u32 pos = sizeof(struct ts_hdr);

	/* The walk never writes the rare blocks (see dump_task_rare): /proc gives them. */
	if (!fill_hdr(hdr, t, groups & ~TS_RARE_GROUPS, level))
		return 0;
	groups = hdr->groups;
	if (groups & TS_GROUP_BASE) {
		walk_base(t, (void *)(r->bytes + pos), level);
		pos += sizeof(struct ts_base);
	}
	if (groups & TS_GROUP_CRED) {
		walk_cred(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_cred);
	}
	if (groups & TS_GROUP_STAT) {
		walk_stat(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_stat);
	}
	if (groups & TS_GROUP_SCHED) {
		walk_sched(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_sched);
	}
	if (groups & TS_GROUP_IO) {
		walk_io(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_io);
	}
	if (groups & TS_GROUP_KNAME) {
		walk_kname(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_kname);
	}
	if (groups & TS_GROUP_MEM) {
		walk_mem(t, (void *)(r->bytes + pos));
		pos += sizeof(struct ts_mem);
	}
	return pos;
}

/* Each walk's batch of lines: slot (the arena's key) by shard. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TS_WALK_SLOTS * TS_WALK_MAX_SHARDS);
	__type(key, __u32);
	__type(value, struct ts_line_batch);
} line_batches SEC(".maps");

/*
 * A fresh load of a context field: the compiler must not carry the value over from the store
 * before it (a value kept in a register across the loop grows with every iteration, and
 * the verifier then never sees the loop converge).
 */
#define FRESH(x) (*(volatile typeof(x) *)&(x))

/* A record never crosses a chunk: one that does not fit in what is left starts the next
 * chunk, after a terminator (a header with groups 0) when there is room for one. */
#define REC_ROOM (TS_CHUNK_BYTES - TS_RECORD_MAX - sizeof(struct ts_hdr))

/*
 * The walk's body, in two programs: walk_tasks without command lines (what a live view
 * loads) and walk_tasks_lines with them (with_lines is a constant in each, so the compiler
 * drops the lines from the first). The verifier takes twice as long over the loop with the
 * lines in it (about 19,000 instructions against 8,000): a live view does not pay for them.
 * The lines stay in this loop, not in a program of their own: here each process's
 * task_struct and mm are in cache from its record; a separate pass over the tasks missed on
 * them again and took the snapshot of `ps -ef` at 50,000 processes from ~63 to ~110 ms.
 */
static __always_inline int walk_body(struct ts_walk_args *args, const bool with_lines)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct ts_dmap dmap = {};
	struct ts_lines lines = {};
	struct ts_line_batch *batch = NULL;
	struct task_struct *t;
	struct pid_namespace *ns;
	void *arena;
	__u32 level, key, groups, nshards, shard, mode;
	__u64 since_ns;

	key = args->key;
	mode = args->mode;
	since_ns = args->since_ns;
	args->started_ns = bpf_ktime_get_ns();
	args->tasks = 0;
	args->emitting = 1;
	args->emit_tgid = 0;
	arena = bpf_map_lookup_elem(&arenas, &key);
	if (!arena)
		return -2; /* ENOENT */
	groups = args->groups;
	nshards = args->nshards;
	shard = args->shard;
	args->records = 0;
	args->overflow = 0;
	args->cur_chunk = args->first_chunk;
	args->cur_off = 0;
	lines.first = args->args_first_chunk;
	lines.end = args->args_first_chunk + args->args_nchunks;
	lines.cur_chunk = lines.first;
	/*
	 * Whether to read command lines is kept in args->args_nchunks (0: no), not in a local:
	 * a local set on one branch and not on another is two states at the loop, and the
	 * verifier checked the whole loop once for each (twice the load time). For the same
	 * reason the direct map is always looked up (found once, then kept).
	 */
#if defined(__TARGET_ARCH_x86)
	if (with_lines)
		find_direct_map(&dmap);
#endif
	args->dmap_levels = dmap.levels;
	if (!with_lines || mode != TS_WALK_ALL || !dmap.levels)
		args->args_nchunks = 0;
	if (with_lines) {
		/* This walk's own batch of lines (its slot is exclusive to its reader). */
		__u32 bkey = 0;

		if (key < TS_WALK_SLOTS && shard < TS_WALK_MAX_SHARDS)
			bkey = key * TS_WALK_MAX_SHARDS + shard;
		else
			args->args_nchunks = 0;
		batch = bpf_map_lookup_elem(&line_batches, &bkey);
		if (!batch)
			return -2; /* ENOENT */
		batch->n = 0;
	}
	/* Without the group-scheduling link to a thread's run queue, every process is
	 * written. */
	if (!bpf_core_field_exists(cur->se.cfs_rq))
		since_ns = 0;
	args->window_ns = args->started_ns - since_ns + 1000000;
	level = TASK_PTR(cur, thread_pid)->level;
	ns = BPF_CORE_READ(cur, thread_pid, numbers[0].ns);
	if (level > 0) {
		struct upid up = {};

		bpf_core_read(&up, sizeof(up), &TASK_PTR(cur, thread_pid)->numbers[level & 31]);
		ns = up.ns;
	}

	bpf_rcu_read_lock();
	bpf_for_each(task, t, NULL, BPF_TASK_ITER_ALL_THREADS) {
		__u32 off, chunk_idx, len;
		__u8 *chunk;

		if (nshards > 1 && (__u32)t->tgid % nshards != shard)
			continue;
		/* Only tasks with a number in the reader's pid namespace, as iter/task walks
		 * that namespace's pids. */
		if (level > 0) {
			struct upid up = {};
			struct pid *p = TASK_PTR(t, thread_pid);

			if (!p || p->level < level)
				continue;
			bpf_core_read(&up, sizeof(up), &p->numbers[level & 31]);
			if (up.ns != ns)
				continue;
		}
		/* The idle task (pid 0) has no record. */
		if (!fill_tid(t, level))
			continue;
		args->tasks++;
		if (mode == TS_WALK_ROLL) {
			off = FRESH(args->cur_off);
			chunk_idx = FRESH(args->cur_chunk);
			if (off > TS_CHUNK_BYTES - sizeof(__u32)) {
				chunk_idx++;
				off = 0;
				args->cur_chunk = chunk_idx;
				args->cur_off = 0;
			}
			if (chunk_idx >= args->first_chunk + args->nchunks) {
				args->overflow++;
				continue;
			}
			chunk = bpf_map_lookup_elem(arena, &chunk_idx);
			if (!chunk || off > TS_CHUNK_BYTES - sizeof(__u32)) {
				args->overflow++;
				continue;
			}
			*(__u32 *)(chunk + off) = fill_tid(t, level);
			args->cur_off = off + sizeof(__u32);
			args->records++;
			continue;
		}
		if (mode == TS_WALK_CHANGED && since_ns) {
			/* The open-coded iterator visits each process's leader, then its other
			 * threads (kernel/bpf/task_iter.c, bpf_iter_task_next()): the decision is
			 * taken at the leader for all of them. A thread seen without its leader
			 * first is written. */
			if (t == t->group_leader) {
				/* How long since the last pass began, plus a millisecond: it is
				 * read every 256 tasks (a clock read per task costs more than the
				 * rest of the test), and must never be less than the truth. */
				if ((args->tasks & 255) == 1)
					args->window_ns = bpf_ktime_get_ns() - since_ns + 1000000;
				args->emit_tgid = t->tgid;
				args->emitting = proc_ran(t, FRESH(args->window_ns));
			} else if (FRESH(args->emit_tgid) != t->tgid) {
				args->emit_tgid = t->tgid;
				args->emitting = 1;
			}
			if (!FRESH(args->emitting))
				continue;
		}
		off = FRESH(args->cur_off);
		chunk_idx = FRESH(args->cur_chunk);
		if (off > REC_ROOM) {
			chunk = bpf_map_lookup_elem(arena, &chunk_idx);
			if (chunk && off <= TS_CHUNK_BYTES - sizeof(struct ts_hdr))
				__builtin_memset(chunk + off, 0, sizeof(struct ts_hdr));
			chunk_idx++;
			off = 0;
			args->cur_chunk = chunk_idx;
			args->cur_off = 0;
		}
		if (chunk_idx >= args->first_chunk + args->nchunks) {
			args->overflow++;
			continue;
		}
		chunk = bpf_map_lookup_elem(arena, &chunk_idx);
		if (!chunk) {
			args->overflow++;
			continue;
		}
		if (off > REC_ROOM)
			continue;
		len = walk_record(t, (void *)(chunk + off), groups, level);
		if (!len || len > TS_RECORD_MAX)
			continue;
		args->cur_off = off + len;
		args->records++;
		/* The process's command line, at its leader (visited before its threads). */
		if (with_lines && FRESH(args->args_nchunks) && t->pid == t->tgid &&
		    line_batch_add(batch, t, ((struct ts_hdr *)(chunk + off))->tgid))
			line_batch_flush(batch, &lines, &dmap, key);
	}
	/* The last lines, inside the RCU section that keeps the batch's tasks. */
	if (with_lines && FRESH(args->args_nchunks) && batch->n)
		line_batch_flush(batch, &lines, &dmap, key);
	bpf_rcu_read_unlock();
	/* Terminate the last chunk: only inside this shard's chunks. A shard that ran out has
	 * cur_chunk one past them, and that chunk is the next shard's first. */
	{
		__u32 off = args->cur_off, chunk_idx = args->cur_chunk;
		__u8 *chunk = bpf_map_lookup_elem(arena, &chunk_idx);

		if (chunk && chunk_idx < args->first_chunk + args->nchunks &&
		    off <= TS_CHUNK_BYTES - sizeof(struct ts_hdr))
			__builtin_memset(chunk + off, 0, sizeof(struct ts_hdr));
	}
	args->args_records = lines.records;
	args->args_lockless = lines.lockless;
	args->args_cur_chunk = lines.cur_chunk;
	args->args_cur_off = lines.cur_off;
	if (with_lines && args->args_nchunks) {
		__u32 off = lines.cur_off, chunk_idx = lines.cur_chunk;
		__u8 *chunk = bpf_map_lookup_elem(arena, &chunk_idx);

		if (chunk && chunk_idx < lines.end && off <= TS_CHUNK_BYTES - sizeof(struct ts_cmd_hdr))
			__builtin_memset(chunk + off, 0, sizeof(struct ts_cmd_hdr));
	}
	return 0;
}

SEC("syscall")
int walk_tasks(struct ts_walk_args *args)
{
	return walk_body(args, false);
}

/* The walk with each process's command line (record.h, ts_walk_args.args_*). */
SEC("syscall")
int walk_tasks_lines(struct ts_walk_args *args)
{
	return walk_body(args, true);
}

/*
 * The records of a list of processes (record.h, ts_walk_args.req_*): a live view reads
 * again only the processes its change set (changes.bpf.c) names, each looked up by pid
 * (bpf_task_from_pid, Linux 6.2) and written with every thread it has, in the walk's
 * records and chunks, instead of following the whole task list to find them. A pid not
 * found, or found as another process's thread, writes nothing: the reader says its threads
 * are gone. The pids are the initial namespace's, so only a reader there uses it (-95,
 * EOPNOTSUPP, for any other: it walks).
 */
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;

/* t's record at the write position (args->cur_chunk, cur_off), starting the next chunk when
 * it does not fit, as walk_body does; a task that does not fit in the chunks is counted in
 * args->overflow. */
static __always_inline void put_record(struct ts_walk_args *args, void *arena,
				       struct task_struct *t, __u32 groups)
{
	__u32 off = FRESH(args->cur_off), chunk_idx = FRESH(args->cur_chunk), len;
	__u8 *chunk;

	if (off > REC_ROOM) {
		chunk = bpf_map_lookup_elem(arena, &chunk_idx);
		if (chunk && off <= TS_CHUNK_BYTES - sizeof(struct ts_hdr))
			__builtin_memset(chunk + off, 0, sizeof(struct ts_hdr));
		chunk_idx++;
		off = 0;
		args->cur_chunk = chunk_idx;
		args->cur_off = 0;
	}
	if (chunk_idx >= FRESH(args->first_chunk) + FRESH(args->nchunks)) {
		args->overflow++;
		return;
	}
	chunk = bpf_map_lookup_elem(arena, &chunk_idx);
	if (!chunk || off > REC_ROOM) {
		args->overflow++;
		return;
	}
	len = walk_record(t, (void *)(chunk + off), groups, 0);
	if (!len || len > TS_RECORD_MAX)
		return;
	args->cur_off = off + len;
	args->records++;
}

SEC("syscall")
int walk_listed(struct ts_walk_args *args)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 key = args->key, i;
	void *arena;

	args->started_ns = bpf_ktime_get_ns();
	args->tasks = 0;
	args->records = 0;
	args->overflow = 0;
	args->cur_chunk = args->first_chunk;
	args->cur_off = 0;
	args->args_nchunks = 0;
	arena = bpf_map_lookup_elem(&arenas, &key);
	if (!arena)
		return -2; /* ENOENT */
	if (TASK_PTR(cur, thread_pid)->level != 0)
		return -95; /* EOPNOTSUPP */
	bpf_for(i, 0, args->req_n) {
		__u32 rc = FRESH(args->req_chunk) + i / TS_PIDS_PER_CHUNK;
		struct task_struct *leader, *th;
		__u32 *pids;

		pids = bpf_map_lookup_elem(arena, &rc);
		if (!pids)
			break;
		leader = bpf_task_from_pid(pids[i % TS_PIDS_PER_CHUNK]);
		if (!leader)
			continue;
		if (leader->pid == leader->tgid) {
			args->tasks++;
			bpf_rcu_read_lock();
			bpf_for_each(task, th, leader, BPF_TASK_ITER_PROC_THREADS)
				put_record(args, arena, th, FRESH(args->groups));
			bpf_rcu_read_unlock();
		}
		bpf_task_release(leader);
	}
	{
		__u32 off = args->cur_off, chunk_idx = args->cur_chunk;
		__u8 *chunk = bpf_map_lookup_elem(arena, &chunk_idx);

		if (chunk && chunk_idx < args->first_chunk + args->nchunks &&
		    off <= TS_CHUNK_BYTES - sizeof(struct ts_hdr))
			__builtin_memset(chunk + off, 0, sizeof(struct ts_hdr));
	}
	return 0;
}

/*
 * The command-line copy by pid list: the walk cannot copy command lines (copying from
 * another process's memory may sleep, and the walk is one RCU read-side section), and the
 * sleepable iterator pays a pid lookup and a reference for every task it passes, in every
 * shard (get_pid_task, pid_nr_ns, find_ge_pid: a quarter of its time at 50,000 processes),
 * then copies each line through the seq_file and read(). This program is given the
 * processes a walk found (ts_cmd_req, record.h), looks each one up by pid (bpf_task_from_pid,
 * Linux 6.2), and writes its argument area into the reader's arena; each shard gets its own
 * list. Like dump_cmdline below, it copies what get_mm_cmdline() would and flags for a /proc
 * read what that function treats specially.
 */


/* One request's record at r: its length before padding. `d` is the direct map when found
 * (levels 0 when not): then the line is read without the mmap lock when it can be. */
__noinline int cmd_record(struct ts_cmd_space *r __arg_nonnull, __u32 pid, __u32 tgid,
			  __u64 start_ns, struct ts_dmap *d __arg_nonnull)
{
	struct task_struct *t;
	struct mm_struct *mm;
	unsigned long start, end, len;

	r->hdr.tgid = tgid;
	r->hdr.len = 0;
	r->hdr.flags = TS_CMD_UNREAD;
	r->hdr.pad = 0;
	t = bpf_task_from_pid(pid);
	if (!t)
		return sizeof(r->hdr);
	/* The pid now names another process, or a thread: /proc decides. */
	if (t->start_boottime != start_ns || t->pid != t->tgid) {
		bpf_task_release(t);
		return sizeof(r->hdr);
	}
	mm = TASK_PTR(t, mm);
	if (!mm || (t->flags & PF_KTHREAD)) {
		r->hdr.flags = 0;
		bpf_task_release(t);
		return sizeof(r->hdr);
	}
	start = mm->arg_start;
	end = mm->arg_end;
	len = end > start ? end - start : 0;
	if (len == 0) {
		r->hdr.flags = 0;
		bpf_task_release(t);
		return sizeof(r->hdr);
	}
	if (len > TS_CMDLINE_MAX - 1) {
		bpf_task_release(t);
		return sizeof(r->hdr);
	}
#if defined(__TARGET_ARCH_x86)
	__u64 pgd_va = 0;

	if (d->levels && !(t->flags & PF_EXITING) &&
	    !bpf_probe_read_kernel(&pgd_va, sizeof(pgd_va), &mm->pgd) && pgd_va &&
	    !args_lockless(r, d, pgd_va, start, len) &&
	    TASK_PTR(t, mm) == mm && !(t->flags & PF_EXITING)) {
		r->hdr.pad = 1; /* read lock-free (counted by the caller) */
	} else
#endif
	if (bpf_copy_from_user_task(r->data, len, (void *)start, t, 0))
		len = 0;
	if (len && r->data[(len - 1) & (TS_CMDLINE_MAX - 1)] == 0) {
		r->hdr.flags = 0;
		r->hdr.len = len;
	} else {
		len = 0;
	}
	bpf_task_release(t);
	return sizeof(r->hdr) + (len & (TS_CMDLINE_MAX - 1));
}


SEC("syscall")
int copy_cmdlines(struct ts_cmd_args *args)
{
	struct ts_dmap dmap = {};
	void *arena;
	__u32 key = args->key, i;

	arena = bpf_map_lookup_elem(&arenas, &key);
	if (!arena)
		return -2; /* ENOENT */
#if defined(__TARGET_ARCH_x86)
	if (args->locked_only || find_direct_map(&dmap))
		dmap.levels = 0;
#endif
	args->lockless = 0;
	args->dmap_levels = dmap.levels;
	args->records = 0;
	args->cur_chunk = args->first_chunk;
	args->cur_off = 0;
	args->next = args->req_first;
	bpf_for(i, args->req_first, args->req_end) {
		__u32 rc = FRESH(args->req_chunk) + i / TS_CMD_REQS_PER_CHUNK;
		__u32 off = FRESH(args->cur_off), chunk_idx = FRESH(args->cur_chunk), len;
		struct ts_cmd_req *req;
		__u8 *rchunk, *chunk;

		rchunk = bpf_map_lookup_elem(arena, &rc);
		if (!rchunk)
			break;
		req = (void *)(rchunk + (i % TS_CMD_REQS_PER_CHUNK) * sizeof(struct ts_cmd_req));
		if (off > CMD_ROOM) {
			chunk = bpf_map_lookup_elem(arena, &chunk_idx);
			if (chunk && off <= TS_CHUNK_BYTES - sizeof(struct ts_cmd_hdr))
				__builtin_memset(chunk + off, 0, sizeof(struct ts_cmd_hdr));
			chunk_idx++;
			off = 0;
			args->cur_chunk = chunk_idx;
			args->cur_off = 0;
		}
		if (chunk_idx >= FRESH(args->first_chunk) + FRESH(args->nchunks))
			break;
		chunk = bpf_map_lookup_elem(arena, &chunk_idx);
		if (!chunk || off > CMD_ROOM)
			break;
		len = cmd_record((void *)(chunk + off), req->pid, req->tgid, req->start_boottime_ns,
				 &dmap);
		if (((struct ts_cmd_hdr *)(chunk + off))->pad) {
			((struct ts_cmd_hdr *)(chunk + off))->pad = 0;
			args->lockless++;
		}
		args->cur_off = off + ((len + 7) & ~7u);
		args->records++;
		args->next = i + 1;
	}
	/* As in walk_tasks: a run that filled its chunks stops with cur_chunk one past them,
	 * on the next shard's first chunk, which must not be touched. (Writing a terminator
	 * there erased the other shard's first ~650 lines, read again from /proc, in most runs
	 * of `ps -ef` at 50,000 processes.) */
	{
		__u32 off = args->cur_off, chunk_idx = args->cur_chunk;
		__u8 *chunk = bpf_map_lookup_elem(arena, &chunk_idx);

		if (chunk && chunk_idx < args->first_chunk + args->nchunks &&
		    off <= TS_CHUNK_BYTES - sizeof(struct ts_cmd_hdr))
			__builtin_memset(chunk + off, 0, sizeof(struct ts_cmd_hdr));
	}
	return 0;
}

/*
 * The command-line pass: a sleepable iterator (Linux 5.18: iter.s/task and
 * bpf_copy_from_user_task) copies each process's argument area, as get_mm_cmdline() does for
 * /proc/PID/cmdline. It takes the target's mmap lock like /proc does, so user space runs this
 * pass under a deadline. Cases /proc treats specially are flagged for a /proc read instead:
 * an argument area of TS_CMDLINE_MAX bytes or more, and one whose last byte is not NUL (the
 * process rewrote its arguments, setproctitle-style, and /proc then reads on into the
 * environment area).
 */
SEC("iter.s/task")
int dump_cmdline(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct mm_struct *mm;
	struct cmd_buf *buf;
	unsigned long start, end, len;
	struct ts_reader_cfg *cfg;

	if (!t || t->pid != t->tgid)
		return 0;
	cfg = my_cfg();
	if (!cfg)
		return 0;
	if (cfg->nshards > 1 && (__u32)t->tgid % cfg->nshards != cfg->shard)
		return 0;
	buf = bpf_task_storage_get(&cmd_scratch, bpf_get_current_task_btf(), NULL,
				   BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!buf)
		return 0;
	{
		__u32 level = reader_ns_level();

		buf->hdr.tgid =
			level == 0 ? t->tgid : nr_in_ns(TASK_PTR(t, group_leader)->thread_pid, level);
	}
	buf->hdr.len = 0;
	buf->hdr.flags = 0;
	mm = TASK_PTR(t, mm);
	if (!mm || (t->flags & PF_KTHREAD)) {
		bpf_seq_write(seq, &buf->hdr, sizeof(buf->hdr));
		return 0;
	}
	start = mm->arg_start;
	end = mm->arg_end;
	len = end > start ? end - start : 0;
	if (len > TS_CMDLINE_MAX - 1) {
		buf->hdr.flags |= TS_CMD_UNREAD;
		len = 0;
	}
	if (len > 0) {
		if (bpf_copy_from_user_task(buf->data, len, (void *)start, t, 0)) {
			buf->hdr.flags |= TS_CMD_UNREAD;
			len = 0;
		} else if (buf->data[(len - 1) & (TS_CMDLINE_MAX - 1)] != 0) {
			buf->hdr.flags |= TS_CMD_UNREAD;
			len = 0;
		}
	}
	buf->hdr.len = len;
	bpf_seq_write(seq, buf, sizeof(buf->hdr) + (len & (TS_CMDLINE_MAX - 1)));
	return 0;
}
