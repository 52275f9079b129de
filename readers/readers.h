/*
 * readers.h: the map of croft stats and croft profile: options and filters
 * (filter.c), string interning (strtab.c), the tracks (tracks.c),
 * output helpers (out.c), the SVG chart (svg.c).  Reading files is
 * files.h, parsing rows rowscan.h.  Runs as the invoking user, no
 * privilege.
 */
#ifndef CROFT_READERS_H
#define CROFT_READERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config.h"
#include "files.h"
#include "rowscan.h"
#include "vec.h"

/* stats.c, profile.c: the croft subcommands (cli/croft.c dispatches) */
int cmd_stats(int argc, char **argv);
int cmd_profile(int argc, char **argv);

#define NONE_ID            UINT32_MAX
#define TOP_TABLE          10  /* entries per ranking in the table */
#define TOP_JSON           100 /* entries per ranking in --json */
#define TOP_SYSCALLS_STATS 20
#define TOP_SYSCALLS_PROF  15
#define GAP_POLLS          2 /* x idle_every polls: a longer gap is a new process */
#define MS_PER_HOUR        3600000.0
#define HOLDERS_MAX        (CONFIG_NAMES_MAX / 2) /* names in gpu_system_holders */

/* filter.c: the options both commands share */
struct fw_select;
struct filter {
	bool has_since, has_until, has_tgid;
	int64_t since_ms, until_ms, tgid;
	const char *container, *pod, *label, *framework; /* NULL = any */
	const char *host;                                /* NULL = any; rows without one: none */
	size_t container_len, pod_len;
	const struct fw_select *fw_select; /* with framework: the processes ending with it */
};

#define READ_LOCAL_DATA_DIR "croft-data" /* read when no PATH is given and no data_dir is set */

struct read_opts {
	const char *cmd;     /* "stats" or "profile" */
	const char *program; /* "croft stats" or "croft profile": what messages name */
	struct filter filter;
	bool json, jansson_only, verbose;
	int threads;
	const char *svg_path; /* profile only */
	char **paths;
	int paths_count;
	char *default_path[1];
	uint64_t poll_ms; /* from the config: what a first row stands for */
	uint64_t gap_ms;  /* rows of a tgid further apart: another process */
	/* gpu_system_holders: names in holders_text */
	char holders_text[CONFIG_NAMES_MAX];
	const char *holders[HOLDERS_MAX];
	uint32_t holders_len[HOLDERS_MAX];
	size_t holders_count;
};

/* Returns 0, 1 after --help (exit 0), or -EINVAL after printing why. */
int read_opts_parse(int argc, char **argv, bool profile, struct read_opts *ret_opts);
bool filter_match(const struct filter *f, const struct row *row);
/* --since and --until alone */
bool filter_in_span(const struct filter *f, int64_t ms);
/* "2026-10-20T14:00:00Z" (".123" before Z when not a whole second) */
void format_time(int64_t ms, char *buf, size_t size);
/* Collects the files and runs the workers (after final_fw.c's pass for
 * --framework); prints skips to stderr. */
int read_dataset(struct read_opts *o, const struct ds_sink *sink, void *const *ctxs, int threads,
	struct ds_files *ret_files, struct ds_report *rep);

/* strtab.c: interned strings, ids dense from 0 */
struct strtab {
	struct st_slot {
		uint64_t hash;
		uint64_t head, tail; /* with len, the whole of a string up to 16 bytes */
		uint32_t id, len;
	} * slots;
	size_t slots_cap, count;
	uint32_t *off, *len; /* per id */
	size_t ids_cap;
	char *arena;
	size_t arena_len, arena_cap;
};
uint64_t str_hash(const char *s, size_t len);
/* Returns the id, or NONE_ID when out of memory. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t len);
const char *strtab_str(const struct strtab *t, uint32_t id, size_t *ret_len);
/* Each of local's ids to global's, interning there: count + 1 entries
 * (calloc'd), or NULL when out of memory. */
uint32_t *strtab_remap(struct strtab *global, const struct strtab *local);
void strtab_free(struct strtab *t);

/* strtab.c: int64 -> uint32 map (tgids, poll times); clear = one increment */
struct i64map {
	struct i64_slot {
		int64_t key;
		uint32_t epoch, value;
	} * slots;
	size_t cap, count;
	uint32_t epoch; /* slots written in another epoch are free */
};
/* The key's slot (slot->epoch == m->epoch: present; else fill it with
 * i64map_set), or NULL when out of memory. */
struct i64_slot *i64map_slot(struct i64map *m, int64_t key);
void i64map_set(struct i64map *m, struct i64_slot *slot, int64_t key, uint32_t value);
/* Whether key is in m; never changes m (worker threads ask at once). */
bool i64map_has(const struct i64map *m, int64_t key);
void i64map_clear(struct i64map *m);
void i64map_free(struct i64map *m);

/* tracks.c: the engine both commands (and final_fw.c's pass) read rows
 * with.  A track is one process's rows in one file; each worker cuts its
 * files' rows into tracks, the join walks each process's tracks in
 * time order.  A track's first row waits for the join: what it stands
 * for depends on the process's previous row, maybe in another file. */
__extension__ typedef unsigned __int128 u128;

/*
 * What every track begins with, so that a pointer to it is one to the
 * track.  A process is (host, tgid, start_ms) where rows carry them; rows
 * of older datasets carry neither: a process is then a tgid's rows with the
 * same exe and comm, no gap longer than gap_ms between them (the gap rule).
 */
