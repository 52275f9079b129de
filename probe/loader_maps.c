/*
 * loader_maps.c: the loaded objects' maps on the fds held: the GPU device
 * map filled, epochs flipped, counted maps found, per-CPU counters summed.
 * croft-probe, before and after the drop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "probed.h"

#include "skels.h"

struct bpf_map *concern_map(const struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	struct bpf_object *obj = concerns[concern].skel(objs).obj;
	char name[32];

	if (!obj || !concerns[concern].add)
		return NULL;
	snprintf(name, sizeof(name), "%s_%u", concerns[concern].name, g);
	return bpf_object__find_map_by_name(obj, name);
}

static int put_gpu_rules(const struct bpf_map *map, const struct probe_gpu_rules *rules)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(map), &zero, rules, BPF_ANY) < 0)
		return -errno;
	return 0;
}

/* ioctl's map is gpufile's where both loaded; either may be alone. */
int loader_set_gpu_rules(struct probe_objs *objs, const struct gpudev_set *set)
{
	struct probe_gpu_rules rules = { 0 };
	int r = 0;

	for (size_t i = 0; i < set->rules_count && i < PROBE_GPU_RULES; i++) {
		rules.rules[i].major = set->rules[i].major;
		rules.rules[i].minor_first = set->rules[i].minor_first;
		rules.rules[i].minor_last = set->rules[i].minor_last;
		rules.count++;
	}
	if (objs->gpufile)
		r = put_gpu_rules(objs->gpufile->maps.gpu_rules, &rules);
	if (objs->ioctl && r == 0)
		r = put_gpu_rules(objs->ioctl->maps.gpu_rules, &rules);
	return r;
}

int loader_flip(struct probe_objs *objs)
{
	uint32_t zero = 0, next = objs->epoch ^ 1;

	for (int c = 0; c < CONCERNS; c++) {
		volatile uint32_t *epoch = concerns[c].skel(objs).epoch;

		if (epoch)
			*epoch = next;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* updating a map-in-map waits for an RCU grace period (maybe_wait_bpf_programs):
	 * every program that could still see the old epoch has returned when this does */
	if (bpf_map_update_elem(objs->sync_outer_fd, &zero, &objs->sync_inner_fd, BPF_ANY) < 0)
		return -errno;
	objs->epoch = next;
	return 0;
}

int loader_map_fd(const struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	struct bpf_map *map = concern_map(objs, concern, g);

	return map ? bpf_map__fd(map) : -1;
}

bool loader_clear_full(struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	volatile uint32_t *full = concerns[concern].skel(objs).map_full;
	bool was = full && full[g & 1];

	if (full)
		full[g & 1] = 0;
	return was;
}

int loader_map_max(const struct probe_objs *objs, enum probe_concern concern)
{
	struct bpf_map *map = concern_map(objs, concern, 0);

	return map ? (int)bpf_map__max_entries(map) : 0;
}

int loader_inflight_fd(const struct probe_objs *objs)
{
	return objs->gpufile ? bpf_map__fd(objs->gpufile->maps.gpu_inflight) : -1;
}

int loader_events_fd(const struct probe_objs *objs)
{
	return objs->proc ? bpf_map__fd(objs->proc->maps.events) : -1;
}

int loader_drops(const struct probe_objs *objs, uint64_t *ret_drops)
{
	uint64_t *values = calloc((size_t)objs->ncpus, sizeof(*values));

	if (!values)
		return -ENOMEM;
	memset(ret_drops, 0, PROBE_DROP_REASONS * sizeof(*ret_drops));
	for (int c = 0; c < CONCERNS; c++) {
		const struct bpf_map *map = concerns[c].skel(objs).drops;

		/* every object has every reason's counter: a reason counted elsewhere reads 0 */
		for (uint32_t reason = 0; map && reason < PROBE_DROP_REASONS; reason++) {
			if (bpf_map_lookup_elem(bpf_map__fd(map), &reason, values) < 0)
				continue;
			for (int cpu = 0; cpu < objs->ncpus; cpu++)
				ret_drops[reason] += values[cpu];
		}
	}
	free(values);
	return 0;
}

int loader_walk_threads(struct probe_objs *objs, uint32_t g)
{
	char buf[64];
	ssize_t n;
	int fd;

	if (!objs->plan.sched_walk || !objs->sched)
		return 0;
	objs->sched->bss->walk_epoch = g;
	fd = bpf_iter_create(bpf_link__fd(objs->sched->links.thread_walk));
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

int loader_take_event_counts(
	const struct probe_objs *objs, uint32_t g, struct probe_event_count *ret_counts)
{
	int fd = objs->proc ? bpf_map__fd(objs->proc->maps.event_counts) : -1;
	struct probe_event_count *values;
	int r = 0;

	memset(ret_counts, 0, PROBE_EV_SLOTS * sizeof(*ret_counts));
	if (fd < 0) /* proc not loaded: no events */
		return 0;
	if (!(values = calloc((size_t)objs->ncpus, sizeof(*values))))
		return -ENOMEM;
	for (uint32_t kind = 0; kind < PROBE_EV_SLOTS && r == 0; kind++) {
		uint32_t slot = (g & 1) * PROBE_EV_SLOTS + kind;

		if (bpf_map_lookup_elem(fd, &slot, values) < 0) {
			r = -errno;
			break;
		}
		for (int cpu = 0; cpu < objs->ncpus; cpu++) {
			ret_counts[kind].seen += values[cpu].seen;
			ret_counts[kind].dropped += values[cpu].dropped;
		}
		memset(values, 0, (size_t)objs->ncpus * sizeof(*values));
		if (bpf_map_update_elem(fd, &slot, values, BPF_ANY) < 0)
			r = -errno;
	}
	free(values);
	return r;
}

int loader_finals_fd(const struct probe_objs *objs)
{
	return objs->exit ? bpf_map__fd(objs->exit->maps.finals) : -1;
}

int loader_final_counts(const struct probe_objs *objs, struct probe_final_count *ret_count)
{
	int fd = objs->exit ? bpf_map__fd(objs->exit->maps.final_counts) : -1;
	struct probe_final_count *values;
	uint32_t zero = 0;
	int r = 0;

	memset(ret_count, 0, sizeof(*ret_count));
	if (fd < 0)
		return 0;
	if (!(values = calloc((size_t)objs->ncpus, sizeof(*values))))
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, values) < 0)
		r = -errno;
	for (int cpu = 0; r == 0 && cpu < objs->ncpus; cpu++) {
		ret_count->seen += values[cpu].seen;
		ret_count->dropped += values[cpu].dropped;
		ret_count->lives_full += values[cpu].lives_full;
		ret_count->argvs_dropped += values[cpu].argvs_dropped;
	}
	free(values);
	return r;
}
