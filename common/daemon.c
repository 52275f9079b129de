/*
 * daemon.c: common option handling, the runtime directory, sd_notify (or
 * croft run's notify socketpair) and croft run's supervisor pipe for croft-probe, croft-sampler and
 * croft-writer.  Runs in each daemon; daemon_keep_file and
 * daemon_runtime_dir run before the privilege drop.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "fileio.h"
#include "handover.h"
#include "log.h"
#include "sandbox.h"
#include "sock.h"
#include "usage.h"

#define DAEMON_SIGNALS 3 /* SIGTERM, SIGINT, SIGHUP */

/* What daemon_run keeps while the loop runs. */
struct daemon_loop {
	struct event_base *base;
	daemon_stop_fn stop;
	daemon_reload_fn reload;
	void *ctx;
	struct event *events[DAEMON_SIGNALS + 2]; /* the signals, the watchdog, croft run's pipe */
};

/* One daemon a process: its name and start, for the status envelope. */
static struct {
	const char *name;
	uint64_t started_ms;    /* CLOCK_MONOTONIC */
	bool config_never_read; /* the default path was missing at start and since */
} daemon_self;

void daemon_opts_init(struct daemon_opts *opts, const char *name, const char *extra_usage)
{
	daemon_self.name = name;
	daemon_self.started_ms = clock_mono_ms();
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

void daemon_load_config(const struct daemon_opts *opts, struct croft_config *ret_cfg)
{
	char *errors = NULL;
	int r;

	config_defaults(ret_cfg);
	r = config_load(opts->config_path,
		opts->config_given ? CONFIG_MISSING_REFUSED : CONFIG_MISSING_DEFAULTS, ret_cfg,
		&errors);
	if (r == CONFIG_DEFAULTS_TAKEN) {
		daemon_self.config_never_read = true;
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
	r = config_load(path,
		daemon_self.config_never_read ? CONFIG_MISSING_DEFAULTS : CONFIG_MISSING_REFUSED,
		ret_cfg, ret_errors);
	if (r == 0)
		daemon_self.config_never_read = false; /* from now on it must stay readable */
	return r < 0 ? r : 0;
}

static void daemon_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct daemon_loop *loop = arg;
	char *errors = NULL;
	int r;

	if (sig != SIGHUP) {
		log_info("signal %d: stopping", (int)sig);
		if (loop->stop)
			loop->stop(loop->ctx);
		else
			event_base_loopexit(loop->base, NULL);
		return;
	}
	r = loop->reload(loop->ctx, &errors);
	if (r < 0)
		log_warnx("SIGHUP: reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
	free(errors);
}

int daemon_control_new(struct event_base *base, const char *runtime_dir, const char *name,
	gid_t gid, ctl_handler_fn handler, void *ctx, struct ctl_server **ret_server,
	char *ret_path)
{
	if (snprintf(ret_path, PATH_MAX, "%s/%s", runtime_dir, name) >= PATH_MAX)
		return -ENAMETOOLONG;
	return ctl_server_new(base, ret_path, gid, handler, ctx, ret_server);
}

int daemon_ctl_reload(daemon_reload_fn reload, void *ctx, const char *done, struct evbuffer *reply)
{
	char *errors = NULL;
	int r = reload(ctx, &errors);

	if (r < 0) {
		log_warnx("reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
		evbuffer_add_printf(reply, "reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
	} else if (done) {
		evbuffer_add_printf(reply, "%s", done);
	}
	free(errors);
	return r;
}

/* Sets one figure in root, in the object its key's prefix names; its value
 * is taken either way.  -1 on ENOMEM (or with root NULL). */
static int figure_set(json_t *root, const struct daemon_figure *figure)
{
	const char *dot = strchr(figure->key, '.');
	json_t *value = figure->value, *parent = root;
	char name[64];

	if (dot) {
		snprintf(name, sizeof(name), "%.*s", (int)(dot - figure->key), figure->key);
		parent = json_object_get(root, name);
		if (!parent && json_object_set_new(root, name, (parent = json_object())) < 0) {
			json_decref(value);
			return -1;
		}
	}
	return json_object_set_new(parent, dot ? dot + 1 : figure->key, value);
}

void *daemon_figures_new(const struct daemon_figure *figures, size_t count)
{
	json_t *root = json_object();
	bool failed = !root;

	for (size_t i = 0; i < count; i++)
		failed |= figure_set(root, &figures[i]) < 0;
	if (!failed)
		return root;
	json_decref(root);
	return NULL;
}

int daemon_status(const char *state, const char *why, void *figures, struct evbuffer *reply)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:f, s:s, s:s?, s:o}", "daemon", daemon_self.name,
		"version", CROFT_VERSION, "pid", (int)getpid(), "uptime_s",
		(double)(clock_mono_ms() - daemon_self.started_ms) / 1000.0, "state", state, "why",
		why, "figures", (json_t *)figures);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(o);
	if (!text)
		return -ENOMEM;
	evbuffer_add(reply, text, strlen(text));
	free(text);
	return 0;
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

/* croft run's notify socket: an inherited datagram socketpair end (no name
 * anyone else could send to or bind); -1 when none, -2 before the first look. */
static int daemon_supervisor_notify_fd(void)
{
	static int notify_fd = -2;
	const char *env;
	char *end;
	long fd;

	if (notify_fd != -2)
		return notify_fd;
	notify_fd = -1;
	if (!(env = getenv(DAEMON_NOTIFY_FD_ENV)))
		return notify_fd;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || end == env || *end || fd < 3 || fd > INT_MAX ||
		fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
		log_warnx("%s=%s: not an open descriptor; croft run not told", DAEMON_NOTIFY_FD_ENV,
			env);
	else
		notify_fd = (int)fd;
	unsetenv(DAEMON_NOTIFY_FD_ENV);
	return notify_fd;
}

/* To croft run through its socketpair, else to systemd (a no-op outside it). */
static void daemon_notify(const char *text)
{
	int fd = daemon_supervisor_notify_fd();

	if (fd >= 0)
		send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	else
		sd_notify(0, text);
}

static void daemon_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	daemon_notify("WATCHDOG=1");
}

/* Readable: EOF (croft run is gone) or bytes it never writes. */
static void daemon_supervisor_cb(evutil_socket_t fd, short what, void *arg)
{
	char byte;
	ssize_t n = read(fd, &byte, 1);

	if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) {
		event_add(arg, NULL); /* arg: the event itself */
		return;
	}
	log_warnx("croft run is gone (its pipe closed): stopping as on SIGTERM");
	kill(getpid(), SIGTERM); /* the daemon's own SIGTERM path, in its loop */
}

