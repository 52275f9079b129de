/*
 * test_workload.c: the GPU state machine with synthetic fd scans and probe
 * counts: no-gpu, onset for onset_window after the first ioctl, held while
 * a GPU file stays open, held from the first row when found at start; the
 * GPUs of the last scan, and which changes a row must show.
 * Test process, any user.
 */
#include <errno.h>
#include "host.h"
#include "testlib.h"

#define S(x)  ((uint64_t)(x)*1000000000ull)
#define ONSET S(30)

static void step(struct workload *wl, bool scanned, bool holds, bool at_start, bool probe,
	uint64_t ioctls, uint64_t last, uint64_t now)
{
	struct workload_input in = { .fd_scanned = scanned,
		.holds_gpu_fd = holds,
		.at_sampler_start = at_start,
		.probe_valid = probe,
		.gpu_ioctls = ioctls,
		.last_gpu_ioctl_boot_ns = last,
		.prev_sample_boot_ns = now - S(2),
		.now_boot_ns = now };

	workload_update(wl, &in, ONSET);
}

START_TEST(no_gpu)
{
	struct workload wl = { 0 };

	step(&wl, true, false, true, false, 0, 0, S(100));
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	step(&wl, false, false, false, true, 0, 0, S(102));
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	ck_assert_str_eq(workload_name(wl.state), "no-gpu");
}
END_TEST

START_TEST(held_at_start)
{
	struct workload wl = { 0 };

	step(&wl, true, true, true, false, 0, 0, S(100));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
	/* the probe then sees ioctls: still held, no onset for an old process */
	step(&wl, false, false, false, true, 5, S(101), S(102));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
	ck_assert_str_eq(workload_name(wl.state), "gpu-held");
}
END_TEST

START_TEST(onset_then_held_then_closed)
{
	struct workload wl = { 0 };

	step(&wl, true, false, false, true, 0, 0, S(100));
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	step(&wl, false, false, false, true, 3, S(101), S(102));
	ck_assert_int_eq(wl.state, WL_GPU_ONSET);
	ck_assert_uint_eq(wl.first_ioctl_boot_ns, S(100)); /* bounded by the interval start */
	ck_assert_str_eq(workload_name(wl.state), "gpu-onset");
	step(&wl, false, false, false, true, 0, S(101), S(129));
	ck_assert_int_eq(wl.state, WL_GPU_ONSET);
	step(&wl, false, false, false, true, 0, S(101), S(131));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
	/* a later scan finds the files closed */
	step(&wl, true, false, false, true, 0, S(101), S(160));
	ck_assert_int_eq(wl.state, WL_NO_GPU);
}
END_TEST

START_TEST(fd_only_without_probe)
{
	struct workload wl = { 0 };

	step(&wl, true, false, false, false, 0, 0, S(100));
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	/* a late opener, found by a rescan */
	step(&wl, true, true, false, false, 0, 0, S(130));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
	/* probe answers drop out: the state holds on the fd evidence */
	step(&wl, false, false, false, false, 0, 0, S(132));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
}
END_TEST

START_TEST(old_ioctl_at_start)
{
	struct workload wl = { 0 };

	/* the probe saw its last ioctl an hour before the sampler started */
	step(&wl, true, true, false, true, 0, S(10), S(3700));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
}
END_TEST

/* A scan of the same poll as the ioctls came after them: it says what is open. */
START_TEST(scan_beats_ioctl)
{
	struct workload wl = { 0 };

	step(&wl, true, false, false, true, 0, 0, S(100));
	step(&wl, true, true, false, true, 4, S(101), S(102));
	ck_assert_int_eq(wl.state, WL_GPU_ONSET);
	ck_assert(wl.holds_gpu_fd);
	/* ioctls, then the last GPU file closed before the poll's scan */
	step(&wl, true, false, false, true, 2, S(133), S(134));
	ck_assert(!wl.holds_gpu_fd);
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	/* no scan this poll: the ioctl is the evidence */
	step(&wl, false, false, false, true, 1, S(135), S(136));
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
}
END_TEST

START_TEST(gpus_and_changes)
{
	struct workload wl = { 0 }, before;
	struct workload_input in = { .fd_scanned = true,
		.holds_gpu_fd = true,
		.at_sampler_start = true,
		.now_boot_ns = S(100) };

	gpu_mask_set(&in.gpus, 3);
	before = wl;
	workload_update(&wl, &in, ONSET);
	ck_assert_int_eq(wl.state, WL_GPU_HELD);
	ck_assert(wl.gpus_known && gpu_mask_has(&wl.gpus, 3));
	ck_assert(workload_changed(&before, &wl));
	/* the same again: nothing to say */
	before = wl;
	in.at_sampler_start = false;
	workload_update(&wl, &in, ONSET);
	ck_assert(!workload_changed(&before, &wl));
	/* another GPU opened: news even in the same state */
	gpu_mask_set(&in.gpus, 5);
	before = wl;
	workload_update(&wl, &in, ONSET);
	ck_assert(workload_changed(&before, &wl));
	/* closed: no-gpu, news; then what a no-gpu process holds is not */
	in = (struct workload_input){ .fd_scanned = true, .now_boot_ns = S(104) };
	before = wl;
	workload_update(&wl, &in, ONSET);
	ck_assert_int_eq(wl.state, WL_NO_GPU);
	ck_assert(workload_changed(&before, &wl));
	before = wl;
	wl.gpus_known = false;
	ck_assert(!workload_changed(&before, &wl));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workload");
	TCase *tc = tcase_create("workload");

	tcase_add_test(tc, no_gpu);
	tcase_add_test(tc, held_at_start);
	tcase_add_test(tc, onset_then_held_then_closed);
	tcase_add_test(tc, fd_only_without_probe);
	tcase_add_test(tc, old_ioctl_at_start);
	tcase_add_test(tc, scan_beats_ioctl);
	tcase_add_test(tc, gpus_and_changes);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
