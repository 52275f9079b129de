/*
 * gpu.c: croft stats' GPU-held hours per GPU index, per container x
 * GPU and per system holder (gpu_system_holders), summed by each worker and
 * merged by the main thread.  A row stands for its time on every GPU it
 * names: the verdict is the process's, so its GPUs are all idle or all
 * not.  Invoking user, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define PAIR_KEY(container, gpu) ((int64_t)(((uint64_t)(container) << 9) | (gpu)))

void gpu_acc_add(struct gpu_acc *a, enum gpu_activity activity, uint64_t ms)
{
	a->held_ms += ms;
	a->activity_ms[(unsigned)activity < GA_COUNT ? activity : GA_UNKNOWN] += ms;
}

void gpu_acc_sum(struct gpu_acc *to, const struct gpu_acc *from)
{
	to->held_ms += from->held_ms;
	for (int k = 0; k < GA_COUNT; k++)
		to->activity_ms[k] += from->activity_ms[k];
}

bool gpu_sums_init(struct gpu_sums *g, size_t holders)
{
	memset(g, 0, sizeof(*g));
	g->system = calloc(holders + 1, sizeof(*g->system));
	g->system_count = holders;
	return g->system != NULL;
}

void gpu_sums_free(struct gpu_sums *g)
{
	i64map_free(&g->pair_index);
	free(g->pairs);
	free(g->system);
}

static struct gpu_acc *pair_acc(struct gpu_sums *g, uint32_t container, uint32_t gpu)
{
	struct i64_slot *slot = i64map_slot(&g->pair_index, PAIR_KEY(container, gpu));

	if (!slot)
		return NULL;
	if (slot->epoch == g->pair_index.epoch)
		return &g->pairs[slot->value].acc;
	if (!VEC_ROOM(g->pairs, g->pairs_cap, g->pairs_count))
		return NULL;
	g->pairs[g->pairs_count] =
		(struct gpu_pair){ .container = container, .gpu = (uint16_t)gpu };
	i64map_set(&g->pair_index, slot, PAIR_KEY(container, gpu), (uint32_t)g->pairs_count);
	return &g->pairs[g->pairs_count++].acc;
}

static bool add_one(struct gpu_sums *g, uint32_t container, uint32_t gpu,
	enum gpu_activity activity, uint64_t ms)
{
	struct gpu_acc *a = pair_acc(g, container, gpu);

	if (!a)
		return false;
	gpu_acc_add(a, activity, ms);
	gpu_acc_add(&g->by_gpu[gpu], activity, ms);
	return true;
}

bool gpu_sums_add(struct gpu_sums *g, uint32_t container, const uint64_t gpus[ROW_GPU_WORDS],
	enum gpu_activity activity, uint64_t ms)
{
	bool any = false, ok = true;

	for (uint32_t w = 0; w < ROW_GPU_WORDS; w++)
		for (uint64_t bits = gpus[w]; bits; bits &= bits - 1) {
			ok &= add_one(g, container, w * 64 + (uint32_t)__builtin_ctzll(bits),
				activity, ms);
			any = true;
		}
	return any ? ok : add_one(g, container, GPU_NONE, activity, ms);
}

bool gpu_sums_merge(struct gpu_sums *to, const struct gpu_sums *from, const uint32_t *remap)
{
	for (size_t i = 0; i <= GPU_NONE; i++)
		gpu_acc_sum(&to->by_gpu[i], &from->by_gpu[i]);
	for (size_t i = 0; i < from->system_count && i < to->system_count; i++)
		gpu_acc_sum(&to->system[i], &from->system[i]);
	for (size_t i = 0; i < from->pairs_count; i++) {
		const struct gpu_pair *p = &from->pairs[i];
		uint32_t c = p->container == NONE_ID || !remap ? p->container : remap[p->container];
		struct gpu_acc *a = pair_acc(to, c, p->gpu);

		if (!a)
			return false;
		gpu_acc_sum(a, &p->acc);
	}
	return true;
}
