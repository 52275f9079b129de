/*
 * textfile.c: the live figures of croft.prom, summed from each poll's
 * processes: per GPU, per container, pod and user (the top N by GPU-held
 * time, the rest in "other"), per framework and workload state, and
 * printed in Prometheus's text format.  Counters add a row's span when the
 * poll writes one, as croft stats sums rows (GPU-held seconds split by the
 * rows' verdict: busy, idle, unknown); gauges count the poll's live
 * processes (a last row counts its span, not in the gauges).
 * croft-sampler, croft user; no I/O but the FILE it prints to.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

#define TEXTFILE_BUCKETS 4096
#define GPU_SLOTS        (GPU_INDEX_MAX + 1) /* the indices, then "holds files naming none" */
#define GPU_NONE         GPU_INDEX_MAX

/* What rows add up to. */
struct tf_sums {
	uint64_t held_ms;               /* gpu-held rows' spans */
	uint64_t activity_ms[GA_COUNT]; /* of them, by the rows' verdict */
	uint64_t cpu_us;                /* cpu_cores x span */
};

/* A container (its id's first 12 characters; "" for host processes), a pod or a framework. */
struct tf_group {
	struct hash_link hash; /* by key */
	char key[TEXTFILE_LABEL_MAX + 1];
	uint64_t seen_gen;     /* the last poll a process of it was in */
	struct tf_sums total;  /* since first seen: the ranking */
	struct tf_sums inc;    /* this poll's */
	struct tf_sums series; /* what its series says: since it was last shown */
	bool shown;
	uint64_t processes, rss_bytes;                                           /* this poll's */
	char label[TEXTFILE_LABEL_MAX + 1], pod[TEXTFILE_LABEL_MAX + 1];         /* the series' */
	char now_label[TEXTFILE_LABEL_MAX + 1], now_pod[TEXTFILE_LABEL_MAX + 1]; /* this poll's */
	bool label_taken, pod_taken;
};

struct tf_table {
	struct hash_link *buckets[TEXTFILE_BUCKETS];
	struct tf_group *all[TEXTFILE_GROUPS_MAX]; /* ranked at each settle */
	size_t count;
	struct tf_sums other; /* the groups not shown, and those over the cap */
	uint64_t other_processes, other_rss_bytes;
};

/* The tables, in the order croft.prom shows them, and the figures of their series. */
enum group_kind { GK_MIG, GK_CONTAINER, GK_POD, GK_USER, GK_FRAMEWORK, GK_COUNT };
enum group_figure { XF_HELD, XF_BUSY, XF_IDLE, XF_UNKNOWN, XF_CPU, XF_RSS, XF_PROCESSES, XF_COUNT };
#define XF_GPU_HELD (1u << XF_HELD | 1u << XF_BUSY | 1u << XF_IDLE | 1u << XF_UNKNOWN)
#define XF_USAGE    (XF_GPU_HELD | 1u << XF_CPU | 1u << XF_RSS)
static const struct group_kind_def {
	const char *prefix, *key_label;
	const char *noun; /* whom the series are per, in their help */
	bool all;         /* every group shown: no top N, no "other" */
	bool labelled; /* its series carry label (a container's pod_uid too), which restart them */
	unsigned figures; /* 1 << enum group_figure */
} group_kinds[GK_COUNT] = {
	[GK_MIG] = { "croft_mig", "mig", "MIG instance", true, false,
		XF_GPU_HELD | 1u << XF_PROCESSES },
	[GK_CONTAINER] = { "croft_container", "container_id",
		"container (the top N by GPU-held time; host processes without container_id; the "
		"rest as other)",
		false, true, XF_USAGE },
	[GK_POD] = { "croft_pod", "pod_uid", "pod (the top N by GPU-held time; the rest as other)",
		false, true, XF_USAGE },
	[GK_USER] = { "croft_user", "uid",
		"user (process.uid; the top N by GPU-held time, the rest as other)", false, false,
		XF_USAGE },
	[GK_FRAMEWORK] = { "croft_framework", "framework", "framework", true, false,
		1u << XF_CPU | 1u << XF_PROCESSES },
};

struct tf_gpu {
	bool seen; /* held once: its series stay */
	uint64_t processes;
	struct tf_sums sums;
	bool age_known;
	uint64_t age_ms; /* the least since_last_gpu_ioctl_ms of its holders */
};

struct textfile {
	uint64_t gen;
	struct tf_table tables[GK_COUNT];
	struct tf_gpu gpus[GPU_SLOTS];
	uint64_t states[WL_COUNT];
};

