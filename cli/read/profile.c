/*
 * profile.c: croft profile.  Workers keep the rows the selector picks, in
 * compact form; the main thread sorts them by time and walks them once:
 * processes (tgid, exe, comm, gaps), samples per poll, GPU phases, the
 * syscall mix.  Invoking user, no privilege.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile.h"

__extension__ typedef unsigned __int128 u128;

struct sys_ref {
	uint32_t id;
	int64_t rate_e4;
};

struct pworker {
	const struct read_opts *o;
	uint8_t index;
	uint64_t file, row_in_file;
	struct strtab syscalls;
	struct prec *recs;
	size_t recs_count, recs_cap;
	struct sys_ref *sys;
	size_t sys_count, sys_cap;
	atomic_size_t *total; /* rows kept by all workers */
	bool full, oom;
};

static bool push_sys(struct pworker *w, uint32_t id, int64_t rate_e4)
{
	if (w->sys_count == w->sys_cap) {
		size_t cap = w->sys_cap ? w->sys_cap * 2 : 4096;
		struct sys_ref *v = realloc(w->sys, cap * sizeof(*v));
		if (!v)
			return false;
		w->sys = v;
		w->sys_cap = cap;
	}
	w->sys[w->sys_count++] = (struct sys_ref){ id, rate_e4 };
	return true;
}

static void profile_row(void *ctx, const struct row *row)
{
	struct pworker *w = ctx;

	w->row_in_file++;
	if (w->full || w->oom || !filter_match(&w->o->filter, row))
		return;
	if (atomic_fetch_add(w->total, 1) >= PROFILE_ROWS_MAX) {
		w->full = true;
		return;
	}
	if (w->recs_count == w->recs_cap) {
		size_t cap = w->recs_cap ? w->recs_cap * 2 : 1024;
		struct prec *v = realloc(w->recs, cap * sizeof(*v));
		if (!v) {
			w->oom = true;
			return;
		}
		w->recs = v;
		w->recs_cap = cap;
	}
	struct prec *r = &w->recs[w->recs_count++];
	*r = (struct prec){
		.ms = row->unix_ms,
		.tgid = row->tgid,
		.ident = row_ident(row),
		.seq = w->file << 40 | w->row_in_file,
		.cpu_e4 = row->cpu_e4,
		.rss = row->rss_bytes,
		.threads = row->threads,
		.ioctls = row->ioctl_count,
		.rx_e4 = row->rx_e4,
		.tx_e4 = row->tx_e4,
		.read_e4 = row->read_e4,
		.write_e4 = row->write_e4,
		.has = row->has,
		.sys_off = (uint32_t)w->sys_count,
		.workload = (uint8_t)row->workload,
		.worker = w->index,
	};
	for (uint32_t i = 0; i < row->syscalls_count; i++) {
		const struct row_syscall *sc = &row->syscalls[i];
		uint32_t id = strtab_intern(&w->syscalls, sc->name.ptr, sc->name.len);
		if (id == NONE_ID || !push_sys(w, id, sc->rate_e4)) {
			w->oom = true;
			return;
		}
		r->sys_n++;
	}
}

static void profile_file_begin(void *ctx, uint32_t file)
{
	struct pworker *w = ctx;

	w->file = file;
	w->row_in_file = 0;
}

