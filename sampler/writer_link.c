/*
 * writer_link.c: croft-sampler's connection to croft-writer (writer.sock,
 * framed by msg.h): HELLO with the spool's epoch, drop what the writer says
 * is committed, send the rest in order, drop each batch when acked;
 * reconnect with backoff.  croft-sampler, croft user.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "msg.h"
#include "sampler.h"
#include "sock.h"

#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS   5000
#define OUT_HIGH_BYTES (8u << 20)  /* stop queueing batches above this */
#define OUT_LOW_BYTES  (1u << 20)  /* and resume below this */
#define WRITER_MSG_MAX (64u << 10) /* HELLO and ACK are tiny */

enum link_state { LINK_DOWN, LINK_HELLO, LINK_READY };

struct writer_link {
	struct event_base *base;
	char *path;
	struct spool *spool;
	struct bufferevent *bev;
	struct event *retry;
	enum link_state state;
	uint64_t backoff_ms;
	uint64_t sent_seq; /* highest seq queued on this connection */
	char why[160];     /* why not connected */
	bool down_logged;
};

static void link_connect(struct writer_link *link);

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	link_connect(arg);
}

static void link_down(struct writer_link *link, const char *why)
{
	struct timeval tv;

	if (link->bev) {
		bufferevent_free(link->bev);
		link->bev = NULL;
	}
	snprintf(link->why, sizeof(link->why), "%s", why);
	if (!link->down_logged)
		log_warnx("writer %s: %s; retrying with backoff", link->path, why);
	link->down_logged = true;
	link->state = LINK_DOWN;
	tv.tv_sec = (time_t)(link->backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(link->backoff_ms % 1000) * 1000;
	evtimer_add(link->retry, &tv);
	link->backoff_ms =
		link->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : link->backoff_ms * 2;
}

/* Queues unsent batches, in order, up to the output high-water mark. */
static void link_pump(struct writer_link *link)
{
	struct evbuffer *out;

	if (link->state != LINK_READY)
		return;
	out = bufferevent_get_output(link->bev);
	for (struct spool_batch *b = spool_first(link->spool); b; b = b->next) {
		struct msg_batch mb = { spool_epoch(link->spool), b->seq, b->unix_ms, b->rows, 0 };

		if (b->seq <= link->sent_seq)
			continue;
		if (evbuffer_get_length(out) >= OUT_HIGH_BYTES)
			break;
		if (msg_compose(out, MT_BATCH, &mb, sizeof(mb), b->data, b->len) < 0) {
			link_down(link, "out of memory queueing a batch");
			return;
		}
		link->sent_seq = b->seq;
	}
}

static int handle_msg(struct writer_link *link, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_cursor cur;
	struct msg_hello hello;
	struct msg_ack ack;

	msg_cursor_init(&cur, payload, hdr->len);
	if (link->state == LINK_HELLO) {
		int r = msg_hello_check(hdr->type, &cur, ROLE_WRITER, &hello);

		if (r < 0)
			return r;
		spool_ack(link->spool, hello.epoch, hello.seq);
		link->state = LINK_READY;
		link->sent_seq = 0;
		link->backoff_ms = RETRY_FIRST_MS;
		link->down_logged = false;
		log_info("writer %s: connected", link->path);
		return 0;
	}
	if (hdr->type != MT_ACK || msg_get(&cur, &ack, sizeof(ack)) || msg_end(&cur))
		return -EPROTO;
	spool_ack(link->spool, ack.epoch, ack.seq);
	return 0;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct writer_link *link = arg;
	struct msg_hdr hdr = { 0 };
	uint8_t *payload;
	int r;

	while ((r = msg_pull(bufferevent_get_input(bev), WRITER_MSG_MAX, &hdr, &payload)) > 0) {
		r = handle_msg(link, &hdr, payload);
		free(payload);
		if (r < 0)
			break;
	}
	if (r < 0) {
		log_warnx("writer %s: unexpected %s; reconnecting", link->path,
			msg_type_name(hdr.type));
		link->down_logged = true;
		link_down(link, "protocol error");
		return;
	}
	link_pump(link);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	link_pump(arg);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct writer_link *link = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		link_down(link, what & BEV_EVENT_EOF
					? "closed the connection"
					: evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void link_connect(struct writer_link *link)
{
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, spool_epoch(link->spool), 0);
	int fd = sock_connect(link->path, SOCK_STREAM);

	if (fd < 0) {
		link_down(link, strerror(-fd));
		return;
	}
	evutil_make_socket_nonblocking(fd);
	link->bev = bufferevent_socket_new(link->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!link->bev) {
		evutil_closesocket(fd);
		link_down(link, "out of memory");
		return;
	}
	bufferevent_setcb(link->bev, read_cb, write_cb, event_cb, link);
	bufferevent_setwatermark(link->bev, EV_WRITE, OUT_LOW_BYTES, 0);
	bufferevent_enable(link->bev, EV_READ | EV_WRITE);
	link->state = LINK_HELLO;
	snprintf(link->why, sizeof(link->why), "waiting for the writer's HELLO");
	if (msg_compose(bufferevent_get_output(link->bev), MT_HELLO, &hello, sizeof(hello), NULL,
		    0) < 0)
		link_down(link, "out of memory");
}

struct writer_link *writer_link_new(struct event_base *base, const char *path, struct spool *spool)
{
	struct writer_link *link = calloc(1, sizeof(*link));

	if (!link)
		return NULL;
	link->base = base;
	link->spool = spool;
	link->backoff_ms = RETRY_FIRST_MS;
	link->path = strdup(path);
	link->retry = evtimer_new(base, retry_cb, link);
	if (!link->path || !link->retry) {
		writer_link_free(link);
		return NULL;
	}
	link_connect(link);
	return link;
}

void writer_link_free(struct writer_link *link)
{
	if (!link)
		return;
	if (link->bev)
		bufferevent_free(link->bev);
	if (link->retry)
		event_free(link->retry);
	free(link->path);
	free(link);
}

void writer_link_kick(struct writer_link *link)
{
	link_pump(link);
}

const char *writer_link_state(const struct writer_link *link)
{
	return link->state == LINK_READY ? "connected" : link->why;
}
