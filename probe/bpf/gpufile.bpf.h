/*
 * gpufile.bpf.h: what ioctl.bpf.c and gpufile.bpf.c share: the GPU device
 * set, the fd -> file -> device test, and the in-flight marks of threads
 * inside a GPU ioctl or wait.  Each object declares the maps; croft-probe
 * hands gpufile's to ioctl before it loads (loader_open.c), so both see one set
 * and one mark per thread.  Kernel side of croft-probe, loaded by root.
 */
#ifndef CROFT_GPUFILE_BPF_H
#define CROFT_GPUFILE_BPF_H

#define S_IFMT_BITS  00170000
#define S_IFCHR_BITS 0020000
#define MINOR_BITS   20 /* kernel dev_t: major << 20 | minor */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_gpu_rules);
} gpu_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROBE_INFLIGHT_ENTRIES);
	__type(key, __u32);
	__type(value, struct probe_inflight);
} gpu_inflight SEC(".maps");

static __always_inline bool gpu_device(__u32 rdev)
{
	__u32 zero = 0, major = rdev >> MINOR_BITS, minor = rdev & ((1u << MINOR_BITS) - 1);
	struct probe_gpu_rules *set = bpf_map_lookup_elem(&gpu_rules, &zero);

	if (!set)
		return false;
	for (__u32 i = 0; i < PROBE_GPU_RULES && i < set->count; i++) {
		struct probe_gpu_rule *r = &set->rules[i];

		if (r->major == major && minor >= r->minor_first && minor <= r->minor_last)
			return true;
	}
	return false;
}

static __always_inline bool gpu_inode(__u32 mode, __u32 rdev)
{
	return (mode & S_IFMT_BITS) == S_IFCHR_BITS && gpu_device(rdev);
}

/* Whether file (untyped: every hop through bpf_probe_read) is a GPU device file. */
static __always_inline bool gpu_file(struct file *file)
{
	struct inode *inode = file ? BPF_CORE_READ(file, f_inode) : NULL;

	return inode && gpu_inode(BPF_CORE_READ(inode, i_mode), BPF_CORE_READ(inode, i_rdev));
}

/* The current thread's struct file for fd, or NULL (untyped walk: any variant). */
static __always_inline struct file *current_fd_file(int fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file **slots;
	struct file *file = NULL;

	if (fd < 0 || (unsigned int)fd >= BPF_CORE_READ(task, files, fdt, max_fds))
		return NULL;
	slots = BPF_CORE_READ(task, files, fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &slots[fd]);
	return file;
}

/*
 * Marks the current thread as inside a GPU ioctl or wait until its
 * syscall returns (gpufile.bpf.c's sys_exit) or the thread exits.
 */
static __always_inline void mark_inflight(__u32 kind, __u64 nvcsw)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct probe_inflight m = {
		.tgid = pid_tgid >> 32,
		.kind = kind,
		.nvcsw = nvcsw,
		.since_ns = bpf_ktime_get_boot_ns(),
	};

	if (bpf_map_update_elem(&gpu_inflight, &tid, &m, BPF_ANY))
		count_drop(PROBE_DROP_INFLIGHT_MAP_FULL);
}

#endif
