/*
 * vec.c: the readers' growing arrays (engine.h).  croft stats/profile,
 * invoking user, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

bool vec_grow(void **v, size_t *cap, size_t elem, size_t i, bool zero)
{
	size_t n = *cap ? *cap : (VEC_FIRST_BYTES + elem - 1) / elem;
	char *p;

	while (n <= i)
		n *= 2;
	p = realloc(*v, n * elem);
	if (!p)
		return false;
	if (zero)
		memset(p + *cap * elem, 0, (n - *cap) * elem);
	*v = p;
	*cap = n;
	return true;
}
