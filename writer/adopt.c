/*
 * adopt.c: a live file no commit record names (an older collector's, a
 * restored copy) made one compact line per JSON value, as croft writes
 * rows: whatever its spacing (pretty-printed, ", " and ": "), a last value
 * without its newline is kept, and only a value the file ends inside is
 * dropped.  Written beside it and renamed over it, so a crash at any moment
 * leaves the old file or the new one, and adopting again changes nothing.
 * Writer, croft user, at start-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "writer.h"

#define ADOPT_BUF 65536

/* Where the scan stands: in a string or not, and how deep in the value. */
struct minify {
	int out_fd;
	char out[ADOPT_BUF];
	size_t out_len;
	uint64_t written, line_end; /* bytes out; bytes out up to the last whole line */
	uint64_t lines;
	bool in_string, escaped, line_open;
	unsigned depth;
	char first[ADOPT_FIRST_ROW_MAX]; /* the first line, as far as it fits */
	size_t first_len;
};

static int flush_out(struct minify *m)
{
	int r = file_write_at(m->out_fd, m->out, m->out_len, (off_t)(m->written - m->out_len));

	m->out_len = 0;
	return r;
}

static int put(struct minify *m, char c)
{
	if (m->lines == 0 && m->first_len < sizeof(m->first))
		m->first[m->first_len++] = c;
	m->out[m->out_len++] = c;
	m->written++;
	return m->out_len == sizeof(m->out) ? flush_out(m) : 0;
}

static int end_line(struct minify *m)
{
	int r = 0;

	if (m->line_open) {
		r = put(m, '\n');
		m->line_end = m->written;
		m->lines++;
		m->line_open = false;
	}
	return r;
}

/* One byte of the old file. */
static int minify_byte(struct minify *m, char c)
{
	if (m->in_string) {
		m->in_string = m->escaped || c != '"';
		m->escaped = !m->escaped && c == '\\';
		return put(m, c);
	}
	if (c == '\n' && m->depth == 0)
		return end_line(m); /* a value that is no object or array ends with its line */
	if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
		return 0;
	m->line_open = true;
	if (c == '"')
		m->in_string = true;
	else if (c == '{' || c == '[')
		m->depth++;
	else if ((c == '}' || c == ']') && m->depth > 0 && --m->depth == 0) {
		int r = put(m, c);

		return r ? r : end_line(m);
	}
	return put(m, c);
}

uint64_t adopt_row_unix_ms(const char *row, size_t len)
{
	static const char key[] = "\"unix_ms\":";
	unsigned depth = 0;
	bool in_string = false, escaped = false;

	for (size_t i = 0; i < len; i++) {
		char c = row[i];
		uint64_t ms = 0;
		size_t d;

		if (in_string) {
			in_string = escaped || c != '"';
			escaped = !escaped && c == '\\';
			continue;
		}
		if (depth == 1 && c == '"' && len - i > sizeof(key) - 1 &&
			!memcmp(row + i, key, sizeof(key) - 1)) {
			for (d = i + sizeof(key) - 1; d < len && row[d] >= '0' && row[d] <= '9';
				d++)
				ms = ms * 10 + (uint64_t)(row[d] - '0');
			return d > i + sizeof(key) - 1 ? ms : 0;
		}
		if (c == '"')
			in_string = true;
		else if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && depth > 0)
			depth--;
	}
	return 0;
}

/* Writes live_fd's values compactly to out_fd; the file ending inside one drops it. */
static int minify_file(int live_fd, struct minify *m, uint64_t *ret_dropped)
{
	char in[ADOPT_BUF];
	uint64_t at = 0;
	ssize_t n;
	int r = 0;

	while (r == 0 && (n = pread(live_fd, in, sizeof(in), (off_t)at)) > 0) {
		for (ssize_t i = 0; r == 0 && i < n; i++)
			r = minify_byte(m, in[i]);
		at += (uint64_t)n;
	}
	if (r == 0 && n < 0)
		r = -errno;
	if (r == 0 && !m->in_string && m->depth == 0)
		r = end_line(m); /* a whole last value without its newline */
	if (r == 0)
		r = flush_out(m);
	if (r == 0 && ftruncate(m->out_fd, (off_t)m->line_end) < 0)
		r = -errno;
	*ret_dropped = m->written - m->line_end;
	return r;
}

int adopt_live(int dirfd, int live_fd, struct adopt_result *ret)
{
	static struct minify m; /* 68 KiB, once at start: not on the stack */
	int out_fd, r;

	unlinkat(dirfd, ADOPT_TMP_NAME, 0); /* an interrupted adoption's */
	out_fd = openat(
		dirfd, ADOPT_TMP_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (out_fd < 0)
		return -errno;
	m = (struct minify){ .out_fd = out_fd };
	r = minify_file(live_fd, &m, &ret->dropped_bytes);
	if (r == 0 && fsync(out_fd) < 0)
		r = -errno;
	close(out_fd);
	if (r == 0 && renameat(dirfd, ADOPT_TMP_NAME, dirfd, LIVE_NAME) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dirfd, ADOPT_TMP_NAME, 0);
		return r;
	}
	ret->rows = m.lines;
	ret->first_ms = adopt_row_unix_ms(m.first, m.first_len);
	return file_fsync_dir(dirfd);
}
