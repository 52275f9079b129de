/*
 * dataset.c: croft-writer's live file.  Appends are made durable before
 * they are acknowledged: write, fdatasync the live file, then store the
 * commit record (epoch, seq, live inode, offset).  A failed append is cut
 * back to the last commit, so the file never holds a torn line.  Also
 * rotation on the UTC boundary of rotate_interval (wall clock for the
 * boundary and names, libevent's monotonic timers for waiting) or at
 * rotate_size, the recovery a start-up owes to a crash, its leftovers, the
 * figures of what was written and the disk state status reports.  Writer,
 * croft user.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "daemon.h"
#include "fileio.h"
#include "log.h"
#include "writer.h"

static int open_live(struct dataset *ds, uint64_t *ret_inode, uint64_t *ret_size)
{
	struct stat st;
	int fd, ret;

	fd = openat(ds->dirfd, LIVE_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		close(fd);
		return ret;
	}
	ds->live_fd = fd;
	*ret_inode = (uint64_t)st.st_ino;
	*ret_size = (uint64_t)st.st_size;
	return 0;
}

/* The unix_ms of the first row, when the file starts like a croft row. */
static uint64_t first_row_ms(int fd)
{
	static const char key[] = "{\"unix_ms\":";
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	uint64_t ms = 0;

	if (n <= (ssize_t)strlen(key) || strncmp(buf, key, strlen(key)))
		return 0;
	buf[n] = '\0';
	for (const char *p = buf + strlen(key); *p >= '0' && *p <= '9'; p++)
		ms = ms * 10 + (uint64_t)(*p - '0');
	return ms;
}

/* Offset just after the last '\n' at or before size (0 when none). */
static int last_newline_end(int fd, uint64_t size, uint64_t *ret_end)
{
	char buf[65536];
	uint64_t end = size;

	while (end > 0) {
		size_t chunk = end < sizeof(buf) ? (size_t)end : sizeof(buf);
		ssize_t n = pread(fd, buf, chunk, (off_t)(end - chunk));

		if (n < 0)
			return -errno;
		if ((size_t)n != chunk)
			return -EIO;
		for (size_t i = chunk; i > 0; i--)
			if (buf[i - 1] == '\n') {
				*ret_end = end - chunk + i;
				return 0;
			}
		end -= chunk;
	}
	*ret_end = 0;
	return 0;
}

/* A name after every existing segment: a clock that jumped back or two
 * rotations within one second still give unique names in time order. */
static uint64_t unique_start_s(struct dataset *ds, uint64_t start_s)
{
	if (ds->newest_start_s && start_s <= ds->newest_start_s)
		start_s = ds->newest_start_s + 1;
	ds->newest_start_s = start_s;
	return start_s;
}

/*
 * Renames the live file to a segment and starts an empty one.  The commit
 * record is stored last: a crash before it leaves a record naming the old
 * inode, and the new live file is still empty, which recovery handles.
 */
static int close_live(
	struct dataset *ds, uint64_t start_s, uint64_t next_start_ms, char ret_name[SEG_NAME_MAX])
{
	char name[SEG_NAME_MAX];
	uint64_t inode, size;
	int old_fd = ds->live_fd, ret;

	ret = seg_format(name, sizeof(name), unique_start_s(ds, start_s), SEG_JSONL);
	if (ret < 0)
		return ret;
	if (renameat(ds->dirfd, LIVE_NAME, ds->dirfd, name) < 0)
		return -errno;
	ret = open_live(ds, &inode, &size);
	if (ret < 0) {
		renameat(ds->dirfd, name, ds->dirfd, LIVE_NAME);
		ds->live_fd = old_fd;
		return ret;
	}
	close(old_fd);
	ds->live_bytes = 0;
	ret = file_fsync_dir(ds->dirfd);
	ds->rec.live_inode = inode;
	ds->rec.live_offset = 0;
	ds->rec.live_start_ms = next_start_ms;
	if (ret == 0)
		ret = commit_store(ds->commit, &ds->rec);
	if (ret < 0)
		log_warnx("%s: commit after rotation: %s (the next append stores it)", COMMIT_NAME,
			strerror(-ret));
	strcpy(ret_name, name);
	return 0;
}

