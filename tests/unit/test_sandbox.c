/*
 * test_sandbox.c: the seccomp filter denies exec, ptrace and the cross-
 * process memory calls (and extra names) with EPERM and leaves the rest;
 * as root, a process dropped as croft-sampler is (CAP_SYS_PTRACE and
 * CAP_DAC_READ_SEARCH) cannot take a root process's open file under it;
 * syscall names resolve for this architecture.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "priv.h"
#include "sandbox.h"
#include "testlib.h"

#define TEST_UID 42421 /* no user needed: the drop takes numbers */

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

/*
 * In a child: the sampler's drop (an unprivileged uid with CAP_SYS_PTRACE
 * and CAP_DAC_READ_SEARCH), the filter when filtered, then pidfd_getfd of
 * holder's fd and a read through it.  Exits 0 when it read the secret, 1
 * when pidfd_getfd said EPERM, 2 otherwise.
 */
static int take_root_fd(pid_t holder, int fd, bool filtered)
{
	static const cap_value_t caps[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH };
	struct priv_user user = { .uid = TEST_UID, .gid = TEST_UID, .name = "test" };
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		char buf[32] = "";
		if (priv_drop(&user, caps, 2) < 0 || (filtered && sandbox_apply(NULL) < 0))
			_exit(2);
		int pidfd = (int)syscall(SYS_pidfd_open, holder, 0);
		int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		if (got < 0)
			_exit(errno == EPERM ? 1 : 2);
		_exit(pread(got, buf, sizeof(buf) - 1, 0) > 0 && strstr(buf, "root-secret") ? 0
											    : 2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

START_TEST(test_root_fds_out_of_reach)
{
	char path[] = "/tmp/croft-test-sandbox-XXXXXX";
	int secret, wake[2], status;
	pid_t holder;

	if (!tl_have_root())
		return;
	secret = mkstemp(path);
	ck_assert_int_ge(secret, 0);
	ck_assert_int_eq(fchmod(secret, 0600), 0);
	ck_assert_int_eq(write(secret, "root-secret", 11), 11);
	unlink(path);
	ck_assert_int_eq(pipe(wake), 0);
	holder = fork();
	if (holder == 0) { /* a root process holding the 0600 file open */
		char byte;
		close(wake[1]);
		_exit(read(wake[0], &byte, 1) < 0);
	}
	close(wake[0]);
	/* the attack works without the filter: the test can fail */
	ck_assert_int_eq(take_root_fd(holder, secret, false), 0);
	ck_assert_int_eq(take_root_fd(holder, secret, true), 1);
	close(wake[1]);
	ck_assert_int_eq(waitpid(holder, &status, 0), holder);
	close(secret);
}
END_TEST

/* The rest of the policy answers EPERM too (not ENOSYS, not a kill). */
START_TEST(test_policy_calls)
{
	ck_assert_int_eq(sandbox_apply(NULL), 0);
	errno = 0;
	ck_assert_int_eq(syscall(SYS_kcmp, getpid(), getppid(), KCMP_FILE, 0, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(syscall(SYS_pidfd_getfd, 0, 0, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(syscall(SYS_io_uring_setup, 1, NULL), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(syscall(SYS_userfaultfd, 0), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(syscall(SYS_unshare, 0), -1);
	ck_assert_int_eq(errno, EPERM);
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
	tcase_add_test(tc, test_root_fds_out_of_reach);
	tcase_add_test(tc, test_policy_calls);
	tcase_add_test(tc, test_unknown_name);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(sandbox_suite());
}
