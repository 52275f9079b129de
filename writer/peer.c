/*
 * peer.c: sampler connections on writer.sock.  HELLO both ways (the writer
 * answers with its last commit), then batches, grouped up to a limit under
 * one fdatasync and acked once committed.  A peer that breaks the protocol
 * is dropped with nothing written; while the disk refuses writes a peer is
 * not read and its group is retried each poll.  Writer process, croft user.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "log.h"
#include "msg.h"
#include "sock.h"
#include "writer.h"

struct group_entry {
	struct msg_batch batch;
	uint8_t *payload; /* malloc'd; lines start after the batch header */
	size_t lines_len;
	bool duplicate; /* already committed: acked, not written */
};

struct peer {
	struct writer *w;
	struct bufferevent *bev;
	struct sock_peer cred;
	bool hello_seen;
	struct group_entry group[GROUP_BATCHES_MAX];
	size_t group_count, group_bytes;
	struct event *retry_ev; /* armed while the group cannot be written */
	struct event *hello_ev; /* drops a peer whose HELLO is not whole in time */
	struct peer *next;
};

static void peer_process(struct peer *p);

static void group_clear(struct peer *p)
{
	for (size_t i = 0; i < p->group_count; i++)
		free(p->group[i].payload);
	p->group_count = 0;
	p->group_bytes = 0;
}

