/*
 * run.c: `croft run`, the three daemons as children in the foreground:
 * writer, then probe (root and BPF only), then sampler, each once the one
 * before is ready; Ctrl-C stops them in the order sampler, probe, writer.
 * Runs as the invoking user; as root it prepares the directories for the
 * user the daemons drop to (croft, else nobody).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "ctl.h"
#include "handover.h"
#include "log.h"
#include "msg.h"
#include "priv.h"
#include "probe_host.h"
#include "run.h"
#include "usage.h"

/* What rows leave out when the probe does not run (DESIGN: field sources). */
#define RUN_PROBE_FIELDS                                                                           \
	"ioctl_count, since_last_gpu_ioctl_ms, usage.ctx_voluntary_s, "                            \
	"usage.ctx_involuntary_s, usage.network_rx_bytes_s, usage.network_tx_bytes_s, "            \
	"usage.runqueue_s, syscalls"

struct run_opts {
	const char *data_dir;
	const char *runtime_dir;
	const char *config;
	const char *frameworks;
	const char *units_dir; /* where the units' sockets are (default CROFT_RUNTIME_DIR) */
	const char *state_dir; /* the sampler's spool and labels (default DATA/sampler-state) */
	bool verbose;
};

static struct child writer, probe, sampler;

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: croft run [--data-dir DIR] [--runtime-dir DIR] [--config FILE]\n"
		"                 [--frameworks FILE] [--state-dir DIR] [--units-runtime-dir DIR]\n"
		"                 [-v]\n"
		"Runs croft-writer, croft-probe (root with BPF only) and croft-sampler in the\n"
		"foreground; Ctrl-C stops them in order with every finished row on disk.\n");
}

