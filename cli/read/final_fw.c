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

#include "readers.h"

enum { FW_UNSEEN = -1, FW_OTHER = 0, FW_ASKED = 1 };

/* One process's rows in one file, as the figures' segments are cut. */
struct fw_seg {
	struct seg_key key; /* first: sorted through pointers to keys */
	int8_t fw;          /* its last row naming a framework: FW_* */
};

struct fw_worker {
	const char *asked;
	size_t asked_len;
	uint64_t gap_ms;
	struct i64map tgids;
	struct fw_seg *segs;
	size_t count, cap;
	uint32_t file;
	bool oom;
};

/* A selected process: every row of (tgid, ident) from first_ms to last_ms. */
struct fw_span {
	int64_t tgid, first_ms, last_ms;
	int64_t reach_ms; /* the latest last_ms of this tgid's spans so far */
	uint64_t ident;
};

struct fw_select {
	struct fw_span *v;
	size_t n, cap;
};

static struct fw_seg *seg_for(struct fw_worker *w, const struct row *r, uint64_t ident)
{
	struct i64_slot *slot = i64map_slot(&w->tgids, r->tgid);

	if (!slot)
		return NULL;
	if (slot->gen == w->tgids.gen &&
		seg_key_continues(&w->segs[slot->value].key, r->tgid, ident, r->unix_ms, w->gap_ms))
		return &w->segs[slot->value];
	if (w->count == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct fw_seg *v = realloc(w->segs, cap * sizeof(*v));
		if (!v)
			return NULL;
		w->segs = v;
		w->cap = cap;
	}
	w->segs[w->count] =
		(struct fw_seg){ .key = { r->tgid, r->unix_ms, r->unix_ms, ident, w->file },
			.fw = FW_UNSEEN };
	i64map_set(&w->tgids, slot, r->tgid, (uint32_t)w->count);
	return &w->segs[w->count++];
}

static void fw_row(void *ctx, const struct row *r)
{
	struct fw_worker *w = ctx;
	struct fw_seg *seg;

	if (w->oom)
		return;
	seg = seg_for(w, r, row_ident(r));
	if (!seg) {
		w->oom = true;
		return;
	}
	seg->key.last_ms = r->unix_ms;
	if (r->framework.ptr && r->framework.len)
		seg->fw = r->framework.len == w->asked_len &&
					  memcmp(r->framework.ptr, w->asked, w->asked_len) == 0
				  ? FW_ASKED
				  : FW_OTHER;
}

static void fw_file_begin(void *ctx, uint32_t file)
{
	struct fw_worker *w = ctx;

	i64map_clear(&w->tgids);
	w->file = file;
}

/* Adds the process of segments v[from..to) when its last framework is the one asked for. */
static int take_process(struct fw_select *sel, const struct seg_key **v, size_t from, size_t to)
{
	int fw = FW_UNSEEN;
	struct fw_span *grown, *s;

	for (size_t i = from; i < to; i++)
		if (((const struct fw_seg *)v[i])->fw != FW_UNSEEN)
			fw = ((const struct fw_seg *)v[i])->fw;
	if (fw != FW_ASKED)
		return 0;
	if (sel->n == sel->cap) {
		size_t cap = sel->cap ? sel->cap * 2 : 256;
		if (!(grown = realloc(sel->v, cap * sizeof(*grown))))
			return -ENOMEM;
		sel->v = grown;
		sel->cap = cap;
	}
	s = &sel->v[sel->n];
	*s = (struct fw_span){ v[from]->tgid, v[from]->first_ms, v[to - 1]->last_ms,
		v[to - 1]->last_ms, v[from]->ident };
	if (sel->n > 0 && s[-1].tgid == s->tgid && s[-1].reach_ms > s->reach_ms)
		s->reach_ms = s[-1].reach_ms;
	sel->n++;
	return 0;
}

/* Joins every worker's segments into processes, as stats and profile do. */
static int select_join(struct fw_worker *w, int workers, uint64_t gap_ms, struct fw_select *sel)
{
	size_t n = 0, from = 0;
	const struct seg_key **v;
	int r = 0;

	for (int k = 0; k < workers; k++)
		n += w[k].count;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (int k = 0; k < workers; k++)
		for (size_t i = 0; i < w[k].count; i++)
			v[n++] = &w[k].segs[i].key;
	qsort(v, n, sizeof(*v), seg_key_cmp);
	for (size_t i = 1; i <= n && r == 0; i++) {
		if (i < n && seg_key_continues(
				     v[i - 1], v[i]->tgid, v[i]->ident, v[i]->first_ms, gap_ms))
			continue;
		r = take_process(sel, v, from, i);
		from = i;
	}
	free(v);
	return r;
}

int fw_select_build(
	const struct read_opts *o, const struct ds_files *files, struct fw_select **ret_sel)
{
	static const struct ds_sink sink = { fw_file_begin, fw_row, NULL };
	struct fw_worker *w = calloc((size_t)o->threads, sizeof(*w));
	struct fw_select *sel = calloc(1, sizeof(*sel));
	void *ctxs[DS_THREADS_MAX];
	struct ds_report rep;
	int r;

	if (!w || !sel) {
		free(w);
		free(sel);
		return -ENOMEM;
	}
	for (int k = 0; k < o->threads; k++) {
		w[k] = (struct fw_worker){ .asked = o->filter.framework,
			.asked_len = strlen(o->filter.framework),
			.gap_ms = o->gap_ms };
		ctxs[k] = &w[k];
	}
	ds_report_init(&rep); /* the figures' pass reports what it skips */
	r = ds_read(files, o->threads, o->jansson_only, &sink, ctxs, &rep);
	for (int k = 0; k < o->threads && r == 0; k++)
		if (w[k].oom)
			r = -ENOMEM;
	if (r == 0)
		r = select_join(w, o->threads, o->gap_ms, sel);
	for (int k = 0; k < o->threads; k++) {
		i64map_free(&w[k].tgids);
		free(w[k].segs);
	}
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
	free(sel->v);
	free(sel);
}
