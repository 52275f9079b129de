/*
 * dataset.c: croft-writer's live file.  Appends are made durable before
 * they are acknowledged: write, fdatasync the live file, then store the
 * commit record (epoch, seq, live inode, offset).  A failed append is cut
 * back to the last commit, so the file never holds a torn line.  Also
 * closing it as a segment (sequence.c decides when) and the recovery a
 * start-up owes to a crash, with its leftovers.  Writer, croft user.
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

/*
 * A live file no commit record names (an older collector's, a restored
 * copy, one shorter than its commit): every value it holds, one compact
 * line each, the file reopened; it began with its first row.
 */
static int recover_foreign(
	struct dataset *ds, uint64_t *inode, uint64_t *size, uint64_t *ret_start_ms)
{
	struct adopt_result got;
	uint64_t was = *size;
	int ret = adopt_live(ds->dirfd, ds->live_fd, &got);

	if (ret < 0)
		return ret;
	close(ds->live_fd);
	ds->live_fd = -1;
	ret = open_live(ds, inode, size);
	if (ret < 0)
		return ret;
	log_notice("%s: no commit record for it (an older collector's?): %" PRIu64
		   " bytes, %" PRIu64 " rows kept as %" PRIu64 " bytes of compact lines%s",
		LIVE_NAME, was, got.rows, *size,
		got.dropped_bytes ? ", the value it ends inside dropped" : "");
	*ret_start_ms = got.first_ms;
	return 0;
}

/* What recovery keeps of an existing live file, and when it began. */
static int recover_cut(struct dataset *ds, const struct commit_rec *rec, bool found,
	uint64_t *inode, uint64_t *size, uint64_t *ret_keep, uint64_t *ret_start_ms)
{
	uint64_t keep;
	int ret;

	if (found && rec->live_inode == *inode && rec->live_offset <= *size) {
		keep = rec->live_offset;
		*ret_start_ms = rec->live_start_ms;
	} else if (*size == 0) {
		keep = 0;
		*ret_start_ms = 0;
	} else {
		if (found && rec->live_inode == *inode)
			log_warnx("%s: %" PRIu64 " bytes, shorter than its commit at %" PRIu64,
				LIVE_NAME, *size, rec->live_offset);
		ret = recover_foreign(ds, inode, size, ret_start_ms);
		if (ret < 0)
			return ret;
		keep = *size;
	}
	if (!*ret_start_ms) {
		struct stat st;

		*ret_start_ms = fstat(ds->live_fd, &st) == 0 ? (uint64_t)st.st_mtime * 1000
							     : clock_real_ms();
	}
	if (keep < *size) {
		log_notice("%s: cut back from %" PRIu64 " to %" PRIu64
			   " bytes (a crash left a tail)",
			LIVE_NAME, *size, keep);
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
	ret = recover_cut(ds, &rec, found, &inode, &size, &keep, &start_ms);
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
	struct dataset *ds = calloc(1, sizeof(*ds));
	int ret;

	if (!ds)
		return -ENOMEM;
	ds->dirfd = dirfd;
	ds->live_fd = -1;
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

/* Writes all of iov at off: short writes go on where they stopped, EINTR is retried. */
static int pwritev_all(int fd, const struct iovec *iov, size_t iovcnt, uint64_t off)
{
	struct iovec local[IOV_MAX];
	size_t skip = 0; /* bytes of iov[0] already written */

	while (iovcnt) {
		size_t cnt = iovcnt < IOV_MAX ? iovcnt : IOV_MAX;
		ssize_t n;

		memcpy(local, iov, cnt * sizeof(*iov));
		local[0].iov_base = (uint8_t *)local[0].iov_base + skip;
		local[0].iov_len -= skip;
		n = pwritev(fd, local, (int)cnt, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		off += (uint64_t)n;
		skip += (size_t)n;
		while (iovcnt && skip >= iov->iov_len) {
			skip -= iov->iov_len;
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
