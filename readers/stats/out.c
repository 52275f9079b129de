/*
 * out.c: croft stats' table and --json (shape: croft(1) JSON OUTPUT).
 * Rankings put the most idle GPU-held hours, the most CPU-hours, the most
 * calls first; ties by name, then GPU.  Strings from rows are escaped on
 * the table (put_text).  Invoking user, no privilege.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define HOST_ID (NONE_ID - 1) /* ranking entry for rows with no container/cwd */

struct rank {
	uint32_t id;
	const char *name;               /* NULL: host / unknown / none */
	uint64_t a, b;                  /* sort keys, descending */
	u128 big;                       /* first key where the figure is wide */
	uint32_t gpu;                   /* container x GPU: the GPU (GPU_NONE: none) */
	const struct gpu_acc *acc;      /* GPU rankings: the figures */
	uint64_t unheld_ms, unalloc_ms; /* pods: allocated not held, held not allocated */
};

static int cmp_rank(const void *x, const void *y)
{
	const struct rank *p = x, *q = y;

	if (p->big != q->big)
		return p->big > q->big ? -1 : 1;
	if (p->a != q->a)
		return p->a > q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b > q->b ? -1 : 1;
	if (!p->name || !q->name) {
		if (p->name || q->name)
			return p->name ? -1 : 1;
	} else if (strcmp(p->name, q->name)) {
		return strcmp(p->name, q->name);
	}
	if (p->gpu != q->gpu)
		return p->gpu < q->gpu ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

/* Candidate i of a ranking into *ret; false leaves it out. */
typedef bool rank_entry_fn(const struct stats_result *s, size_t i, struct rank *ret);

/* A ranking's entries, sorted; v NULL when out of memory (the ranking is left out). */
struct ranked {
	struct rank *v;
	size_t n;
};

/* The candidates 0..count-1 that entry() keeps, sorted. */
static void rank_build(
	const struct stats_result *s, size_t count, rank_entry_fn *entry, struct ranked *ret)
{
	ret->v = calloc(count + 1, sizeof(*ret->v));
	ret->n = 0;
	if (!ret->v)
		return;
	for (size_t i = 0; i < count; i++)
		ret->n += entry(s, i, &ret->v[ret->n]);
	qsort(ret->v, ret->n, sizeof(*ret->v), cmp_rank);
}

/* A GPU ranking's entry, the most idle first; false (left out) where it held none. */
static bool rank_acc(
	struct rank *ret, uint32_t id, const char *name, uint32_t gpu, const struct gpu_acc *a)
{
	*ret = (struct rank){ id, name, a->activity_ms[GA_IDLE], a->held_ms, 0, gpu, a, 0, 0 };
	return a->held_ms != 0;
}

/* By container or cwd; the entry after the names is other's (the host's, the unknown cwd's). */
static bool gpu_entry(const struct strtab *names, const struct gpu_acc *acc,
	const struct gpu_acc *other, size_t i, struct rank *ret)
{
	bool named = i < names->count;

	return rank_acc(ret, named ? (uint32_t)i : HOST_ID,
		named ? strtab_str(names, (uint32_t)i, NULL) : NULL, 0, named ? &acc[i] : other);
}

static bool entry_container(const struct stats_result *s, size_t i, struct rank *ret)
{
	return gpu_entry(&s->containers_tab, s->by_container, &s->host, i, ret);
}

static bool entry_cwd(const struct stats_result *s, size_t i, struct rank *ret)
{
	return gpu_entry(&s->cwds_tab, s->by_cwd, &s->cwd_unknown, i, ret);
}

/* Per GPU index: the GPUs held, the most idle first, then by index. */
static bool entry_by_gpu(const struct stats_result *s, size_t i, struct rank *ret)
{
	return rank_acc(ret, (uint32_t)i, NULL, (uint32_t)i, &s->gpu.by_gpu[i]);
}

static bool entry_pair(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct gpu_pair *p = &s->gpu.pairs[i];

	rank_acc(ret, p->container,
		p->container == NONE_ID ? NULL : strtab_str(&s->containers_tab, p->container, NULL),
		p->gpu, &p->acc);
	return true;
}

/* The system holders that held a GPU, by name (gpu_system_holders). */
static bool entry_system(const struct stats_result *s, size_t i, struct rank *ret)
{
	return rank_acc(ret, (uint32_t)i, s->o->holders[i], 0, &s->gpu.system[i]);
}

/* Per user: only where rows carry process.uid (older datasets' output stays). */
static bool entry_user(const struct stats_result *s, size_t i, struct rank *ret)
{
	/* id: the uid, so that ties go by uid whichever thread met it first */
	return rank_acc(ret, (uint32_t)s->users.v[i].uid, NULL, 0, &s->users.v[i].acc);
}

static bool users_shown(const struct stats_result *s)
{
	for (size_t i = 0; i < s->users.count; i++)
		if (s->users.v[i].uid != USER_NONE)
			return true;
	return false;
}

static bool entry_framework(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct strtab *t = &s->frameworks_tab;
	bool named = i < t->count;
	const struct fw_acc *f = named ? &s->by_framework[i] : &s->fw_none;

	*ret = (struct rank){ named ? (uint32_t)i : HOST_ID,
		named ? strtab_str(t, (uint32_t)i, NULL) : NULL, f->processes, 0, f->cpu_x1e4_ms, 0,
		NULL, 0, 0 };
	return f->processes != 0;
}

/* Per host, by name; rows without one (older datasets) last. */
static bool entry_host(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct strtab *t = &s->join->hosts;
	bool named = i < t->count;

	*ret = (struct rank){ named ? (uint32_t)i : HOST_ID,
		named ? strtab_str(t, (uint32_t)i, NULL) : NULL, 0, 0, 0, 0, NULL, 0, 0 };
	return named || s->no_host.rows;
}

/* Every ranking the table or --json shows, built once. */
struct rankings {
	const struct stats_result *s;
	struct ranked containers, cwds, gpus, pairs, system, users, frameworks, hosts;
	struct syscall_calls *syscalls;
	struct user_names names; /* the users' */
};

static void rankings_build(const struct stats_result *s, struct rankings *ret)
{
	ret->s = s;
	rank_build(s, s->containers_tab.count + 1, entry_container, &ret->containers);
	rank_build(s, s->cwds_tab.count + 1, entry_cwd, &ret->cwds);
	rank_build(s, GPU_NONE + 1, entry_by_gpu, &ret->gpus);
	rank_build(s, s->gpu.pairs_count, entry_pair, &ret->pairs);
	rank_build(s, s->gpu.system_count, entry_system, &ret->system);
	rank_build(s, users_shown(s) ? s->users.count : 0, entry_user, &ret->users);
	rank_build(s, s->frameworks_tab.count + 1, entry_framework, &ret->frameworks);
	/* only where rows name their host: older datasets' output stays as it was */
	rank_build(s, s->join->hosts.count ? s->join->hosts.count + 1 : 0, entry_host, &ret->hosts);
	ret->syscalls = syscalls_ranked(s->join);
	user_names_load(&ret->names, USER_NAMES_FILE);
	for (size_t i = 0; ret->users.v && i < ret->users.n; i++) {
		uint32_t uid = ret->users.v[i].id;
		ret->users.v[i].name =
			uid == (uint32_t)USER_NONE ? NULL : user_name(&ret->names, uid);
	}
}

static void rankings_free(struct rankings *r)
{
	free(r->containers.v);
	free(r->cwds.v);
	free(r->gpus.v);
	free(r->pairs.v);
	free(r->system.v);
	free(r->users.v);
	free(r->frameworks.v);
	free(r->hosts.v);
	free(r->syscalls);
	user_names_free(&r->names);
}

static double hours(uint64_t ms)
{
	return (double)ms / MS_PER_HOUR;
}

static double cpu_hours(u128 x1e4_ms)
{
	return (double)x1e4_ms / FIXED_SCALE / MS_PER_HOUR;
}

#define HOURS_COL(t, k, w)                                                                         \
	{                                                                                          \
		.title = t, .key = k, .kind = COL_HOURS, .width = w                                \
	}

/* A GPU ranking's figures: held, then busy, idle and unknown. */
#define ACC_COLS 4
#define ACC_COL_LIST(w)                                                                            \
	HOURS_COL("held h", "gpu_held_hours", w), HOURS_COL("busy h", "busy_gpu_held_hours", w),   \
		HOURS_COL("idle h", "idle_gpu_held_hours", w),                                     \
		HOURS_COL("unknown h", "unknown_gpu_held_hours", w)

static void acc_cells(struct cell *c, const struct gpu_acc *a)
{
	c[0].real = hours(a->held_ms);
	c[1].real = hours(a->activity_ms[GA_BUSY]);
	c[2].real = hours(a->activity_ms[GA_IDLE]);
	c[3].real = hours(a->activity_ms[GA_UNKNOWN]);
}

/*
 * Pods (gpu < 0) or pods x GPU with a GPU figure, the most wasted first:
 * idle GPU-held plus allocated-but-not-held hours, then idle, then held.
 * rank.id is the pod, rank.gpu the index in its gpus[].
 */
static struct rank *rank_pods(const struct stats_result *s, bool by_gpu, size_t *ret_n)
{
	const struct pod_sums *ps = &s->pods;
	size_t n = 0, cap = 1;
	struct rank *v;

	for (size_t i = 0; i < ps->uids.count; i++)
		cap += by_gpu ? ps->pods[i].gpus_count : 1;
	if (!(v = calloc(cap, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < ps->uids.count; i++) {
		const struct pod_acc *pod = &ps->pods[i];
		const char *uid = strtab_str(&ps->uids, (uint32_t)i, NULL);

		for (size_t k = 0; k < (by_gpu ? pod->gpus_count : 1); k++) {
			const struct pod_gpu *pg = by_gpu ? &pod->gpus[k] : NULL;
			const struct gpu_acc *acc = pg ? &pg->acc : &pod->acc;
			uint64_t idle_ms = acc->activity_ms[GA_IDLE];
			uint64_t unheld =
				pg ? pg->allocated_not_held_ms : pod->allocated_not_held_ms;
			uint64_t unalloc =
				pg ? pg->held_not_allocated_ms : pod->held_not_allocated_ms;

			if (!acc->held_ms && !unheld && !unalloc && !pod->gpus_count)
				continue;
			v[n++] = (struct rank){ (uint32_t)i, uid, idle_ms, acc->held_ms,
				(u128)idle_ms + unheld, pg ? pg->gpu : 0, acc, unheld, unalloc };
		}
	}
	qsort(v, n, sizeof(*v), cmp_rank);
	*ret_n = n;
	return v;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A pod's container ids, sorted: the order they were met in is the order
 * the workers happened to read the files in. */
static json_t *json_pod_containers(const struct stats_result *s, const struct pod_acc *pod)
{
	json_t *arr = json_array();
	const char **names = calloc(pod->containers_count + 1, sizeof(*names));

	for (size_t k = 0; names && k < pod->containers_count; k++)
		names[k] = strtab_str(&s->containers_tab, pod->containers[k], NULL);
	if (names)
		qsort(names, pod->containers_count, sizeof(*names), cmp_name);
	for (size_t k = 0; names && k < pod->containers_count; k++)
		json_array_append_new(arr, json_string(names[k]));
	free(names);
	return arr;
}

/* Per pod or per pod x GPU: the ranking, its columns and listing. */
enum {
	PC_POD,
	PC_GPU,
	PC_QOS,
	PC_CONTAINERS,
	PC_ACC,
	PC_UNHELD = PC_ACC + ACC_COLS,
	PC_UNALLOC,
	PC_COUNT
};
struct pod_listing {
	const struct stats_result *s;
	bool by_gpu;
	struct rank *v;
};

static void pod_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct pod_listing *p = ctx;
	const struct rank *r = &p->v[i];
	const struct pod_acc *pod = &p->s->pods.pods[r->id];

	c[PC_POD].text = r->name;
	if (p->by_gpu) {
		snprintf(c[PC_POD].buf, sizeof(c[PC_POD].buf), "GPU %-3u ", r->gpu);
		c[PC_POD].prefix = c[PC_POD].buf;
	}
	c[PC_GPU].count = r->gpu;
	c[PC_QOS].text = pod_qos_text(pod->qos);
	if (json && !p->by_gpu)
		c[PC_CONTAINERS].json = json_pod_containers(p->s, pod);
	acc_cells(&c[PC_ACC], r->acc);
	c[PC_UNHELD].real = hours(r->unheld_ms);
	c[PC_UNALLOC].real = hours(r->unalloc_ms);
}

enum rank_kind { RK_NAME, RK_GPU, RK_PAIR, RK_USER };

/* "name (uid)", the uid alone where the host names none, or none. */
static const char *user_label(const struct rank *r, char *buf, size_t size)
{
	if (r->id == (uint32_t)USER_NONE)
		return "(no uid: older rows)";
	if (r->name)
		snprintf(buf, size, "%s (%" PRIu32 ")", r->name, r->id);
	else
		snprintf(buf, size, "%" PRIu32, r->id);
	return buf;
}

/* An entry as the table shows it: its name, "GPU 3", both, or its user. */
static const char *rank_label(
	const struct rank *r, enum rank_kind kind, const char *none, char *buf, size_t size)
{
	const char *name = r->name ? r->name : none;
	char gpu[16] = "(no GPU named)";

	if (kind == RK_NAME)
		return name;
	if (kind == RK_USER)
		return user_label(r, buf, size);
	if (r->gpu != GPU_NONE)
		snprintf(gpu, sizeof(gpu), "GPU %-3u", r->gpu);
	snprintf(buf, size, "%s%s%s", gpu, kind == RK_PAIR ? " " : "", kind == RK_PAIR ? name : "");
	return buf;
}

/*
 * A GPU ranking: the table's title and label (width: container ids are 64
 * characters, shown whole, as --container takes them; users' names cut at
 * 40), --json's keys for the name ("container_id", "cwd", "holder",
 * "user", after "uid") and the GPU, or NULL.
 */
struct gpu_view {
	const char *title, *none;
	int width;
	enum rank_kind kind;
	const char *key, *gpu_key;
};
static const struct gpu_view view_containers = { "GPU-held hours by container", "(host)", 64,
	RK_NAME, "container_id", NULL };
static const struct gpu_view view_cwds = { "GPU-held hours by cwd", "(unknown)", 40, RK_NAME, "cwd",
	NULL };
static const struct gpu_view view_gpus = { "GPU-held hours by GPU", NULL, 40, RK_GPU, NULL, "gpu" };
static const struct gpu_view view_pairs = { "GPU-held hours by GPU and container", "(host)", 80,
	RK_PAIR, "container_id", "gpu" };
static const struct gpu_view view_system = {
	"system holders (gpu_system_holders; not in the rankings above)", NULL, 64, RK_NAME,
	"holder", NULL
};
static const struct gpu_view view_users = { "GPU-held hours by user", NULL, 40, RK_USER, "user",
	NULL };

enum { GC_LABEL, GC_UID, GC_NAME, GC_GPU, GC_ACC, GC_IDLE = GC_ACC + ACC_COLS, GC_COUNT };
struct gpu_listing {
	const struct gpu_view *view;
	const struct ranked *r;
};

static void gpu_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct gpu_listing *g = ctx;
	const struct rank *r = &g->r->v[i];

	c[GC_LABEL].text = rank_label(
		r, g->view->kind, g->view->none, c[GC_LABEL].buf, sizeof(c[GC_LABEL].buf));
	c[GC_UID].count = r->id;
	c[GC_UID].null = r->id == (uint32_t)USER_NONE;
	c[GC_NAME].text = r->name;
	c[GC_GPU].count = r->gpu;
	c[GC_GPU].null = r->gpu == GPU_NONE;
	acc_cells(&c[GC_ACC], r->acc);
	c[GC_IDLE].real = 100.0 * (double)r->a / (double)r->b;
}

/* A listing on the table (after a blank line), or as root's key in --json. */
static void put_listing(json_t *root, const char *key, const struct listing *l)
{
	if (root) {
		json_object_set_new(root, key, listing_json(l));
		return;
	}
	putchar('\n');
	listing_table(l);
}

/* Left out of the table when out of memory; --json's is then empty. */
static void put_gpu(
	json_t *root, const char *key, const struct gpu_view *view, const struct ranked *r)
{
	const struct col cols[GC_COUNT] = {
		{ .title = view->title,
			.width = view->width,
			.cut = view->kind == RK_USER ? 40 : 0 },
		{ .key = view->kind == RK_USER ? "uid" : NULL, .kind = COL_COUNT },
		{ .key = view->key },
		{ .key = view->gpu_key, .kind = COL_COUNT },
		ACC_COL_LIST(12),
		{ .title = "idle %", .kind = COL_PERCENT, .width = 7 },
	};
	struct gpu_listing g = { view, r };

	if (root || r->v)
		put_listing(root, key,
			&(struct listing){ cols, GC_COUNT, r->n, TOP_TABLE, TOP_JSON,
				"(no GPU held)", true, gpu_cells, &g });
}

/* Per host; per workload state: rows, processes, process-hours. */
#define PROCESS_COLS 3
#define PROCESS_COL_LIST                                                                           \
	{ .title = "rows", .key = "rows", .kind = COL_COUNT, .width = 12 },                        \
		{ .title = "processes", .key = "processes", .kind = COL_COUNT, .width = 10 },      \
		HOURS_COL("process-hours", "process_hours", 14)

static void process_cells(struct cell *c, uint64_t rows, uint64_t processes, uint64_t ms)
{
	c[0].count = rows;
	c[1].count = processes;
	c[2].real = hours(ms);
}

enum { HC_HOST, HC_PROCESS, HC_ACC = HC_PROCESS + PROCESS_COLS, HC_COUNT = HC_ACC + ACC_COLS };
static const struct col host_cols[HC_COUNT] = {
	{ .title = "host", .key = "host", .width = 32, .cut = 32, .none = "(no host: older rows)" },
	PROCESS_COL_LIST,
	ACC_COL_LIST(12),
};
static void host_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct rankings *r = ctx;
	const struct rank *h = &r->hosts.v[i];
	const struct host_acc *a = h->id == HOST_ID ? &r->s->no_host : &r->s->by_host[h->id];

	c[HC_HOST].text = h->name;
	process_cells(&c[HC_PROCESS], a->rows, a->processes, a->ms);
	acc_cells(&c[HC_ACC], &a->gpu);
}

enum { WC_STATE, WC_PROCESS, WC_COUNT = WC_PROCESS + PROCESS_COLS };
static const struct col workload_cols[WC_COUNT] = {
	{ .title = "workload", .key = "workload", .width = 12 },
	PROCESS_COL_LIST,
};

static void workload_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct stats_result *s = ctx;
	enum workload_state k = workload_report_order[i];

	c[WC_STATE].text = workload_name(k);
	process_cells(&c[WC_PROCESS], s->wl_rows[k], s->wl_processes[k], s->wl_ms[k]);
}

