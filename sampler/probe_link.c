/*
 * probe_link.c: croft-sampler's client of croft-probe on probe.sock
 * (SOCK_SEQPACKET).  Each poll: connect when needed (HELLO), send
 * MT_PROBE_POLL, take the answer as it arrives (the sampler's loop serves
 * its other sockets meanwhile) until MT_PROBE_END within a short timeout,
 * and hand its per-tgid counts to probe_apply.c, which matches them to
 * tracked processes and turns them into rates.  An answer that covers time
 * before this connection's first poll is no answer (the probe's baseline),
 * so no rate spans a gap.  croft-sampler, croft user.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "msg.h"
#include "probe_link.h"
#include "probe_wire.h"
#include "sock.h"

#define PROBE_LINK_TIMEOUT_MS 1000        /* for HELLO and for a whole answer */
#define PROBE_LINK_ANSWER_MAX (64u << 20) /* bytes of one answer kept */
#define PROBE_LINK_GHOSTS     256         /* unmatched GPU users remembered for their exit */

struct probe_link_gpu_ghost {
	uint32_t tgid;
	uint64_t start_boot_ns;
};

struct probe_link {
	char path[256];
	int fd; /* -1: not connected */
	char state[384];
	uint64_t answers;     /* on this connection */
	uint64_t deadline_ms; /* CLOCK_MONOTONIC: the answer asked for is late after it */
	uint8_t packet[MSG_PACKET_MAX];
	uint8_t *procs; /* the PROCS payloads of this answer, batch headers stripped */
	size_t procs_len, procs_cap;
	struct probe_exit *exits;
	size_t exits_count, exits_cap;
	struct probe_end end;
	bool whole;               /* the answer asked for has come */
	struct probe_tgid *tgids; /* its records, indexed by probe_link_answer */
	size_t tgids_cap;
	struct probe_link_gpu_ghost ghosts[PROBE_LINK_GHOSTS];
	size_t ghosts_next;
	struct probe_link_stats stats;
};

struct probe_link *probe_link_new(const char *socket_path)
{
	struct probe_link *link = calloc(1, sizeof(*link));

	if (!link)
		return NULL;
	snprintf(link->path, sizeof(link->path), "%s", socket_path);
	link->fd = -1;
	snprintf(link->state, sizeof(link->state), "probe not connected yet");
	return link;
}

void probe_link_free(struct probe_link *link)
{
	if (!link)
		return;
	if (link->fd >= 0)
		close(link->fd);
	free(link->procs);
	free(link->exits);
	free(link->tgids);
	free(link);
}

const char *probe_link_state(const struct probe_link *link)
{
	return link->state;
}

void probe_link_get_stats(const struct probe_link *link, struct probe_link_stats *ret_stats)
{
	*ret_stats = link->stats;
}

static void link_down(struct probe_link *link, const char *what, int err)
{
	if (link->fd >= 0)
		close(link->fd);
	link->fd = -1;
	link->answers = 0;
	snprintf(link->state, sizeof(link->state), "probe not connected: %s: %s", what,
		strerror(err));
}

/* One packet within timeout_ms (0: one already here); 1 with *ret_hdr, -EAGAIN, or -errno. */
static int recv_packet(struct probe_link *link, int timeout_ms, struct msg_hdr *ret_hdr)
{
	struct pollfd pfd = { .fd = link->fd, .events = POLLIN };
	int r;

	r = poll(&pfd, 1, timeout_ms);
	if (r == 0)
		return -EAGAIN;
	if (r < 0)
		return -errno;
	r = msg_recv_packet(link->fd, link->packet, sizeof(link->packet), ret_hdr);
	return r == 0 ? -ECONNRESET : r;
}

static int link_connect(struct probe_link *link)
{
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, 0, 0);
	struct msg_cursor cur;
	struct msg_hdr hdr;
	int fd = sock_connect(link->path, SOCK_SEQPACKET), r;

	if (fd < 0)
		return fd;
	link->fd = fd;
	link->answers = 0;
	r = msg_send_packet(fd, MT_HELLO, &hello, sizeof(hello), NULL, 0);
	if (r == 0)
		r = recv_packet(link, PROBE_LINK_TIMEOUT_MS, &hdr);
	if (r < 0)
		return r == -EAGAIN ? -ETIMEDOUT : r;
	msg_cursor_init(&cur, link->packet + sizeof(hdr), hdr.len);
	r = msg_hello_check(hdr.type, &cur, ROLE_PROBE, &hello);
	if (r < 0)
		return r;
	log_info("probe: connected to %s", link->path);
	return 0;
}

