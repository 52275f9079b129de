/*
 * run.h: the internals of `croft run` (run.c: options, directories and the
 * start/stop sequence; run_child.c: one supervised daemon, its log pipe and
 * its notify socketpair; run_lock.c: one collector a host).  Runs in the croft command, as the
 * invoking user.
 */
#ifndef CROFT_RUN_H
#define CROFT_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct event;
struct bufferevent;

#define RUN_READY_TIMEOUT_MS 15000 /* wait this long for READY=1 before starting the next */
#define RUN_STOP_TIMEOUT_MS  30000 /* SIGTERM, then SIGKILL after this long */
#define RUN_BACKOFF_MIN_MS   1000  /* first restart delay */
#define RUN_BACKOFF_MAX_MS   30000 /* restart delay cap */
#define RUN_HEALTHY_MS       60000 /* up this long: the backoff starts over */
#define RUN_WATCHDOG_MS                                                                            \
	30000 /* no WATCHDOG=1 for this long: hung, killed (as systemd's WatchdogSec) */
#define RUN_WATCHDOG_ENV    "CROFT_RUN_WATCHDOG_S" /* overrides it (tests) */
#define RUN_ARGV_MAX        20
#define RUN_LOG_LINE_MAX    8192 /* bytes of one relayed log line */
#define RUN_PEER_TIMEOUT_MS 1000 /* a control socket that does not answer in this long: gone */
#define RUN_LOCK_PATH       "/run/croft-run.lock" /* the host lock, root's 0600 */
#define RUN_LOCK_ENV        "CROFT_RUN_LOCK"      /* another path: a test's own host */
#define RUN_UNITS_DIR_ENV   "CROFT_RUN_UNITS_DIR" /* as --units-runtime-dir */
/* the longest socket name in the runtime dir (as long as writer.sock) */
#define RUN_LONGEST_SOCKET "sampler.ctl"

enum child_state {
	CHILD_IDLE,     /* not started, or waiting for its restart */
	CHILD_STARTING, /* running, READY=1 not yet seen */
	CHILD_READY,
	CHILD_STOPPING, /* SIGTERM sent */
	CHILD_EXITED,   /* exited during the stop; exit_status holds how */
};

struct run;

struct child {
	const char *name;    /* "croft-writer" */
	const char *tag;     /* "writer": the prefix of its log lines */
	char path[PATH_MAX]; /* the binary */
	char *argv[RUN_ARGV_MAX];
	int argc;
	int args_error; /* 0, or what child_arg met: child_start returns it */
	struct run *run;

	enum child_state state;
	pid_t pid;
	pid_t last_pid;      /* the pid of its last exit, for the log */
	int exit_status;     /* wait status of the last exit */
	uint64_t started_ms; /* CLOCK_MONOTONIC of the last start */
	uint64_t alive_ms;   /* CLOCK_MONOTONIC of its last READY=1 or WATCHDOG=1 */
	unsigned restarts;
	uint64_t backoff_ms;
	struct event *restart_timer;
	struct event *stop_timer;

	struct bufferevent *log; /* the read end of its stdout+stderr */
	int notify_fd;           /* our end of its notify socketpair (DAEMON_NOTIFY_FD_ENV) */
	int notify_child_fd;     /* its end, until the fork hands it over */
	struct event *notify_ev;
};

struct run {
	struct event_base *base;
	struct child *children[3]; /* start order: writer, probe, sampler; NULL: not run */
	size_t nchildren;
	bool stopping;
	bool all_started;     /* the start sequence is over */
	int stop_status;      /* 0, or 1 when a daemon did not exit 0 */
	uint64_t watchdog_ms; /* RUN_WATCHDOG_MS or the environment's */
	/* The supervisor pipe (DAEMON_SUPERVISOR_FD_ENV): each daemon inherits
	 * the read end; the write end is only ours, so its EOF tells them we
	 * are gone, even SIGKILLed.  Made by run_loop. */
	int supervisor_fds[2];
	/* run.c's answers to a child's READY=1 and to its exit (reaped):
	 * run_child.c calls up through them */
	void (*child_ready)(struct run *run, struct child *child);
	void (*child_exited)(struct run *run, struct child *child);
};

/* run.c: `croft run` (argv[0] "run"), the croft command's entry (cli/) */
int cmd_run(int argc, char **argv);

/* run_lock.c */
/* 1 with *ret_why when a unit answers (or its directory refuses us) at
 * <units_dir>/<role>/<role>.ctl, 0 when none, -errno. */
int run_units_running(const char *units_dir, char *ret_why, size_t why_len);
/* As root: flock on the lock file at path, held in *ret_fd (our pid and
 * uid written in it); -EADDRINUSE with the holder in *ret_why, -EPERM when
 * the file is not root's alone.  Not root: 0 and *ret_fd -1 (no lock). */
int run_lock_take(const char *path, int *ret_fd, char *ret_why, size_t why_len);

/* run_child.c */
void child_init(struct child *child, struct run *run, const char *name, const char *tag);
void child_free(struct child *child);
/* Appends arg, and value unless NULL. */
void child_arg(struct child *child, const char *arg, const char *value);
int child_start(struct child *child);
void child_stop(struct child *child);
/* Reaps every exited child; calls run->child_exited for each. */
void child_reap_all(struct run *run);
/* After an unexpected exit: start again after the backoff delay. */
void child_schedule_restart(struct child *child);
/* Kills a ready child whose watchdog pings stopped (it is then restarted). */
void child_check_alive(struct child *child, uint64_t now_ms);

#endif
