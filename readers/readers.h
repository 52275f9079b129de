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

/*
 * columns.c: a listing, printed as a table (listing_table) or as --json's
 * array of objects (listing_json) from one list of columns, written with
 * designated initialisers.  A column without a title is --json's only, one
 * without a key the table's only.
 */
enum col_kind {
	COL_TEXT,    /* left-aligned, escaped (put_text); a string or null */
	COL_COUNT,   /* uint64_t */
	COL_INT,     /* int64_t */
	COL_HOURS,   /* double: "%.3f" on the table, rounded to 6 decimals in --json */
	COL_REAL,    /* decimals on the table, rounded to json_decimals in --json */
	COL_PERCENT, /* the table's "12.5%" (width counts the '%') */
	COL_JSON,    /* --json only: a value the cell built */
};
struct col {
	const char *title; /* the table's heading; NULL: --json only */
	const char *key;   /* --json's key; NULL: the table only */
	enum col_kind kind;
	int width, cut;              /* table columns; COL_TEXT: put_text's cut (0: none) */
	int decimals, json_decimals; /* COL_REAL */
	int gap;                     /* spaces before it on the table (0: one) */
	const char *none;            /* COL_TEXT: the table's text for a NULL one */
};
#define LISTING_COLS_MAX 10
#define CELL_TEXT_MAX    400 /* bytes of a text a cell writes (a longer one is cut) */
struct cell {
	const char *text;        /* COL_TEXT; NULL: the column's none, or null */
	const char *prefix;      /* COL_TEXT, the table only: written as it is, within the width */
	uint64_t count;          /* COL_COUNT */
	int64_t value;           /* COL_INT */
	double real;             /* COL_HOURS, COL_REAL, COL_PERCENT */
	json_t *json;            /* COL_JSON: the listing takes it */
	bool null, omit;         /* --json: null; its key left out */
	char buf[CELL_TEXT_MAX]; /* where the cell may write its text or prefix */
};
struct listing {
	const struct col *cols;
	size_t cols_count;
	size_t count;               /* entries */
	size_t table_max, json_max; /* entries shown (SIZE_MAX: all) */
	const char *empty;          /* the table's line when there are none; NULL: none */
	bool more;                  /* the table says how many it left out */
	/* Entry i's cells (zeroed; json: for --json, else the table). */
	void (*cells)(const void *ctx, size_t i, bool json, struct cell *ret);
	const void *ctx;
};
/* The heading, a line per entry (after a line of its own: the caller's). */
void listing_table(const struct listing *l);
json_t *listing_json(const struct listing *l);

/* holders.c: gpu_system_holders */
void holders_parse(struct read_opts *o, const char *names);
/* The index of the name a row's exe basename or comm is, or -1. */
int holder_of(const struct read_opts *o, const struct row *row);

/* out.c: --json and the table, shared bits */
json_t *json_round(double value, int decimals);
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
void format_bytes(double bytes, char *buf, size_t size);
int exit_status(const struct ds_report *rep);

#endif
