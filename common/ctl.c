/*
 * ctl.c: the control socket.  Server side runs in each daemon's libevent
 * loop after the privilege drop; the client side (blocking) in croftctl and
 * croft.  On the wire: HELLO {version, ROLE_CTL}, one request, then the
 * daemon answers one MT_CTL_REPLY and closes.  A bad client is answered if
 * possible and dropped; it never hurts the daemon.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "clock.h"
#include "ctl.h"
#include "log.h"
#include "msg.h"
#include "sock.h"

#define CTL_REQUEST_MAX (16u << 10) /* bytes of a request payload (a label is < 1 KiB) */
#define CTL_INPUT_MAX   (64u << 10) /* bytes buffered from one client */
#define CTL_CONNS_MAX   32          /* clients served at once; more are closed */

struct ctl_conn {
	struct ctl_server *server;
	struct bufferevent *bev;
	struct sock_peer peer;
	struct event *deadline; /* the whole exchange, however slowly the peer drips */
	bool hello_seen;
	bool replied;
	LIST_ENTRY(ctl_conn) entry;
};

struct ctl_server {
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *resume; /* re-enables accepting after an accept error */
	gid_t croft_gid;
	ctl_handler_fn handler;
	void *ctx;
	size_t conns_count;
	LIST_HEAD(, ctl_conn) conns;
};

static void ctl_conn_free(struct ctl_conn *conn)
{
	if (!conn)
		return;
	LIST_REMOVE(conn, entry);
	conn->server->conns_count--;
	if (conn->deadline)
		event_free(conn->deadline);
	bufferevent_free(conn->bev);
	free(conn);
}

/*
 * Queues the one reply and stops reading; ctl_read_cb or ctl_write_cb
 * closes the connection once the output is written (or nothing could be
 * queued).
 */
static void ctl_reply(struct ctl_conn *conn, int status, const char *text, size_t len)
{
	struct msg_ctl_reply reply = { .status = status, .reserved = 0 };
	char *tail;

	conn->replied = true;
	bufferevent_disable(conn->bev, EV_READ);
	if (len > MSG_CTL_TEXT_MAX - 1)
		len = MSG_CTL_TEXT_MAX - 1;
	tail = malloc(len + 1);
	if (!tail)
		return;
	if (len > 0)
		memcpy(tail, text, len);
	tail[len] = '\0';
	msg_compose(bufferevent_get_output(conn->bev), MT_CTL_REPLY, &reply, sizeof(reply), tail,
		len + 1);
	free(tail);
}

static void ctl_refuse(struct ctl_conn *conn, int status, const char *why)
{
	log_warnx("control: refused uid %u pid %d: %s", (unsigned)conn->peer.uid,
		(int)conn->peer.pid, why);
	ctl_reply(conn, status, why, strlen(why));
}

/* status: root, the daemon's own user, the croft group; the rest: root only. */
static const char *ctl_policy(
	const struct ctl_server *server, const struct sock_peer *peer, uint32_t type)
{
	switch (type) {
	case MT_CTL_STATUS:
		if (sock_peer_is(peer, geteuid()) ||
			(server->croft_gid != (gid_t)-1 &&
				sock_peer_in_group(peer, server->croft_gid)))
			return NULL;
		return "permission denied: status needs root, the daemon's user or the croft group";
	case MT_CTL_RELOAD:
		return peer->uid == 0 ? NULL : "permission denied: reload needs root";
	case MT_CTL_LABEL:
		return peer->uid == 0 ? NULL : "permission denied: label needs root";
	default:
		return "bad request: not a control request";
	}
}

static int ctl_check_hello(const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_cursor cur;
	struct msg_hello hello;

	if (hdr->type != MT_HELLO)
		return -EPROTO;
	msg_cursor_init(&cur, payload, hdr->len);
	if (msg_get(&cur, &hello, sizeof(hello)) < 0 || msg_end(&cur) < 0)
		return -EBADMSG;
	if (hello.version != CROFT_PROTO_VERSION || hello.role != ROLE_CTL)
		return -EPROTONOSUPPORT;
	return 0;
}

static void ctl_dispatch(struct ctl_conn *conn, const struct msg_hdr *hdr, uint8_t *payload)
{
	struct ctl_server *server = conn->server;
	const char *refusal = ctl_policy(server, &conn->peer, hdr->type);
	struct msg_cursor cur;
	struct evbuffer *text;
	int r;

	if (refusal) {
		bool is_ctl = hdr->type >= MT_CTL_STATUS && hdr->type <= MT_CTL_LABEL;

		ctl_refuse(conn, is_ctl ? EACCES : EPROTO, refusal);
		return;
	}
	if (hdr->type != MT_CTL_LABEL && hdr->len != 0) {
		ctl_refuse(conn, EBADMSG, "bad request: unexpected payload");
		return;
	}
	text = evbuffer_new();
	if (!text) {
		ctl_refuse(conn, ENOMEM, "out of memory");
		return;
	}
	msg_cursor_init(&cur, payload, hdr->len);
	r = server->handler(server->ctx, hdr->type, &cur, text);
	log_debug("control: %s from uid %u pid %d: %d", msg_type_name(hdr->type),
		(unsigned)conn->peer.uid, (int)conn->peer.pid, r);
	ctl_reply(conn, r < 0 ? -r : 0, (const char *)evbuffer_pullup(text, -1),
		evbuffer_get_length(text));
	evbuffer_free(text);
}

