/*
 * rowscan.c: from one dataset line to a struct row.  rowscan_fast() is a
 * strict scanner for the rows croft writes (compact, ASCII, no exponents);
 * whatever it declines goes to jansson, the reference.  croft stats/profile
 * worker threads, invoking user, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "rowscan.h"

#define SKIP_DEPTH_MAX   32          /* nesting the scanner skips; deeper: jansson */
#define E4_ABS_MAX       900000000000000LL   /* |value| kept in 1e-4 units: 9e14 */
#define E4_EXACT_MAX     (1LL << 50) /* scaled reals beyond this go to strtod */

struct scan {
	const char *p, *end;
};

struct num {
	bool is_int;
	int64_t i;               /* integer value (is_int) */
	int64_t e4;              /* value x 1e4 */
};

static const int64_t pow10_e4[5] = { 10000, 1000, 100, 10, 1 };

const char *workload_name(enum workload w)
{
	static const char *const names[WL_COUNT] = { "gpu-onset", "gpu-held", "no-gpu" };

	return w < WL_COUNT ? names[w] : "?";
}

static int workload_parse(const char *s, size_t len, enum workload *ret)
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

static inline void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
		s->p++;
}

static inline bool eat(struct scan *s, char c)
{
	skip_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

/*
 * Bytes that end the plain part of a string, eight at a time: '"', '\\',
 * controls and anything >= 0x80.  The lowest flagged byte is always a real
 * one (borrows only run upwards), which is all we use.
 */
static inline uint64_t special_bytes(uint64_t v)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');

	return (((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v) | v) & high;
}

/* At '"': the string's bytes, if plain ASCII without escapes. */
static inline bool scan_string(struct scan *s, struct strv *ret)
{
	if (s->p >= s->end || *s->p != '"')
		return false;
	const char *start = ++s->p, *q = start;

	for (;;) {
		uint64_t v;

		memcpy(&v, q, sizeof(v));
		uint64_t m = special_bytes(v);
		if (m) {
			q += __builtin_ctzll(m) / 8;
			break;
		}
		q += 8;
		if (q >= s->end)
			return false;
	}
	if (q >= s->end || *q != '"')
		return false;
	ret->ptr = start;
	ret->len = (uint32_t)(q - start);
	s->p = q + 1;
	return true;
}

/* Strict JSON number without exponent; integers up to 18 digits. */
static inline bool scan_number(struct scan *s, struct num *ret)
{
	const char *p = s->p;
	bool neg = false, dot = false;
	int64_t m = 0;
	int digits = 0, frac = 0;

	if (p < s->end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= s->end || *p < '0' || *p > '9')
		return false;
	if (*p == '0' && p + 1 < s->end && p[1] >= '0' && p[1] <= '9')
		return false;
	while (p < s->end && *p >= '0' && *p <= '9') {
		if (++digits > 18)
			return false;
		m = m * 10 + (*p++ - '0');
	}
	if (p < s->end && *p == '.') {
		dot = true;
		p++;
		while (p < s->end && *p >= '0' && *p <= '9') {
			if (++frac > 4 || ++digits > 15)
				return false;
			m = m * 10 + (*p++ - '0');
		}
		if (frac == 0)
			return false;
	}
	if (p < s->end && (*p == 'e' || *p == 'E'))
		return false;
	ret->is_int = !dot;
	if (!dot) {
		if (m > E4_ABS_MAX)
			return false;
		ret->i = neg ? -m : m;
		ret->e4 = ret->i * E4;
	} else {
		/* Below 2^50, m / 10^frac rounded by strtod then scaled by 1e4
		 * and llround()ed gives back exactly this: both paths agree. */
		int64_t scaled = m * pow10_e4[frac];
		if (scaled >= E4_EXACT_MAX)
			return false;
		ret->e4 = neg ? -scaled : scaled;
		ret->i = 0;
	}
	s->p = p;
	return true;
}

static bool skip_value(struct scan *s, int depth);

static bool skip_container(struct scan *s, int depth, bool object)
{
	char close = object ? '}' : ']';

	if (depth > SKIP_DEPTH_MAX)
		return false;
	s->p++;
	if (eat(s, close))
		return true;
	do {
		skip_ws(s);
		if (object) {
			struct strv key;
			if (!scan_string(s, &key) || !eat(s, ':'))
				return false;
		}
		if (!skip_value(s, depth + 1))
			return false;
	} while (eat(s, ','));
	return eat(s, close);
}

static bool skip_literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return false;
	s->p += n;
	return true;
}

