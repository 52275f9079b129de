/*
 * ioctl.bpf.c: on ioctl (tail-called by syscalls.bpf.c, never attached on
 * its own), walks fd -> file -> inode -> device number and,
 * when the device is in the GPU device set, counts the ioctl and notes its
 * CLOCK_BOOTTIME per tgid.  Built twice: with IOCTL_RDONLY_CAST the tp_btf
 * program types the file through the bpf_rdonly_cast kfunc.  Kernel side
 * of croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#include "gpufile.bpf.h"

/* Set before load: this architecture's ioctl syscall number. */
const volatile long ioctl_nr = -1;

COUNTED_MAP(ioctl_0, PROBE_TGID_ENTRIES, __u32, struct probe_ioctl_val);
COUNTED_MAP(ioctl_1, PROBE_TGID_ENTRIES, __u32, struct probe_ioctl_val);

#ifdef IOCTL_RDONLY_CAST
/*
 * Added in Linux 6.2 (a4a3f3f72cbc "bpf: Add bpf_rdonly_cast() kfunc").  A
 * separate build, not a weak extern: libbpf 1.1 fails the whole object
 * over a weak kfunc the kernel lacks when it may not list module BTFs
 * (that needs CAP_SYS_ADMIN), even with the program using it not loaded.
 */
extern void *bpf_rdonly_cast(void *obj, __u32 btf_id) __ksym;
#endif

static __always_inline void count_in(void *map, __u32 g, __u32 tgid, __u64 now)
{
	static const struct probe_ioctl_val zero;
	struct probe_ioctl_val *v = lookup_or_init(map, g, &tgid, &zero);

	if (!v) {
		count_drop(PROBE_DROP_IOCTL_MAP_FULL);
		return;
	}
	v->count++;
	v->last_boot_ns = now;
}

/*
 * Counts a GPU ioctl and marks its thread as inside it (gpufile.bpf.c
 * clears the mark at the syscall's return and counts it a wait when the
 * thread slept in it: nvcsw, its voluntary switches, grew).
 */
static __always_inline int count_gpu_ioctl(__u64 nvcsw)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_boot_ns();

	if (epoch)
		count_in(&ioctl_1, 1, tgid, now);
	else
		count_in(&ioctl_0, 0, tgid, now);
	mark_inflight(PROBE_INFLIGHT_IOCTL, nvcsw);
	return 0;
}

/* The fd's struct file, or NULL; fdt->fd is a pointer array BTF cannot type. */
static __always_inline struct file *fd_file(struct fdtable *fdt, unsigned int fd)
{
	struct file **slots;
	struct file *file = NULL;

	if (fd >= fdt->max_fds)
		return NULL;
	slots = fdt->fd;
	bpf_probe_read_kernel(&file, sizeof(file), &slots[fd]);
	return file;
}

/* The same test as gpu_file, with plain loads where the kfunc can type the file. */
static __always_inline bool gpu_file_btf(struct file *file)
{
#ifdef IOCTL_RDONLY_CAST
	struct inode *inode;

	file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
	inode = file->f_inode;
	return inode && gpu_inode(inode->i_mode, inode->i_rdev);
#else
	return gpu_file(file);
#endif
}

/* typed task and fd table: plain loads up to the fd array */
SEC("tp_btf/sys_enter")
int BPF_PROG(ioctl_btf, struct pt_regs *regs, long id)
{
	struct task_struct *task;
	struct file *file;

	if (id != ioctl_nr)
		return 0;
	task = bpf_get_current_task_btf();
	file = fd_file(task->files->fdt, (unsigned int)PT_REGS_PARM1(regs));
	return file && gpu_file_btf(file) ? count_gpu_ioctl(task->nvcsw) : 0;
}

/* untyped pointers: every hop through bpf_probe_read (BPF_CORE_READ) */
SEC("raw_tp/sys_enter")
int BPF_PROG(ioctl_raw, struct pt_regs *regs, long id)
{
	struct task_struct *task;

	if (id != ioctl_nr)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	if (!gpu_file(current_fd_file((int)PT_REGS_PARM1_CORE(regs))))
		return 0;
	return count_gpu_ioctl(BPF_CORE_READ(task, nvcsw));
}
