/*
 * gpus.c: which GPUs a process holds open.  The fd scan stats every entry
 * of /proc/<pid>/fd; a character device in the GPU set is held, and its
 * device number names a GPU: NVIDIA's /dev/nvidiaN by its minor, a DRM or
 * accel node by the place of the device behind it among the host's GPUs
 * (sysfs); a MIG capability file (nvidia-caps) the compute instance its
 * minor opens (nvdriver.c).  Nothing here waits on a file's server.
 * croft-sampler, croft user (fd/ of others: CAP_DAC_READ_SEARCH).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "clock.h"
#include "fileio.h"
#include "host.h"

#define NV_MINOR_GPU_MAX 253u /* 254 is nvidia-modeset, 255 nvidiactl */

/*
 * The names NVIDIA's driver registers its major under: GPU files are
 * /dev/nvidiaN (minor N) on it.  nvidia-uvm, nvidia-caps, nvidia-nvlink and
 * nvidia-nvswitch are majors of their own, shared by all GPUs.
 */
static const char *const nvidia_names[] = { "nvidia", "nvidia-frontend", "nvidiactl",
	"nvidia-modeset" };

static bool is_nvidia_name(const char *name)
{
	for (size_t i = 0; i < sizeof(nvidia_names) / sizeof(nvidia_names[0]); i++)
		if (!strcmp(name, nvidia_names[i]))
			return true;
	return false;
}

static bool is_nvidia_major(const struct gpu_index *gi, uint32_t major)
{
	for (size_t i = 0; i < gi->nvidia_count; i++)
		if (gi->nvidia_majors[i] == major)
			return true;
	return false;
}

static void add_nvidia_major(struct gpu_index *gi, uint32_t major)
{
	if (!is_nvidia_major(gi, major) && gi->nvidia_count < GPU_NVIDIA_MAJORS)
		gi->nvidia_majors[gi->nvidia_count++] = major;
}

/* NVIDIA's majors and nvidia-caps' among /proc/devices' character devices. */
static void parse_devices(struct gpu_index *gi, const char *text)
{
	struct gpudev_chrdev it = { .line = text };
	char name[GPUDEV_NAME_MAX];
	unsigned major;

	while (gpudev_chrdev_next(&it, &major, name))
		if (is_nvidia_name(name))
			add_nvidia_major(gi, major);
		else if (!strcmp(name, "nvidia-caps"))
			gi->caps_major = major;
}

/* The last path component of the device behind a sysfs class entry. */
static int device_name(const char *link, char ret[GPU_DEVICE_NAME_MAX])
{
	char real[PATH_MAX];
	const char *base;

	if (!realpath(link, real))
		return -errno;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (strlen(base) >= GPU_DEVICE_NAME_MAX)
		return -ENAMETOOLONG;
	strcpy(ret, base);
	return 0;
}

static void add_device(struct gpu_index *gi, const char *name)
{
	for (size_t i = 0; i < gi->devices_count; i++)
		if (!strcmp(gi->devices[i], name))
			return;
	if (gi->devices_count < GPU_DEVICES_MAX)
		strcpy(gi->devices[gi->devices_count++], name);
}

