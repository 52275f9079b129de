/*
 * sched.bpf.c: per tgid, voluntary and involuntary context switches and the
 * time its threads waited runnable on a run queue: the kernel's own
 * per-thread counts, read by a walk over the threads at each answer and at
 * thread exit (tp_btf), or counted on sched_switch with
 * sched_wakeup{,_new} timestamps (raw_tp).  Kernel side of croft-probe,
 * loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

COUNTED_MAP(sched_0, PROBE_TGID_ENTRIES, __u32, struct probe_sched_val);
COUNTED_MAP(sched_1, PROBE_TGID_ENTRIES, __u32, struct probe_sched_val);

/* Set before load: CLOCK_MONOTONIC ns when croft-probe started loading. */
const volatile __u64 loaded_mono_ns;

/*
 * tp_btf: no program on sched_switch.  The kernel already counts, per
 * thread, voluntary and involuntary switches (nvcsw, nivcsw: what
 * /proc/<pid>/status shows) and run-queue wait (sched_info.run_delay:
 * /proc/<pid>/schedstat).  A walk over every thread, run by croft-probe at
 * load and at each answer, and each thread's exit add the part not yet
 * counted to its tgid: exactly the kernel's figures, at no cost per context
 * switch.  Per thread, in task storage: what was counted (threads older
 * than croft-probe start from what they had at load).
 */
struct thread_counted {
	__u64 voluntary_plus1; /* each: counted + 1; 0: thread not seen yet */
	__u64 involuntary_plus1;
	__u64 runqueue_plus1;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_counted);
} runq_task SEC(".maps");

/* Set by croft-probe before each walk: the epoch it adds into. */
volatile __u32 walk_epoch;

/* raw_tp (untrusted task pointers, no task storage): tid -> when it became runnable. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROBE_RUNQ_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} runq_since SEC(".maps");

static __always_inline struct probe_sched_val *sched_val_in(__u32 g, __u32 tgid)
{
	static const struct probe_sched_val zero;
	struct probe_sched_val *v;

	if (g & 1)
		v = lookup_or_init(&sched_1, 1, &tgid, &zero);
	else
		v = lookup_or_init(&sched_0, 0, &tgid, &zero);
	if (!v)
		count_drop(PROBE_DROP_SCHED_MAP_FULL);
	return v;
}

static __always_inline struct probe_sched_val *sched_val(__u32 tgid)
{
	return sched_val_in(epoch, tgid);
}

/*
 * raw_tp: counts one switch out: involuntary when preempted or still
 * runnable (the kernel's nivcsw rule).  A dead task's last switch is not
 * counted: its exit was already reported.  Returns whether prev waits
 * runnable now.
 */
static __always_inline bool count_switch(struct probe_sched_val *v, bool preempt, __u32 state)
{
	bool involuntary = preempt || state == TASK_RUNNING_STATE;

	if (v) {
		if (involuntary)
			v->involuntary++;
		else
			v->voluntary++;
	}
	return involuntary;
}

/*
 * The part of a kernel counter (now) not yet taken into *counted_plus1; a
 * thread seen for the first time starts from now when it is older than
 * croft-probe.  The walk and the thread's own exit can meet on one thread:
 * compare-and-swap gives every unit to exactly one of them.
 */
static __always_inline __u64 take(__u64 *counted_plus1, __u64 now, bool older)
{
	__u64 was = *counted_plus1, base;

	now++;
	if (!was) {
		base = older ? now : 1;
		was = __sync_val_compare_and_swap(counted_plus1, 0, base);
		if (!was)
			was = base;
	}
	if (now <= was || __sync_val_compare_and_swap(counted_plus1, was, now) != was)
		return 0;
	return now - was;
}

/* tp_btf: adds what t's kernel counters gained since last taken to epoch g. */
static __always_inline void count_thread(struct task_struct *t, __u32 g)
{
	bool older = t->start_time < loaded_mono_ns;
	__u64 vol, invol, delay;
	struct probe_sched_val *v;
	struct thread_counted *c;

	c = bpf_task_storage_get(&runq_task, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		count_drop(PROBE_DROP_RUNQ_MAP_FULL);
		return;
	}
	vol = take(&c->voluntary_plus1, t->nvcsw, older);
	invol = take(&c->involuntary_plus1, t->nivcsw, older);
	delay = take(&c->runqueue_plus1, t->sched_info.run_delay, older);
	if (!(vol | invol | delay) || !(v = sched_val_in(g, t->tgid)))
		return;
	v->voluntary += vol;
	v->involuntary += invol;
	v->runqueue_ns += delay;
}

/* Kernel threads never make a row (the sampler skips them): not counted. */
static __always_inline bool is_kthread(struct task_struct *t)
{
	return t->flags & PF_KTHREAD_FLAG;
}

/* A thread's last counts, before its exit is reported (this runs before proc.bpf.c's). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit_btf, struct task_struct *p)
{
	if (p->tgid && !is_kthread(p))
		count_thread(p, epoch);
	return 0;
}

/*
 * croft-probe's walk, into epoch walk_epoch (at an answer: the one just
 * closed).  Zombies are left out: their exit took their counts, and the
 * switch into death that follows is not counted (as on sched_switch).
 */
SEC("iter/task")
int thread_walk(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;

	if (t && t->tgid && !t->exit_state && !is_kthread(t))
		count_thread(t, walk_epoch);
	return 0;
}

static __always_inline void runnable(__u32 tid, __u64 now)
{
	if (tid && bpf_map_update_elem(&runq_since, &tid, &now, BPF_ANY))
		count_drop(PROBE_DROP_RUNQ_MAP_FULL);
}

/* raw_tp: waits measured from wakeup (or preemption) to switch-in. */
SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tgid = BPF_CORE_READ(prev, tgid), state = task_state(prev);
	__u32 tid = BPF_CORE_READ(next, pid);
	__u64 now = bpf_ktime_get_ns(), *since;
	struct probe_sched_val *v;

	if (tgid && !(state & TASK_DEAD_STATE) && count_switch(sched_val(tgid), preempt, state))
		runnable(BPF_CORE_READ(prev, pid), now);
	if (!tid || !(since = bpf_map_lookup_elem(&runq_since, &tid)))
		return 0;
	if (now > *since && (v = sched_val(BPF_CORE_READ(next, tgid))))
		v->runqueue_ns += now - *since;
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
