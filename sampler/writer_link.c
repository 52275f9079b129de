/*
 * writer_link.c: croft-sampler's connection to croft-writer (writer.sock,
 * through client.c): HELLO with the spool's epoch, drop what the writer
 * says is committed, send the rest in order, drop each batch when acked;
 * reconnect with backoff.  croft-sampler, croft user.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "client.h"
#include "log.h"
#include "msg.h"
#include "sampler.h"

#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS   5000
#define HELLO_MS       5000        /* the writer's HELLO is late after this: begun again */
#define OUT_HIGH_BYTES (8u << 20)  /* stop queueing batches above this */
#define OUT_LOW_BYTES  (1u << 20)  /* and resume below this */
#define WRITER_MSG_MAX (64u << 10) /* HELLO and ACK are tiny */

struct writer_link {
	struct client *client;
	struct spool *spool;
	struct event *retry;
	uint64_t backoff_ms;
	uint64_t sent_seq; /* highest seq queued on this connection */
	char why[160];     /* why not connected */
	bool down_logged;
};

static void link_connect(evutil_socket_t fd, short what, void *arg);

static void link_down(struct writer_link *link, const char *why)
{
	struct timeval tv;

	client_close(link->client);
	snprintf(link->why, sizeof(link->why), "%s", why);
	if (!link->down_logged)
		log_warnx("writer %s: %s; retrying with backoff", client_path(link->client), why);
	link->down_logged = true;
	tv.tv_sec = (time_t)(link->backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(link->backoff_ms % 1000) * 1000;
	evtimer_add(link->retry, &tv);
	link->backoff_ms =
		link->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : link->backoff_ms * 2;
}

/* Queues unsent batches, in order, up to the output high-water mark. */
void writer_link_kick(struct writer_link *link)
{
	if (client_phase(link->client) != CLIENT_READY)
		return;
	for (struct spool_batch *b = spool_first(link->spool); b; b = b->next) {
		struct msg_batch mb = { spool_epoch(link->spool), b->seq, b->unix_ms, b->rows, 0 };

		if (b->seq <= link->sent_seq)
			continue;
		if (client_queued(link->client) >= OUT_HIGH_BYTES)
			break;
		if (client_send(link->client, MT_BATCH, &mb, sizeof(mb), b->data, b->len) < 0) {
			link_down(link, "out of memory queueing a batch");
			return;
		}
		link->sent_seq = b->seq;
	}
}

/* The writer's HELLO: what it has committed of our spool is dropped, the rest sent. */
static void writer_ready(void *ctx, const struct msg_hello *hello)
{
	struct writer_link *link = ctx;

	spool_ack(link->spool, hello->epoch, hello->seq);
	link->sent_seq = 0;
	link->backoff_ms = RETRY_FIRST_MS;
	link->down_logged = false;
	log_info("writer %s: connected", client_path(link->client));
	writer_link_kick(link);
}

static int writer_message(void *ctx, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct writer_link *link = ctx;
	struct msg_cursor cur;
	struct msg_ack ack;

	msg_cursor_init(&cur, payload, hdr->len);
	if (hdr->type != MT_ACK || msg_get(&cur, &ack, sizeof(ack)) || msg_end(&cur))
		return -EPROTO;
	spool_ack(link->spool, ack.epoch, ack.seq);
	return 0;
}

static void writer_writable(void *ctx)
{
	writer_link_kick(ctx);
}

static void writer_down(void *ctx, const struct client_end *end)
{
	struct writer_link *link = ctx;

	if (end->refused) {
		log_warnx("writer %s: a message refused (%s); reconnecting",
			client_path(link->client), strerror(-end->err));
		link->down_logged = true;
		link_down(link, "protocol error");
	} else {
		link_down(link, end->err ? strerror(-end->err) : "closed the connection");
	}
}

static const struct client_ops writer_client_ops = {
	.type = SOCK_STREAM,
	.peer_role = ROLE_WRITER,
	.hello_deadline_ms = HELLO_MS,
	.message_max = WRITER_MSG_MAX,
	.output_low = OUT_LOW_BYTES,
	.ready = writer_ready,
	.message = writer_message,
	.writable = writer_writable,
	.down = writer_down,
};

/* At start and at each retry (link->retry's callback). */
static void link_connect(evutil_socket_t fd, short what, void *arg)
{
	struct writer_link *link = arg;
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, spool_epoch(link->spool), 0);
	int r = client_connect(link->client, &hello);

	if (r < 0)
		link_down(link, strerror(-r));
	else
		snprintf(link->why, sizeof(link->why), "waiting for the writer's HELLO");
}

struct writer_link *writer_link_new(struct event_base *base, const char *path, struct spool *spool)
{
	struct writer_link *link = calloc(1, sizeof(*link));

	if (!link)
		return NULL;
	link->spool = spool;
	link->backoff_ms = RETRY_FIRST_MS;
	link->client = client_new(base, path, &writer_client_ops, link);
	link->retry = evtimer_new(base, link_connect, link);
	if (!link->client || !link->retry) {
		writer_link_free(link);
		return NULL;
	}
	link_connect(-1, 0, link);
	return link;
}

void writer_link_free(struct writer_link *link)
{
	if (!link)
		return;
	client_free(link->client);
	if (link->retry)
		event_free(link->retry);
	free(link);
}

const char *writer_link_state(const struct writer_link *link)
{
	return client_phase(link->client) == CLIENT_READY ? "connected" : link->why;
}
