/*
 * main.c: croft-sampler.  Starts as root (or not), opens what needs it,
 * drops to the croft user keeping CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH,
 * applies the seccomp sandbox and polls /proc on a monotonic timer.
 */
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "catalog.h"
#include "ctl.h"
#include "daemon.h"
#include "handover.h"
#include "log.h"
#include "priv.h"
#include "probe_link.h"
#include "sampler.h"

#define STOP_FLUSH_MS 3000 /* at stop, wait this long for the writer to ack */

static const char extra_usage[] =
	"  --frameworks FILE       framework catalog (default: built in; or CROFT_FRAMEWORKS)\n"
	"  --writer-socket PATH    croft-writer's socket (default RUNTIME/writer.sock)\n"
	"  --probe-socket PATH     croft-probe's socket (default RUNTIME/probe.sock)\n"
	"  --state-dir DIR         spool and labels, kept across stops and reboots\n"
	"                          (default RUNTIME/state; the unit: /var/lib/croft-sampler)\n";

struct options {
	struct daemon_opts d;
	const char *frameworks, *writer_socket, *probe_socket, *state_dir;
};

static void parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		DAEMON_LONG_OPTIONS,
		{ "frameworks", required_argument, NULL, 'F' },
		{ "writer-socket", required_argument, NULL, 'W' },
		{ "probe-socket", required_argument, NULL, 'P' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	daemon_opts_init(&o->d, "croft-sampler", extra_usage);
	while ((opt = getopt_long(argc, argv, DAEMON_SHORT_OPTIONS, longopts, NULL)) != -1) {
		if (daemon_option(&o->d, opt, optarg))
			continue;
		if (opt == 'F')
			o->frameworks = optarg;
		else if (opt == 'W')
			o->writer_socket = optarg;
		else if (opt == 'P')
			o->probe_socket = optarg;
		else if (opt == 'S')
			o->state_dir = optarg;
		else
			daemon_bad_option(&o->d, argv, opt);
	}
	daemon_args_done(&o->d, argc, argv);
	if (!o->frameworks && getenv(CATALOG_ENV) && *getenv(CATALOG_ENV))
		o->frameworks = getenv(CATALOG_ENV);
}

static void socket_path(
	char *dst, size_t size, const char *given, const char *dir, const char *name)
{
	if (given)
		snprintf(dst, size, "%s", given);
	else
		snprintf(dst, size, "%s/%s", dir, name);
}

/* Config, catalog and GPU set; every error is fatal at start. */
static void load_config(struct sampler *s, const struct options *o)
{
	char err[CATALOG_ERR_MAX];
	const char *catalog_path;

	s->config_path = o->d.config_path;
	s->frameworks_path = o->frameworks;
	s->runtime_dir = o->d.runtime_dir;
	socket_path(s->state_dir, sizeof(s->state_dir), o->state_dir, s->runtime_dir, "state");
	daemon_load_config(&o->d, &s->cfg);
	catalog_path = o->frameworks ? o->frameworks : s->cfg.frameworks;
	if (catalog_load(catalog_path, &s->catalog, err, sizeof(err)))
		fatalx("framework catalog refused: %s", err);
	if (gpudev_watch_init(&s->gpu, s->cfg.gpu_devices, "/proc/devices", err, sizeof(err)))
		fatalx("gpu_devices: %s", err);
	daemon_checked(&o->d, "%s: configuration and catalog (%s, %zu frameworks) OK", o->d.name,
		s->catalog->source, s->catalog->entries_count);
}

/* One fd per process for stat and one for io: raise the soft limit. */
static uint64_t raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

/*
 * The state dir holds what must outlive the process and the boot: the
 * spool and the labels.  Ours alone (0700); on tmpfs a reboot loses them,
 * which is said once here and not again at each loss.
 */
