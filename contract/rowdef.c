/*
 * rowdef.c: the row's table (rowdef.h) as data, the one walk that writes a
 * row from it (numbers, and untrusted strings escaped with a "<name>_b64"
 * copy of bytes that are not UTF-8, so every row is one valid JSON line)
 * and the workload states' names.  Any process, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rowdef.h"

#define FIELD_(object, id, name, type, omit, left_by, ...)                                         \
	[RF_##id] = { name, ROW_PATH_##object name, ",\"" name "\":", sizeof(name) + 3, type,      \
		omit, left_by, RF_##object },
const struct row_field_def row_fields[RF_COUNT] = { ROW_FIELDS_ALL(FIELD_) };

const struct row_object row_objects[RF_COUNT + 1] = {
	[RF_ROOT] = { RF_UNIX_MS, ROW_COUNT(ROW_FIELDS_ROOT) },
	[RF_PROCESS] = { RF_START_MS, ROW_COUNT(ROW_FIELDS_PROCESS) },
	[RF_USAGE] = { RF_CPU_CORES, ROW_COUNT(ROW_FIELDS_USAGE) },
	[RF_CGROUP_USAGE] = { RF_CG_CPU_CORES, ROW_COUNT(ROW_FIELDS_CGROUP_USAGE) },
	[RF_SYSCALLS] = { RF_SYSCALL_NAME, ROW_COUNT(ROW_FIELDS_SYSCALLS) },
};

static void put(const struct row_sink *k, const char *s)
{
	k->put(k->arg, s, strlen(s));
}

/* v's digits, ending at end; returns where they start. */
static char *digits_of(uint64_t v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static void put_int(const struct row_sink *k, uint64_t v)
{
	char text[24], *start = digits_of(v, text + sizeof(text));

	k->put(k->arg, start, (size_t)(text + sizeof(text) - start));
}

/*
 * "%.4f" without printf where its rounding of v's exact value cannot differ
 * from rounding v * 1e4 (off by at most half its last bit): not near a
 * half, not negative, not huge.  Rows are mostly such figures.
 */
static bool put_float_fast(const struct row_sink *k, double v)
{
	double scaled = v * 1e4, below = floor(scaled);
	char text[32], *end = text + sizeof(text), *start;
	uint64_t units;
	unsigned decimals = 4;

	if (!(v >= 0.0) || scaled >= 0x1p52 || fabs(scaled - below - 0.5) <= scaled * 0x1p-51)
		return false;
	units = (uint64_t)below + (scaled - below > 0.5);
	while (decimals > 1 && units % 10 == 0) /* zeros trimmed, one kept */
		units /= 10, decimals--;
	start = digits_of(units, end);
	while (end - start <= (long)decimals) /* 0.0042: the zeros before */
		*--start = '0';
	memmove(start - 1, start, (size_t)(end - start) - decimals);
	end[-(long)decimals - 1] = '.';
	k->put(k->arg, start - 1, (size_t)(end - start) + 1);
	return true;
}

void row_put_float(const struct row_sink *k, double v)
{
	char text[64];
	int n;

	if (put_float_fast(k, v))
		return;
	n = snprintf(text, sizeof(text), "%.4f", v);
	if (n <= 0 || (size_t)n >= sizeof(text)) {
		put(k, "0.0");
		return;
	}
	while (n > 2 && text[n - 1] == '0' && text[n - 2] != '.')
		n--;
	if (n == 4 && !memcmp(text, "-0.0", 4)) /* a rounded-away negative is zero */
		put(k, "0.0");
	else
		k->put(k->arg, text, (size_t)n);
}

size_t utf8_seq(const unsigned char *s, size_t left)
{
	uint32_t cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		(cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* One byte that cannot go into a JSON string as is: JSON's short escape, else \u00XX. */
static void put_escape(const struct row_sink *k, unsigned char c)
{
	static const char *const short_escapes[0x80] = {
		['"'] = "\\\"",
		['\\'] = "\\\\",
		['\n'] = "\\n",
		['\r'] = "\\r",
		['\t'] = "\\t",
	};
	char esc[8];

	if (c < 0x80 && short_escapes[c]) {
		put(k, short_escapes[c]);
		return;
	}
	snprintf(esc, sizeof(esc), "\\u%04x", c);
	put(k, esc);
}

/* Writes text as a JSON string body; returns false when it was not UTF-8
 * (each bad byte is a U+FFFD) or had a NUL (valid JSON as \u0000, but many
 * readers refuse it). */
static bool put_escaped(const struct row_sink *k, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	bool valid = true;
	size_t i = 0;

	while (i < len) {
		size_t run = i, n;

		/* copy plain runs in one go: the common case */
		while (run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
			s[run] != '\\')
			run++;
		k->put(k->arg, text + i, run - i);
		i = run;
		if (i >= len)
			break;
		n = s[i] >= 0x80 ? utf8_seq(s + i, len - i) : 0;
		if (n) {
			k->put(k->arg, text + i, n);
			i += n;
			continue;
		}
		if (s[i] >= 0x80 || !s[i]) {
			put(k, "\\ufffd");
			valid = false;
		} else {
			put_escape(k, s[i]);
		}
		i++;
	}
	return valid;
}

static void put_base64(const struct row_sink *k, const unsigned char *s, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		char out[4];

		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		out[0] = tab[(v >> 18) & 63];
		out[1] = tab[(v >> 12) & 63];
		out[2] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		out[3] = i + 2 < len ? tab[v & 63] : '=';
		k->put(k->arg, out, 4);
	}
}

/* "text", and ,"<name>_b64":"..." after it when text is not valid UTF-8
 * and name is not NULL (an array's entry has no place for one). */
static void put_string(const struct row_sink *k, const char *name, const char *text, size_t len)
{
	put(k, "\"");
	if (!put_escaped(k, text, len) && name) {
		put(k, "\",\"");
		put(k, name);
		put(k, "_b64\":\"");
		put_base64(k, (const unsigned char *)text, len);
	}
	put(k, "\"");
}

static void write_fields(const struct row_sink *k, enum row_field object, size_t index);

static void write_bits(const struct row_sink *k, const struct row_value *v)
{
	bool first = true;

	put(k, "[");
	for (size_t w = 0; w < v->bits_count / 64; w++)
		for (uint64_t bits = v->bits[w]; bits; bits &= bits - 1) {
			if (!first)
				put(k, ",");
			put_int(k, w * 64 + (unsigned)__builtin_ctzll(bits));
			first = false;
		}
	put(k, "]");
}

static void write_objects(const struct row_sink *k, enum row_field f, size_t count)
{
	put(k, "[");
	for (size_t i = 0; i < count; i++) {
		put(k, i ? ",{" : "{");
		write_fields(k, f, i);
		put(k, "}");
	}
	put(k, "]");
}

static void write_strings(const struct row_sink *k, const struct row_value *v)
{
	put(k, "[");
	for (size_t i = 0; i < v->strs_count; i++) {
		if (i)
			put(k, ",");
		put_string(k, NULL, v->strs[i], strlen(v->strs[i]));
	}
	put(k, "]");
}

static void write_value(
	const struct row_sink *k, enum row_field f, size_t index, const struct row_value *v)
{
	switch (row_fields[f].type) {
	case RT_INT:
		put_int(k, v->u);
		break;
	case RT_FLOAT:
		row_put_float(k, v->f);
		break;
	case RT_STRING:
		put_string(k, row_fields[f].name, v->str, v->str_len);
		break;
	case RT_OBJECT:
		put(k, "{");
		write_fields(k, f, index);
		put(k, "}");
		break;
	case RT_INT_ARRAY:
		write_bits(k, v);
		break;
	case RT_OBJECT_ARRAY:
		write_objects(k, f, (size_t)v->u);
		break;
	case RT_STRING_ARRAY:
		write_strings(k, v);
		break;
	}
}

/* The fields of object that this row has, the first without its ','. */
static void write_fields(const struct row_sink *k, enum row_field object, size_t index)
{
	const struct row_object *o = &row_objects[object];
	bool first = true;

	for (unsigned i = 0; i < o->fields_count; i++) {
		enum row_field f = o->first_field + i;
		const struct row_field_def *d = &row_fields[f];
		struct row_value v = { 0 };

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
	put(sink, "{");
	write_fields(sink, RF_ROOT, 0);
	put(sink, "}\n");
}

const enum workload_state workload_report_order[WL_COUNT] = { WL_GPU_ONSET, WL_GPU_HELD,
	WL_NO_GPU };

/* The names of one enum's values, by value; parse finds a value by its name. */
static const char *enum_name(const char *const *names, int count, int v)
{
	return v >= 0 && v < count && names[v] ? names[v] : "?";
}

/* The value named s (len bytes), or -EINVAL. */
static int enum_parse(const char *const *names, int count, const char *s, size_t len)
{
	for (int v = 0; v < count; v++)
		if (names[v] && strlen(names[v]) == len && !memcmp(names[v], s, len))
			return v;
	return -EINVAL;
}

static const char *const workloads[WL_COUNT] = {
	[WL_NO_GPU] = "no-gpu",
	[WL_GPU_ONSET] = "gpu-onset",
	[WL_GPU_HELD] = "gpu-held",
};
static const char *const activities[GA_COUNT] = {
	[GA_UNKNOWN] = "unknown",
	[GA_BUSY] = "busy",
	[GA_IDLE] = "idle",
};
static const char *const activity_sources[GAS_COUNT] = {
	[GAS_NONE] = "none",
	[GAS_NVML_PROCESS] = "nvml_process",
	[GAS_NVML_DEVICE] = "nvml_device",
	[GAS_KERNEL] = "kernel",
};
static const char *const exit_kinds[EXIT_COUNT] = {
	[EXIT_PROBE] = "probe",
	[EXIT_BETWEEN_POLLS] = "between_polls",
	[EXIT_VANISHED] = "vanished",
};
static const char *const label_sources[LABEL_SOURCE_COUNT] = {
	[LABEL_ENV] = "env",
	[LABEL_CROFTCTL] = "croftctl",
};

const char *workload_name(enum workload_state w)
{
	return enum_name(workloads, WL_COUNT, w);
}

int workload_parse(const char *s, size_t len, enum workload_state *ret)
{
	int v = enum_parse(workloads, WL_COUNT, s, len);

	if (v < 0)
		return v;
	*ret = v;
	return 0;
}

const char *gpu_activity_name(enum gpu_activity a)
{
	return enum_name(activities, GA_COUNT, a);
}

int gpu_activity_parse(const char *s, size_t len)
{
	return enum_parse(activities, GA_COUNT, s, len);
}

const char *gpu_activity_source_name(enum gpu_activity_source src)
{
	return enum_name(activity_sources, GAS_COUNT, src);
}

const char *exit_kind_name(enum exit_kind k)
{
	return k == EXIT_LIVES ? NULL : enum_name(exit_kinds, EXIT_COUNT, k);
}

int exit_kind_parse(const char *s, size_t len)
{
	return enum_parse(exit_kinds, EXIT_COUNT, s, len);
}

const char *label_source_name(enum label_source src)
{
	return src == LABEL_NONE ? NULL : enum_name(label_sources, LABEL_SOURCE_COUNT, src);
}

int label_source_parse(const char *s, size_t len)
{
	return enum_parse(label_sources, LABEL_SOURCE_COUNT, s, len);
}