static void peer_free(struct peer *p)
{
	struct writer *w = p->w;

	for (struct peer **pp = &w->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	w->peers_count--;
	group_clear(p);
	event_free(p->retry_ev);
	if (p->hello_ev)
		event_free(p->hello_ev);
	bufferevent_free(p->bev);
	free(p);
}

static void peer_drop(struct peer *p, const char *why)
{
	log_warnx("sampler pid %d uid %u: %s; dropped, nothing of its unacked batches written",
		(int)p->cred.pid, (unsigned)p->cred.uid, why);
	peer_free(p);
}

static int peer_hello(struct peer *p, const uint8_t *payload, size_t len)
{
	const struct dataset *ds = p->w->ds;
	struct msg_hello hello, reply = {
		.version = CROFT_PROTO_VERSION,
		.role = ROLE_WRITER,
		.epoch = ds->rec.epoch,
		.seq = ds->rec.seq,
	};
	struct msg_cursor cur;

	msg_cursor_init(&cur, payload, len);
	if (msg_get(&cur, &hello, sizeof(hello)) < 0 || msg_end(&cur) < 0)
		return -EBADMSG;
	if (hello.version != CROFT_PROTO_VERSION || hello.role != ROLE_SAMPLER)
		return -EPROTO;
	p->hello_seen = true;
	log_info("sampler pid %d connected (epoch %016llx; committed epoch %016llx seq %llu)",
		(int)p->cred.pid, (unsigned long long)hello.epoch, (unsigned long long)reply.epoch,
		(unsigned long long)reply.seq);
	return msg_compose(
		bufferevent_get_output(p->bev), MT_HELLO, &reply, sizeof(reply), NULL, 0);
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
 * writer's buffers.  The kernel counts what the peer left unread. */
static bool peer_reads_acks(const struct peer *p)
{
	int unread = 0;

	if (ioctl(bufferevent_getfd(p->bev), TIOCOUTQ, &unread) < 0)
		return true;
	return (size_t)unread + evbuffer_get_length(bufferevent_get_output(p->bev)) <=
	       PEER_UNREAD_MAX;
}

static void peer_ack_group(struct peer *p)
{
	struct evbuffer *out = bufferevent_get_output(p->bev);

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
	ret = dataset_write(p->w, &g);
	if (ret < 0)
		return ret;
	peer_ack_group(p);
	return 0;
}

static void peer_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	if (peer_flush(p) < 0) {
		struct timeval tv = { .tv_sec = (time_t)(p->w->cfg.poll_interval_ms / 1000),
			.tv_usec = (suseconds_t)(p->w->cfg.poll_interval_ms % 1000 * 1000) };

		event_add(p->retry_ev, &tv);
		return;
	}
	bufferevent_enable(p->bev, EV_READ);
	peer_process(p);
}

static void peer_wait(struct peer *p)
{
	struct timeval tv = { .tv_sec = (time_t)(p->w->cfg.poll_interval_ms / 1000),
		.tv_usec = (suseconds_t)(p->w->cfg.poll_interval_ms % 1000 * 1000) };

	bufferevent_disable(p->bev, EV_READ);
	event_add(p->retry_ev, &tv);
}

/* One message off the input: 1 taken, 0 need more, -errno to drop. */
static int peer_take(struct peer *p)
{
	struct msg_hdr hdr;
	uint8_t *payload = NULL;
	int ret = msg_pull(bufferevent_get_input(p->bev), MSG_PAYLOAD_MAX, &hdr, &payload);

	if (ret <= 0)
		return ret;
	if (!p->hello_seen) {
		ret = hdr.type == MT_HELLO ? peer_hello(p, payload, hdr.len) : -EPROTO;
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

static void peer_process(struct peer *p)
{
	int ret;

	if (p->group_count)
		return; /* waiting for the disk */
	for (;;) {
		while (p->group_count < GROUP_BATCHES_MAX && p->group_bytes < GROUP_BYTES_MAX) {
			ret = peer_take(p);
			if (ret < 0) {
				peer_drop(p, ret == -EBADMSG
						     ? "batch is not its announced whole lines"
					     : ret == -EMSGSIZE ? "message over the size limit"
								: "protocol error");
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
			peer_drop(p, "it does not read its acks");
			return;
		}
	}
}

static void peer_hello_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	if (!p->hello_seen)
		peer_drop(p, "no whole HELLO in time");
}

static void peer_read_cb(struct bufferevent *bev, void *arg)
{
	peer_process(arg);
}

static void peer_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct peer *p = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		log_info("sampler pid %d disconnected", (int)p->cred.pid);
		peer_free(p);
	}
}

static void peer_accept_cb(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *sa,
	int salen, void *arg)
{
	struct writer *w = arg;
	struct sock_peer cred = { .pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	struct peer *p;

	if (sock_peer(fd, &cred) < 0 || !sock_peer_is(&cred, w->peer_uid)) {
		log_warnx("writer.sock: refused pid %d uid %u: not root or the writer's user",
			(int)cred.pid, (unsigned)cred.uid);
		close(fd);
		return;
	}
	if (w->peers_count >= PEERS_MAX || !(p = calloc(1, sizeof(*p)))) {
		log_warnx("writer.sock: refused pid %d: too many peers", (int)cred.pid);
		close(fd);
		return;
	}
	p->w = w;
	p->cred = cred;
	p->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
	p->retry_ev = evtimer_new(w->base, peer_retry_cb, p);
	p->hello_ev = evtimer_new(w->base, peer_hello_cb, p);
	if (!p->bev || !p->retry_ev || !p->hello_ev) {
		if (p->bev)
			bufferevent_free(p->bev);
		else
			close(fd);
		if (p->retry_ev)
			event_free(p->retry_ev);
		if (p->hello_ev)
			event_free(p->hello_ev);
		free(p);
		return;
	}
	evtimer_add(p->hello_ev, &(struct timeval){ .tv_sec = PEER_HELLO_S });
	/* bounded input: one whole message at most is buffered beyond what was taken */
	bufferevent_setwatermark(p->bev, EV_READ, 0, MSG_PAYLOAD_MAX + 2 * sizeof(struct msg_hdr));
	/* a poll of a large host is megabytes: read it in few large steps */
	bufferevent_set_max_single_read(p->bev, PEER_READ_STEP);
	bufferevent_setcb(p->bev, peer_read_cb, NULL, peer_event_cb, p);
	bufferevent_enable(p->bev, EV_READ | EV_WRITE);
	p->next = w->peers;
	w->peers = p;
	w->peers_count++;
}

int peers_listen(struct writer *w, int fd)
{
	w->listener = evconnlistener_new(w->base, peer_accept_cb, w, LEV_OPT_CLOSE_ON_FREE, -1, fd);
	return w->listener ? 0 : -ENOMEM;
}

void peers_free(struct writer *w)
{
	while (w->peers)
		peer_free(w->peers);
	if (w->listener)
		evconnlistener_free(w->listener);
	w->listener = NULL;
}
