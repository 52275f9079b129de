/*
 * test_fileio.c: bounded whole-file reads: exact sizes, the limit, /proc
 * files (size 0), and what must be refused without hanging (FIFO, device,
 * directory, missing file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static Suite *fileio_suite(void)
{
	Suite *s = suite_create("fileio");
	TCase *tc = tcase_create("fileio");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_proc_file);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(fileio_suite());
}
