/*
 * test_client.c: the client layer against a server played by the test in
 * this process: nothing listening (no connection, no callback), a server
 * that never says HELLO (down at the deadline), one that says it for the
 * wrong role (refused), one that says it right and then sends a packet
 * larger than libevent reads at once (whole, SOCK_SEQPACKET) or a message
 * the owner refuses (SOCK_STREAM), and one that closes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "client.h"
#include "log.h"
#include "msg.h"
#include "sock.h"
#include "testlib.h"

#define DEADLINE_MS 200
#define BIG_BYTES   20000 /* a bufferevent reads 4096 bytes at once: a packet that long is cut */

static char dir[64], path[128];

/* What the owner's callbacks saw. */
static struct {
	int ready, messages, downs;
	uint32_t last_len;
	struct client_end end;
	int refuse; /* what message returns */
} seen;

static void on_ready(void *ctx, const struct msg_hello *hello)
{
	seen.ready++;
}

static int on_message(void *ctx, const struct msg_hdr *hdr, const uint8_t *payload)
{
	seen.messages++;
	seen.last_len = hdr->len;
	return seen.refuse;
}

static void on_down(void *ctx, const struct client_end *end)
{
	seen.downs++;
	seen.end = *end;
}

static struct client_ops ops = {
	.peer_role = ROLE_PROBE,
	.hello_deadline_ms = DEADLINE_MS,
	.message_max = 1024,
	.ready = on_ready,
	.message = on_message,
	.down = on_down,
};

/* A listening socket of type at path, and a client for it. */
static int start(struct event_base *base, int type, struct client **ret_client)
{
	int fd;

	memset(&seen, 0, sizeof(seen));
	log_init("test-client", false);
	snprintf(dir, sizeof(dir), "/tmp/croft-test-client.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/test.sock", dir);
	ops.type = type;
	ck_assert_ptr_nonnull(*ret_client = client_new(base, path, &ops, NULL));
	fd = sock_listen(path, type, (gid_t)-1);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void stop(struct client *client, int listen_fd)
{
	client_free(client);
	close(listen_fd);
	unlink(path);
	rmdir(dir);
}

/* Connects the client and accepts it: the server's end, our HELLO read off it
 * (a stream's is written by the loop). */
static int connect_accept(struct event_base *base, struct client *client, int listen_fd)
{
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, 0, 0);
	long long end = tl_now_ms() + 2000;
	uint8_t buf[256];
	ssize_t n;
	int fd;

	ck_assert_int_eq(client_connect(client, &hello), 0);
	ck_assert_int_eq(client_phase(client), CLIENT_HELLO);
	fd = accept(listen_fd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) < 0 && tl_now_ms() < end)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(n, sizeof(struct msg_hdr) + sizeof(hello));
	ck_assert_uint_eq(((struct msg_hdr *)buf)->type, MT_HELLO);
	return fd;
}

/* Runs the loop until the callbacks saw want downs or messages, at most timeout_ms. */
static bool loop_until(struct event_base *base, const int *count, int want, int timeout_ms)
{
	long long end = tl_now_ms() + timeout_ms;
	struct timeval step = { 0, 10 * 1000 };

	while (tl_now_ms() < end && *count < want) {
		event_base_loopexit(base, &step);
		event_base_dispatch(base);
	}
	return *count >= want;
}

static void send_hello(int fd, uint32_t role)
{
	struct msg_hello hello = msg_hello_make(role, 0, 0);

	ck_assert_int_eq(msg_send_packet(fd, MT_HELLO, &hello, sizeof(hello), NULL, 0), 0);
}

START_TEST(test_absent_and_silent)
{
	struct event_base *base = event_base_new();
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, 0, 0);
	struct client *client;
	int lfd = start(base, SOCK_SEQPACKET, &client), fd;

	close(lfd);
	unlink(path);
	ck_assert_int_eq(client_connect(client, &hello), -ENOENT);
	ck_assert_int_eq(client_phase(client), CLIENT_DOWN);
	lfd = sock_listen(path, SOCK_SEQPACKET, (gid_t)-1);
	fd = connect_accept(base, client, lfd);
	ck_assert(loop_until(base, &seen.downs, 1, 10 * DEADLINE_MS));
	ck_assert_int_eq(seen.end.err, -ETIMEDOUT);
	ck_assert(!seen.end.hello_seen && !seen.end.refused && !seen.ready);
	ck_assert_int_eq(client_phase(client), CLIENT_DOWN);
	close(fd);
	stop(client, lfd);
	event_base_free(base);
}
END_TEST

START_TEST(test_packets_whole)
{
	struct event_base *base = event_base_new();
	struct client *client;
	int lfd = start(base, SOCK_SEQPACKET, &client), fd = connect_accept(base, client, lfd);
	static uint8_t big[BIG_BYTES];

	send_hello(fd, ROLE_PROBE);
	ck_assert(loop_until(base, &seen.ready, 1, 2000));
	ck_assert_int_eq(client_phase(client), CLIENT_READY);
	ck_assert_int_eq(msg_send_packet(fd, MT_PROBE_PROCS, big, sizeof(big), NULL, 0), 0);
	ck_assert(loop_until(base, &seen.messages, 1, 2000));
	ck_assert_uint_eq(seen.last_len, BIG_BYTES);
	/* past the HELLO the deadline is off; the server's close is told once */
	ck_assert(!loop_until(base, &seen.downs, 1, 3 * DEADLINE_MS));
	close(fd);
	ck_assert(loop_until(base, &seen.downs, 1, 2000));
	ck_assert(seen.end.err == 0 && seen.end.hello_seen && !seen.end.refused);
	stop(client, lfd);
	event_base_free(base);
}
END_TEST

START_TEST(test_stream_refusals)
{
	struct event_base *base = event_base_new();
	struct msg_ack ack = { 0 };
	struct client *client;
	int lfd = start(base, SOCK_STREAM, &client), fd = connect_accept(base, client, lfd);

	send_hello(fd, ROLE_WRITER); /* not the role asked for */
	ck_assert(loop_until(base, &seen.downs, 1, 2000));
	ck_assert(seen.end.refused && !seen.end.hello_seen && !seen.ready);
	ck_assert_int_eq(seen.end.err, -EPROTONOSUPPORT);
	close(fd);
	fd = connect_accept(base, client, lfd);
	send_hello(fd, ROLE_PROBE);
	ck_assert_int_eq(client_send(client, MT_BATCH, "rows", 4, NULL, 0), 0);
	seen.refuse = -EPROTO;
	ck_assert_int_eq(msg_send_packet(fd, MT_ACK, &ack, sizeof(ack), NULL, 0), 0);
	ck_assert(loop_until(base, &seen.downs, 2, 2000));
	ck_assert(seen.ready == 1 && seen.messages == 1);
	ck_assert(seen.end.refused && seen.end.hello_seen && seen.end.err == -EPROTO);
	close(fd);
	stop(client, lfd);
	event_base_free(base);
}
END_TEST

static Suite *client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("client");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_absent_and_silent);
	tcase_add_test(tc, test_packets_whole);
	tcase_add_test(tc, test_stream_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(client_suite());
}
