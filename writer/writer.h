/*
 * writer.h: the map of croft-writer.  It receives numbered batches of JSON
 * lines from the sampler, appends them durably to the live file, rotates,
 * compresses segments on one extra thread and applies retention.  Runs as
 * the croft user with no capabilities; every file is reached through the
 * data directory's fd, opened before the privilege drop.
 */
#ifndef CROFT_WRITER_H
#define CROFT_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "config.h"

#define LIVE_NAME         "croft-dataset.jsonl"
#define COMMIT_NAME       "croft-dataset.commit"
#define SEG_PREFIX        "croft-dataset-"
#define SEG_NAME_MAX      64          /* bytes of a segment name with NUL */
#define COMMIT_SLOT_BYTES 64          /* one commit slot on disk; the file holds two */
#define GROUP_BATCHES_MAX 64          /* batches appended under one fdatasync */
#define GROUP_BYTES_MAX   (16u << 20) /* bytes appended under one fdatasync */
#define PEERS_MAX         8           /* sampler connections at once */
#define PEER_READ_STEP    (1u << 20)  /* bytes read from a peer per loop turn */
#define PEER_HELLO_S      5           /* seconds a new peer has to complete its HELLO */
#define PEER_UNREAD_MAX   (32u << 10) /* bytes of acks a peer may leave unread (~768 an ack) */
#define COMPRESS_CHUNK    (1u << 20)  /* bytes read per compression step */
#define SEGMENTS_MAX      100000      /* segments considered by retention */
#define TICK_MAX_MS       10000       /* ms between clock checks and compression retries */

/* commit.c: the commit record, two checksummed slots written alternately. */
struct commit_rec {
	uint64_t generation;    /* grows by one per store; the highest valid slot wins */
	uint64_t epoch, seq;    /* the last committed batch */
	uint64_t live_inode;    /* the live file the offset belongs to */
	uint64_t live_offset;   /* bytes of whole committed lines in it */
	uint64_t live_start_ms; /* when the live file began (names its segment) */
};
struct commit_file;
/* ret_found: false when no valid slot exists (a fresh or foreign data dir). */
int commit_open(
	int dirfd, struct commit_file **ret_cf, struct commit_rec *ret_rec, bool *ret_found);
void commit_close(struct commit_file *cf);
int commit_store(struct commit_file *cf, struct commit_rec *rec);
void commit_encode(const struct commit_rec *rec, uint8_t slot[COMMIT_SLOT_BYTES]);
int commit_decode(const uint8_t slot[COMMIT_SLOT_BYTES], struct commit_rec *ret_rec);
uint32_t crc32_ieee(const void *data, size_t len);

/* naming.c: segment names and the UTC boundaries they come from. */
enum seg_kind { SEG_JSONL, SEG_ZST, SEG_ZST_TMP };
uint64_t seg_boundary_floor_ms(uint64_t unix_ms, uint64_t interval_ms);
uint64_t seg_next_boundary_ms(uint64_t unix_ms, uint64_t interval_ms);
/* A file begun at unix_ms: its boundary when on one (to the second), else the second. */
uint64_t seg_start_s(uint64_t unix_ms, uint64_t interval_ms);
int seg_format(char *buf, size_t len, uint64_t start_s, enum seg_kind kind);
int seg_parse(const char *name, uint64_t *ret_start_s, enum seg_kind *ret_kind);

/* lines.c: what a batch payload must be. */
/* 0 when data is exactly rows whole lines ('\n'-terminated, no NUL), -EBADMSG otherwise. */
int lines_check(const uint8_t *data, size_t len, uint32_t rows);

/* compress.c: the compression thread, its queue and its results.  The main
 * loop queues segment names; finished jobs come back through an eventfd. */
struct event_base;
struct compressor;
struct compress_figures {
	uint64_t queued; /* queued for or in compression */
	uint64_t done, failed;
	double last_ratio, last_mb_s;
};
/* A finished job, after compress.c counted and logged it: err 0 or -errno. */
typedef void (*compress_done_fn)(void *ctx, const char *name, int err);
/* Starts the thread on dirfd's segments and watches its results in base. */
int compress_start(struct event_base *base, int dirfd, int level, compress_done_fn done_cb,
	void *done_ctx, struct compressor **ret_c);
void compress_stop(struct compressor *c); /* the thread stops at the next chunk */
void compress_set_level(struct compressor *c, int level);
/* Queues a closed .jsonl segment once; a failure to queue is retried. */
void compress_queue(struct compressor *c, const char *name);
/* Queues again what failed (at each tick, and when the disk takes writes again). */
void compress_retry(struct compressor *c);
/* Queued or in compression, or the .zst such a segment is about to replace. */
bool compress_busy(const struct compressor *c, const char *name);
void compress_get_figures(const struct compressor *c, struct compress_figures *ret);
/* Compresses dirfd/name to name.zst in the calling thread (bench, tests). */
int compress_file(int dirfd, const char *name, int level, const volatile bool *stop,
	uint64_t *ret_in, uint64_t *ret_out);

/* retention.c: which closed segments go, and deleting them. */
struct seg_info {
	char name[SEG_NAME_MAX];
	uint64_t start_s, bytes;
	bool busy;   /* queued or in compression: never deleted */
	bool doomed; /* chosen for deletion */
};
/* Marks what goes: older than age_ms, then the oldest while the total of
 * those not busy exceeds size_bytes.  Busy ones stay.  segs must be sorted
 * by start.  Returns how many are doomed. */