/* A PROCS packet: whole records, each syscall tail within its bound, read to the end. */
static int take_procs(struct probe_link *link, struct msg_cursor *cur)
{
	struct probe_batch batch;
	const uint8_t *start = cur->pos;
	size_t len = cur->left;
	uint8_t *grown;

	if (msg_get(cur, &batch, sizeof(batch)) < 0)
		return -EBADMSG;
	start = cur->pos;
	len = cur->left;
	for (uint32_t i = 0; i < batch.count; i++) {
		struct probe_proc rec;
		struct probe_syscall sys;

		if (msg_get(cur, &rec, sizeof(rec)) < 0 ||
			rec.syscalls_count > PROBE_PROC_SYSCALLS_MAX)
			return -EBADMSG;
		for (uint32_t j = 0; j < rec.syscalls_count; j++)
			if (msg_get(cur, &sys, sizeof(sys)) < 0)
				return -EBADMSG;
	}
	if (msg_end(cur) < 0)
		return -EBADMSG;
	if (len == 0)
		return 0; /* an empty batch: procs may still be NULL, and NULL + 0 is UB */
	if (link->procs_len + len > PROBE_LINK_ANSWER_MAX)
		return -EMSGSIZE;
	if (link->procs_len + len > link->procs_cap) {
		size_t cap = (link->procs_len + len) * 2;

		if (!(grown = realloc(link->procs, cap)))
			return -ENOMEM;
		link->procs = grown;
		link->procs_cap = cap;
	}
	memcpy(link->procs + link->procs_len, start, len);
	link->procs_len += len;
	link->stats.records_last += batch.count;
	return 0;
}

static int take_exits(struct probe_link *link, struct msg_cursor *cur)
{
	struct probe_batch batch;
	struct probe_exit *grown;

	if (msg_get(cur, &batch, sizeof(batch)) < 0 ||
		(size_t)batch.count * sizeof(struct probe_exit) != cur->left)
		return -EBADMSG;
	if (link->exits_count + batch.count > link->exits_cap) {
		size_t cap = (link->exits_count + batch.count) * 2;

		if (cap * sizeof(*grown) > PROBE_LINK_ANSWER_MAX ||
			!(grown = realloc(link->exits, cap * sizeof(*grown))))
			return -ENOMEM;
		link->exits = grown;
		link->exits_cap = cap;
	}
	for (uint32_t i = 0; i < batch.count; i++)
		msg_get(cur, &link->exits[link->exits_count++], sizeof(struct probe_exit));
	return 0;
}

int probe_link_take(struct probe_link *link, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct msg_cursor cur;

	msg_cursor_init(&cur, payload, hdr->len);
	switch (hdr->type) {
	case MT_PROBE_PROCS:
		return take_procs(link, &cur);
	case MT_PROBE_EXITS:
		return take_exits(link, &cur);
	case MT_PROBE_END:
		if (msg_get(&cur, &link->end, sizeof(link->end)) < 0 || msg_end(&cur) < 0 ||
			link->end.exits != link->exits_count)
			return -EBADMSG;
		link->whole = true;
		return 1;
	default:
		return -EPROTO;
	}
}

/* Remembers an unmatched record with GPU ioctls, for the exit that may follow. */
static void note_unmatched_gpu(struct probe_link *link, const struct probe_proc *rec)
{
	struct probe_link_gpu_ghost *g = &link->ghosts[link->ghosts_next++ % PROBE_LINK_GHOSTS];

	g->tgid = rec->tgid;
	g->start_boot_ns = rec->start_boot_ns;
	link->stats.gpu_records_unmatched++;
}

/*
 * A process that used the GPU and exited between two polls was never in
 * /proc for us: its exit is counted, so it does not vanish without trace.
 */
static void count_exits(struct probe_link *link)
{
	for (size_t i = 0; i < link->exits_count; i++) {
		const struct probe_exit *x = &link->exits[i];

		link->stats.exits_seen++;
		for (size_t g = 0; g < PROBE_LINK_GHOSTS; g++) {
			if (link->ghosts[g].tgid == x->tgid &&
				link->ghosts[g].start_boot_ns == x->start_boot_ns) {
				link->stats.gpu_exits_between_polls++;
				link->ghosts[g].tgid = 0;
				log_info("probe: GPU process %u (%.16s) started and exited between "
					 "two polls",
					x->tgid, x->comm);
				break;
			}
		}
	}
}

