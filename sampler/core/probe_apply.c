/*
 * probe_apply.c: the poll's step between the read and the settling: the
 * probe's answer (probe_link.c's per-tgid counts) matched to the tracked
 * processes by tgid and start time, and turned into rates over the span
 * each process's row stands for.  No I/O.  croft-sampler, croft user.
 */
#include <stdlib.h>

#include "probe_link.h"
#include "host.h"
#include "sandbox.h"

/* An answer came, or none: nothing counted unless a record says so. */
static void probe_reset(struct proc *p, const struct probe_answer *answer)
{
	struct proc_probe_rates *pr = &p->counters.probe;
	uint64_t last = pr->last_gpu_ioctl_boot_ns;

	free(pr->syscalls);
	/* "ever seen" outlives a probe restart */
	*pr = (struct proc_probe_rates){ .last_gpu_ioctl_boot_ns = last };
	/* rates over the span of the process's row (proc_sample) */
	pr->valid = answer->answered && p->counters.rates_valid;
	pr->syscalls_valid = pr->valid && answer->syscalls;
	pr->ioctl_valid = pr->valid && answer->ioctl;
	pr->sched_valid = pr->valid && answer->sched;
	pr->net_valid = pr->valid && answer->net;
	pr->gpu_evidence_valid = pr->valid && answer->gpufile;
}

static int by_rate_desc(const void *a, const void *b)
{
	const struct syscall_rate *x = a, *y = b;

	return x->rate_per_sec < y->rate_per_sec ? 1 : x->rate_per_sec > y->rate_per_sec ? -1 : 0;
}

/*
 * The record's syscalls as rates, added to those of a record the process
 * took before in this answer (one carried from the answer before).
 */
static void apply_syscalls(
	struct proc_probe_rates *pr, const struct probe_syscall *sys, uint32_t n, double span_s)
{
	size_t had = pr->syscalls_count, count = had;
	struct syscall_rate *rates = n ? realloc(pr->syscalls, (had + n) * sizeof(*rates)) : NULL;

	if (!rates)
		return; /* none, or out of memory: those taken before stay */
	for (uint32_t i = 0; i < n; i++) {
		const char *name = sandbox_syscall_name((int)sys[i].nr);
		size_t j = 0;

		while (j < had && rates[j].name != name)
			j++;
		if (j == had)
			rates[j = count++] = (struct syscall_rate){ .name = name };
		rates[j].rate_per_sec += (double)sys[i].count / span_s;
	}
	if (had) /* the probe sends them highest count first: only a sum needs sorting */
		qsort(rates, count, sizeof(*rates), by_rate_desc);
	pr->syscalls = rates;
	pr->syscalls_count = count;
}

static void apply_tgid(struct proc *p, const struct probe_tgid *t)
{
	struct proc_probe_rates *pr = &p->counters.probe;
	const struct probe_proc *rec = &t->rec;
	double dt = p->counters.span_s;

	if (rec->last_gpu_ioctl_boot_ns > pr->last_gpu_ioctl_boot_ns)
		pr->last_gpu_ioctl_boot_ns = rec->last_gpu_ioctl_boot_ns;
	if (!pr->valid)
		return;
	pr->gpu_ioctls += rec->gpu_ioctls;
	pr->gpu_waits += rec->gpu_waits;
	pr->gpu_mmaps += rec->gpu_mmaps;
	/* at the answer: a record carried from the one before says an earlier moment */
	if (!t->carried)
		pr->gpu_blocked_threads = rec->gpu_blocked_threads;
	/* counts of this poll only: a poll with any is not idle, so none is skipped; nor
	 * is a thread blocked on the GPU, which has work outstanding there */
	pr->active |= rec->gpu_ioctls || rec->ctx_voluntary || rec->ctx_involuntary ||
		      rec->runqueue_ns || rec->net_rx_bytes || rec->net_tx_bytes ||
		      rec->syscalls_count || rec->gpu_blocked_threads;
	pr->ctx_voluntary_s += (double)rec->ctx_voluntary / dt;
	pr->ctx_involuntary_s += (double)rec->ctx_involuntary / dt;
	pr->runqueue_s += (double)rec->runqueue_ns / 1e9 / dt;
	pr->net_rx_bytes_s += (double)rec->net_rx_bytes / dt;
	pr->net_tx_bytes_s += (double)rec->net_tx_bytes / dt;
	apply_syscalls(pr, t->syscalls, rec->syscalls_count, dt);
}

/* The sampler's own GPU ioctls (NVML's, on its thread) and waits are no workload's. */
static void forget_gpu(struct proc_probe_rates *pr)
{
	pr->gpu_ioctls = 0;
	pr->last_gpu_ioctl_boot_ns = 0;
	pr->gpu_waits = pr->gpu_mmaps = 0;
	pr->gpu_blocked_threads = 0;
}

/*
 * The tracked process a record is about: same tgid and same start (in clock
 * ticks).  Not one kept from its exit record alone: its counts are carried
 * to its final, which makes it anew (exits.c).
 */
static struct proc *probe_match(
	struct proc_table *table, const struct probe_proc *rec, uint64_t tick_ns)
{
	struct proc *p;

	if (!rec->start_boot_ns)
		return NULL;
	p = proc_table_find_start(table, (pid_t)rec->tgid, rec->start_boot_ns / tick_ns);
	return p && !p->exit.unread ? p : NULL;
}

void proc_table_apply_probe(
	struct proc_table *table, const struct poll_env *env, struct probe_answer *answer)
{
	/* last rows first: their records are applied over their spans (a baseline has none) */
	proc_table_apply_finals(table, env, answer);
	proc_table_apply_exits(table, env, answer);
	for (struct proc *p = table->list_head; p; p = p->list_next)
		probe_reset(p, answer);
	for (size_t i = 0; i < answer->tgids_count; i++) {
		struct probe_tgid *t = &answer->tgids[i];
		struct proc *p = probe_match(table, &t->rec, env->tick_ns);

		t->matched = p != NULL;
		if (p)
			apply_tgid(p, t);
		if (p && p->tgid == env->self_tgid) /* NVML's own ioctls: croft holds no GPU */
			forget_gpu(&p->counters.probe);
	}
}
