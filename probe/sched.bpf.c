/*
 * sched.bpf.c: per tgid, voluntary and involuntary context switches and the
 * time its threads waited runnable on a run queue (wakeup or preemption to
 * switch-in), from sched_switch and sched_wakeup{,_new}.  Kernel side of
 * croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#define SCHED_MAP(name)                                          \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);          \
		__uint(max_entries, PROBE_TGID_ENTRIES);         \
		__type(key, __u32);                              \
		__type(value, struct probe_sched_val);           \
	} name SEC(".maps")

SCHED_MAP(sched_0);
SCHED_MAP(sched_1);

/* tid -> when it became runnable (CLOCK_MONOTONIC ns); not per generation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROBE_RUNQ_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} runq_since SEC(".maps");

static __always_inline struct probe_sched_val *sched_val(__u32 tgid)
{
	static const struct probe_sched_val zero;
	struct probe_sched_val *v;

	if (gen)
		v = lookup_or_init(&sched_1, 1, &tgid, &zero);
	else
		v = lookup_or_init(&sched_0, 0, &tgid, &zero);
	if (!v)
		count_drop(PROBE_DROP_SCHED_MAP_FULL);
	return v;
}

static __always_inline void runnable(__u32 tid, __u64 now)
{
	if (tid && bpf_map_update_elem(&runq_since, &tid, &now, BPF_ANY))
		count_drop(PROBE_DROP_RUNQ_MAP_FULL);
}

/*
 * prev leaves the CPU: involuntary when preempted or still runnable (the
 * kernel's nivcsw rule), and then it waits on the run queue again.  A dead
 * task's last switch is not counted: its exit was already reported.
 */
static __always_inline void switch_out(__u32 tid, __u32 tgid, bool preempt, __u32 state,
	__u64 now)
{
	struct probe_sched_val *v;
	bool involuntary = preempt || state == TASK_RUNNING_STATE;

	if (!tgid || (state & TASK_DEAD_STATE))
		return;
	v = sched_val(tgid);
	if (v) {
		if (involuntary)
			v->involuntary++;
		else
			v->voluntary++;
	}
	if (involuntary)
		runnable(tid, now);
}

static __always_inline void switch_in(__u32 tid, __u32 tgid, __u64 now)
{
	struct probe_sched_val *v;
	__u64 *since;

	if (!tid)
		return;
	since = bpf_map_lookup_elem(&runq_since, &tid);
	if (!since)
		return;
	if (now > *since && (v = sched_val(tgid)))
		v->runqueue_ns += now - *since;
	bpf_map_delete_elem(&runq_since, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	switch_out(prev->pid, prev->tgid, preempt, prev->__state, now);
	switch_in(next->pid, next->tgid, now);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p)
{
	runnable(p->pid, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p)
{
	runnable(p->pid, bpf_ktime_get_ns());
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	switch_out(BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), preempt,
		task_state(prev), now);
	switch_in(BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), now);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(wakeup_raw, struct task_struct *p)
{
	runnable(BPF_CORE_READ(p, pid), bpf_ktime_get_ns());
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(wakeup_new_raw, struct task_struct *p)
{
	runnable(BPF_CORE_READ(p, pid), bpf_ktime_get_ns());
	return 0;
}
