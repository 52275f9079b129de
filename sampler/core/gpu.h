/*
 * gpu.h: the GPUs a process holds (its device files, the NVIDIA driver's
 * names for them) and its GPU state, as a poll reads them.  Part of what a
 * poll reads (host.h); library of croft-sampler, croft user.
 */
#ifndef CROFT_SAMPLER_GPU_H
#define CROFT_SAMPLER_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpudev.h"
#include "rowdef.h"

#define PROC_FDS_MAX 65536 /* fds looked at per fd scan */

/* ---- gpus.c: the GPUs a process holds open ---- */
#define GPU_INDEX_MAX        256 /* indices kept, 0..255 (NVIDIA minors end at 253) */
#define GPU_DEVICES_MAX      64  /* GPU devices sysfs names (render and accel nodes) */
#define GPU_DEVICE_NAME_MAX  64  /* bytes of a device name, "0000:41:00.0" */
#define GPU_NVIDIA_MAJORS    8
#define GPU_INDEX_CACHE      64 /* device numbers resolved through sysfs, per load */
#define GPU_INDEX_LOAD_POLLS 30 /* sysfs's GPU devices read again (hotplug) */
#define GPU_FDS_KEPT         32 /* GPU devices per process checked between full scans */

struct gpu_mask {
	uint64_t bits[GPU_INDEX_MAX / 64];
};

/* ---- nvdriver.c: NVIDIA's own files under /proc/driver ---- */
#define NV_GPUS_MAX   64           /* GPUs /proc/driver/nvidia/gpus lists */
#define NV_UUID_MAX   80           /* bytes of a "GPU UUID:" value */
#define NV_MIG_MAX    2048         /* compute instances mig-minors names (32 GPUs x 8 x 8) */
#define NV_DRIVER_MAX (256u << 10) /* bytes of one driver file read */
#define MIG_NAME_MAX  16           /* "<gpu>/<gi>/<ci>": "255/255/255" */

struct nv_gpu {
	char uuid[NV_UUID_MAX + 1]; /* "GPU-8f3a...", as the kubelet's checkpoint names it */
	int index;                  /* its Device Minor: /dev/nvidiaN, the rows' gpus */
};

/* A compute instance's access file: /dev/nvidia-caps/nvidia-cap<minor>. */
struct nv_mig {
	uint32_t minor;
	uint8_t gpu, gi, ci;
};

/* The GPUs' UUIDs (<driver>/nvidia/gpus/<pci>/information) and the MIG
 * capability minors (<driver>/nvidia-caps/mig-minors); none without them. */
struct nv_driver {
	struct nv_gpu gpus[NV_GPUS_MAX];
	size_t gpus_count;
	struct nv_mig mig[NV_MIG_MAX]; /* by minor */
	size_t mig_count;
};
void nv_driver_load(struct nv_driver *nv, const char *driver_dir);
/* "Device Minor:" and "GPU UUID:" of one information file; -EINVAL without both. */
int nv_parse_information(const char *text, struct nv_gpu *ret_gpu);
/* mig-minors' "gpu<G>/gi<I>/ci<C>/access <minor>" lines, sorted by minor. */
size_t nv_parse_mig_minors(const char *text, struct nv_mig *ret, size_t max);
/* The GPU a UUID names (a time-sliced replica's "::N" ignored), or -1. */
int nv_gpu_of_uuid(const struct nv_driver *nv, const char *uuid, size_t len);
/* The compute instance a capability minor opens, or NULL. */
const struct nv_mig *nv_mig_of_minor(const struct nv_driver *nv, uint32_t minor);

/* What names a GPU: loaded again every GPU_INDEX_LOAD_POLLS polls, when
 * /proc/devices changes and at reload. */
struct gpu_index {
	const char *sysfs;                         /* "/sys"; tests give a tree of their own */
	uint32_t nvidia_majors[GPU_NVIDIA_MAJORS]; /* /proc/devices: nvidia, nvidia-frontend... */
	size_t nvidia_count;
	uint32_t caps_major; /* /proc/devices: nvidia-caps (MIG access files); 0: none */
	struct nv_driver nv;
	char devices[GPU_DEVICES_MAX][GPU_DEVICE_NAME_MAX]; /* behind render/accel nodes, sorted */
	size_t devices_count;
	struct gpu_index_cached {
		dev_t rdev;
		int index;
	} cache[GPU_INDEX_CACHE];
	size_t cache_count;
	uint64_t next_load_gen; /* poll at which to load again; 0 = now */
};

/* Reads proc_devices ("/proc/devices"), sysfs ("/sys", kept: it must
 * outlive gi) and NVIDIA's driver_dir ("/proc/driver"); an unreadable
 * proc_devices leaves no NVIDIA major (-errno), the others are optional. */
