/*
 * priv.h: the one privilege drop of all three daemons: supplementary groups,
 * gid, uid, an explicit capability set, no_new_privs, ambient cleared, and a
 * check that root cannot be regained.  Runs in each daemon right after it
 * acquired what needs root.
 */
#ifndef CROFT_PRIV_H
#define CROFT_PRIV_H

#include <stddef.h>
#include <sys/capability.h>
#include <sys/types.h>

struct priv_user {
	uid_t uid;
	gid_t gid;
	char name[64];
};

/* name, or when NULL: "croft", else "nobody".  Returns 0 or -ENOENT. */
int priv_lookup_user(const char *name, struct priv_user *ret_user);

/*
 * As root: become user, keeping exactly caps (permitted = effective = caps,
 * inheritable and ambient empty, bounding set reduced to caps), with
 * no_new_privs set and not dumpable (no process of that user may ptrace it
 * or read its /proc files); then verifies that setuid(0) fails.  Not root: sets
 * no_new_privs and reduces the capabilities to caps.  Returns 0 or -errno;
 * callers treat an error as fatal.
 */
int priv_drop(const struct priv_user *user, const cap_value_t *caps, size_t ncaps);

#endif
