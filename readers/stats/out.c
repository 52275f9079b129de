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
	const char *name;          /* NULL: host / unknown / none */
	uint64_t a, b;             /* sort keys, descending */
	u128 big;                  /* first key where the figure is wide */
	uint32_t gpu;              /* container x GPU: the GPU (GPU_NONE: none) */
	const struct gpu_acc *acc; /* GPU rankings: the figures */
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

/* GPU rankings: entries that held a GPU, the most idle first; the one
 * after the names is other's (the host's, the unknown cwd's). */
static bool gpu_entry(const struct strtab *names, const struct gpu_acc *acc,
	const struct gpu_acc *other, size_t i, struct rank *ret)
{
	bool named = i < names->count;
	const struct gpu_acc *a = named ? &acc[i] : other;

	*ret = (struct rank){ named ? (uint32_t)i : HOST_ID,
		named ? strtab_str(names, (uint32_t)i, NULL) : NULL, a->activity_ms[GA_IDLE],
		a->held_ms, 0, 0, a };
	return a->held_ms != 0;
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
	const struct gpu_acc *a = &s->gpu.by_gpu[i];

	*ret = (struct rank){ (uint32_t)i, NULL, a->activity_ms[GA_IDLE], a->held_ms, 0,
		(uint32_t)i, a };
	return a->held_ms != 0;
}

static bool entry_pair(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct gpu_pair *p = &s->gpu.pairs[i];

	*ret = (struct rank){ p->container,
		p->container == NONE_ID ? NULL : strtab_str(&s->containers_tab, p->container, NULL),
		p->acc.activity_ms[GA_IDLE], p->acc.held_ms, 0, p->gpu, &p->acc };
	return true;
}

/* The system holders that held a GPU, by name (gpu_system_holders). */
static bool entry_system(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct gpu_acc *a = &s->gpu.system[i];

	*ret = (struct rank){ (uint32_t)i, s->o->holders[i], a->activity_ms[GA_IDLE], a->held_ms, 0,
		0, a };
	return a->held_ms != 0;
}

/* Per user: only where rows carry process.uid (older datasets' output stays). */
static bool entry_user(const struct stats_result *s, size_t i, struct rank *ret)
{
	const struct user_acc *u = &s->users.v[i];

	/* id: the uid, so that ties go by uid whichever thread met it first */
	*ret = (struct rank){ (uint32_t)u->uid, NULL, u->acc.activity_ms[GA_IDLE], u->acc.held_ms,
		0, 0, &u->acc };
	return u->acc.held_ms != 0;
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
		NULL };
	return f->processes != 0;
}

/* Every ranking the table or --json shows, built once. */
struct rankings {
	struct ranked containers, cwds, gpus, pairs, system, users, frameworks;
	struct syscall_calls *syscalls;
	struct user_names names; /* the users' */
};

