/*
 * labels.c: the labels `croftctl label` sets on containers, kept sorted by
 * container id so that each row finds its label in O(log n) however many
 * containers are labelled.  croft-sampler, croft user.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

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

/* Sets (or with an empty label clears) the label of a container. */
int sampler_label_set(struct sampler *s, const char *id, const char *label)
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