static int run_parse(int argc, char **argv, struct run_opts *opts)
{
	static const struct option longopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "frameworks", required_argument, NULL, 'f' },
		{ "units-runtime-dir", required_argument, NULL, 'U' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0; /* said by usage_getopt, naming "croft run" */
	while ((c = getopt_long(argc, argv, ":d:r:c:f:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			opts->data_dir = optarg;
			break;
		case 'r':
			opts->runtime_dir = optarg;
			break;
		case 'c':
			opts->config = optarg;
			break;
		case 'f':
			opts->frameworks = optarg;
			break;
		case 'U':
			opts->units_dir = optarg;
			break;
		case 'S':
			opts->state_dir = optarg;
			break;
		case 'v':
			opts->verbose = true;
			break;
		case 'h':
			run_usage(stdout);
			exit(0);
		default:
			usage_getopt("croft run", argv, c);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		usage_error("croft run", "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!opts->config && getenv(CONFIG_PATH_ENV) && *getenv(CONFIG_PATH_ENV))
		opts->config = getenv(CONFIG_PATH_ENV);
	return 0;
}

/* The daemons next to this binary in the build tree (cli/../writer/), else
 * the installed ones. */
static int run_find_binary(const char *name, const char *subdir, char *ret_path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			int n_path = snprintf(ret_path, len, "%s/../%s/%s", self, subdir, name);
			if (n_path > 0 && (size_t)n_path < len && access(ret_path, X_OK) == 0)
				return 0;
		}
	}
	snprintf(ret_path, len, "%s/%s", CROFT_SBINDIR, name);
	return access(ret_path, X_OK) == 0 ? 0 : -ENOENT;
}

/* Why the probe cannot run here, or NULL when it can. */
static const char *run_probe_blocker(char *buf, size_t len)
{
	if (geteuid() != 0)
		return "croft run is not running as root (run as root, it starts the probe)";
	if (run_find_binary("croft-probe", "probe", probe.path, sizeof(probe.path)) < 0)
		return "croft-probe is not built (meson -Dprobe needs clang, bpftool and BTF)";
	return probe_host_blocker(true, buf, len);
}

/*
 * Root: data dir owned by the drop user, runtime dir root:<its group> 0750,
 * handed over through handover_dir (no symlink followed, one already there
 * root's or the drop user's and writable by no one else).
 * The directories above them need not be open to that user (a checkout in
 * a 0700 home): each daemon opens what it uses in them before its drop
 * (the writer the data dir, the probe and writer their sockets), and the
 * sampler reaches the sockets with its CAP_DAC_READ_SEARCH.
 */
static int run_prepare_dir(
	const char *path, bool data, const struct priv_user *user, char ret_abs[PATH_MAX])
{
	struct handover_want want = { .mode = 0750,
		.parents_mode = 0755,
		.owner = !user  ? (uid_t)-1
			 : data ? user->uid
				: 0,
		.group = user ? user->gid : (gid_t)-1,
		.daemon_uid = user ? user->uid : 0 };
	char fd_path[32];
	ssize_t n;
	int fd, ret = handover_dir(path, &want, &fd);

	if (ret < 0) {
		log_warnx("%s %s: %s; give another --%s",
			user ? "cannot hand over" : "cannot create", path, handover_strerror(ret),
			data ? "data-dir" : "runtime-dir");
		return ret;
	}
	/* absolute, from the fd checked: the daemons get a path that does not depend on our cwd */
	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	n = readlink(fd_path, ret_abs, PATH_MAX - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret < 0 || n >= PATH_MAX - 1)
		return ret < 0 ? ret : -ENAMETOOLONG;
	ret_abs[n] = '\0';
	return 0;
}

/* The socket paths must fit a sockaddr_un. */
static int run_check_runtime_len(const char *runtime_dir)
{
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - sizeof("/" RUN_LONGEST_SOCKET);

	if (strlen(runtime_dir) <= max)
		return 0;
	log_warnx("runtime dir %s is %zu bytes, too long for the socket paths in it (at most "
		  "%zu): give a shorter --runtime-dir",
		runtime_dir, strlen(runtime_dir), max);
	return -ENAMETOOLONG;
}

/* A live writer on this runtime dir means another croft is running there. */
static bool run_already_running(const char *runtime_dir)
{
	char path[PATH_MAX];
	char *text = NULL;
	int status;

	if (snprintf(path, sizeof(path), "%s/writer.ctl", runtime_dir) >= (int)sizeof(path))
		return false;
	if (ctl_request(path, MT_CTL_STATUS, NULL, 0, 1000, &status, &text) < 0)
		return false;
	free(text);
	return true;
}

/* Two collectors on one host would write every row twice: refused, naming
 * what runs and how to stop it.  Holds the host lock in *ret_lock_fd. */
static int run_one_a_host(const struct run_opts *opts, int *ret_lock_fd)
{
	const char *lock_name = getenv(RUN_LOCK_ENV), *units_env = getenv(RUN_UNITS_DIR_ENV);
	const char *units_dir = opts->units_dir           ? opts->units_dir
				: units_env && *units_env ? units_env
							  : CROFT_RUNTIME_DIR;
	char why[PATH_MAX + 256] = "";
	int r;

	r = run_units_running(units_dir, why, sizeof(why));
	if (r == 0)
		r = run_lock_take(lock_name && *lock_name ? lock_name : RUN_LOCK_PATH, ret_lock_fd,
			why, sizeof(why));
	if (r == 0)
		return 0;
	log_warnx("not starting: %s", r < 0 && r != -EADDRINUSE && !why[0] ? strerror(-r) : why);
	return r > 0 ? -EEXIST : r;
}

/* Common flags of the three daemons. */
static void run_base_args(
	struct child *child, const struct run_opts *opts, const struct priv_user *user)
{
	child_arg(child, child->name, NULL);
	child_arg(child, "--runtime-dir", opts->runtime_dir);
	if (opts->config)
		child_arg(child, "--config", opts->config);
	if (user)
		child_arg(child, "--user", user->name);
	if (opts->verbose)
		child_arg(child, "-v", NULL);
}

static void run_setup_children(
	struct run *run, const struct run_opts *opts, const struct priv_user *user)
{
	char why[256];
	const char *blocker;

	run_base_args(&writer, opts, user);
	child_arg(&writer, "--data-dir", opts->data_dir);
	run_base_args(&sampler, opts, user);
	if (opts->frameworks)
		child_arg(&sampler, "--frameworks", opts->frameworks);
	child_arg(&sampler, "--state-dir", opts->state_dir);
	run->children[run->nchildren++] = &writer;
	blocker = run_probe_blocker(why, sizeof(why));
	if (blocker) {
		log_warnx("not starting croft-probe: %s; rows will leave out " RUN_PROBE_FIELDS,
			blocker);
	} else {
		run_base_args(&probe, opts, user);
		run->children[run->nchildren++] = &probe;
	}
	run->children[run->nchildren++] = &sampler;
}

static struct event *ready_timer;

/* Starts the first child of the start order that has not been started. */
static void run_start_next(struct run *run)
{
	struct timeval tv = { RUN_READY_TIMEOUT_MS / 1000, 0 };

	for (size_t i = 0; i < run->nchildren; i++) {
		struct child *child = run->children[i];
		if (child->started_ms)
			continue;
		int ret = child_start(child);
		if (ret < 0) {
			log_warnx("cannot start %s: %s", child->name, strerror(-ret));
			run->stop_status = 1;
			event_base_loopexit(run->base, NULL);
			return;
		}
		evtimer_add(ready_timer, &tv);
		return;
	}
	evtimer_del(ready_timer);
	if (!run->all_started)
		log_info("all daemons started; Ctrl-C stops them");
	run->all_started = true;
}

static void run_ready_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct run *run = arg;

	for (size_t i = 0; i < run->nchildren; i++)
		if (run->children[i]->state == CHILD_STARTING)
			log_warnx("%s did not report ready within %d s; going on",
				run->children[i]->name, RUN_READY_TIMEOUT_MS / 1000);
	run_start_next(run);
}

static void run_child_ready(struct run *run, struct child *child)
{
	log_info("%s ready (pid %d)", child->name, (int)child->pid);
	if (!run->stopping)
		run_start_next(run);
}

/* The stop order: the sampler flushes its last batch while the writer still
 * listens, and the writer goes last. */
static void run_stop_next(struct run *run)
{
	struct child *order[] = { &sampler, &probe, &writer };

	for (size_t i = 0; i < 3; i++) {
		struct child *child = order[i];
		if (child->state == CHILD_STOPPING)
			return;
		if (child->pid > 0) {
			child_stop(child);
			return;
		}
	}
	event_base_loopexit(run->base, NULL);
}

static void run_describe_exit(const struct child *child, char *buf, size_t len)
{
	int status = child->exit_status;

	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (wait status %#x)", status);
}

static void run_child_exited(struct run *run, struct child *child)
{
	bool clean = WIFEXITED(child->exit_status) && WEXITSTATUS(child->exit_status) == 0;
	bool never_ready = child->state == CHILD_STARTING && child->restarts == 0;
	char how[96];

	run_describe_exit(child, how, sizeof(how));
	child->state = CHILD_EXITED;
	if (run->stopping) {
		if (clean)
			log_info("%s stopped", child->name);
		else
			log_warnx("%s %s while stopping", child->name, how);
		if (!clean)
			run->stop_status = 1;
		run_stop_next(run);
		return;
	}
	if (never_ready && !clean) {
		/* a bad flag or configuration: restarting would only repeat it */
		log_warnx("%s %s before it was ready; stopping the others", child->name, how);
		run->stopping = true;
		run->stop_status = 1;
		run_stop_next(run);
		return;
	}
	log_warnx("%s (pid %d) %s", child->name, (int)child->last_pid, how);
	child_schedule_restart(child);
}

static void run_on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run *run = arg;

	switch (sig) {
	case SIGCHLD:
		child_reap_all(run);
		break;
	case SIGHUP:
		log_info("SIGHUP: the daemons reload croft.conf and the catalog");
		for (size_t i = 0; i < run->nchildren; i++)
			if (run->children[i]->pid > 0)
				kill(run->children[i]->pid, SIGHUP);
		break;
	default:
		if (run->stopping) {
			log_info("still stopping; waiting for the daemons to finish");
			break;
		}
		log_info("%s: stopping sampler, probe, writer in that order", strsignal((int)sig));
		run->stopping = true;
		evtimer_del(ready_timer);
		run_stop_next(run);
		break;
	}
}

/* Resolves the data and runtime dirs (made absolute for the daemons). */
static int run_resolve_dirs(
	struct run_opts *opts, const struct priv_user *user, char *data_abs, char *runtime_abs)
{
	static struct croft_config cfg;
	static char state_default[PATH_MAX];
	char runtime_default[PATH_MAX];
	char *errors = NULL;
	int ret;

	config_defaults(&cfg);
	/* a file named that cannot be read is refused: its limits are not the defaults */
	ret = config_load(opts->config ? opts->config : CROFT_CONF_PATH,
		opts->config ? CONFIG_MISSING_REFUSED : CONFIG_MISSING_DEFAULTS, &cfg, &errors);
	if (ret < 0) {
		fprintf(stderr, "croft run: %s",
			errors ? errors : "cannot read the configuration\n");
		free(errors);
		return ret;
	}
	if (!opts->data_dir)
		opts->data_dir = cfg.data_dir;
	if (!opts->runtime_dir) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		if (geteuid() == 0)
			snprintf(runtime_default, sizeof(runtime_default), "%s", CROFT_RUNTIME_DIR);
		else if (xdg && *xdg)
			snprintf(runtime_default, sizeof(runtime_default), "%s/croft", xdg);
		else if (snprintf(runtime_default, sizeof(runtime_default), "%s/run",
				 opts->data_dir) >= (int)sizeof(runtime_default))
			return -ENAMETOOLONG;
		opts->runtime_dir = runtime_default;
	}
	if ((ret = run_prepare_dir(opts->data_dir, true, user, data_abs)) < 0 ||
		(ret = run_prepare_dir(opts->runtime_dir, false, user, runtime_abs)) < 0 ||
		(ret = run_check_runtime_len(runtime_abs)) < 0)
		return ret;
	opts->data_dir = data_abs;
	opts->runtime_dir = runtime_abs;
	/* beside the dataset: persistent, as the units' StateDirectory */
	if (!opts->state_dir && snprintf(state_default, sizeof(state_default), "%s/sampler-state",
					data_abs) < (int)sizeof(state_default))
		opts->state_dir = state_default;
	return opts->state_dir ? 0 : -ENAMETOOLONG;
}

