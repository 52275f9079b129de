/*
 * handover.c: directories and files root makes or finds and gives to the
 * daemon user, walked one component at a time without following a symlink
 * and changed only through the fd that was checked.  croft run and the
 * daemons, before their privilege drop.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handover.h"

/* One component below dirfd, made when missing, opened without following
 * a symlink: O_PATH, enough to walk on. */
static int handover_step(int dirfd, const char *name, mode_t mode, bool strict)
{
	struct stat st;
	int fd;

	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_PATH | O_CLOEXEC | (strict ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
	}
	return fd;
}

/* The path's directory fd, every component walked; the last opened O_RDONLY. */
static int handover_walk(const char *path, const struct handover_want *want, bool strict)
{
	char buf[4096], *save = NULL;
	int fd, next;
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (char *name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		bool last = save[strspn(save, "/")] == '\0';
		next = handover_step(fd, name, last ? want->mode : want->parents_mode, strict);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	/* O_PATH cannot be fchown'd: the directory itself, through its fd */
	next = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	return next < 0 ? -errno : next;
}

/* Already there: root's or the daemon's, and nobody else may write it. */
static int handover_check_dir(int fd, const struct handover_want *want)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != 0 && st.st_uid != want->daemon_uid)
		return -EPERM;
	if ((st.st_mode & S_IWOTH) ||
		((st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != want->group))
		return -EPERM;
	/* only what differs: the probe's unit denies chown, and systemd made it right */
	if ((st.st_uid != want->owner || st.st_gid != want->group) &&
		fchown(fd, want->owner, want->group) < 0)
		return -errno;
	if ((st.st_mode & 07777) != want->mode && fchmod(fd, want->mode) < 0)
		return -errno;
	return 0;
}

int handover_dir(const char *path, const struct handover_want *want, int *ret_fd)
{
	bool root = want->owner != (uid_t)-1;
	int fd = handover_walk(path, want, root), r;

	if (fd < 0)
		return fd;
	if (root && (r = handover_check_dir(fd, want)) < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int handover_file(int fd, uid_t uid, gid_t gid)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_nlink > 1)
		return -EMLINK;
	if (st.st_uid != 0 && st.st_uid != uid)
		return -EPERM;
	if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0)
		return -errno;
	return 0;
}

const char *handover_strerror(int r)
{
	switch (r) {
	case -ELOOP:
		return "a symlink on the way (root follows none: give the real path)";
	case -EPERM:
		return "owned by another user, or writable by others (root hands over only "
		       "what root or the daemon user owns and no one else may write)";
	case -EMLINK:
		return "a file with more than one link (a hard link to another file)";
	case -EINVAL:
		return "not a regular file";
	default:
		return strerror(-r);
	}
}
