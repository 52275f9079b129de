/*
 * test_ctl.c: the control socket end to end: a real ctl server in a forked
 * child's libevent loop, the blocking client, the SO_PEERCRED policy, and
 * raw bad streams (truncated header, oversized length, unknown type,
 * trailing bytes, no HELLO): each refused and dropped, the server alive.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "ctl.h"
#include "log.h"
#include "msg.h"
#include "sock.h"
#include "testlib.h"

#define NOBODY 65534

static char dir[64], path[128];
static pid_t server_pid;

static int handler(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply)
{
	const char *id, *label;

	switch (type) {
	case MT_CTL_STATUS:
		evbuffer_add_printf(reply, "{\"ok\":true}");
		return 0;
	case MT_CTL_RELOAD:
		evbuffer_add_printf(reply, "croft.conf:3: poll_interval: bad");
		return -EINVAL;
	case MT_CTL_LABEL:
		if (msg_get_str(payload, &id, 128) < 0 || msg_get_str(payload, &label, 256) < 0 ||
			msg_end(payload) < 0)
			return -EBADMSG;
		evbuffer_add_printf(reply, "%s=%s", id, label);
		return 0;
	}
	return -EPROTO;
}

/* Forks the server; returns once its socket accepts. gid: the croft group. */
static void start_server(gid_t gid)
{
	int ready[2];
	char byte;

	snprintf(dir, sizeof(dir), "/tmp/croft-test-ctl.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/test.ctl", dir);
	ck_assert_int_eq(pipe(ready), 0);
	server_pid = fork();
	ck_assert_int_ge(server_pid, 0);
	if (server_pid == 0) {
		struct event_base *base = event_base_new();
		struct ctl_server *server;

		log_init("test-ctl", false);
		if (ctl_server_new(base, path, gid, handler, NULL, &server) < 0)
			_exit(3);
		chmod(path, 0666);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		event_base_dispatch(base);
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &byte, 1), 1);
	close(ready[0]);
}

static void stop_server(void)
{
	int status;

	/* Still alive after everything the test threw at it. */
	ck_assert_int_eq(waitpid(server_pid, &status, WNOHANG), 0);
	kill(server_pid, SIGKILL); /* Check forwards SIGTERM to the whole group */
	waitpid(server_pid, &status, 0);
	unlink(path);
	rmdir(dir);
}

static void request(
	uint32_t type, const void *payload, size_t len, int want_status, const char *want_text)
{
	char *text = NULL;
	int status = -1;

	ck_assert_int_eq(ctl_request(path, type, payload, len, 5000, &status, &text), 0);
	ck_assert_int_eq(status, want_status);
	ck_assert_msg(strstr(text, want_text), "reply '%s' lacks '%s'", text, want_text);
	free(text);
}

START_TEST(test_requests)
{
	static const char label[] = "abc123\0run-7";
	static const char big_label[CTL_ID_MAX + CTL_LABEL_MAX + 3] = "abc";

	start_server((gid_t)-1);
	request(MT_CTL_STATUS, NULL, 0, 0, "{\"ok\":true}");
	if (geteuid() == 0) {
		request(MT_CTL_RELOAD, NULL, 0, EINVAL, "poll_interval: bad");
		request(MT_CTL_LABEL, label, sizeof(label), 0, "abc123=run-7");
		request(MT_CTL_LABEL, "abc", 3, EBADMSG, ""); /* no NUL */
		request(MT_CTL_STATUS, "x", 1, EBADMSG, "unexpected payload");
		request(MT_CTL_LABEL, big_label, sizeof(big_label), EMSGSIZE, "too large");
	} else {
		request(MT_CTL_RELOAD, NULL, 0, EACCES, "reload needs root");
	}
	request(MT_BATCH, NULL, 0, EPROTO, "not a control request");
	/* every control request the message enum names has a row in the policy */
	for (uint32_t type = MT_CTL_STATUS; type < MT_CTL_REPLY; type++) {
		char *text = NULL;
		int status = -1;

		if (!msg_type_known(type))
			continue;
		ck_assert_int_eq(ctl_request(path, type, NULL, 0, 5000, &status, &text), 0);
		ck_assert_msg(!strstr(text, "not a control request"), "%s: no policy row",
			msg_type_name(type));
		free(text);
	}
	ck_assert_int_eq(ctl_request("/nonexistent/x.ctl", MT_CTL_STATUS, NULL, 0, 1000,
				 &(int){ 0 }, &(char *){ NULL }),
		-ENOENT);
	stop_server();
}
END_TEST

