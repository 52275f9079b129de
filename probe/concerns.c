/*
 * concerns.c: croft-probe's concerns, one entry each: the maps its object
 * counts into and how one of their entries adds to an answer, the drops its
 * programs count, the variant they run as, and its skeleton.  loader.c,
 * collect.c and status.c iterate concerns[].  croft-probe (the accessors
 * also before the drop; the adds as the croft user).
 */
#include <stdlib.h>
#include <bpf/libbpf.h>

#include "probed.h"
#include "rowdef.h"
#include "skels.h"

static void add_syscall(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus)
{
	const struct probe_syscall_key *k = key;
	struct answer_proc *p;
	struct probe_syscall *s;
	uint64_t sum = 0;

	for (int cpu = 0; cpu < ncpus; cpu++)
		sum += ((const uint64_t *)vals)[cpu];
	if (!sum || !(p = proc_of(col, k->tgid)) ||
		p->rec.syscalls_count >= PROBE_PROC_SYSCALLS_MAX)
		return;
	if (p->rec.syscalls_count == p->syscalls_cap) {
		uint32_t cap = p->syscalls_cap ? p->syscalls_cap * 2 : 16;

		if (!(s = realloc(p->syscalls, cap * sizeof(*s))))
			return;
		p->syscalls = s;
		p->syscalls_cap = cap;
	}
	p->syscalls[p->rec.syscalls_count++] = (struct probe_syscall){ .nr = k->nr, .count = sum };
}

static void add_ioctl(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus)
{
	struct answer_proc *p = proc_of(col, *(const uint32_t *)key);
	size_t stride = percpu_stride(sizeof(struct probe_ioctl_val));

	for (int cpu = 0; p && cpu < ncpus; cpu++) {
		const struct probe_ioctl_val *v = (const void *)(vals + cpu * stride);

		p->rec.gpu_ioctls += v->count;
		if (v->last_boot_ns > p->rec.last_gpu_ioctl_boot_ns)
			p->rec.last_gpu_ioctl_boot_ns = v->last_boot_ns;
	}
}

static void add_sched(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus)
{
	struct answer_proc *p = proc_of(col, *(const uint32_t *)key);
	size_t stride = percpu_stride(sizeof(struct probe_sched_val));

	for (int cpu = 0; p && cpu < ncpus; cpu++) {
		const struct probe_sched_val *v = (const void *)(vals + cpu * stride);

		p->rec.ctx_voluntary += v->voluntary;
		p->rec.ctx_involuntary += v->involuntary;
		p->rec.runqueue_ns += v->runqueue_ns;
	}
}

static void add_net(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus)
{
	struct answer_proc *p = proc_of(col, *(const uint32_t *)key);
	size_t stride = percpu_stride(sizeof(struct probe_net_val));

	for (int cpu = 0; p && cpu < ncpus; cpu++) {
		const struct probe_net_val *v = (const void *)(vals + cpu * stride);

		p->rec.net_rx_bytes += v->rx_bytes;
		p->rec.net_tx_bytes += v->tx_bytes;
	}
}

static void add_gpufile(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus)
{
	struct answer_proc *p = proc_of(col, *(const uint32_t *)key);
	size_t stride = percpu_stride(sizeof(struct probe_gpufile_val));

	for (int cpu = 0; p && cpu < ncpus; cpu++) {
		const struct probe_gpufile_val *v = (const void *)(vals + cpu * stride);

		p->rec.gpu_waits += v->waits;
		p->rec.gpu_mmaps += v->mmaps;
	}
}

static const char *variant_of_plan(const struct probe_plan *plan)
{
	return plan->use_btf ? "tp_btf" : "raw_tp";
}

static const char *variant_of_sched(const struct probe_plan *plan)
{
	return plan->sched_walk ? "tp_btf" : "raw_tp";
}

static const char *variant_of_net(const struct probe_plan *plan)
{
	return plan->net == NET_TRACEPOINT ? variant_of_plan(plan) : features_net_source(plan->net);
}

/* Typed access to what probe.bpf.h gives each object, for the table below. */
#define SKEL_OF(field, type)                                                                       \
	static struct concern_skel skel_##field(const struct probe_objs *objs)                     \
	{                                                                                          \
		if (!objs->field)                                                                  \
			return (struct concern_skel){ 0 };                                         \
		return (struct concern_skel){ objs->field->obj, &objs->field->bss->epoch,          \
			objs->field->bss->map_full, objs->field->maps.drops };                     \
	}                                                                                          \
	static void destroy_##field(struct probe_objs *objs)                                       \
	{                                                                                          \
		type##__destroy(objs->field);                                                      \
		objs->field = NULL;                                                                \
	}