enum { FC_NAME, FC_PROCESSES, FC_CPU, FC_COUNT };
static const struct col framework_cols[FC_COUNT] = {
	{ .title = "framework", .key = "framework", .width = 24, .cut = 24, .none = "(none)" },
	{ .title = "processes", .key = "processes", .kind = COL_COUNT, .width = 10 },
	HOURS_COL("CPU-hours", "cpu_hours", 12),
};

static void framework_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct rank *r = &((const struct ranked *)ctx)->v[i];

	c[FC_NAME].text = r->name;
	c[FC_PROCESSES].count = r->a;
	c[FC_CPU].real = cpu_hours(r->big);
}

enum { SC_NAME, SC_CALLS, SC_COUNT };
static const struct col syscall_cols[SC_COUNT] = {
	{ .title = "syscall", .key = "name", .width = 24, .cut = 24 },
	{ .title = "calls", .key = "calls", .kind = COL_COUNT, .width = 16 },
};

static void syscall_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct syscall_calls *v = ctx;

	c[SC_NAME].text = v[i].name;
	c[SC_CALLS].count = calls_rounded(v[i].calls_x1e7);
}

/* Out of memory: no entries (the table keeps its heading). */
static void put_pods(json_t *root, const char *key, const struct stats_result *s, bool by_gpu)
{
	const struct col cols[PC_COUNT] = {
		{ .title = by_gpu ? "GPU hours by GPU and pod" : "GPU hours by pod",
			.key = "pod_uid",
			.width = by_gpu ? 44 : 36 },
		{ .key = by_gpu ? "gpu" : NULL, .kind = COL_COUNT },
		{ .title = "qos", .key = by_gpu ? NULL : "pod_qos", .width = 10, .none = "-" },
		{ .key = by_gpu ? NULL : "containers", .kind = COL_JSON },
		ACC_COL_LIST(10),
		HOURS_COL("alloc-unheld h", "allocated_not_held_hours", 14),
		HOURS_COL("held-unalloc h", "held_not_allocated_hours", 14),
	};
	size_t n = 0;
	struct pod_listing p = { s, by_gpu, rank_pods(s, by_gpu, &n) };

	put_listing(root, key,
		&(struct listing){ cols, PC_COUNT, p.v ? n : 0, TOP_TABLE, TOP_JSON, NULL, true,
			pod_cells, &p });
	free(p.v);
}