/* As root: a client that dropped to nobody is refused reload and label, and
 * status unless it is in the croft group. */
START_TEST(test_policy)
{
	if (!tl_have_root())
		return;
	for (int in_group = 0; in_group <= 1; in_group++) {
		pid_t pid;
		int status;

		start_server(in_group ? NOBODY : 4242);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			char *text = NULL;
			int st = -1;

			if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
				setresuid(NOBODY, NOBODY, NOBODY) < 0)
				_exit(10);
			if (ctl_request(path, MT_CTL_RELOAD, NULL, 0, 5000, &st, &text) < 0 ||
				st != EACCES || !strstr(text, "reload needs root"))
				_exit(11);
			free(text);
			if (ctl_request(path, MT_CTL_LABEL, "a\0b", 4, 5000, &st, &text) < 0 ||
				st != EACCES)
				_exit(12);
			free(text);
			if (ctl_request(path, MT_CTL_STATUS, NULL, 0, 5000, &st, &text) < 0)
				_exit(13);
			if (in_group ? st != 0 : (st != EACCES || !strstr(text, "croft group")))
				_exit(14);
			_exit(0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"nobody client (in_group %d) failed at step %d", in_group,
			WEXITSTATUS(status));
		stop_server();
	}
}
END_TEST

/* Sends raw bytes; returns the reply status (-1: closed without a reply). */
static int raw_exchange(const void *bytes, size_t len, bool shut)
{
	struct msg_ctl_reply reply;
	struct pollfd pfd;
	struct msg_hdr hdr;
	uint8_t buf[4096];
	size_t got = 0;
	ssize_t n;
	int fd = sock_connect(path, SOCK_STREAM);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
	if (shut)
		shutdown(fd, SHUT_WR);
	/* Read until the server closes: it must close, and within the timeout. */
	for (;;) {
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&pfd, 1, 3000), 1);
		n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got == 0)
		return -1;
	ck_assert_uint_ge(got, sizeof(hdr) + sizeof(reply) + 1);
	memcpy(&hdr, buf, sizeof(hdr));
	ck_assert_uint_eq(hdr.type, MT_CTL_REPLY);
	ck_assert_uint_eq(hdr.len, got - sizeof(hdr));
	ck_assert_int_eq(buf[got - 1], '\0');
	memcpy(&reply, buf + sizeof(hdr), sizeof(reply));
	return reply.status;
}

START_TEST(test_bad_streams)
{
	struct msg_hello hello = { CROFT_PROTO_VERSION, ROLE_CTL, 0, 0 };
	uint8_t msg[256];
	struct msg_hdr hdr = { MT_HELLO, sizeof(hello) };
	size_t off;

	start_server((gid_t)-1);
	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), &hello, sizeof(hello));
	off = sizeof(hdr) + sizeof(hello);

	/* Truncated header, then EOF: dropped without a reply. */
	ck_assert_int_eq(raw_exchange(msg, 5, true), -1);
	/* Truncated header after a good HELLO. */
	ck_assert_int_eq(raw_exchange(msg, off + 3, true), -1);
	/* Oversized length. */
	hdr = (struct msg_hdr){ MT_CTL_LABEL, 1u << 30 };
	memcpy(msg + off, &hdr, sizeof(hdr));
	ck_assert_int_eq(raw_exchange(msg, off + sizeof(hdr), false), EMSGSIZE);
	/* Unknown type. */
	hdr = (struct msg_hdr){ 0x7777, 0 };
	memcpy(msg + off, &hdr, sizeof(hdr));
	ck_assert_int_eq(raw_exchange(msg, off + sizeof(hdr), false), EPROTO);
	/* Trailing bytes after the one request. */
	hdr = (struct msg_hdr){ MT_CTL_STATUS, 0 };
	memcpy(msg + off, &hdr, sizeof(hdr));
	memcpy(msg + off + sizeof(hdr), "xyz", 3);
	ck_assert_int_eq(raw_exchange(msg, off + sizeof(hdr) + 3, false), EBADMSG);
	/* No HELLO first. */
	ck_assert_int_eq(raw_exchange(msg + off, sizeof(hdr), false), EPROTO);
	/* HELLO of another version, and a HELLO with a short payload. */
	hello.version = 99;
	memcpy(msg + sizeof(struct msg_hdr), &hello, sizeof(hello));
	ck_assert_int_eq(raw_exchange(msg, off + sizeof(hdr), false), EPROTONOSUPPORT);
	hdr = (struct msg_hdr){ MT_HELLO, 4 };
	memcpy(msg, &hdr, sizeof(hdr));
	ck_assert_int_eq(raw_exchange(msg, sizeof(hdr) + 4, false), EBADMSG);
	/* Connect and close at once. */
	ck_assert_int_eq(raw_exchange(msg, 0, true), -1);

	/* The server is alive and still answers. */
	request(MT_CTL_STATUS, NULL, 0, 0, "ok");
	stop_server();
}
END_TEST

