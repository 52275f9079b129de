/*
 * rowdef.c: the row's table (rowdef.h) as data, the one walk that writes a
 * row from it, and the workload states' names.  Any process, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "rowdef.h"

/* An object's fields, by pasting its type: 0 for the other types. */
#define FIRST_RT_OBJECT(id)       RF_FIRST_##id
#define FIRST_RT_OBJECT_ARRAY(id) RF_FIRST_##id
#define FIRST_RT_INT(id)          0
#define FIRST_RT_FLOAT(id)        0
#define FIRST_RT_STRING(id)       0
#define FIRST_RT_INT_ARRAY(id)    0
#define FIRST_RT_STRING_ARRAY(id) 0
#define COUNT_RT_OBJECT(id)       ROW_COUNT(ROW_FIELDS_##id)
#define COUNT_RT_OBJECT_ARRAY(id) ROW_COUNT(ROW_FIELDS_##id)
#define COUNT_RT_INT(id)          0
#define COUNT_RT_FLOAT(id)        0
#define COUNT_RT_STRING(id)       0
#define COUNT_RT_INT_ARRAY(id)    0
#define COUNT_RT_STRING_ARRAY(id) 0

#define FIELD_(object, id, name, type, omit)                                                       \
	[RF_##id] = { name, ",\"" name "\":", sizeof(name) + 3, type, omit, RF_##object,           \
		FIRST_##type(id), COUNT_##type(id) },
const struct row_field_def row_fields[RF_COUNT] = { ROW_FIELDS_ALL(FIELD_) };
_Static_assert(ROW_COUNT(ROW_FIELDS_ALL) == RF_COUNT, "a list is missing from ROW_FIELDS_ALL");

const struct row_field_def row_root = { "", "", 0, RT_OBJECT, RO_NEVER, RF_ROOT, 0,
	ROW_COUNT(ROW_FIELDS_ROOT) };

static void write_fields(
	const struct row_sink *k, const struct row_field_def *object, size_t index);

static void write_bits(const struct row_sink *k, const struct row_value *v)
{
	bool first = true;

	k->put(k->arg, "[", 1);
	for (size_t w = 0; w < v->bits_count / 64; w++)
		for (uint64_t bits = v->bits[w]; bits; bits &= bits - 1) {
			if (!first)
				k->put(k->arg, ",", 1);
			k->put_int(k->arg, w * 64 + (unsigned)__builtin_ctzll(bits));
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

static void write_strings(const struct row_sink *k, enum row_field f, const struct row_value *v)
{
	k->put(k->arg, "[", 1);
	for (size_t i = 0; i < v->strs_count; i++) {
		if (i)
			k->put(k->arg, ",", 1);
		k->put_string(k->arg, f, v->strs[i], strlen(v->strs[i]));
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
	case RT_STRING_ARRAY:
		write_strings(k, f, v);
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

		/* a figure that is not finite is not known: left out, as JSON has no
		 * NaN or infinity and a zero would be invented */
		if (!k->get(k->arg, f, index, &v) || (d->type == RT_FLOAT && !isfinite(v.f)))
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

static const struct {
	char name[12];
	uint8_t len;
} workloads[WL_COUNT] = {
	[WL_NO_GPU] = { "no-gpu", 6 },
	[WL_GPU_ONSET] = { "gpu-onset", 9 },
	[WL_GPU_HELD] = { "gpu-held", 8 },
};

const char *workload_name(enum workload_state w)
{
	return w < WL_COUNT ? workloads[w].name : "?";
}

int workload_parse(const char *s, size_t len, enum workload_state *ret)
{
	for (int w = 0; w < WL_COUNT; w++)
		if (workloads[w].len == len && !memcmp(workloads[w].name, s, len)) {
			*ret = w;
			return 0;
		}
	return -EINVAL;
}
