/*
 * files.h: finding and reading croft-dataset files (.jsonl, .jsonl.zst and
 * directories of them) in bounded memory, one worker thread per file up to a
 * limit (files.c), each file read line by line into rows (readfile.c), every
 * skipped line, frame or file counted and reported (skips.c).  croft
 * stats/profile, invoking user, no privilege.
 */
#ifndef CROFT_READERS_FILES_H
#define CROFT_READERS_FILES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rowscan.h"

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
	uint64_t files_read, bytes_read, text_bytes, rows, rows_jansson;
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

#endif
