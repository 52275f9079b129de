/*
 * fnv1a.h: FNV-1a (64-bit), the one hash croft uses to key a table or to
 * tell whether a text changed.  Not for anything an attacker must not
 * collide on purpose: a collision costs a longer chain or one missed
 * re-read, never a wrong row.
 */
#ifndef CROFT_FNV1A_H
#define CROFT_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_BASIS 0xcbf29ce484222325ull

/* FNV-1a of n bytes, going on from h (FNV1A_BASIS to begin). */
static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#endif
