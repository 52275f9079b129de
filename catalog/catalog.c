/*
 * catalog.c: parses and validates a framework catalog (JSON array of
 * {name, libraries?, directories?, cmdline?}) and matches mapped paths and
 * command lines against it.  Runs in croft-sampler (croft user) and in
 * `croft catalog` (any user); reads only the file it is given.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "fileio.h"

static void patterns_free(struct catalog_patterns *p)
{
	for (size_t i = 0; i < p->count; i++)
		free(p->items[i]);
	free(p->items);
}

void catalog_free(struct catalog *cat)
{
	if (!cat)
		return;
	for (size_t i = 0; i < cat->entries_count; i++) {
		free(cat->entries[i].name);
		patterns_free(&cat->entries[i].libraries);
		patterns_free(&cat->entries[i].directories);
		patterns_free(&cat->entries[i].cmdline);
	}
	free(cat->entries);
	free(cat->source);
	free(cat);
}

/* Writes "source: entry N ("name"): reason" and returns -EINVAL. */
static int entry_error(char *err, size_t err_len, const char *source, size_t index,
	const char *name, const char *reason)
{
	if (name)
		snprintf(err, err_len, "%s: entry %zu (\"%.64s\"): %s", source, index + 1, name,
			reason);
	else
		snprintf(err, err_len, "%s: entry %zu: %s", source, index + 1, reason);
	return -EINVAL;
}

/* One pattern list; a missing key is an empty list. */
static int parse_patterns(
	json_t *obj, const char *key, struct catalog_patterns *ret, const char **ret_reason)
{
	json_t *arr = json_object_get(obj, key);
	size_t i;
	json_t *v;

	if (!arr)
		return 0;
	if (!json_is_array(arr)) {
		*ret_reason = "a pattern list must be an array of strings";
		return -EINVAL;
	}
	if (json_array_size(arr) > CATALOG_PATTERNS_MAX) {
		*ret_reason = "too many patterns in one list";
		return -EINVAL;
	}
	ret->items = calloc(json_array_size(arr) + 1, sizeof(*ret->items));
	if (!ret->items)
		return -ENOMEM;
	json_array_foreach(arr, i, v)
	{
		const char *s = json_string_value(v);

		if (!s || json_string_length(v) == 0 || strlen(s) != json_string_length(v)) {
			*ret_reason = "a pattern must be a non-empty string";
			return -EINVAL;
		}
		if (json_string_length(v) > CATALOG_PATTERN_MAX) {
			*ret_reason = "a pattern is too long";
			return -EINVAL;
		}
		ret->items[ret->count] = strdup(s);
		if (!ret->items[ret->count])
			return -ENOMEM;
		ret->count++;
	}
	return 0;
}

static const char *check_keys(json_t *obj)
{
	const char *key;
	json_t *v;
	static char reason[128];

	json_object_foreach(obj, key, v)
	{
		if (strcmp(key, "name") && strcmp(key, "libraries") && strcmp(key, "directories") &&
			strcmp(key, "cmdline")) {
			snprintf(reason, sizeof(reason), "unknown key \"%.40s\"", key);
			return reason;
		}
	}
	return NULL;
}

static int parse_entry(struct catalog *cat, json_t *obj, size_t index, char *err, size_t err_len)
{
	struct catalog_entry *e = &cat->entries[index];
	const char *reason = NULL, *name;
	json_t *jname;
	int r;

	if (!json_is_object(obj))
		return entry_error(err, err_len, cat->source, index, NULL, "not an object");
	jname = json_object_get(obj, "name");
	name = json_string_value(jname);
	if (!name || json_string_length(jname) == 0 || strlen(name) != json_string_length(jname))
		return entry_error(
			err, err_len, cat->source, index, NULL, "missing or empty \"name\"");
	if (strlen(name) > CATALOG_NAME_MAX)
		return entry_error(err, err_len, cat->source, index, NULL, "name too long");
	reason = check_keys(obj);
	if (reason)
		return entry_error(err, err_len, cat->source, index, name, reason);
	for (size_t i = 0; i < index; i++) {
		char dup[64];

		if (strcmp(cat->entries[i].name, name))
			continue;
		snprintf(dup, sizeof(dup), "duplicate name (entry %zu has it too)", i + 1);
		return entry_error(err, err_len, cat->source, index, name, dup);
	}
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	cat->entries_count = index + 1;
	r = parse_patterns(obj, "libraries", &e->libraries, &reason);
	if (!r)
		r = parse_patterns(obj, "directories", &e->directories, &reason);
	if (!r)
		r = parse_patterns(obj, "cmdline", &e->cmdline, &reason);
	if (r == -EINVAL)
		return entry_error(err, err_len, cat->source, index, name, reason);
	if (r)
		return r;
	if (!e->libraries.count && !e->directories.count && !e->cmdline.count)
		return entry_error(err, err_len, cat->source, index, name,
			"no pattern (needs libraries, directories or cmdline)");
	return 0;
}

