/*
 * rowscan.c: from one dataset line to a struct row, fast: a strict scanner
 * for the rows croft writes (compact, ASCII, no exponents); whatever it
 * declines goes to jansson, the reference (rowscan_json.c).  croft
 * stats/profile worker threads, invoking user, no privilege.
 */
#include <stdbool.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "engine.h"

#define SKIP_DEPTH_MAX  32          /* nesting the scanner skips; deeper: jansson */
#define FIXED_EXACT_MAX (1LL << 50) /* scaled reals beyond this go to strtod */

struct scan {
	const char *p, *end;
};

struct num {
	bool is_int;
	int64_t i;    /* integer value (is_int) */
	int64_t x1e4; /* value x 1e4 */
};

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
 * How many digits (0..8) start at p, eight bytes at a time.  Reads 8 bytes;
 * the line's '\n' and the padding stop a run at the end.
 */
static inline int swar_count_digits(const char *p)
{
	uint64_t v, x, m;

	memcpy(&v, p, sizeof(v));
	x = v - 0x3030303030303030ull;
	m = (x | (x + 0x7676767676767676ull)) & 0x8080808080808080ull;
	return m ? __builtin_ctzll(m) >> 3 : 8;
}

/* The digits at p: how many (0..8) and their value. */
static inline int swar_digits(const char *p, uint64_t *ret_value)
{
	int n = swar_count_digits(p);
	uint64_t x;

	*ret_value = 0;
	if (n == 0)
		return 0;
	memcpy(&x, p, sizeof(x));
	x = (x - 0x3030303030303030ull) << (8 - n) * 8;
	x = (x * 10 + (x >> 8)) & 0x00ff00ff00ff00ffull;
	x = (x * 100 + (x >> 16)) & 0x0000ffff0000ffffull;
	x = (x * 10000 + (x >> 32)) & 0xffffffffull;
	*ret_value = x;
	return n;
}

/* Strict JSON number without exponent; integers up to 18 digits.  Always
 * inlined: about 20 a row, and the call alone was 2% of croft stats. */
__attribute__((always_inline)) static inline bool scan_number(struct scan *s, struct num *ret)
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
		if (scaled >= FIXED_EXACT_MAX)
			return false;
		ret->is_int = false;
		ret->x1e4 = neg ? -scaled : scaled;
		ret->i = 0;
	} else {
		if (*p == 'e' || *p == 'E' || m > (uint64_t)FIXED_ABS_MAX)
			return false;
		ret->is_int = true;
		ret->i = neg ? -(int64_t)m : (int64_t)m;
		ret->x1e4 = ret->i * FIXED_SCALE;
	}
	s->p = p;
	return true;
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
	char quoted[32]; /* zero-padded */
	uint32_t bytes;  /* bit i set: quoted[i] is the key's */
	uint8_t len;
};

#ifdef __SSE2__
/* The 32 bytes at p (within the padding) against the key, at once. */
static inline bool key_matches(const char *p, const struct key *k)
{
	__m128i lo = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
		_mm_loadu_si128((const __m128i *)(const void *)k->quoted));
	__m128i hi = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)),
		_mm_loadu_si128((const __m128i *)(const void *)(k->quoted + 16)));
	uint32_t same = (uint32_t)_mm_movemask_epi8(lo) | (uint32_t)_mm_movemask_epi8(hi) << 16;

	return (same & k->bytes) == k->bytes;
}
#else
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
#endif

/* Every field's key, by field id; an object's keys are one run of them. */
#define KEY_(object, id, name, ...)                                                                \
	[RF_##id] = { "\"" name "\":", (uint32_t)((1ull << (sizeof(name) + 2)) - 1),               \
		sizeof(name) + 2 },
static const struct key keys[RF_COUNT] = { ROW_FIELDS_ALL(KEY_) };

/*
 * Reads a key and its ':'.  Rows list keys in a fixed order, leaving out
 * some, so the next expected one and those after it are tried first, as
 * bytes; then any order, any spacing.  Returns the key's index, -1 for a
 * key we skip, -2 for bad syntax.
 */