/* A hung daemon (no watchdog ping) is killed and so restarted; not while stopping. */
static void run_alive_check(evutil_socket_t fd, short what, void *arg)
{
	struct run *run = arg;
	uint64_t now_ms = clock_mono_ms();

	if (run->stopping)
		return;
	for (size_t i = 0; i < run->nchildren; i++)
		child_check_alive(run->children[i], now_ms);
}

static int run_loop(struct run *run)
{
	struct timeval alive_every = { 0, 500 * 1000 };
	struct event *alive_timer;
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
	struct event *sig_events[4] = { NULL };
	int ret = 0;

	signal(SIGPIPE, SIG_IGN);
	if (pipe2(run->supervisor_fds, O_CLOEXEC) < 0)
		return -errno;
	for (size_t i = 0; i < 4; i++) {
		sig_events[i] = evsignal_new(run->base, sigs[i], run_on_signal, run);
		if (!sig_events[i] || event_add(sig_events[i], NULL) < 0)
			ret = -ENOMEM;
	}
	ready_timer = evtimer_new(run->base, run_ready_timeout, run);
	alive_timer = event_new(run->base, -1, EV_PERSIST, run_alive_check, run);
	if (!ready_timer || !alive_timer || event_add(alive_timer, &alive_every) < 0)
		ret = -ENOMEM;
	if (ret == 0) {
		run_start_next(run);
		event_base_dispatch(run->base);
	}
	if (alive_timer)
		event_free(alive_timer);
	for (size_t i = 0; i < 4; i++)
		if (sig_events[i])
			event_free(sig_events[i]);
	if (ready_timer)
		event_free(ready_timer);
	close(run->supervisor_fds[0]);
	close(run->supervisor_fds[1]);
	return ret;
}

