/*
 * spool.c: every batch croft-sampler made and croft-writer has not acked
 * yet, bounded by spool_size (oldest dropped first, counted and logged once
 * per change).  Mirrored in <state dir>/sampler.spool.{0,1} (persistent
 * storage: /var/lib/croft-sampler under the unit), replayed at start, so a
 * stopped, SIGKILLed or rebooted sampler resends what it had.
 * croft-sampler (croft user; the files were created before the drop).
 *
 * Appends go to the active file; a batch counts as kept once fdatasync
 * says it is on disk.  Compaction writes the unacked batches into the
 * other file, syncs them, then writes and syncs its head record: a crash
 * or power loss at any moment leaves one complete file, the one whose head
 * has the higher generation.  Acks are not synced: one lost resends
 * batches the writer has committed, and it acks them without writing them
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "handover.h"
#include "log.h"
#include "msg.h"
#include "output.h"

#define SPOOL_FILE  "sampler.spool"
#define SPOOL_MAGIC 0x43525350u /* "CRSP" */
#define REC_HEAD    1u          /* epoch, the last seq used; unix_ms: generation */
#define REC_BATCH   2u          /* one batch, data follows */
#define REC_ACK     3u          /* batches up to seq are on disk */

struct spool_rec {
	uint32_t magic, kind;
	uint64_t epoch, seq, unix_ms;
	uint32_t rows, len;
};
_Static_assert(sizeof(struct spool_rec) == 40, "spool_rec is 40 bytes");

struct spool {
	struct spool_batch *head, *tail;
	uint64_t epoch, last_seq, bytes, batches, max_bytes;
	uint64_t dropped_batches, dropped_rows;
	uint64_t acked_batches, acked_rows; /* since start: what the writer took */
	bool dropping;
	int fds[2];          /* both -1: memory only */
	int active;          /* the file appended to */
	uint64_t generation; /* of the active file's head */
	uint64_t file_bytes; /* of the active file */
};

static int rec_pwrite(int fd, off_t off, const struct spool_rec *rec, const void *data)
{
	struct iovec iov[2] = { { (void *)rec, sizeof(*rec) }, { (void *)data, rec->len } };
	ssize_t n = pwritev(fd, iov, data ? 2 : 1, off);

	if (n < 0)
		return -errno;
	return n == (ssize_t)(sizeof(*rec) + rec->len) ? 0 : -ENOSPC;
}

static int file_sync(int fd)
{
	return fdatasync(fd) < 0 ? -errno : 0;
}

static void files_close(struct spool *sp)
{
	for (int i = 0; i < 2; i++)
		if (sp->fds[i] >= 0) {
			close(sp->fds[i]);
			sp->fds[i] = -1;
		}
}

static void files_failed(struct spool *sp, int err)
{
	log_warnx("spool file: %s; keeping unacked batches in memory only", strerror(-err));
	files_close(sp);
}

/* Appends one record to the active file. */
static void rec_append(struct spool *sp, const struct spool_rec *rec, const void *data)
{
	int r;

	if (sp->fds[sp->active] < 0)
		return;
	r = rec_pwrite(sp->fds[sp->active], (off_t)sp->file_bytes, rec, data);
	if (r == 0 && rec->kind == REC_BATCH)
		r = file_sync(sp->fds[sp->active]);
	if (r)
		files_failed(sp, r);
	else
		sp->file_bytes += sizeof(*rec) + rec->len;
}

static struct spool_rec batch_rec(const struct spool *sp, const struct spool_batch *b)
{
	return (struct spool_rec){ SPOOL_MAGIC, REC_BATCH, sp->epoch, b->seq, b->unix_ms, b->rows,
		(uint32_t)b->len };
}

/*
 * Writes the unacked batches into the other file, its head last, then
 * makes it the active one and empties the old one.
 */
static void files_switch(struct spool *sp)
{
	int next = !sp->active, fd = sp->fds[next];
	struct spool_rec head = { SPOOL_MAGIC, REC_HEAD, sp->epoch, sp->last_seq,
		sp->generation + 1, 0, 0 };
	off_t off = sizeof(head);
	int r = 0;

	if (fd < 0)
		return;
	if (ftruncate(fd, 0) < 0)
		r = -errno;
	for (struct spool_batch *b = sp->head; b && !r; b = b->next) {
		struct spool_rec rec = batch_rec(sp, b);

		r = rec_pwrite(fd, off, &rec, b->data);
		off += (off_t)(sizeof(rec) + rec.len);
	}
	if (!r)
		r = file_sync(fd);
	if (!r)
		r = rec_pwrite(fd, 0, &head, NULL);
	if (!r)
		r = file_sync(fd);
	if (r) {
		files_failed(sp, r);
		return;
	}
	if (ftruncate(sp->fds[sp->active], 0) < 0)
		log_warn("spool file: truncate"); /* its head is older: harmless */
	sp->active = next;
	sp->generation++;
	sp->file_bytes = (uint64_t)off;
}

