/*
 * probe_link.h: croft-sampler's client of croft-probe (probe.sock,
 * SOCK_SEQPACKET): once per poll it fills ->probe of every tracked process.
 * croft-sampler, croft user.
 */
#ifndef CROFT_PROBE_LINK_H
#define CROFT_PROBE_LINK_H

#include <stdint.h>

struct probe_link;
struct proc_table;

struct probe_link *probe_link_new(const char *socket_path);
void probe_link_free(struct probe_link *link);
/*
 * Once per poll, after /proc was read for every tracked process: asks the
 * probe for its deltas (connecting first when needed).  0: asked, wait for
 * probe_link_fd to be readable and call probe_link_read; -errno: no probe
 * this poll, ->probe.valid is false everywhere.
 */
int probe_link_ask(struct probe_link *link, struct proc_table *table);
int probe_link_fd(const struct probe_link *link);
/* Milliseconds left for the answer to arrive in. */
int probe_link_wait_ms(const struct probe_link *link);
/*
 * Takes what has arrived of the answer, without blocking: 0 when more is to
 * come; 1 when the answer is whole and ->probe of each tracked process is
 * filled (matching by tgid and start time: /proc/<pid>/stat starttime
 * (clock ticks) == task start_boottime ns / (1e9 / sysconf(_SC_CLK_TCK))),
 * rates over the span of each process's row (->span_s); -errno when the link dropped
 * or the answer came too late (->probe.valid false everywhere).
 * ->probe.syscalls is malloc'd here and freed by proc.c with the process
 * (or replaced here with free + malloc).
 */
int probe_link_read(struct probe_link *link, struct proc_table *table);
/*
 * The socket-free half of probe_link_read, apart for the fuzzer: one packet
 * of an answer checked and kept (0: more to come, 1: MT_PROBE_END closed a
 * consistent answer, -errno: drop the link), then a whole answer applied.
 */
struct msg_hdr;
int probe_link_take(struct probe_link *link, const struct msg_hdr *hdr, const uint8_t *payload);
void probe_link_apply(struct probe_link *link, struct proc_table *table);

/* "connected", or why not (for status and the once-per-change log line). */
const char *probe_link_state(const struct probe_link *link);

/* Figures for sampler.ctl status. */
struct probe_link_stats {
	uint64_t answers;                 /* answers received, all connections */
	uint64_t records_last;            /* per-tgid records in the last answer */
	uint64_t exits_seen;              /* whole thread groups that exited */
	uint64_t gpu_exits_between_polls; /* GPU users born and gone between two polls */
	uint64_t gpu_records_unmatched;   /* GPU records for processes we do not track */
	uint64_t probe_drops_total;       /* croft-probe's drops, all reasons (its status has them) */
};
void probe_link_get_stats(const struct probe_link *link, struct probe_link_stats *ret_stats);

#endif
