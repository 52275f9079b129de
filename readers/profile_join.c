/*
 * profile_join.c: croft profile's main-thread half: each process's segments
 * joined in time order (first rows settled, phases and figures continued
 * across files), the polls summed (profile_steps.c), then the figures.  Invoking user, no
 * privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/* One process while its segments are walked. */
struct jproc {
	int open_kind;   /* phase open at the previous segment's end, -1 none */
	size_t open_out; /* and its index in res->phases */
};

struct join {
	void *const *pw; /* the workers */
	struct profile_result *res;
	struct seg_join segs; /* with the syscalls and their calls */
	size_t phases_cap;
	struct steps fix; /* processes going on across files (steps_continue) */
	struct jproc p;
};

bool phase_gpus_equal(const struct phase_gpus *a, const struct phase_gpus *b)
{
	return a->known == b->known && !memcmp(a->bits, b->bits, sizeof(a->bits));
}

static size_t emit_phase(struct join *j, int64_t tgid, const struct stretch *st, int64_t start)
{
	struct profile_result *res = j->res;

	if (!VEC_ROOM(res->phases, j->phases_cap, res->phases_count))
		return SIZE_MAX;
	res->phases[res->phases_count] =
		(struct phase){ tgid, start, st->end_ms, (enum phase_kind)st->kind, st->gpus };
	for (size_t w = 0; w < PHASE_GPU_WORDS; w++)
		res->gpus.bits[w] |= st->gpus.bits[w];
	res->gpus.known |= st->gpus.known;
	return res->phases_count++;
}

/* A segment's stretches; its first may start before its first row, or
 * continue the stretch the process's previous segment left open. */
static int join_stretches(
	struct join *j, const struct pseg *seg, struct jproc *p, uint64_t weight, bool cont)
{
	const struct pworker *w = j->pw[seg->head.worker];
	size_t out = SIZE_MAX;

	for (uint32_t i = seg->st_first; i != NONE_ID; i = w->st[i].next) {
		const struct stretch *st = &w->st[i];
		bool first_row = i == seg->st_first && seg->first_kind >= 0;

		if (first_row && cont && p->open_kind == seg->first_kind &&
			phase_gpus_equal(&j->res->phases[p->open_out].gpus, &st->gpus)) {
			out = p->open_out;
			j->res->phases[out].end_ms = st->end_ms;
		} else {
			int64_t start =
				first_row ? seg->head.first_ms - (int64_t)weight : st->start_ms;
			out = emit_phase(j, seg->head.tgid, st, start);
			if (out == SIZE_MAX)
				return -ENOMEM;
		}
	}
	p->open_kind = seg->open_kind;
	p->open_out = out;
	return 0;
}

/* seg_walk's step: each process's segments in time order. */
static int join_segment(
	void *ctx, const struct seg_head *head, const struct seg_head *prev, uint64_t weight)
{
	struct join *j = ctx;
	const struct pseg *seg = (const struct pseg *)head;
	int r;

	if (prev) {
		r = steps_continue(&j->fix, &((const struct pseg *)prev)->last, &seg->first);
		if (r < 0)
			return r;
	} else {
		j->p = (struct jproc){ -1, 0 };
	}
	if (seg->first_kind >= 0)
		j->res->phase_ms[seg->first_kind] += weight;
	return join_stretches(j, seg, &j->p, weight, prev != NULL);
}

/* Nearest rank: the smallest value with at least p% of the polls at or below. */
static double percentile(const double *sorted, size_t n, double p)
{
	size_t rank = (size_t)((p * (double)n + 99.0) / 100.0);

	return sorted[rank < 1 ? 0 : rank - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Mean, p50, p95 and max of one sample field, scaled by `scale`. */
static int summarize(
	const struct profile_result *res, size_t field_off, double scale, struct summary *ret)
{
	size_t n = res->samples;
	double *v = malloc((n + 1) * sizeof(*v)), sum = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int64_t raw;
		memcpy(&raw, (const char *)&res->samples_v[i] + field_off, sizeof(raw));
		v[i] = (double)raw / scale;
		sum += v[i];
	}
	*ret = (struct summary){ 0, 0, 0, 0 };
	if (n) {
		qsort(v, n, sizeof(*v), cmp_double);
		*ret = (struct summary){ sum / (double)n, percentile(v, n, 50),
			percentile(v, n, 95), v[n - 1] };
	}
	free(v);
	return 0;
}

static int figures(struct profile_result *res)
{
	struct summary threads;

	if (summarize(res, offsetof(struct sample, cpu_e4), E4, &res->cpu) < 0 ||
		summarize(res, offsetof(struct sample, rss), 1, &res->rss) < 0 ||
		summarize(res, offsetof(struct sample, threads), 1, &threads) < 0 ||
		summarize(res, offsetof(struct sample, rx_e4), E4, &res->rx) < 0 ||
		summarize(res, offsetof(struct sample, tx_e4), E4, &res->tx) < 0 ||
		summarize(res, offsetof(struct sample, read_e4), E4, &res->rd) < 0 ||
		summarize(res, offsetof(struct sample, write_e4), E4, &res->wr) < 0)
		return -ENOMEM;
	res->threads_mean = threads.mean;
	res->threads_max = threads.max;
	return 0;
}

static int cmp_phase(const void *a, const void *b)
{
	const struct phase *x = a, *y = b;

	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

struct share_rank {
	uint32_t id;
	u128 calls;
	const char *name;
};

static int cmp_share(const void *a, const void *b)
{
	const struct share_rank *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The top syscalls by calls with their share; names copied (the table goes). */
static int syscall_mix(struct join *j)
{
	struct profile_result *res = j->res;
	const struct seg_join *sj = &j->segs;
	size_t n = sj->syscalls.count;
	struct share_rank *v = calloc(n + 1, sizeof(*v));
	u128 total = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct share_rank){ (uint32_t)i, sj->calls[i],
			strtab_str(&sj->syscalls, (uint32_t)i, NULL) };
		total += sj->calls[i];
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_share);
	res->syscalls_total = (double)total / 1e7;
	for (size_t i = 0; i < n && i < TOP_SYSCALLS_PROF && v[i].calls; i++) {
		char *name = strdup(v[i].name);
		if (!name) {
			free(v);
			return -ENOMEM;
		}
		res->top[res->top_count++] = (struct syscall_share){ name, (double)v[i].calls / 1e7,
			(double)v[i].calls / (double)total };
	}
	free(v);
	return 0;
}

int profile_join(void *const *pw, int workers, struct profile_result *res)
{
	struct join j = { .pw = pw, .res = res };
	int r = seg_sums(&j.segs, pw, workers);

	for (int k = 0; k < workers; k++) {
		const struct pworker *w = pw[k];
		res->has_any |= w->has_any;
		for (int ph = 0; ph < PH_KINDS; ph++)
			res->phase_ms[ph] += w->phase_ms[ph];
	}
	if (r == 0)
		r = seg_walk(&j.segs, join_segment, &j);
	res->rows = j.segs.rows;
	res->first_ms = j.segs.first_ms;
	res->last_ms = j.segs.last_ms;
	res->processes = j.segs.processes;
	if (r == 0)
		r = steps_sum(pw, workers, &j.fix, res);
	if (r == 0 && res->phases_count)
		qsort(res->phases, res->phases_count, sizeof(*res->phases), cmp_phase);
	if (r == 0)
		r = figures(res);
	if (r == 0)
		r = syscall_mix(&j);
	seg_join_free(&j.segs);
	steps_free(&j.fix);
	return r;
}
