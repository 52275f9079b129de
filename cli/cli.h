/*
 * cli.h: the subcommands of the `croft` command (croft.c dispatches on
 * argv[1]).  Each takes argc/argv with argv[0] the subcommand's name and
 * returns the process exit status.  Runs as the invoking user.
 */
#ifndef CROFT_CLI_H
#define CROFT_CLI_H

/* run.c: the three daemons in the foreground */
int cmd_run(int argc, char **argv);
/* stats.c (readers) */
int cmd_stats(int argc, char **argv);
/* profile.c (readers) */
int cmd_profile(int argc, char **argv);
/* catalog_cmd.c (sampler) */
int cmd_catalog(int argc, char **argv);

#endif
