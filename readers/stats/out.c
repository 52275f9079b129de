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

/* A GPU ranking's columns: held, then busy, idle and unknown. */
static void table_acc(const struct gpu_acc *a, int width)
{
	printf(" %*.3f %*.3f %*.3f %*.3f", width, hours(a->held_ms), width,
		hours(a->activity_ms[GA_BUSY]), width, hours(a->activity_ms[GA_IDLE]), width,
		hours(a->activity_ms[GA_UNKNOWN]));
}

static void table_acc_titles(int width)
{
	printf(" %*s %*s %*s %*s", width, "held h", width, "busy h", width, "idle h", width,
		"unknown h");
}

static void json_acc(json_t *e, const struct gpu_acc *a)
{
	json_object_set_new(e, "gpu_held_hours", json_round(hours(a->held_ms), 6));
	json_object_set_new(
		e, "busy_gpu_held_hours", json_round(hours(a->activity_ms[GA_BUSY]), 6));
	json_object_set_new(
		e, "idle_gpu_held_hours", json_round(hours(a->activity_ms[GA_IDLE]), 6));
	json_object_set_new(
		e, "unknown_gpu_held_hours", json_round(hours(a->activity_ms[GA_UNKNOWN]), 6));
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

static void table_pods(const struct stats_result *s, bool by_gpu)
{
	size_t n = 0;
	struct rank *v = rank_pods(s, by_gpu, &n);

	printf("\n%-*s %-10s", by_gpu ? 44 : 36,
		by_gpu ? "GPU hours by GPU and pod" : "GPU hours by pod", "qos");
	table_acc_titles(10);
	printf(" %14s %14s\n", "alloc-unheld h", "held-unalloc h");
	for (size_t i = 0; v && i < n && i < TOP_TABLE; i++) {
		const struct pod_acc *pod = &s->pods.pods[v[i].id];
		struct pod_figures f = pod_figures_of(pod, by_gpu ? rank_pod_gpu(s, &v[i]) : NULL);
		const char *qos = pod_qos_text(pod->qos);
		char gpu[16] = "";

		if (by_gpu)
			snprintf(gpu, sizeof(gpu), "GPU %-3u ", v[i].gpu);
		fputs(gpu, stdout);
		put_text(stdout, v[i].name, 36, 0);
		printf(" %-10s", qos ? qos : "-");
		table_acc(f.acc, 10);
		printf(" %14.3f %14.3f\n", hours(f.allocated_not_held_ms),
			hours(f.held_not_allocated_ms));
	}
	if (n > TOP_TABLE)
		printf("(%zu more)\n", n - TOP_TABLE);
	free(v);
}

static void json_pod_figures(json_t *e, const struct pod_figures *f)
{
	json_acc(e, f->acc);
	json_object_set_new(
		e, "allocated_not_held_hours", json_round(hours(f->allocated_not_held_ms), 6));
	json_object_set_new(
		e, "held_not_allocated_hours", json_round(hours(f->held_not_allocated_ms), 6));
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

static json_t *json_pods(const struct stats_result *s, bool by_gpu)
{
	json_t *arr = json_array();
	size_t n = 0;
	struct rank *v = rank_pods(s, by_gpu, &n);

	for (size_t i = 0; v && i < n && i < TOP_JSON; i++) {
		const struct pod_acc *pod = &s->pods.pods[v[i].id];
		struct pod_figures f = pod_figures_of(pod, by_gpu ? rank_pod_gpu(s, &v[i]) : NULL);
		json_t *e = json_object();

		json_object_set_new(e, "pod_uid", json_string(v[i].name));
		if (by_gpu) {
			json_object_set_new(e, "gpu", json_integer(v[i].gpu));
		} else {
			json_object_set_new(e, "pod_qos", json_str_or_null(pod_qos_text(pod->qos)));
			json_object_set_new(e, "containers", json_pod_containers(s, pod));
		}
		json_pod_figures(e, &f);
		json_array_append_new(arr, e);
	}
	free(v);
	return arr;
}

static double cpu_hours(u128 x1e4_ms)
{
	return (double)x1e4_ms / FIXED_SCALE / MS_PER_HOUR;
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

	if (kind == RK_NAME)
		return name;
	if (r->gpu == GPU_NONE)
		snprintf(buf, size, "(no GPU named)%s%s", kind == RK_PAIR ? " " : "",
			kind == RK_PAIR ? name : "");
	else
		snprintf(buf, size, "GPU %-3u%s%s", r->gpu, kind == RK_PAIR ? " " : "",
			kind == RK_PAIR ? name : "");
	return buf;
}

/* width: container ids are 64 characters, shown whole (--container takes them). */
static void table_gpu(
	const char *title, const char *none, const struct ranked *r, int width, enum rank_kind kind)
{
	const struct rank *v = r->v;
	size_t n = r->n;
	char buf[400];

	if (!v)
		return;
	printf("\n%-*s", width, title);
	table_acc_titles(12);
	printf(" %7s\n", "idle %");
	if (n == 0)
		printf("(no GPU held)\n");
	for (size_t i = 0; i < n && i < TOP_TABLE; i++) {
		put_text(stdout, rank_label(&v[i], kind, none, buf, sizeof(buf)), width, 0);
		table_acc(v[i].acc, 12);
		printf(" %6.1f%%\n", 100.0 * (double)v[i].a / (double)v[i].b);
	}
	if (n > TOP_TABLE)
		printf("(%zu more)\n", n - TOP_TABLE);
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

/* Only where rows name their host: older datasets' output stays as it was. */
static void table_hosts(const struct stats_result *s)
{
	uint32_t *order = hosts_listed(s) ? hosts_by_name(s) : NULL;
	const char *name;

	if (!order)
		return;
	printf("\n%-32s %12s %10s %14s", "host", "rows", "processes", "process-hours");
	table_acc_titles(12);
	printf("\n");
	for (size_t i = 0; i < hosts_listed(s); i++) {
		const struct host_acc *h = host_at(s, order, i, &name);
		put_text(stdout, name ? name : "(no host: older rows)", 32, 32);
		printf(" %12" PRIu64 " %10" PRIu64 " %14.3f", h->rows, h->processes, hours(h->ms));
		table_acc(&h->gpu, 12);
		printf("\n");
	}
	free(order);
}

static void json_hosts(json_t *root, const struct stats_result *s)
{
	uint32_t *order = hosts_listed(s) ? hosts_by_name(s) : NULL;
	json_t *arr;
	const char *name;

	if (!order)
		return;
	arr = json_array();
	for (size_t i = 0; i < hosts_listed(s); i++) {
		const struct host_acc *h = host_at(s, order, i, &name);
		json_t *e = json_object();
		json_object_set_new(e, "host", json_str_or_null(name));
		json_object_set_new(e, "rows", json_integer((json_int_t)h->rows));
		json_object_set_new(e, "processes", json_integer((json_int_t)h->processes));
		json_object_set_new(e, "process_hours", json_round(hours(h->ms), 6));
		json_acc(e, &h->gpu);
		json_array_append_new(arr, e);
	}
	json_object_set_new(root, "hosts", arr);
	free(order);
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

static void table_users(const struct ranked *r)
{
	char buf[300];

	printf("\n%-40s", "GPU-held hours by user");
	table_acc_titles(12);
	printf(" %7s\n", "idle %");
	for (size_t i = 0; i < r->n && i < TOP_TABLE; i++) {
		put_text(stdout, user_label(&r->v[i], buf, sizeof(buf)), 40, 40);
		table_acc(r->v[i].acc, 12);
		printf(" %6.1f%%\n", 100.0 * (double)r->v[i].a / (double)r->v[i].b);
	}
	if (r->n > TOP_TABLE)
		printf("(%zu more)\n", r->n - TOP_TABLE);
}

static json_t *json_users(const struct ranked *r)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < r->n && i < TOP_JSON; i++) {
		json_t *e = json_object();
		bool none = r->v[i].id == (uint32_t)USER_NONE;

		json_object_set_new(e, "uid", none ? json_null() : json_integer(r->v[i].id));
		json_object_set_new(e, "user", json_str_or_null(r->v[i].name));
		json_acc(e, r->v[i].acc);
		json_array_append_new(arr, e);
	}
	return arr;
}

void stats_print_table(
	const struct stats_result *s, const struct ds_files *files, const struct ds_report *rep)
{
	char a[40], b[40];
	struct rankings r;
	const struct rank *vf;

	rankings_build(s, &r);
	vf = r.frameworks.v;

	if (s->rows) {
		format_time(s->first_ms, a, sizeof(a));
		format_time(s->last_ms, b, sizeof(b));
		printf("time span    %s .. %s (%.3f h)\n", a, b,
			hours((uint64_t)(s->last_ms - s->first_ms)));
	} else {
		printf("time span    (no rows)\n");
	}
	printf("rows         %" PRIu64 "\nprocesses    %" PRIu64 "\ncontainers   %" PRIu64 "\n",
		s->rows, s->processes, s->containers);
	table_hosts(s);
	printf("\n%-12s %12s %10s %14s\n", "workload", "rows", "processes", "process-hours");
	for (int i = 0; i < WL_COUNT; i++) {
		enum workload_state k = workload_report_order[i];
		printf("%-12s %12" PRIu64 " %10" PRIu64 " %14.3f\n", workload_name(k),
			s->wl_rows[k], s->wl_processes[k], hours(s->wl_ms[k]));
	}
	table_gpu("GPU-held hours by container", "(host)", &r.containers, 64, RK_NAME);
	table_gpu("GPU-held hours by cwd", "(unknown)", &r.cwds, 40, RK_NAME);
	/* the GPU rankings of workloads, then the system holders apart */
	table_gpu("GPU-held hours by GPU", NULL, &r.gpus, 40, RK_GPU);
	table_gpu("GPU-held hours by GPU and container", "(host)", &r.pairs, 80, RK_PAIR);
	if (r.users.n)
		table_users(&r.users);
	if (r.system.n)
		table_gpu("system holders (gpu_system_holders; not in the rankings above)", NULL,
			&r.system, 64, RK_NAME);
	if (s->pods.uids.count) {
		table_pods(s, false);
		table_pods(s, true);
	}
	printf("\n%-24s %10s %12s\n", "framework", "processes", "CPU-hours");
	for (size_t i = 0; vf && i < r.frameworks.n && i < TOP_TABLE; i++) {
		put_text(stdout, vf[i].name ? vf[i].name : "(none)", 24, 24);
		printf(" %10" PRIu64 " %12.3f\n", vf[i].a, cpu_hours(vf[i].big));
	}
	printf("\n%-24s %16s\n", "syscall", "calls");
	for (size_t i = 0; r.syscalls && i < syscalls_top(s); i++) {
		put_text(stdout, r.syscalls[i].name, 24, 24);
		printf(" %16" PRIu64 "\n", calls_rounded(r.syscalls[i].calls_x1e7));
	}
	printf("\n");
	report_table(stdout, files, rep);
	rankings_free(&r);
}

static json_t *json_gpu_index(uint32_t gpu)
{
	return gpu == GPU_NONE ? json_null() : json_integer(gpu);
}

/* key: the name's key ("container_id", "cwd", "holder"); gpu_key: the GPU's, or NULL. */
static json_t *json_gpu(const char *key, const char *gpu_key, const struct ranked *r)
{
	const struct rank *v = r->v;
	json_t *arr = json_array();

	for (size_t i = 0; v && i < r->n && i < TOP_JSON; i++) {
		json_t *e = json_object();
		if (key)
			json_object_set_new(e, key, json_str_or_null(v[i].name));
		if (gpu_key)
			json_object_set_new(e, gpu_key, json_gpu_index(v[i].gpu));
		json_acc(e, v[i].acc);
		json_array_append_new(arr, e);
	}
	return arr;
}

void stats_print_json(
	const struct stats_result *s, const struct ds_files *files, const struct ds_report *rep)
{
	json_t *root = json_object(), *wl = json_array(), *fw = json_array();
	struct rankings r;
	const struct rank *vf;

	rankings_build(s, &r);
	vf = r.frameworks.v;

	json_object_set_new(root, "time_span",
		json_time_span(s->rows, s->first_ms, s->last_ms, "hours",
			hours((uint64_t)(s->last_ms - s->first_ms)), 6));
	json_object_set_new(root, "rows", json_integer((json_int_t)s->rows));
	json_object_set_new(root, "processes", json_integer((json_int_t)s->processes));
	json_object_set_new(root, "containers", json_integer((json_int_t)s->containers));
	for (int i = 0; i < WL_COUNT; i++) {
		enum workload_state k = workload_report_order[i];
		json_t *e = json_object();
		json_object_set_new(e, "workload", json_string(workload_name(k)));
		json_object_set_new(e, "rows", json_integer((json_int_t)s->wl_rows[k]));
		json_object_set_new(e, "processes", json_integer((json_int_t)s->wl_processes[k]));
		json_object_set_new(e, "process_hours", json_round(hours(s->wl_ms[k]), 6));
		json_array_append_new(wl, e);
	}
	json_object_set_new(root, "workloads", wl);
	json_hosts(root, s);
	json_object_set_new(
		root, "gpu_held_by_container", json_gpu("container_id", NULL, &r.containers));
	json_object_set_new(root, "gpu_held_by_cwd", json_gpu("cwd", NULL, &r.cwds));
	json_object_set_new(root, "gpu_held_by_gpu", json_gpu(NULL, "gpu", &r.gpus));
	json_object_set_new(
		root, "gpu_held_by_container_gpu", json_gpu("container_id", "gpu", &r.pairs));
	json_object_set_new(root, "gpu_held_system", json_gpu("holder", NULL, &r.system));
	if (r.users.n)
		json_object_set_new(root, "gpu_held_by_user", json_users(&r.users));
	if (s->pods.uids.count) { /* keys only on datasets of pods: the others' output stays */
		json_object_set_new(root, "gpu_by_pod", json_pods(s, false));
		json_object_set_new(root, "gpu_by_pod_gpu", json_pods(s, true));
	}
	for (size_t i = 0; vf && i < r.frameworks.n && i < TOP_JSON; i++) {
		json_t *e = json_object();
		json_object_set_new(e, "framework", json_str_or_null(vf[i].name));
		json_object_set_new(e, "processes", json_integer((json_int_t)vf[i].a));
		json_object_set_new(e, "cpu_hours", json_round(cpu_hours(vf[i].big), 6));
		json_array_append_new(fw, e);
	}
	json_object_set_new(root, "frameworks", fw);
	json_object_set_new(
		root, "syscalls", json_syscalls(r.syscalls, r.syscalls ? syscalls_top(s) : 0, 0));
	json_object_set_new(root, "input", report_json(files, rep));
	json_print(root);
	rankings_free(&r);
}
