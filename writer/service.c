/*
 * service.c: croft-writer's housekeeping in the main loop: rotation on the
 * UTC boundary of rotate_interval (wall clock for the boundary and names,
 * libevent's monotonic timers for waiting) or at rotate_size, collecting
 * the compression thread's results, retention and the disk state that
 * status reports.  Writer process, croft user.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "writer.h"

#define TICK_MAX_MS 10000 /* the wall clock is looked at least this often (jumps) */

static bool pending_has(const struct writer *w, const char *name)
{
	for (size_t i = 0; i < w->pending_count; i++)
		if (!strcmp(w->pending[i].name, name))
			return true;
	return false;
}

static int pending_add(struct writer *w, const char *name)
{
	struct pending_seg *p;
	int ret;

	if (pending_has(w, name))
		return 0;
	p = realloc(w->pending, (w->pending_count + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	w->pending = p;
	memset(&p[w->pending_count], 0, sizeof(*p));
	strcpy(p[w->pending_count].name, name);
	ret = compressor_submit(w->comp, name);
	if (ret < 0) {
		p[w->pending_count].failed = true;
		log_warnx("%s: cannot queue for compression: %s", name, strerror(-ret));
	}
	w->pending_count++;
	return 0;
}

static void pending_remove(struct writer *w, const char *name)
{
	for (size_t i = 0; i < w->pending_count; i++)
		if (!strcmp(w->pending[i].name, name)) {
			w->pending[i] = w->pending[--w->pending_count];
			return;
		}
}

static void set_error(struct writer *w, const char *fmt, const char *what, int err)
{
	snprintf(w->last_error, sizeof(w->last_error), fmt, what, strerror(err));
}

static void rotate(struct writer *w, uint64_t now_ms, uint64_t boundary_ms, const char *why)
{
	char name[SEG_NAME_MAX];
	int ret = dataset_rotate(w->ds, now_ms, boundary_ms, w->cfg.rotate_interval_ms, name);

	if (ret < 0) {
		/* the live file simply grows on; the next tick or append tries again */
		log_warnx("%s: rotation (%s) failed: %s", LIVE_NAME, why, strerror(-ret));
		set_error(w, "rotation: %s: %s", LIVE_NAME, -ret);
		return;
	}
	if (boundary_ms)
		w->live_boundary_ms = seg_next_boundary_ms(now_ms, w->cfg.rotate_interval_ms);
	if (!name[0])
		return;
	log_info("%s: rotated (%s) to %s", LIVE_NAME, why, name);
	pending_add(w, name);
	service_retention(w);
}

void service_before_append(struct writer *w)
{
	uint64_t now_ms = clock_real_ms();

	if (now_ms >= w->live_boundary_ms)
		rotate(w, now_ms, seg_boundary_floor_ms(now_ms, w->cfg.rotate_interval_ms),
			"interval");
}

void service_after_append(struct writer *w)
{
	if (w->ds->live_bytes >= w->cfg.rotate_size_bytes)
		rotate(w, clock_real_ms(), 0, "size");
}

static void resubmit_failed(struct writer *w)
{
	for (size_t i = 0; i < w->pending_count; i++)
		if (w->pending[i].failed && compressor_submit(w->comp, w->pending[i].name) == 0)
			w->pending[i].failed = false;
}

static enum disk_state disk_state_of(int err)
{
	switch (err) {
	case 0:
		return DISK_OK;
	case -ENOSPC:
	case -EDQUOT:
		return DISK_FULL;
	case -EROFS:
		return DISK_READ_ONLY;
	default:
		return DISK_ERROR;
	}
}

void service_disk_result(struct writer *w, int err)
{
	enum disk_state next = disk_state_of(err);

	if (next == w->disk)
		return;
	if (next == DISK_OK) {
		log_notice("%s: writing again; pending batches land in order", LIVE_NAME);
		daemon_notify_status("writing");
		resubmit_failed(w); /* space is back: compression too */
	} else {
		log_warnx("%s: cannot append (%s): batches stay unacked, retrying every %" PRIu64
			  " ms",
			LIVE_NAME, strerror(-err), w->cfg.poll_interval_ms);
		daemon_notify_status("cannot append: %s; retrying", strerror(-err));
	}
	if (next != DISK_OK)
		set_error(w, "append: %s: %s", LIVE_NAME, -err);
	w->disk = next;
}

static void retention_delete(struct writer *w, const struct seg_info *s, uint64_t now_ms)
{
	uint64_t age_s = now_ms / 1000 > s->start_s ? now_ms / 1000 - s->start_s : 0;

	if (unlinkat(w->ds->dirfd, s->name, 0) < 0) {
		log_warn("retention: cannot delete %s", s->name);
		return;
	}
	w->segments_deleted++;
	log_info("retention: deleted %s (age %" PRIu64 "d %02" PRIu64 "h%02" PRIu64 "m, %" PRIu64
		 " bytes)",
		s->name, age_s / 86400, age_s / 3600 % 24, age_s / 60 % 60, s->bytes);
}

/* A .zst beside a .jsonl being compressed is about to be replaced: busy too. */
static bool seg_busy(const struct writer *w, const char *name)
{
	char base[SEG_NAME_MAX];
	size_t len = strlen(name);

	if (pending_has(w, name))
		return true;
	if (len > 4 && !strcmp(name + len - 4, ".zst")) {
		memcpy(base, name, len - 4);
		base[len - 4] = '\0';
		return pending_has(w, base);
	}
	return false;
}

/* size_bytes: the limit on all segments together, UINT64_MAX for none. */
static void retention_run(struct writer *w, uint64_t size_bytes)
{
	uint64_t now_ms = clock_real_ms();
	struct seg_info *segs;
	size_t n;
	int ret = segments_list(w->ds->dirfd, &segs, &n);

	if (ret < 0) {
		log_warnx("retention: cannot list the data dir: %s", strerror(-ret));
		return;
	}
	for (size_t i = 0; i < n; i++)
		segs[i].busy = seg_busy(w, segs[i].name);
	if (retention_select(segs, n, now_ms, w->cfg.retention_age_ms, size_bytes))
		for (size_t i = 0; i < n; i++)
			if (segs[i].doomed)
				retention_delete(w, &segs[i], now_ms);
	free(segs);
}

void service_retention(struct writer *w)
{
	retention_run(w, w->cfg.retention_size_bytes);
}

static void compress_done(struct writer *w, const struct compress_result *r)
{
	if (r->error == -ECANCELED)
		return;
	if (r->error < 0) {
		bool logged = false;

		w->compress_failures++;
		for (size_t i = 0; i < w->pending_count; i++)
			if (!strcmp(w->pending[i].name, r->name)) {
				w->pending[i].failed = true;
				logged = w->pending[i].failure_logged;
				w->pending[i].failure_logged = true;
			}
		if (!logged)
			log_warnx("%s: compression failed: %s (retried every %d s, the .jsonl "
				  "stays meanwhile)",
				r->name, strerror(-r->error), TICK_MAX_MS / 1000);
		set_error(w, "compression: %s: %s", r->name, -r->error);
		return;
	}
	pending_remove(w, r->name);
	w->compressed_count++;
	w->last_ratio = r->out_bytes ? (double)r->in_bytes / (double)r->out_bytes : 0.0;
	w->last_mb_s = r->elapsed_ns ? (double)r->in_bytes * 1e3 / (double)r->elapsed_ns : 0.0;
	log_info("%s: compressed %" PRIu64 " -> %" PRIu64 " bytes (%.1fx, %.0f MB/s)", r->name,
		r->in_bytes, r->out_bytes, w->last_ratio, w->last_mb_s);
	service_retention(w); /* its stored size is known only now */
}

static void compress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct writer *w = arg;
	struct compress_result r;

	while (compressor_take(w->comp, &r))
		compress_done(w, &r);
}

/* Wall clock checks and compression retries; armed for the next boundary. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct writer *w = arg;
	uint64_t now_ms = clock_real_ms();

	if (now_ms >= w->live_boundary_ms)
		rotate(w, now_ms, seg_boundary_floor_ms(now_ms, w->cfg.rotate_interval_ms),
			"interval");
	else if (now_ms + w->cfg.rotate_interval_ms < w->live_boundary_ms)
		w->live_boundary_ms = seg_next_boundary_ms(
			now_ms, w->cfg.rotate_interval_ms); /* clock went back */
	resubmit_failed(w);
	service_rearm(w);
}

