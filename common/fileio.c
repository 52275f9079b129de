/*
 * fileio.c: bounded whole-file reads for configuration, catalogs and
 * /proc files, the directories kept open for them across a privilege
 * drop, and whole reads and writes at an offset.  Any process, any
 * privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

/* Reads until EOF or max_bytes + 1 (so "too large" is seen), growing buf. */
static int read_all(int fd, size_t first_cap, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
	size_t cap = first_cap, len = 0;
	char *buf = malloc(cap + 1), *grown;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap > max_bytes)
				break;
			cap = cap * 2 <= max_bytes ? cap * 2 : max_bytes + 1;
			grown = realloc(buf, cap + 1);
			if (!grown)
				goto fail_nomem;
			buf = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(buf);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max_bytes) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;
fail_nomem:
	free(buf);
	return -ENOMEM;
}

/* Directories opened by file_keep_dir; read by the main thread only. */
static struct {
	char dir[PATH_MAX];
	int fd;
} kept_dirs[FILE_KEPT_DIRS_MAX];
static size_t kept_dirs_count;

/* The directory part of path ("/" for "/x") into dir; NULL when path has no '/'. */
static const char *split_dir(const char *path, char dir[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash)
		return NULL;
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= PATH_MAX)
		return NULL;
	memcpy(dir, path, len);
	dir[len] = '\0';
	return slash + 1;
}

static int kept_dir_fd(const char *dir)
{
	for (size_t i = 0; i < kept_dirs_count; i++)
		if (!strcmp(kept_dirs[i].dir, dir))
			return kept_dirs[i].fd;
	return -1;
}

int file_keep_dir(const char *path)
{
	char dir[PATH_MAX];
	int fd;

	if (!split_dir(path, dir) || kept_dir_fd(dir) >= 0)
		return 0;
	if (kept_dirs_count == FILE_KEPT_DIRS_MAX)
		return -ENOSPC;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memcpy(kept_dirs[kept_dirs_count].dir, dir, strlen(dir) + 1);
	kept_dirs[kept_dirs_count++].fd = fd;
	return 0;
}

/* path through its kept directory when there is one, else as given. */
static int open_read(const char *path, int flags)
{
	char dir[PATH_MAX];
	const char *name = split_dir(path, dir);
	int dirfd = name && *name ? kept_dir_fd(dir) : -1;

	return dirfd >= 0 ? openat(dirfd, name, flags) : open(path, flags);
}

int file_read_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
	struct stat st;
	size_t first_cap;
	int fd, r;

	/* O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever. */
	fd = open_read(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
	} else {
		/* /proc files report size 0: start small and grow. */
		first_cap = st.st_size > 0 && (size_t)st.st_size < max_bytes
				    ? (size_t)st.st_size + 1
				    : 4096;
		if (first_cap > max_bytes + 1)
			first_cap = max_bytes + 1;
		r = read_all(fd, first_cap, max_bytes, ret_buf, ret_len);
	}
	close(fd);
	return r;
}

const char *file_read_strerror(int r)
{
	if (r == -EINVAL)
		return "not a regular file";
	if (r == -EFBIG)
		return "file too large";
	return strerror(-r);
}

int file_read_at(int fd, void *buf, size_t len, off_t off, size_t *ret_got)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*ret_got = got;
	return 0;
}

int file_write_at(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_fsync_dir(int dirfd)
{
	return fsync(dirfd) < 0 ? -errno : 0;
}
