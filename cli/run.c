/*
 * run.c: `croft run`, the three daemons as children in the foreground.
 * Runs as the invoking user (root: the daemons drop to croft or nobody).
 * First version: the daemons have not landed yet.
 */
#include <stdio.h>

#include "cli.h"

int cmd_run(int argc, char **argv)
{
	fprintf(stderr, "croft run: the daemons are not built yet\n");
	return 1;
}
