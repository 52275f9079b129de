/*
 * verdict.c: busy, idle or unknown, and the evidence that says so, for a
 * GPU-state process over a poll (gpu.h).  Idle is only ever said on
 * evidence: user-mode submission and spinning syncs compute without a
 * system call, so the absence of ioctls alone proves nothing.  Pure.
 * croft-sampler, croft user.
 */
#include "gpu.h"

static struct verdict say(enum gpu_activity a, enum gpu_activity_source s)
{
	return (struct verdict){ .activity = a, .source = s };
}

static struct verdict kernel_verdict(const struct verdict_input *in)
{
	bool any_known = in->ioctls_known || in->waits_known;

	if ((in->ioctls_known && in->ioctls) ||
		(in->waits_known && (in->waits || in->blocked_threads)))
		return say(GA_BUSY, GAS_KERNEL);
	double wants = in->cpu_cores + (in->runqueue_known ? in->runqueue_s : 0);

	if (in->ioctls_known && in->waits_known && in->cpu_known && wants < VERDICT_IDLE_CPU_CORES)
		return say(GA_IDLE, GAS_KERNEL);
	return say(GA_UNKNOWN, any_known ? GAS_KERNEL : GAS_NONE);
}

struct verdict gpu_verdict(const struct verdict_input *in)
{
	if (in->nvml_process_known)
		return say(in->nvml_process_sm > 0 ? GA_BUSY : GA_IDLE, GAS_NVML_PROCESS);
	if (in->nvml_device_known)
		return say(in->nvml_device_sm > 0 ? GA_BUSY : GA_IDLE, GAS_NVML_DEVICE);
	return kernel_verdict(in);
}

/* busy outranks unknown, unknown outranks idle */
static int rank(enum gpu_activity a)
{
	return a == GA_BUSY ? 2 : a == GA_UNKNOWN ? 1 : 0;
}

struct verdict verdict_fold(struct verdict span, bool span_open, struct verdict poll)
{
	if (!span_open || rank(poll.activity) > rank(span.activity))
		return poll;
	return span;
}