static inline int next_key(struct scan *s, const struct key *known, int count, int *next)
{
	struct strv k;

	for (int i = *next; i < count; i++)
		if (key_matches(s->p, &known[i])) {
			s->p += known[i].len;
			*next = i + 1;
			return i;
		}
	skip_ws(s); /* only here: croft's compact rows have none before a key */
	if (!scan_string(s, &k) || !eat(s, ':'))
		return -2;
	for (int i = 0; i < count; i++)
		if (known[i].len - 3u == k.len && !memcmp(known[i].quoted + 1, k.ptr, k.len)) {
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

/* A figure kept as an integer, or (fixed) in 1e-4 units; inlined, as scan_number. */
__attribute__((always_inline)) static inline bool scan_kept(
	struct scan *s, int64_t *ret, uint32_t *has, uint32_t bit, bool fixed)
{
	struct num n;

	if (!scan_number(s, &n) || (!fixed && !n.is_int))
		return false;
	*ret = fixed ? n.x1e4 : n.i;
	*has |= bit;
	return true;
}

/* Where the readers keep a field of the row; both paths store through it. */
enum slot_kind {
	SLOT_SKIP,        /* checked, not kept */
	SLOT_STRING,      /* a struct strv */
	SLOT_INT,         /* an int64_t */
	SLOT_FIXED,       /* an int64_t in 1e-4 units */
	SLOT_OBJECT,      /* its fields */
	SLOT_SKIP_OBJECT, /* checked only, its known keys found as the row's are */
	SLOT_WORKLOAD,
	SLOT_GPUS,
	SLOT_SYSCALLS,
};
struct slot {
	uint8_t kind;
	uint16_t offset;  /* in struct row */
	uint32_t has_bit; /* enum row_has; 0 for a field in every row */
};
/* A figure is kept as the table types it: an integer, or 1e-4 units. */
#define TYPE_OF_(object, id, name, type, ...) TYPE_OF_##id = type,
enum { ROW_FIELDS_ALL(TYPE_OF_) };
#define NUM_(id, member, bit)                                                                      \
	[RF_##id] = { (int)TYPE_OF_##id == (int)RT_INT ? SLOT_INT : SLOT_FIXED,                    \
		offsetof(struct row, member), bit }
#define STR_(id, member) [RF_##id] = { SLOT_STRING, offsetof(struct row, member), 0 }
#define OWN_(id, kind)   [RF_##id] = { kind, 0, 0 }
static const struct slot slots[RF_COUNT] = {
	NUM_(UNIX_MS, unix_ms, 0),
	NUM_(SPAN_MS, span_ms, HAS_SPAN),
	NUM_(TGID, tgid, 0),
	STR_(HOST, host),
	OWN_(PROCESS, SLOT_OBJECT),
	OWN_(WORKLOAD, SLOT_WORKLOAD),
	NUM_(IOCTL_COUNT, ioctl_count, HAS_IOCTL),
	[RF_GPUS] = { SLOT_GPUS, offsetof(struct row, gpus), HAS_GPUS },
	[RF_GPUS_ALLOCATED] = { SLOT_GPUS, offsetof(struct row, gpus_allocated), HAS_ALLOCATED },
	OWN_(USAGE, SLOT_OBJECT),
	OWN_(CGROUP_USAGE, SLOT_SKIP_OBJECT),
	OWN_(SYSCALLS, SLOT_SYSCALLS),
	STR_(GPU_ACTIVITY, gpu_activity),
	NUM_(GPU_SM_PERCENT, sm_x1e4, HAS_SM),
	STR_(LABEL, label),
	STR_(LABEL_SOURCE, label_source),
	STR_(EXITED, exited),
	NUM_(UID, uid, HAS_UID),
	NUM_(START_MS, start_ms, HAS_START),
	STR_(COMM, comm),
	STR_(EXE, exe),
	STR_(CONTAINER_ID, container_id),
	STR_(POD_UID, pod_uid),
	STR_(POD_QOS, pod_qos),
	STR_(CWD, cwd),
	STR_(FRAMEWORK, framework),
	NUM_(CPU_CORES, cpu_x1e4, HAS_CPU),
	NUM_(RSS_BYTES, rss_bytes, HAS_RSS),
	NUM_(THREADS, threads, HAS_THREADS),
	NUM_(READ_BYTES_S, read_x1e4, HAS_READ),
	NUM_(WRITE_BYTES_S, write_x1e4, HAS_WRITE),
	NUM_(NETWORK_RX_BYTES_S, rx_x1e4, HAS_RX),
	NUM_(NETWORK_TX_BYTES_S, tx_x1e4, HAS_TX),
};

static inline void *slot_at(struct row *row, enum row_field f)
{
	return (char *)row + slots[f].offset;
}

struct strv *row_str_slot(struct row *row, enum row_field f)
{
	return slots[f].kind == SLOT_STRING ? slot_at(row, f) : NULL;
}

int64_t *row_num_slot(struct row *row, enum row_field f, uint32_t *ret_has_bit)
{
	if (slots[f].kind != SLOT_INT && slots[f].kind != SLOT_FIXED)
		return NULL;
	*ret_has_bit = slots[f].has_bit;
	return slot_at(row, f);
}

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

			int k = next_key(
				s, &keys[RF_SYSCALL_NAME], ROW_COUNT(ROW_FIELDS_SYSCALLS), &next);
			if (k == -2)
				return false;
			skip_ws(s);
			if (k + RF_SYSCALL_NAME == RF_SYSCALL_NAME)
				ok = first_time(&seen, 0) && scan_string(s, &sc.name);
			else if (k + RF_SYSCALL_NAME == RF_SYSCALL_RATE_PER_SEC)
				ok = first_time(&seen, 1) &&
				     scan_kept(s, &sc.rate_x1e4, &has, 1, true);
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

/* An entry as croft writes it, {"name":"...","rate_per_sec":N}, read
 * straight through (the general way gives the same; about 7 a row). */
static bool scan_syscall_compact(struct scan *s, struct row *row)
{
	const struct key *name = &keys[RF_SYSCALL_NAME], *rate = &keys[RF_SYSCALL_RATE_PER_SEC];
	struct scan t = { s->p + 1 + name->len, s->end };
	struct row_syscall sc;
	struct num n;

	if (*s->p != '{' || !key_matches(s->p + 1, name) || !scan_string(&t, &sc.name) ||
		*t.p != ',' || !key_matches(t.p + 1, rate))
		return false;
	t.p += 1 + rate->len;
	if (!scan_number(&t, &n) || *t.p != '}')
		return false;
	sc.rate_x1e4 = n.x1e4;
	if (row->syscalls_count < ROW_SYSCALLS_MAX)
		row->syscalls[row->syscalls_count++] = sc;
	s->p = t.p + 1;
	return true;
}

static bool scan_syscalls(struct scan *s, struct row *row)
{
	if (!eat(s, '['))
		return false;
	if (eat(s, ']'))
		return true;
	do {
		if (!scan_syscall_compact(s, row) && !scan_syscall(s, row))
			return false;
	} while (eat(s, ','));
	return eat(s, ']');
}

void row_gpu_add(uint64_t bits[ROW_GPU_WORDS], int64_t index)
{
	if (index >= 0 && index < ROW_GPUS_MAX)
		bits[index / 64] |= 1ull << (index % 64);
}

/* An array of integers (gpus, gpus_allocated); anything else in it is jansson's to judge. */
static bool scan_gpus(struct scan *s, struct row *row, enum row_field f)
{
	uint64_t *bits = slot_at(row, f);
	struct num n;

	if (!eat(s, '['))
		return false;
	row->has |= slots[f].has_bit;
	if (eat(s, ']'))
		return true;
	do {
		skip_ws(s);
		if (!scan_number(s, &n) || !n.is_int)
			return false;
		row_gpu_add(bits, n.i);
	} while (eat(s, ','));
	return eat(s, ']');
}

static bool scan_object(
	struct scan *s, struct row *row, enum row_field object, int depth, uint32_t *ret_seen);

static inline bool scan_field(struct scan *s, struct row *row, enum row_field f, int depth)
{
	struct strv str;
	uint32_t seen;

	switch (slots[f].kind) {
	case SLOT_STRING:
		return scan_string(s, slot_at(row, f));
	case SLOT_INT:
		return scan_kept(s, slot_at(row, f), &row->has, slots[f].has_bit, false);
	case SLOT_FIXED:
		return scan_kept(s, slot_at(row, f), &row->has, slots[f].has_bit, true);
	case SLOT_OBJECT:
		return scan_object(s, row, f, depth + 1, &seen);
	case SLOT_SKIP_OBJECT: /* whatever skip_value takes: a key twice too */
		return *s->p == '{' ? scan_object(s, row, f, depth + 1, NULL)
				    : skip_value(s, depth);
	case SLOT_WORKLOAD:
		return scan_string(s, &str) &&
		       workload_parse(str.ptr, str.len, &row->workload) == 0;
	case SLOT_GPUS:
		return scan_gpus(s, row, f);
	case SLOT_SYSCALLS:
		return scan_syscalls(s, row);
	default:
		return skip_value(s, depth);
	}
}

/*
 * The fields of an object (RF_ROOT: the row), each known one once (a
 * second means jansson's last-wins rule: not ours); *ret_seen: which.
 * ret_seen NULL: an object none of whose fields is kept, a key twice is fine.
 */
_Static_assert(ROW_COUNT(ROW_FIELDS_ROOT) <= 32 && ROW_COUNT(ROW_FIELDS_USAGE) <= 32 &&
		       ROW_COUNT(ROW_FIELDS_PROCESS) <= 32 &&
		       ROW_COUNT(ROW_FIELDS_CGROUP_USAGE) <= 32,
	"an object's fields seen are bits of a uint32_t");
static bool scan_object(
	struct scan *s, struct row *row, enum row_field object, int depth, uint32_t *ret_seen)
{
	const struct row_object *d = &row_objects[object];
	const struct key *object_keys = &keys[d->first_field];
	uint32_t seen = 0;
	int next = 0;

	if (!eat(s, '{'))
		return false;
	if (!eat(s, '}')) {
		do {
			int k = next_key(s, object_keys, d->fields_count, &next);
			if (k == -2)
				return false;
			skip_ws(s);
			if (k == -1) {
				if (!skip_value(s, depth))
					return false;
			} else if ((!first_time(&seen, k) && ret_seen) ||
				   !scan_field(s, row, d->first_field + k, depth)) {
				return false;
			}
		} while (eat(s, ','));
		if (!eat(s, '}'))
			return false;
	}
	if (ret_seen)
		*ret_seen = seen;
	return true;
}

void row_clear(struct row *row)
{
	/* Only the header: syscalls[] beyond syscalls_count is never read. */
	memset(row, 0, offsetof(struct row, syscalls));
}

bool rowscan_fast(const char *line, const char *end, struct row *row, const char **ret_newline)
{
	struct scan s = { line, end };
	uint32_t seen;

	row_clear(row);
	if (!scan_object(&s, row, RF_ROOT, 1, &seen))
		return false;
	skip_ws(&s);
	if (s.p >= s.end || *s.p != '\n')
		return false;
	/* Not a row: let jansson's path word the reason. */
	uint32_t need = 1u << RF_UNIX_MS | 1u << RF_TGID; /* no workload: no-gpu (rowtable.h) */
	if ((seen & need) != need || row->unix_ms < 0)
		return false;
	row->padded = true;
	*ret_newline = s.p;
	return true;
}
