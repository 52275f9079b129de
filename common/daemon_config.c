/*
 * daemon_config.c: a daemon's configuration file, loaded at start and at
 * reload, and its directory kept open across the privilege drop.  Runs in
 * each daemon.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "fileio.h"
#include "log.h"

/* The default path was missing at start and has been since. */
static bool config_never_read;

void daemon_load_config(const struct daemon_opts *opts, struct croft_config *ret_cfg)
{
	char *errors = NULL;
	int r;

	config_defaults(ret_cfg);
	r = config_load(opts->config_path,
		opts->config_given ? CONFIG_MISSING_REFUSED : CONFIG_MISSING_DEFAULTS, ret_cfg,
		&errors);
	if (r == CONFIG_DEFAULTS_TAKEN) {
		config_never_read = true;
		log_notice("%s: no such file; running on the defaults", opts->config_path);
		return;
	}
	if (r == 0)
		return;
	fprintf(stderr, "%s", errors ? errors : "");
	fatalx("%s: configuration refused%s%s", opts->config_path, errors ? "" : ": ",
		errors ? "" : strerror(-r));
}

int daemon_reload_config(const char *path, struct croft_config *ret_cfg, char **ret_errors)
{
	int r;

	config_defaults(ret_cfg);
	r = config_load(path, config_never_read ? CONFIG_MISSING_DEFAULTS : CONFIG_MISSING_REFUSED,
		ret_cfg, ret_errors);
	if (r == 0)
		config_never_read = false; /* from now on it must stay readable */
	return r < 0 ? r : 0;
}

void daemon_keep_file(const char *path)
{
	int ret;

	if (!path || !*path)
		return;
	ret = file_keep_dir(path);
	if (ret == -ENOENT)
		log_debug("%s: no directory to keep; reload opens it by name", path);
	else if (ret < 0)
		log_warnx("%s: cannot keep its directory open (%s); reload opens it by name", path,
			strerror(-ret));
}
