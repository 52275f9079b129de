/*
 * run_lock.c: one collector a host.  croft run refuses to start while the
 * croft units answer on their control sockets, or while another croft run
 * holds the host's lock: flock on a root-owned 0600 file (/run/croft-run.lock),
 * freed by the kernel however croft run ends.  No other user may open it,
 * so none can take it first (an abstract socket name anyone could bind).
 * Runs in the croft command, as the invoking user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "msg.h"
#include "run.h"

static const char *const unit_roles[] = { "writer", "sampler", "probe" };

/* Whether units_dir/role is there to see: a directory we may look into units_dir for. */
static bool role_dir_seen(const char *units_dir, const char *role)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", units_dir, role) >= (int)sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int run_units_running(const char *units_dir, char *ret_why, size_t why_len)
{
	char path[PATH_MAX];
	char *text = NULL;
	int status, r;

	for (size_t i = 0; i < sizeof(unit_roles) / sizeof(unit_roles[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s/%s.ctl", units_dir, unit_roles[i],
			    unit_roles[i]) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		r = ctl_request(path, MT_CTL_STATUS, NULL, 0, RUN_PEER_TIMEOUT_MS, &status, &text);
		free(text);
		text = NULL;
		if (r < 0 && !(r == -EACCES || r == -EPERM))
			continue;
		/* the unit's 0750 directory exists only while it runs, and outsiders
		 * get EACCES in it; an EACCES from a closed directory above it (a
		 * checkout in a 0700 home) says nothing of the units */
		if (r < 0 && !role_dir_seen(units_dir, unit_roles[i]))
			continue;
		snprintf(ret_why, why_len,
			"the croft units run on this host (croft-%s %s %s): stop them first "
			"(systemctl stop croft-sampler croft-probe croft-writer), or read their "
			"data with croft stats",
			unit_roles[i],
			r < 0 ? "keeps its 0750 directory closed to us at" : "answers on", path);
		return 1;
	}
	return 0;
}

/* The holder's "pid uid" line, as it wrote it after taking the lock. */
static void lock_holder(int fd, char *why, size_t len)
{
	char text[64] = "";
	unsigned pid = 0, uid = 0;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	if (n > 0 && sscanf(text, "%u %u", &pid, &uid) == 2 && pid > 0)
		snprintf(why, len,
			"another croft run (pid %u, uid %u) runs on this host: stop it first "
			"(Ctrl-C where it runs, or kill -INT %u)",
			pid, uid, pid);
	else
		snprintf(why, len, "another croft run runs on this host: stop it first");
}

/* The lock file must be root's alone: anyone who may open it could flock it first. */
static int lock_file_check(int fd, const char *path, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == 0 && !(st.st_mode & 077))
		return 0;
	snprintf(why, len,
		"the host lock %s is not root's alone (owner uid %u, mode %03o, %u links): "
		"remove it",
		path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)st.st_nlink);
	return -EPERM;
}

int run_lock_take(const char *path, int *ret_fd, char *ret_why, size_t why_len)
{
	char text[64];
	int fd, r, len;

	*ret_fd = -1;
	if (geteuid() != 0)
		return 0; /* a lock others may open they could take first: root's only */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		snprintf(ret_why, why_len, "the host lock %s: %s", path, strerror(-r));
		return r;
	}
	if ((r = lock_file_check(fd, path, ret_why, why_len)) < 0) {
		close(fd);
		return r;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		if (r == -EADDRINUSE)
			lock_holder(fd, ret_why, why_len);
		else
			snprintf(ret_why, why_len, "the host lock %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	len = snprintf(text, sizeof(text), "%d %u\n", (int)getpid(), (unsigned)getuid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)len, 0) != len)
		log_warn("%s: cannot say who holds it", path);
	*ret_fd = fd;
	return 0;
}
