/*
 * test_procfs.c: /proc/<pid>/stat, io and status (uid) parsing (hostile comm
 * with ')' and spaces), and the readers against this very process.  Test process,
 * any user.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "testlib.h"

START_TEST(stat_parse)
{
	static const char stat[] = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 "
				   "250 50 0 0 20 0 7 0 98765 1052672 300 18446744073709551615\n";
	struct proc_stat st;

	ck_assert_int_eq(procfs_parse_stat(stat, strlen(stat), &st), 0);
	ck_assert_uint_eq(st.comm_len, strlen("a) b (c)"));
	ck_assert_int_eq(memcmp(st.comm, "a) b (c)", st.comm_len), 0);
	ck_assert_uint_eq(st.cpu_ticks, 300);
	ck_assert_uint_eq(st.threads, 7);
	ck_assert_uint_eq(st.start_ticks, 98765);
	ck_assert_uint_eq(st.vsize, 1052672);
	ck_assert_uint_eq(st.rss_pages, 300);
	ck_assert_uint_eq(st.flags, 4194560);
	ck_assert_uint_eq(st.image.start_stack, 0); /* a line that ends before them */
	ck_assert_int_eq(procfs_parse_stat("1 (x) S 1 2", 11, &st), -EINVAL);
	static const char more[] = "9 (x) S 1 9 9 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 98765 "
				   "1052672 300 18446744073709551615 94000 95000 140730000\n";
	ck_assert_int_eq(procfs_parse_stat(more, strlen(more), &st), 0);
	ck_assert_uint_eq(st.image.start_code, 94000);
	ck_assert_uint_eq(st.image.end_code, 95000);
	ck_assert_uint_eq(st.image.start_stack, 140730000);
	ck_assert_uint_eq(st.rss_pages, 300);
}
END_TEST

START_TEST(io_parse)
{
	static const char io[] = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n"
				 "write_bytes: 8192\ncancelled_write_bytes: 99\n";
	uint64_t r, w;

	ck_assert_int_eq(procfs_parse_io(io, strlen(io), &r, &w), 0);
	ck_assert_uint_eq(r, 4096);
	ck_assert_uint_eq(w, 8192);
	ck_assert_int_eq(procfs_parse_io("rchar: 1\n", 9, &r, &w), -EINVAL);
}
END_TEST

START_TEST(uid_parse)
{
	static const char status[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
				     "Uid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n";
	uint32_t uid;

	ck_assert_int_eq(procfs_parse_uid(status, strlen(status), &uid), 0);
	ck_assert_uint_eq(uid, 1000); /* the real uid, not the effective 0 */
	ck_assert_int_eq(procfs_parse_uid("Name:\tx\n", 8, &uid), -EINVAL);
	ck_assert_int_eq(procfs_parse_uid("Uid:\t4294967296\t0\n", 19, &uid), -EINVAL);
}
END_TEST

/* A process whose real uid is not its effective one: the row's is the real. */
START_TEST(uid_of_a_setuid_process)
{
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY), ready[2], status;
	uint32_t uid = 0;
	pid_t child;
	char c;

	ck_assert_int_ge(procfd, 0);
	ck_assert_int_eq(procfs_uid(procfd, getpid(), &uid), 0);
	ck_assert_uint_eq(uid, getuid());
	if (geteuid() != 0)
		return; /* only root may give a child another real uid */
	ck_assert_int_eq(pipe(ready), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(ready[0]);
		if (setresuid(65534, 0, 0) != 0 || write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(procfs_uid(procfd, child, &uid), 0);
	ck_assert_uint_eq(uid, 65534);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(ready[0]);
	close(procfd);
}
END_TEST

START_TEST(self)
{
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY);
	char buf[1024], *exe, *label;
	struct proc_stat st;
	size_t len;
	ssize_t n;

	ck_assert_int_ge(procfd, 0);
	n = procfs_read_at(procfd, "self/stat", buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(procfs_parse_stat(buf, (size_t)n, &st), 0);
	ck_assert_uint_ge(st.threads, 1);
	ck_assert_int_eq(procfs_readlink(procfd, getpid(), "exe", &exe, &len), 0);
	ck_assert_ptr_nonnull(strstr(exe, "test_sampler_procfs"));
	free(exe);
	/* CROFT_LABEL is the only variable read from environ */
	if (getenv("CROFT_LABEL")) {
		ck_assert_int_eq(procfs_label(procfd, getpid(), &label, &len), 0);
		ck_assert_str_eq(label, getenv("CROFT_LABEL"));
		free(label);
	} else {
		ck_assert_int_eq(procfs_label(procfd, getpid(), &label, &len), -ENOENT);
	}
	close(procfd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("procfs");
	TCase *tc = tcase_create("procfs");

	tcase_add_test(tc, stat_parse);
	tcase_add_test(tc, io_parse);
	tcase_add_test(tc, uid_parse);
	tcase_add_test(tc, uid_of_a_setuid_process);
	tcase_add_test(tc, self);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