static void open_state_dir(struct sampler *s, const struct priv_user *user)
{
	struct statfs fs;
	int r;

	r = daemon_state_dir(
		s->state_dir, geteuid() == 0 ? user->uid : (uid_t)-1, user->gid, &s->state_dirfd);
	if (r < 0)
		fatalx("state dir %s: %s", s->state_dir, handover_strerror(r));
	if (fstatfs(s->state_dirfd, &fs) == 0 && fs.f_type == TMPFS_MAGIC)
		log_warnx("state dir %s is on tmpfs: a reboot loses the unacked batches and the "
			  "labels (give --state-dir on persistent storage)",
			s->state_dir);
}

/* Everything that may need root: runtime and state dirs, config and catalog
 * directories, /proc, spool file, control socket. */
static void acquire(struct sampler *s, const struct options *o, struct priv_user *user)
{
	char path[PATH_MAX];
	int r;

	daemon_user(&o->d, user);
	socket_path(s->writer_socket, sizeof(s->writer_socket), o->writer_socket, s->runtime_dir,
		"writer.sock");
	socket_path(s->probe_socket, sizeof(s->probe_socket), o->probe_socket, s->runtime_dir,
		"probe.sock");
	r = daemon_runtime_dir(s->runtime_dir, geteuid() == 0 ? user->gid : (gid_t)-1);
	if (r)
		fatalx("runtime dir %s: %s", s->runtime_dir, handover_strerror(r));
	open_state_dir(s, user);
	daemon_keep_file(s->config_path); /* reload reads them as the croft user */
	daemon_keep_file(s->frameworks_path ? s->frameworks_path : s->cfg.frameworks);
	s->nofile = raise_nofile();
	s->procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->procfd < 0)
		fatal("/proc");
	if (spool_open(s->state_dir, s->cfg.spool_size_bytes, &s->spool))
		fatalx("spool: out of memory");
	if (geteuid() == 0 && (r = spool_chown(s->spool, user->uid, user->gid)))
		fatalx("spool files: chown: %s", strerror(-r));
	sampler_labels_load(s);
	if (carry_open(
		    s->runtime_dir, geteuid() == 0 ? user->uid : (uid_t)-1, user->gid, &s->carry))
		fatalx("out of memory");
	s->base = event_base_new();
	if (!s->base)
		fatalx("event_base_new failed");
	/* The croft group may read the status, also when the unit starts us as
	 * croft: then it is our own group. */
	r = daemon_control_new(s->base, s->runtime_dir, "sampler.ctl",
		geteuid() == 0 ? user->gid : getegid(), sampler_ctl, s, &s->ctl, path);
	if (r < 0)
		fatalx("control socket %s: cannot listen: %s", path, strerror(-r));
}

static void stop_now_cb(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopexit(arg, NULL);
}

/*
 * SIGTERM/SIGINT: stop polling; one last poll writes every process's row
 * (sampler_poll_close), and the writer has a moment to ack what is spooled.
 */
static void sampler_stop(void *ctx)
{
	struct sampler *s = ctx;
	struct timeval tv = { STOP_FLUSH_MS / 1000, (STOP_FLUSH_MS % 1000) * 1000 };
	struct spool_stats sp;

	if (s->stopping)
		return;
	s->stopping = true;
	daemon_notify("STOPPING=1");
	sampler_poll_stop(s);
	sampler_poll_close(s);
	spool_stats(s->spool, &sp);
	if (!sp.batches && !s->poll.running)
		event_base_loopexit(s->base, NULL);
	else
		event_base_once(s->base, -1, EV_TIMEOUT, stop_now_cb, s->base, &tv);
}

static void flush_check_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sampler *s = arg;
	struct spool_stats sp;

	spool_stats(s->spool, &sp);
	if (s->stopping && !sp.batches && !s->poll.running)
		event_base_loopexit(s->base, NULL);
}

