/*
 * conn.c: accepting and keeping peers for writer.sock, probe.sock and the
 * .ctl sockets over libevent: SO_PEERCRED checked against the owner's role
 * rule on accept, a cap on peers, one deadline, bounded input, and every
 * drop logged once with its reason.  Daemon processes, after the drop.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "conn.h"
#include "log.h"

#define CONN_ACCEPT_PAUSE_S 1 /* after an accept error (EMFILE...) */

struct conn_private {
	struct event *deadline;
	struct event *ev_read; /* SOCK_SEQPACKET */
	bool closing;          /* conn_close_flushed: freed once the output is written */
	LIST_ENTRY(conn) entry;
};

struct conn_server {
	const struct conn_ops *ops;
	void *ctx;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *resume; /* re-enables accepting after an accept error */
	uid_t peer_uid;       /* (uid_t)-1: anyone */
	size_t conns_count;
	uint64_t refused;
	LIST_HEAD(, conn) conns;
};

static void conn_free(struct conn *c)
{
	struct conn_server *server = c->server;

	LIST_REMOVE(c, priv->entry);
	server->conns_count--;
	if (server->ops->close)
		server->ops->close(c);
	if (c->priv->deadline)
		event_free(c->priv->deadline);
	if (c->priv->ev_read)
		event_free(c->priv->ev_read);
	if (c->bev)
		bufferevent_free(c->bev);
	else
		close(c->fd);
	free(c->priv);
	free(c);
}

void conn_drop(struct conn *c, const char *fmt, ...)
{
	const struct conn_ops *ops = c->server->ops;
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_warnx("%s: pid %d uid %u: %s; dropped%s%s", ops->name, (int)c->cred.pid,
		(unsigned)c->cred.uid, why, ops->drop_note ? ", " : "",
		ops->drop_note ? ops->drop_note : "");
	conn_free(c);
}

void conn_closed(struct conn *c)
{
	if (c->server->ops->log_closes)
		log_info("%s: pid %d closed", c->server->ops->name, (int)c->cred.pid);
	conn_free(c);
}

void conn_hello_seen(struct conn *c)
{
	c->hello_seen = true;
	if (!c->server->ops->deadline_whole && c->priv->deadline)
		evtimer_del(c->priv->deadline);
}

void conn_close_flushed(struct conn *c)
{
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_free(c);
	else
		c->priv->closing = true;
}

size_t conn_unread_bytes(const struct conn *c)
{
	int unread = 0;

	if (ioctl(c->fd, TIOCOUTQ, &unread) < 0 || unread < 0)
		unread = 0;
	return (size_t)unread + (c->bev ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0);
}

static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	const struct conn_ops *ops = c->server->ops;

	if (ops->deadline_whole)
		conn_drop(c, "not done within %d ms", ops->deadline_ms);
	else
		conn_drop(c, "no whole HELLO within %d ms", ops->deadline_ms);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	c->server->ops->read(c);
}

static void conn_packet_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	c->server->ops->read(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->priv->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("%s: pid %d: %s", c->server->ops->name, (int)c->cred.pid,
			evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	conn_closed(c);
}

/* The socket's events: a bufferevent for a stream, a read event for packets. */
static int conn_events(struct conn *c)
{
	struct conn_server *server = c->server;
	const struct conn_ops *ops = server->ops;

	if (ops->type == SOCK_SEQPACKET) {
		c->priv->ev_read =
			event_new(server->base, c->fd, EV_READ | EV_PERSIST, conn_packet_cb, c);
		return c->priv->ev_read && event_add(c->priv->ev_read, NULL) == 0 ? 0 : -ENOMEM;
	}
	c->bev = bufferevent_socket_new(server->base, c->fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev)
		return -ENOMEM;
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, ops->input_max);
	if (ops->read_step)
		bufferevent_set_max_single_read(c->bev, ops->read_step);
	return bufferevent_enable(c->bev, EV_READ | EV_WRITE) == 0 ? 0 : -ENOMEM;
}

static int conn_start(struct conn *c)
{
	struct conn_server *server = c->server;
	const struct conn_ops *ops = server->ops;
	struct timeval tv = { ops->deadline_ms / 1000, (ops->deadline_ms % 1000) * 1000 };
	int r = conn_events(c);

	if (r < 0)
		return r;
	c->priv->deadline = evtimer_new(server->base, conn_deadline_cb, c);
	if (!c->priv->deadline || evtimer_add(c->priv->deadline, &tv) < 0)
		return -ENOMEM;
	return ops->open ? ops->open(server->ctx, c) : 0;
}

