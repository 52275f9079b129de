/*
 * synth_host.h: a synthetic host's processes as croft.prom's textfile sees
 * them each poll, for tests/sampler/test_textfile.c and
 * bench/textfile-bench.c alike.  Test and benchmark processes, any user.
 */
#ifndef CROFT_SYNTH_HOST_H
#define CROFT_SYNTH_HOST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

struct synth_host {
	size_t containers;
	char (*ids)[65];  /* per container */
	char (*pods)[37]; /* containers / 2: every other container is in one */
};

/* 0, or -ENOMEM. */
static inline int synth_host_new(struct synth_host *h, size_t containers)
{
	h->containers = containers;
	h->ids = calloc(containers, sizeof(*h->ids));
	h->pods = calloc(containers / 2 + 1, sizeof(*h->pods));
	if (!h->ids || !h->pods)
		return -ENOMEM;
	for (size_t c = 0; c < containers; c++)
		snprintf(h->ids[c], sizeof(h->ids[c]), "%012x%052x", (unsigned)(c * 7919), 0);
	for (size_t k = 0; k < containers / 2 + 1; k++)
		snprintf(h->pods[k], sizeof(h->pods[k]), "%08x-0000-4000-8000-%012x", (unsigned)k,
			(unsigned)k);
	return 0;
}

static inline void synth_host_free(struct synth_host *h)
{
	free(h->ids);
	free(h->pods);
}

/*
 * Process i at poll: one in ten a host process with a CROFT_LABEL of its
 * own (the first of each ten another each poll), one in 40 holding one of
 * 8 GPUs, its container busy on the GPU as often as its index says (so the
 * ranking moves).  bits: the GPU mask's words, the row points at them.
 */
static inline struct textfile_row synth_host_process(
	const struct synth_host *h, size_t i, uint64_t poll, uint64_t bits[])
{
	size_t c = i % h->containers;
	bool gpu = i % 40 == 0;
	struct textfile_row r = { .row = (i + poll) % 15 == 0 || gpu,
		.span_ms = 2000,
		.state = gpu ? WL_GPU_HELD : WL_NO_GPU,
		.cpu_cores = (double)(i % 7) / 10,
		.rss_bytes = 4096 * (i % 100),
		.container_id = i % 10 ? h->ids[c] : NULL,
		.pod_uid = i % 10 && c % 2 ? h->pods[c / 2] : NULL,
		.framework = i % 3 ? "pytorch" : NULL,
		.uid_known = true,
		.uid = i % 10 ? 0 : 1000 + (uint32_t)(i / 10 % 60) }; /* 61 users: some in other */

	if (!r.container_id) {
		static const char *const labels[] = { "exp-a", "exp-b" };
		r.label = labels[(i / 10 + poll) % 2];
		r.label_len = strlen(r.label);
	}
	if (gpu) {
		bits[0] = 1ull << (i / 40 % 8);
		r.gpus = bits;
		/* busy as often as its index says, a verdict wanting now and then */
		r.activity = (poll + c) % (c % 5 + 2) ? GA_IDLE : GA_BUSY;
		r.activity = (poll + i) % 7 ? r.activity : GA_UNKNOWN;
		r.since_known = true;
		r.since_last_gpu_ioctl_ms = 1000 * (i % 90);
		r.span_ms = 2000 + 100 * ((poll * c) % 7);
	}
	return r;
}

#endif
