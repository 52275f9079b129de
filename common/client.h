/*
 * client.h: the client end of a croft daemon socket over libevent (the
 * sampler's links to probe.sock and writer.sock): a connect that never
 * blocks, our HELLO sent and the peer's awaited until a deadline and checked
 * for its role, then whole messages both ways: a bufferevent for a stream,
 * a packet a message for SOCK_SEQPACKET.  How a connection ended reaches its
 * owner once.  Any process; in croft-sampler, the croft user.
 */
#ifndef CROFT_CLIENT_H
#define CROFT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct msg_hdr;
struct msg_hello;
struct client;

enum client_phase { CLIENT_DOWN, CLIENT_HELLO, CLIENT_READY };

/* How a connection ended: it is closed when the owner hears of it. */
struct client_end {
	int err;         /* 0: the peer closed it; -ETIMEDOUT: no HELLO in time; else -errno */
	bool refused;    /* a message of the peer's was refused (err says why) */
	bool hello_seen; /* it had come to CLIENT_READY */
};

struct client_ops {
	int type;              /* SOCK_STREAM or SOCK_SEQPACKET */
	uint32_t peer_role;    /* the role the peer's HELLO must name */
	int hello_deadline_ms; /* from the connect to the peer's HELLO */
	size_t message_max;    /* SOCK_STREAM: payload bytes of one message */
	size_t output_low;     /* SOCK_STREAM: writable once the output drains below this */
	/* The peer's HELLO came and was right. */
	void (*ready)(void *ctx, const struct msg_hello *hello);
	/* One message after the HELLO; -errno refuses it and ends the connection. */
	int (*message)(void *ctx, const struct msg_hdr *hdr, const uint8_t *payload);
	/* SOCK_STREAM: the output drained below output_low.  May be NULL. */
	void (*writable)(void *ctx);
	/* The connection ended (not called for client_close). */
	void (*down)(void *ctx, const struct client_end *end);
};

/* NULL on ENOMEM; path is copied, ops kept. */
struct client *client_new(
	struct event_base *base, const char *path, const struct client_ops *ops, void *ctx);
void client_free(struct client *client);
const char *client_path(const struct client *client);
enum client_phase client_phase(const struct client *client);

/*
 * Connects without blocking (a full backlog is -EAGAIN) and sends hello;
 * the peer's HELLO is then awaited in the loop.  0, or -errno and no
 * connection (down is not called).
 */
int client_connect(struct client *client, const struct msg_hello *hello);
/* Ends the connection, if any, without calling down. */
void client_close(struct client *client);
/* One message: SOCK_STREAM queues it, SOCK_SEQPACKET sends it now.  0 or -errno. */
int client_send(struct client *client, uint32_t type, const void *fixed, size_t fixed_len,
	const void *tail, size_t tail_len);
/* SOCK_STREAM: bytes queued towards the peer and not yet written. */
size_t client_queued(const struct client *client);

#endif
