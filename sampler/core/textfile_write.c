/*
 * textfile_write.c: croft.prom in node_exporter's textfile directory,
 * replaced atomically once per poll: written whole to a temporary file in
 * the same directory, then renamed over the last one, so a scrape reads
 * one poll's figures or the previous one's.  croft-sampler, croft user:
 * the directory must let croft write (the unit's ReadWritePaths, and an
 * ACL from tmpfiles.d on Debian's root-owned one).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "output.h"

#define TEXTFILE_MODE 0644 /* node_exporter runs as another user */

void textfile_dir_close(struct textfile_dir *dir)
{
	if (dir->fd >= 0)
		close(dir->fd);
	dir->fd = -1;
	dir->path[0] = '\0';
}

/* A failure is logged when it is not the one logged last; a success after one too. */
static void report(struct textfile_dir *dir, const char *path, const char *what, int err)
{
	if (err)
		snprintf(dir->state, sizeof(dir->state), "%s: %s: %s", path, what, strerror(-err));
	else
		snprintf(dir->state, sizeof(dir->state), "%s/%s written", path, TEXTFILE_NAME);
	if (err == dir->last_err)
		return;
	if (!err)
		log_info("textfile: %s/%s written again", path, TEXTFILE_NAME);
	else
		log_warnx("textfile: %s: %s: %s; no %s until that changes (tried at each poll)",
			path, what, strerror(-err), TEXTFILE_NAME);
	dir->last_err = err;
}

int textfile_dir_open(struct textfile_dir *dir, const char *path)
{
	int fd;

	if (dir->fd >= 0 && strcmp(dir->path, path) == 0)
		return 0;
	textfile_dir_close(dir);
	if (!path[0]) {
		dir->last_err = 0;
		snprintf(dir->state, sizeof(dir->state), "off (textfile_dir is empty)");
		return -ENOENT;
	}
	if (strlen(path) >= sizeof(dir->path)) {
		report(dir, path, "opening the directory", -ENAMETOOLONG);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		report(dir, path, "opening the directory", err);
		return err;
	}
	dir->fd = fd;
	snprintf(dir->path, sizeof(dir->path), "%s", path);
	return 0;
}

static int write_tmp(int dirfd, const struct textfile *tf, const struct textfile_health *h)
{
	int fd = openat(dirfd, TEXTFILE_TMP_NAME,
		O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, TEXTFILE_MODE);
	FILE *f;
	int r;

	if (fd < 0)
		return -errno;
	/* the unit's umask would keep node_exporter out */
	if (fchmod(fd, TEXTFILE_MODE) < 0 || !(f = fdopen(fd, "w"))) {
		r = -errno;
		close(fd);
		return r;
	}
	r = textfile_print(tf, h, f);
	if (fclose(f) != 0 && !r)
		r = -errno;
	return r;
}

void textfile_write(
	struct textfile_dir *dir, const struct textfile *tf, const struct textfile_health *h)
{
	const char *what = "writing " TEXTFILE_TMP_NAME;
	int r;

	if (dir->fd < 0)
		return;
	r = write_tmp(dir->fd, tf, h);
	if (r == 0 && renameat(dir->fd, TEXTFILE_TMP_NAME, dir->fd, TEXTFILE_NAME) < 0) {
		r = -errno;
		what = "renaming " TEXTFILE_TMP_NAME " to " TEXTFILE_NAME;
	}
	if (r < 0)
		unlinkat(dir->fd, TEXTFILE_TMP_NAME, 0);
	report(dir, dir->path, what, r); /* what: of a failure */
}
