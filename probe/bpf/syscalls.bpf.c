/*
 * syscalls.bpf.c: counts every syscall per (tgid, syscall number) into the
 * current epoch's per-CPU hash, and hands ioctls on to ioctl.bpf.c and
 * the waits and mmaps GPU files may be in to gpufile.bpf.c.
 * Kernel side of croft-probe, loaded by root; the sys_enter hook is the
 * hottest path croft has, so it stays short.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

COUNTED_MAP(syscalls_0, PROBE_SYSCALL_ENTRIES, struct probe_syscall_key, __u64);
COUNTED_MAP(syscalls_1, PROBE_SYSCALL_ENTRIES, struct probe_syscall_key, __u64);

/* Set before load: per syscall number, the jump slot to tail-call + 1 (0: none). */
const volatile __u8 jump_slot[PROBE_SYSCALL_NR_MAX];

/*
 * ioctl.bpf.c's and gpufile.bpf.c's programs (enum probe_jump), put here
 * by croft-probe: a tail call costs only the syscalls they look at, where a
 * second program on sys_enter would cost every syscall an indirect call
 * (retpolined on this kind of host).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, PROBE_JUMPS);
	__type(key, __u32);
	__type(value, __u32);
} jumps SEC(".maps");

static __always_inline void count_in(void *map, __u32 g, struct probe_syscall_key *key)
{
	static const __u64 zero;
	__u64 *n = lookup_or_init(map, g, key, &zero);

	if (n)
		(*n)++;
	else
		count_drop(PROBE_DROP_SYSCALL_MAP_FULL);
}

static __always_inline void count_syscall(void *ctx, long id)
{
	struct probe_syscall_key key = {
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.nr = (__u32)id,
	};

	if (id < 0)
		return;
	if (epoch)
		count_in(&syscalls_1, 1, &key);
	else
		count_in(&syscalls_0, 0, &key);
	if (id < PROBE_SYSCALL_NR_MAX && jump_slot[id])
		bpf_tail_call(ctx, &jumps, jump_slot[id] - 1);
}

TP_BTF_AND_RAW(sys_enter, sys_enter, count_syscall(ctx, id), struct pt_regs *regs, long id)
