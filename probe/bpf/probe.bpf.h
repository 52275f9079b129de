/*
 * probe.bpf.h: what every croft-probe eBPF program shares: the epoch
 * switch, the per-CPU drop counters, the count-into-a-hash idiom and the
 * CO-RE shims.  Kernel side only; included after vmlinux.h.
 */
#ifndef CROFT_PROBE_BPF_H
#define CROFT_PROBE_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kernel.h"
#include "probe.h"

#define TASK_RUNNING_STATE 0x0000
#define TASK_DEAD_STATE    0x0080

/* Which epoch of maps the programs write; flipped by croft-probe. */
volatile __u32 epoch;

/*
 * Set when an insert into this object's epoch g found the map full;
 * croft-probe clears it once it emptied that epoch.  While set, a new
 * key is dropped at the cost of one lookup: a full preallocated hash makes
 * every failed insert walk the per-CPU free lists under locks (microseconds).
 */
volatile __u32 map_full[PROBE_EPOCHS];

#define E2BIG_ERR 7

/* An epoch of a counted map (loader.c checks its key and value sizes
 * against concerns[]). */
#define COUNTED_MAP(name, entries, key_type, value_type)                                           \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);                                            \
		__uint(max_entries, entries);                                                      \
		__type(key, key_type);                                                             \
		__type(value, value_type);                                                         \
	} name SEC(".maps")

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROBE_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		(*n)++;
}

/*
 * Returns this CPU's value for key in epoch g's map, inserting zero
 * first (BPF_NOEXIST: an insert racing ours on another CPU wins and we take
 * its entry).  NULL when the map is full; the caller counts the drop.
 */
static __always_inline void *lookup_or_init(void *map, __u32 g, const void *key, const void *zero)
{
	void *val = bpf_map_lookup_elem(map, key);

	if (val)
		return val;
	if (map_full[g & 1])
		return NULL;
	if (bpf_map_update_elem(map, key, zero, BPF_NOEXIST) == -E2BIG_ERR)
		map_full[g & 1] = 1;
	return bpf_map_lookup_elem(map, key);
}

/*
 * CO-RE shim: task_struct's state was renamed __state in Linux 5.14
 * (commit 2f064a59a11f "sched: Change task_struct::state").
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)task, state);
}

/*
 * A tracepoint's program in both variants from one body: NAME_btf
 * (tp_btf) and NAME_raw (raw_tp, for kernels without typed tracepoints);
 * features.c plans which one loads.  The body reads its arguments as
 * raw_tp can (BPF_CORE_READ); the program returns 0.
 */
#define TP_BTF_AND_RAW(tp, name, body, ...)                                                        \
	SEC("tp_btf/" #tp)                                                                         \
	int BPF_PROG(name##_btf, __VA_ARGS__)                                                      \
	{                                                                                          \
		body;                                                                              \
		return 0;                                                                          \
	}                                                                                          \
	SEC("raw_tp/" #tp)                                                                         \
	int BPF_PROG(name##_raw, __VA_ARGS__)                                                      \
	{                                                                                          \
		body;                                                                              \
		return 0;                                                                          \
	}

char LICENSE[] SEC("license") = "GPL";

#endif