/*
 * croft run names the read end of a pipe whose write end only it holds: it
 * reads EOF once croft run is gone, even SIGKILLed.  (PR_SET_PDEATHSIG
 * would not survive the privilege drop, which clears it.)
 */
static struct event *daemon_watch_supervisor(struct event_base *base)
{
	const char *env = getenv(DAEMON_SUPERVISOR_FD_ENV);
	struct event *ev;
	char *end;
	long fd;

	if (!env)
		return NULL;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || end == env || *end || fd < 3 || fd > INT_MAX ||
		fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
		log_warnx("%s=%s: not an open descriptor; croft run not watched",
			DAEMON_SUPERVISOR_FD_ENV, env);
		return NULL;
	}
	unsetenv(DAEMON_SUPERVISOR_FD_ENV);
	ev = event_new(base, (int)fd, EV_READ, daemon_supervisor_cb, event_self_cbarg());
	if (!ev || event_add(ev, NULL) < 0)
		log_warnx("croft run's pipe: cannot watch it");
	return ev;
}

/* Signals (SIGPIPE ignored), the watchdog at half WATCHDOG_USEC, croft run's pipe. */
static int daemon_loop_arm(struct daemon_loop *loop)
{
	static const int signums[DAEMON_SIGNALS] = { SIGTERM, SIGINT, SIGHUP };
	struct event **ev = loop->events;
	uint64_t usec = 0;

	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < DAEMON_SIGNALS; i++)
		if (!(ev[i] = evsignal_new(loop->base, signums[i], daemon_signal_cb, loop)) ||
			evsignal_add(ev[i], NULL) < 0)
			return -ENOMEM;
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		struct timeval half = { (time_t)(usec / 2 / 1000000),
			(suseconds_t)(usec / 2 % 1000000) };

		ev[DAEMON_SIGNALS] =
			event_new(loop->base, -1, EV_PERSIST, daemon_watchdog_cb, NULL);
		if (!ev[DAEMON_SIGNALS] || event_add(ev[DAEMON_SIGNALS], &half) < 0)
			return -ENOMEM;
	}
	ev[DAEMON_SIGNALS + 1] = daemon_watch_supervisor(loop->base);
	return 0;
}

void daemon_run(struct event_base *base, daemon_stop_fn stop, daemon_reload_fn reload, void *ctx,
	const char *ready_status)
{
	struct daemon_loop loop = { .base = base, .stop = stop, .reload = reload, .ctx = ctx };

	if (daemon_loop_arm(&loop) < 0)
		fatalx("cannot set up signals and timers");
	char ready[320];
	snprintf(ready, sizeof(ready), "READY=1\nSTATUS=%s", ready_status);
	daemon_notify(ready);
	event_base_dispatch(base);
	daemon_notify_stopping();
	for (size_t i = 0; i < sizeof(loop.events) / sizeof(loop.events[0]); i++)
		if (loop.events[i])
			event_free(loop.events[i]);
}

void daemon_notify_status(const char *fmt, ...)
{
	char status[256];
	va_list ap;

	if (!getenv("NOTIFY_SOCKET") && daemon_supervisor_notify_fd() < 0)
		return;
	memcpy(status, "STATUS=", 7);
	va_start(ap, fmt);
	vsnprintf(status + 7, sizeof(status) - 7, fmt, ap);
	va_end(ap);
	daemon_notify(status);
}

void daemon_notify_stopping(void)
{
	daemon_notify("STOPPING=1");
}
