/*
 * pod.c: croft stats' figures per Kubernetes pod and per pod x GPU.
 * GPU-held hours, busy, idle and unknown, are summed over the pod's
 * processes, as per container.  Against what the kubelet allocated (gpus_allocated): the
 * hours a GPU was allocated to the pod and held by none of its processes,
 * and the hours one of its processes held a GPU the pod was not allocated.
 * Those two are pod time, the union of the rows' spans, so that a pod's
 * processes count each poll once.  Summed by each worker, merged by the
 * main thread.  Invoking user, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define POD_CONTAINERS_MAX 64 /* container ids listed per pod */

static const char *const qos_names[POD_QOS_KINDS] = { NULL, "guaranteed", "burstable",
	"besteffort" };

static uint8_t qos_of(const struct strv *qos)
{
	for (uint8_t i = 1; i < POD_QOS_KINDS; i++)
		if (qos->ptr && qos->len == strlen(qos_names[i]) &&
			!memcmp(qos->ptr, qos_names[i], qos->len))
			return i;
	return 0;
}

/* Rows come in time order, a poll's rows together: most spans extend the last. */
static bool span_add(struct span_set *set, int64_t start_ms, int64_t end_ms)
{
	struct span *last = set->count ? &set->v[set->count - 1] : NULL;

	if (last && start_ms <= last->end_ms && end_ms >= last->start_ms) {
		last->start_ms = start_ms < last->start_ms ? start_ms : last->start_ms;
		last->end_ms = end_ms > last->end_ms ? end_ms : last->end_ms;
		return true;
	}
	if (!VEC_ROOM(set->v, set->cap, set->count))
		return false;
	set->v[set->count++] = (struct span){ start_ms, end_ms };
	return true;
}

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
}

/* Sorted, overlaps joined; returns the time covered. */
static uint64_t span_normalize(struct span_set *set)
{
	size_t n = 0;
	uint64_t total = 0;

	if (set->count > 1)
		qsort(set->v, set->count, sizeof(*set->v), cmp_span);
	for (size_t i = 0; i < set->count; i++) {
		if (n && set->v[i].start_ms <= set->v[n - 1].end_ms) {
			if (set->v[i].end_ms > set->v[n - 1].end_ms)
				set->v[n - 1].end_ms = set->v[i].end_ms;
		} else {
			set->v[n++] = set->v[i];
		}
	}
	set->count = n;
	for (size_t i = 0; i < n; i++)
		total += (uint64_t)(set->v[i].end_ms - set->v[i].start_ms);
	return total;
}

/* The time of a (normalized) that b (normalized) does not cover. */
static uint64_t span_minus(const struct span_set *a, const struct span_set *b)
{
	uint64_t total = 0;
	size_t j = 0;

	for (size_t i = 0; i < a->count; i++) {
		int64_t at = a->v[i].start_ms, end = a->v[i].end_ms;

		while (j < b->count && b->v[j].end_ms <= at)
			j++;
		for (size_t k = j; k < b->count && b->v[k].start_ms < end; k++) {
			if (b->v[k].start_ms > at)
				total += (uint64_t)(b->v[k].start_ms - at);
			if (b->v[k].end_ms > at)
				at = b->v[k].end_ms;
			if (at >= end)
				break;
		}
		if (at < end)
			total += (uint64_t)(end - at);
	}
	return total;
}

static struct pod_acc *pod_of(struct pod_sums *ps, uint32_t id)
{
	if (id == NONE_ID || !VEC_ID_ROOM(ps->pods, ps->pods_cap, id))
		return NULL;
	return &ps->pods[id];
}

static struct pod_gpu *pod_gpu(struct pod_acc *pod, uint32_t gpu)
{
	for (size_t i = 0; i < pod->gpus_count; i++)
		if (pod->gpus[i].gpu == gpu)
			return &pod->gpus[i];
	if (!VEC_ROOM(pod->gpus, pod->gpus_cap, pod->gpus_count))
		return NULL;
	pod->gpus[pod->gpus_count] = (struct pod_gpu){ .gpu = (uint16_t)gpu };
	return &pod->gpus[pod->gpus_count++];
}

static bool add_container(struct pod_acc *pod, uint32_t container)
{
	if (container == NONE_ID)
		return true;
	for (size_t i = 0; i < pod->containers_count; i++)
		if (pod->containers[i] == container)
			return true;
	if (pod->containers_count == POD_CONTAINERS_MAX)
		return true; /* listed up to the limit; the figures count them all */
	if (!VEC_ROOM(pod->containers, pod->containers_cap, pod->containers_count))
		return false;
	pod->containers[pod->containers_count++] = container;
	return true;
}