static int cmp_prec(const void *a, const void *b)
{
	const struct prec *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- the walk in time order ---- */

struct pstate { /* one tgid's current process */
	int64_t tgid, last_ms, start_ms, end_ms;
	uint64_t ident;
	int kind; /* open phase, -1 none */
	bool used;
};

struct walk {
	const struct read_opts *o;
	struct profile_result *res;
	struct pstate *map;
	size_t map_cap, map_count;
	size_t phases_cap;
	u128 *calls; /* per global syscall id: rate x 1e4 x ms */
	bool oom;
};

static struct pstate *pmap_get(struct walk *w, int64_t tgid)
{
	if ((w->map_count + 1) * 2 > w->map_cap) {
		size_t cap = w->map_cap ? w->map_cap * 2 : 256;
		struct pstate *map = calloc(cap, sizeof(*map));
		if (!map)
			return NULL;
		for (size_t i = 0; i < w->map_cap; i++) {
			if (!w->map[i].used)
				continue;
			size_t j =
				(uint64_t)w->map[i].tgid * 0x9e3779b97f4a7c15ull >> 20 & (cap - 1);
			while (map[j].used)
				j = (j + 1) & (cap - 1);
			map[j] = w->map[i];
		}
		free(w->map);
		w->map = map;
		w->map_cap = cap;
	}
	size_t mask = w->map_cap - 1, j = (uint64_t)tgid * 0x9e3779b97f4a7c15ull >> 20 & mask;
	while (w->map[j].used && w->map[j].tgid != tgid)
		j = (j + 1) & mask;
	return &w->map[j];
}

static int phase_of(const struct prec *r)
{
	if (r->workload == WL_ONSET)
		return PH_ONSET;
	if (r->workload != WL_HELD)
		return -1;
	if (!(r->has & HAS_IOCTL))
		return PH_HELD;
	return r->ioctls > 0 ? PH_ACTIVE : PH_IDLE;
}

static void phase_close(struct walk *w, struct pstate *p)
{
	struct profile_result *res = w->res;

	if (p->kind < 0)
		return;
	if (res->phases_count == w->phases_cap) {
		size_t cap = w->phases_cap ? w->phases_cap * 2 : 64;
		struct phase *v = realloc(res->phases, cap * sizeof(*v));
		if (!v) {
			w->oom = true;
			return;
		}
		res->phases = v;
		w->phases_cap = cap;
	}
	res->phases[res->phases_count++] =
		(struct phase){ p->tgid, p->start_ms, p->end_ms, p->kind };
	p->kind = -1;
}

/* Which process the row belongs to and what it stands for (ms). */
static uint64_t walk_process(struct walk *w, struct pstate *p, const struct prec *r)
{
	uint64_t weight = w->o->poll_ms;

	if (p->used && p->ident == r->ident && r->ms >= p->last_ms &&
		(uint64_t)(r->ms - p->last_ms) <= w->o->gap_ms) {
		weight = (uint64_t)(r->ms - p->last_ms);
	} else {
		if (p->used)
			phase_close(w, p);
		else
			w->map_count++;
		*p = (struct pstate){ r->tgid, r->ms, 0, 0, r->ident, -1, true };
		w->res->processes++;
	}
	p->last_ms = r->ms;
	return weight;
}

static void walk_phase(struct walk *w, struct pstate *p, const struct prec *r, uint64_t weight)
{
	int kind = phase_of(r);

	if (p->kind >= 0 && p->kind != kind)
		phase_close(w, p);
	if (kind < 0)
		return;
	w->res->phase_ms[kind] += weight;
	if (p->kind == kind) {
		p->end_ms = r->ms;
	} else {
		p->kind = kind;
		p->start_ms = r->ms - (int64_t)weight;
		p->end_ms = r->ms;
	}
}

static void walk_sample(struct profile_result *res, const struct prec *r)
{
	struct sample *s = res->samples ? &res->samples_v[res->samples - 1] : NULL;

	if (!s || s->ms != r->ms) {
		s = &res->samples_v[res->samples++];
		*s = (struct sample){ .ms = r->ms };
	}
	s->cpu_e4 += (r->has & HAS_CPU) ? r->cpu_e4 : 0;
	s->rss += (r->has & HAS_RSS) ? r->rss : 0;
	s->threads += (r->has & HAS_THREADS) ? r->threads : 0;
	s->ioctls += (r->has & HAS_IOCTL) ? r->ioctls : 0;
	s->rx_e4 += (r->has & HAS_RX) ? r->rx_e4 : 0;
	s->tx_e4 += (r->has & HAS_TX) ? r->tx_e4 : 0;
	s->read_e4 += (r->has & HAS_READ) ? r->read_e4 : 0;
	s->write_e4 += (r->has & HAS_WRITE) ? r->write_e4 : 0;
}

/* Nearest rank: the smallest value with at least p% of the samples at or below. */
static double percentile(const double *sorted, size_t n, double p)
{
	size_t rank = (size_t)((p * (double)n + 99.0) / 100.0);

	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
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
	const char *name;
	u128 calls;
};

static int cmp_share(const void *a, const void *b)
{
	const struct share_rank *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int syscall_mix(struct walk *w, const struct strtab *names)
{
	struct profile_result *res = w->res;
	struct share_rank *v = calloc(names->count + 1, sizeof(*v));
	u128 total = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < names->count; i++) {
		v[i] = (struct share_rank){ strtab_str(names, (uint32_t)i, NULL), w->calls[i] };
		total += w->calls[i];
	}
	qsort(v, names->count, sizeof(*v), cmp_share);
	res->syscalls_total = (double)total / 1e7;
	for (size_t i = 0; i < names->count && i < TOP_SYSCALLS_PROF && v[i].calls; i++)
		res->top[res->top_count++] = (struct syscall_share){ v[i].name,
			(double)v[i].calls / 1e7, (double)v[i].calls / (double)total };
	free(v);
	return 0;
}

static void walk_syscalls(struct walk *w, const struct pworker *pw, uint32_t *const *remap,
	const struct prec *r, uint64_t weight)
{
	for (uint32_t i = 0; i < r->sys_n; i++) {
		const struct sys_ref *s = &pw[r->worker].sys[r->sys_off + i];
		if (s->rate_e4 > 0)
			w->calls[remap[r->worker][s->id]] += (u128)s->rate_e4 * weight;
	}
}

static int profile_walk(struct walk *w, struct prec *recs, size_t n, const struct pworker *pw,
	uint32_t *const *remap, const struct strtab *names)
{
	struct profile_result *res = w->res;

	res->samples_v = calloc(n + 1, sizeof(*res->samples_v));
	w->calls = calloc(names->count + 1, sizeof(*w->calls));
	if (!res->samples_v || !w->calls)
		return -ENOMEM;
	qsort(recs, n, sizeof(*recs), cmp_prec);
	for (size_t i = 0; i < n && !w->oom; i++) {
		const struct prec *r = &recs[i];
		struct pstate *p = pmap_get(w, r->tgid);
		if (!p)
			return -ENOMEM;
		uint64_t weight = walk_process(w, p, r);
		walk_phase(w, p, r, weight);
		walk_syscalls(w, pw, remap, r, weight);
		walk_sample(res, r);
	}
	for (size_t i = 0; i < w->map_cap; i++)
		if (w->map[i].used)
			phase_close(w, &w->map[i]);
	if (w->oom)
		return -ENOMEM;
	if (res->phases_count)
		qsort(res->phases, res->phases_count, sizeof(*res->phases), cmp_phase);
	res->rows = n;
	if (n) {
		res->first_ms = recs[0].ms;
		res->last_ms = recs[n - 1].ms;
	}
	return syscall_mix(w, names);
}

static int profile_figures(struct profile_result *res)
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

/* Joins the workers' rows into one array and their syscall names into one table. */
static int profile_merge(struct pworker *pw, int workers, struct strtab *names, uint32_t **remap,
	struct prec **ret_recs, size_t *ret_n)
{
	size_t n = 0;

	for (int k = 0; k < workers; k++) {
		if (pw[k].oom)
			return -ENOMEM;
		n += pw[k].recs_count;
		remap[k] = calloc(pw[k].syscalls.count + 1, sizeof(**remap));
		if (!remap[k])
			return -ENOMEM;
		for (size_t i = 0; i < pw[k].syscalls.count; i++) {
			size_t len;
			const char *s = strtab_str(&pw[k].syscalls, (uint32_t)i, &len);
			remap[k][i] = strtab_intern(names, s, len);
			if (remap[k][i] == NONE_ID)
				return -ENOMEM;
		}
	}
	struct prec *recs = malloc((n + 1) * sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	n = 0;
	for (int k = 0; k < workers; k++) {
		if (pw[k].recs_count)
			memcpy(recs + n, pw[k].recs, pw[k].recs_count * sizeof(*recs));
		n += pw[k].recs_count;
		free(pw[k].recs);
		pw[k].recs = NULL;
	}
	*ret_recs = recs;
	*ret_n = n;
	return 0;
}

static int profile_compute(
	const struct read_opts *o, struct pworker *pw, int workers, struct profile_result *res)
{
	struct strtab names = { 0 };
	uint32_t *remap[DS_THREADS_MAX] = { 0 };
	struct walk w = { .o = o, .res = res };
	struct prec *recs = NULL;
	size_t n = 0;
	int r = profile_merge(pw, workers, &names, remap, &recs, &n);

	if (r == 0)
		r = profile_walk(&w, recs, n, pw, remap, &names);
	if (r == 0)
		r = profile_figures(res);
	/* The names outlive the walk: the output prints them. */
	size_t dup = 0;
	for (; r == 0 && dup < res->top_count; dup++)
		if (!(res->top[dup].name = strdup(res->top[dup].name)))
			r = -ENOMEM;
	if (r < 0) {
		for (size_t i = 0; i + 1 < dup; i++)
			free((char *)res->top[i].name);
		res->top_count = 0;
	}
	for (int k = 0; k < workers; k++)
		free(remap[k]);
	strtab_free(&names);
	free(recs);
	free(w.map);
	free(w.calls);
	return r;
}

int cmd_profile(int argc, char **argv)
{
	static const struct ds_sink sink = { profile_file_begin, profile_row, NULL };
	struct read_opts o;
	struct ds_files files = { 0 };
	struct ds_report rep;
	struct profile_result res = { 0 };
	struct pworker *pw;
	atomic_size_t total = 0;
	void *ctxs[DS_THREADS_MAX];
	int r = read_opts_parse(argc, argv, true, &o), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	pw = calloc((size_t)o.threads, sizeof(*pw));
	if (!pw)
		return 1;
	for (int k = 0; k < o.threads; k++) {
		pw[k] = (struct pworker){ .o = &o, .index = (uint8_t)k, .total = &total };
		ctxs[k] = &pw[k];
	}
	ds_report_init(&rep);
	if (read_dataset(&o, &sink, ctxs, o.threads, &files, &rep) < 0)
		goto out;
	if (atomic_load(&total) > PROFILE_ROWS_MAX) {
		fprintf(stderr,
			"croft profile: the selection has more than %u rows; narrow it "
			"(--since/--until, --tgid)\n",
			PROFILE_ROWS_MAX);
		goto out;
	}
	if (profile_compute(&o, pw, o.threads, &res) < 0) {
		fprintf(stderr, "croft profile: out of memory\n");
		goto out;
	}
	if (o.svg_path && profile_write_svg(&o, &res) < 0)
		goto out;
	if (o.json)
		profile_print_json(&o, &res, &files, &rep);
	else
		profile_print_table(&o, &res, &files, &rep);
	status = exit_status(&rep);
out:
	for (int k = 0; k < o.threads; k++) {
		strtab_free(&pw[k].syscalls);
		free(pw[k].recs);
		free(pw[k].sys);
	}
	for (size_t i = 0; i < res.top_count; i++)
		free((char *)res.top[i].name);
	free(pw);
	free(res.phases);
	free(res.samples_v);
	ds_files_free(&files);
	ds_report_free(&rep);
	return status;
}
