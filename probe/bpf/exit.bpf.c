/*
 * exit.bpf.c: a thread group's final figures, sent when its leader is
 * freed (after its reap): by then every thread's CPU time, I/O and peak RSS
 * are in its signal_struct, as wait4's rusage read them.
 * Its exe (the path its exec was given) and exit time are kept per tgid
 * from exec and exit until then; its arguments are sent at each exec.
 * Kernel side of croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#define SIGNAL_GROUP_EXIT 0x00000004 /* include/linux/sched/signal.h, unchanged since 2.6 */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROBE_FINALS_BYTES);
} finals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, PROBE_LIVES_ENTRIES);
	__type(key, __u32);
	__type(value, struct probe_life);
} lives SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_final_count);
} final_counts SEC(".maps");

/* A life being written, the cgroup path being built (twice its size: see cgroup_path),
 * an exec's arguments being sent. */
struct scratch {
	struct probe_life life;
	char path[2 * PROBE_CGROUP_LEN];
	struct probe_exec_argv argv;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/*
 * CO-RE shims: kernfs_node's parent became __parent in Linux 6.15
 * ("kernfs: Use RCU to access kernfs_node::parent"); both named here so the
 * object builds against either vmlinux.h.
 */
struct kernfs_node___new {
	struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct probe_final_count *counts(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&final_counts, &zero);
}

static __always_inline struct scratch *scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(((struct kernfs_node___new *)kn)->__parent))
		return BPF_CORE_READ((struct kernfs_node___new *)kn, __parent);
	return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

/* The life of tgid started at start, made (empty) when missing; NULL when the map is full. */
static __always_inline struct probe_life *life_of(__u32 tgid, __u64 start)
{
	struct probe_life *life = bpf_map_lookup_elem(&lives, &tgid);
	struct scratch *s;

	if (life && life->start_boot_ns == start)
		return life;
	if (!(s = scratch_get()))
		return NULL;
	s->life.start_boot_ns = start;
	s->life.exit_boot_ns = 0;
	s->life.exe[0] = '\0';
	if (bpf_map_update_elem(&lives, &tgid, &s->life, BPF_ANY) < 0) {
		struct probe_final_count *c = counts();

		if (c)
			c->lives_full++;
		return NULL;
	}
	return bpf_map_lookup_elem(&lives, &tgid);
}

/*
 * The arguments its exec gave it, sent to croft-probe (probe.h: struct
 * probe_exec_argv): p is current and its new image's stack holds them,
 * written by the exec a moment ago.
 */
static __always_inline void send_argv(struct task_struct *p, __u32 tgid)
{
	struct mm_struct *mm = BPF_CORE_READ(p, mm);
	unsigned long start = BPF_CORE_READ(mm, arg_start);
	unsigned long len = BPF_CORE_READ(mm, arg_end) - start;
	struct probe_final_count *c;
	struct scratch *s = scratch_get();

	if (len > PROBE_ARGV_LEN)
		len = PROBE_ARGV_LEN;
	if (!s || !len || bpf_probe_read_user(s->argv.argv, len, (const void *)start) < 0)
		return;
	s->argv.tgid = tgid;
	s->argv.argv_len = (__u32)len;
	s->argv.start_boot_ns = BPF_CORE_READ(p, group_leader, start_boottime);
	len += offsetof(struct probe_exec_argv, argv);
	if (bpf_ringbuf_output(&finals, &s->argv, len, BPF_RB_NO_WAKEUP) < 0 && (c = counts()))
		c->argvs_dropped++;
}

static __always_inline void on_exec(struct task_struct *p, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct probe_life *life = life_of(tgid, BPF_CORE_READ(p, group_leader, start_boottime));

	if (life)
		bpf_probe_read_kernel_str(
			life->exe, sizeof(life->exe), BPF_CORE_READ(bprm, interp));
	send_argv(p, tgid);
}

/* The last thread out: when the group exited (its reap may come much later). */
static __always_inline void on_exit(struct task_struct *p)
{
	struct probe_life *life;

	if (BPF_CORE_READ(p, signal, live.counter) != 0 ||
		BPF_CORE_READ(p, flags) & PF_KTHREAD_FLAG)
		return;
	life = life_of(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, group_leader, start_boottime));
	if (life)
		life->exit_boot_ns = bpf_ktime_get_boot_ns();
}

/*
 * The cgroup's path from its kernfs node: the names up to the root
 * gathered, then written root first.  Each name is read into path at an
 * offset below PROBE_CGROUP_LEN with at most PROBE_CGROUP_LEN bytes, which
 * the verifier can hold to a buffer twice that size.  Returns the length,
 * 0 when it is deeper or longer than the record holds.
 */
static __always_inline int cgroup_path(struct kernfs_node *kn, char *path)
{
	const char *names[PROBE_CGROUP_DEPTH];
	int depth = 0, off = 0;

#pragma unroll
	for (int i = 0; i < PROBE_CGROUP_DEPTH; i++) {
		struct kernfs_node *parent = kn ? kn_parent(kn) : NULL;

		if (!parent)
			break;
		names[i] = BPF_CORE_READ(kn, name);
		depth++;
		kn = parent;
	}
	if (!kn || kn_parent(kn))
		return 0;
	path[0] = '/';
	off = depth ? 0 : 1;
#pragma unroll
	for (int i = PROBE_CGROUP_DEPTH - 1; i >= 0; i--) {
		long n;

		if (i >= depth)
			continue;
		path[off & (PROBE_CGROUP_LEN - 1)] = '/';
		off++;
		n = bpf_probe_read_kernel_str(
			path + (off & (PROBE_CGROUP_LEN - 1)), PROBE_CGROUP_LEN, names[i]);
		if (n <= 0)
			return 0;
		off += (int)n - 1;
		if (off >= PROBE_CGROUP_LEN)
			return 0;
	}
	path[off & (PROBE_CGROUP_LEN - 1)] = '\0';
	return off;
}

