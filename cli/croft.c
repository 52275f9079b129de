/*
 * croft.c: the `croft` command.  Looks the first argument up in a table of
 * subcommands and hands over argc/argv from there, argv[0] naming both
 * ("croft run"), as messages do.  Runs as the invoking user; `croft run`
 * may be started as root (see run.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "readers.h"
#include "run.h"
#include "usage.h"

struct command {
	const char *name;
	const char *program; /* what its messages call it */
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* One line per subcommand. */
static const struct command commands[] = {
	{ "run", "croft run", cmd_run, "run the three daemons in the foreground" },
	{ "stats", "croft stats", cmd_stats,
		"figures over the dataset: processes, GPU use, frameworks" },
	{ "profile", "croft profile", cmd_profile,
		"one process, container, label or framework over time" },
	{ "catalog", "croft catalog", cmd_catalog,
		"show the built-in framework catalog, check a catalog file" },
};
#define COMMANDS_COUNT (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: croft COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < COMMANDS_COUNT; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "  %-10s %s\n", "help", "this text; help COMMAND: that command's");
	fprintf(out, "\noptions:\n  %-10s %s\n  %-10s %s\n", "--help", "this text", "--version",
		"croft's version");
	fprintf(out, "\n`croft COMMAND --help` describes each; see also croft(1).\n");
}

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < COMMANDS_COUNT; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* `croft help COMMAND`: that command's --help. */
static int help(const char *name)
{
	const struct command *cmd = command_find(name);
	char help_flag[] = "--help";
	char *argv[] = { (char *)(cmd ? cmd->program : ""), help_flag, NULL };

	if (!cmd)
		return usage_error("croft help",
			"unknown command '%s' (commands: run, stats, "
			"profile, catalog)",
			name);
	return cmd->fn(2, argv);
}

int main(int argc, char **argv)
{
	const struct command *cmd;

	if (argc < 2) {
		usage(stderr);
		return USAGE_EXIT;
	}
	const char *name = argv[1];
	if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
		if (argc > 2 && !strcmp(name, "help"))
			return argc == 3 ? help(argv[2])
					 : usage_error("croft help", "one command at a time");
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("croft %s\n", CROFT_VERSION);
		return 0;
	}
	cmd = command_find(name);
	if (cmd) {
		argv[1] = (char *)cmd->program;
		return cmd->fn(argc - 1, argv + 1);
	}
	if (name[0] == '-')
		return usage_error("croft", "unrecognized option '%s'", name);
	return usage_error("croft",
		"unknown command '%s' (commands: run, stats, profile, catalog, help)", name);
}
