/*
 * probe_link.c: croft-sampler's client of croft-probe on probe.sock
 * (SOCK_SEQPACKET, through client.c).  Each poll: connect when needed
 * (HELLO), send MT_PROBE_POLL, take the answer as it arrives until
 * MT_PROBE_END within a short timeout, and hand its per-tgid counts to the
 * ask's completion (probe_apply.c matches them to tracked processes and
 * turns them into rates).  Every wait is an event with a deadline: the
 * sampler's loop serves its other sockets meanwhile.  An answer that
 * covers time before this connection's first poll is no answer (the
 * probe's baseline), so no rate spans a gap.  croft-sampler, croft user.
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
#include "probe_host.h"
#include "probe_link.h"
#include "probe_wire.h"

#define PROBE_LINK_TIMEOUT_MS    1000 /* for HELLO and for a whole answer */
#define PROBE_LINK_HELLO_WAIT_MS 100  /* a poll waits this long for a new connection's HELLO */
#define PROBE_LINK_ANSWER_MAX    (64u << 20) /* bytes of one answer kept */
#define PROBE_LINK_GHOSTS        256         /* unmatched GPU users remembered for their exit */

struct probe_link_gpu_ghost {
	uint32_t tgid;
	uint64_t start_boot_ns;
};

/* Records of an answer, grown by bytes_append. */
struct probe_link_bytes {
	uint8_t *data;
	size_t len, cap;
};

struct probe_link {
	struct client *client;
	struct event *deadline;   /* the ask is answered (maybe with none) when it fires */
	probe_link_done_fn *done; /* of the last ask */
	void *done_arg;
	bool asked; /* its completion is still to come */
	char state[384];
	uint64_t answers; /* on this connection */
	/* the PROCS payloads of this answer, batch headers stripped: a struct
	 * probe_proc, then its syscalls, then the next */
	struct probe_link_bytes procs;
	/* the records no process took, offered once more with the next answer:
	 * a process gone before its final came, or born after /proc was read */
	struct probe_link_bytes carried;
	struct probe_link_bytes exits, finals; /* struct probe_exit, struct probe_final */
	struct probe_end end;
	bool whole;                    /* the answer asked for has come */
	struct probe_link_bytes tgids; /* struct probe_tgid: its records, indexed by answer_of */
	struct probe_link_gpu_ghost ghosts[PROBE_LINK_GHOSTS];
	size_t ghosts_next;
	struct probe_link_stats stats;
};

static const struct client_ops probe_client_ops;
static void deadline_cb(evutil_socket_t fd, short what, void *arg);

struct probe_link *probe_link_new(struct event_base *base, const char *socket_path)
{
	struct probe_link *link = calloc(1, sizeof(*link));

	if (!link)
		return NULL;
	snprintf(link->state, sizeof(link->state), "probe not connected yet");
	link->client = client_new(base, socket_path, &probe_client_ops, link);
	link->deadline = evtimer_new(base, deadline_cb, link);
	if (!link->client || !link->deadline) {
		probe_link_free(link);
		return NULL;
	}
	return link;
}