SKEL_OF(syscalls, syscalls_bpf)
SKEL_OF(ioctl, ioctl_bpf)
SKEL_OF(sched, sched_bpf)
SKEL_OF(proc, proc_bpf)
SKEL_OF(net, net_bpf)
SKEL_OF(exit, exit_bpf)
SKEL_OF(gpufile, gpufile_bpf)

const struct concern concerns[CONCERNS] = {
	[CONCERN_SYSCALLS] = {
		.name = "syscalls",
		.key_size = sizeof(struct probe_syscall_key),
		.val_size = sizeof(uint64_t),
		.add = add_syscall,
		.drops = { { PROBE_DROP_SYSCALL_MAP_FULL, "syscall_map_full", true } },
		.variant = variant_of_plan,
		.end_flag = PROBE_END_SYSCALLS,
		.left_by = RL_PROBE_SYSCALLS,
		.skel = skel_syscalls,
		.destroy = destroy_syscalls,
	},
	[CONCERN_IOCTL] = {
		.name = "ioctl",
		.key_size = sizeof(uint32_t),
		.val_size = sizeof(struct probe_ioctl_val),
		.add = add_ioctl,
		.drops = { { PROBE_DROP_IOCTL_MAP_FULL, "ioctl_map_full", true } },
		.variant = variant_of_plan,
		.end_flag = PROBE_END_IOCTL,
		.left_by = RL_PROBE_IOCTL,
		.skel = skel_ioctl,
		.destroy = destroy_ioctl,
	},
	[CONCERN_SCHED] = {
		.name = "sched",
		.key_size = sizeof(uint32_t),
		.val_size = sizeof(struct probe_sched_val),
		.add = add_sched,
		.drops = { { PROBE_DROP_SCHED_MAP_FULL, "sched_map_full", true },
			{ PROBE_DROP_RUNQ_MAP_FULL, "runq_map_full", true } },
		.variant = variant_of_sched,
		.end_flag = PROBE_END_SCHED,
		.left_by = RL_PROBE_SCHED,
		.skel = skel_sched,
		.destroy = destroy_sched,
	},
	[CONCERN_PROC] = {
		.name = "proc",
		.drops = { { PROBE_DROP_EVENTS_FULL, "ringbuf_full" } },
		.variant = variant_of_plan,
		.end_flag = 0,
		/* fork/exec/exit events: no field of its own (start times then come from /proc) */
		.skel = skel_proc,
		.destroy = destroy_proc,
	},
	[CONCERN_NET] = {
		.name = "net",
		.key_size = sizeof(uint32_t),
		.val_size = sizeof(struct probe_net_val),
		.add = add_net,
		.drops = { { PROBE_DROP_NET_MAP_FULL, "net_map_full", true } },
		.variant = variant_of_net,
		.end_flag = PROBE_END_NET,
		.left_by = RL_PROBE_NET,
		.skel = skel_net,
		.destroy = destroy_net,
	},
	/* without it a process gone is written from what /proc last showed (exited "vanished") */
	[CONCERN_EXIT] = {
		.name = "exit",
		.variant = variant_of_plan,
		.end_flag = PROBE_END_FINALS,
		.left_by = RL_PROBE_EXIT,
		.skel = skel_exit,
		.destroy = destroy_exit,
	},
	[CONCERN_GPUFILE] = {
		.name = "gpufile",
		.key_size = sizeof(uint32_t),
		.val_size = sizeof(struct probe_gpufile_val),
		.add = add_gpufile,
		/* a poll set not checked whole is counted, not voiding: the rest of the set was */
		.drops = { { PROBE_DROP_GPUFILE_MAP_FULL, "gpufile_map_full", true },
			{ PROBE_DROP_INFLIGHT_MAP_FULL, "inflight_map_full", true },
			{ PROBE_DROP_WAIT_UNCHECKED, "wait_unchecked", false } },
		.variant = variant_of_plan,
		.end_flag = PROBE_END_GPUFILE,
		.left_by = RL_PROBE_GPUFILE,
		.skel = skel_gpufile,
		.destroy = destroy_gpufile,
	},
};

const char *concern_drop_name(enum probe_drop reason)
{
	for (int c = 0; c < CONCERNS; c++)
		for (int d = 0; d < CONCERN_DROPS_MAX && concerns[c].drops[d].name; d++)
			if (concerns[c].drops[d].reason == reason)
				return concerns[c].drops[d].name;
	return NULL;
}
