/*
 * compress.c: croft-writer's one extra thread.  It turns a closed segment
 * name.jsonl into name.jsonl.zst (a standard zstd frame with a checksum):
 * written as .zst.tmp, fsynced, renamed, the directory fsynced, and only
 * then the .jsonl removed.  Jobs come in through a mutex-guarded queue;
 * results go back through another and an eventfd the main loop watches,
 * which keeps what is pending, retries failures and reports each finished
 * job up through a callback.  The thread never touches libevent.
 * Writer process, croft user.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <zstd.h>

#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "writer.h"

/* A segment to compress, and how its compression went. */
struct compress_job {
	char name[SEG_NAME_MAX];
	int error; /* 0 or -errno */
	uint64_t in_bytes, out_bytes, elapsed_ns;
	STAILQ_ENTRY(compress_job) entry;
};
STAILQ_HEAD(job_list, compress_job);

/* A segment queued for or in compression; main thread only. */
struct pending_seg {
	char name[SEG_NAME_MAX];
	bool failed;         /* compression failed; queued again by compress_retry */
	bool failure_logged; /* one log line per segment until it succeeds */
};

struct compressor {
	int dirfd;
	int efd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job_list waiting, done; /* both under lock */
	int level;                     /* under lock */
	volatile bool stop;            /* set under lock; read between chunks */
	/* the main thread's side */
	compress_done_fn done_cb;
	void *done_ctx;
	struct event *ev; /* efd readable */
	struct pending_seg *pending;
	size_t pending_count;
	struct compress_figures figures;
};

/* Streams in_fd into out_fd as one frame; content size is pledged in its header. */
static int compress_stream(int in_fd, int out_fd, uint64_t in_bytes, int level,
	const volatile bool *stop, uint64_t *ret_out)
{
	size_t out_cap = ZSTD_CStreamOutSize();
	uint8_t *in = malloc(COMPRESS_CHUNK), *out = malloc(out_cap);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	uint64_t in_total = 0, out_total = 0;
	int ret = -ENOMEM;

	if (!in || !out || !cctx)
		goto out;
	ret = -EINVAL;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
		ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
		ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx, in_bytes)))
		goto out;
	for (;;) {
		size_t got = 0;
		bool last;

		if (stop && *stop) {
			ret = -ECANCELED;
			goto out;
		}
		ret = file_read_at(in_fd, in, COMPRESS_CHUNK, (off_t)in_total, &got);
		if (ret < 0)
			goto out;
		in_total += got;
		last = got == 0;
		ZSTD_inBuffer ib = { in, got, 0 };
		size_t remaining;

		do {
			ZSTD_outBuffer ob = { out, out_cap, 0 };

			remaining = ZSTD_compressStream2(
				cctx, &ob, &ib, last ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(remaining)) {
				/* the file changed size under us: it is no closed segment */
				ret = -EIO;
				goto out;
			}
			ret = file_write_at(out_fd, out, ob.pos, (off_t)out_total);
			if (ret < 0)
				goto out;
			out_total += ob.pos;
		} while (last ? remaining != 0 : ib.pos < ib.size);
		if (last)
			break;
	}
	*ret_out = out_total;
	ret = 0;
out:
	ZSTD_freeCCtx(cctx);
	free(in);
	free(out);
	return ret;
}

