/*
 * stats.c: croft stats.  Workers sum per file, with one segment per process
 * whose first row waits; the main thread joins each process's segments in
 * time order and settles those rows.  Invoking user, no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stats.h"

struct sys_ref {
	uint32_t id;
	int64_t rate_e4;
};

/* One process's rows in one file; the first row's share is settled later. */
struct seg {
	struct seg_key key; /* first: the join sorts pointers to keys */
	u128 cpu_e4ms;      /* rows after the first */
	int64_t first_cpu_e4;
	uint32_t framework, first_container, first_cwd, first_sys_off, first_sys_n;
	uint64_t first_gpus[GPU_WORDS];
	int16_t first_holder; /* gpu_system_holders name; -1: a workload */
	uint8_t states, first_state, first_idle, worker;
};

struct worker {
	const struct read_opts *o;
	uint8_t index;
	struct strtab containers, cwds, frameworks, syscalls;
	struct gpu_acc *by_container, *by_cwd, host, cwd_unknown;
	size_t by_container_cap, by_cwd_cap;
	struct gpu_sums gpu;
	u128 *calls;
	size_t calls_cap;
	uint64_t rows, wl_rows[WL_COUNT], wl_ms[WL_COUNT];
	int64_t first_ms, last_ms;
	struct seg *segs;
	size_t segs_count, segs_cap;
	struct sys_ref *sys;
	size_t sys_count, sys_cap;
	struct i64map tgids; /* this file's open segment per tgid */
	uint32_t file;
	bool oom;
};

/* Grows a zero-filled per-id array to hold id. */
static bool grow_to(void **v, size_t *cap, size_t elem, uint32_t id)
{
	size_t n = *cap ? *cap : 64;
	while (n <= id)
		n *= 2;
	char *p = realloc(*v, n * elem);
	if (!p)
		return false;
	memset(p + *cap * elem, 0, (n - *cap) * elem);
	*v = p;
	*cap = n;
	return true;
}

/* Per row: the array is nearly always big enough already. */
static inline bool grow(void **v, size_t *cap, size_t elem, uint32_t id)
{
	return id < *cap || grow_to(v, cap, elem, id);
}

static uint32_t intern_sv(struct worker *w, struct strtab *t, const struct strv *sv)
{
	if (!sv->ptr)
		return NONE_ID;
	uint32_t id = strtab_intern(t, sv->ptr, sv->len);
	if (id == NONE_ID)
		w->oom = true;
	return id;
}

static struct gpu_acc *container_acc(struct worker *w, uint32_t id)
{
	if (id == NONE_ID)
		return &w->host;
	if (!grow((void **)&w->by_container, &w->by_container_cap, sizeof(struct gpu_acc), id)) {
		w->oom = true;
		return &w->host;
	}
	return &w->by_container[id];
}

static struct gpu_acc *cwd_acc(struct worker *w, uint32_t id)
{
	if (id == NONE_ID)
		return &w->cwd_unknown;
	if (!grow((void **)&w->by_cwd, &w->by_cwd_cap, sizeof(struct gpu_acc), id)) {
		w->oom = true;
		return &w->cwd_unknown;
	}
	return &w->by_cwd[id];
}

static bool row_idle_held(const struct row *row)
{
	return row->workload == WL_GPU_HELD && (row->has & HAS_IOCTL) && row->ioctl_count == 0;
}

/* A gpu-held row: a system holder's, or a workload's per container, cwd and GPU. */
static void held_row(struct worker *w, const struct row *row, uint32_t container, uint64_t ms)
{
	bool idle = row_idle_held(row);
	int holder = holder_of(w->o, row);

	if (holder >= 0) {
		gpu_acc_add(&w->gpu.system[holder], idle, ms);
		return;
	}
	gpu_acc_add(container_acc(w, container), idle, ms);
	gpu_acc_add(cwd_acc(w, intern_sv(w, &w->cwds, &row->cwd)), idle, ms);
	if (!gpu_sums_add(&w->gpu, container, row->gpus, idle, ms))
		w->oom = true;
}

