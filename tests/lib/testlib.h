/*
 * testlib.h: helpers for croft's Check suites: TAP output on stdout, skips
 * that become failures under CI=true, and waiting on a condition with a
 * deadline instead of sleeping.  Test processes only.
 */
#ifndef CROFT_TESTLIB_H
#define CROFT_TESTLIB_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline bool tl_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

/* Skips the whole program: TAP "1..0 # SKIP", or a failure under CI=true. */
static inline void __attribute__((noreturn)) tl_skip_all(const char *reason)
{
	if (tl_ci()) {
		printf("Bail out! skip not allowed under CI=true: %s\n", reason);
		fflush(stdout);
		exit(1);
	}
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	exit(0);
}

static inline void tl_require_root(void)
{
	if (geteuid() != 0)
		tl_skip_all("needs root");
}

/* True when running as root; under CI=true a missing root is a failure. */
static inline bool tl_have_root(void)
{
	if (geteuid() == 0)
		return true;
	ck_assert_msg(!tl_ci(), "needs root (CI=true: a skip is a failure)");
	return false;
}

static inline long long tl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls cond every 5 ms until it holds (true) or timeout_ms passed (false). */
static inline bool tl_wait_for(bool (*cond)(void *), void *arg, int timeout_ms)
{
	long long deadline = tl_now_ms() + timeout_ms;
	struct timespec step = { 0, 5 * 1000 * 1000 };

	for (;;) {
		if (cond(arg))
			return true;
		if (tl_now_ms() >= deadline)
			return false;
		nanosleep(&step, NULL);
	}
}

/* Runs the suite forked per test with TAP on stdout; exit status for main(). */
static inline int tl_run(Suite *suite)
{
	SRunner *runner = srunner_create(suite);
	int failed;

	srunner_set_fork_status(runner, CK_FORK);
	srunner_set_tap(runner, "-");
	srunner_run_all(runner, CK_SILENT);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? 1 : 0;
}

#endif
