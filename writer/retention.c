/*
 * retention.c: which closed segments croft-writer deletes, and deleting
 * them.  First every segment older than retention_age (from the start in
 * its name), then the oldest while all segments together exceed
 * retention_size.  The live file is no segment; those queued or in
 * compression are never chosen.  Writer process, croft user.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "writer.h"

/*
 * A busy segment is not counted against size_bytes: until its compression
 * ends its size is the raw one, about 13 times what it keeps; the writer runs
 * retention again once it is compressed.
 */
size_t retention_select(
	struct seg_info *segs, size_t n, uint64_t now_ms, uint64_t age_ms, uint64_t size_bytes)
{
	uint64_t total = 0;
	size_t doomed = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t start_ms = segs[i].start_s * 1000;

		segs[i].doomed =
			!segs[i].busy && age_ms && now_ms > start_ms && now_ms - start_ms > age_ms;
		if (segs[i].doomed)
			doomed++;
		else if (!segs[i].busy)
			total += segs[i].bytes;
	}
	for (size_t i = 0; i < n && total > size_bytes; i++) {
		if (segs[i].doomed || segs[i].busy)
			continue;
		segs[i].doomed = true;
		total -= segs[i].bytes;
		doomed++;
	}
	return doomed;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg_info *x = a, *y = b;

	if (x->start_s != y->start_s)
		return x->start_s < y->start_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int segments_add(struct seg_info **segs, size_t *n, size_t *cap, const char *name,
	uint64_t start_s, uint64_t bytes)
{
	if (*n == *cap) {
		size_t grown = *cap ? *cap * 2 : 64;
		struct seg_info *p;

		if (grown > SEGMENTS_MAX)
			return -E2BIG;
		p = realloc(*segs, grown * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*segs = p;
		*cap = grown;
	}
	(*segs)[*n] = (struct seg_info){ .start_s = start_s, .bytes = bytes };
	strcpy((*segs)[*n].name, name);
	(*n)++;
	return 0;
}

/* Both .jsonl and .jsonl.zst count; .zst.tmp files are the compressor's. */
int segments_list(int dirfd, struct seg_info **ret_segs, size_t *ret_n)
{
	struct seg_info *segs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd, ret = 0;
	DIR *dir;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while ((de = readdir(dir))) {
		enum seg_kind kind;
		uint64_t start_s;
		struct stat st;

		if (seg_parse(de->d_name, &start_s, &kind) < 0 || kind == SEG_ZST_TMP ||
			strlen(de->d_name) >= SEG_NAME_MAX)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			!S_ISREG(st.st_mode))
			continue;
		ret = segments_add(&segs, &n, &cap, de->d_name, start_s, (uint64_t)st.st_size);
		if (ret < 0)
			break;
	}
	closedir(dir);
	if (ret < 0) {
		free(segs);
		return ret;
	}
	if (n)
		qsort(segs, n, sizeof(*segs), seg_cmp);
	*ret_segs = segs;
	*ret_n = n;
	return 0;
}

/* One deletion, logged with the segment's age and size; 1 when it went. */
static size_t delete_one(int dirfd, const struct seg_info *s, uint64_t now_ms)
{
	uint64_t age_s = now_ms / 1000 > s->start_s ? now_ms / 1000 - s->start_s : 0;

	if (unlinkat(dirfd, s->name, 0) < 0) {
		log_warn("retention: cannot delete %s", s->name);
		return 0;
	}
	log_info("retention: deleted %s (age %" PRIu64 "d %02" PRIu64 "h%02" PRIu64 "m, %" PRIu64
		 " bytes)",
		s->name, age_s / 86400, age_s / 3600 % 24, age_s / 60 % 60, s->bytes);
	return 1;
}

size_t retention_delete(int dirfd, struct seg_info *segs, size_t n, uint64_t now_ms,
	uint64_t age_ms, uint64_t size_bytes)
{
	size_t deleted = 0;

	if (retention_select(segs, n, now_ms, age_ms, size_bytes))
		for (size_t i = 0; i < n; i++)
			if (segs[i].doomed)
				deleted += delete_one(dirfd, &segs[i], now_ms);
	return deleted;
}
