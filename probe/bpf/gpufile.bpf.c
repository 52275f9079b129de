/*
 * gpufile.bpf.c: per tgid, the waits on GPU files (poll, ppoll, select,
 * pselect6 on a set holding a GPU fd; epoll waits on a set a GPU fd was
 * added to; GPU ioctls the thread slept in) and the mmaps of GPU files;
 * per thread, a mark while it is inside a GPU ioctl or wait, which
 * croft-probe counts at each answer.  The entry program is tail-called by
 * syscalls.bpf.c for those syscalls; sys_exit and thread exit clear the
 * marks.  tp_btf and raw_tp variants.  Kernel side of croft-probe, loaded
 * by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#include "gpufile.bpf.h"

#define MAP_ANONYMOUS_BIT 0x20
#define EPOLL_CTL_ADD_OP  1
#define EPOLL_CTL_DEL_OP  2

COUNTED_MAP(gpufile_0, PROBE_TGID_ENTRIES, __u32, struct probe_gpufile_val);
COUNTED_MAP(gpufile_1, PROBE_TGID_ENTRIES, __u32, struct probe_gpufile_val);

/* Set before load: what each syscall number of this architecture is to us. */
const volatile __u8 call_kind[PROBE_SYSCALL_NR_MAX];

/*
 * Epoll sets a GPU fd was added to: (file, eventpoll) -> GPU fds added
 * less removed.  LRU: a set closed without removing them is forgotten in
 * time; both pointers must be reused at once for another set to match.
 */
struct epoll_key {
	__u64 file;
	__u64 ep;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROBE_GPU_EPOLL_ENTRIES);
	__type(key, struct epoll_key);
	__type(value, __u32);
} gpu_epolls SEC(".maps");

static __always_inline void count_gpufile(__u64 waits, __u64 mmaps)
{
	static const struct probe_gpufile_val zero;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, g = epoch;
	struct probe_gpufile_val *v;

	if (g)
		v = lookup_or_init(&gpufile_1, 1, &tgid, &zero);
	else
		v = lookup_or_init(&gpufile_0, 0, &tgid, &zero);
	if (!v) {
		count_drop(PROBE_DROP_GPUFILE_MAP_FULL);
		return;
	}
	v->waits += waits;
	v->mmaps += mmaps;
}

#include "waitsets.bpf.h"

/* The epoll set's key in gpu_epolls, 0 in file when epfd is no open file. */
static __always_inline struct epoll_key epoll_key_of(int epfd)
{
	struct file *file = current_fd_file(epfd);
	struct epoll_key key = { (__u64)file, 0 };

	if (file)
		key.ep = (__u64)BPF_CORE_READ(file, private_data);
	return key;
}

static __always_inline void epoll_ctl_gpu(int epfd, int op, int fd)
{
	struct epoll_key key;
	__u32 one = 1, *n;

	if ((op != EPOLL_CTL_ADD_OP && op != EPOLL_CTL_DEL_OP) || !gpu_fd(fd))
		return;
	key = epoll_key_of(epfd);
	if (!key.file)
		return;
	n = bpf_map_lookup_elem(&gpu_epolls, &key);
	if (op == EPOLL_CTL_ADD_OP && n)
		__sync_fetch_and_add(n, 1);
	else if (op == EPOLL_CTL_ADD_OP)
		bpf_map_update_elem(&gpu_epolls, &key, &one, BPF_NOEXIST);
	else if (n && *n > 1)
		__sync_fetch_and_add(n, (__u32)-1);
	else if (n)
		bpf_map_delete_elem(&gpu_epolls, &key);
}

static __always_inline bool epoll_set_gpu(int epfd)
{
	struct epoll_key key = epoll_key_of(epfd);
	__u32 *n = key.file ? bpf_map_lookup_elem(&gpu_epolls, &key) : NULL;

	return n && *n;
}

static __always_inline bool gpu_wait(__u8 kind, struct pt_regs *regs)
{
	__u64 arg1 = PT_REGS_PARM1_CORE_SYSCALL(regs), arg2 = PT_REGS_PARM2_CORE_SYSCALL(regs);

	switch (kind) {
	case PROBE_CALL_POLL:
		return poll_set_gpu(arg1, arg2);
	case PROBE_CALL_SELECT:
		return select_set_gpu((__u64)(int)arg1, arg2, PT_REGS_PARM3_CORE_SYSCALL(regs),
			PT_REGS_PARM4_CORE_SYSCALL(regs));
	case PROBE_CALL_EPOLL_WAIT:
		return epoll_set_gpu((int)arg1);
	default:
		return false;
	}
}