/* The group of key, made when new; NULL when the table is full. */
static struct tf_group *group_get(struct tf_table *tab, const char *key)
{
	uint64_t hash = fnv1a(FNV1A_BASIS, key, strlen(key));
	struct tf_group *g;

	for (struct hash_link *l = hash_match(*HASH_BUCKET(tab->buckets, hash), hash); l;
		l = hash_match(l->next, hash))
		if (!strcmp((g = hash_entry(l, struct tf_group, hash))->key, key))
			return g;
	if (tab->count >= TEXTFILE_GROUPS_MAX || !(g = calloc(1, sizeof(*g))))
		return NULL;
	snprintf(g->key, sizeof(g->key), "%s", key);
	hash_add(HASH_BUCKET(tab->buckets, hash), &g->hash, hash);
	tab->all[tab->count++] = g;
	return g;
}

static void group_remove(struct tf_table *tab, size_t index)
{
	struct tf_group *g = tab->all[index];

	hash_del(HASH_BUCKET(tab->buckets, g->hash.hash), &g->hash);
	tab->all[index] = tab->all[--tab->count];
	free(g);
}

static void table_clear(struct tf_table *tab)
{
	while (tab->count)
		group_remove(tab, tab->count - 1);
}

int textfile_new(struct textfile **ret_tf)
{
	struct textfile *tf = calloc(1, sizeof(*tf));

	if (!tf)
		return -ENOMEM;
	*ret_tf = tf;
	return 0;
}

void textfile_free(struct textfile *tf)
{
	if (!tf)
		return;
	for (int k = 0; k < GK_COUNT; k++)
		table_clear(&tf->tables[k]);
	free(tf);
}

void textfile_begin(struct textfile *tf, uint64_t gen)
{
	tf->gen = gen;
	memset(tf->states, 0, sizeof(tf->states));
	for (size_t i = 0; i < GPU_SLOTS; i++) {
		tf->gpus[i].processes = 0;
		tf->gpus[i].age_known = false;
	}
	for (int k = 0; k < GK_COUNT; k++)
		tf->tables[k].other_processes = tf->tables[k].other_rss_bytes = 0;
}

static void sums_add(struct tf_sums *to, const struct tf_sums *from)
{
	to->held_ms += from->held_ms;
	for (int k = 0; k < GA_COUNT; k++)
		to->activity_ms[k] += from->activity_ms[k];
	to->cpu_us += from->cpu_us;
}

/* A label value of this poll: the first a process of the group gives. */
static void take_first(char *dst, size_t size, const char *src, size_t len, bool *taken)
{
	if (*taken || !src || !len)
		return;
	if (len >= size)
		len = size - 1;
	/* a NUL would end the value: it becomes a control byte, printed as U+FFFD as they are */
	for (size_t i = 0; i < len; i++)
		dst[i] = src[i] ? src[i] : '\x01';
	dst[len] = '\0';
	*taken = true;
}

/* What one process adds to its group this poll. */
static void group_add(struct textfile *tf, enum group_kind kind, const char *key,
	const struct textfile_row *r, const struct tf_sums *inc)
{
	struct tf_table *tab = &tf->tables[kind];
	struct tf_group *g = group_get(tab, key);

	if (!g) {
		sums_add(&tab->other, inc);
		tab->other_processes += !r->exited;
		tab->other_rss_bytes += r->exited ? 0 : r->rss_bytes;
		return;
	}
	if (g->seen_gen != tf->gen) {
		g->seen_gen = tf->gen;
		g->processes = g->rss_bytes = 0;
		g->now_label[0] = g->now_pod[0] = '\0';
		g->label_taken = g->pod_taken = false;
	}
	g->processes += !r->exited;
	g->rss_bytes += r->exited ? 0 : r->rss_bytes;
	sums_add(&g->inc, inc);
	sums_add(&g->total, inc);
	/* Host processes (key "") are no one container: their labels and pods
	 * differ from process to process, and would restart the series. */
	if (!group_kinds[kind].labelled || !key[0])
		return;
	take_first(g->now_label, sizeof(g->now_label), r->label, r->label_len, &g->label_taken);
	take_first(g->now_pod, sizeof(g->now_pod), r->pod_uid, r->pod_uid ? strlen(r->pod_uid) : 0,
		&g->pod_taken);
}

