/*
 * server.c: probe.sock (SOCK_SEQPACKET).  Peers are checked on accept
 * (SO_PEERCRED: root or the croft user), must say HELLO first, and may then
 * only send the requests of the permit table; anything else drops the peer.
 * An answer is queued as whole packets and written as the socket drains.
 * croft-probe, croft user, no capabilities.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <jansson.h>

#include "conn.h"
#include "log.h"
#include "msg.h"
#include "probed.h"

#define REQUEST_MAX 256 /* bytes of the largest request packet we accept */

struct packet {
	struct packet *next;
	size_t len;
	uint8_t data[];
};

/* A sampler's state; its connection (conn.c) holds it as data. */
struct peer {
	struct server *srv;
	struct conn *conn;
	struct event *ev_write;
	struct packet *head, *tail;
	size_t queued_bytes;
	uint64_t answers;
};

struct server {
	struct conn_server *conns;
	struct collector *col;
};

typedef int (*request_fn)(struct peer *peer, struct msg_cursor *cur);
static int req_hello(struct peer *peer, struct msg_cursor *cur);
static int req_poll(struct peer *peer, struct msg_cursor *cur);

/* The permit table: nothing else is ever answered. */
static const struct permit {
	uint32_t type;
	bool before_hello;
	request_fn fn;
} permits[] = {
	{ MT_HELLO, true, req_hello },
	{ MT_PROBE_POLL, false, req_poll },
};

static void peer_close(struct conn *c)
{
	struct peer *peer = c->data;

	if (!peer)
		return;
	while (peer->head) {
		struct packet *p = peer->head;

		peer->head = p->next;
		free(p);
	}
	if (peer->ev_write)
		event_free(peer->ev_write);
	free(peer);
}

/* Writes queued packets until the socket is full; 0, or -errno when the peer is gone. */
static int peer_flush(struct peer *peer)
{
	while (peer->head) {
		struct packet *p = peer->head;

		if (send(peer->conn->fd, p->data, p->len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				event_add(peer->ev_write, NULL);
				return 0;
			}
			return -errno;
		}
		peer->head = p->next;
		peer->queued_bytes -= p->len;
		free(p);
	}
	peer->tail = NULL;
	return 0;
}

static int peer_queue(
	struct peer *peer, uint32_t type, const void *a, size_t a_len, const void *b, size_t b_len)
{
	struct msg_hdr hdr = { .type = type, .len = (uint32_t)(a_len + b_len) };
	size_t len = sizeof(hdr) + a_len + b_len;
	struct packet *p;

	if (len > MSG_PACKET_MAX || peer->queued_bytes + len > PROBE_PEER_QUEUE_MAX)
		return -ENOBUFS;
	if (!(p = malloc(sizeof(*p) + len)))
		return -ENOMEM;
	p->next = NULL;
	p->len = len;
	memcpy(p->data, &hdr, sizeof(hdr));
	if (a_len)
		memcpy(p->data + sizeof(hdr), a, a_len);
	if (b_len)
		memcpy(p->data + sizeof(hdr) + a_len, b, b_len);
	if (peer->tail)
		peer->tail->next = p;
	else
		peer->head = p;
	peer->tail = p;
	peer->queued_bytes += len;
	return 0;
}

static int req_hello(struct peer *peer, struct msg_cursor *cur)
{
	struct msg_hello hello, reply = msg_hello_make(ROLE_PROBE, 0, 0);
	int r;

	if (peer->conn->hello_seen)
		return -EBADMSG;
	r = msg_hello_check(MT_HELLO, cur, ROLE_SAMPLER, &hello);
	if (r < 0)
		return r;
	if (server_has_poller(peer->srv))
		return -EBUSY; /* one poller: two would split each other's deltas */
	conn_hello_seen(peer->conn);
	log_info("probe.sock: sampler pid %d uid %u connected", (int)peer->conn->cred.pid,
		(unsigned)peer->conn->cred.uid);
	return peer_queue(peer, MT_HELLO, &reply, sizeof(reply), NULL, 0);
}

/* Packs records of rec_size into packets of type, each led by struct probe_batch. */
static int queue_records(
	struct peer *peer, uint32_t type, const uint8_t *recs, size_t count, size_t rec_size)
{
	size_t per_packet =
		(MSG_PACKET_MAX - sizeof(struct msg_hdr) - sizeof(struct probe_batch)) / rec_size;
	int r = 0;

	for (size_t i = 0; i < count && r == 0; i += per_packet) {
		struct probe_batch batch = {
			.count = (uint32_t)(count - i < per_packet ? count - i : per_packet)
		};

		r = peer_queue(peer, type, &batch, sizeof(batch), recs + i * rec_size,
			batch.count * rec_size);
	}
	return r;
}

