/*
 * conn.h: the peer layer every croft socket shares (writer.sock, probe.sock,
 * each daemon's .ctl): accept, the SO_PEERCRED role check, a limit on peers
 * at once, the HELLO (or whole-exchange) deadline, bounded input, what a
 * peer left unread, and drop with a reason in the log.  The owner parses
 * the messages.  Daemon processes, after the privilege drop.
 */
#ifndef CROFT_CONN_H
#define CROFT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sock.h"

struct event_base;
struct bufferevent;
struct conn_server;

struct conn {
	struct conn_server *server;
	struct sock_peer cred;
	struct bufferevent *bev; /* SOCK_STREAM: the owner reads and writes it */
	int fd;                  /* the socket (SOCK_SEQPACKET: the owner's to use) */
	bool hello_seen;         /* set by conn_hello_seen */
	void *data;              /* the owner's, set in open */
	struct conn_private *priv;
};

struct conn_ops {
	const char *name;      /* "writer.sock": every log line says it */
	int type;              /* SOCK_STREAM or SOCK_SEQPACKET */
	size_t conns_max;      /* peers at once; more are refused */
	size_t conns_per_uid;  /* peers at once of one uid but root; 0: no quota */
	size_t conns_for_root; /* of conns_max, kept for root (croftctl reload, label) */
	int deadline_ms;       /* to complete the HELLO (deadline_whole: the exchange) */
	bool deadline_whole;   /* .ctl: one deadline for request and reply */
	size_t input_max;      /* SOCK_STREAM: bytes buffered from one peer */
	size_t read_step;      /* SOCK_STREAM: bytes read per loop turn, 0: libevent's */
	bool log_closes;       /* log a peer that hung up, at info */
	const char *drop_note; /* what a drop means, for the log; may be NULL */
	/* With a peer uid: why anyone else is refused (logged, the peer closed). */
	const char *refusal;
	/* A new peer; 0, or -errno to close it.  May be NULL. */
	int (*open)(void *ctx, struct conn *c);
	/* Input is there; the owner may free c (conn_drop...) and then must not touch it. */
	void (*read)(struct conn *c);
	/* c is about to be freed: release c->data.  May be NULL. */
	void (*close)(struct conn *c);
};

/*
 * Listens at path (sock_listen: mode 0660, group gid).  Only root, this
 * process's own uid and peer_uid may connect ((uid_t)-1: anyone; each
 * request is then the owner's to check).  Returns 0 or -errno.
 */
int conn_server_new(struct event_base *base, const char *path, gid_t gid, uid_t peer_uid,
	const struct conn_ops *ops, void *ctx, struct conn_server **ret_server);
void conn_server_free(struct conn_server *server);
void *conn_server_ctx(const struct conn_server *server);
struct event_base *conn_server_base(const struct conn_server *server);
size_t conn_server_count(const struct conn_server *server);
/* Peers refused at accept (role, limit), since the start. */
uint64_t conn_server_refused(const struct conn_server *server);
/* Iteration; NULL at the end.  No peer may be freed meanwhile. */
struct conn *conn_first(const struct conn_server *server);
struct conn *conn_next(const struct conn *c);

/* The HELLO was right: a HELLO deadline stops (a whole-exchange one runs on). */
void conn_hello_seen(struct conn *c);
/* Logs "<name>: pid P uid U: <why>; dropped[, <drop_note>]" at warning, frees c. */
void conn_drop(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The peer hung up: logged if log_closes, c freed. */
void conn_closed(struct conn *c);
/* SOCK_STREAM: reads no more and frees c once its output is written (maybe now). */
void conn_close_flushed(struct conn *c);
/* Bytes queued towards the peer: in its socket (unread) and in the output buffer. */
size_t conn_unread_bytes(const struct conn *c);

#endif
