/*
 * lines.c: checks that a batch payload is exactly its announced number of
 * whole JSON lines, so the writer never appends a partial line.  Writer
 * process, croft user.
 */
#include <errno.h>
#include <string.h>

#include "writer.h"

int lines_check(const uint8_t *data, size_t len, uint32_t rows)
{
	const uint8_t *p = data, *end = data + len;
	uint64_t count = 0;

	if (len && data[len - 1] != '\n')
		return -EBADMSG;
	if (memchr(data, '\0', len))
		return -EBADMSG;
	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break;
		if (nl == p)
			return -EBADMSG; /* an empty line is no row */
		count++;
		p = nl + 1;
	}
	return count == rows ? 0 : -EBADMSG;
}
