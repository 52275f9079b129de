/*
 * sock.c: Unix socket listen/connect and peer credentials for the daemons
 * and croftctl.  Any process, any privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sock.h"

#define SOCK_GROUPS_MAX 256

static int sock_addr(const char *path, struct sockaddr_un *ret_addr)
{
	memset(ret_addr, 0, sizeof(*ret_addr));
	ret_addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(ret_addr->sun_path))
		return -ENAMETOOLONG;
	strcpy(ret_addr->sun_path, path);
	return 0;
}

/*
 * A file at path may be left by a crashed daemon: removed when it is a
 * socket nobody answers on.  A live socket (another instance running) or a
 * file that is not a socket is never removed.
 */
static int sock_remove_stale(const char *path, int type)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = sock_connect(path, type | SOCK_NONBLOCK);
	if (fd >= 0)
		close(fd);
	if (fd >= 0 || fd == -EAGAIN)
		return -EADDRINUSE;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int sock_listen(const char *path, int type, gid_t gid)
{
	struct sockaddr_un addr;
	struct stat st;
	int fd, r = sock_addr(path, &addr);

	if (r < 0)
		return r;
	r = sock_remove_stale(path, type);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto fail;
	if (chmod(path, 0660) < 0)
		goto fail;
	/* bind made it in our egid: chown only when that is not gid (the
	 * probe's unit denies chown; its egid is already croft there) */
	if (gid != (gid_t)-1 &&
		(stat(path, &st) < 0 || (st.st_gid != gid && chown(path, (uid_t)-1, gid) < 0)))
		goto fail;
	if (listen(fd, SOCK_LISTEN_BACKLOG) < 0)
		goto fail;
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

int sock_connect(const char *path, int type)
{
	struct sockaddr_un addr;
	int fd, r = sock_addr(path, &addr);

	if (r < 0)
		return r;
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int sock_peer(int fd, struct sock_peer *ret_peer)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	ret_peer->pid = cred.pid;
	ret_peer->uid = cred.uid;
	ret_peer->gid = cred.gid;
	return 0;
}

/* The daemon's uid and gid when other processes may run as them too. */
static struct {
	bool on;
	uid_t uid;
	gid_t gid;
} sock_shared;

void sock_shared_identity(uid_t uid, gid_t gid)
{
	sock_shared.on = true;
	sock_shared.uid = uid;
	sock_shared.gid = gid;
}

/* pid's parent, from /proc/<pid>/stat (the field after the ")" of comm); -1 when gone. */
static pid_t sock_parent_of(pid_t pid)
{
	char path[64], buf[512];
	const char *paren;
	int fd, ppid = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!(paren = strrchr(buf, ')')) || sscanf(paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

/* A peer under the shared uid is one of ours only when our parent (croft
 * run, or whoever started us as root; never init) started it too. */
static bool sock_peer_sibling(const struct sock_peer *peer)
{
	pid_t parent = getppid();

	return parent > 1 && peer->pid > 0 && sock_parent_of(peer->pid) == parent;
}

bool sock_peer_is(const struct sock_peer *peer, uid_t uid)
{
	if (peer->uid == 0)
		return true;
	if (peer->uid != geteuid() && peer->uid != uid)
		return false;
	return !sock_shared.on || peer->uid != sock_shared.uid || sock_peer_sibling(peer);
}

bool sock_peer_in_group(const struct sock_peer *peer, gid_t gid)
{
	struct passwd *pw;
	gid_t groups[SOCK_GROUPS_MAX];
	int count = SOCK_GROUPS_MAX;

	if (sock_shared.on && gid == sock_shared.gid)
		return false; /* a group others share says nothing of the peer */
	if (peer->gid == gid)
		return true;
	pw = getpwuid(peer->uid);
	if (pw == NULL || getgrouplist(pw->pw_name, pw->pw_gid, groups, &count) < 0)
		return false;
	for (int i = 0; i < count; i++)
		if (groups[i] == gid)
			return true;
	return false;
}
