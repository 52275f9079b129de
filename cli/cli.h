/*
 * cli.h: the subcommands of the `croft` command (croft.c dispatches on
 * argv[1]; croft stats and croft profile are in readers/readers.h).  Each
 * takes argc/argv with argv[0] the subcommand's name and returns the
 * process exit status.  Runs as the invoking user.
 */
#ifndef CROFT_CLI_H
#define CROFT_CLI_H

/* run.c: the three daemons in the foreground */
int cmd_run(int argc, char **argv);
/* catalog_cmd.c (sampler) */
int cmd_catalog(int argc, char **argv);

#endif