int compress_file(int dirfd, const char *name, int level, const volatile bool *stop,
	uint64_t *ret_in, uint64_t *ret_out)
{
	char zst[SEG_NAME_MAX + 8], tmp[SEG_NAME_MAX + 16];
	int in_fd = -1, out_fd = -1, ret;
	struct stat st;
	uint64_t out_bytes = 0;

	if ((size_t)snprintf(zst, sizeof(zst), "%s.zst", name) >= sizeof(zst) ||
		(size_t)snprintf(tmp, sizeof(tmp), "%s.zst.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	in_fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in_fd < 0 || fstat(in_fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	posix_fadvise(in_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	out_fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (out_fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = compress_stream(in_fd, out_fd, (uint64_t)st.st_size, level, stop, &out_bytes);
	if (ret == 0 && fsync(out_fd) < 0)
		ret = -errno;
	if (ret == 0 && renameat(dirfd, tmp, dirfd, zst) < 0)
		ret = -errno;
	if (ret == 0)
		ret = file_fsync_dir(dirfd);
	if (ret == 0 && unlinkat(dirfd, name, 0) < 0)
		ret = -errno;
	if (ret == 0) {
		*ret_in = (uint64_t)st.st_size;
		*ret_out = out_bytes;
	}
out:
	if (out_fd >= 0) {
		close(out_fd);
		if (ret < 0)
			unlinkat(dirfd, tmp, 0);
	}
	if (in_fd >= 0)
		close(in_fd);
	return ret;
}

static void *compressor_main(void *arg)
{
	struct compressor *c = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct compress_job *job = STAILQ_FIRST(&c->waiting);
		int level = c->level;

		if (!job) {
			pthread_cond_wait(&c->wake, &c->lock);
			continue;
		}
		STAILQ_REMOVE_HEAD(&c->waiting, entry);
		pthread_mutex_unlock(&c->lock);

		uint64_t t0 = clock_mono_ns();

		job->error = compress_file(
			c->dirfd, job->name, level, &c->stop, &job->in_bytes, &job->out_bytes);
		job->elapsed_ns = clock_mono_ns() - t0;

		pthread_mutex_lock(&c->lock);
		STAILQ_INSERT_TAIL(&c->done, job, entry);
		if (write(c->efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; the main loop still drains */
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void job_list_free(struct job_list *list)
{
	struct compress_job *job;

	while ((job = STAILQ_FIRST(list))) {
		STAILQ_REMOVE_HEAD(list, entry);
		free(job);
	}
}

void compress_set_level(struct compressor *c, int level)
{
	pthread_mutex_lock(&c->lock);
	c->level = level;
	pthread_mutex_unlock(&c->lock);
}

static int compressor_submit(struct compressor *c, const char *name)
{
	struct compress_job *job = calloc(1, sizeof(*job));

	if (!job)
		return -ENOMEM;
	if ((size_t)snprintf(job->name, sizeof(job->name), "%s", name) >= sizeof(job->name)) {
		free(job);
		return -ENAMETOOLONG;
	}
	pthread_mutex_lock(&c->lock);
	STAILQ_INSERT_TAIL(&c->waiting, job, entry);
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The next finished job (the caller frees it), NULL when none. */
static struct compress_job *compressor_take(struct compressor *c)
{
	struct compress_job *job;
	uint64_t count;

	if (read(c->efd, &count, sizeof(count)) < 0) {
		/* EAGAIN: nothing signalled since the last read; the list decides */
	}
	pthread_mutex_lock(&c->lock);
	job = STAILQ_FIRST(&c->done);
	if (job)
		STAILQ_REMOVE_HEAD(&c->done, entry);
	pthread_mutex_unlock(&c->lock);
	return job;
}

static struct pending_seg *pending_find(const struct compressor *c, const char *name)
{
	for (size_t i = 0; i < c->pending_count; i++)
		if (!strcmp(c->pending[i].name, name))
			return &c->pending[i];
	return NULL;
}

void compress_queue(struct compressor *c, const char *name)
{
	struct pending_seg *p;
	int ret;

	if (pending_find(c, name))
		return;
	p = realloc(c->pending, (c->pending_count + 1) * sizeof(*p));
	if (!p)
		return;
	c->pending = p;
	p = &c->pending[c->pending_count++];
	memset(p, 0, sizeof(*p));
	strcpy(p->name, name);
	ret = compressor_submit(c, name);
	if (ret < 0) {
		p->failed = true;
		log_warnx("%s: cannot queue for compression: %s", name, strerror(-ret));
	}
}

void compress_retry(struct compressor *c)
{
	for (size_t i = 0; i < c->pending_count; i++)
		if (c->pending[i].failed && compressor_submit(c, c->pending[i].name) == 0)
			c->pending[i].failed = false;
}

bool compress_busy(const struct compressor *c, const char *name)
{
	char base[SEG_NAME_MAX];
	size_t len = strlen(name);

	if (pending_find(c, name))
		return true;
	if (len > 4 && len < sizeof(base) && !strcmp(name + len - 4, ".zst")) {
		memcpy(base, name, len - 4);
		base[len - 4] = '\0';
		return pending_find(c, base) != NULL;
	}
	return false;
}

void compress_get_figures(const struct compressor *c, struct compress_figures *ret)
{
	*ret = c->figures;
	ret->queued = c->pending_count;
}

static void compress_failed(struct compressor *c, const struct compress_job *r)
{
	struct pending_seg *p = pending_find(c, r->name);
	bool logged = p && p->failure_logged;

	c->figures.failed++;
	if (p) {
		p->failed = true;
		p->failure_logged = true;
	}
	if (!logged)
		log_warnx("%s: compression failed: %s (retried every %d s, the .jsonl "
			  "stays meanwhile)",
			r->name, strerror(-r->error), TICK_MAX_MS / 1000);
}

static void compress_done(struct compressor *c, const struct compress_job *r)
{
	struct pending_seg *p = pending_find(c, r->name);
	struct compress_figures *f = &c->figures;

	if (p)
		*p = c->pending[--c->pending_count];
	f->done++;
	f->last_ratio = r->out_bytes ? (double)r->in_bytes / (double)r->out_bytes : 0.0;
	f->last_mb_s = r->elapsed_ns ? (double)r->in_bytes * 1e3 / (double)r->elapsed_ns : 0.0;
	log_info("%s: compressed %" PRIu64 " -> %" PRIu64 " bytes (%.1fx, %.0f MB/s)", r->name,
		r->in_bytes, r->out_bytes, f->last_ratio, f->last_mb_s);
}

static void compress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct compressor *c = arg;
	struct compress_job *job;

	while ((job = compressor_take(c))) {
		if (job->error != -ECANCELED) { /* stopping: redone at the next start */
			if (job->error < 0)
				compress_failed(c, job);
			else
				compress_done(c, job);
			c->done_cb(c->done_ctx, job->name, job->error);
		}
		free(job);
	}
}

int compress_start(struct event_base *base, int dirfd, int level, compress_done_fn done_cb,
	void *done_ctx, struct compressor **ret_c)
{
	struct compressor *c = calloc(1, sizeof(*c));
	int ret = 0;

	if (!c)
		return -ENOMEM;
	c->dirfd = dirfd;
	c->level = level;
	c->done_cb = done_cb;
	c->done_ctx = done_ctx;
	STAILQ_INIT(&c->waiting);
	STAILQ_INIT(&c->done);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->efd < 0)
		ret = -errno;
	else if (!(c->ev = event_new(base, c->efd, EV_READ | EV_PERSIST, compress_cb, c)) ||
		 event_add(c->ev, NULL) < 0)
		ret = -ENOMEM;
	else
		ret = -pthread_create(&c->thread, NULL, compressor_main, c);
	if (ret < 0) {
		if (c->ev)
			event_free(c->ev);
		if (c->efd >= 0)
			close(c->efd);
		free(c);
		return ret;
	}
	*ret_c = c;
	return 0;
}

/* The thread stops between chunks; an unfinished .jsonl is redone at the next start. */
void compress_stop(struct compressor *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	job_list_free(&c->waiting);
	job_list_free(&c->done);
	close(c->efd);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->wake);
	if (c->ev)
		event_free(c->ev);
	free(c->pending);
	free(c);
}
