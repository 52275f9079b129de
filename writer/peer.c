/*
 * peer.c: sampler connections on writer.sock.  HELLO both ways (the writer
 * answers with its last commit), then batches, grouped up to a limit under
 * one fdatasync and acked once committed.  A peer that breaks the protocol
 * is dropped with nothing written; while the disk refuses writes a peer is
 * not read and its group is retried each poll.  Writer process, croft user.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn.h"
#include "log.h"
#include "msg.h"
#include "writer.h"

struct group_entry {
	struct msg_batch batch;
	uint8_t *payload; /* malloc'd; lines start after the batch header */
	size_t lines_len;
	bool duplicate; /* already committed: acked, not written */
};

/* A sampler's state; its connection (conn.c) holds it as data. */
struct peer {
	struct writer *w;
	struct conn *conn;
	struct group_entry group[GROUP_BATCHES_MAX];
	size_t group_count, group_bytes;
	struct event *retry_ev; /* armed while the group cannot be written */
};

static void peer_process(struct peer *p);

static void group_clear(struct peer *p)
{
	for (size_t i = 0; i < p->group_count; i++)
		free(p->group[i].payload);
	p->group_count = 0;
	p->group_bytes = 0;
}

static void peer_close(struct conn *c)
{
	struct peer *p = c->data;

	if (!p)
		return;
	group_clear(p);
	if (p->retry_ev)
		event_free(p->retry_ev);
	free(p);
}

static int peer_hello(struct peer *p, uint32_t type, const uint8_t *payload, size_t len)
{
	const struct dataset *ds = p->w->ds;
	struct msg_hello hello, reply = msg_hello_make(ROLE_WRITER, ds->rec.epoch, ds->rec.seq);
	struct msg_cursor cur;
	int ret;

	msg_cursor_init(&cur, payload, len);
	ret = msg_hello_check(type, &cur, ROLE_SAMPLER, &hello);
	if (ret < 0)
		return ret;
	conn_hello_seen(p->conn);
	log_info("sampler pid %d connected (epoch %016llx; committed epoch %016llx seq %llu)",
		(int)p->conn->cred.pid, (unsigned long long)hello.epoch,
		(unsigned long long)reply.epoch, (unsigned long long)reply.seq);
	return msg_compose(
		bufferevent_get_output(p->conn->bev), MT_HELLO, &reply, sizeof(reply), NULL, 0);
}

/* The (epoch, seq) the next batch is compared with: the last one queued or committed. */
static void group_last(const struct peer *p, uint64_t *ret_epoch, uint64_t *ret_seq)
{
	*ret_epoch = p->w->ds->rec.epoch;
	*ret_seq = p->w->ds->rec.seq;
	for (size_t i = p->group_count; i > 0; i--)
		if (!p->group[i - 1].duplicate) {
			*ret_epoch = p->group[i - 1].batch.epoch;
			*ret_seq = p->group[i - 1].batch.seq;
			return;
		}
}

/* Takes ownership of payload. */
static int peer_batch(struct peer *p, uint8_t *payload, size_t len)
{
	struct group_entry *e = &p->group[p->group_count];
	struct msg_cursor cur;
	const uint8_t *lines;
	uint64_t last_epoch, last_seq;
	int ret;

	msg_cursor_init(&cur, payload, len);
	if (msg_get(&cur, &e->batch, sizeof(e->batch)) < 0 || e->batch.reserved != 0 ||
		e->batch.seq == 0) {
		free(payload);
		return -EBADMSG;
	}
	msg_get_rest(&cur, &lines, &e->lines_len);
	ret = lines_check(lines, e->lines_len, e->batch.rows);
	if (ret < 0) {
		free(payload);
		return ret;
	}
	group_last(p, &last_epoch, &last_seq);
	e->duplicate = last_seq && e->batch.epoch == last_epoch && e->batch.seq <= last_seq;
	e->payload = payload;
	p->group_count++;
	if (!e->duplicate)
		p->group_bytes += e->lines_len;
	return 0;
}

/* A peer that stops reading its acks is no sampler: it would hold the
 * writer's buffers. */
static bool peer_reads_acks(const struct peer *p)
{
	return conn_unread_bytes(p->conn) <= PEER_UNREAD_MAX;
}

static void peer_ack_group(struct peer *p)
{
	struct evbuffer *out = bufferevent_get_output(p->conn->bev);

	for (size_t i = 0; i < p->group_count; i++) {
		const struct group_entry *e = &p->group[i];
		struct msg_ack ack = { .epoch = e->batch.epoch, .seq = e->batch.seq };

		msg_compose(out, MT_ACK, &ack, sizeof(ack), NULL, 0);
	}
	group_clear(p);
}

