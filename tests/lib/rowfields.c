/*
 * rowfields.c: which of the table's fields a parsed row has, and the check
 * that the ones a row must have are there (rowfields.h).  Test processes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "rowfields.h"

static bool object_has(json_t *object, const char *name)
{
	return json_is_object(object) && json_object_get(object, name);
}

static bool field_in(json_t *row, enum row_field f)
{
	enum row_field object = row_fields[f].object;
	json_t *parent, *entry;
	size_t i;

	if (object == RF_ROOT)
		return object_has(row, row_fields[f].name);
	ck_assert_int_eq(row_fields[object].object, RF_ROOT); /* objects nest one deep */
	parent = json_object_get(row, row_fields[object].name);
	if (row_fields[object].type == RT_OBJECT)
		return object_has(parent, row_fields[f].name);
	json_array_foreach(parent, i, entry)
	{
		if (object_has(entry, row_fields[f].name))
			return true;
	}
	return false;
}

void rowfields_in(json_t *row, bool has[RF_COUNT])
{
	for (int f = 0; f < RF_COUNT; f++)
		has[f] = has[f] || field_in(row, f);
}

/* In every row written now, and so is the object it is in. */
static bool in_every_row(enum row_field f)
{
	const struct row_field_def *d = &row_fields[f];

	return (d->omit == RO_NEVER || d->omit == RO_OLDER) &&
	       (d->object == RF_ROOT || in_every_row(d->object));
}

void rowfields_require(const bool has[RF_COUNT], bool never_only, const char *what)
{
	char missing[1024] = "";
	size_t used = 0;

	for (int f = 0; f < RF_COUNT; f++) {
		const struct row_field_def *d = &row_fields[f];
		bool wanted = !never_only || in_every_row(f);

		if (wanted && !has[f] && used < sizeof(missing))
			used += (size_t)snprintf(missing + used, sizeof(missing) - used, " %s%s%s",
				d->object == RF_ROOT ? "" : row_fields[d->object].name,
				d->object == RF_ROOT ? "" : ".", d->name);
	}
	ck_assert_msg(!missing[0], "%s lacks%s", what, missing);
}