/* One step: 1 when a message was consumed and more may follow, 0 to wait. */
static int ctl_read_one(struct ctl_conn *conn)
{
	struct evbuffer *in = bufferevent_get_input(conn->bev);
	struct msg_hdr hdr;
	uint8_t *payload = NULL;
	int r;

	r = msg_pull(in, CTL_REQUEST_MAX, &hdr, &payload);
	if (r == 0)
		return 0;
	if (r < 0) {
		ctl_refuse(conn, -r,
			r == -EMSGSIZE ? "bad request: too large"
			: r == -EPROTO ? "bad request: unknown message type"
				       : "bad request");
		return 0;
	}
	if (!conn->hello_seen) {
		r = ctl_check_hello(&hdr, payload);
		if (r < 0)
			ctl_refuse(conn, -r,
				r == -EPROTONOSUPPORT
					? "bad request: protocol version or role not supported"
					: "bad request: expected HELLO first");
		conn->hello_seen = r == 0;
	} else if (evbuffer_get_length(in) > 0) {
		ctl_refuse(conn, EBADMSG, "bad request: one request per connection");
	} else {
		ctl_dispatch(conn, &hdr, payload);
	}
	free(payload);
	return r < 0 ? 0 : 1;
}

static void ctl_read_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *conn = arg;

	while (!conn->replied && ctl_read_one(conn) == 1)
		;
	if (conn->replied && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		ctl_conn_free(conn); /* nothing could be queued */
}

static void ctl_write_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *conn = arg;

	if (conn->replied && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		ctl_conn_free(conn);
}

static void ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *conn = arg;

	if ((what & BEV_EVENT_TIMEOUT) && !conn->replied)
		log_debug("control: uid %u pid %d timed out", (unsigned)conn->peer.uid,
			(int)conn->peer.pid);
	ctl_conn_free(conn);
}

/* The bufferevent timeouts restart on every byte: this one does not. */
static void ctl_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_conn *conn = arg;

	log_debug("control: uid %u pid %d over its %d ms, dropped", (unsigned)conn->peer.uid,
		(int)conn->peer.pid, CTL_TIMEOUT_MS);
	ctl_conn_free(conn);
}

static void ctl_accept_cb(struct evconnlistener *listener, evutil_socket_t fd,
	struct sockaddr *addr, int socklen, void *arg)
{
	struct ctl_server *server = arg;
	struct timeval timeout = { CTL_TIMEOUT_MS / 1000, (CTL_TIMEOUT_MS % 1000) * 1000 };
	struct ctl_conn *conn;

	if (server->conns_count >= CTL_CONNS_MAX) {
		log_debug("control: %d clients already, closing a new one", CTL_CONNS_MAX);
		close(fd);
		return;
	}
	conn = calloc(1, sizeof(*conn));
	if (!conn || sock_peer(fd, &conn->peer) < 0) {
		free(conn);
		close(fd);
		return;
	}
	conn->server = server;
	conn->bev = bufferevent_socket_new(server->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!conn->bev) {
		free(conn);
		close(fd);
		return;
	}
	LIST_INSERT_HEAD(&server->conns, conn, entry);
	server->conns_count++;
	bufferevent_setcb(conn->bev, ctl_read_cb, ctl_write_cb, ctl_event_cb, conn);
	bufferevent_setwatermark(conn->bev, EV_READ, 0, CTL_INPUT_MAX);
	bufferevent_set_timeouts(conn->bev, &timeout, &timeout);
	conn->deadline = evtimer_new(server->base, ctl_deadline_cb, conn);
	if (conn->deadline)
		evtimer_add(conn->deadline, &timeout);
	bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
}

static void ctl_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_server *server = arg;

	evconnlistener_enable(server->listener);
}

/* accept() failing (EMFILE...) would fire again at once: pause for a second. */
static void ctl_accept_error_cb(struct evconnlistener *listener, void *arg)
{
	struct ctl_server *server = arg;
	struct timeval pause = { 1, 0 };

	log_warn("control: accept");
	evconnlistener_disable(listener);
	evtimer_add(server->resume, &pause);
}