/* The figures before the listings: the time span, rows, processes, containers. */
static void put_totals(json_t *root, const struct stats_result *s)
{
	const struct track_join *j = s->join;
	double span_h = hours((uint64_t)(j->last_ms - j->first_ms));
	char a[40], b[40];

	if (root) {
		json_object_set_new(root, "time_span",
			json_time_span(j->rows, j->first_ms, j->last_ms, "hours", span_h, 6));
		json_object_set_new(root, "rows", json_integer((json_int_t)j->rows));
		json_object_set_new(root, "processes", json_integer((json_int_t)j->processes));
		json_object_set_new(
			root, "containers", json_integer((json_int_t)s->containers_tab.count));
		return;
	}
	format_time(j->first_ms, a, sizeof(a));
	format_time(j->last_ms, b, sizeof(b));
	if (j->rows)
		printf("time span    %s .. %s (%.3f h)\n", a, b, span_h);
	else
		printf("time span    (no rows)\n");
	printf("rows         %" PRIu64 "\nprocesses    %" PRIu64 "\ncontainers   %zu\n", j->rows,
		j->processes, s->containers_tab.count);
}

/*
 * The table, or --json (json_t root).  The two keep the orders they had:
 * --json lists workloads before hosts and the system holders (always)
 * before users; the table hosts first and the system holders after users.
 */
