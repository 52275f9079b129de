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
#include <unistd.h>
#include <event2/event.h>
#include <jansson.h>

#include "log.h"
#include "msg.h"
#include "probed.h"
#include "sock.h"

#define REQUEST_MAX 256 /* bytes of the largest request packet we accept */

struct packet {
	struct packet *next;
	size_t len;
	uint8_t data[];
};

struct peer {
	struct server *srv;
	int fd;
	struct sock_peer cred;
	struct event *ev_read, *ev_write;
	struct event *ev_hello; /* an idle connection must not hold a peer slot */
	struct packet *head, *tail;
	size_t queued_bytes;
	bool hello;
	uint64_t answers;
};

struct server {
	struct event_base *base;
	int listen_fd;
	struct event *ev_accept;
	uid_t peer_uid;
	struct collector *col;
	struct peer *peers[PROBE_PEERS_MAX];
	uint64_t refused;
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
	{MT_HELLO, true, req_hello},
	{MT_PROBE_POLL, false, req_poll},
};

static void peer_free(struct peer *peer)
{
	struct server *srv = peer->srv;

	for (int i = 0; i < PROBE_PEERS_MAX; i++)
		if (srv->peers[i] == peer)
			srv->peers[i] = NULL;
	while (peer->head) {
		struct packet *p = peer->head;

		peer->head = p->next;
		free(p);
	}
	event_free(peer->ev_read);
	event_free(peer->ev_write);
	event_free(peer->ev_hello);
	close(peer->fd);
	free(peer);
}

static void peer_drop(struct peer *peer, const char *why)
{
	log_warnx("probe.sock: dropping peer pid %d uid %u: %s", (int)peer->cred.pid,
		(unsigned)peer->cred.uid, why);
	peer_free(peer);
}