/*
 * The group's cgroup2 path, or where the memory controller is in a v1
 * hierarchy (v1 and hybrid hosts) its path there, as the sampler's rows
 * name a process's cgroup.
 */
static __always_inline void group_cgroup(struct task_struct *p, struct probe_final_event *e)
{
	struct css_set *cset = BPF_CORE_READ(p, cgroups);
	struct cgroup *dfl = BPF_CORE_READ(cset, dfl_cgrp), *cg = dfl;
	struct cgroup_subsys_state *css = NULL;
	struct scratch *s = scratch_get();
	int len;

	if (!s || !dfl)
		return;
	/* memory in a v1 hierarchy (v1 and hybrid hosts): the sampler's rows name its path */
	if (bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id)) {
		bpf_probe_read_kernel(&css, sizeof(css),
			(char *)cset + bpf_core_field_offset(struct css_set, subsys) +
				bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id) *
					sizeof(css));
		cg = css ? BPF_CORE_READ(css, cgroup) : NULL;
		if (cg && BPF_CORE_READ(cg, root) != BPF_CORE_READ(dfl, root))
			e->flags |= PROBE_FINAL_CGROUP_V1;
		else
			cg = dfl;
	}
	len = cgroup_path(BPF_CORE_READ(cg, kn), s->path);
	if (len <= 0 || len >= PROBE_CGROUP_LEN) {
		e->flags &= ~PROBE_FINAL_CGROUP_V1;
		return;
	}
	bpf_probe_read_kernel(e->cgroup, sizeof(e->cgroup), s->path);
	e->flags |= PROBE_FINAL_CGROUP;
}

/*
 * The figures wait4 gave the parent, once the group is gone: every thread
 * (the leader last) added its CPU time and I/O to signal_struct when it was
 * released, and the peak RSS when the group died.
 */
static __always_inline void group_figures(struct task_struct *p, struct probe_final_event *e)
{
	struct signal_struct *sig = BPF_CORE_READ(p, signal);

	e->cpu_ns = BPF_CORE_READ(sig, sum_sched_runtime);
	e->read_bytes = BPF_CORE_READ(sig, ioac.read_bytes);
	e->write_bytes = BPF_CORE_READ(sig, ioac.write_bytes);
	e->maxrss_pages = BPF_CORE_READ(sig, maxrss);
	e->wait_status = BPF_CORE_READ(sig, flags) & SIGNAL_GROUP_EXIT
				 ? BPF_CORE_READ(sig, group_exit_code)
				 : BPF_CORE_READ(p, exit_code);
	e->uid = BPF_CORE_READ(p, real_cred, uid.val);
}

/*
 * sched_process_free of a group leader: the group was reaped (the leader is
 * released last) and the leader has switched out for good, an RCU grace
 * period ago.  A thread that exec'd took the leader's pid; the old leader
 * is freed under the thread's.  The tgid may be another process's by now:
 * its life is left alone.
 */
static __always_inline void on_free(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct probe_final_count *c = counts();
	struct probe_final_event *e;
	struct probe_life *life;
	__u64 start;

	if (BPF_CORE_READ(p, pid) != tgid || BPF_CORE_READ(p, flags) & PF_KTHREAD_FLAG)
		return;
	if (c)
		c->seen++;
	start = BPF_CORE_READ(p, start_boottime);
	life = bpf_map_lookup_elem(&lives, &tgid);
	if (life && life->start_boot_ns != start)
		life = NULL;
	e = bpf_ringbuf_reserve(&finals, sizeof(*e), 0);
	if (!e) {
		if (c)
			c->dropped++;
		if (life)
			bpf_map_delete_elem(&lives, &tgid);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e) - sizeof(e->cgroup) - sizeof(e->exe));
	e->cgroup[0] = e->exe[0] = '\0';
	e->tgid = tgid;
	e->start_boot_ns = start;
	e->exit_boot_ns = bpf_ktime_get_boot_ns();
	e->epoch = epoch & 1;
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	if (life) {
		if (life->exit_boot_ns) {
			e->exit_boot_ns = life->exit_boot_ns;
			e->flags |= PROBE_FINAL_EXIT_TIME;
		}
		if (life->exe[0] &&
			bpf_probe_read_kernel_str(e->exe, sizeof(e->exe), life->exe) > 0)
			e->flags |= PROBE_FINAL_EXE;
		bpf_map_delete_elem(&lives, &tgid);
	}
	group_figures(p, e);
	group_cgroup(p, e);
	bpf_ringbuf_submit(e, 0);
}

TP_BTF_AND_RAW(sched_process_exec, exit_exec, on_exec(p, bprm), struct task_struct *p,
	pid_t old_pid, struct linux_binprm *bprm)
TP_BTF_AND_RAW(sched_process_exit, exit_exit, on_exit(p), struct task_struct *p)
TP_BTF_AND_RAW(sched_process_free, exit_free, on_free(p), struct task_struct *p)
