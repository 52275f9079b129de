/*
 * rowdef.c: the row's table (rowdef.h) as data, the one walk that writes a
 * row from it, and the workload states' names.  Any process, no privilege.
 */
#include <errno.h>
#include <string.h>

#include "rowdef.h"

/* An object's fields, by pasting its type: 0 for the other types. */
#define FIRST_RT_OBJECT(id)       RF_FIRST_##id
#define FIRST_RT_OBJECT_ARRAY(id) RF_FIRST_##id
#define FIRST_RT_INT(id)          0
#define FIRST_RT_FLOAT(id)        0
#define FIRST_RT_STRING(id)       0
#define FIRST_RT_INT_ARRAY(id)    0
#define COUNT_RT_OBJECT(id)       ROW_COUNT(ROW_FIELDS_##id)
#define COUNT_RT_OBJECT_ARRAY(id) ROW_COUNT(ROW_FIELDS_##id)
#define COUNT_RT_INT(id)          0
#define COUNT_RT_FLOAT(id)        0
#define COUNT_RT_STRING(id)       0
#define COUNT_RT_INT_ARRAY(id)    0

#define FIELD_(object, id, name, type, omit)                                                       \
	[RF_##id] = { name, ",\"" name "\":", sizeof(name) + 3, type, omit, RF_##object,           \
		FIRST_##type(id), COUNT_##type(id) },
#define LIST_(object, id, name, type, omit) LIST_##type(id)
#define LIST_RT_OBJECT(id)                  ROW_FIELDS_##id(FIELD_)
#define LIST_RT_OBJECT_ARRAY(id)            ROW_FIELDS_##id(FIELD_)
#define LIST_RT_INT(id)
#define LIST_RT_FLOAT(id)
#define LIST_RT_STRING(id)
#define LIST_RT_INT_ARRAY(id)

/* The top level's fields, then each object's. */
/* clang-format off */
const struct row_field_def row_fields[RF_COUNT] = {
	ROW_FIELDS_ROOT(FIELD_)
	ROW_FIELDS_ROOT(LIST_)
};
/* clang-format on */

const struct row_field_def row_root = { "", "", 0, RT_OBJECT, RO_NEVER, RF_ROOT, 0,
	ROW_COUNT(ROW_FIELDS_ROOT) };

static void write_fields(
	const struct row_sink *k, const struct row_field_def *object, size_t index);

static void write_bits(const struct row_sink *k, const struct row_value *v)
{
	bool first = true;

	k->put(k->arg, "[", 1);
	for (size_t i = 0; i < v->bits_count; i++) {
		if (!((v->bits[i / 64] >> (i % 64)) & 1))
			continue;
		if (!first)
			k->put(k->arg, ",", 1);
		k->put_int(k->arg, i);
		first = false;
	}
	k->put(k->arg, "]", 1);
}

static void write_objects(const struct row_sink *k, const struct row_field_def *d, size_t count)
{
	k->put(k->arg, "[", 1);
	for (size_t i = 0; i < count; i++) {
		k->put(k->arg, i ? ",{" : "{", i ? 2 : 1);
		write_fields(k, d, i);
		k->put(k->arg, "}", 1);
	}
	k->put(k->arg, "]", 1);
}

static void write_value(
	const struct row_sink *k, enum row_field f, size_t index, const struct row_value *v)
{
	const struct row_field_def *d = &row_fields[f];

	switch (d->type) {
	case RT_INT:
		k->put_int(k->arg, v->u);
		break;
	case RT_FLOAT:
		k->put_float(k->arg, v->f);
		break;
	case RT_STRING:
		k->put_string(k->arg, f, v->str, v->str_len);
		break;
	case RT_OBJECT:
		k->put(k->arg, "{", 1);
		write_fields(k, d, index);
		k->put(k->arg, "}", 1);
		break;
	case RT_INT_ARRAY:
		write_bits(k, v);
		break;
	case RT_OBJECT_ARRAY:
		write_objects(k, d, (size_t)v->u);
		break;
	}
}

/* The fields of object that this row has, the first without its ','. */
static void write_fields(const struct row_sink *k, const struct row_field_def *object, size_t index)
{
	bool first = true;

	for (unsigned i = 0; i < object->fields_count; i++) {
		enum row_field f = object->first_field + i;
		const struct row_field_def *d = &row_fields[f];
		struct row_value v;

		if (!k->get(k->arg, f, index, &v))
			continue;
		k->put(k->arg, d->key + first, d->key_len - first);
		first = false;
		write_value(k, f, index, &v);
	}
}

void row_write(const struct row_sink *sink)
{
	sink->put(sink->arg, "{", 1);
	write_fields(sink, &row_root, 0);
	sink->put(sink->arg, "}\n", 2);
}

const enum workload_state workload_report_order[WL_COUNT] = { WL_GPU_ONSET, WL_GPU_HELD,
	WL_NO_GPU };

const char *workload_name(enum workload_state w)
{
	static const char *const names[WL_COUNT] = { "no-gpu", "gpu-onset", "gpu-held" };

	return w < WL_COUNT ? names[w] : "?";
}

int workload_parse(const char *s, size_t len, enum workload_state *ret)
{
	for (int w = 0; w < WL_COUNT; w++) {
		const char *name = workload_name(w);

		if (strlen(name) == len && !memcmp(name, s, len)) {
			*ret = w;
			return 0;
		}
	}
	return -EINVAL;
}