struct ctl_server *ctl_server_new(struct event_base *base, const char *path, gid_t croft_gid,
	ctl_handler_fn handler, void *ctx)
{
	struct ctl_server *server = calloc(1, sizeof(*server));
	int fd;

	if (!server)
		return NULL;
	fd = sock_listen(path, SOCK_STREAM, croft_gid);
	if (fd < 0) {
		free(server);
		errno = -fd;
		return NULL;
	}
	server->base = base;
	server->croft_gid = croft_gid;
	server->handler = handler;
	server->ctx = ctx;
	LIST_INIT(&server->conns);
	server->resume = evtimer_new(base, ctl_resume_cb, server);
	server->listener = evconnlistener_new(
		base, ctl_accept_cb, server, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (!server->listener || !server->resume) {
		if (server->listener)
			evconnlistener_free(server->listener);
		else
			close(fd);
		if (server->resume)
			event_free(server->resume);
		free(server);
		errno = ENOMEM;
		return NULL;
	}
	evconnlistener_set_error_cb(server->listener, ctl_accept_error_cb);
	return server;
}

void ctl_server_free(struct ctl_server *server)
{
	if (!server)
		return;
	while (!LIST_EMPTY(&server->conns))
		ctl_conn_free(LIST_FIRST(&server->conns));
	evconnlistener_free(server->listener);
	event_free(server->resume);
	free(server);
}

/* Client: moves len bytes through fd before the deadline (CLOCK_MONOTONIC ms). */
static int ctl_io(int fd, void *buf, size_t len, bool writing, uint64_t deadline_ms)
{
	uint8_t *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		uint64_t now = clock_mono_ms();
		ssize_t n;
		int r;

		if (now >= deadline_ms)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(deadline_ms - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = writing ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
			    : recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int ctl_send_request(
	int fd, uint32_t type, const void *payload, size_t len, uint64_t deadline_ms)
{
	struct msg_hello hello = { .version = CROFT_PROTO_VERSION, .role = ROLE_CTL };
	struct evbuffer *out = evbuffer_new();
	int r;

	if (!out)
		return -ENOMEM;
	r = msg_compose(out, MT_HELLO, &hello, sizeof(hello), NULL, 0);
	if (r == 0)
		r = msg_compose(out, type, payload, len, NULL, 0);
	if (r == 0)
		r = ctl_io(
			fd, evbuffer_pullup(out, -1), evbuffer_get_length(out), true, deadline_ms);
	evbuffer_free(out);
	return r;
}

static int ctl_read_reply(int fd, uint64_t deadline_ms, int *ret_status, char **ret_text)
{
	struct msg_ctl_reply reply;
	struct msg_hdr hdr;
	uint8_t *payload;
	char *text;
	int r;

	r = ctl_io(fd, &hdr, sizeof(hdr), false, deadline_ms);
	if (r < 0)
		return r;
	if (hdr.type != MT_CTL_REPLY || hdr.len < sizeof(reply) + 1 ||
		hdr.len > sizeof(reply) + MSG_CTL_TEXT_MAX)
		return -EBADMSG;
	payload = malloc(hdr.len);
	if (!payload)
		return -ENOMEM;
	r = ctl_io(fd, payload, hdr.len, false, deadline_ms);
	if (r == 0) {
		memcpy(&reply, payload, sizeof(reply));
		if (reply.status < 0 || payload[hdr.len - 1] != '\0')
			r = -EBADMSG;
	}
	if (r == 0) {
		text = strdup((const char *)payload + sizeof(reply));
		if (!text)
			r = -ENOMEM;
		else {
			*ret_status = reply.status;
			*ret_text = text;
		}
	}
	free(payload);
	return r;
}

/*
 * A daemon that stopped accepting leaves a full backlog, and a blocking
 * connect() would wait forever: connect without blocking (a Unix socket
 * answers EAGAIN then) and retry until the deadline.
 */
static int ctl_connect(const char *path, uint64_t deadline_ms)
{
	struct timespec step = { 0, 10 * 1000 * 1000 };
	int fd;

	for (;;) {
		fd = sock_try_connect(path, SOCK_STREAM);
		if (fd != -EAGAIN && fd != -EINTR)
			return fd;
		if (clock_mono_ms() >= deadline_ms)
			return -ETIMEDOUT;
		nanosleep(&step, NULL);
	}
}

int ctl_request(const char *path, uint32_t type, const void *payload, size_t len, int timeout_ms,
	int *ret_status, char **ret_text)
{
	uint64_t deadline_ms = clock_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int fd, r;

	fd = ctl_connect(path, deadline_ms);
	if (fd < 0)
		return fd;
	r = ctl_send_request(fd, type, payload, len, deadline_ms);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = ctl_read_reply(
			fd, deadline_ms, ret_status, ret_text); /* a refusal may already be there */
	close(fd);
	return r;
}
