/*
 * output.h: what a poll makes: finished rows (row.c), the spool of batches
 * kept until croft-writer acks them (spool.c) and croft.prom, the live
 * figures for node_exporter (textfile*.c).  Library of croft-sampler
 * (sampler/core/), croft user.
 */
#ifndef CROFT_SAMPLER_OUTPUT_H
#define CROFT_SAMPLER_OUTPUT_H

#include <stdio.h>

#include "host.h"

struct nvml_result;

/* ---- row.c: finished rows ---- */
struct jbuf {
	char *data;
	size_t len, cap;
	bool failed; /* out of memory: the row is dropped and counted */
};
void jbuf_reset(struct jbuf *b);
void jbuf_free(struct jbuf *b);
void jbuf_put(struct jbuf *b, const char *s, size_t n);
struct row_context {
	uint64_t unix_ms;
	const char *host;      /* croft.conf host, else the node name */
	uint64_t boot_unix_ms; /* process.start_ms = this + the start's boot-clock ms */
	uint64_t now_boot_ns;
	const struct catalog *catalog;
	const char *label; /* container label from sampler.ctl, or NULL */
	size_t label_len;
	const struct gpu_index *gpu_index; /* the NVIDIA capability files: mig */
	const struct kubelet *kubelet;     /* gpus_allocated */
};
void row_format(struct jbuf *b, const struct proc *p, const struct row_context *ctx);
/* What p's row of this poll says (written: whether the poll writes it),
 * added to croft.prom's sums. */
struct textfile;
void row_textfile(
	struct textfile *tf, const struct proc *p, const struct row_context *ctx, bool written);

/* ---- spool.c: batches kept until acked ---- */
struct spool_batch {
	struct spool_batch *next;
	uint64_t seq, unix_ms;
	uint32_t rows;
	size_t len;
	char data[];
};
struct spool;
int spool_open(const char *dir, uint64_t max_bytes, struct spool **ret_spool);
void spool_free(struct spool *spool);
int spool_chown(const struct spool *spool, uid_t uid, gid_t gid);
void spool_set_max(struct spool *spool, uint64_t max_bytes);
uint64_t spool_epoch(const struct spool *spool);
int spool_add(struct spool *spool, uint64_t unix_ms, uint32_t rows, const char *data, size_t len);
/* Drops batches of our epoch with seq <= seq (acked or committed). */
void spool_ack(struct spool *spool, uint64_t epoch, uint64_t seq);
struct spool_batch *spool_first(struct spool *spool);
struct spool_stats {
	uint64_t bytes, batches, dropped_batches, dropped_rows, next_seq;
	uint64_t acked_batches, acked_rows; /* since start */
	bool dropping;
	bool persistent;
};
void spool_stats(const struct spool *spool, struct spool_stats *ret_stats);

/* ---- textfile.c, textfile_write.c: croft.prom, the live figures for node_exporter ---- */
#define TEXTFILE_NAME         "croft.prom"
#define TEXTFILE_TMP_NAME     ".croft.prom.tmp" /* not *.prom: node_exporter skips it */
#define TEXTFILE_GROUPS_MAX   16384 /* groups of a kind followed (containers...); more: "other" */
#define TEXTFILE_EXPIRE_POLLS 150   /* a group without a process this many polls is forgotten */
#define TEXTFILE_LABEL_MAX    128   /* bytes of a label or pod uid kept */
#define TEXTFILE_ID_CHARS     12    /* characters of a container id in its series */

/* One process at this poll, in its row's terms (row_get), or as the row
 * would say it where the poll writes none. */
struct textfile_row {
	bool row;         /* the poll wrote its row: the counters add span_ms */
	uint64_t span_ms; /* what the row stands for */
	enum workload_state state;
	const uint64_t *gpus;    /* "gpus" as a bitset of GPU_INDEX_MAX bits; NULL: none */
	const char *const *migs; /* "mig": "<gpu>/<gi>/<ci>" */
	size_t migs_count;
	enum gpu_activity activity; /* "gpu_activity"; unknown where the row has none */
	bool exited;    /* a last row ("exited"): it counts its span, not in the poll's gauges */
	bool uid_known; /* "process.uid" is in the row */
	uint32_t uid;
	bool since_known; /* "since_last_gpu_ioctl_ms" is in the row */
	uint64_t since_last_gpu_ioctl_ms;
	double cpu_cores;
	uint64_t rss_bytes;
	const char *container_id, *pod_uid, *framework; /* NUL-terminated; NULL: none */
	const char *label;                              /* raw bytes; NULL: none */
	size_t label_len;
};

/* croft's own state at the end of the poll. */
struct textfile_health {
	uint64_t unix_ms, duration_us, polls;
	uint64_t processes, untracked;
	uint64_t rows_written, batches_written; /* acked by the writer */
	uint64_t spool_bytes, spool_batches;
	uint64_t dropped_rows_spool_full, dropped_batches_spool_full, dropped_rows_out_of_memory;
	bool probe_attached, writer_connected;
	const char *probe_state;
	const struct nvml_result *nvml; /* NVML's fresh round; NULL: none */
};

struct textfile;
int textfile_new(struct textfile **ret_tf);
void textfile_free(struct textfile *tf);
/* A poll begins: its gauges start from zero. */
void textfile_begin(struct textfile *tf, uint64_t gen);
void textfile_add(struct textfile *tf, const struct textfile_row *r);
/* The poll's increments land in the series of the top groups or in "other". */
void textfile_settle(struct textfile *tf, uint32_t top);
/* The exposition (text format 0.0.4); -errno when f fails. */
int textfile_print(const struct textfile *tf, const struct textfile_health *h, FILE *f);
/* textfile_nvml.c: the per-GPU NVML series (none without a round). */
void textfile_print_nvml(const struct nvml_result *r, FILE *f);
/* Label value bytes as the format wants them: \\, \", \n escaped, invalid
 * UTF-8 and other control bytes as U+FFFD. */
void textfile_put_value(FILE *f, const char *s, size_t len);
/* Where croft.prom goes: the directory, opened when first written to. */
struct textfile_dir {
	char path[PATH_MAX];        /* the one fd is open on */
	int fd;                     /* -1: not open */
	int last_err;               /* the failure logged last; 0 after a success */
	char state[PATH_MAX + 128]; /* for status: what was written last, or why not */
};
/*
 * The directory of path, open for this poll's file: 0, or -errno where it
 * cannot be opened (logged once per reason; tried again at each poll,
 * never fatal).  Another path closes the one open; path "": none, -ENOENT
 * unlogged.
 */
int textfile_dir_open(struct textfile_dir *dir, const char *path);
/* croft.prom replaced atomically in the open directory (a temporary file
 * in it, renamed) by what textfile_print says; failures logged once. */
void textfile_write(
	struct textfile_dir *dir, const struct textfile *tf, const struct textfile_health *h);
void textfile_dir_close(struct textfile_dir *dir);

#endif