#define NO_START_MS (-1) /* start_ms of rows without process.start_ms */
struct track_head {
	int64_t tgid, first_ms, last_ms;
	int64_t start_ms;      /* process.start_ms, or NO_START_MS */
	int64_t first_span_ms; /* its first row's span_ms; -1: none (the gap rule) */
	uint64_t host_hash;    /* str_hash of host; 0: none */
	uint32_t host;         /* the worker's hosts id; after track_sums the join's */
	uint64_t ident;        /* exe and comm: what stays the same for the life of a process */
	uint32_t file;
	uint32_t sys_off, sys_n; /* its first row's syscall rates: the worker's sys[] */
	uint8_t worker;
};

/* A syscall rate of a track's first row, waiting for its weight. */
struct sys_ref {
	uint32_t id; /* the worker's syscall name id */
	int64_t rate_x1e4;
};

/* The first member of each command's worker, so that a ds_sink ctx is one to it. */
struct track_worker {
	const struct read_opts *o;
	uint8_t index;
	bool calls_kept; /* syscall calls summed */
	bool oom;
	uint32_t file;
	char *tracks; /* of track_size bytes each, the first a track_head */
	size_t track_size, tracks_count, tracks_cap;
	size_t file_first;   /* the current file's first track */
	struct i64map tgids; /* the current file's open track per process key */
	struct strtab hosts; /* every row's host */
	uint32_t last_host;  /* the id of the last row's host (most files: one) */
	uint64_t rows;       /* the rows given to track_row, and their span */
	int64_t first_ms, last_ms;
	struct strtab syscalls;
	u128 *calls; /* per syscall id: rate x 1e4 x ms, rows after a track's first */
	size_t calls_cap;
	struct sys_ref *sys;
	size_t sys_count, sys_cap;
};

/* o->threads zeroed workers of worker_size bytes, each beginning with a
 * track_worker (tracks of track_size bytes; calls: syscall calls kept), and
 * ret_ctxs[k] the k-th; NULL when out of memory. */
void *track_workers_new(const struct read_opts *o, size_t worker_size, size_t track_size,
	bool calls, void **ret_ctxs);
void track_worker_free(struct track_worker *w);
/* A ds_sink's file_begin: a new file's rows start their own tracks. */
void track_file_begin(void *ctx, uint32_t file);
/*
 * The track of row r: its tgid's open one in this file when r goes on
 * with that process, *ret_weight_ms then the ms since its last row (what r
 * stands for); else a new one, zero but for its head, with *ret_first
 * set.  NULL (and oom set) when out of memory.
 */
void *track_row(
	struct track_worker *w, const struct row *r, uint64_t *ret_weight_ms, bool *ret_first);
static inline void *track_at(const struct track_worker *w, size_t i)
{
	return w->tracks + i * w->track_size;
}
uint64_t row_ident(const struct row *row);
/* One 64-bit key of (host, tgid, start_ms): a process of a new dataset. */
uint64_t proc_key(uint64_t host_hash, int64_t tgid, int64_t start_ms);
/* A row's process.start_ms, or NO_START_MS; its host's str_hash, 0: none. */
int64_t row_start_ms(const struct row *r);
uint64_t row_host_hash(const struct row *r);

/* The workers' sums and the walk over their tracks. */
struct track_join {
	void *const *workers; /* each begins with its track_worker */
	int count;
	uint64_t rows, processes;
	int64_t first_ms, last_ms;
	struct strtab syscalls;               /* every worker's names */
	u128 *calls;                          /* per id: rate x 1e4 x ms */
	uint32_t *remap[DS_THREADS_MAX];      /* a worker's syscall ids -> syscalls' */
	struct strtab hosts;                  /* every worker's hosts; heads' host ids are these */
	uint32_t *host_remap[DS_THREADS_MAX]; /* a worker's host ids -> hosts' */
};
/* Sums rows, span and syscall calls; -ENOMEM when a worker ran out of memory. */
int track_sums(struct track_join *j, void *const *workers, int count);
/* track: the next of a process's tracks; prev: the one before it, NULL
 * when track begins a process; weight_ms: what track's first row stands for. */
typedef int track_each_fn(void *ctx, const struct track_head *track, const struct track_head *prev,
	uint64_t weight_ms);
/* Each process's tracks in time order, each after its first row's
 * syscall calls are added; stops at the first error each() returns. */
int track_walk(struct track_join *j, track_each_fn *each, void *ctx);
void track_join_free(struct track_join *j);

/* final_fw.c: --framework takes the processes whose last row names it, all their rows */
int fw_select_build(
	const struct read_opts *o, const struct ds_files *files, struct fw_select **ret_sel);
bool fw_select_has(const struct fw_select *sel, const struct row *row);
void fw_select_free(struct fw_select *sel);

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

/* svg.c: CPU, RSS, GPU ioctls and NVML's SM % against time, the GPU
 * phases as a band above them */
struct svg_point {
	int64_t ms;
	double cpu_cores, rss_bytes, gpu_ioctls, sm_percent;
};
struct svg_stretch {
	int64_t start_ms, end_ms;
	const char *kind; /* "onset", "busy", "idle", "unknown" */
};
struct svg_data {
	const struct svg_point *pts;
	size_t count;
	const struct svg_stretch *band;
	size_t band_count;
	bool sm_panel; /* rows carried gpu_sm_percent */
};
int svg_write(const char *path, const char *title, const struct svg_data *d);
/* svg.c: the x axis' ticks: a round step (1 s .. 1 day) giving at most
 * max_ticks ticks over t0..t1, and the first at or after t0 on it. */
int64_t svg_tick_step_ms(int64_t t0, int64_t t1, int max_ticks);

#endif
