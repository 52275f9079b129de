/*
 * test_rowscan.c: the fast row scanner against jansson, the reference.  For
 * hand-picked lines and for many random mutations of real rows: whenever the
 * scanner accepts a line, jansson accepts it too and both give the same row.
 * The comparison is rowcheck.c, shared with tests/fuzz/fuzz_rowscan.c.
 * Test process, no privilege.
 */
#include "rowcheck.h"
#include "testlib.h"

#define MUTATIONS 300000

static const char *const good_rows[] = {
	"{\"unix_ms\":1792504800000,\"tgid\":1071,\"process\":{\"comm\":\"python\",\"exe\":\"/usr/"
	"local/bin/python3.12\",\"cgroup\":\"/system.slice/"
	"docker-e33e.scope\",\"container_id\":"
	"\"e33e5d9172919ec08e2be8102113b25bf6cba6e272f42b2ef003d458d6005623\",\"cwd\":\"/srv/"
	"model\",\"framework\":\"transformers\"},\"workload\":\"gpu-held\",\"ioctl_count\":12818,"
	"\"since_last_gpu_ioctl_ms\":1417,\"gpus\":[0,3,255],\"usage\":{\"cpu_cores\":0.9955,\"rss_"
	"bytes\":8084520960,"
	"\"threads\":92,\"ctx_voluntary_s\":6214.6073,\"ctx_involuntary_s\":13.0065,\"read_bytes_"
	"s\":0.0,\"write_bytes_s\":0.0,\"network_rx_bytes_s\":0.0,\"network_tx_bytes_s\":0.0,"
	"\"runqueue_s\":0.0158},\"cgroup_usage\":{\"cpu_cores\":2.8924,\"cpu_throttled_fraction\":"
	"0.0,\"memory_bytes\":5905580032,\"oom_kills\":0,\"cpu_pressure_avg10\":0.0,\"memory_"
	"pressure_avg10\":0.0,\"io_pressure_avg10\":0.0},\"syscalls\":[{\"name\":\"rt_sigaction\","
	"\"rate_per_sec\":116.5583},{\"name\":\"recvfrom\",\"rate_per_sec\":24.012}],\"label\":"
	"\"exp-7\"}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\"}",
	/* the fleet and Kubernetes fields */
	"{\"unix_ms\":1792504802000,\"span_ms\":1997,\"tgid\":1071,\"host\":\"node-a\","
	"\"process\":{\"start_ms\":1792504001234,\"comm\":\"python\",\"container_id\":\"e33e\","
	"\"pod_uid\":\"0f6f31c4-3c8e-4b61-a7f0-2b5b8e1d9a10\",\"pod_qos\":\"burstable\"},"
	"\"workload\":\"gpu-held\",\"gpus\":[1],\"gpus_allocated\":[0,1],\"mig\":[\"1/2/0\"],"
	"\"usage\":{\"cpu_cores\":0.5}}",
	"{\"unix_ms\":1792504800000,\"tgid\":1000,\"process\":{\"comm\":\"kubelet\",\"exe\":\"/usr/"
	"bin/kubelet\",\"cwd\":\"/"
	"\"},\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":0.0499,\"rss_bytes\":18804736,"
	"\"threads\":7},\"syscalls\":[]}",
	/* any order, spaces, unknown keys and values of every kind */
	" { \"workload\" : \"gpu-onset\" , \"tgid\" : 5 , \"x\" : [1, -2.5, true, false, null, "
	"{\"a\": []}], \"unix_ms\" : -0, \"usage\": {\"cpu_cores\": 12, \"zz\": \"q\"} } \r",
	"{\"unix_ms\":3,\"tgid\":4,\"workload\":\"gpu-held\",\"syscalls\":[{\"name\":\"read\"},{"
	"\"rate_per_sec\":1.5},{\"name\":\"write\",\"rate_per_sec\":-0.25,\"extra\":1}]}",
	/* the vanished row of a process no poll read: no workload, read as no-gpu */
	"{\"unix_ms\":1792504802000,\"span_ms\":0,\"tgid\":600,\"host\":\"node-a\",\"process\":{"
	"\"start_ms\":1792504801234,\"comm\":\"short\"},\"usage\":{\"cpu_cores\":0.0,\"rss_"
	"bytes\":0,\"threads\":0},\"exited\":\"vanished\"}",
};

/* Lines the scanner must decline or get exactly right. */
static const char *const odd_rows[] = {
	"",
	" ",
	"[]",
	"{}",
	"null",
	"{\"unix_ms\":1}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"busy\"}",
	"{\"unix_ms\":1.0,\"tgid\":2,\"workload\":\"no-gpu\"}",
	"{\"unix_ms\":1,\"tgid\":2,\"tgid\":3,\"workload\":\"no-gpu\"}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":1e3}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":0.00001}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"rss_bytes\":1.5}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"rss_bytes\":"
	"123456789012345678901}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":123456789012345678901}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":1e999}",
	"{\"unix_ms\":01,\"tgid\":2,\"workload\":\"no-gpu\"}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":{\"comm\":\"a\\\"b\","
	"\"exe\":\"/tmp/a\\ufffd\",\"exe_b64\":\"L3RtcC9h/w==\"}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":{\"comm\":\"caf\xc3\xa9\"}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":{\"comm\":\"bad\xff\"}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":{\"comm\":\"nul\\u0000\"}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":{\"comm\":\"tab\there\"}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\"} x",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"process\":[]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"label\":7}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":99999999999."
	"9999}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":-}}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"usage\":{\"cpu_cores\":1.}}",
	/* numbers the scanner only skips: syntax checked, value not needed */
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":-}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":1.}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":-01}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":-0.0}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":1.5e3}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":0.12345678901234567890123}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":123456789012345678}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":1234567890123456789}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":123456789012345678.25}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":[1,-2.5,0]}",
	/* gpus: integers 0..255 count, others are left out; other values jansson's */
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":[]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":[7,256,-1,64]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":[1.5,\"2\",null,3]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":[1],\"gpus\":[2]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":3}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\",\"gpus\":[ 2 , 1 ]}",
	"{\"unix_ms\":1,\"tgid\":2,\"workload\":\"no-gpu\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	"[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
};