/* Compacts when acked batches make up most of the active file. */
static void file_compact(struct spool *sp)
{
	if (sp->file_bytes > 2 * (sp->bytes + (1u << 20)))
		files_switch(sp);
}

static void drop_head(struct spool *sp)
{
	struct spool_batch *b = sp->head;

	sp->head = b->next;
	if (!sp->head)
		sp->tail = NULL;
	sp->bytes -= b->len;
	sp->batches--;
	free(b);
}

/* The batch a REC_BATCH record holds, kept in memory. */
static int append(struct spool *sp, const struct spool_rec *rec, const char *data)
{
	struct spool_batch *b = malloc(sizeof(*b) + rec->len);

	if (!b)
		return -ENOMEM;
	*b = (struct spool_batch){ NULL, rec->seq, rec->unix_ms, rec->rows, rec->len };
	memcpy(b->data, data, rec->len);
	if (sp->tail)
		sp->tail->next = b;
	else
		sp->head = b;
	sp->tail = b;
	sp->bytes += rec->len;
	sp->batches++;
	return 0;
}

/* Oldest first, until len more bytes fit; logged when dropping starts. */
static void make_room(struct spool *sp, size_t len)
{
	bool dropped = false;

	while (sp->head && sp->bytes + len > sp->max_bytes) {
		sp->dropped_batches++;
		sp->dropped_rows += sp->head->rows;
		drop_head(sp);
		dropped = true;
	}
	if (dropped && !sp->dropping)
		log_warnx("spool full (%llu bytes): dropping the oldest unacked batches",
			(unsigned long long)sp->max_bytes);
	else if (!dropped && sp->dropping)
		log_notice("spool has room again; %llu batches (%llu rows) dropped so far",
			(unsigned long long)sp->dropped_batches,
			(unsigned long long)sp->dropped_rows);
	sp->dropping = dropped;
}

static void replay_rec(struct spool *sp, const struct spool_rec *rec, const char *data)
{
	if (!sp->epoch)
		sp->epoch = rec->epoch;
	if (rec->epoch != sp->epoch)
		return;
	if (rec->seq > sp->last_seq)
		sp->last_seq = rec->seq;
	if (rec->kind == REC_BATCH) {
		make_room(sp, rec->len);
		append(sp, rec, data);
	} else if (rec->kind == REC_ACK) {
		while (sp->head && sp->head->seq <= rec->seq)
			drop_head(sp);
	}
}

/* Replays one file; a torn last record (killed mid-write) is ignored. */
static void replay(struct spool *sp, int fd)
{
	struct spool_rec rec;
	char *data = NULL;
	off_t off = 0;

	while (pread(fd, &rec, sizeof(rec), off) == (ssize_t)sizeof(rec)) {
		if (rec.magic != SPOOL_MAGIC || rec.len > MSG_PAYLOAD_MAX || !rec.epoch)
			break;
		free(data);
		data = malloc(rec.len ? rec.len : 1);
		if (!data || pread(fd, data, rec.len, off + (off_t)sizeof(rec)) != (ssize_t)rec.len)
			break;
		replay_rec(sp, &rec, data);
		off += (off_t)(sizeof(rec) + rec.len);
	}
	free(data);
	if (sp->batches)
		log_info("spool: %llu unacked batches (%llu bytes) from before the restart",
			(unsigned long long)sp->batches, (unsigned long long)sp->bytes);
}

/* The generation in a file's head record; 0 when it has none (new, or torn). */
static uint64_t head_generation(int fd)
{
	struct spool_rec rec;

	if (fd < 0 || pread(fd, &rec, sizeof(rec), 0) != (ssize_t)sizeof(rec) ||
		rec.magic != SPOOL_MAGIC || rec.kind != REC_HEAD || !rec.epoch)
		return 0;
	return rec.unix_ms;
}

