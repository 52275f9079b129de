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
#include <time.h>

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

static json_t *status_segments(const struct writer *w)
{
	struct seg_info *segs = NULL;
	uint64_t bytes = 0;
	size_t n = 0;
	json_t *o;

	if (segments_list(w->ds->dirfd, &segs, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++)
		bytes += segs[i].bytes;
	o = json_pack("{s:I, s:I, s:s?, s:s?}", "count", (json_int_t)n, "bytes", (json_int_t)bytes,
		"oldest", n ? segs[0].name : NULL, "newest", n ? segs[n - 1].name : NULL);
	free(segs);
	return o;
}

static json_t *status_disk(const struct writer *w)
{
	struct statvfs vfs;
	json_int_t free_bytes = -1;

	if (fstatvfs(w->ds->dirfd, &vfs) == 0)
		free_bytes = (json_int_t)((uint64_t)vfs.f_bavail * vfs.f_frsize);
	return json_pack(
		"{s:s, s:I}", "state", disk_state_names[w->ds->disk], "free_bytes", free_bytes);
}

static json_t *status_json(const struct writer *w)
{
	const struct dataset *ds = w->ds;
	const struct dataset_stats *st = &ds->stats;
	struct compress_figures cf;

	compress_get_figures(w->comp, &cf);

	return json_pack("{s:s, s:{s:s, s:I, s:I}, s:o, s:{s:I, s:i, s:f, s:f, s:I, s:I}, "
			 "s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I}, s:o, s:s?, s:I, s:I}",
		"data_dir", w->cfg.data_dir, "live", "name", LIVE_NAME, "bytes",
		(json_int_t)ds->live_bytes, "start_unix_ms", (json_int_t)ds->rec.live_start_ms,
		"segments", status_segments(w), "compression", "queue", (json_int_t)cf.queued,
		"level", w->cfg.zstd_level, "last_ratio", cf.last_ratio, "last_mb_s", cf.last_mb_s,
		"done", (json_int_t)cf.done, "failed", (json_int_t)cf.failed, "written", "batches",
		(json_int_t)st->batches_written, "rows", (json_int_t)st->rows_written, "bytes",
		(json_int_t)st->bytes_written, "duplicates", (json_int_t)st->batches_duplicate,
		"committed", "epoch", (json_int_t)ds->rec.epoch, "seq", (json_int_t)ds->rec.seq,
		"disk", status_disk(w), "last_error", w->last_error[0] ? w->last_error : NULL,
		"peers", (json_int_t)conn_server_count(w->peers), "segments_deleted",
		(json_int_t)w->segments_deleted);
}

/* Only the writer's limits change at reload; data_dir needs a restart. */
int writer_reload(void *ctx, char **ret_errors)
{
	struct writer *w = ctx;
	struct croft_config next;
	char *errors = NULL;
	int ret;

	ret = daemon_reload_config(w->config_path, &next, &errors);
	if (ret < 0) {
		*ret_errors = errors;
		return ret;
	}
	free(errors);
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
	*ret_errors = NULL;
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
