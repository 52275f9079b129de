/*
 * daemon.c: common option handling, the runtime directory, sd_notify and
 * croft run's supervisor pipe for croft-probe, croft-sampler and
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
#include "log.h"

#define DAEMON_SIGNALS 3 /* SIGTERM, SIGINT, SIGHUP */

struct daemon_notify {
	struct event *watchdog;
	struct event *supervisor; /* croft run's pipe, when it started us */
};

struct daemon_signals {
	struct event *events[DAEMON_SIGNALS];
	daemon_stop_fn stop;
	daemon_reload_fn reload;
	void *ctx;
	struct event_base *base;
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
		"  -c, --config FILE       configuration (default %s; missing = defaults)\n"
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
	case '?':
		daemon_usage(opts, 2);
	default:
		return false;
	}
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
	struct daemon_signals *signals = arg;
	char *errors = NULL;
	int r;

	if (sig != SIGHUP) {
		log_info("signal %d: stopping", (int)sig);
		if (signals->stop)
			signals->stop(signals->ctx);
		else
			event_base_loopexit(signals->base, NULL);
		return;
	}
	r = signals->reload(signals->ctx, &errors);
	if (r < 0)
		log_warnx("SIGHUP: reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
	free(errors);
}

int daemon_signals_new(struct event_base *base, daemon_stop_fn stop, daemon_reload_fn reload,
	void *ctx, struct daemon_signals **ret_signals)
{
	static const int signums[DAEMON_SIGNALS] = { SIGTERM, SIGINT, SIGHUP };
	struct daemon_signals *signals = calloc(1, sizeof(*signals));

	if (!signals)
		return -ENOMEM;
	signal(SIGPIPE, SIG_IGN);
	signals->stop = stop;
	signals->reload = reload;
	signals->ctx = ctx;
	signals->base = base;
	for (int i = 0; i < DAEMON_SIGNALS; i++) {
		signals->events[i] = evsignal_new(base, signums[i], daemon_signal_cb, signals);
		if (!signals->events[i] || evsignal_add(signals->events[i], NULL) < 0) {
			daemon_signals_free(signals);
			return -ENOMEM;
		}
	}
	*ret_signals = signals;
	return 0;
}

void daemon_signals_free(struct daemon_signals *signals)
{
	if (!signals)
		return;
	for (int i = 0; i < DAEMON_SIGNALS; i++)
		if (signals->events[i])
			event_free(signals->events[i]);
	free(signals);
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

/* mkdir -p with mode for what it makes; *ret_st: dir's. */
static int mkdir_p(const char *dir, mode_t mode, struct stat *ret_st)
{
	char path[4096];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = saved;
		if (!saved)
			break;
	}
	if (stat(dir, ret_st) < 0)
		return -errno;
	return S_ISDIR(ret_st->st_mode) ? 0 : -ENOTDIR;
}

int daemon_state_dir(const char *dir, uid_t uid, gid_t gid)
{
	struct stat st;
	int r = mkdir_p(dir, 0700, &st);

	if (r < 0 || uid == (uid_t)-1)
		return r;
	if ((st.st_uid != uid || st.st_gid != gid) && chown(dir, uid, gid) < 0)
		return -errno;
	return 0;
}

int daemon_runtime_dir(const char *dir, gid_t gid)
{
	struct stat st;
	int r = mkdir_p(dir, 0750, &st);

	if (r < 0)
		return r;
	if (geteuid() != 0 || gid == (gid_t)-1)
		return 0;
	/*
	 * Only what differs: under its unit the probe is root in group croft
	 * with chown denied by the unit's seccomp filter (@privileged), and
	 * systemd already made its RuntimeDirectory root:croft 0750.
	 */
	if ((st.st_uid != 0 || st.st_gid != gid) && chown(dir, 0, gid) < 0)
		return -errno;
	if ((st.st_mode & 07777) != 0750 && chmod(dir, 0750) < 0)
		return -errno;
	return 0;
}

static void daemon_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

/* Readable: EOF (croft run is gone) or bytes it never writes. */
static void daemon_supervisor_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon_notify *notify = arg;
	char byte;
	ssize_t n = read(fd, &byte, 1);

	if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) {
		event_add(notify->supervisor, NULL);
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
static void daemon_watch_supervisor(struct daemon_notify *notify, struct event_base *base)
{
	const char *env = getenv(DAEMON_SUPERVISOR_FD_ENV);
	char *end;
	long fd;

	if (!env)
		return;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || end == env || *end || fd < 3 || fd > INT_MAX ||
		fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
		log_warnx("%s=%s: not an open descriptor; croft run not watched",
			DAEMON_SUPERVISOR_FD_ENV, env);
		return;
	}
	unsetenv(DAEMON_SUPERVISOR_FD_ENV);
	notify->supervisor = event_new(base, (int)fd, EV_READ, daemon_supervisor_cb, notify);
	if (!notify->supervisor || event_add(notify->supervisor, NULL) < 0)
		log_warnx("croft run's pipe: cannot watch it");
}

struct daemon_notify *daemon_notify_new(struct event_base *base)
{
	struct daemon_notify *notify = calloc(1, sizeof(*notify));
	uint64_t usec = 0;

	if (!notify)
		return NULL;
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		struct timeval half = { (time_t)(usec / 2 / 1000000),
			(suseconds_t)(usec / 2 % 1000000) };

		notify->watchdog = event_new(base, -1, EV_PERSIST, daemon_watchdog_cb, NULL);
		if (notify->watchdog)
			event_add(notify->watchdog, &half);
	}
	daemon_watch_supervisor(notify, base);
	return notify;
}

void daemon_notify_free(struct daemon_notify *notify)
{
	if (!notify)
		return;
	if (notify->watchdog)
		event_free(notify->watchdog);
	if (notify->supervisor)
		event_free(notify->supervisor);
	free(notify);
}

void daemon_notify_ready(const char *status)
{
	if (status)
		sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	else
		sd_notify(0, "READY=1");
}

void daemon_notify_status(const char *fmt, ...)
{
	char status[256];
	va_list ap;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", status);
}

void daemon_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}
