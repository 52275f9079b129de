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

#define S_IFMT_BITS  00170000
#define S_IFCHR_BITS 0020000
#define MINOR_BITS   20 /* kernel dev_t: major << 20 | minor */

/* Set before load: this architecture's ioctl syscall number. */
const volatile long ioctl_nr = -1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_gpu_rules);
} gpu_rules SEC(".maps");

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

static __always_inline int count_gpu_ioctl(__u32 mode, __u32 rdev)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 now;

	if ((mode & S_IFMT_BITS) != S_IFCHR_BITS || !gpu_device(rdev))
		return 0;
	now = bpf_ktime_get_boot_ns();
	if (epoch)
		count_in(&ioctl_1, 1, tgid, now);
	else
		count_in(&ioctl_0, 0, tgid, now);
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

/* Counts an ioctl on file (untyped: every hop through bpf_probe_read) when its device is a GPU. */
static __always_inline int count_file_read(struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);

	if (!inode)
		return 0;
	return count_gpu_ioctl(BPF_CORE_READ(inode, i_mode), BPF_CORE_READ(inode, i_rdev));
}

/* The same with plain loads, where the kfunc can type the file. */
static __always_inline int count_file_btf(struct file *file)
{
#ifdef IOCTL_RDONLY_CAST
	struct inode *inode;

	file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
	inode = file->f_inode;
	return inode ? count_gpu_ioctl(inode->i_mode, inode->i_rdev) : 0;
#else
	return count_file_read(file);
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
	return file ? count_file_btf(file) : 0;
}

/* untyped pointers: every hop through bpf_probe_read (BPF_CORE_READ) */
SEC("raw_tp/sys_enter")
int BPF_PROG(ioctl_raw, struct pt_regs *regs, long id)
{
	struct task_struct *task;
	struct file *file;
	unsigned int fd;

	if (id != ioctl_nr)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	fd = (unsigned int)PT_REGS_PARM1_CORE(regs);
	if (fd >= BPF_CORE_READ(task, files, fdt, max_fds))
		return 0;
	file = NULL;
	bpf_probe_read_kernel(&file, sizeof(file), BPF_CORE_READ(task, files, fdt, fd) + fd);
	return file ? count_file_read(file) : 0;
}