int gpu_index_load(
	struct gpu_index *gi, const char *proc_devices, const char *sysfs, const char *driver_dir);
/* The GPU a device number names, or -1 (nvidiactl, uvm, kfd, /dev/full...). */
int gpu_index_of(struct gpu_index *gi, dev_t rdev);
void gpu_mask_set(struct gpu_mask *m, int index);
bool gpu_mask_has(const struct gpu_mask *m, int index);
/*
 * A process's GPU files at its last fd scan (allocated only while it holds
 * some), for cheap checks between full scans: one fd per GPU device held,
 * and how many fds were open (st_size of /proc/<pid>/fd: kernels 6.2+).
 */
struct gpu_fds {
	bool overflow; /* more devices than kept: every look scans */
	struct gpu_mask gpus;
	uint64_t fds_open; /* 0: the kernel does not say */
	size_t kept_count;
	int fd[GPU_FDS_KEPT];
	dev_t rdev[GPU_FDS_KEPT];
};

/* How far a full fd scan went when a slice ended in it. */
struct fd_scan {
	long pos;             /* telldir() of /proc/<pid>/fd; 0: from the start */
	size_t seen;          /* entries looked at, up to PROC_FDS_MAX */
	struct gpu_fds found; /* what it found so far */
};

/*
 * The GPU files of tgid.  full: every fd is read.  Otherwise the last scan
 * (*kept) is checked and read again only when it no longer stands: a kept
 * fd closed or on another device, or (6.2+) another number of fds open.
 * So a close is seen at once, a new open at once on 6.2+ and at the next
 * full scan before.  *kept is allocated and freed here.  A full scan (2 to
 * 5 us a fd: 65 536 fds take a third of a second) stops at until_ns
 * (CLOCK_MONOTONIC) with -EAGAIN, and goes on when called again with the
 * same *scan (zeroed to begin; zeroed again once done).
 */
int gpufd_look(int procfd, pid_t tgid, const struct gpudev_set *gpu, struct gpu_index *gi,
	bool full, struct fd_scan *scan, uint64_t until_ns, struct gpu_fds **kept, bool *ret_holds,
	struct gpu_mask *ret_gpus);
void gpu_fds_free(struct gpu_fds **kept);

/* ---- workload.c: the GPU state machine (enum workload_state: rowdef.h) ---- */
struct workload {
	enum workload_state state;
	bool holds_gpu_fd;            /* last fd scan found a GPU device file */
	bool held_before_ioctl;       /* holding GPU files before any ioctl was seen: no onset */
	bool gpus_known;              /* an fd scan named the GPUs: row field "gpus" */
	struct gpu_mask gpus;         /* the GPUs of the last fd scan */
	uint64_t first_ioctl_boot_ns; /* 0 = none seen */
};

struct workload_input {
	bool fd_scanned;       /* the fds were read this poll */
	bool holds_gpu_fd;     /* valid when fd_scanned */
	struct gpu_mask gpus;  /* valid when fd_scanned */
	bool at_sampler_start; /* this is the sampler's first look at the process */
	bool probe_valid;
	uint64_t gpu_ioctls; /* this poll */
	uint64_t last_gpu_ioctl_boot_ns;
	uint64_t prev_sample_boot_ns; /* start of this poll's interval for the process */
	uint64_t now_boot_ns;
};

void workload_update(
	struct workload *wl, const struct workload_input *in, uint64_t onset_window_ns);
/* Whether a row must say it: another state, or other GPUs held. */
bool workload_changed(const struct workload *before, const struct workload *after);
/* This poll's look at the fds, for settling. */
struct proc_look {
	bool scanned; /* the fds were read */
	bool holds_gpu_fd;
	struct gpu_mask gpus;
};

/* What NVML said of the process over its row's span; unknown without NVML. */
struct proc_nvml {
	bool memory_known, sm_known;
	uint64_t memory_bytes;
	double sm_percent;  /* 0-100, the mean over the span's polls NVML gave it for */
	double sm_weight_s; /* the seconds that mean stands for */
};

struct proc_gpu {
	struct workload wl;
	struct proc_nvml nvml;
	/* the verdict of this poll (gpu_activity, gpu_activity_source) */
	enum gpu_activity activity;
	enum gpu_activity_source activity_source;
	bool activity_open;  /* a poll of the row's span has been judged (verdict_fold) */
	struct gpu_fds *fds; /* the last fd scan's GPU files; NULL: none */
	bool at_sampler_start;
	bool fds_looked; /* its fds were read once: then at its idle slot */
	struct proc_look look;
};

#endif
