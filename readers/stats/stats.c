/*
 * stats.c: croft stats.  Workers sum per file, with one track per process
 * (tracks.c) whose first row waits; the main thread joins each process's
 * tracks in time order and settles those rows.  Invoking user, no
 * privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* One process's rows in one file; the first row's share is settled later. */
struct stats_track {
	struct track_head head; /* first */
	u128 cpu_x1e4_ms;       /* rows after the first */
	int64_t first_cpu_x1e4;
	uint32_t framework, first_container, first_cwd;
	uint64_t first_gpus[ROW_GPU_WORDS];
	int64_t first_uid;    /* process.uid; -1: none */
	int16_t first_holder; /* gpu_system_holders name; -1: a workload */
	uint8_t states, first_state, first_activity;
};

struct worker {
	struct track_worker sw; /* first: the sink's ctx */
	struct strtab containers, cwds, frameworks;
	struct gpu_acc *by_container, *by_cwd, host, cwd_unknown;
	size_t by_container_cap, by_cwd_cap;
	struct gpu_sums gpu;
	struct pod_sums pods;
	struct user_sums users;
	uint64_t wl_rows[WL_COUNT], wl_ms[WL_COUNT];
	struct host_acc *by_host, no_host; /* per the track_worker's host id */
	size_t by_host_cap;
};

static uint32_t intern_sv(struct worker *w, struct strtab *t, const struct strv *sv)
{
	if (!sv->ptr)
		return NONE_ID;
	uint32_t id = strtab_intern(t, sv->ptr, sv->len);
	if (id == NONE_ID)
		w->sw.oom = true;
	return id;
}

/* The entry of id in a per-id array v (VEC_ID_ROOM's), or none (NONE_ID; out of memory: *oom). */
#define ID_ENTRY(v, cap, id, none, oom)                                                            \
	((id) == NONE_ID ? (none) : VEC_ID_ROOM(v, cap, id) ? &(v)[id] : (*(oom) = true, (none)))

static int64_t row_uid(const struct row *row)
{
	return (row->has & HAS_UID) && row->uid >= 0 ? row->uid : USER_NONE;
}

/* A gpu-held row: a system holder's, or a workload's per container, cwd, GPU and user. */
static void held_row(struct worker *w, const struct row *row, uint32_t container,
	struct host_acc *host, uint64_t ms)
{
	enum gpu_activity activity = row_activity(row);
	int holder = holder_of(w->sw.o, row);
	uint32_t cwd;

	if (holder >= 0) {
		gpu_acc_add(&w->gpu.system[holder], activity, ms);
		return;
	}
	cwd = intern_sv(w, &w->cwds, &row->cwd);
	gpu_acc_add(&host->gpu, activity, ms);
	gpu_acc_add(ID_ENTRY(w->by_container, w->by_container_cap, container, &w->host, &w->sw.oom),
		activity, ms);
	gpu_acc_add(
		ID_ENTRY(w->by_cwd, w->by_cwd_cap, cwd, &w->cwd_unknown, &w->sw.oom), activity, ms);
	if (!gpu_sums_add(&w->gpu, container, row->gpus, activity, ms) ||
		!user_sums_add(&w->users, row_uid(row), activity, ms))
		w->sw.oom = true;
}

static void row_continues(struct worker *w, struct stats_track *track, const struct row *row,
	uint32_t container, struct host_acc *host, uint64_t weight)
{
	w->wl_ms[row->workload] += weight;
	host->ms += weight;
	if ((row->has & HAS_CPU) && row->cpu_x1e4 > 0)
		track->cpu_x1e4_ms += (u128)row->cpu_x1e4 * weight;
	if (row->workload == WL_GPU_HELD)
		held_row(w, row, container, host, weight);
}

