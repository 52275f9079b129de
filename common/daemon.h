/*
 * daemon.h: what the three daemons share around main(): before the loop,
 * the command line, the configuration file it names, the user, the
 * directories handed to it and the drop (daemon_config.c); the control
 * socket's shared answers (daemon_ctl.c); the loop and systemd's or croft
 * run's notifications (daemon_loop.c).  Outside systemd every notify call
 * is a no-op.  Daemon processes; the runtime dir needs root only to hand it
 * to the croft group.
 */
#ifndef CROFT_DAEMON_H
#define CROFT_DAEMON_H

#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ctl.h"
#include "priv.h"

struct event_base;
struct evbuffer;
struct croft_config;

/*
 * A daemon's reload: re-reads its configuration and applies it, or keeps
 * the running one and returns -errno with a malloc'd *ret_errors (one
 * error a line; NULL when there is only the errno to say).
 */
typedef int (*daemon_reload_fn)(void *ctx, char **ret_errors);
/* SIGTERM or SIGINT; a daemon that ends by event_base_loopexit at once passes NULL. */
typedef void (*daemon_stop_fn)(void *ctx);

/* daemon_config.c */
struct daemon_opts {
	const char *name;        /* "croft-writer" */
	const char *extra_usage; /* lines for the daemon's own options, or NULL */
	const char *config_path; /* default CROFT_CONF_PATH */
	bool config_given;       /* by --config or CROFT_CONFIG: missing is an error */
	const char *runtime_dir; /* default CROFT_RUNTIME_DIR */
	const char *user;        /* NULL: croft, else nobody */
	bool check_only;         /* -n */
	bool verbose;            /* -v */
};

/* Short and long options to put in front of a daemon's own. */
#define DAEMON_SHORT_OPTIONS ":c:r:u:nvhV" /* ":": a missing argument is told apart */
#define DAEMON_LONG_OPTIONS                                                                        \
	{ "config", required_argument, NULL, 'c' },                                                \
		{ "runtime-dir", required_argument, NULL, 'r' },                                   \
		{ "user", required_argument, NULL, 'u' }, { "help", no_argument, NULL, 'h' },      \
	{                                                                                          \
		"version", no_argument, NULL, 'V'                                                  \
	}

/* Also notes the daemon's name and start for daemon_status. */
void daemon_opts_init(struct daemon_opts *opts, const char *name, const char *extra_usage);
/*
 * Inside the getopt_long loop (DAEMON_SHORT_OPTIONS first: getopt says
 * nothing itself): handles a common option (--help and --version print and
 * exit 0).  Returns true when opt was one of them, false when the daemon
 * must handle it; what it does not know goes to daemon_bad_option.
 */
bool daemon_option(struct daemon_opts *opts, int opt, const char *arg);
/* A usage error: "NAME: MESSAGE", "Try 'NAME --help'...", exit 2 (usage.h). */
void daemon_bad_option(const struct daemon_opts *opts, char *const *argv, int opt)
	__attribute__((noreturn));
