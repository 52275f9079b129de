/*
 * readfile.c: reads one .jsonl or .jsonl.zst in fixed buffers; zstd text is
 * held until its frame's checksum passes (frames up to 2 MiB), and a corrupt
 * frame is skipped to the next frame's magic.  Rows are scanned where the
 * text lies (zstd's window: zstream.c).  Worker threads, no privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <zstd.h>

#include "fileio.h"
#include "engine.h"

static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

struct file_reader {
	const struct ds_sink *sink;
	void *ctx;
	struct ds_report *rep;
	bool jansson_only;
	struct zstream *zs;
	unsigned char *in;
	char *out; /* READ_OUT_BYTES + 2 x ROWSCAN_PAD: a plain file's text */
	struct row row;

	/* the file being read */
	int fd;
	uint64_t size_bytes; /* of the file as opened */
	uint32_t file;
	uint64_t line, kept, rows, rows_jansson, text_bytes, bytes_read;
	bool discarding; /* inside an over-long line: drop up to '\n' */
	char *text;      /* the text not yet parsed: in out, or in zs's window */
	size_t fill;     /* its bytes */
	bool live;       /* the writer's live file: empty, or a last line being appended */
	uint64_t live_tail_bytes;
};

int file_reader_new(const struct ds_sink *sink, void *ctx, struct ds_report *rep, bool jansson_only,
	struct file_reader **ret_fr)
{
	struct file_reader *fr = calloc(1, sizeof(*fr));

	if (!fr)
		return -ENOMEM;
	fr->sink = sink;
	fr->ctx = ctx;
	fr->rep = rep;
	fr->jansson_only = jansson_only;
	fr->in = malloc(READ_IN_BYTES);
	fr->out = calloc(1, READ_OUT_BYTES + 2 * ROWSCAN_PAD);
	if (zstream_new(READ_OUT_BYTES, &fr->zs) < 0 || !fr->in || !fr->out) {
		file_reader_free(fr);
		return -ENOMEM;
	}
	*ret_fr = fr;
	return 0;
}

void file_reader_free(struct file_reader *fr)
{
	if (!fr)
		return;
	zstream_free(fr->zs);
	free(fr->in);
	free(fr->out);
	free(fr);
}

#define SKIP(fr, kind, line, offset, ...)                                                          \
	ds_report_skip((fr)->rep, (fr)->file, &(fr)->kept, (kind), (line), (offset), __VA_ARGS__)

static void parse_fallback(struct file_reader *fr, const char *p, size_t len, bool cut)
{
	char err[160];
	json_t *tree;

	fr->line++;
	if (rowscan_jansson(p, len, &fr->row, &tree, err, sizeof(err)) == 0) {
		fr->rows++;
		fr->rows_jansson++;
		fr->sink->row(fr->ctx, &fr->row);
		json_decref(tree);
		return;
	}
	if (cut && fr->live) {
		fr->line--; /* no line yet: the writer is appending it */
		fr->live_tail_bytes = len;
	} else if (cut)
		SKIP(fr, SKIP_TRUNCATED, fr->line, 0, "line %llu: the file ends inside this line",
			(unsigned long long)fr->line);
	else
		SKIP(fr, SKIP_BAD_LINE, fr->line, 0, "line %llu: %s", (unsigned long long)fr->line,
			err);
}

/*
 * The line at p, up to its '\n' (before end): the scanner finds that itself;
 * memchr only for lines it declines.  cut: the file ended inside the line.
 */
static inline const char *parse_line(
	struct file_reader *fr, const char *p, const char *end, bool cut)
{
	const char *nl;

