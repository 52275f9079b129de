/*
 * fuzz_msg.c: libFuzzer harness for the framing: arbitrary bytes as a
 * stream through msg_pull and the payload cursors, and as one SEQPACKET
 * packet through msg_recv_packet.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads a payload the way the daemons do; must never overrun. */
static void parse_payload(const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_cursor cur;
	struct msg_batch batch;
	const uint8_t *tail;
	const char *str;
	size_t len;

	msg_cursor_init(&cur, payload, hdr->len);
	switch (hdr->type) {
	case MT_BATCH:
		if (msg_get(&cur, &batch, sizeof(batch)) == 0)
			msg_get_rest(&cur, &tail, &len);
		break;
	case MT_CTL_LABEL:
		if (msg_get_str(&cur, &str, 128) == 0 && msg_get_str(&cur, &str, 256) == 0)
			(void)msg_end(&cur);
		break;
	default:
		msg_get_rest(&cur, &tail, &len);
		if (len != hdr->len)
			abort();
	}
}

static void fuzz_stream(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	struct msg_hdr hdr;
	uint8_t *payload;
	int r;

	evbuffer_add(in, data, size);
	while ((r = msg_pull(in, 1u << 16, &hdr, &payload)) == 1) {
		if (hdr.len > (1u << 16) || !msg_type_known(hdr.type))
			abort();
		parse_payload(&hdr, payload);
		free(payload);
	}
	if (r != 0 && r != -EMSGSIZE && r != -EPROTO && r != -ENOMEM)
		abort();
	evbuffer_free(in);
}

static void fuzz_packet(const uint8_t *data, size_t size)
{
	static int sv[2] = { -1, -1 };
	uint8_t buf[4096];
	struct msg_hdr hdr;

	if (sv[0] < 0 && socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		abort();
	if (size > MSG_PACKET_MAX || send(sv[0], data, size, 0) != (ssize_t)size)
		return;
	if (msg_recv_packet(sv[1], buf, sizeof(buf), &hdr) == 1) {
		if (sizeof(hdr) + hdr.len > sizeof(buf))
			abort();
		parse_payload(&hdr, buf + sizeof(hdr));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_stream(data + 1, size - 1);
	else if (size > 1) /* an empty packet reads as an orderly close */
		fuzz_packet(data + 1, size - 1);
	return 0;
}
