/*
 * skips.c: the skip report every worker adds to: counts per kind and the
 * first messages of each file, under one lock.  croft stats/profile worker
 * threads, invoking user, no privilege.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

void ds_report_init(struct ds_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	pthread_mutex_init(&rep->lock, NULL);
}

void ds_report_free(struct ds_report *rep)
{
	for (size_t i = 0; i < rep->skips_count; i++)
		free(rep->skips[i].reason);
	free(rep->skips);
	pthread_mutex_destroy(&rep->lock);
}

uint64_t ds_report_skipped(const struct ds_report *rep)
{
	uint64_t n = 0;

	for (int k = 0; k < SKIP_KINDS; k++)
		n += rep->skipped[k];
	return n;
}

const char *ds_skip_kind_name(enum ds_skip_kind kind)
{
	static const char *const names[SKIP_KINDS] = {
		"bad line",
		"line too long",
		"corrupt frame",
		"truncated",
		"empty file",
		"unreadable",
	};

	return kind < SKIP_KINDS ? names[kind] : "?";
}

static int cmp_skip(const void *a, const void *b)
{
	const struct ds_skip *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return strcmp(x->reason, y->reason);
}

void ds_report_sort(struct ds_report *rep)
{
	if (rep->skips_count)
		qsort(rep->skips, rep->skips_count, sizeof(*rep->skips), cmp_skip);
}

/* Called by file readers; keeps at most DS_SKIPS_PER_FILE messages per file. */
void ds_report_skip(struct ds_report *rep, uint32_t file, uint64_t *kept_in_file,
	enum ds_skip_kind kind, uint64_t line, uint64_t offset, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	pthread_mutex_lock(&rep->lock);
	rep->skipped[kind]++;
	if (*kept_in_file >= DS_SKIPS_PER_FILE)
		goto out;
	if (!VEC_ROOM(rep->skips, rep->skips_cap, rep->skips_count))
		goto out;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	char *reason = strdup(text);
	if (!reason)
		goto out;
	rep->skips[rep->skips_count++] = (struct ds_skip){ file, kind, line, offset, reason };
	(*kept_in_file)++;
out:
	pthread_mutex_unlock(&rep->lock);
}
