/*
 * rowdoc.h: the row fields' descriptions (rowtable.h's last column), for
 * the generators of croft-dataset(5)'s FIELDS and the JSON Schema.  Build
 * machine, no privilege.
 */
#ifndef CROFT_ROWDOC_H
#define CROFT_ROWDOC_H

#include "rowdef.h"

/* scdoc text, paragraphs split by '\n'; NULL: an object, or described with the field before */
extern const char *const row_docs[RF_COUNT];
/* The field whose description f shares (f itself when it has its own). */
enum row_field row_doc_leader(enum row_field f);

#endif
