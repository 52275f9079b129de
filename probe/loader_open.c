/*
 * loader_open.c: each concern's eBPF object opened, sized and loaded in
 * the variant features.c planned, and attached; the table of openers in
 * load order.  croft-probe, as root before the drop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
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

/*
 * Loads an opened object in sections' programs, sized and with its
 * verifier logs (their counts noted), then with attach attaches it;
 * *what: the step it is at.
 */
static int load_skel(struct probe_objs *objs, enum probe_concern concern,
	struct bpf_object_skeleton *skel, const char *const *sections, bool attach,
	const char **what)
{
	struct bpf_object *obj = *skel->obj;
	struct bpf_map *drops = bpf_object__find_map_by_name(obj, "drops");
	int r;

	*what = "load";
	choose_programs(obj, sections);
	if (ask_verifier_stats(obj, concern) < 0)
		r = -ENOMEM;
	else if (fail_forced(concern) && (!drops || bpf_map__set_max_entries(drops, 0) < 0))
		r = -EINVAL;
	else if ((r = size_maps(obj, objs->map_entries)) == 0)
		r = bpf_object__load_skeleton(skel);
	take_verified(objs, obj);
	if (r < 0 || !attach)
		return r;
	*what = "attach";
	return bpf_object__attach_skeleton(skel);
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

	*what = "open";
	if (!(objs->gpufile = gpufile_bpf__open()))
		return -errno;
	for (size_t i = 0; i < sizeof(gpu_calls) / sizeof(gpu_calls[0]); i++)
		if (gpu_calls[i].nr < PROBE_SYSCALL_NR_MAX)
			objs->gpufile->rodata->call_kind[gpu_calls[i].nr] =
				(uint8_t)gpu_calls[i].kind;
	/* the entry program runs as a tail call of syscalls' */
	bpf_object__for_each_program(prog, objs->gpufile->obj) bpf_program__set_autoattach(
		prog, !strstr(bpf_program__section_name(prog), "/sys_enter"));
	return load_skel(objs, CONCERN_GPUFILE, objs->gpufile->skeleton,
		variant_sections(objs->plan.use_btf), true, what);
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

/* A tail call needs both programs of one type: ioctl's variant is syscalls'.  Loaded,
 * never attached: syscalls.bpf.c tail-calls it on ioctl. */
static int open_ioctl(struct probe_objs *objs, const char **what)
{
	int r;

	*what = "open";
	if (!(objs->ioctl = ioctl_open(objs->plan.ioctl_cast)))
		return -errno;
	objs->ioctl->rodata->ioctl_nr = SYS_ioctl;
	*what = "gpufile's maps";
	if ((r = share_gpufile_maps(objs)) < 0)
		return r;
	return load_skel(objs, CONCERN_IOCTL, objs->ioctl->skeleton,
		variant_sections(objs->plan.use_btf), false, what);
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
	if ((r = load_skel(objs, CONCERN_SYSCALLS, objs->syscalls->skeleton, variant_sections(btf),
		     false, what)) < 0)
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
	if ((r = load_skel(objs, CONCERN_SCHED, objs->sched->skeleton,
		     variant_sections(objs->plan.sched_walk), true, what)) < 0)
		return r;
	/* every thread's counts so far are its baseline: counting starts now */
	*what = "first thread walk";
	return loader_walk_threads(objs, objs->epoch);
}

static int open_proc(struct probe_objs *objs, const char **what)
{
	*what = "open";
	if (!(objs->proc = proc_bpf__open()))
		return -errno;
	return load_skel(objs, CONCERN_PROC, objs->proc->skeleton,
		variant_sections(objs->plan.use_btf), true, what);
}

static int open_exit(struct probe_objs *objs, const char **what)
{
	*what = "open";
	if (!(objs->exit = exit_bpf__open()))
		return -errno;
	return load_skel(objs, CONCERN_EXIT, objs->exit->skeleton,
		variant_sections(objs->plan.use_btf), true, what);
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

	if (objs->plan.net == NET_NONE)
		return 0;
	net_sections(&objs->plan, sections);
	*what = "open";
	if (!(objs->net = net_bpf__open()))
		return -errno;
	return load_skel(objs, CONCERN_NET, objs->net->skeleton, sections, true, what);
}

/* gpufile, then ioctl (which takes gpufile's maps), then syscalls, which tail-calls both. */
const struct concern_opener openers[CONCERNS] = {
	{ CONCERN_GPUFILE, open_gpufile },
	{ CONCERN_IOCTL, open_ioctl },
	{ CONCERN_SYSCALLS, open_syscalls },
	{ CONCERN_SCHED, open_sched },
	{ CONCERN_PROC, open_proc },
	{ CONCERN_NET, open_net },
	{ CONCERN_EXIT, open_exit },
};
