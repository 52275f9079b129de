/*
 * features.c: what the running kernel offers croft-probe's programs, probed
 * before anything is loaded (vmlinux BTF, a tiny program load, a trial
 * fexit attach), and the plan that follows: which variant of each program,
 * and for every fallback the one sentence saying which and why.
 * croft-probe, as root before the drop.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probed.h"

static const char *const net_source_names[] = {
	[NET_NONE] = NULL,
	[NET_TRACEPOINT] = "tracepoint",
	[NET_FEXIT] = "fexit",
	[NET_KRETPROBE] = "kretprobe",
};

static bool btf_has(const struct btf *btf, const char *name, int kind)
{
	return btf && btf__find_by_name_kind(btf, name, kind) > 0;
}

static bool btf_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf ? btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT) : -1;
	const struct btf_type *t;
	const struct btf_member *m;

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return true;
	return false;
}

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/*
 * BPF_ATOMIC compare-and-swap (5ffa25502b5a "bpf: Add instructions for
 * atomic_[cmp]xchg", Linux 5.12), which sched's walk needs: the verifier
 * of an older kernel refuses this socket filter (a stack slot, r0 the
 * expected value, r1 the new one).
 */
static bool kernel_has_cmpxchg(void)
{
	const struct bpf_insn insns[] = {
		INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -8, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1),
		INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_10, BPF_REG_1, -8, BPF_CMPXCHG),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns,
		sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * Whether an fexit program attaches to func, as net.bpf.c's would: it
 * needs a BPF trampoline (x86-64 since Linux 5.5, arm64 since 6.0).  The
 * trial program returns at once and is detached before this returns.
 * Returns 0 or -errno.
 */
static int fexit_attaches(const struct btf *btf, const char *func)
{
	const struct bpf_insn insns[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FEXIT);
	int id = btf ? btf__find_by_name_kind(btf, func, BTF_KIND_FUNC) : -ENOENT, prog, link;

	if (id <= 0)
		return -ENOENT;
	opts.attach_btf_id = (__u32)id;
	prog = bpf_prog_load(
		BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, sizeof(insns) / sizeof(insns[0]), &opts);
	if (prog < 0)
		return -errno;
	link = bpf_raw_tracepoint_open(NULL, prog);
	link = link < 0 ? -errno : close(link);
	close(prog);
	return link;
}

/* The first integer after prefix in file, or -1. */
static long read_number(const char *file, const char *prefix)
{
	FILE *f = fopen(file, "re");
	char buf[64];
	long v = -1;

	if (f && fgets(buf, sizeof(buf), f) && !strncmp(buf, prefix, strlen(prefix)))
		v = strtol(buf + strlen(prefix), NULL, 10);
	if (f)
		fclose(f);
	return v;
}

#define KPROBE_PMU "/sys/bus/event_source/devices/kprobe/"

/*
 * Whether a kretprobe on func can be made as libbpf makes it: a perf event
 * of the kprobe PMU (tracefs is read-only under the unit).  Distribution
 * kernels may refuse perf_event_open without CAP_SYS_ADMIN at
 * kernel.perf_event_paranoid 3 (Debian) or 4 (Ubuntu).  Returns 0 or -errno.
 */
