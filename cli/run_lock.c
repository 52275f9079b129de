/*
 * run_lock.c: one collector a host.  croft run refuses to start while the
 * croft units answer on their control sockets, or while another croft run
 * holds the host's lock: an abstract unix socket it binds for its lifetime
 * (the kernel frees it however croft run ends; no file to go stale).
 * Runs in the croft command, as the invoking user.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "ctl.h"
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

static socklen_t lock_address(const char *name, struct sockaddr_un *ret_addr)
{
	size_t len = strlen(name);

	memset(ret_addr, 0, sizeof(*ret_addr));
	ret_addr->sun_family = AF_UNIX;
	if (len + 1 > sizeof(ret_addr->sun_path))
		len = sizeof(ret_addr->sun_path) - 1;
	memcpy(ret_addr->sun_path + 1, name, len); /* sun_path[0] = 0: abstract */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

/* Who holds the lock: the pid and uid the kernel recorded at its listen(). */
static void lock_holder(const struct sockaddr_un *addr, socklen_t addr_len, char *why, size_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);

	if (fd >= 0 && connect(fd, (const struct sockaddr *)addr, addr_len) == 0 &&
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0)
		snprintf(why, len,
			"another croft run (pid %d, uid %u) runs on this host: stop it first "
			"(Ctrl-C where it runs, or kill -INT %d)",
			(int)cred.pid, (unsigned)cred.uid, (int)cred.pid);
	else
		snprintf(why, len, "another croft run runs on this host: stop it first");
	if (fd >= 0)
		close(fd);
}

int run_lock_take(const char *name, int *ret_fd, char *ret_why, size_t why_len)
{
	struct sockaddr_un addr;
	socklen_t addr_len = lock_address(name, &addr);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, addr_len) < 0 || listen(fd, 8) < 0) {
		int r = -errno;

		close(fd);
		if (r == -EADDRINUSE)
			lock_holder(&addr, addr_len, ret_why, why_len);
		else
			snprintf(ret_why, why_len, "the host lock @%s: %s", name, strerror(-r));
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* A croft run asking who holds the lock has its answer at connect(). */
static void lock_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	int peer = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	if (peer >= 0)
		close(peer);
}

struct event *run_lock_serve(struct event_base *base, int fd)
{
	struct event *ev = event_new(base, fd, EV_READ | EV_PERSIST, lock_accept_cb, NULL);

	if (ev && event_add(ev, NULL) < 0) {
		event_free(ev);
		ev = NULL;
	}
	return ev;
}