/* Returns 0 when the group is on disk and acked, -errno when it waits. */
static int peer_flush(struct peer *p)
{
	struct dataset_group g = { .iovcnt = 0 };
	int ret;

	for (size_t i = 0; i < p->group_count; i++) {
		const struct group_entry *e = &p->group[i];

		if (e->duplicate) {
			g.duplicates++;
			continue;
		}
		g.batches++;
		g.rows += e->batch.rows;
		g.epoch = e->batch.epoch;
		g.seq = e->batch.seq;
		if (!e->lines_len)
			continue;
		g.iov[g.iovcnt].iov_base = e->payload + sizeof(struct msg_batch);
		g.iov[g.iovcnt++].iov_len = e->lines_len;
	}
	ret = writer_write(p->w, &g);
	if (ret < 0)
		return ret;
	peer_ack_group(p);
	return 0;
}

/* The disk refused the group: the peer is not read until it is written. */
static void peer_wait(struct peer *p)
{
	struct timeval tv = { .tv_sec = (time_t)(p->w->cfg.poll_interval_ms / 1000),
		.tv_usec = (suseconds_t)(p->w->cfg.poll_interval_ms % 1000 * 1000) };

	bufferevent_disable(p->conn->bev, EV_READ);
	event_add(p->retry_ev, &tv);
}

static void peer_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	if (peer_flush(p) < 0) {
		peer_wait(p);
		return;
	}
	bufferevent_enable(p->conn->bev, EV_READ);
	peer_process(p);
}

/* One message off the input: 1 taken, 0 need more, -errno to drop. */
static int peer_take(struct peer *p)
{
	struct msg_hdr hdr;
	uint8_t *payload = NULL;
	int ret = msg_pull(bufferevent_get_input(p->conn->bev), MSG_PAYLOAD_MAX, &hdr, &payload);

	if (ret <= 0)
		return ret;
	if (!p->conn->hello_seen) {
		ret = peer_hello(p, hdr.type, payload, hdr.len);
		free(payload);
		return ret < 0 ? ret : 1;
	}
	if (hdr.type != MT_BATCH) {
		free(payload);
		return -EPROTO;
	}
	ret = peer_batch(p, payload, hdr.len);
	return ret < 0 ? ret : 1;
}

static const char *peer_why(const struct peer *p, int err)
{
	if (err == -EMSGSIZE)
		return "message over the size limit";
	if (!p->conn->hello_seen)
		return err == -EPROTONOSUPPORT ? "HELLO: protocol version or role not supported"
					       : "no HELLO first";
	return err == -EBADMSG ? "batch is not its announced whole lines" : "protocol error";
}

static void peer_process(struct peer *p)
{
	int ret;

	if (p->group_count)
		return; /* waiting for the disk */
	for (;;) {
		while (p->group_count < GROUP_BATCHES_MAX && p->group_bytes < GROUP_BYTES_MAX) {
			ret = peer_take(p);
			if (ret < 0) {
				conn_drop(p->conn, "%s", peer_why(p, ret));
				return;
			}
			if (ret == 0)
				break;
		}
		if (!p->group_count)
			return;
		if (peer_flush(p) < 0) {
			peer_wait(p);
			return;
		}
		if (!peer_reads_acks(p)) {
			conn_drop(p->conn, "it does not read its acks");
			return;
		}
	}
}

static void peer_read(struct conn *c)
{
	peer_process(c->data);
}

static int peer_open(void *ctx, struct conn *c)
{
	struct writer *w = ctx;
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	c->data = p;
	p->w = w;
	p->conn = c;
	p->retry_ev = evtimer_new(w->base, peer_retry_cb, p);
	return p->retry_ev ? 0 : -ENOMEM;
}

static const struct conn_ops peer_ops = {
	.name = "writer.sock",
	.type = SOCK_STREAM,
	.conns_max = PEERS_MAX,
	.deadline_ms = PEER_HELLO_S * 1000,
	/* one whole message at most is buffered beyond what was taken */
	.input_max = MSG_PAYLOAD_MAX + 2 * sizeof(struct msg_hdr),
	/* a poll of a large host is megabytes: read it in few large steps */
	.read_step = PEER_READ_STEP,
	.log_closes = true,
	.drop_note = "nothing of its unacked batches written",
	.refusal = "not root or the writer's user",
	.open = peer_open,
	.read = peer_read,
	.close = peer_close,
};

int peers_listen(struct writer *w, const char *path, gid_t gid)
{
	return conn_server_new(w->base, path, gid, w->peer_uid, &peer_ops, w, &w->peers);
}

void peers_free(struct writer *w)
{
	conn_server_free(w->peers);
	w->peers = NULL;
}
