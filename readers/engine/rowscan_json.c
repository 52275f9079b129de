/*
 * rowscan_json.c: the reference way from a dataset line to a struct row,
 * through jansson: every line the fast scanner (rowscan.c) declines, and
 * the oracle it is tested against.  croft stats/profile worker threads,
 * invoking user, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "engine.h"

/* The one conversion to 1e-4 units both paths agree on. */
static bool json_fixed(json_t *v, int64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i > FIXED_ABS_MAX || i < -FIXED_ABS_MAX)
			return false;
		*ret = (int64_t)i * FIXED_SCALE;
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v) * FIXED_SCALE;
		if (!isfinite(d) || fabs(d) >= (double)FIXED_ABS_MAX * FIXED_SCALE)
			return false;
		*ret = llround(d);
		return true;
	}
	return false;
}

/* Field f's value in the tree: under its object, where that is one. */
static json_t *json_field(json_t *root, enum row_field f)
{
	enum row_field object = row_fields[f].object;
	json_t *in = object == RF_ROOT ? root : json_object_get(root, row_fields[object].name);

	return json_object_get(in, row_fields[f].name);
}

/* A string or figure the row keeps, where it has the type the table says. */
static void json_kept(json_t *root, enum row_field f, struct row *row)
{
	struct strv *str = row_str_slot(row, f);
	uint32_t bit = 0;
	int64_t *num = str ? NULL : row_num_slot(row, f, &bit);
	json_t *v;

	if (!str && !num)
		return;
	v = json_field(root, f);
	if (str && json_is_string(v)) {
		str->ptr = json_string_value(v);
		str->len = (uint32_t)json_string_length(v);
	} else if (num && row_fields[f].type == RT_INT && json_is_integer(v)) {
		*num = json_integer_value(v);
		row->has |= bit;
	} else if (num && row_fields[f].type == RT_FLOAT && json_fixed(v, num)) {
		row->has |= bit;
	}
}

static void row_from_syscalls(json_t *arr, struct row *row)
{
	size_t i;
	json_t *el;

	json_array_foreach(arr, i, el)
	{
		struct row_syscall sc;
		json_t *name = json_object_get(el, row_fields[RF_SYSCALL_NAME].name);
		json_t *rate = json_object_get(el, row_fields[RF_SYSCALL_RATE_PER_SEC].name);

		/* An entry needs a string name and a rate in range. */
		if (!json_is_string(name) || !json_fixed(rate, &sc.rate_x1e4))
			continue;
		if (row->syscalls_count >= ROW_SYSCALLS_MAX)
			break;
		sc.name.ptr = json_string_value(name);
		sc.name.len = (uint32_t)json_string_length(name);
		row->syscalls[row->syscalls_count++] = sc;
	}
}

/* Integers only, as the scanner; other entries are no GPU. */
static void row_from_gpus(
	json_t *arr, uint64_t bits[ROW_GPU_WORDS], uint32_t has_bit, struct row *row)
{
	size_t i;
	json_t *el;

	if (!json_is_array(arr))
		return;
	row->has |= has_bit;
	json_array_foreach(arr, i, el)
	{
		if (json_is_integer(el))
			row_gpu_add(bits, json_integer_value(el));
	}
}

static int row_from_json(json_t *root, struct row *row, char *err, size_t err_size)
{
	json_t *ms = json_field(root, RF_UNIX_MS), *tgid = json_field(root, RF_TGID);
	json_t *wl = json_field(root, RF_WORKLOAD);

	row_clear(row); /* no workload: no-gpu (rowtable.h) */
	if (!json_is_object(root) || !json_is_integer(ms) || json_integer_value(ms) < 0 ||
		!json_is_integer(tgid) ||
		(wl && (!json_is_string(wl) ||
			       workload_parse(json_string_value(wl), json_string_length(wl),
				       &row->workload) < 0))) {
		snprintf(err, err_size,
			"not a croft row (needs integer unix_ms, not before the epoch, and tgid "
			"and a known "
			"workload)");
		return -EINVAL;
	}
	for (int f = 0; f < RF_COUNT; f++)
		json_kept(root, f, row);
	row_from_gpus(json_field(root, RF_GPUS), row->gpus, HAS_GPUS, row);
	row_from_gpus(json_field(root, RF_GPUS_ALLOCATED), row->gpus_allocated, HAS_ALLOCATED, row);
	row_from_syscalls(json_field(root, RF_SYSCALLS), row); /* none unless an array */
	return 0;
}

int rowscan_jansson(const char *line, size_t len, struct row *row, struct json_t **ret_tree,
	char *err, size_t err_size)
{
	json_error_t jerr;
	json_t *root = json_loadb(line, len, 0, &jerr);

	*ret_tree = NULL;
	if (!root) {
		/* jansson quotes the token it stopped at ("... near 'root'"): a
		 * file the reader did not mean to read must not reach a report */
		const char *near = strstr(jerr.text, " near '");
		int text_len = near ? (int)(near - jerr.text) : (int)strlen(jerr.text);

		snprintf(err, err_size, "not JSON: %.*s (column %d)", text_len, jerr.text,
			jerr.column);
		return -EINVAL;
	}
	if (row_from_json(root, row, err, err_size) < 0) {
		json_decref(root);
		return -EINVAL;
	}
	*ret_tree = root;
	return 0;
}
