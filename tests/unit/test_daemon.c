/*
 * test_daemon.c: the daemons' shared options (with bad ones), the runtime
 * directory (nested, existing, blocked by a file; made by systemd for a
 * root daemon whose chown is denied), and notify calls being harmless
 * outside systemd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "config.h"
#include "daemon.h"
#include "sandbox.h"
#include "sock.h"
#include "testlib.h"

static const struct option long_options[] = {
	DAEMON_LONG_OPTIONS,
	{ "data-dir", required_argument, NULL, 'D' },
	{ NULL, 0, NULL, 0 },
};

/* Parses argv like a daemon's main() does; returns the --data-dir value. */
static const char *parse(struct daemon_opts *opts, int argc, char **argv)
{
	const char *data_dir = NULL;
	int opt;

	optind = 1;
	daemon_opts_init(opts, "croft-test", "  -D, --data-dir DIR\n");
	while ((opt = getopt_long(argc, argv, DAEMON_SHORT_OPTIONS "D:", long_options, NULL)) !=
		-1) {
		if (daemon_option(opts, opt, optarg))
			continue;
		if (opt == 'D')
			data_dir = optarg;
		else
			daemon_bad_option(opts, argv, opt); /* exits 2 */
	}
	return data_dir;
}

START_TEST(test_options)
{
	char *argv[] = { "croft-test", "--config", "/x.conf", "-r", "/tmp/rt", "--user", "nobody",
		"-n", "-v", "--data-dir", "/d", NULL };
	struct daemon_opts opts;

	ck_assert_str_eq(parse(&opts, 11, argv), "/d");
	ck_assert_str_eq(opts.config_path, "/x.conf");
	ck_assert_str_eq(opts.runtime_dir, "/tmp/rt");
	ck_assert_str_eq(opts.user, "nobody");
	ck_assert(opts.check_only);
	ck_assert(opts.verbose);

	char *none[] = { "croft-test", NULL };
	ck_assert_ptr_null(parse(&opts, 1, none));
	ck_assert_str_eq(opts.config_path, CROFT_CONF_PATH);
	ck_assert_str_eq(opts.runtime_dir, CROFT_RUNTIME_DIR);
	ck_assert_ptr_null(opts.user);
	ck_assert(!opts.check_only);
}
END_TEST

START_TEST(test_help_exits_0)
{
	char *argv[] = { "croft-test", "--help", NULL };
	struct daemon_opts opts;

	freopen("/dev/null", "w", stdout);
	parse(&opts, 2, argv);
}
END_TEST

START_TEST(test_version_exits_0)
{
	char *argv[] = { "croft-test", "--version", NULL };
	struct daemon_opts opts;

	freopen("/dev/null", "w", stdout);
	parse(&opts, 2, argv);
}
END_TEST

START_TEST(test_unknown_option_exits_2)
{
	char *argv[] = { "croft-test", "--bogus", NULL };
	struct daemon_opts opts;

	freopen("/dev/null", "w", stderr);
	parse(&opts, 2, argv);
}
END_TEST

START_TEST(test_missing_argument_exits_2)
{
	char *argv[] = { "croft-test", "--config", NULL };
	struct daemon_opts opts;

	freopen("/dev/null", "w", stderr);
	parse(&opts, 2, argv);
}
END_TEST

