/*
 * rowcheck.h: the readers' oracle, shared by the rowscan unit test and the
 * rowscan fuzz harness: one line through the fast scanner and through
 * jansson, compared field by field.  Test processes, no privilege.
 */
#ifndef CROFT_ROWCHECK_H
#define CROFT_ROWCHECK_H

#include <stddef.h>

#include "engine.h"

/* The rows of the last rowcheck_line() (valid when it returned 1). */
extern struct row rowcheck_fast, rowcheck_ref;

/*
 * line (no '\n' in it) through both: 1 the scanner took it and jansson gives
 * the same row, 0 the scanner declined (or the line is over 64 KiB),
 * -1 they disagree, with why.
 */
int rowcheck_line(const char *text, size_t len, char *why, size_t why_size);

#endif