	if (!fr->jansson_only && rowscan_fast(p, end, &fr->row, &nl)) {
		fr->line++;
		fr->rows++;
		fr->sink->row(fr->ctx, &fr->row);
		return nl;
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	parse_fallback(fr, p, (size_t)(nl - p), cut);
	return nl;
}

/* Parses the whole lines of text[0..len); returns the bytes used. */
static size_t parse_lines(struct file_reader *fr, size_t len)
{
	const char *p = fr->text, *last = memrchr(p, '\n', len);
	const char *end = last ? last + 1 : p;

	while (p < end) {
		if (fr->discarding) {
			p = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1;
			fr->discarding = false;
		} else {
			p = parse_line(fr, p, end, false) + 1;
		}
	}
	return (size_t)(p - fr->text);
}

/* Keeps the unfinished tail; a full buffer with no '\n' is a line too long. */
static void take_lines(struct file_reader *fr, size_t upto)
{
	size_t used = parse_lines(fr, upto);

	if (used == 0 && fr->fill == READ_OUT_BYTES) {
		if (!fr->discarding) {
			fr->line++;
			SKIP(fr, SKIP_LONG_LINE, fr->line, 0, "line %llu: longer than %u bytes",
				(unsigned long long)fr->line, READ_OUT_BYTES);
			fr->discarding = true;
		}
		used = fr->fill;
	}
	fr->text += used;
	fr->fill -= used;
}

/* The end of the text: a last line without '\n' is kept if it is a row. */
static void take_last_line(struct file_reader *fr)
{
	if (fr->fill && !fr->discarding) {
		memset(fr->text + fr->fill, 0, ROWSCAN_PAD);
		fr->text[fr->fill] = '\n';
		parse_line(fr, fr->text, fr->text + fr->fill + 1, true);
	}
	fr->fill = 0;
}

static void read_plain(struct file_reader *fr)
{
	for (;;) {
		memmove(fr->out, fr->text, fr->fill);
		fr->text = fr->out;
		ssize_t n = read(fr->fd, fr->out + fr->fill, READ_OUT_BYTES - fr->fill);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			SKIP(fr, SKIP_UNREADABLE, 0, fr->bytes_read, "read at offset %llu: %s",
				(unsigned long long)fr->bytes_read, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		fr->bytes_read += (uint64_t)n;
		fr->text_bytes += (uint64_t)n;
		fr->fill += (size_t)n;
		take_lines(fr, fr->fill);
	}
	take_last_line(fr);
}

/* The next zstd magic number after `from`, or -1. */
static int64_t find_magic(struct file_reader *fr, uint64_t from)
{
	for (;;) {
		size_t n;

		if (file_read_at(fr->fd, fr->in, READ_IN_BYTES, (off_t)from, &n) < 0 ||
			n < sizeof(zstd_magic))
			return -1;
		void *hit = memmem(fr->in, n, zstd_magic, sizeof(zstd_magic));
		if (hit)
			return (int64_t)(from + (uint64_t)((unsigned char *)hit - fr->in));
		from += n - (sizeof(zstd_magic) - 1);
	}
}

struct zread {
	uint64_t in_base; /* file offset of in[0] */
	ZSTD_inBuffer ib;
	uint64_t frame_start; /* file offset where the current frame began */
	size_t committed;     /* text[0..committed) passed its frame's checks */
	bool in_frame;        /* bytes of an unfinished frame consumed */
};

/* A corrupt frame: drop its text (and the line it cut), find the next one. */
static void zstd_corrupt(struct file_reader *fr, struct zread *z, size_t err)
{
	SKIP(fr, SKIP_CORRUPT_FRAME, 0, z->frame_start,
		"corrupt zstd frame at offset %llu (%s): the rest of that frame is skipped",
		(unsigned long long)z->frame_start, ZSTD_getErrorName(err));
	fr->fill = z->committed;
	take_lines(fr, fr->fill);
	fr->fill = 0; /* the line the corruption cut */
	z->committed = 0;
	zstream_reset(fr->zs);
	int64_t next = find_magic(fr, z->frame_start + 1);
	z->in_base = next < 0 ? fr->size_bytes : (uint64_t)next;
	z->frame_start = z->in_base;
	z->ib.size = z->ib.pos = 0;
	z->in_frame = false;
}

static bool zstd_fill_input(struct file_reader *fr, struct zread *z)
{
	size_t n;
	int r;

	z->in_base += z->ib.size;
	z->ib.size = z->ib.pos = 0;
	r = file_read_at(fr->fd, fr->in, READ_IN_BYTES, (off_t)z->in_base, &n);
	if (r < 0)
		SKIP(fr, SKIP_UNREADABLE, 0, z->in_base, "read at offset %llu: %s",
			(unsigned long long)z->in_base, strerror(-r));
	if (r < 0 || n == 0)
		return false;
	fr->bytes_read += n;
	z->ib.src = fr->in;
	z->ib.size = n;
	return true;
}

static void read_zstd(struct file_reader *fr)
{
	struct zread z = { 0 };

	zstream_reset(fr->zs);
	z.ib.src = fr->in;
	for (;;) {
		if (z.ib.pos == z.ib.size && !zstd_fill_input(fr, &z))
			break;
		size_t had = fr->fill;
		size_t ret = zstream_decompress(
			fr->zs, &fr->text, &fr->fill, z.ib.src, z.ib.size, &z.ib.pos);
		fr->text_bytes += fr->fill - had;
		if (ZSTD_isError(ret)) {
			zstd_corrupt(fr, &z, ret);
			continue;
		}
		z.in_frame = true;
		if (ret == 0) { /* frame done, checksum passed */
			z.committed = fr->fill;
			z.frame_start = z.in_base + z.ib.pos;
			z.in_frame = false;
		} else if (fr->fill == READ_OUT_BYTES) {
			z.committed = fr->fill; /* too big to hold: stream it */
		}
		if (z.committed > 0 && (ret == 0 || fr->fill == READ_OUT_BYTES)) {
			size_t before = fr->fill;
			take_lines(fr, z.committed);
			z.committed -= before - fr->fill;
		}
	}
	if (z.in_frame) {
		SKIP(fr, SKIP_TRUNCATED, 0, z.frame_start,
			"the file ends inside the zstd frame at offset %llu",
			(unsigned long long)z.frame_start);
		/* What was decoded is sound; only its checksum is missing. */
		take_lines(fr, fr->fill);
		fr->discarding = true;
	}
	take_last_line(fr);
}

/*
 * Opens the file.  A .jsonl the writer compressed since the listing is
 * gone: read its .jsonl.zst instead.  Returns the fd, -ESTALE for a file
 * that is not the regular file listed, or -errno.
 */
static int open_file(struct file_reader *fr, const struct ds_file *f, bool *ret_zst)
{
	/* what was listed, not what a name says now: never a link found in a
	 * walk, and never waiting on a FIFO put in a file's place */
	int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (f->named ? 0 : O_NOFOLLOW);
	char twin[PATH_MAX];
	struct stat st;
	int fd = open(f->path, flags);
	bool listed = true;

	*ret_zst = f->zst;
	if (fd < 0 && errno == ENOENT && !f->zst &&
		snprintf(twin, sizeof(twin), "%s.zst", f->path) < (int)sizeof(twin)) {
		fd = open(twin, flags | O_NOFOLLOW);
		*ret_zst = true;
		listed = false;
	}
	if (fd < 0)
		return errno == ELOOP ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		(listed && (st.st_dev != f->dev || st.st_ino != f->ino))) {
		close(fd);
		return -ESTALE;
	}
	fr->size_bytes = (uint64_t)st.st_size;
	return fd;
}

/* The writer's live file, by name: croft-writer(8)'s croft-dataset.jsonl. */
static bool is_live_file(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, READ_LIVE_NAME);
}