/* After the drop: the host, the tables, the links, the timers and the first poll. */
static void set_up(struct sampler *s, const struct priv_user *user)
{
	struct timeval tick = { 0, 100000 };
	struct cgroup_mounts mounts;
	struct spool_stats sp;
	struct utsname uts;

	s->tick_ns = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	s->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	if (cgroup_mounts_read(&mounts))
		memset(&mounts, 0, sizeof(mounts));
	proc_table_init(&s->procs);
	/* what every row says of its host: its name, and its boot for start_ms */
	if (uname(&uts) == 0)
		snprintf(s->node_name, sizeof(s->node_name), "%s", uts.nodename);
	s->boot_unix_ms = boottime_unix_ms(s->state_dirfd, s->procfd);
	spool_stats(s->spool, &sp);
	s->polls_before =
		carry_load(s->carry, spool_epoch(s->spool), sp.next_seq - 1, s->boot_unix_ms);
	s->cpu_clock = procfs_pidns_ours(s->procfd);
	if (!s->cpu_clock)
		log_warnx("/proc is not this pid namespace's: cpu_cores from whole clock ticks");
	s->cgroups = cgroup_table_new(&mounts);
	s->writer = writer_link_new(s->base, s->writer_socket, s->spool);
	s->probe = probe_link_new(s->base, s->probe_socket);
	if (!s->cgroups || !s->writer || !s->probe || textfile_new(&s->textfile))
		fatalx("out of memory");
	s->flush_check = event_new(s->base, -1, EV_PERSIST, flush_check_cb, s);
	if (!s->flush_check || evtimer_add(s->flush_check, &tick) || sampler_poll_init(s) ||
		sampler_arm_timer(s))
		fatalx("timer setup failed");
	log_info("polling every %llu ms as %s; catalog %s (%zu frameworks); writer %s",
		(unsigned long long)s->cfg.poll_interval_ms, user->name, s->catalog->source,
		s->catalog->entries_count, s->writer_socket);
	sampler_nvml_start(s); /* after the sandbox: its thread is under the filter */
	sampler_poll_start(s);
}

/* What is left unacked stays in the spool for the next start; a loss is never said at info. */
static void say_stopped(const struct sampler *s)
{
	struct spool_stats sp;

	spool_stats(s->spool, &sp);
	log_info("stopped after %llu polls: %llu rows made; %llu batches (%llu bytes) left "
		 "unacked%s, %llu batches dropped",
		(unsigned long long)s->stats.polls, (unsigned long long)s->stats.rows_total,
		(unsigned long long)sp.batches, (unsigned long long)sp.bytes,
		sp.persistent ? ", kept in the spool for the next start" : "",
		(unsigned long long)sp.dropped_batches);
	if (sp.batches && !sp.persistent)
		log_warnx("%llu unacked batches (%llu bytes) lost: the spool file could "
			  "not be written",
			(unsigned long long)sp.batches, (unsigned long long)sp.bytes);
}

static void tear_down(struct sampler *s)
{
	say_stopped(s);
	event_free(s->flush_check);
	sampler_poll_free(s);
	sampler_nvml_stop(s);
	nvml_result_free(&s->nvml_last);
	if (s->reload_pending)
		catalog_free(s->reload_pending->catalog);
	free(s->reload_pending);
	ctl_server_free(s->ctl);
	writer_link_free(s->writer);
	probe_link_free(s->probe);
	proc_table_clear(&s->procs, s->cgroups);
	cgroup_table_free(s->cgroups);
	textfile_free(s->textfile);
	textfile_dir_close(&s->textfile_dir);
	spool_free(s->spool);
	carry_free(s->carry);
	catalog_free(s->catalog);
	kubelet_free(&s->kubelet);
	jbuf_free(&s->rows);
	for (size_t i = 0; i < s->labels_count; i++)
		free(s->labels[i].label);
	free(s->labels);
	event_base_free(s->base);
}

int main(int argc, char **argv)
{
	static struct sampler s = { .procfd = -1, .state_dirfd = -1, .textfile_dir = { .fd = -1 } };
	static const cap_value_t caps[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH };
	static struct options o;
	struct priv_user user;

	parse_args(argc, argv, &o);
	load_config(&s, &o);
	acquire(&s, &o, &user);
	daemon_drop(&user, caps, sizeof(caps) / sizeof(caps[0]), NULL);
	set_up(&s, &user);
	daemon_run(s.base, sampler_stop, sampler_reload, &s, "polling");
	tear_down(&s);
	return 0;
}
