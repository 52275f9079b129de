/*
 * client.c: the client end of a croft daemon socket over libevent: connect
 * without blocking, HELLO both ways within a deadline, then messages to and
 * from the owner until the connection ends, which it hears of once.  Any
 * process; in croft-sampler, the croft user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "client.h"
#include "msg.h"
#include "sock.h"

struct client {
	struct event_base *base;
	const struct client_ops *ops;
	void *ctx;
	char path[256];
	enum client_phase phase;
	uint64_t connections; /* connects so far: a callback may end this one and begin another */
	int fd;               /* -1: not connected */
	struct bufferevent *bev; /* SOCK_STREAM */
	struct event *packets;   /* SOCK_SEQPACKET: readable */
	struct event *hello_deadline;
	uint8_t packet[MSG_PACKET_MAX]; /* SOCK_SEQPACKET: the one being read */
};

static void client_packets_cb(evutil_socket_t fd, short what, void *arg);
static void client_deadline_cb(evutil_socket_t fd, short what, void *arg);

struct client *client_new(
	struct event_base *base, const char *path, const struct client_ops *ops, void *ctx)
{
	struct client *client = calloc(1, sizeof(*client));

	if (!client)
		return NULL;
	client->base = base;
	client->ops = ops;
	client->ctx = ctx;
	client->fd = -1;
	snprintf(client->path, sizeof(client->path), "%s", path);
	client->packets = event_new(base, -1, 0, client_packets_cb, client);
	client->hello_deadline = evtimer_new(base, client_deadline_cb, client);
	if (!client->packets || !client->hello_deadline) {
		client_free(client);
		return NULL;
	}
	return client;
}

void client_free(struct client *client)
{
	if (!client)
		return;
	client_close(client);
	if (client->packets)
		event_free(client->packets);
	if (client->hello_deadline)
		event_free(client->hello_deadline);
	free(client);
}

const char *client_path(const struct client *client)
{
	return client->path;
}

enum client_phase client_phase(const struct client *client)
{
	return client->phase;
}

void client_close(struct client *client)
{
	evtimer_del(client->hello_deadline);
	event_del(client->packets);
	if (client->bev)
		bufferevent_free(client->bev); /* closes fd */
	else if (client->fd >= 0)
		close(client->fd);
	client->bev = NULL;
	client->fd = -1;
	client->phase = CLIENT_DOWN;
}

/* The connection ends: closed first, so that the owner may begin another at once. */
static void client_end(struct client *client, int err, bool refused)
{
	struct client_end end = { err, refused, client->phase == CLIENT_READY };

	client_close(client);
	client->ops->down(client->ctx, &end);
}

/* One message from the peer: its HELLO first, then the owner's. */
static int client_take(struct client *client, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_hello hello;
	struct msg_cursor cur;
	int r;

	if (client->phase == CLIENT_READY)
		return client->ops->message(client->ctx, hdr, payload);
	msg_cursor_init(&cur, payload, hdr->len);
	if ((r = msg_hello_check(hdr->type, &cur, client->ops->peer_role, &hello)) < 0)
		return r;
	evtimer_del(client->hello_deadline);
	client->phase = CLIENT_READY;
	client->ops->ready(client->ctx, &hello);
	return 0;
}

/* Every packet there, each a message; stops where the owner ended this connection. */
static void client_packets_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *client = arg;
	uint64_t connection = client->connections;
	struct msg_hdr hdr;
	int r;

	while ((r = msg_recv_packet(client->fd, client->packet, sizeof(client->packet), &hdr)) >
		0) {
		r = client_take(client, &hdr, client->packet + sizeof(hdr));
		if (client->connections != connection || client->phase == CLIENT_DOWN)
			return;
		if (r < 0) {
			client_end(client, r, true);
			return;
		}
	}
	if (r != -EAGAIN) /* a packet cut short or of no known type is refused too */
		client_end(client, r, r == -EBADMSG || r == -EPROTO);
}

/* Every whole message buffered; stops where the owner ended this connection. */
static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct client *client = arg;
	uint64_t connection = client->connections;
	struct msg_hdr hdr;
	uint8_t *payload;
	int r;

	while ((r = msg_pull(bufferevent_get_input(bev), client->ops->message_max, &hdr,
			&payload)) > 0) {
		r = client_take(client, &hdr, payload);
		free(payload);
		if (client->connections != connection || client->phase == CLIENT_DOWN)
			return;
		if (r < 0)
			break;
	}
	if (r < 0)
		client_end(client, r, true);
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct client *client = arg;

	if (client->ops->writable)
		client->ops->writable(client->ctx);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & BEV_EVENT_EOF)
		client_end(arg, 0, false);
	else if (what & BEV_EVENT_ERROR)
		client_end(arg, -EVUTIL_SOCKET_ERROR(), false);
}

static void client_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	client_end(arg, -ETIMEDOUT, false);
}

/* The socket's events: a bufferevent for a stream, a read event for packets. */
static int client_events(struct client *client)
{
	const struct client_ops *ops = client->ops;

	if (ops->type == SOCK_SEQPACKET) {
		event_assign(client->packets, client->base, client->fd, EV_READ | EV_PERSIST,
			client_packets_cb, client);
		return event_add(client->packets, NULL) == 0 ? 0 : -ENOMEM;
	}
	client->bev = bufferevent_socket_new(client->base, client->fd, BEV_OPT_CLOSE_ON_FREE);
	if (!client->bev)
		return -ENOMEM;
	bufferevent_setcb(client->bev, client_read_cb, client_write_cb, client_event_cb, client);
	bufferevent_setwatermark(client->bev, EV_WRITE, ops->output_low, 0);
	return bufferevent_enable(client->bev, EV_READ | EV_WRITE) == 0 ? 0 : -ENOMEM;
}

int client_connect(struct client *client, const struct msg_hello *hello)
{
	int ms = client->ops->hello_deadline_ms + 1; /* past the deadline, not at it */
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	int r;

	client_close(client);
	if ((client->fd = sock_connect(client->path, client->ops->type | SOCK_NONBLOCK)) < 0) {
		r = client->fd;
		client->fd = -1;
		return r;
	}
	client->connections++;
	client->phase = CLIENT_HELLO;
	r = client_events(client);
	if (r == 0 && evtimer_add(client->hello_deadline, &tv) < 0)
		r = -ENOMEM;
	if (r == 0)
		r = client_send(client, MT_HELLO, hello, sizeof(*hello), NULL, 0);
	if (r < 0)
		client_close(client);
	return r;
}

int client_send(struct client *client, uint32_t type, const void *fixed, size_t fixed_len,
	const void *tail, size_t tail_len)
{
	if (client->phase == CLIENT_DOWN)
		return -ENOTCONN;
	if (client->bev)
		return msg_compose(bufferevent_get_output(client->bev), type, fixed, fixed_len,
			tail, tail_len);
	return msg_send_packet(client->fd, type, fixed, fixed_len, tail, tail_len);
}

size_t client_queued(const struct client *client)
{
	return client->bev ? evbuffer_get_length(bufferevent_get_output(client->bev)) : 0;
}
