/*
 * msg.h: the one protocol between croft's processes.  Every message is a
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

struct evbuffer;
struct msg_cursor;

#define CROFT_PROTO_VERSION 1
#define MSG_PAYLOAD_MAX     (64u << 20) /* bytes; a 5 000-process poll is ~6 MiB */
#define MSG_PACKET_MAX      (48u << 10) /* bytes of one SOCK_SEQPACKET message */
#define MSG_CTL_TEXT_MAX    (1u << 20)  /* bytes of a control reply's text */

struct msg_hdr {
	uint32_t type; /* enum msg_type */
	uint32_t len;  /* payload bytes after this header */
};
_Static_assert(sizeof(struct msg_hdr) == 8, "msg_hdr is 8 bytes on the wire");

/* Numbered in blocks per sender; a number is never reused. */
enum msg_type {
	/* any peer: first message on a connection */
	MT_HELLO = 0x0001,

	/* sampler -> writer */
	MT_BATCH = 0x0100, /* struct msg_batch + whole JSON lines */

	/* writer -> sampler */
	MT_ACK = 0x0200, /* struct msg_ack */

	/* sampler -> probe; payloads in probe/probe_proto.h */
	MT_PROBE_POLL = 0x0300, /* give me the deltas since your last answer */

	/* probe -> sampler; payloads in probe/probe_proto.h */
	MT_PROBE_PROCS = 0x0400, /* a packet of per-tgid records */
	MT_PROBE_EXITS = 0x0401, /* a packet of exits since the last answer */
	MT_PROBE_END = 0x0402,   /* closes one answer, with the drop counters */

	/* control client -> daemon; one request per connection */
	MT_CTL_STATUS = 0x0500, /* empty */
	MT_CTL_RELOAD = 0x0501, /* empty */
	MT_CTL_LABEL = 0x0502,  /* container id NUL label NUL; empty label clears */

	/* daemon -> control client */
	MT_CTL_REPLY = 0x0600, /* struct msg_ctl_reply + NUL-terminated text */
};

enum msg_role {
	ROLE_SAMPLER = 1,
	ROLE_WRITER = 2,
	ROLE_PROBE = 3,
	ROLE_CTL = 4,
};

/*
 * HELLO.  sampler -> writer: the sampler's spool epoch.  writer -> sampler:
 * the last committed (epoch, seq), so the sampler can drop what is already
 * on disk and resend the rest in order.  probe <-> sampler: epoch and seq 0.
 */
struct msg_hello {
	uint32_t version; /* CROFT_PROTO_VERSION */
	uint32_t role;    /* enum msg_role of the sender */
	uint64_t epoch;
	uint64_t seq;
};
_Static_assert(sizeof(struct msg_hello) == 24, "msg_hello is 24 bytes");

/*
 * BATCH: one poll's rows.  epoch names the sampler's spool (random, chosen
 * when the spool is created); seq grows by one per batch within an epoch.
 * The tail is `bytes` of JSON lines, each ending in '\n'.
 */
struct msg_batch {
	uint64_t epoch;
	uint64_t seq;
	uint64_t unix_ms; /* the poll's wall clock */
	uint32_t rows;
	uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct msg_batch) == 32, "msg_batch is 32 bytes");

/* ACK: (epoch, seq) is appended and its commit recorded. */
struct msg_ack {
	uint64_t epoch;
	uint64_t seq;
};
_Static_assert(sizeof(struct msg_ack) == 16, "msg_ack is 16 bytes");

/* CTL_REPLY: status 0 ok, else a positive errno; text is JSON for STATUS. */
struct msg_ctl_reply {
	int32_t status;
	uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct msg_ctl_reply) == 8, "msg_ctl_reply is 8 bytes");

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
