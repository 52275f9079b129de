/*
 * gentemplate.h: what the build-time generators (gen-man-fields,
 * gen-wire-py) share: a template copied to stdout (meson captures it, and
 * writes the output only when the generator succeeds) with a generated part
 * in place of one stretch of it.  Build machine, no privilege.
 */
#ifndef CROFT_GENTEMPLATE_H
#define CROFT_GENTEMPLATE_H

#include <stdbool.h>
#include <stdio.h>

/* Writes what takes the stretch's place; -1 (said on stderr) to give up. */
typedef int gen_put_fn(FILE *out);
/* Whether a line after the marker is still in the stretch. */
typedef bool gen_stretch_fn(const char *line);

/*
 * Copies the template at path to stdout, with what put writes in place of
 * the line marker and the lines after it that in_stretch takes (NULL: the
 * marker alone).  0, or 1 when anything fails (said on stderr).
 */
int gen_splice(const char *path, const char *marker, gen_put_fn *put, gen_stretch_fn *in_stretch);

#endif
