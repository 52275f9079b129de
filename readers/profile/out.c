/*
 * out.c: croft profile's table, its --json (shape: croft(1) JSON
 * OUTPUT) and the --svg chart's data.  Invoking user, no privilege.
 */
#include <inttypes.h>
#include <string.h>

#include "profile.h"

/* The selector as the table says it ("tgid 1000 container 83eb") and, with
 * ret_json, as --json's object (which adds --since and --until). */
static void selector(const struct read_opts *o, char *buf, size_t size, json_t **ret_json)
{
	const struct filter *f = &o->filter;
	const struct {
		const char *key, *value;
	} texts[] = { { "container", f->container.ptr }, { "pod", f->pod.ptr },
		{ "label", f->label.ptr }, { "framework", f->framework.ptr } };
	json_t *s = json_object();
	size_t n = 0;

	buf[0] = '\0';
	if (f->has_tgid) {
		n += (size_t)snprintf(buf, size, "tgid %" PRId64 " ", f->tgid);
		json_object_set_new(s, "tgid", json_integer(f->tgid));
	}
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (!texts[i].value)
			continue;
		if (n < size)
			n += (size_t)snprintf(
				buf + n, size - n, "%s %s ", texts[i].key, texts[i].value);
		json_object_set_new(s, texts[i].key, json_string(texts[i].value));
	}
	if (n > 0 && n < size)
		buf[n - 1] = '\0';
	if (f->has_since)
		json_object_set_new(s, "since_ms", json_integer(f->since_ms));
	if (f->has_until)
		json_object_set_new(s, "until_ms", json_integer(f->until_ms));
	if (ret_json)
		*ret_json = s;
	else
		json_decref(s);
}

static void print_summary(const char *name, const struct summary *s, bool bytes)
{
	char v[4][32];
	const double x[4] = { s->mean, s->p50, s->p95, s->max };

	for (int i = 0; i < 4; i++) {
		if (bytes)
			format_bytes(x[i], v[i], sizeof(v[i]));
		else
			snprintf(v[i], sizeof(v[i]), "%.4f", x[i]);
	}
	printf("%-16s %14s %14s %14s %14s\n", name, v[0], v[1], v[2], v[3]);
}

/* "-": no row carried the figure (left out, e.g. no probe), not zero. */
static void print_rate(const char *name, const struct summary *s, bool known)
{
	char mean[32], max[32];

	if (!known) {
		printf("%-16s -\n", name);
		return;
	}
	format_bytes(s->mean, mean, sizeof(mean));
	format_bytes(s->max, max, sizeof(max));
	printf("%-16s mean %s/s, max %s/s\n", name, mean, max);
}

/* "0-3,6"; "none" when the rows said [], "-" where they carried no gpus;
 * cut at GPUS_TEXT_MAX bytes. */
#define GPUS_TEXT_MAX 256
_Static_assert(GPUS_TEXT_MAX <= CELL_TEXT_MAX, "a phase's GPUs fit its cell");
static void gpus_text(const struct phase_gpus *g, char *buf, size_t size)
{
	size_t len = 0;

	snprintf(buf, size, "%s", g->known ? "none" : "-");
	for (unsigned i = 0; i < ROW_GPUS_MAX && len < size; i++) {
		unsigned end = i;

		if (!gpu_bit(g->bits, i))
			continue;
		while (end + 1 < ROW_GPUS_MAX && gpu_bit(g->bits, end + 1))
			end++;
		len += (size_t)snprintf(buf + len, size - len, end > i ? "%s%u-%u" : "%s%u",
			len ? "," : "", i, end);
		i = end;
	}
}

static json_t *json_gpus(const struct phase_gpus *g)
{
	json_t *arr;

	if (!g->known)
		return json_null();
	arr = json_array();
	for (unsigned i = 0; i < ROW_GPUS_MAX; i++)
		if (gpu_bit(g->bits, i))
			json_array_append_new(arr, json_integer(i));
	return arr;
}

