/*
 * tgidmap.c: an open-addressing hash from tgid (non-zero u32) to a u64,
 * with a fixed ceiling on entries: the start-time table and the per-answer
 * index of croft-probe (croft user, no capabilities).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probed.h"

#define TGIDMAP_MIN_CAP 1024

static size_t slot_of(const struct tgidmap *m, uint32_t key)
{
	return (size_t)((key * 2654435761u) & (m->cap - 1));
}

static int grow(struct tgidmap *m)
{
	struct tgidmap bigger = { .cap = m->cap ? m->cap * 2 : TGIDMAP_MIN_CAP, .limit = m->limit };

	bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
	bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
	if (!bigger.keys || !bigger.vals) {
		free(bigger.keys);
		free(bigger.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			tgidmap_put(&bigger, m->keys[i], m->vals[i]);
	tgidmap_free(m);
	*m = bigger;
	return 0;
}

uint64_t *tgidmap_get(const struct tgidmap *m, uint32_t key)
{
	if (!m->cap || !key)
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (!m->keys[i])
			return NULL;
	}
}

int tgidmap_put(struct tgidmap *m, uint32_t key, uint64_t val)
{
	uint64_t *v = tgidmap_get(m, key);
	size_t i;
	int r;

	if (!key)
		return -EINVAL;
	if (v) {
		*v = val;
		return 0;
	}
	if (m->count >= m->limit)
		return -ENOSPC;
	if ((m->count + 1) * 2 > m->cap && (r = grow(m)) < 0)
		return r;
	for (i = slot_of(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		;
	m->keys[i] = key;
	m->vals[i] = val;
	m->count++;
	return 0;
}

/* Backward-shift deletion: later entries of the same run move up, no tombstones. */
void tgidmap_del(struct tgidmap *m, uint32_t key)
{
	uint64_t *val = tgidmap_get(m, key);
	size_t i, j, home;

	if (!val)
		return;
	i = (size_t)(val - m->vals);
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		home = slot_of(m, m->keys[j]);
		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->count--;
}

void tgidmap_clear(struct tgidmap *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->count = 0;
}

void tgidmap_free(struct tgidmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
}
