/*
 * strtab.c: the readers' tables: string interning (containers, cwds,
 * frameworks, syscall names; open addressing, strings in one arena, dense
 * ids) and an int64 map (tgids, poll times).  One table per worker thread,
 * no locking.  croft stats/profile, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static inline uint64_t mix(uint64_t a, uint64_t b)
{
	u128 r = (u128)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t load8(const char *s)
{
	uint64_t v;

	memcpy(&v, s, 8);
	return v;
}

/*
 * Two words that, with the length, are the whole of a string up to 16
 * bytes (the first and last 8, or 4, maybe overlapping); for a longer one,
 * its last 16 bytes.
 */
static inline void str_words(const char *s, size_t len, uint64_t *ret_head, uint64_t *ret_tail)
{
	uint32_t lo = 0, hi = 0;

	if (len >= 8) {
		*ret_head = load8(len > 16 ? s + len - 16 : s);
		*ret_tail = load8(s + len - 8);
		return;
	}
	if (len >= 4) {
		memcpy(&lo, s, 4);
		if (len > 4)
			memcpy(&hi, s + len - 4, 4);
	} else if (len > 0) { /* first, middle and last: all of 1 to 3 bytes, no copy call */
		lo = (uint32_t)(unsigned char)s[0] | (uint32_t)(unsigned char)s[len / 2] << 8 |
		     (uint32_t)(unsigned char)s[len - 1] << 16;
	}
	*ret_head = lo;
	*ret_tail = hi;
}

static inline uint64_t hash_words(const char *s, size_t len, uint64_t head, uint64_t tail)
{
	const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull;
	uint64_t seed = k0 ^ len;

	for (const char *end = s + len; end - s > 16; s += 16)
		seed = mix(load8(s) ^ k1, load8(s + 8) ^ seed);
	return mix(head ^ k1, tail ^ seed) ^ seed;
}

/* A multiply-fold hash, 16 bytes a step: the strings here are short. */
uint64_t str_hash(const char *s, size_t len)
{
	uint64_t head, tail;

	str_words(s, len, &head, &tail);
	return hash_words(s, len, head, tail);
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
	/* ids are 32-bit offsets into the arena */
	if (t->arena_len + len + 1 > UINT32_MAX || !VEC_ROOM(t->ids, t->ids_cap, t->count) ||
		!vec_room((void **)&t->arena, &t->arena_cap, 1, t->arena_len + len, false))
		return NONE_ID;
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = '\0';
	t->ids[t->count] = (struct st_id){ (uint32_t)t->arena_len, (uint32_t)len };
	t->arena_len += len + 1;
	return (uint32_t)t->count++;
}

/*
 * A string's words in a slot: up to 16 bytes, the string itself, zero-padded
 * (padded: 16 bytes are readable from s, as in the read buffer); a longer
 * one, its last 16 bytes.  With the length, they tell short strings apart
 * without the arena.
 */
static inline void slot_words(
	const char *s, size_t len, bool padded, uint64_t *ret_head, uint64_t *ret_tail)
{
	static const uint64_t keep[9] = { 0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff,
		0xffffffffffff, 0xffffffffffffff, ~0ull };
	char copy[16] = { 0 };

	if (len > 16) {
		*ret_head = load8(s + len - 16);
		*ret_tail = load8(s + len - 8);
		return;
	}
	if (!padded) {
		memcpy(copy, s, len);
		s = copy;
	}
	*ret_head = load8(s) & keep[len < 8 ? len : 8];
	*ret_tail = load8(s + 8) & keep[len < 8 ? 0 : len - 8];
}

static inline bool slot_holds(const struct strtab *t, const struct st_slot *slot, const char *s,
	size_t len, uint64_t head, uint64_t tail)
{
	if (slot->len != len || slot->head != head || slot->tail != tail)
		return false;
	return len <= 16 || !memcmp(t->arena + t->ids[slot->id].off, s, len);
}

static inline uint32_t intern(struct strtab *t, const char *s, size_t len, bool padded)
{
	if ((t->count + 1) * 2 > t->slots_cap && strtab_grow_slots(t) < 0)
		return NONE_ID;
	uint64_t head, tail;
	slot_words(s, len, padded, &head, &tail);
	uint64_t h = hash_words(s, len, head, tail);
	size_t mask = t->slots_cap - 1, j = h & mask;

	for (; t->slots[j].id != NONE_ID; j = (j + 1) & mask)
		if (t->slots[j].hash == h && slot_holds(t, &t->slots[j], s, len, head, tail))
			return t->slots[j].id;
	uint32_t id = strtab_add(t, s, len);
	if (id != NONE_ID)
		t->slots[j] = (struct st_slot){ h, head, tail, id, (uint32_t)len };
	return id;
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	return intern(t, s, len, false);
}

uint32_t strtab_intern_row(struct strtab *t, const struct row *row, const struct strv *sv)
{
	return intern(t, sv->ptr, sv->len, row->padded);
}

const char *strtab_str(const struct strtab *t, uint32_t id, size_t *ret_len)
{
	if (id >= t->count)
		return NULL;
	if (ret_len)
		*ret_len = t->ids[id].len;
	return t->arena + t->ids[id].off;
}

uint32_t *strtab_remap(struct strtab *global, const struct strtab *local)
{
	uint32_t *map = calloc(local->count + 1, sizeof(*map));

	for (size_t i = 0; map && i < local->count; i++) {
		map[i] = strtab_intern(global, local->arena + local->ids[i].off, local->ids[i].len);
		if (map[i] == NONE_ID) {
			free(map);
			return NULL;
		}
	}
	return map;
}

void strtab_free(struct strtab *t)
{
	free(t->slots);
	free(t->ids);
	free(t->arena);
	memset(t, 0, sizeof(*t));
}

static size_t i64_home(int64_t key, size_t cap)
{
	return (size_t)((uint64_t)key * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

struct i64_slot *i64map_slot(struct i64map *m, int64_t key)
{
	if (m->epoch == 0)
		m->epoch = 1; /* calloc'd slots (epoch 0) are free */
	if ((m->count + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct i64_slot *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->slots[i].epoch != m->epoch)
				continue;
			size_t j = i64_home(m->slots[i].key, cap);
			while (slots[j].epoch == m->epoch)
				j = (j + 1) & (cap - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	size_t mask = m->cap - 1, j = i64_home(key, m->cap);
	while (m->slots[j].epoch == m->epoch && m->slots[j].key != key)
		j = (j + 1) & mask;
	return &m->slots[j];
}

bool i64map_has(const struct i64map *m, int64_t key)
{
	size_t mask = m->cap - 1, j;

	if (!m->cap)
		return false;
	for (j = i64_home(key, m->cap); m->slots[j].epoch == m->epoch; j = (j + 1) & mask)
		if (m->slots[j].key == key)
			return true;
	return false;
}

void i64map_set(struct i64map *m, struct i64_slot *slot, int64_t key, uint32_t value)
{
	if (slot->epoch != m->epoch)
		m->count++;
	*slot = (struct i64_slot){ key, m->epoch, value };
}

void i64map_clear(struct i64map *m)
{
	m->epoch++;
	m->count = 0;
}

void i64map_free(struct i64map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
