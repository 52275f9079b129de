/*
 * daemon_config.c: what the three daemons do before their loop: the
 * command line they share (common options, usage and its errors, -n), the
 * configuration file it names (loaded at start and at reload, its
 * directory kept open across the drop), the user to drop to, the
 * directories handed to it (runtime and state) and the drop itself.  Runs
 * in each daemon, as root or as the user that started it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "fileio.h"
#include "handover.h"
#include "log.h"
#include "sandbox.h"
#include "sock.h"
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

_Noreturn static void daemon_usage(const struct daemon_opts *opts, int status)
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

void daemon_user(const struct daemon_opts *opts, struct priv_user *ret_user)
{
	if (geteuid() != 0) {
		ret_user->uid = getuid();
		ret_user->gid = getgid();
		snprintf(ret_user->name, sizeof(ret_user->name), "uid %u", (unsigned)ret_user->uid);
	} else if (priv_lookup_user(opts->user, ret_user) < 0) {
		fatalx("no user %s to drop to",
			opts->user ? opts->user : CROFT_USER " (nor " CROFT_FALLBACK_USER ")");
	}
}

void daemon_drop(const struct priv_user *user, const cap_value_t *caps, size_t ncaps,
	const char *const *denied)
{
	bool shared = geteuid() == 0 && strcmp(user->name, CROFT_USER) != 0;
	int r = priv_drop(user, caps, ncaps);

	if (r < 0)
		fatalx("dropping privileges to %s: %s", user->name, strerror(-r));
	/* croft is croft's alone (sysusers.d); any other user, nobody first, is not */
	if (shared)
		sock_shared_identity(user->uid, user->gid);
	if ((r = sandbox_apply(denied)) < 0)
		fatalx("seccomp: %s", strerror(-r));
}

int daemon_state_dir(const char *dir, uid_t uid, gid_t gid, int *ret_fd)
{
	struct handover_want want = {
		.mode = 0700, .parents_mode = 0700, .owner = uid, .group = gid, .daemon_uid = uid
	};

	return handover_dir(dir, &want, ret_fd);
}

int daemon_runtime_dir(const char *dir, gid_t gid)
{
	/* root's, in the daemons' group; one that is there already must be root's
	 * (croft run's, or the probe unit's RuntimeDirectory=) */
	bool root = geteuid() == 0 && gid != (gid_t)-1;
	struct handover_want want = { .mode = 0750,
		.parents_mode = 0750,
		.owner = root ? 0 : (uid_t)-1,
		.group = gid,
		.daemon_uid = 0 };
	int fd, r = handover_dir(dir, &want, &fd);

	if (r < 0)
		return r;
	close(fd);
	return 0;
}
