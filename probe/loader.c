/*
 * loader.c: opens, sizes, loads and attaches the six eBPF objects in the
 * variants features.c planned, fills the GPU device map and flips map
 * epochs.  croft-probe: open/load/attach as root before the drop; the
 * rest works on held fds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/*
 * CROFT_PROBE_FAIL=concern[,concern...] (a test knob): those objects are
 * made unloadable for real, their drops map sized 0, which the kernel's
 * map creation refuses (EINVAL) as it would a map it cannot make.
 */
static bool fail_forced(enum probe_concern concern)
{
	const char *v = getenv("CROFT_PROBE_FAIL"), *name = concerns[concern].name;
	size_t len = strlen(name);

	for (const char *p = v; p && *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
	}
	return false;
}

/*
 * Each program to load gets a log buffer at BPF_LOG_STATS (Linux 5.2): the
 * verifier's "processed N insns" line, on every kernel (bpf_prog_info's
 * verified_insns is 5.16).  gpufile's programs call global functions, and
 * the verifier says one line per call it walks: a log too short for them
 * fails the load (ENOSPC).  Freed by take_verified.
 */
static int ask_verifier_stats(struct bpf_object *obj, enum probe_concern concern)
{
	size_t bytes = concern == CONCERN_GPUFILE ? PROBE_VLOG_CALLS_BYTES : PROBE_VLOG_BYTES;

	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		char *buf;

		if (!bpf_program__autoload(prog))
			continue;
		if (!(buf = calloc(1, bytes)))
			return -ENOMEM;
		bpf_program__set_log_buf(prog, buf, bytes);
		bpf_program__set_log_level(prog, 4); /* BPF_LOG_STATS */
	}
	return 0;
}

/* Notes each loaded program's count from its log; frees the logs. */
static void take_verified(struct probe_objs *objs, struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		size_t size;
		char *buf = (char *)bpf_program__log_buf(prog, &size);
		const char *at = buf ? strstr(buf, "processed ") : NULL;
		struct prog_verified *v = &objs->verified[objs->verified_count];

		if (at && bpf_program__fd(prog) >= 0 && objs->verified_count < PROBE_PROGS_MAX &&
			sscanf(at, "processed %u insns", &v->insns) == 1) {
			snprintf(v->name, sizeof(v->name), "%s", bpf_program__name(prog));
			objs->verified_count++;
		}
		bpf_program__set_log_buf(prog, NULL, 0);
		free(buf);
	}
}

static int prepare(const struct probe_objs *objs, enum probe_concern concern,
	struct bpf_object *obj, const char *const *sections)
{
	struct bpf_map *drops = bpf_object__find_map_by_name(obj, "drops");

	choose_programs(obj, sections);
	if (ask_verifier_stats(obj, concern) < 0)
		return -ENOMEM;
	if (fail_forced(concern) && (!drops || bpf_map__set_max_entries(drops, 0) < 0))
		return -EINVAL;
	return size_maps(obj, objs->map_entries);
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

/* Loaded, never attached: syscalls.bpf.c tail-calls it on ioctl. */
static void no_autoattach(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) bpf_program__set_autoattach(prog, false);
}

/* The syscalls gpufile.bpf.c looks at, by this architecture's numbers. */
static const struct {
	long nr;
	enum probe_call kind;
} gpu_calls[] = {
#ifdef SYS_poll
	{ SYS_poll, PROBE_CALL_POLL },
#endif
	{ SYS_ppoll, PROBE_CALL_POLL },
#ifdef SYS_select
	{ SYS_select, PROBE_CALL_SELECT },
#endif
	{ SYS_pselect6, PROBE_CALL_SELECT },
	{ SYS_epoll_ctl, PROBE_CALL_EPOLL_CTL },
#ifdef SYS_epoll_wait
	{ SYS_epoll_wait, PROBE_CALL_EPOLL_WAIT },
#endif
	{ SYS_epoll_pwait, PROBE_CALL_EPOLL_WAIT },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, PROBE_CALL_EPOLL_WAIT },