int catalog_parse(const char *text, size_t len, const char *source, struct catalog **ret_cat,
	char *err, size_t err_len)
{
	struct catalog *cat;
	json_error_t jerr;
	json_t *root;
	size_t n;
	int r = 0;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		/* no jansson text: its "near '...'" would quote the file to whoever reads
		 * the error (croftctl, status), and the file may be one they cannot read */
		snprintf(err, err_len, "%s: line %d column %d: broken JSON", source, jerr.line,
			jerr.column);
		return -EINVAL;
	}
	if (!json_is_array(root) || json_array_size(root) == 0 ||
		json_array_size(root) > CATALOG_ENTRIES_MAX) {
		snprintf(err, err_len, "%s: not an array of 1 to %d framework entries", source,
			CATALOG_ENTRIES_MAX);
		json_decref(root);
		return -EINVAL;
	}
	n = json_array_size(root);
	cat = calloc(1, sizeof(*cat));
	if (cat) {
		cat->entries = calloc(n, sizeof(*cat->entries));
		cat->source = strdup(source);
	}
	if (!cat || !cat->entries || !cat->source)
		r = -ENOMEM;
	for (size_t i = 0; !r && i < n; i++)
		r = parse_entry(cat, json_array_get(root, i), i, err, err_len);
	json_decref(root);
	if (r) {
		if (r == -ENOMEM)
			snprintf(err, err_len, "%s: out of memory", source);
		catalog_free(cat);
		return r;
	}
	*ret_cat = cat;
	return 0;
}

int catalog_load_file(const char *path, struct catalog **ret_cat, char *err, size_t err_len)
{
	char *buf;
	size_t len;
	int r = file_read_bounded(path, CATALOG_FILE_MAX, &buf, &len);

	if (r < 0) {
		snprintf(err, err_len, "%s: %s", path, file_read_strerror(r));
		return r;
	}
	r = catalog_parse(buf, len, path, ret_cat, err, err_len);
	free(buf);
	return r;
}

int catalog_load_builtin(struct catalog **ret_cat)
{
	char err[CATALOG_ERR_MAX];

	return catalog_parse(catalog_builtin_json, catalog_builtin_json_len, "built-in", ret_cat,
		err, sizeof(err));
}

int catalog_load(const char *path, struct catalog **ret_cat, char *err, size_t err_len)
{
	if (!path || !*path)
		return catalog_load_builtin(ret_cat);
	return catalog_load_file(path, ret_cat, err, err_len);
}

static bool match_prefix(const struct catalog_patterns *p, const char *base)
{
	for (size_t i = 0; i < p->count; i++)
		if (strncmp(base, p->items[i], strlen(p->items[i])) == 0)
			return true;
	return false;
}

static bool match_within(const struct catalog_patterns *p, const char *text, size_t len)
{
	for (size_t i = 0; i < p->count; i++)
		if (memmem(text, len, p->items[i], strlen(p->items[i])))
			return true;
	return false;
}

size_t catalog_match_path(const struct catalog *cat, const char *path, size_t limit)
{
	const char *base = strrchr(path, '/');
	size_t len = strlen(path);

	base = base ? base + 1 : path;
	if (limit > cat->entries_count)
		limit = cat->entries_count;
	for (size_t i = 0; i < limit; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		if (match_prefix(&e->libraries, base) || match_within(&e->directories, path, len))
			return i;
	}
	return limit;
}

size_t catalog_match_cmdline(
	const struct catalog *cat, const char *args, size_t args_len, size_t limit)
{
	if (limit > cat->entries_count)
		limit = cat->entries_count;
	for (size_t i = 0; i < limit; i++) {
		const char *arg = args, *end = args + args_len;

		if (!cat->entries[i].cmdline.count)
			continue;
		while (arg < end) {
			const char *nul = memchr(arg, '\0', (size_t)(end - arg));
			size_t len = nul ? (size_t)(nul - arg) : (size_t)(end - arg);

			if (match_within(&cat->entries[i].cmdline, arg, len))
				return i;
			arg += len + 1;
		}
	}
	return limit;
}
