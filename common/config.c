/*
 * config.c: reads croft.conf, an INI file, over the defaults.  The file is
 * read whole (bounded) and parsed line by line here (not by libinih, whose
 * line buffer is whatever the system built it with: 200 bytes on Debian),
 * so a line holds a whole path and every error carries file and line, all
 * of them reported at once.  Any process, any privilege.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fileio.h"

#define CONFIG_FILE_MAX (1u << 20) /* bytes; a real croft.conf is < 2 KiB */
#define CONFIG_LINE_MAX 8192       /* bytes of one line: a PATH_MAX path and its key */

#define MS_S   1000ull
#define MS_MIN (60 * MS_S)
#define MS_H   (60 * MS_MIN)
#define MS_D   (24 * MS_H)
#define MS_Y   (365 * MS_D)
#define KIB    1024ull
#define MIB    (1024 * KIB)
#define GIB    (1024 * MIB)
#define TIB    (1024 * GIB)
#define PIB    (1024 * TIB)

/* KEY_CHOICE: one of the words of range ("auto|off"), stored as its place (uint32_t) */
enum key_kind { KEY_DURATION, KEY_SIZE, KEY_U32, KEY_INT, KEY_STRING, KEY_NAMES, KEY_CHOICE };

struct key_spec {
	int section; /* index into config_sections */
	const char *name;
	enum key_kind kind;
	size_t offset;     /* in struct croft_config */
	size_t size;       /* of the field (strings: buffer bytes) */
	uint64_t min, max; /* inclusive; strings: max is checked by size */
	const char *range; /* the range as the user writes it */
};

static const char *const config_sections[] = { "sampler", "probe", "writer" };
#define SECTIONS_COUNT (sizeof(config_sections) / sizeof(config_sections[0]))

#define F(field) offsetof(struct croft_config, field), sizeof(((struct croft_config *)0)->field)
static const struct key_spec config_keys[] = {
	{ 0, "poll_interval", KEY_DURATION, F(poll_interval_ms), 100, MS_H, "100ms..1h" },
	{ 0, "idle_every", KEY_U32, F(idle_every), 1, 100000, "1..100000" },
	{ 0, "onset_window", KEY_DURATION, F(onset_window_ms), 0, MS_D, "0s..1d" },
	{ 0, "frameworks", KEY_STRING, F(frameworks), 0, 0, NULL },
	{ 0, "spool_size", KEY_SIZE, F(spool_size_bytes), 64 * KIB, 64 * GIB, "64KiB..64GiB" },
	{ 0, "gpu_system_holders", KEY_NAMES, F(gpu_system_holders), 0, 0, NULL },
	{ 0, "kubelet_checkpoint", KEY_STRING, F(kubelet_checkpoint), 0, 0, NULL },
	{ 0, "driver_dir", KEY_STRING, F(driver_dir), 1, 0, NULL },
	{ 0, "host", KEY_STRING, F(host), 0, 0, NULL },
	{ 0, "textfile_dir", KEY_STRING, F(textfile_dir), 0, 0, NULL },
	{ 0, "textfile_top", KEY_U32, F(textfile_top), 0, 500, "0..500" },
	{ 0, "nvml", KEY_CHOICE, F(nvml), 0, 0, "auto|off" },
	{ 1, "gpu_devices", KEY_STRING, F(gpu_devices), 0, 0, NULL },
	{ 2, "data_dir", KEY_STRING, F(data_dir), 1, 0, NULL },
	{ 2, "rotate_interval", KEY_DURATION, F(rotate_interval_ms), MS_S, 30 * MS_D, "1s..30d" },
	{ 2, "rotate_size", KEY_SIZE, F(rotate_size_bytes), 4 * KIB, TIB, "4KiB..1TiB" },
	{ 2, "retention_age", KEY_DURATION, F(retention_age_ms), MS_S, 10 * MS_Y, "1s..10y" },
	{ 2, "retention_size", KEY_SIZE, F(retention_size_bytes), 4 * KIB, PIB, "4KiB..1PiB" },
	{ 2, "zstd_level", KEY_INT, F(zstd_level), 1, 19, "1..19" },
};
#undef F
#define KEYS_COUNT (sizeof(config_keys) / sizeof(config_keys[0]))