static void gpu_add(struct tf_gpu *gpu, const struct textfile_row *r, const struct tf_sums *inc)
{
	gpu->seen = true;
	gpu->processes += !r->exited;
	sums_add(&gpu->sums, inc);
	if (!r->exited && r->since_known &&
		(!gpu->age_known || r->since_last_gpu_ioctl_ms < gpu->age_ms)) {
		gpu->age_ms = r->since_last_gpu_ioctl_ms;
		gpu->age_known = true;
	}
}

/* Each GPU the process holds (its "gpus"), or "none" where its files name none. */
static void gpus_add(struct textfile *tf, const struct textfile_row *r, const struct tf_sums *inc)
{
	bool any = false;

	if (r->state == WL_NO_GPU)
		return;
	for (size_t i = 0; r->gpus && i < GPU_INDEX_MAX; i++) {
		if (!((r->gpus[i / 64] >> (i % 64)) & 1))
			continue;
		gpu_add(&tf->gpus[i], r, inc);
		any = true;
	}
	if (!any)
		gpu_add(&tf->gpus[GPU_NONE], r, inc);
}

void textfile_add(struct textfile *tf, const struct textfile_row *r)
{
	struct tf_sums inc = { 0 };
	char id[TEXTFILE_ID_CHARS + 1] = "";

	char uid[16];

	if (r->row) {
		bool held = r->state == WL_GPU_HELD;
		unsigned a = (unsigned)r->activity < GA_COUNT ? r->activity : GA_UNKNOWN;

		inc.held_ms = held ? r->span_ms : 0;
		inc.activity_ms[a] = inc.held_ms;
		if (r->cpu_cores > 0)
			inc.cpu_us = (uint64_t)(r->cpu_cores * (double)r->span_ms * 1000.0 + 0.5);
	}
	if ((unsigned)r->state < WL_COUNT && !r->exited)
		tf->states[r->state]++;
	gpus_add(tf, r, &inc);
	if (r->container_id)
		snprintf(id, sizeof(id), "%s", r->container_id);
	group_add(tf, GK_CONTAINER, id, r, &inc);
	if (r->pod_uid && *r->pod_uid)
		group_add(tf, GK_POD, r->pod_uid, r, &inc);
	if (r->uid_known) {
		snprintf(uid, sizeof(uid), "%" PRIu32, r->uid);
		group_add(tf, GK_USER, uid, r, &inc);
	}
	group_add(tf, GK_FRAMEWORK, r->framework ? r->framework : "", r, &inc);
	for (size_t i = 0; r->state != WL_NO_GPU && i < r->migs_count; i++)
		group_add(tf, GK_MIG, r->migs[i], r, &inc);
}

/* Ranked: the most GPU-held time first, then CPU time, then by key. */
static int rank_cmp(const void *a, const void *b)
{
	const struct tf_group *x = *(struct tf_group *const *)a, *y = *(struct tf_group *const *)b;

	if (x->total.held_ms != y->total.held_ms)
		return x->total.held_ms > y->total.held_ms ? -1 : 1;
	if (x->total.cpu_us != y->total.cpu_us)
		return x->total.cpu_us > y->total.cpu_us ? -1 : 1;
	return strcmp(x->key, y->key);
}

/*
 * The poll's increments land.  A group shown (the top ones; host
 * processes, key "", always) adds its own to its series, which counts
 * from when it was last shown; the rest go to "other".  So no series ever
 * goes back and all of them together sum to the whole.  A group whose
 * label or pod changed starts a new series (Prometheus sees new labels).
 */
static void table_settle(struct tf_table *tab, uint32_t top, bool all, uint64_t gen)
{
	uint32_t ranked = 0;

	for (size_t i = tab->count; i-- > 0;)
		if (gen - tab->all[i]->seen_gen > TEXTFILE_EXPIRE_POLLS)
			group_remove(tab, i);
	qsort(tab->all, tab->count, sizeof(tab->all[0]), rank_cmp);
	for (size_t i = 0; i < tab->count; i++) {
		struct tf_group *g = tab->all[i];
		bool seen = g->seen_gen == gen;
		bool show = all || !g->key[0] || ranked++ < top;

		if (seen && (strcmp(g->label, g->now_label) || strcmp(g->pod, g->now_pod))) {
			memcpy(g->label, g->now_label, sizeof(g->label));
			memcpy(g->pod, g->now_pod, sizeof(g->pod));
			g->series = (struct tf_sums){ 0 };
		}
		if (!show) {
			g->series = (struct tf_sums){ 0 };
			sums_add(&tab->other, &g->inc);
			tab->other_processes += seen ? g->processes : 0;
			tab->other_rss_bytes += seen ? g->rss_bytes : 0;
		} else
			sums_add(&g->series, &g->inc);
		g->shown = show;
		g->inc = (struct tf_sums){ 0 };
	}
}