static void add_syscalls(struct worker *w, const struct row *row, uint64_t weight_ms)
{
	for (uint32_t i = 0; i < row->syscalls_count; i++) {
		uint32_t id = intern_sv(w, &w->syscalls, &row->syscalls[i].name);
		int64_t rate = row->syscalls[i].rate_e4;
		if (id == NONE_ID || rate <= 0 ||
			!grow((void **)&w->calls, &w->calls_cap, sizeof(u128), id))
			continue;
		w->calls[id] += (u128)rate * weight_ms;
	}
}

static void row_continues(
	struct worker *w, struct seg *seg, const struct row *row, uint32_t container)
{
	uint64_t weight = (uint64_t)(row->unix_ms - seg->key.last_ms);

	seg->key.last_ms = row->unix_ms;
	w->wl_ms[row->workload] += weight;
	if ((row->has & HAS_CPU) && row->cpu_e4 > 0)
		seg->cpu_e4ms += (u128)row->cpu_e4 * weight;
	if (row->workload == WL_GPU_HELD)
		held_row(w, row, container, weight);
	add_syscalls(w, row, weight);
}

static struct seg *seg_start(
	struct worker *w, const struct row *row, uint64_t ident, uint32_t container)
{
	if (w->segs_count == w->segs_cap) {
		size_t cap = w->segs_cap ? w->segs_cap * 2 : 1024;
		struct seg *v = realloc(w->segs, cap * sizeof(*v));
		if (!v)
			return NULL;
		w->segs = v;
		w->segs_cap = cap;
	}
	struct seg *seg = &w->segs[w->segs_count++];
	*seg = (struct seg){
		.key = { row->tgid, row->unix_ms, row->unix_ms, ident, w->file },
		.first_cpu_e4 = (row->has & HAS_CPU) && row->cpu_e4 > 0 ? row->cpu_e4 : 0,
		.framework = NONE_ID,
		.first_container = container,
		.first_cwd = NONE_ID,
		.first_sys_off = (uint32_t)w->sys_count,
		.first_holder = -1,
		.first_state = (uint8_t)row->workload,
		.first_idle = row_idle_held(row),
		.worker = w->index,
	};
	if (row->workload == WL_GPU_HELD) {
		seg->first_cwd = intern_sv(w, &w->cwds, &row->cwd);
		seg->first_holder = (int16_t)holder_of(w->o, row);
		memcpy(seg->first_gpus, row->gpus, sizeof(seg->first_gpus));
	}
	for (uint32_t i = 0; i < row->syscalls_count; i++) {
		uint32_t id = intern_sv(w, &w->syscalls, &row->syscalls[i].name);
		if (id == NONE_ID || row->syscalls[i].rate_e4 <= 0)
			continue;
		if (w->sys_count == w->sys_cap) {
			size_t cap = w->sys_cap ? w->sys_cap * 2 : 4096;
			struct sys_ref *v = realloc(w->sys, cap * sizeof(*v));
			if (!v) {
				w->oom = true;
				break;
			}
			w->sys = v;
			w->sys_cap = cap;
		}
		w->sys[w->sys_count++] = (struct sys_ref){ id, row->syscalls[i].rate_e4 };
		seg->first_sys_n++;
	}
	return seg;
}

/* A process counts under the framework its last row names: the sampler may
 * find an earlier catalog entry later in a process's first minute. */
static void seg_framework(struct worker *w, struct seg *seg, const struct strv *fw)
{
	size_t len;
	const char *now;

	if (!fw->ptr || !fw->len)
		return;
	if (seg->framework != NONE_ID) {
		now = strtab_str(&w->frameworks, seg->framework, &len);
		if (len == fw->len && memcmp(now, fw->ptr, len) == 0)
			return;
	}
	seg->framework = intern_sv(w, &w->frameworks, fw);
}