START_TEST(test_runtime_dir)
{
	char base[] = "/tmp/croft-test-rt.XXXXXX", path[128], file[160];
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/a/b/run", base);
	ck_assert_int_eq(daemon_runtime_dir(path, getegid()), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0750);
	ck_assert_int_eq(daemon_runtime_dir(path, (gid_t)-1), 0); /* exists: fine */
	snprintf(file, sizeof(file), "%s/file", base);
	ck_assert_int_ge(close(open(file, O_CREAT | O_WRONLY, 0600)), 0);
	ck_assert_int_eq(daemon_runtime_dir(file, (gid_t)-1), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/file/sub", base);
	ck_assert_int_eq(daemon_runtime_dir(path, (gid_t)-1), -ENOTDIR);
	ck_assert_int_eq(daemon_runtime_dir("", (gid_t)-1), -ENAMETOOLONG);
	unlink(file);
	snprintf(path, sizeof(path), "rm -rf %s", base);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

/*
 * croft-probe's unit: root in group croft (Group=), chown denied with EPERM
 * by SystemCallFilter=~@privileged, the runtime directory already made
 * root:croft 0750 by systemd.  Nothing needs a chown, so none is tried.
 * Exit codes of the child: 1 runtime dir, 2 socket.
 */
static int in_chown_denied_sandbox(const char *dir, const char *sock_path)
{
	static const char *const chown_calls[] = { "chown", "fchown", "fchownat", "lchown", NULL };

	if (sandbox_apply(chown_calls) < 0)
		return 3;
	if (daemon_runtime_dir(dir, getegid()) < 0)
		return 1;
	if (sock_listen(sock_path, SOCK_STREAM, getegid()) < 0)
		return 2;
	return 0;
}

START_TEST(test_runtime_dir_chown_denied)
{
	char dir[] = "/tmp/croft-test-rtc.XXXXXX", sock_path[160];
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0750), 0);
	if (geteuid() == 0)
		ck_assert_int_eq(chown(dir, 0, getegid()), 0);
	snprintf(sock_path, sizeof(sock_path), "%s/probe.sock", dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(in_chown_denied_sandbox(dir, sock_path));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"chown denied: %s failed (child status %d)",
		WEXITSTATUS(status) == 1 ? "daemon_runtime_dir" : "sock_listen", status);
	unlink(sock_path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Outside systemd: the loop runs until it is told to exit, no notify call fails. */
START_TEST(test_run_outside_systemd)
{
	struct event_base *base = event_base_new();
	struct timeval soon = { 0, 1000 };

	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	ck_assert_int_eq(event_base_loopexit(base, &soon), 0);
	daemon_run(base, NULL, NULL, NULL, "ready");
	ck_assert(event_base_got_exit(base));
	daemon_notify_status("%d rows", 3);
	event_base_free(base);
}
END_TEST

/* A table of figures: in order, dotted keys nested where they first appear. */
START_TEST(test_figures)
{
	uint64_t epoch = UINT64_MAX; /* as json_pack's (json_int_t) casts wrote it */
	const struct daemon_figure figures[] = {
		{ "name", json_string("x") },
		{ "live.bytes", json_integer(5) },
		{ "ratio", json_real(2.5) },
		{ "live.open", json_boolean(true) },
		{ "error", json_null() },
		{ "list", json_array() },
		{ "big", json_integer((json_int_t)epoch) },
	};
	json_t *o = daemon_figures_new(figures, FIGURES_COUNT(figures));
	const struct daemon_figure unmade[] = { { "a", json_integer(1) }, { "b", NULL } };
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

	ck_assert_str_eq(text, "{\"name\":\"x\",\"live\":{\"bytes\":5,\"open\":true},\"ratio\":2.5,"
			       "\"error\":null,\"list\":[],\"big\":-1}");
	free(text);
	json_decref(o);
	ck_assert_ptr_null(daemon_figures_new(unmade, FIGURES_COUNT(unmade))); /* NULL: ENOMEM */
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("daemon");

	tcase_add_test(tc, test_options);
	tcase_add_exit_test(tc, test_help_exits_0, 0);
	tcase_add_exit_test(tc, test_version_exits_0, 0);
	tcase_add_exit_test(tc, test_unknown_option_exits_2, 2);
	tcase_add_exit_test(tc, test_missing_argument_exits_2, 2);
	tcase_add_test(tc, test_runtime_dir);
	tcase_add_test(tc, test_runtime_dir_chown_denied);
	tcase_add_test(tc, test_run_outside_systemd);
	tcase_add_test(tc, test_figures);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(daemon_suite());
}