/* The GPUs the row holds: held hours (gpu-held), the pod's held and unallocated time. */
static bool held_gpus(struct pod_acc *pod, const struct row *row, const struct pod_row_weight *w)
{
	bool ok = true;

	if (w->held)
		gpu_acc_add(&pod->acc, w->activity, w->ms);
	for (uint32_t k = 0; k < ROW_GPU_WORDS; k++)
		for (uint64_t bits = row->gpus[k]; bits; bits &= bits - 1) {
			uint32_t g = k * 64 + (uint32_t)__builtin_ctzll(bits);
			struct pod_gpu *pg = pod_gpu(pod, g);

			if (!pg)
				return false;
			if (w->held)
				gpu_acc_add(&pg->acc, w->activity, w->ms);
			ok &= span_add(&pg->held, row->unix_ms - (int64_t)w->ms, row->unix_ms);
			if ((row->has & HAS_ALLOCATED) && !gpu_bit(row->gpus_allocated, g))
				ok &= span_add(&pg->unallocated, row->unix_ms - (int64_t)w->ms,
					row->unix_ms);
		}
	return ok;
}

bool pod_sums_row(struct pod_sums *ps, const struct row *row, uint32_t container,
	const struct pod_row_weight *w)
{
	uint32_t id;
	struct pod_acc *pod;
	bool ok;

	if (!row->pod_uid.ptr)
		return true;
	id = strtab_intern(&ps->uids, row->pod_uid.ptr, row->pod_uid.len);
	if (!(pod = pod_of(ps, id)))
		return false;
	if (!pod->qos)
		pod->qos = qos_of(&row->pod_qos);
	ok = add_container(pod, container);
	if (w->holds)
		ok &= held_gpus(pod, row, w);
	if (!(row->has & HAS_ALLOCATED))
		return ok;
	/* the set bits alone: a row names a few of ROW_GPUS_MAX */
	for (uint32_t k = 0; k < ROW_GPU_WORDS; k++)
		for (uint64_t bits = row->gpus_allocated[k]; bits; bits &= bits - 1) {
			struct pod_gpu *pg = pod_gpu(pod, k * 64 + (uint32_t)__builtin_ctzll(bits));

			if (!pg)
				return false;
			ok &= span_add(&pg->allocated, row->unix_ms - (int64_t)w->ms, row->unix_ms);
		}
	return ok;
}

static bool spans_merge(struct span_set *to, const struct span_set *from)
{
	for (size_t i = 0; i < from->count; i++)
		if (!span_add(to, from->v[i].start_ms, from->v[i].end_ms))
			return false;
	return true;
}

static bool pod_merge(struct pod_acc *to, const struct pod_acc *from, const uint32_t *containers)
{
	bool ok = true;

	if (!to->qos)
		to->qos = from->qos;
	gpu_acc_sum(&to->acc, &from->acc);
	for (size_t i = 0; i < from->containers_count; i++)
		ok &= add_container(
			to, containers ? containers[from->containers[i]] : from->containers[i]);
	for (size_t i = 0; i < from->gpus_count && ok; i++) {
		const struct pod_gpu *f = &from->gpus[i];
		struct pod_gpu *t = pod_gpu(to, f->gpu);

		if (!t)
			return false;
		gpu_acc_sum(&t->acc, &f->acc);
		ok &= spans_merge(&t->allocated, &f->allocated) &&
		      spans_merge(&t->held, &f->held) &&
		      spans_merge(&t->unallocated, &f->unallocated);
	}
	return ok;
}

bool pod_sums_merge(struct pod_sums *to, const struct pod_sums *from, const uint32_t *containers)
{
	for (size_t i = 0; i < from->uids.count && i < from->pods_cap; i++) {
		size_t len;
		const char *uid = strtab_str(&from->uids, (uint32_t)i, &len);
		struct pod_acc *pod = pod_of(to, strtab_intern(&to->uids, uid, len));

		if (!pod || !pod_merge(pod, &from->pods[i], containers))
			return false;
	}
	return true;
}

void pod_sums_finish(struct pod_sums *ps)
{
	for (size_t i = 0; i < ps->uids.count && i < ps->pods_cap; i++) {
		struct pod_acc *pod = &ps->pods[i];

		pod->allocated_not_held_ms = pod->held_not_allocated_ms = 0;
		for (size_t k = 0; k < pod->gpus_count; k++) {
			struct pod_gpu *pg = &pod->gpus[k];

			span_normalize(&pg->allocated);
			span_normalize(&pg->held);
			pg->held_not_allocated_ms = span_normalize(&pg->unallocated);
			pg->allocated_not_held_ms = span_minus(&pg->allocated, &pg->held);
			pod->allocated_not_held_ms += pg->allocated_not_held_ms;
			pod->held_not_allocated_ms += pg->held_not_allocated_ms;
		}
	}
}

void pod_sums_free(struct pod_sums *ps)
{
	for (size_t i = 0; i < ps->pods_cap; i++) {
		struct pod_acc *pod = &ps->pods[i];

		for (size_t k = 0; k < pod->gpus_count; k++) {
			free(pod->gpus[k].allocated.v);
			free(pod->gpus[k].held.v);
			free(pod->gpus[k].unallocated.v);
		}
		free(pod->gpus);
		free(pod->containers);
	}
	free(ps->pods);
	strtab_free(&ps->uids);
}

const char *pod_qos_text(uint8_t qos)
{
	return qos < POD_QOS_KINDS ? qos_names[qos] : NULL;
}