static void stats_row(void *ctx, const struct row *row)
{
	struct worker *w = ctx;

	if (!filter_match(&w->o->filter, row))
		return;
	if (w->rows++ == 0 || row->unix_ms < w->first_ms)
		w->first_ms = row->unix_ms;
	if (w->rows == 1 || row->unix_ms > w->last_ms)
		w->last_ms = row->unix_ms;
	w->wl_rows[row->workload]++;

	uint32_t container = intern_sv(w, &w->containers, &row->container_id);
	uint64_t ident = row_ident(row);
	struct i64_slot *slot = i64map_slot(&w->tgids, row->tgid);
	struct seg *seg = NULL;

	if (!slot) {
		w->oom = true;
		return;
	}
	if (slot->gen == w->tgids.gen) {
		seg = &w->segs[slot->value];
		if (!seg_key_continues(&seg->key, row->tgid, ident, row->unix_ms, w->o->gap_ms))
			seg = NULL;
	}
	if (seg) {
		row_continues(w, seg, row, container);
	} else {
		seg = seg_start(w, row, ident, container);
		if (!seg) {
			w->oom = true;
			return;
		}
		i64map_set(&w->tgids, slot, row->tgid, (uint32_t)(seg - w->segs));
	}
	seg->states |= (uint8_t)(1u << row->workload);
	seg_framework(w, seg, &row->framework);
}

/* A new file: its rows start their own segments. */
static void stats_file_begin(void *ctx, uint32_t file)
{
	struct worker *w = ctx;

	i64map_clear(&w->tgids);
	w->file = file;
}

/* ---- merging the workers ---- */

struct merge {
	struct stats_result *s;
	const struct read_opts *o;
	struct worker *workers;
	uint32_t *remap[4][DS_THREADS_MAX]; /* containers, cwds, frameworks, syscalls */
	size_t cap_container, cap_cwd, cap_calls, cap_framework;
	bool oom;
};

enum { T_CONTAINERS, T_CWDS, T_FRAMEWORKS, T_SYSCALLS };

static uint32_t *remap_table(struct merge *m, struct strtab *global, const struct strtab *local)
{
	uint32_t *map = calloc(local->count + 1, sizeof(*map));

	if (!map) {
		m->oom = true;
		return NULL;
	}
	for (size_t i = 0; i < local->count; i++) {
		size_t len;
		const char *str = strtab_str(local, (uint32_t)i, &len);
		map[i] = strtab_intern(global, str, len);
		if (map[i] == NONE_ID)
			m->oom = true;
	}
	return map;
}

static uint32_t remap(struct merge *m, int table, int worker, uint32_t id)
{
	return id == NONE_ID || !m->remap[table][worker] ? NONE_ID : m->remap[table][worker][id];
}

static void merge_worker_sums(struct merge *m, struct worker *w)
{
	struct stats_result *s = m->s;
	int k = w->index;

	m->remap[T_CONTAINERS][k] = remap_table(m, &s->containers_tab, &w->containers);
	m->remap[T_CWDS][k] = remap_table(m, &s->cwds_tab, &w->cwds);
	m->remap[T_FRAMEWORKS][k] = remap_table(m, &s->frameworks_tab, &w->frameworks);
	m->remap[T_SYSCALLS][k] = remap_table(m, &s->syscalls_tab, &w->syscalls);
	if (m->oom ||
		!grow((void **)&s->by_container, &m->cap_container, sizeof(struct gpu_acc),
			(uint32_t)s->containers_tab.count) ||
		!grow((void **)&s->by_cwd, &m->cap_cwd, sizeof(struct gpu_acc),
			(uint32_t)s->cwds_tab.count) ||
		!grow((void **)&s->syscall_calls_e7, &m->cap_calls, sizeof(u128),
			(uint32_t)s->syscalls_tab.count)) {
		m->oom = true;
		return;
	}
	for (size_t i = 0; i < w->by_container_cap && i < w->containers.count; i++)
		gpu_acc_sum(&s->by_container[remap(m, T_CONTAINERS, k, (uint32_t)i)],
			&w->by_container[i]);
	for (size_t i = 0; i < w->by_cwd_cap && i < w->cwds.count; i++)
		gpu_acc_sum(&s->by_cwd[remap(m, T_CWDS, k, (uint32_t)i)], &w->by_cwd[i]);
	for (size_t i = 0; i < w->calls_cap && i < w->syscalls.count; i++)
		s->syscall_calls_e7[remap(m, T_SYSCALLS, k, (uint32_t)i)] += w->calls[i];
	gpu_acc_sum(&s->host, &w->host);
	gpu_acc_sum(&s->cwd_unknown, &w->cwd_unknown);
	if (!gpu_sums_merge(&s->gpu, &w->gpu, m->remap[T_CONTAINERS][k]))
		m->oom = true;
	for (int wl = 0; wl < WL_COUNT; wl++) {
		s->wl_rows[wl] += w->wl_rows[wl];
		s->wl_ms[wl] += w->wl_ms[wl];
	}
	if (w->rows && (s->rows == 0 || w->first_ms < s->first_ms))
		s->first_ms = w->first_ms;
	if (w->rows && (s->rows == 0 || w->last_ms > s->last_ms))
		s->last_ms = w->last_ms;
	s->rows += w->rows;
}