void textfile_settle(struct textfile *tf, uint32_t top)
{
	for (int k = 0; k < GK_COUNT; k++)
		table_settle(&tf->tables[k], top, group_kinds[k].all, tf->gen);
}

/* ---- printing ---- */

void textfile_put_value(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = u[i] >= 0x80 ? utf8_seq(u + i, len - i) : 1;

		if (u[i] == '\\' || u[i] == '"')
			fprintf(f, "\\%c", u[i]);
		else if (u[i] == '\n')
			fputs("\\n", f);
		else if (!n || u[i] < 0x20 || u[i] == 0x7f)
			fputs("\xef\xbf\xbd", f); /* U+FFFD */
		else
			fwrite(s + i, 1, n, f);
		i += n ? n : 1;
	}
}

struct metric {
	const char *name, *type, *help;
};

static void header(FILE *f, const struct metric *m)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
}

static void seconds_ms(FILE *f, uint64_t ms)
{
	fprintf(f, " %llu.%03llu\n", (unsigned long long)(ms / 1000),
		(unsigned long long)(ms % 1000));
}

static void seconds_us(FILE *f, uint64_t us)
{
	fprintf(f, " %llu.%06llu\n", (unsigned long long)(us / 1000000),
		(unsigned long long)(us % 1000000));
}

static void count(FILE *f, uint64_t v)
{
	fprintf(f, " %llu\n", (unsigned long long)v);
}

/* ---- per GPU ---- */
enum gpu_figure { GF_PROCESSES, GF_HELD, GF_BUSY, GF_IDLE, GF_UNKNOWN, GF_AGE, GF_COUNT };
static const struct metric gpu_metrics[GF_COUNT] = {
	[GF_PROCESSES] = { "croft_gpu_processes", "gauge",
		"Processes holding the GPU open at the last poll (gpu-onset or gpu-held)." },
	[GF_HELD] = { "croft_gpu_held_seconds_total", "counter",
		"Seconds of gpu-held rows naming the GPU (each row's span), summed over "
		"processes." },
	[GF_BUSY] = { "croft_gpu_busy_held_seconds_total", "counter",
		"Seconds of gpu-held rows naming the GPU whose verdict is busy, summed over "
		"processes." },
	[GF_IDLE] = { "croft_gpu_idle_held_seconds_total", "counter",
		"Seconds of gpu-held rows naming the GPU whose verdict is idle (gpu_activity: "
		"on evidence), summed over processes." },
	[GF_UNKNOWN] = { "croft_gpu_unknown_held_seconds_total", "counter",
		"Seconds of gpu-held rows naming the GPU with no verdict either way, summed over "
		"processes." },
	[GF_AGE] = { "croft_gpu_last_ioctl_age_seconds", "gauge",
		"Seconds since the last GPU ioctl of a process holding the GPU, at the last "
		"poll." },
};

static void gpu_labels(FILE *f, const char *name, size_t slot)
{
	if (slot == GPU_NONE)
		fprintf(f, "%s{gpu=\"none\"}", name);
	else
		fprintf(f, "%s{gpu=\"%zu\"}", name, slot);
}

static void print_gpus(const struct textfile *tf, FILE *f)
{
	for (int m = 0; m < GF_COUNT; m++) {
		header(f, &gpu_metrics[m]);
		for (size_t i = 0; i < GPU_SLOTS; i++) {
			const struct tf_gpu *g = &tf->gpus[i];
			const uint64_t value[GF_COUNT] = { g->processes, g->sums.held_ms,
				g->sums.activity_ms[GA_BUSY], g->sums.activity_ms[GA_IDLE],
				g->sums.activity_ms[GA_UNKNOWN], g->age_ms };

			if (!g->seen || (m == GF_AGE && !g->age_known))
				continue;
			gpu_labels(f, gpu_metrics[m].name, i);
			if (m == GF_PROCESSES)
				count(f, value[m]);
			else
				seconds_ms(f, value[m]);
		}
	}
}

