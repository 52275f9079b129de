/*
 * readfile.h: one worker's reader of one file at a time (plain or zstd),
 * line by line into rows, with every skip reported.  Internal to the
 * dataset module; croft stats/profile worker threads, no privilege.
 */
#ifndef CROFT_READFILE_H
#define CROFT_READFILE_H

#include "dataset.h"

#define READ_IN_BYTES  (256u << 10)          /* compressed bytes per read() */
#define READ_OUT_BYTES (2u << 20)            /* text held while its frame is checked */
#define READ_LIVE_NAME "croft-dataset.jsonl" /* the writer's live file (writer.h LIVE_NAME) */

struct file_reader;

int file_reader_new(const struct ds_sink *sink, void *ctx, struct ds_report *rep, bool jansson_only,
	struct file_reader **ret_fr);
void file_reader_free(struct file_reader *fr);
/* Reads one file to its end; what it cannot read is reported, not returned. */
void file_reader_read(struct file_reader *fr, const struct ds_file *f, uint32_t file_index);

/* dataset.c: *kept_in_file counts the messages kept for this file. */
void ds_report_skip(struct ds_report *rep, uint32_t file, uint64_t *kept_in_file,
	enum ds_skip_kind kind, uint64_t line, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

#endif
