/*
 * engine.h: the map of the readers' engine, what croft stats and croft
 * profile read the dataset with: the options that steer a read and the row
 * filter (dataset.c), finding files and reading them in bounded memory on
 * worker threads (files.c, readfile.c, skips.c), one row from a line
 * (rowscan.c, rowscan_json.c), interned strings and maps (strtab.c), the
 * tracks a report sums (tracks.c), the --framework pass (final_fw.c).  It
 * calls no report.  Runs as the invoking user, no privilege.
 */
#ifndef CROFT_READERS_ENGINE_H
#define CROFT_READERS_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "rowdef.h"

/* rowscan.c, rowscan_json.c: one croft-dataset row as the readers see it, and
 * the two ways to get it from a line: a schema-aware scanner (fast path) and
 * jansson (the reference, used for every line the scanner declines). */

#define ROW_SYSCALLS_MAX 512               /* syscalls kept per row; later ones ignored */
#define ROWSCAN_PAD      64                /* readable bytes the scanner needs past a line */
#define FIXED_SCALE      10000             /* fixed point: figures are kept in 1e-4 units */
#define FIXED_ABS_MAX    900000000000000LL /* |value| kept in 1e-4 units: 9e14 */

/* A string in the line (scanner) or in the jansson tree; ptr NULL = absent. */
struct strv {
	const char *ptr;
	uint32_t len;
};

struct row_syscall {
	struct strv name;
	int64_t rate_x1e4; /* calls per second x 1e4 */
};

enum row_has {
	HAS_IOCTL = 1u << 0,
	HAS_CPU = 1u << 1,
	HAS_RSS = 1u << 2,
	HAS_THREADS = 1u << 3,
	HAS_READ = 1u << 4,
	HAS_WRITE = 1u << 5,
	HAS_RX = 1u << 6,
	HAS_TX = 1u << 7,
	HAS_GPUS = 1u << 8,
	HAS_SPAN = 1u << 9,       /* span_ms: rows of older datasets lack it */
	HAS_START = 1u << 10,     /* process.start_ms: likewise */
	HAS_ALLOCATED = 1u << 11, /* gpus_allocated */
	HAS_UID = 1u << 12,       /* process.uid */
	HAS_SM = 1u << 13,        /* gpu_sm_percent: NVML read it */
};

#define ROW_GPUS_MAX  256 /* GPU indices kept, 0..255; others are not counted */
#define ROW_GPU_WORDS (ROW_GPUS_MAX / 64)

struct row {
	int64_t unix_ms, tgid;
	int64_t span_ms, start_ms; /* HAS_SPAN, HAS_START */
	struct strv host, comm, exe, container_id, pod_uid, pod_qos, cwd, framework, label;
	struct strv gpu_activity, exited, label_source; /* as written: row_activity() reads one */
	enum workload_state workload;
	uint32_t has; /* enum row_has */
	int64_t ioctl_count;
	int64_t uid, sm_x1e4; /* HAS_UID; HAS_SM: percent x 1e4 */
	int64_t cpu_x1e4, rss_bytes, threads;
	int64_t read_x1e4, write_x1e4, rx_x1e4, tx_x1e4; /* bytes per second x 1e4 */
	uint64_t gpus[ROW_GPU_WORDS];                    /* bit i: GPU i held (HAS_GPUS) */
	uint64_t gpus_allocated[ROW_GPU_WORDS]; /* bit i: GPU i allocated (HAS_ALLOCATED) */
	bool padded; /* rowscan_fast's: its strings lie in the read buffer, 16 bytes readable */
	uint32_t syscalls_count;
	struct row_syscall syscalls[ROW_SYSCALLS_MAX];
};

/*
 * Scans the row at line, up to its '\n' (which must come before end; the
 * scanner finds it: *ret_newline); needs ROWSCAN_PAD readable bytes past end.
 * Handles exactly the rows whose meaning is plain: strict JSON, ASCII
 * strings without escapes, no duplicate known keys, numbers without
 * exponent.  Anything else returns false and leaves the verdict to
 * rowscan_jansson(), which gives the same row for every line both accept.
 */
bool rowscan_fast(const char *line, const char *end, struct row *ret_row, const char **ret_newline);

/*
 * The reference: json_loadb + row_from_json.  Returns 0, or -EINVAL with a
 * reason in err (not JSON, or JSON that is not a croft row).  *ret_tree must
 * be json_decref()'d by the caller after using the row (its strings point
 * into it); it is NULL on error.
 */
struct json_t;
int rowscan_jansson(const char *line, size_t len, struct row *ret_row, struct json_t **ret_tree,
	char *err, size_t err_size);

