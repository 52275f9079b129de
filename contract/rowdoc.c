/*
 * rowdoc.c: each row field's description, from the row table (rowtable.h),
 * for the build's generators only (gen-schema, gen-man-fields): the
 * programs that write rows carry no prose.  Build machine, no privilege.
 */
#include "rowdoc.h"

#define DOC_(object, id, name, type, omit, left_by, description) [RF_##id] = description,
const char *const row_docs[RF_COUNT] = { ROW_FIELDS_ALL(DOC_) };

enum row_field row_doc_leader(enum row_field f)
{
	while (!row_docs[f] && f > 0 && row_fields[f].type != RT_OBJECT &&
		row_fields[f - 1].object == row_fields[f].object)
		f--;
	return f;
}
