/*
 * test_textfile.c: croft.prom's figures from synthetic processes: a known
 * idle GPU holder's seconds per GPU, container, pod and user, busy, idle
 * and unknown by the rows' verdict, a last row counted once; label values with
 * hostile bytes escaped; the series bounded (20 000 processes in 500
 * containers and 250 pods stay under 1 000 series); counters that never go
 * back and sum to the whole while the ranking changes; the file written
 * whole and 0644 under any umask, never through a planted symlink, and a
 * missing directory or a file in its place refused.  Test process, any user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "output.h"
#include "synth_host.h"
#include "testlib.h"

#define SERIES_MAX 4096

/* A printed file, its samples by series (name and labels). */
struct sample {
	char series[512];
	double value;
};
struct parsed {
	struct sample s[SERIES_MAX];
	size_t count;
};

static char *print(const struct textfile *tf)
{
	struct textfile_health h = { .probe_state = "probe not connected yet" };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(textfile_print(tf, &h, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

static int sample_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sample *)a)->series, ((const struct sample *)b)->series);
}

/* Its samples, sorted by series. */
static void parse(const char *text, struct parsed *ret)
{
	ret->count = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n'), *sp;

		ck_assert_ptr_nonnull(nl); /* every line ends */
		sp = nl;
		while (sp > line && sp[-1] != ' ')
			sp--;
		if (*line != '#') {
			struct sample *s = &ret->s[ret->count++];

			ck_assert_uint_lt(ret->count, SERIES_MAX);
			ck_assert_uint_lt((size_t)(sp - line), sizeof(s->series));
			memcpy(s->series, line, (size_t)(sp - 1 - line));
			s->series[sp - 1 - line] = '\0';
			s->value = strtod(sp, NULL);
		}
		line = nl + 1;
	}
	qsort(ret->s, ret->count, sizeof(ret->s[0]), sample_cmp);
	for (size_t i = 1; i < ret->count; i++) /* no series twice */
		ck_assert_str_ne(ret->s[i - 1].series, ret->s[i].series);
}

static const struct sample *find(const struct parsed *p, const char *series)
{
	struct sample key;

	snprintf(key.series, sizeof(key.series), "%s", series);
	return bsearch(&key, p->s, p->count, sizeof(p->s[0]), sample_cmp);
}

static double value(const struct parsed *p, const char *series)
{
	const struct sample *s = find(p, series);

	ck_assert_msg(s, "no series %s", series);
	return s->value;
}

static bool of_metric(const struct sample *s, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(s->series, name, n) && (s->series[n] == '{' || !s->series[n]);
}

static double metric_sum(const struct parsed *p, const char *name)
{
	double sum = 0;

	for (size_t i = 0; i < p->count; i++)
		sum += of_metric(&p->s[i], name) ? p->s[i].value : 0;
	return sum;
}

/*
 * What a metric's series grew by from one file to the next, as Prometheus
 * adds it up: a series new in after counts from 0, one gone counts no more.
 */
static double metric_growth(
	const struct parsed *before, const struct parsed *after, const char *name)
{
	double growth = 0;

	for (size_t i = 0; i < after->count; i++) {
		const struct sample *was;

		if (!of_metric(&after->s[i], name))
			continue;
		was = find(before, after->s[i].series);
		growth += after->s[i].value - (was ? was->value : 0);
	}
	return growth;
}

static uint64_t gpu_bits[GPU_INDEX_MAX / 64];

static struct textfile_row holder(
	const char *container, const char *pod, enum gpu_activity activity)
{
	memset(gpu_bits, 0, sizeof(gpu_bits));
	gpu_bits[0] = 1u << 3; /* GPU 3 */
	return (struct textfile_row){ .row = true,
		.span_ms = 2000,
		.state = WL_GPU_HELD,
		.gpus = gpu_bits,
		.activity = activity,
		.uid_known = true,
		.uid = 1000,
		.since_known = true,
		.since_last_gpu_ioctl_ms = 60000,
		.cpu_cores = 0.25,
		.rss_bytes = 1000,
		.container_id = container,
		.pod_uid = pod,
		.framework = "pytorch" };
}

#define CONTAINER_A "aaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define POD_A       "0f2b5e4c-1d3a-4b6e-9f70-2a1c3d4e5f60"