static size_t conn_count_uid(const struct conn_server *server, uid_t uid)
{
	const struct conn *c;
	size_t count = 0;

	LIST_FOREACH(c, &server->conns, priv->entry)
	count += c->cred.uid == uid;
	return count;
}

/* Room for this peer: root may take every slot; anyone else neither root's
 * reserve nor more than its uid's quota (one user cannot lock root out). */
static const char *conn_room(const struct conn_server *server, uid_t uid)
{
	const struct conn_ops *ops = server->ops;

	if (server->conns_count >= ops->conns_max)
		return "too many peers";
	if (uid == 0)
		return NULL;
	if (server->conns_count + ops->conns_for_root >= ops->conns_max)
		return "too many peers (the rest are kept for root)";
	if (ops->conns_per_uid && conn_count_uid(server, uid) >= ops->conns_per_uid)
		return "too many peers of this uid";
	return NULL;
}

/* Why this peer is refused, NULL when it is admitted. */
static const char *conn_admit(struct conn_server *server, int fd, struct sock_peer *ret_cred)
{
	*ret_cred = (struct sock_peer){ .pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	if (sock_peer(fd, ret_cred) < 0)
		return "no SO_PEERCRED";
	if (server->peer_uid != (uid_t)-1 && !sock_peer_is(ret_cred, server->peer_uid))
		return server->ops->refusal;
	return conn_room(server, ret_cred->uid);
}

static void conn_accept_cb(struct evconnlistener *listener, evutil_socket_t fd,
	struct sockaddr *addr, int socklen, void *arg)
{
	struct conn_server *server = arg;
	struct sock_peer cred;
	const char *why = conn_admit(server, fd, &cred);
	struct conn *c;
	int r;

	if (why) {
		server->refused++;
		log_warnx("%s: refused pid %d uid %u: %s", server->ops->name, (int)cred.pid,
			(unsigned)cred.uid, why);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->priv = calloc(1, sizeof(*c->priv)))) {
		free(c);
		close(fd);
		return;
	}
	c->server = server;
	c->cred = cred;
	c->fd = fd;
	LIST_INSERT_HEAD(&server->conns, c, priv->entry);
	server->conns_count++;
	r = conn_start(c);
	if (r < 0)
		conn_drop(c, "cannot serve it: %s", strerror(-r));
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn_server *server = arg;

	evconnlistener_enable(server->listener);
}

/* accept() failing (EMFILE...) would fire again at once: pause a moment. */
static void conn_accept_error_cb(struct evconnlistener *listener, void *arg)
{
	struct conn_server *server = arg;
	struct timeval pause = { CONN_ACCEPT_PAUSE_S, 0 };

	log_warn("%s: accept", server->ops->name);
	evconnlistener_disable(listener);
	evtimer_add(server->resume, &pause);
}

int conn_server_new(struct event_base *base, const char *path, gid_t gid, uid_t peer_uid,
	const struct conn_ops *ops, void *ctx, struct conn_server **ret_server)
{
	struct conn_server *server = calloc(1, sizeof(*server));
	int fd;

	if (!server)
		return -ENOMEM;
	fd = sock_listen(path, ops->type, gid);
	if (fd < 0) {
		free(server);
		return fd;
	}
	server->ops = ops;
	server->ctx = ctx;
	server->peer_uid = peer_uid;
	server->base = base;
	LIST_INIT(&server->conns);
	server->resume = evtimer_new(base, conn_resume_cb, server);
	server->listener = evconnlistener_new(base, conn_accept_cb, server,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (!server->listener)
		close(fd);
	if (!server->listener || !server->resume) {
		conn_server_free(server);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(server->listener, conn_accept_error_cb);
	*ret_server = server;
	return 0;
}

void conn_server_free(struct conn_server *server)
{
	if (!server)
		return;
	while (!LIST_EMPTY(&server->conns))
		conn_free(LIST_FIRST(&server->conns));
	if (server->listener)
		evconnlistener_free(server->listener);
	if (server->resume)
		event_free(server->resume);
	free(server);
}

void *conn_server_ctx(const struct conn_server *server)
{
	return server->ctx;
}

struct event_base *conn_server_base(const struct conn_server *server)
{
	return server->base;
}

size_t conn_server_count(const struct conn_server *server)
{
	return server->conns_count;
}

uint64_t conn_server_refused(const struct conn_server *server)
{
	return server->refused;
}

struct conn *conn_first(const struct conn_server *server)
{
	return LIST_FIRST(&server->conns);
}

struct conn *conn_next(const struct conn *c)
{
	return LIST_NEXT(c, priv->entry);
}
