/*
 * cli.h: the subcommands of the `croft` command (croft.c dispatches on
 * argv[1]; croft stats and croft profile are in readers/readers.h, croft
 * run in run/run.h).  Each takes argc/argv with argv[0] the subcommand's
 * name and returns the process exit status.  Runs as the invoking user.
 */
#ifndef CROFT_CLI_H
#define CROFT_CLI_H

/* catalog_cmd.c (sampler) */
int cmd_catalog(int argc, char **argv);

#endif