START_TEST(known_holder)
{
	struct textfile *tf;
	struct parsed *p = malloc(sizeof(*p));
	char *text;

	ck_assert_int_eq(textfile_new(&tf), 0);
	for (uint64_t gen = 1; gen <= 5; gen++) {
		static const char *const mig[] = { "3/1/0" };
		struct textfile_row idle = holder(CONTAINER_A, POD_A, GA_IDLE);

		idle.migs = mig;
		idle.migs_count = 1;
		textfile_begin(tf, gen);
		textfile_add(tf, &idle);
		textfile_settle(tf, 50);
	}
	text = print(tf);
	parse(text, p);
	/* five idle rows of 2 s: 10 s held, all of it idle; cpu 0.25 x 10 s */
	ck_assert_double_eq(value(p, "croft_gpu_held_seconds_total{gpu=\"3\"}"), 10.0);
	ck_assert_double_eq(value(p, "croft_gpu_idle_held_seconds_total{gpu=\"3\"}"), 10.0);
	ck_assert_double_eq(value(p, "croft_gpu_processes{gpu=\"3\"}"), 1);
	ck_assert_double_eq(
		value(p, "croft_mig_gpu_idle_held_seconds_total{gpu=\"3\",mig=\"3/1/0\"}"), 10.0);
	ck_assert_double_eq(value(p, "croft_mig_processes{gpu=\"3\",mig=\"3/1/0\"}"), 1);
	ck_assert_double_eq(value(p, "croft_gpu_last_ioctl_age_seconds{gpu=\"3\"}"), 60.0);
	ck_assert_double_eq(value(p, "croft_container_gpu_idle_held_seconds_total{container_id="
				     "\"aaaaaaaaaaaa\",pod_uid=\"" POD_A "\"}"),
		10.0);
	ck_assert_double_eq(
		value(p, "croft_pod_gpu_held_seconds_total{pod_uid=\"" POD_A "\"}"), 10.0);
	ck_assert_double_eq(value(p, "croft_pod_cpu_seconds_total{pod_uid=\"" POD_A "\"}"), 2.5);
	ck_assert_double_eq(value(p, "croft_pod_rss_bytes{pod_uid=\"" POD_A "\"}"), 1000);
	ck_assert_double_eq(value(p, "croft_framework_processes{framework=\"pytorch\"}"), 1);
	ck_assert_double_eq(value(p, "croft_workload_processes{state=\"gpu-held\"}"), 1);
	ck_assert_double_eq(value(p, "croft_workload_processes{state=\"no-gpu\"}"), 0);
	ck_assert_double_eq(value(p, "croft_probe_info{state=\"probe not connected yet\"}"), 1);
	ck_assert_double_eq(value(p, "croft_user_gpu_idle_held_seconds_total{uid=\"1000\"}"), 10.0);
	ck_assert_double_eq(value(p, "croft_user_cpu_seconds_total{uid=\"1000\"}"), 2.5);
	free(text);

	/*
	 * Idle is the verdict's alone: a busy row is busy, a row without a
	 * verdict (no ioctl: the old rule's idle) unknown; a poll without its
	 * row adds nothing; a last row (exited) adds its span once and is no
	 * process of the poll's gauges.
	 */
	{
		struct textfile_row busy = holder(CONTAINER_A, POD_A, GA_BUSY);
		struct textfile_row unknown = holder(CONTAINER_A, POD_A, GA_UNKNOWN);
		struct textfile_row skipped = holder(CONTAINER_A, POD_A, GA_IDLE);
		struct textfile_row last = holder(CONTAINER_A, POD_A, GA_IDLE);

		skipped.row = false;
		last.exited = true;
		last.uid = 1001;
		textfile_begin(tf, 6);
		textfile_add(tf, &busy);
		textfile_add(tf, &unknown);
		textfile_add(tf, &skipped);
		textfile_add(tf, &last);
		textfile_settle(tf, 50);
	}
	text = print(tf);
	parse(text, p);
	ck_assert_double_eq(value(p, "croft_gpu_held_seconds_total{gpu=\"3\"}"), 16.0);
	ck_assert_double_eq(value(p, "croft_gpu_busy_held_seconds_total{gpu=\"3\"}"), 2.0);
	ck_assert_double_eq(value(p, "croft_gpu_idle_held_seconds_total{gpu=\"3\"}"), 12.0);
	ck_assert_double_eq(value(p, "croft_gpu_unknown_held_seconds_total{gpu=\"3\"}"), 2.0);
	ck_assert_double_eq(value(p, "croft_gpu_processes{gpu=\"3\"}"), 3);
	ck_assert_double_eq(
		value(p, "croft_pod_gpu_busy_held_seconds_total{pod_uid=\"" POD_A "\"}"), 2.0);
	ck_assert_double_eq(
		value(p, "croft_pod_gpu_unknown_held_seconds_total{pod_uid=\"" POD_A "\"}"), 2.0);
	/* the last row's CPU counts once: 0.25 x 2 s; its RSS is gone */
	ck_assert_double_eq(value(p, "croft_user_cpu_seconds_total{uid=\"1001\"}"), 0.5);
	ck_assert_double_eq(value(p, "croft_user_gpu_idle_held_seconds_total{uid=\"1001\"}"), 2.0);
	ck_assert_double_eq(value(p, "croft_user_rss_bytes{uid=\"1001\"}"), 0);
	ck_assert_double_eq(value(p, "croft_pod_cpu_seconds_total{pod_uid=\"" POD_A "\"}"), 4.0);
	ck_assert_double_eq(value(p, "croft_pod_rss_bytes{pod_uid=\"" POD_A "\"}"), 3000);
	ck_assert_double_eq(value(p, "croft_workload_processes{state=\"gpu-held\"}"), 3);
	free(text);
	textfile_free(tf);
	free(p);
}
END_TEST