START_TEST(test_client_timeout)
{
	char dir2[] = "/tmp/croft-test-ctl2.XXXXXX", p[128];
	long long start;
	char *text = NULL;
	int status, lfd;

	ck_assert_ptr_nonnull(mkdtemp(dir2));
	snprintf(p, sizeof(p), "%s/mute.ctl", dir2);
	lfd = sock_listen(p, SOCK_STREAM, (gid_t)-1); /* accepts (backlog), never answers */
	ck_assert_int_ge(lfd, 0);
	start = tl_now_ms();
	ck_assert_int_eq(ctl_request(p, MT_CTL_STATUS, NULL, 0, 300, &status, &text), -ETIMEDOUT);
	ck_assert_int_lt(tl_now_ms() - start, 2000);

	/* Backlog full (a daemon that stopped accepting): connect must not block. */
	for (int i = 0; i < 200; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		struct sockaddr_un addr = { .sun_family = AF_UNIX };

		strcpy(addr.sun_path, p);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			close(fd);
			break;
		}
	}
	start = tl_now_ms();
	ck_assert_int_eq(ctl_request(p, MT_CTL_STATUS, NULL, 0, 300, &status, &text), -ETIMEDOUT);
	ck_assert_int_lt(tl_now_ms() - start, 2000);
	close(lfd);
	unlink(p);
	rmdir(dir2);
}
END_TEST

/* Returns true when the server closed fd (EOF) within timeout_ms. */
static bool closed_within(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char byte;

	return poll(&pfd, 1, timeout_ms) == 1 && recv(fd, &byte, 1, 0) <= 0;
}

/* Silent clients are dropped after CTL_TIMEOUT_MS; past the connection limit
 * new ones are closed at once; others are served meanwhile. */
START_TEST(test_slow_clients)
{
	int idle[40], extra;
	long long start;

	start_server((gid_t)-1);
	for (int i = 0; i < 32; i++) {
		idle[i] = sock_connect(path, SOCK_STREAM);
		ck_assert_int_ge(idle[i], 0);
	}
	extra = sock_connect(path, SOCK_STREAM);
	ck_assert_int_ge(extra, 0);
	ck_assert_msg(closed_within(extra, 2000), "connection over the limit not closed");
	close(extra);

	start = tl_now_ms();
	for (int i = 0; i < 32; i++) {
		ck_assert_msg(closed_within(idle[i], CTL_TIMEOUT_MS + 3000),
			"silent client %d not dropped", i);
		close(idle[i]);
	}
	ck_assert_int_ge(tl_now_ms() - start, CTL_TIMEOUT_MS - 1500);
	request(MT_CTL_STATUS, NULL, 0, 0, "ok");
	stop_server();
}
END_TEST

/* A client dripping one byte at a time cannot hold its slot past the timeout. */
START_TEST(test_dripping_client)
{
	struct msg_hello hello = { CROFT_PROTO_VERSION, ROLE_CTL, 0, 0 };
	struct msg_hdr hdr = { MT_HELLO, sizeof(hello) };
	uint8_t msg[sizeof(hdr) + sizeof(hello)];
	long long start;
	int fd;
	bool dropped = false;

	start_server((gid_t)-1);
	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), &hello, sizeof(hello));
	fd = sock_connect(path, SOCK_STREAM);
	ck_assert_int_ge(fd, 0);
	start = tl_now_ms();
	for (size_t i = 0; i < sizeof(msg) && !dropped; i++) {
		if (send(fd, msg + i, 1, MSG_NOSIGNAL) != 1 || closed_within(fd, 400))
			dropped = true;
	}
	ck_assert_msg(dropped || closed_within(fd, CTL_TIMEOUT_MS), "dripping client kept");
	ck_assert_int_lt(tl_now_ms() - start, CTL_TIMEOUT_MS + 2000);
	close(fd);
	request(MT_CTL_STATUS, NULL, 0, 0, "ok");
	stop_server();
}
END_TEST

static Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("ctl");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_requests);
	tcase_add_test(tc, test_policy);
	tcase_add_test(tc, test_bad_streams);
	tcase_add_test(tc, test_client_timeout);
	tcase_add_test(tc, test_slow_clients);
	tcase_add_test(tc, test_dripping_client);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tl_run(ctl_suite());
}
