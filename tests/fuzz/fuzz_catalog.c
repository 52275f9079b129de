/*
 * fuzz_catalog.c: libFuzzer harness for the framework catalog.  The first
 * byte picks the input: a catalog file (catalog_parse and its validation),
 * or a mapped path and a cmdline matched against the built-in catalog, or
 * a catalog, a NUL, then a path and a cmdline matched against it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "fuzzlib.h"

#define SOURCE "fuzz.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_patterns(const struct catalog_patterns *p)
{
	if (p->count > CATALOG_PATTERNS_MAX)
		abort();
	for (size_t i = 0; i < p->count; i++)
		if (!p->items[i][0] || strlen(p->items[i]) > CATALOG_PATTERN_MAX)
			abort();
}

/* What validation promises of a catalog it accepted. */
static void check_catalog(const struct catalog *cat)
{
	if (cat->entries_count < 1 || cat->entries_count > CATALOG_ENTRIES_MAX)
		abort();
	for (size_t i = 0; i < cat->entries_count; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		if (!e->name[0] || strlen(e->name) > CATALOG_NAME_MAX)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(cat->entries[j].name, e->name))
				abort();
		if (!e->libraries.count && !e->directories.count && !e->cmdline.count)
			abort();
		check_patterns(&e->libraries);
		check_patterns(&e->directories);
		check_patterns(&e->cmdline);
	}
}

static struct catalog *parse(const uint8_t *data, size_t size)
{
	char err[CATALOG_ERR_MAX] = "";
	struct catalog *cat = NULL;

	if (catalog_parse((const char *)data, size, SOURCE, &cat, err, sizeof(err)) < 0) {
		if (strncmp(err, SOURCE ": ", strlen(SOURCE ": ")) != 0)
			abort(); /* every refusal names the file */
		return NULL;
	}
	check_catalog(cat);
	return cat;
}

/*
 * [path][NUL][cmdline]: the earliest match, and with a lower limit the same
 * one or the limit.
 */
static void match(const struct catalog *cat, const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t path_len = nul ? (size_t)(nul - data) : size;
	char *path = fuzz_strndup(data, path_len);
	const char *args = (const char *)data + path_len + (nul != NULL);
	size_t args_len = size - path_len - (nul != NULL);
	size_t n = cat->entries_count, by_path = catalog_match_path(cat, path, n);
	size_t by_args = catalog_match_cmdline(cat, args, args_len, n);

	if (by_path > n || by_args > n)
		abort();
	for (size_t limit = 0; limit < n; limit++)
		if (catalog_match_path(cat, path, limit) != (by_path < limit ? by_path : limit) ||
			catalog_match_cmdline(cat, args, args_len, limit) !=
				(by_args < limit ? by_args : limit))
			abort();
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct catalog *builtin;
	struct catalog *cat;
	const uint8_t *nul;

	if (!builtin && catalog_load_builtin(&builtin) < 0)
		abort();
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		catalog_free(parse(data + 1, size - 1));
		break;
	case 1:
		match(builtin, data + 1, size - 1);
		break;
	default:
		nul = memchr(data + 1, '\0', size - 1);
		if (!nul || !(cat = parse(data + 1, (size_t)(nul - data - 1))))
			break;
		match(cat, nul + 1, (size_t)(data + size - nul - 1));
		catalog_free(cat);
	}
	return 0;
}
