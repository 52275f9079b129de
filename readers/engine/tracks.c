/*
 * tracks.c: the track engine of croft stats, croft profile and
 * final_fw.c's pass.  Workers cut the rows of each file into tracks (one
 * process's rows in one file) and keep the syscall calls; the join sorts
 * every worker's tracks, a process's together in time order, and walks
 * them, settling each track's first row.  What a process is lives in
 * same_process.  Invoking user, no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

uint64_t row_ident(const struct row *row)
{
	uint64_t a = row->exe.ptr ? str_hash(row->exe.ptr, row->exe.len) : 1;
	uint64_t b = row->comm.ptr ? str_hash(row->comm.ptr, row->comm.len) : 2;

	return a ^ (b * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
}

uint64_t proc_key(uint64_t host_hash, int64_t tgid, int64_t start_ms)
{
	uint64_t k = host_hash ^ ((uint64_t)tgid * 0x9e3779b97f4a7c15ull);

	k = (k ^ (k >> 29)) + (uint64_t)start_ms * 0xbf58476d1ce4e5b9ull;
	return k ^ (k >> 32);
}

/*
 * Whether rows of (host, tgid, start_ms) from ms on are h's process.  With
 * a start_ms that names it exactly, whatever the gaps; rows without one
 * (older datasets) by the gap rule: the same exe and comm, not earlier
 * than h's last row, nor more than gap_ms after it.
 */
static bool same_process(const struct track_head *h, uint32_t host, int64_t tgid, int64_t start_ms,
	uint64_t ident, int64_t ms, uint64_t gap_ms)
{
	if (h->tgid != tgid || h->host != host || h->start_ms != start_ms)
		return false;
	if (start_ms != NO_START_MS)
		return true;
	return h->ident == ident && ms >= h->last_ms && (uint64_t)(ms - h->last_ms) <= gap_ms;
}

int64_t row_start_ms(const struct row *r)
{
	return (r->has & HAS_START) && r->start_ms >= 0 ? r->start_ms : NO_START_MS;
}

uint64_t row_host_hash(const struct row *r)
{
	return r->host.ptr ? str_hash(r->host.ptr, r->host.len) | 1 : 0;
}

/* The time a row's rates cover, where it says (span_ms); else -1. */
static int64_t row_span_ms(const struct row *r)
{
	return (r->has & HAS_SPAN) && r->span_ms >= 0 ? r->span_ms : -1;
}

/* The id of the row's host in the worker's table; most files have one. */
static uint32_t row_host(struct track_worker *w, const struct row *r)
{
	const char *last;
	size_t len;

	if (!r->host.ptr)
		return NONE_ID;
	if (w->hosts.count) {
		last = strtab_str(&w->hosts, w->last_host, &len);
		if (len == r->host.len && !memcmp(last, r->host.ptr, len))
			return w->last_host;
	}
	w->last_host = strtab_intern(&w->hosts, r->host.ptr, r->host.len);
	if (w->last_host == NONE_ID)
		w->oom = true;
	return w->last_host;
}

void *track_workers_new(const struct read_opts *o, size_t worker_size, size_t track_size,
	bool calls, void **ret_ctxs)
{
	char *v = calloc((size_t)o->threads, worker_size);

	for (int k = 0; v && k < o->threads; k++) {
		struct track_worker *w = (struct track_worker *)(v + (size_t)k * worker_size);

		*w = (struct track_worker){
			.o = o, .index = (uint8_t)k, .calls_kept = calls, .track_size = track_size
		};
		ret_ctxs[k] = w;
	}
	return v;
}

void track_worker_free(struct track_worker *w)
{
	free(w->tracks);
	i64map_free(&w->tgids);
	strtab_free(&w->hosts);
	strtab_free(&w->syscalls);
	free(w->calls);
	free(w->sys);
}

void track_file_begin(void *ctx, uint32_t file)
{
	struct track_worker *w = ctx;

	i64map_clear(&w->tgids);
	w->file = file;
	w->file_first = w->tracks_count;
}