struct config_parse {
	const char *path;
	const char *buf;
	size_t len, pos;
	int lineno;
	int section;                      /* current; -1 none, -2 unknown */
	int section_line[SECTIONS_COUNT]; /* 0: not seen yet */
	int key_line[KEYS_COUNT];         /* 0: not set yet */
	struct croft_config cfg;
	char *errors; /* "file:line: key: reason\n"... */
	size_t errors_len;
	int errors_count;
	char line[CONFIG_LINE_MAX + 1];
};

void config_defaults(struct croft_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->poll_interval_ms = 2 * MS_S;
	cfg->idle_every = 15;
	cfg->onset_window_ms = 30 * MS_S;
	cfg->spool_size_bytes = 256 * MIB;
	snprintf(cfg->gpu_system_holders, sizeof(cfg->gpu_system_holders), "%s",
		CONFIG_GPU_SYSTEM_HOLDERS);
	snprintf(cfg->kubelet_checkpoint, sizeof(cfg->kubelet_checkpoint), "%s",
		CROFT_KUBELET_CHECKPOINT);
	snprintf(cfg->driver_dir, sizeof(cfg->driver_dir), "%s", CROFT_DRIVER_DIR);
	snprintf(cfg->textfile_dir, sizeof(cfg->textfile_dir), "%s", CROFT_TEXTFILE_DIR);
	cfg->textfile_top = 50;
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", CROFT_DATA_DIR);
	cfg->rotate_interval_ms = MS_H;
	cfg->rotate_size_bytes = GIB;
	cfg->retention_age_ms = 30 * MS_D;
	cfg->retention_size_bytes = 10 * GIB;
	/* the highest ratio whose hourly segment of a 300-process host costs at
	 * most 0.5% of one core to compress (bench-writer.sh LEVELS=...) */
	cfg->zstd_level = 12;
}

static void config_error(struct config_parse *p, int lineno, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void config_error(struct config_parse *p, int lineno, const char *key, const char *fmt, ...)
{
	char reason[256], entry[512];
	va_list ap;
	char *grown;
	int n;

	if (p->errors_count++ >= CONFIG_ERRORS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (p->errors_count == CONFIG_ERRORS_MAX)
		n = snprintf(
			entry, sizeof(entry), "%s: too many errors, stopped listing\n", p->path);
	else if (lineno == 0)
		n = snprintf(entry, sizeof(entry), "%s: %s\n", p->path, reason);
	else if (key)
		n = snprintf(
			entry, sizeof(entry), "%s:%d: %.64s: %s\n", p->path, lineno, key, reason);
	else
		n = snprintf(entry, sizeof(entry), "%s:%d: %s\n", p->path, lineno, reason);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(entry))
		n = sizeof(entry) - 1;
	grown = realloc(p->errors, p->errors_len + (size_t)n + 1);
	if (!grown)
		return;
	memcpy(grown + p->errors_len, entry, (size_t)n + 1);
	p->errors = grown;
	p->errors_len += (size_t)n;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			if (c == 0)
				return false;
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
			(n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += n + 1;
	}
	return true;
}

static const char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A "[name]" line. */
static void config_section_line(struct config_parse *p, const char *line)
{
	const char *end = strchr(line, ']');
	size_t len;

	if (!end) {
		config_error(p, p->lineno, NULL, "section header without ']'");
		p->section = -2;
		return;
	}
	len = (size_t)(end - line - 1);
	for (size_t i = 0; i < SECTIONS_COUNT; i++) {
		if (strlen(config_sections[i]) != len || strncmp(line + 1, config_sections[i], len))
			continue;
		if (p->section_line[i]) {
			config_error(p, p->lineno, NULL,
				"duplicate section [%s] (first at line %d)", config_sections[i],
				p->section_line[i]);
			p->section = -2;
			return;
		}
		p->section_line[i] = p->lineno;
		p->section = (int)i;
		return;
	}
	config_error(p, p->lineno, NULL,
		"unknown section [%.*s] (known: [sampler], [probe], [writer])",
		(int)(len > 64 ? 64 : len), line + 1);
	p->section = -2;
}

/* Digits only: strtoull alone would take blanks and a sign first. */
static int parse_number(const char **s, uint64_t *ret)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -EINVAL;
	errno = 0;
	*ret = strtoull(*s, &end, 10);
	*s = end;
	return errno ? -ERANGE : 0;
}

