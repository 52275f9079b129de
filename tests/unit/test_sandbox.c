/*
 * test_sandbox.c: the seccomp filter denies exec, ptrace and the cross-
 * process memory calls (and extra names) with EPERM and leaves the rest;
 * syscall names resolve for this architecture.
 */
#include <errno.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sandbox.h"
#include "testlib.h"

START_TEST(test_denials)
{
	static const char *const extra[] = { "mkdirat", "mkdir", NULL };
	char *argv[] = { "/bin/true", NULL }, buf[8];
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };

	ck_assert_int_eq(sandbox_apply(extra), 0);
	ck_assert_int_eq(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	errno = 0;
	ck_assert_int_eq(execv("/bin/true", argv), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ptrace(PTRACE_TRACEME, 0, NULL, NULL), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(mkdir("/tmp/croft-test-sandbox-dir", 0700), -1);
	ck_assert_int_eq(errno, EPERM);
	/* What a daemon needs still works. */
	ck_assert_int_gt(getpid(), 0);
	ck_assert_int_eq(access("/proc/self/stat", R_OK), 0);
}
END_TEST

START_TEST(test_unknown_name)
{
	static const char *const extra[] = { "no_such_syscall", NULL };
	char *argv[] = { "/bin/true", NULL };

	ck_assert_int_eq(sandbox_apply(extra), -EINVAL);
	ck_assert_int_eq(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0); /* nothing loaded */
	(void)argv;
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(sandbox_syscall_name(SYS_openat), "openat");
	ck_assert_str_eq(sandbox_syscall_name(SYS_ioctl), "ioctl");
	ck_assert_str_eq(sandbox_syscall_name(SYS_getppid), "getppid");
	ck_assert_ptr_eq(sandbox_syscall_name(SYS_openat), sandbox_syscall_name(SYS_openat));
	ck_assert_ptr_null(sandbox_syscall_name(-1));
	ck_assert_ptr_null(sandbox_syscall_name(100000));
	ck_assert_ptr_null(sandbox_syscall_name(1023));
}
END_TEST

static Suite *sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("sandbox");

	tcase_add_test(tc, test_denials);
	tcase_add_test(tc, test_unknown_name);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(sandbox_suite());
}