START_TEST(test_good_rows_take_the_fast_path)
{
	char why[200];

	for (size_t i = 0; i < sizeof(good_rows) / sizeof(good_rows[0]); i++)
		ck_assert_msg(
			rowcheck_line(good_rows[i], strlen(good_rows[i]), why, sizeof(why)) == 1,
			"good row %zu: %s", i, why);
	/* spot-check the figures of the first one */
	rowcheck_line(good_rows[0], strlen(good_rows[0]), why, sizeof(why));
	ck_assert_int_eq(rowcheck_fast.cpu_x1e4, 9955);
	ck_assert_int_eq(rowcheck_fast.rss_bytes, 8084520960LL);
	ck_assert_int_eq(rowcheck_fast.syscalls_count, 2);
	ck_assert_int_eq(rowcheck_fast.syscalls[1].rate_x1e4, 240120);
	ck_assert_int_eq(rowcheck_fast.workload, WL_GPU_HELD);
	ck_assert(rowcheck_fast.has & HAS_GPUS);
	for (unsigned i = 0; i < ROW_GPUS_MAX; i++)
		ck_assert_int_eq(row_has_gpu(&rowcheck_fast, i), i == 0 || i == 3 || i == 255);
	/* gpus_allocated is kept beside gpus, by both paths */
	rowcheck_line(good_rows[2], strlen(good_rows[2]), why, sizeof(why));
	ck_assert(rowcheck_fast.has & HAS_ALLOCATED);
	ck_assert_uint_eq(rowcheck_fast.gpus_allocated[0], 3);
	ck_assert_uint_eq(rowcheck_ref.gpus_allocated[0], 3);
	ck_assert_uint_eq(rowcheck_fast.gpus[0], 2);
	/* out of range: not counted by either path */
	static const char big[] = "{\"unix_ms\":1,\"tgid\":2,\"workload\":\"gpu-held\","
				  "\"gpus\":[7,256,64]}";
	ck_assert_int_eq(rowcheck_line(big, strlen(big), why, sizeof(why)), 1);
	ck_assert(row_has_gpu(&rowcheck_ref, 7) && row_has_gpu(&rowcheck_ref, 64));
	ck_assert(!row_has_gpu(&rowcheck_ref, 256) && !row_has_gpu(&rowcheck_fast, 256));
	/* no workload: no-gpu, by both paths */
	const char *vanished = good_rows[sizeof(good_rows) / sizeof(good_rows[0]) - 1];
	rowcheck_line(vanished, strlen(vanished), why, sizeof(why));
	ck_assert_int_eq(rowcheck_fast.workload, WL_NO_GPU);
	ck_assert_int_eq(rowcheck_ref.workload, WL_NO_GPU);
}
END_TEST

START_TEST(test_odd_rows_agree_or_fall_back)
{
	char why[200];

	for (size_t i = 0; i < sizeof(odd_rows) / sizeof(odd_rows[0]); i++)
		ck_assert_msg(
			rowcheck_line(odd_rows[i], strlen(odd_rows[i]), why, sizeof(why)) >= 0,
			"odd row %zu (%s): %s", i, odd_rows[i], why);
}
END_TEST

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

START_TEST(test_mutations_agree_or_fall_back)
{
	static const char bytes[] = "\"\\{}[],: \t0123456789.eE-+atfnu\x80\xff\x01";
	char line[4096], why[200];
	unsigned taken = 0;

	for (unsigned it = 0; it < MUTATIONS; it++) {
		const char *src = good_rows[rng() % (sizeof(good_rows) / sizeof(good_rows[0]))];
		size_t len = strlen(src);
		memcpy(line, src, len);
		for (int m = 1 + (int)(rng() % 3); m > 0; m--) {
			size_t at = rng() % len;
			switch (rng() % 3) {
			case 0: /* replace */
				line[at] = bytes[rng() % (sizeof(bytes) - 1)];
				break;
			case 1: /* delete */
				memmove(line + at, line + at + 1, len - at - 1);
				len--;
				break;
			default: /* insert */
				if (len + 1 >= sizeof(line))
					break;
				memmove(line + at + 1, line + at, len - at);
				line[at] = bytes[rng() % (sizeof(bytes) - 1)];
				len++;
			}
		}
		int r = rowcheck_line(line, len, why, sizeof(why));
		ck_assert_msg(r >= 0, "mutation %u: %s: %.*s", it, why, (int)len, line);
		taken += r == 1;
	}
	/* The mutations that keep a valid row must mostly stay on the fast path. */
	ck_assert_uint_gt(taken, MUTATIONS / 20);
}
END_TEST

static Suite *rowscan_suite(void)
{
	Suite *s = suite_create("rowscan");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_good_rows_take_the_fast_path);
	tcase_add_test(tc, test_odd_rows_agree_or_fall_back);
	tcase_add_test(tc, test_mutations_agree_or_fall_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(rowscan_suite());
}
