/*
 * readers.h: the map of croft stats and croft profile above their engine
 * (engine/engine.h): the options (options.c), gpu_system_holders
 * (holders.c), what both reports print alike (out.c).  Each report is a
 * folder with its own header (stats/stats.h, profile/profile.h).  Runs as
 * the invoking user, no privilege.
 */
#ifndef CROFT_READERS_H
#define CROFT_READERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "engine.h"

/* stats/stats.c, profile/profile.c: the croft subcommands (cli/croft.c dispatches) */
int cmd_stats(int argc, char **argv);
int cmd_profile(int argc, char **argv);

#define TOP_TABLE          10  /* entries per ranking in the table */
#define TOP_JSON           100 /* entries per ranking in --json */
#define TOP_SYSCALLS_STATS 20
#define TOP_SYSCALLS_PROF  15
#define MS_PER_HOUR        3600000.0

/* options.c: the command line and the config into struct read_opts */
/* Returns 0, 1 after --help (exit 0), or -EINVAL after printing why. */
int read_opts_parse(int argc, char **argv, bool profile, struct read_opts *ret_opts);
/* "2026-10-20T14:00:00Z" (".123" before Z when not a whole second) */
void format_time(int64_t ms, char *buf, size_t size);

/* holders.c: gpu_system_holders */
void holders_parse(struct read_opts *o, const char *names);
/* The index of the name a row's exe basename or comm is, or -1. */
int holder_of(const struct read_opts *o, const struct row *row);

/* out.c: --json and the table, shared bits */
json_t *json_round(double value, int decimals);
json_t *json_str_or_null(const char *s);
/* "<a>_ms", "<b>_ms" (unix ms), then "<a>", "<b>" (format_time) */
void json_set_instants(json_t *o, const char *a, int64_t a_ms, const char *b, int64_t b_ms);
/* The rows' time_span: their first and last instants and its length
 * (length_key: length, rounded to decimals); null without rows. */
json_t *json_time_span(uint64_t rows, int64_t first_ms, int64_t last_ms, const char *length_key,
	double length, int decimals);
json_t *report_json(const struct ds_files *files, const struct ds_report *rep);
void report_table(FILE *out, const struct ds_files *files, const struct ds_report *rep);
int json_print(json_t *root);
/* A syscall's calls as the join sums them: rate x 1e4 x ms, so calls x 1e7. */
struct syscall_calls {
	const char *name;
	u128 calls_x1e7;
};
/* The join's syscalls, the most calls first, ties by name: count + 1
 * entries (calloc'd), NULL when out of memory. */
struct syscall_calls *syscalls_ranked(const struct track_join *j);
uint64_t calls_rounded(u128 calls_x1e7);
/* --json's "syscalls": v's n as {name, calls}, with each one's share of
 * total_x1e7 where that is not 0. */
json_t *json_syscalls(const struct syscall_calls *v, size_t n, u128 total_x1e7);
void format_bytes(double bytes, char *buf, size_t size);
int exit_status(const struct ds_report *rep);

#endif
