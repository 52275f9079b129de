/*
 * labels.c: the labels `croftctl label` sets on containers, kept sorted by
 * container id so that each row finds its label in O(log n) however many
 * containers are labelled, and saved in the state dir so that a restart or
 * a reboot keeps them.  croft-sampler, croft user (loaded before the drop).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "sampler.h"

/*
 * The file: "croft-labels 1\n", then per label "<id> <bytes>\n<label>\n"
 * (a label may hold any byte but NUL, a newline too).  Written whole as
 * labels.tmp, fsynced, renamed over labels: a crash leaves the old file or
 * the new one.
 */
#define LABELS_FILE      "labels"
#define LABELS_TMP       "labels.tmp"
#define LABELS_HEADER    "croft-labels 1\n"
#define LABELS_ENTRY_MAX (CONTAINER_ID_LEN + 8 + CTL_LABEL_MAX + 2)
#define LABELS_FILE_MAX  (sizeof(LABELS_HEADER) + CONTAINER_LABELS_MAX * LABELS_ENTRY_MAX)

/* The index of the first label whose id is not below id. */
static size_t label_index(const struct sampler *s, const char *id)
{
	size_t lo = 0, hi = s->labels_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(s->labels[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct container_label *sampler_label_find(const struct sampler *s, const char *id)
{
	size_t i = label_index(s, id);

	return i < s->labels_count && strcmp(s->labels[i].id, id) == 0 ? &s->labels[i] : NULL;
}

static int label_insert(struct sampler *s, size_t i, const char *id)
{
	struct container_label *more;

	if (s->labels_count >= CONTAINER_LABELS_MAX)
		return -ENOSPC;
	more = realloc(s->labels, (s->labels_count + 1) * sizeof(*s->labels));
	if (!more)
		return -ENOMEM;
	s->labels = more;
	memmove(&more[i + 1], &more[i], (s->labels_count - i) * sizeof(*more));
	memcpy(more[i].id, id, sizeof(more[i].id));
	more[i].label = NULL;
	more[i].label_len = 0;
	s->labels_count++;
	return 0;
}

/* Sets (or with an empty label clears) the label of a container, in memory. */
static int label_put(struct sampler *s, const char *id, const char *label)
{
	size_t i = label_index(s, id), len = strlen(label);
	bool found = i < s->labels_count && strcmp(s->labels[i].id, id) == 0;
	char *copy;
	int r;

	if (!len) {
		if (!found)
			return 0;
		free(s->labels[i].label);
		s->labels_count--;
		memmove(&s->labels[i], &s->labels[i + 1],
			(s->labels_count - i) * sizeof(*s->labels));
		return 0;
	}
	copy = strdup(label);
	if (!copy)
		return -ENOMEM;
	if (!found && (r = label_insert(s, i, id)) < 0) {
		free(copy);
		return r;
	}
	free(s->labels[i].label);
	s->labels[i].label = copy;
	s->labels[i].label_len = len;
	return 0;
}

static int labels_write(const struct sampler *s, int fd)
{
	off_t off = sizeof(LABELS_HEADER) - 1;
	char head[CONTAINER_ID_LEN + 32];
	int r = file_write_at(fd, LABELS_HEADER, sizeof(LABELS_HEADER) - 1, 0);

	for (size_t i = 0; i < s->labels_count && r == 0; i++) {
		const struct container_label *l = &s->labels[i];
		int n = snprintf(head, sizeof(head), "%s %zu\n", l->id, l->label_len);

		if ((r = file_write_at(fd, head, (size_t)n, off)) == 0)
			r = file_write_at(fd, l->label, l->label_len, off + n);
		if (r == 0)
			r = file_write_at(fd, "\n", 1, off + n + (off_t)l->label_len);
		off += n + (off_t)l->label_len + 1;
	}
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r;
}

/* The whole table as the new file; 0 or -errno (the old file then stays). */
static int labels_save(const struct sampler *s)
{
	int fd = openat(s->state_dirfd, LABELS_TMP,
		O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int r;

	if (fd < 0)
		return -errno;
	r = labels_write(s, fd);
	close(fd);
	if (r == 0 && renameat(s->state_dirfd, LABELS_TMP, s->state_dirfd, LABELS_FILE) < 0)
		r = -errno;
	if (r == 0)
		r = file_fsync_dir(s->state_dirfd);
	return r;
}

int sampler_label_set(struct sampler *s, const char *id, const char *label)
{
	int r = label_put(s, id, label);

	if (r == 0 && (r = labels_save(s)) < 0)
		log_warnx("%s/%s: cannot save the labels (%s): container %.12s's label holds "
			  "until the sampler stops",
			s->state_dir, LABELS_FILE, strerror(-r), id);
	return r;
}

/* One "<id> <bytes>\n<label>\n" at *pos; 0 or -EINVAL. */
static int labels_parse_entry(struct sampler *s, const char *buf, size_t len, size_t *pos)
{
	char id[CONTAINER_ID_LEN + 1], label[CTL_LABEL_MAX + 1];
	const char *p = buf + *pos, *end = buf + len;
	size_t bytes = 0, i;

	if ((size_t)(end - p) < CONTAINER_ID_LEN + 3 || p[CONTAINER_ID_LEN] != ' ')
		return -EINVAL;
	memcpy(id, p, CONTAINER_ID_LEN);
	id[CONTAINER_ID_LEN] = '\0';
	if (strspn(id, "0123456789abcdef") != CONTAINER_ID_LEN)
		return -EINVAL;
	for (i = CONTAINER_ID_LEN + 1; p + i < end && p[i] >= '0' && p[i] <= '9' && i < 72; i++)
		bytes = bytes * 10 + (size_t)(p[i] - '0');
	if (p + i >= end || p[i] != '\n' || bytes == 0 || bytes > CTL_LABEL_MAX ||
		(size_t)(end - p) < i + 1 + bytes + 1 || p[i + 1 + bytes] != '\n' ||
		memchr(p + i + 1, '\0', bytes))
		return -EINVAL;
	memcpy(label, p + i + 1, bytes);
	label[bytes] = '\0';
	*pos += i + 1 + bytes + 1;
	return label_put(s, id, label) == 0 ? 0 : -EINVAL;
}

void sampler_labels_load(struct sampler *s)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0, pos = sizeof(LABELS_HEADER) - 1;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", s->state_dir, LABELS_FILE) >= (int)sizeof(path))
		r = -ENAMETOOLONG;
	else
		r = file_read_bounded(path, LABELS_FILE_MAX, &buf, &len);
	if (r == -ENOENT)
		return;
	if (r == 0 && (len < pos || memcmp(buf, LABELS_HEADER, pos)))
		r = -EINVAL;
	while (r == 0 && pos < len)
		r = labels_parse_entry(s, buf, len, &pos);
	free(buf);
	if (r < 0) {
		log_warnx("%s: %s; the labels set before are not restored", path,
			r == -EINVAL ? "not a labels file croft wrote" : file_read_strerror(r));
		while (s->labels_count)
			label_put(s, s->labels[0].id, "");
		return;
	}
	if (s->labels_count)
		log_info("%zu container labels restored from %s", s->labels_count, path);
}
