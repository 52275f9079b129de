/*
 * proc.bpf.c: new thread groups, execs and whole-group exits, each with the
 * group leader's start_boottime so the sampler can match identities, sent
 * through a ring buffer; every event seen and every one dropped is counted
 * per epoch and kind.  Kernel side of croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PROBE_EVENTS_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROBE_EPOCHS *PROBE_EV_SLOTS);
	__type(key, __u32);
	__type(value, struct probe_event_count);
} event_counts SEC(".maps");

/*
 * Counted as seen before the reserve, so a lost event shows as seen >
 * delivered + dropped.  epoch is read once: the count and the event carry
 * the same epoch, which croft-probe settles after its flip.
 */
static __always_inline void emit(
	__u32 kind, __u32 tgid, __u32 ppid, __u32 exit_code, __u64 start_boot_ns, const char *comm)
{
	__u32 g = epoch & 1, slot = g * PROBE_EV_SLOTS + kind;
	struct probe_event_count *c = bpf_map_lookup_elem(&event_counts, &slot);
	struct probe_event *e;

	if (c)
		c->seen++;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (c)
			c->dropped++;
		count_drop(PROBE_DROP_EVENTS_FULL);
		return;
	}
	e->epoch = g;
	e->reserved = 0;
	e->kind = kind;
	e->tgid = tgid;
	e->ppid = ppid;
	e->exit_code = exit_code;
	e->start_boot_ns = start_boot_ns;
	e->event_boot_ns = bpf_ktime_get_boot_ns();
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), comm);
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	if (child->pid == child->tgid)
		emit(PROBE_EV_FORK, child->tgid, parent->tgid, 0, child->start_boottime,
			child->comm);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *p)
{
	emit(PROBE_EV_EXEC, p->tgid, p->real_parent->tgid, 0, p->group_leader->start_boottime,
		p->comm);
	return 0;
}

/* The last thread out (signal->live reached 0) reports the group's exit. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p)
{
	if (p->signal->live.counter == 0)
		emit(PROBE_EV_EXIT, p->tgid, p->real_parent->tgid, p->signal->group_exit_code,
			p->group_leader->start_boottime, p->comm);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = BPF_CORE_READ(child, tgid);
	char comm[PROBE_COMM_LEN];

	if (BPF_CORE_READ(child, pid) != tgid)
		return 0;
	BPF_CORE_READ_STR_INTO(&comm, child, comm);
	emit(PROBE_EV_FORK, tgid, BPF_CORE_READ(parent, tgid), 0,
		BPF_CORE_READ(child, start_boottime), comm);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *p)
{
	char comm[PROBE_COMM_LEN];

	BPF_CORE_READ_STR_INTO(&comm, p, comm);
	emit(PROBE_EV_EXEC, BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, real_parent, tgid), 0,
		BPF_CORE_READ(p, group_leader, start_boottime), comm);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *p)
{
	char comm[PROBE_COMM_LEN];

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	BPF_CORE_READ_STR_INTO(&comm, p, comm);
	emit(PROBE_EV_EXIT, BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, real_parent, tgid),
		BPF_CORE_READ(p, signal, group_exit_code),
		BPF_CORE_READ(p, group_leader, start_boottime), comm);
	return 0;
}
