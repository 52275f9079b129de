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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "clock.h"
#include "conn.h"
#include "ctl.h"
#include "log.h"
#include "msg.h"
#include "sock.h"

#define CTL_REQUEST_MAX (16u << 10) /* bytes of a request payload (a label is < 1 KiB) */
#define CTL_INPUT_MAX   (64u << 10) /* bytes buffered from one client */
#define CTL_CONNS_MAX   32          /* clients served at once; more are closed */
#define CTL_CONNS_UID   4           /* of them, at once from one uid but root */
#define CTL_CONNS_ROOT  4           /* of them, kept for root's reload and label */

struct ctl_server {
	struct conn_server *conns;
	gid_t croft_gid;
	ctl_handler_fn handler;
	void *ctx;
};

/*
 * Queues the one reply; the connection is freed once it is written (or at
 * once when nothing could be queued): c is not to be touched after.
 */
static void ctl_reply(struct conn *c, int status, const char *text, size_t len)
{
	struct msg_ctl_reply reply = { .status = status, .reserved = 0 };
	char *tail;

	if (len > MSG_CTL_TEXT_MAX - 1)
		len = MSG_CTL_TEXT_MAX - 1;
	tail = malloc(len + 1);
	if (tail) {
		if (len > 0)
			memcpy(tail, text, len);
		tail[len] = '\0';
		msg_compose(bufferevent_get_output(c->bev), MT_CTL_REPLY, &reply, sizeof(reply),
			tail, len + 1);
		free(tail);
	}
	conn_close_flushed(c);
}

static void ctl_refuse(struct conn *c, int status, const char *why)
{
	log_warnx(
		"control: refused uid %u pid %d: %s", (unsigned)c->cred.uid, (int)c->cred.pid, why);
	ctl_reply(c, status, why, strlen(why));
}

/*
 * The control policy: which request, who may send it (root alone, or also
 * the daemon's own user and the croft group), how long its payload may be
 * (0: empty; the handler parses what it takes) and what everyone else is told.  A new request is a
 * row here, its handler and croftctl's command.
 */
static const struct ctl_rule {
	uint32_t type;
	bool root_only;
	uint32_t payload_max; /* bytes */
	const char *refusal;
} ctl_rules[] = {
	{ MT_CTL_STATUS, false, 0,
		"permission denied: status needs root, the daemon's user or the croft group" },
	{ MT_CTL_RELOAD, true, 0, "permission denied: reload needs root" },
	{ MT_CTL_LABEL, true, CTL_ID_MAX + 1 + CTL_LABEL_MAX + 1,
		"permission denied: label needs root" },
};

static const struct ctl_rule *ctl_rule_of(uint32_t type)
{
	for (size_t i = 0; i < sizeof(ctl_rules) / sizeof(ctl_rules[0]); i++)
		if (ctl_rules[i].type == type)
			return &ctl_rules[i];
	return NULL;
}

static bool ctl_may_send(
	const struct ctl_server *server, const struct sock_peer *peer, const struct ctl_rule *rule)
{
	if (rule->root_only)
		return peer->uid == 0;
	return sock_peer_is(peer, geteuid()) ||
	       (server->croft_gid != (gid_t)-1 && sock_peer_in_group(peer, server->croft_gid));
}

static void ctl_dispatch(struct conn *c, const struct msg_hdr *hdr, uint8_t *payload)
{
	struct ctl_server *server = conn_server_ctx(c->server);
	const struct ctl_rule *rule = ctl_rule_of(hdr->type);
	struct msg_cursor cur;
	struct evbuffer *text;
	int r;

	if (!rule) {
		ctl_refuse(c, EPROTO, "bad request: not a control request");
		return;
	}
	if (!ctl_may_send(server, &c->cred, rule)) {
		ctl_refuse(c, EACCES, rule->refusal);
		return;
	}
	if (hdr->len > rule->payload_max) {
		ctl_refuse(c, rule->payload_max ? EMSGSIZE : EBADMSG,
			rule->payload_max ? "bad request: too large"
					  : "bad request: unexpected payload");
		return;
	}
	text = evbuffer_new();
	if (!text) {
		ctl_refuse(c, ENOMEM, "out of memory");
		return;
	}
	msg_cursor_init(&cur, payload, hdr->len);
	r = server->handler(server->ctx, hdr->type, &cur, text);
	log_debug("control: %s from uid %u pid %d: %d", msg_type_name(hdr->type),
		(unsigned)c->cred.uid, (int)c->cred.pid, r);
	ctl_reply(c, r < 0 ? -r : 0, (const char *)evbuffer_pullup(text, -1),
		evbuffer_get_length(text));
	evbuffer_free(text);
}

