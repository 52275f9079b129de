/*
 * test_priv.c: priv_drop as root (each case in its own forked process):
 * the capability sets after the drop are exactly the ones asked for, per
 * /proc/self/status, no_new_privs is set, and root cannot be regained.
 * Needs root: skipped elsewhere, a failure under CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "priv.h"
#include "testlib.h"

/* The hex value of a "Name:\t..." line of /proc/self/status. */
static unsigned long long status_field(const char *name)
{
	char line[256];
	unsigned long long v = ~0ull;
	size_t len = strlen(name);
	FILE *f = fopen("/proc/self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':')
			v = strtoull(line + len + 1, NULL, strchr(name, 'C') == name ? 16 : 10);
	fclose(f);
	ck_assert_msg(v != ~0ull, "%s not in /proc/self/status", name);
	return v;
}

static void assert_dropped(const struct priv_user *user, unsigned long long mask)
{
	ck_assert_uint_eq(getuid(), user->uid);
	ck_assert_uint_eq(geteuid(), user->uid);
	ck_assert_uint_eq(getgid(), user->gid);
	ck_assert_uint_eq(getegid(), user->gid);
	ck_assert_int_eq(getgroups(0, NULL), 1);
	ck_assert_uint_eq(status_field("CapPrm"), mask);
	ck_assert_uint_eq(status_field("CapEff"), mask);
	ck_assert_uint_eq(status_field("CapInh"), 0);
	ck_assert_uint_eq(status_field("CapBnd"), mask);
	ck_assert_uint_eq(status_field("CapAmb"), 0);
	ck_assert_uint_eq(status_field("NoNewPrivs"), 1);
	ck_assert_int_eq(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	ck_assert_int_eq(setuid(0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(setresuid(0, 0, 0), -1);
	ck_assert_int_eq(setresgid(0, 0, 0), -1);
	ck_assert_int_eq(setgroups(0, NULL), -1);
}

static void lookup_nobody(struct priv_user *user)
{
	ck_assert_int_eq(priv_lookup_user("nobody", user), 0);
	ck_assert_str_eq(user->name, "nobody");
	ck_assert_uint_ne(user->uid, 0);
}

START_TEST(test_sampler_caps)
{
	static const cap_value_t caps[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH };
	struct priv_user user;
	int fd;

	lookup_nobody(&user);
	ck_assert_int_eq(priv_drop(&user, caps, 2), 0);
	assert_dropped(&user, (1ull << CAP_SYS_PTRACE) | (1ull << CAP_DAC_READ_SEARCH));
	/* What is kept works: /root (0700) opens only with CAP_DAC_READ_SEARCH. */
	fd = open("/root", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	close(fd);
}
END_TEST

START_TEST(test_no_caps)
{
	struct priv_user user;

	lookup_nobody(&user);
	ck_assert_int_eq(priv_drop(&user, NULL, 0), 0);
	assert_dropped(&user, 0);
	ck_assert_int_lt(open("/root", O_RDONLY | O_DIRECTORY), 0);
	ck_assert_int_eq(errno, EACCES);
}
END_TEST

/* Keeping CAP_SETUID would leave the way back to root open: refused. */
START_TEST(test_setuid_cap_refused)
{
	static const cap_value_t caps[] = { CAP_SETUID };
	struct priv_user user;

	lookup_nobody(&user);
	ck_assert_int_eq(priv_drop(&user, caps, 1), -EPERM);
}
END_TEST

START_TEST(test_bad_users)
{
	struct priv_user user = { 0, 0, "root" };

	ck_assert_int_eq(priv_lookup_user("no-such-user-croft-test", &user), -ENOENT);
	ck_assert_int_eq(priv_lookup_user("", &user), -ENOENT);
	ck_assert_int_eq(priv_lookup_user(NULL, &user), 0); /* croft, else nobody */
	ck_assert(!strcmp(user.name, "croft") || !strcmp(user.name, "nobody"));
	user = (struct priv_user){ 0, 0, "root" };
	ck_assert_int_eq(priv_drop(&user, NULL, 0), -EINVAL);
	ck_assert_uint_eq(geteuid(), 0);
}
END_TEST

static Suite *priv_suite(void)
{
	Suite *s = suite_create("priv");
	TCase *tc = tcase_create("priv");

	tcase_add_test(tc, test_sampler_caps);
	tcase_add_test(tc, test_no_caps);
	tcase_add_test(tc, test_setuid_cap_refused);
	tcase_add_test(tc, test_bad_users);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tl_require_root();
	return tl_run(priv_suite());
}
