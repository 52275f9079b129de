/*
 * main.c: croft-probe.  Starts as root, loads and attaches the eBPF
 * programs, fills the GPU device map, opens probe.sock and probe.ctl, then
 * drops to the croft user under seccomp, with no capabilities (CAP_BPF
 * alone where the kernel gates every bpf() call), and serves the sampler
 * from the fds it holds.  Its programs go away when it exits.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <event2/event.h>
#include <bpf/bpf.h>

#include "clock.h"
#include "config.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "priv.h"
#include "probed.h"
#include "usage.h"

#define DRAIN_INTERVAL_MS     100  /* ring buffer reads between answers */
#define DEVICES_CHECK_MS      1000 /* /proc/devices read again (~60 us of kernel time each) */
#define UNPOLLED_DISCARD_NS   (10ull * 1000000000ull) /* no sampler: empty the maps this often */
#define PROBE_MAP_ENTRIES_MAX (1 << 24)               /* --map-entries */

static const char extra_usage[] =
	"      --map-entries N     entries of every counting map: tgids, tgid x syscall\n"
	"                          (default: built-in sizes)\n"
	"test knobs (environment): CROFT_PROBE_RAW_TP=1 loads the raw_tp programs even where\n"
	"tp_btf works; CROFT_PROBE_NET=fexit|kretprobe counts socket bytes there even where\n"
	"the tracepoints exist; CROFT_PROBE_FAIL=CONCERN[,CONCERN...] makes those concerns'\n"
	"objects fail to load (syscalls, ioctl, sched, proc, net)\n";

/* After the drop nothing in croft-probe opens perf events (the daemons' one
 * policy, sandbox.c, already denies the module, mount and namespace calls). */
static const char *const denied_after_drop[] = { "perf_event_open", NULL };

struct probe_main {
	struct daemon_opts opts;
	uint32_t map_entries;
	struct croft_config cfg;
	struct priv_user user;
	struct probe_objs objs;
	struct probe_state st;
	struct ctl_server *ctl;
	struct event *ev_drain, *ev_devices;
};