static char *escaped(const char *s, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	textfile_put_value(f, s, len);
	fclose(f);
	return text;
}

START_TEST(hostile_labels)
{
	static const char raw[] = "a\"b\\c\nd\xff\x01\xc3\xa9\0z";
	char *text = escaped(raw, sizeof(raw) - 1);
	struct textfile *tf;
	struct textfile_row r = holder(CONTAINER_A, NULL, GA_IDLE);
	struct parsed *p = malloc(sizeof(*p));

	/* quote, backslash, newline escaped; bad UTF-8, control bytes and NUL as U+FFFD */
	ck_assert_str_eq(text, "a\\\"b\\\\c\\nd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\xef\xbf\xbdz");
	free(text);

	r.label = raw;
	r.label_len = sizeof(raw) - 1;
	ck_assert_int_eq(textfile_new(&tf), 0);
	textfile_begin(tf, 1);
	textfile_add(tf, &r);
	textfile_settle(tf, 50);
	text = print(tf);
	parse(text, p);
	ck_assert_ptr_nonnull(find(p, "croft_container_gpu_held_seconds_total{container_id="
				      "\"aaaaaaaaaaaa\",label=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\xef"
				      "\xbf\xbd\xc3\xa9\xef\xbf\xbdz\"}"));
	free(text);
	textfile_free(tf);
	free(p);
}
END_TEST

