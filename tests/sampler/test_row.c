/*
 * test_row.c: row formatting: key order, number format, and hostile
 * strings (quotes, newlines, ESC, invalid UTF-8, 4 KiB paths) giving one
 * valid JSON line with <field>_b64 raw bytes.  Test process, any user.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>

#include "catalog.h"
#include "sampler.h"
#include "testlib.h"

static char *fmt_double(double v)
{
	static char out[64];
	struct jbuf b = { 0 };

	jbuf_double(&b, v);
	snprintf(out, sizeof(out), "%.*s", (int)b.len, b.data);
	jbuf_free(&b);
	return out;
}

START_TEST(numbers)
{
	ck_assert_str_eq(fmt_double(0.0), "0.0");
	ck_assert_str_eq(fmt_double(237.2), "237.2");
	ck_assert_str_eq(fmt_double(0.0042), "0.0042");
	ck_assert_str_eq(fmt_double(0.00004), "0.0");
	ck_assert_str_eq(fmt_double(-0.00001), "0.0");
	ck_assert_str_eq(fmt_double(1.0), "1.0");
	ck_assert_str_eq(fmt_double(2.123456), "2.1235");
	ck_assert_str_eq(fmt_double(1e12), "1000000000000.0");
}
END_TEST

static struct proc *make_proc(void)
{
	struct proc *p = calloc(1, sizeof(*p));

	p->tgid = 42;
	p->ident.comm = strdup("python");
	p->ident.comm_len = 6;
	p->ident.exe = strdup("/usr/bin/python3");
	p->ident.exe_len = strlen(p->ident.exe);
	p->ident.cwd = strdup("/work");
	p->ident.cwd_len = 5;
	p->ident.framework = SIZE_MAX;
	p->counters.cpu_cores = 1.0;
	p->counters.rss_bytes = 1234;
	p->counters.threads = 3;
	p->counters.io_rates_valid = true;
	p->counters.write_bytes_s = 20971520.0;
	p->counters.span_s = 1.9996;
	p->ident.start_boot_ns = 1230000000ull;
	return p;
}

static void free_proc(struct proc *p)
{
	free(p->ident.comm);
	free(p->ident.exe);
	free(p->ident.cwd);
	free(p);
}

/* Formats p, checks it is one line of valid JSON and returns the parsed row. */
static json_t *format_parse(const struct proc *p, const struct row_context *ctx, char **ret_text)
{
	struct jbuf b = { 0 };
	json_error_t err;
	json_t *row;

	row_format(&b, p, ctx);
	ck_assert(!b.failed);
	ck_assert_uint_gt(b.len, 0);
	ck_assert_int_eq(b.data[b.len - 1], '\n');
	ck_assert_ptr_null(memchr(b.data, '\n', b.len - 1));
	row = json_loadb(b.data, b.len, 0, &err);
	ck_assert_msg(row, "invalid JSON: %s: %.*s", err.text, (int)b.len, b.data);
	if (ret_text) {
		*ret_text = strndup(b.data, b.len);
	}
	jbuf_free(&b);
	return row;
}

/* NaN and infinities are not known figures: left out of the row, never 0.0. */
START_TEST(non_finite_left_out)
{
	struct proc *p = make_proc();
	struct row_context ctx = { .unix_ms = 1792505950473ull, .host = "h" };
	json_t *row, *usage;

	p->counters.rates_valid = true;
	p->counters.cpu_cores = NAN;
	p->counters.write_bytes_s = INFINITY;
	p->counters.read_bytes_s = -INFINITY;
	row = format_parse(p, &ctx, NULL);
	usage = json_object_get(row, "usage");
	ck_assert_ptr_nonnull(usage);
	ck_assert_ptr_null(json_object_get(usage, "cpu_cores"));
	ck_assert_ptr_null(json_object_get(usage, "write_bytes_s"));
	ck_assert_ptr_null(json_object_get(usage, "read_bytes_s"));
	ck_assert_int_eq(json_integer_value(json_object_get(usage, "rss_bytes")), 1234);
	json_decref(row);
	free_proc(p);
}
END_TEST