/* ---- per container, pod and framework ---- */
/* name: the series' name after their kind's prefix; help: %s whose series they are */
static const struct metric group_metrics[XF_COUNT] = {
	[XF_HELD] = { "gpu_held_seconds_total", "counter",
		"Seconds of gpu-held rows (each row's span) of its processes, summed, per %s." },
	[XF_BUSY] = { "gpu_busy_held_seconds_total", "counter",
		"Seconds of gpu-held rows whose verdict is busy of its processes, summed, per "
		"%s." },
	[XF_IDLE] = { "gpu_idle_held_seconds_total", "counter",
		"Seconds of gpu-held rows whose verdict is idle (gpu_activity: on evidence) of its "
		"processes, summed, per %s." },
	[XF_UNKNOWN] = { "gpu_unknown_held_seconds_total", "counter",
		"Seconds of gpu-held rows with no verdict either way of its processes, summed, per "
		"%s." },
	[XF_CPU] = { "cpu_seconds_total", "counter",
		"CPU seconds (cpu_cores times each row's span) of its processes, summed, per %s." },
	[XF_RSS] = { "rss_bytes", "gauge",
		"Resident bytes of its processes at the last poll, summed, per %s." },
	[XF_PROCESSES] = { "processes", "gauge", "Processes at the last poll, per %s." },
};

struct group_view {
	const char *key; /* NULL: "other" */
	const char *pod, *label;
	const struct tf_sums *sums;
	uint64_t processes, rss_bytes;
};

static void group_labels(FILE *f, enum group_kind kind, const struct group_view *v)
{
	const char *key = v->key ? v->key : "other";

	if (kind == GK_FRAMEWORK && v->key && !v->key[0])
		key = "none";
	fputc('{', f);
	if (kind == GK_MIG) { /* "<gpu>/<gi>/<ci>": its GPU too, to join the GPU's series */
		fputs("gpu=\"", f);
		textfile_put_value(f, key, strcspn(key, "/"));
		fputs("\",", f);
	}
	fprintf(f, "%s=\"", group_kinds[kind].key_label);
	textfile_put_value(f, key, strlen(key));
	if (v->pod && v->pod[0]) {
		fputs("\",pod_uid=\"", f);
		textfile_put_value(f, v->pod, strlen(v->pod));
	}
	if (v->label && v->label[0]) {
		fputs("\",label=\"", f);
		textfile_put_value(f, v->label, strlen(v->label));
	}
	fputs("\"}", f);
}

static void group_value(FILE *f, enum group_figure m, const struct group_view *v)
{
	const uint64_t value[XF_COUNT] = { v->sums->held_ms, v->sums->activity_ms[GA_BUSY],
		v->sums->activity_ms[GA_IDLE], v->sums->activity_ms[GA_UNKNOWN], v->sums->cpu_us,
		v->rss_bytes, v->processes };

	if (m <= XF_UNKNOWN)
		seconds_ms(f, value[m]);
	else if (m == XF_CPU)
		seconds_us(f, value[m]);
	else
		count(f, value[m]);
}

static void print_table(const struct textfile *tf, enum group_kind kind, FILE *f)
{
	const struct group_kind_def *def = &group_kinds[kind];
	const struct tf_table *tab = &tf->tables[kind];
	const struct group_view other = { NULL, NULL, NULL, &tab->other, tab->other_processes,
		tab->other_rss_bytes };

	for (int m = 0; m < XF_COUNT; m++) {
		char name[64], help[256];
		struct metric metric = { name, group_metrics[m].type, help };

		if (!(def->figures & 1u << m))
			continue;
		snprintf(name, sizeof(name), "%s_%s", def->prefix, group_metrics[m].name);
		snprintf(help, sizeof(help), group_metrics[m].help, def->noun);
		header(f, &metric);
		for (size_t i = 0; i < tab->count; i++) {
			const struct tf_group *g = tab->all[i];
			bool seen = g->seen_gen == tf->gen;
			struct group_view v = { g->key, kind == GK_CONTAINER ? g->pod : NULL,
				def->labelled ? g->label : NULL, &g->series,
				seen ? g->processes : 0, seen ? g->rss_bytes : 0 };

			if (!g->shown)
				continue;
			fputs(name, f);
			group_labels(f, kind, &v);
			group_value(f, (enum group_figure)m, &v);
		}
		if (def->all)
			continue; /* no "other" */
		fputs(name, f);
		group_labels(f, kind, &other);
		group_value(f, (enum group_figure)m, &other);
	}
}

/* ---- per state and croft's own ---- */
static void print_states(const struct textfile *tf, FILE *f)
{
	static const struct metric m = { "croft_workload_processes", "gauge",
		"Processes in each workload state at the last poll." };

	header(f, &m);
	for (int i = 0; i < WL_COUNT; i++) {
		enum workload_state w = workload_report_order[i];

		fprintf(f, "%s{state=\"%s\"}", m.name, workload_name(w));
		count(f, tf->states[w]);
	}
}