/* A path as a shell word: quoted when it holds more than [A-Za-z0-9_./+-]. */
static void run_shell_word(const char *path, char *buf, size_t len)
{
	size_t plain_len =
		strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-");

	if ((*path && !path[plain_len]) || strchr(path, '\''))
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "'%s'", path);
}

/* The way back to the rows: the data dir as it was given, and the command
 * that reads it (this binary as it was invoked, when not from the PATH). */
static void run_say_where(const char *data_dir)
{
	const char *self = program_invocation_name;
	char dir_word[PATH_MAX + 2], self_word[PATH_MAX + 2];

	run_shell_word(data_dir, dir_word, sizeof(dir_word));
	run_shell_word(strchr(self, '/') ? self : "croft", self_word, sizeof(self_word));
	log_info("the data is in %s; `%s stats %s` reads it", dir_word, self_word, dir_word);
}

int cmd_run(int argc, char **argv)
{
	char data_abs[PATH_MAX], runtime_abs[PATH_MAX];
	struct run_opts opts = { 0 };
	struct priv_user user_buf, *user = NULL;
	struct run run = { .child_ready = run_child_ready, .child_exited = run_child_exited };
	int ret, lock_fd;

	if (run_parse(argc, argv, &opts) < 0)
		return 2;
	log_init("croft-run", opts.verbose);
	run.watchdog_ms = RUN_WATCHDOG_MS;
	const char *watchdog_env = getenv(RUN_WATCHDOG_ENV);
	if (watchdog_env && atoi(watchdog_env) > 0)
		run.watchdog_ms = (uint64_t)atoi(watchdog_env) * 1000;
	child_init(&writer, &run, "croft-writer", "writer");
	child_init(&probe, &run, "croft-probe", "probe");
	child_init(&sampler, &run, "croft-sampler", "sampler");
	if (run_find_binary("croft-writer", "writer", writer.path, sizeof(writer.path)) < 0 ||
		run_find_binary("croft-sampler", "sampler", sampler.path, sizeof(sampler.path)) <
			0) {
		log_warnx("croft-writer or croft-sampler not found next to this binary nor in %s",
			CROFT_SBINDIR);
		return 1;
	}
	if (geteuid() == 0) {
		if (priv_lookup_user(NULL, &user_buf) < 0) {
			log_warnx("neither the croft user nor nobody exists to run the daemons as");
			return 1;
		}
		user = &user_buf;
	}
	const char *data_given = opts.data_dir;
	if (run_resolve_dirs(&opts, user, data_abs, runtime_abs) < 0)
		return 1;
	if (run_already_running(opts.runtime_dir)) {
		log_warnx("a croft is already running with runtime dir %s (another croft run, or "
			  "the croft units): stop it, or give this one another --runtime-dir",
			opts.runtime_dir);
		return 1;
	}
	if (run_one_a_host(&opts, &lock_fd) < 0)
		return 1;
	run.base = event_base_new();
	if (!run.base)
		return 1;
	run_setup_children(&run, &opts, user);
	log_info("data in %s, sockets in %s%s%s; `croftctl --runtime-dir %s status` shows them",
		opts.data_dir, opts.runtime_dir, user ? ", daemons run as " : "",
		user ? user->name : "", opts.runtime_dir);
	ret = run_loop(&run);
	for (size_t i = 0; i < run.nchildren; i++)
		child_free(run.children[i]);
	event_base_free(run.base);
	if (lock_fd >= 0)
		close(lock_fd);
	if (ret == 0 && !run.stop_status)
		log_info("all daemons stopped");
	if (ret == 0 && run.all_started)
		run_say_where(data_given ? data_given : opts.data_dir);
	return ret < 0 || run.stop_status ? 1 : 0;
}
