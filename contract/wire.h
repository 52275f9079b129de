/*
 * wire.h: the messages croft's processes exchange, as they are on the
 * wire: the fixed header, the one type enum (numbered in blocks per
 * sender), the roles and the fixed-width payloads with their sizes
 * asserted, and the limits both ends hold.  Any process, any privilege;
 * common/msg.c frames and parses them, probe_wire.h has the probe's.
 */
#ifndef CROFT_WIRE_H
#define CROFT_WIRE_H

#include <stdint.h>

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

	/* sampler -> probe; payloads in contract/probe_wire.h */
	MT_PROBE_POLL = 0x0300, /* give me the deltas since your last answer */

	/* probe -> sampler; payloads in contract/probe_wire.h */
	MT_PROBE_PROCS = 0x0400,  /* a packet of per-tgid records */
	MT_PROBE_EXITS = 0x0401,  /* a packet of exits since the last answer */
	MT_PROBE_END = 0x0402,    /* closes one answer, with the drop counters */
	MT_PROBE_FINALS = 0x0403, /* a packet of reaped groups' final figures */

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

/* MT_CTL_LABEL's limits: croftctl's checks, the sampler's, and CROFT_LABEL's too. */
#define CTL_LABEL_MAX    1024 /* bytes of a label */
#define CTL_ID_MAX       128  /* bytes of a container id croftctl sends */
#define CTL_LABEL_ID_LEN 64   /* a label's container id: this many lowercase hex digits */

/* CTL_REPLY: status 0 ok, else a positive errno; text is JSON for STATUS. */
struct msg_ctl_reply {
	int32_t status;
	uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct msg_ctl_reply) == 8, "msg_ctl_reply is 8 bytes");

#endif