void service_rearm(struct writer *w)
{
	uint64_t now_ms = clock_real_ms();
	uint64_t wait_ms = w->live_boundary_ms > now_ms ? w->live_boundary_ms - now_ms : 0;
	struct timeval tv;

	if (wait_ms > TICK_MAX_MS)
		wait_ms = TICK_MAX_MS;
	if (wait_ms == 0)
		wait_ms = 1000; /* a rotation that failed is retried, not spun on */
	tv.tv_sec = (time_t)(wait_ms / 1000);
	tv.tv_usec = (suseconds_t)(wait_ms % 1000 * 1000);
	event_add(w->tick_ev, &tv);
}

int service_start(struct writer *w, char (*todo)[SEG_NAME_MAX], size_t ntodo)
{
	int ret = compressor_new(w->ds->dirfd, w->cfg.zstd_level, &w->comp);

	if (ret < 0)
		return ret;
	w->comp_ev = event_new(
		w->base, compressor_eventfd(w->comp), EV_READ | EV_PERSIST, compress_cb, w);
	w->tick_ev = evtimer_new(w->base, tick_cb, w);
	if (!w->comp_ev || !w->tick_ev || event_add(w->comp_ev, NULL) < 0)
		return -ENOMEM;
	/* Retention by age first, while nothing is queued: a leftover segment
	 * already expired (a clock jump, a long stop) goes now, not after its
	 * compression at the next rotation.  Not by size: a leftover's size is
	 * its compressed one, known later. */
	retention_run(w, UINT64_MAX);
	for (size_t i = 0; i < ntodo; i++) {
		struct stat st;

		if (fstatat(w->ds->dirfd, todo[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* deleted by retention */
		log_info("%s: left uncompressed by an earlier writer; queued", todo[i]);
		pending_add(w, todo[i]);
	}
	w->live_boundary_ms =
		seg_next_boundary_ms(w->ds->rec.live_start_ms, w->cfg.rotate_interval_ms);
	service_retention(w);
	service_rearm(w);
	return 0;
}

void service_stop(struct writer *w)
{
	/* the thread stops between chunks; an unfinished .jsonl is redone at the next start */
	compressor_free(w->comp);
	w->comp = NULL;
	if (w->comp_ev)
		event_free(w->comp_ev);
	if (w->tick_ev)
		event_free(w->tick_ev);
	free(w->pending);
	w->pending = NULL;
	w->pending_count = 0;
}