static int kretprobe_opens(const char *func)
{
	struct perf_event_attr attr = { .size = sizeof(attr) };
	long type = read_number(KPROBE_PMU "type", ""), bit;
	int fd;

	bit = read_number(KPROBE_PMU "format/retprobe", "config:");
	if (type < 0 || bit < 0 || bit > 63)
		return -ENOENT;
	attr.type = (__u32)type;
	attr.config = 1ull << bit;
	attr.config1 = (__u64)(uintptr_t)func; /* kprobe_func */
	fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* what: a concern, or PLAN_ALL */
static void say(struct probe_plan *plan, int what, const char *fmt, const char *arg)
{
	snprintf(plan->why[what], sizeof(plan->why[what]), fmt, arg);
}

/*
 * tp_btf: the btf_trace_* typedefs came with tp_btf itself (Linux 5.5,
 * f1b9509c2fb0 "bpf: Replace prog_raw_tp+btf_id with prog_tracing");
 * ioctl's program also needs bpf_get_current_task_btf (Linux 5.11).
 */
static void plan_variant(struct probe_plan *plan, const struct btf *btf, bool force_raw)
{
	plan->use_btf = !force_raw && btf_has(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) &&
			btf_has(btf, "bpf_get_current_task_btf", BTF_KIND_FUNC);
	if (!plan->use_btf)
		say(plan, PLAN_ALL, "every program as raw_tp: %s",
			force_raw ? "CROFT_PROBE_RAW_TP is set (a test knob)"
				  : "the kernel lacks BTF-typed tracepoints (tp_btf, Linux 5.5) or "
				    "bpf_get_current_task_btf (5.11)");
}

static void plan_ioctl(struct probe_plan *plan, const struct btf *btf)
{
	plan->ioctl_cast = plan->use_btf && btf_has(btf, "bpf_rdonly_cast", BTF_KIND_FUNC);
	if (plan->use_btf && !plan->ioctl_cast)
		say(plan, CONCERN_IOCTL, "%s",
			"file and inode read with bpf_probe_read_kernel: "
			"the kernel lacks the bpf_rdonly_cast kfunc (Linux 6.2)");
}

/* The first thing sched's thread walk needs that the kernel lacks, NULL when none. */
static const char *sched_walk_missing(const struct btf *btf)
{
	if (!btf_member(btf, "task_struct", "sched_info"))
		return "task_struct.sched_info (CONFIG_SCHED_INFO)";
	if (!btf_has(btf, "bpf_iter_task", BTF_KIND_FUNC))
		return "task iterators (Linux 5.8)";
	/* a10787e6d58c "bpf: Enable task local storage for tracing programs" */
	if (!btf_member(btf, "task_struct", "bpf_storage"))
		return "task storage in tracing programs (Linux 5.13)";
	if (!kernel_has_cmpxchg())
		return "BPF atomic compare-and-swap (Linux 5.12)";
	return NULL;
}

static void plan_sched(struct probe_plan *plan, const struct btf *btf)
{
	const char *missing = plan->use_btf ? sched_walk_missing(btf) : NULL;

	plan->sched_walk = plan->use_btf && !missing;
	if (missing)
		say(plan, CONCERN_SCHED,
			"counted on sched_switch and wakeups (raw_tp): the kernel "
			"lacks %s for the thread walk",
			missing);
}

/* CROFT_PROBE_NET=fexit|kretprobe forces that source (a test knob); 0 or -EINVAL. */
static int net_forced(enum net_source *ret_source)
{
	const char *v = getenv("CROFT_PROBE_NET");

	*ret_source = NET_NONE;
	if (!v || !*v)
		return 0;
	for (int s = NET_FEXIT; s <= NET_KRETPROBE; s++)
		if (!strcmp(v, net_source_names[s])) {
			*ret_source = (enum net_source)s;
			return 0;
		}
	return -EINVAL;
}

/*
 * Best first: the tracepoints, fexit, kretprobe; a forced one only where it
 * works.  ret_tried says why the ones tried did not.
 */
static enum net_source net_source(
	const struct btf *btf, enum net_source forced, char *ret_tried, size_t tried_len)
{
	bool tracepoints = btf_has(btf, "btf_trace_sock_send_length", BTF_KIND_TYPEDEF) &&
			   btf_has(btf, "btf_trace_sock_recv_length", BTF_KIND_TYPEDEF);
	int fexit = 0, kret;

	if (tracepoints && forced == NET_NONE)
		return NET_TRACEPOINT;
	if (forced != NET_KRETPROBE && (fexit = fexit_attaches(btf, "inet_sendmsg")) == 0)
		return NET_FEXIT;
	if ((kret = kretprobe_opens("inet_sendmsg")) == 0)
		return NET_KRETPROBE;
	snprintf(ret_tried, tried_len, "%s%s%skretprobe: %s", fexit ? "fexit: " : "",
		fexit ? strerror(-fexit) : "", fexit ? "; " : "",
		kret == -ENOENT ? "no kprobe PMU (CONFIG_KPROBES)" : strerror(-kret));
	return NET_NONE;
}

static void plan_net(struct probe_plan *plan, const struct btf *btf, enum net_source forced)
{
	const char *why = forced ? "CROFT_PROBE_NET is set (a test knob)"
				 : "the kernel lacks the sock_send_length/sock_recv_length "
				   "tracepoints (Linux 6.3)";
	char tried[96] = "";

	plan->net = net_source(btf, forced, tried, sizeof(tried));
	/* IPv6 may be a module, or not built: its functions are then not in vmlinux */
	plan->net_inet6 = btf_has(btf, "inet6_sendmsg", BTF_KIND_FUNC) &&
			  btf_has(btf, "inet6_recvmsg", BTF_KIND_FUNC);
	if (plan->net == NET_NONE)
		snprintf(plan->why[CONCERN_NET], sizeof(plan->why[CONCERN_NET]),
			"no socket bytes: %s, and on inet_sendmsg %s", why, tried);
	else if (plan->net != NET_TRACEPOINT)
		snprintf(plan->why[CONCERN_NET], sizeof(plan->why[CONCERN_NET]),
			"%s on inet_sendmsg/inet_recvmsg%s: %s", net_source_names[plan->net],
			plan->net_inet6 ? " and their IPv6 twins"
					: " (no IPv6: inet6_* not in vmlinux)",
			why);
}

int features_plan(struct probe_plan *ret_plan, char *err, size_t err_len)
{
	struct probe_plan plan = { 0 };
	enum net_source forced;
	struct btf *btf;

	if (net_forced(&forced) < 0) {
		snprintf(err, err_len, "CROFT_PROBE_NET: expected fexit or kretprobe, got '%s'",
			getenv("CROFT_PROBE_NET"));
		return -EINVAL;
	}
	btf = btf__load_vmlinux_btf();
	if (libbpf_get_error(btf))
		btf = NULL;
	plan_variant(&plan, btf, getenv("CROFT_PROBE_RAW_TP") != NULL);
	plan_ioctl(&plan, btf);
	plan_sched(&plan, btf);
	plan_net(&plan, btf, forced);
	btf__free(btf);
	*ret_plan = plan;
	return 0;
}

const char *features_net_source(enum net_source source)
{
	return net_source_names[source];
}