void daemon_usage_error(const struct daemon_opts *opts, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
/* After the getopt_long loop: no operands (else a usage error), then logging. */
void daemon_args_done(const struct daemon_opts *opts, int argc, char *const *argv);
/* -n: says on stdout what was checked and exits 0; otherwise returns. */
void daemon_checked(const struct daemon_opts *opts, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The user to drop to: as root, --user or croft, else nobody (none: fatal);
 * started unprivileged, the caller itself ("uid N"), whose privileges
 * priv_drop then only narrows.
 */
void daemon_user(const struct daemon_opts *opts, struct priv_user *ret_user);
/* The drop: priv_drop to user keeping caps alone, then the seccomp sandbox
 * (denying the syscalls of denied as well); any failure is fatal. */
void daemon_drop(const struct priv_user *user, const cap_value_t *caps, size_t ncaps,
	const char *const *denied);

/* mkdir -p dir, mode 0750; when root, owner root and group gid ((gid_t)-1: keep),
 * changing only what differs (chown may be denied where nothing needs it),
 * through handover_dir: no symlink on the way, one already there root's. */
int daemon_runtime_dir(const char *dir, gid_t gid);
/* mkdir -p dir, mode 0700, owned by uid:gid ((uid_t)-1: as made): what a
 * daemon keeps across stops and reboots (the units' StateDirectory=);
 * through handover_dir as root: no symlink on the way, one already there
 * root's or uid's and writable by no one else.  *ret_fd: the directory. */
int daemon_state_dir(const char *dir, uid_t uid, gid_t gid, int *ret_fd);

/*
 * Before the privilege drop: keeps path's directory open (file_keep_dir) so
 * that a reload after the drop still reads path however the directories
 * above it are set (a --config in a 0700 home).  NULL or "" does nothing;
 * a failure is logged and reload then opens path by name.
 */
void daemon_keep_file(const char *path);

/*
 * Loads opts->config_path over the defaults.  A bad file is fatal at start:
 * its errors on stderr, one a line, then why the daemon stops (exit 1); so
 * is a missing one that was named explicitly.  The default path missing
 * means the defaults, logged once at notice.
 */
void daemon_load_config(const struct daemon_opts *opts, struct croft_config *ret_cfg);
/*
 * A reload's config_load: a file missing or unreadable now is refused,
 * unless the daemon started on the defaults because the default path was
 * missing then and it still is (nothing changes).
 */
int daemon_reload_config(const char *path, struct croft_config *ret_cfg, char **ret_errors);

/* daemon_ctl.c */
/*
 * The control socket: <runtime_dir>/<name>, status for the croft group gid.
 * Returns 0 or -errno; *ret_path (PATH_MAX bytes) names it for messages.
 */
int daemon_control_new(struct event_base *base, const char *runtime_dir, const char *name,
	gid_t gid, ctl_handler_fn handler, void *ctx, struct ctl_server **ret_server,
	char *ret_path);

/* MT_CTL_RELOAD's answer: reload's result, refusals logged; done (may be NULL) is the reply when it
 * took. */
int daemon_ctl_reload(daemon_reload_fn reload, void *ctx, const char *done, struct evbuffer *reply);

/*
 * One status figure: its key ("live.bytes" goes into the object "live",
 * made where its first figure is) and its value, of the kind its jansson
 * constructor gives (NULL: out of memory).  A daemon's figures are a table
 * of these, written one per row in order.
 */
struct json_t;
struct daemon_figure {
	const char *key;
	struct json_t *value; /* taken */
};
#define FIGURES_COUNT(table) (sizeof(table) / sizeof((table)[0]))

/* The table's figures as a new jansson object; NULL (all taken values freed) on ENOMEM. */
void *daemon_figures_new(const struct daemon_figure *figures, size_t count);

/*
 * MT_CTL_STATUS's answer, the one envelope croftctl reads:
 * {daemon, version, pid, uptime_s, state, why, figures}.  state is "up" or
 * "degraded"; why says what is wrong (NULL: nothing).  Takes figures (a
 * jansson object).  Returns 0 or -ENOMEM.
 */
int daemon_status(const char *state, const char *why, void *figures, struct evbuffer *reply);
/* Notes the daemon's name and start for daemon_status (daemon_opts_init calls it). */
void daemon_status_start(const char *name);

/* daemon_loop.c */
/*
 * croft run's notify socket: the number of an inherited fd, one end of a
 * datagram socketpair made for this daemon alone, taking what NOTIFY_SOCKET
 * would (READY=1, STATUS=, WATCHDOG=1, STOPPING=1).  No name: no other
 * process can send to it or take it (an abstract name could be both).
 */
#define DAEMON_NOTIFY_FD_ENV "CROFT_NOTIFY_FD"

/* To croft run through its socketpair, else to systemd (a no-op outside it). */
void daemon_notify(const char *text);
void daemon_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * croft run's supervisor pipe: the number of an inherited fd, the read end
 * of a pipe whose write end only croft run holds.  At its EOF (croft run
 * gone, even SIGKILLed) the daemon stops as on SIGTERM.
 */
#define DAEMON_SUPERVISOR_FD_ENV "CROFT_SUPERVISOR_FD"
/*
 * The loop, the same for every daemon: SIGPIPE ignored, SIGTERM and SIGINT
 * call stop (NULL: the loop exits), SIGHUP calls reload and logs a refusal
 * (all in the loop, never in the handler); the watchdog timer at half WATCHDOG_USEC when systemd
 * asks for one and croft run's pipe when DAEMON_SUPERVISOR_FD_ENV names one, READY=1 with status,
 * the loop until it exits, STOPPING=1.  Failing to set it up is fatal.
 */
void daemon_run(struct event_base *base, daemon_stop_fn stop, daemon_reload_fn reload, void *ctx,
	const char *ready_status);

#endif