START_TEST(key_order)
{
	struct proc *p = make_proc();
	struct cgroup cg = { 0 };
	struct catalog *cat;
	struct row_context ctx = { .unix_ms = 1792505950473ull,
		.host = "node-a",
		.boot_unix_ms = 1792505000000ull,
		.now_boot_ns = 5000000000ull };
	char *text;
	json_t *row;

	ck_assert_int_eq(catalog_load_builtin(&cat), 0);
	ctx.catalog = cat;
	p->ident.framework = 6;
	cg.path = (char *)"/system.slice/docker-x.scope";
	cg.path_len = strlen(cg.path);
	strcpy(cg.container_id, "33813f5d");
	cg.now.have = CGF_MEMORY | CGF_CPU;
	cg.now.memory_bytes = 1511735296;
	cg.now.cpu_cores = 0.004;
	p->ident.cg = &cg;
	p->counters.probe.valid = true;
	p->counters.probe.syscalls_valid = true;
	p->counters.probe.ioctl_valid = true;
	p->counters.probe.sched_valid = true;
	p->counters.probe.net_valid = true;
	p->gpu.wl.state = WL_GPU_HELD;
	p->counters.probe.last_gpu_ioctl_boot_ns = 1000000000ull;
	p->counters.probe.net_rx_bytes_s = 237.2;
	row = format_parse(p, &ctx, &text);
	ck_assert_str_eq(text,
		"{\"unix_ms\":1792505950473,\"span_ms\":2000,\"tgid\":42,\"host\":\"node-a\","
		"\"process\":{\"start_ms\":1792505001230,\"comm\":\"python\","
		"\"exe\":\"/usr/bin/python3\",\"cgroup\":\"/system.slice/docker-x.scope\","
		"\"container_id\":\"33813f5d\",\"cwd\":\"/work\",\"framework\":\"pytorch\"},"
		"\"workload\":\"gpu-held\",\"ioctl_count\":0,\"since_last_gpu_ioctl_ms\":4000,"
		"\"usage\":{\"cpu_cores\":1.0,\"rss_bytes\":1234,\"threads\":3,"
		"\"ctx_voluntary_s\":0.0,\"ctx_involuntary_s\":0.0,\"read_bytes_s\":0.0,"
		"\"write_bytes_s\":20971520.0,\"network_rx_bytes_s\":237.2,"
		"\"network_tx_bytes_s\":0.0,\"runqueue_s\":0.0},"
		"\"cgroup_usage\":{\"cpu_cores\":0.004,\"memory_bytes\":1511735296},"
		"\"syscalls\":[]}\n");
	free(text);
	json_decref(row);
	/* a probe whose sched concern did not load: its three fields go, the rest stay */
	p->counters.probe.sched_valid = false;
	row = format_parse(p, &ctx, &text);
	ck_assert_ptr_null(json_object_get(json_object_get(row, "usage"), "ctx_voluntary_s"));
	ck_assert_ptr_null(json_object_get(json_object_get(row, "usage"), "ctx_involuntary_s"));
	ck_assert_ptr_null(json_object_get(json_object_get(row, "usage"), "runqueue_s"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(row, "usage"), "network_rx_bytes_s"));
	ck_assert_ptr_nonnull(json_object_get(row, "syscalls"));
	ck_assert_ptr_nonnull(json_object_get(row, "ioctl_count"));
	free(text);
	json_decref(row);
	/* without the probe: probe-only fields left out, never zero-filled */
	p->counters.probe =
		(struct proc_probe_rates){ .last_gpu_ioctl_boot_ns =
						   p->counters.probe.last_gpu_ioctl_boot_ns };
	p->ident.cg = NULL;
	p->ident.label = strdup("run-7");
	p->ident.label_len = 5;
	row = format_parse(p, &ctx, &text);
	ck_assert_str_eq(text,
		"{\"unix_ms\":1792505950473,\"span_ms\":2000,\"tgid\":42,\"host\":\"node-a\","
		"\"process\":{\"start_ms\":1792505001230,\"comm\":\"python\","
		"\"exe\":\"/usr/bin/python3\",\"cwd\":\"/work\",\"framework\":\"pytorch\"},"
		"\"workload\":\"gpu-held\",\"usage\":{\"cpu_cores\":1.0,\"rss_bytes\":1234,"
		"\"threads\":3,\"read_bytes_s\":0.0,\"write_bytes_s\":20971520.0},"
		"\"label\":\"run-7\"}\n");
	free(text);
	free(p->ident.label);
	p->ident.label = NULL;
	json_decref(row);
	/* gpus: after the GPU fields, sorted; [] when the files name no GPU;
	 * left out for no-gpu rows and where no fd scan has said */
	p->gpu.wl.gpus_known = true;
	gpu_mask_set(&p->gpu.wl.gpus, 7);
	gpu_mask_set(&p->gpu.wl.gpus, 0);
	gpu_mask_set(&p->gpu.wl.gpus, 255);
	row = format_parse(p, &ctx, &text);
	ck_assert_ptr_nonnull(
		strstr(text, "\"workload\":\"gpu-held\",\"gpus\":[0,7,255],\"usage\""));
	free(text);
	json_decref(row);
	memset(&p->gpu.wl.gpus, 0, sizeof(p->gpu.wl.gpus));
	row = format_parse(p, &ctx, &text);
	ck_assert_ptr_nonnull(strstr(text, "\"gpus\":[],\"usage\""));
	free(text);
	json_decref(row);
	p->gpu.wl.state = WL_NO_GPU;
	row = format_parse(p, &ctx, &text);
	ck_assert_ptr_null(strstr(text, "gpus"));
	free(text);
	json_decref(row);
	p->gpu.wl.state = WL_GPU_ONSET;
	p->gpu.wl.gpus_known = false;
	row = format_parse(p, &ctx, &text);
	ck_assert_ptr_null(strstr(text, "gpus"));
	free(text);
	json_decref(row);
	catalog_free(cat);
	free_proc(p);
}
END_TEST

