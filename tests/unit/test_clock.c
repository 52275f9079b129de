/*
 * test_clock.c: the clocks agree with the kernel's and never go backwards.
 */
#include <time.h>

#include "clock.h"
#include "testlib.h"

START_TEST(test_monotonic)
{
	uint64_t prev_ns = clock_mono_ns(), prev_ms = clock_mono_ms();

	for (int i = 0; i < 100000; i++) {
		uint64_t ns = clock_mono_ns(), ms = clock_mono_ms();

		ck_assert_uint_ge(ns, prev_ns);
		ck_assert_uint_ge(ms, prev_ms);
		prev_ns = ns;
		prev_ms = ms;
	}
	ck_assert_uint_le(clock_mono_ms(), clock_mono_ns() / 1000000 + 1);
}
END_TEST

START_TEST(test_boot_and_real)
{
	uint64_t boot = clock_boot_ns(), mono = clock_mono_ns();
	uint64_t real = clock_real_ms(), now = (uint64_t)time(NULL) * 1000;

	ck_assert_uint_ge(boot + 1000000, mono); /* boottime = monotonic + suspended time */
	ck_assert_uint_ge(real + 1000, now);
	ck_assert_uint_le(real, now + 2000);
	ck_assert_uint_gt(real, 1600000000000ull); /* 2020: a sane wall clock in ms */
}
END_TEST

static Suite *clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("clock");

	tcase_add_test(tc, test_monotonic);
	tcase_add_test(tc, test_boot_and_real);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(clock_suite());
}
