/*
 * test_nvml.c: croft's NVML module (nvml.c, nvml_thread.c) against the
 * stand-in libnvidia-ml.so.1 (nvml_standin.c, found through
 * LD_LIBRARY_PATH as meson sets it) and its scenarios: the per-GPU
 * figures, the process list in each struct layout and past its first
 * buffer, per-process utilisation (NOT_FOUND: 0 %, smUtil 150 taken as
 * 100, samples not newer than the last round left out, MIG's
 * NOT_SUPPORTED left out), a driver that will not start, an old library
 * without the versioned symbols (argument "old"), and the thread: a
 * round handed back through its eventfd, a call that hangs seen as hung
 * and the rounds going on once it returns.  Test process, any user.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "gpu.h"
#include "testlib.h"

static bool old_library; /* the STANDIN_OLD build is on LD_LIBRARY_PATH */
static char scenario_path[] = "/tmp/croft-nvml-scenario-XXXXXX";

static void scenario(const char *text)
{
	char tmp[sizeof(scenario_path) + 4];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", scenario_path);
	f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(rename(tmp, scenario_path), 0); /* the stand-in reads a whole file */
	setenv("NVML_STANDIN_SCENARIO", scenario_path, 1);
}

static struct nvml_lib *open_lib(void)
{
	char problem[NVML_PROBLEM_MAX];
	struct nvml_lib *lib = nvml_lib_open(problem, sizeof(problem));

	if (!lib)
		ck_abort_msg("nvml_lib_open: %s", problem);
	return lib;
}

