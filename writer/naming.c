/*
 * naming.c: segment names, croft-dataset-<UTC start>.jsonl[.zst[.tmp]], and
 * the UTC boundaries of rotate_interval they start on.  Boundaries are
 * multiples of the interval since the epoch, so 1h falls on the UTC hour
 * and a test's 2s interval aligns the same way.  Writer process, croft user.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "writer.h"

#define SEG_STAMP_FMT "%Y%m%dT%H%M%SZ" /* UTC, 16 bytes */

static const char *const seg_suffix[] = {
	[SEG_JSONL] = ".jsonl",
	[SEG_ZST] = ".jsonl.zst",
	[SEG_ZST_TMP] = ".jsonl.zst.tmp",
};

uint64_t seg_boundary_floor_ms(uint64_t unix_ms, uint64_t interval_ms)
{
	return interval_ms ? unix_ms - unix_ms % interval_ms : unix_ms;
}

uint64_t seg_next_boundary_ms(uint64_t unix_ms, uint64_t interval_ms)
{
	return seg_boundary_floor_ms(unix_ms, interval_ms) + interval_ms;
}

/* Begun within the boundary's second: named for the boundary; otherwise for
 * the second it began (a start-up or a size rotation mid-interval). */
uint64_t seg_start_s(uint64_t unix_ms, uint64_t interval_ms)
{
	uint64_t boundary_ms = seg_boundary_floor_ms(unix_ms, interval_ms);

	if (unix_ms - boundary_ms < 1000)
		return boundary_ms / 1000;
	return unix_ms / 1000;
}

int seg_format(char *buf, size_t len, uint64_t start_s, enum seg_kind kind)
{
	time_t t = (time_t)start_s;
	struct tm tm;
	char stamp[32];
	int n;

	if (!gmtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), SEG_STAMP_FMT, &tm) != 16)
		return -ERANGE;
	n = snprintf(buf, len, SEG_PREFIX "%s%s", stamp, seg_suffix[kind]);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Strict: exactly the names seg_format makes (one is made again from what was
 * read and must be the same), nothing else in the dir. */
int seg_parse(const char *name, uint64_t *ret_start_s, enum seg_kind *ret_kind)
{
	size_t prefix_len = strlen(SEG_PREFIX);
	char again[SEG_NAME_MAX];
	struct tm tm = { 0 };
	const char *rest;
	time_t t;

	if (strncmp(name, SEG_PREFIX, prefix_len) ||
		!(rest = strptime(name + prefix_len, SEG_STAMP_FMT, &tm)) || (t = timegm(&tm)) < 0)
		return -EINVAL;
	for (enum seg_kind k = SEG_JSONL; k <= SEG_ZST_TMP; k++) {
		if (strcmp(rest, seg_suffix[k]))
			continue;
		if (seg_format(again, sizeof(again), (uint64_t)t, k) < 0 || strcmp(again, name))
			return -EINVAL;
		*ret_start_s = (uint64_t)t;
		*ret_kind = k;
		return 0;
	}
	return -EINVAL;
}