/* A track's first row, kept for the join to settle. */
static void row_first(
	struct worker *w, struct stats_track *track, const struct row *row, uint32_t container)
{
	track->first_cpu_x1e4 = (row->has & HAS_CPU) && row->cpu_x1e4 > 0 ? row->cpu_x1e4 : 0;
	track->framework = NONE_ID;
	track->first_container = container;
	track->first_cwd = NONE_ID;
	track->first_holder = -1;
	track->first_state = (uint8_t)row->workload;
	track->first_activity = (uint8_t)row_activity(row);
	track->first_uid = row_uid(row);
	if (row->workload == WL_GPU_HELD) {
		track->first_cwd = intern_sv(w, &w->cwds, &row->cwd);
		track->first_holder = (int16_t)holder_of(w->sw.o, row);
		memcpy(track->first_gpus, row->gpus, sizeof(track->first_gpus));
	}
}

/* A process counts under the framework its last row names: the sampler may
 * find an earlier catalog entry later in a process's first minute. */
static void track_framework(struct worker *w, struct stats_track *track, const struct strv *fw)
{
	size_t len;
	const char *now;

	if (!fw->ptr || !fw->len)
		return;
	if (track->framework != NONE_ID) {
		now = strtab_str(&w->frameworks, track->framework, &len);
		if (len == fw->len && memcmp(now, fw->ptr, len) == 0)
			return;
	}
	track->framework = intern_sv(w, &w->frameworks, fw);
}

/*
 * A pod's row: its span_ms (a row without one, of an older sampler: what
 * the process's rows are weighed by; a first row, a poll).
 */
static void pod_row(
	struct worker *w, const struct row *row, uint32_t container, bool first, uint64_t weight)
{
	bool workload = holder_of(w->sw.o, row) < 0;
	struct pod_row_weight pw = {
		.ms = (row->has & HAS_SPAN) && row->span_ms > 0 ? (uint64_t)row->span_ms
		      : first                                   ? w->sw.o->poll_ms
								: weight,
		.holds = workload && row->workload != WL_NO_GPU,
		.held = workload && row->workload == WL_GPU_HELD,
		.activity = row_activity(row),
	};

	if (!pod_sums_row(&w->pods, row, container, &pw))
		w->sw.oom = true;
}

static void stats_row(void *ctx, const struct row *row)
{
	struct worker *w = ctx;
	struct host_acc *host;
	uint32_t container;
	uint64_t weight;
	struct stats_track *track;
	bool first;

	if (!filter_match(&w->sw.o->filter, row))
		return;
	w->wl_rows[row->workload]++;
	container = intern_sv(w, &w->containers, &row->container_id);
	track = track_row(&w->sw, row, &weight, &first);
	if (!track)
		return;
	host = ID_ENTRY(w->by_host, w->by_host_cap, track->head.host, &w->no_host, &w->sw.oom);
	host->rows++;
	if (first)
		row_first(w, track, row, container);
	else
		row_continues(w, track, row, container, host, weight);
	track->states |= (uint8_t)(1u << row->workload);
	track_framework(w, track, &row->framework);
	if (row->pod_uid.ptr)
		pod_row(w, row, container, first, weight);
}

/* ---- merging the workers ---- */

/* One process while the join walks its tracks. */
struct proc {
	bool active;
	uint8_t states;
	u128 cpu_x1e4_ms;
	uint32_t framework;
};

struct merge {
	struct stats_result *s;
	struct worker *workers;
	struct track_join join;
	uint32_t *remap[3][DS_THREADS_MAX]; /* containers, cwds, frameworks */
	size_t cap_container, cap_cwd, cap_framework, cap_host;
	struct proc p;
	bool oom;
};

enum { T_CONTAINERS, T_CWDS, T_FRAMEWORKS };

static uint32_t remap(struct merge *m, int table, int worker, uint32_t id)
{
	return id == NONE_ID || !m->remap[table][worker] ? NONE_ID : m->remap[table][worker][id];
}

static struct host_acc *merge_host(struct merge *m, uint32_t id)
{
	return ID_ENTRY(m->s->by_host, m->cap_host, id, &m->s->no_host, &m->oom);
}

static void host_acc_sum(struct host_acc *to, const struct host_acc *from)
{
	to->rows += from->rows;
	to->processes += from->processes;
	to->ms += from->ms;
	gpu_acc_sum(&to->gpu, &from->gpu);
}

