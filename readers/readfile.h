/*
 * readfile.h: one worker's reader of one file at a time (plain or zstd),
 * line by line into rows, with every skip reported.  Internal to the
 * readers' files.c; croft stats/profile worker threads, no privilege.
 */
#ifndef CROFT_READFILE_H
#define CROFT_READFILE_H

#include "files.h"

#define READ_IN_BYTES  (256u << 10)          /* compressed bytes per read() */
#define READ_OUT_BYTES (2u << 20)            /* text held while its frame is checked */
#define READ_LIVE_NAME "croft-dataset.jsonl" /* the writer's live file (writer.h LIVE_NAME) */

struct file_reader;

int file_reader_new(const struct ds_sink *sink, void *ctx, struct ds_report *rep, bool jansson_only,
	struct file_reader **ret_fr);
void file_reader_free(struct file_reader *fr);
/* Reads one file to its end; what it cannot read is reported, not returned. */
void file_reader_read(struct file_reader *fr, const struct ds_file *f, uint32_t file_index);

#endif
