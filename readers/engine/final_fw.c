/*
 * final_fw.c: --framework selects processes by the framework they end
 * with.  The sampler names what it has found so far and, in a process's
 * first minute, may name an earlier catalog entry later (libtorch first,
 * vllm's extension after: vllm), so rows of one process can disagree.  A
 * first pass over the files finds each process's last framework; the
 * figures then take every row of the processes whose last one is asked
 * for.  Invoking user, no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

enum { FW_UNSEEN = -1, FW_OTHER = 0, FW_ASKED = 1 };

/* One process's rows in one file, as the figures' tracks are cut. */
struct fw_track {
	struct track_head head; /* first */
	int8_t fw;              /* its last row naming a framework: FW_* */
};

/* A selected process: every row of (tgid, ident) from first_ms to last_ms. */
struct fw_span {
	int64_t tgid, first_ms, last_ms;
	int64_t reach_ms; /* the latest last_ms of this tgid's spans so far */
	uint64_t ident;
};

struct fw_select {
	struct fw_span *v; /* processes of rows without start_ms (older datasets) */
	size_t n, cap;
	struct i64map exact; /* proc_key of the others: (host, tgid, start_ms) */
};

/* The process the join is walking: its first and last tracks, its framework. */
struct fw_proc {
	struct fw_select *sel;
	const struct track_head *first, *last;
	int fw;
};

static void fw_row(void *ctx, const struct row *r)
{
	struct track_worker *w = ctx;
	const struct strv *asked = &w->o->filter.framework;
	struct fw_track *track;
	uint64_t weight;
	bool first;

	if (w->oom)
		return;
	track = track_row(w, r, &weight, &first);
	if (!track)
		return;
	if (first)
		track->fw = FW_UNSEEN;
	if (r->framework.ptr && r->framework.len)
		track->fw = r->framework.len == asked->len &&
					    memcmp(r->framework.ptr, asked->ptr, asked->len) == 0
				    ? FW_ASKED
				    : FW_OTHER;
}

/* Adds the process walked so far when its last framework is the one asked for. */
static int take_process(struct fw_proc *p)
{
	struct fw_select *sel = p->sel;
	struct fw_span *s;

	if (!p->first || p->fw != FW_ASKED)
		return 0;
	if (p->first->start_ms != NO_START_MS) {
		int64_t key =
			(int64_t)proc_key(p->first->host_hash, p->first->tgid, p->first->start_ms);
		struct i64_slot *slot = i64map_slot(&sel->exact, key);

		if (!slot)
			return -ENOMEM;
		i64map_set(&sel->exact, slot, key, 1);
		return 0;
	}
	if (!VEC_ROOM(sel->v, sel->cap, sel->n))
		return -ENOMEM;
	s = &sel->v[sel->n];
	*s = (struct fw_span){ p->first->tgid, p->first->first_ms, p->last->last_ms,
		p->last->last_ms, p->first->ident };
	if (sel->n > 0 && s[-1].tgid == s->tgid && s[-1].reach_ms > s->reach_ms)
		s->reach_ms = s[-1].reach_ms;
	sel->n++;
	return 0;
}

/* track_walk's step: a process ends where the next begins. */
static int fw_track_step(
	void *ctx, const struct track_head *head, const struct track_head *prev, uint64_t weight)
{
	struct fw_proc *p = ctx;
	int fw = ((const struct fw_track *)head)->fw;
	int r = 0;

	if (!prev) {
		r = take_process(p);
		p->first = head;
		p->fw = FW_UNSEEN;
	}
	p->last = head;
	if (fw != FW_UNSEEN)
		p->fw = fw;
	return r;
}

int fw_select_build(
	const struct read_opts *o, const struct ds_files *files, struct fw_select **ret_sel)
{
	static const struct ds_sink sink = { track_file_begin, fw_row, NULL };
	void *ctxs[DS_THREADS_MAX];
	struct track_worker *w =
		track_workers_new(o, sizeof(*w), sizeof(struct fw_track), false, ctxs);
	struct fw_select *sel = calloc(1, sizeof(*sel));
	struct ds_report rep;
	struct track_join join = { 0 };
	struct fw_proc p = { .sel = sel };
	int r;

	if (!w || !sel) {
		free(w);
		free(sel);
		return -ENOMEM;
	}
	ds_report_init(&rep); /* the figures' pass reports what it skips */
	r = ds_read(files, o->threads, o->jansson_only, &sink, ctxs, &rep);
	if (r == 0)
		r = track_sums(&join, ctxs, o->threads);
	if (r == 0)
		r = track_walk(&join, fw_track_step, &p);
	if (r == 0)
		r = take_process(&p);
	track_join_free(&join);
	for (int k = 0; k < o->threads; k++)
		track_worker_free(&w[k]);
	free(w);
	ds_report_free(&rep);
	if (r < 0) {
		fw_select_free(sel);
		return r;
	}
	*ret_sel = sel;
	return 0;
}

bool fw_select_has(const struct fw_select *sel, const struct row *r)
{
	size_t lo = 0, hi = sel->n;
	uint64_t ident;

	if (row_start_ms(r) != NO_START_MS)
		return i64map_has(
			&sel->exact, (int64_t)proc_key(row_host_hash(r), r->tgid, r->start_ms));

	/* the first span of a later tgid, or of this one starting after the row */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct fw_span *s = &sel->v[mid];

		if (s->tgid < r->tgid || (s->tgid == r->tgid && s->first_ms <= r->unix_ms))
			lo = mid + 1;
		else
			hi = mid;
	}
	ident = row_ident(r);
	for (size_t i = lo; i-- > 0;) {
		const struct fw_span *s = &sel->v[i];

		if (s->tgid != r->tgid || s->reach_ms < r->unix_ms)
			return false; /* no earlier span of the tgid reaches the row */
		if (s->ident == ident && r->unix_ms <= s->last_ms)
			return true;
	}
	return false;
}

void fw_select_free(struct fw_select *sel)
{
	if (!sel)
		return;
	i64map_free(&sel->exact);
	free(sel->v);
	free(sel);
}
