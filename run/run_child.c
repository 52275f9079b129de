/*
 * run_child.c: one daemon supervised by `croft run`: fork + exec with its
 * stdout/stderr on a pipe whose lines are relayed with the daemon's tag, a
 * notify socketpair (DAEMON_NOTIFY_FD_ENV) for READY=1 and watchdog pings,
 * the supervisor pipe's read end, reaping and restart with backoff.  Runs
 * in the croft command, as the invoking user.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "run.h"

void child_init(struct child *child, struct run *run, const char *name, const char *tag)
{
	memset(child, 0, sizeof(*child));
	child->name = name;
	child->tag = tag;
	child->run = run;
	child->notify_fd = child->notify_child_fd = -1;
	child->backoff_ms = RUN_BACKOFF_MIN_MS;
}

static void child_relay_lines(struct child *child, struct evbuffer *in, bool eof)
{
	char *line;
	size_t len;

	while ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF))) {
		fprintf(stderr, "%-7s | %s\n", child->tag, line);
		free(line);
	}
	/* a line longer than the limit, or a last line without its newline */
	len = evbuffer_get_length(in);
	if (len >= RUN_LOG_LINE_MAX || (eof && len > 0)) {
		char buf[RUN_LOG_LINE_MAX];
		size_t n = evbuffer_remove(in, buf, sizeof(buf) - 1);
		buf[n] = '\0';
		fprintf(stderr, "%-7s | %s\n", child->tag, buf);
	}
	fflush(stderr);
}

/* Relays what the log pipe still holds (a last line without its newline too), then closes it. */
static void child_close_log(struct child *child)
{
	if (!child->log)
		return;
	child_relay_lines(child, bufferevent_get_input(child->log), true);
	bufferevent_free(child->log);
	child->log = NULL;
}

static void child_close_io(struct child *child)
{
	child_close_log(child); /* what the last instance left, before the pipe goes */
	if (child->notify_ev) {
		event_free(child->notify_ev);
		child->notify_ev = NULL;
	}
	if (child->notify_fd >= 0) {
		close(child->notify_fd);
		child->notify_fd = -1;
	}
	if (child->notify_child_fd >= 0) {
		close(child->notify_child_fd);
		child->notify_child_fd = -1;
	}
}

void child_free(struct child *child)
{
	child_close_io(child);
	if (child->restart_timer)
		event_free(child->restart_timer);
	if (child->stop_timer)
		event_free(child->stop_timer);
	for (int i = 0; i < child->argc; i++)
		free(child->argv[i]);
	child->restart_timer = child->stop_timer = NULL;
	child->argc = 0;
}

void child_arg(struct child *child, const char *arg, const char *value)
{
	const char *args[] = { arg, value };

	for (size_t i = 0; i < 2 && args[i] && !child->args_error; i++) {
		if (child->argc + 1 >= RUN_ARGV_MAX)
			child->args_error = -E2BIG;
		else if (!(child->argv[child->argc] = strdup(args[i])))
			child->args_error = -ENOMEM;
		else
			child->argv[++child->argc] = NULL;
	}
}

static void child_log_read(struct bufferevent *bev, void *arg)
{
	child_relay_lines(arg, bufferevent_get_input(bev), false);
}

static void child_log_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		child_close_log(arg);
}

/* sd_notify datagrams: "READY=1\nSTATUS=...\n", "WATCHDOG=1". */
static void child_notify_read(evutil_socket_t fd, short what, void *arg)
{
	struct child *child = arg;
	char buf[4096];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		buf[n] = '\0';
		for (char *save = NULL, *tok = strtok_r(buf, "\n", &save); tok;
			tok = strtok_r(NULL, "\n", &save)) {
			if (!strcmp(tok, "WATCHDOG=1")) {
				child->alive_ms = clock_mono_ms();
			} else if (!strcmp(tok, "READY=1") && child->state == CHILD_STARTING) {
				child->alive_ms = clock_mono_ms();
				child->state = CHILD_READY;
				child->run->child_ready(child->run, child);
			} else if (!strncmp(tok, "STATUS=", 7)) {
				log_debug("%s status: %s", child->name, tok + 7);
			}
		}
	}
}

/*
 * A datagram socketpair a start: croft run reads one end, the daemon alone
 * inherits the other (DAEMON_NOTIFY_FD_ENV).  No name another user could
 * send spoofed pings to or bind first, as with an abstract NOTIFY_SOCKET.
 */