struct unit {
	const char *name;
	uint64_t factor;
};

static const struct unit duration_units[] = {
	{ "ms", 1 },
	{ "s", MS_S },
	{ "sec", MS_S },
	{ "m", MS_MIN },
	{ "min", MS_MIN },
	{ "h", MS_H },
	{ "d", MS_D },
	{ "w", 7 * MS_D },
	{ "y", MS_Y },
	{ NULL, 0 },
};

static const struct unit size_units[] = {
	{ "", 1 },
	{ "B", 1 },
	{ "k", KIB },
	{ "K", KIB },
	{ "KiB", KIB },
	{ "kB", 1000 },
	{ "KB", 1000 },
	{ "M", MIB },
	{ "MiB", MIB },
	{ "MB", 1000000 },
	{ "G", GIB },
	{ "GiB", GIB },
	{ "GB", 1000000000 },
	{ "T", TIB },
	{ "TiB", TIB },
	{ "TB", 1000000000000ull },
	{ "P", PIB },
	{ "PiB", PIB },
	{ "PB", 1000000000000000ull },
	{ NULL, 0 },
};

/* One "<number> <unit>" term; *s is left after the unit. */
static int parse_term(const char **s, const struct unit *units, uint64_t *ret)
{
	const char *unit_start;
	uint64_t n;
	size_t len;
	int r;

	r = parse_number(s, &n);
	if (r < 0)
		return r;
	*s = skip_space(*s);
	unit_start = *s;
	while ((**s >= 'a' && **s <= 'z') || (**s >= 'A' && **s <= 'Z'))
		(*s)++;
	len = (size_t)(*s - unit_start);
	for (const struct unit *u = units; u->name; u++) {
		if (strlen(u->name) != len || strncmp(u->name, unit_start, len))
			continue;
		if (n && u->factor > UINT64_MAX / n)
			return -ERANGE;
		*ret = n * u->factor;
		return 0;
	}
	return -EINVAL;
}

/* Durations may add terms ("1h30m"); a bare number other than 0 is refused: no guessing units. */
int config_parse_duration_ms(const char *text, uint64_t *ret_ms)
{
	const char *s = skip_space(text);
	uint64_t total = 0, term;
	int r;

	if (!*s)
		return -EINVAL;
	if (!strcmp(s, "0")) {
		*ret_ms = 0;
		return 0;
	}
	while (*s) {
		r = parse_term(&s, duration_units, &term);
		if (r < 0)
			return r;
		if (total > UINT64_MAX - term)
			return -ERANGE;
		total += term;
		s = skip_space(s);
	}
	*ret_ms = total;
	return 0;
}

int config_parse_size_bytes(const char *text, uint64_t *ret_bytes)
{
	const char *s = skip_space(text);
	uint64_t v;
	int r;

	r = parse_term(&s, size_units, &v);
	if (r < 0)
		return r;
	if (*skip_space(s))
		return -EINVAL;
	*ret_bytes = v;
	return 0;
}

static int parse_plain(const char *text, uint64_t *ret)
{
	const char *s = skip_space(text);
	int r = parse_number(&s, ret);

	if (r < 0)
		return r;
	return *skip_space(s) ? -EINVAL : 0;
}

static void config_store(const struct key_spec *k, struct croft_config *cfg, uint64_t v)
{
	char *field = (char *)cfg + k->offset;

	if (k->kind == KEY_U32 || k->kind == KEY_CHOICE) {
		uint32_t u = (uint32_t)v;
		memcpy(field, &u, sizeof(u));
	} else if (k->kind == KEY_INT) {
		int i = (int)v;
		memcpy(field, &i, sizeof(i));
	} else {
		memcpy(field, &v, sizeof(v));
	}
}

static void config_set_string(struct config_parse *p, const struct key_spec *k, const char *value)
{
	size_t len = strlen(value);

	if (len >= k->size) {
		config_error(p, p->lineno, k->name, "longer than %zu bytes", k->size - 1);
		return;
	}
	if (len < k->min) {
		config_error(p, p->lineno, k->name, "must not be empty");
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f) {
			config_error(p, p->lineno, k->name, "contains a control character");
			return;
		}
	}
	memcpy((char *)&p->cfg + k->offset, value, len + 1);
}