START_TEST(bounded_and_monotonic)
{
	struct textfile *tf;
	struct parsed *before = malloc(sizeof(*before)), *after = malloc(sizeof(*after));
	size_t series = 0;

	struct synth_host host; /* 500 containers in 250 pods, 8 GPUs, 500 GPU holders */

	ck_assert_int_eq(synth_host_new(&host, 500), 0);
	ck_assert_int_eq(textfile_new(&tf), 0);
	before->count = 0;
	for (uint64_t gen = 1; gen <= 40; gen++) {
		uint64_t held_ms = 0, idle_ms = 0, cpu_us = 0;
		char *text;

		textfile_begin(tf, gen);
		for (size_t i = 0; i < 20000; i++) {
			uint64_t bits[GPU_INDEX_MAX / 64] = { 0 };
			struct textfile_row r = synth_host_process(&host, i, gen, bits);

			textfile_add(tf, &r);
			if (!r.row)
				continue;
			held_ms += r.state == WL_GPU_HELD ? r.span_ms : 0;
			idle_ms += r.state == WL_GPU_HELD && r.activity == GA_IDLE ? r.span_ms : 0;
			cpu_us += (uint64_t)(r.cpu_cores * (double)r.span_ms * 1000.0 + 0.5);
		}
		textfile_settle(tf, 50);
		text = print(tf);
		parse(text, after);
		free(text);
		series = after->count;
		ck_assert_uint_lt(series, 1000);
		/* every row counts once, in the top 50, host processes or other */
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_container_gpu_held_seconds_total"),
			(double)held_ms / 1000, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_container_gpu_idle_held_seconds_total"),
			(double)idle_ms / 1000, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_user_gpu_idle_held_seconds_total"),
			(double)idle_ms / 1000, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_container_cpu_seconds_total"),
			(double)cpu_us / 1e6, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_user_cpu_seconds_total"),
			(double)cpu_us / 1e6, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_framework_cpu_seconds_total"),
			(double)cpu_us / 1e6, 1e-6);
		ck_assert_double_eq_tol(
			metric_growth(before, after, "croft_gpu_held_seconds_total"),
			(double)held_ms / 1000, 1e-6);
		ck_assert_double_eq(metric_sum(after, "croft_workload_processes"), 20000);
		ck_assert_double_eq(metric_sum(after, "croft_gpu_processes"), 500);
		/* a counter of a series still shown never goes back */
		for (size_t i = 0; i < before->count; i++) {
			const struct sample *now = find(after, before->s[i].series);

			if (now && strstr(now->series, "_total"))
				ck_assert_msg(now->value >= before->s[i].value,
					"%s went back: %f -> %f", now->series, before->s[i].value,
					now->value);
		}
		memcpy(before, after, sizeof(*after));
	}
	printf("# %zu series for 20000 processes, 500 containers, 250 pods, 8 GPUs\n", series);
	textfile_free(tf);
	synth_host_free(&host);
	free(before);
	free(after);
}
END_TEST

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(getdelim(&text, &len, '\0', f), 0);
	fclose(f);
	return text;
}

START_TEST(written_atomically)
{
	char dir[] = "/tmp/croft-textfile-XXXXXX", path[PATH_MAX], tmp[PATH_MAX], aside[PATH_MAX];
	struct textfile_health h = { .probe_state = "connected" };
	struct textfile_dir d = { .fd = -1 };
	struct textfile *tf;
	struct stat st;
	char *text;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/" TEXTFILE_NAME, dir);
	snprintf(tmp, sizeof(tmp), "%s/" TEXTFILE_TMP_NAME, dir);
	snprintf(aside, sizeof(aside), "%s.aside", dir);
	ck_assert_int_eq(textfile_new(&tf), 0);
	/* no directory, a file in its place, none set: refused, nothing written */
	ck_assert_int_eq(textfile_dir_open(&d, "/nonexistent/croft-textfile"), -ENOENT);
	ck_assert_int_eq(textfile_dir_open(&d, "/etc/hostname"), -ENOTDIR);
	ck_assert_int_eq(textfile_dir_open(&d, ""), -ENOENT);
	ck_assert_int_eq(d.fd, -1);

	/* the unit's umask 0027 would keep node_exporter out: the file is 0644 */
	umask(027);
	ck_assert_int_eq(textfile_dir_open(&d, dir), 0);
	textfile_begin(tf, 1);
	textfile_settle(tf, 50);
	textfile_write(&d, tf, &h);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_int_eq(access(tmp, F_OK), -1); /* renamed, none left */
	text = slurp(path);
	ck_assert_ptr_nonnull(strstr(text, "croft_probe_info{state=\"connected\"} 1\n"));
	free(text);

	/* a symlink planted as the temporary file is not written through */
	ck_assert_int_eq(close(open(aside, O_CREAT | O_WRONLY, 0600)), 0);
	ck_assert_int_eq(symlink(aside, tmp), 0);
	h.probe_state = "planted";
	textfile_write(&d, tf, &h);
	ck_assert_int_eq(stat(aside, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	text = slurp(path); /* the last poll's file stays */
	ck_assert_ptr_nonnull(strstr(text, "state=\"connected\""));
	free(text);
	ck_assert_int_eq(lstat(tmp, &st), -1); /* the planted link is removed, not followed */

	/* croft.prom itself a symlink: replaced, the file it pointed to untouched */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink(aside, path), 0);
	textfile_write(&d, tf, &h);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(stat(aside, &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	textfile_dir_close(&d);
	textfile_free(tf);
	unlink(path);
	unlink(aside);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("textfile");
	TCase *tc = tcase_create("textfile");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, known_holder);
	tcase_add_test(tc, hostile_labels);
	tcase_add_test(tc, bounded_and_monotonic);
	tcase_add_test(tc, written_atomically);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
