/*
 * out.c: what croft stats and croft profile print besides their own
 * figures: the files read and what was skipped (table and --json), the
 * syscall ranking, number formats, and the exit status.  Runs as the invoking user, no privilege.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"

#define EXIT_DAMAGED 3

json_t *json_round(double value, int decimals)
{
	double scale = pow(10, decimals);

	return json_real(round(value * scale) / scale);
}

static int cmp_calls(const void *a, const void *b)
{
	const struct syscall_calls *x = a, *y = b;

	if (x->calls_x1e7 != y->calls_x1e7)
		return x->calls_x1e7 > y->calls_x1e7 ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct syscall_calls *syscalls_ranked(const struct track_join *j)
{
	size_t n = j->syscalls.count;
	struct syscall_calls *v = calloc(n + 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct syscall_calls){ strtab_str(&j->syscalls, (uint32_t)i, NULL),
			j->calls[i] };
	qsort(v, n, sizeof(*v), cmp_calls);
	return v;
}

uint64_t calls_rounded(u128 calls_x1e7)
{
	return (uint64_t)((calls_x1e7 + 5000000) / 10000000);
}

/* "first_ms", "last_ms" (unix ms), "first", "last" (format_time), the length */
json_t *json_time_span(uint64_t rows, int64_t first_ms, int64_t last_ms, const char *length_key,
	double length, int decimals)
{
	char first[40], last[40];

	if (!rows)
		return json_null();
	format_time(first_ms, first, sizeof(first));
	format_time(last_ms, last, sizeof(last));
	return json_pack("{s:I,s:I,s:s,s:s,s:o}", "first_ms", (json_int_t)first_ms, "last_ms",
		(json_int_t)last_ms, "first", first, "last", last, length_key,
		json_round(length, decimals));
}

json_t *report_json(const struct ds_files *files, const struct ds_report *rep)
{
	json_t *skipped = json_object(), *list = json_array();

	for (int k = 0; k < SKIP_KINDS; k++)
		json_object_set_new(
			skipped, ds_skip_kind_name(k), json_integer((json_int_t)rep->skipped[k]));
	for (size_t i = 0; i < rep->skips_count; i++) {
		const struct ds_skip *s = &rep->skips[i];
		json_t *e = json_object();

		/* one at a time: a path that is not UTF-8 leaves its key out, not the entry */
		json_object_set_new(e, "file", json_string(files->v[s->file].path));
		json_object_set_new(e, "kind", json_string(ds_skip_kind_name(s->kind)));
		json_object_set_new(
			e, "line", s->line ? json_integer((json_int_t)s->line) : json_null());
		json_object_set_new(e, "offset",
			s->kind == SKIP_CORRUPT_FRAME || s->kind == SKIP_TRUNCATED
				? json_integer((json_int_t)s->offset)
				: json_null());
		json_object_set_new(e, "reason", json_string(s->reason));
		json_array_append_new(list, e);
	}
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:o}", "files", (json_int_t)files->n,
		"bytes_read", (json_int_t)rep->bytes_read, "text_bytes",
		(json_int_t)rep->text_bytes, "rows_read", (json_int_t)rep->rows, "bad_lines",
		(json_int_t)(rep->skipped[SKIP_BAD_LINE] + rep->skipped[SKIP_LONG_LINE]), "skipped",
		skipped, "live_tail_bytes", (json_int_t)rep->live_tail_bytes, "skips", list);
}

void report_table(FILE *out, const struct ds_files *files, const struct ds_report *rep)
{
	char in[32], text[32];

	format_bytes((double)rep->bytes_read, in, sizeof(in));
	format_bytes((double)rep->text_bytes, text, sizeof(text));
	fprintf(out, "files        %zu (%s read, %s of JSON), %" PRIu64 " rows\n", files->n, in,
		text, rep->rows);
	uint64_t total = ds_report_skipped(rep);
	if (rep->live_tail_bytes)
		fprintf(out,
			"live file    its last line (%" PRIu64
			" bytes) still being written, not read\n",
			rep->live_tail_bytes);
	if (total == 0) {
		fprintf(out, "skipped      nothing\n");
		return;
	}
	fprintf(out, "skipped      %" PRIu64 ":", total);
	for (int k = 0; k < SKIP_KINDS; k++)
		if (rep->skipped[k])
			fprintf(out, " %s %" PRIu64, ds_skip_kind_name(k), rep->skipped[k]);
	fprintf(out, " (details on stderr)\n");
}

int json_print(json_t *root)
{
	int r = json_dumpf(
		root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));

	fputc('\n', stdout);
	json_decref(root);
	return r;
}

void format_bytes(double bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (fabs(bytes) >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", bytes);
	else
		snprintf(buf, size, "%.2f %s", bytes, units[u]);
}

/* 3 only for damage: an empty plain file loses nothing (the live file's
 * emptiness and its last line being appended are not even skips). */
int exit_status(const struct ds_report *rep)
{
	return ds_report_skipped(rep) > rep->skipped[SKIP_EMPTY_FILE] ? EXIT_DAMAGED : 0;
}