static void rankings_build(const struct stats_result *s, struct rankings *ret)
{
	rank_build(s, s->containers_tab.count + 1, entry_container, &ret->containers);
	rank_build(s, s->cwds_tab.count + 1, entry_cwd, &ret->cwds);
	rank_build(s, GPU_NONE + 1, entry_by_gpu, &ret->gpus);
	rank_build(s, s->gpu.pairs_count, entry_pair, &ret->pairs);
	rank_build(s, s->gpu.system_count, entry_system, &ret->system);
	rank_build(s, users_shown(s) ? s->users.count : 0, entry_user, &ret->users);
	rank_build(s, s->frameworks_tab.count + 1, entry_framework, &ret->frameworks);
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

/* A GPU ranking's figures: held, then busy, idle and unknown. */
#define ACC_COLS 4
#define ACC_COL_LIST(width)                                                                        \
	REAL_COL("held h", "gpu_held_hours", width, 3, 6),                                         \
		REAL_COL("busy h", "busy_gpu_held_hours", width, 3, 6),                            \
		REAL_COL("idle h", "idle_gpu_held_hours", width, 3, 6),                            \
		REAL_COL("unknown h", "unknown_gpu_held_hours", width, 3, 6)

static void acc_cells(struct cell *c, const struct gpu_acc *a)
{
	c[0].real = hours(a->held_ms);
	c[1].real = hours(a->activity_ms[GA_BUSY]);
	c[2].real = hours(a->activity_ms[GA_IDLE]);
	c[3].real = hours(a->activity_ms[GA_UNKNOWN]);
}

/* A pod's, or a pod x GPU's, figures. */
struct pod_figures {
	const struct gpu_acc *acc;
	uint64_t allocated_not_held_ms, held_not_allocated_ms;
};

static struct pod_figures pod_figures_of(const struct pod_acc *pod, const struct pod_gpu *pg)
{
	if (pg)
		return (struct pod_figures){ &pg->acc, pg->allocated_not_held_ms,
			pg->held_not_allocated_ms };
	return (struct pod_figures){ &pod->acc, pod->allocated_not_held_ms,
		pod->held_not_allocated_ms };
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
			struct pod_figures f = pod_figures_of(pod, by_gpu ? &pod->gpus[k] : NULL);

			uint64_t idle_ms = f.acc->activity_ms[GA_IDLE];

			if (!f.acc->held_ms && !f.allocated_not_held_ms &&
				!f.held_not_allocated_ms && !pod->gpus_count)
				continue;
			v[n++] = (struct rank){ (uint32_t)i, uid, idle_ms, f.acc->held_ms,
				(u128)idle_ms + f.allocated_not_held_ms,
				by_gpu ? pod->gpus[k].gpu : 0, f.acc };
		}
	}
	qsort(v, n, sizeof(*v), cmp_rank);
	*ret_n = n;
	return v;
}

static const struct pod_gpu *rank_pod_gpu(const struct stats_result *s, const struct rank *r)
{
	const struct pod_acc *pod = &s->pods.pods[r->id];

	for (size_t k = 0; k < pod->gpus_count; k++)
		if (pod->gpus[k].gpu == r->gpu)
			return &pod->gpus[k];
	return NULL;
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
	struct col cols[PC_COUNT];
	struct listing l;
};

static void pod_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct pod_listing *p = ctx;
	const struct rank *r = &p->v[i];
	const struct pod_acc *pod = &p->s->pods.pods[r->id];
	struct pod_figures f = pod_figures_of(pod, p->by_gpu ? rank_pod_gpu(p->s, r) : NULL);

	c[PC_POD].text = r->name;
	if (p->by_gpu) {
		snprintf(c[PC_POD].buf, sizeof(c[PC_POD].buf), "GPU %-3u ", r->gpu);
		c[PC_POD].prefix = c[PC_POD].buf;
	}
	c[PC_GPU].count = r->gpu;
	c[PC_QOS].text = pod_qos_text(pod->qos);
	if (json && !p->by_gpu)
		c[PC_CONTAINERS].json = json_pod_containers(p->s, pod);
	acc_cells(&c[PC_ACC], f.acc);
	c[PC_UNHELD].real = hours(f.allocated_not_held_ms);
	c[PC_UNALLOC].real = hours(f.held_not_allocated_ms);
}

/* Out of memory: no entries (the table keeps its heading).  The caller frees ret->v. */
static void pod_listing(const struct stats_result *s, bool by_gpu, struct pod_listing *ret)
{
	const struct col cols[PC_COUNT] = {
		TEXT_COL(by_gpu ? "GPU hours by GPU and pod" : "GPU hours by pod", "pod_uid",
			by_gpu ? 44 : 36, 0, NULL),
		COUNT_COL(NULL, by_gpu ? "gpu" : NULL, 0),
		TEXT_COL("qos", by_gpu ? NULL : "pod_qos", 10, 0, "-"),
		JSON_COL(by_gpu ? NULL : "containers"),
		ACC_COL_LIST(10),
		REAL_COL("alloc-unheld h", "allocated_not_held_hours", 14, 3, 6),
		REAL_COL("held-unalloc h", "held_not_allocated_hours", 14, 3, 6),
	};
	size_t n = 0;

	*ret = (struct pod_listing){ .s = s, .by_gpu = by_gpu, .v = rank_pods(s, by_gpu, &n) };
	memcpy(ret->cols, cols, sizeof(cols));
	ret->l = (struct listing){ ret->cols, PC_COUNT, ret->v ? n : 0, TOP_TABLE, TOP_JSON, NULL,
		true, pod_cells, ret };
}

