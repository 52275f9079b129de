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

#include <jansson.h>

#include "rowscan.h"

static struct strv json_strv(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	struct strv sv = { NULL, 0 };

	if (json_is_string(v)) {
		sv.ptr = json_string_value(v);
		sv.len = (uint32_t)json_string_length(v);
	}
	return sv;
}

/* The one conversion to 1e-4 units both paths agree on. */
static bool json_e4(json_t *v, int64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i > E4_ABS_MAX || i < -E4_ABS_MAX)
			return false;
		*ret = (int64_t)i * E4;
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v) * E4;
		if (!isfinite(d) || fabs(d) >= (double)E4_ABS_MAX * E4)
			return false;
		*ret = llround(d);
		return true;
	}
	return false;
}

static void json_field_e4(json_t *obj, const char *key, int64_t *ret, uint32_t *has, uint32_t bit)
{
	if (json_e4(json_object_get(obj, key), ret))
		*has |= bit;
}

static void json_field_int(json_t *obj, const char *key, int64_t *ret, uint32_t *has, uint32_t bit)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		*has |= bit;
	}
}

static void row_from_syscalls(json_t *arr, struct row *row)
{
	size_t i;
	json_t *el;

	json_array_foreach(arr, i, el)
	{
		struct row_syscall sc;
		json_t *name = json_object_get(el, "name");

		/* An entry needs a string name and a rate in range. */
		if (!json_is_string(name) ||
			!json_e4(json_object_get(el, "rate_per_sec"), &sc.rate_e4))
			continue;
		if (row->syscalls_count >= ROW_SYSCALLS_MAX)
			break;
		sc.name.ptr = json_string_value(name);
		sc.name.len = (uint32_t)json_string_length(name);
		row->syscalls[row->syscalls_count++] = sc;
	}
}

/* Integers only, as the scanner; other entries are no GPU. */
static void row_from_gpus(json_t *arr, struct row *row)
{
	size_t i;
	json_t *el;

	row->has |= HAS_GPUS;
	json_array_foreach(arr, i, el)
	{
		if (json_is_integer(el))
			row_gpu_add(row, json_integer_value(el));
	}
}

static int row_from_json(json_t *root, struct row *row, char *err, size_t err_size)
{
	json_t *ms = json_object_get(root, "unix_ms"), *tgid = json_object_get(root, "tgid");
	json_t *wl = json_object_get(root, "workload");
	json_t *proc = json_object_get(root, "process"), *usage = json_object_get(root, "usage");

	row_clear(row);
	if (!json_is_object(root) || !json_is_integer(ms) || !json_is_integer(tgid) ||
		!json_is_string(wl) ||
		workload_parse(json_string_value(wl), json_string_length(wl), &row->workload) < 0) {
		snprintf(err, err_size,
			"not a croft row (needs integer unix_ms and tgid and a known workload)");
		return -EINVAL;
	}
	row->unix_ms = json_integer_value(ms);
	row->tgid = json_integer_value(tgid);
	if (json_is_object(proc)) {
		row->comm = json_strv(proc, "comm");
		row->exe = json_strv(proc, "exe");
		row->container_id = json_strv(proc, "container_id");
		row->cwd = json_strv(proc, "cwd");
		row->framework = json_strv(proc, "framework");
	}
	row->label = json_strv(root, "label");
	json_field_int(root, "ioctl_count", &row->ioctl_count, &row->has, HAS_IOCTL);
	if (json_is_object(usage)) {
		json_field_e4(usage, "cpu_cores", &row->cpu_e4, &row->has, HAS_CPU);
		json_field_int(usage, "rss_bytes", &row->rss_bytes, &row->has, HAS_RSS);
		json_field_int(usage, "threads", &row->threads, &row->has, HAS_THREADS);
		json_field_e4(usage, "read_bytes_s", &row->read_e4, &row->has, HAS_READ);
		json_field_e4(usage, "write_bytes_s", &row->write_e4, &row->has, HAS_WRITE);
		json_field_e4(usage, "network_rx_bytes_s", &row->rx_e4, &row->has, HAS_RX);
		json_field_e4(usage, "network_tx_bytes_s", &row->tx_e4, &row->has, HAS_TX);
	}
	if (json_is_array(json_object_get(root, "gpus")))
		row_from_gpus(json_object_get(root, "gpus"), row);
	if (json_is_array(json_object_get(root, "syscalls")))
		row_from_syscalls(json_object_get(root, "syscalls"), row);
	return 0;
}

int rowscan_jansson(const char *line, size_t len, struct row *row, struct json_t **ret_tree,
	char *err, size_t err_size)
{
	json_error_t jerr;
	json_t *root = json_loadb(line, len, 0, &jerr);

	*ret_tree = NULL;
	if (!root) {
		snprintf(err, err_size, "not JSON: %s (column %d)", jerr.text, jerr.column);
		return -EINVAL;
	}
	if (row_from_json(root, row, err, err_size) < 0) {
		json_decref(root);
		return -EINVAL;
	}
	*ret_tree = root;
	return 0;
}