START_TEST(hostile_strings)
{
	struct proc *p = make_proc();
	struct row_context ctx = { .unix_ms = 1 };
	static const char exe[] = "/tmp/a\xff\nb\"c\\d\x1b[31m";
	char *long_cwd = malloc(4097);
	json_t *row, *proc;

	free(p->ident.exe);
	p->ident.exe = malloc(sizeof(exe));
	memcpy(p->ident.exe, exe, sizeof(exe));
	p->ident.exe_len = sizeof(exe) - 1;
	free(p->ident.comm);
	p->ident.comm = strdup("a\"b\nc");
	p->ident.comm_len = 5;
	memset(long_cwd, 'x', 4096);
	long_cwd[0] = '/';
	long_cwd[4096] = '\0';
	free(p->ident.cwd);
	p->ident.cwd = long_cwd;
	p->ident.cwd_len = 4096;
	row = format_parse(p, &ctx, NULL);
	proc = json_object_get(row, "process");
	ck_assert_str_eq(json_string_value(json_object_get(proc, "comm")), "a\"b\nc");
	ck_assert_str_eq(json_string_value(json_object_get(proc, "exe")),
		"/tmp/a\xef\xbf\xbd\nb\"c\\d\x1b[31m");
	ck_assert_str_eq(
		json_string_value(json_object_get(proc, "exe_b64")), "L3RtcC9h/wpiImNcZBtbMzFt");
	ck_assert_ptr_null(json_object_get(proc, "comm_b64"));
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(proc, "cwd"))), 4096);
	json_decref(row);
	/* valid multi-byte UTF-8 passes through; overlong and surrogates do not */
	free(p->ident.comm);
	p->ident.comm = strdup("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc0\xaf \xed\xa0\x80");
	p->ident.comm_len = strlen(p->ident.comm);
	row = format_parse(p, &ctx, NULL);
	proc = json_object_get(row, "process");
	ck_assert_str_eq(json_string_value(json_object_get(proc, "comm")),
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd "
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_ptr_nonnull(json_object_get(proc, "comm_b64"));
	json_decref(row);
	free_proc(p);
}
END_TEST

/* Random bytes in every string field: always one valid JSON line, and the
 * _b64 field gives the raw bytes back exactly. */
