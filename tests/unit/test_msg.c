/*
 * test_msg.c: framing: bounded cursors, msg_pull on partial, oversized,
 * unknown and exact streams, and SEQPACKET packets that lie about their
 * length.  Stream peers being dropped is tested through ctl in test_ctl.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "msg.h"
#include "testlib.h"

START_TEST(test_cursor)
{
	uint8_t payload[12] = { 1, 0, 0, 0, 'a', 'b', '\0', 'x', 'y', 'z', 'w', 'v' };
	struct msg_cursor cur;
	const uint8_t *tail;
	const char *str;
	uint32_t v;
	size_t len;

	msg_cursor_init(&cur, payload, sizeof(payload));
	ck_assert_int_eq(msg_get(&cur, &v, sizeof(v)), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(msg_get_str(&cur, &str, 8), 0);
	ck_assert_str_eq(str, "ab");
	ck_assert_int_eq(msg_end(&cur), -EBADMSG);               /* bytes left over */
	ck_assert_int_eq(msg_get_str(&cur, &str, 64), -EBADMSG); /* no NUL before the end */
	ck_assert_int_eq(msg_get(&cur, &v, 8), -EBADMSG);        /* past the end */
	msg_get_rest(&cur, &tail, &len);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(tail[0], 'x');
	ck_assert_int_eq(msg_end(&cur), 0);
	ck_assert_int_eq(msg_get(&cur, &v, 1), -EBADMSG);

	msg_cursor_init(&cur, "toolong\0", 8);
	ck_assert_int_eq(msg_get_str(&cur, &str, 3), -EBADMSG); /* longer than max */

	/* An empty payload is NULL (msg_pull): every read fails cleanly. */
	msg_cursor_init(&cur, NULL, 0);
	ck_assert_int_eq(msg_get(&cur, &v, sizeof(v)), -EBADMSG);
	ck_assert_int_eq(msg_get_str(&cur, &str, 8), -EBADMSG);
	msg_get_rest(&cur, &tail, &len);
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_nonnull(tail);
	ck_assert_int_eq(msg_end(&cur), 0);
}
END_TEST

START_TEST(test_names)
{
	ck_assert(msg_type_known(MT_HELLO));
	ck_assert(msg_type_known(MT_CTL_REPLY));
	ck_assert(!msg_type_known(0));
	ck_assert(!msg_type_known(0x7777));
	ck_assert_ptr_nonnull(msg_type_name(0x7777));
	ck_assert_str_ne(msg_type_name(MT_BATCH), msg_type_name(MT_ACK));
}
END_TEST

/* One HELLO check for every link: each way a first message is wrong has its own code. */
START_TEST(test_hello)
{
	struct msg_hello made = msg_hello_make(ROLE_SAMPLER, 7, 9), got = { 0 }, bad;
	uint8_t longer[sizeof(made) + 1] = { 0 };
	struct msg_cursor cur;

	ck_assert_uint_eq(made.version, CROFT_PROTO_VERSION);
	msg_cursor_init(&cur, &made, sizeof(made));
	ck_assert_int_eq(msg_hello_check(MT_HELLO, &cur, ROLE_SAMPLER, &got), 0);
	ck_assert_uint_eq(got.epoch, 7);
	ck_assert_uint_eq(got.seq, 9);
	msg_cursor_init(&cur, &made, sizeof(made));
	ck_assert_int_eq(msg_hello_check(MT_BATCH, &cur, ROLE_SAMPLER, &got), -EPROTO);
	msg_cursor_init(&cur, &made, sizeof(made) - 1);
	ck_assert_int_eq(msg_hello_check(MT_HELLO, &cur, ROLE_SAMPLER, &got), -EBADMSG);
	memcpy(longer, &made, sizeof(made));
	msg_cursor_init(&cur, longer, sizeof(longer));
	ck_assert_int_eq(msg_hello_check(MT_HELLO, &cur, ROLE_SAMPLER, &got), -EBADMSG);
	msg_cursor_init(&cur, &made, sizeof(made));
	ck_assert_int_eq(msg_hello_check(MT_HELLO, &cur, ROLE_WRITER, &got), -EPROTONOSUPPORT);
	bad = made;
	bad.version = CROFT_PROTO_VERSION + 1;
	msg_cursor_init(&cur, &bad, sizeof(bad));
	ck_assert_int_eq(msg_hello_check(MT_HELLO, &cur, ROLE_SAMPLER, &got), -EPROTONOSUPPORT);
}
END_TEST

