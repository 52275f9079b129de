/*
 * nvml_link.c: croft-sampler's side of the NVML thread: started unless
 * croft.conf says nvml = off (then no library, handle, fd or thread at
 * all), its rounds asked for at each poll and taken from its eventfd in
 * the loop, what a poll may use of them (a round too old is stale: its
 * figures are left out and the verdict falls back to the kernel's), what
 * rows leave out for want of it, and a log line when that changes.
 * croft-sampler, croft user (after the drop: the thread is sandboxed).
 */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "sampler.h"

/* A round older than this at a poll is stale: a poll's worth of rounds missed, and the deadline. */
static uint64_t stale_after_ns(const struct sampler *s)
{
	uint64_t every_ms = s->cfg.poll_interval_ms > NVML_INTERVAL_MS ? s->cfg.poll_interval_ms
								       : NVML_INTERVAL_MS;

	return (2 * every_ms + NVML_DEADLINE_MS) * 1000000ull;
}

/* What rows lack for want of NVML, or "" while it answers. */
static void nvml_problem(const struct sampler *s, char *buf, size_t size)
{
	const struct nvml_result *r = &s->nvml_last;

	if (s->cfg.nvml == CONFIG_NVML_OFF)
		snprintf(buf, size, "nvml = off in croft.conf");
	else if (!s->nvml)
		snprintf(buf, size, "the NVML thread could not be started");
	else if (nvml_hung(s->nvml, clock_mono_ns()))
		snprintf(buf, size, "an NVML call has not returned for over %u ms",
			NVML_DEADLINE_MS);
	else if (!r->taken_mono_ns)
		snprintf(buf, size, "NVML not read yet");
	else if (!r->loaded || r->problem[0])
		snprintf(buf, size, "NVML: %s", r->problem);
	else if (clock_mono_ns() - r->taken_mono_ns > stale_after_ns(s))
		snprintf(buf, size, "NVML's last round is stale");
	else
		buf[0] = '\0';
}

const struct nvml_result *sampler_nvml_fresh(struct sampler *s)
{
	char why[NVML_PROBLEM_MAX + 64];

	nvml_problem(s, why, sizeof(why));
	return why[0] ? NULL : &s->nvml_last;
}

/* Per-process utilisation NVML does not give on some GPU (MIG), said once per change. */
static void log_gpus(struct sampler *s)
{
	const struct nvml_result *r = &s->nvml_last;

	for (size_t i = 0; i < r->gpus_count && i < NVML_GPUS_MAX; i++) {
		const struct nvml_gpu *g = &r->gpus[i];
		int err = g->procs_error ? g->procs_error : g->proc_util_error;

		if (err == s->nvml_gpu_said[i])
			continue;
		s->nvml_gpu_said[i] = err;
		if (err)
			log_warnx(
				"NVML: GPU %d (NVML index %u)%s: per-process utilisation not read "
				"(%s, %d): gpu_sm_percent left out for its processes",
				g->minor, g->nvml_index, g->mig ? " in MIG mode" : "",
				nvml_error_name(err), err);
		else
			log_info("NVML: GPU %d: per-process utilisation read again", g->minor);
	}
}

static void log_change(struct sampler *s)
{
	char why[sizeof(s->nvml_said)];

	nvml_problem(s, why, sizeof(why));
	if (!strcmp(why, s->nvml_said))
		return;
	if (why[0])
		log_warnx("%s: gpu_memory_bytes, gpu_sm_percent and croft.prom's NVML figures left "
			  "out; GPU activity from the kernel's evidence",
			why);
	else
		log_info("NVML: %zu GPUs read", s->nvml_last.gpus_count);
	snprintf(s->nvml_said, sizeof(s->nvml_said), "%s", why);
}

static void nvml_ready_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sampler *s = arg;

	if (!nvml_collect(s->nvml, &s->nvml_last))
		return;
	if (s->nvml_last.samples_clamped > s->nvml_clamped_said) {
		log_warnx(
			"NVML: %llu per-process utilisation samples above 100 %% so far, taken as "
			"100",
			(unsigned long long)s->nvml_last.samples_clamped);
		s->nvml_clamped_said = s->nvml_last.samples_clamped;
	}
	log_gpus(s);
	log_change(s);
}

void sampler_nvml_start(struct sampler *s)
{
	if (s->cfg.nvml == CONFIG_NVML_OFF || s->nvml)
		return;
	memset(s->nvml_gpu_said, 0, sizeof(s->nvml_gpu_said));
	if (nvml_new(&s->nvml) < 0 ||
		!(s->nvml_event = event_new(
			  s->base, nvml_fd(s->nvml), EV_READ | EV_PERSIST, nvml_ready_cb, s)) ||
		event_add(s->nvml_event, NULL) < 0)
		log_warnx("NVML: its thread could not be started: NVML figures left out");
}

void sampler_nvml_stop(struct sampler *s)
{
	if (s->nvml_event)
		event_free(s->nvml_event);
	s->nvml_event = NULL;
	nvml_free(s->nvml);
	s->nvml = NULL;
	s->nvml_last.loaded = false;
	s->nvml_last.taken_mono_ns = 0;
	s->nvml_last.gpus_count = s->nvml_last.procs_count = 0;
}

void sampler_nvml_poll(struct sampler *s)
{
	if (s->nvml)
		nvml_kick(s->nvml);
	log_change(s); /* a hang is seen here: no round comes back to say it */
}

size_t sampler_nvml_left_out(const struct sampler *s, struct left_out *ret, size_t max)
{
	const struct nvml_result *r = &s->nvml_last;
	char why[NVML_PROBLEM_MAX + 64];
	size_t n = 0;

	nvml_problem(s, why, sizeof(why));
	if (why[0] && max >= 2) {
		ret[n].field = row_fields[RF_GPU_MEMORY_BYTES].path;
		snprintf(ret[n++].why, LEFT_OUT_WHY_MAX, "%s", why);
		ret[n].field = row_fields[RF_GPU_SM_PERCENT].path;
		snprintf(ret[n++].why, LEFT_OUT_WHY_MAX, "%s", why);
		return n;
	}
	for (size_t i = 0; i < r->gpus_count && n < max; i++)
		if (!(r->gpus[i].have & NG_PROC_UTIL)) {
			ret[n].field = row_fields[RF_GPU_SM_PERCENT].path;
			snprintf(ret[n++].why, LEFT_OUT_WHY_MAX,
				"NVML gives no per-process utilisation on GPU %d%s (%s)",
				r->gpus[i].minor, r->gpus[i].mig ? ", in MIG mode" : "",
				nvml_error_name(r->gpus[i].procs_error
							? r->gpus[i].procs_error
							: r->gpus[i].proc_util_error));
			break; /* one line for the field: the log names each GPU */
		}
	return n;
}