static void merge_worker_sums(struct merge *m, struct worker *w)
{
	struct stats_result *s = m->s;
	int k = w->sw.index;

	m->remap[T_CONTAINERS][k] = strtab_remap(&s->containers_tab, &w->containers);
	m->remap[T_CWDS][k] = strtab_remap(&s->cwds_tab, &w->cwds);
	m->remap[T_FRAMEWORKS][k] = strtab_remap(&s->frameworks_tab, &w->frameworks);
	if (!m->remap[T_CONTAINERS][k] || !m->remap[T_CWDS][k] || !m->remap[T_FRAMEWORKS][k] ||
		!VEC_ID_ROOM(s->by_container, m->cap_container, s->containers_tab.count) ||
		!VEC_ID_ROOM(s->by_cwd, m->cap_cwd, s->cwds_tab.count)) {
		m->oom = true;
		return;
	}
	for (size_t i = 0; i < w->by_container_cap && i < w->containers.count; i++)
		gpu_acc_sum(&s->by_container[remap(m, T_CONTAINERS, k, (uint32_t)i)],
			&w->by_container[i]);
	for (size_t i = 0; i < w->by_cwd_cap && i < w->cwds.count; i++)
		gpu_acc_sum(&s->by_cwd[remap(m, T_CWDS, k, (uint32_t)i)], &w->by_cwd[i]);
	gpu_acc_sum(&s->host, &w->host);
	gpu_acc_sum(&s->cwd_unknown, &w->cwd_unknown);
	if (!gpu_sums_merge(&s->gpu, &w->gpu, m->remap[T_CONTAINERS][k]) ||
		!pod_sums_merge(&s->pods, &w->pods, m->remap[T_CONTAINERS][k]) ||
		!user_sums_merge(&s->users, &w->users))
		m->oom = true;
	for (int wl = 0; wl < WL_COUNT; wl++) {
		s->wl_rows[wl] += w->wl_rows[wl];
		s->wl_ms[wl] += w->wl_ms[wl];
	}
	for (size_t i = 0; i < w->by_host_cap && i < w->sw.hosts.count; i++)
		host_acc_sum(merge_host(m, m->join.host_remap[k][i]), &w->by_host[i]);
	host_acc_sum(&s->no_host, &w->no_host);
}

static void proc_finish(struct stats_result *s, struct proc *p)
{
	if (!p->active)
		return;
	for (int k = 0; k < WL_COUNT; k++)
		if (p->states & (1u << k))
			s->wl_processes[k]++;
	struct fw_acc *fw = p->framework == NONE_ID ? &s->fw_none : &s->by_framework[p->framework];
	fw->processes++;
	fw->cpu_x1e4_ms += p->cpu_x1e4_ms;
	p->active = false;
}

/* A track's first row, now that we know what it stands for. */
static void settle_first_row(struct merge *m, const struct stats_track *track, uint64_t weight)
{
	struct stats_result *s = m->s;
	int k = track->head.worker;
	struct host_acc *host = merge_host(m, track->head.host);
	enum gpu_activity activity = (enum gpu_activity)track->first_activity;

	s->wl_ms[track->first_state] += weight;
	host->ms += weight;
	m->p.cpu_x1e4_ms += (u128)track->first_cpu_x1e4 * weight + track->cpu_x1e4_ms;
	if (track->first_state == WL_GPU_HELD && track->first_holder >= 0) {
		gpu_acc_add(&s->gpu.system[track->first_holder], activity, weight);
	} else if (track->first_state == WL_GPU_HELD) {
		uint32_t c = remap(m, T_CONTAINERS, k, track->first_container);
		uint32_t d = remap(m, T_CWDS, k, track->first_cwd);
		gpu_acc_add(c == NONE_ID ? &s->host : &s->by_container[c], activity, weight);
		gpu_acc_add(d == NONE_ID ? &s->cwd_unknown : &s->by_cwd[d], activity, weight);
		gpu_acc_add(&host->gpu, activity, weight);
		if (!gpu_sums_add(&s->gpu, c, track->first_gpus, activity, weight) ||
			!user_sums_add(&s->users, track->first_uid, activity, weight))
			m->oom = true;
	}
}