/* Any JSON value the scanner can vouch for jansson accepting. */
static bool skip_value(struct scan *s, int depth)
{
	struct strv str;
	struct num num;

	skip_ws(s);
	if (s->p >= s->end)
		return false;
	switch (*s->p) {
	case '{':
		return skip_container(s, depth, true);
	case '[':
		return skip_container(s, depth, false);
	case '"':
		return scan_string(s, &str);
	case 't':
		return skip_literal(s, "true");
	case 'f':
		return skip_literal(s, "false");
	case 'n':
		return skip_literal(s, "null");
	default:
		return scan_number(s, &num);
	}
}

static inline bool key_is(const struct strv *k, const char *name, size_t len)
{
	return k->len == len && !memcmp(k->ptr, name, len);
}
#define KEY(k, lit) key_is((k), (lit), sizeof(lit) - 1)

/* Marks a known key seen; a second one means jansson's last-wins rule. */
static inline bool first_time(uint32_t *seen, uint32_t bit)
{
	if (*seen & bit)
		return false;
	*seen |= bit;
	return true;
}

static bool scan_e4(struct scan *s, int64_t *ret, uint32_t *has, uint32_t bit)
{
	struct num n;

	if (!scan_number(s, &n))
		return false;
	*ret = n.e4;
	*has |= bit;
	return true;
}

static bool scan_int(struct scan *s, int64_t *ret)
{
	struct num n;

	if (!scan_number(s, &n) || !n.is_int)
		return false;
	*ret = n.i;
	return true;
}

static bool scan_process(struct scan *s, struct row *row)
{
	uint32_t seen = 0;

	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return true;
	do {
		struct strv key, *field = NULL;
		uint32_t bit = 0;

		skip_ws(s);
		if (!scan_string(s, &key) || !eat(s, ':'))
			return false;
		if (KEY(&key, "comm"))
			field = &row->comm, bit = 1;
		else if (KEY(&key, "exe"))
			field = &row->exe, bit = 2;
		else if (KEY(&key, "container_id"))
			field = &row->container_id, bit = 4;
		else if (KEY(&key, "cwd"))
			field = &row->cwd, bit = 8;
		else if (KEY(&key, "framework"))
			field = &row->framework, bit = 16;
		if (!field) {
			if (!skip_value(s, 1))
				return false;
			continue;
		}
		skip_ws(s);
		if (!first_time(&seen, bit) || !scan_string(s, field))
			return false;
	} while (eat(s, ','));
	return eat(s, '}');
}

static bool scan_usage(struct scan *s, struct row *row)
{
	uint32_t seen = 0;

	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return true;
	do {
		struct strv key;
		bool ok;

		skip_ws(s);
		if (!scan_string(s, &key) || !eat(s, ':'))
			return false;
		skip_ws(s);
		if (KEY(&key, "cpu_cores"))
			ok = first_time(&seen, HAS_CPU) && scan_e4(s, &row->cpu_e4, &row->has, HAS_CPU);
		else if (KEY(&key, "rss_bytes"))
			ok = first_time(&seen, HAS_RSS) && scan_int(s, &row->rss_bytes) &&
			     (row->has |= HAS_RSS);
		else if (KEY(&key, "threads"))
			ok = first_time(&seen, HAS_THREADS) && scan_int(s, &row->threads) &&
			     (row->has |= HAS_THREADS);
		else if (KEY(&key, "read_bytes_s"))
			ok = first_time(&seen, HAS_READ) && scan_e4(s, &row->read_e4, &row->has, HAS_READ);
		else if (KEY(&key, "write_bytes_s"))
			ok = first_time(&seen, HAS_WRITE) && scan_e4(s, &row->write_e4, &row->has, HAS_WRITE);
		else if (KEY(&key, "network_rx_bytes_s"))
			ok = first_time(&seen, HAS_RX) && scan_e4(s, &row->rx_e4, &row->has, HAS_RX);
		else if (KEY(&key, "network_tx_bytes_s"))
			ok = first_time(&seen, HAS_TX) && scan_e4(s, &row->tx_e4, &row->has, HAS_TX);
		else
			ok = skip_value(s, 1);
		if (!ok)
			return false;
	} while (eat(s, ','));
	return eat(s, '}');
}

