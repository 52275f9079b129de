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

/*
 * When a thread became runnable (CLOCK_MONOTONIC ns, 0: not waiting).  tp_btf
 * programs keep it in task local storage: no lock, no size limit, freed with
 * the task.  raw_tp programs cannot (untrusted task pointers) and use a hash
 * by tid.  croft-probe creates only the one its variant uses.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} runq_task SEC(".maps");

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

/* raw_tp: tid -> since in a hash. */
static __always_inline void runnable(__u32 tid, __u64 now)
{
	if (tid && bpf_map_update_elem(&runq_since, &tid, &now, BPF_ANY))
		count_drop(PROBE_DROP_RUNQ_MAP_FULL);
}

/* tp_btf: since in the task's own storage. */
static __always_inline void runnable_task(struct task_struct *p, __u64 now)
{
	__u64 *since;

	if (!p->pid)
		return;
	since = bpf_task_storage_get(&runq_task, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (since)
		*since = now;
	else
		count_drop(PROBE_DROP_RUNQ_MAP_FULL);
}

static __always_inline void add_wait(__u32 tgid, __u64 since, __u64 now)
{
	struct probe_sched_val *v;

	if (since && now > since && (v = sched_val(tgid)))
		v->runqueue_ns += now - since;
}

/*
 * prev leaves the CPU: involuntary when preempted or still runnable (the
 * kernel's nivcsw rule), and then it waits on the run queue again.  A dead
 * task's last switch is not counted: its exit was already reported.
 * Returns whether prev now waits runnable.
 */
static __always_inline bool switch_out(__u32 tgid, bool preempt, __u32 state)
{
	struct probe_sched_val *v;
	bool involuntary = preempt || state == TASK_RUNNING_STATE;

	if (!tgid || (state & TASK_DEAD_STATE))
		return false;
	v = sched_val(tgid);
	if (v) {
		if (involuntary)
			v->involuntary++;
		else
			v->voluntary++;
	}
	return involuntary;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns(), *since;

	if (switch_out(prev->tgid, preempt, prev->__state))
		runnable_task(prev, now);
	if (!next->pid)
		return 0;
	since = bpf_task_storage_get(&runq_task, next, 0, 0);
	if (since && *since) {
		add_wait(next->tgid, *since, now);
		*since = 0;
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p)
{
	runnable_task(p, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p)
{
	runnable_task(p, bpf_ktime_get_ns());
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	__u64 now = bpf_ktime_get_ns(), *since;

	if (switch_out(BPF_CORE_READ(prev, tgid), preempt, task_state(prev)))
		runnable(BPF_CORE_READ(prev, pid), now);
	if (!tid || !(since = bpf_map_lookup_elem(&runq_since, &tid)))
		return 0;
	add_wait(BPF_CORE_READ(next, tgid), *since, now);
	bpf_map_delete_elem(&runq_since, &tid);
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
