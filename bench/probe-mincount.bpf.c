/*
 * probe-mincount.bpf.c: the reference for bench-probe.sh: the least a
 * syscall counter can do, a raw_tp on sys_enter counting into a per-CPU
 * hash keyed by (tgid, nr).  Kernel side; loaded by probe-mincount (root).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct count_key {
	__u32 tgid;
	__u32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct count_key);
	__type(value, __u64);
} counts SEC(".maps");

SEC("raw_tp/sys_enter")
int BPF_PROG(count_enter, struct pt_regs *regs, long id)
{
	struct count_key k = { .tgid = bpf_get_current_pid_tgid() >> 32, .nr = (__u32)id };
	__u64 one = 1, *n = bpf_map_lookup_elem(&counts, &k);

	if (n)
		(*n)++;
	else
		bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
