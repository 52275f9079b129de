/*
 * rowfields.h: the walk of the row's table (contract/rowdef.h) over parsed
 * rows, so that a field some program's row_sink.get forgot fails a test.
 * Test processes only.
 */
#ifndef CROFT_ROWFIELDS_H
#define CROFT_ROWFIELDS_H

#include <jansson.h>
#include <stdbool.h>

#include "rowdef.h"

/* Adds to has[] the fields row has (an array of objects': in any entry). */
void rowfields_in(json_t *row, bool has[RF_COUNT]);
/* Fails the test, naming each, for the fields has[] lacks: every field, or
 * (never_only) those in every row written now (RO_NEVER, RO_OLDER, in an
 * object that is too). */
void rowfields_require(const bool has[RF_COUNT], bool never_only, const char *what);

#endif
