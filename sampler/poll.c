/*
 * poll.c: one poll of croft-sampler: read /proc for every process, ask the
 * probe, settle GPU states, format the rows that are due and hand them to
 * the spool as one numbered batch.  croft-sampler, croft user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "clock.h"
#include "log.h"
#include "probe_link.h"
#include "sampler.h"

static uint64_t cpu_time_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

const struct container_label *sampler_label_find(const struct sampler *s, const char *id)
{
	for (size_t i = 0; i < s->labels_count; i++)
		if (strcmp(s->labels[i].id, id) == 0)
			return &s->labels[i];
	return NULL;
}

/* Sets (or with an empty label clears) the label of a container. */
int sampler_label_set(struct sampler *s, const char *id, const char *label)
{
	struct container_label *cl = (struct container_label *)sampler_label_find(s, id);
	size_t len = strlen(label);
	char *copy;

	if (!len) {
		if (!cl)
			return 0;
		free(cl->label);
		*cl = s->labels[--s->labels_count];
		return 0;
	}
	if (!cl && s->labels_count >= CONTAINER_LABELS_MAX)
		return -ENOSPC;
	copy = strdup(label);
	if (!copy)
		return -ENOMEM;
	if (!cl) {
		struct container_label *more = realloc(s->labels,
			(s->labels_count + 1) * sizeof(*s->labels));

		if (!more) {
			free(copy);
			return -ENOMEM;
		}
		s->labels = more;
		cl = &s->labels[s->labels_count++];
		memcpy(cl->id, id, sizeof(cl->id));
		cl->label = NULL;
	}
	free(cl->label);
	cl->label = copy;
	cl->label_len = len;
	return 0;
}

static void flush_batch(struct sampler *s, uint64_t unix_ms, uint32_t *rows)
{
	int r;

	if (!*rows)
		return;
	r = spool_add(s->spool, unix_ms, *rows, s->rows.data, s->rows.len);
	if (r)
		log_warnx("poll: a batch of %u rows could not be spooled: %s", *rows, strerror(-r));
	jbuf_reset(&s->rows);
	*rows = 0;
}

static void format_rows(struct sampler *s, const struct poll_env *env, uint64_t unix_ms,
	uint64_t now_boot_ns)
{
	struct row_context ctx = { .unix_ms = unix_ms, .now_boot_ns = now_boot_ns,
		.catalog = s->catalog };
	uint32_t rows = 0;

	s->stats.rows = 0;
	jbuf_reset(&s->rows);
	for (struct proc *p = s->procs.list_head; p; p = p->list_next) {
		const struct container_label *cl = NULL;
		size_t mark = s->rows.len;

		if (!proc_row_due(p, s->cfg.idle_every))
			continue;
		if (p->cg)
			cgroup_refresh(s->cgroups, p->cg, env->gen);
		if (s->labels_count && p->cg && p->cg->container_id[0])
			cl = sampler_label_find(s, p->cg->container_id);
		ctx.label = cl ? cl->label : NULL;
		ctx.label_len = cl ? cl->label_len : 0;
		row_format(&s->rows, p, &ctx);
		if (s->rows.failed) {
			s->rows.len = mark;
			s->rows.failed = false;
			s->stats.rows_failed++;
			continue; /* the next row covers this one's span too */
		}
		proc_row_written(p, env);
		rows++;
		s->stats.rows++;
		if (s->rows.len >= BATCH_BYTES_MAX)
			flush_batch(s, unix_ms, &rows);
	}
	flush_batch(s, unix_ms, &rows);
	s->stats.rows_total += s->stats.rows;
}

static void log_probe_state(struct sampler *s)
{
	const char *state = probe_link_state(s->probe);

	if (strncmp(state, s->probe_state_logged, sizeof(s->probe_state_logged) - 1) == 0)
		return;
	log_info("probe: %s", state);
	snprintf(s->probe_state_logged, sizeof(s->probe_state_logged), "%s", state);
}

/* A driver loaded since the last poll joins the device set (one log line per change). */
static void follow_gpu_devices(struct sampler *s)
{
	char err[256], rules[512];
	bool changed;

	if (gpudev_watch_refresh(&s->gpu, &changed, err, sizeof(err)) < 0)
		log_warnx("GPU devices: keeping the set as it was: %s", err);
	if (!changed)
		return;
	gpudev_set_format(&s->gpu.set, rules, sizeof(rules));
	log_info("GPU devices: /proc/devices changed, %zu rules now: %s", s->gpu.set.rules_count,
		rules);
	proc_table_rescan_fds(&s->procs);
	s->gpu_index.next_load_gen = 0; /* which major is NVIDIA's may have changed too */
}

void sampler_poll(struct sampler *s)
{
	uint64_t t0 = clock_mono_ns(), c0 = cpu_time_us(), unix_ms = clock_real_ms();
	struct poll_env env = {
		.now = { unix_ms, clock_boot_ns() },
		.prev = s->last_poll,
		.cpu_clock = s->cpu_clock,
		.procfd = s->procfd,
		.catalog = s->catalog,
		.gpu = &s->gpu.set,
		.gpu_index = &s->gpu_index,
		.cgroups = s->cgroups,
		.gen = s->stats.polls + 1,
		.first_poll = s->stats.polls == 0,
		.idle_every = s->cfg.idle_every ? s->cfg.idle_every : 1,
		.poll_interval_ms = s->cfg.poll_interval_ms,
		.tick_ns = s->tick_ns,
		.page_size = s->page_size,
		.keep_fds = true,
		.fds_max = s->nofile,
	};
	uint64_t now_boot;
	int r;

	follow_gpu_devices(s);
	env.gpu_possible = s->gpu.registered;
	r = proc_table_scan(&s->procs, &env);
	if (r)
		log_warnx("poll: reading /proc: %s", strerror(-r));
	now_boot = clock_boot_ns();
	probe_link_poll(s->probe, &s->procs, now_boot);
	log_probe_state(s);
	proc_table_settle(&s->procs, &env, s->cfg.onset_window_ms * 1000000, now_boot);
	format_rows(s, &env, unix_ms, now_boot);
	writer_link_kick(s->writer);
	s->last_poll = env.now;
	s->stats.polls++;
	s->stats.duration_us = (clock_mono_ns() - t0) / 1000;
	s->stats.cpu_us = cpu_time_us() - c0;
}