static const struct nvml_proc *one(const struct nvml_result *r, pid_t pid)
{
	size_t n;
	const struct nvml_proc *p = nvml_result_find(r, pid, &n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(n, 1);
	return p;
}

START_TEST(gpu_figures)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;
	const struct nvml_gpu *g;

	scenario("gpu 0 minor=3 sm=95 mem=40 used=1073741824 power=251000 energy=987654321\n"
		 "gpu 1 minor=5 sm=0 mem=0 used=0 power=70000 energy=5\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert(r.loaded);
	ck_assert_uint_eq(r.gpus_count, 2);
	g = nvml_result_gpu(&r, 3);
	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(g->sm_percent, 95);
	ck_assert_uint_eq(g->memory_percent, 40);
	ck_assert_uint_eq(g->memory_used_bytes, 1073741824);
	ck_assert_uint_eq(g->power_mw, 251000);
	ck_assert(g->have & NG_POWER);
	if (old_library) { /* no nvmlDeviceGetTotalEnergyConsumption: that figure alone is out */
		ck_assert(!(g->have & NG_ENERGY));
	} else {
		ck_assert(g->have & NG_ENERGY);
		ck_assert_uint_eq(g->energy_mj, 987654321);
	}
	ck_assert_int_eq(nvml_result_gpu(&r, 5)->nvml_index, 1);
	ck_assert_ptr_null(nvml_result_gpu(&r, 4));
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

/* One layout: its entries read right, whatever their stride. */
static void layout(const char *name, uint32_t want)
{
	char text[512];
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;
	const struct nvml_proc *a, *b;

	snprintf(text, sizeof(text),
		"layout %s\ngpu 0 minor=2 sm=50\nproc 0 pid=111 mem=1000 sm=40\n"
		"proc 0 pid=222 mem=na sm=none\nproc 0 pid=333 mem=3000 sm=none\n",
		name);
	scenario(text);
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert_uint_eq(r.gpus[0].process_layout, want);
	ck_assert_uint_eq(r.procs_count, 3);
	a = one(&r, 111);
	ck_assert(a->memory_known && a->sm_known);
	ck_assert_uint_eq(a->memory_bytes, 1000);
	ck_assert_double_eq(a->sm_percent, 40);
	ck_assert_int_eq(a->minor, 2);
	b = one(&r, 222);
	ck_assert(!b->memory_known);                  /* NVML_VALUE_NOT_AVAILABLE */
	ck_assert(b->sm_known && b->sm_percent == 0); /* listed, no sample: 0 % */
	ck_assert_uint_eq(one(&r, 333)->memory_bytes, 3000);
	nvml_result_free(&r);
	nvml_lib_close(lib);
}

START_TEST(layouts)
{
	layout("1", 1);
	if (old_library) /* only the unversioned call: v1 whatever the scenario says */
		return;
	layout("2", 2);
	layout("3", 3);   /* R535's 32-byte _v3 entries */
	layout("3v2", 2); /* _v3 with v2's 24-byte entries */
}
END_TEST

START_TEST(list_grows)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;

	/* 100 processes before ours: past the first buffer, INSUFFICIENT_SIZE, then all */
	scenario("gpu 0 minor=0\nfill 0 100\nproc 0 pid=5000000 mem=77 sm=12\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert_uint_eq(r.procs_count, 101);
	ck_assert_uint_eq(one(&r, 5000000)->memory_bytes, 77);
	ck_assert_double_eq(one(&r, 5000000)->sm_percent, 12);
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

START_TEST(samples)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;

	/* smUtil 150 is impossible: 100, counted; a sample not newer than the
	 * last round's (smUtil 77) is left out and counted */
	scenario("gpu 0 minor=0\nproc 0 pid=10 sm=150\nproc 0 pid=11 sm=30\nold_samples\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert_double_eq(one(&r, 10)->sm_percent, 100);
	ck_assert_double_eq(one(&r, 11)->sm_percent, 30);
	ck_assert_uint_eq(r.samples_clamped, 1);
	ck_assert_uint_ge(r.samples_old, 2);
	/* the next round: only samples newer than this one's */
	usleep(2000);
	nvml_lib_read(lib, &r);
	ck_assert_double_eq(one(&r, 11)->sm_percent, 30);
	ck_assert_uint_ge(r.gpus[0].last_seen_us, 1);
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

START_TEST(not_found_is_zero)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;

	scenario("gpu 0 minor=0\nproc 0 pid=10 mem=5 sm=60\n"
		 "error nvmlDeviceGetProcessUtilization 6\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert(r.gpus[0].have & NG_PROC_UTIL);
	ck_assert(one(&r, 10)->sm_known);
	ck_assert_double_eq(one(&r, 10)->sm_percent, 0);
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

START_TEST(mig_not_supported)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;

	scenario("gpu 0 minor=1 sm=70 mig=1\nproc 0 pid=10 mem=5 sm=60\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert(r.gpus[0].mig);
	ck_assert(!(r.gpus[0].have & (NG_PROC_UTIL | NG_UTIL)));
	ck_assert_int_eq(r.gpus[0].proc_util_error, 3);
	ck_assert_str_eq(nvml_error_name(r.gpus[0].proc_util_error), "NOT_SUPPORTED");
	ck_assert(!one(&r, 10)->sm_known);
	ck_assert(one(&r, 10)->memory_known); /* memory is still per process */
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

START_TEST(errors_leave_one_figure_out)
{
	struct nvml_result r = { 0 };
	struct nvml_lib *lib;

	scenario("gpu 0 minor=0 sm=5 power=1000\nerror nvmlDeviceGetPowerUsage 3\n"
		 "error nvmlDeviceGetComputeRunningProcesses_v3 999\n"
		 "error nvmlDeviceGetComputeRunningProcesses 999\n");
	lib = open_lib();
	nvml_lib_read(lib, &r);
	ck_assert(r.gpus[0].have & NG_UTIL);
	ck_assert(!(r.gpus[0].have & (NG_POWER | NG_PROCS | NG_PROC_UTIL)));
	ck_assert_int_eq(r.gpus[0].procs_error, 999);
	nvml_result_free(&r);
	nvml_lib_close(lib);
}
END_TEST

START_TEST(driver_refuses)
{
	char problem[NVML_PROBLEM_MAX];

	scenario("init 9\n");
	ck_assert_ptr_null(nvml_lib_open(problem, sizeof(problem)));
	ck_assert_ptr_nonnull(strstr(problem, "DRIVER_NOT_LOADED"));
}
END_TEST

/* Waits on the thread's eventfd (the loop's view) for a round; false after timeout_ms. */
static bool round_back(struct nvml *n, struct nvml_result *last, int timeout_ms)
{
	struct pollfd pfd = { .fd = nvml_fd(n), .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1 && nvml_collect(n, last);
}

START_TEST(thread_and_hang)
{
	struct nvml_result last = { 0 };
	uint64_t rounds, hangs;
	struct nvml *n;

	scenario("gpu 0 minor=0 sm=42\n");
	ck_assert_int_eq(nvml_new(&n), 0);
	nvml_kick(n);
	ck_assert(round_back(n, &last, 10000));
	ck_assert(last.loaded);
	ck_assert_uint_eq(last.gpus[0].sm_percent, 42);
	nvml_kick(n); /* within NVML_INTERVAL_MS: no round */
	ck_assert(!round_back(n, &last, 300));
	/* a call that hangs: no round back, hung once past the deadline */
	scenario("gpu 0 minor=0 sm=42\nhang nvmlDeviceGetPowerUsage\n");
	usleep(NVML_INTERVAL_MS * 1000);
	nvml_kick(n);
	ck_assert(!round_back(n, &last, NVML_DEADLINE_MS + 500));
	ck_assert(nvml_hung(n, clock_mono_ns()));
	nvml_kick(n); /* no second round while one hangs; the hang counted once */
	nvml_kick(n);
	nvml_counts(n, &rounds, &hangs);
	ck_assert_uint_eq(rounds, 1);
	ck_assert_uint_eq(hangs, 1);
	/* the call returns: its round comes back, and the next ones */
	scenario("gpu 0 minor=0 sm=7\n");
	ck_assert(round_back(n, &last, 10000));
	ck_assert(!nvml_hung(n, clock_mono_ns()));
	usleep(NVML_INTERVAL_MS * 1000);
	nvml_kick(n);
	ck_assert(round_back(n, &last, 10000));
	ck_assert_uint_eq(last.gpus[0].sm_percent, 7);
	nvml_free(n);
	nvml_result_free(&last);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("nvml");
	TCase *tc = tcase_create("nvml");
	int fd = mkstemp(scenario_path), r;

	if (fd < 0)
		return 1;
	close(fd);
	old_library = argc > 1 && !strcmp(argv[1], "old");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, gpu_figures);
	tcase_add_test(tc, layouts);
	tcase_add_test(tc, list_grows);
	tcase_add_test(tc, samples);
	tcase_add_test(tc, not_found_is_zero);
	tcase_add_test(tc, mig_not_supported);
	tcase_add_test(tc, errors_leave_one_figure_out);
	tcase_add_test(tc, driver_refuses);
	if (!old_library)
		tcase_add_test(tc, thread_and_hang);
	suite_add_tcase(s, tc);
	r = tl_run(s);
	unlink(scenario_path);
	return r;
}
