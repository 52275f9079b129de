/*
 * catalog_cmd.c: `croft catalog show` prints the built-in framework catalog
 * (to copy and edit) and `croft catalog check FILE` validates one the way
 * croft-sampler will.  Runs as the invoking user; reads only FILE.
 */
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"
#include "usage.h"

static int catalog_usage(FILE *out, int status)
{
	fprintf(out, "usage: croft catalog show         print the built-in framework catalog\n"
		     "       croft catalog check FILE   validate a catalog file\n"
		     "A catalog file replaces the built-in one: croft-sampler --frameworks FILE,\n"
		     "CROFT_FRAMEWORKS=FILE or frameworks = FILE in [sampler] of croft.conf.\n");
	return status;
}

static int catalog_check(const char *path)
{
	char err[CATALOG_ERR_MAX];
	struct catalog *cat;

	if (catalog_load_file(path, &cat, err, sizeof(err))) {
		fprintf(stderr, "croft catalog: %s\n", err);
		return 1;
	}
	printf("%s: OK, %zu framework%s:", path, cat->entries_count,
		cat->entries_count == 1 ? "" : "s");
	for (size_t i = 0; i < cat->entries_count; i++)
		printf(" %s", cat->entries[i].name);
	printf("\n");
	catalog_free(cat);
	return 0;
}

int cmd_catalog(int argc, char **argv)
{
	const char *program = "croft catalog";

	if (argc < 2)
		return usage_error(program, "give show or check FILE");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return catalog_usage(stdout, 0);
	if (!strcmp(argv[1], "show")) {
		if (argc > 2)
			return usage_error(program, "show takes no argument (got '%s')", argv[2]);
		fwrite(catalog_builtin_json, 1, catalog_builtin_json_len, stdout);
		return fflush(stdout) ? 1 : 0;
	}
	if (!strcmp(argv[1], "check")) {
		if (argc != 3)
			return usage_error(program,
				argc < 3 ? "check needs a FILE"
					 : "check takes one FILE (got '%s' too)",
				argv[argc - 1]);
		return catalog_check(argv[2]);
	}
	if (argv[1][0] == '-')
		return usage_error(program, "unrecognized option '%s'", argv[1]);
	return usage_error(program, "unknown action '%s' (show or check FILE)", argv[1]);
}