size_t retention_select(
	struct seg_info *segs, size_t n, uint64_t now_ms, uint64_t age_ms, uint64_t size_bytes);
/* Lists the segments of dirfd sorted by start (malloc'd *ret_segs). */
int segments_list(int dirfd, struct seg_info **ret_segs, size_t *ret_n);
/* Deletes (and logs) what retention_select dooms; returns how many went. */
size_t retention_delete(int dirfd, struct seg_info *segs, size_t n, uint64_t now_ms,
	uint64_t age_ms, uint64_t size_bytes);

/* adopt.c: a live file without a commit record made compact JSON lines. */
#define ADOPT_TMP_NAME      "croft-dataset.adopt.tmp"
#define ADOPT_FIRST_ROW_MAX 4096 /* bytes of the first row looked at for its unix_ms */
struct adopt_result {
	uint64_t rows;          /* lines now in the live file */
	uint64_t first_ms;      /* the first row's unix_ms; 0 when it has none */
	uint64_t dropped_bytes; /* of a value the file ended inside */
};
/* Rewrites LIVE_NAME (open as live_fd) in dirfd: one compact line per value. */
int adopt_live(int dirfd, int live_fd, struct adopt_result *ret);
/* A compact row's top-level unix_ms, 0 when it has none. */
uint64_t adopt_row_unix_ms(const char *row, size_t len);

/* dataset.c: the live file, its commits, rotation, start-up recovery and
 * the leftovers it finds. */
enum disk_state { DISK_OK, DISK_FULL, DISK_READ_ONLY, DISK_ERROR };
struct dataset_stats {
	uint64_t batches_written, rows_written, bytes_written;
	uint64_t batches_duplicate;
};
struct event;
struct dataset {
	int dirfd;
	int live_fd;
	struct commit_file *commit;
	struct commit_rec rec;   /* what is on disk */
	uint64_t live_bytes;     /* == rec.live_offset once committed */
	uint64_t newest_start_s; /* newest segment name's start, for ordering */
	uint64_t boundary_ms;    /* the wall-clock boundary the live file rotates at */
	struct event *tick_ev;   /* armed for the next boundary */
	enum disk_state disk;    /* what the last append met */
	struct dataset_stats stats;
};
/* Recovery: cuts the live file back to its commit, makes what it holds a
 * segment, removes stray .zst.tmp; *ret_leftovers gets the .jsonl segments to
 * compress (malloc'd, sorted). */
int dataset_open(int dirfd, uint64_t interval_ms, struct dataset **ret_ds,
	char (**ret_leftovers)[SEG_NAME_MAX], size_t *ret_nleftovers);
void dataset_close(struct dataset *ds);
/* Appends iov (whole batches) and commits (epoch, seq) as the last one.
 * On failure the live file is cut back to the previous commit. */
int dataset_append(
	struct dataset *ds, const struct iovec *iov, size_t iovcnt, uint64_t epoch, uint64_t seq);
/* Closes the live file as a segment; ret_name "" when it was empty.
 * at_boundary_ms: the interval boundary that caused it, 0 for a size rotation. */
int dataset_rotate(struct dataset *ds, uint64_t now_ms, uint64_t at_boundary_ms,
	uint64_t interval_ms, char ret_name[SEG_NAME_MAX]);
/* A peer's group of batches, appended under one commit. */
struct dataset_group {
	struct iovec iov[GROUP_BATCHES_MAX];
	size_t iovcnt;
	uint64_t epoch, seq; /* the last batch that is no duplicate */
	uint64_t batches, rows;
	uint64_t duplicates; /* already committed: acked, not written */
};

/* The daemon: one libevent loop, its peers and the compression thread. */
struct conn_server;
struct ctl_server;
struct evbuffer;
struct msg_cursor;

struct writer {
	struct event_base *base;
	struct croft_config cfg;
	const char *config_path;
	uid_t peer_uid; /* the drop user: may send batches, as may root */
	struct dataset *ds;
	struct compressor *comp;
	struct ctl_server *ctl;
	struct conn_server *peers; /* writer.sock */
	char last_error[256];      /* set by writer_error() */
	uint64_t segments_deleted; /* by retention */
};

/* sequence.c: the writer's sequence above the mechanics: append, rotate,
 * compress, expire. */
/* Appends a group: rotates at the boundary, appends, counts, rotates at
 * rotate_size.  0 when the group may be acked; -errno: nothing of it counts. */
int writer_write(struct writer *w, const struct dataset_group *g);
/* The compression thread, the tick, retention and the leftovers queued. */
int writer_start(struct writer *w, char (*leftovers)[SEG_NAME_MAX], size_t nleftovers);
/* After a reload: rotate_interval and the retention limits may have changed. */
void writer_reloaded(struct writer *w);

/* peer.c: sampler connections on writer.sock. */
/* Listens at path (mode 0660, group gid); returns 0 or -errno. */
int peers_listen(struct writer *w, const char *path, gid_t gid);
void peers_free(struct writer *w);

/* control.c: writer.ctl status and reload, SIGHUP. */
int writer_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply);
/* ctx is the struct writer; a daemon_reload_fn. */
int writer_reload(void *ctx, char **ret_errors);

#endif