static __always_inline void on_enter(struct pt_regs *regs, long id)
{
	__u8 kind = id >= 0 && id < PROBE_SYSCALL_NR_MAX ? call_kind[id] : PROBE_CALL_NONE;

	if (kind == PROBE_CALL_MMAP) {
		if (!((long)PT_REGS_PARM4_CORE_SYSCALL(regs) & MAP_ANONYMOUS_BIT) &&
			gpu_fd((int)PT_REGS_PARM5_CORE_SYSCALL(regs)))
			count_gpufile(0, 1);
	} else if (kind == PROBE_CALL_EPOLL_CTL) {
		epoll_ctl_gpu((int)PT_REGS_PARM1_CORE_SYSCALL(regs),
			(int)PT_REGS_PARM2_CORE_SYSCALL(regs),
			(int)PT_REGS_PARM3_CORE_SYSCALL(regs));
	} else if (gpu_wait(kind, regs)) {
		count_gpufile(1, 0);
		mark_inflight(PROBE_INFLIGHT_WAIT, 0);
	}
}

/*
 * The syscall number at sys_exit (the tracepoint does not pass it); -1
 * where this file does not know the register: every exit then looks up.
 * tp_btf loads it straight from the typed regs, raw_tp through
 * bpf_probe_read: this runs on every syscall of the host.
 */
#if defined(__TARGET_ARCH_x86)
#define EXIT_NR_BTF(regs) ((long)(regs)->orig_ax)
#define EXIT_NR_RAW(regs) ((long)BPF_CORE_READ(regs, orig_ax))
#elif defined(__TARGET_ARCH_arm64)
#define EXIT_NR_BTF(regs) ((long)(regs)->syscallno)
#define EXIT_NR_RAW(regs) ((long)BPF_CORE_READ(regs, syscallno))
#else
#define EXIT_NR_BTF(regs) (-1L)
#define EXIT_NR_RAW(regs) (-1L)
#endif

/* The current thread's voluntary context switches. */
static __always_inline __u64 current_nvcsw(bool btf)
{
	if (btf)
		return bpf_get_current_task_btf()->nvcsw;
	return BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), nvcsw);
}

/* A GPU ioctl the thread slept in (a voluntary switch since entry) is a wait. */
static __always_inline int on_exit(long nr, bool btf)
{
	__u8 kind = nr >= 0 && nr < PROBE_SYSCALL_NR_MAX ? call_kind[nr] : PROBE_CALL_IOCTL;
	__u32 tid;
	struct probe_inflight *m;

	if (kind != PROBE_CALL_IOCTL && kind != PROBE_CALL_POLL && kind != PROBE_CALL_SELECT &&
		kind != PROBE_CALL_EPOLL_WAIT)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	if (!(m = bpf_map_lookup_elem(&gpu_inflight, &tid)))
		return 0;
	if (m->kind == PROBE_INFLIGHT_IOCTL && current_nvcsw(btf) > m->nvcsw)
		count_gpufile(1, 0);
	bpf_map_delete_elem(&gpu_inflight, &tid);
	return 0;
}

TP_BTF_AND_RAW(sys_enter, gpu_enter, on_enter(regs, id), struct pt_regs *regs, long id)

SEC("tp_btf/sys_exit")
int BPF_PROG(gpu_exit_btf, struct pt_regs *regs, long ret)
{
	return on_exit(EXIT_NR_BTF(regs), true);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(gpu_exit_raw, struct pt_regs *regs, long ret)
{
	return on_exit(EXIT_NR_RAW(regs), false);
}

/* A thread that dies inside (no sys_exit) leaves no mark behind. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(gpu_threxit_btf, struct task_struct *p)
{
	__u32 tid = p->pid;

	bpf_map_delete_elem(&gpu_inflight, &tid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(gpu_threxit_raw, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&gpu_inflight, &tid);
	return 0;
}