struct proc {
	bool active;
	uint8_t states;
	u128 cpu_e4ms;
	uint32_t framework;
};

static void proc_finish(struct stats_result *s, struct proc *p)
{
	if (!p->active)
		return;
	s->processes++;
	for (int k = 0; k < WL_COUNT; k++)
		if (p->states & (1u << k))
			s->wl_processes[k]++;
	struct fw_acc *fw = p->framework == NONE_ID ? &s->fw_none : &s->by_framework[p->framework];
	fw->processes++;
	fw->cpu_e4ms += p->cpu_e4ms;
	p->active = false;
}

/* A segment's first row, now that we know what it stands for. */
static void settle_first_row(
	struct merge *m, const struct seg *seg, uint64_t weight, struct proc *p)
{
	struct stats_result *s = m->s;
	const struct worker *w = &m->workers[seg->worker];

	s->wl_ms[seg->first_state] += weight;
	p->cpu_e4ms += (u128)seg->first_cpu_e4 * weight + seg->cpu_e4ms;
	if (seg->first_state == WL_GPU_HELD && seg->first_holder >= 0) {
		gpu_acc_add(&s->gpu.system[seg->first_holder], seg->first_idle, weight);
	} else if (seg->first_state == WL_GPU_HELD) {
		uint32_t c = remap(m, T_CONTAINERS, seg->worker, seg->first_container);
		uint32_t d = remap(m, T_CWDS, seg->worker, seg->first_cwd);
		gpu_acc_add(c == NONE_ID ? &s->host : &s->by_container[c], seg->first_idle, weight);
		gpu_acc_add(
			d == NONE_ID ? &s->cwd_unknown : &s->by_cwd[d], seg->first_idle, weight);
		if (!gpu_sums_add(&s->gpu, c, seg->first_gpus, seg->first_idle, weight))
			m->oom = true;
	}
	for (uint32_t i = 0; i < seg->first_sys_n; i++) {
		const struct sys_ref *r = &w->sys[seg->first_sys_off + i];
		uint32_t id = remap(m, T_SYSCALLS, seg->worker, r->id);
		if (id != NONE_ID)
			s->syscall_calls_e7[id] += (u128)r->rate_e4 * weight;
	}
}

