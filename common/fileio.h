/*
 * fileio.h: reading a small file whole, safely: bounded in size, never
 * blocking on a FIFO or a device (a --config or --frameworks pointing at
 * /dev/zero or a pipe is refused, not hung on); reading and writing a buffer
 * whole at an offset and syncing a directory for the writer's files.  Any process, any privilege;
 * file_keep_dir before a privilege drop.
 */
#ifndef CROFT_FILEIO_H
#define CROFT_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads the regular file at path (at most max_bytes) into a malloc'd,
 * NUL-terminated *ret_buf of *ret_len bytes.  Returns 0 or -errno: the
 * open/read error, -EINVAL when path is not a regular file, -EFBIG when it
 * holds more than max_bytes.
 */
int file_read_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len);

/*
 * Before a privilege drop: opens the directory of path (O_PATH) and keeps
 * it, so that file_read_bounded(path) later opens path's last component
 * in that directory: a reload as the croft user still reaches a file
 * whose parents it may not enter (a checkout in a 0700 home).  The file
 * itself and its directory must still be readable and searchable by that
 * user.  A path without '/' needs nothing: it is opened in the working
 * directory, held already.  At most FILE_KEPT_DIRS_MAX directories.
 * Returns 0 or -errno.
 */
#define FILE_KEPT_DIRS_MAX 4 /* a daemon's config and catalog directories */
int file_keep_dir(const char *path);

/* What a file_read_bounded error means, for messages. */
const char *file_read_strerror(int r);

/* Reads up to len bytes at off into buf (pread, short reads and EINTR
 * retried), fewer only at the end of the file: *ret_got.  0 or -errno. */
int file_read_at(int fd, void *buf, size_t len, off_t off, size_t *ret_got);
/* Writes all of buf at off (pwrite, short writes and EINTR retried); 0 or -errno. */
int file_write_at(int fd, const void *buf, size_t len, off_t off);
/* Makes a directory's entries durable (a rename, a new file); 0 or -errno. */
int file_fsync_dir(int dirfd);

#endif
