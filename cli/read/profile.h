/*
 * profile.h: croft profile's records and figures, shared by profile.c
 * (collecting and computing) and profile_out.c (table, --json, --svg).
 * Invoking user, no privilege.
 */
#ifndef CROFT_PROFILE_H
#define CROFT_PROFILE_H

#include "readers.h"

#define PROFILE_ROWS_MAX (4u << 20) /* rows one profile holds: ~0.5 GiB */
#define PHASES_SHOWN     1000       /* GPU phases listed; the count is exact */

/* One selected row, compact; its syscalls lie in its worker's arena. */
struct prec {
	int64_t ms, tgid;
	uint64_t ident, seq; /* seq: file << 40 | line, a stable tie-break */
	int64_t cpu_e4, rss, threads, ioctls;
	int64_t rx_e4, tx_e4, read_e4, write_e4;
	uint32_t has, sys_off, sys_n;
	uint8_t workload, worker;
};

/* All rows of one poll (same unix_ms) summed: what the charts show. */
struct sample {
	int64_t ms;
	int64_t cpu_e4, rss, threads, ioctls;
	int64_t rx_e4, tx_e4, read_e4, write_e4;
};

enum phase_kind { PH_ONSET, PH_ACTIVE, PH_IDLE, PH_HELD, PH_KINDS };

struct phase {
	int64_t tgid, start_ms, end_ms;
	enum phase_kind kind;
};

struct summary {
	double mean, p50, p95, max;
};

struct syscall_share {
	const char *name;
	double calls, share;
};

struct profile_result {
	uint64_t rows, processes, samples;
	int64_t first_ms, last_ms;
	struct summary cpu, rss;
	double threads_mean, threads_max;
	struct summary rx, tx, rd, wr; /* mean and max used */
	struct phase *phases;
	size_t phases_count;
	uint64_t phase_ms[PH_KINDS];
	struct syscall_share top[TOP_SYSCALLS_PROF];
	size_t top_count;
	double syscalls_total;
	struct sample *samples_v; /* for --svg */
};

const char *phase_name(enum phase_kind kind);
void profile_print_table(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep);
void profile_print_json(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep);
int profile_write_svg(const struct read_opts *o, const struct profile_result *p);

#endif
