/*
 * sequence.c: croft-writer's sequence, above the mechanics of dataset.c,
 * compress.c and retention.c: append a group (rotating at the boundary and
 * at rotate_size), queue each closed segment for compression, expire after
 * each rotation and each finished compression, and the tick that watches
 * the wall clock.  Writer process, croft user, in the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "writer.h"

/* The last error status reports: fmt takes what and strerror(-err). */
static void writer_error(struct writer *w, const char *fmt, const char *what, int err)
{
	snprintf(w->last_error, sizeof(w->last_error), fmt, what, strerror(-err));
}

/* size_bytes: the limit on all segments together, UINT64_MAX for none. */
static void expire(struct writer *w, uint64_t size_bytes)
{
	struct seg_info *segs;
	size_t n;
	int ret = segments_list(w->ds->dirfd, &segs, &n);

	if (ret < 0) {
		log_warnx("retention: cannot list the data dir: %s", strerror(-ret));
		return;
	}
	for (size_t i = 0; i < n; i++)
		segs[i].busy = compress_busy(w->comp, segs[i].name);
	w->segments_deleted += retention_delete(
		w->ds->dirfd, segs, n, clock_real_ms(), w->cfg.retention_age_ms, size_bytes);
	free(segs);
}

/* A finished compression: a failure is the last error, a success expires. */
static void compressed(void *ctx, const char *name, int err)
{
	struct writer *w = ctx;

	if (err < 0)
		writer_error(w, "compression: %s: %s", name, err);
	else
		expire(w, w->cfg.retention_size_bytes); /* its stored size is known only now */
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

/* One log line per change; err 0 means writing works again. */
static void disk_result(struct writer *w, int err)
{
	enum disk_state next = disk_state_of(err);

	if (next == w->ds->disk)
		return;
	if (next == DISK_OK) {
		log_notice("%s: writing again; pending batches land in order", LIVE_NAME);
		daemon_notify_status("writing");
		compress_retry(w->comp); /* space is back: compression too */
	} else {
		log_warnx("%s: cannot append (%s): batches stay unacked, retrying every %" PRIu64
			  " ms",
			LIVE_NAME, strerror(-err), w->cfg.poll_interval_ms);
		daemon_notify_status("cannot append: %s; retrying", strerror(-err));
		writer_error(w, "append: %s: %s", LIVE_NAME, err);
	}
	w->ds->disk = next;
}

/* boundary_ms: the interval boundary that caused it, 0 for a size rotation. */
static void rotate(struct writer *w, uint64_t now_ms, uint64_t boundary_ms, const char *why)
{
	char name[SEG_NAME_MAX];
	int ret = dataset_rotate(w->ds, now_ms, boundary_ms, w->cfg.rotate_interval_ms, name);

	if (ret < 0) {
		/* the live file simply grows on; the next tick or append tries again */
		log_warnx("%s: rotation (%s) failed: %s", LIVE_NAME, why, strerror(-ret));
		writer_error(w, "rotation: %s: %s", LIVE_NAME, ret);
		return;
	}
	if (boundary_ms)
		w->ds->boundary_ms = seg_next_boundary_ms(now_ms, w->cfg.rotate_interval_ms);
	if (!name[0])
		return;
	log_info("%s: rotated (%s) to %s", LIVE_NAME, why, name);
	compress_queue(w->comp, name);
	expire(w, w->cfg.retention_size_bytes);
}

/* Rotates when the wall clock passed the live file's boundary; false when it has not. */
static bool rotate_at_boundary(struct writer *w, uint64_t now_ms)
{
	if (now_ms < w->ds->boundary_ms)
		return false;
	rotate(w, now_ms, seg_boundary_floor_ms(now_ms, w->cfg.rotate_interval_ms), "interval");
	return true;
}

int writer_write(struct writer *w, const struct dataset_group *g)
{
	struct dataset_stats *st = &w->ds->stats;
	int ret;

	if (g->batches) {
		rotate_at_boundary(w, clock_real_ms());
		ret = dataset_append(w->ds, g->iov, g->iovcnt, g->epoch, g->seq);
		disk_result(w, ret);
		if (ret < 0)
			return ret;
	}
	st->batches_written += g->batches;
	st->rows_written += g->rows;
	st->batches_duplicate += g->duplicates;
	if (g->batches && w->ds->live_bytes >= w->cfg.rotate_size_bytes)
		rotate(w, clock_real_ms(), 0, "size");
	return 0;
}

static void tick_rearm(struct writer *w)
{
	uint64_t now_ms = clock_real_ms();
	uint64_t wait_ms = w->ds->boundary_ms > now_ms ? w->ds->boundary_ms - now_ms : 0;
	struct timeval tv;

	if (wait_ms > TICK_MAX_MS)
		wait_ms = TICK_MAX_MS;
	if (wait_ms == 0)
		wait_ms = 1000; /* a rotation that failed is retried, not spun on */
	tv.tv_sec = (time_t)(wait_ms / 1000);
	tv.tv_usec = (suseconds_t)(wait_ms % 1000 * 1000);
	event_add(w->ds->tick_ev, &tv);
}

/* Wall clock checks and compression retries; armed for the next boundary. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct writer *w = arg;
	uint64_t now_ms = clock_real_ms();

	if (!rotate_at_boundary(w, now_ms) &&
		now_ms + w->cfg.rotate_interval_ms < w->ds->boundary_ms)
		w->ds->boundary_ms = seg_next_boundary_ms(
			now_ms, w->cfg.rotate_interval_ms); /* clock went back */
	compress_retry(w->comp);
	tick_rearm(w);
}

/* Leftovers: retention by age first, while nothing is queued, so a leftover
 * segment already expired (a clock jump, a long stop) goes now, not after
 * its compression at the next rotation. */
static void queue_leftovers(struct writer *w, char (*leftovers)[SEG_NAME_MAX], size_t nleftovers)
{
	expire(w, UINT64_MAX);
	for (size_t i = 0; i < nleftovers; i++) {
		struct stat st;

		if (fstatat(w->ds->dirfd, leftovers[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* deleted by retention */
		log_info("%s: left uncompressed by an earlier writer; queued", leftovers[i]);
		compress_queue(w->comp, leftovers[i]);
	}
}

int writer_start(struct writer *w, char (*leftovers)[SEG_NAME_MAX], size_t nleftovers)
{
	int ret = compress_start(w->base, w->ds->dirfd, w->cfg.zstd_level, compressed, w, &w->comp);

	if (ret < 0)
		return ret;
	if (!(w->ds->tick_ev = evtimer_new(w->base, tick_cb, w)))
		return -ENOMEM;
	queue_leftovers(w, leftovers, nleftovers);
	writer_reloaded(w); /* the boundary, the tick and retention, as a reload sets them */
	return 0;
}

void writer_reloaded(struct writer *w)
{
	w->ds->boundary_ms =
		seg_next_boundary_ms(w->ds->rec.live_start_ms, w->cfg.rotate_interval_ms);
	tick_rearm(w);
	expire(w, w->cfg.retention_size_bytes);
}
