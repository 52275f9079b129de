/*
 * gentemplate.h: what the build-time generators (gen-man-fields,
 * gen-wire-py) share: a template read whole, and their output written as
 * that template with a generated part in place of one stretch of it.
 * Build machine, no privilege.
 */
#ifndef CROFT_GENTEMPLATE_H
#define CROFT_GENTEMPLATE_H

#include <stddef.h>
#include <stdio.h>

/*
 * Reads path whole into text[size] as a string, *ret_len its bytes; -1 when
 * it cannot be read or does not fit (said on stderr, naming path).
 */
int gen_template_read(const char *path, char *text, size_t size, size_t *ret_len);

/* Writes what takes the template's place; -1 (said on stderr) to give up. */
typedef int gen_put_fn(FILE *out);

/*
 * Writes path: head_len bytes of text, what put writes, then tail (a
 * string).  -1 when anything fails (said on stderr), with path removed
 * where it is a regular file.
 */
int gen_write_spliced(
	const char *path, const char *text, size_t head_len, gen_put_fn *put, const char *tail);

#endif