/* A row after its track's first: its calls over the ms it stands for. */
static void add_calls(struct track_worker *w, const struct row *r, uint64_t weight_ms)
{
	for (uint32_t i = 0; i < r->syscalls_count; i++) {
		const struct row_syscall *sc = &r->syscalls[i];
		uint32_t id = strtab_intern_row(&w->syscalls, r, &sc->name);

		if (id == NONE_ID || !VEC_ID_ROOM(w->calls, w->calls_cap, id)) {
			w->oom = true;
			return;
		}
		if (sc->rate_x1e4 > 0)
			w->calls[id] += (u128)sc->rate_x1e4 * weight_ms;
	}
}

/* A track's first row: its rates wait for the join to know its weight. */
static void defer_calls(struct track_worker *w, struct track_head *h, const struct row *r)
{
	h->sys_off = (uint32_t)w->sys_count;
	for (uint32_t i = 0; i < r->syscalls_count; i++) {
		const struct row_syscall *sc = &r->syscalls[i];
		uint32_t id = strtab_intern_row(&w->syscalls, r, &sc->name);

		if (id == NONE_ID || !VEC_ROOM(w->sys, w->sys_cap, w->sys_count)) {
			w->oom = true;
			return;
		}
		if (sc->rate_x1e4 <= 0)
			continue;
		w->sys[w->sys_count++] = (struct sys_ref){ id, sc->rate_x1e4 };
		h->sys_n++;
	}
}

static struct track_head *track_start(struct track_worker *w, const struct row *r, uint32_t host,
	int64_t start_ms, uint64_t ident)
{
	if (!vec_room((void **)&w->tracks, &w->tracks_cap, w->track_size, w->tracks_count, false))
		return NULL;
	struct track_head *h = track_at(w, w->tracks_count++);
	memset(h, 0, w->track_size);
	*h = (struct track_head){ .tgid = r->tgid,
		.first_ms = r->unix_ms,
		.last_ms = r->unix_ms,
		.start_ms = start_ms,
		.first_span_ms = row_span_ms(r),
		.host_hash = row_host_hash(r),
		.host = host,
		.ident = ident,
		.file = w->file,
		.worker = w->index };
	if (w->calls_kept)
		defer_calls(w, h, r);
	return h;
}

void *track_row(
	struct track_worker *w, const struct row *r, uint64_t *ret_weight_ms, bool *ret_first)
{
	uint64_t ident = row_ident(r);
	uint32_t host = row_host(w, r);
	int64_t start_ms = row_start_ms(r);
	/* older datasets' rows by tgid alone, as ever */
	int64_t key = host == NONE_ID && start_ms == NO_START_MS
			      ? r->tgid
			      : (int64_t)proc_key((uint64_t)host + 1, r->tgid, start_ms);
	struct i64_slot *slot = i64map_slot(&w->tgids, key);
	struct track_head *h;

	if (w->rows++ == 0 || r->unix_ms < w->first_ms)
		w->first_ms = r->unix_ms;
	if (w->rows == 1 || r->unix_ms > w->last_ms)
		w->last_ms = r->unix_ms;
	if (!slot) {
		w->oom = true;
		return NULL;
	}
	if (slot->epoch == w->tgids.epoch) {
		h = track_at(w, slot->value);
		if (same_process(h, host, r->tgid, start_ms, ident, r->unix_ms, w->o->gap_ms) &&
			r->unix_ms >= h->last_ms) {
			int64_t span_ms = row_span_ms(r);

			*ret_weight_ms =
				(uint64_t)(span_ms >= 0 ? span_ms : r->unix_ms - h->last_ms);
			*ret_first = false;
			h->last_ms = r->unix_ms;
			if (w->calls_kept)
				add_calls(w, r, *ret_weight_ms);
			return h;
		}
	}
	h = track_start(w, r, host, start_ms, ident);
	if (!h) {
		w->oom = true;
		return NULL;
	}
	i64map_set(&w->tgids, slot, key, (uint32_t)(w->tracks_count - 1));
	*ret_weight_ms = 0;
	*ret_first = true;
	return h;
}

/* ---- the join ---- */

/* qsort over pointers to heads: a process's tracks together, in time
 * order; rows without a host (older datasets) after the others */
static int track_head_cmp(const void *a, const void *b)
{
	const struct track_head *x = *(const struct track_head *const *)a;
	const struct track_head *y = *(const struct track_head *const *)b;

	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	if (x->first_ms != y->first_ms)
		return x->first_ms < y->first_ms ? -1 : 1;
	if (x->last_ms != y->last_ms)
		return x->last_ms < y->last_ms ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->ident < y->ident ? -1 : x->ident > y->ident;
}