/* The GPU phases listed, the first PHASES_SHOWN (the count is exact). */
enum {
	PC_TGID,
	PC_PHASE,
	PC_START_MS,
	PC_END_MS,
	PC_START,
	PC_END,
	PC_LENGTH,
	PC_GPUS_TEXT,
	PC_GPUS,
	PC_COUNT
};
static const struct col phase_cols[PC_COUNT] = {
	{ .title = "tgid", .key = "tgid", .kind = COL_INT, .width = 10 },
	{ .title = "phase", .key = "phase", .width = 7 },
	{ .key = "start_ms", .kind = COL_INT },
	{ .key = "end_ms", .kind = COL_INT },
	{ .title = "start", .key = "start", .width = 24 },
	{ .title = "end", .key = "end", .width = 24 },
	{ .title = "length s",
		.key = "length_s",
		.kind = COL_REAL,
		.width = 12,
		.decimals = 1,
		.json_decimals = 3 },
	{ .title = "gpus", .gap = 2 },
	{ .key = "gpus", .kind = COL_JSON },
};

static void phase_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct phase *ph = &((const struct profile_result *)ctx)->phases[i];

	c[PC_TGID].value = ph->tgid;
	c[PC_PHASE].text = phase_name(ph->kind);
	c[PC_START_MS].value = ph->start_ms;
	c[PC_END_MS].value = ph->end_ms;
	format_time(ph->start_ms, c[PC_START].buf, sizeof(c[PC_START].buf));
	c[PC_START].text = c[PC_START].buf;
	format_time(ph->end_ms, c[PC_END].buf, sizeof(c[PC_END].buf));
	c[PC_END].text = c[PC_END].buf;
	c[PC_LENGTH].real = (double)(ph->end_ms - ph->start_ms) / 1000.0;
	gpus_text(&ph->gpus, c[PC_GPUS_TEXT].buf, GPUS_TEXT_MAX);
	c[PC_GPUS_TEXT].text = c[PC_GPUS_TEXT].buf;
	if (json)
		c[PC_GPUS].json = json_gpus(&ph->gpus);
}

static void phase_listing(const struct profile_result *p, struct listing *ret)
{
	*ret = (struct listing){ phase_cols, PC_COUNT, p->phases_count, PHASES_SHOWN, PHASES_SHOWN,
		NULL, false, phase_cells, p };
}

static void print_phases(const struct profile_result *p)
{
	struct listing l;
	char g[GPUS_TEXT_MAX];

	printf("\nGPU phases       %zu (onset %.1f s, busy %.1f s, idle %.1f s, unknown %.1f s)\n",
		p->phases_count, p->phase_ms[PH_ONSET] / 1000.0, p->phase_ms[PH_BUSY] / 1000.0,
		p->phase_ms[PH_IDLE] / 1000.0, p->phase_ms[PH_UNKNOWN] / 1000.0);
	if (!p->phases_count)
		return;
	phase_listing(p, &l);
	listing_table(&l);
	gpus_text(&p->gpus, g, sizeof(g));
	printf("GPUs held        %s\n", g);
	if (p->phases_count > PHASES_SHOWN)
		printf("(%zu more)\n", p->phases_count - PHASES_SHOWN);
}

/* The syscalls, the most calls first: calls and share of all the calls. */
enum { YC_NAME, YC_CALLS_TEXT, YC_CALLS, YC_SHARE_TEXT, YC_SHARE, YC_COUNT };
static const struct col syscall_cols[YC_COUNT] = {
	{ .title = "syscall", .key = "name", .width = 24, .cut = 24 },
	{ .title = "calls", .kind = COL_REAL, .width = 16 },
	{ .key = "calls", .kind = COL_COUNT },
	{ .title = "share", .kind = COL_PERCENT, .width = 8 },
	{ .key = "share", .kind = COL_REAL, .json_decimals = 4 },
};

