/*
 * rowscan.c: from one dataset line to a struct row, fast: a strict scanner
 * for the rows croft writes (compact, ASCII, no exponents); whatever it
 * declines goes to jansson, the reference (rowscan_json.c).  croft
 * stats/profile worker threads, invoking user, no privilege.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "rowscan.h"

#define SKIP_DEPTH_MAX 32          /* nesting the scanner skips; deeper: jansson */
#define E4_EXACT_MAX   (1LL << 50) /* scaled reals beyond this go to strtod */

struct scan {
	const char *p, *end;
};

struct num {
	bool is_int;
	int64_t i;  /* integer value (is_int) */
	int64_t e4; /* value x 1e4 */
};

const char *workload_name(enum workload w)
{
	static const char *const names[WL_COUNT] = { "gpu-onset", "gpu-held", "no-gpu" };

	return w < WL_COUNT ? names[w] : "?";
}

int workload_parse(const char *s, size_t len, enum workload *ret)
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

static inline bool is_ws(char c)
{
	/* Not '\n': a row is one line, and the line's end is found here.  The
	 * first test alone settles the bytes of a compact row. */
	return (unsigned char)c <= ' ' && (c == ' ' || c == '\t' || c == '\r');
}

/* The byte at end is readable (padding): test it before the bound. */
static inline void skip_ws(struct scan *s)
{
	while (__builtin_expect(is_ws(*s->p) && s->p < s->end, 0))
		s->p++;
}

/* croft's rows are compact: the expected byte first, spaces only then.
 * The byte, readable up to the padding, before the bound. */
static inline bool eat(struct scan *s, char c)
{
	if (__builtin_expect(*s->p == c && s->p < s->end, 1)) {
		s->p++;
		return true;
	}
	skip_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

#ifdef __SSE2__
/* How many plain bytes (0..16) start at q: before '"', '\\', a control or a
 * byte >= 0x80 (negative as signed, so below ' ' too).  Reads 16 bytes. */
static inline int plain_bytes16(const char *q)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
	__m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
	__m128i bslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
	__m128i low = _mm_cmplt_epi8(v, _mm_set1_epi8(' '));
	unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, bslash), low));

	return m ? __builtin_ctz(m) : 16;
}
#else
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

static inline int plain_bytes16(const char *q)
{
	uint64_t lo, hi, m;

	memcpy(&lo, q, sizeof(lo));
	memcpy(&hi, q + 8, sizeof(hi));
	if ((m = special_bytes(lo)))
		return __builtin_ctzll(m) / 8;
	m = special_bytes(hi);
	return m ? 8 + __builtin_ctzll(m) / 8 : 16;
}
#endif