/* Proc records have variable tails: fill each packet with as many whole ones as fit. */
static int queue_procs(struct peer *peer, const struct answer *ans)
{
	static uint8_t buf[MSG_PACKET_MAX];
	size_t room = MSG_PACKET_MAX - sizeof(struct msg_hdr) - sizeof(struct probe_batch);
	struct probe_batch batch = { 0 };
	size_t used = 0;
	int r;

	for (size_t i = 0; i < ans->procs_count; i++) {
		const struct answer_proc *p = &ans->procs[i];
		size_t sys_len = p->rec.syscalls_count * sizeof(struct probe_syscall);
		size_t len = sizeof(p->rec) + sys_len;

		if (used + len > room) {
			if ((r = peer_queue(
				     peer, MT_PROBE_PROCS, &batch, sizeof(batch), buf, used)))
				return r;
			batch.count = 0;
			used = 0;
		}
		memcpy(buf + used, &p->rec, sizeof(p->rec));
		if (sys_len)
			memcpy(buf + used + sizeof(p->rec), p->syscalls, sys_len);
		used += len;
		batch.count++;
	}
	if (batch.count)
		return peer_queue(peer, MT_PROBE_PROCS, &batch, sizeof(batch), buf, used);
	return 0;
}

static int req_poll(struct peer *peer, struct msg_cursor *cur)
{
	const struct answer *ans;
	struct probe_poll poll;
	int r;

	if (msg_get(cur, &poll, sizeof(poll)) < 0 || msg_end(cur) < 0 || poll.reserved)
		return -EBADMSG;
	if ((r = collector_answer(peer->srv->col, peer->answers == 0, &ans)) < 0) {
		log_warnx("collecting an answer: %s", strerror(-r));
		return r;
	}
	peer->answers++;
	if ((r = queue_procs(peer, ans)) == 0)
		r = queue_records(peer, MT_PROBE_EXITS, (const uint8_t *)ans->exits,
			ans->exits_count, sizeof(*ans->exits));
	if (r == 0 && ans->finals_count)
		r = queue_records(peer, MT_PROBE_FINALS, (const uint8_t *)ans->finals,
			ans->finals_count, sizeof(*ans->finals));
	if (r == 0)
		r = peer_queue(peer, MT_PROBE_END, &ans->end, sizeof(ans->end), NULL, 0);
	return r;
}

static int dispatch(struct peer *peer, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_cursor cur;

	msg_cursor_init(&cur, payload, hdr->len);
	for (size_t i = 0; i < sizeof(permits) / sizeof(permits[0]); i++) {
		if (permits[i].type != hdr->type)
			continue;
		if (!permits[i].before_hello && !peer->conn->hello_seen)
			return -EPERM;
		return permits[i].fn(peer, &cur);
	}
	return -EPERM;
}

static void peer_read(struct conn *c)
{
	struct peer *peer = c->data;
	uint8_t buf[REQUEST_MAX];
	struct msg_hdr hdr;
	int r = msg_recv_packet(c->fd, buf, sizeof(buf), &hdr);

	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r == 0) {
		conn_closed(c);
		return;
	}
	if (r < 0) {
		conn_drop(c, "bad packet: %s", strerror(-r));
		return;
	}
	r = dispatch(peer, &hdr, buf + sizeof(hdr));
	if (r == 0)
		r = peer_flush(peer);
	if (r < 0)
		conn_drop(c, "%s: %s", msg_type_name(hdr.type), strerror(-r));
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer = arg;
	int r = peer_flush(peer);

	if (r < 0)
		conn_drop(peer->conn, "%s", strerror(-r));
}

static int peer_open(void *ctx, struct conn *c)
{
	struct server *srv = ctx;
	struct peer *peer = calloc(1, sizeof(*peer));

	if (!peer)
		return -ENOMEM;
	c->data = peer;
	peer->srv = srv;
	peer->conn = c;
	peer->ev_write = event_new(conn_server_base(srv->conns), c->fd, EV_WRITE, on_write, peer);
	return peer->ev_write ? 0 : -ENOMEM;
}

static const struct conn_ops peer_ops = {
	.name = "probe.sock",
	.type = SOCK_SEQPACKET,
	.conns_max = PROBE_PEERS_MAX,
	.deadline_ms = PROBE_HELLO_S * 1000, /* an idle connection must not hold a slot */
	.log_closes = true,
	.refusal = "only root and the croft user",
	.open = peer_open,
	.read = peer_read,
	.close = peer_close,
};

int server_new(struct event_base *base, const char *path, gid_t gid, uid_t peer_uid,
	struct collector *col, struct server **ret_server)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return -ENOMEM;
	srv->col = col;
	r = conn_server_new(base, path, gid, peer_uid, &peer_ops, srv, &srv->conns);
	if (r < 0) {
		free(srv);
		return r;
	}
	*ret_server = srv;
	return 0;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	conn_server_free(srv->conns);
	free(srv);
}

void server_status(const struct server *srv, void *json_obj)
{
	json_t *peers = json_array();

	for (const struct conn *c = conn_first(srv->conns); c; c = conn_next(c)) {
		const struct peer *p = c->data;

		json_array_append_new(
			peers, json_pack("{s:i, s:i, s:b, s:I, s:I}", "pid", (int)c->cred.pid,
				       "uid", (int)c->cred.uid, "hello", c->hello_seen, "answers",
				       (json_int_t)p->answers, "queued_bytes",
				       (json_int_t)p->queued_bytes));
	}
	json_object_set_new(json_obj, "peers", peers);
	json_object_set_new(json_obj, "peers_refused",
		json_integer((json_int_t)conn_server_refused(srv->conns)));
}

bool server_has_poller(const struct server *srv)
{
	for (const struct conn *c = conn_first(srv->conns); c; c = conn_next(c))
		if (c->hello_seen)
			return true;
	return false;
}