#endif
	{ SYS_mmap, PROBE_CALL_MMAP },
	{ SYS_ioctl, PROBE_CALL_IOCTL },
};
_Static_assert(SYS_ioctl < PROBE_SYSCALL_NR_MAX, "ioctl has no slot in the jump table");

/* The wait, mmap and ioctl programs, in the variant of syscalls' (a tail call's rule). */
static int open_gpufile(struct probe_objs *objs, const char **what)
{
	struct bpf_program *prog;
	int r;

	*what = "open";
	if (!(objs->gpufile = gpufile_bpf__open()))
		return -errno;
	for (size_t i = 0; i < sizeof(gpu_calls) / sizeof(gpu_calls[0]); i++)
		if (gpu_calls[i].nr < PROBE_SYSCALL_NR_MAX)
			objs->gpufile->rodata->call_kind[gpu_calls[i].nr] =
				(uint8_t)gpu_calls[i].kind;
	*what = "load";
	if ((r = prepare(objs, CONCERN_GPUFILE, objs->gpufile->obj,
		     variant_sections(objs->plan.use_btf))) < 0)
		return r;
	/* the entry program runs as a tail call of syscalls' */
	bpf_object__for_each_program(prog, objs->gpufile->obj) bpf_program__set_autoattach(
		prog, !strstr(bpf_program__section_name(prog), "/sys_enter"));
	if ((r = gpufile_bpf__load(objs->gpufile)) < 0)
		return r;
	*what = "attach";
	return gpufile_bpf__attach(objs->gpufile);
}

