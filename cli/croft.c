/*
 * croft.c: the `croft` command.  Looks the first argument up in a table of
 * subcommands and hands over argc/argv from there.  Runs as the invoking
 * user; `croft run` may be started as root (see run.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "readers.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* One line per subcommand. */
static const struct command commands[] = {
	{ "run", cmd_run, "run the three daemons in the foreground" },
	{ "stats", cmd_stats, "figures over the dataset: processes, GPU use, frameworks" },
	{ "profile", cmd_profile, "one process, container, label or framework over time" },
	{ "catalog", cmd_catalog, "show the built-in framework catalog, check a catalog file" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: croft COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "  %-10s %s\n", "help", "this text");
	fprintf(out, "\n`croft COMMAND --help` describes each; see also croft(1).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("croft %s\n", CROFT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "croft: unknown command '%s'\n", name);
	usage(stderr);
	return 2;
}