/* The records of a whole answer, one per tgid as sent (take_procs checked their bounds). */
static int index_tgids(struct probe_link *link, size_t *ret_count)
{
	size_t n = 0;

	/* by offset: procs is NULL in an answer without records, and NULL + 0 is UB */
	for (size_t off = 0; off < link->procs_len; n++) {
		struct probe_tgid *t;

		if (n == link->tgids_cap) {
			size_t cap = n ? n * 2 : 64;

			if (!(t = realloc(link->tgids, cap * sizeof(*t))))
				return -ENOMEM;
			link->tgids = t;
			link->tgids_cap = cap;
		}
		t = &link->tgids[n];
		memcpy(&t->rec, link->procs + off, sizeof(t->rec));
		t->syscalls = (const struct probe_syscall *)(link->procs + off + sizeof(t->rec));
		t->matched = false;
		off += sizeof(t->rec) + t->rec.syscalls_count * sizeof(struct probe_syscall);
	}
	*ret_count = n;
	return 0;
}

int probe_link_answer(struct probe_link *link, struct probe_answer *ret_answer)
{
	int r;

	*ret_answer = (struct probe_answer){ 0 };
	if (!link->whole)
		return 0;
	link->answers++;
	link->stats.answers++;
	link->stats.probe_drops_total = 0;
	for (int i = 0; i < PROBE_WIRE_DROPS; i++)
		link->stats.probe_drops_total += link->end.drops_total[i];
	/* the first answer on a connection covers time before we asked: baseline only */
	ret_answer->answered = link->answers > 1 && !(link->end.flags & PROBE_END_FIRST);
	ret_answer->syscalls = link->end.flags & PROBE_END_SYSCALLS;
	ret_answer->ioctl = link->end.flags & PROBE_END_IOCTL;
	ret_answer->sched = link->end.flags & PROBE_END_SCHED;
	ret_answer->net = link->end.flags & PROBE_END_NET;
	snprintf(link->state, sizeof(link->state),
		ret_answer->answered ? "connected" : "connected, first answer is the baseline");
	if (!ret_answer->answered)
		return 0;
	r = index_tgids(link, &ret_answer->tgids_count);
	if (r < 0) /* no counts, rather than some */
		*ret_answer = (struct probe_answer){ .answered = false };
	ret_answer->tgids = link->tgids; /* once grown */
	return r;
}

void probe_link_applied(struct probe_link *link, const struct probe_answer *answer)
{
	if (!link->whole)
		return;
	if (!answer->answered) {
		link->stats.exits_seen += link->exits_count;
		return;
	}
	for (size_t i = 0; i < answer->tgids_count; i++)
		if (!answer->tgids[i].matched && answer->tgids[i].rec.gpu_ioctls)
			note_unmatched_gpu(link, &answer->tgids[i].rec);
	count_exits(link);
}

/* No answer this poll: the link is dropped (reconnected at the next poll). */
static int link_failed(struct probe_link *link, const char *what, int r)
{
	link_down(link, what, -r);
	return r;
}

int probe_link_ask(struct probe_link *link)
{
	struct probe_poll req = { 0 };
	int r;

	link->whole = false;
	if (link->fd < 0 && (r = link_connect(link)) < 0)
		return link_failed(link, link->path, r);
	link->procs_len = link->exits_count = 0;
	link->stats.records_last = 0;
	link->deadline_ms = clock_mono_ms() + PROBE_LINK_TIMEOUT_MS;
	r = msg_send_packet(link->fd, MT_PROBE_POLL, &req, sizeof(req), NULL, 0);
	return r < 0 ? link_failed(link, "answer", r) : 0;
}

int probe_link_fd(const struct probe_link *link)
{
	return link->fd;
}

int probe_link_wait_ms(const struct probe_link *link)
{
	uint64_t now = clock_mono_ms();

	return now < link->deadline_ms ? (int)(link->deadline_ms - now) : 0;
}

int probe_link_read(struct probe_link *link)
{
	struct msg_hdr hdr;
	int r;

	while ((r = recv_packet(link, 0, &hdr)) > 0)
		if ((r = probe_link_take(link, &hdr, link->packet + sizeof(hdr))) != 0)
			break;
	if (r == 1)
		return 1;
	if (r == -EAGAIN && clock_mono_ms() < link->deadline_ms)
		return 0;
	link->whole = false;
	return link_failed(link, "answer", r == -EAGAIN ? -ETIMEDOUT : r);
}