/* A file the spool may truncate and rewrite: regular, with no other name (a
 * hard link to another file would have it truncated, as root at start). */
static bool spool_file_ours(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

static void files_open(struct spool *sp, const char *dir)
{
	char path[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		errno = ENAMETOOLONG;
		if (snprintf(path, sizeof(path), "%s/%s.%d", dir, SPOOL_FILE, i) <
			(int)sizeof(path))
			sp->fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (sp->fds[i] >= 0 && !spool_file_ours(sp->fds[i])) {
			close(sp->fds[i]);
			sp->fds[i] = -1;
			errno = EMLINK;
		}
		if (sp->fds[i] < 0) {
			log_warn("spool file %s: keeping unacked batches in memory only", path);
			files_close(sp);
			return;
		}
	}
}

int spool_open(const char *dir, uint64_t max_bytes, struct spool **ret_spool)
{
	struct spool *sp = calloc(1, sizeof(*sp));
	uint64_t gen[2];

	if (!sp)
		return -ENOMEM;
	sp->max_bytes = max_bytes;
	sp->fds[0] = sp->fds[1] = -1;
	if (dir)
		files_open(sp, dir);
	gen[0] = head_generation(sp->fds[0]);
	gen[1] = head_generation(sp->fds[1]);
	sp->active = gen[1] > gen[0];
	sp->generation = gen[sp->active];
	if (sp->generation)
		replay(sp, sp->fds[sp->active]);
	while (!sp->epoch)
		if (getrandom(&sp->epoch, sizeof(sp->epoch), 0) != sizeof(sp->epoch))
			sp->epoch = 0;
	files_switch(sp);
	*ret_spool = sp;
	return 0;
}

/* Gives the files to the user the sampler drops to: only files root or that
 * user owns alone (handover_file refuses a hard link to another's file). */
int spool_chown(const struct spool *spool, uid_t uid, gid_t gid)
{
	int r;

	for (int i = 0; i < 2; i++)
		if (spool->fds[i] >= 0 && (r = handover_file(spool->fds[i], uid, gid)) < 0)
			return r;
	return 0;
}

void spool_free(struct spool *spool)
{
	if (!spool)
		return;
	while (spool->head)
		drop_head(spool);
	files_close(spool);
	free(spool);
}

void spool_set_max(struct spool *spool, uint64_t max_bytes)
{
	spool->max_bytes = max_bytes;
}

uint64_t spool_epoch(const struct spool *spool)
{
	return spool->epoch;
}

int spool_add(struct spool *spool, uint64_t unix_ms, uint32_t rows, const char *data, size_t len)
{
	struct spool_rec rec = { SPOOL_MAGIC, REC_BATCH, spool->epoch, spool->last_seq + 1, unix_ms,
		rows, (uint32_t)len };
	int r;

	if (len > MSG_PAYLOAD_MAX)
		return -EMSGSIZE;
	make_room(spool, len);
	r = append(spool, &rec, data);
	if (r) {
		spool->dropped_batches++;
		spool->dropped_rows += rows;
		return r;
	}
	spool->last_seq = rec.seq;
	rec_append(spool, &rec, data);
	return 0;
}

void spool_ack(struct spool *spool, uint64_t epoch, uint64_t seq)
{
	struct spool_rec rec = { SPOOL_MAGIC, REC_ACK, spool->epoch, seq, 0, 0, 0 };
	bool any = false;

	if (epoch != spool->epoch)
		return;
	while (spool->head && spool->head->seq <= seq) {
		spool->acked_batches++;
		spool->acked_rows += spool->head->rows;
		drop_head(spool);
		any = true;
	}
	if (!any)
		return;
	if (!spool->head) {
		files_switch(spool); /* nothing left to resend: start a short file */
		return;
	}
	rec_append(spool, &rec, NULL);
	file_compact(spool);
}

struct spool_batch *spool_first(struct spool *spool)
{
	return spool->head;
}

void spool_stats(const struct spool *spool, struct spool_stats *ret_stats)
{
	*ret_stats = (struct spool_stats){
		.bytes = spool->bytes,
		.batches = spool->batches,
		.dropped_batches = spool->dropped_batches,
		.dropped_rows = spool->dropped_rows,
		.acked_batches = spool->acked_batches,
		.acked_rows = spool->acked_rows,
		.next_seq = spool->last_seq + 1,
		.dropping = spool->dropping,
		.persistent = spool->fds[spool->active] >= 0,
	};
}