static void parse_args(struct probe_main *pm, int argc, char **argv)
{
	static const struct option longopts[] = {
		DAEMON_LONG_OPTIONS,
		{ "map-entries", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	long long entries;
	int opt;

	daemon_opts_init(&pm->opts, PROBE_NAME, extra_usage);
	while ((opt = getopt_long(argc, argv, DAEMON_SHORT_OPTIONS, longopts, NULL)) != -1) {
		if (daemon_option(&pm->opts, opt, optarg))
			continue;
		if (opt != 'M')
			daemon_bad_option(&pm->opts, argv, opt);
		if (usage_number(optarg, 1, PROBE_MAP_ENTRIES_MAX, &entries) < 0)
			daemon_usage_error(&pm->opts, "--map-entries '%.64s': expected 1..%d",
				optarg, PROBE_MAP_ENTRIES_MAX);
		pm->map_entries = (uint32_t)entries;
	}
	daemon_args_done(&pm->opts, argc, argv);
}

static void load_config(struct probe_main *pm)
{
	char err[256];

	daemon_load_config(&pm->opts, &pm->cfg);
	if (gpudev_watch_init(
		    &pm->st.gpus, pm->cfg.gpu_devices, "/proc/devices", err, sizeof(err)) < 0)
		fatalx("%s: gpu_devices: %s", pm->opts.config_path, err);
	daemon_checked(&pm->opts, "%s: configuration ok", pm->opts.config_path);
	pm->st.config_path = pm->opts.config_path;
}

/*
 * Before Linux 5.19 (c8644cd0efe7 "bpf: refine
 * kernel.unprivileged_bpf_disabled behaviour"), with unprivileged BPF
 * disabled, every bpf() call needs CAP_BPF, even on an fd already held;
 * since, only map creation and program loads do.  Distribution kernels
 * backport, so rather than read the version: a lookup on a held map with
 * no effective capability, as after the drop.  Outputs the caps to keep.
 */
static int caps_needed(struct probe_main *pm, cap_value_t *ret_caps, size_t *ret_ncaps)
{
	cap_t held = cap_get_proc(), bare = cap_dup(held);
	uint32_t key = 0, value;
	bool refused = false;
	int r = 0;

	if (!held || !bare || cap_clear_flag(bare, CAP_EFFECTIVE) < 0 || cap_set_proc(bare) < 0)
		r = -errno;
	else
		refused = bpf_map_lookup_elem(pm->objs.sync_inner_fd, &key, &value) < 0 &&
			  errno == EPERM;
	if (held && cap_set_proc(held) < 0 && r == 0)
		r = -errno;
	cap_free(held);
	cap_free(bare);
	if (r < 0)
		return r;
	*ret_ncaps = 0;
	if (refused) {
		ret_caps[(*ret_ncaps)++] = CAP_BPF;
		snprintf(pm->st.caps_kept, sizeof(pm->st.caps_kept),
			"CAP_BPF: this kernel refuses "
			"bpf() on held fds without it (before Linux 5.19, unprivileged BPF "
			"disabled)");
		log_notice("keeping %s", pm->st.caps_kept);
	}
	return 0;
}

static void acquire(struct probe_main *pm)
{
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	char err[256], path[4096];
	int r;

	if (geteuid() != 0)
		fatalx("must start as root to load its eBPF programs");
	daemon_user(&pm->opts, &pm->user);
	if (!(pm->st.base = event_base_new()))
		fatalx("event_base_new failed");
	/* kernels before 5.11 charge maps to memlock; without CAP_SYS_RESOURCE this
	 * cannot pass the unit's LimitMEMLOCK=, and loader.c says so if it is short */
	setrlimit(RLIMIT_MEMLOCK, &unlimited);
	if ((r = loader_open(&pm->objs, pm->map_entries, err, sizeof(err))) < 0)
		fatalx("loading eBPF programs: %s", err);
	if ((r = loader_set_gpu_rules(&pm->objs, &pm->st.gpus.set)) < 0)
		fatalx("filling the GPU device map: %s", strerror(-r));
	if ((r = collector_new(&pm->objs, &pm->st.col)) < 0)
		fatalx("ring buffer: %s", strerror(-r));
	daemon_keep_file(pm->opts.config_path); /* reload reads it as the croft user */
	if ((r = daemon_runtime_dir(pm->opts.runtime_dir, pm->user.gid)) < 0)
		fatalx("runtime dir %s: %s", pm->opts.runtime_dir, strerror(-r));
	snprintf(path, sizeof(path), "%s/%s", pm->opts.runtime_dir, PROBE_SOCKET_NAME);
	if ((r = server_new(
		     pm->st.base, path, pm->user.gid, pm->user.uid, pm->st.col, &pm->st.srv)) < 0)
		fatalx("%s: %s", path, strerror(-r));
	if ((r = daemon_control_new(pm->st.base, pm->opts.runtime_dir, PROBE_CTL_NAME, pm->user.gid,
		     probe_ctl, &pm->st, &pm->ctl, path)) < 0)
		fatalx("%s: cannot listen: %s", path, strerror(-r));
}

static void drop(struct probe_main *pm)
{
	cap_value_t caps[1];
	size_t ncaps;
	int r;

	if ((r = caps_needed(pm, caps, &ncaps)) < 0)
		fatalx("probing what bpf() needs after the drop: %s", strerror(-r));
	daemon_drop(&pm->user, caps, ncaps, denied_after_drop);
}

/*
 * Events are read every DRAIN_INTERVAL_MS so the ring buffer does not fill.
 * With no sampler connected nobody will ask for the counts: the maps are
 * emptied every UNPOLLED_DISCARD_NS so they never fill (the next sampler's
 * first answer is flagged as covering time before it asked anyway).
 */
static void on_drain(evutil_socket_t fd, short what, void *arg)
{
	struct probe_state *st = arg;
	const struct answer *discarded;

	collector_drain(st->col);
	if (!server_has_poller(st->srv) &&
		clock_boot_ns() - collector_last_flip(st->col) > UNPOLLED_DISCARD_NS)
		collector_answer(st->col, true, &discarded);
}

/* A GPU driver that registers while we run is counted from the next check on. */
static void on_devices(evutil_socket_t fd, short what, void *arg)
{
	status_follow_devices(arg);
}

/* The drain and devices timers. */
static void set_up(struct probe_main *pm)
{
	struct timeval drain = { 0, DRAIN_INTERVAL_MS * 1000 };
	struct timeval devices = { DEVICES_CHECK_MS / 1000, DEVICES_CHECK_MS % 1000 * 1000 };

	pm->st.objs = &pm->objs;
	pm->ev_drain = event_new(pm->st.base, -1, EV_PERSIST, on_drain, &pm->st);
	pm->ev_devices = event_new(pm->st.base, -1, EV_PERSIST, on_devices, &pm->st);
	if (!pm->ev_drain || !pm->ev_devices || event_add(pm->ev_drain, &drain) < 0 ||
		event_add(pm->ev_devices, &devices) < 0)
		fatalx("cannot set up the timers");
	log_info("attached (%s), %zu GPU device rules, socket bytes from %s; serving as %s",
		loader_variant(&pm->objs), pm->st.gpus.set.rules_count,
		pm->objs.net ? features_net_source(pm->objs.plan.net) : "nowhere", pm->user.name);
}

static void tear_down(struct probe_main *pm)
{
	event_free(pm->ev_drain);
	event_free(pm->ev_devices);
	ctl_server_free(pm->ctl);
	server_free(pm->st.srv);
	collector_free(pm->st.col);
	loader_close(&pm->objs); /* links are fds: closing them detaches everything */
	event_base_free(pm->st.base);
}

int main(int argc, char **argv)
{
	static struct probe_main pm;

	parse_args(&pm, argc, argv);
	load_config(&pm);
	acquire(&pm);
	drop(&pm);
	set_up(&pm);
	daemon_run(pm.st.base, NULL, probe_reload, &pm.st, "attached");
	tear_down(&pm);
	return 0;
}
