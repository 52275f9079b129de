/*
 * daemon_priv.c: the user a daemon drops to, the directories handed to it
 * before the drop (runtime and state) and the drop itself.  Runs in each
 * daemon, as root or as the user that started it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "handover.h"
#include "log.h"
#include "sandbox.h"
#include "sock.h"

void daemon_user(const struct daemon_opts *opts, struct priv_user *ret_user)
{
	if (geteuid() != 0) {
		ret_user->uid = getuid();
		ret_user->gid = getgid();
		snprintf(ret_user->name, sizeof(ret_user->name), "uid %u", (unsigned)ret_user->uid);
	} else if (priv_lookup_user(opts->user, ret_user) < 0) {
		fatalx("no user %s to drop to",
			opts->user ? opts->user : CROFT_USER " (nor " CROFT_FALLBACK_USER ")");
	}
}

void daemon_drop(const struct priv_user *user, const cap_value_t *caps, size_t ncaps,
	const char *const *denied)
{
	bool shared = geteuid() == 0 && strcmp(user->name, CROFT_USER) != 0;
	int r = priv_drop(user, caps, ncaps);

	if (r < 0)
		fatalx("dropping privileges to %s: %s", user->name, strerror(-r));
	/* croft is croft's alone (sysusers.d); any other user, nobody first, is not */
	if (shared)
		sock_shared_identity(user->uid, user->gid);
	if ((r = sandbox_apply(denied)) < 0)
		fatalx("seccomp: %s", strerror(-r));
}

int daemon_state_dir(const char *dir, uid_t uid, gid_t gid, int *ret_fd)
{
	struct handover_want want = {
		.mode = 0700, .parents_mode = 0700, .owner = uid, .group = gid, .daemon_uid = uid
	};

	return handover_dir(dir, &want, ret_fd);
}

int daemon_runtime_dir(const char *dir, gid_t gid)
{
	/* root's, in the daemons' group; one that is there already must be root's
	 * (croft run's, or the probe unit's RuntimeDirectory=) */
	bool root = geteuid() == 0 && gid != (gid_t)-1;
	struct handover_want want = { .mode = 0750,
		.parents_mode = 0750,
		.owner = root ? 0 : (uid_t)-1,
		.group = gid,
		.daemon_uid = 0 };
	int fd, r = handover_dir(dir, &want, &fd);

	if (r < 0)
		return r;
	close(fd);
	return 0;
}
