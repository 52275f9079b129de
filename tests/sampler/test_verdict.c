/*
 * test_verdict.c: the GPU activity verdict (verdict.c) on each kind of
 * evidence: NVML's per-process figure first (0 idle, above busy), the
 * device's for an only holder, then the kernel's, idle only with every
 * kernel figure known, none seen and CPU under VERDICT_IDLE_CPU_CORES;
 * a span's verdict from its polls'.  Test process, any user.
 */
#include "testlib.h"
#include "gpu.h"

/* A quiet process as the kernel sees it: all known, nothing seen, no CPU. */
static struct verdict_input quiet(void)
{
	return (struct verdict_input){
		.ioctls_known = true, .waits_known = true, .cpu_known = true
	};
}

static void expect(const struct verdict_input *in, enum gpu_activity a, enum gpu_activity_source s)
{
	struct verdict v = gpu_verdict(in);

	ck_assert_str_eq(gpu_activity_name(v.activity), gpu_activity_name(a));
	ck_assert_str_eq(gpu_activity_source_name(v.source), gpu_activity_source_name(s));
}

START_TEST(nvml_process_first)
{
	struct verdict_input in = quiet();

	in.nvml_process_known = true;
	expect(&in, GA_IDLE, GAS_NVML_PROCESS);
	in.nvml_process_sm = 0.5;
	expect(&in, GA_BUSY, GAS_NVML_PROCESS);
	/* NVML's 0 % wins over ioctls (a monitor's queries) and a spinning core */
	in.nvml_process_sm = 0;
	in.ioctls = 40;
	in.cpu_cores = 1.0;
	expect(&in, GA_IDLE, GAS_NVML_PROCESS);
	/* and its figure over the device's */
	in.nvml_device_known = true;
	in.nvml_device_sm = 90;
	expect(&in, GA_IDLE, GAS_NVML_PROCESS);
}
END_TEST

START_TEST(nvml_device_for_an_only_holder)
{
	struct verdict_input in = quiet();

	in.nvml_device_known = true;
	in.nvml_device_sm = 90; /* a graph-replay loop: no ioctl, little CPU */
	in.cpu_cores = 0.01;
	expect(&in, GA_BUSY, GAS_NVML_DEVICE);
	in.nvml_device_sm = 0;
	in.cpu_cores = 1.0; /* the device says idle: a CPU-bound holder is idle on its GPU */
	expect(&in, GA_IDLE, GAS_NVML_DEVICE);
}
END_TEST

START_TEST(kernel_busy)
{
	struct verdict_input in = quiet();

	in.ioctls = 1;
	expect(&in, GA_BUSY, GAS_KERNEL);
	in = quiet();
	in.waits = 1;
	expect(&in, GA_BUSY, GAS_KERNEL);
	in = quiet();
	in.blocked_threads = 1; /* a blocking-sync cudaStreamSynchronize */
	expect(&in, GA_BUSY, GAS_KERNEL);
	/* ioctls are busy even without the wait evidence */
	in = (struct verdict_input){ .ioctls_known = true, .ioctls = 3 };
	expect(&in, GA_BUSY, GAS_KERNEL);
}
END_TEST

START_TEST(kernel_idle_only_on_all_evidence)
{
	struct verdict_input in = quiet();

	in.cpu_cores = VERDICT_IDLE_CPU_CORES / 2;
	expect(&in, GA_IDLE, GAS_KERNEL);
	/* a spinning sync or a launch loop: a core, no ioctl: never idle */
	in.cpu_cores = 0.95;
	expect(&in, GA_UNKNOWN, GAS_KERNEL);
	in.cpu_cores = VERDICT_IDLE_CPU_CORES; /* the threshold itself is not below it */
	expect(&in, GA_UNKNOWN, GAS_KERNEL);
	/* a spinner starved of CPU on a crowded host: it waited for its core */
	in.cpu_cores = 0.01;
	in.runqueue_known = true;
	in.runqueue_s = 0.9;
	expect(&in, GA_UNKNOWN, GAS_KERNEL);
	in.runqueue_s = 0.01;
	expect(&in, GA_IDLE, GAS_KERNEL);
	/* without the waits (a kernel that cannot count them), no idle */
	in = quiet();
	in.waits_known = false;
	expect(&in, GA_UNKNOWN, GAS_KERNEL);
	in = quiet();
	in.cpu_known = false; /* a first row: no CPU rate yet */
	expect(&in, GA_UNKNOWN, GAS_KERNEL);
	/* no probe, no NVML: nothing to go on */
	in = (struct verdict_input){ .cpu_known = true };
	expect(&in, GA_UNKNOWN, GAS_NONE);
}
END_TEST

START_TEST(span_fold)
{
	struct verdict idle = { GA_IDLE, GAS_NVML_PROCESS }, busy = { GA_BUSY, GAS_KERNEL },
		       unknown = { GA_UNKNOWN, GAS_NONE }, v;

	v = verdict_fold(busy, false, idle); /* a new span takes the poll's */
	ck_assert_int_eq(v.activity, GA_IDLE);
	v = verdict_fold(v, true, unknown);
	ck_assert_int_eq(v.activity, GA_UNKNOWN);
	v = verdict_fold(v, true, idle);
	ck_assert_int_eq(v.activity, GA_UNKNOWN);
	v = verdict_fold(v, true, busy);
	ck_assert_int_eq(v.activity, GA_BUSY);
	ck_assert_int_eq(v.source, GAS_KERNEL);
	v = verdict_fold(v, true, idle);
	ck_assert_int_eq(v.activity, GA_BUSY);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verdict");
	TCase *tc = tcase_create("verdict");

	tcase_add_test(tc, nvml_process_first);
	tcase_add_test(tc, nvml_device_for_an_only_holder);
	tcase_add_test(tc, kernel_busy);
	tcase_add_test(tc, kernel_idle_only_on_all_evidence);
	tcase_add_test(tc, span_fold);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
