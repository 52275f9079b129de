/*
 * loader.c: loads every concern (loader_open.c opens each) in the
 * variants features.c planned, says why one did not load, checks the
 * counted maps and closes them all.  croft-probe, as root before the drop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "probed.h"

static int sync_maps_new(struct probe_objs *objs)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);

	objs->sync_inner_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "croft_sync_in", 4, 4, 1, NULL);
	if (objs->sync_inner_fd < 0)
		return objs->sync_inner_fd;
	opts.inner_map_fd = objs->sync_inner_fd;
	objs->sync_outer_fd =
		bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "croft_sync", 4, 4, 1, &opts);
	return objs->sync_outer_fd < 0 ? objs->sync_outer_fd : 0;
}

/* collect.c's buffers and the adds rely on each counted map being what concerns[] says. */
static int check_counted_maps(const struct probe_objs *objs, char *ret_why, size_t why_len)
{
	for (int c = 0; c < CONCERNS; c++) {
		if (!concerns[c].add || !concerns[c].skel(objs).obj)
			continue;
		for (uint32_t g = 0; g < PROBE_EPOCHS; g++) {
			const struct bpf_map *map = concern_map(objs, c, g);

			if (!map || bpf_map__key_size(map) != concerns[c].key_size ||
				bpf_map__value_size(map) != concerns[c].val_size) {
				snprintf(ret_why, why_len,
					"%s_%u: missing, or not the key and value concerns.c reads",
					concerns[c].name, g);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* One line per fallback, a warning where fields are left out. */
static void log_plan(const struct probe_plan *plan)
{
	for (int i = 0; i <= PLAN_ALL; i++) {
		const char *name = i == PLAN_ALL ? "programs" : concerns[i].name;

		if (!plan->why[i][0])
			continue;
		if (i == CONCERN_NET && plan->net == NET_NONE)
			log_warnx("%s: %s", name, plan->why[i]);
		else
			log_notice("%s: %s", name, plan->why[i]);
	}
}

/*
 * While a concern loads: libbpf's first warning with "failed" in it, the
 * one that names the map or program and the kernel's error ("map 'drops':
 * failed to create", "prog 'x': BPF program load failed").
 */
static char libbpf_first[160];
static bool libbpf_marked;

/* libbpf's lines end in a newline, which the log would show as '?'. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n > 0 && (size_t)n < sizeof(line) && line[n - 1] == '\n')
		line[n - 1] = '\0';
	if (level != LIBBPF_WARN) {
		log_debug("%s", line);
		return 0;
	}
	log_warnx("%s", line);
	if (libbpf_marked && !libbpf_first[0] && strstr(line, "failed"))
		snprintf(libbpf_first, sizeof(libbpf_first), "%.*s", (int)strcspn(line, "\n"),
			!strncmp(line, "libbpf: ", 8) ? line + 8 : line);
	return 0;
}

/*
 * Why concern did not load: the step, the error, libbpf's first word on it
 * and, for EPERM where maps are charged to RLIMIT_MEMLOCK, its size.
 */
static void say_failed(struct probe_objs *objs, enum probe_concern concern, const char *what, int r)
{
	struct rlimit memlock = { 0, 0 };
	char limit[96] = "";

	if (r == -EPERM && getrlimit(RLIMIT_MEMLOCK, &memlock) == 0 &&
		memlock.rlim_cur != RLIM_INFINITY)
		snprintf(limit, sizeof(limit),
			"; RLIMIT_MEMLOCK is %llu KiB (kernels before 5.11 charge maps to it)",
			(unsigned long long)memlock.rlim_cur / 1024);
	snprintf(objs->failed[concern], sizeof(objs->failed[concern]), "%s: %s%s%s%s", what,
		strerror(-r), libbpf_first[0] ? " (libbpf: " : "", libbpf_first,
		libbpf_first[0] ? ")" : "");
	if (limit[0])
		strncat(objs->failed[concern], limit,
			sizeof(objs->failed[concern]) - strlen(objs->failed[concern]) - 1);
	log_warnx("%s: not loaded, its fields are left out: %s", concerns[concern].name,
		objs->failed[concern]);
}

/* A loaded concern whose partner did not load: destroyed and said.  Returns 1 if it was. */
static int unload_orphan(
	struct probe_objs *objs, enum probe_concern concern, bool orphan, const char *why)
{
	if (!orphan || !loader_has(objs, concern))
		return 0;
	concerns[concern].destroy(objs);
	snprintf(objs->failed[concern], sizeof(objs->failed[concern]), "%s", why);
	log_warnx("%s: not loaded, its fields are left out: %s", concerns[concern].name, why);
	return 1;
}

/* Each concern on its own: one that fails is destroyed and said, the rest go on. */
static int open_concerns(struct probe_objs *objs)
{
	int loaded = 0, first_error = 0;

	for (int i = 0; i < CONCERNS; i++) {
		enum probe_concern c = openers[i].concern;
		const char *what = "";
		int r;

		libbpf_first[0] = '\0';
		libbpf_marked = true;
		r = openers[i].open(objs, &what);
		libbpf_marked = false;
		if (r < 0) {
			concerns[c].destroy(objs);
			say_failed(objs, c, what, r);
			first_error = first_error ? first_error : r;
		}
		loaded += loader_has(objs, c);
	}
	loaded -= unload_orphan(objs, CONCERN_IOCTL, !objs->syscalls,
		"runs as a tail call of syscalls' program, which did not load");
	/* without ioctl's marks its threads inside GPU ioctls would go uncounted */
	loaded -= unload_orphan(objs, CONCERN_GPUFILE, !objs->syscalls || !objs->ioctl,
		"runs as a tail call of syscalls' program and beside ioctl's, which did not "
		"both load");
	return loaded ? 0 : first_error ? first_error : -ENOENT;
}

int loader_open(struct probe_objs *objs, uint32_t map_entries, char *err, size_t err_len)
{
	int r;

	memset(objs, 0, sizeof(*objs));
	objs->sync_outer_fd = objs->sync_inner_fd = -1;
	objs->map_entries = map_entries;
	objs->ncpus = libbpf_num_possible_cpus();
	libbpf_set_print(libbpf_log);
	if (objs->ncpus <= 0) {
		snprintf(err, err_len, "cannot count possible CPUs");
		return -EINVAL;
	}
	if ((r = features_plan(&objs->plan, err, err_len)) < 0)
		return r;
	log_plan(&objs->plan);
	if ((r = open_concerns(objs)) < 0) {
		snprintf(err, err_len, "no concern loaded (syscalls: %s)",
			objs->failed[CONCERN_SYSCALLS]);
		goto fail;
	}
	if ((r = check_counted_maps(objs, err, err_len)) < 0)
		goto fail;
	if ((r = sync_maps_new(objs)) < 0) {
		snprintf(err, err_len, "epoch sync map: %s", strerror(-r));
		goto fail;
	}
	return 0;
fail:
	loader_close(objs);
	return r;
}

bool loader_has(const struct probe_objs *objs, enum probe_concern concern)
{
	return concerns[concern].skel(objs).obj != NULL;
}

void loader_close(struct probe_objs *objs)
{
	for (int c = 0; c < CONCERNS; c++)
		concerns[c].destroy(objs);
	if (objs->sync_outer_fd >= 0)
		close(objs->sync_outer_fd);
	if (objs->sync_inner_fd >= 0)
		close(objs->sync_inner_fd);
	memset(objs, 0, sizeof(*objs));
	objs->sync_outer_fd = objs->sync_inner_fd = -1;
}

const char *loader_variant(const struct probe_objs *objs)
{
	return concerns[CONCERN_SYSCALLS].variant(&objs->plan);
}
