/*
 * test_log.c: the logger's two formats (terminal, journal), errno kept,
 * debug gating, and bad input (garbage JOURNAL_STREAM, huge messages).
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "testlib.h"

static char out_path[64];

/* Points stderr at a fresh file; each test runs in its own process. */
static void capture(void)
{
	int fd;

	snprintf(out_path, sizeof(out_path), "/tmp/croft-test-log.XXXXXX");
	fd = mkstemp(out_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	unlink(out_path);
}

static char *captured(void)
{
	static char buf[16384];
	ssize_t n = pread(STDERR_FILENO, buf, sizeof(buf) - 1, 0);

	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

static void assert_matches(const char *text, const char *pattern)
{
	regex_t re;

	ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0);
	ck_assert_msg(
		regexec(&re, text, 0, NULL, 0) == 0, "'%s' does not match /%s/", text, pattern);
	regfree(&re);
}

static void set_journal_stream_to_stderr(void)
{
	struct stat st;
	char value[64];

	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(value, sizeof(value), "%llu:%llu", (unsigned long long)st.st_dev,
		(unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", value, 1);
}

START_TEST(test_terminal_format)
{
	capture();
	unsetenv("JOURNAL_STREAM");
	log_init("croft-writer", false);
	log_info("rotated %d files", 3);
	assert_matches(captured(), "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z "
				   "croft-writer: rotated 3 files$");
}
END_TEST

START_TEST(test_journal_format)
{
	capture();
	set_journal_stream_to_stderr();
	log_init("croft-writer", true);
	log_info("hello");
	log_warnx("careful");
	log_notice("note");
	log_debug("dbg");
	ck_assert_str_eq(captured(), "<6>hello\n<4>careful\n<5>note\n<7>dbg\n");
}
END_TEST

/* JOURNAL_STREAM naming another file (stderr redirected) or garbage: terminal. */
START_TEST(test_journal_stream_mismatch)
{
	static const char *const values[] = { "1:2", "garbage", "", ":", "99999999999999999999:1" };

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		capture();
		setenv("JOURNAL_STREAM", values[i], 1);
		log_init("croft-test", false);
		log_info("terminal");
		assert_matches(
			captured(), "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z croft-test: terminal$");
	}
}
END_TEST

START_TEST(test_errno_kept)
{
	capture();
	unsetenv("JOURNAL_STREAM");
	log_init("croft-test", false);
	errno = ENOSPC;
	log_warn("append %s", "segment");
	ck_assert_int_eq(errno, ENOSPC);
	log_info("x");
	log_debug("y");
	ck_assert_int_eq(errno, ENOSPC);
	assert_matches(captured(), "croft-test: append segment: No space left on device$");
}
END_TEST

START_TEST(test_debug_gated)
{
	capture();
	unsetenv("JOURNAL_STREAM");
	log_init("croft-test", false);
	log_debug("hidden");
	ck_assert_ptr_null(strstr(captured(), "hidden"));
	log_init("croft-test", true);
	log_debug("shown");
	ck_assert_ptr_nonnull(strstr(captured(), "shown"));
}
END_TEST

START_TEST(test_huge_message)
{
	char *big = malloc(100000);

	capture();
	set_journal_stream_to_stderr();
	log_init("croft-test", false);
	memset(big, 'x', 99999);
	big[99999] = '\0';
	log_info("%s", big);
	ck_assert_uint_lt(strlen(captured()), 8192);
	ck_assert_uint_gt(strlen(captured()), 1000);
	free(big);
}
END_TEST

/* A newline in logged data (a process name, a path) cannot forge a line. */
START_TEST(test_no_forged_lines)
{
	capture();
	set_journal_stream_to_stderr();
	log_init("croft-test", false);
	log_info("comm %s", "evil\n<0>root compromised\x1b[2J");
	ck_assert_str_eq(captured(), "<6>comm evil?<0>root compromised?[2J\n");
}
END_TEST

START_TEST(test_fatalx_exits)
{
	capture();
	log_init("croft-test", false);
	fatalx("cannot go on");
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");

	tcase_add_test(tc, test_terminal_format);
	tcase_add_test(tc, test_journal_format);
	tcase_add_test(tc, test_journal_stream_mismatch);
	tcase_add_test(tc, test_errno_kept);
	tcase_add_test(tc, test_debug_gated);
	tcase_add_test(tc, test_huge_message);
	tcase_add_test(tc, test_no_forged_lines);
	tcase_add_exit_test(tc, test_fatalx_exits, 1);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(log_suite());
}
