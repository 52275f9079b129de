/*
 * msg.h: framing and parsing of the one protocol between croft's
 * processes (its messages are in contract/wire.h).  Every message is a
 * fixed header (type, payload length) and a payload: a fixed-width struct,
 * optionally followed by a variable tail.  Lengths are bounded before any
 * allocation, payloads are read with bounded cursors that must end exactly
 * at the payload's end, and the first message on every connection is
 * MT_HELLO with the protocol version.  Any process, any privilege.
 */
#ifndef CROFT_MSG_H
#define CROFT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct evbuffer;
struct msg_cursor;

/* The HELLO a sender of role says first; epoch and seq as above, else 0. */
struct msg_hello msg_hello_make(uint32_t role, uint64_t epoch, uint64_t seq);
/*
 * Checks a peer's first message as the HELLO of a sender of role (payload
 * positioned at its start).  Returns 0 with *ret_hello; -EPROTO when it is
 * not a HELLO, -EBADMSG when the payload is not exactly a struct msg_hello,
 * -EPROTONOSUPPORT for another version or role.
 */
int msg_hello_check(
	uint32_t type, struct msg_cursor *payload, uint32_t role, struct msg_hello *ret_hello);

const char *msg_type_name(uint32_t type);
bool msg_type_known(uint32_t type);

/* Bounded reads of a received payload; each fails with -EBADMSG, never overruns. */
struct msg_cursor {
	const uint8_t *pos;
	size_t left;
};
void msg_cursor_init(struct msg_cursor *cur, const void *payload, size_t len);
int msg_get(struct msg_cursor *cur, void *ret, size_t len);
/* A NUL-terminated string of at most max bytes before the NUL. */
int msg_get_str(struct msg_cursor *cur, const char **ret_str, size_t max);
/* The rest of the payload, possibly empty. */
void msg_get_rest(struct msg_cursor *cur, const uint8_t **ret_tail, size_t *ret_len);
/* 0 when the payload was read exactly to its end, -EBADMSG otherwise. */
int msg_end(const struct msg_cursor *cur);

/* Stream sockets (writer.sock, *.ctl) over libevent evbuffers. */
int msg_compose(struct evbuffer *out, uint32_t type, const void *fixed, size_t fixed_len,
	const void *tail, size_t tail_len);
/*
 * Takes one whole message off in.  Returns 1 with *ret_hdr and a malloc'd
 * *ret_payload (NULL when empty), 0 when more bytes are needed, -EMSGSIZE
 * when the header announces more than max_len, -EPROTO for an unknown type.
 */
int msg_pull(struct evbuffer *in, size_t max_len, struct msg_hdr *ret_hdr, uint8_t **ret_payload);

/* SOCK_SEQPACKET sockets (probe.sock): one message per packet. */
int msg_send_packet(int fd, uint32_t type, const void *fixed, size_t fixed_len, const void *tail,
	size_t tail_len);
/*
 * Receives one packet into buf.  Returns 1 with *ret_hdr and the payload at
 * buf + sizeof(struct msg_hdr), 0 on orderly close, -EBADMSG when the packet
 * is truncated or its length disagrees with the header, -EPROTO for an
 * unknown type, other -errno from recv.
 */
int msg_recv_packet(int fd, void *buf, size_t buf_len, struct msg_hdr *ret_hdr);

#endif
