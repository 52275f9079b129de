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

struct join {
	const struct read_opts *o;
	struct pworker *pw;
	int workers;
	struct profile_result *res;
	struct strtab names;
	uint32_t *remap[DS_THREADS_MAX]; /* worker syscall id -> names id */
	u128_p *calls;                   /* per names id */
	size_t phases_cap;
	struct steps fix; /* processes going on across files (steps_continue) */
};

/* One process while its segments are walked. */
struct jproc {
	int open_kind;   /* phase open at the previous segment's end, -1 none */
	size_t open_out; /* and its index in res->phases */
};

static int join_names(struct join *j)
{
	for (int k = 0; k < j->workers; k++) {
		const struct strtab *t = &j->pw[k].syscalls;
		j->remap[k] = calloc(t->count + 1, sizeof(*j->remap[k]));
		if (!j->remap[k])
			return -ENOMEM;
		for (size_t i = 0; i < t->count; i++) {
			size_t len;
			const char *s = strtab_str(t, (uint32_t)i, &len);
			if ((j->remap[k][i] = strtab_intern(&j->names, s, len)) == NONE_ID)
				return -ENOMEM;
		}
	}
	j->calls = calloc(j->names.count + 1, sizeof(*j->calls));
	if (!j->calls)
		return -ENOMEM;
	for (int k = 0; k < j->workers; k++)
		for (size_t i = 0; i < j->pw[k].calls_cap && i < j->pw[k].syscalls.count; i++)
			j->calls[j->remap[k][i]] += j->pw[k].calls[i];
	return 0;
}

bool phase_gpus_equal(const struct phase_gpus *a, const struct phase_gpus *b)
{
	return a->known == b->known && !memcmp(a->bits, b->bits, sizeof(a->bits));
}

static size_t emit_phase(struct join *j, int64_t tgid, const struct stretch *st, int64_t start)
{
	struct profile_result *res = j->res;

	if (res->phases_count == j->phases_cap) {
		size_t cap = j->phases_cap ? j->phases_cap * 2 : 64;
		struct phase *v = realloc(res->phases, cap * sizeof(*v));
		if (!v)
			return SIZE_MAX;
		res->phases = v;
		j->phases_cap = cap;
	}
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
	const struct pworker *w = &j->pw[seg->worker];
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
				first_row ? seg->key.first_ms - (int64_t)weight : st->start_ms;
			out = emit_phase(j, seg->key.tgid, st, start);
			if (out == SIZE_MAX)
				return -ENOMEM;
		}
	}
	p->open_kind = seg->open_kind;
	p->open_out = out;
	return 0;
}

static void settle_first_row(struct join *j, const struct pseg *seg, uint64_t weight)
{
	const struct pworker *w = &j->pw[seg->worker];

	if (seg->first_kind >= 0)
		j->res->phase_ms[seg->first_kind] += weight;
	for (uint32_t i = 0; i < seg->sys_n; i++) {
		const struct sys_ref *r = &w->sys[seg->sys_off + i];
		j->calls[j->remap[seg->worker][r->id]] += (u128_p)r->rate_e4 * weight;
	}
}

static int join_segments(struct join *j)
{
	size_t n = 0;
	struct jproc p = { -1, 0 };
	int r = 0;

	for (int k = 0; k < j->workers; k++)
		n += j->pw[k].segs_count;
	const struct seg_key **v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (int k = 0; k < j->workers; k++)
		for (size_t i = 0; i < j->pw[k].segs_count; i++)
			v[n++] = &j->pw[k].segs[i].key;
	if (n)
		qsort(v, n, sizeof(*v), seg_key_cmp);
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct pseg *seg = (const struct pseg *)v[i];
		uint64_t weight = j->o->poll_ms;
		bool cont = i > 0 && seg_key_continues(v[i - 1], seg->key.tgid, seg->key.ident,
					     seg->key.first_ms, j->o->gap_ms);

		if (cont) {
			weight = (uint64_t)(seg->key.first_ms - v[i - 1]->last_ms);
			r = steps_continue(
				&j->fix, &((const struct pseg *)v[i - 1])->last, &seg->first);
		} else {
			p = (struct jproc){ -1, 0 };
			j->res->processes++;
		}
		settle_first_row(j, seg, weight);
		if (r == 0)
			r = join_stretches(j, seg, &p, weight, cont);
	}
	free(v);
	return r;
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
	u128_p calls;
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
	size_t n = j->names.count;
	struct share_rank *v = calloc(n + 1, sizeof(*v));
	u128_p total = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct share_rank){ (uint32_t)i, j->calls[i],
			strtab_str(&j->names, (uint32_t)i, NULL) };
		total += j->calls[i];
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

int profile_join(
	const struct read_opts *o, struct pworker *pw, int workers, struct profile_result *res)
{
	struct join j = { .o = o, .pw = pw, .workers = workers, .res = res };
	int r = 0;

	for (int k = 0; k < workers; k++) {
		if (pw[k].oom)
			r = -ENOMEM;
		if (pw[k].rows && (res->rows == 0 || pw[k].first_ms < res->first_ms))
			res->first_ms = pw[k].first_ms;
		if (pw[k].rows && (res->rows == 0 || pw[k].last_ms > res->last_ms))
			res->last_ms = pw[k].last_ms;
		res->rows += pw[k].rows;
		res->has_any |= pw[k].has_any;
		for (int ph = 0; ph < PH_KINDS; ph++)
			res->phase_ms[ph] += pw[k].phase_ms[ph];
	}
	if (r == 0)
		r = join_names(&j);
	if (r == 0)
		r = join_segments(&j);
	if (r == 0)
		r = steps_sum(pw, workers, &j.fix, res);
	if (r == 0 && res->phases_count)
		qsort(res->phases, res->phases_count, sizeof(*res->phases), cmp_phase);
	if (r == 0)
		r = figures(res);
	if (r == 0)
		r = syscall_mix(&j);
	for (int k = 0; k < workers; k++)
		free(j.remap[k]);
	free(j.calls);
	strtab_free(&j.names);
	steps_free(&j.fix);
	return r;
}