/* The two paths' shared parts: an empty row, where a field is kept (NULL:
 * the readers skip it; *ret_has_bit: its HAS_ bit, 0 for one always
 * there), a GPU index into gpus or gpus_allocated (one outside
 * 0..ROW_GPUS_MAX-1 is left out). */
void row_clear(struct row *row);
struct strv *row_str_slot(struct row *row, enum row_field f);
int64_t *row_num_slot(struct row *row, enum row_field f, uint32_t *ret_has_bit);
void row_gpu_add(uint64_t bits[ROW_GPU_WORDS], int64_t index);
/* The row's verdict; rows without one (older datasets, no-gpu rows) are unknown. */
static inline enum gpu_activity row_activity(const struct row *row)
{
	int a = row->gpu_activity.ptr
			? gpu_activity_parse(row->gpu_activity.ptr, row->gpu_activity.len)
			: -1;

	return a < 0 ? GA_UNKNOWN : (enum gpu_activity)a;
}
/* Bit i of a set of GPUs (a row's gpus or gpus_allocated, a phase's). */
static inline bool gpu_bit(const uint64_t bits[ROW_GPU_WORDS], unsigned i)
{
	return (bits[i / 64] >> (i % 64)) & 1;
}
static inline bool row_has_gpu(const struct row *row, unsigned index)
{
	return index < ROW_GPUS_MAX && gpu_bit(row->gpus, index);
}

/* vec.c: growing arrays.  *v holds *cap elements of elem bytes; vec_room
 * makes it hold index i, doubling from VEC_FIRST_BYTES; with zero, the new
 * part zeroed (an array per id).  False when out of memory. */
#define VEC_FIRST_BYTES 4096

bool vec_grow(void **v, size_t *cap, size_t elem, size_t i, bool zero);

/* Per row: the array nearly always holds i already. */
static inline bool vec_room(void **v, size_t *cap, size_t elem, size_t i, bool zero)
{
	return i < *cap || vec_grow(v, cap, elem, i, zero);
}

/* Room for the element at i of an array filled in order; of one per id, zeroed. */
#define VEC_ROOM(v, cap, i)    vec_room((void **)&(v), &(cap), sizeof(*(v)), (i), false)
#define VEC_ID_ROOM(v, cap, i) vec_room((void **)&(v), &(cap), sizeof(*(v)), (i), true)

/* files.c, readfile.c, skips.c: finding and reading croft-dataset files
 * (.jsonl, .jsonl.zst and directories of them) in bounded memory, one worker
 * thread per file up to a limit, each file read line by line into rows,
 * every skipped line, frame or file counted and reported. */

#define DS_FILES_MAX      1000000 /* files one command reads */
#define DS_SKIPS_PER_FILE 100     /* skip messages kept per file */
#define DS_THREADS_MAX    256
#define READ_IN_BYTES     (256u << 10)          /* compressed bytes per read() */
#define READ_OUT_BYTES    (2u << 20)            /* text held while its frame is checked */
#define READ_LIVE_NAME    "croft-dataset.jsonl" /* the writer's live file (writer.h LIVE_NAME) */

struct ds_file {
	char *path;
	uint64_t size_bytes;
	bool zst;
	bool named; /* given as a path (followed if a link), not found in a walk */
	dev_t dev;  /* what was listed: the file read must be it */
	ino_t ino;
};

struct ds_files {
	struct ds_file *v;
	size_t n;
};

enum ds_skip_kind {
	SKIP_BAD_LINE,      /* not JSON, or JSON that is not a row */
	SKIP_LONG_LINE,     /* over READ_OUT_BYTES, 2 MiB */
	SKIP_CORRUPT_FRAME, /* zstd error: the frame's rows are dropped */
	SKIP_TRUNCATED,     /* file ends inside a frame or a line */
	SKIP_EMPTY_FILE,    /* a plain file: nothing lost, so no damage (a .zst holds a frame) */
	SKIP_UNREADABLE,    /* open/read failed */
	SKIP_KINDS,
};

struct ds_skip {
	uint32_t file;
	enum ds_skip_kind kind;
	uint64_t line;   /* 1-based line of the decompressed text; 0 = none */
	uint64_t offset; /* byte offset in the file as stored, for frames */
	char *reason;
};

/* Shared by the workers: counts and the skip messages (under lock). */
struct ds_report {
	pthread_mutex_t lock;
	uint64_t bytes_read, text_bytes, rows, rows_jansson;
	uint64_t skipped[SKIP_KINDS];
	/* the live file's unterminated last line: a row being appended, not damage */
	uint64_t live_tail_bytes;
	struct ds_skip *skips;
	size_t skips_count, skips_cap;
};