enum value_unit { VU_COUNT, VU_MS, VU_US };

/* One line of croft's own figures; a metric's lines follow each other. */
struct health_line {
	const struct metric *m;
	const char *labels; /* "{...}" or "" */
	enum value_unit unit;
	uint64_t value;
};

static void print_health(const struct textfile_health *h, FILE *f)
{
	static const struct metric rows = {
		"croft_rows_written_total", "counter",
		"Rows the writer acknowledged (appended and committed) since the sampler started."
	};
	static const struct metric batches = { "croft_batches_written_total", "counter",
		"Batches (one a poll) the writer acknowledged since the sampler started." };
	static const struct metric spool_bytes = { "croft_spool_bytes", "gauge",
		"Bytes of batches the writer has not acknowledged yet." };
	static const struct metric spool_batches = { "croft_spool_batches", "gauge",
		"Batches the writer has not acknowledged yet." };
	static const struct metric dropped_rows = { "croft_dropped_rows_total", "counter",
		"Rows lost since the sampler started, by reason." };
	static const struct metric dropped_batches = { "croft_dropped_batches_total", "counter",
		"Batches lost since the sampler started, by reason." };
	static const struct metric processes = { "croft_processes", "gauge",
		"Processes tracked at the last poll." };
	static const struct metric untracked = { "croft_untracked_processes", "gauge",
		"Processes over the sampler's limit at the last poll: they have no rows." };
	static const struct metric polls = { "croft_polls_total", "counter",
		"Polls since the sampler started." };
	static const struct metric last_poll = { "croft_last_poll_timestamp_seconds", "gauge",
		"When the last poll began, unix time." };
	static const struct metric duration = { "croft_poll_duration_seconds", "gauge",
		"How long the last poll took." };
	static const struct metric writer = { "croft_writer_connected", "gauge",
		"1 while croft-writer is connected and takes the batches." };
	static const struct metric probe = { "croft_probe_attached", "gauge",
		"1 while croft-probe answers: the rows have its fields." };
	static const struct metric probe_info = { "croft_probe_info", "gauge",
		"The probe's state as the sampler sees it, and why where it is not attached." };
	const struct health_line lines[] = {
		{ &rows, "", VU_COUNT, h->rows_written },
		{ &batches, "", VU_COUNT, h->batches_written },
		{ &spool_bytes, "", VU_COUNT, h->spool_bytes },
		{ &spool_batches, "", VU_COUNT, h->spool_batches },
		{ &dropped_rows, "{reason=\"spool_full\"}", VU_COUNT, h->dropped_rows_spool_full },
		{ &dropped_rows, "{reason=\"out_of_memory\"}", VU_COUNT,
			h->dropped_rows_out_of_memory },
		{ &dropped_batches, "{reason=\"spool_full\"}", VU_COUNT,
			h->dropped_batches_spool_full },
		{ &processes, "", VU_COUNT, h->processes },
		{ &untracked, "", VU_COUNT, h->untracked },
		{ &polls, "", VU_COUNT, h->polls },
		{ &last_poll, "", VU_MS, h->unix_ms },
		{ &duration, "", VU_US, h->duration_us },
		{ &writer, "", VU_COUNT, h->writer_connected },
		{ &probe, "", VU_COUNT, h->probe_attached },
	};
	const struct metric *last = NULL;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (lines[i].m != last)
			header(f, lines[i].m);
		last = lines[i].m;
		fprintf(f, "%s%s", lines[i].m->name, lines[i].labels);
		if (lines[i].unit == VU_MS)
			seconds_ms(f, lines[i].value);
		else if (lines[i].unit == VU_US)
			seconds_us(f, lines[i].value);
		else
			count(f, lines[i].value);
	}
	header(f, &probe_info);
	fprintf(f, "%s{state=\"", probe_info.name);
	textfile_put_value(f, h->probe_state, strlen(h->probe_state));
	fputs("\"} 1\n", f);
}

int textfile_print(const struct textfile *tf, const struct textfile_health *h, FILE *f)
{
	print_gpus(tf, f);
	textfile_print_nvml(h->nvml, f);
	for (int k = 0; k < GK_COUNT; k++)
		print_table(tf, (enum group_kind)k, f);
	print_states(tf, f);
	print_health(h, f);
	return ferror(f) ? -EIO : 0;
}