static void syscall_cells(const void *ctx, size_t i, bool json, struct cell *c)
{
	const struct profile_result *p = ctx;
	const struct syscall_calls *sc = &p->top[i];

	c[YC_NAME].text = sc->name;
	c[YC_CALLS_TEXT].real = (double)sc->calls_x1e7 / 1e7;
	c[YC_CALLS].count = calls_rounded(sc->calls_x1e7);
	c[YC_SHARE_TEXT].real = 100 * ((double)sc->calls_x1e7 / (double)p->syscalls_x1e7);
	c[YC_SHARE].real = (double)sc->calls_x1e7 / (double)p->syscalls_x1e7;
	c[YC_SHARE].omit = p->syscalls_x1e7 == 0;
}

static void syscall_listing(const struct profile_result *p, struct listing *ret)
{
	*ret = (struct listing){ syscall_cols, YC_COUNT, p->top_count, SIZE_MAX, SIZE_MAX, NULL,
		false, syscall_cells, p };
}

static uint64_t sum_of(const uint64_t *v, int n)
{
	uint64_t sum = 0;

	for (int k = 0; k < n; k++)
		sum += v[k];
	return sum;
}

/* Where labels came from (env: any process may claim one) and how many
 * processes exited; only where rows say. */
static void print_origins(const struct row_origins *o)
{
	const uint64_t *l = o->label_rows, *e = o->exits;

	if (sum_of(l, LABEL_SOURCE_COUNT))
		printf("labelled rows    croftctl %" PRIu64 ", env %" PRIu64 ", not said %" PRIu64
		       "\n",
			l[LABEL_CROFTCTL], l[LABEL_ENV], l[LABEL_NONE]);
	if (sum_of(e, EXIT_COUNT))
		printf("exited           %" PRIu64 " (probe %" PRIu64 ", between polls %" PRIu64
		       ", vanished %" PRIu64 ")\n",
			sum_of(e, EXIT_COUNT), e[EXIT_PROBE], e[EXIT_BETWEEN_POLLS],
			e[EXIT_VANISHED]);
}

/* labelled_rows by label_source ("not_said": none), or exited by how it was seen */
static json_t *json_origins(const uint64_t *v, bool labels)
{
	json_t *o = json_object();

	for (int k = 0; k < (labels ? LABEL_SOURCE_COUNT : EXIT_COUNT); k++) {
		const char *name = labels ? label_source_name(k) : exit_kind_name(k);

		if (name || labels)
			json_object_set_new(
				o, name ? name : "not_said", json_integer((json_int_t)v[k]));
	}
	return o;
}

void profile_print_table(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep)
{
	char sel[512], a[40], b[40];
	struct listing l;

	selector(o, sel, sizeof(sel), NULL);
	printf("profile          ");
	put_text(stdout, sel, 0, 0);
	printf(": %" PRIu64 " rows, %" PRIu64 " processes, %" PRIu64 " polls\n", p->rows,
		p->processes, p->samples);
	if (p->rows == 0) {
		printf("(no rows match)\n\n");
		report_table(stdout, files, rep);
		return;
	}
	format_time(p->first_ms, a, sizeof(a));
	format_time(p->last_ms, b, sizeof(b));
	printf("time span        %s .. %s (%.1f s)\n", a, b,
		(double)(p->last_ms - p->first_ms) / 1000.0);
	print_origins(&p->origins);
	printf("\n");
	printf("%-16s %14s %14s %14s %14s\n", "per poll", "mean", "p50", "p95", "max");
	print_summary("CPU cores", &p->cpu, false);
	print_summary("RSS", &p->rss, true);
	printf("%-16s %14.1f %14s %14s %14.0f\n", "threads", p->threads_mean, "", "",
		p->threads_max);
	if (p->has_any & HAS_SM) /* NVML's, where it was read */
		print_summary("GPU SM %", &p->sm, false);
	printf("\n");
	print_rate("network rx", &p->rx, p->has_any & HAS_RX);
	print_rate("network tx", &p->tx, p->has_any & HAS_TX);
	print_rate("disk read", &p->rd, p->has_any & HAS_READ);
	print_rate("disk write", &p->wr, p->has_any & HAS_WRITE);
	print_phases(p);
	syscall_listing(p, &l);
	putchar('\n');
	listing_table(&l);
	printf("\n");
	report_table(stdout, files, rep);
}

