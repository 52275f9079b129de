/*
 * daemon_loop.c: the loop every daemon runs: signals (stop, reload), the
 * systemd watchdog and croft run's supervisor pipe; and what a daemon tells
 * its supervisor (READY=1, STATUS=, WATCHDOG=1, STOPPING=1): croft run
 * through its notify socketpair, else systemd (a no-op outside it).  Runs
 * in each daemon.
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
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "log.h"

#define DAEMON_SIGNALS 3 /* SIGTERM, SIGINT, SIGHUP */

/* What daemon_run keeps while the loop runs. */
struct daemon_loop {
	struct event_base *base;
	daemon_stop_fn stop;
	daemon_reload_fn reload;
	void *ctx;
	struct event *events[DAEMON_SIGNALS + 2]; /* the signals, the watchdog, croft run's pipe */
};

/*
 * An fd croft run hands down, named by the environment variable env_name
 * (then unset): -1 when none, or when not an open one (said, with what is
 * then not done).
 */
static int daemon_inherited_fd(const char *env_name, const char *unless)
{
	const char *env = getenv(env_name);
	char *end;
	long fd;

	if (!env)
		return -1;
	errno = 0;
	fd = strtol(env, &end, 10);
	if (errno || end == env || *end || fd < 3 || fd > INT_MAX ||
		fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
		log_warnx("%s=%s: not an open descriptor; %s", env_name, env, unless);
		fd = -1;
	}
	unsetenv(env_name);
	return (int)fd;
}

/* croft run's notify socket: an inherited datagram socketpair end (no name
 * anyone else could send to or bind); -1 when none, -2 before the first look. */
static int daemon_supervisor_notify_fd(void)
{
	static int notify_fd = -2;

	if (notify_fd == -2)
		notify_fd = daemon_inherited_fd(DAEMON_NOTIFY_FD_ENV, "croft run not told");
	return notify_fd;
}

void daemon_notify(const char *text)
{
	int fd = daemon_supervisor_notify_fd();

	if (fd >= 0)
		send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	else
		sd_notify(0, text);
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
	int fd = daemon_inherited_fd(DAEMON_SUPERVISOR_FD_ENV, "croft run not watched");
	struct event *ev;

	if (fd < 0)
		return NULL;
	ev = event_new(base, fd, EV_READ, daemon_supervisor_cb, event_self_cbarg());
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
	daemon_notify("STOPPING=1");
	for (size_t i = 0; i < sizeof(loop.events) / sizeof(loop.events[0]); i++)
		if (loop.events[i])
			event_free(loop.events[i]);
}