/* ioctl marks its threads in gpufile's map and tests files against gpufile's device set. */
static int share_gpufile_maps(struct probe_objs *objs)
{
	if (!objs->gpufile)
		return 0;
	if (bpf_map__reuse_fd(
		    objs->ioctl->maps.gpu_rules, bpf_map__fd(objs->gpufile->maps.gpu_rules)) < 0 ||
		bpf_map__reuse_fd(objs->ioctl->maps.gpu_inflight,
			bpf_map__fd(objs->gpufile->maps.gpu_inflight)) < 0)
		return -errno;
	return 0;
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
static int open_ioctl(struct probe_objs *objs, const char **what)
{
	int r;

	*what = "open";
	if (!(objs->ioctl = ioctl_open(objs->plan.ioctl_cast)))
		return -errno;
	objs->ioctl->rodata->ioctl_nr = SYS_ioctl;
	no_autoattach(objs->ioctl->obj);
	*what = "gpufile's maps";
	if ((r = share_gpufile_maps(objs)) < 0)
		return r;
	*what = "load";
	if ((r = prepare(objs, CONCERN_IOCTL, objs->ioctl->obj,
		     variant_sections(objs->plan.use_btf))) < 0)
		return r;
	return ioctl_bpf__load(objs->ioctl);
}

/* Where ioctl and gpufile loaded, syscalls' program tail-calls theirs for their syscalls. */
static void set_jump_slots(struct probe_objs *objs)
{
	for (size_t i = 0; i < sizeof(gpu_calls) / sizeof(gpu_calls[0]); i++) {
		bool ioctl = gpu_calls[i].kind == PROBE_CALL_IOCTL;
		bool loaded = ioctl ? objs->ioctl != NULL : objs->gpufile != NULL;

		if (gpu_calls[i].nr >= PROBE_SYSCALL_NR_MAX || !loaded)
			continue;
		objs->syscalls->rodata->jump_slot[gpu_calls[i].nr] =
			(ioctl ? PROBE_JUMP_IOCTL : PROBE_JUMP_GPUFILE) + 1;
	}
}

static int put_jump(struct probe_objs *objs, uint32_t slot, struct bpf_program *prog)
{
	int prog_fd = bpf_program__fd(prog);

	if (bpf_map_update_elem(bpf_map__fd(objs->syscalls->maps.jumps), &slot, &prog_fd, BPF_ANY) <
		0)
		return -errno;
	return 0;
}

/* Their programs go in syscalls' jump table before syscalls attaches. */
static int open_syscalls(struct probe_objs *objs, const char **what)
{
	bool btf = objs->plan.use_btf;
	int r;

	*what = "open";
	if (!(objs->syscalls = syscalls_bpf__open()))
		return -errno;
	set_jump_slots(objs);
	*what = "load";
	if ((r = prepare(objs, CONCERN_SYSCALLS, objs->syscalls->obj, variant_sections(btf))) < 0 ||
		(r = syscalls_bpf__load(objs->syscalls)) < 0)
		return r;
	*what = "ioctl tail call";
	if (objs->ioctl &&
		(r = put_jump(objs, PROBE_JUMP_IOCTL,
			 btf ? objs->ioctl->progs.ioctl_btf : objs->ioctl->progs.ioctl_raw)) < 0)
		return r;
	*what = "gpufile tail call";
	if (objs->gpufile && (r = put_jump(objs, PROBE_JUMP_GPUFILE,
				      btf ? objs->gpufile->progs.gpu_enter_btf
					  : objs->gpufile->progs.gpu_enter_raw)) < 0)
		return r;
	*what = "attach";
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

	*what = "open";
	if (!(objs->sched = sched_bpf__open()))
		return -errno;
	objs->sched->rodata->loaded_mono_ns = clock_mono_ns();
	choose_runq_map(objs->sched->obj, objs->plan.sched_walk);
	*what = "load";
	if ((r = prepare(objs, CONCERN_SCHED, objs->sched->obj,
		     variant_sections(objs->plan.sched_walk))) < 0 ||
		(r = sched_bpf__load(objs->sched)) < 0)
		return r;
	*what = "attach";
	if ((r = sched_bpf__attach(objs->sched)) < 0)
		return r;
	/* every thread's counts so far are its baseline: counting starts now */
	*what = "first thread walk";
	return loader_walk_threads(objs, objs->epoch);
}

static int open_proc(struct probe_objs *objs, const char **what)
{
	int r;

	*what = "open";
	if (!(objs->proc = proc_bpf__open()))
		return -errno;
	*what = "load";
	if ((r = prepare(objs, CONCERN_PROC, objs->proc->obj,
		     variant_sections(objs->plan.use_btf))) < 0 ||
		(r = proc_bpf__load(objs->proc)) < 0)
		return r;
	*what = "attach";
	return proc_bpf__attach(objs->proc);
}

static int open_exit(struct probe_objs *objs, const char **what)
{
	int r;

	*what = "open";
	if (!(objs->exit = exit_bpf__open()))
		return -errno;
	*what = "load";
	if ((r = prepare(objs, CONCERN_EXIT, objs->exit->obj,
		     variant_sections(objs->plan.use_btf))) < 0 ||
		(r = exit_bpf__load(objs->exit)) < 0)
		return r;
	*what = "attach";
	return exit_bpf__attach(objs->exit);
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

/* NET_NONE is no failure: features.c said why there is nowhere to count. */
static int open_net(struct probe_objs *objs, const char **what)
{
	const char *sections[3];
	int r;

	if (objs->plan.net == NET_NONE)
		return 0;
	net_sections(&objs->plan, sections);
	*what = "open";
	if (!(objs->net = net_bpf__open()))
		return -errno;
	*what = "load";
	if ((r = prepare(objs, CONCERN_NET, objs->net->obj, sections)) < 0 ||
		(r = net_bpf__load(objs->net)) < 0)
		return r;
	*what = "attach";
	return net_bpf__attach(objs->net);
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

/* gpufile, then ioctl (which takes gpufile's maps), then syscalls, which tail-calls both. */
static const struct {
	enum probe_concern concern;
	int (*open)(struct probe_objs *objs, const char **what);
} openers[CONCERNS] = {
	{ CONCERN_GPUFILE, open_gpufile },
	{ CONCERN_IOCTL, open_ioctl },
	{ CONCERN_SYSCALLS, open_syscalls },
	{ CONCERN_SCHED, open_sched },
	{ CONCERN_PROC, open_proc },
	{ CONCERN_NET, open_net },
	{ CONCERN_EXIT, open_exit },
};

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
		if (concerns[c].skel(objs).obj)
			take_verified(objs, concerns[c].skel(objs).obj);
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
	char why[96];
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
	if ((r = check_counted_maps(objs, why, sizeof(why))) < 0) {
		snprintf(err, err_len, "%s", why);
		goto fail;
	}
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

static int put_gpu_rules(const struct bpf_map *map, const struct probe_gpu_rules *rules)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(map), &zero, rules, BPF_ANY) < 0)
		return -errno;
	return 0;
}

