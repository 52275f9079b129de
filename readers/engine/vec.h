/*
 * vec.h: the readers' growing arrays (vec.c).  *v holds *cap elements of
 * elem bytes; vec_room makes it hold index i, doubling from
 * VEC_FIRST_BYTES; with zero, the new part zeroed (an array per id).
 * False when out of memory.
 */
#ifndef CROFT_VEC_H
#define CROFT_VEC_H

#include <stdbool.h>
#include <stddef.h>

#define VEC_FIRST_BYTES 4096

bool vec_grow(void **v, size_t *cap, size_t elem, size_t i, bool zero);

/* Per row: the array nearly always holds i already. */
static inline bool vec_room(void **v, size_t *cap, size_t elem, size_t i, bool zero)
{
	return i < *cap || vec_grow(v, cap, elem, i, zero);
}

/* Room for the element at i of an array filled in order; of one per id, zeroed. */
#define VEC_ROOM(v, cap, i)    vec_room((void **)&(v), &(cap), sizeof(*(v)), (i), false)
#define VEC_ID_ROOM(v, cap, i) vec_room((void **)&(v), &(cap), sizeof(*(v)), (i), true)

#endif
