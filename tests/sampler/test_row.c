/*
 * test_row.c: row formatting: key order, number format, and hostile
 * strings (quotes, newlines, ESC, invalid UTF-8, 4 KiB paths) giving one
 * valid JSON line with <field>_b64 raw bytes.  Test process, any user.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>

#include <sys/sysmacros.h>

#include "catalog.h"
#include "rowfields.h"
#include "output.h"
#include "testlib.h"

static void put_jbuf(void *arg, const char *s, size_t n)
{
	jbuf_put(arg, s, n);
}

static char *fmt_double(double v)
{
	static char out[64];
	struct jbuf b = { 0 };
	const struct row_sink sink = { &b, put_jbuf, NULL };

	row_put_float(&sink, v);
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
		"\"gpu_activity\":\"unknown\",\"gpu_activity_source\":\"none\","
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
		"\"workload\":\"gpu-held\",\"gpu_activity\":\"unknown\","
		"\"gpu_activity_source\":\"none\",\"usage\":{\"cpu_cores\":1.0,\"rss_bytes\":1234,"
		"\"threads\":3,\"read_bytes_s\":0.0,\"write_bytes_s\":20971520.0},"
		"\"label\":\"run-7\",\"label_source\":\"env\"}\n");
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
		strstr(text, "\"workload\":\"gpu-held\",\"gpu_activity\":\"unknown\",\"gpu_"
			     "activity_source\":\"none\",\"gpus\":[0,7,255],\"usage\""));
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

/*
 * Every field of the table in one row: the row writer driven with a process
 * whose every figure is known, through row_format, the function the poll
 * calls for each row; the struct is what proc_sample, the probe's answer,
 * the cgroup read, the fd scan, the kubelet's checkpoint and the NVIDIA
 * driver files fill in.  A field row.c forgets (default: false) fails here.
 */
START_TEST(every_field_in_a_full_row)
{
	struct proc *p = make_proc();
	struct cgroup cg = { 0 };
	struct catalog *cat;
	static struct gpu_index gi; /* NV_MIG_MAX entries: not on the stack */
	struct kubelet_device pod_gpu = { .pod_uid = "0f6c5a3e-1d2b-4c7a-9e8f-112233445566",
		.id = "GPU-8f3a" };
	struct kubelet kubelet = { .loaded = true, .devices = &pod_gpu, .devices_count = 1 };
	struct gpu_fds fds = { .kept_count = 1 };
	struct syscall_rate futex = { "futex", 282.0 };
	struct row_context ctx = { .unix_ms = 1792505950473ull,
		.host = "node-a",
		.boot_unix_ms = 1792505000000ull,
		.now_boot_ns = 5000000000ull,
		.gpu_index = &gi,
		.kubelet = &kubelet };
	bool has[RF_COUNT] = { false };
	json_t *row;

	ck_assert_int_eq(catalog_load_builtin(&cat), 0);
	ctx.catalog = cat;
	p->ident.framework = 6;
	p->ident.label = strdup("run-7");
	p->ident.label_len = 5;
	cg.path =
		(char *)"/kubepods.slice/kubepods-pod0f6c5a3e.slice/cri-containerd-33813f5d.scope";
	cg.path_len = strlen(cg.path);
	strcpy(cg.container_id, "33813f5d");
	strcpy(cg.pod.uid, pod_gpu.pod_uid);
	cg.pod.qos = POD_QOS_BURSTABLE;
	cg.now.have = CGF_CPU | CGF_THROTTLED | CGF_MEMORY | CGF_OOM | CGF_CPU_PSI | CGF_MEM_PSI |
		      CGF_IO_PSI;
	p->ident.cg = &cg;
	p->counters.probe = (struct proc_probe_rates){ .valid = true,
		.syscalls_valid = true,
		.ioctl_valid = true,
		.sched_valid = true,
		.net_valid = true,
		.gpu_ioctls = 12,
		.last_gpu_ioctl_boot_ns = 4000000000ull,
		.gpu_evidence_valid = true,
		.gpu_waits = 3,
		.gpu_mmaps = 1,
		.gpu_blocked_threads = 1,
		.syscalls_count = 1,
		.syscalls = &futex };
	p->ident.uid = 1000;
	p->ident.uid_known = true;
	p->gpu.nvml = (struct proc_nvml){ .memory_known = true,
		.sm_known = true,
		.memory_bytes = 8ull << 30,
		.sm_percent = 91.5 };
	p->gpu.activity = GA_BUSY;
	p->gpu.activity_source = GAS_NVML_PROCESS;
	p->gpu.wl.state = WL_GPU_HELD;
	p->gpu.wl.gpus_known = true;
	gpu_mask_set(&p->gpu.wl.gpus, 3);
	/* GPU 3 is the pod's (UUID → index), MIG instance 3/1/0 is capability minor 21 */
	strcpy(gi.nv.gpus[0].uuid, pod_gpu.id);
	gi.nv.gpus[0].index = 3;
	gi.nv.gpus_count = 1;
	gi.nv.mig[0] = (struct nv_mig){ .minor = 21, .gpu = 3, .gi = 1, .ci = 0 };
	gi.nv.mig_count = 1;
	gi.caps_major = 237;
	fds.rdev[0] = makedev(237, 21);
	p->gpu.fds = &fds;
	row = format_parse(p, &ctx, NULL);
	rowfields_in(row, has);
	json_decref(row);
	/* a last row: an exit code in one, a signal in another */
	p->exit = (struct proc_exit){
		.kind = EXIT_PROBE, .unix_ms = 1792505949000ull, .code_known = true, .code = 3
	};
	row = format_parse(p, &ctx, NULL);
	rowfields_in(row, has);
	json_decref(row);
	p->exit = (struct proc_exit){
		.kind = EXIT_PROBE, .unix_ms = 1792505949000ull, .signal_known = true, .signal = 9
	};
	row = format_parse(p, &ctx, NULL);
	rowfields_in(row, has);
	rowfields_require(has, false, "a sampler row with every figure");
	json_decref(row);
	free(p->ident.label);
	catalog_free(cat);
	free_proc(p);
}
END_TEST

/* What the sampler has of any process it can see: a tgid, a comm, its
 * stat; the fields in every row are there all the same. */
START_TEST(never_left_out_in_a_minimal_row)
{
	struct proc *p = calloc(1, sizeof(*p));
	struct row_context ctx = { .unix_ms = 1792505950473ull, .host = "node-a" };
	bool has[RF_COUNT] = { false };
	json_t *row;

	p->tgid = 7;
	p->ident.framework = SIZE_MAX;
	row = format_parse(p, &ctx, NULL);
	rowfields_in(row, has);
	rowfields_require(has, true, "a minimal sampler row");
	json_decref(row);
	free(p);
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
	tcase_add_test(tc, every_field_in_a_full_row);
	tcase_add_test(tc, never_left_out_in_a_minimal_row);
	tcase_add_test(tc, non_finite_left_out);
	tcase_add_test(tc, hostile_strings);
	tcase_add_test(tc, random_bytes);
	tcase_add_test(tc, idle_cadence);
	tcase_add_test(tc, idle_spread);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
