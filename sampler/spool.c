/*
 * spool.c: every batch croft-sampler made and croft-writer has not acked
 * yet, bounded by spool_size (oldest dropped first, counted and logged once
 * per change).  Mirrored in <runtime>/sampler.spool, an append-only file
 * (tmpfs) replayed at start, so a SIGKILLed sampler resends what it had.
 * croft-sampler (croft user; the file was created before the drop).
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

#include "log.h"
#include "msg.h"
#include "sampler.h"

#define SPOOL_FILE      "sampler.spool"
#define SPOOL_MAGIC     0x43525350u /* "CRSP" */
#define REC_HEAD        1u          /* epoch and the last seq used */
#define REC_BATCH       2u          /* one batch, data follows */
#define REC_ACK         3u          /* batches up to seq are on disk */

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
	bool dropping;
	int fd;                        /* -1: memory only */
	uint64_t file_bytes;
};

static int rec_write(struct spool *sp, const struct spool_rec *rec, const void *data)
{
	struct iovec iov[2] = { { (void *)rec, sizeof(*rec) }, { (void *)data, rec->len } };
	size_t want = sizeof(*rec) + rec->len;
	ssize_t n;

	if (sp->fd < 0)
		return 0;
	n = pwritev(sp->fd, iov, data ? 2 : 1, (off_t)sp->file_bytes);
	if (n != (ssize_t)want) {
		log_warnx("spool file: %s; keeping unacked batches in memory only",
			n < 0 ? strerror(errno) : "short write");
		close(sp->fd);
		sp->fd = -1;
		return -EIO;
	}
	sp->file_bytes += want;
	return 0;
}

/* The file restarts as one HEAD record: nothing is left to resend. */
static void file_restart(struct spool *sp)
{
	struct spool_rec head = { SPOOL_MAGIC, REC_HEAD, sp->epoch, sp->last_seq, 0, 0, 0 };

	if (sp->fd < 0)
		return;
	sp->file_bytes = 0;
	if (ftruncate(sp->fd, 0) < 0) {
		log_warn("spool file: truncate");
		close(sp->fd);
		sp->fd = -1;
		return;
	}
	rec_write(sp, &head, NULL);
}

/* Rewrites the file from memory when acked batches make up most of it. */
static void file_compact(struct spool *sp)
{
	if (sp->fd < 0 || sp->file_bytes <= 2 * (sp->bytes + (1u << 20)))
		return;
	file_restart(sp);
	for (struct spool_batch *b = sp->head; b && sp->fd >= 0; b = b->next) {
		struct spool_rec rec = { SPOOL_MAGIC, REC_BATCH, sp->epoch, b->seq, b->unix_ms,
			b->rows, (uint32_t)b->len };

		rec_write(sp, &rec, b->data);
	}
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

static int append(struct spool *sp, uint64_t seq, uint64_t unix_ms, uint32_t rows,
	const char *data, size_t len)
{
	struct spool_batch *b = malloc(sizeof(*b) + len);

	if (!b)
		return -ENOMEM;
	b->next = NULL;
	b->seq = seq;
	b->unix_ms = unix_ms;
	b->rows = rows;
	b->len = len;
	memcpy(b->data, data, len);
	if (sp->tail)
		sp->tail->next = b;
	else
		sp->head = b;
	sp->tail = b;
	sp->bytes += len;
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
		append(sp, rec->seq, rec->unix_ms, rec->rows, data, rec->len);
	} else if (rec->kind == REC_ACK) {
		while (sp->head && sp->head->seq <= rec->seq)
			drop_head(sp);
	}
}

/* Replays the file; a torn last record (killed mid-write) is ignored. */
static void replay(struct spool *sp)
{
	struct spool_rec rec;
	char *data = NULL;
	off_t off = 0;

	while (pread(sp->fd, &rec, sizeof(rec), off) == (ssize_t)sizeof(rec)) {
		if (rec.magic != SPOOL_MAGIC || rec.len > MSG_PAYLOAD_MAX || !rec.epoch)
			break;
		free(data);
		data = malloc(rec.len ? rec.len : 1);
		if (!data ||
		    pread(sp->fd, data, rec.len, off + (off_t)sizeof(rec)) != (ssize_t)rec.len)
			break;
		replay_rec(sp, &rec, data);
		off += (off_t)(sizeof(rec) + rec.len);
	}
	free(data);
	if (sp->batches)
		log_info("spool: %llu unacked batches (%llu bytes) from before the restart",
			(unsigned long long)sp->batches, (unsigned long long)sp->bytes);
}

int spool_open(const char *dir, uint64_t max_bytes, struct spool **ret_spool)
{
	struct spool *sp = calloc(1, sizeof(*sp));
	char path[PATH_MAX];

	if (!sp)
		return -ENOMEM;
	sp->max_bytes = max_bytes;
	sp->fd = -1;
	if (dir && snprintf(path, sizeof(path), "%s/%s", dir, SPOOL_FILE) < (int)sizeof(path)) {
		sp->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (sp->fd < 0)
			log_warn("spool file %s: keeping unacked batches in memory only", path);
	}
	if (sp->fd >= 0)
		replay(sp);
	while (!sp->epoch)
		if (getrandom(&sp->epoch, sizeof(sp->epoch), 0) != sizeof(sp->epoch))
			sp->epoch = 0;
	file_restart(sp);
	for (struct spool_batch *b = sp->head; b && sp->fd >= 0; b = b->next) {
		struct spool_rec rec = { SPOOL_MAGIC, REC_BATCH, sp->epoch, b->seq, b->unix_ms,
			b->rows, (uint32_t)b->len };

		rec_write(sp, &rec, b->data);
	}
	*ret_spool = sp;
	return 0;
}

/* The file's fd, for the caller to chown before dropping root. */
int spool_fd(const struct spool *spool)
{
	return spool->fd;
}

void spool_free(struct spool *spool)
{
	if (!spool)
		return;
	while (spool->head)
		drop_head(spool);
	if (spool->fd >= 0)
		close(spool->fd);
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
	struct spool_rec rec = { SPOOL_MAGIC, REC_BATCH, spool->epoch, spool->last_seq + 1,
		unix_ms, rows, (uint32_t)len };
	int r;

	if (len > MSG_PAYLOAD_MAX)
		return -EMSGSIZE;
	make_room(spool, len);
	r = append(spool, rec.seq, unix_ms, rows, data, len);
	if (r) {
		spool->dropped_batches++;
		spool->dropped_rows += rows;
		return r;
	}
	spool->last_seq = rec.seq;
	rec_write(spool, &rec, data);
	return 0;
}

void spool_ack(struct spool *spool, uint64_t epoch, uint64_t seq)
{
	struct spool_rec rec = { SPOOL_MAGIC, REC_ACK, spool->epoch, seq, 0, 0, 0 };
	bool any = false;

	if (epoch != spool->epoch)
		return;
	while (spool->head && spool->head->seq <= seq) {
		drop_head(spool);
		any = true;
	}
	if (!any)
		return;
	if (!spool->head)
		file_restart(spool);
	else if (rec_write(spool, &rec, NULL) == 0)
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
		.next_seq = spool->last_seq + 1,
		.dropping = spool->dropping,
		.persistent = spool->fd >= 0,
	};
}