/* The devices behind <sysfs>/class/<cls>/<prefix>N: drm renderD*, accel accel*. */
static void list_class(struct gpu_index *gi, const char *cls, const char *prefix)
{
	char path[PATH_MAX], name[GPU_DEVICE_NAME_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/class/%s", gi->sysfs, cls);
	dir = opendir(path);
	if (!dir)
		return; /* no such subsystem on this kernel or host */
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		if (snprintf(path, sizeof(path), "%s/class/%s/%s/device", gi->sysfs, cls,
			    de->d_name) >= (int)sizeof(path))
			continue;
		if (device_name(path, name) == 0)
			add_device(gi, name);
	}
	closedir(dir);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int gpu_index_load(
	struct gpu_index *gi, const char *proc_devices, const char *sysfs, const char *driver_dir)
{
	char *text;
	size_t len;
	int r;

	memset(gi, 0, sizeof(*gi));
	gi->sysfs = sysfs;
	r = file_read_bounded(proc_devices, GPUDEV_FILE_MAX, &text, &len);
	if (r == 0) {
		parse_devices(gi, text);
		free(text);
	}
	nv_driver_load(&gi->nv, driver_dir);
	/* Render and accel nodes, one per GPU: card nodes also name display-only
	 * devices (a server's BMC), which are no GPUs. */
	list_class(gi, "drm", "renderD");
	list_class(gi, "accel", "accel");
	/* PCI addresses (0000:41:00.0) sort by bus as strings: NVIDIA's and
	 * nvidia-smi's default order */
	qsort(gi->devices, gi->devices_count, sizeof(gi->devices[0]), cmp_name);
	return r;
}

/* A DRM, accel or other node: the place of the device behind it. */
static int sysfs_index(const struct gpu_index *gi, dev_t rdev)
{
	char path[PATH_MAX], name[GPU_DEVICE_NAME_MAX];

	snprintf(path, sizeof(path), "%s/dev/char/%u:%u/device", gi->sysfs, major(rdev),
		minor(rdev));
	if (device_name(path, name))
		return -1;
	for (size_t i = 0; i < gi->devices_count; i++)
		if (!strcmp(gi->devices[i], name))
			return (int)i;
	return -1;
}

int gpu_index_of(struct gpu_index *gi, dev_t rdev)
{
	int index;

	if (is_nvidia_major(gi, major(rdev)))
		return minor(rdev) <= NV_MINOR_GPU_MAX ? (int)minor(rdev) : -1;
	for (size_t i = 0; i < gi->cache_count; i++)
		if (gi->cache[i].rdev == rdev)
			return gi->cache[i].index;
	index = sysfs_index(gi, rdev);
	if (gi->cache_count < GPU_INDEX_CACHE)
		gi->cache[gi->cache_count++] = (struct gpu_index_cached){ rdev, index };
	return index;
}

void gpu_mask_set(struct gpu_mask *m, int index)
{
	if (index >= 0 && index < GPU_INDEX_MAX)
		m->bits[index / 64] |= 1ull << (index % 64);
}

bool gpu_mask_has(const struct gpu_mask *m, int index)
{
	return index >= 0 && index < GPU_INDEX_MAX && (m->bits[index / 64] >> (index % 64)) & 1;
}

/*
 * Whether an fd of another process (name, in its /proc/<pid>/fd) is a
 * character device, and which: from what the kernel already knows of the
 * file (AT_STATX_DONT_SYNC).  A plain stat asks a FUSE, NFS or CIFS file's
 * server; a FUSE server that never answers would hold the sampler in
 * uninterruptible sleep, where no signal reaches it, and stop every poll.
 */
static bool fd_char_device(int dirfd, const char *name, dev_t *ret_rdev)
{
	struct statx stx;

	if (statx(dirfd, name, AT_STATX_DONT_SYNC, STATX_TYPE, &stx) ||
		!(stx.stx_mask & STATX_TYPE) || !S_ISCHR(stx.stx_mode))
		return false;
	*ret_rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
	return true;
}

/* One fd per GPU device held: closing the device's last fd closes that one
 * or leaves another the next full scan keeps. */
static void keep_fd(struct gpu_fds *k, const char *name, dev_t rdev)
{
	for (size_t i = 0; i < k->kept_count; i++)
		if (k->rdev[i] == rdev)
			return;
	if (k->kept_count == GPU_FDS_KEPT) {
		k->overflow = true;
		return;
	}
	k->fd[k->kept_count] = atoi(name);
	k->rdev[k->kept_count++] = rdev;
}

/*
 * Every entry: the GPUs are all the GPU files held, not the first.  Goes on
 * from scan->pos (fd numbers in order), into scan->found.
 */
static int full_scan(int procfd, pid_t tgid, const struct gpudev_set *gpu, struct gpu_index *gi,
	struct fd_scan *scan, uint64_t until_ns)
{
	char path[64];
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int fd;

	snprintf(path, sizeof(path), "%d/fd", (int)tgid);
	fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* open fds, on kernels 6.2 and later (0 before) */
	if (!scan->pos)
		scan->found.fds_open = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	if (scan->pos)
		seekdir(dir, scan->pos);
	while (scan->seen < PROC_FDS_MAX && (de = readdir(dir))) {
		dev_t rdev;

		scan->seen++;
		if (de->d_name[0] != '.' && fd_char_device(fd, de->d_name, &rdev) &&
			gpudev_match(gpu, rdev)) {
			gpu_mask_set(&scan->found.gpus, gpu_index_of(gi, rdev));
			keep_fd(&scan->found, de->d_name, rdev);
		}
		if (clock_mono_ns() >= until_ns) {
			scan->pos = telldir(dir);
			closedir(dir);
			return -EAGAIN;
		}
	}
	closedir(dir);
	return 0;
}

/*
 * Whether the last scan still stands: each device's kept fd still open on
 * it, and as many fds open where the kernel says.  A statx a GPU device
 * held, where a full scan costs two microseconds a fd.
 */
static bool still_held(int procfd, pid_t tgid, const struct gpu_fds *k)
{
	char path[64];
	struct stat st;

	if (k->overflow)
		return false;
	snprintf(path, sizeof(path), "%d/fd", (int)tgid);
	if (fstatat(procfd, path, &st, 0) || (st.st_size && (uint64_t)st.st_size != k->fds_open))
		return false;
	for (size_t i = 0; i < k->kept_count; i++) {
		dev_t rdev;

		/* the number may name another file now: a FUSE one, say */
		snprintf(path, sizeof(path), "%d/fd/%d", (int)tgid, k->fd[i]);
		if (!fd_char_device(procfd, path, &rdev) || rdev != k->rdev[i])
			return false;
	}
	return true;
}

static void put_result(const struct gpu_fds *k, bool *ret_holds, struct gpu_mask *ret_gpus)
{
	*ret_holds = k != NULL;
	*ret_gpus = k ? k->gpus : (struct gpu_mask){ { 0 } };
}

int gpufd_look(int procfd, pid_t tgid, const struct gpudev_set *gpu, struct gpu_index *gi,
	bool full, struct fd_scan *scan, uint64_t until_ns, struct gpu_fds **kept, bool *ret_holds,
	struct gpu_mask *ret_gpus)
{
	struct gpu_fds found;
	int r = 0;

	/* nothing held at the last scan: nothing to check, all to read */
	if (!full && !scan->pos && *kept && still_held(procfd, tgid, *kept)) {
		put_result(*kept, ret_holds, ret_gpus);
		return 0;
	}
	if (gpu->rules_count && (r = full_scan(procfd, tgid, gpu, gi, scan, until_ns)) == -EAGAIN)
		return r;
	found = scan->found;
	*scan = (struct fd_scan){ .pos = 0 };
	if (r < 0)
		return r;
	if (!found.kept_count) {
		gpu_fds_free(kept);
	} else {
		if (!*kept && !(*kept = malloc(sizeof(**kept))))
			return -ENOMEM;
		**kept = found;
	}
	put_result(*kept, ret_holds, ret_gpus);
	return 0;
}

void gpu_fds_free(struct gpu_fds **kept)
{
	free(*kept);
	*kept = NULL;
}