/* Writes queued packets until the socket is full; 0, or -errno when the peer is gone. */
static int peer_flush(struct peer *peer)
{
	while (peer->head) {
		struct packet *p = peer->head;

		if (send(peer->fd, p->data, p->len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
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

static int peer_queue(struct peer *peer, uint32_t type, const void *a, size_t a_len,
	const void *b, size_t b_len)
{
	struct msg_hdr hdr = {.type = type, .len = (uint32_t)(a_len + b_len)};
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
	struct msg_hello hello, reply = {CROFT_PROTO_VERSION, ROLE_PROBE, 0, 0};

	if (peer->hello || msg_get(cur, &hello, sizeof(hello)) < 0 || msg_end(cur) < 0)
		return -EBADMSG;
	if (hello.version != CROFT_PROTO_VERSION || hello.role != ROLE_SAMPLER)
		return -EPROTO;
	for (int i = 0; i < PROBE_PEERS_MAX; i++)
		if (peer->srv->peers[i] && peer->srv->peers[i] != peer && peer->srv->peers[i]->hello)
			return -EBUSY; /* one poller: two would split each other's deltas */
	peer->hello = true;
	log_info("probe.sock: sampler pid %d uid %u connected", (int)peer->cred.pid,
		(unsigned)peer->cred.uid);
	return peer_queue(peer, MT_HELLO, &reply, sizeof(reply), NULL, 0);
}

/* Packs records of rec_size into packets of type, each led by struct probe_batch. */
static int queue_records(struct peer *peer, uint32_t type, const uint8_t *recs, size_t count,
	size_t rec_size)
{
	size_t per_packet = (MSG_PACKET_MAX - sizeof(struct msg_hdr) -
		sizeof(struct probe_batch)) / rec_size;
	int r = 0;

	for (size_t i = 0; i < count && r == 0; i += per_packet) {
		struct probe_batch batch = {.count = (uint32_t)(count - i < per_packet ?
			count - i : per_packet)};

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
	struct probe_batch batch = {0};
	size_t used = 0;
	int r;

	for (size_t i = 0; i < ans->procs_count; i++) {
		const struct answer_proc *p = &ans->procs[i];
		size_t sys_len = p->rec.syscalls_count * sizeof(struct probe_syscall);
		size_t len = sizeof(p->rec) + sys_len;

		if (used + len > room) {
			if ((r = peer_queue(peer, MT_PROBE_PROCS, &batch, sizeof(batch), buf, used)))
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
		if (!permits[i].before_hello && !peer->hello)
			return -EPERM;
		return permits[i].fn(peer, &cur);
	}
	return -EPERM;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer = arg;
	uint8_t buf[REQUEST_MAX];
	struct msg_hdr hdr;
	char why[96];
	int r = msg_recv_packet(fd, buf, sizeof(buf), &hdr);

	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r == 0) {
		log_info("probe.sock: peer pid %d closed", (int)peer->cred.pid);
		peer_free(peer);
		return;
	}
	if (r < 0) {
		snprintf(why, sizeof(why), "bad packet: %s", strerror(-r));
		peer_drop(peer, why);
		return;
	}
	r = dispatch(peer, &hdr, buf + sizeof(hdr));
	if (r == 0)
		r = peer_flush(peer);
	if (r < 0) {
		snprintf(why, sizeof(why), "%s: %s", msg_type_name(hdr.type), strerror(-r));
		peer_drop(peer, why);
	}
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer = arg;
	int r = peer_flush(peer);

	if (r < 0)
		peer_drop(peer, strerror(-r));
}

static int slot_for(struct server *srv)
{
	for (int i = 0; i < PROBE_PEERS_MAX; i++)
		if (!srv->peers[i])
			return i;
	return -1;
}

static void on_hello_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer = arg;

	if (!peer->hello)
		peer_drop(peer, "no HELLO in time");
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct server *srv = arg;
	struct peer *peer;
	struct sock_peer cred;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot;

	if (fd < 0)
		return;
	if (sock_peer(fd, &cred) < 0 || !sock_peer_is(&cred, srv->peer_uid)) {
		srv->refused++;
		log_warnx("probe.sock: refused pid %d uid %u: only root and the croft user",
			(int)cred.pid, (unsigned)cred.uid);
		close(fd);
		return;
	}
	if ((slot = slot_for(srv)) < 0 || !(peer = calloc(1, sizeof(*peer)))) {
		srv->refused++;
		log_warnx("probe.sock: refused pid %d: too many peers", (int)cred.pid);
		close(fd);
		return;
	}
	peer->srv = srv;
	peer->fd = fd;
	peer->cred = cred;
	peer->ev_read = event_new(srv->base, fd, EV_READ | EV_PERSIST, on_read, peer);
	peer->ev_write = event_new(srv->base, fd, EV_WRITE, on_write, peer);
	peer->ev_hello = evtimer_new(srv->base, on_hello_deadline, peer);
	srv->peers[slot] = peer;
	if (!peer->ev_read || !peer->ev_write || !peer->ev_hello ||
		event_add(peer->ev_read, NULL) < 0 ||
		evtimer_add(peer->ev_hello, &(struct timeval){ .tv_sec = PROBE_HELLO_S }) < 0)
		peer_drop(peer, "out of memory");
}

int server_new(struct event_base *base, const char *path, gid_t gid, uid_t peer_uid,
	struct collector *col, struct server **ret_server)
{
	struct server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return -ENOMEM;
	srv->base = base;
	srv->peer_uid = peer_uid;
	srv->col = col;
	srv->listen_fd = sock_listen(path, SOCK_SEQPACKET, gid);
	if (srv->listen_fd < 0) {
		int r = srv->listen_fd;

		free(srv);
		return r;
	}
	srv->ev_accept = event_new(base, srv->listen_fd, EV_READ | EV_PERSIST, on_accept, srv);
	if (!srv->ev_accept || event_add(srv->ev_accept, NULL) < 0) {
		server_free(srv);
		return -ENOMEM;
	}
	*ret_server = srv;
	return 0;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	for (int i = 0; i < PROBE_PEERS_MAX; i++)
		if (srv->peers[i])
			peer_free(srv->peers[i]);
	if (srv->ev_accept)
		event_free(srv->ev_accept);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	free(srv);
}

void server_status(const struct server *srv, void *json_obj)
{
	json_t *peers = json_array();

	for (int i = 0; i < PROBE_PEERS_MAX; i++) {
		const struct peer *p = srv->peers[i];

		if (p)
			json_array_append_new(peers, json_pack("{s:i, s:i, s:b, s:I, s:I}", "pid",
				(int)p->cred.pid, "uid", (int)p->cred.uid, "hello", p->hello,
				"answers", (json_int_t)p->answers, "queued_bytes",
				(json_int_t)p->queued_bytes));
	}
	json_object_set_new(json_obj, "peers", peers);
	json_object_set_new(json_obj, "peers_refused", json_integer((json_int_t)srv->refused));
}

bool server_has_poller(const struct server *srv)
{
	for (int i = 0; i < PROBE_PEERS_MAX; i++)
		if (srv->peers[i] && srv->peers[i]->hello)
			return true;
	return false;
}
