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

	if (!gmtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) != 16)
		return -ERANGE;
	n = snprintf(buf, len, SEG_PREFIX "%s%s", stamp, seg_suffix[kind]);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int parse_digits(const char *s, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* Strict: exactly the names seg_format makes, nothing else in the dir. */
int seg_parse(const char *name, uint64_t *ret_start_s, enum seg_kind *ret_kind)
{
	const char *p = name + strlen(SEG_PREFIX);
	struct tm tm = { 0 };
	int fields[6];
	static const int widths[6] = { 4, 2, 2, 2, 2, 2 };
	static const int offsets[6] = { 0, 4, 6, 9, 11, 13 };
	time_t t;

	if (strncmp(name, SEG_PREFIX, strlen(SEG_PREFIX)) || strlen(p) < 16 || p[8] != 'T' ||
		p[15] != 'Z')
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		if (parse_digits(p + offsets[i], widths[i], &fields[i]) < 0)
			return -EINVAL;
	for (enum seg_kind k = SEG_JSONL; k <= SEG_ZST_TMP; k++) {
		if (strcmp(p + 16, seg_suffix[k]))
			continue;
		tm.tm_year = fields[0] - 1900;
		tm.tm_mon = fields[1] - 1;
		tm.tm_mday = fields[2];
		tm.tm_hour = fields[3];
		tm.tm_min = fields[4];
		tm.tm_sec = fields[5];
		if (fields[1] < 1 || fields[1] > 12 || fields[2] < 1 || fields[2] > 31 ||
			fields[3] > 23 || fields[4] > 59 || fields[5] > 60)
			return -EINVAL;
		t = timegm(&tm);
		if (t < 0)
			return -EINVAL;
		*ret_start_s = (uint64_t)t;
		*ret_kind = k;
		return 0;
	}
	return -EINVAL;
}