static int child_notify_open(struct child *child)
{
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -errno;
	evutil_make_socket_nonblocking(fds[0]);
	child->notify_fd = fds[0];
	child->notify_child_fd = fds[1];
	child->notify_ev =
		event_new(child->run->base, fds[0], EV_READ | EV_PERSIST, child_notify_read, child);
	if (!child->notify_ev || event_add(child->notify_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* In the forked child: own process group (the terminal's Ctrl-C is for croft
 * run alone, which stops the daemons in order), the pipe as stdout/stderr,
 * the supervisor pipe's read end kept across exec (a copy above stderr). */
static void child_exec(struct child *child, int log_fd)
{
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int supervisor_fd = fcntl(child->run->supervisor_fds[0], F_DUPFD, STDERR_FILENO + 1);
	int notify_fd = fcntl(child->notify_child_fd, F_DUPFD, STDERR_FILENO + 1);
	char fd_text[16];

	setpgid(0, 0);
	if (null_fd < 0 || supervisor_fd < 0 || notify_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
		dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
		_exit(127);
	snprintf(fd_text, sizeof(fd_text), "%d", supervisor_fd);
	setenv(DAEMON_SUPERVISOR_FD_ENV, fd_text, 1);
	snprintf(fd_text, sizeof(fd_text), "%d", notify_fd);
	setenv(DAEMON_NOTIFY_FD_ENV, fd_text, 1);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	unsetenv("JOURNAL_STREAM");
	char usec[32];
	snprintf(usec, sizeof(usec), "%llu", (unsigned long long)child->run->watchdog_ms * 1000);
	setenv("WATCHDOG_USEC", usec, 1); /* the daemons ping at half of it */
	unsetenv("WATCHDOG_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("NOTIFY_SOCKET");
	execv(child->path, child->argv);
	fprintf(stderr, "croft run: cannot execute %s: %s\n", child->path, strerror(errno));
	_exit(127);
}

int child_start(struct child *child)
{
	int pipe_fds[2], ret;
	pid_t pid;

	if (child->args_error)
		return child->args_error;
	child_close_io(child);
	ret = child_notify_open(child);
	if (ret < 0)
		return ret;
	if (pipe2(pipe_fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return ret;
	}
	if (pid == 0)
		child_exec(child, pipe_fds[1]);
	close(pipe_fds[1]);
	close(child->notify_child_fd); /* the daemon's alone now */
	child->notify_child_fd = -1;
	evutil_make_socket_nonblocking(pipe_fds[0]);
	child->log = bufferevent_socket_new(child->run->base, pipe_fds[0], BEV_OPT_CLOSE_ON_FREE);
	if (!child->log) {
		close(pipe_fds[0]);
		return -ENOMEM;
	}
	bufferevent_setcb(child->log, child_log_read, NULL, child_log_event, child);
	bufferevent_enable(child->log, EV_READ);
	child->pid = pid;
	child->state = CHILD_STARTING;
	child->started_ms = clock_mono_ms();
	log_info("started %s (pid %d)", child->name, (int)pid);
	return 0;
}

static void child_stop_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct child *child = arg;

	if (child->state != CHILD_STOPPING)
		return;
	log_warnx("%s (pid %d) did not stop within %d s: killing it", child->name, (int)child->pid,
		RUN_STOP_TIMEOUT_MS / 1000);
	kill(child->pid, SIGKILL);
}

void child_stop(struct child *child)
{
	struct timeval tv = { RUN_STOP_TIMEOUT_MS / 1000, 0 };

	if (child->restart_timer)
		event_del(child->restart_timer);
	if (child->pid <= 0) {
		child->state = CHILD_EXITED;
		return;
	}
	log_info("stopping %s (pid %d)", child->name, (int)child->pid);
	child->state = CHILD_STOPPING;
	kill(child->pid, SIGTERM);
	if (!child->stop_timer)
		child->stop_timer = evtimer_new(child->run->base, child_stop_timeout, child);
	if (child->stop_timer)
		evtimer_add(child->stop_timer, &tv);
}

static struct child *child_by_pid(struct run *run, pid_t pid)
{
	for (size_t i = 0; i < run->nchildren; i++)
		if (run->children[i] && run->children[i]->pid == pid)
			return run->children[i];
	return NULL;
}

void child_reap_all(struct run *run)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct child *child = child_by_pid(run, pid);
		if (!child)
			continue;
		child->last_pid = pid;
		child->pid = 0;
		child->exit_status = status;
		if (child->stop_timer)
			event_del(child->stop_timer);
		/* what the daemon wrote last, before the exit is reported */
		if (child->log)
			child_log_read(child->log, child);
		run->child_exited(run, child);
	}
}

static void child_restart_fire(evutil_socket_t fd, short what, void *arg)
{
	struct child *child = arg;
	int ret;

	if (child->run->stopping)
		return;
	child->restarts++;
	ret = child_start(child);
	if (ret < 0) {
		errno = -ret;
		log_warn("cannot restart %s", child->name);
		child_schedule_restart(child);
	}
}

void child_schedule_restart(struct child *child)
{
	uint64_t up_ms = clock_mono_ms() - child->started_ms;
	struct timeval tv;

	if (up_ms >= RUN_HEALTHY_MS)
		child->backoff_ms = RUN_BACKOFF_MIN_MS;
	tv.tv_sec = (time_t)(child->backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(child->backoff_ms % 1000) * 1000;
	log_warnx("restarting %s in %.1f s (restart %u)", child->name,
		(double)child->backoff_ms / 1000.0, child->restarts + 1);
	child->state = CHILD_IDLE;
	child->backoff_ms *= 2;
	if (child->backoff_ms > RUN_BACKOFF_MAX_MS)
		child->backoff_ms = RUN_BACKOFF_MAX_MS;
	if (!child->restart_timer)
		child->restart_timer = evtimer_new(child->run->base, child_restart_fire, child);
	if (child->restart_timer)
		evtimer_add(child->restart_timer, &tv);
}

void child_check_alive(struct child *child, uint64_t now_ms)
{
	if (child->state != CHILD_READY || child->pid <= 0 ||
		now_ms - child->alive_ms < child->run->watchdog_ms)
		return;
	log_warnx("%s (pid %d) sent no watchdog ping for %.1f s: killing it", child->name,
		(int)child->pid, (double)(now_ms - child->alive_ms) / 1000.0);
	child->alive_ms = now_ms; /* once; the exit restarts it */
	kill(child->pid, SIGKILL);
}
