/*
 * daemon_notify.c: what a daemon tells its supervisor (READY=1, STATUS=,
 * WATCHDOG=1, STOPPING=1): croft run through its notify socketpair, else
 * systemd (a no-op outside it).  Runs in each daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "log.h"

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

void daemon_notify_stopping(void)
{
	daemon_notify("STOPPING=1");
}