/* 0 when the HELLO was right, else -errno with c answered (and maybe gone). */
static int ctl_hello(struct conn *c, const struct msg_hdr *hdr, uint8_t *payload)
{
	struct msg_cursor cur;
	struct msg_hello hello;
	int r;

	msg_cursor_init(&cur, payload, hdr->len);
	r = msg_hello_check(hdr->type, &cur, ROLE_CTL, &hello);
	if (r == 0)
		conn_hello_seen(c);
	else
		ctl_refuse(c, -r,
			r == -EPROTONOSUPPORT
				? "bad request: protocol version or role not supported"
				: "bad request: expected HELLO first");
	return r;
}

/*
 * One message: 1 when the HELLO was taken and more may follow, 0 when
 * more bytes are needed or c was answered (and may be gone).
 */
static int ctl_read_one(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct msg_hdr hdr;
	uint8_t *payload = NULL;
	int r;

	r = msg_pull(in, CTL_REQUEST_MAX, &hdr, &payload);
	if (r == 0)
		return 0;
	if (r < 0) {
		ctl_refuse(c, -r,
			r == -EMSGSIZE ? "bad request: too large"
			: r == -EPROTO ? "bad request: unknown message type"
				       : "bad request");
		return 0;
	}
	if (!c->hello_seen) {
		r = ctl_hello(c, &hdr, payload);
		free(payload);
		return r == 0 ? 1 : 0;
	}
	if (evbuffer_get_length(in) > 0)
		ctl_refuse(c, EBADMSG, "bad request: one request per connection");
	else
		ctl_dispatch(c, &hdr, payload);
	free(payload);
	return 0;
}

static void ctl_read(struct conn *c)
{
	while (ctl_read_one(c) == 1)
		;
}

static const struct conn_ops ctl_conn_ops = {
	.name = "control",
	.type = SOCK_STREAM,
	.conns_max = CTL_CONNS_MAX,
	.conns_per_uid = CTL_CONNS_UID,
	.conns_for_root = CTL_CONNS_ROOT,
	.deadline_ms = CTL_TIMEOUT_MS,
	.deadline_whole = true, /* however slowly the client drips */
	.input_max = CTL_INPUT_MAX,
	.read = ctl_read,
};

int ctl_server_new(struct event_base *base, const char *path, gid_t croft_gid,
	ctl_handler_fn handler, void *ctx, struct ctl_server **ret_server)
{
	struct ctl_server *server = calloc(1, sizeof(*server));
	int r;

	if (!server)
		return -ENOMEM;
	server->croft_gid = croft_gid;
	server->handler = handler;
	server->ctx = ctx;
	r = conn_server_new(
		base, path, croft_gid, (uid_t)-1, &ctl_conn_ops, server, &server->conns);
	if (r < 0) {
		free(server);
		return r;
	}
	*ret_server = server;
	return 0;
}

void ctl_server_free(struct ctl_server *server)
{
	if (!server)
		return;
	conn_server_free(server->conns);
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
	struct msg_hello hello = msg_hello_make(ROLE_CTL, 0, 0);
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
		else if (!(text = strdup((const char *)payload + sizeof(reply))))
			r = -ENOMEM;
	}
	if (r == 0) {
		*ret_status = reply.status;
		*ret_text = text;
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
		fd = sock_connect(path, SOCK_STREAM | SOCK_NONBLOCK);
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
