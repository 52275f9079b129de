/*
 * control.c: croft-writer's answers on writer.ctl: status (a JSON object:
 * live file, segments, compression, what was written, disk state, last
 * error) and reload (re-reads croft.conf; a bad file keeps the running
 * limits and the reply carries every error).  Writer process, croft user.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "conn.h"
#include "daemon.h"
#include "log.h"
#include "msg.h"
#include "writer.h"

static const char *const disk_state_names[] = {
	[DISK_OK] = "ok",
	[DISK_FULL] = "full",
	[DISK_READ_ONLY] = "read-only",
	[DISK_ERROR] = "error",
};

/* The figures: one row each, in the order croftctl shows them. */
static json_t *status_json(const struct writer *w)
{
	const struct dataset *ds = w->ds;
	const struct dataset_stats *st = &ds->stats;
	struct compress_figures cf;
	struct seg_info *segs = NULL;
	uint64_t seg_bytes = 0;
	size_t nsegs = 0;
	struct statvfs vfs;
	long long free_bytes = -1;

	compress_get_figures(w->comp, &cf);
	if (segments_list(ds->dirfd, &segs, &nsegs) < 0)
		nsegs = 0;
	for (size_t i = 0; i < nsegs; i++)
		seg_bytes += segs[i].bytes;
	if (fstatvfs(ds->dirfd, &vfs) == 0)
		free_bytes = (long long)((uint64_t)vfs.f_bavail * vfs.f_frsize);
	const struct daemon_figure figures[] = {
		{ "data_dir", json_string(w->cfg.data_dir) },
		{ "live.name", json_string(LIVE_NAME) },
		{ "live.bytes", json_integer(ds->live_bytes) },
		{ "live.start_unix_ms", json_integer(ds->rec.live_start_ms) },
		{ "segments.count", json_integer(nsegs) },
		{ "segments.bytes", json_integer(seg_bytes) },
		{ "segments.oldest", nsegs ? json_string(segs[0].name) : json_null() },
		{ "segments.newest", nsegs ? json_string(segs[nsegs - 1].name) : json_null() },
		{ "compression.queue", json_integer(cf.queued) },
		{ "compression.level", json_integer(w->cfg.zstd_level) },
		{ "compression.last_ratio", json_real(cf.last_ratio) },
		{ "compression.last_mb_s", json_real(cf.last_mb_s) },
		{ "compression.done", json_integer(cf.done) },
		{ "compression.failed", json_integer(cf.failed) },
		{ "written.batches", json_integer(st->batches_written) },
		{ "written.rows", json_integer(st->rows_written) },
		{ "written.bytes", json_integer(st->bytes_written) },
		{ "written.duplicates", json_integer(st->batches_duplicate) },
		{ "committed.epoch", json_integer(ds->rec.epoch) },
		{ "committed.seq", json_integer(ds->rec.seq) },
		{ "disk.state", json_string(disk_state_names[ds->disk]) },
		{ "disk.free_bytes", json_integer(free_bytes) },
		{ "last_error", w->last_error[0] ? json_string(w->last_error) : json_null() },
		{ "peers", json_integer(conn_server_count(w->peers)) },
		{ "segments_deleted", json_integer(w->segments_deleted) },
	};
	json_t *o = daemon_figures_new(figures, FIGURES_COUNT(figures));

	free(segs);
	return o;
}

/* Only the writer's limits change at reload; data_dir needs a restart. */
int writer_reload(void *ctx, char **ret_errors)
{
	struct writer *w = ctx;
	struct croft_config next;
	int ret;

	if ((ret = daemon_reload_config(w->config_path, &next, ret_errors)) < 0)
		return ret;
	if (strcmp(next.data_dir, w->cfg.data_dir))
		log_warnx("reload: data_dir %s takes effect at the next start", next.data_dir);
	snprintf(next.data_dir, sizeof(next.data_dir), "%s", w->cfg.data_dir);
	w->cfg = next;
	compress_set_level(w->comp, next.zstd_level);
	log_info("reload: %s read (rotate %llu ms / %llu bytes, retention %llu ms / %llu bytes, "
		 "zstd %d)",
		w->config_path, (unsigned long long)next.rotate_interval_ms,
		(unsigned long long)next.rotate_size_bytes,
		(unsigned long long)next.retention_age_ms,
		(unsigned long long)next.retention_size_bytes, next.zstd_level);
	writer_reloaded(w);
	return 0;
}

/* Degraded while the disk refuses batches: they wait in the samplers' spools. */
static int status_reply(const struct writer *w, struct evbuffer *reply)
{
	json_t *figures = status_json(w);
	char why[320];
	bool ok = w->ds->disk == DISK_OK;

	if (!figures)
		return -ENOMEM;
	if (!ok)
		snprintf(why, sizeof(why), "disk %s%s%s", disk_state_names[w->ds->disk],
			w->last_error[0] ? ": " : "", w->last_error);
	return daemon_status(ok ? "up" : "degraded", ok ? NULL : why, figures, reply);
}

int writer_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply)
{
	struct writer *w = ctx;
	char done[PATH_MAX + 16];

	switch (type) {
	case MT_CTL_STATUS:
		return status_reply(w, reply);
	case MT_CTL_RELOAD:
		snprintf(done, sizeof(done), "reloaded %s", w->config_path);
		return daemon_ctl_reload(writer_reload, w, done, reply);
	default:
		evbuffer_add_printf(reply, "croft-writer does not handle %s", msg_type_name(type));
		return -EOPNOTSUPP;
	}
}