/*
 * Names split at commas and blanks, each [A-Za-z0-9._+-], no longer than
 * CONFIG_NAME_MAX: what a file name (no '/') or a comm holds.  A key given
 * again adds its names (a line holds fewer bytes than a list may).
 */
static void config_set_names(
	struct config_parse *p, const struct key_spec *k, const char *value, bool add)
{
	char joined[CONFIG_NAMES_MAX + 2];
	size_t run = 0;

	for (const char *c = value;; c++) {
		if (*c == '\0' || *c == ',' || *c == ' ' || *c == '\t') {
			run = 0;
			if (*c == '\0')
				break;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			    (*c >= '0' && *c <= '9') || strchr("._+-", *c))) {
			config_error(p, p->lineno, k->name,
				"'%.64s': names hold letters, digits and . _ + - only", value);
			return;
		}
		if (++run > CONFIG_NAME_MAX) {
			config_error(p, p->lineno, k->name, "a name longer than %d bytes",
				CONFIG_NAME_MAX);
			return;
		}
	}
	if (add && *value) {
		const char *had = (const char *)&p->cfg + k->offset;

		snprintf(joined, sizeof(joined), "%s%s%s", had, *had ? ", " : "", value);
		value = joined;
	}
	config_set_string(p, k, value);
}

/* The place of value among the words of k->range ("auto|off": auto 0, off 1). */
static void config_set_choice(struct config_parse *p, const struct key_spec *k, const char *value)
{
	size_t len = strlen(value);
	uint64_t place = 0;

	for (const char *w = k->range; *w; place++) {
		size_t wlen = strcspn(w, "|");

		if (wlen == len && !strncmp(w, value, len)) {
			config_store(k, &p->cfg, place);
			return;
		}
		w += wlen + (w[wlen] == '|');
	}
	config_error(p, p->lineno, k->name, "'%.64s' is not one of %s", value, k->range);
}

static void config_set(
	struct config_parse *p, const struct key_spec *k, const char *value, bool again)
{
	uint64_t v;
	int r;

	switch (k->kind) {
	case KEY_STRING:
		config_set_string(p, k, value);
		return;
	case KEY_NAMES:
		config_set_names(p, k, value, again);
		return;
	case KEY_CHOICE:
		config_set_choice(p, k, value);
		return;
	case KEY_DURATION:
		r = config_parse_duration_ms(value, &v);
		break;
	case KEY_SIZE:
		r = config_parse_size_bytes(value, &v);
		break;
	default:
		r = parse_plain(value, &v);
		break;
	}
	if (r == -EINVAL) {
		config_error(p, p->lineno, k->name, "'%.64s' is not a %s", value,
			k->kind == KEY_DURATION ? "duration (e.g. 500ms, 2s, 1h, 30d)"
			: k->kind == KEY_SIZE   ? "size (e.g. 4096, 512MiB, 1GiB)"
						: "whole number");
		return;
	}
	if (r < 0 || v < k->min || v > k->max) {
		config_error(p, p->lineno, k->name, "'%.64s' is out of range %s", value, k->range);
		return;
	}
	config_store(k, &p->cfg, v);
}

const char *config_key_at(size_t i, const char **ret_section)
{
	if (i >= KEYS_COUNT)
		return NULL;
	*ret_section = config_sections[config_keys[i].section];
	return config_keys[i].name;
}

/* Names are unique across sections (unit config checks): found in another, it belongs there. */
static void config_key(struct config_parse *p, const char *name, const char *value)
{
	size_t i = 0;
	bool again;

	if (p->section == -2)
		return; /* already reported at the header */
	if (p->section == -1) {
		config_error(p, p->lineno, name, "outside of a section");
		return;
	}
	while (i < KEYS_COUNT && strcmp(config_keys[i].name, name))
		i++;
	again = i < KEYS_COUNT && p->key_line[i] != 0;
	if (i == KEYS_COUNT)
		config_error(
			p, p->lineno, name, "unknown key in [%s]", config_sections[p->section]);
	else if (config_keys[i].section != p->section)
		config_error(p, p->lineno, name, "belongs in [%s], not [%s]",
			config_sections[config_keys[i].section], config_sections[p->section]);
	else if (again && config_keys[i].kind != KEY_NAMES)
		config_error(p, p->lineno, name, "set twice (first at line %d)", p->key_line[i]);
	else {
		p->key_line[i] = p->lineno;
		config_set(p, &config_keys[i], value, again);
	}
}

