/*
 * termtext.c: strings of a dataset (anyone's: a cwd, a container id, a
 * file name) as croft stats and croft profile print them on a terminal,
 * unable to drive it.  Invoking user, no privilege.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* Whether the character at s (n bytes; 0: not UTF-8) is printed as \xNN
 * bytes: C0 controls, DEL, C1 controls (U+0080..U+009F, which some
 * terminals obey) and invalid UTF-8. */
static bool escaped_char(const unsigned char *s, size_t n)
{
	return n == 0 || (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) ||
	       (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

void put_text(FILE *f, const char *s, int width, int max_cols)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t left = strlen(s);
	int cols = 0;

	while (left) {
		size_t n = u[0] >= 0x80 ? utf8_seq(u, left) : 1;
		size_t bytes = n ? n : 1;
		bool esc = escaped_char(u, n);
		int w = esc ? 4 * (int)bytes : 1;

		if (max_cols > 0 && cols + w > max_cols)
			break;
		for (size_t i = 0; esc && i < bytes; i++)
			fprintf(f, "\\x%02x", u[i]);
		if (!esc)
			fwrite(u, 1, bytes, f);
		cols += w;
		u += bytes;
		left -= bytes;
	}
	for (; cols < width; cols++)
		fputc(' ', f);
}