/* track_walk's step: each process's tracks in time order. */
static int settle_track(
	void *ctx, const struct track_head *head, const struct track_head *prev, uint64_t weight)
{
	struct merge *m = ctx;
	const struct stats_track *track = (const struct stats_track *)head;

	if (!prev) {
		proc_finish(m->s, &m->p);
		m->p = (struct proc){ true, 0, 0, NONE_ID };
		merge_host(m, head->host)->processes++;
	}
	settle_first_row(m, track, weight);
	m->p.states |= track->states;
	if (track->framework != NONE_ID)
		m->p.framework = remap(m, T_FRAMEWORKS, head->worker, track->framework);
	return 0;
}

static void worker_free(struct worker *w)
{
	track_worker_free(&w->sw);
	strtab_free(&w->containers);
	strtab_free(&w->cwds);
	strtab_free(&w->frameworks);
	free(w->by_container);
	free(w->by_cwd);
	free(w->by_host);
	gpu_sums_free(&w->gpu);
	pod_sums_free(&w->pods);
	user_sums_free(&w->users);
}

static void result_free(struct stats_result *s)
{
	strtab_free(&s->containers_tab);
	strtab_free(&s->cwds_tab);
	strtab_free(&s->frameworks_tab);
	free(s->by_container);
	free(s->by_cwd);
	free(s->by_framework);
	free(s->by_host);
	gpu_sums_free(&s->gpu);
	pod_sums_free(&s->pods);
	user_sums_free(&s->users);
}

static int stats_merge(struct merge *m, void *const *ctxs, int workers)
{
	struct stats_result *s = m->s;

	if (track_sums(&m->join, ctxs, workers) < 0)
		return -ENOMEM;
	for (int k = 0; k < workers && !m->oom; k++)
		merge_worker_sums(m, &m->workers[k]);
	if (m->oom || !VEC_ID_ROOM(s->by_framework, m->cap_framework, s->frameworks_tab.count) ||
		!VEC_ID_ROOM(s->by_host, m->cap_host, m->join.hosts.count))
		return -ENOMEM;
	if (track_walk(&m->join, settle_track, m) < 0)
		return -ENOMEM;
	proc_finish(s, &m->p);
	pod_sums_finish(&s->pods);
	s->join = &m->join;
	return m->oom ? -ENOMEM : 0;
}

int cmd_stats(int argc, char **argv)
{
	static const struct ds_sink sink = { track_file_begin, stats_row, NULL };
	struct read_opts o;
	struct ds_files files = { 0 };
	struct ds_report rep;
	struct stats_result s = { 0 };
	struct merge m = { .s = &s };
	void *ctxs[DS_THREADS_MAX];
	int r = read_opts_parse(argc, argv, false, &o), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	m.workers =
		track_workers_new(&o, sizeof(*m.workers), sizeof(struct stats_track), true, ctxs);
	if (!m.workers)
		return 1;
	s.o = &o;
	bool sums = gpu_sums_init(&s.gpu, o.holders_count);
	for (int k = 0; k < o.threads; k++)
		sums &= gpu_sums_init(&m.workers[k].gpu, o.holders_count);
	ds_report_init(&rep);
	if (!sums) {
		fprintf(stderr, "croft stats: out of memory\n");
		goto out;
	}
	if (read_dataset(&o, &sink, ctxs, o.threads, &files, &rep) < 0)
		goto out;
	if (stats_merge(&m, ctxs, o.threads) < 0) {
		fprintf(stderr, "croft stats: out of memory\n");
		goto out;
	}
	stats_print(&s, &files, &rep, o.json);
	status = exit_status(&rep);
out:
	for (int k = 0; k < o.threads; k++) {
		worker_free(&m.workers[k]);
		for (int t = 0; t < 3; t++)
			free(m.remap[t][k]);
	}
	free(m.workers);
	track_join_free(&m.join);
	result_free(&s);
	ds_files_free(&files);
	ds_report_free(&rep);
	return status;
}
