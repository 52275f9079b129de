/*
 * test_conn.c: the peer layer on a SOCK_SEQPACKET socket, driven in this
 * process's loop: a peer of another uid is closed and counted, one
 * past the cap likewise, a silent one is dropped at its HELLO deadline, one
 * that said HELLO is kept past it, and a dropped peer's owner state is freed.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "log.h"
#include "sock.h"
#include "testlib.h"

#define DEADLINE_MS 200

static char dir[64], path[128];
static int opened, closed;

static int on_open(void *ctx, struct conn *c)
{
	opened++;
	c->data = &opened;
	return 0;
}

/* Any packet counts as the HELLO; EOF closes. */
static void on_read(struct conn *c)
{
	char buf[64];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n == 0)
		conn_closed(c);
	else if (n > 0)
		conn_hello_seen(c);
}

static void on_close(struct conn *c)
{
	if (c->data)
		closed++;
}

static const struct conn_ops ops = {
	.name = "test.sock",
	.type = SOCK_SEQPACKET,
	.conns_max = 1,
	.deadline_ms = DEADLINE_MS,
	.refusal = "not root or the test's user",
	.open = on_open,
	.read = on_read,
	.close = on_close,
};

static struct conn_server *start(struct event_base *base)
{
	struct conn_server *server;

	log_init("test-conn", false);
	snprintf(dir, sizeof(dir), "/tmp/croft-test-conn.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/test.sock", dir);
	ck_assert_int_eq(conn_server_new(base, path, (gid_t)-1, 0, &ops, NULL, &server), 0);
	chmod(path, 0666); /* the socket's mode lets nobody in: SO_PEERCRED must not */
	return server;
}

static void stop(struct conn_server *server)
{
	conn_server_free(server);
	unlink(path);
	rmdir(dir);
}

/* Runs the loop until the server holds want peers, at most timeout_ms. */
static bool loop_until(struct event_base *base, struct conn_server *server, size_t want,
	uint64_t refused, int timeout_ms)
{
	long long end = tl_now_ms() + timeout_ms;
	struct timeval step = { 0, 10 * 1000 };

	while (tl_now_ms() < end) {
		event_base_loopexit(base, &step);
		event_base_dispatch(base);
		if (conn_server_count(server) == want && conn_server_refused(server) == refused)
			return true;
	}
	return false;
}

/* True when the server closed fd (EOF or reset) within timeout_ms. */
static bool closed_within(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char byte;

	return poll(&pfd, 1, timeout_ms) == 1 && recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
}

/* As root: a child dropped to nobody connects and must be closed unserved. */
START_TEST(test_refused)
{
	struct event_base *base;
	struct conn_server *server;
	int status;
	pid_t pid;

	if (!tl_have_root())
		return;
	base = event_base_new();
	server = start(base);
	pid = fork();
	if (pid == 0) {
		int fd;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		fd = sock_connect(path, SOCK_SEQPACKET);
		_exit(fd >= 0 && closed_within(fd, 5000) ? 0 : 4);
	}
	ck_assert(loop_until(base, server, 0, 1, 5000));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(opened, 0);
	stop(server);
	event_base_free(base);
}
END_TEST

START_TEST(test_cap_and_deadline)
{
	struct event_base *base = event_base_new();
	struct conn_server *server = start(base);
	int first, second, third;

	first = sock_connect(path, SOCK_SEQPACKET);
	ck_assert(loop_until(base, server, 1, 0, 2000));
	second = sock_connect(path, SOCK_SEQPACKET);
	ck_assert(loop_until(base, server, 1, 1, 2000)); /* over conns_max */
	ck_assert(closed_within(second, 1000));
	/* silent: dropped at its deadline, its state released */
	ck_assert(loop_until(base, server, 0, 1, 10 * DEADLINE_MS));
	ck_assert(closed_within(first, 1000));
	ck_assert_int_eq(closed, 1);
	/* a HELLO stops the deadline */
	third = sock_connect(path, SOCK_SEQPACKET);
	ck_assert_int_eq(send(third, "hello", 5, 0), 5);
	ck_assert(loop_until(base, server, 1, 1, 2000));
	ck_assert(!loop_until(base, server, 0, 1, 3 * DEADLINE_MS));
	close(third);
	ck_assert(loop_until(base, server, 0, 1, 2000));
	ck_assert_int_eq(opened, 2);
	ck_assert_int_eq(closed, 2);
	close(first);
	close(second);
	stop(server);
	event_base_free(base);
}
END_TEST

static Suite *conn_suite(void)
{
	Suite *s = suite_create("conn");
	TCase *tc = tcase_create("conn");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_cap_and_deadline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(conn_suite());
}