START_TEST(random_bytes)
{
	struct proc *p = make_proc();
	struct row_context ctx = { .unix_ms = 1 };
	unsigned seed = 12345;

	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(rand_r(&seed) % 300);
		json_t *row, *proc;
		const char *b64;

		free(p->ident.exe);
		p->ident.exe = malloc(len + 1);
		for (size_t i = 0; i < len; i++)
			p->ident.exe[i] = (char)(rand_r(&seed) & 0xff);
		p->ident.exe[len] = '\0';
		p->ident.exe_len = len;
		row = format_parse(p, &ctx, NULL);
		proc = json_object_get(row, "process");
		b64 = json_string_value(json_object_get(proc, "exe_b64"));
		if (b64) {
			/* decode and compare */
			static const char tab[] =
				"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
			size_t n = 0, blen = strlen(b64);
			uint32_t acc = 0;
			int bits = 0;
			char out[400];

			for (size_t i = 0; i < blen && b64[i] != '='; i++) {
				acc = (acc << 6) | (uint32_t)(strchr(tab, b64[i]) - tab);
				bits += 6;
				if (bits >= 8) {
					bits -= 8;
					out[n++] = (char)((acc >> bits) & 0xff);
				}
			}
			ck_assert_uint_eq(n, len);
			ck_assert_int_eq(memcmp(out, p->ident.exe, len), 0);
		} else {
			ck_assert_uint_eq(json_string_length(json_object_get(proc, "exe")), len);
			ck_assert_int_eq(memcmp(json_string_value(json_object_get(proc, "exe")),
						 p->ident.exe, len),
				0);
		}
		json_decref(row);
	}
	free_proc(p);
}
END_TEST

START_TEST(idle_cadence)
{
	struct proc p = { .tgid = 4242, .counters.rates_valid = true, .cadence.idle = true };
	struct poll_env env = { .idle_every = 15 };
	int rows[4], n = 0;

	for (env.gen = 1; env.gen <= 46; env.gen++)
		if (proc_row_due(&p, &env))
			rows[n++] = (int)env.gen;
	/* the first valid poll writes, then one row every 15 polls, the first within 15 */
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(rows[0], 1);
	ck_assert_int_le(rows[1] - rows[0], 15);
	ck_assert_int_eq(rows[2] - rows[1], 15);
	ck_assert_int_eq(rows[3] - rows[2], 15);
	p.cadence.idle = false;
	ck_assert(proc_row_due(&p, &env));
	env.gen++;
	ck_assert(proc_row_due(&p, &env));
	p.ident.kthread = true;
	ck_assert(!proc_row_due(&p, &env));
}
END_TEST

/*
 * Processes that fell idle in one poll (those found at the sampler's start)
 * spread their idle rows, and the full reads that go with them, over the
 * idle cycle: consecutive tgids, and tgids with a stride (a thread per
 * process), each poll of a cycle gets about its share.
 */
static void check_spread(pid_t first_tgid, pid_t stride, uint32_t idle_every)
{
	enum { PROCS = 15000 };
	static struct proc procs[PROCS];
	struct poll_env env = { .idle_every = idle_every, .gen = 1 };
	size_t most = 0, least = SIZE_MAX, total = 0;

	for (size_t i = 0; i < PROCS; i++) {
		procs[i] = (struct proc){ .tgid = first_tgid + (pid_t)i * stride,
			.counters.rates_valid = true,
			.cadence.idle = true };
		ck_assert(proc_row_due(&procs[i], &env)); /* the first row */
	}
	for (env.gen = 2; env.gen < 2 + idle_every; env.gen++) {
		size_t due = 0;

		for (size_t i = 0; i < PROCS; i++)
			due += proc_row_due(&procs[i], &env);
		total += due;
		most = due > most ? due : most;
		least = due < least ? due : least;
	}
	/* every process once in the cycle; no poll gets more than 10% over its share */
	ck_assert_uint_eq(total, PROCS);
	ck_assert_uint_ge(least, 1);
	ck_assert_uint_le(most, PROCS / idle_every * 11 / 10);
}

START_TEST(idle_spread)
{
	check_spread(300, 1, 15);
	check_spread(1000, 2, 4);
	check_spread(77, 16, 15);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("row");
	TCase *tc = tcase_create("row");

	tcase_add_test(tc, numbers);
	tcase_add_test(tc, key_order);
	tcase_add_test(tc, non_finite_left_out);
	tcase_add_test(tc, hostile_strings);
	tcase_add_test(tc, random_bytes);
	tcase_add_test(tc, idle_cadence);
	tcase_add_test(tc, idle_spread);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
