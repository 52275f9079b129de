/*
 * fileio.c: bounded whole-file reads for configuration, catalogs and
 * /proc files.  Any process, any privilege.
 */
#include <errno.h>
#include <fcntl.h>
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

int file_read_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
	struct stat st;
	size_t first_cap;
	int fd, r;

	/* O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