/* At '"': the string's bytes, if plain ASCII without escapes. */
static inline bool scan_string(struct scan *s, struct strv *ret)
{
	if (*s->p != '"' || s->p >= s->end)
		return false;
	const char *start = ++s->p, *q = start;

	for (;;) {
		int n = plain_bytes16(q);

		q += n;
		if (n < 16)
			break;
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

static const uint64_t pow10_u64[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
	100000000 };

/*
 * The digits at p, eight at a time: how many (0..8) and their value.  Reads
 * 8 bytes; the line's '\n' and the padding stop a run at the end.
 */
static inline int swar_digits(const char *p, uint64_t *ret_value)
{
	uint64_t v, x, m;
	int n;

	memcpy(&v, p, sizeof(v));
	x = v - 0x3030303030303030ull;
	m = (x | (x + 0x7676767676767676ull)) & 0x8080808080808080ull;
	n = m ? __builtin_ctzll(m) >> 3 : 8;
	*ret_value = 0;
	if (n == 0)
		return 0;
	x <<= (8 - n) * 8;
	x = (x * 10 + (x >> 8)) & 0x00ff00ff00ff00ffull;
	x = (x * 100 + (x >> 16)) & 0x0000ffff0000ffffull;
	x = (x * 10000 + (x >> 32)) & 0xffffffffull;
	*ret_value = x;
	return n;
}

/* Strict JSON number without exponent; integers up to 18 digits. */
static inline bool scan_number(struct scan *s, struct num *ret)
{
	const char *p = s->p;
	bool neg = false;
	uint64_t m, v;
	int n, digits;

	if (*p == '-') {
		neg = true;
		p++;
	}
	n = swar_digits(p, &m);
	if (n == 0 || (*p == '0' && n > 1))
		return false;
	digits = n;
	p += n;
	while (n == 8) {
		n = swar_digits(p, &v);
		digits += n;
		if (digits > 18)
			return false;
		m = m * pow10_u64[n] + v;
		p += n;
	}
	if (*p == '.') {
		n = swar_digits(p + 1, &v);
		if (n == 0 || n > 4 || digits + n > 15)
			return false;
		p += 1 + n;
		if (*p == 'e' || *p == 'E')
			return false;
		/* Below 2^50, m / 10^n rounded by strtod then scaled by 1e4 and
		 * llround()ed gives back exactly this: both paths agree. */
		int64_t scaled = (int64_t)((m * pow10_u64[n] + v) * pow10_u64[4 - n]);
		if (scaled >= E4_EXACT_MAX)
			return false;
		ret->is_int = false;
		ret->e4 = neg ? -scaled : scaled;
		ret->i = 0;
	} else {
		if (*p == 'e' || *p == 'E' || m > (uint64_t)E4_ABS_MAX)
			return false;
		ret->is_int = true;
		ret->i = neg ? -(int64_t)m : (int64_t)m;
		ret->e4 = ret->i * E4;
	}
	s->p = p;
	return true;
}

/* How many digits (0..8) start at p; reads 8 bytes, like swar_digits. */
static inline int swar_count_digits(const char *p)
{
	uint64_t v, x, m;

	memcpy(&v, p, sizeof(v));
	x = v - 0x3030303030303030ull;
	m = (x | (x + 0x7676767676767676ull)) & 0x8080808080808080ull;
	return m ? __builtin_ctzll(m) >> 3 : 8;
}

/*
 * A number whose value is not needed: its syntax only, as strict as
 * scan_number's but without its limits on the fraction, which only exact
 * values need.  Integer parts up to 18 digits and no exponent keep it
 * within what jansson reads (no integer or real overflow).
 */
static bool skip_number(struct scan *s)
{
	const char *p = s->p + (*s->p == '-');
	int n = swar_count_digits(p), digits = n;

	if (n == 0 || (*p == '0' && n > 1))
		return false;
	for (p += n; n == 8 && digits <= 18; p += n, digits += n)
		n = swar_count_digits(p);
	if (digits > 18)
		return false;
	if (*p == '.') {
		n = swar_count_digits(++p);
		if (n == 0)
			return false;
		for (p += n; n == 8; p += n)
			n = swar_count_digits(p);
	}
	if (*p == 'e' || *p == 'E')
		return false;
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
		return skip_number(s);
	}
}

/* A known key as it appears in croft's compact rows: "name": */
struct key {
	char quoted[32]; /* zero-padded: compared eight bytes at a time */
	uint8_t len;
};

static inline bool key_matches(const char *p, const struct key *k)
{
	uint64_t a, b;
	size_t i = 0;

	for (; i + 8 <= k->len; i += 8) {
		memcpy(&a, p + i, 8);
		memcpy(&b, k->quoted + i, 8);
		if (a != b)
			return false;
	}
	if (i < k->len) {
		memcpy(&a, p + i, 8);
		memcpy(&b, k->quoted + i, 8);
		if ((a ^ b) & (~0ull >> (64 - 8 * (k->len - i))))
			return false;
	}
	return true;
}
#define K(name)                                                                                    \
	{                                                                                          \
		"\"" name "\":", sizeof(name) + 2                                                  \
	}

/*
 * Reads a key and its ':'.  Rows list keys in a fixed order, so the next
 * expected one is tried first, as bytes; then any order, any spacing.
 * Returns the key's index, -1 for a key we skip, -2 for bad syntax.
 */
static inline int next_key(struct scan *s, const struct key *keys, int count, int *next)
{
	struct strv k;

	if (*next < count) {
		const struct key *e = &keys[*next];
		if (key_matches(s->p, e)) {
			s->p += e->len;
			return (*next)++;
		}
	}
	skip_ws(s);
	if (!scan_string(s, &k) || !eat(s, ':'))
		return -2;
	for (int i = 0; i < count; i++)
		if (keys[i].len - 3u == k.len && !memcmp(keys[i].quoted + 1, k.ptr, k.len)) {
			*next = i + 1;
			return i;
		}
	return -1;
}

/* Marks a known key seen; a second one means jansson's last-wins rule. */
static inline bool first_time(uint32_t *seen, int index)
{
	if (*seen & (1u << index))
		return false;
	*seen |= 1u << index;
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

static bool scan_int(struct scan *s, int64_t *ret, uint32_t *has, uint32_t bit)
{
	struct num n;

	if (!scan_number(s, &n) || !n.is_int)
		return false;
	*ret = n.i;
	*has |= bit;
	return true;
}

static const struct key process_keys[] = {
	K("comm"),
	K("exe"),
	K("cgroup"),
	K("container_id"),
	K("cwd"),
	K("framework"),
};

static bool scan_process(struct scan *s, struct row *row)
{
	struct strv *fields[] = { &row->comm, &row->exe, NULL, &row->container_id, &row->cwd,
		&row->framework };
	uint32_t seen = 0;
	int next = 0, k;

	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return true;
	do {
		skip_ws(s);
		k = next_key(s, process_keys, 6, &next);
		if (k == -2)
			return false;
		skip_ws(s);
		if (k == -1 || fields[k] == NULL) {
			if (!skip_value(s, 1))
				return false;
		} else if (!first_time(&seen, k) || !scan_string(s, fields[k])) {
			return false;
		}
	} while (eat(s, ','));
	return eat(s, '}');
}

static const struct key usage_keys[] = {
	K("cpu_cores"),
	K("rss_bytes"),
	K("threads"),
	K("ctx_voluntary_s"),
	K("ctx_involuntary_s"),
	K("read_bytes_s"),
	K("write_bytes_s"),
	K("network_rx_bytes_s"),
	K("network_tx_bytes_s"),
	K("runqueue_s"),
};

static bool scan_usage(struct scan *s, struct row *row)
{
	uint32_t seen = 0;
	int next = 0;

	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return true;
	do {
		bool ok;

		skip_ws(s);
		int k = next_key(s, usage_keys, 10, &next);
		if (k == -2)
			return false;
		skip_ws(s);
		if (k >= 0 && !first_time(&seen, k))
			return false;
		switch (k) {
		case 0:
			ok = scan_e4(s, &row->cpu_e4, &row->has, HAS_CPU);
			break;
		case 1:
			ok = scan_int(s, &row->rss_bytes, &row->has, HAS_RSS);
			break;
		case 2:
			ok = scan_int(s, &row->threads, &row->has, HAS_THREADS);
			break;
		case 5:
			ok = scan_e4(s, &row->read_e4, &row->has, HAS_READ);
			break;
		case 6:
			ok = scan_e4(s, &row->write_e4, &row->has, HAS_WRITE);
			break;
		case 7:
			ok = scan_e4(s, &row->rx_e4, &row->has, HAS_RX);
			break;
		case 8:
			ok = scan_e4(s, &row->tx_e4, &row->has, HAS_TX);
			break;
		default:
			ok = skip_value(s, 1);
			break;
		}
		if (!ok)
			return false;
	} while (eat(s, ','));
	return eat(s, '}');
}

static const struct key syscall_keys[] = { K("name"), K("rate_per_sec") };

static bool scan_syscall(struct scan *s, struct row *row)
{
	struct row_syscall sc = { { NULL, 0 }, 0 };
	uint32_t seen = 0, has = 0;
	int next = 0;

	if (!eat(s, '{'))
		return false;
	if (!eat(s, '}')) {
		do {
			bool ok;

			skip_ws(s);
			int k = next_key(s, syscall_keys, 2, &next);
			if (k == -2)
				return false;
			skip_ws(s);
			if (k == 0)
				ok = first_time(&seen, 0) && scan_string(s, &sc.name);
			else if (k == 1)
				ok = first_time(&seen, 1) && scan_e4(s, &sc.rate_e4, &has, 1);
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

void row_gpu_add(struct row *row, int64_t index)
{
	if (index >= 0 && index < ROW_GPUS_MAX)
		row->gpus[index / 64] |= 1ull << (index % 64);
}

/* An array of integers; anything else in it is jansson's to judge. */
static bool scan_gpus(struct scan *s, struct row *row)
{
	struct num n;

	if (!eat(s, '['))
		return false;
	row->has |= HAS_GPUS;
	if (eat(s, ']'))
		return true;
	do {
		skip_ws(s);
		if (!scan_number(s, &n) || !n.is_int)
			return false;
		row_gpu_add(row, n.i);
	} while (eat(s, ','));
	return eat(s, ']');
}

static const struct key top_keys[] = {
	K("unix_ms"),
	K("tgid"),
	K("process"),
	K("workload"),
	K("ioctl_count"),
	K("since_last_gpu_ioctl_ms"),
	K("gpus"),
	K("usage"),
	K("cgroup_usage"),
	K("syscalls"),
	K("label"),
};
enum {
	TK_UNIX_MS,
	TK_TGID,
	TK_PROCESS,
	TK_WORKLOAD,
	TK_IOCTL,
	TK_SINCE,
	TK_GPUS,
	TK_USAGE,
	TK_CGROUP,
	TK_SYSCALLS,
	TK_LABEL
};

static bool scan_member(struct scan *s, int k, struct row *row)
{
	struct strv str;
	uint32_t unused = 0;

	switch (k) {
	case TK_UNIX_MS:
		return scan_int(s, &row->unix_ms, &unused, 1);
	case TK_TGID:
		return scan_int(s, &row->tgid, &unused, 1);
	case TK_PROCESS:
		return scan_process(s, row);
	case TK_WORKLOAD:
		return scan_string(s, &str) &&
		       workload_parse(str.ptr, str.len, &row->workload) == 0;
	case TK_IOCTL:
		return scan_int(s, &row->ioctl_count, &row->has, HAS_IOCTL);
	case TK_GPUS:
		return scan_gpus(s, row);
	case TK_USAGE:
		return scan_usage(s, row);
	case TK_SYSCALLS:
		return scan_syscalls(s, row);
	case TK_LABEL:
		return scan_string(s, &row->label);
	default:
		return skip_value(s, 1);
	}
}

void row_clear(struct row *row)
{
	/* Only the header: syscalls[] beyond syscalls_count is never read. */
	memset(row, 0, offsetof(struct row, syscalls));
}

enum rowscan_result rowscan_fast(
	const char *line, const char *end, struct row *row, const char **ret_newline)
{
	struct scan s = { line, end };
	uint32_t seen = 0;
	int next = 0;

	row_clear(row);
	if (!eat(&s, '{'))
		return ROWSCAN_FALLBACK;
	if (!eat(&s, '}')) {
		do {
			skip_ws(&s);
			int k = next_key(&s, top_keys, 11, &next);
			if (k == -2)
				return ROWSCAN_FALLBACK;
			skip_ws(&s);
			if (k >= 0 && !first_time(&seen, k))
				return ROWSCAN_FALLBACK;
			if (!scan_member(&s, k, row))
				return ROWSCAN_FALLBACK;
		} while (eat(&s, ','));
		if (!eat(&s, '}'))
			return ROWSCAN_FALLBACK;
	}
	skip_ws(&s);
	if (s.p >= s.end || *s.p != '\n')
		return ROWSCAN_FALLBACK;
	/* Not a row: let jansson's path word the reason. */
	uint32_t need = 1u << TK_UNIX_MS | 1u << TK_TGID | 1u << TK_WORKLOAD;
	if ((seen & need) != need)
		return ROWSCAN_FALLBACK;
	*ret_newline = s.p;
	return ROWSCAN_OK;
}
