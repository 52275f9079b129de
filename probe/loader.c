/*
 * loader.c: opens, sizes, loads and attaches the five eBPF objects in the
 * variants features.c planned, fills the GPU device map and flips map
 * generations.  croft-probe: open/load/attach as root before the drop; the
 * rest works on held fds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "log.h"
#include "probed.h"

#include "skels.h"

/* Section prefixes of each variant: "iter/" walks need BTF as tp_btf does. */
static const char *const btf_sections[] = { "tp_btf/", "iter/", NULL };
static const char *const raw_sections[] = { "raw_tp/", NULL };

static bool section_in(const char *sec, const char *const *prefixes)
{
	for (size_t i = 0; prefixes[i]; i++)
		if (!strncmp(sec, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Autoloads exactly the programs whose section starts with one of prefixes. */
static void choose_programs(struct bpf_object *obj, const char *const *prefixes)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) bpf_program__set_autoload(
		prog, section_in(bpf_program__section_name(prog), prefixes));
}

/* Sizes every hash map of obj to entries (the tiny-map tests and big hosts). */
static int size_maps(struct bpf_object *obj, uint32_t entries)
{
	struct bpf_map *map;

	if (!entries)
		return 0;
	bpf_object__for_each_map(map, obj)
	{
		enum bpf_map_type type = bpf_map__type(map);

		if (type != BPF_MAP_TYPE_HASH && type != BPF_MAP_TYPE_PERCPU_HASH)
			continue;
		if (bpf_map__set_max_entries(map, entries) < 0)
			return -EINVAL;
	}
	return 0;
}

static const char *const *variant_sections(bool use_btf)
{
	return use_btf ? btf_sections : raw_sections;
}

static int prepare(struct bpf_object *obj, const char *const *sections, uint32_t entries)
{
	choose_programs(obj, sections);
	return size_maps(obj, entries);
}

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

#define OPEN_LOAD(objs, field, type, sections, what)                                               \
	do {                                                                                       \
		(objs)->field = type##__open();                                                    \
		if (!(objs)->field) {                                                              \
			r = -errno;                                                                \
			what = #field ": open";                                                    \
			goto fail;                                                                 \
		}                                                                                  \
		r = prepare((objs)->field->obj, sections, (objs)->map_entries);                    \
		if (r == 0)                                                                        \
			r = type##__load((objs)->field);                                           \
		if (r == 0)                                                                        \
			r = type##__attach((objs)->field);                                         \
		if (r < 0) {                                                                       \
			what = #field ": load/attach";                                             \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

/* Loaded, never attached: syscalls.bpf.c tail-calls it on ioctl. */
static void no_autoattach(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) bpf_program__set_autoattach(prog, false);
}

/*
 * ioctl.bpf.c is built with the bpf_rdonly_cast kfunc (ioctl_cast) and
 * without: both have the same maps, programs and variables, so ioctl_bpf's
 * skeleton serves either ELF.
 */
static struct ioctl_bpf *ioctl_open(bool cast)
{
	struct ioctl_bpf *skel = calloc(1, sizeof(*skel));
	int r = skel ? ioctl_bpf__create_skeleton(skel) : -ENOMEM;

	if (r == 0 && cast)
		skel->skeleton->data = (void *)ioctl_cast_bpf__elf_bytes(&skel->skeleton->data_sz);
	if (r == 0)
		r = bpf_object__open_skeleton(skel->skeleton, NULL);
	if (r < 0) {
		ioctl_bpf__destroy(skel);
		errno = -r;
		return NULL;
	}
	return skel;
}

/* A tail call needs both programs of one type: ioctl's variant is syscalls'. */
static int open_syscalls_ioctl(struct probe_objs *objs, const char **what)
{
	const char *const *sections = variant_sections(objs->plan.use_btf);
	uint32_t zero = 0;
	int r, prog_fd;

	*what = "ioctl";
	if (!(objs->ioctl = ioctl_open(objs->plan.ioctl_cast)))
		return -errno;
	objs->ioctl->rodata->ioctl_nr = SYS_ioctl;
	no_autoattach(objs->ioctl->obj);
	if ((r = prepare(objs->ioctl->obj, sections, objs->map_entries)) < 0 ||
		(r = ioctl_bpf__load(objs->ioctl)) < 0)
		return r;
	*what = "syscalls";
	if (!(objs->syscalls = syscalls_bpf__open()))
		return -errno;
	objs->syscalls->rodata->ioctl_nr = SYS_ioctl;
	if ((r = prepare(objs->syscalls->obj, sections, objs->map_entries)) < 0 ||
		(r = syscalls_bpf__load(objs->syscalls)) < 0)
		return r;
	prog_fd = bpf_program__fd(
		objs->plan.use_btf ? objs->ioctl->progs.ioctl_btf : objs->ioctl->progs.ioctl_raw);
	*what = "syscalls: ioctl tail call";
	if (bpf_map_update_elem(
		    bpf_map__fd(objs->syscalls->maps.ioctl_jump), &zero, &prog_fd, BPF_ANY) < 0)
		return -errno;
	*what = "syscalls: attach";
	return syscalls_bpf__attach(objs->syscalls);
}

/* sched.bpf.c: runq_task (task storage) for the walk, runq_since (hash) for sched_switch. */
static void choose_runq_map(struct bpf_object *obj, bool walk)
{
	bpf_map__set_autocreate(bpf_object__find_map_by_name(obj, "runq_task"), walk);
	bpf_map__set_autocreate(bpf_object__find_map_by_name(obj, "runq_since"), !walk);
}

static int open_sched(struct probe_objs *objs, const char **what)
{
	int r;

	*what = "sched";
	if (!(objs->sched = sched_bpf__open()))
		return -errno;
	objs->sched->rodata->loaded_mono_ns = clock_mono_ns();
	choose_runq_map(objs->sched->obj, objs->plan.sched_walk);
	if ((r = prepare(objs->sched->obj, variant_sections(objs->plan.sched_walk),
		     objs->map_entries)) < 0 ||
		(r = sched_bpf__load(objs->sched)) < 0 || (r = sched_bpf__attach(objs->sched)) < 0)
		return r;
	/* every thread's counts so far are its baseline: counting starts now */
	*what = "sched: first thread walk";
	return loader_walk_threads(objs, objs->gen);
}

/*
 * net.bpf.c's programs for the planned source: the tracepoints in the
 * variant of the rest, else the IPv4 functions and, where vmlinux has
 * them, the IPv6 ones.
 */
static void net_sections(const struct probe_plan *plan, const char *ret_sections[3])
{
	static const char *const by_source[][2] = {
		[NET_FEXIT] = { "fexit/inet_", "fexit/inet6_" },
		[NET_KRETPROBE] = { "kretprobe/inet_", "kretprobe/inet6_" },
	};

	ret_sections[2] = NULL;
	if (plan->net == NET_TRACEPOINT) {
		ret_sections[0] = plan->use_btf ? "tp_btf/" : "raw_tp/";
		ret_sections[1] = NULL;
		return;
	}
	ret_sections[0] = by_source[plan->net][0];
	ret_sections[1] = plan->net_inet6 ? by_source[plan->net][1] : NULL;
}

static struct bpf_map *concern_map(
	const struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	struct bpf_object *obj = concerns[concern].skel(objs).obj;
	char name[32];

	if (!obj || !concerns[concern].add)
		return NULL;
	snprintf(name, sizeof(name), "%s_%u", concerns[concern].name, g);
	return bpf_object__find_map_by_name(obj, name);
}

/* collect.c's buffers and the adds rely on each counted map being what concerns[] says. */
static int check_counted_maps(const struct probe_objs *objs, char *ret_why, size_t why_len)
{
	for (int c = 0; c < CONCERNS; c++) {
		if (!concerns[c].add || !concerns[c].skel(objs).obj)
			continue;
		for (uint32_t g = 0; g < PROBE_GENS; g++) {
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

int loader_open(struct probe_objs *objs, uint32_t map_entries, char *err, size_t err_len)
{
	const char *what = "", *net[3];
	char why[96];
	int r;

	memset(objs, 0, sizeof(*objs));
	objs->sync_outer_fd = objs->sync_inner_fd = -1;
	objs->map_entries = map_entries;
	objs->ncpus = libbpf_num_possible_cpus();
	if (objs->ncpus <= 0) {
		snprintf(err, err_len, "cannot count possible CPUs");
		return -EINVAL;
	}
	if ((r = features_plan(&objs->plan, err, err_len)) < 0)
		return r;
	log_plan(&objs->plan);
	if ((r = open_syscalls_ioctl(objs, &what)) < 0 || (r = open_sched(objs, &what)) < 0)
		goto fail;
	OPEN_LOAD(objs, proc, proc_bpf, variant_sections(objs->plan.use_btf), what);
	net_sections(&objs->plan, net);
	if (net[0])
		OPEN_LOAD(objs, net, net_bpf, net, what);
	what = why;
	if ((r = check_counted_maps(objs, why, sizeof(why))) < 0)
		goto fail;
	r = sync_maps_new(objs);
	if (r < 0) {
		what = "generation sync map";
		goto fail;
	}
	return 0;
fail:
	snprintf(err, err_len, "%s: %s", what, strerror(-r));
	loader_close(objs);
	return r;
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

int loader_set_gpu_rules(struct probe_objs *objs, const struct gpudev_set *set)
{
	struct probe_gpu_rules rules = { 0 };
	uint32_t zero = 0;

	for (size_t i = 0; i < set->rules_count && i < PROBE_GPU_RULES; i++) {
		rules.rules[i].major = set->rules[i].major;
		rules.rules[i].minor_first = set->rules[i].minor_first;
		rules.rules[i].minor_last = set->rules[i].minor_last;
		rules.count++;
	}
	if (bpf_map_update_elem(bpf_map__fd(objs->ioctl->maps.gpu_rules), &zero, &rules, BPF_ANY) <
		0)
		return -errno;
	return 0;
}

int loader_flip(struct probe_objs *objs)
{
	uint32_t zero = 0, next = objs->gen ^ 1;

	for (int c = 0; c < CONCERNS; c++) {
		volatile uint32_t *gen = concerns[c].skel(objs).gen;

		if (gen)
			*gen = next;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* updating a map-in-map waits for an RCU grace period (maybe_wait_bpf_programs):
	 * every program that could still see the old gen has returned when this does */
	if (bpf_map_update_elem(objs->sync_outer_fd, &zero, &objs->sync_inner_fd, BPF_ANY) < 0)
		return -errno;
	objs->gen = next;
	return 0;
}

int loader_map_fd(const struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	struct bpf_map *map = concern_map(objs, concern, g);

	return map ? bpf_map__fd(map) : -1;
}

bool loader_clear_full(struct probe_objs *objs, enum probe_concern concern, uint32_t g)
{
	volatile uint32_t *full = concerns[concern].skel(objs).map_full;
	bool was = full && full[g & 1];

	if (full)
		full[g & 1] = 0;
	return was;
}

int loader_map_max(const struct probe_objs *objs, enum probe_concern concern)
{
	struct bpf_map *map = concern_map(objs, concern, 0);

	return map ? (int)bpf_map__max_entries(map) : 0;
}

int loader_events_fd(const struct probe_objs *objs)
{
	return bpf_map__fd(objs->proc->maps.events);
}

int loader_drops(const struct probe_objs *objs, uint64_t *ret_drops)
{
	uint64_t *values = calloc((size_t)objs->ncpus, sizeof(*values));

	if (!values)
		return -ENOMEM;
	memset(ret_drops, 0, PROBE_DROP_REASONS * sizeof(*ret_drops));
	for (int c = 0; c < CONCERNS; c++) {
		const struct bpf_map *map = concerns[c].skel(objs).drops;

		/* every object has every reason's counter: a reason counted elsewhere reads 0 */
		for (uint32_t reason = 0; map && reason < PROBE_DROP_REASONS; reason++) {
			if (bpf_map_lookup_elem(bpf_map__fd(map), &reason, values) < 0)
				continue;
			for (int cpu = 0; cpu < objs->ncpus; cpu++)
				ret_drops[reason] += values[cpu];
		}
	}
	free(values);
	return 0;
}

int loader_walk_threads(struct probe_objs *objs, uint32_t g)
{
	char buf[64];
	ssize_t n;
	int fd;

	if (!objs->plan.sched_walk)
		return 0;
	objs->sched->bss->walk_gen = g;
	fd = bpf_iter_create(bpf_link__fd(objs->sched->links.thread_walk));
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

int loader_take_event_counts(
	const struct probe_objs *objs, uint32_t g, struct probe_event_count *ret_counts)
{
	int fd = bpf_map__fd(objs->proc->maps.event_counts);
	struct probe_event_count *values = calloc((size_t)objs->ncpus, sizeof(*values));
	int r = 0;

	if (!values)
		return -ENOMEM;
	memset(ret_counts, 0, PROBE_EV_SLOTS * sizeof(*ret_counts));
	for (uint32_t kind = 0; kind < PROBE_EV_SLOTS && r == 0; kind++) {
		uint32_t slot = (g & 1) * PROBE_EV_SLOTS + kind;

		if (bpf_map_lookup_elem(fd, &slot, values) < 0) {
			r = -errno;
			break;
		}
		for (int cpu = 0; cpu < objs->ncpus; cpu++) {
			ret_counts[kind].seen += values[cpu].seen;
			ret_counts[kind].dropped += values[cpu].dropped;
		}
		memset(values, 0, (size_t)objs->ncpus * sizeof(*values));
		if (bpf_map_update_elem(fd, &slot, values, BPF_ANY) < 0)
			r = -errno;
	}
	free(values);
	return r;
}

const char *loader_variant(const struct probe_objs *objs)
{
	return concerns[CONCERN_SYSCALLS].variant(&objs->plan);
}