static bool scan_syscall(struct scan *s, struct row *row)
{
	struct row_syscall sc = { { NULL, 0 }, 0 };
	uint32_t seen = 0, has = 0;

	if (!eat(s, '{'))
		return false;
	if (!eat(s, '}')) {
		do {
			struct strv key;
			bool ok;

			skip_ws(s);
			if (!scan_string(s, &key) || !eat(s, ':'))
				return false;
			skip_ws(s);
			if (KEY(&key, "name"))
				ok = first_time(&seen, 1) && scan_string(s, &sc.name);
			else if (KEY(&key, "rate_per_sec"))
				ok = first_time(&seen, 2) && scan_e4(s, &sc.rate_e4, &has, 2);
			else
				ok = skip_value(s, 2);
			if (!ok)
				return false;
		} while (eat(s, ','));
		if (!eat(s, '}'))
			return false;
	}
	/* Same rule as row_from_json: an entry needs both. */
	if (seen == 3 && row->syscalls_count < ROW_SYSCALLS_MAX)
		row->syscalls[row->syscalls_count++] = sc;
	return true;
}

static bool scan_syscalls(struct scan *s, struct row *row)
{
	if (!eat(s, '['))
		return false;
	if (eat(s, ']'))
		return true;
	do {
		if (!scan_syscall(s, row))
			return false;
	} while (eat(s, ','));
	return eat(s, ']');
}

enum top_key {
	TK_UNIX_MS = 1u << 0, TK_TGID = 1u << 1, TK_PROCESS = 1u << 2,
	TK_WORKLOAD = 1u << 3, TK_IOCTL = 1u << 4, TK_USAGE = 1u << 5,
	TK_SYSCALLS = 1u << 6, TK_LABEL = 1u << 7,
};

static bool scan_member(struct scan *s, const struct strv *key, struct row *row, uint32_t *seen)
{
	struct strv str;

	skip_ws(s);
	if (KEY(key, "unix_ms"))
		return first_time(seen, TK_UNIX_MS) && scan_int(s, &row->unix_ms);
	if (KEY(key, "tgid"))
		return first_time(seen, TK_TGID) && scan_int(s, &row->tgid);
	if (KEY(key, "process"))
		return first_time(seen, TK_PROCESS) && scan_process(s, row);
	if (KEY(key, "workload"))
		return first_time(seen, TK_WORKLOAD) && scan_string(s, &str) &&
		       workload_parse(str.ptr, str.len, &row->workload) == 0;
	if (KEY(key, "ioctl_count"))
		return first_time(seen, TK_IOCTL) && scan_int(s, &row->ioctl_count) &&
		       (row->has |= HAS_IOCTL);
	if (KEY(key, "usage"))
		return first_time(seen, TK_USAGE) && scan_usage(s, row);
	if (KEY(key, "syscalls"))
		return first_time(seen, TK_SYSCALLS) && scan_syscalls(s, row);
	if (KEY(key, "label"))
		return first_time(seen, TK_LABEL) && scan_string(s, &row->label);
	return skip_value(s, 1);
}

static void row_clear(struct row *row)
{
	/* Only the header: syscalls[] beyond syscalls_count is never read. */
	memset(row, 0, offsetof(struct row, syscalls));
}

enum rowscan_result rowscan_fast(const char *line, size_t len, struct row *row)
{
	struct scan s = { line, line + len };
	uint32_t seen = 0;

	row_clear(row);
	if (!eat(&s, '{'))
		return ROWSCAN_FALLBACK;
	if (!eat(&s, '}')) {
		do {
			struct strv key;

			skip_ws(&s);
			if (!scan_string(&s, &key) || !eat(&s, ':'))
				return ROWSCAN_FALLBACK;
			if (!scan_member(&s, &key, row, &seen))
				return ROWSCAN_FALLBACK;
		} while (eat(&s, ','));
		if (!eat(&s, '}'))
			return ROWSCAN_FALLBACK;
	}
	skip_ws(&s);
	if (s.p != s.end)
		return ROWSCAN_FALLBACK;
	/* Not a row: let jansson's path word the reason. */
	if ((seen & (TK_UNIX_MS | TK_TGID | TK_WORKLOAD)) != (TK_UNIX_MS | TK_TGID | TK_WORKLOAD))
		return ROWSCAN_FALLBACK;
	return ROWSCAN_OK;
}

/* ---- the reference path ---- */

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

	json_array_foreach(arr, i, el) {
		struct row_syscall sc;
		json_t *name = json_object_get(el, "name");

		/* An entry needs a string name and a rate in range. */
		if (!json_is_string(name) || !json_e4(json_object_get(el, "rate_per_sec"), &sc.rate_e4))
			continue;
		if (row->syscalls_count >= ROW_SYSCALLS_MAX)
			break;
		sc.name.ptr = json_string_value(name);
		sc.name.len = (uint32_t)json_string_length(name);
		row->syscalls[row->syscalls_count++] = sc;
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
		snprintf(err, err_size, "not a croft row (needs integer unix_ms and tgid and a known workload)");
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