void file_reader_read(struct file_reader *fr, const struct ds_file *f, uint32_t file_index)
{
	bool zst;

	fr->file = file_index;
	fr->line = fr->kept = fr->rows = fr->rows_jansson = fr->text_bytes = fr->bytes_read = 0;
	fr->live_tail_bytes = 0;
	fr->discarding = false;
	fr->text = fr->out;
	fr->fill = 0;
	if (fr->sink->file_begin)
		fr->sink->file_begin(fr->ctx, file_index);
	fr->fd = open_file(fr, f, &zst);
	fr->live = !zst && is_live_file(f->path);
	if (fr->fd < 0) {
		SKIP(fr, SKIP_UNREADABLE, 0, 0, "%s",
			fr->fd == -ESTALE
				? "not the regular file listed (a link, or replaced since)"
				: strerror(-fr->fd));
	} else if (fr->size_bytes == 0 && zst) {
		SKIP(fr, SKIP_TRUNCATED, 0, 0, "empty file: a segment holds at least one frame");
	} else if (fr->size_bytes == 0) {
		if (!fr->live) /* the live file is empty after every rotation */
			SKIP(fr, SKIP_EMPTY_FILE, 0, 0, "empty file");
	} else {
		posix_fadvise(fr->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		if (zst)
			read_zstd(fr);
		else
			read_plain(fr);
	}
	if (fr->fd >= 0)
		close(fr->fd);
	if (fr->sink->file_end)
		fr->sink->file_end(fr->ctx, file_index);
	pthread_mutex_lock(&fr->rep->lock);
	fr->rep->bytes_read += fr->bytes_read;
	fr->rep->text_bytes += fr->text_bytes;
	fr->rep->rows += fr->rows;
	fr->rep->rows_jansson += fr->rows_jansson;
	fr->rep->live_tail_bytes += fr->live_tail_bytes;
	pthread_mutex_unlock(&fr->rep->lock);
}