START_TEST(test_pull_stream)
{
	struct evbuffer *buf = evbuffer_new();
	struct msg_ack ack = { 7, 9 }, got;
	struct msg_hdr hdr;
	uint8_t *payload = NULL;
	uint8_t raw[64];
	size_t n;

	ck_assert_int_eq(msg_compose(buf, MT_ACK, &ack, sizeof(ack), NULL, 0), 0);
	ck_assert_int_eq(msg_compose(buf, MT_CTL_STATUS, NULL, 0, NULL, 0), 0);
	n = evbuffer_get_length(buf);
	ck_assert_uint_eq(n, 8 + 16 + 8);
	evbuffer_remove(buf, raw, n);

	/* Byte by byte: nothing until the message is whole. */
	for (size_t i = 0; i < 8 + 16 - 1; i++) {
		evbuffer_add(buf, raw + i, 1);
		ck_assert_int_eq(msg_pull(buf, 1024, &hdr, &payload), 0);
	}
	evbuffer_add(buf, raw + 23, n - 23);
	ck_assert_int_eq(msg_pull(buf, 1024, &hdr, &payload), 1);
	ck_assert_uint_eq(hdr.type, MT_ACK);
	ck_assert_uint_eq(hdr.len, 16);
	memcpy(&got, payload, sizeof(got));
	ck_assert_uint_eq(got.epoch, 7);
	ck_assert_uint_eq(got.seq, 9);
	free(payload);
	ck_assert_int_eq(msg_pull(buf, 1024, &hdr, &payload), 1);
	ck_assert_uint_eq(hdr.type, MT_CTL_STATUS);
	ck_assert_ptr_null(payload);
	ck_assert_uint_eq(evbuffer_get_length(buf), 0);
	evbuffer_free(buf);
}
END_TEST

START_TEST(test_pull_bad)
{
	struct evbuffer *buf = evbuffer_new();
	struct msg_hdr hdr = { MT_BATCH, 1u << 30 }, got;
	uint8_t *payload = NULL;

	/* Oversized: refused from the header alone, nothing allocated. */
	evbuffer_add(buf, &hdr, sizeof(hdr));
	ck_assert_int_eq(msg_pull(buf, MSG_PAYLOAD_MAX, &got, &payload), -EMSGSIZE);
	evbuffer_drain(buf, evbuffer_get_length(buf));
	hdr.len = 100;
	evbuffer_add(buf, &hdr, sizeof(hdr));
	ck_assert_int_eq(msg_pull(buf, 99, &got, &payload), -EMSGSIZE);
	evbuffer_drain(buf, evbuffer_get_length(buf));
	/* Unknown type. */
	hdr = (struct msg_hdr){ 0x7777, 0 };
	evbuffer_add(buf, &hdr, sizeof(hdr));
	ck_assert_int_eq(msg_pull(buf, 1024, &got, &payload), -EPROTO);
	evbuffer_drain(buf, evbuffer_get_length(buf));
	/* Truncated header: waits, never reads past. */
	evbuffer_add(buf, &hdr, 5);
	ck_assert_int_eq(msg_pull(buf, 1024, &got, &payload), 0);
	evbuffer_free(buf);
	/* Composing more than the maximum fails too. */
	buf = evbuffer_new();
	ck_assert_int_eq(
		msg_compose(buf, MT_BATCH, NULL, 0, "", (size_t)MSG_PAYLOAD_MAX + 1), -EMSGSIZE);
	ck_assert_uint_eq(evbuffer_get_length(buf), 0);
	evbuffer_free(buf);
}
END_TEST

START_TEST(test_packets)
{
	struct msg_hello hello = { CROFT_PROTO_VERSION, ROLE_PROBE, 0, 0 };
	uint8_t buf[256], big[MSG_PACKET_MAX];
	struct msg_hdr hdr;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	ck_assert_int_eq(msg_send_packet(sv[0], MT_HELLO, &hello, sizeof(hello), "ab", 2), 0);
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), 1);
	ck_assert_uint_eq(hdr.type, MT_HELLO);
	ck_assert_uint_eq(hdr.len, sizeof(hello) + 2);

	/* Length field disagreeing with the packet. */
	hdr = (struct msg_hdr){ MT_HELLO, 100 };
	memcpy(buf, &hdr, sizeof(hdr));
	ck_assert_int_eq(send(sv[0], buf, sizeof(hdr) + 24, 0), (ssize_t)(sizeof(hdr) + 24));
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), -EBADMSG);
	/* A packet shorter than a header. */
	ck_assert_int_eq(send(sv[0], "abc", 3, 0), 3);
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), -EBADMSG);
	/* Larger than the receiver's buffer: truncated, refused. */
	memset(big, 0, sizeof(big));
	ck_assert_int_eq(msg_send_packet(sv[0], MT_HELLO, big, 1000, NULL, 0), 0);
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), -EBADMSG);
	/* Unknown type. */
	hdr = (struct msg_hdr){ 0x7777, 0 };
	ck_assert_int_eq(send(sv[0], &hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), -EPROTO);
	/* Over the packet maximum: refused by the sender. */
	ck_assert_int_eq(msg_send_packet(sv[0], MT_HELLO, big, sizeof(big), NULL, 0), -EMSGSIZE);
	/* Orderly close. */
	close(sv[0]);
	ck_assert_int_eq(msg_recv_packet(sv[1], buf, sizeof(buf), &hdr), 0);
	close(sv[1]);
}
END_TEST

static Suite *msg_suite(void)
{
	Suite *s = suite_create("msg");
	TCase *tc = tcase_create("msg");

	tcase_add_test(tc, test_cursor);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_hello);
	tcase_add_test(tc, test_pull_stream);
	tcase_add_test(tc, test_pull_bad);
	tcase_add_test(tc, test_packets);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(msg_suite());
}