/* What recovery keeps of an existing live file, and when it began. */
static int recover_cut(struct dataset *ds, const struct commit_rec *rec, bool found, uint64_t inode,
	uint64_t size, uint64_t *ret_keep, uint64_t *ret_start_ms)
{
	uint64_t keep;
	int ret;

	if (found && rec->live_inode == inode && rec->live_offset <= size) {
		keep = rec->live_offset;
		*ret_start_ms = rec->live_start_ms;
	} else {
		/* no record for this file (an older collector's, a restored copy):
		 * keep its whole lines */
		ret = last_newline_end(ds->live_fd, size, &keep);
		if (ret < 0)
			return ret;
		if (found && rec->live_inode == inode)
			log_warnx("%s: %" PRIu64 " bytes, shorter than its commit at %" PRIu64
				  "; keeping its whole lines",
				LIVE_NAME, size, rec->live_offset);
		*ret_start_ms = first_row_ms(ds->live_fd);
	}
	if (!*ret_start_ms) {
		struct stat st;

		*ret_start_ms = fstat(ds->live_fd, &st) == 0 ? (uint64_t)st.st_mtime * 1000
							     : clock_real_ms();
	}
	if (keep < size) {
		log_notice("%s: cut back from %" PRIu64 " to %" PRIu64
			   " bytes (a crash left a tail)",
			LIVE_NAME, size, keep);
		if (ftruncate(ds->live_fd, (off_t)keep) < 0 || fdatasync(ds->live_fd) < 0)
			return -errno;
	}
	*ret_keep = keep;
	return 0;
}

static void remove_stray_tmp(int dirfd, uint64_t *newest_s)
{
	struct dirent *de;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		enum seg_kind kind;
		uint64_t start_s;

		if (seg_parse(de->d_name, &start_s, &kind) < 0)
			continue;
		if (kind != SEG_ZST_TMP) {
			if (start_s > *newest_s)
				*newest_s = start_s;
			continue;
		}
		if (unlinkat(dirfd, de->d_name, 0) == 0)
			log_notice("%s: removed (left by an interrupted compression)", de->d_name);
		else
			log_warn("%s: cannot remove", de->d_name);
	}
	closedir(dir);
}