/* s without the blanks at its end (it is writable). */
static char *trim_end(char *s)
{
	size_t len = strlen(s);

	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		s[--len] = '\0';
	return s;
}

/*
 * One line, copied into p->line: a comment (';' or '#' first), a
 * "[section]", or "key = value" (or "key: value"), where a ';' after a
 * blank starts a comment.
 */
static void config_line(struct config_parse *p, const char *start, size_t len)
{
	char *line, *sep, *value;

	if (len > CONFIG_LINE_MAX) {
		config_error(p, p->lineno, NULL, "line longer than %d bytes", CONFIG_LINE_MAX);
		return;
	}
	if (!utf8_valid((const unsigned char *)start, len)) {
		config_error(p, p->lineno, NULL, "not valid UTF-8 (or a NUL byte)");
		return;
	}
	memcpy(p->line, start, len);
	p->line[len] = '\0';
	line = trim_end((char *)skip_space(p->line));
	if (*line == '\0' || *line == ';' || *line == '#')
		return;
	if (*line == '[') {
		config_section_line(p, line);
		return;
	}
	sep = strpbrk(line, "=:");
	if (!sep) {
		config_error(p, p->lineno, NULL, "expected 'key = value'");
		return;
	}
	*sep = '\0';
	value = (char *)skip_space(sep + 1);
	for (char *c = value; (c = strchr(c, ';')); c++) {
		if (c > value && (c[-1] == ' ' || c[-1] == '\t')) {
			*c = '\0';
			break;
		}
	}
	if (!*trim_end(line)) {
		config_error(p, p->lineno, NULL, "a value without a key");
		return;
	}
	config_key(p, line, trim_end(value));
}

static void config_parse_lines(struct config_parse *p)
{
	while (p->pos < p->len) {
		const char *start = p->buf + p->pos;
		const char *nl = memchr(start, '\n', p->len - p->pos);
		size_t len = nl ? (size_t)(nl - start) : p->len - p->pos;

		p->pos += len + (nl ? 1 : 0);
		p->lineno++;
		if (len > 0 && start[len - 1] == '\r')
			len--;
		config_line(p, start, len);
	}
}

int config_load(const char *path, enum config_missing missing, struct croft_config *ret_cfg,
	char **ret_errors)
{
	struct config_parse *p;
	char *buf = NULL;
	size_t len = 0;
	int r;

	*ret_errors = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->path = path;
	p->section = -1;
	config_defaults(&p->cfg);
	r = file_read_bounded(path, CONFIG_FILE_MAX, &buf, &len);
	if (r == -ENOENT && missing == CONFIG_MISSING_DEFAULTS) {
		*ret_cfg = p->cfg;
		free(p);
		return CONFIG_DEFAULTS_TAKEN;
	}
	if (r == -EFBIG) {
		config_error(p, 0, NULL, "cannot read: larger than %u bytes", CONFIG_FILE_MAX);
	} else if (r == -EACCES && geteuid() != 0) {
		/* a reload after the privilege drop: the kept directory's own modes count */
		config_error(p, 0, NULL,
			"cannot read as uid %u: %s (the file must be readable, and its directory "
			"searchable, by that user)",
			(unsigned)geteuid(), file_read_strerror(r));
	} else if (r < 0) {
		config_error(p, 0, NULL, "cannot read: %s", file_read_strerror(r));
	} else {
		p->buf = buf;
		p->len = len;
		config_parse_lines(p);
	}
	/* errors is NULL while none was counted; with some, it is the caller's */
	r = p->errors_count ? -EINVAL : 0;
	if (r == 0)
		*ret_cfg = p->cfg;
	else
		*ret_errors = p->errors ? p->errors : strdup("config: out of memory\n");
	free(buf);
	free(p);
	return r;
}
