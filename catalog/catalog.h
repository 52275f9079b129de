/*
 * catalog.h: the framework catalog (catalog/frameworks.json, built in, or a
 * replacement file): parsing with validation that names file, entry and
 * reason, and matching of mapped paths and command lines.  Used by
 * croft-sampler (croft user) and `croft catalog` (any user).
 */
#ifndef CROFT_CATALOG_H
#define CROFT_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#define CATALOG_FILE_MAX     (1u << 20) /* bytes of a catalog file */
#define CATALOG_ENTRIES_MAX  256
#define CATALOG_PATTERNS_MAX 64  /* per kind, per entry */
#define CATALOG_NAME_MAX     64  /* bytes of a framework name */
#define CATALOG_PATTERN_MAX  256 /* bytes of one pattern */
#define CATALOG_ERR_MAX      512 /* bytes of an error message */
#define CATALOG_ENV          "CROFT_FRAMEWORKS"

struct catalog_patterns {
	char **items;
	size_t count;
};

struct catalog_entry {
	char *name;
	struct catalog_patterns libraries;   /* start of a mapped file's name */
	struct catalog_patterns directories; /* anywhere in a mapped file's path */
	struct catalog_patterns cmdline;     /* anywhere in one argument */
};

struct catalog {
	struct catalog_entry *entries; /* priority order: earliest wins */
	size_t entries_count;
	char *source; /* "built-in" or the file's path */
};

/* The generated copy of catalog/frameworks.json. */
extern const char catalog_builtin_json[];
extern const size_t catalog_builtin_json_len;

/*
 * Parses and validates text.  On -EINVAL err holds "source: entry N
 * (\"name\"): reason" or "source: line L column C: broken JSON" (never the file's text).
 */
int catalog_parse(const char *text, size_t len, const char *source, struct catalog **ret_cat,
	char *err, size_t err_len);
int catalog_load_file(const char *path, struct catalog **ret_cat, char *err, size_t err_len);
int catalog_load_builtin(struct catalog **ret_cat);
/* path NULL or "": the built-in catalog. */
int catalog_load(const char *path, struct catalog **ret_cat, char *err, size_t err_len);
void catalog_free(struct catalog *cat);

/*
 * Lowest entry index below limit that matches, else limit.  A mapped path is
 * the file part of a /proc/<pid>/maps line; args are NUL-separated.
 */
size_t catalog_match_path(const struct catalog *cat, const char *path, size_t limit);
size_t catalog_match_cmdline(
	const struct catalog *cat, const char *args, size_t args_len, size_t limit);

#endif
