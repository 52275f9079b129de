/*
 * strtab.c: string interning for the readers (containers, cwds, frameworks,
 * syscall names): open addressing on a 64-bit hash, strings in one arena,
 * dense ids.  One table per worker thread, no locking.  No privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "readers.h"

/* A multiply-xorshift hash, 8 bytes a step: strings here are short. */
uint64_t str_hash(const char *s, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t h = 0x243f6a8885a308d3ull ^ (len * k);

	while (len >= 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		h = (h ^ v) * k;
		h ^= h >> 29;
		s += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = 0;
		memcpy(&v, s, len);
		h = (h ^ v) * k;
		h ^= h >> 29;
	}
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

static int strtab_grow_slots(struct strtab *t)
{
	size_t cap = t->slots_cap ? t->slots_cap * 2 : 64;
	struct st_slot *slots = malloc(cap * sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < cap; i++)
		slots[i].id = NONE_ID;
	for (size_t i = 0; i < t->slots_cap; i++) {
		if (t->slots[i].id == NONE_ID)
			continue;
		size_t j = t->slots[i].hash & (cap - 1);
		while (slots[j].id != NONE_ID)
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->slots_cap = cap;
	return 0;
}

static uint32_t strtab_add(struct strtab *t, const char *s, size_t len)
{
	if (t->count == t->ids_cap) {
		size_t cap = t->ids_cap ? t->ids_cap * 2 : 64;
		uint32_t *off = realloc(t->off, cap * sizeof(*off));
		if (!off)
			return NONE_ID;
		t->off = off;
		uint32_t *lens = realloc(t->len, cap * sizeof(*lens));
		if (!lens)
			return NONE_ID;
		t->len = lens;
		t->ids_cap = cap;
	}
	if (t->arena_len + len + 1 > t->arena_cap) {
		size_t cap = t->arena_cap ? t->arena_cap : 4096;
		while (cap < t->arena_len + len + 1)
			cap *= 2;
		char *arena = realloc(t->arena, cap);
		if (!arena || cap > UINT32_MAX)
			return NONE_ID;
		t->arena = arena;
		t->arena_cap = cap;
	}
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = '\0';
	t->off[t->count] = (uint32_t)t->arena_len;
	t->len[t->count] = (uint32_t)len;
	t->arena_len += len + 1;
	return (uint32_t)t->count++;
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	if ((t->count + 1) * 2 > t->slots_cap && strtab_grow_slots(t) < 0)
		return NONE_ID;
	uint64_t h = str_hash(s, len);
	size_t mask = t->slots_cap - 1, j = h & mask;

	for (; t->slots[j].id != NONE_ID; j = (j + 1) & mask) {
		uint32_t id = t->slots[j].id;
		if (t->slots[j].hash == h && t->len[id] == len && !memcmp(t->arena + t->off[id], s, len))
			return id;
	}
	uint32_t id = strtab_add(t, s, len);
	if (id != NONE_ID)
		t->slots[j] = (struct st_slot){ h, id };
	return id;
}

const char *strtab_str(const struct strtab *t, uint32_t id, size_t *ret_len)
{
	if (id >= t->count)
		return NULL;
	if (ret_len)
		*ret_len = t->len[id];
	return t->arena + t->off[id];
}

void strtab_free(struct strtab *t)
{
	free(t->slots);
	free(t->off);
	free(t->len);
	free(t->arena);
	memset(t, 0, sizeof(*t));
}