void stats_print(const struct stats_result *s, const struct ds_files *files,
	const struct ds_report *rep, bool json)
{
	json_t *root = json ? json_object() : NULL;
	struct rankings r;
	struct listing workloads = { workload_cols, WC_COUNT, WL_COUNT, SIZE_MAX, SIZE_MAX, NULL,
		false, workload_cells, s };

	rankings_build(s, &r);
	put_totals(root, s);
	if (root)
		put_listing(root, "workloads", &workloads);
	if (r.hosts.n)
		put_listing(root, "hosts",
			&(struct listing){ host_cols, HC_COUNT, r.hosts.n, SIZE_MAX, SIZE_MAX, NULL,
				false, host_cells, &r });
	if (!root)
		put_listing(root, "workloads", &workloads);
	put_gpu(root, "gpu_held_by_container", &view_containers, &r.containers);
	put_gpu(root, "gpu_held_by_cwd", &view_cwds, &r.cwds);
	/* the GPU rankings of workloads, then the system holders apart */
	put_gpu(root, "gpu_held_by_gpu", &view_gpus, &r.gpus);
	put_gpu(root, "gpu_held_by_container_gpu", &view_pairs, &r.pairs);
	if (root)
		put_gpu(root, "gpu_held_system", &view_system, &r.system);
	if (r.users.n)
		put_gpu(root, "gpu_held_by_user", &view_users, &r.users);
	if (!root && r.system.n)
		put_gpu(root, "gpu_held_system", &view_system, &r.system);
	if (s->pods.uids.count) { /* only on datasets of pods: the others' output stays */
		put_pods(root, "gpu_by_pod", s, false);
		put_pods(root, "gpu_by_pod_gpu", s, true);
	}
	put_listing(root, "frameworks",
		&(struct listing){ framework_cols, FC_COUNT, r.frameworks.n, TOP_TABLE, TOP_JSON,
			NULL, false, framework_cells, &r.frameworks });
	put_listing(root, "syscalls",
		&(struct listing){ syscall_cols, SC_COUNT, r.syscalls ? s->join->syscalls.count : 0,
			TOP_SYSCALLS_STATS, TOP_SYSCALLS_STATS, NULL, false, syscall_cells,
			r.syscalls });
	if (root) {
		json_object_set_new(root, "input", report_json(files, rep));
		json_print(root);
	} else {
		printf("\n");
		report_table(stdout, files, rep);
	}
	rankings_free(&r);
}
