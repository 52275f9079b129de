/*
 * activity.c: the evidence of each GPU-state process at a poll, for its
 * verdict (verdict.c): what NVML's last round said of it and of its GPUs,
 * who else holds those GPUs, what the probe counted and its CPU; the
 * verdict folded over the polls its row stands for.  No I/O.
 * croft-sampler, croft user.
 */
#include <string.h>

#include "host.h"

_Static_assert(sizeof(((struct activity_env *)0)->holders) / sizeof(uint16_t) == GPU_INDEX_MAX,
	"a holder count per GPU index");

/* Whether name (len bytes) is one of the comma or blank separated names. */
static bool listed(const char *names, const char *name, size_t len)
{
	for (const char *s = names; s && *s;) {
		size_t n = strcspn(s, ", \t");

		if (n && n == len && !memcmp(s, name, len))
			return true;
		s += n;
		s += strspn(s, ", \t");
	}
	return false;
}

/* A driver daemon or monitor (gpu_system_holders, by comm or exe basename). */
static bool system_holder(const struct proc *p, const char *names)
{
	const char *exe = p->ident.exe, *slash;
	size_t len = p->ident.exe_len;

	if (p->ident.comm && listed(names, p->ident.comm, p->ident.comm_len))
		return true;
	if (!exe)
		return false;
	slash = memrchr(exe, '/', len);
	if (slash) {
		len -= (size_t)(slash + 1 - exe);
		exe = slash + 1;
	}
	return listed(names, exe, len);
}

/* The GPUs p holds as of this poll's look, else its last. */
static const struct gpu_mask *held_gpus(const struct proc *p)
{
	if (p->gpu.look.scanned)
		return p->gpu.look.holds_gpu_fd ? &p->gpu.look.gpus : NULL;
	return p->gpu.wl.state != WL_NO_GPU && p->gpu.wl.gpus_known ? &p->gpu.wl.gpus : NULL;
}

void activity_count_holders(struct activity_env *env, const struct proc_table *table)
{
	memset(env->holders, 0, sizeof(env->holders));
	for (const struct proc *p = table->list_head; p; p = p->list_next) {
		const struct gpu_mask *gpus = held_gpus(p);

		if (p->ident.kthread || !gpus || system_holder(p, env->system_holders))
			continue;
		for (int i = 0; i < GPU_INDEX_MAX; i++)
			if (gpu_mask_has(gpus, i) && env->holders[i] < UINT16_MAX)
				env->holders[i]++;
	}
}

/* NVML's figures for the process: memory summed, SM averaged over its GPUs. */
static void nvml_process(const struct proc *p, const struct nvml_result *res,
	struct verdict_input *in, struct proc_nvml *poll)
{
	size_t n = 0, sm_n = 0;
	const struct nvml_proc *e = res ? nvml_result_find(res, p->tgid, &n) : NULL;

	for (size_t i = 0; e && i < n; i++) {
		if (e[i].memory_known) {
			poll->memory_known = true;
			poll->memory_bytes += e[i].memory_bytes;
		}
		if (e[i].sm_known) {
			poll->sm_percent += e[i].sm_percent;
			sm_n++;
		}
	}
	poll->sm_known = sm_n > 0;
	if (sm_n)
		poll->sm_percent /= (double)sm_n;
	in->nvml_process_known = poll->sm_known;
	in->nvml_process_sm = poll->sm_percent;
}

/* The busiest of its GPUs, where it is each one's only holder and NVML reads it whole. */
static void nvml_device(
	const struct proc *p, const struct activity_env *env, struct verdict_input *in)
{
	const struct gpu_mask *gpus = held_gpus(p);
	bool any = false;

	if (!env->nvml || !gpus)
		return;
	for (int i = 0; i < GPU_INDEX_MAX; i++) {
		const struct nvml_gpu *g;

		if (!gpu_mask_has(gpus, i))
			continue;
		g = nvml_result_gpu(env->nvml, i);
		/* MIG: the device's figure is every instance's together */
		if (env->holders[i] != 1 || !g || !(g->have & NG_UTIL) || g->mig)
			return;
		if (!any || g->sm_percent > in->nvml_device_sm)
			in->nvml_device_sm = g->sm_percent;
		any = true;
	}
	in->nvml_device_known = any;
}

static void kernel_evidence(const struct proc *p, struct verdict_input *in)
{
	const struct proc_probe_rates *pr = &p->counters.probe;

	in->ioctls_known = pr->valid && pr->ioctl_valid;
	in->ioctls = pr->gpu_ioctls;
	in->waits_known = pr->valid && pr->gpu_evidence_valid;
	in->waits = pr->gpu_waits;
	in->blocked_threads = pr->gpu_blocked_threads;
	in->cpu_known = p->counters.rates_valid;
	in->cpu_cores = p->counters.cpu_cores;
	in->runqueue_known = pr->valid && pr->sched_valid;
	in->runqueue_s = pr->runqueue_s;
}

/* The span's NVML figures: SM as a mean weighted by each poll's length, memory the last. */
static void fold_nvml(struct proc *p, const struct proc_nvml *poll, bool open)
{
	struct proc_nvml *span = &p->gpu.nvml;
	uint64_t prev = p->cadence.prev_sample_boot_ns, now = p->cadence.sample_boot_ns;
	double dt = prev && now > prev ? (double)(now - prev) / 1e9 : 1.0;

	if (!open)
		*span = (struct proc_nvml){ 0 };
	if (poll->memory_known) {
		span->memory_known = true;
		span->memory_bytes = poll->memory_bytes;
	}
	if (poll->sm_known) {
		span->sm_percent = (span->sm_percent * span->sm_weight_s + poll->sm_percent * dt) /
				   (span->sm_weight_s + dt);
		span->sm_weight_s += dt;
		span->sm_known = true;
	}
}

void activity_settle(struct proc *p, const struct activity_env *env)
{
	struct verdict_input in = { 0 };
	struct proc_nvml poll = { 0 };
	struct verdict span = { p->gpu.activity, p->gpu.activity_source }, v;

	if (p->ident.kthread || p->gpu.wl.state == WL_NO_GPU) {
		activity_span_end(p);
		p->gpu.nvml = (struct proc_nvml){ 0 };
		return;
	}
	nvml_process(p, env->nvml, &in, &poll);
	if (!in.nvml_process_known)
		nvml_device(p, env, &in);
	kernel_evidence(p, &in);
	v = gpu_verdict(&in);
	fold_nvml(p, &poll, p->gpu.activity_open);
	span = verdict_fold(span, p->gpu.activity_open, v);
	p->gpu.activity = span.activity;
	p->gpu.activity_source = span.source;
	p->gpu.activity_open = true;
	if (v.activity == GA_BUSY) /* a GPU at work is written every poll, like a CPU */
		p->cadence.idle = false;
}

void activity_span_end(struct proc *p)
{
	p->gpu.activity_open = false;
}
