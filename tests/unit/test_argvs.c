/*
 * test_argvs.c: croft-probe's store of exec'd groups' arguments (probe/argvs.c):
 * a final takes its own group's (the same tgid and start) once, a re-exec
 * replaces them, a reused tgid does not get the old ones, pruning forgets
 * only the groups started before its bound, and bad records and a full
 * store are refused.  Test process, any user.
 */
#include <errno.h>
#include <string.h>

#include "probed.h"
#include "testlib.h"

/* An exec's record as exit.bpf.c sends it: its length on the ring buffer through ret_len. */
static struct probe_exec_argv record(
	uint32_t tgid, uint64_t start, const char *argv, uint32_t argv_len, size_t *ret_len)
{
	struct probe_exec_argv rec = { .tgid = tgid, .argv_len = argv_len, .start_boot_ns = start };

	memcpy(rec.argv, argv, argv_len);
	*ret_len = offsetof(struct probe_exec_argv, argv) + argv_len;
	return rec;
}

static int put(struct argvs *a, uint32_t tgid, uint64_t start, const char *argv, uint32_t len)
{
	size_t rec_len;
	struct probe_exec_argv rec = record(tgid, start, argv, len, &rec_len);

	return argvs_put(a, &rec, rec_len);
}

/* What a final of (tgid, start) takes: its argv_len, -1 without the flag. */
static int take(struct argvs *a, uint32_t tgid, uint64_t start, char *ret_argv)
{
	struct probe_final f = { .tgid = tgid, .start_boot_ns = start };

	argvs_take(a, &f);
	if (!(f.flags & PROBE_FINAL_ARGV_FLAG))
		return -1;
	memcpy(ret_argv, f.argv, f.argv_len);
	return (int)f.argv_len;
}

START_TEST(test_take_once)
{
	struct argvs a = { .by_tgid.limit = 16 };
	char got[PROBE_ARGV_BYTES];

	ck_assert_int_eq(put(&a, 10, 100, "a\0b\0", 4), 0);
	ck_assert_int_eq(take(&a, 10, 100, got), 4);
	ck_assert_mem_eq(got, "a\0b\0", 4);
	ck_assert_int_eq(take(&a, 10, 100, got), -1); /* taken */

	ck_assert_int_eq(put(&a, 11, 200, "old\0", 4), 0);
	ck_assert_int_eq(take(&a, 11, 999, got), -1); /* the tgid reused */

	ck_assert_int_eq(put(&a, 12, 300, "sh\0-c\0", 6), 0);
	ck_assert_int_eq(put(&a, 12, 300, "z\0", 2), 0); /* its exec'd program */
	ck_assert_int_eq(take(&a, 12, 300, got), 2);
	ck_assert_mem_eq(got, "z\0", 2);
	argvs_free(&a);
}
END_TEST

START_TEST(test_prune)
{
	struct argvs a = { .by_tgid.limit = 4096 };
	char got[PROBE_ARGV_BYTES];

	for (uint32_t t = 1; t <= 2000; t++)
		ck_assert_int_eq(put(&a, t, t * 10, "x\0", 2), 0);
	argvs_prune(&a, 10000); /* the first 999 started before it */
	ck_assert_uint_eq(a.by_tgid.count, 1001);
	ck_assert_int_eq(take(&a, 999, 9990, got), -1);
	ck_assert_int_eq(take(&a, 1000, 10000, got), 2);
	ck_assert_int_eq(take(&a, 2000, 20000, got), 2);
	argvs_free(&a);
	ck_assert_uint_eq(a.by_tgid.count, 0);
}
END_TEST

START_TEST(test_refused)
{
	struct argvs a = { .by_tgid.limit = 2 };
	struct probe_exec_argv rec;
	size_t len;
	char got[PROBE_ARGV_BYTES];

	rec = record(20, 1, "ab\0", 3, &len);
	ck_assert_int_eq(argvs_put(&a, &rec, offsetof(struct probe_exec_argv, argv) - 1), -EBADMSG);
	ck_assert_int_eq(argvs_put(&a, &rec, len + 1), -EBADMSG); /* argv_len says otherwise */
	ck_assert_int_eq(argvs_put(&a, &rec, len), 0);
	ck_assert_int_eq(put(&a, 21, 1, "c\0", 2), 0);
	ck_assert_int_eq(put(&a, 22, 1, "d\0", 2), -ENOSPC); /* full */
	ck_assert_int_eq(take(&a, 22, 1, got), -1);
	ck_assert_int_eq(take(&a, 20, 1, got), 3);
	argvs_free(&a);
}
END_TEST

static Suite *argvs_suite(void)
{
	Suite *s = suite_create("argvs");
	TCase *tc = tcase_create("argvs");

	tcase_add_test(tc, test_take_once);
	tcase_add_test(tc, test_prune);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(argvs_suite());
}
