/*
 * join.c: croft profile's main-thread half: each process's tracks
 * joined in time order (first rows settled, phases and figures continued
 * across files), the polls summed (steps.c), then the figures.  Invoking user, no
 * privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/* The phase a process left open at its previous track's end, while its tracks are walked. */
struct open_phase {
	int kind;   /* -1 none */
	size_t out; /* its index in res->phases */
};

struct join {
	void *const *pw; /* the workers */
	struct profile_result *res;
	struct track_join tracks; /* with the syscalls and their calls */
	size_t phases_cap;
	struct steps fix; /* processes going on across files (steps_continue) */
	struct open_phase open;
};

const char *phase_name(enum phase_kind kind)
{
	static const char *const names[PH_KINDS] = { "onset", "busy", "idle", "unknown" };

	return kind < PH_KINDS ? names[kind] : "?";
}

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
	for (size_t w = 0; w < ROW_GPU_WORDS; w++)
		res->gpus.bits[w] |= st->gpus.bits[w];
	res->gpus.known |= st->gpus.known;
	return res->phases_count++;
}

/* A track's stretches; its first may start before its first row, or
 * continue the stretch the process's previous track left open. */
static int join_stretches(struct join *j, const struct profile_track *track,
	struct open_phase *open, uint64_t weight, bool cont)
{
	const struct pworker *w = j->pw[track->head.worker];
	size_t out = SIZE_MAX;

	for (uint32_t i = track->st_first; i != NONE_ID; i = w->st[i].next) {
		const struct stretch *st = &w->st[i];
		bool first_row = i == track->st_first && track->first_kind >= 0;

		if (first_row && cont && open->kind == track->first_kind &&
			phase_gpus_equal(&j->res->phases[open->out].gpus, &st->gpus)) {
			out = open->out;
			j->res->phases[out].end_ms = st->end_ms;
		} else {
			int64_t start =
				first_row ? track->head.first_ms - (int64_t)weight : st->start_ms;
			out = emit_phase(j, track->head.tgid, st, start);
			if (out == SIZE_MAX)
				return -ENOMEM;
		}
	}
	open->kind = track->open_kind;
	open->out = out;
	return 0;
}

/* track_walk's step: each process's tracks in time order. */
static int join_track(
	void *ctx, const struct track_head *head, const struct track_head *prev, uint64_t weight)
{
	struct join *j = ctx;
	const struct profile_track *track = (const struct profile_track *)head;
	int r;

	if (prev) {
		r = steps_continue(
			&j->fix, &((const struct profile_track *)prev)->last, &track->first);
		if (r < 0)
			return r;
	} else {
		j->open = (struct open_phase){ -1, 0 };
	}
	if (track->first_kind >= 0)
		j->res->phase_ms[track->first_kind] += weight;
	return join_stretches(j, track, &j->open, weight, prev != NULL);
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

	if (summarize(res, offsetof(struct sample, cpu_x1e4), FIXED_SCALE, &res->cpu) < 0 ||
		summarize(res, offsetof(struct sample, rss), 1, &res->rss) < 0 ||
		summarize(res, offsetof(struct sample, threads), 1, &threads) < 0 ||
		summarize(res, offsetof(struct sample, rx_x1e4), FIXED_SCALE, &res->rx) < 0 ||
		summarize(res, offsetof(struct sample, tx_x1e4), FIXED_SCALE, &res->tx) < 0 ||
		summarize(res, offsetof(struct sample, read_x1e4), FIXED_SCALE, &res->rd) < 0 ||
		summarize(res, offsetof(struct sample, write_x1e4), FIXED_SCALE, &res->wr) < 0 ||
		summarize(res, offsetof(struct sample, sm_x1e4), FIXED_SCALE, &res->sm) < 0)
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

/* The top syscalls by calls; names copied (the join's table goes). */
static int syscall_mix(struct join *j)
{
	struct profile_result *res = j->res;
	const struct track_join *tj = &j->tracks;
	struct syscall_calls *v = syscalls_ranked(tj);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < tj->syscalls.count; i++)
		res->syscalls_x1e7 += tj->calls[i];
	for (size_t i = 0; i < tj->syscalls.count && i < TOP_SYSCALLS_PROF && v[i].calls_x1e7;
		i++) {
		char *name = strdup(v[i].name);
		if (!name) {
			free(v);
			return -ENOMEM;
		}
		res->top[res->top_count++] = (struct syscall_calls){ name, v[i].calls_x1e7 };
	}
	free(v);
	return 0;
}

int profile_join(void *const *pw, int workers, struct profile_result *res)
{
	struct join j = { .pw = pw, .res = res };
	int r = track_sums(&j.tracks, pw, workers);

	for (int k = 0; k < workers; k++) {
		const struct pworker *w = pw[k];
		res->has_any |= w->has_any;
		for (int ph = 0; ph < PH_KINDS; ph++)
			res->phase_ms[ph] += w->phase_ms[ph];
		for (int k = 0; k < LABEL_SOURCE_COUNT; k++)
			res->origins.label_rows[k] += w->origins.label_rows[k];
		for (int k = 0; k < EXIT_COUNT; k++)
			res->origins.exits[k] += w->origins.exits[k];
	}
	if (r == 0)
		r = track_walk(&j.tracks, join_track, &j);
	res->rows = j.tracks.rows;
	res->first_ms = j.tracks.first_ms;
	res->last_ms = j.tracks.last_ms;
	res->processes = j.tracks.processes;
	if (r == 0)
		r = steps_sum(pw, workers, &j.fix, res);
	if (r == 0 && res->phases_count)
		qsort(res->phases, res->phases_count, sizeof(*res->phases), cmp_phase);
	if (r == 0)
		r = figures(res);
	if (r == 0)
		r = syscall_mix(&j);
	track_join_free(&j.tracks);
	steps_free(&j.fix);
	return r;
}