/* The .jsonl segments still to compress, sorted; a .zst beside one is redone. */
static int pending_jsonl(int dirfd, char (**ret_leftovers)[SEG_NAME_MAX], size_t *ret_n)
{
	struct seg_info *segs;
	char(*leftovers)[SEG_NAME_MAX];
	size_t n, count = 0;
	int ret = segments_list(dirfd, &segs, &n);

	if (ret < 0)
		return ret;
	leftovers = calloc(n ? n : 1, sizeof(*leftovers));
	if (!leftovers) {
		free(segs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(segs[i].name);

		if (len > 6 && !strcmp(segs[i].name + len - 6, ".jsonl"))
			strcpy(leftovers[count++], segs[i].name);
	}
	free(segs);
	*ret_leftovers = leftovers;
	*ret_n = count;
	return 0;
}

static void dataset_init(struct dataset *ds, int dirfd)
{
	memset(ds, 0, sizeof(*ds));
	ds->dirfd = dirfd;
	ds->live_fd = -1;
}

static int dataset_recover(struct dataset *ds, uint64_t interval_ms)
{
	struct commit_rec rec;
	uint64_t inode, size, keep = 0, start_ms = 0, now_ms = clock_real_ms();
	char name[SEG_NAME_MAX];
	bool found;
	int ret;

	ret = commit_open(ds->dirfd, &ds->commit, &rec, &found);
	if (ret < 0)
		return ret;
	remove_stray_tmp(ds->dirfd, &ds->newest_start_s);
	ret = open_live(ds, &inode, &size);
	if (ret < 0)
		return ret;
	ds->rec = rec;
	ret = recover_cut(ds, &rec, found, inode, size, &keep, &start_ms);
	if (ret < 0)
		return ret;
	ds->rec.live_inode = inode;
	ds->rec.live_offset = keep;
	ds->live_bytes = keep;
	if (keep > 0) {
		/* an earlier writer's live file becomes a segment before any append */
		ret = close_live(ds, seg_start_s(start_ms, interval_ms), now_ms, name);
		if (ret < 0)
			return ret;
		log_info("%s: %" PRIu64 " bytes left by an earlier writer, now %s", LIVE_NAME, keep,
			name);
		return 0;
	}
	ds->rec.live_start_ms = now_ms;
	return commit_store(ds->commit, &ds->rec);
}

int dataset_open(int dirfd, uint64_t interval_ms, struct dataset **ret_ds,
	char (**ret_leftovers)[SEG_NAME_MAX], size_t *ret_nleftovers)
{
	struct dataset *ds = malloc(sizeof(*ds));
	int ret;

	if (!ds)
		return -ENOMEM;
	dataset_init(ds, dirfd);
	ret = dataset_recover(ds, interval_ms);
	if (ret == 0)
		ret = pending_jsonl(dirfd, ret_leftovers, ret_nleftovers);
	if (ret < 0) {
		dataset_close(ds);
		return ret;
	}
	*ret_ds = ds;
	return 0;
}

void dataset_close(struct dataset *ds)
{
	if (!ds)
		return;
	if (ds->live_fd >= 0)
		close(ds->live_fd);
	if (ds->tick_ev)
		event_free(ds->tick_ev);
	commit_close(ds->commit);
	free(ds);
}

bool dataset_committed(const struct dataset *ds, uint64_t epoch, uint64_t seq)
{
	return ds->rec.seq && epoch == ds->rec.epoch && seq <= ds->rec.seq;
}

static int pwritev_all(int fd, const struct iovec *iov, size_t iovcnt, uint64_t off)
{
	struct iovec local[IOV_MAX];

	while (iovcnt) {
		size_t cnt = iovcnt < IOV_MAX ? iovcnt : IOV_MAX;
		ssize_t n;

		memcpy(local, iov, cnt * sizeof(*iov));
		n = pwritev(fd, local, (int)cnt, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		off += (uint64_t)n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
			cnt--;
		}
		if (n > 0) {
			/* a short write inside one buffer: finish it alone */
			struct iovec rest = { (uint8_t *)iov->iov_base + n,
				iov->iov_len - (size_t)n };
			int ret = pwritev_all(fd, &rest, 1, off);

			if (ret < 0)
				return ret;
			off += rest.iov_len;
			iov++;
			iovcnt--;
		}
	}
	return 0;
}

int dataset_append(
	struct dataset *ds, const struct iovec *iov, size_t iovcnt, uint64_t epoch, uint64_t seq)
{
	struct commit_rec next = ds->rec;
	uint64_t bytes = 0;
	int ret;

	for (size_t i = 0; i < iovcnt; i++)
		bytes += iov[i].iov_len;
	ret = pwritev_all(ds->live_fd, iov, iovcnt, ds->live_bytes);
	if (ret == 0 && fdatasync(ds->live_fd) < 0)
		ret = -errno;
	next.epoch = epoch;
	next.seq = seq;
	next.live_offset = ds->live_bytes + bytes;
	if (ret == 0)
		ret = commit_store(ds->commit, &next);
	if (ret < 0) {
		/* nothing of it counts: no ack, and no partial line left behind */
		if (ftruncate(ds->live_fd, (off_t)ds->live_bytes) < 0)
			log_warn("%s: cut back to %" PRIu64, LIVE_NAME, ds->live_bytes);
		return ret;
	}
	ds->rec = next;
	ds->live_bytes = next.live_offset;
	ds->stats.bytes_written += bytes;
	return 0;
}

int dataset_rotate(struct dataset *ds, uint64_t now_ms, uint64_t at_boundary_ms,
	uint64_t interval_ms, char ret_name[SEG_NAME_MAX])
{
	uint64_t next_start_ms = at_boundary_ms ? at_boundary_ms : now_ms;
	struct stat st;

	ret_name[0] = '\0';
	if (ds->live_bytes == 0) {
		/* nothing to close: the empty file simply begins again */
		ds->rec.live_start_ms = next_start_ms;
		return 0;
	}
	/* a failed append may have left bytes its cut-back could not remove */
	if (fstat(ds->live_fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size != ds->live_bytes &&
		ftruncate(ds->live_fd, (off_t)ds->live_bytes) < 0)
		return -errno;
	return close_live(
		ds, seg_start_s(ds->rec.live_start_ms, interval_ms), next_start_ms, ret_name);
}

void writer_error(struct writer *w, const char *fmt, const char *what, int err)
{
	snprintf(w->last_error, sizeof(w->last_error), fmt, what, strerror(-err));
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
	retention_run(w);
}

/* Rotates when the wall clock passed the live file's boundary; false when it has not. */
static bool rotate_at_boundary(struct writer *w, uint64_t now_ms)
{
	if (now_ms < w->ds->boundary_ms)
		return false;
	rotate(w, now_ms, seg_boundary_floor_ms(now_ms, w->cfg.rotate_interval_ms), "interval");
	return true;
}

int dataset_write(struct writer *w, const struct dataset_group *g)
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
	retention_run_by_age(w);
	for (size_t i = 0; i < nleftovers; i++) {
		struct stat st;

		if (fstatat(w->ds->dirfd, leftovers[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* deleted by retention */
		log_info("%s: left uncompressed by an earlier writer; queued", leftovers[i]);
		compress_queue(w->comp, leftovers[i]);
	}
}

int dataset_start(struct writer *w, char (*leftovers)[SEG_NAME_MAX], size_t nleftovers)
{
	w->ds->tick_ev = evtimer_new(w->base, tick_cb, w);
	if (!w->ds->tick_ev)
		return -ENOMEM;
	queue_leftovers(w, leftovers, nleftovers);
	w->ds->boundary_ms =
		seg_next_boundary_ms(w->ds->rec.live_start_ms, w->cfg.rotate_interval_ms);
	retention_run(w);
	tick_rearm(w);
	return 0;
}

void dataset_reload(struct writer *w)
{
	w->ds->boundary_ms =
		seg_next_boundary_ms(w->ds->rec.live_start_ms, w->cfg.rotate_interval_ms);
	tick_rearm(w);
}