/* Joins each process's segments in time order and counts the processes. */
static int settle_segments(struct merge *m, int workers)
{
	struct stats_result *s = m->s;
	size_t total = 0, n = 0;
	struct proc p = { 0 };

	for (int k = 0; k < workers; k++)
		total += m->workers[k].segs_count;
	const struct seg_key **v = malloc((total + 1) * sizeof(*v));
	if (!v || !grow((void **)&s->by_framework, &m->cap_framework, sizeof(struct fw_acc),
			  (uint32_t)s->frameworks_tab.count)) {
		free(v);
		return -ENOMEM;
	}
	for (int k = 0; k < workers; k++)
		for (size_t i = 0; i < m->workers[k].segs_count; i++)
			v[n++] = &m->workers[k].segs[i].key;
	qsort(v, n, sizeof(*v), seg_key_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct seg *seg = (const struct seg *)v[i];
		uint64_t weight = m->o->poll_ms;

		if (i > 0 && seg_key_continues(v[i - 1], seg->key.tgid, seg->key.ident,
				     seg->key.first_ms, m->o->gap_ms)) {
			weight = (uint64_t)(seg->key.first_ms - v[i - 1]->last_ms);
		} else {
			proc_finish(s, &p);
			p = (struct proc){ true, 0, 0, NONE_ID };
		}
		settle_first_row(m, seg, weight, &p);
		p.states |= seg->states;
		if (seg->framework != NONE_ID)
			p.framework = remap(m, T_FRAMEWORKS, seg->worker, seg->framework);
	}
	proc_finish(s, &p);
	s->containers = s->containers_tab.count;
	free(v);
	return m->oom ? -ENOMEM : 0;
}

static void worker_free(struct worker *w)
{
	strtab_free(&w->containers);
	strtab_free(&w->cwds);
	strtab_free(&w->frameworks);
	strtab_free(&w->syscalls);
	free(w->by_container);
	free(w->by_cwd);
	free(w->calls);
	free(w->segs);
	free(w->sys);
	i64map_free(&w->tgids);
	gpu_sums_free(&w->gpu);
}

static void result_free(struct stats_result *s)
{
	strtab_free(&s->containers_tab);
	strtab_free(&s->cwds_tab);
	strtab_free(&s->frameworks_tab);
	strtab_free(&s->syscalls_tab);
	free(s->by_container);
	free(s->by_cwd);
	free(s->by_framework);
	free(s->syscall_calls_e7);
	gpu_sums_free(&s->gpu);
}

static int stats_merge(struct merge *m, int workers)
{
	for (int k = 0; k < workers && !m->oom; k++) {
		if (m->workers[k].oom)
			m->oom = true;
		else
			merge_worker_sums(m, &m->workers[k]);
	}
	if (m->oom)
		return -ENOMEM;
	return settle_segments(m, workers);
}

int cmd_stats(int argc, char **argv)
{
	static const struct ds_sink sink = { stats_file_begin, stats_row, NULL };
	struct read_opts o;
	struct ds_files files = { 0 };
	struct ds_report rep;
	struct stats_result s = { 0 };
	struct merge m = { .s = &s, .o = &o };
	void *ctxs[DS_THREADS_MAX];
	int r = read_opts_parse(argc, argv, false, &o), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	m.workers = calloc((size_t)o.threads, sizeof(*m.workers));
	if (!m.workers)
		return 1;
	s.o = &o;
	bool sums = gpu_sums_init(&s.gpu, o.holders_count);
	for (int k = 0; k < o.threads; k++) {
		m.workers[k].o = &o;
		m.workers[k].index = (uint8_t)k;
		sums &= gpu_sums_init(&m.workers[k].gpu, o.holders_count);
		ctxs[k] = &m.workers[k];
	}
	ds_report_init(&rep);
	if (!sums) {
		fprintf(stderr, "croft stats: out of memory\n");
		goto out;
	}
	if (read_dataset(&o, &sink, ctxs, o.threads, &files, &rep) < 0)
		goto out;
	if (stats_merge(&m, o.threads) < 0) {
		fprintf(stderr, "croft stats: out of memory\n");
		goto out;
	}
	if (o.json)
		stats_print_json(&s, &files, &rep);
	else
		stats_print_table(&s, &files, &rep);
	status = exit_status(&rep);
out:
	for (int k = 0; k < o.threads; k++) {
		worker_free(&m.workers[k]);
		for (int t = 0; t < 4; t++)
			free(m.remap[t][k]);
	}
	free(m.workers);
	result_free(&s);
	ds_files_free(&files);
	ds_report_free(&rep);
	return status;
}