/* The syscalls listed: the first TOP_SYSCALLS_STATS. */
static size_t syscalls_top(const struct stats_result *s)
{
	size_t n = s->join->syscalls.count;

	return n < TOP_SYSCALLS_STATS ? n : TOP_SYSCALLS_STATS;
}

enum rank_kind { RK_NAME, RK_GPU, RK_PAIR };

/* An entry as the table shows it: its name, "GPU 3", or both. */
static const char *rank_label(
	const struct rank *r, enum rank_kind kind, const char *none, char *buf, size_t size)
{
	const char *name = r->name ? r->name : none;
	char gpu[16] = "(no GPU named)";

	if (kind == RK_NAME)
		return name;
	if (r->gpu != GPU_NONE)
		snprintf(gpu, sizeof(gpu), "GPU %-3u", r->gpu);
	snprintf(buf, size, "%s%s%s", gpu, kind == RK_PAIR ? " " : "", kind == RK_PAIR ? name : "");
	return buf;
}

/*
 * A GPU ranking: the table's title and label (width: container ids are 64
 * characters, shown whole, as --container takes them), --json's keys for
 * the name ("container_id", "cwd", "holder") and the GPU, or NULL.
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

enum { GC_LABEL, GC_NAME, GC_GPU, GC_ACC, GC_IDLE = GC_ACC + ACC_COLS, GC_COUNT };
struct gpu_listing {
	const struct gpu_view *view;
	const struct ranked *r;
	struct col cols[GC_COUNT];
	struct listing l;
};

static void gpu_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct gpu_listing *g = ctx;
	const struct rank *r = &g->r->v[i];

	c[GC_LABEL].text = rank_label(
		r, g->view->kind, g->view->none, c[GC_LABEL].buf, sizeof(c[GC_LABEL].buf));
	c[GC_NAME].text = r->name;
	c[GC_GPU].count = r->gpu;
	c[GC_GPU].null = r->gpu == GPU_NONE;
	acc_cells(&c[GC_ACC], r->acc);
	c[GC_IDLE].real = 100.0 * (double)r->a / (double)r->b;
}

static void gpu_listing(
	const struct gpu_view *view, const struct ranked *r, struct gpu_listing *ret)
{
	const struct col cols[GC_COUNT] = {
		TEXT_COL(view->title, NULL, view->width, 0, NULL),
		TEXT_COL(NULL, view->key, 0, 0, NULL),
		COUNT_COL(NULL, view->gpu_key, 0),
		ACC_COL_LIST(12),
		PERCENT_COL("idle %", 7),
	};

	ret->view = view;
	ret->r = r;
	memcpy(ret->cols, cols, sizeof(cols));
	ret->l = (struct listing){ ret->cols, GC_COUNT, r->n, TOP_TABLE, TOP_JSON, "(no GPU held)",
		true, gpu_cells, ret };
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
	struct gpu_listing g;

	if (!root && !r->v)
		return;
	gpu_listing(view, r, &g);
	put_listing(root, key, &g.l);
}

/* Per host, by name; rows without one (older datasets) last. */
static size_t hosts_listed(const struct stats_result *s)
{
	size_t n = s->join->hosts.count;

	return n && s->no_host.rows ? n + 1 : n;
}

static const struct host_acc *host_at(
	const struct stats_result *s, const uint32_t *order, size_t i, const char **ret_name)
{
	if (i == s->join->hosts.count) {
		*ret_name = NULL;
		return &s->no_host;
	}
	*ret_name = strtab_str(&s->join->hosts, order[i], NULL);
	return &s->by_host[order[i]];
}

static int cmp_host_id(const void *a, const void *b, void *hosts)
{
	return strcmp(strtab_str(hosts, *(const uint32_t *)a, NULL),
		strtab_str(hosts, *(const uint32_t *)b, NULL));
}

static uint32_t *hosts_by_name(const struct stats_result *s)
{
	uint32_t *order = calloc(s->join->hosts.count + 1, sizeof(*order));

	if (!order)
		return NULL;
	for (uint32_t i = 0; i < s->join->hosts.count; i++)
		order[i] = i;
	qsort_r(order, s->join->hosts.count, sizeof(*order), cmp_host_id, (void *)&s->join->hosts);
	return order;
}