/* ioctl's map is gpufile's where both loaded; either may be alone. */
int loader_set_gpu_rules(struct probe_objs *objs, const struct gpudev_set *set)
{
	struct probe_gpu_rules rules = { 0 };
	int r = 0;

	for (size_t i = 0; i < set->rules_count && i < PROBE_GPU_RULES; i++) {
		rules.rules[i].major = set->rules[i].major;
		rules.rules[i].minor_first = set->rules[i].minor_first;
		rules.rules[i].minor_last = set->rules[i].minor_last;
		rules.count++;
	}
	if (objs->gpufile)
		r = put_gpu_rules(objs->gpufile->maps.gpu_rules, &rules);
	if (objs->ioctl && r == 0)
		r = put_gpu_rules(objs->ioctl->maps.gpu_rules, &rules);
	return r;
}

int loader_flip(struct probe_objs *objs)
{
	uint32_t zero = 0, next = objs->epoch ^ 1;

	for (int c = 0; c < CONCERNS; c++) {
		volatile uint32_t *epoch = concerns[c].skel(objs).epoch;

		if (epoch)
			*epoch = next;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* updating a map-in-map waits for an RCU grace period (maybe_wait_bpf_programs):
	 * every program that could still see the old epoch has returned when this does */
	if (bpf_map_update_elem(objs->sync_outer_fd, &zero, &objs->sync_inner_fd, BPF_ANY) < 0)
		return -errno;
	objs->epoch = next;
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

int loader_inflight_fd(const struct probe_objs *objs)
{
	return objs->gpufile ? bpf_map__fd(objs->gpufile->maps.gpu_inflight) : -1;
}

int loader_events_fd(const struct probe_objs *objs)
{
	return objs->proc ? bpf_map__fd(objs->proc->maps.events) : -1;
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

	if (!objs->plan.sched_walk || !objs->sched)
		return 0;
	objs->sched->bss->walk_epoch = g;
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
	int fd = objs->proc ? bpf_map__fd(objs->proc->maps.event_counts) : -1;
	struct probe_event_count *values;
	int r = 0;

	memset(ret_counts, 0, PROBE_EV_SLOTS * sizeof(*ret_counts));
	if (fd < 0) /* proc not loaded: no events */
		return 0;
	if (!(values = calloc((size_t)objs->ncpus, sizeof(*values))))
		return -ENOMEM;
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

int loader_finals_fd(const struct probe_objs *objs)
{
	return objs->exit ? bpf_map__fd(objs->exit->maps.finals) : -1;
}

int loader_final_counts(const struct probe_objs *objs, struct probe_final_count *ret_count)
{
	int fd = objs->exit ? bpf_map__fd(objs->exit->maps.final_counts) : -1;
	struct probe_final_count *values;
	uint32_t zero = 0;
	int r = 0;

	memset(ret_count, 0, sizeof(*ret_count));
	if (fd < 0)
		return 0;
	if (!(values = calloc((size_t)objs->ncpus, sizeof(*values))))
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, values) < 0)
		r = -errno;
	for (int cpu = 0; r == 0 && cpu < objs->ncpus; cpu++) {
		ret_count->seen += values[cpu].seen;
		ret_count->dropped += values[cpu].dropped;
		ret_count->lives_full += values[cpu].lives_full;
	}
	free(values);
	return r;
}

const char *loader_variant(const struct probe_objs *objs)
{
	return concerns[CONCERN_SYSCALLS].variant(&objs->plan);
}