static json_t *json_summary(const struct summary *s, int decimals, bool percentiles, bool known)
{
	json_t *o;

	if (!known)
		return json_null();
	o = json_object();

	json_object_set_new(o, "mean", json_round(s->mean, decimals));
	if (percentiles) {
		json_object_set_new(o, "p50", json_round(s->p50, decimals));
		json_object_set_new(o, "p95", json_round(s->p95, decimals));
	}
	json_object_set_new(o, "max", json_round(s->max, decimals));
	return o;
}

void profile_print_json(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep)
{
	json_t *root, *pm = json_object(), *sel_json;
	struct listing phases, syscalls;
	char sel[512];

	selector(o, sel, sizeof(sel), &sel_json);
	root = json_pack("{s:o,s:I,s:I,s:I,s:o}", "selector", sel_json, "rows", (json_int_t)p->rows,
		"processes", (json_int_t)p->processes, "polls", (json_int_t)p->samples, "time_span",
		json_time_span(p->rows, p->first_ms, p->last_ms, "duration_s",
			(double)(p->last_ms - p->first_ms) / 1000.0, 3));
	/* keys only where rows say: older datasets' output stays */
	if (sum_of(p->origins.label_rows, LABEL_SOURCE_COUNT))
		json_object_set_new(
			root, "labelled_rows", json_origins(p->origins.label_rows, true));
	if (sum_of(p->origins.exits, EXIT_COUNT))
		json_object_set_new(root, "exited", json_origins(p->origins.exits, false));
	json_object_set_new(
		root, "cpu_cores", json_summary(&p->cpu, 4, true, p->has_any & HAS_CPU));
	json_object_set_new(
		root, "rss_bytes", json_summary(&p->rss, 1, true, p->has_any & HAS_RSS));
	json_object_set_new(root, "threads",
		json_pack("{s:o,s:o}", "mean", json_round(p->threads_mean, 2), "max",
			json_round(p->threads_max, 0)));
	if (p->has_any & HAS_SM) /* a key only where NVML was read: the others' output stays */
		json_object_set_new(root, "gpu_sm_percent", json_summary(&p->sm, 2, true, true));
	json_object_set_new(root, "network",
		json_pack("{s:o,s:o}", "rx_bytes_s",
			json_summary(&p->rx, 2, false, p->has_any & HAS_RX), "tx_bytes_s",
			json_summary(&p->tx, 2, false, p->has_any & HAS_TX)));
	json_object_set_new(root, "disk",
		json_pack("{s:o,s:o}", "read_bytes_s",
			json_summary(&p->rd, 2, false, p->has_any & HAS_READ), "write_bytes_s",
			json_summary(&p->wr, 2, false, p->has_any & HAS_WRITE)));
	for (int k = 0; k < PH_KINDS; k++)
		json_object_set_new(pm, phase_name(k), json_round(p->phase_ms[k] / 1000.0, 3));
	json_object_set_new(root, "gpu_phase_seconds", pm);
	phase_listing(p, &phases);
	json_object_set_new(root, "gpu_phases", listing_json(&phases));
	json_object_set_new(root, "gpu_phases_total", json_integer((json_int_t)p->phases_count));
	json_object_set_new(root, "gpus", json_gpus(&p->gpus));
	syscall_listing(p, &syscalls);
	json_object_set_new(root, "syscalls", listing_json(&syscalls));
	json_object_set_new(root, "input", report_json(files, rep));
	json_print(root);
}

int profile_write_svg(const struct read_opts *o, const struct profile_result *p)
{
	char sel[512];
	int r;

	selector(o, sel, sizeof(sel), NULL);
	r = svg_write(o->svg_path, sel, p);
	if (r < 0)
		fprintf(stderr, "croft profile: %s: %s\n", o->svg_path, strerror(-r));
	return r;
}