/* What a worker does with what it reads; ctx is that worker's own. */
struct ds_sink {
	void (*file_begin)(void *ctx, uint32_t file);
	void (*row)(void *ctx, const struct row *row);
	void (*file_end)(void *ctx, uint32_t file);
};

/*
 * Walks paths (files are taken whatever their name; directories are walked
 * for *.jsonl and *.jsonl.zst, dot files left out, symbolic links below
 * them not followed, WALK_DEPTH_MAX deep); sorted by path, each file once.  A path that does not
 * exist is an error: -errno and a message in err.
 */
int ds_collect(
	char *const *paths, int count, struct ds_files *ret_files, char *err, size_t err_size);
void ds_files_free(struct ds_files *files);

/* skips.c */
void ds_report_init(struct ds_report *rep);
void ds_report_free(struct ds_report *rep);
uint64_t ds_report_skipped(const struct ds_report *rep);
/* Sorts the kept skip messages by file, line and offset. */
void ds_report_sort(struct ds_report *rep);
const char *ds_skip_kind_name(enum ds_skip_kind kind);
/* A file reader's skip; *kept_in_file counts the messages kept for this file. */
void ds_report_skip(struct ds_report *rep, uint32_t file, uint64_t *kept_in_file,
	enum ds_skip_kind kind, uint64_t line, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* files.c */

/*
 * Reads every file with up to `threads` workers (ctxs[i] is worker i's),
 * jansson_only: the reference path for every line (tests compare).
 * Returns 0 or -errno on a failure to start (memory, threads).
 */
int ds_read(const struct ds_files *files, int threads, bool jansson_only,
	const struct ds_sink *sink, void *const *ctxs, struct ds_report *rep);

/* Worker threads to use: the CPUs this process may run on. */
int ds_default_threads(void);

/*
 * termtext.c: s as the tables and messages show it on a terminal: bytes
 * below 0x20, 0x7f, C1 controls and invalid UTF-8 as \xNN, at most
 * max_cols characters (0: all), left-aligned in width columns.
 */
void put_text(FILE *f, const char *s, int width, int max_cols);

/* readfile.c: one worker's reader of one file at a time (plain or zstd). */
struct file_reader;
int file_reader_new(const struct ds_sink *sink, void *ctx, struct ds_report *rep, bool jansson_only,
	struct file_reader **ret_fr);
void file_reader_free(struct file_reader *fr);
/* Reads one file to its end; what it cannot read is reported, not returned. */
void file_reader_read(struct file_reader *fr, const struct ds_file *f, uint32_t file_index);

/* zstream.c: zstd frames decoded into a window the text is read from in
 * place: ZSTD_decompressStream's calls, without its copy out. */
struct zstream;
int zstream_new(size_t text_cap, struct zstream **ret_zs);
void zstream_free(struct zstream *zs);
/* The next byte given starts a frame (as ZSTD_DCtx_reset, session only). */
void zstream_reset(struct zstream *zs);
/*
 * ZSTD_decompressStream into an output of text_cap bytes holding *fill:
 * decodes src[*pos..size) (moving *pos on) and adds its text to *fill.  The
 * text is at *text, which this moves when its window starts over; the
 * caller may move *text on, lowering *fill, as it reads.  Returns 0 at a
 * frame's end, a zstd error code (nothing of this call added), or more.
 */
size_t zstream_decompress(
	struct zstream *zs, char **text, size_t *fill, const void *src, size_t size, size_t *pos);

#define NONE_ID     UINT32_MAX
#define GAP_POLLS   2                      /* x idle_every polls: a longer gap is a new process */
#define HOLDERS_MAX (CONFIG_NAMES_MAX / 2) /* names in gpu_system_holders */

/* dataset.c: the options both commands share (options.c parses them), the
 * row filter and the read itself */
struct fw_select;
struct filter {
	bool has_since, has_until, has_tgid;
	int64_t since_ms, until_ms, tgid;
	struct strv container, pod, label, framework; /* ptr NULL = any */
	struct strv host;                             /* ptr NULL = any; rows without one: none */
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

bool filter_match(const struct filter *f, const struct row *row);
/* --since and --until alone */
bool filter_in_span(const struct filter *f, int64_t ms);
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
	struct st_id {
		uint32_t off, len; /* in arena */
	} * ids;
	size_t ids_cap;
	char *arena;
	size_t arena_len, arena_cap;
};
uint64_t str_hash(const char *s, size_t len);
/* Returns the id, or NONE_ID when out of memory. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t len);
/* The same for a string of row (of the scanner's rows, read without a copy). */
uint32_t strtab_intern_row(struct strtab *t, const struct row *row, const struct strv *sv);
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

#endif