/* Per host; per workload state: rows, processes, process-hours. */
#define PROCESS_COLS 3
#define PROCESS_COL_LIST                                                                           \
	COUNT_COL("rows", "rows", 12), COUNT_COL("processes", "processes", 10),                    \
		REAL_COL("process-hours", "process_hours", 14, 3, 6)

static void process_cells(struct cell *c, uint64_t rows, uint64_t processes, uint64_t ms)
{
	c[0].count = rows;
	c[1].count = processes;
	c[2].real = hours(ms);
}

enum { HC_HOST, HC_PROCESS, HC_ACC = HC_PROCESS + PROCESS_COLS, HC_COUNT = HC_ACC + ACC_COLS };
static const struct col host_cols[HC_COUNT] = {
	TEXT_COL("host", "host", 32, 32, "(no host: older rows)"),
	PROCESS_COL_LIST,
	ACC_COL_LIST(12),
};
struct host_listing {
	const struct stats_result *s;
	uint32_t *order; /* the caller frees it */
	struct listing l;
};

static void host_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct host_listing *h = ctx;
	const struct host_acc *a = host_at(h->s, h->order, i, &c[HC_HOST].text);

	process_cells(&c[HC_PROCESS], a->rows, a->processes, a->ms);
	acc_cells(&c[HC_ACC], &a->gpu);
}

/* Only where rows name their host: older datasets' output stays as it
 * was.  False when there is none to list (or no memory). */
static bool host_listing(const struct stats_result *s, struct host_listing *ret)
{
	ret->s = s;
	ret->order = hosts_listed(s) ? hosts_by_name(s) : NULL;
	ret->l = (struct listing){ host_cols, HC_COUNT, hosts_listed(s), SIZE_MAX, SIZE_MAX, NULL,
		false, host_cells, ret };
	return ret->order != NULL;
}

enum { WC_STATE, WC_PROCESS, WC_COUNT = WC_PROCESS + PROCESS_COLS };
static const struct col workload_cols[WC_COUNT] = {
	TEXT_COL("workload", "workload", 12, 0, NULL),
	PROCESS_COL_LIST,
};

static void workload_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct stats_result *s = ctx;
	enum workload_state k = workload_report_order[i];

	c[WC_STATE].text = workload_name(k);
	process_cells(&c[WC_PROCESS], s->wl_rows[k], s->wl_processes[k], s->wl_ms[k]);
}

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

enum { UC_LABEL, UC_UID, UC_USER, UC_ACC, UC_IDLE = UC_ACC + ACC_COLS, UC_COUNT };
static const struct col user_cols[UC_COUNT] = {
	TEXT_COL("GPU-held hours by user", NULL, 40, 40, NULL),
	COUNT_COL(NULL, "uid", 0),
	TEXT_COL(NULL, "user", 0, 0, NULL),
	ACC_COL_LIST(12),
	PERCENT_COL("idle %", 7),
};

static void user_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct rank *r = &((const struct ranked *)ctx)->v[i];

	c[UC_LABEL].text = user_label(r, c[UC_LABEL].buf, sizeof(c[UC_LABEL].buf));
	c[UC_UID].count = r->id;
	c[UC_UID].null = r->id == (uint32_t)USER_NONE;
	c[UC_USER].text = r->name;
	acc_cells(&c[UC_ACC], r->acc);
	c[UC_IDLE].real = 100.0 * (double)r->a / (double)r->b;
}

enum { FC_NAME, FC_PROCESSES, FC_CPU, FC_COUNT };
static const struct col framework_cols[FC_COUNT] = {
	TEXT_COL("framework", "framework", 24, 24, "(none)"),
	COUNT_COL("processes", "processes", 10),
	REAL_COL("CPU-hours", "cpu_hours", 12, 3, 6),
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
	TEXT_COL("syscall", "name", 24, 24, NULL),
	COUNT_COL("calls", "calls", 16),
};

static void syscall_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct syscall_calls *v = ctx;

	c[SC_NAME].text = v[i].name;
	c[SC_CALLS].count = calls_rounded(v[i].calls_x1e7);
}