void probe_link_free(struct probe_link *link)
{
	if (!link)
		return;
	if (link->deadline)
		event_free(link->deadline);
	client_free(link->client);
	free(link->procs.data);
	free(link->carried.data);
	free(link->exits.data);
	free(link->finals.data);
	free(link->tgids.data);
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

/*
 * A socket missing, or left by a probe gone (nobody listens), is no probe
 * running: said so, with the host's reason it cannot run where the host
 * shows one (probe_host.c, the check croft run makes before starting it).
 */
static bool said_not_running(struct probe_link *link, int err)
{
	const char *path = client_path(link->client), *blocker;
	char host[PROBE_HOST_WHY_MAX];

	if (err != ENOENT && err != ECONNREFUSED)
		return false;
	blocker = probe_host_blocker(false, host, sizeof(host));
	snprintf(link->state, sizeof(link->state),
		"probe not connected: croft-probe is not running (%s%s%s)%s%s",
		err == ENOENT ? "no " : "", path,
		err == ENOENT ? "" : " is stale: nobody listens on it",
		blocker ? "; this host cannot run it: " : "", blocker ? blocker : "");
	return true;
}

static void link_down(struct probe_link *link, bool connecting, int err)
{
	evtimer_del(link->deadline);
	client_close(link->client);
	link->answers = 0;
	if (!connecting || !said_not_running(link, err))
		snprintf(link->state, sizeof(link->state), "probe not connected: %s: %s",
			connecting ? client_path(link->client) : "answer", strerror(err));
}

/* The ask is answered (maybe with none) once ms have passed. */
static void deadline_in(struct probe_link *link, int ms)
{
	struct timeval tv;

	ms++; /* past the deadline, not at it: a poll on the same beat asks first */
	tv = (struct timeval){ ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(link->deadline, &tv);
}

/* n bytes appended to b, whose length stays within max: 0, -EMSGSIZE or -ENOMEM. */
static int bytes_append(struct probe_link_bytes *b, const void *src, size_t n, size_t max)
{
	uint8_t *grown;

	if (n == 0)
		return 0; /* data may still be NULL, and NULL + 0 is UB */
	if (b->len + n > max)
		return -EMSGSIZE;
	if (b->len + n > b->cap) {
		if (!(grown = realloc(b->data, (b->len + n) * 2)))
			return -ENOMEM;
		b->data = grown;
		b->cap = (b->len + n) * 2;
	}
	memcpy(b->data + b->len, src, n);
	b->len += n;
	return 0;
}

/* A PROCS packet: whole records, each syscall tail within its bound, read to the end. */
static int take_procs(struct probe_link *link, struct msg_cursor *cur)
{
	struct probe_batch batch;
	const uint8_t *start;
	size_t len;
	int r;

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
	if ((r = bytes_append(&link->procs, start, len, PROBE_LINK_ANSWER_MAX)) < 0)
		return r;
	link->stats.records_last += batch.count;
	return 0;
}

static int take_exits(struct probe_link *link, struct msg_cursor *cur)
{
	struct probe_batch batch;

	if (msg_get(cur, &batch, sizeof(batch)) < 0 ||
		(size_t)batch.count * sizeof(struct probe_exit) != cur->left)
		return -EBADMSG;
	return bytes_append(&link->exits, cur->pos, cur->left, PROBE_LINK_ANSWER_MAX);
}

/* A FINALS packet: whole records, their strings NUL-terminated within their fields, argv_len
 * within argv. */
static int take_finals(struct probe_link *link, struct msg_cursor *cur)
{
	struct probe_batch batch;
	const uint8_t *start;
	size_t len;

	if (msg_get(cur, &batch, sizeof(batch)) < 0 ||
		(size_t)batch.count * sizeof(struct probe_final) != cur->left ||
		link->finals.len / sizeof(struct probe_final) + batch.count > PROBE_FINALS_MAX)
		return -EBADMSG;
	start = cur->pos;
	len = cur->left;
	for (uint32_t i = 0; i < batch.count; i++) {
		struct probe_final f;

		msg_get(cur, &f, sizeof(f));
		if (!memchr(f.cgroup, '\0', sizeof(f.cgroup)) ||
			!memchr(f.exe, '\0', sizeof(f.exe)) || f.argv_len > sizeof(f.argv))
			return -EBADMSG;
	}
	return bytes_append(&link->finals, start, len, SIZE_MAX);
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
	case MT_PROBE_FINALS:
		return take_finals(link, &cur);
	case MT_PROBE_END:
		if (msg_get(&cur, &link->end, sizeof(link->end)) < 0 || msg_end(&cur) < 0 ||
			link->end.exits != link->exits.len / sizeof(struct probe_exit) ||
			link->end.finals != link->finals.len / sizeof(struct probe_final))
			return -EBADMSG;
		link->whole = true;
		return 1;
	default:
		return -EPROTO;
	}
}

/*
 * A process that used the GPU and exited between two polls was never in
 * /proc for us: its exit is counted, so it does not vanish without trace.
 */
static void count_exits(struct probe_link *link)
{
	for (size_t i = 0; i < link->exits.len / sizeof(struct probe_exit); i++) {
		const struct probe_exit *x = (const struct probe_exit *)link->exits.data + i;

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
	size_t fresh_len = link->procs.len;

	/* the last answer's records carried over go after this answer's, indexed alike
	 * (a process may take two records: they add) */
	if (bytes_append(&link->procs, link->carried.data, link->carried.len, SIZE_MAX) < 0)
		return -ENOMEM;
	link->carried.len = 0;
	link->tgids.len = 0;
	/* by offset: procs is NULL in an answer without records, and NULL + 0 is UB */
	for (size_t off = 0; off < link->procs.len;) {
		struct probe_tgid t = { .matched = false, .carried = off >= fresh_len };

		memcpy(&t.rec, link->procs.data + off, sizeof(t.rec));
		t.syscalls = (const struct probe_syscall *)(link->procs.data + off + sizeof(t.rec));
		off += sizeof(t.rec) + t.rec.syscalls_count * sizeof(struct probe_syscall);
		if (bytes_append(&link->tgids, &t, sizeof(t), SIZE_MAX) < 0)
			return -ENOMEM;
	}
	*ret_count = link->tgids.len / sizeof(struct probe_tgid);
	return 0;
}

/* The answer taken, as probe_apply.c wants it: none unless whole and past the baseline. */
static int answer_of(struct probe_link *link, struct probe_answer *ret_answer)
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
	ret_answer->finals_sent = link->end.flags & PROBE_END_FINALS;
	ret_answer->gpufile = link->end.flags & PROBE_END_GPUFILE;
	snprintf(link->state, sizeof(link->state),
		ret_answer->answered ? "connected" : "connected, first answer is the baseline");
	/* a baseline's counts span time before we asked; its finals are whole all the same */
	ret_answer->finals = (const struct probe_final *)link->finals.data;
	ret_answer->finals_count = link->finals.len / sizeof(struct probe_final);
	ret_answer->exits = (const struct probe_exit *)link->exits.data;
	ret_answer->exits_count = link->exits.len / sizeof(struct probe_exit);
	ret_answer->finals_sent = ret_answer->finals_sent && ret_answer->answered;
	if (!ret_answer->answered)
		return 0;
	r = index_tgids(link, &ret_answer->tgids_count);
	if (r < 0) /* no counts, rather than some */
		*ret_answer = (struct probe_answer){ .answered = false };
	ret_answer->tgids = (struct probe_tgid *)link->tgids.data; /* once grown */
	if (r < 0)
		ret_answer->finals_count = 0;
	return r;
}

/* After the completion applied it: the unmatched GPU users noted, the exits counted. */
static void applied(struct probe_link *link, const struct probe_answer *answer)
{
	if (!link->whole)
		return;
	if (!answer->answered) {
		link->stats.exits_seen += link->exits.len / sizeof(struct probe_exit);
		return;
	}
	for (size_t i = 0; i < answer->tgids_count; i++) {
		const struct probe_tgid *t = &answer->tgids[i];
		/* its record and syscalls, as they lie in procs */
		const uint8_t *sent = (const uint8_t *)t->syscalls - sizeof(t->rec);
		size_t len = sizeof(t->rec) + t->rec.syscalls_count * sizeof(struct probe_syscall);

		if (t->matched)
			continue;
		if (!t->carried &&
			bytes_append(&link->carried, sent, len, PROBE_LINK_ANSWER_MAX) == 0)
			continue;
		if (!t->rec.gpu_ioctls)
			continue;
		/* remembered for the exit that may follow */
		link->ghosts[link->ghosts_next++ % PROBE_LINK_GHOSTS] =
			(struct probe_link_gpu_ghost){ t->rec.tgid, t->rec.start_boot_ns };
		link->stats.gpu_records_unmatched++;
	}
	count_exits(link);
}

void probe_link_answered(struct probe_link *link)
{
	struct probe_answer answer;
	int r = answer_of(link, &answer);

	if (r < 0)
		log_warnx("probe: this poll's answer is left out: %s", strerror(-r));
	link->asked = false;
	if (link->done)
		link->done(&answer, link->done_arg);
	applied(link, &answer);
}

/* No answer this poll: the link is dropped (reconnected at the next poll). */
static void link_failed(struct probe_link *link, int r, bool ready)
{
	if (link->asked && ready)
		link->stats.answers_lost++; /* its finals with it: those processes end vanished */
	link->whole = false;
	link_down(link, !ready, -r);
	if (link->asked)
		probe_link_answered(link);
}

static void send_poll(struct probe_link *link)
{
	struct probe_poll req = { 0 };
	int r;

	link->procs.len = link->exits.len = link->finals.len = 0;
	link->stats.records_last = 0;
	r = client_send(link->client, MT_PROBE_POLL, &req, sizeof(req), NULL, 0);
	if (r < 0)
		link_failed(link, r, true);
	else
		deadline_in(link, PROBE_LINK_TIMEOUT_MS);
}

/* The probe's HELLO: a poll waiting for it asks now. */
static void probe_ready(void *ctx, const struct msg_hello *hello)
{
	struct probe_link *link = ctx;

	log_info("probe: connected to %s", client_path(link->client));
	if (link->asked)
		send_poll(link);
}

/* A packet of the answer; the probe speaks only when asked. */
static int probe_message(void *ctx, const struct msg_hdr *hdr, const uint8_t *payload)
{
	struct probe_link *link = ctx;
	int r = link->asked ? probe_link_take(link, hdr, payload) : -EPROTO;

	if (r != 1)
		return r;
	evtimer_del(link->deadline);
	probe_link_answered(link);
	return 0;
}

static void probe_down(void *ctx, const struct client_end *end)
{
	link_failed(ctx, end->err ? end->err : -ECONNRESET, end->hello_seen);
}

static const struct client_ops probe_client_ops = {
	.type = SOCK_SEQPACKET,
	.peer_role = ROLE_PROBE,
	.hello_deadline_ms = PROBE_LINK_TIMEOUT_MS,
	.ready = probe_ready,
	.message = probe_message,
	.down = probe_down,
};

/* The answer is late, or a new connection's HELLO too late for this poll. */
static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe_link *link = arg;

	if (!link->asked)
		return;
	if (client_phase(link->client) == CLIENT_READY)
		link_failed(link, -ETIMEDOUT, true);
	else
		probe_link_answered(link); /* none this poll; the HELLO is awaited still */
}

void probe_link_ask(struct probe_link *link, probe_link_done_fn *done, void *arg)
{
	struct msg_hello hello = msg_hello_make(ROLE_SAMPLER, 0, 0);
	int r;

	link->done = done;
	link->done_arg = arg;
	link->asked = true;
	link->whole = false;
	if (client_phase(link->client) == CLIENT_READY) {
		send_poll(link);
	} else if (client_phase(link->client) == CLIENT_HELLO) {
		probe_link_answered(link); /* a HELLO already late: none this poll */
	} else if ((r = client_connect(link->client, &hello)) < 0) {
		link_failed(link, r, false);
	} else { /* our HELLO sent, the probe's awaited in the loop */
		snprintf(link->state, sizeof(link->state),
			"probe not connected: waiting for its HELLO");
		deadline_in(link, PROBE_LINK_HELLO_WAIT_MS);
	}
}
