/*
 * probe_link.h: croft-sampler's client of croft-probe (probe.sock,
 * SOCK_SEQPACKET): once per poll it asks for the probe's counts and hands
 * them over per tgid.
 * croft-sampler, croft user.
 */
#ifndef CROFT_PROBE_LINK_H
#define CROFT_PROBE_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe_wire.h"

struct probe_link;

struct probe_link *probe_link_new(const char *socket_path);
void probe_link_free(struct probe_link *link);
/*
 * Once per poll, after /proc was read for every tracked process: asks the
 * probe for its deltas (connecting first when needed).  0: asked, wait for
 * probe_link_fd to be readable and call probe_link_read; -errno: no probe
 * this poll (probe_link_answer gives none).
 */
int probe_link_ask(struct probe_link *link);
int probe_link_fd(const struct probe_link *link);
/* Milliseconds left for the answer to arrive in. */
int probe_link_wait_ms(const struct probe_link *link);
/*
 * Takes what has arrived of the answer, without blocking: 0 when more is to
 * come; 1 when the answer is whole; -errno when the link dropped or the
 * answer came too late (probe_link_answer gives none).
 */
int probe_link_read(struct probe_link *link);
/*
 * The socket-free half of probe_link_read, apart for the fuzzer: one packet
 * of an answer checked and kept (0: more to come, 1: MT_PROBE_END closed a
 * consistent answer, -errno: drop the link).
 */
struct msg_hdr;
int probe_link_take(struct probe_link *link, const struct msg_hdr *hdr, const uint8_t *payload);

/* One tgid's counts over the probe's interval, as the probe sent them. */
struct probe_tgid {
	struct probe_proc rec;
	const struct probe_syscall *syscalls; /* rec.syscalls_count, highest count first */
	bool matched;                         /* a tracked process took them (probe_apply.c) */
};

/*
 * This poll's answer, once probe_link_read ended: per-tgid counts that
 * probe_apply.c matches to tracked processes (tgid and start time:
 * /proc/<pid>/stat starttime (clock ticks) == start_boottime ns /
 * (1e9 / sysconf(_SC_CLK_TCK))) and turns into rates over each row's span.
 */
struct probe_answer {
	bool answered; /* false: none came, or it is the baseline (no counts) */
	/* what the probe counted (its concerns that loaded): the rest is left out */
	bool syscalls, ioctl, sched, net;
	struct probe_tgid *tgids; /* held by the link until the next ask */
	size_t tgids_count;
};
/* Called once per answer (whole or not): the answer's figures and the link's stats. */
int probe_link_answer(struct probe_link *link, struct probe_answer *ret_answer);
/* After probe_apply.c applied it: the unmatched GPU users noted, the exits counted. */
void probe_link_applied(struct probe_link *link, const struct probe_answer *answer);

/* "connected", or why not (for status and the once-per-change log line). */
const char *probe_link_state(const struct probe_link *link);

/* Figures for sampler.ctl status. */
struct probe_link_stats {
	uint64_t answers;                 /* answers received, all connections */
	uint64_t records_last;            /* per-tgid records in the last answer */
	uint64_t exits_seen;              /* whole thread groups that exited */
	uint64_t gpu_exits_between_polls; /* GPU users born and gone between two polls */
	uint64_t gpu_records_unmatched;   /* GPU records for processes we do not track */
	uint64_t probe_drops_total; /* croft-probe's drops, all reasons (its status has them) */
};
void probe_link_get_stats(const struct probe_link *link, struct probe_link_stats *ret_stats);

#endif