/* The listings whose columns stay the same. */
struct listings {
	struct listing workloads, users, frameworks, syscalls;
	struct host_listing hosts;
	bool hosts_shown;
};

static void listings_build(
	const struct stats_result *s, const struct rankings *r, struct listings *ret)
{
	ret->workloads = (struct listing){ workload_cols, WC_COUNT, WL_COUNT, SIZE_MAX, SIZE_MAX,
		NULL, false, workload_cells, s };
	ret->users = (struct listing){ user_cols, UC_COUNT, r->users.n, TOP_TABLE, TOP_JSON, NULL,
		true, user_cells, &r->users };
	ret->frameworks = (struct listing){ framework_cols, FC_COUNT, r->frameworks.n, TOP_TABLE,
		TOP_JSON, NULL, false, framework_cells, &r->frameworks };
	ret->syscalls = (struct listing){ syscall_cols, SC_COUNT, r->syscalls ? syscalls_top(s) : 0,
		SIZE_MAX, SIZE_MAX, NULL, false, syscall_cells, r->syscalls };
	ret->hosts_shown = host_listing(s, &ret->hosts);
}

static void put_pods(json_t *root, const char *key, const struct stats_result *s, bool by_gpu)
{
	struct pod_listing p;

	pod_listing(s, by_gpu, &p);
	put_listing(root, key, &p.l);
	free(p.v);
}

/* The figures before the listings: the time span, rows, processes, containers. */
static void put_totals(json_t *root, const struct stats_result *s)
{
	double span_h = hours((uint64_t)(s->last_ms - s->first_ms));
	char a[40], b[40];

	if (root) {
		json_object_set_new(root, "time_span",
			json_time_span(s->rows, s->first_ms, s->last_ms, "hours", span_h, 6));
		json_object_set_new(root, "rows", json_integer((json_int_t)s->rows));
		json_object_set_new(root, "processes", json_integer((json_int_t)s->processes));
		json_object_set_new(root, "containers", json_integer((json_int_t)s->containers));
		return;
	}
	format_time(s->first_ms, a, sizeof(a));
	format_time(s->last_ms, b, sizeof(b));
	if (s->rows)
		printf("time span    %s .. %s (%.3f h)\n", a, b, span_h);
	else
		printf("time span    (no rows)\n");
	printf("rows         %" PRIu64 "\nprocesses    %" PRIu64 "\ncontainers   %" PRIu64 "\n",
		s->rows, s->processes, s->containers);
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
	struct listings l;

	rankings_build(s, &r);
	listings_build(s, &r, &l);
	put_totals(root, s);
	if (root)
		put_listing(root, "workloads", &l.workloads);
	if (l.hosts_shown)
		put_listing(root, "hosts", &l.hosts.l);
	if (!root)
		put_listing(root, "workloads", &l.workloads);
	put_gpu(root, "gpu_held_by_container", &view_containers, &r.containers);
	put_gpu(root, "gpu_held_by_cwd", &view_cwds, &r.cwds);
	/* the GPU rankings of workloads, then the system holders apart */
	put_gpu(root, "gpu_held_by_gpu", &view_gpus, &r.gpus);
	put_gpu(root, "gpu_held_by_container_gpu", &view_pairs, &r.pairs);
	if (root)
		put_gpu(root, "gpu_held_system", &view_system, &r.system);
	if (r.users.n)
		put_listing(root, "gpu_held_by_user", &l.users);
	if (!root && r.system.n)
		put_gpu(root, "gpu_held_system", &view_system, &r.system);
	if (s->pods.uids.count) { /* only on datasets of pods: the others' output stays */
		put_pods(root, "gpu_by_pod", s, false);
		put_pods(root, "gpu_by_pod_gpu", s, true);
	}
	put_listing(root, "frameworks", &l.frameworks);
	put_listing(root, "syscalls", &l.syscalls);
	if (root) {
		json_object_set_new(root, "input", report_json(files, rep));
		json_print(root);
	} else {
		printf("\n");
		report_table(stdout, files, rep);
	}
	free(l.hosts.order);
	rankings_free(&r);
}
