/*
 * probe_link.h: croft-sampler's client of croft-probe (probe.sock,
 * SOCK_SEQPACKET): once per poll it asks for the probe's counts and hands
 * them over per tgid, to a completion called from the loop.
 * croft-sampler, croft user.
 */
#ifndef CROFT_PROBE_LINK_H
#define CROFT_PROBE_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe_wire.h"

struct event_base;
struct msg_hdr;
struct probe_link;

/* One tgid's counts over the probe's interval, as the probe sent them. */
struct probe_tgid {
	struct probe_proc rec;
	const struct probe_syscall *syscalls; /* rec.syscalls_count, highest count first */
	bool matched;                         /* a tracked process took them (probe_apply.c) */
	bool carried;                         /* from the answer before, which none took */
};

/*
 * This poll's answer: per-tgid counts that probe_apply.c matches to
 * tracked processes (tgid and start time: /proc/<pid>/stat starttime
 * (clock ticks) == start_boottime ns / (1e9 / sysconf(_SC_CLK_TCK))) and
 * turns into rates over each row's span.
 */
struct probe_answer {
	bool answered; /* false: none came, or it is the baseline (no counts) */
	/* what the probe counted (its concerns that loaded): the rest is left out */
	bool syscalls, ioctl, sched, net, gpufile;
	bool finals_sent; /* the probe sends reaped groups: a process gone waits for its final */
	struct probe_tgid *tgids; /* held by the link until the completion returns */
	size_t tgids_count;
	const struct probe_final *finals; /* reaped groups, their final figures */
	size_t finals_count;
	const struct probe_exit *exits; /* groups that exited; none after its final's answer */
	size_t exits_count;
};

/*
 * Called once per ask, from the loop or from within probe_link_ask: the
 * answer (answered false when none came in time).  The completion marks
 * the tgids it matched; what it left unmatched the link notes on return.
 */
typedef void probe_link_done_fn(struct probe_answer *answer, void *arg);

struct probe_link *probe_link_new(struct event_base *base, const char *socket_path);
void probe_link_free(struct probe_link *link);
/*
 * Once per poll, after /proc was read for every tracked process: asks the
 * probe for its deltas.  Without a connection one is begun: the probe's
 * HELLO is awaited in the loop (PROBE_LINK_TIMEOUT_MS, then the link is
 * dropped and begun again at the next ask), this poll waiting for it
 * PROBE_LINK_HELLO_WAIT_MS at most and a later poll not at all: done is
 * told of no answer, and the first poll after the HELLO asks.
 */
void probe_link_ask(struct probe_link *link, probe_link_done_fn *done, void *arg);

/* "connected", or why not (for status and the once-per-change log line). */
const char *probe_link_state(const struct probe_link *link);

/* Figures for sampler.ctl status. */
struct probe_link_stats {
	uint64_t answers;                 /* answers received, all connections */
	uint64_t answers_lost;            /* asked and not had: timed out, or the link failed */
	uint64_t records_last;            /* per-tgid records in the last answer */
	uint64_t exits_seen;              /* whole thread groups that exited */
	uint64_t gpu_exits_between_polls; /* GPU users born and gone between two polls */
	uint64_t gpu_records_unmatched;   /* GPU records for processes we do not track */
	uint64_t probe_drops_total; /* croft-probe's drops, all reasons (its status has them) */
};
void probe_link_get_stats(const struct probe_link *link, struct probe_link_stats *ret_stats);

/*
 * The socket-free half, apart for the fuzzer: one packet of an answer
 * checked and kept (0: more to come, 1: MT_PROBE_END closed a consistent
 * answer, -errno: drop the link); and the answer taken handed to the last
 * ask's completion.
 */
int probe_link_take(struct probe_link *link, const struct msg_hdr *hdr, const uint8_t *payload);
void probe_link_answered(struct probe_link *link);

#endif
