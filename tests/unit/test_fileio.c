/*
 * test_fileio.c: bounded whole-file reads: exact sizes, the limit, /proc
 * files (size 0), and what must be refused without hanging (FIFO, device,
 * directory, missing file); a kept directory reached after a drop to
 * nobody through a 0700 parent (root; a failure under CI=true without).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "testlib.h"

static char path[64];

static void write_file(size_t bytes)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/croft-test-fileio.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < bytes; i++)
		ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
}

START_TEST(test_sizes)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 10000 };
	char *buf;
	size_t len;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		write_file(sizes[i]);
		ck_assert_int_eq(file_read_bounded(path, 10000, &buf, &len), 0);
		ck_assert_uint_eq(len, sizes[i]);
		ck_assert_uint_eq(strlen(buf), sizes[i]);
		free(buf);
		ck_assert_int_eq(file_read_bounded(path, sizes[i] ? sizes[i] - 1 : 0, &buf, &len),
			sizes[i] ? -EFBIG : 0);
		if (!sizes[i])
			free(buf);
		unlink(path);
	}
}
END_TEST

/* One write and one read helper: the whole buffer lands at its offset and
 * comes back, shorter only at the end of the file. */
START_TEST(test_write_at)
{
	static char big[1 << 20], back[(1 << 20) + 16];
	char *buf;
	size_t len, got = 0;
	int fd;

	write_file(0);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	memset(big, 'b', sizeof(big));
	ck_assert_int_eq(file_write_at(fd, "aa", 2, 0), 0);
	ck_assert_int_eq(file_write_at(fd, big, sizeof(big), 2), 0);
	ck_assert_int_eq(file_write_at(fd, "c", 1, 1), 0);
	close(fd);
	ck_assert_int_eq(file_read_bounded(path, sizeof(big) + 2, &buf, &len), 0);
	ck_assert_uint_eq(len, sizeof(big) + 2);
	ck_assert(buf[0] == 'a' && buf[1] == 'c' && buf[2] == 'b' && buf[len - 1] == 'b');
	free(buf);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(file_read_at(fd, back, sizeof(back), 0, &got), 0);
	ck_assert_uint_eq(got, sizeof(big) + 2);
	ck_assert(back[1] == 'c' && !memcmp(back + 2, big, sizeof(big)));
	ck_assert_int_eq(file_read_at(fd, back, 8, (off_t)sizeof(big) + 1, &got), 0);
	ck_assert_uint_eq(got, 1);
	ck_assert_int_eq(file_read_at(fd, back, 8, (off_t)sizeof(big) + 2, &got), 0);
	ck_assert_uint_eq(got, 0);
	close(fd);
	ck_assert_int_eq(file_read_at(fd, back, 1, 0, &got), -EBADF);
	ck_assert_int_eq(file_write_at(fd, "x", 1, 0), -EBADF);
	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(file_fsync_dir(fd), 0);
	close(fd);
	ck_assert_int_eq(file_fsync_dir(fd), -EBADF);
	unlink(path);
}
END_TEST

START_TEST(test_proc_file)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(file_read_bounded("/proc/self/status", 1 << 20, &buf, &len), 0);
	ck_assert_ptr_nonnull(strstr(buf, "Name:"));
	ck_assert_uint_gt(len, 100);
	free(buf);
	ck_assert_int_eq(file_read_bounded("/proc/self/status", 10, &buf, &len), -EFBIG);
}
END_TEST

START_TEST(test_refused)
{
	char fifo[] = "/tmp/croft-test-fifo.XXXXXX";
	char *buf = NULL;
	size_t len;

	ck_assert_int_eq(file_read_bounded("/dev/zero", 1 << 20, &buf, &len), -EINVAL);
	ck_assert_int_eq(file_read_bounded("/tmp", 1 << 20, &buf, &len), -EINVAL);
	ck_assert_int_eq(file_read_bounded("/nonexistent/x", 1 << 20, &buf, &len), -ENOENT);
	ck_assert_int_eq(close(mkstemp(fifo)), 0);
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(file_read_bounded(fifo, 1 << 20, &buf, &len), -EINVAL); /* no hang */
	unlink(fifo);
	ck_assert_ptr_null(buf);
	ck_assert_str_eq(file_read_strerror(-EINVAL), "not a regular file");
	ck_assert_str_eq(file_read_strerror(-EFBIG), "file too large");
}
END_TEST

/* A 0700 directory holding conf/croft.conf (0755, 0644), given to nobody. */
static void make_private_tree(char top[64], char conf[128], const struct passwd *nobody)
{
	char sub[96];
	FILE *f;

	snprintf(top, 64, "/tmp/croft-test-keep.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(top));
	ck_assert_int_eq(chmod(top, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/conf", top);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(chown(sub, nobody->pw_uid, nobody->pw_gid), 0);
	snprintf(conf, 128, "%s/croft.conf", sub);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fputs("first\n", f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(conf, 0644), 0);
}

/* Replaced the way editors save: a new file renamed over the old one. */
static void replace_file(const char *conf, const char *text)
{
	char tmp[160];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", conf);
	f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(rename(tmp, conf), 0);
}

/* As nobody: 0 when only the kept directory leads to the file, else the
 * number of the step that failed. */
static int read_as_nobody(const struct passwd *nobody, const char *conf, const char *other)
{
	char *buf = NULL;
	size_t len;

	if (setgroups(0, NULL) < 0 ||
		setresgid(nobody->pw_gid, nobody->pw_gid, nobody->pw_gid) < 0 ||
		setresuid(nobody->pw_uid, nobody->pw_uid, nobody->pw_uid) < 0)
		return 1;
	if (open(conf, O_RDONLY) >= 0 || errno != EACCES)
		return 2; /* the 0700 parent must be closed to nobody */
	if (file_read_bounded(conf, 100, &buf, &len) < 0 || strcmp(buf, "second\n"))
		return 3;
	free(buf);
	/* another name in the kept directory: reached too, missing is -ENOENT */
	if (file_read_bounded(other, 100, &buf, &len) != -ENOENT)
		return 4;
	return 0;
}

START_TEST(test_kept_dir)
{
	struct passwd *nobody = getpwnam("nobody");
	char top[64], conf[128], other[160], rm[96];
	int status;
	pid_t pid;

	if (!tl_have_root())
		return;
	ck_assert_ptr_nonnull(nobody);
	make_private_tree(top, conf, nobody);
	snprintf(other, sizeof(other), "%s/conf/other.conf", top);
	ck_assert_int_eq(file_keep_dir(conf), 0);
	ck_assert_int_eq(file_keep_dir(conf), 0);         /* the same directory once */
	ck_assert_int_eq(file_keep_dir("croft.conf"), 0); /* no directory: nothing kept */
	replace_file(conf, "second\n"); /* an edit after the keep is what is read */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(read_as_nobody(nobody, conf, other));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	snprintf(rm, sizeof(rm), "rm -rf %s", top);
	ck_assert_int_eq(system(rm), 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"as nobody through the kept directory: step %d failed", WEXITSTATUS(status));
}
END_TEST

static Suite *fileio_suite(void)
{
	Suite *s = suite_create("fileio");
	TCase *tc = tcase_create("fileio");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_write_at);
	tcase_add_test(tc, test_proc_file);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_kept_dir);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(fileio_suite());
}
