/*
 * fileio.h: reading a small file whole, safely: bounded in size, never
 * blocking on a FIFO or a device (a --config or --frameworks pointing at
 * /dev/zero or a pipe is refused, not hung on).  Any process, any privilege.
 */
#ifndef CROFT_FILEIO_H
#define CROFT_FILEIO_H

#include <stddef.h>

/*
 * Reads the regular file at path (at most max_bytes) into a malloc'd,
 * NUL-terminated *ret_buf of *ret_len bytes.  Returns 0 or -errno: the
 * open/read error, -EINVAL when path is not a regular file, -EFBIG when it
 * holds more than max_bytes.
 */
int file_read_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len);

/* What a file_read_bounded error means, for messages. */
const char *file_read_strerror(int r);

#endif
