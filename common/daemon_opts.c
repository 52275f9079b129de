/*
 * daemon_opts.c: the command line the three daemons share: their common
 * options, usage and its errors, and -n.  Runs in each daemon, before the
 * privilege drop.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "usage.h"

void daemon_opts_init(struct daemon_opts *opts, const char *name, const char *extra_usage)
{
	daemon_status_start(name);
	memset(opts, 0, sizeof(*opts));
	opts->name = name;
	opts->extra_usage = extra_usage;
	opterr = 0; /* bad options are said by daemon_bad_option, naming the daemon */
	opts->config_path = CROFT_CONF_PATH;
	opts->runtime_dir = CROFT_RUNTIME_DIR;
	const char *env = getenv(CONFIG_PATH_ENV);
	if (env && *env) {
		opts->config_path = env;
		opts->config_given = true;
	}
}

void daemon_usage(const struct daemon_opts *opts, int status)
{
	FILE *out = status == 0 ? stdout : stderr;

	fprintf(out,
		"usage: %s [options]\n"
		"  -c, --config FILE       configuration (default %s, where missing means\n"
		"                          the defaults; a FILE named here must be readable)\n"
		"  -r, --runtime-dir DIR   sockets (default %s)\n"
		"  -u, --user NAME         user to drop to (default %s, else %s)\n"
		"  -n                      check the configuration and exit\n"
		"  -v                      verbose (debug) logging\n"
		"  -h, --help              this text\n"
		"  -V, --version           print the version\n"
		"%s",
		opts->name, CROFT_CONF_PATH, CROFT_RUNTIME_DIR, CROFT_USER, CROFT_FALLBACK_USER,
		opts->extra_usage ? opts->extra_usage : "");
	exit(status);
}

bool daemon_option(struct daemon_opts *opts, int opt, const char *arg)
{
	switch (opt) {
	case 'c':
		opts->config_path = arg;
		opts->config_given = true;
		return true;
	case 'r':
		opts->runtime_dir = arg;
		return true;
	case 'u':
		opts->user = arg;
		return true;
	case 'n':
		opts->check_only = true;
		return true;
	case 'v':
		opts->verbose = true;
		return true;
	case 'h':
		daemon_usage(opts, 0);
	case 'V':
		printf("%s %s\n", opts->name, CROFT_VERSION);
		exit(0);
	default:
		return false; /* the daemon's own, or daemon_bad_option's */
	}
}

void daemon_bad_option(const struct daemon_opts *opts, char *const *argv, int opt)
{
	if (opt == '?' || opt == ':')
		exit(usage_getopt(opts->name, argv, opt));
	exit(usage_error(opts->name, "option '%s' is not handled", argv[optind - 1]));
}

void daemon_usage_error(const struct daemon_opts *opts, const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	exit(usage_error(opts->name, "%s", message));
}

void daemon_args_done(const struct daemon_opts *opts, int argc, char *const *argv)
{
	if (optind != argc)
		daemon_usage_error(opts, "unexpected argument '%s'", argv[optind]);
	log_init(opts->name, opts->verbose);
}

void daemon_checked(const struct daemon_opts *opts, const char *fmt, ...)
{
	va_list ap;

	if (!opts->check_only)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(0);
}