static int sum_calls(struct track_join *j)
{
	for (int k = 0; k < j->count; k++) {
		const struct track_worker *w = j->workers[k];

		j->remap[k] = strtab_remap(&j->syscalls, &w->syscalls);
		if (!j->remap[k])
			return -ENOMEM;
	}
	j->calls = calloc(j->syscalls.count + 1, sizeof(*j->calls));
	if (!j->calls)
		return -ENOMEM;
	for (int k = 0; k < j->count; k++) {
		const struct track_worker *w = j->workers[k];

		for (size_t i = 0; i < w->calls_cap && i < w->syscalls.count; i++)
			j->calls[j->remap[k][i]] += w->calls[i];
	}
	return 0;
}

/* Each worker's host ids in its heads become the join's. */
static int join_hosts(struct track_join *j, struct track_worker *w, int k)
{
	j->host_remap[k] = strtab_remap(&j->hosts, &w->hosts);
	if (!j->host_remap[k])
		return -ENOMEM;
	for (size_t i = 0; i < w->tracks_count; i++) {
		struct track_head *h = track_at(w, i);

		if (h->host != NONE_ID)
			h->host = j->host_remap[k][h->host];
	}
	return 0;
}

int track_sums(struct track_join *j, void *const *workers, int count)
{
	*j = (struct track_join){ .workers = workers, .count = count };
	for (int k = 0; k < count; k++) {
		struct track_worker *w = workers[k];

		if (w->oom || join_hosts(j, w, k) < 0)
			return -ENOMEM;
		if (w->rows && (j->rows == 0 || w->first_ms < j->first_ms))
			j->first_ms = w->first_ms;
		if (w->rows && (j->rows == 0 || w->last_ms > j->last_ms))
			j->last_ms = w->last_ms;
		j->rows += w->rows;
	}
	return sum_calls(j);
}

/* The first row's calls, now that its weight is known. */
static void settle_calls(struct track_join *j, const struct track_head *h, uint64_t weight_ms)
{
	const struct track_worker *w = j->workers[h->worker];

	for (uint32_t i = 0; i < h->sys_n; i++) {
		const struct sys_ref *r = &w->sys[h->sys_off + i];
		j->calls[j->remap[h->worker][r->id]] += (u128)r->rate_x1e4 * weight_ms;
	}
}

/* Every worker's tracks, sorted: a process's together, in time order. */
static const struct track_head **sorted_heads(const struct track_join *j, size_t *ret_n)
{
	const struct track_head **v;
	size_t n = 0;

	for (int k = 0; k < j->count; k++)
		n += ((const struct track_worker *)j->workers[k])->tracks_count;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	n = 0;
	for (int k = 0; k < j->count; k++) {
		const struct track_worker *w = j->workers[k];
		for (size_t i = 0; i < w->tracks_count; i++)
			v[n++] = track_at(w, i);
	}
	if (n)
		qsort(v, n, sizeof(*v), track_head_cmp);
	*ret_n = n;
	return v;
}

int track_walk(struct track_join *j, track_each_fn *each, void *ctx)
{
	const struct read_opts *o = ((const struct track_worker *)j->workers[0])->o;
	size_t n;
	const struct track_head **v = sorted_heads(j, &n);
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct track_head *h = v[i], *prev = i ? v[i - 1] : NULL;
		uint64_t weight_ms = o->poll_ms;

		if (prev && same_process(prev, h->host, h->tgid, h->start_ms, h->ident, h->first_ms,
				    o->gap_ms)) {
			weight_ms = h->first_ms > prev->last_ms
					    ? (uint64_t)(h->first_ms - prev->last_ms)
					    : 0;
		} else {
			prev = NULL;
			j->processes++;
		}
		if (h->first_span_ms >= 0) /* the row says what it covers */
			weight_ms = (uint64_t)h->first_span_ms;
		settle_calls(j, h, weight_ms);
		r = each(ctx, h, prev, weight_ms);
	}
	free(v);
	return r;
}

void track_join_free(struct track_join *j)
{
	for (int k = 0; k < j->count; k++) {
		free(j->remap[k]);
		free(j->host_remap[k]);
	}
	free(j->calls);
	strtab_free(&j->syscalls);
	strtab_free(&j->hosts);
}
