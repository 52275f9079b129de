/*
 * priv.c: the one privilege drop of croft-probe, croft-sampler and
 * croft-writer.  Runs as root right after the privileged resources are
 * acquired; leaves exactly the asked capabilities and no way back to root.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "config.h"
#include "priv.h"

static int priv_getpw(const char *name, struct priv_user *ret_user)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int r;

	r = getpwnam_r(name, &pw, buf, sizeof(buf), &found);
	if (r != 0 || !found)
		return -ENOENT;
	if (strlen(name) >= sizeof(ret_user->name))
		return -ENAMETOOLONG;
	ret_user->uid = pw.pw_uid;
	ret_user->gid = pw.pw_gid;
	snprintf(ret_user->name, sizeof(ret_user->name), "%s", name);
	return 0;
}

int priv_lookup_user(const char *name, struct priv_user *ret_user)
{
	if (name)
		return priv_getpw(name, ret_user);
	if (priv_getpw(CROFT_USER, ret_user) == 0)
		return 0;
	return priv_getpw(CROFT_FALLBACK_USER, ret_user);
}

static bool cap_wanted(cap_value_t cap, const cap_value_t *caps, size_t ncaps)
{
	for (size_t i = 0; i < ncaps; i++)
		if (caps[i] == cap)
			return true;
	return false;
}

/* Bounding set: needs CAP_SETPCAP, so it is reduced while still root. */
static int priv_reduce_bounding(const cap_value_t *caps, size_t ncaps)
{
	for (cap_value_t cap = 0; cap < 64; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			break; /* past the kernel's last capability */
		if (in == 1 && !cap_wanted(cap, caps, ncaps) &&
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return -errno;
	}
	return 0;
}

/* permitted = effective = caps; inheritable empty. */
static int priv_set_caps(const cap_value_t *caps, size_t ncaps)
{
	cap_t set = cap_init();
	int r = 0;

	if (!set)
		return -ENOMEM;
	if (ncaps > 0 && (cap_set_flag(set, CAP_PERMITTED, (int)ncaps, caps, CAP_SET) < 0 ||
				 cap_set_flag(set, CAP_EFFECTIVE, (int)ncaps, caps, CAP_SET) < 0))
		r = -EINVAL;
	else if (cap_set_proc(set) < 0)
		r = -errno;
	cap_free(set);
	return r;
}

/* The sets we hold now are exactly the ones we asked for. */
static int priv_verify_caps(const cap_value_t *caps, size_t ncaps)
{
	cap_t want = cap_init(), have = cap_get_proc();
	int r = 0;

	if (!want || !have) {
		r = -ENOMEM;
		goto out;
	}
	if (ncaps > 0) {
		cap_set_flag(want, CAP_PERMITTED, (int)ncaps, caps, CAP_SET);
		cap_set_flag(want, CAP_EFFECTIVE, (int)ncaps, caps, CAP_SET);
	}
	if (cap_compare(want, have) != 0)
		r = -EPERM;
out:
	cap_free(want);
	cap_free(have);
	return r;
}

static int priv_clear_ambient_nnp(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Root must be out of reach: every way back has to fail. */
static int priv_verify_no_root(const struct priv_user *user)
{
	if (setuid(0) == 0 || seteuid(0) == 0 || setresuid(0, 0, 0) == 0)
		return -EPERM;
	if (user->gid != 0 && (setgid(0) == 0 || setegid(0) == 0))
		return -EPERM;
	if (getuid() != user->uid || geteuid() != user->uid || getgid() != user->gid)
		return -EPERM;
	return 0;
}

static int priv_drop_root(const struct priv_user *user, const cap_value_t *caps, size_t ncaps)
{
	int r;

	if (user->uid == 0)
		return -EINVAL; /* dropping "to root" drops nothing */
	r = priv_reduce_bounding(caps, ncaps);
	if (r < 0)
		return r;
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return -errno;
	if (setgroups(1, &user->gid) < 0 || setresgid(user->gid, user->gid, user->gid) < 0 ||
		setresuid(user->uid, user->uid, user->uid) < 0)
		return -errno;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	/* Not dumpable whatever fs.suid_dumpable says: another process of the user
	 * (nobody is many processes) may not ptrace us or open our /proc files. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	r = priv_set_caps(caps, ncaps);
	if (r < 0)
		return r;
	r = priv_clear_ambient_nnp();
	if (r < 0)
		return r;
	r = priv_verify_no_root(user);
	if (r < 0)
		return r;
	return priv_verify_caps(caps, ncaps);
}

/* Not root: keep what we have of caps, nothing else. */
static int priv_drop_user(const cap_value_t *caps, size_t ncaps)
{
	cap_value_t kept[64];
	size_t nkept = 0;
	cap_t now = cap_get_proc();
	int r;

	if (!now)
		return -ENOMEM;
	for (size_t i = 0; i < ncaps && nkept < 64; i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(now, caps[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET)
			kept[nkept++] = caps[i];
	}
	cap_free(now);
	r = priv_set_caps(kept, nkept);
	if (r < 0)
		return r;
	return priv_clear_ambient_nnp();
}

int priv_drop(const struct priv_user *user, const cap_value_t *caps, size_t ncaps)
{
	if (geteuid() == 0)
		return priv_drop_root(user, caps, ncaps);
	return priv_drop_user(caps, ncaps);
}
