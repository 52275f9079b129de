/*
 * hash.h: the sampler's one hash table, chained: an entry embeds a struct
 * hash_link, the table is its owner's array of buckets; keyed by FNV-1a
 * (common/fnv1a.h).
 * Library of croft-sampler, croft user.
 */
#ifndef CROFT_SAMPLER_HASH_H
#define CROFT_SAMPLER_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "fnv1a.h"

struct hash_link {
	struct hash_link *next; /* the bucket's chain, newest first */
	uint64_t hash;
};

/* The bucket of hash in an array of buckets (an array, not a pointer). */
#define HASH_BUCKET(buckets, hash) (&(buckets)[(hash) % (sizeof(buckets) / sizeof((buckets)[0]))])
/* The entry of type holding link l as member. */
#define hash_entry(l, type, member) ((type *)(void *)((char *)(l)-offsetof(type, member)))

/* From l on in its chain, the first link of that hash; NULL: none. */
static inline struct hash_link *hash_match(struct hash_link *l, uint64_t hash)
{
	while (l && l->hash != hash)
		l = l->next;
	return l;
}

static inline void hash_add(struct hash_link **bucket, struct hash_link *l, uint64_t hash)
{
	l->hash = hash;
	l->next = *bucket;
	*bucket = l;
}

/* l leaves its chain, which bucket heads. */
static inline void hash_del(struct hash_link **bucket, struct hash_link *l)
{
	while (*bucket != l)
		bucket = &(*bucket)->next;
	*bucket = l->next;
}

#endif
